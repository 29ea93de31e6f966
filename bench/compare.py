#!/usr/bin/env python3
"""Side-by-side benchmark: torrentlab vs ns-3 on the same dumbbell, same run.

Alternates the two tools (A B A B ...) for --rounds rounds so machine drift hits
both, and prints a Markdown table with each figure's median and the per-round
ratio torrentlab / ns-3. Both are single-threaded (one core each).

    python3 bench/compare.py --rounds 3            # needs `pip install ns3`

torrentlab's side is `torrentlab bench --json` (median of --repeat runs per
round, wall time of the engine run only); ns-3's side is bench/ns3_dumbbell.py
(wall time of Simulator::Run only).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_json(cmd: list[str]) -> dict:
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3, help="torrentlab runs per round (median taken)")
    ap.add_argument("--flows", type=int, default=100)
    ap.add_argument("--duration", type=float, default=60)
    args = ap.parse_args()
    if (args.flows, args.duration) != (100, 60):
        print("note: torrentlab's side always runs scenarios/bench/dumbbell-100-newreno.toml", file=sys.stderr)
    ours, theirs = [], []
    for i in range(args.rounds):
        ours.append(run_json(["torrentlab", "bench", "--json", "--repeat", str(args.repeat)]))
        theirs.append(run_json([sys.executable, str(HERE / "ns3_dumbbell.py"), "--json",
                                "--flows", str(args.flows), "--duration", str(args.duration)]))
        print(f"round {i + 1}/{args.rounds}: torrentlab {ours[-1]['wall_seconds']:.3f} s, "
              f"ns-3 {theirs[-1]['wall_seconds']:.1f} s", file=sys.stderr)
    rows = [
        ("wall seconds (simulation only)", "wall_seconds", "{:.3f}"),
        ("events", "events", "{:,.0f}"),
        ("delivered data packets", "delivered_packets", "{:,.0f}"),
        ("delivered data packets / wall s", "packets_per_wall_second", "{:,.0f}"),
        ("events / wall s", "events_per_wall_second", "{:,.0f}"),
        ("simulated s / wall s", "sim_seconds_per_wall_second", "{:,.1f}"),
    ]
    med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
    print(f"Machine: {cpu_model()}, {platform.system()} {platform.release()}, Python {platform.python_version()}; "
          f"ns-3 {theirs[0].get('ns3_version')}; {args.rounds} alternating rounds, medians.\n")
    print("| figure | torrentlab | ns-3 | ratio (median of per-round ratios) |")
    print("|---|---:|---:|---:|")
    for label, key, fmt in rows:
        ratios = [a[key] / b[key] for a, b in zip(ours, theirs, strict=True) if b.get(key)]
        ratio = f"{statistics.median(ratios):,.3g}x" if ratios else "n/a"
        print(f"| {label} | {fmt.format(med(ours, key))} | {fmt.format(med(theirs, key))} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
