"""How a sweep file expands into runs: grid keys, a [zip] table and explicit
[[points]] are the axes of one product; every point's scenario carries its
settings; bad axes are refused naming the sweep file and the field."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from conftest import SMALL_SWARM, cli
from torrentlab.exceptions import ScenarioError
from torrentlab.sweep import Sweep


def _sweep(tmp_path, body: str):
    (tmp_path / "swarm.toml").write_text(SMALL_SWARM)
    f = tmp_path / "s.sweep.toml"
    f.write_text('base = "swarm.toml"\n' + body)
    return f


def test_zipped_lists_form_one_axis_whose_ith_values_go_together_beside_the_grid(tmp_path):
    f = _sweep(tmp_path, """runs = 2
[grid]
"torrent.piece_size" = ["128 KiB", "256 KiB"]
[zip]
"network.rtt" = ["20 ms", "100 ms", "400 ms"]
"peers.1.count" = [5, 10, 15]
""")
    s = Sweep.from_file(f)
    assert s.points() == 2 * 3 and len(s.jobs()) == 12
    assert s.params() == ["torrent.piece_size", "network.rtt", "peers.1.count"]
    points = list(s.point_docs())
    assert [dict(p) for p, _ in points][:3] == [
        {"torrent.piece_size": "128 KiB", "network.rtt": rtt, "peers.1.count": n}
        for rtt, n in [("20 ms", 5), ("100 ms", 10), ("400 ms", 15)]
    ]
    for params, doc in points:
        p = dict(params)
        assert doc["network"]["rtt"] == p["network.rtt"] and doc["peers"][1]["count"] == p["peers.1.count"]
        assert doc["torrent"]["piece_size"] == p["torrent.piece_size"]
    # Lazily built runs agree with the whole list, seeds 1..runs per point.
    assert [(j.params, j.seed) for j in s.jobs()[5:8]] == [(points[2][0], 2), (points[3][0], 1), (points[3][0], 2)]


def test_explicit_points_are_run_as_listed_and_multiply_with_the_other_axes(tmp_path):
    f = _sweep(tmp_path, """
[grid]
"peers.0.upload_limit" = ["20 kB/s", "50 kB/s"]
[[points]]
"network.rtt" = "20 ms"
"peers.1.count" = 4
[[points]]
"network.rtt" = "400 ms"
"peers.1.count" = 30
""")
    s = Sweep.from_file(f)
    assert s.points() == 4 and s.params() == ["peers.0.upload_limit", "network.rtt", "peers.1.count"]
    got = [(d["peers"][0]["upload_limit"], d["network"]["rtt"], d["peers"][1]["count"]) for _, d in s.point_docs()]
    assert got == [("20 kB/s", "20 ms", 4), ("20 kB/s", "400 ms", 30), ("50 kB/s", "20 ms", 4),
                   ("50 kB/s", "400 ms", 30)]


@pytest.mark.parametrize("body,field,words", [
    ('[zip]\n"network.rtt" = ["20 ms", "40 ms"]\n"peers.1.count" = [5]\n', "zip.peers.1.count", "one length"),
    ('[zip]\n"network.rtt" = []\n', "zip.network.rtt", "non-empty"),
    ("zip = 3\n", "zip", "table"),
    ('[[points]]\n"network.rtt" = "20 ms"\n[[points]]\n"peers.1.count" = 3\n', "points[1]", "same fields"),
    ('points = [{}]\n', "points[0]", "sets no field"),
    ('points = 4\n', "points", "list of tables"),
    ('[[points]]\n"peers.7.count" = 3\n', "points[0].peers.7.count", "does not name a field"),
    ('[grid]\n"network.rtt" = ["20 ms"]\n[zip]\n"network.rtt" = ["40 ms"]\n', "network.rtt", "varied twice"),
], ids=["zip lengths", "zip empty", "zip not a table", "points differ", "point empty",
        "points not a list", "point unknown field", "varied twice"])
def test_a_bad_zip_or_points_axis_is_refused_naming_the_field(tmp_path, body, field, words):
    f = _sweep(tmp_path, body)
    with pytest.raises(ScenarioError) as e:
        Sweep.from_file(f)
    assert e.value.field == field and words in e.value.detail, str(e.value)
    r = cli("sweep", str(f), "-o", str(tmp_path / "o"), "-q")
    assert r.returncode == 2 and f"{f}: {field}: " in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_a_zipped_sweep_runs_and_labels_each_run_with_its_zipped_values(tmp_path):
    f = _sweep(tmp_path, """runs = 1
[zip]
"peers.1.count" = [3, 6]
"network.rtt" = ["20 ms", "200 ms"]
""")
    r = cli("sweep", str(f), "-o", str(tmp_path / "o"), "-q")
    assert r.returncode == 0, r.stderr
    runs = pq.read_table(tmp_path / "o" / "runs.parquet").to_pandas()
    assert list(zip(runs["peers.1.count"], runs["network.rtt"], strict=True)) == [("3", "20 ms"), ("6", "200 ms")]
    assert list(runs["leechers"]) == [3, 6] and list(runs["completed"]) == [3, 6]


def test_a_zipped_field_the_scenario_does_not_have_is_refused_before_any_run(tmp_path):
    f = _sweep(tmp_path, '[zip]\n"netwrk.rtt" = ["20 ms"]\n')
    r = cli("sweep", str(f), "-o", str(tmp_path / "o"), "-q")
    assert r.returncode == 2, r.stderr
    assert f"{f}: netwrk: unknown field" in r.stderr and "netwrk.rtt = 20 ms" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()
