"""From a swarm scenario to a testbed plan: what each real peer runs on.

The scenario is first checked by the engine (``torrentlab.validate``), so the
file format, the defaults and every error message are the simulator's. This
module then reads the few fields the testbed needs from the same document
and refuses (:class:`TestbedError`, exit 2) what the kernel here cannot do:
propagation delay (no netem), a congestion controller the kernel lacks,
pacing, Poisson arrivals. Fields the real peers cannot follow (most TCP and
uTP tunables: the kernel's and libtorrent's own are used) are listed in
``Plan.ignored``, which the run records in ``testbed.json``.

Units: rates in bit/s (``None``: unlimited), times in seconds, sizes in bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torrentlab import _core
from torrentlab.exceptions import TestbedError
from torrentlab.inputs import error

#: Scenario controllers -> Linux module names (``None``: the kernel has no such controller).
KERNEL_CC = {"newreno": "reno", "cubic": "cubic", "vegas": "vegas", "lp": "lp", "nice": None, "ledbat": None}

#: libtorrent's ``mixed_mode_algorithm`` values (settings_pack: prefer_tcp = 0, peer_proportional = 1).
MIXED_MODE = {"prefer_tcp": 0, "peer_proportional": 1}

_RATE_UNITS = {"bit/s": 1, "bps": 1, "kbit/s": 1e3, "kbps": 1e3, "Mbit/s": 1e6, "Mbps": 1e6, "Gbit/s": 1e9,
               "Gbps": 1e9, "B/s": 8, "kB/s": 8e3, "KB/s": 8e3, "MB/s": 8e6, "KiB/s": 8 * 1024,
               "MiB/s": 8 * 1024**2}
_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
_NUM = r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*"


def rate_bps(text: str) -> int | None:
    """A scenario rate (``"1 Mbit/s"``, ``"20 KiB/s"``) in bit/s; ``None`` for ``"unlimited"``."""
    if text == "unlimited":
        return None
    m = re.fullmatch(_NUM + r"(\S+)\s*", text)
    if not m or m[2] not in _RATE_UNITS:
        raise ValueError(f"not a rate: {text!r}")
    return int(round(float(m[1]) * _RATE_UNITS[m[2]]))


def seconds(text: str) -> float:
    """A scenario duration (``"250 ms"``) in seconds."""
    m = re.fullmatch(_NUM + r"(\S+)\s*", text)
    if not m or m[2] not in _TIME_UNITS:
        raise ValueError(f"not a duration: {text!r}")
    return float(m[1]) * _TIME_UNITS[m[2]]


def buffer_limit(text: str, rate: int | None) -> tuple[str, int] | None:
    """A scenario buffer as ``("packets", n)`` or ``("bytes", n)``; a time is
    taken at ``rate`` (bit/s). ``None`` on an unlimited link (it never queues)."""
    if rate is None:
        return None
    m = re.fullmatch(_NUM + r"packets?\s*", text)
    if m:
        return ("packets", int(float(m[1])))
    m = re.fullmatch(_NUM + r"(\S+)\s*", text)
    if m and m[2] in _TIME_UNITS:
        return ("bytes", int(round(float(m[1]) * _TIME_UNITS[m[2]] * rate / 8)))
    return ("bytes", int(_core.parse_size(text)))


@dataclass
class PeerPlan:
    """One real peer: its class's settings, resolved."""

    index: int
    cls: int  # its [[peers]] entry
    label: str
    client: str
    role: str
    join_s: float
    up_bps: int | None
    down_bps: int | None
    up_buffer: tuple[str, int] | None
    down_buffer: tuple[str, int] | None
    cc: str  # the kernel's name of the TCP controller
    #: libtorrent settings_pack entries for this peer's session
    settings: dict[str, Any] = field(default_factory=dict)
    upload_limit_Bps: int | None = None


@dataclass
class Plan:
    name: str
    seed: int
    duration_s: float
    file_bytes: int
    piece_bytes: int
    torrent_file: Path | None
    peers: list[PeerPlan]
    uplink_log_peers: int
    ingress_loss: float
    #: scenario fields the testbed cannot follow, with what it does instead
    ignored: list[str] = field(default_factory=list)

    @property
    def leechers(self) -> list[PeerPlan]:
        return [p for p in self.peers if p.role == "leecher"]


def _load(path: str) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    with open(path, "rb") as f:
        return tomllib.load(f)


def available_cc() -> set[str]:
    try:
        return set(Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split())
    except OSError:
        return set()


def installed_libtorrent() -> str | None:
    """The installed libtorrent Python bindings' version, without importing them."""
    from importlib import metadata
    try:
        return metadata.version("libtorrent")
    except metadata.PackageNotFoundError:
        return None


