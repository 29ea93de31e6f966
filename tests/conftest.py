import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Runs the installed `torrentlab` command."""
    exe = shutil.which("torrentlab")
    cmd = [exe, *args] if exe else [sys.executable, "-m", "torrentlab.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env={**os.environ, "COLUMNS": "200"})


@pytest.fixture
def good_toml() -> str:
    return (SCENARIOS / "rossi2010" / "b-ledbat-vs-ledbat.toml").read_text()
