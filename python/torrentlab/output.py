"""Writing results: a directory appears complete or not at all."""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


# The process umask (read once: os.umask can only be read by setting it).
_UMASK = os.umask(0o022)
os.umask(_UMASK)


@contextmanager
def atomic_dir(out_dir: str | os.PathLike[str]) -> Iterator[Path]:
    """Yields an empty temporary directory beside `out_dir`. When the block
    ends without error, it replaces `out_dir` (and any older result there).
    When the block fails, it is removed and `out_dir` is left untouched."""
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    # mkdtemp makes it 0700; the result should have a plain mkdir's mode.
    os.chmod(tmp, 0o777 & ~_UMASK)
    try:
        yield tmp
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_frame(df: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Writes a DataFrame as Parquet (zstd), without the index."""
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, compression="zstd")
