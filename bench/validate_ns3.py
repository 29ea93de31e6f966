#!/usr/bin/env python3
"""Cross-check torrentlab's TCP congestion controllers against ns-3.

Runs the same single-bottleneck dumbbell cases in torrentlab (in this process)
and in ns-3 (PyPI wheel ``ns3``, in subprocesses), then writes
``docs/validation-ns3.md`` (or prints it with ``--print``).

    python3 bench/validate_ns3.py            # full: 60 s per case, window [10 s, 60 s]
    python3 bench/validate_ns3.py --quick    # 20 s per case, window [5 s, 20 s]

Cases, for each of two dumbbells (A: 10 Mbit/s, 40-packet buffer; B: 1 Mbit/s,
1 s of buffer = 83 packets; one-way delay 25 ms, RTT 50 ms): every controller
alone (newreno, cubic, vegas, lp, ledbat, nice) and each of newreno, vegas,
lp, ledbat and nice against one cubic flow.  TCP Nice has no ns-3
counterpart: it runs in torrentlab only.

Common TCP settings: MSS 1448 with timestamps (1500-byte IP packets), SACK on,
no delayed ACKs, initial window 10, minimum RTO 200 ms (RFC 6298 formula in
both tools), all flows start at t = 0.  Per-flow goodput is in-order payload
delivered to the application in the measurement window.

ns-3 runs every case twice, with its default loss recovery (PRR) and with
TcpClassicRecovery, plus a few diagnostic runs (LP and LEDBAT variants, see
docs/validation-ns3.md).  This is evidence, not a test: nothing is tuned to make
the numbers agree.

The ns-3 runs are spread over ``--jobs`` worker subprocesses
(``--ns3-batch``): the ns3 wheel globs the current directory for its
libraries, so a worker chdirs into a fresh temporary directory before its
~11 s ``from ns import ns``, and then runs its cases one after another
(``Simulator::Destroy`` between them).  ``--isolated`` runs one subprocess per
ns-3 case instead (slower, same numbers).

This file is the entry point; the code is in the package next to it,
``bench/validation/`` (``cases``, ``ns3_side``, ``report``).
"""

import argparse
import datetime as _dt
import importlib.metadata
import json
import os
import subprocess
import sys
import time
from pathlib import Path

# The helper package bench/validation/ sits next to this script.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from validation.cases import cases, run_torrentlab  # noqa: E402
from validation.ns3_side import ns3_batch_worker, ns3_specs, run_ns3_batches  # noqa: E402
from validation.report import mbps, render  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "validation-ns3.md"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="20 s per case, window from 5 s")
    p.add_argument("--print", action="store_true",
                   help="print the page instead of writing docs/validation-ns3.md")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="ns-3 worker subprocesses in parallel (default: CPU count)")
    p.add_argument("--isolated", action="store_true",
                   help="one ns-3 subprocess per case (slower; same numbers)")
    p.add_argument("--json", metavar="FILE", help="also write every result as JSON")
    p.add_argument("--ns3-batch", metavar="JSON", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def log(msg):
    print(msg, file=sys.stderr, flush=True)



def main(argv=None):
    args = parse_args(argv)
    if args.ns3_batch:
        ns3_batch_worker(json.loads(args.ns3_batch))
        return

    duration, window_start = (20.0, 5.0) if args.quick else (60.0, 10.0)
    t_start = time.perf_counter()
    all_cases = cases()
    runs = [dict() for _ in all_cases]

    log(f"torrentlab: {len(all_cases)} cases, {duration:g} s each")
    for i, c in enumerate(all_cases):
        r = runs[i]["torrentlab"] = run_torrentlab(c, duration, window_start)
        log(f"  [{i + 1}/{len(all_cases)}] {c['dumbbell']} {c['name']}: "
            f"{' + '.join(mbps(g) for g in r['goodput_bps'])} Mbit/s ({r['wall_seconds']:.2f} s)")

    specs = ns3_specs(all_cases, duration, window_start)
    jobs = max(1, min(args.jobs, len(specs)))
    log(f"ns-3: {len(specs)} runs in {len(specs) if args.isolated else jobs} subprocess(es), "
        f"{jobs} at a time (~11 s import each)")
    done = [0]

    def on_result(spec, res):
        i, variant = spec["key"].split("/")
        runs[int(i)][variant] = res
        done[0] += 1
        log(f"  [{done[0]}/{len(specs)}] {spec['dumbbell']} {spec['name']} ({variant}): "
            f"{' + '.join(mbps(g) for g in res['goodput_bps'])} Mbit/s "
            f"(Run {res['wall_seconds']:.2f} s)")

    run_ns3_batches(specs, jobs, args.isolated, on_result)

    import torrentlab

    try:
        git = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip() or "unknown"
    except OSError:
        git = "unknown"
    meta = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"),
        "ns3_version": importlib.metadata.version("ns3"),
        "torrentlab_version": getattr(torrentlab, "__version__", None)
        or importlib.metadata.version("torrentlab"),
        "git": git,
        "command": "python3 bench/validate_ns3.py" + (" --quick" if args.quick else ""),
        "duration": duration,
        "window_start": window_start,
        "wall": time.perf_counter() - t_start,
        "cpus": os.cpu_count(),
    }
    results = list(zip(all_cases, runs, strict=True))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"meta": meta, "results": [{"case": c, "runs": r} for c, r in results]}, indent=1))
    page = render(results, meta)
    if args.print:
        print(page)
    else:
        DOC.write_text(page)
        log(f"wrote {DOC}")
    log(f"total {meta['wall']:.0f} s")


if __name__ == "__main__":
    main()
