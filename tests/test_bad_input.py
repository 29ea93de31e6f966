"""Bad input, from the command line and from Python: every case is refused with
one line naming the argument or field (exit code 2, or ScenarioError), never a
traceback, a panic or an "internal error", and nothing is written anywhere but
in the output directory (here: nowhere at all)."""

from __future__ import annotations

import datetime
import hashlib
import math
import re
from pathlib import Path

import numpy as np
import pytest

import torrentlab
from conftest import ROOT, SCENARIOS, SMALL_SWARM, cli
from torrentlab import ScenarioError

GOOD = (SCENARIOS / "rossi2010" / "b-ledbat-vs-ledbat.toml").read_text()
HOUSEHOLD = (SCENARIOS / "bufferbloat-voip" / "call-beside-paced-seed.toml").read_text()
SEED_MAX = 2**64 - 1


def snapshot(root: Path, skip: str = "out") -> dict[str, str]:
    """Every file under `root` (but `skip/`) and a digest of its content."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] != skip
    }


def assert_one_clean_line(text: str) -> str:
    msg = text.strip()
    assert msg, "a message is printed"
    assert len(msg.splitlines()) == 1, msg
    for bad in ("Traceback", "panicked", "internal error"):
        assert bad not in msg, msg
    return msg


@pytest.fixture
def lab(tmp_path):
    """A directory with a good dumbbell, a good swarm and a good sweep, which the
    test may edit; yields it and checks that nothing but out/ changed in it."""
    (tmp_path / "good.toml").write_text(GOOD)
    (tmp_path / "swarm.toml").write_text(SMALL_SWARM)
    sweep = 'base = "good.toml"\nruns = 2\n[grid]\n"tcp.slow_start" = [false, true]\n'
    (tmp_path / "good.sweep.toml").write_text(sweep)
    yield tmp_path


def edited(base: str, old: str, new: str) -> str:
    assert old in base, old
    return base.replace(old, new, 1)


# ---- command-line arguments: argparse's own checks ---------------------------------------

# (id, arguments after `torrentlab`, what the one line must name)
ARGUMENTS = [
    ("seed -1", ["run", "good.toml", "--seed", "-1"],
     "argument --seed: must be a whole number from 0 to 18446744073709551615"),
    ("seed 2^64", ["run", "good.toml", "--seed", str(SEED_MAX + 1)], "argument --seed: must be a whole number from 0"),
    ("seed text", ["run", "good.toml", "--seed", "abc"], "argument --seed"),
    ("seed fraction", ["run", "good.toml", "--seed", "1.5"], "argument --seed"),
    ("seed empty", ["run", "good.toml", "--seed", ""], "argument --seed"),
    ("jobs -1 sweep", ["sweep", "good.sweep.toml", "-j", "-1", "-o", "out"],
     "argument -j/--jobs: must be a whole number of 1 or more"),
    ("jobs 0 sweep", ["sweep", "good.sweep.toml", "--jobs", "0", "-o", "out"], "argument -j/--jobs"),
    ("jobs -1 reproduce", ["reproduce", "rossi2010", "--quick", "-j", "-1", "-o", "out"], "argument -j/--jobs"),
    ("jobs text", ["reproduce", "rossi2010", "-j", "many", "-o", "out"], "argument -j/--jobs"),
    ("repeat 0", ["bench", "--scenario", "good.toml", "--repeat", "0"],
     "argument --repeat: must be a whole number of 1 or more"),
    ("repeat -3", ["bench", "--scenario", "good.toml", "--repeat", "-3"], "argument --repeat"),
    ("warmup -1", ["bench", "--scenario", "good.toml", "--warmup", "-1"],
     "argument --warmup: must be a whole number of 0 or more"),
    ("cc unknown", ["bench", "--scenario", "good.toml", "--cc", "bbr"], "argument --cc: invalid choice: 'bbr'"),
    ("experiment unknown", ["reproduce", "nosuchstudy", "-o", "out"], "argument EXPERIMENT: invalid choice"),
    ("empty output dir", ["run", "good.toml", "-o", ""], "argument -o/--output: must be a directory path"),
    ("empty file", ["run", ""], "argument FILE: must be a file path"),
    ("no command", [], "the following arguments are required: command"),
    ("unknown command", ["frobnicate"], "invalid choice: 'frobnicate'"),
    ("missing file", ["run"], "the following arguments are required: FILE"),
    ("unknown option", ["run", "good.toml", "--sed", "3"], "unrecognized arguments"),
]


@pytest.mark.parametrize("argv,names", [a[1:] for a in ARGUMENTS], ids=[a[0] for a in ARGUMENTS])
def test_a_bad_argument_is_refused_by_argparse_on_one_line_with_exit_2(lab, argv, names):
    before = snapshot(lab)
    r = cli(*argv, cwd=lab)
    assert r.returncode == 2, (r.stdout, r.stderr)
    msg = assert_one_clean_line(r.stderr)
    assert names in msg and msg.startswith("torrentlab") and ": error: " in msg, msg
    assert r.stdout == ""
    assert snapshot(lab) == before and not (lab / "out").exists() and not (lab / "results").exists()


def test_the_edges_of_each_range_are_accepted(lab):
    r = cli("bench", "--scenario", "swarm.toml", "--repeat", "1", "--warmup", "0", "--json", cwd=lab)
    assert r.returncode == 0, r.stderr
    for seed in ("0", str(SEED_MAX)):
        r = cli("run", "good.toml", "--seed", seed, "-q", "-o", f"out/{seed}", cwd=lab)
        assert r.returncode == 0, r.stderr


def test_bench_cc_choices_are_the_engines_controllers_and_utp():
    from torrentlab.cli import CC_CHOICES

    raw = ROOT / "crates" / "sim" / "src" / "scenario" / "raw.rs"
    enum = re.search(r"pub enum CcName \{(.*?)\}", raw.read_text(), re.S)
    assert enum, "CcName in raw.rs"
    names = [w.lower() for w in re.findall(r"^\s*(\w+),", enum.group(1), re.M)]
    assert len(names) >= 6 and set(CC_CHOICES) == {*names, "utp"}


def test_reproduce_help_lists_every_experiment_on_one_line():
    from torrentlab.experiments import EXPERIMENTS

    r = cli("reproduce", "--help")
    assert r.returncode == 0
    listed = r.stdout.split("experiments:", 1)[1].strip().splitlines()
    assert [line.split()[0] for line in listed] == sorted(EXPERIMENTS)
    assert "E0: latency and loss in a BitTorrent flash crowd" in r.stdout
    assert "E4: LEDBAT against TCP and against itself" in r.stdout


# ---- scenario files: the engine's checks, through validate and run ------------------------

# (id, file name, text, field, words); `None` field: the file is good.
FILES = [
    ("name empty", "good.toml", edited(GOOD, 'name = "rossi2010-b"', 'name = ""'), "name", "one plain file name"),
    ("name ../x", "good.toml", edited(GOOD, 'name = "rossi2010-b"', 'name = "../x"'), "name", "one plain file name"),
    ("name /abs", "good.toml", edited(GOOD, 'name = "rossi2010-b"', 'name = "/abs"'), "name", "one plain file name"),
    ("name dot", "good.toml", edited(GOOD, 'name = "rossi2010-b"', 'name = "."'), "name", "one plain file name"),
    ("name dotdot swarm", "swarm.toml", 'name = ".."\n' + SMALL_SWARM, "name", "one plain file name"),
    ("duration 1e400 s", "good.toml", edited(GOOD, 'duration = "60 s"', 'duration = "1e400 s"'), "run.duration",
     "out of range"),
    ("size 1 TB", "swarm.toml", edited(SMALL_SWARM, 'size = "2 MB"', 'size = "1 TB"'), "torrent.size",
     '"TB" is not a size unit'),
    ("size 1 mb (case)", "swarm.toml", edited(SMALL_SWARM, 'size = "2 MB"', 'size = "1 mb"'), "torrent.size",
     'did you mean "MB"'),
    ("capacity past the max", "good.toml", edited(GOOD, '"10 Mbit/s"', '"2000 Gbit/s"'),
     "network.bottleneck.capacity", "out of range"),
    ("rate 10 mbit/s (case)", "good.toml", edited(GOOD, '"10 Mbit/s"', '"10 mbit/s"'),
     "network.bottleneck.capacity", 'did you mean "Mbit/s"'),
    ("seed -1 in the file", "good.toml", edited(GOOD, "seed = 1", "seed = -1"), "run.seed", "-1"),
    ("seed fraction in the file", "good.toml", edited(GOOD, "seed = 1", "seed = 1.5"), "run.seed", "1.5"),
    ("NaN in the file", "good.toml", edited(GOOD, "gain = 1.0", "gain = nan"), "ledbat.gain", "NaN"),
    ("1e3 ms accepted", "good.toml", edited(GOOD, 'sample_interval = "100 ms"', 'sample_interval = "1e3 ms"'),
     None, ""),
    ("2.5e1 ms accepted", "good.toml", edited(GOOD, 'one_way_delay = "25 ms"', 'one_way_delay = "2.5e1 ms"'), None, ""),
    ("pacing preset typo", "home.toml", edited(HOUSEHOLD, 'pacing = "voip-friendly"', 'pacing = "voip"'),
     "peers[0].pacing", '"voip-friendly"'),
    ("ping rate", "home.toml", edited(HOUSEHOLD, 'schedule = "poisson"', 'rate = "1 Mbit/s"'), "traffic[0].rate",
     "not a field of a ping entry"),
    ("traffic to itself", "home.toml", edited(HOUSEHOLD, 'to = "remote"', 'to = "home"'), "traffic[1].to",
     "the same host"),
]

@pytest.mark.parametrize("fname,text,field,words", [c[1:] for c in FILES], ids=[c[0] for c in FILES])
def test_a_bad_scenario_file_is_one_line_naming_the_field_and_writes_nothing(lab, fname, text, field, words):
    (lab / fname).write_text(text)
    before = snapshot(lab)
    if field is None:
        r = cli("validate", fname, cwd=lab)
        assert r.returncode == 0 and r.stdout.startswith(f"ok: {fname}: "), (r.stdout, r.stderr)
        return
    # `run` without -o: a bad name must not lead the results out of results/.
    for command in (["validate", fname], ["run", fname, "-q"]):
        r = cli(*command, cwd=lab)
        assert r.returncode == 2, (command, r.stdout, r.stderr)
        msg = assert_one_clean_line(r.stderr)
        assert f"{fname}: {field}: " in msg and words in msg, msg
    assert snapshot(lab) == before and not (lab / "out").exists() and not (lab / "results").exists()


# ---- sweep files: validate checks the sweep, its base and every grid point -------------

SWEEPS = [
    ("grid point bad", '"network.bottleneck.buffer" = ["10 packets", "0 packets"]', "network.bottleneck.buffer",
     "grid point network.bottleneck.buffer = 0 packets"),
    ("grid field unknown", '"network.nosuch.field" = [1]', "network.nosuch", "grid point network.nosuch.field = 1"),
    ("grid field under a value", '"run.duration.x" = [1]', "grid.run.duration.x", "does not name a field"),
    ("grid not a list", '"tcp.slow_start" = true', "grid.tcp.slow_start", "non-empty list"),
]


@pytest.mark.parametrize("grid,field,words", [s[1:] for s in SWEEPS], ids=[s[0] for s in SWEEPS])
def test_validate_checks_every_grid_point_of_a_sweep(lab, grid, field, words):
    (lab / "bad.sweep.toml").write_text(f'base = "good.toml"\nruns = 3\n[grid]\n{grid}\n')
    before = snapshot(lab)
    r = cli("validate", "bad.sweep.toml", cwd=lab)
    assert r.returncode == 2, (r.stdout, r.stderr)
    msg = assert_one_clean_line(r.stderr)
    assert f"bad.sweep.toml: {field}: " in msg and words in msg, msg
    assert snapshot(lab) == before


@pytest.mark.parametrize("text,field", [
    ('base = "nope.toml"\n', "base"),
    ("base = 3\n", "base"),
    ('base = "good.toml"\nruns = 0\n', "runs"),
    ('base = "good.toml"\n[quick]\n"run.duration" = "-1 s"\n', "run.duration"),
], ids=["base missing", "base not text", "runs 0", "quick override bad"])
def test_a_bad_sweep_header_or_quick_override_is_one_line_naming_the_field(lab, text, field):
    (lab / "bad.sweep.toml").write_text(text)
    before = snapshot(lab)
    for command in (["validate", "bad.sweep.toml"], ["sweep", "bad.sweep.toml", "--quick", "-o", "out", "-q"]):
        r = cli(*command, cwd=lab)
        if command[0] == "sweep" and field == "run.duration":
            # The sweep command builds its quick runs only when it runs them: still exit 2.
            assert r.returncode == 2, r.stderr
            continue
        assert r.returncode == 2, (command, r.stdout, r.stderr)
        msg = assert_one_clean_line(r.stderr)
        assert f"bad.sweep.toml: {field}: " in msg, msg
    assert snapshot(lab) == before and not (lab / "out").exists()


def test_validate_reports_every_bad_file_and_goes_on(lab):
    (lab / "a.toml").write_text(edited(GOOD, '"40 packets"', '"0 packets"'))
    (lab / "b.toml").write_text("[run\n")
    r = cli("validate", "a.toml", "good.toml", "b.toml", "missing.toml", "good.sweep.toml", cwd=lab)
    assert r.returncode == 2
    errors = r.stderr.strip().splitlines()
    assert len(errors) == 3 and "Traceback" not in r.stderr, r.stderr
    assert [e.split(": ")[1] for e in errors] == ["a.toml", "b.toml", "missing.toml"]
    assert r.stdout.count("ok: ") == 2 and "ok: good.sweep.toml: sweep of 2 grid points x 2 runs" in r.stdout


def test_the_readmes_validate_example_accepts_scenarios_and_sweeps():
    files = sorted(str(p.relative_to(ROOT)) for p in (SCENARIOS / "rao2010").glob("*.toml"))
    assert any(f.endswith(".sweep.toml") for f in files)
    r = cli("validate", *files, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("\nok: ") + r.stdout.startswith("ok: ") == len(files), r.stdout


# ---- the Python API: ScenarioError naming the field, never TypeError or OverflowError -----

def small_dict() -> dict:
    return {
        "run": {"duration": "2 s"},
        "network": {"one_way_delay": "10 ms", "bottleneck": {"capacity": "5 Mbit/s", "buffer": "20 packets"}},
        "flows": [{"cc": "newreno"}, {"cc": "ledbat", "start": "1 s"}],
    }


class Custom:
    pass


def _set(path: str, value):
    """An edit of small_dict(): `value` at a dotted path (a number indexes a list)."""
    def edit(d):
        *parents, leaf = path.split(".")
        node = d
        for k in parents:
            node = node[int(k)] if isinstance(node, list) else node[k]
        if isinstance(node, list):
            node[int(leaf)] = value
        else:
            node[leaf] = value
        return d
    return edit


def _cycle(d):
    d["flows"].append(d["flows"])
    return d


def _deep(d):
    node = d["run"]
    for _ in range(200):
        node["x"] = {}
        node = node["x"]
    return d


def _int_key(d):
    d["network"][3] = "x"
    return d


# (id, edit, field, words in the detail)
DICTS = [
    ("NaN", _set("network.loss", {"data": float("nan")}), "network.loss.data", "not a finite number"),
    ("inf", _set("flows.1.start", float("inf")), "flows[1].start", "not a finite number"),
    ("-inf", _set("run.duration", -math.inf), "run.duration", "not a finite number"),
    ("numpy NaN", _set("network.loss", {"data": np.float64("nan")}), "network.loss.data", "not a finite number"),
    ("bytes", _set("network.bottleneck.capacity", b"5 Mbit/s"), "network.bottleneck.capacity", "bytes"),
    ("bytearray", _set("flows.0.cc", bytearray(b"cubic")), "flows[0].cc", "bytearray"),
    ("set", _set("flows.0.cc", {"cubic"}), "flows[0].cc", "set"),
    ("object", _set("run.duration", Custom()), "run.duration", "Custom"),
    ("datetime", _set("run.duration", datetime.timedelta(seconds=2)), "run.duration", "datetime.timedelta"),
    ("complex", _set("run.seed", 1j), "run.seed", "complex"),
    ("int key", _int_key, "network", "every key must be a string"),
    ("int 2^64", _set("run.seed", 2**64), "run.seed", "out of range"),
    ("int below -2^63", _set("run.seed", -(2**63) - 1), "run.seed", "out of range"),
    ("int -1 for a u64", _set("run.seed", -1), "run.seed", ""),
    ("cycle", _cycle, "flows[2]", "contains itself"),
    ("nested too deep", _deep, "run" + ".x" * 63, "nested more than"),
    ("lone surrogate", _set("flows.0.cc", "\ud800"), "flows[0].cc", "not valid Unicode"),
    ("name ../x", _set("name", "../x"), "name", "one plain file name"),
    ("name empty", _set("name", ""), "name", "one plain file name"),
    ("capacity 1 mb", _set("network.bottleneck.capacity", "1 mb/s"), "network.bottleneck.capacity",
     'did you mean "MB/s"'),
]


@pytest.fixture
def no_writes(tmp_path, monkeypatch):
    """Runs the test in an empty current directory and checks it stays empty."""
    monkeypatch.chdir(tmp_path)
    yield
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("edit,field,words", [c[1:] for c in DICTS], ids=[c[0] for c in DICTS])
@pytest.mark.parametrize("call", ["validate", "run"])
def test_a_bad_dict_is_a_scenario_error_naming_the_field(no_writes, call, edit, field, words):
    with pytest.raises(ScenarioError) as e:
        getattr(torrentlab, call)(edit(small_dict()))
    assert type(e.value) is ScenarioError
    assert (e.value.file, e.value.field) == ("<dict>", field), str(e.value)
    assert words in e.value.detail
    assert_one_clean_line(str(e.value))
    assert str(e.value) == f"<dict>: {field}: {e.value.detail}"


# (id, keyword arguments of run(), field, words)
ARGS = [
    ("seed True", {"seed": True}, "seed", "not bool"),
    ("seed float", {"seed": 1.0}, "seed", "not float"),
    ("seed text", {"seed": "1"}, "seed", "not str"),
    ("seed -1", {"seed": -1}, "seed", "from 0 to 18446744073709551615"),
    ("seed 2^64", {"seed": 2**64}, "seed", "from 0 to 18446744073709551615"),
    ("seed numpy -1", {"seed": np.int64(-1)}, "seed", "from 0 to"),
    ("progress not callable", {"progress": 3}, "progress", "callable"),
    ("scenario int", {"scenario": 42}, "scenario", "not int"),
    ("scenario None", {"scenario": None}, "scenario", "not NoneType"),
    ("scenario bytes path", {"scenario": b"a.toml"}, "scenario", "not bytes"),
    ("scenario list", {"scenario": [small_dict()]}, "scenario", "not list"),
]


@pytest.mark.parametrize("kwargs,field,words", [a[1:] for a in ARGS], ids=[a[0] for a in ARGS])
def test_a_bad_argument_of_run_is_a_scenario_error_naming_it(no_writes, kwargs, field, words):
    kwargs = {"scenario": small_dict(), **kwargs}
    with pytest.raises(ScenarioError) as e:
        torrentlab.run(kwargs.pop("scenario"), **kwargs)
    assert (e.value.file, e.value.field) == ("<argument>", field)
    assert words in e.value.detail, e.value.detail
    assert_one_clean_line(str(e.value))


def test_numpy_numbers_and_tuples_in_a_dict_are_plain_numbers_and_lists():
    def doc(seed, window, uniform):
        d = small_dict()
        d["run"]["seed"] = seed
        d["flows"][1]["start"] = {"uniform": uniform}
        d["tcp"] = {"initial_window": window}
        return d

    a = torrentlab.run(doc(np.uint64(7), np.int32(4), ("0 s", "1 s")))
    b = torrentlab.run(doc(7, 4, ["0 s", "1 s"]))
    assert a.summary["seed"][0] == 7
    assert a.flows.equals(b.flows) and a.summary.drop(columns="wall_seconds", errors="ignore").equals(
        b.summary.drop(columns="wall_seconds", errors="ignore"))


def test_the_largest_seed_is_accepted():
    res = torrentlab.run(small_dict(), seed=SEED_MAX)
    assert len(res.flows) == 2
