"""The Python API: run a scenario, get DataFrames back, write Parquet."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from torrentlab import _core, inputs
from torrentlab._core import CancelToken
from torrentlab.guards import check_memory
from torrentlab.output import atomic_dir

if TYPE_CHECKING:  # pandas is imported when a table is read, not to start the CLI
    import pandas as pd

ScenarioLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]

#: Rows of a growing log held in memory before they go to disk (see :func:`run`).
SPILL_ROWS = 1 << 20

#: The tables a run produces, by scenario kind, in the order they are written.
TABLES = {
    "dumbbell": ("summary", "flows", "timeseries", "queue"),
    "swarm": (
        "summary",
        "peers",
        "connections",
        "haves",
        "chokes",
        "sends",
        "send_gaps",
        "payload_lengths",
        "transports",
        "uplinks",
        "uplink_queue",
        "uplink_delays",
        "piece_spread",
    ),
    # What a household run (a swarm with [household]) writes after a swarm's.
    "household": ("ping", "voip", "transfers", "transfer_samples"),
}


def _source(scenario: ScenarioLike) -> tuple[str, str | None, str]:
    # A path, or a dict checked field by field (see torrentlab.inputs): ScenarioError otherwise.
    return inputs.source(scenario)


def validate(scenario: ScenarioLike) -> dict[str, Any]:
    """Checks a scenario without running it; returns a short description.

    Raises :class:`torrentlab.ScenarioError` naming the file, the field and what
    is allowed.
    """
    return dict(_core.validate(*_source(scenario)))


def _arrow(columns: list) -> pa.Table:
    arrays, names = [], []
    for name, kind, data in columns:
        if kind == "f64":
            # A missing value (NaN in the engine's tables) is null in Arrow and
            # Parquet, so SQL sees NULL; pandas reads it back as NaN.
            arrays.append(pa.array(np.frombuffer(data, dtype="<f8"), from_pandas=True))
        elif kind == "i64":
            arrays.append(pa.array(np.frombuffer(data, dtype="<i8")))
        else:
            arrays.append(pa.array(data, type=pa.string()))
        names.append(name)
    return pa.Table.from_arrays(arrays, names=names)


@dataclass
class RunResult:
    """The tables of one run (see docs/metrics.md for every column and unit).

    A dumbbell run has ``summary`` (fairness, efficiency, loss, queue over the
    summary window), ``flows``, ``timeseries`` and ``queue``. A swarm run has
    ``summary``, ``peers`` (completion times), ``connections``, ``haves``,
    ``chokes``, ``sends``, ``send_gaps``, ``payload_lengths``, ``transports``
    (bytes by transport and kind), ``uplinks``, ``uplink_queue``, ``uplink_delays`` and ``piece_spread``; a
    household run also ``ping``, ``voip``, ``transfers`` and ``transfer_samples``. ``perf``: events and wall time.
    ``captures``: the files of a swarm's ``[capture]`` (``peer-N.pcapng`` and
    ``capture.json``, see docs/capture.md) by name, written into ``capture/``.
    """

    name: str
    tables: dict[str, pa.Table]
    perf: dict[str, float] = field(default_factory=dict)
    kind: str = "dumbbell"
    #: The process that ran it, ``host:pid`` (a Ray worker's, on a cluster).
    worker: str = ""
    #: ``[capture]``'s files by name (empty without it).
    captures: dict[str, bytes] = field(default_factory=dict)

    def __getattr__(self, table: str) -> pd.DataFrame:
        # Every table is also an attribute: ``res.peers``, ``res.haves``...
        tables = self.__dict__.get("tables", {})
        if table in tables:
            return tables[table].to_pandas()
        raise AttributeError(table)

    def _seed(self) -> int | None:
        if "summary" in self.tables and "seed" in self.tables["summary"].column_names:
            return int(self.tables["summary"].column("seed")[0].as_py())
        return None

    def frame(self, table: str) -> pd.DataFrame:
        return self.tables[table].to_pandas()

    @property
    def summary(self) -> pd.DataFrame:
        return self.frame("summary")

    @property
    def flows(self) -> pd.DataFrame:
        return self.frame("flows")

    @property
    def timeseries(self) -> pd.DataFrame:
        return self.frame("timeseries")

    @property
    def queue(self) -> pd.DataFrame:
        return self.frame("queue")

    def write(self, out_dir: str | os.PathLike[str], *, force: bool = False) -> Path:
        """Writes every table as ``<table>.parquet`` (and ``perf.json``) into
        ``out_dir``, atomically: the directory appears complete or not at all,
        with a ``manifest.json`` that marks it as a torrentlab result.

        Refuses (:class:`torrentlab.OutputError`) a directory that exists and
        is not an empty one or a torrentlab result, and replaces an older
        torrentlab result only with ``force=True``. See
        :mod:`torrentlab.output`."""
        with atomic_dir(out_dir, force=force, **self.manifest()) as tmp:
            self.write_into(tmp)
        return Path(out_dir)

    def manifest(self) -> dict[str, Any]:
        """What the manifest of this run's result directory says of it."""
        return {"kind": "run", "scenario": self.name, "scenario_kind": self.kind, "seed": self._seed()}

    def write_into(self, tmp: Path) -> None:
        """Writes the tables, ``perf.json`` and any captures (into
        ``capture/``) into the existing directory `tmp` (for use inside
        :func:`torrentlab.output.atomic_dir`)."""
        for name in self.tables:
            pq.write_table(self.tables[name], tmp / f"{name}.parquet", compression="zstd")
        if self.captures:
            (tmp / "capture").mkdir(exist_ok=True)
            for name, data in self.captures.items():
                (tmp / "capture" / name).write_bytes(data)
        # Wall time differs run to run: kept apart from the deterministic tables.
        (tmp / "perf.json").write_text(json.dumps(self.perf, indent=2, sort_keys=True) + "\n")


