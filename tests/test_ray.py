"""The Ray executor: a sweep run on a Ray instance this test starts (``ray
start --head``, as on a cluster's head node) executes in Ray's worker
processes and gives the same tables as the local executor; bad addresses are
refused at once with exit 2."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import SMALL_SWARM, cli

ray = pytest.importorskip("ray", reason="Ray is in the test extras; CI installs it")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A one-node Ray cluster of 2 CPUs, started and stopped by the test."""
    # The `ray` of this Python (its workers must run the same Python as the sweep).
    beside = Path(sys.executable).with_name("ray")
    exe = str(beside) if beside.exists() else shutil.which("ray")
    port = _free_port()
    tmp = tmp_path_factory.mktemp("ray")
    # Token authentication, as docs/cluster.md sets it up: one token for the
    # head, the workers and the driver (the sweep), here through the environment.
    (tmp / "token").write_text(secrets.token_hex(32))
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(tmp / "token"))
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    up = subprocess.run([exe, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                         "--disable-usage-stats", f"--temp-dir={tmp}"], capture_output=True, text=True, env=env,
                        timeout=120)
    assert up.returncode == 0, up.stderr
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([exe, "stop", "--force"], capture_output=True, env=env, timeout=120)
        for var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH"):
            os.environ.pop(var, None)


def _sweep(tmp_path: Path) -> Path:
    (tmp_path / "swarm.toml").write_text(SMALL_SWARM)
    f = tmp_path / "c.sweep.toml"
    f.write_text('base = "swarm.toml"\nruns = 3\n[grid]\n"peers.1.count" = [3, 5]\n')
    return f


def _sweep_pid(f: Path, out: Path, *more: str) -> int:
    """Runs the sweep in a process of its own; returns that process's pid."""
    p = subprocess.Popen([sys.executable, "-m", "torrentlab.cli", "sweep", str(f), "-o", str(out), "-q", *more],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, stderr = p.communicate(timeout=300)
    assert p.returncode == 0, stderr
    return p.pid


def test_a_sweep_on_ray_runs_in_ray_workers_and_matches_the_local_executor(cluster, tmp_path):
    f = _sweep(tmp_path)
    local_pid = _sweep_pid(f, tmp_path / "local", "-j", "2")
    ray_pid = _sweep_pid(f, tmp_path / "ray", "--ray", cluster)

    local = pq.read_table(tmp_path / "local" / "runs.parquet").to_pandas()
    remote = pq.read_table(tmp_path / "ray" / "runs.parquet").to_pandas()
    host = socket.gethostname()
    assert set(local["worker"]) == {f"{host}:{local_pid}"}, "the local executor runs in the sweep's process"
    pids = {int(w.rsplit(":", 1)[1]) for w in remote["worker"]}
    assert ray_pid not in pids and local_pid not in pids, "on Ray, runs execute in Ray's worker processes"
    assert all(w.startswith(f"{host}:") for w in remote["worker"])

    # Identical results whichever executor ran them (wall time and worker aside).
    drop = ["wall_s", "worker"]
    assert len(local) == 6 and local.drop(columns=drop).equals(remote.drop(columns=drop))
    a = pq.read_table(tmp_path / "local" / "peers.parquet").to_pandas()
    assert a.equals(pq.read_table(tmp_path / "ray" / "peers.parquet").to_pandas())


def test_a_ray_campaign_grows_like_a_local_one(cluster, tmp_path):
    f = _sweep(tmp_path)
    out = tmp_path / "o"
    _sweep_pid(f, out, "-j", "2")
    first = {p.name: p.stat().st_ino for p in (out / "runs").glob("*.parquet")}
    f.write_text(f.read_text().replace("runs = 3", "runs = 4"))
    _sweep_pid(f, out, "--ray", cluster)
    now = {p.name: p.stat().st_ino for p in (out / "runs").glob("*.parquet")}
    assert len(now) == 8 and all(now[n] == ino for n, ino in first.items()), "only the 2 new runs were made"
    runs = pq.read_table(out / "runs.parquet").to_pandas()
    assert runs["worker"].nunique() >= 2 and len(runs) == 8


@pytest.mark.parametrize("address, says", [
    ("127.0.0.1:1", "no Ray cluster at 127.0.0.1:1"),
    ("ray://127.0.0.1:1", "no Ray cluster at ray://127.0.0.1:1"),
    ("nonsense", "not a Ray address"),
])
def test_a_ray_address_with_nothing_there_is_refused_at_once_with_exit_2(tmp_path, address, says):
    f = _sweep(tmp_path)
    t0 = time.monotonic()
    r = cli("sweep", str(f), "-o", str(tmp_path / "o"), "-q", "--ray", address)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert time.monotonic() - t0 < 30, "refused without Ray's minute of retries"
    assert not (tmp_path / "o").exists() and not (tmp_path / ".o.partial").exists()


def test_reproduce_on_ray_gives_the_tables_of_reproduce_on_local_threads(cluster, tmp_path):
    for where, more in (("local", ["-j", "2"]), ("ray", ["--ray", cluster])):
        r = cli("reproduce", "rossi2010", "--quick", "-q", "-o", str(tmp_path / where), *more)
        assert r.returncode == 0, r.stderr
    names = sorted(p.relative_to(tmp_path / "local").as_posix() for p in (tmp_path / "local").rglob("*.parquet"))
    assert "d_runs.parquet" in names and "runs/a/timeseries.parquet" in names
    for name in names:
        a = pq.read_table(tmp_path / "local" / name)
        assert a.equals(pq.read_table(tmp_path / "ray" / name)), name
