"""Type stubs of the Rust extension module (crates/python)."""

from collections.abc import Callable
from typing import Literal, TypedDict

__version__: str
__git_commit__: str

class TorrentlabError(Exception): ...

class ScenarioError(TorrentlabError):
    file: str
    field: str
    detail: str

class SimulationError(TorrentlabError): ...

class ScenarioInfo(TypedDict):
    name: str
    description: str
    seed: int
    duration_s: float
    flows: int
    controllers: list[str]
    bottleneck_bps: int | None

class Perf(TypedDict):
    events: int
    data_packets_delivered: int
    sim_seconds: float
    wall_seconds: float

# A column: (name, kind, data); data is little-endian bytes for "f64"/"i64", a list for "str".
Column = tuple[str, Literal["f64", "i64", "str"], bytes | list[str]]

class RawOutput(TypedDict):
    flows: list[Column]
    timeseries: list[Column]
    queue: list[Column]
    summary: list[Column]
    perf: Perf

def parse_size(text: str) -> int: ...
def validate(
    source: str, text: str | None = None, format: Literal["file", "toml", "json"] = "file"
) -> ScenarioInfo: ...
def run(
    source: str,
    text: str | None = None,
    format: Literal["file", "toml", "json"] = "file",
    seed: int | None = None,
    progress: Callable[[float], object] | None = None,
) -> RawOutput: ...