class _Spool:
    """The chunks a run hands over of its growing logs (``queue``,
    ``timeseries``, ``haves``, ``chokes``, ``sends``, ``uplink_queue``), appended to one Arrow
    IPC file per table in a hidden directory as they come. At the end of the
    run a table's file is memory-mapped and unlinked: its rows are read from
    the page cache, not held in the process's own memory, and vanish with it."""

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        self.parent = os.fspath(directory) if directory is not None else None
        self.dir: str | None = None
        self.files: dict[str, tuple[str, Any, Any]] = {}

    def add(self, name: str, columns: list) -> None:
        chunk = _arrow(columns)
        if name not in self.files:
            if self.dir is None:
                self.dir = tempfile.mkdtemp(prefix=".torrentlab-spill-", dir=self.parent)
            path = os.path.join(self.dir, f"{name}.arrow")
            sink = pa.OSFile(path, "wb")
            self.files[name] = (path, sink, pa.ipc.new_file(sink, chunk.schema))
        self.files[name][2].write_table(chunk)

    def finish(self, name: str, rest: pa.Table) -> pa.Table:
        """The whole table: its spilled chunks, then `rest`."""
        if name not in self.files:
            return rest
        path, sink, writer = self.files.pop(name)
        writer.write_table(rest)
        writer.close()
        sink.close()
        table = pa.ipc.open_file(pa.memory_map(path, "r")).read_all()
        os.unlink(path)  # the mapping keeps the rows until the table is freed
        return table

    def close(self) -> None:
        for _, sink, writer in self.files.values():
            writer.close()
            sink.close()
        self.files.clear()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)


def run(
    scenario: ScenarioLike,
    *,
    seed: int | None = None,
    progress: Callable[..., object] | None = None,
    cancel: CancelToken | None = None,
    max_memory: int | None = None,
    spill_dir: str | os.PathLike[str] | None = None,
) -> RunResult:
    """Runs a scenario (a TOML file path or a dict of the same shape).

    ``seed`` overrides ``run.seed``. ``progress`` is called with the simulated
    time in seconds at most every 50 ms of wall time and once at the end; a
    callable that takes a second argument also gets the share of the run's
    work done, 0 to 1 (a swarm: the pieces its leechers hold over those they
    need, so it reaches 1 when the last leecher finishes, long before the
    duration cap), or None for a run that lasts its duration (a dumbbell).
    An exception it raises stops the run and comes out of ``run``. The GIL is
    released while the engine runs, so runs in threads proceed in parallel.

    Ctrl-C (SIGINT) stops a run on the main thread within a fraction of a
    second, raising ``KeyboardInterrupt``. ``cancel``, a :class:`CancelToken`,
    stops it from any thread (``token.cancel()``), raising
    :class:`torrentlab.Cancelled`.

    A run whose estimated memory exceeds ``max_memory`` (bytes; default: the
    memory the system has available) is refused before it starts with a
    :class:`torrentlab.ScenarioError` naming the field that drives it.

    Logs that grow with simulated time (``queue``, ``timeseries``, ``haves``,
    ``chokes``, ``sends``, ``uplink_queue``) go to disk every :data:`SPILL_ROWS` rows, into a
    hidden directory in ``spill_dir`` (default: the system's temporary
    directory, ``TMPDIR``); the returned tables read them from there, memory
    mapped, so a long run's logs need disk, not memory.
    """
    source, text, fmt = _source(scenario)
    seed, progress = inputs.seed(seed), inputs.progress(progress)
    check_memory(_core.validate(source, text, fmt), source, max_memory=max_memory)
    spool = _Spool(spill_dir)
    try:
        raw = _core.run(source, text, fmt, seed, progress, cancel, spool.add, SPILL_ROWS)
        tables = {t: spool.finish(t, _arrow(raw[t])) for t in raw["tables"]}
    finally:
        spool.close()
    name = tables["summary"].column("scenario")[0].as_py()
    return RunResult(name=name, tables=tables, perf=dict(raw["perf"]), kind=raw["kind"],
                     worker=f"{socket.gethostname()}:{os.getpid()}", captures=dict(raw.get("captures", [])))
