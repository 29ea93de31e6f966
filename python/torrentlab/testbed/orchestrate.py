"""Runs a swarm scenario on real peers: the orchestration.

One run: check the scenario (:mod:`.plan`) and the host; build the network
(:mod:`.netns`); write random content and a v1 .torrent (libtorrent's
``create_torrent``); start one libtorrent peer process per peer
(:mod:`.peer`) in its namespace and wait until every one listens; give
them one start time ``t0`` (the flash crowd starts together); sample every
uplink's qdisc every ``sample_interval_s``; stop when every leecher has
every piece (or at ``run.duration``, or ``timeout_s``); stop the peers,
tear everything down, and write the simulator's tables (:mod:`.tables`).

Nothing is left behind: the topology is torn down in a ``finally`` (an
error, Ctrl-C, SIGTERM through the command line), the peers die with the
orchestrator (``PR_SET_PDEATHSIG``), and a run that finds namespaces of its
prefix whose orchestrator is gone (no lock held: it was killed) removes
them first. ``torrentlab testbed --cleanup`` removes everything of ours.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torrentlab.exceptions import TestbedError
from torrentlab.testbed import ccshim, netns
from torrentlab.testbed.plan import Plan, plan

PEER_PORT = 6881
#: Time (s) given to the peers between the start line and t0.
START_LEAD_S = 0.3
LOCK_DIR = Path("/run/torrentlab-testbed")


def _lock(prefix: str, clean: bool = True) -> int:
    """Holds the prefix's lock for this process's life; namespaces of the
    prefix found without a holder are a dead run's and are removed (with `clean`)."""
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK_DIR / f"{prefix}.lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise TestbedError(f"another testbed run with prefix {prefix!r} is running; use another --prefix") from None
    if clean and netns.our_namespaces(prefix):
        netns.cleanup(prefix)
    return fd


def cleanup(prefix: str = "") -> dict[str, Any]:
    """:func:`netns.cleanup` for every prefix of ours (or `prefix`) whose run
    is gone: a prefix whose lock a live run holds is left alone (listed in
    ``"busy"``), so a cleanup never breaks a run in progress."""
    import re

    prefixes = {prefix} if prefix else set()
    if not prefix:
        for name in netns.our_namespaces(""):
            m = re.match(rf"{netns.BASE}([a-z0-9]*)-", name)
            if m:
                prefixes.add(m[1])
        if Path("/dev/shm").is_dir():
            for d in Path("/dev/shm").iterdir():
                m = re.match(rf"{netns.BASE}([a-z0-9]*)-", d.name)
                if m:
                    prefixes.add(m[1])
    total: dict[str, Any] = {"processes": 0, "namespaces": 0, "scratch": 0, "busy": []}
    for p in sorted(prefixes):
        try:
            fd = _lock(p, clean=False)
        except TestbedError:
            total["busy"].append(p)
            continue
        try:
            found = netns.cleanup(p)
        finally:
            os.close(fd)
        for k in ("processes", "namespaces", "scratch"):
            total[k] += found[k]
    return total


def allowed_cc() -> set[str]:
    try:
        return set(Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()) | {"reno"}
    except OSError:
        return {"reno"}


def make_torrent(content: Path, size: int, piece: int, dest: Path) -> None:
    """Random content of `size` bytes and a BitTorrent v1 .torrent of it."""
    import libtorrent as lt

    with open(content, "wb") as f:
        left = size
        while left:
            chunk = os.urandom(min(left, 1 << 20))
            f.write(chunk)
            left -= len(chunk)
    fs = lt.file_storage()
    lt.add_files(fs, str(content))
    flags = getattr(lt.create_torrent, "v1_only", 0)
    t = lt.create_torrent(fs, piece, flags=flags)
    lt.set_piece_hashes(t, str(content.parent))
    dest.write_bytes(lt.bencode(t.generate()))


