"""torrentlab: packet-level, deterministic BitTorrent and congestion-control experiments.

>>> import torrentlab
>>> res = torrentlab.run("scenarios/rossi2010/a-newreno-vs-ledbat.toml")
>>> res.summary[["jain_index", "efficiency", "loss_rate"]]

See ``docs/`` for the scenario format, every metric and its unit, and how each
experiment maps to its study.
"""

from torrentlab._core import CancelToken, __git_commit__, __version__
from torrentlab.api import RunResult, run, validate
from torrentlab.exceptions import (
    Cancelled,
    ClusterError,
    OutputError,
    QueryError,
    ScenarioError,
    SimulationError,
    TorrentlabError,
)

__all__ = [
    "__version__",
    "__git_commit__",
    "run",
    "validate",
    "RunResult",
    "CancelToken",
    "TorrentlabError",
    "ScenarioError",
    "OutputError",
    "QueryError",
    "ClusterError",
    "load",
    "query",
    "Cancelled",
    "SimulationError",
]


def load(result, table=None):
    """One table of a result directory as a DataFrame, or every table by name
    (see :func:`torrentlab.store.load`)."""
    from torrentlab.store import load as _load

    return _load(result, table)


def query(result, sql):
    """SQL (DuckDB) over a result directory's tables, as a DataFrame (see
    :func:`torrentlab.store.query`)."""
    from torrentlab.store import query as _query

    return _query(result, sql)
