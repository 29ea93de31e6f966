"""Errors raised by torrentlab.

Every error torrentlab raises is a :class:`TorrentlabError`:

- :class:`ScenarioError`: the scenario cannot be run. ``str(err)`` reads
  ``FILE: FIELD: what is wrong and what is allowed``; the parts are also in
  ``err.file``, ``err.field`` and ``err.detail``.
- :class:`OutputError`: a result cannot be written where it was asked to go
  (a directory torrentlab did not write, a read-only file system, another
  run writing there). Raised before anything runs. ``str(err)`` reads
  ``PATH: what is wrong``.
- :class:`QueryError`: a result cannot be read (not a torrentlab result, no
  such table) or a query over it fails. ``str(err)`` reads ``PATH: what is
  wrong``.
- :class:`ClusterError`: a sweep cannot run on the Ray cluster asked for (Ray
  not installed, no cluster at the address, a node with another torrentlab).
- :class:`TestbedError`: the real-peer testbed (``torrentlab testbed``) cannot
  run here (not root, no ``ip netns``) or cannot run this scenario on this
  kernel (propagation delay, a missing congestion control).
- :class:`Cancelled`: a run stopped through its :class:`CancelToken`.
- :class:`SimulationError`: the engine failed on a valid scenario (a bug; please
  report it with the scenario).
"""

from __future__ import annotations

import os

from torrentlab._core import Cancelled, ScenarioError, SimulationError, TorrentlabError


class OutputError(TorrentlabError):
    """A result cannot be written to ``path``; ``detail`` says why."""

    def __init__(self, path: str | os.PathLike[str], detail: str) -> None:
        self.path = os.fspath(path)
        self.detail = detail
        super().__init__(f"{self.path}: {detail}")


class QueryError(TorrentlabError):
    """A result at ``path`` cannot be read or queried; ``detail`` says why."""

    def __init__(self, path: str | os.PathLike[str], detail: str) -> None:
        self.path = os.fspath(path)
        self.detail = detail
        super().__init__(f"{self.path}: {detail}")


class TestbedError(TorrentlabError):
    """The real-peer testbed cannot run here or cannot run this scenario (not
    root, no network namespaces, a kernel without what the scenario needs);
    ``str(err)`` says why. The command line exits with 2."""


class ClusterError(TorrentlabError):
    """A sweep cannot run on the Ray cluster asked for; the message says why."""


__all__ = ["TorrentlabError", "ScenarioError", "OutputError", "QueryError", "ClusterError", "TestbedError",
           "Cancelled", "SimulationError"]
