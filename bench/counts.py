#!/usr/bin/env python3
"""Noise-free cost figures for a swarm run: instructions, L1 data misses and
second-level cache misses per event, counted by cachegrind.

Wall time on these shared 2-core machines swings by 1.5x within an hour for
the same build (bench/HISTORY.md, seventh session), which hides any change worth
less than about 5 %. Cachegrind counts the same numbers on every run, so two
builds can be compared exactly: fewer instructions and fewer misses per event
is a change worth timing; more of both is not. It simulates caches without
the hardware prefetchers, so misses of sequential scans count in full here and
cost little on the machine: read the miss figures as an upper bound.

    python3 bench/counts.py                       # the full-size E0 point, shrunk to a 3 MB file
    python3 bench/counts.py --size "10 MB" --bin target/release/examples/bench
    python3 bench/counts.py --json

It builds the Rust-only runner (`cargo build --release -p torrentlab-sim
--features hugepages --example bench`) unless `--bin` names one, and needs valgrind
(`apt-get install valgrind`). A 3 MB run takes about 50 s.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCENARIO = ROOT / "scenarios" / "bench" / "rao2010-rtt400-20k.toml"
RUNNER = ROOT / "target" / "release" / "examples" / "bench"


def scaled_scenario(path: Path, size: str | None, out_dir: Path) -> Path:
    """`path` with its torrent size replaced by `size` (unchanged if None)."""
    if size is None:
        return path
    text = path.read_text()
    tomllib.loads(text)  # a clear error here rather than in the runner
    new, n = re.subn(r'(?m)^(\s*size\s*=\s*)"[^"]*"', lambda m: f'{m.group(1)}"{size}"', text, count=1)
    if n != 1:
        sys.exit(f"{path}: no torrent `size = \"...\"` line to replace")
    out = out_dir / f"{path.stem}-{size.replace(' ', '')}.toml"
    out.write_text(new)
    return out


def build_runner() -> Path:
    cmd = ["cargo", "build", "--release", "-p", "torrentlab-sim", "--features", "hugepages", "--example", "bench"]
    subprocess.run(cmd, cwd=ROOT, check=True)
    return RUNNER


def count(binary: Path, scenario: Path, l2_bytes: int) -> dict:
    """Runs `binary scenario` under cachegrind; returns the totals and per-event figures."""
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--LL={l2_bytes},16,64",
             "--D1=32768,8,64", "--I1=32768,8,64", f"--cachegrind-out-file={tmp}/cg.out",
             str(binary), str(scenario)],
            capture_output=True, text=True, check=True)

    def total(label: str) -> int:
        m = re.search(rf"==\d+== {label}:\s+([\d,]+)", r.stderr)
        if not m:
            sys.exit(f"cachegrind printed no '{label}' line:\n{r.stderr[-2000:]}")
        return int(m.group(1).replace(",", ""))

    m = re.search(r"(\d+) events", r.stdout)
    if not m:
        sys.exit(f"the runner printed no event count:\n{r.stdout[-2000:]}")
    events = int(m.group(1))
    out = {"events": events, "instructions": total("I\\s+refs"), "d1_misses": total("D1\\s+misses"),
           "l2_misses": total("LLd misses")}
    for k in ("instructions", "d1_misses", "l2_misses"):
        out[f"{k}_per_event"] = out[k] / events
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", type=Path, default=SCENARIO)
    ap.add_argument("--size", default="3 MB", help='torrent size to run instead of the scenario\'s ("" keeps it)')
    ap.add_argument("--bin", type=Path, help="the Rust runner to count (default: build it)")
    ap.add_argument("--l2", type=int, default=1 << 20, help="simulated second-level cache, bytes (default 1 MiB)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    binary = args.bin or build_runner()
    with tempfile.TemporaryDirectory() as tmp:
        scenario = scaled_scenario(args.scenario, args.size or None, Path(tmp))
        c = count(binary, scenario, args.l2)
    if args.json:
        print(json.dumps(c))
        return 0
    print(f"{args.scenario.name} ({args.size or 'as written'}), {c['events']:,} events, L2 {args.l2 >> 10} KiB:")
    print(f"  instructions per event  {c['instructions_per_event']:8.1f}")
    print(f"  L1 data misses per event {c['d1_misses_per_event']:7.2f}")
    print(f"  L2 data misses per event {c['l2_misses_per_event']:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
