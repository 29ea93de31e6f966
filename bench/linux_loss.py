#!/usr/bin/env python3
"""How the running Linux kernel recovers from loss: one bulk TCP flow between
network namespaces through a tbf bottleneck, with random loss, and the
kernel's own loss-recovery counters per run (issue 39 item 5; compare with
torrentlab's TCP model, crates/transport/src/tcp/).

Topology (default, `--topology router`): three namespaces

    tll-snd 10.239.1.1 --veth-- 10.239.1.2 tll-rtr 10.239.2.1 --veth-- 10.239.2.2 tll-rcv

with a tbf qdisc (RATE, a buffer of BUFFER packets) on the router's egress
towards the receiver and random loss on the receiver's INPUT
(`iptables -m statistic --mode random --probability P -j DROP`, data
segments only). `--topology direct` drops the router: two namespaces on one
veth pair, the tbf on the sender's own egress. There the bottleneck's drops
happen inside the sending host (the qdisc refuses the packet under TCP's
feet), which is not a network bottleneck: in one 10 s run at 0 % loss (cubic,
SACK) it took 9 RTOs, 7 of them in SACK recovery, where the router topology
takes none. Use it only to see that effect.

There is no netem on the kernels this was written for, so nothing adds
propagation delay: the RTT is serialisation (about 6 ms a 1500-byte packet at
2 Mbit/s) plus the tbf's queue. TSO, GSO and GRO are off on every veth, so
every packet at the bottleneck and at the drop rule is one segment.

Per run it reports (JSON, one object a line, and a Markdown table of the
means per controller, SACK setting and loss rate): goodput at the receiving
application, the kernel's counters from `nstat -az` deltas in the sender's namespace
(TcpRetransSegs, TcpExtTCPTimeouts, TcpExtTCPLossProbes,
TcpExtTCPLossProbeRecovery, TcpExtTCPSackRecovery, TcpExtTCPRenoRecovery,
TcpExtTCPFastRetrans, TcpExtTCPLostRetransmit, TcpExtTCPSpuriousRTOs, the
undo counters, ...: every non-zero Tcp/TcpExt delta is kept), the tbf's and
the drop rule's packet counts, and `ss -tin` for the flow just before it
closes. The first lines give `uname -r` and the loss-recovery sysctls of the
root and the sender's namespace.

`--model PRESET ...` also runs torrentlab's model on the same path, once per
kernel run (seed = run number), for each TCP preset named: a dumbbell with
no propagation delay, a RATE bottleneck with a BUFFER-packet queue, Bernoulli
loss of data packets before the receiver, one flow of the same controller
(`reno` is the model's `newreno`) and SACK setting, for the same time. Its
rows carry the preset's name where the kernel's carry `kernel`, and a second
table gives each run's timeouts and goodput side by side. `--torrentlab CMD`
names the command that runs the model (default `torrentlab`; e.g. `python3
-m torrentlab.cli` with PYTHONPATH at a development build), and
`--no-kernel` runs the model alone (no root needed).

    sudo python3 bench/linux_loss.py                       # loss 0 1 2 5 %, reno and cubic, 3 runs of 20 s
    sudo python3 bench/linux_loss.py --loss 2 --cc cubic --runs 1 --seconds 10
    sudo python3 bench/linux_loss.py --json runs.jsonl --rate 2mbit --buffer 20 --sack on off
    sudo python3 bench/linux_loss.py --sysctl net.ipv4.tcp_early_retrans=0   # no TLP
    sudo python3 bench/linux_loss.py --cleanup             # remove the namespaces (idempotent)
    sudo python3 bench/linux_loss.py --cc cubic --model linux linux-6   # kernel and model, run by run
    python3 bench/linux_loss.py --no-kernel --model linux-6 --cc cubic  # the model alone

Needs: Linux, root, network namespaces and veth, iproute2 (`ip`, `tc`, `ss`,
`nstat`), `iptables` with the statistic match (Debian: apt-get install
iptables), `ethtool`, and the controllers asked for in
/proc/sys/net/ipv4/tcp_available_congestion_control. The namespaces are
removed on exit, on Ctrl-C and on SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PREFIX = "tll-"
SND, RTR, RCV = f"{PREFIX}snd", f"{PREFIX}rtr", f"{PREFIX}rcv"
PORT = 5201
CHUNK = 1 << 16

SYSCTLS = [
    "net.ipv4.tcp_recovery",
    "net.ipv4.tcp_frto",
    "net.ipv4.tcp_early_retrans",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_dsack",
    "net.ipv4.tcp_fack",
    "net.ipv4.tcp_thin_linear_timeouts",
    "net.ipv4.tcp_min_rtt_wlen",
    "net.ipv4.tcp_comp_sack_delay_ns",
    "net.ipv4.tcp_comp_sack_slack_ns",
    "net.ipv4.tcp_comp_sack_nr",
    "net.ipv4.tcp_reordering",
    "net.ipv4.tcp_max_reordering",
    "net.ipv4.tcp_retries2",
    "net.ipv4.tcp_rto_min_us",
    "net.ipv4.tcp_rto_max_ms",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_ecn",
    "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_limit_output_bytes",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_available_congestion_control",
]

# The counters the table shows (nstat names), with short column names.
COLUMNS = [
    ("TcpRetransSegs", "retrans"),
    ("TcpExtTCPTimeouts", "RTOs"),
    ("TcpExtTCPLossProbes", "TLP"),
    ("TcpExtTCPLossProbeRecovery", "TLP rec"),
    ("TcpExtTCPSackRecovery", "SACK rec"),
    ("TcpExtTCPRenoRecovery", "Reno rec"),
    ("TcpExtTCPFastRetrans", "fast rtx"),
    ("TcpExtTCPLostRetransmit", "lost rtx"),
    ("TcpExtTCPSpuriousRTOs", "spur. RTO"),
    ("TcpExtTCPSlowStartRetrans", "SS rtx"),
    ("TcpExtTCPLossUndo", "loss undo"),
    ("TcpExtTCPDSACKRecv", "DSACK rcv"),
]


def sh(*cmd: str, check: bool = True, ns: str | None = None) -> str:
    """Runs a command (in namespace `ns`) and returns its standard output."""
    full = ["ip", "netns", "exec", ns, *cmd] if ns else list(cmd)
    r = subprocess.run(full, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(full)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def namespaces() -> set[str]:
    out = sh("ip", "netns", "list", check=False)
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def cleanup() -> None:
    """Removes this script's namespaces (their veths go with them). Idempotent."""
    for ns in sorted(namespaces()):
        if ns.startswith(PREFIX):
            sh("ip", "netns", "del", ns, check=False)


