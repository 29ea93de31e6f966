"""Campaigns: a sweep keeps each run as it finishes, so that one killed at any
moment (SIGKILL included) and run again into the same place runs only what is
missing, with nothing lost and nothing run twice; a finished campaign grows
the same way; versions are not mixed unless asked; a run the engine fails on
is recorded and the others go on."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import torrentlab
import torrentlab.executors as executors_mod
from conftest import SMALL_SWARM, cli
from torrentlab.campaign import campaign_dir, run_campaign, run_key
from torrentlab.exceptions import SimulationError
from torrentlab.sweep import Sweep


def _files(d: Path, sub: str) -> dict[str, int]:
    """Each finished run's file in `d/sub`, with its inode."""
    return {p.name: p.stat().st_ino for p in (d / sub).glob("*.parquet")}


def _sweep(tmp_path: Path, runs: int, counts=(3, 5)) -> Path:
    (tmp_path / "swarm.toml").write_text(SMALL_SWARM)
    f = tmp_path / "c.sweep.toml"
    f.write_text(f'base = "swarm.toml"\nruns = {runs}\n[grid]\n"peers.1.count" = {list(counts)}\n')
    return f


def _runs(d: Path):
    """A campaign's runs without what differs from one execution to the next
    (wall time, the process that ran each)."""
    return pq.read_table(d / "runs.parquet").to_pandas().drop(columns=["wall_s", "worker"])


def test_a_sweep_killed_mid_campaign_resumes_running_only_what_is_missing(tmp_path):
    f = _sweep(tmp_path, runs=30)
    out, partial = tmp_path / "o", tmp_path / ".o.partial"
    exe = [sys.executable, "-m", "torrentlab.cli"]
    p = subprocess.Popen([*exe, "sweep", str(f), "-o", str(out), "-q", "-j", "1"], cwd=tmp_path,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(_files(partial, "runs")) < 3 and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.wait()
    before = _files(partial, "runs")
    assert 3 <= len(before) < 60, "killed while the campaign was under way"
    assert not out.exists() and all(not n.startswith(".") for n in before), "only whole files, no result yet"

    (partial / "runs" / ".abc.parquet.tmp-1").write_bytes(b"half")  # as a writer killed mid-file leaves
    r = cli("sweep", str(f), "-o", str(out), "-q")
    assert r.returncode == 0, r.stderr
    assert not [p for p in out.rglob(".*") if p.is_file()], "no half-written file in the result"
    after = _files(out, "runs")
    assert len(after) == 60 and all(after[n] == ino for n, ino in before.items()), "the finished runs were kept"
    got = _runs(out)
    assert len(got) == 60 and not got.duplicated(["peers.1.count", "seed"]).any()
    assert not partial.exists()

    # The same campaign, never interrupted, gives the same tables.
    assert cli("sweep", str(f), "-o", str(tmp_path / "whole"), "-q").returncode == 0
    assert got.equals(_runs(tmp_path / "whole"))
    a = pq.read_table(out / "peers.parquet").to_pandas()
    assert a.equals(pq.read_table(tmp_path / "whole" / "peers.parquet").to_pandas())


def test_a_finished_campaign_grows_by_the_runs_it_lacks_without_force(tmp_path):
    f = _sweep(tmp_path, runs=2)
    out = tmp_path / "o"
    assert cli("sweep", str(f), "-o", str(out), "-q").returncode == 0
    first = _files(out, "runs")
    f.write_text(f.read_text().replace("runs = 2", "runs = 4"))
    r = cli("sweep", str(f), "-o", str(out), "-q")
    assert r.returncode == 0, r.stderr
    now = _files(out, "runs")
    assert len(now) == 8 and all(now[n] == ino for n, ino in first.items())
    got = _runs(out)
    # Provenance: the version and the commit the extension was built from (a git checkout here).
    assert set(got["torrentlab_version"]) == {torrentlab.__version__}
    assert set(got["torrentlab_commit"]) == {torrentlab.__git_commit__}
    assert re.fullmatch("[0-9a-f]{40}", torrentlab.__git_commit__), torrentlab.__git_commit__
    assert json.loads((out / "manifest.json").read_text())["commit"] == torrentlab.__git_commit__
    assert sorted(zip(got["peers.1.count"], got["seed"], strict=True)) == [
        (c, s) for c in ("3", "5") for s in (1, 2, 3, 4)]
    # Fewer seeds: the result holds exactly the sweep's runs.
    f.write_text(f.read_text().replace("runs = 4", "runs = 1"))
    assert cli("sweep", str(f), "-o", str(out), "-q").returncode == 0
    assert len(_files(out, "runs")) == 2 and len(_runs(out)) == 2


def test_another_sweep_or_another_version_is_refused_without_being_told(tmp_path):
    f = _sweep(tmp_path, runs=1)
    out = tmp_path / "o"
    assert cli("sweep", str(f), "-o", str(out), "-q").returncode == 0
    other = tmp_path / "other.sweep.toml"
    other.write_text(f.read_text())
    r = cli("sweep", str(other), "-o", str(out), "-q")
    assert r.returncode == 2 and "already holds a torrentlab result; use --force" in r.stderr, r.stderr
    ident = json.loads((out / "campaign.json").read_text())
    (out / "campaign.json").write_text(json.dumps({**ident, "torrentlab": "0.0.1"}))
    r = cli("sweep", str(f), "-o", str(out), "-q")
    assert r.returncode == 2 and "holds runs of torrentlab 0.0.1" in r.stderr and "--mix-versions" in r.stderr
    assert len(_files(out, "runs")) == 2, "the refused campaign is as it was"
    r = cli("sweep", str(f), "-o", str(out), "-q", "--mix-versions")
    assert r.returncode == 0, r.stderr


def test_a_run_the_engine_fails_on_is_recorded_and_the_others_go_on(tmp_path, monkeypatch):
    f = _sweep(tmp_path, runs=3)
    jobs = Sweep.from_file(f).jobs()
    real = executors_mod.run

    def flaky(scenario, *, seed, **kw):
        if seed == 2:
            raise SimulationError("engine bug")
        return real(scenario, seed=seed, **kw)

    monkeypatch.setattr(executors_mod, "run", flaky)
    with pytest.raises(RuntimeError, match="stop"), campaign_dir(tmp_path / "o", "c") as (partial, _):
        failed = run_campaign(jobs, partial, workers=2, describe="c", show_progress=False)
        bad = {run_key(j) for j in jobs if j.seed == 2}
        assert set(failed) == bad
        for key in bad:
            doc = json.loads((partial / "failed" / f"{key}.json").read_text())
            assert doc["seed"] == 2 and "engine bug" in doc["error"]
        assert len(_files(partial, "runs")) == 4
        # The next attempt runs only the failed ones, and clears their record.
        monkeypatch.setattr(executors_mod, "run", real)
        assert run_campaign(jobs, partial, workers=2, describe="c", show_progress=False) == []
        assert len(_files(partial, "runs")) == 6 and not list((partial / "failed").iterdir())
        raise RuntimeError("stop")
    assert len(_files(tmp_path / ".o.partial", "runs")) == 6, "a stopped campaign keeps its runs for the next"


def test_stopping_before_any_run_finished_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError), campaign_dir(tmp_path / "o", "c"):
        raise RuntimeError("stop")
    assert os.listdir(tmp_path) == []
