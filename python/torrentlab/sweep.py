"""Sweeps: a base scenario, a grid of overrides, and many seeds, run in parallel.

A sweep file (``*.sweep.toml``)::

    base = "d-ledbat-vs-ledbat-random-start.toml"   # relative to the sweep file
    runs = 100                                      # seeds 1..runs per grid point
    quick_runs = 10                                 # used by --quick

    [grid]
    "network.bottleneck.capacity" = ["2 Mbit/s", "10 Mbit/s"]
    "tcp.slow_start" = [false, true]

Every combination of the grid values is a point; every point runs with seeds
1..runs. Runs go to a thread pool as wide as the machine (the engine releases
the GIL), with a progress bar.

Fields that vary together are joined with ``+`` in one key, each value a list
with one entry per field (``"peers.0.upload_limit+peers.1.upload_limit" =
[["50 kB/s", "20 kB/s"], ...]``), or listed in a ``[zip]`` table, whose lists
all have the same length and whose i-th values go together (one axis of the
product, beside the grid's)::

    [zip]
    "network.rtt" = ["20 ms", "100 ms", "400 ms"]
    "peers.0.upload_limit" = ["20 kB/s", "50 kB/s", "100 kB/s"]

Points that no product describes are listed one by one as ``[[points]]``
tables, each setting the same dotted fields (one more axis)::

    [[points]]
    "network.rtt" = "20 ms"
    "peers.0.count" = 50

A ``[quick]`` table of dotted fields is applied to every run of ``--quick``
(a smaller swarm, a shorter file).
"""

from __future__ import annotations

import copy
import itertools
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torrentlab.api import RunResult
from torrentlab.exceptions import ScenarioError

if TYPE_CHECKING:  # pandas is imported when a table is read, not to start the CLI
    import pandas as pd

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI (a dependency there)
    import tomli as tomllib


#: The most runs one sweep may expand to (grid points x seeds).
MAX_RUNS = 1_000_000


@dataclass(frozen=True)
class Job:
    """One run: a scenario document, its seed, and the parameters that label it."""

    scenario: dict[str, Any]
    seed: int
    params: tuple[tuple[str, Any], ...]


