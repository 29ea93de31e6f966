import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


#: A small swarm file: 1 seed + 20 leechers, 2 MB, RTT 100 ms, 20 kB/s.
SMALL_SWARM = """\
[run]
duration = "2 h"

[torrent]
size = "2 MB"
piece_size = "256 KiB"

[network]
rtt = "100 ms"

[[peers]]
role = "seed"
upload_limit = "20 kB/s"

[[peers]]
role = "leecher"
count = 20
upload_limit = "20 kB/s"
"""


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Runs the installed `torrentlab` command (with `env` added to the environment)."""
    exe = shutil.which("torrentlab")
    cmd = [exe, *args] if exe else [sys.executable, "-m", "torrentlab.cli", *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, cwd=cwd, env={**os.environ, "COLUMNS": "200", **(env or {})}
    )


@pytest.fixture
def good_toml() -> str:
    return (SCENARIOS / "rossi2010" / "b-ledbat-vs-ledbat.toml").read_text()
