"""The testbed's network: one namespace per peer, each behind its own
"modem" namespace, and the modems joined by one bridge.

::

    tlt<P>-p000 eth0 -- lan [tlt<P>-m000: bridge, uplink tbf on wan] wan -- v0 --+
    tlt<P>-p001 eth0 -- lan [tlt<P>-m001: bridge, uplink tbf on wan] wan -- v1 --+-- br0 in tlt<P>-core
    ...                                                                          |
    (a limited downlink: tbf on vN's egress in the core)

**Why a modem namespace.** A peer's uplink queue must not sit in the peer's
own network stack: Linux's TCP small queues (TSQ) let a TCP socket hold only
about two packets in its own host's qdiscs at these rates, so a tbf on the
peer's eth0 would never see more than a couple of packets per connection
(measured here: a Cubic flow into a 1 Mbit/s tbf with 125,000 bytes of
buffer on its own eth0 keeps 2 packets waiting; the same tbf one veth away
fills the buffer and drops, as a real modem does). The modem namespace is
that other box: a bridge between its ``lan`` and ``wan`` veths, the uplink
tbf on ``wan``'s egress.

Every name this module creates starts with ``tlt<P>-`` (``P``: the run's
prefix, letters and digits), so it never touches another tool's namespaces
(bench/linux_loss.py uses ``tll``, bench/mainline_swarm.py ``tlml``). The
veths and the bridges live inside the namespaces, so deleting the
namespaces deletes them too; iptables rules (random ingress loss) live in
the peers' namespaces as well. :func:`cleanup` kills whatever still runs in
our namespaces and deletes them; it can be run again at any time (a second
call finds nothing and does nothing).

An uplink is a ``tbf`` at the link's rate, its bucket one packet, its queue
the scenario's buffer: ``limit`` bytes (tbf's inner bfifo) or a ``pfifo`` of
N packets as tbf's child. A size table (``stab overhead -14``) makes the
qdiscs count IP bytes, not Ethernet frames, as the simulator does: the rate
and a byte limit apply to the same bytes as in the model. Segmentation
offload is off (``gso_max_segs 1``: one MSS per packet, as ``tso = false``).

Queue occupancy is read over rtnetlink (``RTM_GETQDISC``) from a socket
opened once inside each modem namespace: no process per sample.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import socket
import struct
import subprocess
import time
from dataclasses import dataclass

from torrentlab.exceptions import TestbedError

BASE = "tlt"
#: Ethernet header bytes that the qdiscs' size table takes off each frame (IP bytes remain).
ETH_HEADER = 14
#: tbf's bucket: one full frame (and a little), so the link never bursts beyond a packet.
BURST_BYTES = 1600


def sh(*cmd: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
    r = subprocess.run(list(cmd), capture_output=True, text=True, input=stdin)
    if check and r.returncode != 0:
        raise TestbedError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def stem(prefix: str) -> str:
    return f"{BASE}{prefix}-"


def our_namespaces(prefix: str = "") -> list[str]:
    """Our namespaces: ``tlt<prefix>-*`` (every ``tlt*-*`` when prefix is '')."""
    r = sh("ip", "netns", "list", check=False)
    names = [line.split()[0] for line in r.stdout.splitlines() if line.strip()]
    pat = re.compile(rf"{BASE}{re.escape(prefix)}-" if prefix else rf"{BASE}[a-z0-9]*-")
    return [n for n in names if pat.match(n)]


def kill_pids(pids: list[int], grace_s: float = 3.0) -> None:
    """SIGTERM, then SIGKILL after `grace_s` seconds for those still alive."""
    for p in pids:
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _alive(p)]
        if alive:
            time.sleep(0.05)
    for p in alive:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie counts as gone
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cleanup(prefix: str = "") -> dict[str, int]:
    """Kills every process in our namespaces (``tlt<prefix>-*``), deletes the
    namespaces (their veths, bridge, qdiscs and iptables rules go with them)
    and removes our scratch directories (``/dev/shm/tlt<prefix>-*``).
    Idempotent: returns what it found, all zeros when there was nothing."""
    names = our_namespaces(prefix)
    pids: set[int] = set()
    for n in names:
        r = sh("ip", "netns", "pids", n, check=False)
        pids |= {int(x) for x in r.stdout.split() if x.isdigit()}
    if pids:
        kill_pids(sorted(pids))
    for n in names:
        sh("ip", "netns", "del", n, check=False)
    import shutil
    from pathlib import Path

    removed = 0
    pat = re.compile(rf"{BASE}{re.escape(prefix)}-" if prefix else rf"{BASE}[a-z0-9]*-")
    for d in Path("/dev/shm").iterdir():
        if pat.match(d.name):
            shutil.rmtree(d, ignore_errors=True)
            removed += 1
    left = our_namespaces(prefix)
    if left:
        raise TestbedError(f"cleanup: namespaces still present: {' '.join(left)}")
    return {"processes": len(pids), "namespaces": len(names), "scratch": removed}


def check_host() -> None:
    """Refuses (TestbedError) when the testbed cannot be built here."""
    if os.geteuid() != 0:
        raise TestbedError("the testbed needs root (network namespaces, veths, qdiscs); run it with sudo")
    for tool in ("ip", "tc"):
        if sh("which", tool, check=False).returncode != 0:
            raise TestbedError(f"the testbed needs iproute2's `{tool}`, not found")
    r = sh("ip", "netns", "list", check=False)
    if r.returncode != 0:
        raise TestbedError(f"`ip netns` does not work here: {r.stderr.strip()}")


@dataclass
class Link:
    """A shaped direction: rate (bit/s) and queue (``("bytes"|"packets", n)``)."""

    rate_bps: int
    limit: tuple[str, int]


class Topology:
    """The namespaces, bridge, veths and qdiscs of one run. ``up()`` builds,
    ``down()`` tears down (also after a partial ``up()``; again is a no-op)."""

    def __init__(self, prefix: str, subnet: int, uplinks: list[Link | None], downlinks: list[Link | None]):
        if not re.fullmatch(r"[a-z0-9]{1,8}", prefix):
            raise TestbedError(f"prefix {prefix!r}: 1 to 8 lower-case letters or digits")
        if len(uplinks) > 200:
            raise TestbedError("at most 200 peers")
        self.prefix, self.subnet = prefix, subnet
        self.uplinks, self.downlinks = uplinks, downlinks
        self.core = f"{stem(prefix)}core"

    @property
    def n(self) -> int:
        return len(self.uplinks)

    def ns(self, i: int) -> str:
        """Peer i's own namespace (its eth0)."""
        return f"{stem(self.prefix)}p{i:03d}"

    def modem(self, i: int) -> str:
        """Peer i's modem namespace: its uplink queue is on ``wan`` there."""
        return f"{stem(self.prefix)}m{i:03d}"

    def ip(self, i: int) -> str:
        return f"10.{self.subnet}.0.{10 + i}"

    def mac(self, i: int) -> str:
        return f"02:74:{self.subnet:02x}:00:{i >> 8:02x}:{(10 + i) & 0xFF:02x}"

    def namespaces(self) -> list[str]:
        return [self.core] + [x for i in range(self.n) for x in (self.modem(i), self.ns(i))]

    @staticmethod
    def _qdisc(ns: str, dev: str, link: Link) -> None:
        # stab: the qdiscs see IP bytes (frame less its Ethernet header)
        base = ["tc", "-n", ns, "qdisc", "replace", "dev", dev, "stab", "overhead", str(-ETH_HEADER), "root",
                "handle", "1:", "tbf", "rate", f"{link.rate_bps}bit", "burst", str(BURST_BYTES)]
        kind, n = link.limit
        if kind == "bytes":
            sh(*base, "limit", str(max(n, 1)))
        else:  # packets: tbf's queue is a pfifo of n packets
            sh(*base, "limit", str(max(n, 1) * 1500))
            sh("tc", "-n", ns, "qdisc", "replace", "dev", dev, "parent", "1:1", "handle", "10:", "pfifo",
               "limit", str(max(n, 1)))

    def up(self) -> None:
        existing = our_namespaces(self.prefix)
        if existing:
            raise TestbedError(f"namespaces {stem(self.prefix)}* exist already (another testbed run with this "
                               f"prefix? if not: torrentlab testbed --cleanup)")
        sh("ip", "netns", "add", self.core)
        sh("ip", "-n", self.core, "link", "add", "br0", "type", "bridge", "forward_delay", "0", "stp_state", "0")
        sh("ip", "-n", self.core, "link", "set", "br0", "up")
        self._no_ipv6(self.core)
        for i in range(self.n):
            ns, mo = self.ns(i), self.modem(i)
            sh("ip", "netns", "add", mo)
            sh("ip", "netns", "add", ns)
            self._no_ipv6(mo)
            self._no_ipv6(ns)
            core_if = f"v{i}"
            # the modem: a bridge between the peer's side (lan) and the core's (wan)
            sh("ip", "-n", mo, "link", "add", "brm", "type", "bridge", "forward_delay", "0", "stp_state", "0")
            sh("ip", "-n", mo, "link", "add", "lan", "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "-n", self.core, "link", "add", core_if, "type", "veth", "peer", "name", "wan", "netns", mo)
            sh("ip", "-n", mo, "link", "set", "wan", "gso_max_segs", "1", "gso_max_size", "1500")
            for dev in ("lan", "wan"):
                sh("ip", "-n", mo, "link", "set", dev, "master", "brm", "up")
            sh("ip", "-n", mo, "link", "set", "brm", "up")
            sh("ip", "-n", self.core, "link", "set", core_if, "master", "br0", "up")
            sh("ip", "-n", ns, "link", "set", "eth0", "address", self.mac(i))
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "-n", ns, "link", "set", "eth0", "gso_max_segs", "1", "gso_max_size", "1500")
            sh("ip", "-n", ns, "addr", "add", f"{self.ip(i)}/24", "dev", "eth0")
            sh("ip", "-n", ns, "link", "set", "eth0", "up")
            if self.uplinks[i] is not None:
                self._qdisc(mo, "wan", self.uplinks[i])
            if self.downlinks[i] is not None:
                self._qdisc(self.core, core_if, self.downlinks[i])
        # Permanent neighbour entries: no ARP (the kernel's neighbour table limit is shared by all namespaces).
        hosts = [(self.ip(i), self.mac(i)) for i in range(self.n)]
        for i in range(self.n):
            lines = "".join(f"neigh replace {ip} lladdr {mac} dev eth0 nud permanent\n"
                            for j, (ip, mac) in enumerate(hosts) if j != i)
            if lines:
                sh("ip", "-n", self.ns(i), "-batch", "-", stdin=lines)

    @staticmethod
    def _no_ipv6(ns: str) -> None:
        sh("ip", "netns", "exec", ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; "
           "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6")

    def set_cc(self, i: int, cc: str) -> bool:
        """Sets the namespace's default TCP congestion control; False where the
        kernel refuses it (outside the host's tcp_allowed_congestion_control)."""
        r = sh("ip", "netns", "exec", self.ns(i), "sysctl", "-q", "-w", f"net.ipv4.tcp_congestion_control={cc}",
               check=False)
        return r.returncode == 0

    def add_ingress_loss(self, i: int, p: float) -> None:
        """Random loss of every packet arriving at peer i (iptables' statistic match)."""
        sh("ip", "netns", "exec", self.ns(i), "iptables", "-A", "INPUT", "-i", "eth0", "-m", "statistic",
           "--mode", "random", "--probability", f"{p:.6f}", "-j", "DROP")

    def lost_packets(self, i: int) -> int | None:
        r = sh("ip", "netns", "exec", self.ns(i), "iptables", "-L", "INPUT", "-v", "-x", "-n", check=False)
        for line in r.stdout.splitlines():
            if "statistic" in line:
                return int(line.split()[0])
        return None

    def down(self) -> None:
        for ns in reversed(self.namespaces()):
            r = sh("ip", "netns", "pids", ns, check=False)
            pids = [int(x) for x in r.stdout.split() if x.isdigit()]
            if pids:
                kill_pids(pids)
            sh("ip", "netns", "del", ns, check=False)


