#!/usr/bin/env python3
"""Real mainline BitTorrent 4.0.4 swarms in network namespaces, against the model.

What it does
------------
Runs a flash crowd of real mainline 4.0.4 clients (1 seed + N leechers, one
file) on this host, each client in its own Linux network namespace, and the
same scenario in torrentlab's `mainline` model, then prints the metrics of
torrentlab's swarm summary side by side (docs/metrics.md, "Swarm runs").

Network (nothing outside namespaces whose names start with `tlml<prefix>-`
is touched):

    tlml<P>-p00 (seed) eth0 --tbf--+
    tlml<P>-p01        eth0 --tbf--+-- br0 in tlml<P>-core
    ...                            |
    tlml<P>-trk (tracker) eth0 ----+

Each peer's uplink is a `tbf` qdisc on its end of a veth pair (default
1 Mbit/s, queue limit `--buffer-s` seconds at that rate, in bytes); the
downlinks and the tracker's link are unlimited. There is no netem, so the
RTT is that of the veth/bridge path (tens of microseconds). GSO is capped at
one segment on the peers' interfaces (`gso_max_segs 1`), as the model's
`tso = false`. IPv6 is off and every namespace has permanent neighbour
entries for all the others (no ARP: the kernel's ARP table limit is shared
by all namespaces, and two swarms of 20 and 40 leechers overflow it).

One iteration: a random file of `--size` bytes; a .torrent made by mainline's
`btmaketorrent.py` (`--piece-size`, default 256 KiB = mainline's default
`piece_size_pow2` 18); mainline's `bttrack.py` (with `--nat_check 0`: the
model's tracker lists a peer as soon as it announces); the seed; once the
seed's `started` announce is answered, every leecher at once. Every client is
mainline's `btdownloadheadless.py` with `--max_upload_rate L` (mainline's kB/s
are KiB/s: 20 means 20,480 B/s), run through `bench/mainline_probe.py`
(Python 2), which wraps mainline's methods to log events with timestamps.
When every leecher has finished (or `--timeout`), the clients are stopped and
the metrics are computed from the event logs. Time 0 is the seed's `started`
announce.

The model: a torrentlab scenario with the same peers, file, piece size,
upload limits, access links and buffer, RTT 0, TCP `linux` preset with Cubic
and no TSO; the leechers join at the times the real leechers announced in
the real iteration of the same index (`join = [...]`). It runs for
`--model-seeds` seeds (iteration k's join times are reused cyclically).

The metrics, the model side and the table are in `bench/mainline_compare.py`;
this file builds the testbed and runs the real clients.

Usage
-----
    sudo python3 bench/mainline_swarm.py --mainline /work/scratch/mainline-4.0.4 \\
        --leechers 20 --size "5 MB" --limit 20 --iterations 3 \\
        --prefix a --subnet 231 -o /work/scratch/mlres/20L-20k

    python3 bench/mainline_swarm.py --table DIR [DIR ...]   # print the tables again
    python3 bench/mainline_swarm.py --model-only -o DIR      # redo the model side
    python3 bench/mainline_swarm.py --model-only --recompute -o DIR  # and the real metrics
    sudo python3 bench/mainline_swarm.py --cleanup [--prefix a]

`--probe-variant started-for-seeds[,started-requested]` runs mainline with
some of the model's simplifications put in (see bench/mainline_probe.py):
an experiment to test a mechanism, not mainline as released.

Several swarms may run at once with different `--prefix` and `--subnet`.
Everything is torn down on exit, on Ctrl-C, on SIGTERM and on a crash;
`--cleanup` (idempotent) kills whatever still runs in namespaces named
`tlml<prefix>-*` (all `tlml*` without `--prefix`), by the pids that
`ip netns pids` lists, deletes those namespaces, and removes
`/dev/shm/tlml<prefix>-*`.

Output (`-o DIR`): `config.json`; `real-<i>/` with `events/<label>.jsonl`
(the probe's logs), `stdout/`, `tracker.log`, `metrics.json`; `model/`
with `scenario-<i>.toml` and `seed-<k>/metrics.json`; `summary.json` (every
run's summary row) and `table.md` (what is printed).

Needs
-----
Root (network namespaces, veth, bridge, tc tbf), iproute2, Python 2.7 for
mainline (`--python2`, default /root/.pyenv/versions/2.7.18/bin/python; the
standard library only), a mainline 4.0.4 source tree (commit 37ecb9e of
github.com/kenorb-contrib/BitTorrent; never copied into this repository),
Python 3.9+ with the installed `torrentlab` package for the model side.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from mainline_compare import model_runs, real_metrics, table
from torrentlab.guards import parse_size  # the scenario's own size units
from torrentlab.testbed.netns import kill_pids

HERE = Path(__file__).resolve().parent
PROBE = HERE / "mainline_probe.py"
BASE = "tlml"  # every namespace and scratch directory of ours starts with this
TRACKER_PORT = 6969
PEER_PORT = 6881
DEFAULT_PY2 = "/root/.pyenv/versions/2.7.18/bin/python"

# ---------------------------------------------------------------- helpers

def sh(*cmd: str, check: bool = True, quiet: bool = False) -> subprocess.CompletedProcess:
    r = subprocess.run(list(cmd), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class CpuSampler:
    """Whole-machine CPU busy share from /proc/stat (all cores, all users)."""

    def __init__(self) -> None:
        self.prev = self._read()
        self.samples: list[float] = []

    @staticmethod
    def _read() -> tuple[int, int]:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        return sum(v[:8]), idle

    def sample(self) -> float | None:
        tot, idle = self._read()
        dt, di = tot - self.prev[0], idle - self.prev[1]
        self.prev = (tot, idle)
        if dt <= 0:
            return None
        busy = 100.0 * (dt - di) / dt
        self.samples.append(busy)
        return busy


# ---------------------------------------------------------------- namespaces


def our_namespaces(prefix: str) -> list[str]:
    """Namespaces of ours: `tlml<prefix>-...` (all `tlml...` when prefix is '')."""
    r = sh("ip", "netns", "list", check=False)
    names = [line.split()[0] for line in r.stdout.splitlines() if line.strip()]
    stem = f"{BASE}{prefix}-" if prefix else BASE
    return [n for n in names if n.startswith(stem)]


def cleanup(prefix: str) -> int:
    """Idempotent: kill what runs in our namespaces, delete them, remove scratch."""
    names = our_namespaces(prefix)
    pids: list[int] = []
    for n in names:
        r = sh("ip", "netns", "pids", n, check=False)
        pids += [int(x) for x in r.stdout.split() if x.isdigit()]
    if pids:
        kill_pids(sorted(set(pids)))
    for n in names:
        sh("ip", "netns", "del", n, check=False)
    stem = f"{BASE}{prefix}-" if prefix else BASE
    shm = Path("/dev/shm")
    removed = 0
    for d in shm.glob(f"{stem}*"):
        shutil.rmtree(d, ignore_errors=True)
        removed += 1
    left = our_namespaces(prefix)
    if names or pids or removed:
        log(f"cleanup {stem}*: killed {len(set(pids))} processes, deleted {len(names) - len(left)} namespaces, "
            f"removed {removed} scratch directories")
    if left:
        log(f"cleanup: still present: {left}")
        return 1
    return 0


class Testbed:
    """The namespaces, veths, bridge and tbf qdiscs of one swarm."""

    def __init__(self, prefix: str, subnet: int, peers: int, uplink_bps: int, buffer_bytes: int, burst: int):
        self.prefix, self.subnet, self.peers = prefix, subnet, peers
        self.uplink_bps, self.buffer_bytes, self.burst = uplink_bps, buffer_bytes, burst
        self.core = f"{BASE}{prefix}-core"
        self.trk = f"{BASE}{prefix}-trk"

    def ns(self, i: int) -> str:
        return f"{BASE}{self.prefix}-p{i:02d}"

    def ip(self, i: int) -> str:
        return f"10.{self.subnet}.0.{10 + i}"

    @property
    def tracker_ip(self) -> str:
        return f"10.{self.subnet}.0.2"

    def mac(self, i: int) -> str:
        """eth0's address of peer i (i = -1: the tracker)."""
        return f"02:74:{self.subnet:02x}:00:00:{(2 if i < 0 else 10 + i):02x}"

    def _attach(self, ns: str, core_if: str, ip: str, mac: str, shaped: bool) -> None:
        sh("ip", "netns", "add", ns)
        # no IPv6 (router solicitations, MLD): the uplinks carry the swarm only
        sh("ip", "netns", "exec", ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; "
           "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6")
        sh("ip", "-n", self.core, "link", "add", core_if, "type", "veth", "peer", "name", "eth0", "netns", ns)
        sh("ip", "-n", self.core, "link", "set", core_if, "master", "br0", "up")
        sh("ip", "-n", ns, "link", "set", "eth0", "address", mac)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        # no segmentation offload: one MSS per packet, as the model's tso = false
        sh("ip", "-n", ns, "link", "set", "eth0", "gso_max_segs", "1", "gso_max_size", "1500")
        sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
        sh("ip", "-n", ns, "link", "set", "eth0", "up")
        if shaped:
            sh("tc", "-n", ns, "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", f"{self.uplink_bps}bit",
               "burst", str(self.burst), "limit", str(self.buffer_bytes))

    def up(self) -> None:
        sh("ip", "netns", "add", self.core)
        sh("ip", "-n", self.core, "link", "add", "br0", "type", "bridge", "forward_delay", "0", "stp_state", "0")
        sh("ip", "-n", self.core, "link", "set", "br0", "up")
        sh("ip", "netns", "exec", self.core, "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; "
           "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6")
        self._attach(self.trk, "vt", self.tracker_ip, self.mac(-1), shaped=False)
        for i in range(self.peers):
            self._attach(self.ns(i), f"v{i}", self.ip(i), self.mac(i), shaped=True)
        # Static (permanent) neighbour entries: no ARP. The kernel's ARP table
        # limit (net.ipv4.neigh.default.gc_thresh3, 1024 by default) counts
        # the dynamic entries of every namespace together, and a swarm of 41
        # peers alone needs 41 x 40; past it, new neighbours fail ("neighbor
        # table overflow") and so do connections. Permanent entries are
        # exempt from that count.
        hosts = [(self.tracker_ip, self.mac(-1))] + [(self.ip(i), self.mac(i)) for i in range(self.peers)]
        for k, ns in enumerate([self.trk] + [self.ns(i) for i in range(self.peers)]):
            lines = "".join(f"neigh replace {ip} lladdr {mac} dev eth0 nud permanent\n"
                            for j, (ip, mac) in enumerate(hosts) if j != k)
            r = subprocess.run(["ip", "-n", ns, "-batch", "-"], input=lines, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"ip -n {ns} -batch (neighbours): {r.stderr.strip()}")

    def qdisc_stats(self, i: int) -> dict:
        r = sh("tc", "-n", self.ns(i), "-s", "qdisc", "show", "dev", "eth0", check=False)
        m = re.search(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)", r.stdout)
        if not m:
            return {}
        return {"sent_bytes": int(m[1]), "sent_packets": int(m[2]), "dropped": int(m[3]), "overlimits": int(m[4])}