def _series(version: str) -> str:
    """The scenario's `version` whose rules libtorrent `version` follows: "2.0"
    from 2.0.6 on (the newer peer_proportional rule), else "1.2"."""
    parts = [int(x) for x in version.split(".")[:3] if x.isdigit()] + [0, 0, 0]
    return "2.0" if tuple(parts[:3]) >= (2, 0, 6) else "1.2"


def _client_settings(file: str, where: str, c: dict[str, Any], client: str, utp: dict[str, Any],
                     ignored: list[str]) -> dict[str, Any]:
    """libtorrent settings for a class: transports, uTP target, mixed mode, slots, limits."""
    s: dict[str, Any] = {}
    if client == "libtorrent":
        transport = c.get("transport")
        s["enable_outgoing_utp"] = transport in (None, "utp")
        s["enable_outgoing_tcp"] = transport in (None, "tcp")
        s["enable_incoming_utp"] = True
        s["enable_incoming_tcp"] = True
        mode = c.get("mixed_mode", "peer_proportional")
        s["mixed_mode_algorithm"] = MIXED_MODE[mode]
        s["rate_limit_ip_overhead"] = bool(c.get("rate_limit_ip_overhead", True))
        series, installed = c.get("version", "1.2"), installed_libtorrent()
        if mode == "peer_proportional" and installed and _series(installed) != series:
            ignored.append(f"{where}.version: \"{series}\" asks for libtorrent {series}'s peer_proportional rule; "
                           f"the installed libtorrent {installed} follows the {_series(installed)} rule")
    elif client == "utorrent":
        d = int(c.get("disposition", 31))
        s["enable_outgoing_tcp"] = bool(d & 1)
        s["enable_outgoing_utp"] = bool(d & 2)
        s["enable_incoming_tcp"] = bool(d & 4)
        s["enable_incoming_utp"] = bool(d & 8)
        # uTorrent prefers uTP and does not throttle TCP for it (as the model's profile)
        s["mixed_mode_algorithm"] = MIXED_MODE["prefer_tcp"]
        ignored.append(f"{where}.client: \"utorrent\" runs as libtorrent with the disposition's transport flags "
                       "(libtorrent's choker, picker and connection management)")
    else:
        raise error(file, f"{where}.client", f"the testbed runs libtorrent peers: \"{client}\" cannot run on it "
                    "(\"libtorrent\" or \"utorrent\"; real mainline swarms are bench/mainline_swarm.py's)")
    if "target" in utp:
        s["utp_target_delay"] = max(1, int(round(seconds(utp["target"]) * 1000)))
    else:
        s["utp_target_delay"] = 25 if utp.get("variant") == "draft" else 100
    if utp.get("variant", "bep29") != "bep29":
        ignored.append(f"{where}.utp.variant: libtorrent's LEDBAT is the bep29 one")
    for k in sorted(set(utp) - {"target", "variant"}):
        ignored.append(f"{where}.utp.{k}: libtorrent's own value")
    slots = c.get("upload_slots")
    if slots is not None:
        s["unchoke_slots_limit"] = int(slots)
    elif client == "libtorrent":
        s["unchoke_slots_limit"] = 8
    else:
        s["unchoke_slots_limit"] = 7  # mainline's table without a limit (utorrent's default: unlimited)
    default_limit = 200 if client == "libtorrent" else None
    initiate = c.get("max_initiate", default_limit or 40)
    allow_in = c.get("max_allow_in", default_limit or 80)
    # libtorrent has one limit for both directions
    s["connections_limit"] = int(max(initiate, allow_in))
    if "pipeline" in c and c["pipeline"] != "libtorrent":
        ignored.append(f"{where}.pipeline: libtorrent's request queue")
    if c.get("fast_extension") is False:
        ignored.append(f"{where}.fast_extension: libtorrent always speaks the Fast Extension (BEP 6)")
    return s


