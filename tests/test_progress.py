"""Progress: the engine tells a run's callback how much of the work is done
(a swarm's pieces, so its bar ends when the last leecher finishes, not at the
duration cap); the bars show runs done, failures, simulated seconds per wall
second; one-argument callbacks still get the time alone."""

from __future__ import annotations

import io

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

from rich.console import Console

import torrentlab
from conftest import SMALL_SWARM
from torrentlab.experiments import scenario_dir
from torrentlab.progress import RunBar, SweepBar
from torrentlab.sweep import Sweep, run_jobs


def _swarm(tmp_path, duration="2 h"):
    f = tmp_path / "swarm.toml"
    f.write_text(SMALL_SWARM.replace('duration = "2 h"', f'duration = "{duration}"'))
    return f


def test_a_swarms_progress_reports_its_work_done_reaching_one_when_the_last_leecher_finishes(tmp_path):
    seen = []
    res = torrentlab.run(_swarm(tmp_path), progress=lambda t, done: seen.append((t, done)))
    t_end, done_end = seen[-1]
    assert done_end == 1.0 and t_end < 7200 / 4, "done long before the 2 h cap"
    assert all(0.0 <= d <= 1.0 for _, d in seen)
    assert [d for _, d in seen] == sorted(d for _, d in seen)
    assert t_end == res.summary["end_s"].iloc[0]


def test_a_swarm_cut_short_by_its_duration_ends_with_part_of_its_work_done(tmp_path):
    seen = []
    torrentlab.run(_swarm(tmp_path, "300 s"), progress=lambda t, done: seen.append((t, done)))
    t_end, done_end = seen[-1]
    assert t_end == 300.0 and 0.0 < done_end < 1.0


def test_a_dumbbell_reports_no_work_share_and_a_one_argument_callback_gets_the_time_alone():
    scenario = tomllib.loads((scenario_dir("rossi2010") / "a-newreno-vs-ledbat.toml").read_text())
    scenario["run"]["duration"] = "5 s"
    two, one = [], []
    torrentlab.run(scenario, progress=lambda t, done: two.append((t, done)))
    torrentlab.run(scenario, progress=one.append)
    assert two[-1] == (5.0, None) and {d for _, d in two} == {None}
    assert one[-1] == 5.0 and all(isinstance(t, float) for t in one)


def test_the_run_bar_follows_the_work_share_when_there_is_one_and_the_clock_otherwise():
    console = Console(file=io.StringIO(), force_terminal=False)
    with RunBar("r", duration_s=7200.0, show=True, console=console) as bar:
        bar.update(600.0, 0.75)
        assert bar.bar.tasks[0].completed == 0.75, "a swarm three quarters done at 10 of 120 minutes"
        bar.update(3600.0, None)
        assert bar.bar.tasks[0].completed == 0.5, "a dumbbell half way through its duration"
        assert "3,600 sim s" in bar.bar.tasks[0].fields["clock"]


def test_the_sweep_bar_counts_runs_failures_and_simulated_seconds_per_wall_second():
    out = io.StringIO()
    bar = SweepBar("s", console=Console(file=out, force_terminal=False, width=200))
    with bar:
        bar.start(3)
        bar.finished(100.0, False)
        bar.finished(0.0, True)
        task = bar.bar.tasks[0]
        assert (task.completed, task.total, bar.failed, bar.sim_s) == (2, 3, 1, 100.0)
        assert task.fields["failed"] == "1 failed" and task.fields["pace"].endswith("sim s/wall s")
    assert "2/3" in out.getvalue() and "1 failed" in out.getvalue()


def test_a_sweeps_bar_sees_every_run_and_its_simulated_time(tmp_path, monkeypatch):
    _swarm(tmp_path)
    f = tmp_path / "s.sweep.toml"
    f.write_text('base = "swarm.toml"\nruns = 2\n[grid]\n"peers.1.count" = [3, 4]\n')
    bars = []
    real = SweepBar.__init__

    def spy(self, *a, **kw):
        real(self, *a, **kw)
        bars.append(self)

    monkeypatch.setattr(SweepBar, "__init__", spy)
    res = run_jobs(Sweep.from_file(f).jobs(), workers=2, show_progress=True)
    (bar,) = bars
    assert bar.bar.tasks[0].completed == 4 and bar.failed == 0
    assert bar.sim_s == sum(r.perf["sim_seconds"] for r in res) > 0


def test_a_sweeps_bar_moves_with_the_work_of_the_swarms_under_way_and_counts_each_run_once():
    bar = SweepBar("s", console=Console(file=io.StringIO(), force_terminal=False))
    with bar:
        bar.start(4)
        first, second = bar.watch(0), bar.watch(1)
        first(100.0, 0.5)
        second(100.0, 0.25)
        second(30.0, None)  # a dumbbell's look: no share to count
        assert bar.bar.tasks[0].completed == 0.75
        bar.finished(200.0, False, 0)
        assert bar.bar.tasks[0].completed == 1.25 and bar.under_way == {1: 0.25}
        bar.finished(150.0, False, 1)
        assert bar.bar.tasks[0].completed == 2 and not bar.under_way