def no_offloads(ns: str, dev: str) -> None:
    sh("ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", ns=ns)


def setup(topology: str, rate: str, buffer_pkts: int) -> tuple[str, str, str]:
    """Builds the namespaces; returns the receiver's address and where the
    tbf sits (namespace, device)."""
    cleanup()
    tuned = [SND, RCV] if topology == "direct" else [SND, RTR, RCV]
    for ns in tuned:
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "set", "lo", "up", ns=ns)
    if topology == "direct":
        sh("ip", "link", "add", "s0", "netns", SND, "type", "veth", "peer", "name", "r0", "netns", RCV)
        links = [(SND, "s0", "10.239.1.1/24"), (RCV, "r0", "10.239.1.2/24")]
        dst, shaped = "10.239.1.2", (SND, "s0")
    else:
        sh("ip", "link", "add", "s0", "netns", SND, "type", "veth", "peer", "name", "a0", "netns", RTR)
        sh("ip", "link", "add", "b0", "netns", RTR, "type", "veth", "peer", "name", "r0", "netns", RCV)
        links = [
            (SND, "s0", "10.239.1.1/24"),
            (RTR, "a0", "10.239.1.2/24"),
            (RTR, "b0", "10.239.2.1/24"),
            (RCV, "r0", "10.239.2.2/24"),
        ]
        dst, shaped = "10.239.2.2", (RTR, "b0")
    for ns, dev, addr in links:
        sh("ip", "addr", "add", addr, "dev", dev, ns=ns)
        sh("ip", "link", "set", dev, "up", ns=ns)
        no_offloads(ns, dev)
    if topology == "router":
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=RTR)
        sh("ip", "route", "add", "default", "via", "10.239.1.2", ns=SND)
        sh("ip", "route", "add", "default", "via", "10.239.2.1", ns=RCV)
    # Cached metrics (ssthresh, RTT) of one run must not seed the next.
    sh("sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1", ns=SND)
    limit = buffer_pkts * 1514
    sh(
        "tc",
        "qdisc",
        "replace",
        "dev",
        shaped[1],
        "root",
        "tbf",
        "rate",
        rate,
        "burst",
        "3028",
        "limit",
        str(limit),
        ns=shaped[0],
    )
    return dst, shaped[0], shaped[1]


