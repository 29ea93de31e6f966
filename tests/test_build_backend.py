"""The build backend's PGO decision (build_backend/torrentlab_build.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def backend(monkeypatch, tmp_path):
    spec = importlib.util.spec_from_file_location("torrentlab_build", ROOT / "build_backend" / "torrentlab_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # A stand-in repository: a profile, its record, one source file.
    (tmp_path / "pgo").mkdir()
    (tmp_path / "crates" / "x" / "src").mkdir(parents=True)
    (tmp_path / "crates" / "x" / "src" / "lib.rs").write_text("pub fn f() {}\n")
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    monkeypatch.setattr(mod, "PROFILE", tmp_path / "pgo" / "torrentlab.profdata")
    monkeypatch.setattr(mod, "META", tmp_path / "pgo" / "profile.txt")
    mod.PROFILE.write_bytes(b"\x81lprofi")
    digest = mod.source_digest(tmp_path)
    mod.META.write_text(f"# comment\nrustc = 1.95.0\nllvm = 22.1.2\nsource = {digest}\n")
    monkeypatch.setattr(mod, "_rustc_llvm_major", lambda: "22")
    monkeypatch.delenv("TORRENTLAB_PGO", raising=False)
    return mod


def test_a_profile_made_by_the_same_llvm_major_is_used(backend):
    flags, why = backend.pgo_flags()
    assert flags[0] == f"-Cprofile-use={backend.PROFILE}"
    assert why == "PGO on: pgo/torrentlab.profdata (LLVM 22)"


def test_a_profile_from_another_llvm_major_is_not_used(backend, monkeypatch):
    monkeypatch.setattr(backend, "_rustc_llvm_major", lambda: "23")
    flags, why = backend.pgo_flags()
    assert flags == []
    assert "LLVM 22" in why and "LLVM 23" in why


def test_torrentlab_pgo_0_turns_it_off(backend, monkeypatch):
    monkeypatch.setenv("TORRENTLAB_PGO", "0")
    assert backend.pgo_flags()[0] == []


def test_without_a_profile_the_build_is_plain(backend):
    backend.PROFILE.unlink()
    flags, why = backend.pgo_flags()
    assert flags == [] and "no pgo/torrentlab.profdata" in why


def test_changed_sources_still_use_the_profile_but_say_to_regenerate_it(backend):
    (backend.ROOT / "crates" / "x" / "src" / "lib.rs").write_text("pub fn f() { g() }\n")
    flags, why = backend.pgo_flags()
    assert flags and "regenerate: python3 bench/pgo.py" in why


def test_the_flags_are_added_to_rustflags_only_while_the_hook_runs(backend, monkeypatch):
    monkeypatch.setenv("RUSTFLAGS", "-Cdebuginfo=0")
    seen = []
    hook = backend._with_pgo(lambda: seen.append(__import__("os").environ["RUSTFLAGS"]))
    hook()
    assert seen == [f"-Cdebuginfo=0 -Cprofile-use={backend.PROFILE} -Cllvm-args=-no-pgo-warn-mismatch"]
    assert __import__("os").environ["RUSTFLAGS"] == "-Cdebuginfo=0"


def test_the_committed_profile_is_recorded_with_its_toolchain():
    meta = (ROOT / "pgo" / "profile.txt").read_text()
    assert (ROOT / "pgo" / "torrentlab.profdata").stat().st_size > 0
    for key in ("rustc = ", "llvm = ", "source = "):
        assert key in meta
