"""Nothing lost, nothing half-done: torrentlab never deletes what it did not
write, checks the destination before simulating, stops cleanly on Ctrl-C,
SIGTERM and SIGKILL, and lets only one writer into a directory at a time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import SCENARIOS, cli

#: A run that takes several wall seconds (1 seed + 300 leechers, 20 MB).
LONG = SCENARIOS / "bench" / "rao2010-rtt400-20k.toml"
#: A run of a few hundred milliseconds.
SHORT = SCENARIOS / "rossi2010" / "b-ledbat-vs-ledbat.toml"
SWEEP = SCENARIOS / "rao2010" / "rtt.sweep.toml"


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its content (hidden ones included)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def one_line_error(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.fixture
def user_dir(tmp_path):
    """A directory of the user's: notes and the scenario itself."""
    d = tmp_path / "mine"
    d.mkdir()
    (d / "notes.txt").write_text("two weeks of notes")
    (d / "scenario.toml").write_text(SHORT.read_text())
    return d


def test_run_into_a_directory_torrentlab_did_not_write_is_refused_and_nothing_in_it_changes(tmp_path, user_dir):
    before = snapshot(tmp_path)
    r = cli("run", str(user_dir / "scenario.toml"), "-o", str(user_dir))
    one_line_error(r, "not a torrentlab result")
    r = cli("run", str(user_dir / "scenario.toml"), "-o", str(user_dir), "--force")
    one_line_error(r, "not a torrentlab result")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("target", [".", "..", "./", "sub/.."])
def test_the_working_directory_and_its_parents_are_refused_as_output(tmp_path, user_dir, target):
    before = snapshot(tmp_path)
    r = cli("run", "scenario.toml", "-o", target, "--force", cwd=user_dir)
    one_line_error(r)
    assert snapshot(tmp_path) == before


def test_an_absolute_parent_of_the_working_directory_is_refused(tmp_path, user_dir):
    before = snapshot(tmp_path)
    r = cli("run", "scenario.toml", "-o", str(tmp_path), "--force", cwd=user_dir)
    one_line_error(r, "working directory")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "/tmp/x", "a/b"])
def test_a_scenario_name_that_is_not_one_plain_file_name_is_refused_before_anything_is_written(tmp_path, name):
    text = SHORT.read_text()
    f = tmp_path / "s.toml"
    f.write_text(f"name = {json.dumps(name)}\n" + "\n".join(
        line for line in text.splitlines() if not line.startswith("name =")))
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "keep.txt").write_text("a colleague's file")
    before = snapshot(tmp_path)
    r = cli("run", "s.toml", cwd=tmp_path)
    one_line_error(r, "name")
    assert snapshot(tmp_path) == before


def test_an_output_that_is_a_file_or_under_a_file_is_refused_before_simulating(tmp_path):
    (tmp_path / "f").write_text("a file")
    before = snapshot(tmp_path)
    t0 = time.monotonic()
    one_line_error(cli("run", str(LONG), "-o", str(tmp_path / "f")), "is a file")
    one_line_error(cli("run", str(LONG), "-o", str(tmp_path / "f" / "out")), "is a file")
    assert time.monotonic() - t0 < 8, "refused before the simulation, not after it"
    assert snapshot(tmp_path) == before


@contextmanager
def mounted_tmpfs(where: Path, options: str):
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root")
    where.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


@pytest.mark.parametrize("options, words", [("ro,size=4m", "read-only"), ("size=64k", "free")])
def test_a_read_only_or_full_file_system_is_refused_before_simulating(tmp_path, options, words):
    with mounted_tmpfs(tmp_path / "fs", options) as fs:
        t0 = time.monotonic()
        r = cli("run", str(LONG), "-o", str(fs / "out"))
        one_line_error(r, words)
        assert time.monotonic() - t0 < 8
        assert list(fs.iterdir()) == []


