"""torrentlab: packet-level, deterministic BitTorrent and congestion-control experiments.

>>> import torrentlab
>>> res = torrentlab.run("scenarios/rossi2010/a-newreno-vs-ledbat.toml")
>>> res.summary[["jain_index", "efficiency", "loss_rate"]]

See ``docs/`` for the scenario format, every metric and its unit, and how each
experiment maps to its study.
"""

from torrentlab._core import CancelToken, __version__
from torrentlab.api import RunResult, run, validate
from torrentlab.exceptions import Cancelled, OutputError, ScenarioError, SimulationError, TorrentlabError

__all__ = [
    "__version__",
    "run",
    "validate",
    "RunResult",
    "CancelToken",
    "TorrentlabError",
    "ScenarioError",
    "OutputError",
    "Cancelled",
    "SimulationError",
]
