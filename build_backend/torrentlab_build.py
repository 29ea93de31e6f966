"""PEP 517 build backend: maturin, optimised with the committed PGO profile.

`pip install .` builds through here. When `pgo/torrentlab.profdata` was made
by the same LLVM major version as the one in `rustc`, the Rust code is compiled
with `-Cprofile-use` (profile-guided optimisation: about 15-25 % faster swarm
and dumbbell runs, see BENCHMARKS.md). Otherwise, or with
`TORRENTLAB_PGO=0`, it is a plain release build. Results are the same either
way: a profile only steers how the compiler lays out and inlines code.
`bench/pgo.py` regenerates the profile.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / "pgo" / "torrentlab.profdata"
META = ROOT / "pgo" / "profile.txt"


def source_digest(root: Path | None = None) -> str:
    """SHA-256 over the crates' Rust sources, the code a profile describes."""
    root = root or ROOT
    h = hashlib.sha256()
    for p in sorted((root / "crates").rglob("*.rs")):
        h.update(p.relative_to(root).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _read_meta() -> dict[str, str]:
    meta = {}
    for line in META.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            k, v = line.split("=", 1)
            meta[k.strip()] = v.strip()
    return meta


def rustc_info() -> dict[str, str]:
    """`rustc -vV` as a dict ("release", "host", "LLVM version", ...); empty without rustc."""
    try:
        out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)


def _rustc_llvm_major() -> str | None:
    llvm = rustc_info().get("LLVM version")
    return llvm.split(".")[0] if llvm else None


def pgo_flags() -> tuple[list[str], str]:
    """The rustc flags for the profile, and a sentence saying what was decided."""
    if os.environ.get("TORRENTLAB_PGO", "1") == "0":
        return [], "PGO off (TORRENTLAB_PGO=0)"
    if not PROFILE.exists() or not META.exists():
        return [], "PGO off: no pgo/torrentlab.profdata"
    meta = _read_meta()
    want = meta.get("llvm", "").split(".")[0]
    have = _rustc_llvm_major()
    if have != want:
        return [], f"PGO off: the profile is for LLVM {want}, rustc uses LLVM {have}"
    # Functions changed since the profile was made are compiled without it;
    # LLVM says so per function unless told not to.
    flags = [f"-Cprofile-use={PROFILE}", "-Cllvm-args=-no-pgo-warn-mismatch"]
    why = f"PGO on: {PROFILE.relative_to(ROOT)} (LLVM {want})"
    if meta.get("source") != source_digest():
        why += "; the Rust sources changed since it was made (regenerate: python3 bench/pgo.py)"
    return flags, why


def _with_pgo(hook):
    def wrapped(*args, **kwargs):
        flags, why = pgo_flags()
        print(f"torrentlab build: {why}", file=sys.stderr)
        old = os.environ.get("RUSTFLAGS")
        if flags:
            os.environ["RUSTFLAGS"] = " ".join(filter(None, [old, *flags]))
        try:
            return hook(*args, **kwargs)
        finally:
            if old is None:
                os.environ.pop("RUSTFLAGS", None)
            else:
                os.environ["RUSTFLAGS"] = old

    return wrapped


def _maturin(name: str):
    def hook(*args, **kwargs):
        import maturin  # the build requirement; imported late so tests need not have it

        return getattr(maturin, name)(*args, **kwargs)

    return hook


build_wheel = _with_pgo(_maturin("build_wheel"))
build_editable = _with_pgo(_maturin("build_editable"))
build_sdist = _maturin("build_sdist")
get_requires_for_build_wheel = _maturin("get_requires_for_build_wheel")
get_requires_for_build_editable = _maturin("get_requires_for_build_editable")
get_requires_for_build_sdist = _maturin("get_requires_for_build_sdist")
prepare_metadata_for_build_wheel = _maturin("prepare_metadata_for_build_wheel")
prepare_metadata_for_build_editable = _maturin("prepare_metadata_for_build_editable")