def load_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    p = Path(path)
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _err(p, "(file)", "no such file") from None
    except UnicodeDecodeError as e:
        raise _err(p, "(file)", f"is not UTF-8 text (invalid byte at offset {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise _err(p, "(syntax)", f"TOML syntax error: {e}") from None


def _err(path: Path, field: str, detail: str) -> ScenarioError:
    e = ScenarioError(f"{path}: {field}: {detail}")
    e.file, e.field, e.detail = str(path), field, detail
    return e


def set_dotted(doc: dict[str, Any], dotted: str, value: Any) -> None:
    """Sets ``doc["a"]["b"] = value`` for ``"a.b"``, creating tables as needed.
    A numeric part indexes an array: ``"flows.0.cc"``."""
    *parents, leaf = dotted.split(".")
    node: Any = doc
    for key in parents:
        if isinstance(node, list):
            node = node[int(key)]
        else:
            node = node.setdefault(key, {})
        if not isinstance(node, (dict, list)):
            raise KeyError(dotted)
    if isinstance(node, list):
        node[int(leaf)] = copy.deepcopy(value)
    else:
        node[leaf] = copy.deepcopy(value)


def _apply(doc: dict[str, Any], key: str, value: Any) -> None:
    """Sets one grid key: a dotted field, or several joined with ``+``."""
    fields = key.split("+")
    if len(fields) == 1:
        set_dotted(doc, key, value)
    else:
        for f, v in zip(fields, value, strict=True):
            set_dotted(doc, f, v)


def label(value: Any) -> str:
    """A short text for a grid value: tables as ``k=v, ...``, arrays joined by ``; ``."""
    if isinstance(value, dict):
        return ", ".join(f"{k}={label(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(label(v) for v in value)
    return str(value)


@dataclass
class Sweep:
    base: dict[str, Any]
    grid: dict[str, list[Any]]
    runs: int
    quick_runs: int
    quick: dict[str, Any] | None = None
    #: Lists of equal length whose i-th values form one point of their axis.
    zipped: dict[str, list[Any]] = field(default_factory=dict)
    #: Explicit points, each setting the same dotted fields.
    points_list: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Sweep:
        p = Path(path)
        doc = load_toml(p)
        unknown = set(doc) - {"base", "runs", "quick_runs", "grid", "zip", "points", "quick"}
        if unknown:
            raise _err(p, sorted(unknown)[0],
                       "unknown field; allowed: base, runs, quick_runs, grid, zip, points, quick")
        if "base" not in doc:
            raise _err(p, "base", "missing: the scenario file the sweep varies")
        if not isinstance(doc["base"], str) or not doc["base"].strip():
            raise _err(p, "base", "must be the path of the scenario file the sweep varies (text)")
        runs = doc.get("runs", 1)
        quick_runs = doc.get("quick_runs", runs)
        for key, n in (("runs", runs), ("quick_runs", quick_runs)):
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise _err(p, key, "must be a whole number >= 1")
        grid = doc.get("grid", {})
        if not isinstance(grid, dict):
            raise _err(p, "grid", "must be a table of dotted fields and their lists of values")
        for k, v in grid.items():
            if not isinstance(v, list) or not v:
                raise _err(p, f"grid.{k}", "must be a non-empty list of values")
            fields = k.split("+")
            if len(fields) > 1 and not all(isinstance(x, list) and len(x) == len(fields) for x in v):
                raise _err(p, f"grid.{k}", f"joins {len(fields)} fields: every value must be a list of {len(fields)}")
        zipped = _zip_table(p, doc.get("zip", {}))
        points = _points_list(p, doc.get("points", []))
        varied = [k for part in (grid, zipped, points[0] if points else {}) for k in part]
        twice = sorted({k for k in varied if varied.count(k) > 1})
        if twice:
            raise _err(p, twice[0], "is varied twice (in more than one of grid, zip and points); vary it in one")
        try:
            base = load_toml(p.parent / doc["base"])
        except ScenarioError as e:
            raise _err(p, "base", str(e)) from None
        tried = [(f"grid.{k}", k, v[0]) for k, v in grid.items()] + [(f"zip.{k}", k, v[0]) for k, v in zipped.items()]
        tried += [(f"points[{i}].{k}", k, v) for i, pt in enumerate(points) for k, v in pt.items()]
        for where, k, v in tried:
            try:
                _apply(copy.deepcopy(base), k, v)
            except (KeyError, IndexError, ValueError, TypeError):
                raise _err(p, where, "does not name a field of the base scenario") from None
        quick = doc.get("quick")
        if quick is not None:
            if not isinstance(quick, dict):
                raise _err(p, "quick", "must be a table of dotted fields and values")
            for k, v in quick.items():
                try:
                    set_dotted(copy.deepcopy(base), k, v)
                except (KeyError, IndexError, ValueError, TypeError):
                    raise _err(p, f"quick.{k}", "does not name a field of the base scenario") from None
        sweep = cls(base=base, grid=grid, runs=runs, quick_runs=quick_runs, quick=quick, zipped=zipped,
                    points_list=points)
        for key, n in (("runs", sweep.count()), ("quick_runs", sweep.count(quick=True))):
            if n > MAX_RUNS:
                raise _err(p, key, f"the sweep has {sweep.points():,} grid points x {n // sweep.points():,} seeds = "
                           f"{n:,} runs; at most {MAX_RUNS:,} are allowed (split the campaign)")
        return sweep

    def axes(self) -> list[list[tuple[tuple[str, Any], ...]]]:
        """The sweep's axes, each a list of its settings (each a tuple of
        (key, value) pairs): one per grid key, one for ``[zip]``, one for
        ``[[points]]``. The sweep's points are their product."""
        axes = [[((k, v),) for v in vals] for k, vals in self.grid.items()]
        if self.zipped:
            n = len(next(iter(self.zipped.values())))
            axes.append([tuple((k, vals[i]) for k, vals in self.zipped.items()) for i in range(n)])
        if self.points_list:
            axes.append([tuple(pt.items()) for pt in self.points_list])
        return axes

    def params(self) -> list[str]:
        """The names of the swept parameters, in the order of their columns."""
        return list(self.grid) + list(self.zipped) + list(self.points_list[0] if self.points_list else [])

    def points(self) -> int:
        """The number of points (combinations of the axes' settings)."""
        return math.prod(len(a) for a in self.axes())

    def count(self, quick: bool = False) -> int:
        """The number of runs: grid points x seeds."""
        return self.points() * (self.quick_runs if quick else self.runs)

    def jobs(self, quick: bool = False) -> Jobs:
        """Every run, as a lazy sequence: a point's scenario is built when its
        first run is reached, so a large sweep costs no memory up front."""
        return Jobs(self, quick)

    def point_docs(self, quick: bool = False) -> Iterator[tuple[tuple[tuple[str, Any], ...], dict[str, Any]]]:
        """Each grid point's parameters and scenario document, lazily."""
        for settings in itertools.product(*self.axes()):
            params = tuple(kv for setting in settings for kv in setting)
            doc = copy.deepcopy(self.base)
            if quick:
                for k, v in (self.quick or {}).items():
                    set_dotted(doc, k, v)
            for k, v in params:
                _apply(doc, k, v)
            yield params, doc


    def check(self, path: str | os.PathLike[str], quick: bool = False, *, memory: bool = False,
              max_memory: int | None = None, at_once: int = 1) -> None:
        """Validates every grid point's scenario (with the ``[quick]``
        overrides when `quick`) and, with `memory`, checks that `at_once` runs
        of it fit in memory (see :func:`torrentlab.guards.check_memory`).
        Raises a ScenarioError naming the sweep file, the field and the point."""
        from torrentlab.api import validate
        from torrentlab.guards import check_memory
        from torrentlab.inputs import error

        for params, doc in self.point_docs(quick=quick):
            try:
                info = validate(doc)
                if memory:
                    check_memory(info, os.fspath(path), max_memory=max_memory, at_once=at_once)
            except ScenarioError as e:
                where = [f"grid point {', '.join(f'{k} = {label(v)}' for k, v in params)}"] if params else []
                where += ["with the [quick] overrides"] if quick else []
                raise error(os.fspath(path), e.field, f"{e.detail} ({'; '.join(where) or 'base'})") from None


def _zip_table(p: Path, z: Any) -> dict[str, list[Any]]:
    """A sweep's ``[zip]`` table, checked: non-empty lists, all of one length."""
    if not isinstance(z, dict):
        raise _err(p, "zip", "must be a table of dotted fields and their lists of values (all of one length)")
    n = None
    for k, v in z.items():
        if not isinstance(v, list) or not v:
            raise _err(p, f"zip.{k}", "must be a non-empty list of values")
        if n is not None and len(v) != n:
            first = next(iter(z))
            raise _err(p, f"zip.{k}", f"has {len(v)} values where zip.{first} has {n}; zipped lists have one length")
        n = len(v)
    return z


def _points_list(p: Path, pts: Any) -> list[dict[str, Any]]:
    """A sweep's ``[[points]]``, checked: tables that set the same fields."""
    if not isinstance(pts, list) or not all(isinstance(x, dict) for x in pts):
        raise _err(p, "points", "must be a list of tables ([[points]]) of dotted fields and values")
    for i, pt in enumerate(pts):
        if not pt:
            raise _err(p, f"points[{i}]", "sets no field; each point sets the fields it varies")
        if set(pt) != set(pts[0]):
            fields = ", ".join(sorted(pts[0]))
            raise _err(p, f"points[{i}]", f"sets {', '.join(sorted(pt))}; every point sets the same fields as "
                       f"the first ({fields})")
    return [{k: pt[k] for k in pts[0]} for pt in pts]


class Jobs:
    """The runs of a sweep, in order (point by point, seeds 1..runs in each),
    built as they are iterated. ``len()`` is known without building them."""

    def __init__(self, sweep: Sweep, quick: bool) -> None:
        self.sweep, self.quick = sweep, quick

    def __len__(self) -> int:
        return self.sweep.count(self.quick)

    def __iter__(self) -> Iterator[Job]:
        runs = self.sweep.quick_runs if self.quick else self.sweep.runs
        for params, doc in self.sweep.point_docs(self.quick):
            for seed in range(1, runs + 1):
                yield Job(doc, seed, params)

    def __getitem__(self, index: int | slice) -> Job | list[Job]:
        """One run by its place in the order (negative from the end), or a
        list of runs for a slice; only the points they belong to are built."""
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"run {index} of a sweep of {n} runs")
        index %= n
        runs = self.sweep.quick_runs if self.quick else self.sweep.runs
        params, doc = next(itertools.islice(self.sweep.point_docs(self.quick), index // runs, None))
        return Job(doc, index % runs + 1, params)


def run_jobs(
    jobs: Iterable[Job],
    *,
    workers: int | None = None,
    describe: str = "runs",
    keep: Callable[[Job, RunResult], Any] | None = None,
    show_progress: bool = True,
    tolerate: tuple[type[BaseException], ...] = (),
    executor: Any = None,
    tables: tuple[str, ...] | None = None,
) -> list[Any]:
    """Runs every job and returns ``keep(job, result)`` for each, in job order
    (default: the result). Runs go to `executor` (see
    :mod:`torrentlab.executors`; default: a thread pool of `workers`,
    defaulting to every core); `tables` names the tables ``keep`` reads,
    so that a remote executor sends back only those (default: all).

    Jobs are taken from ``jobs`` as workers free up (a few per worker
    waiting), so a lazy sequence stays lazy. On any error or interrupt
    (Ctrl-C), the runs in progress are cancelled, the queued ones dropped, and
    the exception comes out within a fraction of a second. A run that raises
    one of `tolerate` is handed to ``keep`` as that exception instead, and
    the others go on. ``keep`` runs where the result is (a local run's
    thread, or this thread for a remote run), so it must be safe to call
    from several threads at once."""
    from torrentlab.executors import Local
    from torrentlab.progress import sweep_bar

    keep = keep or (lambda job, res: res)

    def finish(job: Job, result: Callable[[], RunResult]) -> tuple[Any, bool, float]:
        """What is kept of `job`, whether it failed, and its simulated seconds."""
        try:
            res = result()
        except tolerate as e:
            return keep(job, e), True, 0.0
        return keep(job, res), False, res.perf.get("sim_seconds", 0.0)

    ex = executor if executor is not None else Local(workers)
    done: list[tuple[int, Any]] = []
    todo = enumerate(jobs)
    pending: dict[Any, tuple[int, Job]] = {}
    with sweep_bar(describe, show_progress) as bar:
        bar.start(len(jobs) if isinstance(jobs, Sized) else None)
        try:
            while True:
                for i, job in itertools.islice(todo, max(0, ex.in_flight - len(pending))):
                    pending[ex.submit(job, finish, tables, bar.watch(i))] = (i, job)
                if not pending:
                    break
                for handle in ex.wait(pending):
                    i, job = pending.pop(handle)
                    kept, failed, sim_s = ex.result(handle)
                    done.append((i, kept))
                    bar.finished(sim_s, failed, i)
        except BaseException:
            ex.stop(list(pending))
            raise
        finally:
            if executor is None:
                ex.close()
    done.sort(key=lambda x: x[0])
    return [r for _, r in done]


def summary_with_params(job: Job, res: RunResult) -> pd.DataFrame:
    """A run's one-row summary, with the job's grid parameters as extra columns
    (use as ``keep=`` in :func:`run_jobs` to keep only summaries)."""
    return res.summary.assign(**{k: v if isinstance(v, (int, float, str, bool)) else label(v) for k, v in job.params})
