#!/usr/bin/env python3
"""Times scenario points against a reference point, side by side, on one build.

Each round runs the reference and one point at the same time, each pinned to
a core of its own (the cores swapped every round), with the Rust runner; the
result per point is the geometric mean over rounds of point / reference for
the wall time and for events per wall second, with a 95 % interval, and each
side's events, wall time and peak resident memory. Side by side, both runs
share the host's phase (see bench/ab.py), so the ratio is what to read.

    cargo build --release -p torrentlab-sim --features hugepages --example bench
    python3 bench/points.py --rounds 3        # issue 41: the E1 and E2 points against all-TCP mainline
    python3 bench/points.py --alone --rounds 6 scenarios/bench/testa2013-cubic-utp-75.toml

`--alone` runs the two one after the other on one core instead, in the
order A B, B A, ...: for points of unequal length, where side by side the
longer run spends its last part alone and faster.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ab import t975

ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "target" / "release" / "examples" / "bench"
REFERENCE = ROOT / "scenarios" / "bench" / "testa2012-tcp-75.toml"
POINTS = [ROOT / "scenarios" / "bench" / "testa2012-31-75.toml",
          ROOT / "scenarios" / "bench" / "testa2013-cubic-utp-75.toml"]
EVENTS = re.compile(r"wall [\d.]+ s, (\d+) events")


def start(runner: Path, scenario: Path, core: str) -> tuple[subprocess.Popen, float]:
    """The runner on `scenario`, pinned to `core`; the process and its start."""
    pin = ["taskset", "-c", core] if shutil.which("taskset") else []
    return subprocess.Popen([*pin, str(runner), str(scenario)], stdout=subprocess.PIPE, text=True), time.perf_counter()


def finish(p: subprocess.Popen, t0: float, status: int, usage) -> dict:
    """A run's wall time (s), events and peak RSS (bytes), from its exit."""
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{p.args} failed")
    m = EVENTS.search(p.stdout.read())
    if not m:
        sys.exit(f"{p.args}: no event count in its output")
    return {"wall": wall, "events": int(m.group(1)), "rss": usage.ru_maxrss * 1024}


def together(runner: Path, scenarios: tuple[Path, Path], swap: bool) -> list[dict]:
    """Both scenarios at once, one per core (swapped when `swap`)."""
    cores = ("1", "0") if swap else ("0", "1")
    procs = {}
    for sc, core in zip(scenarios, cores, strict=True):
        p, t0 = start(runner, sc, core)
        procs[p.pid] = (p, t0)
    done: dict[int, dict] = {}
    while len(done) < len(procs):
        pid, status, usage = os.wait4(-1, 0)
        if pid in procs:
            done[pid] = finish(*procs[pid], status, usage)
    return [done[pid] for pid in procs]


def alone(runner: Path, scenarios: tuple[Path, Path], swap: bool) -> list[dict]:
    """One scenario after the other on the last core (B first when `swap`)."""
    core = str((os.cpu_count() or 1) - 1)
    out: list[dict] = [{}, {}]
    for i in (1, 0) if swap else (0, 1):
        p, t0 = start(runner, scenarios[i], core)
        _, status, usage = os.wait4(p.pid, 0)
        out[i] = finish(p, t0, status, usage)
    return out


def gmean_ci(ratios: list[float]) -> tuple[float, float, float]:
    logs = [math.log(r) for r in ratios]
    m = statistics.fmean(logs)
    half = t975(len(logs)) * statistics.stdev(logs) / math.sqrt(len(logs)) if len(logs) > 1 else float("nan")
    return math.exp(m), math.exp(m - half), math.exp(m + half)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runner", type=Path, default=RUNNER)
    ap.add_argument("--reference", type=Path, default=REFERENCE)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--alone", action="store_true", help="one after the other on one core, not side by side")
    ap.add_argument("points", type=Path, nargs="*", default=POINTS)
    args = ap.parse_args()
    if not args.runner.exists():
        sys.exit(f"{args.runner}: build it with cargo build --release -p torrentlab-sim --features hugepages "
                 "--example bench")
    for point in args.points:
        rows = []
        for r in range(args.rounds):
            how = alone if args.alone else together
            ref, pt = how(args.runner, (args.reference, point), swap=r % 2 == 1)
            rows.append((ref, pt))
            print(f"{point.name} round {r + 1}: {pt['wall']:.1f} s ({pt['events'] / pt['wall'] / 1e6:.2f} M ev/s) "
                  f"vs {args.reference.name} {ref['wall']:.1f} s ({ref['events'] / ref['wall'] / 1e6:.2f} M ev/s)",
                  flush=True)
        wall = gmean_ci([pt["wall"] / ref["wall"] for ref, pt in rows])
        rate = gmean_ci([(pt["events"] / pt["wall"]) / (ref["events"] / ref["wall"]) for ref, pt in rows])
        for name, side in (("reference", 0), ("point", 1)):
            runs = [r[side] for r in rows]
            print(f"  {name}: {runs[0]['events']:,} events, wall {statistics.fmean(r['wall'] for r in runs):.1f} s, "
                  f"{statistics.fmean(r['events'] / r['wall'] for r in runs) / 1e6:.2f} M events/s, "
                  f"peak RSS {max(r['rss'] for r in runs) / 1e6:.1f} MB")
        print(f"  {point.name} / {args.reference.name}: wall {wall[0]:.3f}x ({wall[1]:.3f}-{wall[2]:.3f}), "
              f"events per wall s {rate[0]:.3f}x ({rate[1]:.3f}-{rate[2]:.3f}), {args.rounds} rounds "
              f"{'one after the other' if args.alone else 'side by side'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