class Sampler(threading.Thread):
    """Reads every uplink's root qdisc every `interval_s` seconds."""

    def __init__(self, topo: netns.Topology, peers: list[int], interval_s: float) -> None:
        super().__init__(daemon=True, name="qdisc-sampler")
        self.interval_s = interval_s
        self.socks = {i: (netns.netlink_in(topo.modem(i)), netns.ifindex(topo.modem(i), "wan")) for i in peers}
        #: per peer: rows (t, backlog_bytes, qlen, sent_bytes, sent_packets, dropped)
        self.rows: dict[int, list[tuple]] = {i: [] for i in peers}
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.lag_s = 0.0  # the longest a sweep took

    def sweep(self) -> None:
        for i, (s, idx) in self.socks.items():
            st = netns.root_qdisc(s, idx)
            if st is not None:
                self.rows[i].append((time.time(), st.backlog_bytes, st.qlen, st.sent_bytes, st.sent_packets,
                                     st.dropped))

    def run(self) -> None:
        try:
            nxt = time.monotonic()
            while not self.stop.is_set():
                t = time.monotonic()
                self.sweep()
                self.lag_s = max(self.lag_s, time.monotonic() - t)
                nxt += self.interval_s
                self.stop.wait(max(0.0, nxt - time.monotonic()))
            self.sweep()  # the final counters
        except BaseException as e:  # reported by the caller
            self.error = e
        finally:
            for s, _ in self.socks.values():
                s.close()


def cpu_times() -> tuple[int, int]:
    """The machine's (total, idle) jiffies from /proc/stat (every core)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v[:8]), v[3] + (v[4] if len(v) > 4 else 0)


class EventFiles:
    """The peers' event logs, read as they grow (each line once)."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self.offsets = [0] * len(paths)
        self.events: list[list[dict]] = [[] for _ in paths]

    def poll(self) -> None:
        for k, p in enumerate(self.paths):
            try:
                with open(p, "rb") as f:
                    f.seek(self.offsets[k])
                    data = f.read()
            except FileNotFoundError:
                continue
            end = data.rfind(b"\n")
            if end < 0:
                continue
            self.offsets[k] += end + 1
            self.events[k] += [json.loads(line) for line in data[: end + 1].splitlines() if line.strip()]

    def has(self, k: int, ev: str) -> dict | None:
        return next((e for e in self.events[k] if e["ev"] == ev), None)


def read_events(path: Path) -> list[dict]:
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.endswith("\n")]
    except FileNotFoundError:
        return []


