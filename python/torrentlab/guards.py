"""Resource guards: a run that would not fit in memory is refused before it
starts, naming the scenario field that drives its size.

The engine estimates what a scenario needs (``validate(...)["memory_bytes"]``,
with the field that drives the largest part in ``["memory_field"]``). A run
is refused when that estimate, times the runs that go on at once, exceeds the
limit: ``max_memory`` when given, else the memory the system has available
(``MemAvailable`` in ``/proc/meminfo``).
"""

from __future__ import annotations

from typing import Any

from torrentlab import _core
from torrentlab.inputs import error


def parse_size(text: str) -> int:
    """Parses a memory size such as ``"8 GiB"`` or ``"500 MB"`` into bytes,
    with the units and limits of a scenario's sizes (the engine's parser).
    Raises ValueError with a sentence naming the allowed units."""
    n = _core.parse_size(text)
    if n < 1:
        raise ValueError(f"must be at least 1 B, not {text!r}")
    return n


def available_memory() -> int | None:
    """The memory the system can give a new process without swapping (bytes),
    or None where that is not known."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _size(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def check_memory(info: dict[str, Any], file: str, *, max_memory: int | None = None, at_once: int = 1) -> None:
    """Raises a ScenarioError naming the field that drives the estimate when
    `at_once` runs of the scenario described by `info` (a ``validate`` result)
    would need more than `max_memory` (default: the memory available)."""
    need = info.get("memory_bytes")
    if not need:
        return
    limit, what = (max_memory, "the limit set with max_memory") if max_memory else (available_memory(), "available")
    if limit is None:
        return
    total = need * max(1, at_once)
    if total > limit:
        field = info.get("memory_field") or "(scenario)"
        runs = f" x {at_once} runs at once" if at_once > 1 else ""
        raise error(
            file,
            field,
            f"the run needs about {_size(need)} of memory{runs}, more than the {_size(limit)} {what}; "
            f"make {field} smaller{' or run fewer at once (-j)' if at_once > 1 else ''}",
        )