def plan(path: str, *, ignore_rtt: bool = False) -> Plan:
    """Checks the scenario at `path` (engine first, then the testbed's limits)
    and resolves every peer. Raises ScenarioError or TestbedError (exit 2)."""
    info = _core.validate(path)
    if info.get("kind") != "swarm":
        raise TestbedError(f"{path}: the testbed runs swarm scenarios ([[peers]]); this is a "
                           f"{info.get('kind')} (a single flow is a swarm of one seed and one leecher)")
    doc = _load(path)
    file = path
    ignored: list[str] = []
    if "household" in doc:
        raise error(file, "household", "the testbed cannot build a household (its path needs propagation "
                    "delay, which the kernel here cannot add: no netem)")
    net = doc.get("network", {})
    rtt = seconds(net.get("rtt", "0 s"))
    if "groups" in net:
        raise error(file, "network.groups", "the testbed cannot add propagation delay (no netem in this kernel)")
    if rtt > 0:
        if not ignore_rtt:
            raise error(file, "network.rtt", f"the testbed cannot add propagation delay (no netem in this "
                        f"kernel): set it to \"0 s\", or run with --ignore-rtt to run without the "
                        f"{net['rtt']}")
        ignored.append(f"network.rtt: {net['rtt']} dropped (--ignore-rtt): the real RTT is the veth path's")
    loss = float(net.get("ingress_loss", 0.0))
    torrent = doc.get("torrent", {})
    if "file" in torrent:
        raise error(file, "torrent.file", "the testbed makes its own content: give size and piece_size")
    piece = int(_core.parse_size(torrent.get("piece_size", "256 KiB")))
    if piece & (piece - 1):
        raise error(file, "torrent.piece_size", f"libtorrent needs a power of two, not {piece} bytes")
    tcp = doc.get("tcp", {})
    for k in sorted(set(tcp) - {"mss", "tso", "preset", "nagle"}):
        ignored.append(f"tcp.{k}: the kernel's own value")
    if int(tcp.get("mss", 1448)) != 1448:
        raise error(file, "tcp.mss", "the testbed's links have a 1500-byte MTU: the MSS is 1448")
    if tcp.get("tso", False):
        ignored.append("tcp.tso: segmentation offload stays off (gso_max_segs 1)")
    utp_top = doc.get("utp", {})
    access = net.get("access", {})
    avail = available_cc()
    peers: list[PeerPlan] = []
    for ci, c in enumerate(doc.get("peers", [])):
        where = f"peers[{ci}]"
        client = c.get("client", "mainline")
        role = c["role"]
        label = c.get("label", role)
        count = int(c.get("count", 1))
        for k in ("tcp",):
            if k in c:
                ignored.append(f"{where}.tcp: the kernel's own values")
        if c.get("pacing", "off") != "off":
            raise error(file, f"{where}.pacing", "the testbed cannot pace uploads (libtorrent has no pacer)")
        if c.get("departure", "stay") != "stay":
            raise error(file, f"{where}.departure", "the testbed runs peers that stay (\"stay\")")
        if c.get("home", False):
            raise error(file, f"{where}.home", "the testbed cannot build a household")
        join = c.get("join", "0 s")
        if isinstance(join, dict):
            raise error(file, f"{where}.join", "the testbed starts peers at given times: a time or a list of "
                        "times, not a Poisson process")
        joins = [seconds(j) for j in join] if isinstance(join, list) else [seconds(join)] * count
        cc_name = c.get("cc", "cubic")
        kcc = KERNEL_CC.get(cc_name)
        if kcc is None or kcc not in avail:
            have = ", ".join(sorted(avail)) or "none found"
            raise error(file, f"{where}.cc", f"\"{cc_name}\" is not a congestion control this kernel has "
                        f"(tcp_available_congestion_control: {have})")
        a = {**access, **c.get("access", {})}
        up = rate_bps(a.get("up", "unlimited"))
        down = rate_bps(a.get("down", "unlimited"))
        buf = a.get("buffer", "1000 packets")
        utp = {**utp_top, **c.get("utp", {})}
        settings = _client_settings(file, where, c, client, utp, ignored)
        lim = c.get("upload_limit", "unlimited")
        if isinstance(lim, str) and "x uplink" in lim:
            limit_Bps = int(float(lim.split("x")[0]) * up / 8)
        else:
            r = rate_bps(lim)
            limit_Bps = None if r is None else r // 8
        for k in range(count):
            peers.append(PeerPlan(
                index=len(peers), cls=ci, label=label, client=client, role=role, join_s=joins[k],
                up_bps=up, down_bps=down, up_buffer=buffer_limit(buf, up), down_buffer=buffer_limit(buf, down),
                cc=kcc, settings=dict(settings), upload_limit_Bps=limit_Bps))
    if len(peers) > 200:
        raise error(file, "peers", f"the testbed runs at most 200 peers (one /24 and the machine's cores), "
                    f"not {len(peers)}")
    metrics = doc.get("metrics", {})
    return Plan(name=info["name"], seed=int(info["seed"]), duration_s=float(info["duration_s"]),
                file_bytes=int(info["file_bytes"]), piece_bytes=piece, torrent_file=None, peers=peers,
                uplink_log_peers=int(metrics.get("uplink_log_peers", 0)), ingress_loss=loss,
                ignored=sorted(set(ignored)))
