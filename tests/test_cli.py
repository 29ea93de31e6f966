"""The command line: exit codes, one clear message per bad input, no half-written
results, byte-identical results for the same seed."""

import pytest
import pyarrow.parquet as pq

from conftest import SCENARIOS, cli

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
    ("missing section", "[run]\nduration = \"1 s\"\n", "(top level)", "missing field `network`"),
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
