"""The build backend's PGO decision (build_backend/torrentlab_build.py); no Rust build needed."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def backend(monkeypatch):
    spec = importlib.util.spec_from_file_location("torrentlab_build", ROOT / "build_backend" / "torrentlab_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.delenv(mod.ENV, raising=False)
    return mod


@pytest.fixture()
def profile(tmp_path):
    p = tmp_path / "torrentlab.profdata"
    p.write_bytes(b"\x81lprofi")
    return p


def test_without_a_profile_in_the_environment_the_build_is_plain_and_says_so(backend):
    flags, why = backend.pgo_flags()
    assert flags == []
    assert "PGO off" in why and "TORRENTLAB_PGO_PROFILE" in why


def test_an_empty_variable_is_the_same_as_none(backend, monkeypatch):
    monkeypatch.setenv("TORRENTLAB_PGO_PROFILE", "")
    assert backend.pgo_flags()[0] == []


def test_a_profile_named_in_the_environment_is_used(backend, monkeypatch, profile):
    monkeypatch.setenv("TORRENTLAB_PGO_PROFILE", str(profile))
    flags, why = backend.pgo_flags()
    assert flags == [f"-Cprofile-use={profile.resolve()}", "-Cllvm-args=-no-pgo-warn-mismatch"]
    assert why.startswith("PGO on") and str(profile.resolve()) in why


def test_a_missing_profile_is_refused_with_a_clear_message(backend, monkeypatch, tmp_path):
    missing = tmp_path / "nope.profdata"
    monkeypatch.setenv("TORRENTLAB_PGO_PROFILE", str(missing))
    with pytest.raises(backend.ProfileError, match="no such file") as e:
        backend.pgo_flags()
    assert str(missing) in str(e.value) and "bench/pgo.py" in str(e.value)


def test_a_missing_profile_stops_the_build_before_maturin_runs(backend, monkeypatch, tmp_path):
    monkeypatch.setenv("TORRENTLAB_PGO_PROFILE", str(tmp_path / "nope.profdata"))
    ran = []
    with pytest.raises(backend.ProfileError):
        backend._with_pgo(lambda: ran.append(1))()
    assert ran == []


def test_a_path_with_whitespace_is_refused(backend, monkeypatch, tmp_path):
    d = tmp_path / "a b"
    d.mkdir()
    (d / "p.profdata").write_bytes(b"x")
    monkeypatch.setenv("TORRENTLAB_PGO_PROFILE", str(d / "p.profdata"))
    with pytest.raises(backend.ProfileError, match="whitespace"):
        backend.pgo_flags()


def test_the_flags_are_added_to_rustflags_only_while_the_hook_runs(backend, monkeypatch, profile):
    monkeypatch.setenv("TORRENTLAB_PGO_PROFILE", str(profile))
    monkeypatch.setenv("RUSTFLAGS", "-Cdebuginfo=0")
    seen = []
    backend._with_pgo(lambda: seen.append(os.environ["RUSTFLAGS"]))()
    assert seen == [f"-Cdebuginfo=0 -Cprofile-use={profile.resolve()} -Cllvm-args=-no-pgo-warn-mismatch"]
    assert os.environ["RUSTFLAGS"] == "-Cdebuginfo=0"


def test_rustflags_unset_before_the_hook_is_unset_after_it_even_if_the_hook_fails(backend, monkeypatch, profile):
    monkeypatch.setenv("TORRENTLAB_PGO_PROFILE", str(profile))
    monkeypatch.delenv("RUSTFLAGS", raising=False)
    seen = []

    def hook():
        seen.append(os.environ["RUSTFLAGS"])
        raise RuntimeError("build failed")

    with pytest.raises(RuntimeError):
        backend._with_pgo(hook)()
    assert seen and seen[0].startswith("-Cprofile-use=")
    assert "RUSTFLAGS" not in os.environ


def test_a_plain_build_leaves_rustflags_alone(backend, monkeypatch):
    monkeypatch.setenv("RUSTFLAGS", "-Cdebuginfo=0")
    seen = []
    backend._with_pgo(lambda: seen.append(os.environ["RUSTFLAGS"]))()
    assert seen == ["-Cdebuginfo=0"] and os.environ["RUSTFLAGS"] == "-Cdebuginfo=0"


def test_no_profile_is_committed():
    """A committed profile would tie what the sources compile to on the text of the sources."""
    assert not (ROOT / "pgo").exists()
    try:
        tracked = subprocess.run(["git", "ls-files", "*.profdata"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        pytest.skip("no git")
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    assert tracked.stdout.strip() == ""
