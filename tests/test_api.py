"""The Python API: DataFrames, dict scenarios, errors, atomic Parquet output."""

import json
import threading
import time

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
    assert seen == sorted(seen) and seen[-1] == pytest.approx(5.0)


def test_progress_is_reported_while_a_long_run_goes_on_not_only_at_its_end():
    seen, walls = [], []

    def progress(t):
        seen.append(t)
        walls.append(time.monotonic())

    t0 = time.monotonic()
    res = torrentlab.run(small_dict(duration="400 s"), progress=progress)
    wall = time.monotonic() - t0
    assert seen == sorted(seen) and seen[-1] == pytest.approx(400.0)
    # At most one call per 50 ms of wall time, and one at the end.
    assert len(seen) <= wall / 0.05 + 2
    if res.perf["wall_seconds"] > 0.3:
        assert len(seen) >= 3 and 0 < seen[0] < 400


def test_an_exception_raised_by_progress_stops_the_run_and_comes_out_of_run():
    calls = []

    def progress(t):
        calls.append(t)
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        torrentlab.run(small_dict(duration="400 s"), progress=progress)
    assert len(calls) == 1


def test_a_cancelled_token_stops_a_run_from_another_thread_within_a_second():
    token = torrentlab.CancelToken()
    timer = threading.Timer(0.3, token.cancel)
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(torrentlab.Cancelled):
        torrentlab.run(small_dict(duration="3000 s"), cancel=token)
    assert time.monotonic() - t0 < 1.3
    assert token.cancelled


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


def test_write_creates_every_table_as_parquet_with_a_manifest(tmp_path):
    res = torrentlab.run(small_dict())
    out = tmp_path / "r"
    res.write(out)
    assert sorted(p.name for p in out.iterdir()) == [
        "flows.parquet", "manifest.json", "perf.json", "queue.parquet", "summary.parquet", "timeseries.parquet"]
    assert pq.read_table(out / "flows.parquet").num_rows == 2
    assert json.loads((out / "perf.json").read_text())["events"] > 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["torrentlab"] == torrentlab.__version__ and manifest["seed"] == 1
    assert "flows.parquet" in manifest["files"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary directory left"


def test_write_refuses_a_directory_torrentlab_did_not_write_and_leaves_it_as_it_was(tmp_path):
    res = torrentlab.run(small_dict())
    out = tmp_path / "r"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(torrentlab.OutputError, match="not a torrentlab result"):
        res.write(out)
    with pytest.raises(torrentlab.OutputError):
        res.write(out, force=True)
    assert [p.name for p in out.iterdir()] == ["notes.txt"] and (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_an_older_result_is_replaced_only_with_force(tmp_path):
    out = tmp_path / "r"
    torrentlab.run(small_dict(), seed=1).write(out)
    with pytest.raises(torrentlab.OutputError, match="--force"):
        torrentlab.run(small_dict(), seed=2).write(out)
    assert json.loads((out / "manifest.json").read_text())["seed"] == 1
    torrentlab.run(small_dict(), seed=2).write(out, force=True)
    assert json.loads((out / "manifest.json").read_text())["seed"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"], "the old result was removed, nothing else left"


def test_non_scenarios_are_a_scenario_error_naming_the_argument():
    with pytest.raises(ScenarioError) as e:
        torrentlab.run(42)
    assert (e.value.file, e.value.field) == ("<argument>", "scenario") and "not int" in e.value.detail


def test_a_failed_write_leaves_the_old_result_and_no_temporary_directory(tmp_path):
    from torrentlab.output import atomic_dir

    out = tmp_path / "r"
    torrentlab.run(small_dict()).write(out)
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(RuntimeError):
        with atomic_dir(out, force=True) as tmp:
            (tmp / "half.parquet").write_text("partial")
            raise RuntimeError("disk full")
    assert sorted(p.name for p in out.iterdir()) == before
    assert [p.name for p in tmp_path.iterdir()] == ["r"]


@pytest.mark.parametrize("scenario", [SCENARIOS / "rossi2010" / "b-ledbat-vs-ledbat.toml",
                                      SCENARIOS / "rao2010" / "flash-crowd.toml"])
def test_logs_spilled_to_disk_in_small_chunks_give_the_same_tables_and_leave_nothing_behind(
        scenario, tmp_path, monkeypatch):
    from torrentlab import api

    doc = {"name": "spill"}
    if "flash" in scenario.name:  # a small swarm that logs chokes and sends
        from torrentlab.sweep import load_toml

        doc = load_toml(scenario)
        doc["peers"][1]["count"] = 12
        doc["torrent"]["size"] = "2 MB"
        doc.setdefault("metrics", {}).update(chokes=True, send_log_peers=2)
        scenario = doc
    whole = torrentlab.run(scenario)
    monkeypatch.setattr(api, "SPILL_ROWS", 50)
    seen = []
    real = api._Spool.add

    def add(self, name, columns):
        seen.append((name, self.dir))
        return real(self, name, columns)

    monkeypatch.setattr(api._Spool, "add", add)
    spilled = torrentlab.run(scenario, spill_dir=tmp_path)
    assert len(seen) >= 5, "the logs went to disk in chunks"
    assert all(str(d).startswith(str(tmp_path)) for _, d in seen[1:])
    assert list(tmp_path.iterdir()) == [], "the spill directory is removed after the run"
    for t in whole.tables:  # (pandas compares NaN cells as equal)
        pd.testing.assert_frame_equal(whole.frame(t), spilled.frame(t), obj=t)
    out = tmp_path / "r"
    spilled.write(out)
    name = seen[0][0]
    pd.testing.assert_frame_equal(pq.read_table(out / f"{name}.parquet").to_pandas(), whole.frame(name))
