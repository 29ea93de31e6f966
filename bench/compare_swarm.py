#!/usr/bin/env python3
"""Side-by-side swarm benchmark: torrentlab vs SimGrid, same session.

torrentlab runs the full-size E0 point packet by packet
(scenarios/bench/rao2010-rtt400-20k.toml: 1 seed + 300 leechers, 50 MB,
20 kB/s upload limits, RTT 400 ms). SimGrid runs bench/simgrid_bittorrent.py,
a flow-level swarm of the same shape (see bench/README.md for what differs).
The tools alternate: torrentlab, SimGrid, torrentlab, ... for --rounds rounds
(SimGrid's run takes about 20 minutes here, so one round is the default).

    python3 bench/compare_swarm.py [--rounds 1] [--repeat 3]

Prints a Markdown table of medians. Both sides are single-threaded engines;
SimGrid's Python bindings run each actor as an OS thread.
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
SCENARIO = HERE.parent / "scenarios" / "bench" / "rao2010-rtt400-20k.toml"


def run_json(cmd: list[str]) -> dict:
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="torrentlab runs per round (median taken)")
    ap.add_argument("--peers", type=int, default=300, help="SimGrid leechers")
    args = ap.parse_args()
    ours, theirs = [], []
    bench = ["torrentlab", "bench", "--scenario", str(SCENARIO), "--json", "--warmup", "0"]
    for i in range(args.rounds):
        ours.append(run_json(bench + ["--repeat", str(args.repeat)]))
        print(f"round {i + 1}: torrentlab {ours[-1]['wall_seconds']:.1f} s", file=sys.stderr)
        theirs.append(run_json([sys.executable, str(HERE / "simgrid_bittorrent.py"), "--json",
                                "--peers", str(args.peers)]))
        print(f"round {i + 1}: simgrid {theirs[-1]['wall_seconds']:.1f} s", file=sys.stderr)
    ours.append(run_json(bench + ["--repeat", str(args.repeat)]))
    print(f"closing: torrentlab {ours[-1]['wall_seconds']:.1f} s", file=sys.stderr)
    med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
    tl = {k: med(ours, k) for k in ("wall_seconds", "sim_seconds", "events", "peak_rss_mib", "delivered_packets")}
    sg = {k: med(theirs, k) for k in ("wall_seconds", "sim_seconds", "peak_rss_mib", "messages", "file_bytes")}
    tl_rate, sg_rate = tl["sim_seconds"] / tl["wall_seconds"], sg["sim_seconds"] / sg["wall_seconds"]
    print(f"Machine: {platform.processor() or platform.machine()}, {platform.system()} {platform.release()}, "
          f"Python {platform.python_version()}; SimGrid {theirs[0].get('version')}; "
          f"{args.rounds} round(s) alternating, medians.\n")
    print("| figure | torrentlab (packet level) | SimGrid (flow level) | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| wall seconds (engine only) | {tl['wall_seconds']:.1f} | {sg['wall_seconds']:.1f} | "
          f"{tl['wall_seconds'] / sg['wall_seconds']:.3g}x |")
    print(f"| simulated seconds until the last leecher is done | {tl['sim_seconds']:,.0f} "
          f"| {sg['sim_seconds']:,.0f} | |")
    print(f"| **simulated s / wall s** | **{tl_rate:,.1f}** | **{sg_rate:,.1f}** | **{tl_rate / sg_rate:.3g}x** |")
    print(f"| peak RSS (MiB, whole process) | {tl['peak_rss_mib']:,.0f} | {sg['peak_rss_mib']:,.0f} | "
          f"{tl['peak_rss_mib'] / sg['peak_rss_mib']:.3g}x |")
    print(f"| events (torrentlab) / messages (SimGrid) | {tl['events']:,.0f} | {sg['messages']:,.0f} | |")
    print(f"| delivered data packets (torrentlab) | {tl['delivered_packets']:,.0f} | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
