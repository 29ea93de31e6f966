#!/usr/bin/env python3
"""Times two builds of the Rust runner against each other on one core.

The runs alternate in the order A B, B A, A B, ... (so a drift of the machine
weighs on both alike), each run alone on the last core, and the result is the
geometric mean of the per-round ratios B/A with a 95 % interval. On these
machines one run's time varies by about 13 % from the next, so telling a 3 %
change from noise takes about 40 rounds of a run that lasts about a second.

    python3 bench/ab.py OLD_RUNNER NEW_RUNNER                 # 3 MB E0 variant, 40 rounds
    python3 bench/ab.py OLD NEW --size "10 MB" --rounds 12
    python3 bench/ab.py OLD NEW --size "" --rounds 6 --together   # full size, side by side

`--together` runs A and B at the same time, one per core, swapping the cores
each round. The host's slow phases are phases of its memory system (shared
with other tenants), and a phase can change within a round of runs one after
the other; runs side by side share it. Each run is slower than alone, since
the two share the last-level cache, so read the ratio, not the times.

Build each runner with `cargo build --release -p torrentlab-sim --features
hugepages --example bench` and copy `target/release/examples/bench` aside
between builds.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from counts import SCENARIO, scaled_scenario

# Two-sided 97.5 % quantiles of Student's t for small samples.
T975 = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26, 12: 2.20, 15: 2.14,
        20: 2.09, 30: 2.05}


def t975(n: int) -> float:
    return next((v for k, v in sorted(T975.items()) if n <= k), 1.96)


def run(binary: Path, scenario: Path, core: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run([*core, str(binary), str(scenario)], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def run_together(a: Path, b: Path, scenario: Path, swap: bool) -> tuple[float, float]:
    """A and B at once, each pinned to a core of its own (swapped when `swap`)."""
    cores = ["0", "1"] if not swap else ["1", "0"]
    procs = []
    for binary, c in zip((a, b), cores, strict=True):
        pin = ["taskset", "-c", c] if shutil.which("taskset") else []
        procs.append((subprocess.Popen([*pin, str(binary), str(scenario)], stdout=subprocess.DEVNULL),
                      time.perf_counter()))
    took = [0.0, 0.0]
    while not all(took):
        for i, (p, t0) in enumerate(procs):
            if not took[i] and p.poll() is not None:
                if p.returncode != 0:
                    sys.exit(f"{(a, b)[i]} exited with {p.returncode}")
                took[i] = time.perf_counter() - t0
        time.sleep(0.005)
    return took[0], took[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path, help="runner A (the baseline)")
    ap.add_argument("b", type=Path, help="runner B")
    ap.add_argument("--scenario", type=Path, default=SCENARIO)
    ap.add_argument("--size", default="3 MB", help='torrent size to run instead of the scenario\'s ("" keeps it)')
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--together", action="store_true", help="run A and B at the same time, one per core")
    args = ap.parse_args()
    if args.rounds < 2:
        sys.exit("--rounds: at least 2")
    if args.together and (os.cpu_count() or 1) < 2:
        sys.exit("--together: needs two cores")
    last = str((os.cpu_count() or 1) - 1)
    core = ["taskset", "-c", last] if shutil.which("taskset") else []
    ta, tb = [], []
    with tempfile.TemporaryDirectory() as tmp:
        scenario = scaled_scenario(args.scenario, args.size or None, Path(tmp))
        for i in range(args.rounds):
            if args.together:
                x, y = run_together(args.a, args.b, scenario, swap=i % 2 == 1)
                ta.append(x)
                tb.append(y)
            elif i % 2 == 0:
                ta.append(run(args.a, scenario, core))
                tb.append(run(args.b, scenario, core))
            else:
                tb.append(run(args.b, scenario, core))
                ta.append(run(args.a, scenario, core))
    logs = [math.log(b / a) for a, b in zip(ta, tb, strict=True)]
    m, se = statistics.mean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
    h = t975(len(logs)) * se
    print(f"A {args.a}: median {statistics.median(ta):.3f} s, min {min(ta):.3f} s")
    print(f"B {args.b}: median {statistics.median(tb):.3f} s, min {min(tb):.3f} s")
    print(f"B/A {math.exp(m):.3f}x (95 % interval {math.exp(m - h):.3f}-{math.exp(m + h):.3f}, {len(logs)} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
