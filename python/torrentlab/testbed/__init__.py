"""A real-client testbed: swarm scenarios on real libtorrent peers in
network namespaces, written as the simulator's tables (docs/testbed.md).

    torrentlab.testbed.run("swarm.toml", "out/")     # needs root and libtorrent
    torrentlab.testbed.cleanup()                     # removes whatever a killed run left

Modules: :mod:`.plan` (scenario -> peers, refusals), :mod:`.netns`
(namespaces, veths, bridge, qdiscs, qdisc statistics), :mod:`.peer` (one
libtorrent peer process), :mod:`.orchestrate` (orchestration), :mod:`.tables`
(result tables), :mod:`.ccshim` (per-socket congestion control).
"""

from __future__ import annotations

from torrentlab.testbed.orchestrate import cleanup, run
from torrentlab.testbed.plan import plan

__all__ = ["run", "cleanup", "plan"]