def set_loss(p: float) -> None:
    """The receiver's INPUT: a counting rule for the flow's data segments, then
    the random drop (replaced each run, so both counters start at zero)."""
    sh("iptables", "-F", "INPUT", ns=RCV)
    sh("iptables", "-A", "INPUT", "-p", "tcp", "--dport", str(PORT), ns=RCV)
    if p > 0:
        sh(
            "iptables",
            "-A",
            "INPUT",
            "-p",
            "tcp",
            "--dport",
            str(PORT),
            "-m",
            "statistic",
            "--mode",
            "random",
            "--probability",
            f"{p:.6f}",
            "-j",
            "DROP",
            ns=RCV,
        )


def rule_counts() -> tuple[int, int]:
    """(data segments that reached the receiver's INPUT, of which dropped)."""
    out = sh("iptables", "-L", "INPUT", "-v", "-x", "-n", ns=RCV)
    counts = [int(line.split()[0]) for line in out.splitlines() if f"dpt:{PORT}" in line]
    return counts[0], (counts[1] if len(counts) > 1 else 0)


def qdisc_stats(ns: str, dev: str) -> dict:
    q = json.loads(sh("tc", "-s", "-j", "qdisc", "show", "dev", dev, ns=ns))[0]
    return {"sent_packets": q.get("packets"), "dropped": q.get("drops"), "overlimits": q.get("overlimits")}


def nstat(ns: str) -> dict[str, int]:
    """Absolute Tcp/TcpExt counters of namespace `ns` (no history file touched)."""
    data = json.loads(sh("nstat", "-azs", "--json", ns=ns))
    flat: dict[str, int] = {}
    for table in data.values():
        flat.update({k: int(v) for k, v in table.items()})
    return {k: v for k, v in flat.items() if k.startswith(("Tcp", "TcpExt"))}


def sysctls(ns: str | None) -> dict[str, str]:
    out = {}
    for name in SYSCTLS:
        r = sh("sysctl", "-n", name, check=False, ns=ns).strip()
        out[name] = r if r else "(absent)"
    return out


SS_FIELDS = re.compile(
    r"\b(cwnd|ssthresh|rto|retrans|lost|reordering|reord_seen|dsack_dups|bytes_retrans|"
    r"delivered|rtt|minrtt|segs_out|data_segs_out|unacked|sacked|mss|send|pacing_rate)"
    r"[: ]([^ ]+)"
)


def parse_ss(text: str) -> dict:
    """The fields of `ss -tin` that matter for loss recovery, as strings."""
    fields = {k: v for k, v in SS_FIELDS.findall(text)}
    words = text.split()
    fields["cc"] = next((w for w in ("reno", "cubic", "bbr") if w in words), None)
    return fields


# --- the two ends, each run in its namespace by the orchestrating process ---


def role_receive(port: int) -> None:
    with socket.socket() as srv:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("0.0.0.0", port))
        srv.listen(1)
        print("ready", flush=True)
        conn, _ = srv.accept()
        got, first, last = 0, None, None
        with conn:
            while True:
                b = conn.recv(1 << 18)
                if not b:
                    break
                now = time.monotonic()
                first = first or now
                last = now
                got += len(b)
        span = (last - first) if first and last else 0.0
        print(json.dumps({"bytes": got, "seconds": span}), flush=True)


def role_send(dst: str, port: int, cc: str, seconds: float) -> None:
    data = b"\0" * CHUNK
    with socket.socket() as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        s.settimeout(30)
        s.connect((dst, port))
        s.settimeout(0.1)
        end, sent = time.monotonic() + seconds, 0
        while time.monotonic() < end:
            try:
                sent += s.send(data)
            except TimeoutError:
                continue
        # The flow as the kernel sees it, still open, then the unsent rest drains.
        ss_text = sh("ss", "-tin", "dst", f"{dst}:{port}")
        s.settimeout(None)
        s.shutdown(socket.SHUT_WR)
        while s.recv(4096):
            pass
    print(json.dumps({"sent": sent, "ss": " ".join(ss_text.split())}), flush=True)


