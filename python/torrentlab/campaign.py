"""Campaigns: a sweep whose runs are kept one file each as they finish, so
that a sweep stopped at any moment (Ctrl-C, SIGTERM, SIGKILL, a crash) and
run again into the same place runs only what is missing.

A sweep's result directory holds, besides ``runs.parquet`` and
``peers.parquet`` or ``flows.parquet`` (every run, in the sweep's order):

- ``runs/KEY.parquet``: one run's summary row, with its swept parameters, its
  seed, its scenario (JSON), the torrentlab version and git commit, the
  process that ran it (``worker``, ``host:pid``) and its wall time;
- ``peers/KEY.parquet`` or ``flows/KEY.parquet``: that run's second table;
- ``failed/KEY.json``: a run the engine failed on, with the error (run again
  by the next sweep into the same place);
- ``campaign.json``: the sweep file's name and the torrentlab version.

``KEY`` is a digest of the run's whole scenario and its seed: the same
scenario and seed give the same result, so a run is never made twice. Each
file is written under a temporary name and renamed when complete.

While a sweep runs, all of this is in the result's hidden partial directory
(see :mod:`torrentlab.output`). A sweep that stops leaves that directory with
the runs that finished; the next sweep of the same sweep file into the same
place takes it over. A finished result of the same sweep file is extended
the same way (more seeds, more points): its runs are linked into the new
result, not run again. A campaign refuses to mix torrentlab versions unless
``mix_versions`` is given.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from torrentlab.exceptions import OutputError, SimulationError
from torrentlab.output import _claim, _partial, check_output, is_result
from torrentlab.sweep import Job, label, run_jobs

#: The campaign's identity file, in the partial directory and the result.
CAMPAIGN = "campaign.json"
#: Per-run tables and failures, each a directory of KEY files.
RUNS, FAILED = "runs", "failed"
SECOND = ("peers", "flows")


def run_key(job: Job) -> str:
    """The key of a run: a digest of its whole scenario and its seed."""
    doc = json.dumps({"scenario": job.scenario, "seed": job.seed}, sort_keys=True, default=str)
    return hashlib.sha256(doc.encode()).hexdigest()[:24]


def _version() -> str:
    from torrentlab import __version__

    return __version__


def _commit() -> str:
    from torrentlab import __git_commit__

    return __git_commit__


def _identity(d: Path) -> dict[str, Any] | None:
    try:
        return json.loads((d / CAMPAIGN).read_text())
    except (OSError, ValueError):
        return None


def _check_version(d: Path, ident: dict[str, Any], mix_versions: bool) -> None:
    if ident.get("torrentlab") != _version() and not mix_versions:
        raise OutputError(d, f"holds runs of torrentlab {ident.get('torrentlab')}, not {_version()}; "
                             "use --mix-versions to add runs of this version to it, or another directory")


def done_keys(d: Path) -> set[str]:
    """Keys of the runs finished in directory `d`."""
    return {p.name.removesuffix(".parquet") for p in (d / RUNS).glob("*.parquet")}


def _write_atomic(path: Path, write) -> None:
    path.parent.mkdir(exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}"
    write(tmp)
    os.replace(tmp, path)


def _link_runs(src: Path, dst: Path) -> None:
    """Links (or copies) the finished runs of result `src` into `dst`."""
    for sub in (RUNS, *SECOND):
        if not (src / sub).is_dir():
            continue
        (dst / sub).mkdir(exist_ok=True)
        for f in (src / sub).glob("*.parquet"):
            if not (dst / sub / f.name).exists():
                try:
                    os.link(f, dst / sub / f.name)
                except OSError:
                    shutil.copy2(f, dst / sub / f.name)


@contextmanager
def campaign_dir(out_dir: str | os.PathLike[str], sweep_name: str, *, force: bool = False,
                 mix_versions: bool = False) -> Iterator[tuple[Path, bool]]:
    """Yields the locked partial directory of the campaign `sweep_name` at
    `out_dir`, holding every run finished before (in an earlier, stopped
    sweep, or in the result there), and whether the result there may be
    replaced. Publish it with :func:`torrentlab.output.publish` inside the
    block; when the block fails or is interrupted the partial directory
    stays, with its finished runs, for the next sweep (unless it has none)."""
    out = Path(out_dir)
    ident = {"sweep": sweep_name, "torrentlab": _version()}
    extend = False
    if is_result(out):
        there = _identity(out)
        if there is not None and there.get("sweep") == sweep_name:
            _check_version(out, there, mix_versions)
            extend = True
    out = check_output(out, force=force or extend)
    partial = _partial(out)

    def adopt(p: Path) -> bool:
        mine = _identity(p)
        if mine is None or mine.get("sweep") != sweep_name:
            return False
        _check_version(out, mine, mix_versions)
        return True

    fd = _claim(partial, adopt)
    try:
        if not (partial / CAMPAIGN).exists():
            (partial / CAMPAIGN).write_text(json.dumps(ident, indent=2) + "\n")
        if extend:
            _link_runs(out, partial)
        yield partial, force or extend
    except BaseException:
        if not done_keys(partial):
            shutil.rmtree(partial, ignore_errors=True)
        raise
    finally:
        os.close(fd)


def _with(table, columns: dict[str, Any]):
    """`table` (Arrow) with a column of each constant in `columns`, replacing
    a column of the same name where it has one (as ``DataFrame.assign``)."""
    import pyarrow as pa

    for name, value in columns.items():
        col = pa.array([value] * table.num_rows)
        i = table.schema.get_field_index(name)
        table = table.set_column(i, name, col) if i >= 0 else table.append_column(name, col)
    return table


def keep_run(partial: Path, made: dict[str, tuple[Any, Any]] | None = None):
    """A ``keep=`` for :func:`torrentlab.sweep.run_jobs` that writes each
    finished run (or the engine's failure on it) into `partial` at once and
    returns its key. Tables stay in Arrow from the engine to the file (a
    round trip through pandas cost more than a small run). With `made`, the
    two tables written are also kept there by key, so that :func:`collect`
    need not read them back."""
    import pyarrow.parquet as pq

    def write(table):
        # A run's files are a few rows each: no dictionary pages, no
        # statistics (worth nothing at this size, and half of a write's cost).
        return lambda p: pq.write_table(table, p, compression="zstd", use_dictionary=False, write_statistics=False)

    def keep(job: Job, res) -> tuple[str, str | None]:
        key = run_key(job)
        extra = {k: label(v) for k, v in job.params}
        if isinstance(res, BaseException):
            doc = {"params": extra, "seed": job.seed, "error": f"{type(res).__name__}: {res}",
                   "scenario": job.scenario, "torrentlab": _version(), "commit": _commit()}
            _write_atomic(partial / FAILED / f"{key}.json",
                          lambda p: p.write_text(json.dumps(doc, indent=2, default=str) + "\n"))
            return key, None
        second = "peers" if res.kind == "swarm" else "flows"
        more = _with(res.tables[second], {"seed": job.seed, **extra})
        _write_atomic(partial / second / f"{key}.parquet", write(more))
        row = _with(res.tables["summary"], {
            **extra, "scenario": json.dumps(job.scenario, sort_keys=True, default=str),
            "torrentlab_version": _version(), "torrentlab_commit": _commit(), "worker": res.worker,
            "wall_s": float(res.perf.get("wall_seconds", float("nan")))})
        _write_atomic(partial / RUNS / f"{key}.parquet", write(row))
        (partial / FAILED / f"{key}.json").unlink(missing_ok=True)
        if made is not None:
            made[key] = (row, more)
        return key, second

    return keep


def run_campaign(jobs, partial: Path, *, workers: int | None = None, describe: str, show_progress: bool,
                 executor=None, made: dict[str, tuple[Any, Any]] | None = None) -> list[str]:
    """Runs the jobs of `jobs` not finished in `partial` (on `executor`, by
    default a thread pool of `workers`), each written as it finishes (and
    its tables kept in `made`, see :func:`keep_run`); returns the keys of
    the runs that failed."""
    done = done_keys(partial)
    todo = _Missing(jobs, done)
    results = run_jobs(todo, workers=workers, describe=describe, keep=keep_run(partial, made),
                       show_progress=show_progress, tolerate=(SimulationError,), executor=executor,
                       tables=("summary", *SECOND))
    return [key for key, second in results if second is None]


class _Missing:
    """The jobs whose key is not among `done`, lazily, with their count."""

    def __init__(self, jobs, done: set[str]) -> None:
        self.jobs, self.done = jobs, done
        self.n = sum(1 for j in jobs if run_key(j) not in done) if done else len(jobs)

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        return (j for j in self.jobs if run_key(j) not in self.done)


def collect(partial: Path, jobs, made: dict[str, tuple[Any, Any]] | None = None) -> tuple[Any, Any, str]:
    """The campaign's tables in the sweep's order: every finished run of
    `jobs` (runs, and peers or flows), from `made` for the runs made now
    and read from the per-run files for the others; and the name of the
    second table. Runs of jobs no longer in the sweep, and files a killed
    writer left half-written, are removed from `partial`."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    made = made or {}

    def read_all(keys: list[str], sub: str, which: int) -> pd.DataFrame:
        # One conversion to pandas for every run (Arrow concatenates them).
        tables = [made[k][which] if k in made else pq.read_table(partial / sub / f"{k}.parquet") for k in keys
                  if k in made or (partial / sub / f"{k}.parquet").exists()]
        return pa.concat_tables(tables, promote_options="default").to_pandas() if tables else pd.DataFrame()

    keys = [run_key(j) for j in jobs]
    wanted = set(keys)
    for sub in (RUNS, *SECOND, FAILED):
        for f in (partial / sub).glob("*"):
            # Half-written files of a killed writer, and runs no longer swept.
            if f.name.startswith(".") or f.name.split(".")[0] not in wanted:
                f.unlink()
    have = [k for k in keys if (partial / RUNS / f"{k}.parquet").exists()]
    second = next((s for s in SECOND if (partial / s).is_dir()), "flows")
    return read_all(have, RUNS, 0), read_all(have, second, 1), second

