"""The command line: exit codes, one clear message per bad input, no half-written
results, byte-identical results for the same seed."""

import os

import pyarrow.parquet as pq
import pytest

from conftest import SCENARIOS, SMALL_SWARM, cli

GOOD = SCENARIOS / "rossi2010" / "b-ledbat-vs-ledbat.toml"

# (description, text or bytes, expected field in the message, expected words)
BAD = [
    ("empty file", "", "(file)", "empty"),
    ("not UTF-8", b"[run]\nduration = \"1 s\xff\"\n", "(file)", "not UTF-8"),
    ("syntax error", "[run\n", "line 1, column", "TOML syntax error"),
    ("unknown field", None, "network.bottleneck.bufer", "unknown field"),
    ("wrong type", None, "run.duration", "invalid type"),
    ("negative capacity", None, "network.bottleneck.capacity", "negative"),
    ("zero buffer", None, "network.bottleneck.buffer", "at least one packet"),
    ("start after end", None, "flows[1].start", "after the end"),
    ("unknown controller", None, "flows[0].cc", "expected"),
    ("loss out of range", None, "network.loss.data", "0 <= p < 1"),
    ("duration without unit", None, "network.one_way_delay", "no duration unit"),
    ("missing section", "[run]\nduration = \"1 s\"\n", "network", "missing field `network`"),
]

EDITS = {
    "unknown field": ('buffer = "40 packets"', 'bufer = "40 packets"'),
    "wrong type": ('duration = "60 s"', "duration = 60"),
    "negative capacity": ('"10 Mbit/s"', '"-10 Mbit/s"'),
    "zero buffer": ('"40 packets"', '"0 packets"'),
    "start after end": ('label = "ledbat-2"', 'label = "ledbat-2"\nstart = "61 s"'),
    "unknown controller": ('cc = "ledbat"', 'cc = "bbr"'),
    "loss out of range": ("[tcp]", "[network.loss]\ndata = 2.0\n\n[tcp]"),
    "duration without unit": ('one_way_delay = "25 ms"', 'one_way_delay = "25"'),
}


def bad_file(tmp_path, name, content):
    p = tmp_path / "bad.toml"
    if content is None:
        old, new = EDITS[name]
        text = GOOD.read_text()
        assert old in text
        content = text.replace(old, new, 1)
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content)
    return p


def test_validate_accepts_every_shipped_scenario():
    files = sorted(str(p) for p in SCENARIOS.rglob("*.toml") if not p.name.endswith(".sweep.toml"))
    r = cli("validate", *files)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("ok") == len(files)


@pytest.mark.parametrize("name,content,field,words", BAD, ids=[b[0] for b in BAD])
def test_a_bad_scenario_gives_one_clear_message_and_exit_code_2(tmp_path, name, content, field, words):
    p = bad_file(tmp_path, name, content)
    for command in (["validate", str(p)], ["run", str(p), "-o", str(tmp_path / "out")]):
        r = cli(*command)
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        msg = r.stderr.strip()
        assert "Traceback" not in r.stderr and "panicked" not in r.stderr
        assert len(msg.splitlines()) == 1, msg
        assert str(p) in msg and field in msg and words in msg, msg
    assert not (tmp_path / "out").exists(), "no output directory for a bad scenario"
    assert [q.name for q in tmp_path.iterdir()] == ["bad.toml"], "nothing half-written"


def test_a_missing_file_is_a_clear_error():
    r = cli("validate", "/nonexistent/scenario.toml")
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr


def test_bad_command_line_arguments_exit_with_2():
    assert cli("reproduce", "nosuchstudy").returncode == 2
    assert cli().returncode == 2


def test_run_twice_with_the_same_seed_writes_byte_identical_tables(tmp_path):
    for d in ("x", "y"):
        assert cli("run", str(GOOD), "-o", str(tmp_path / d), "-q").returncode == 0
    for table in ("summary", "flows", "timeseries", "queue"):
        a = (tmp_path / "x" / f"{table}.parquet").read_bytes()
        b = (tmp_path / "y" / f"{table}.parquet").read_bytes()
        assert a == b, table


def test_a_different_seed_changes_a_randomised_run(tmp_path):
    d = SCENARIOS / "rossi2010" / "d-ledbat-vs-ledbat-random-start.toml"
    for seed in ("1", "2"):
        assert cli("run", str(d), "-o", str(tmp_path / seed), "--seed", seed, "-q").returncode == 0
    a = pq.read_table(tmp_path / "1" / "flows.parquet").to_pandas()
    b = pq.read_table(tmp_path / "2" / "flows.parquet").to_pandas()
    assert a["start_s"][1] != b["start_s"][1]