# --- orchestration ---


def one_run(dst: str, shaped: tuple[str, str], cc: str, sack: str, loss: float, seconds: float) -> dict:
    set_loss(loss)
    sh("sysctl", "-qw", f"net.ipv4.tcp_sack={int(sack == 'on')}", ns=SND)
    sh("ip", "tcp_metrics", "flush", "all", check=False, ns=SND)
    q0 = qdisc_stats(*shaped)
    n0 = nstat(SND)
    me = [sys.executable, os.path.abspath(__file__)]
    rcv = subprocess.Popen(["ip", "netns", "exec", RCV, *me, "--role", "receive"], stdout=subprocess.PIPE, text=True)
    try:
        assert rcv.stdout is not None
        if rcv.stdout.readline().strip() != "ready":
            raise RuntimeError("the receiver did not start")
        snd = subprocess.run(
            ["ip", "netns", "exec", SND, *me, "--role", "send", "--dst", dst, "--cc", cc, "--seconds", str(seconds)],
            capture_output=True,
            text=True,
            timeout=seconds + 600,
        )
        if snd.returncode != 0:
            raise RuntimeError(f"sender failed: {snd.stderr.strip()}")
        got = json.loads(rcv.stdout.readline())
        rcv.wait(timeout=30)
    finally:
        if rcv.poll() is None:
            rcv.kill()
            rcv.wait()
    sender = json.loads(snd.stdout)
    n1 = nstat(SND)
    q1 = qdisc_stats(*shaped)
    arrived, dropped = rule_counts()
    delta = {k: n1[k] - n0.get(k, 0) for k in n1 if n1[k] != n0.get(k, 0)}
    return {
        "side": "kernel",
        "cc": cc,
        "sack": sack,
        "loss": loss,
        "seconds": seconds,
        "goodput_bps": 8 * got["bytes"] / got["seconds"] if got["seconds"] else 0.0,
        "bytes_delivered": got["bytes"],
        "transfer_s": got["seconds"],
        "segments_out": delta.get("TcpOutSegs", 0),
        "random_drops": dropped,
        "data_segments_at_receiver": arrived,
        "measured_loss": dropped / arrived if arrived else 0.0,
        "tbf_drops": (q1["dropped"] or 0) - (q0["dropped"] or 0),
        "nstat": delta,
        "ss": parse_ss(sender["ss"]),
        "ss_raw": sender["ss"],
    }


# --- the model on the same path ---

TC_RATE = re.compile(r"^([0-9.]+)(bit|kbit|mbit|gbit)$")


def model_rate(rate: str) -> str:
    """A tc rate ("2mbit") in the scenario file's units ("2000000 bit/s")."""
    m = TC_RATE.match(rate.lower())
    if not m:
        raise ValueError(f"--rate {rate}: give it as tc does, e.g. 2mbit, 500kbit")
    factor = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}[m.group(2)]
    return f"{float(m.group(1)) * factor:g} bit/s"


def model_scenario(preset: str, cc: str, sack: str, loss: float, seconds: float, rate: str, buffer_pkts: int) -> str:
    """The kernel's path as a torrentlab dumbbell (TOML)."""
    return f"""name = "linux-loss-model"
[run]
seed = 1
duration = "{seconds:g} s"
[network]
topology = "dumbbell"
one_way_delay = "0 ms"
[network.bottleneck]
capacity = "{model_rate(rate)}"
buffer = "{buffer_pkts} packets"
[network.loss]
data = {loss!r}
[tcp]
preset = "{preset}"
sack = {"true" if sack == "on" else "false"}
[[flows]]
cc = "{"newreno" if cc == "reno" else cc}"
[metrics]
timeseries = false
queue_log = false
"""


