"""PEP 517 build backend: maturin, with profile-guided optimisation on request.

`pip install .` builds through here. By default it is a plain release build
(maturin's `--release`), whatever the environment's toolchain: nothing in the
repository steers how the compiler optimises the sources.

Profile-guided optimisation (PGO) is opt-in. `python3 bench/pgo.py --install`
builds an instrumented package from the current sources, trains it, merges a
profile and installs the package built with it. To use a profile made that
way by hand, point `TORRENTLAB_PGO_PROFILE` at it:

    TORRENTLAB_PGO_PROFILE=/path/to/torrentlab.profdata pip install .

and the Rust code is compiled with `-Cprofile-use` (functions that changed
since the profile was made are compiled without it). Results are the same
either way: a profile only steers how the compiler lays out and inlines code.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ENV = "TORRENTLAB_PGO_PROFILE"


class ProfileError(RuntimeError):
    """`TORRENTLAB_PGO_PROFILE` names no file."""


def pgo_flags() -> tuple[list[str], str]:
    """The rustc flags for the profile, and a sentence saying what was decided."""
    value = os.environ.get(ENV, "")
    if not value:
        return [], f"PGO off (plain release build; set {ENV} to a .profdata file to use one)"
    profile = Path(value).expanduser().resolve()
    if not profile.is_file():
        raise ProfileError(
            f"{ENV}={value}: no such file. Make a profile with `python3 bench/pgo.py --out FILE`, "
            f"or unset {ENV} for a plain release build."
        )
    if any(c.isspace() for c in str(profile)):
        # RUSTFLAGS is split at whitespace.
        raise ProfileError(f"{ENV}={value}: the path must not contain whitespace (RUSTFLAGS is split at it)")
    # Functions changed since the profile was made are compiled without it;
    # LLVM says so per function unless told not to.
    flags = [f"-Cprofile-use={profile}", "-Cllvm-args=-no-pgo-warn-mismatch"]
    return flags, f"PGO on: {profile} ({ENV})"


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
