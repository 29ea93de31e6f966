#!/usr/bin/env python3
"""Opt-in profile-guided optimisation (PGO) of the installed package.

    python3 bench/pgo.py --install          # profile the current sources, then `pip install .` with it
    python3 bench/pgo.py --out FILE         # only make the profile, and keep it in FILE
    TORRENTLAB_PGO_PROFILE=FILE pip install --no-build-isolation --no-deps .   # use a kept one

Needs `rustup component add llvm-tools` (for `llvm-profdata`) and maturin.

What it is worth: see BENCHMARKS.md.
How long it takes: making the profile (an instrumented build of everything
from scratch, then the training runs) took 1 min 58 s on two cores
(2026-11-27); `--install` adds a release build with the profile, about 1.5 min.

Profile-guided optimisation lets the compiler lay out and inline the simulator's
hot paths from how they actually run. This script builds the Python package with
instrumentation (maturin, exactly as `pip install .` builds it, so that the
profile's function names match), runs a training set through it that touches
every part of the engine, and merges the counts into a profile in a temporary
directory (or `--out FILE`). With `--install` it then runs
`pip install --no-build-isolation --no-deps .` with `TORRENTLAB_PGO_PROFILE`
set to the profile, so the installed package is built from the exact sources
just profiled. Nothing is committed: the default `pip install .` is a plain
release build (build_backend/torrentlab_build.py).

The training set: the benchmark dumbbell with each congestion controller and
with uTP; the rossi2010 and calibration scenarios (LEDBAT, latecomers, uTP
targets); E0 swarms (10 MB at RTT 400 ms; 4 MB with 5 % ingress loss and
with AS placements).
A profile only steers optimisation: outputs are the same with or without it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CCS = ["newreno", "cubic", "vegas", "lp", "nice", "ledbat"]


def rustc_info() -> dict[str, str]:
    """`rustc -vV` as a dict ("release", "host", "LLVM version", ...); empty without rustc."""
    try:
        out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)


def profdata_tool(info: dict[str, str]) -> Path:
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True).stdout.strip()
    tool = Path(sysroot) / "lib" / "rustlib" / info["host"] / "bin" / "llvm-profdata"
    if not tool.exists():
        sys.exit(f"error: {tool} not found; install it with `rustup component add llvm-tools`")
    return tool


def training_set(tmp: Path) -> list[Path]:
    """Scenario files to run, written into `tmp` where they are variants."""
    files: list[Path] = []
    dumbbell = (ROOT / "scenarios/bench/dumbbell-100-newreno.toml").read_text()
    for cc in CCS + ["utp"]:
        flow = 'transport = "utp"' if cc == "utp" else f'cc = "{cc}"'
        text = re.sub(r'(?m)^cc = "newreno"$', flow, dumbbell)
        p = tmp / f"dumbbell-{cc}.toml"
        p.write_text(text)
        files.append(p)
    for d in ["rossi2010", "calibration"]:
        files += sorted(p for p in (ROOT / "scenarios" / d).glob("*.toml") if not p.name.endswith(".sweep.toml"))
    swarm = (ROOT / "scenarios/bench/rao2010-rtt400-20k.toml").read_text()
    small = re.sub(r'(?m)^size = "50 MB"', 'size = "4 MB"', swarm)
    variants = {
        # Long enough for the steady state of a flash crowd to dominate, as it
        # does in the full-size benchmark.
        "swarm-rtt400.toml": re.sub(r'(?m)^size = "50 MB"', 'size = "10 MB"', swarm),
        "swarm-loss.toml": re.sub(r"(?m)^ingress_loss = 0.0", "ingress_loss = 0.05", small),
    }
    placement = (ROOT / "scenarios/rao2010/as-placement.toml").read_text()
    variants["swarm-as.toml"] = re.sub(r'(?m)^size = "50 MB"', 'size = "4 MB"', placement)
    for name, text in variants.items():
        p = tmp / name
        p.write_text(text)
        files.append(p)
    return files


TRAIN = """
import sys, time, torrentlab
for f in sys.argv[1:]:
    t0 = time.monotonic()
    torrentlab.run(f)
    print(f"  trained on {f.rsplit('/', 1)[-1]} ({time.monotonic() - t0:.1f} s)", flush=True)
"""


def make_profile(tool: Path, tmp: Path) -> Path:
    """Builds the instrumented package in `tmp`, trains it, and returns the merged profile."""
    raw = tmp / "raw"
    # The wheel is built the way `pip install .` builds it (maturin, same
    # crate graph and features), so the profile's function names match.
    env = dict(os.environ, RUSTFLAGS=f"-Cprofile-generate={raw}", CARGO_TARGET_DIR=str(tmp / "target"))
    env.pop("TORRENTLAB_PGO_PROFILE", None)
    print("building the instrumented package ...", flush=True)
    subprocess.run(["maturin", "build", "--release", "--out", str(tmp / "wheel")], cwd=ROOT, env=env, check=True)
    (wheel,) = (tmp / "wheel").glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp / "site")
    files = training_set(tmp)
    run_env = dict(os.environ, PYTHONPATH=str(tmp / "site"))
    subprocess.run([sys.executable, "-c", TRAIN, *map(str, files)], env=run_env, check=True, cwd=tmp)
    merged = tmp / "merged.profdata"
    profiles = [str(p) for p in raw.glob("*.profraw")]
    if not profiles:
        sys.exit("error: the training runs wrote no .profraw files")
    subprocess.run([str(tool), "merge", "--sparse", "-o", str(merged), *profiles], check=True)
    return merged


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="keep the merged profile in this file")
    ap.add_argument("--install", action="store_true",
                    help="then `pip install --no-build-isolation --no-deps .` built with the profile")
    args = ap.parse_args()
    if not args.out and not args.install:
        ap.error("nothing to do: give --install, --out FILE, or both")
    info = rustc_info()
    if not info:
        sys.exit("error: rustc not found")
    tool = profdata_tool(info)
    with tempfile.TemporaryDirectory(prefix="torrentlab-pgo-") as t:
        merged = make_profile(tool, Path(t))
        size = merged.stat().st_size
        print(f"profile: {size / 1e6:.1f} MB, rustc {info['release']} (LLVM {info['LLVM version']})", flush=True)
        profile = merged
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(merged, args.out)
            profile = args.out.resolve()
            print(f"wrote {args.out}", flush=True)
        if args.install:
            env = dict(os.environ, TORRENTLAB_PGO_PROFILE=str(profile))
            print("installing the package built with the profile ...", flush=True)
            pip = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "."]
            subprocess.run(pip, cwd=ROOT, env=env, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