def model_run(cmd: list[str], preset: str, cc: str, sack: str, loss: float, seed: int, a: argparse.Namespace) -> dict:
    """One model run through the torrentlab CLI; the flow's counters."""
    import pandas as pd  # only the model side needs it (torrentlab depends on it)

    with tempfile.TemporaryDirectory(prefix="linux-loss-model-") as tmp:
        path = Path(tmp) / "path.toml"
        path.write_text(model_scenario(preset, cc, sack, loss, a.seconds, a.rate, a.buffer))
        out = Path(tmp) / "out"
        r = subprocess.run(
            [*cmd, "run", str(path), "-o", str(out), "--seed", str(seed), "-q"], capture_output=True, text=True
        )
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} run failed ({r.returncode}): {r.stderr.strip()[-400:]}")
        f = pd.read_parquet(out / "flows.parquet").iloc[0]
        summary = pd.read_parquet(out / "summary.parquet").iloc[0]
    passed = summary["bottleneck_arrived_packets"] - summary["bottleneck_dropped_packets"]
    return {
        "side": preset,
        "cc": cc,
        "sack": sack,
        "loss": loss,
        "seconds": a.seconds,
        "run": seed,
        "goodput_bps": float(f["throughput_bps"]),
        "bytes_delivered": int(f["bytes_delivered"]),
        # Random losses happen after the bottleneck, as the kernel side's drop rule.
        "random_drops": int(summary["network_lost_packets"]),
        "measured_loss": int(summary["network_lost_packets"]) / max(1, int(passed)),
        "tbf_drops": int(summary["bottleneck_dropped_packets"]),
        "nstat": {
            "TcpRetransSegs": int(f["retransmitted_packets"]),
            "TcpExtTCPTimeouts": int(f["timeouts"]),
            "TcpExtTCPFastRetrans": int(f["fast_retransmits"]),
            "TcpOutSegs": int(f["packets_sent"]),
            "TcpExtTCPLostRetransmit": int(f["lost_retransmits"]),
            "TcpExtTCPLossProbes": int(f["loss_probes"]),
            "TcpExtTCPSpuriousRTOs": int(f["spurious_timeouts"]),
        },
    }