def listening(pid: int, port: int) -> bool:
    """Whether the process's network namespace has a TCP socket listening on port."""
    try:
        with open(f"/proc/{pid}/net/tcp") as f:
            for line in f.readlines()[1:]:
                parts = line.split()
                if parts[3] == "0A" and int(parts[1].split(":")[1], 16) == port:
                    return True
    except OSError:
        return False
    return False


# ---------------------------------------------------------------- one real iteration


class EventFiles:
    """Reads the probes' JSON-lines logs as they grow."""

    def __init__(self, paths: dict[str, Path]):
        self.paths = paths
        self.offsets = {k: 0 for k in paths}
        self.events: dict[str, list[dict]] = {k: [] for k in paths}

    def poll(self) -> None:
        for k, p in self.paths.items():
            try:
                with open(p) as f:
                    f.seek(self.offsets[k])
                    data = f.read()
            except FileNotFoundError:
                continue
            end = data.rfind("\n")
            if end < 0:
                continue
            self.offsets[k] += len(data[: end + 1].encode())
            for line in data[: end + 1].splitlines():
                if line.strip():
                    self.events[k].append(json.loads(line))

    def has(self, k: str, ev: str, **kw) -> dict | None:
        for e in self.events[k]:
            if e["ev"] == ev and all(e.get(a) == b for a, b in kw.items()):
                return e
        return None