def test_an_older_result_is_replaced_only_with_force_and_then_completely(tmp_path):
    out = tmp_path / "out"
    assert cli("run", str(SHORT), "-o", str(out), "-q", "--seed", "1").returncode == 0
    first = snapshot(out)
    one_line_error(cli("run", str(SHORT), "-o", str(out), "-q", "--seed", "2"), "--force")
    assert snapshot(out) == first
    assert cli("run", str(SHORT), "-o", str(out), "-q", "--seed", "2", "--force").returncode == 0
    assert json.loads((out / "manifest.json").read_text())["seed"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "no temporary or old directory left"


def start(*args: str, cwd: Path) -> subprocess.Popen:
    exe = [sys.executable, "-m", "torrentlab.cli"]
    # Default signal dispositions: a shell's background job would ignore SIGINT.
    return subprocess.Popen([*exe, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            restore_signals=True, env={**os.environ, "COLUMNS": "200"})


def stop(p: subprocess.Popen, sig: int, after: float) -> tuple[float, str]:
    time.sleep(after)
    assert p.poll() is None, "the run ended before it could be interrupted"
    t0 = time.monotonic()
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    return time.monotonic() - t0, err


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_run_stopped_by_a_signal_exits_quickly_and_leaves_the_previous_result_intact(tmp_path, sig, code):
    out = tmp_path / "out"
    assert cli("run", str(SHORT), "-o", str(out), "-q").returncode == 0
    before = snapshot(tmp_path)
    p = start("run", str(LONG), "-o", str(out), "-q", "--force", cwd=tmp_path)
    took, err = stop(p, sig, after=2.5)
    assert p.returncode == code, err
    assert took < 2.0, f"took {took:.2f} s to stop"
    assert "Traceback" not in err
    assert snapshot(tmp_path) == before, "the previous result is intact and no temporary directory is left"


def test_a_sweep_stopped_by_ctrl_c_exits_within_two_seconds_and_keeps_only_whole_runs_aside(tmp_path):
    p = start("sweep", str(SWEEP), "-o", str(tmp_path / "sw"), "-q", "-j", "2", cwd=tmp_path)
    took, err = stop(p, signal.SIGINT, after=3.0)
    assert p.returncode == 130, err
    assert took < 2.0, f"took {took:.2f} s to stop"
    # No result; at most the campaign's hidden partial directory, with the
    # runs that finished, each a whole file (tests/test_campaign.py resumes one).
    left = [x.name for x in tmp_path.iterdir()]
    assert left in ([], [".sw.partial"]), left
    for f in (tmp_path / ".sw.partial").glob("*/*"):
        assert not f.name.startswith(".") and pq.read_table(f).num_rows > 0, f


def test_a_killed_run_leaves_only_a_hidden_partial_directory_that_the_next_run_removes(tmp_path):
    p = start("run", str(LONG), "-o", str(tmp_path / "out"), "-q", cwd=tmp_path)
    stop(p, signal.SIGKILL, after=2.5)
    assert [x.name for x in tmp_path.iterdir()] == [".out.partial"]
    r = cli("run", str(SHORT), "-o", str(tmp_path / "out"), "-q")
    assert r.returncode == 0, r.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out"]


def test_of_two_runs_into_one_directory_the_second_is_refused_while_the_first_goes_on(tmp_path):
    first = start("run", str(LONG), "-o", str(tmp_path / "out"), "-q", cwd=tmp_path)
    time.sleep(2.5)
    second = cli("run", str(SHORT), "-o", str(tmp_path / "out"), "-q")
    one_line_error(second, "another torrentlab process")
    stop(first, signal.SIGINT, after=0)
    assert first.returncode == 130
    assert list(tmp_path.iterdir()) == []


def test_a_run_estimated_to_need_more_memory_than_allowed_is_refused_naming_the_field(tmp_path):
    before = snapshot(tmp_path)
    r = cli("run", str(LONG), "-o", str(tmp_path / "out"), "--max-memory", "1 MB")
    one_line_error(r, "memory", "peers")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("args", [["bench", "--repeat", "50"], ["reproduce", "rossi2010", "-o", "rep"]],
                         ids=["bench", "reproduce"])
def test_bench_and_reproduce_stop_within_two_seconds_of_ctrl_c_and_leave_nothing(tmp_path, args):
    p = start(*args, "-q" if args[0] == "reproduce" else "--json", cwd=tmp_path)
    took, err = stop(p, signal.SIGINT, after=3.0)
    assert p.returncode == 130, err
    assert took < 2.0, f"took {took:.2f} s to stop"
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_of_a_hundred_million_runs_is_refused_up_front_naming_runs(tmp_path):
    (tmp_path / "s.toml").write_text(SHORT.read_text())
    (tmp_path / "huge.sweep.toml").write_text('base = "s.toml"\nruns = 100000000\n')
    t0 = time.monotonic()
    r = cli("sweep", str(tmp_path / "huge.sweep.toml"), "-o", str(tmp_path / "out"))
    one_line_error(r, "runs", "100,000,000", "at most 1,000,000")
    assert time.monotonic() - t0 < 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["huge.sweep.toml", "s.toml"]


def test_a_sweep_checks_every_grid_point_before_it_runs_any(tmp_path):
    (tmp_path / "s.toml").write_text(SHORT.read_text())
    (tmp_path / "bad.sweep.toml").write_text(
        'base = "s.toml"\nruns = 3\n[grid]\n"network.bottleneck.capacity" = ["10 Mbit/s", "-1 Mbit/s"]\n')
    r = cli("sweep", str(tmp_path / "bad.sweep.toml"), "-o", str(tmp_path / "out"))
    one_line_error(r, "network.bottleneck.capacity", "-1 Mbit/s")
    assert not (tmp_path / "out").exists()


def test_an_old_result_left_aside_by_a_writer_killed_mid_swap_is_removed_by_the_next_writer(tmp_path):
    stale = tmp_path / ".out.old-4242"
    stale.mkdir()
    (stale / "manifest.json").write_text("{}")
    r = cli("run", str(SHORT), "-o", str(tmp_path / "out"), "-q")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_signal_during_a_deferred_wait_is_raised_after_it_and_the_handlers_are_restored():
    from torrentlab.executors import signals_deferred

    before = signal.getsignal(signal.SIGINT)
    reached_end_of_block = False
    with pytest.raises(KeyboardInterrupt):
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler runs here, and must not raise
            reached_end_of_block = True
    assert reached_end_of_block
    assert signal.getsignal(signal.SIGINT) is before
    with signals_deferred():
        pass  # nothing noted: nothing raised
