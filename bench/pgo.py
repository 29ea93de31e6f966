#!/usr/bin/env python3
"""Regenerates the profile that release builds are optimised with (PGO).

    python3 bench/pgo.py        # needs `rustup component add llvm-tools`

Profile-guided optimisation lets the compiler lay out and inline the simulator's
hot paths from how they actually run. This script builds the Python package with
instrumentation (maturin, exactly as `pip install .` builds it, so that the
profile's function names match), runs a training set through it that touches
every part of the engine, merges the counts into
`pgo/torrentlab.profdata` and records the toolchain and the source it was made
from in `pgo/profile.txt`. `pip install .` (build_backend/torrentlab_build.py)
then builds with `-Cprofile-use` when the profile fits the toolchain.

The training set: the benchmark dumbbell with each congestion controller and
with uTP; the rossi2010 and calibration scenarios (LEDBAT, latecomers, uTP
targets); E0 swarms (10 MB at RTT 400 ms; 4 MB with 5 % ingress loss and
with AS placements).
A profile only steers optimisation: outputs are the same with or without it.
Regenerate it after changing hot code; a stale profile still builds, only the
changed functions lose its benefit.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "build_backend"))
from torrentlab_build import rustc_info, source_digest  # noqa: E402  (the backend reads both the same way)

OUT = ROOT / "pgo"
CCS = ["newreno", "cubic", "vegas", "lp", "nice", "ledbat"]


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


def main() -> int:
    info = rustc_info()
    if not info:
        sys.exit("error: rustc not found")
    tool = profdata_tool(info)
    with tempfile.TemporaryDirectory(prefix="torrentlab-pgo-") as t:
        tmp = Path(t)
        raw = tmp / "raw"
        # The wheel is built the way `pip install .` builds it (maturin, same
        # crate graph and features), so the profile's function names match.
        env = dict(os.environ, RUSTFLAGS=f"-Cprofile-generate={raw}", CARGO_TARGET_DIR=str(tmp / "target"))
        print("building the instrumented package ...", flush=True)
        subprocess.run(["maturin", "build", "--release", "--out", str(tmp / "wheel")], cwd=ROOT, env=env, check=True)
        (wheel,) = (tmp / "wheel").glob("*.whl")
        with zipfile.ZipFile(wheel) as z:
            z.extractall(tmp / "site")
        files = training_set(tmp)
        run_env = dict(os.environ, PYTHONPATH=str(tmp / "site"))
        subprocess.run([sys.executable, "-c", TRAIN, *map(str, files)], env=run_env, check=True, cwd=tmp)
        OUT.mkdir(exist_ok=True)
        merged = tmp / "merged.profdata"
        profiles = map(str, raw.glob("*.profraw"))
        subprocess.run([str(tool), "merge", "--sparse", "-o", str(merged), *profiles], check=True)
        shutil.copyfile(merged, OUT / "torrentlab.profdata")
    llvm = info["LLVM version"]
    (OUT / "profile.txt").write_text(
        "# Written by bench/pgo.py; read by build_backend/torrentlab_build.py.\n"
        f"rustc = {info['release']}\nllvm = {llvm}\nsource = {source_digest()}\n"
    )
    size = (OUT / "torrentlab.profdata").stat().st_size
    print(f"wrote pgo/torrentlab.profdata ({size / 1e6:.1f} MB, LLVM {llvm}) and pgo/profile.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