def real_iteration(args, it: int, out: Path) -> dict:
    n = args.leechers + 1
    labels = ["seed"] + [f"l{i:02d}" for i in range(1, n)]
    bed = Testbed(args.prefix, args.subnet, n, args.uplink_bps, args.buffer_bytes, args.burst)
    scratch = Path("/dev/shm") / f"{BASE}{args.prefix}-run"
    run_dir = out / f"real-{it}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    (run_dir / "events").mkdir(parents=True)
    (run_dir / "stdout").mkdir()
    procs: dict[str, subprocess.Popen] = {}
    if our_namespaces(args.prefix):  # another swarm's: refuse before touching anything
        raise RuntimeError(f"namespaces {BASE}{args.prefix}-* exist already (another run with this --prefix? "
                           f"if not, run --cleanup --prefix {args.prefix})")
    cpu = CpuSampler()
    cpu_log: list[tuple[float, float]] = []
    try:
        bed.up()
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        # the content and the .torrent (mainline's own metainfo maker)
        seed_dir = scratch / "p00"
        seed_dir.mkdir()
        content = seed_dir / "content.bin"
        with open(content, "wb") as f:
            left = args.size
            while left:
                chunk = os.urandom(min(left, 1 << 20))
                f.write(chunk)
                left -= len(chunk)
        torrent = scratch / "content.torrent"
        pow2 = int(math.log2(args.piece_size))
        sh(args.python2, str(Path(args.mainline) / "btmaketorrent.py"), "--piece_size_pow2", str(pow2),
           "--target", str(torrent), f"http://{bed.tracker_ip}:{TRACKER_PORT}/announce", str(content))
        shutil.copy(torrent, run_dir / "content.torrent")

        def spawn(label: str, ns: str, argv: list[str], home: Path) -> subprocess.Popen:
            home.mkdir(parents=True, exist_ok=True)
            outf = open(run_dir / "stdout" / f"{label}.txt", "wb")
            p = subprocess.Popen(["ip", "netns", "exec", ns, "env", f"HOME={home}", *argv], stdout=outf,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
            procs[label] = p
            return p

        trk = spawn("tracker", bed.trk, [args.python2, str(Path(args.mainline) / "bttrack.py"), "--port",
                                         str(TRACKER_PORT), "--dfile", str(scratch / "tracker.dfile"),
                                         "--nat_check", "0", "--logfile", str(run_dir / "tracker.log")],
                    scratch / "trk")
        deadline = time.time() + 20
        while not listening(trk.pid, TRACKER_PORT):
            if trk.poll() is not None or time.time() > deadline:
                raise RuntimeError("the tracker did not start; see stdout/tracker.txt")
            time.sleep(0.1)

        def client(i: int) -> subprocess.Popen:
            d = scratch / f"p{i:02d}"
            d.mkdir(exist_ok=True)
            (d / "data").mkdir(exist_ok=True)
            save = content if i == 0 else d / "content.bin"
            argv = [args.python2, str(PROBE), "--src", str(args.mainline), "--events",
                    str(run_dir / "events" / f"{labels[i]}.jsonl"), "--label", labels[i], "--cc", args.cc,
                    *(["--variant", args.probe_variant] if args.probe_variant else []), "--",
                    "--max_upload_rate", str(args.limit), "--minport", str(PEER_PORT), "--maxport", str(PEER_PORT),
                    "--display_interval", "86400", "--data_dir", str(d / "data"), "--save_as", str(save),
                    *args.client_arg, str(torrent)]
            return spawn(labels[i], bed.ns(i), argv, d)

        files = EventFiles({lab: run_dir / "events" / f"{lab}.jsonl" for lab in labels})
        client(0)
        deadline = time.time() + 60
        while True:
            files.poll()
            rep = files.has("seed", "announce_reply")
            if rep is not None:
                if rep.get("error"):
                    raise RuntimeError(f"the seed's announce failed: {rep['error']}")
                break
            if procs["seed"].poll() is not None or time.time() > deadline:
                raise RuntimeError("the seed did not announce; see stdout/seed.txt")
            time.sleep(0.1)
        log(f"[{args.prefix}] iteration {it}: seed up, starting {args.leechers} leechers")
        t_launch = time.time()
        for i in range(1, n):
            client(i)
        leechers = labels[1:]
        last_print = 0.0
        t_end = t_launch + args.timeout
        timed_out = False
        while True:
            time.sleep(2)
            files.poll()
            b = cpu.sample()
            if b is not None:
                cpu_log.append((time.time() - t_launch, b))
            done = [lab for lab in leechers if files.has(lab, "finished")]
            dead = [lab for lab, p in procs.items() if p.poll() is not None]
            if dead:
                raise RuntimeError(f"clients exited early: {dead}; see {run_dir}/stdout/")
            if len(done) == len(leechers):
                break
            if time.time() > t_end:
                timed_out = True
                log(f"[{args.prefix}] iteration {it}: timeout with {len(done)}/{len(leechers)} done")
                break
            if time.time() - last_print > 30:
                last_print = time.time()
                pieces = sum(sum(1 for e in files.events[lab] if e["ev"] == "piece") for lab in leechers)
                log(f"[{args.prefix}] it {it} t={time.time() - t_launch:6.0f}s done {len(done)}/{len(leechers)} "
                    f"pieces {pieces} cpu {b if b is not None else float('nan'):.0f}%")
        time.sleep(2)  # the last HAVEs
        qstats = {labels[i]: bed.qdisc_stats(i) for i in range(n)}
        for lab in labels:
            procs[lab].send_signal(signal.SIGTERM)
        for lab in labels:
            try:
                procs[lab].wait(timeout=10)
            except subprocess.TimeoutExpired:
                procs[lab].kill()
        files.poll()
        ips = {labels[i]: bed.ip(i) for i in range(n)}
        m = real_metrics(args, files.events, labels, ips)
        m["timed_out"] = timed_out
        m["uplink_qdisc"] = qstats
        busy = [b for _, b in cpu_log]
        m["cpu"] = {
            "machine_busy_mean_pct": statistics.fmean(busy) if busy else None,
            "machine_busy_max_pct": max(busy) if busy else None,
            "clients_cpu_s": sum(m["peers"][i]["cpu_s"] or 0 for i in range(n)),
            "wall_s": time.time() - t_launch,
            "samples": cpu_log,
        }
        (run_dir / "metrics.json").write_text(json.dumps(m, indent=1))
        return m
    finally:
        for p in procs.values():
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in procs.values():
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        cleanup(args.prefix)


# ---------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mainline", type=Path, help="mainline 4.0.4 source tree (has btdownloadheadless.py)")
    ap.add_argument("-o", "--output", type=Path, help="output directory")
    ap.add_argument("--leechers", type=int, default=20)
    ap.add_argument("--size", type=parse_size, default=parse_size("5 MB"), help="file size (default 5 MB)")
    ap.add_argument("--piece-size", type=parse_size, default=parse_size("256 KiB"),
                    help="a power of two (default 256 KiB, mainline's piece_size_pow2 18)")
    ap.add_argument("--limit", type=int, default=20,
                    help="mainline --max_upload_rate for every client, its kB/s = KiB/s (default 20)")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--model-seeds", type=int, default=10)
    ap.add_argument("--uplink-bps", type=int, default=1_000_000, help="uplink tbf rate, bit/s (default 1e6)")
    ap.add_argument("--buffer-s", type=float, default=1.0, help="uplink queue limit, seconds at the uplink rate")
    ap.add_argument("--burst", type=int, default=1600, help="tbf bucket, bytes (default 1600: one packet)")
    ap.add_argument("--cc", default="cubic", help="TCP congestion control of every socket (default cubic)")
    ap.add_argument("--prefix", default="a", help="namespace prefix: tlml<prefix>-* (letters/digits)")
    ap.add_argument("--subnet", type=int, default=231, help="10.<subnet>.0.0/24 for this swarm")
    ap.add_argument("--timeout", type=float, default=3600, help="per real iteration, seconds")
    ap.add_argument("--python2", default=DEFAULT_PY2)
    ap.add_argument("--client-arg", action="append", default=[], help="extra btdownloadheadless argument")
    ap.add_argument("--probe-variant", default="",
                    help="experiments of mainline_probe.py, comma-separated (started-for-seeds, "
                         "started-requested); not mainline as released")
    ap.add_argument("--no-model", action="store_true")
    ap.add_argument("--model-only", action="store_true", help="rerun the model against the real runs in -o")
    ap.add_argument("--recompute", action="store_true",
                    help="with --model-only: first recompute each real-*/metrics.json from its event logs")
    ap.add_argument("--cleanup", action="store_true", help="tear down tlml<prefix>-* (all tlml* without --prefix)")
    ap.add_argument("--table", type=Path, nargs="+", help="print the tables of these output directories")
    argv = sys.argv[1:]
    args = ap.parse_args(argv)
    if not re.fullmatch(r"[a-z0-9]{1,6}", args.prefix):
        ap.error("--prefix: 1 to 6 lower-case letters or digits")
    if args.cleanup:
        return cleanup(args.prefix if "--prefix" in " ".join(argv) else "")
    if args.table:
        for d in args.table:
            print(table(d))
        return 0
    if not args.output:
        ap.error("-o is required")
    args.buffer_bytes = int(round(args.buffer_s * args.uplink_bps / 8))
    out: Path = args.output
    if args.model_only:
        cfg = json.loads((out / "config.json").read_text())
        for k in ("leechers", "size", "piece_size", "limit", "uplink_bps", "buffer_s", "cc"):
            setattr(args, k, cfg[k])
        if args.recompute:
            args.subnet = cfg["subnet"]
            for p in sorted(out.glob("real-*/metrics.json")):
                old_m = json.loads(p.read_text())
                labels = [x["label"] for x in old_m["peers"]]
                ips = {x["label"]: x["ip"] for x in old_m["peers"]}
                ev = {lab: [json.loads(line) for line in open(p.parent / "events" / f"{lab}.jsonl") if line.strip()]
                      for lab in labels}
                m = real_metrics(args, ev, labels, ips)
                for k in ("timed_out", "uplink_qdisc", "cpu"):
                    m[k] = old_m.get(k)
                p.write_text(json.dumps(m, indent=1))
        real = [json.loads(p.read_text()) for p in sorted(out.glob("real-*/metrics.json"))]
        model_runs(args, out, real)
        finish(out, real)
        return 0
    if not args.mainline or not (args.mainline / "btdownloadheadless.py").exists():
        ap.error("--mainline must be a mainline 4.0.4 source tree")
    if 1 << int(math.log2(args.piece_size)) != args.piece_size:
        ap.error("--piece-size must be a power of two (mainline's piece_size_pow2)")
    if args.leechers + 1 > 240:
        ap.error("at most 239 leechers (one /24)")
    if os.geteuid() != 0:
        ap.error("needs root (network namespaces)")
    out.mkdir(parents=True, exist_ok=True)
    cfg = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
           if k not in ("table", "cleanup", "model_only", "no_model")}
    cfg["started"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    cfg["host"] = {"nproc": os.cpu_count(), "kernel": os.uname().release}
    (out / "config.json").write_text(json.dumps(cfg, indent=1))

    def on_term(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    # Ctrl-C tears down too, also when started in the background of a
    # script (where the shell leaves SIGINT ignored).
    signal.signal(signal.SIGINT, on_term)
    real = []
    if our_namespaces(args.prefix):
        log(f"namespaces {BASE}{args.prefix}-* exist already: another run with --prefix {args.prefix}? "
            f"If not, run --cleanup --prefix {args.prefix}")
        return 2
    try:
        for it in range(args.iterations):
            m = real_iteration(args, it, out)
            s = m["summary"]
            log(f"[{args.prefix}] iteration {it}: mean {s['mean_download_time_s']:.0f} s, max "
                f"{s['max_download_time_s']:.0f} s, seed copies {s['seed_copies_uploaded']:.2f}, "
                f"cpu mean {m['cpu']['machine_busy_mean_pct']:.0f}%")
            real.append(m)
    finally:
        cleanup(args.prefix)
    if not args.no_model:
        model_runs(args, out, real)
    finish(out, real)
    return 0


def finish(out: Path, real: list[dict]) -> None:
    """Writes table.md and summary.json (every run's summary row) and prints the table."""
    t = table(out)
    (out / "table.md").write_text(t)
    rows = [{"side": "real", "iteration": i, **m["summary"]} for i, m in enumerate(real)]
    rows += [{"side": "model", "seed": m["seed"], **m["summary"]}
             for m in (json.loads(p.read_text()) for p in sorted(out.glob("model/seed-*/metrics.json")))]
    (out / "summary.json").write_text(json.dumps(rows, indent=1, default=float))
    print(t)


if __name__ == "__main__":
    sys.exit(main())
