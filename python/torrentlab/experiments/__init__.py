"""The published experiments torrentlab reproduces, one module each.

Each module has ``reproduce(out_dir, quick=False, workers=None, show_progress=True,
force=False, executor=None) -> Report`` (runs on `executor`, see
:mod:`torrentlab.executors`; default a thread pool of `workers`) and
``render(report, title)`` (a rich table of its summary).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

EXPERIMENTS = {
    "bufferbloat-voip": "torrentlab.experiments.bufferbloat_voip",
    "rao2010": "torrentlab.experiments.rao2010",
    "rossi2010": "torrentlab.experiments.rossi2010",
    "testa2012": "torrentlab.experiments.testa2012",
    "testa2013": "torrentlab.experiments.testa2013",
}


def scenario_dir(experiment: str) -> Path:
    """The shipped scenario files of an experiment."""
    return Path(str(files("torrentlab") / "scenarios" / experiment))