def test_run_prints_the_summary_and_where_it_wrote(tmp_path):
    r = cli("run", str(GOOD), "-o", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    assert "jain_index" in r.stdout and "wrote" in r.stdout


# ---- swarm scenarios -----------------------------------------------------------------

SWARM = SMALL_SWARM


def test_run_writes_every_swarm_table_in_a_directory_with_the_usual_permissions(tmp_path):
    f = tmp_path / "swarm.toml"
    f.write_text(SWARM)
    out = tmp_path / "o"
    r = cli("run", str(f), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "mean_download_time_s" in r.stdout and "swarm (seed 1)" in r.stdout, r.stdout
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{t}.parquet" for t in ("summary", "peers", "connections", "haves", "chokes", "sends", "send_gaps",
                                  "payload_lengths", "transports", "uplinks", "uplink_queue", "uplink_delays",
                                  "piece_spread")]
        + ["manifest.json", "perf.json"])
    s = pq.read_table(out / "summary.parquet").to_pandas()
    assert (s["completed"][0], s["leechers"][0]) == (20, 20)
    # Like a plain mkdir (not mkdtemp's 0700): others may read the results.
    umask = os.umask(0o022)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~umask


def test_a_swarm_sweep_writes_runs_and_peers_with_the_joined_key_and_seed(tmp_path):
    (tmp_path / "swarm.toml").write_text(SWARM)
    sweep = tmp_path / "limits.sweep.toml"
    key = "peers.0.upload_limit+peers.1.upload_limit"
    sweep.write_text(
        f'base = "swarm.toml"\nruns = 2\n[grid]\n"{key}" = [["10 kB/s", "20 kB/s"], ["40 kB/s", "40 kB/s"]]\n')
    r = cli("sweep", str(sweep), "-o", str(tmp_path / "o"), "-q")
    assert r.returncode == 0, r.stderr
    runs = pq.read_table(tmp_path / "o" / "runs.parquet").to_pandas()
    peers = pq.read_table(tmp_path / "o" / "peers.parquet").to_pandas()
    assert list(runs[key]) == ["10 kB/s; 20 kB/s"] * 2 + ["40 kB/s; 40 kB/s"] * 2
    assert list(runs["seed"]) == [1, 2, 1, 2] and (runs["completed"] == 20).all()
    assert len(peers) == 4 * 21 and set(peers["seed"]) == {1, 2}
    slow, fast = (runs.groupby(key)["mean_download_time_s"].mean()[k] for k in ("10 kB/s; 20 kB/s", "40 kB/s; 40 kB/s"))
    assert fast < slow, "faster upload limits finish sooner"


@pytest.mark.parametrize("extra,field", [
    ("quick_runs = 0\n", "quick_runs"),
    ('quick_runs = "2"\n', "quick_runs"),
    ("runs = true\n", "runs"),
    ("grid = 3\n", "grid"),
], ids=["quick_runs 0", "quick_runs text", "runs bool", "grid not a table"])
def test_a_sweep_with_a_bad_run_count_or_grid_is_an_input_error(tmp_path, extra, field):
    (tmp_path / "swarm.toml").write_text(SWARM)
    sweep = tmp_path / "bad.sweep.toml"
    sweep.write_text('base = "swarm.toml"\n' + extra)
    r = cli("sweep", str(sweep), "--quick", "-o", str(tmp_path / "o"), "-q")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert f"{sweep}: {field}: " in r.stderr and "internal error" not in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_bench_times_a_swarm_scenario_and_refuses_cc_for_it(tmp_path):
    import json

    f = tmp_path / "swarm.toml"
    f.write_text(SWARM)
    r = cli("bench", "--scenario", str(f), "--repeat", "1", "--warmup", "0", "--json")
    assert r.returncode == 0, r.stderr
    b = json.loads(r.stdout)
    assert b["events"] > 0 and b["delivered_packets"] > 0 and b["wall_seconds_all"] == [b["wall_seconds"]]
    assert 300 < b["sim_seconds"] < 7200, "the run ends when the last leecher is done, before the cap"
    r = cli("bench", "--scenario", str(f), "--cc", "cubic")
    assert r.returncode == 2 and "--cc" in r.stderr and "swarm" in r.stderr, r.stderr
