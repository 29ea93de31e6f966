"""Errors raised by torrentlab.

Every error the engine can raise is a :class:`TorrentlabError`:

- :class:`ScenarioError`: the scenario cannot be run. ``str(err)`` reads
  ``FILE: FIELD: what is wrong and what is allowed``; the parts are also in
  ``err.file``, ``err.field`` and ``err.detail``.
- :class:`SimulationError`: the engine failed on a valid scenario (a bug; please
  report it with the scenario).
"""

from torrentlab._core import ScenarioError, SimulationError, TorrentlabError

__all__ = ["TorrentlabError", "ScenarioError", "SimulationError"]
