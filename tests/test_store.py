"""Reading results back: torrentlab.load and torrentlab.query (DuckDB) over a
result directory's Parquet tables, and `torrentlab query` on the command line."""

from __future__ import annotations

import io

import pandas as pd
import pyarrow.parquet as pq
import pytest

import torrentlab
from conftest import SMALL_SWARM, cli


@pytest.fixture(scope="module")
def swarm_result(tmp_path_factory):
    d = tmp_path_factory.mktemp("store")
    (d / "swarm.toml").write_text(SMALL_SWARM)
    r = cli("run", str(d / "swarm.toml"), "-o", str(d / "o"))
    assert r.returncode == 0, r.stderr
    return d / "o"


def test_load_gives_every_table_of_a_result_as_the_parquet_file_holds_it(swarm_result):
    every = torrentlab.load(swarm_result)
    assert {"summary", "peers", "connections", "uplinks"} <= set(every)
    for name, df in every.items():
        assert df.equals(pq.read_table(swarm_result / f"{name}.parquet").to_pandas()), name
    peers = torrentlab.load(swarm_result, "peers")
    assert len(peers) == 21 and peers.equals(every["peers"])


def test_query_answers_sql_over_the_tables_and_agrees_with_pandas(swarm_result):
    peers = torrentlab.load(swarm_result, "peers")
    got = torrentlab.query(swarm_result, "SELECT count(*) AS n, max(download_time_s) AS slowest FROM peers "
                                         "WHERE download_time_s IS NOT NULL")
    assert got["n"][0] == peers["download_time_s"].notna().sum() == 20
    assert got["slowest"][0] == pytest.approx(peers["download_time_s"].max())
    # Tables join: the summary's mean is the mean over its peers.
    j = torrentlab.query(swarm_result, "SELECT s.mean_download_time_s AS m, avg(p.download_time_s) AS a "
                                       "FROM summary s, peers p GROUP BY 1")
    assert j["m"][0] == pytest.approx(j["a"][0])


def test_query_on_the_command_line_prints_csv_or_a_table(swarm_result):
    r = cli("query", str(swarm_result), "SELECT peer, role FROM peers ORDER BY peer LIMIT 3", "--csv")
    assert r.returncode == 0, r.stderr
    df = pd.read_csv(io.StringIO(r.stdout))
    assert list(df["peer"]) == [0, 1, 2] and list(df.columns) == ["peer", "role"]
    r = cli("query", str(swarm_result), "SELECT peer FROM peers ORDER BY peer", "--limit", "5")
    assert r.returncode == 0 and "21 rows (the first 5 shown" in r.stdout, r.stdout


def test_a_sweep_result_has_its_swept_parameters_as_columns_to_group_by(tmp_path):
    (tmp_path / "swarm.toml").write_text(SMALL_SWARM)
    (tmp_path / "s.sweep.toml").write_text('base = "swarm.toml"\nruns = 2\n[grid]\n"peers.1.count" = [3, 5]\n')
    assert cli("sweep", str(tmp_path / "s.sweep.toml"), "-o", str(tmp_path / "o"), "-q").returncode == 0
    got = torrentlab.query(tmp_path / "o", 'SELECT "peers.1.count" AS n, count(*) AS runs, sum(completed) AS done '
                                           "FROM runs GROUP BY 1 ORDER BY 1")
    assert got.to_dict("list") == {"n": ["3", "5"], "runs": [2, 2], "done": [6, 10]}


@pytest.mark.parametrize("make,sql,words", [
    (lambda p: p.mkdir(), "SELECT 1", "is not a torrentlab result"),
    (lambda p: None, "SELECT 1", "does not exist"),
    (None, "SELEC nonsense", "the query failed: Parser Error"),
    (None, "SELECT nope FROM peers", "the query failed: Binder Error"),
], ids=["not a result", "missing", "bad syntax", "unknown column"])
def test_a_bad_directory_or_query_is_an_input_error_in_one_line(tmp_path, swarm_result, make, sql, words):
    target = swarm_result
    if make is not None:
        target = tmp_path / "x"
        make(target)
    r = cli("query", str(target), sql)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert words in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    with pytest.raises(torrentlab.QueryError):
        torrentlab.query(target, sql)


def test_load_names_the_tables_there_are_when_asked_for_one_that_is_not(swarm_result):
    with pytest.raises(torrentlab.QueryError, match="has no table 'nope'; it has .*peers"):
        torrentlab.load(swarm_result, "nope")
