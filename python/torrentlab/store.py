"""Reading results back: every Parquet table of a result directory as a
DataFrame (:func:`load`), or through SQL (:func:`query`, DuckDB).

A result directory is one torrentlab wrote (it holds ``manifest.json``): a
run's (``summary``, ``peers``, ``connections``, ...), a sweep's (``runs``,
``peers`` or ``flows``), a reproduction's. Each ``NAME.parquet`` in it is a
table called ``NAME``; in SQL, a view of that name over the file, so a query
reads only the columns and row groups it needs::

    torrentlab query results/rtt "SELECT \\"network.rtt\\", avg(mean_download_time_s)
                                  FROM runs GROUP BY 1 ORDER BY 1"

Swept parameters are columns of their own (their dotted names need double
quotes in SQL). A missing value (``NaN`` in a DataFrame, see docs/metrics.md) is
null in the Parquet files, so ``NULL`` in SQL: ``count(x)``, ``avg(x)`` and
``x IS NULL`` mean what SQL users expect.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from torrentlab.exceptions import QueryError
from torrentlab.output import MANIFEST, is_result

if TYPE_CHECKING:  # pandas is imported when a table is read, not to start the CLI
    import pandas as pd

#: A table name SQL can use without quotes.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def tables(result: str | os.PathLike[str]) -> dict[str, Path]:
    """The tables of result directory `result`: name -> Parquet file, by name.
    Raises :class:`QueryError` if `result` is not a torrentlab result."""
    d = Path(result)
    if not d.is_dir():
        raise QueryError(d, "is not a directory" if d.exists() else "does not exist")
    if not is_result(d):
        raise QueryError(d, f"is not a torrentlab result (no {MANIFEST})")
    found = {p.name.removesuffix(".parquet"): p for p in sorted(d.glob("*.parquet")) if p.is_file()}
    if not found:
        raise QueryError(d, "holds no Parquet tables")
    return found


def load(result: str | os.PathLike[str], table: str | None = None) -> pd.DataFrame | dict[str, pd.DataFrame]:
    """One table of result directory `result` as a DataFrame, or, without
    `table`, every table by name."""
    import pyarrow.parquet as pq

    found = tables(result)
    if table is None:
        return {name: pq.read_table(path).to_pandas() for name, path in found.items()}
    if table not in found:
        raise QueryError(result, f"has no table {table!r}; it has {', '.join(found)}")
    return pq.read_table(found[table]).to_pandas()


def query(result: str | os.PathLike[str], sql: str) -> pd.DataFrame:
    """Runs `sql` (DuckDB's dialect) over the tables of `result`, each a view
    named after its file, and returns the answer as a DataFrame. A query
    DuckDB refuses raises :class:`QueryError` with its message."""
    import duckdb

    found = tables(result)
    con = duckdb.connect(":memory:")
    try:
        for name, path in found.items():
            if _NAME.match(name):
                quoted = str(path).replace("'", "''")
                con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{quoted}')")
        try:
            return con.execute(sql).df()
        except duckdb.Error as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise QueryError(result, f"the query failed: {first}") from None
    finally:
        con.close()