def per_run_table(runs: list[dict]) -> str:
    """Each run's RTOs and goodput (Mbit/s), the kernel's and each preset's side by side."""
    sides = sorted({r["side"] for r in runs}, key=lambda s: (s != "kernel", s))
    head = ["cc", "SACK", "loss %", "run", *(f"{s} {c}" for s in sides for c in ("RTOs", "Mbit/s"))]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by = {(r["side"], r["cc"], r["sack"], r["loss"], r["run"]): r for r in runs}
    for cc, sack, loss, run in sorted({(r["cc"], r["sack"], r["loss"], r["run"]) for r in runs}):
        row = [cc, sack, f"{100 * loss:g}", str(run)]
        for side in sides:
            r = by.get((side, cc, sack, loss, run))
            row += [str(r["nstat"].get("TcpExtTCPTimeouts", 0)), f"{r['goodput_bps'] / 1e6:.3f}"] if r else ["", ""]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def table(runs: list[dict]) -> str:
    head = ["side", "cc", "SACK", "loss %", "runs", "goodput Mbit/s", "meas. loss %", "tbf drops"]
    head += [c for _, c in COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    keys = sorted({(r["side"], r["cc"], r["sack"], r["loss"]) for r in runs}, key=lambda k: (k[0] != "kernel", k))
    for side, cc, sack, loss in keys:
        rs = [r for r in runs if (r["side"], r["cc"], r["sack"], r["loss"]) == (side, cc, sack, loss)]

        def mean(f, rs=rs) -> float:
            return statistics.fmean(f(r) for r in rs)

        g = [r["goodput_bps"] / 1e6 for r in rs]
        sd = f" ± {statistics.stdev(g):.3f}" if len(g) > 1 else ""
        drops = [r["tbf_drops"] for r in rs if r["tbf_drops"] is not None]
        row = [
            side,
            cc,
            sack,
            f"{100 * loss:g}",
            str(len(rs)),
            f"{statistics.fmean(g):.3f}{sd}",
            f"{100 * mean(lambda r: r['measured_loss']):.2f}",
            f"{statistics.fmean(drops):.1f}" if drops else "",
        ]
        row += [f"{mean(lambda r, k=k: r['nstat'].get(k, 0)):.1f}" for k, _ in COLUMNS]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--loss", type=float, nargs="+", default=[0, 1, 2, 5], help="random loss, percent")
    ap.add_argument("--cc", nargs="+", default=["reno", "cubic"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rate", default="2mbit", help="tbf rate (tc syntax)")
    ap.add_argument("--buffer", type=int, default=20, help="tbf buffer, packets of 1514 bytes")
    ap.add_argument("--sack", nargs="+", choices=["on", "off"], default=["on"], help="the sender's tcp_sack")
    ap.add_argument(
        "--sysctl",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set in the sender's namespace, e.g. net.ipv4.tcp_early_retrans=0 (no TLP)",
    )
    ap.add_argument("--topology", choices=["router", "direct"], default="router")
    ap.add_argument("--json", type=Path, help="also write one JSON object a line here")
    ap.add_argument("--cleanup", action="store_true", help="only remove the namespaces")
    ap.add_argument("--model", nargs="+", default=[], metavar="PRESET", help="also run torrentlab with these presets")
    ap.add_argument("--torrentlab", default="torrentlab", metavar="CMD", help="the command that runs the model")
    ap.add_argument("--no-kernel", action="store_true", help="run the model only (no root needed)")
    ap.add_argument("--role", choices=["send", "receive"], help=argparse.SUPPRESS)
    ap.add_argument("--dst", help=argparse.SUPPRESS)
    a = ap.parse_args()

    if a.role == "receive":
        role_receive(PORT)
        return 0
    if a.role == "send":
        role_send(a.dst, PORT, a.cc[0], a.seconds)
        return 0
    if a.no_kernel:
        return model_only(a)
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces, tc, iptables)")
    if a.cleanup:
        cleanup()
        return 0
    have = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    missing = [c for c in a.cc if c not in have]
    if missing:
        sys.exit(f"congestion control not available here: {missing} (have {have})")

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    out = a.json.open("w") if a.json else None
    runs: list[dict] = []
    try:
        dst, shaped_ns, shaped_dev = setup(a.topology, a.rate, a.buffer)
        for setting in a.sysctl:
            sh("sysctl", "-qw", setting, ns=SND)
        info = {
            "uname_r": os.uname().release,
            "topology": a.topology,
            "rate": a.rate,
            "buffer_packets": a.buffer,
            "sender_sysctl_overrides": a.sysctl,
            "sysctls_root": sysctls(None),
            "sysctls_sender_ns": sysctls(SND),
        }
        print(json.dumps(info), flush=True)
        if out:
            out.write(json.dumps(info) + "\n")
        for loss in a.loss:
            for cc in a.cc:
                for sack in a.sack:
                    for i in range(a.runs):
                        try:
                            r = one_run(dst, (shaped_ns, shaped_dev), cc, sack, loss / 100, a.seconds)
                        except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
                            # One failed run (e.g. a connect that timed out) does not end the sweep.
                            err = {"cc": cc, "sack": sack, "loss": loss / 100, "run": i + 1, "error": str(e)}
                            print(json.dumps(err), file=sys.stderr, flush=True)
                            if out:
                                out.write(json.dumps(err) + "\n")
                            continue
                        r["run"] = i + 1
                        record(r, runs, out)
                        for preset in a.model:
                            record(
                                model_run(shlex.split(a.torrentlab), preset, cc, sack, loss / 100, i + 1, a), runs, out
                            )
    except KeyboardInterrupt:
        print("interrupted; removing the namespaces", file=sys.stderr)
        return 130
    finally:
        if out:
            out.close()
        cleanup()
    print_tables(runs)
    return 0


def record(r: dict, runs: list[dict], out) -> None:
    """Keeps one run, prints its brief line and writes it to the JSON file."""
    runs.append(r)
    brief = {k: r.get(k) for k in ("side", "cc", "sack", "loss", "run", "goodput_bps", "random_drops", "tbf_drops")}
    print(json.dumps({**brief, **{c: r["nstat"].get(k, 0) for k, c in COLUMNS}}), flush=True)
    if out:
        out.write(json.dumps(r) + "\n")
        out.flush()


def print_tables(runs: list[dict]) -> None:
    print()
    print(table(runs))
    if len({r["side"] for r in runs}) > 1 or any(r["side"] != "kernel" for r in runs):
        print()
        print(per_run_table(runs))


def model_only(a: argparse.Namespace) -> int:
    """`--no-kernel`: the model's runs alone."""
    if not a.model:
        sys.exit("--no-kernel needs --model PRESET ...")
    out = a.json.open("w") if a.json else None
    runs: list[dict] = []
    try:
        for loss in a.loss:
            for cc in a.cc:
                for sack in a.sack:
                    for i in range(a.runs):
                        for preset in a.model:
                            r = model_run(shlex.split(a.torrentlab), preset, cc, sack, loss / 100, i + 1, a)
                            record(r, runs, out)
    finally:
        if out:
            out.close()
    print_tables(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