# ---------------------------------------------------------------- qdisc statistics over rtnetlink

_CLONE_NEWNET = 0x40000000
_RTM_NEWQDISC, _RTM_GETQDISC = 36, 38
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_NLMSG_DONE, _NLMSG_ERROR = 3, 2
_TCA_KIND, _TCA_STATS, _TCA_STATS2 = 1, 3, 7
_TCA_STATS_BASIC, _TCA_STATS_QUEUE = 1, 3
_TC_H_ROOT = 0xFFFFFFFF


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise TestbedError(f"setns: {os.strerror(e)}")


def netlink_in(ns: str) -> socket.socket:
    """An rtnetlink socket opened inside namespace `ns` (the calling thread
    goes there and comes back)."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        _setns(target)
        try:
            s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        finally:
            _setns(own)
    finally:
        os.close(own)
        os.close(target)
    s.bind((0, 0))
    return s


def _attrs(buf: bytes, off: int, end: int):
    while off + 4 <= end:
        ln, typ = struct.unpack_from("HH", buf, off)
        if ln < 4:
            break
        yield typ & 0x3FFF, buf[off + 4: off + ln]
        off += (ln + 3) & ~3


@dataclass
class QdiscStats:
    """The root qdisc of one device: cumulative counters and the backlog now."""

    sent_bytes: int  # IP bytes (with the size table), or frames
    sent_packets: int
    dropped: int
    backlog_bytes: int
    qlen: int


def root_qdisc(sock: socket.socket, ifindex: int, seq: int = 1) -> QdiscStats | None:
    """Dumps the qdiscs over `sock` and returns the root one of `ifindex`."""
    msg = struct.pack("BxxxiIII", socket.AF_UNSPEC, 0, 0, 0, 0)
    hdr = struct.pack("IHHII", 16 + len(msg), _RTM_GETQDISC, _NLM_F_REQUEST | _NLM_F_DUMP, seq, 0)
    sock.send(hdr + msg)
    found = None
    while True:
        data = sock.recv(65536)
        off = 0
        done = False
        while off + 16 <= len(data):
            ln, typ, _flags, _seq, _pid = struct.unpack_from("IHHII", data, off)
            if ln < 16:
                done = True
                break
            if typ == _NLMSG_DONE:
                done = True
            elif typ == _NLMSG_ERROR:
                done = True
            elif typ == _RTM_NEWQDISC:
                _fam, ifi, _handle, parent, _info = struct.unpack_from("BxxxiIII", data, off + 16)
                if ifi == ifindex and parent == _TC_H_ROOT:
                    found = _parse_stats(data, off + 16 + 20, off + ln)
            off += (ln + 3) & ~3
        if done:
            return found


def _parse_stats(buf: bytes, off: int, end: int) -> QdiscStats | None:
    basic = queue = None
    for typ, val in _attrs(buf, off, end):
        if typ == _TCA_STATS2:
            for t2, v2 in _attrs(val, 0, len(val)):
                if t2 == _TCA_STATS_BASIC and len(v2) >= 12:
                    basic = struct.unpack_from("QI", v2, 0)
                elif t2 == _TCA_STATS_QUEUE and len(v2) >= 20:
                    queue = struct.unpack_from("IIIII", v2, 0)
    if basic is None or queue is None:
        return None
    qlen, backlog, drops, _requeues, _overlimits = queue
    return QdiscStats(sent_bytes=basic[0], sent_packets=basic[1], dropped=drops, backlog_bytes=backlog, qlen=qlen)


def ifindex(ns: str, dev: str) -> int:
    r = sh("ip", "-n", ns, "-o", "link", "show", "dev", dev)
    return int(r.stdout.split(":", 1)[0])
