#!/usr/bin/env python3
"""How the engine's cost grows with the swarm (issue 45): one seed and N
leechers in a flash crowd, 10 MB in 256 KiB pieces, every uplink 1 Mbit/s
with 1 s of buffer, RTT 100 ms, mainline clients without an upload limit
(docs/model.md, "Departures"); leechers stay (``stay``) or leave when done
(``leave``).

Each size runs in a fresh Python process (``torrentlab.run``, as a user runs
it, tables handed to Python included) on one core, one after the other. For
each it reports the wall time, the events and delivered data packets (the
engine's own counts, ``perf.json``), events and delivered packets per wall
second, the peak resident memory over the process's memory before the run,
per peer, and the wall time per delivered packet relative to the smallest
size *of the same table* (a ratio measured in one sitting, the only kind of
speed figure that holds on these shared hosts).

    python3 bench/scale.py                              # 100 300 1000 3000, stay and leave
    python3 bench/scale.py --sizes 100 10000 30000 --departure stay
    python3 bench/scale.py --json > scale.json

A 10,000-leecher run takes minutes and a few GB; 30,000 needs the memory
estimate's blessing first (``torrentlab validate`` prints it).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

CHILD = r"""
import json, resource, sys, time
import torrentlab
doc = json.loads(sys.argv[1])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
res = torrentlab.run(doc)
wall = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
s = res.tables["summary"].to_pandas()
print(json.dumps({"perf": res.perf, "wall_s": wall, "base_kb": base, "peak_kb": peak,
                  "completed": int(s["completed"].iloc[0]),
                  "mean_download_time_s": float(s["mean_download_time_s"].iloc[0])}))
"""


def scenario(leechers: int, departure: str) -> dict:
    """The issue's swarm: flash crowd, 10 MB, 256 KiB pieces, 1 Mbit/s, 100 ms."""
    return {
        "name": f"scale-{leechers}-{departure}",
        "run": {"seed": 1, "duration": "2 h"},
        "torrent": {"size": "10 MB", "piece_size": "256 KiB"},
        "network": {"rtt": "100 ms", "access": {"up": "1 Mbit/s", "down": "unlimited", "buffer": "1 s"}},
        "peers": [{"role": "seed", "upload_limit": "unlimited"},
                  {"role": "leecher", "count": leechers, "departure": departure, "upload_limit": "unlimited"}],
    }


def measure(leechers: int, departure: str, python: str) -> dict | None:
    """One size in a fresh process; None (and why, on stderr) if it failed."""
    doc = scenario(leechers, departure)
    t = time.time()
    out = subprocess.run([python, "-c", CHILD, json.dumps(doc)], capture_output=True, text=True)
    if out.returncode != 0:
        print(f"{leechers} leechers ({departure}) failed:\n{out.stderr[-2000:]}", file=sys.stderr)
        return None
    r = json.loads(out.stdout.strip().splitlines()[-1])
    perf = r["perf"]
    peers = leechers + 1
    return {
        "leechers": leechers, "departure": departure, "wall_s": r["wall_s"], "process_s": time.time() - t,
        "events": perf["events"], "delivered_packets": perf["data_packets_delivered"],
        "sim_s": perf["sim_seconds"], "completed": r["completed"],
        "mean_download_time_s": r["mean_download_time_s"],
        "events_per_s": perf["events"] / r["wall_s"], "packets_per_s": perf["data_packets_delivered"] / r["wall_s"],
        "memory_per_peer_kb": (r["peak_kb"] - r["base_kb"]) / peers,
        "wall_per_packet_us": r["wall_s"] / perf["data_packets_delivered"] * 1e6,
    }


def table(rows: list[dict]) -> str:
    lines = ["| leechers | departure | wall s | events | events/s | delivered packets/s | memory per peer (KB) "
             "| cost per delivered packet vs the smallest | mean download s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for dep in dict.fromkeys(r["departure"] for r in rows):
        rs = [r for r in rows if r["departure"] == dep]
        ref = min(rs, key=lambda r: r["leechers"])["wall_per_packet_us"]
        for r in rs:
            lines.append(f"| {r['leechers']:,} | {dep} | {r['wall_s']:.2f} | {r['events']:,} | "
                         f"{r['events_per_s'] / 1e6:.2f} M | {r['packets_per_s'] / 1e6:.3f} M | "
                         f"{r['memory_per_peer_kb']:.0f} | {r['wall_per_packet_us'] / ref:.2f}x | "
                         f"{r['mean_download_time_s']:.0f} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000, 3000])
    ap.add_argument("--departure", nargs="+", choices=["stay", "leave"], default=["stay", "leave"])
    ap.add_argument("--python", default=sys.executable, help="the interpreter with torrentlab installed")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    rows = []
    failed = 0
    for dep in args.departure:
        for n in sorted(args.sizes):
            row = measure(n, dep, args.python)
            if row is None:
                failed += 1
                continue
            rows.append(row)
            # Each row as it comes, so a later failure or a kill loses nothing.
            print(f"[{time.strftime('%H:%M:%S')}] {json.dumps(row)}", file=sys.stderr)
    # The sizes measured, even when one failed.
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