def _log(quiet: bool, msg: str) -> None:
    if not quiet:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def execute(p: Plan, work: Path, *, prefix: str = "a", subnet: int = 232, sample_interval_s: float = 0.02,
            timeout_s: float | None = None, quiet: bool = True,
            progress: Callable[[float, float], object] | None = None) -> dict[str, Any]:
    """Runs plan `p` on real peers; raw material goes into `work` (events,
    peers' output). Returns what :func:`torrentlab.testbed.tables.build` needs."""
    netns.check_host()
    try:
        import libtorrent as lt
    except ImportError:
        raise TestbedError("the testbed needs libtorrent's Python bindings: pip install 'torrentlab[testbed]' "
                           "(or pip install libtorrent)") from None
    lock = _lock(prefix)
    n = len(p.peers)
    ups = [netns.Link(q.up_bps, q.up_buffer) if q.up_bps else None for q in p.peers]
    downs = [netns.Link(q.down_bps, q.down_buffer) if q.down_bps else None for q in p.peers]
    topo = netns.Topology(prefix, subnet, ups, downs)
    scratch = Path("/dev/shm") / f"{netns.stem(prefix)}run"
    procs: list[subprocess.Popen] = []
    sampler: Sampler | None = None
    allowed = allowed_cc()
    shim = None
    if any(q.cc not in allowed for q in p.peers):
        shim = ccshim.library()
    info: dict[str, Any] = {"prefix": prefix, "subnet": subnet, "sample_interval_s": sample_interval_s,
                            "libtorrent": lt.__version__, "kernel": os.uname().release, "nproc": os.cpu_count(),
                            "cc_method": {}, "ignored": p.ignored}
    (work / "events").mkdir(parents=True, exist_ok=True)
    (work / "stdout").mkdir(exist_ok=True)
    wall0 = time.time()
    try:
        topo.up()
        for i, q in enumerate(p.peers):
            if q.cc in allowed and topo.set_cc(i, q.cc):
                info["cc_method"][str(i)] = "namespace"
            else:
                info["cc_method"][str(i)] = "socket"
            if p.ingress_loss > 0:
                topo.add_ingress_loss(i, p.ingress_loss)
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        seed_dir = scratch / "content"
        seed_dir.mkdir()
        torrent = scratch / "content.torrent"
        make_torrent(seed_dir / "content.bin", p.file_bytes, p.piece_bytes, torrent)
        shutil.copy(torrent, work / "content.torrent")
        order = sorted(range(n), key=lambda i: (p.peers[i].join_s, i))
        rank = {i: k for k, i in enumerate(order)}
        for i, q in enumerate(p.peers):
            save = seed_dir if q.role == "seed" else scratch / f"p{i:03d}"
            save.mkdir(exist_ok=True)
            cfg = {"index": i, "ip": topo.ip(i), "port": PEER_PORT, "role": q.role, "torrent": str(torrent),
                   "save_path": str(save), "settings": q.settings, "upload_limit_Bps": q.upload_limit_Bps,
                   "join_s": q.join_s, "events": str(work / "events" / f"p{i:03d}.jsonl"),
                   # the peers that joined before it (a tracker's list), seeds included
                   "connect": [[topo.ip(j), PEER_PORT] for j in range(n) if rank[j] < rank[i]]}
            cfg_path = scratch / f"p{i:03d}.json"
            cfg_path.write_text(json.dumps(cfg))
            env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join(
                x for x in (str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")) if x)}
            if info["cc_method"][str(i)] == "socket":
                env["LD_PRELOAD"] = str(shim)
                env[ccshim.ENV] = q.cc
            outf = open(work / "stdout" / f"p{i:03d}.txt", "wb")
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", topo.ns(i), sys.executable, "-m", "torrentlab.testbed.peer", str(cfg_path)],
                stdin=subprocess.PIPE, stdout=outf, stderr=subprocess.STDOUT, env=env, cwd=str(scratch)))
            outf.close()
        evpaths = [work / "events" / f"p{i:03d}.jsonl" for i in range(n)]
        files = EventFiles(evpaths)
        deadline = time.time() + 60 + 0.5 * n
        while True:
            files.poll()
            ready = [files.has(i, "ready") is not None for i in range(n)]
            dead = [i for i, pr in enumerate(procs) if pr.poll() is not None]
            if dead:
                tail = (work / "stdout" / f"p{dead[0]:03d}.txt").read_text(errors="replace")[-600:]
                raise TestbedError(f"peer {dead[0]} exited before it was ready: {tail.strip()}")
            if all(ready):
                break
            if time.time() > deadline:
                raise TestbedError(f"peers not ready after {deadline - wall0:.0f} s: "
                                   f"{[i for i, r in enumerate(ready) if not r]}")
            time.sleep(0.1)
        sampler = Sampler(topo, [i for i in range(n) if ups[i] is not None], sample_interval_s)
        t0 = time.time() + START_LEAD_S
        sampler.start()
        cpu0 = cpu_times()
        for pr in procs:
            pr.stdin.write(f"{t0!r}\n".encode())
            pr.stdin.flush()
        _log(quiet, f"{p.name}: {n} peers started")
        leechers = [q.index for q in p.leechers]
        cap = p.duration_s if timeout_s is None else min(p.duration_s, timeout_s)
        need = len(leechers) * -(-p.file_bytes // p.piece_bytes)
        finished: dict[int, float] = {}
        last_print = time.time()
        timed_out = False
        pieces_of = dict.fromkeys(leechers, 0)
        seen = dict.fromkeys(leechers, 0)
        while True:
            time.sleep(0.25)
            files.poll()
            for i in leechers:
                new = files.events[i][seen[i]:]
                seen[i] = len(files.events[i])
                pieces_of[i] += sum(1 for e in new if e["ev"] == "piece")
                if i not in finished:
                    f = next((e["t"] for e in new if e["ev"] == "finished"), None)
                    if f is not None:
                        finished[i] = f
            pieces = sum(pieces_of.values())
            dead = [i for i, pr in enumerate(procs) if pr.poll() is not None]
            if dead:
                tail = (work / "stdout" / f"p{dead[0]:03d}.txt").read_text(errors="replace")[-600:]
                raise TestbedError(f"peers exited during the run: {dead}; peer {dead[0]}'s last output: "
                                   f"{tail.strip()}")
            if sampler.error is not None:
                raise TestbedError(f"qdisc sampling failed: {sampler.error}")
            now = time.time() - t0
            if progress is not None:
                progress(now, pieces / need if need else 1.0)
            if len(finished) == len(leechers):
                break
            if now > cap:
                timed_out = True
                _log(quiet, f"{p.name}: stopped at {cap:g} s with {len(finished)}/{len(leechers)} leechers done")
                break
            if time.time() - last_print > 30:
                last_print = time.time()
                _log(quiet, f"{p.name}: t={now:.0f} s, {len(finished)}/{len(leechers)} done, "
                            f"pieces {pieces}/{need}")
        t_end = max(finished.values()) if finished and not timed_out else time.time()
        cpu1 = cpu_times()
        # the machine's busy share from t0 to the last completion (every process, all cores), %
        info["machine_busy_pct"] = 100.0 * (1 - (cpu1[1] - cpu0[1]) / max(1, cpu1[0] - cpu0[0]))
        time.sleep(1.5)  # the last HAVEs, and libtorrent's per-second counters
        sampler.stop.set()
        sampler.join(timeout=5)
        for pr in procs:
            if pr.poll() is None:
                pr.terminate()
        for pr in procs:
            try:
                pr.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pr.kill()
        lost = [topo.lost_packets(i) if p.ingress_loss > 0 else 0 for i in range(n)]
    finally:
        if sampler is not None:
            sampler.stop.set()
        for pr in procs:
            if pr.poll() is None:
                pr.kill()
            if pr.stdin:
                try:
                    pr.stdin.close()
                except OSError:
                    pass
        for pr in procs:
            try:
                pr.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        topo.down()
        shutil.rmtree(scratch, ignore_errors=True)
        os.close(lock)
    info["wall_s"] = time.time() - wall0
    evs = [read_events(evpaths[i]) for i in range(n)]
    # what the sockets really ran (read by each peer from its own sockets)
    info["tcp_cc_seen"] = {str(i): next((e["names"] for e in ev if e["ev"] == "tcp_cc"), None)
                           for i, ev in enumerate(evs)}
    info["sampler_max_sweep_s"] = sampler.lag_s
    return {"plan": p, "t0": t0, "t_end": t_end, "timed_out": timed_out,
            "events": evs, "samples": sampler.rows,
            "ips": [topo.ip(i) for i in range(n)], "lost": lost, "info": info}


def run(scenario: str, out_dir: str | os.PathLike[str], *, force: bool = False, ignore_rtt: bool = False,
        keep_raw: bool = True, **kw: Any) -> Path:
    """Runs the swarm scenario file on real peers and writes the simulator's
    tables into `out_dir` (atomically, as ``torrentlab run`` does), with
    ``testbed.json`` (what ran, what was ignored) and, with `keep_raw`, the
    peers' event logs under ``raw/``."""
    from torrentlab.output import atomic_dir, check_output
    from torrentlab.testbed import tables

    pl = plan(scenario, ignore_rtt=ignore_rtt)
    check_output(out_dir, force=force)
    netns.check_host()
    with atomic_dir(out_dir, force=force, kind="testbed", scenario=pl.name, scenario_kind="swarm",
                    seed=pl.seed) as tmp:
        raw = tmp / "raw"
        res = execute(pl, raw, **kw)
        built = tables.build(res)
        for name, t in built.items():
            import pyarrow.parquet as pq

            pq.write_table(t, tmp / f"{name}.parquet", compression="zstd")
        (tmp / "testbed.json").write_text(json.dumps(res["info"], indent=1, default=str) + "\n")
        (tmp / "perf.json").write_text(json.dumps({"wall_seconds": res["info"]["wall_s"]}, indent=2) + "\n")
        if not keep_raw:
            shutil.rmtree(raw, ignore_errors=True)
    return Path(out_dir)
