"""The Python API: DataFrames, dict scenarios, errors, atomic Parquet output."""

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

import torrentlab
from conftest import SCENARIOS
from torrentlab.exceptions import ScenarioError, TorrentlabError

A = SCENARIOS / "rossi2010" / "a-newreno-vs-ledbat.toml"


def small_dict(**run):
    return {
        "run": {"duration": "5 s", **run},
        "network": {"one_way_delay": "10 ms", "bottleneck": {"capacity": "5 Mbit/s", "buffer": "20 packets"}},
        "flows": [{"cc": "newreno"}, {"cc": "ledbat", "start": {"uniform": ["0 s", "2 s"]}}],
    }


def test_run_returns_dataframes_with_documented_columns():
    res = torrentlab.run(A)
    assert isinstance(res.summary, pd.DataFrame) and len(res.summary) == 1
    assert list(res.flows["label"]) == ["tcp", "ledbat"]
    for col in ("jain_index", "efficiency", "loss_rate", "mean_queue_delay_ms"):
        assert col in res.summary.columns
    for col in ("time_s", "flow", "cwnd_packets", "goodput_bps", "srtt_ms", "queuing_delay_ms"):
        assert col in res.timeseries.columns
    assert list(res.queue.columns) == [
        "time_s", "bytes", "packets", "served_packets", "served_bytes", "dropped_packets"]
    assert res.queue["time_s"].is_monotonic_increasing
    assert 0.9 < res.summary["efficiency"][0] <= 1.0
    assert res.perf["events"] > 0 and res.perf["data_packets_delivered"] > 0


def test_a_dict_scenario_runs_like_a_file_and_the_seed_can_be_overridden():
    a = torrentlab.run(small_dict(seed=3))
    b = torrentlab.run(small_dict(), seed=3)
    pd.testing.assert_frame_equal(a.flows, b.flows)
    c = torrentlab.run(small_dict(), seed=4)
    assert a.flows["start_s"][1] != c.flows["start_s"][1]


def test_progress_is_reported_in_simulated_seconds_up_to_the_end():
    seen = []
    torrentlab.run(small_dict(), progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == pytest.approx(5.0) and len(seen) >= 4


def test_a_bad_dict_raises_a_scenario_error_naming_the_field():
    doc = small_dict()
    doc["flows"][0]["cc"] = "bbr"
    with pytest.raises(ScenarioError) as e:
        torrentlab.run(doc)
    assert e.value.file == "<dict>"
    assert e.value.field == "flows[0].cc"
    assert "`newreno`" in e.value.detail
    assert isinstance(e.value, TorrentlabError)


def test_validate_describes_a_scenario_without_running_it():
    info = torrentlab.validate(A)
    assert info["name"] == "rossi2010-a" and info["flows"] == 2
    assert info["controllers"] == ["newreno", "ledbat"]


def test_write_creates_every_table_as_parquet_and_replaces_an_old_result(tmp_path):
    res = torrentlab.run(small_dict())
    out = tmp_path / "r"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    res.write(out)
    assert sorted(p.name for p in out.iterdir()) == [
        "flows.parquet", "perf.json", "queue.parquet", "summary.parquet", "timeseries.parquet"]
    assert pq.read_table(out / "flows.parquet").num_rows == 2
    assert json.loads((out / "perf.json").read_text())["events"] > 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary directory left"


def test_non_scenarios_are_a_scenario_error_naming_the_argument():
    with pytest.raises(ScenarioError) as e:
        torrentlab.run(42)
    assert (e.value.file, e.value.field) == ("<argument>", "scenario") and "not int" in e.value.detail


def test_a_failed_write_leaves_the_old_result_and_no_temporary_directory(tmp_path):
    from torrentlab.output import atomic_dir

    out = tmp_path / "r"
    out.mkdir()
    (out / "old.txt").write_text("keep me")
    with pytest.raises(RuntimeError):
        with atomic_dir(out) as tmp:
            (tmp / "half.parquet").write_text("partial")
            raise RuntimeError("disk full")
    assert [p.name for p in out.iterdir()] == ["old.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["r"]
