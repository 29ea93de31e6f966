"""Checks of what the Python API is given, before anything reaches the engine.

Every bad input is a :class:`torrentlab.ScenarioError` naming a field, in the
style of the engine's own messages (``<dict>: flows[1].start: ...``), never a
``TypeError``, an ``OverflowError`` or "not valid JSON" without the field.

A dict scenario is walked and turned into plain JSON: tables (mappings) with
string keys, arrays (lists and tuples), strings, booleans, whole numbers from
-2**63 to 2**64-1 (the engine range-checks each field further), finite floats,
and ``None``. NumPy scalars count as the Python number they hold.
"""

from __future__ import annotations

import inspect
import json
import math
import os
from collections.abc import Mapping
from typing import Any

from torrentlab.exceptions import ScenarioError

#: What the engine's JSON reader holds exactly: i64 and u64.
INT_MIN = -(2**63)
INT_MAX = 2**64 - 1
SEED_MAX = 2**64 - 1
#: Deeper than any scenario: past it the document is refused (or contains itself).
MAX_DEPTH = 64

#: Where the run's arguments (not the scenario document) are wrong.
ARGUMENT = "<argument>"
DICT = "<dict>"

ALLOWED = "tables (dicts) with string keys, lists, strings, booleans, whole numbers, finite floats"


def error(file: str, field: str, detail: str) -> ScenarioError:
    """A ScenarioError reading ``FILE: FIELD: DETAIL``, with the three parts as attributes."""
    e = ScenarioError(f"{file}: {field}: {detail}")
    e.file, e.field, e.detail = file, field, detail
    return e


def _kind(value: Any) -> str:
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _numpy_scalar(value: Any) -> Any:
    """A NumPy bool/int/float scalar as the Python value it holds; anything else unchanged."""
    mod = type(value).__module__
    if mod == "numpy" and hasattr(value, "item") and getattr(value, "shape", None) == ():
        item = value.item()
        if isinstance(item, (bool, int, float)):
            return item
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def plain(doc: Mapping[str, Any], file: str = DICT) -> dict[str, Any]:
    """The scenario ``doc`` as plain JSON-ready data, or a ScenarioError naming the
    first field (in document order) that JSON or the engine cannot take."""
    return _walk(doc, "", file, 0, set())


def _walk(value: Any, path: str, file: str, depth: int, open_ids: set[int]) -> Any:
    here = path or "(top level)"
    value = _numpy_scalar(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not INT_MIN <= value <= INT_MAX:
            raise error(file, here, f"the whole number {value} is out of range: "
                                    f"a number must lie between {INT_MIN} and {INT_MAX}")
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise error(file, here, f"{value} is not a finite number (a scenario cannot hold NaN or infinity)")
        return float(value)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise error(file, here, f"is not valid Unicode text (a lone surrogate at offset {e.start})") from None
        return str(value)
    if isinstance(value, (Mapping, list, tuple)):
        if id(value) in open_ids:
            raise error(file, here, "contains itself (a reference cycle); a scenario is a tree")
        if depth >= MAX_DEPTH:
            raise error(file, here, f"is nested more than {MAX_DEPTH} tables or lists deep")
        open_ids.add(id(value))
        try:
            if isinstance(value, Mapping):
                out: dict[str, Any] = {}
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise error(file, here, f"has the key {key!r} ({_kind(key)}); every key must be a string")
                    out[key] = _walk(item, _join(path, key), file, depth + 1, open_ids)
                return out
            return [_walk(item, f"{path}[{i}]", file, depth + 1, open_ids) for i, item in enumerate(value)]
        finally:
            open_ids.discard(id(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise error(file, here, f"is {_kind(value)}; write text as a str (e.g. \"10 MB\"), not bytes")
    raise error(file, here, f"is a {_kind(value)}, which a scenario cannot hold; allowed: {ALLOWED}")


def source(scenario: Any) -> tuple[str, str | None, str]:
    """``(source, text, format)`` for the engine: a path as ``file``, a mapping as
    checked JSON text; a ScenarioError for anything else."""
    if isinstance(scenario, Mapping):
        return DICT, json.dumps(plain(scenario), allow_nan=False), "json"
    if isinstance(scenario, (str, os.PathLike)):
        path = os.fspath(scenario)
        if not isinstance(path, str):
            raise error(ARGUMENT, "scenario", f"a path must be text (str), not {_kind(path)}")
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise error(path.encode("utf-8", "backslashreplace").decode("utf-8"), "(file)",
                        "the file name is not valid UTF-8; rename the file") from None
        if "\0" in path:
            raise error(path.replace("\0", "\\0"), "(file)", "the file name contains a NUL character")
        return path, None, "file"
    raise error(ARGUMENT, "scenario", f"must be a path (str or os.PathLike) or a dict, not {_kind(scenario)}")


def seed(value: Any) -> int | None:
    """``run(seed=...)``: None, or a whole number from 0 to 2**64-1."""
    if value is None:
        return None
    value = _numpy_scalar(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(ARGUMENT, "seed", f"must be a whole number from 0 to {SEED_MAX}, not {_kind(value)} {value!r}")
    if not 0 <= value <= SEED_MAX:
        raise error(ARGUMENT, "seed", f"must be a whole number from 0 to {SEED_MAX}, not {value}")
    return int(value)


def progress(value: Any) -> Any:
    """``run(progress=...)``: None, or a callable taking the simulated time in
    seconds and, if it takes a second argument, the share of the run's work
    done (see :func:`torrentlab.run`). Returned as a callable of both."""
    if value is None:
        return None
    if not callable(value):
        raise error(ARGUMENT, "progress", f"must be a callable taking the simulated time in seconds, "
                                          f"or None; not {_kind(value)}")
    try:
        inspect.signature(value).bind(0.0, None)
        return value
    except (TypeError, ValueError):  # one argument (or no signature to read): the time only
        return lambda t, done: value(t)
