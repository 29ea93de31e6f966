"""Live progress on the terminal (stderr), for sweeps and long runs.

A sweep's bar shows runs done out of the total, the failures so far, the
simulated seconds the finished runs covered per wall second, and an ETA. The
bar moves with the work of the swarms under way too (each counts for the
share of its work done), so a sweep of a few long swarm runs has an ETA
before its first run ends; runs on a Ray cluster count when they end. A run's bar follows its work, not its clock: a
swarm ends when its last leecher finishes, usually long before its duration
cap, so its bar and ETA follow the pieces the leechers hold out of those
they need (the engine reports both); a run that lasts its whole duration (a
dumbbell) follows its simulated time. ``--quiet`` shows nothing.
"""

from __future__ import annotations

import threading
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

#: Progress goes to stderr, so that stdout stays for results.
CONSOLE = Console(stderr=True)


class NoBar:
    """What a bar does under ``--quiet``: nothing."""

    def start(self, total: int | None) -> None:
        pass

    def watch(self, run: int):
        """The progress callback for run number `run` (None: no callback)."""
        return None

    def finished(self, sim_s: float, failed: bool, run: int | None = None) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False


class _Shown:
    """A bar drawn by rich's `Progress` (``self.bar``) while the block runs."""

    bar: Progress

    def __enter__(self):
        self.bar.__enter__()
        return self

    def __exit__(self, *exc) -> bool:
        return self.bar.__exit__(*exc)


class SweepBar(_Shown, NoBar):
    """A sweep's bar: runs done / total, failures, simulated seconds per wall
    second over the finished runs, and an ETA."""

    def __init__(self, describe: str, console: Console = CONSOLE) -> None:
        self.describe = describe
        self.bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[failed]}"), TextColumn("{task.fields[pace]}"), TimeRemainingColumn(),
            console=console, transient=False,
        )
        self.task = None
        self.done = 0
        self.failed = 0
        self.sim_s = 0.0
        self.t0 = time.monotonic()
        #: The share of its work done of each swarm run under way, by run number.
        self.under_way: dict[int, float] = {}
        self.lock = threading.Lock()

    def start(self, total: int | None) -> None:
        self.t0 = time.monotonic()
        self.task = self.bar.add_task(self.describe, total=total, failed="", pace="")

    def watch(self, run: int):
        def progress(t: float, done: float | None) -> None:
            if done is not None:
                with self.lock:
                    self.under_way[run] = done
                    self.bar.update(self.task, completed=self.done + sum(self.under_way.values()))

        return progress

    def finished(self, sim_s: float, failed: bool, run: int | None = None) -> None:
        """Run number `run` finished (`failed`: the engine failed on it),
        having simulated `sim_s` seconds."""
        with self.lock:
            self.under_way.pop(run, None)
            self.done += 1
            self.failed += failed
            self.sim_s += sim_s
            wall = max(time.monotonic() - self.t0, 1e-9)
            self.bar.update(self.task, completed=self.done + sum(self.under_way.values()),
                            failed=f"{self.failed} failed" if self.failed else "",
                            pace=f"{self.sim_s / wall:,.0f} sim s/wall s")


def sweep_bar(describe: str, show: bool) -> NoBar:
    return SweepBar(describe) if show else NoBar()


class RunBar(_Shown):
    """One run's bar: its work done (see the module's documentation), the
    simulated time, simulated seconds per wall second and an ETA. Use
    :meth:`update` as the ``progress`` callback of :func:`torrentlab.run`."""

    def __init__(self, describe: str, duration_s: float, show: bool, console: Console = CONSOLE) -> None:
        self.duration_s = duration_s
        self.bar = Progress(
            TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TextColumn("{task.fields[clock]}"),
            TimeRemainingColumn(), console=console, transient=True, disable=not show,
        )
        self.task = self.bar.add_task(describe, total=1.0, clock="")
        self.t0 = time.monotonic()

    def update(self, t: float, done: float | None = None) -> None:
        """At simulated second `t`, with the fraction `done` of the run's
        work done (None: a run that lasts its duration)."""
        frac = done if done is not None else t / self.duration_s if self.duration_s > 0 else 1.0
        wall = max(time.monotonic() - self.t0, 1e-9)
        self.bar.update(self.task, completed=min(max(frac, 0.0), 1.0),
                        clock=f"{t:,.0f} sim s, {t / wall:,.0f} sim s/wall s")
