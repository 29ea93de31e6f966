"""End to end: `torrentlab reproduce rossi2010 --quick`."""

import pyarrow.parquet as pq

from conftest import cli
from torrentlab.experiments import scenario_dir
from torrentlab.sweep import Sweep, set_dotted


def test_reproduce_quick_writes_the_summary_tables_and_every_figure(tmp_path):
    out = tmp_path / "e4"
    r = cli("reproduce", "rossi2010", "--quick", "-o", str(out), "-q")
    assert r.returncode == 0, r.stderr
    for run in ("a", "b", "c1", "c2", "c3"):
        assert r.stdout.count(f"│ {run} ") >= 1, r.stdout
    summary = pq.read_table(out / "summary.parquet").to_pandas()
    assert list(summary["run"]) == ["a", "b", "c1", "c2", "c3"] + ["d"] * 8
    assert (summary.loc[summary["run"] == "d", "runs"] == 10).all()
    d = pq.read_table(out / "d_runs.parquet").to_pandas()
    assert len(d) == 80 and d["seed"].nunique() == 10
    assert d["jain_index"].between(0.5, 1.0).all()
    for fig in ("fig_a", "fig_b", "fig_c", "fig_d", "fig_summary"):
        for ext in (".png", ".svg"):
            f = out / (fig + ext)
            assert f.stat().st_size > 5000, f
    assert (out / "fig_a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "runs" / "a" / "queue.parquet").exists()


def test_the_d_sweep_expands_to_every_grid_point_and_seed():
    s = Sweep.from_file(scenario_dir("rossi2010") / "d.sweep.toml")
    jobs = s.jobs()
    assert len(jobs) == 2 * 2 * 2 * 100
    assert {j.seed for j in jobs} == set(range(1, 101))
    caps = {j.scenario["network"]["bottleneck"]["capacity"] for j in jobs}
    assert caps == {"2 Mbit/s", "10 Mbit/s"}
    assert len(s.jobs(quick=True)) == 80


def test_set_dotted_creates_missing_tables():
    doc = {"a": {"b": 1}}
    set_dotted(doc, "a.c.d", 2)
    set_dotted(doc, "a.b", 3)
    assert doc == {"a": {"b": 3, "c": {"d": 2}}}


def test_the_sweep_command_runs_a_calibration_sweep_and_writes_both_tables(tmp_path):
    from conftest import SCENARIOS

    out = tmp_path / "alone"
    r = cli("sweep", str(SCENARIOS / "calibration" / "alone.sweep.toml"), "-o", str(out), "-q")
    assert r.returncode == 0, r.stderr
    runs = pq.read_table(out / "runs.parquet").to_pandas()
    flows = pq.read_table(out / "flows.parquet").to_pandas()
    assert len(runs) == 14 and len(flows) == 14
    assert set(flows["transport"]) == {"tcp", "utp"}
    assert set(flows["cc"]) == {"newreno", "cubic", "vegas", "lp", "nice", "ledbat", "ledbat-bep29"}
    assert "transport=utp" in r.stdout


def test_a_sweep_naming_a_missing_field_is_a_clear_error(tmp_path):
    from conftest import SCENARIOS

    base = (SCENARIOS / "calibration" / "pair.toml").read_text()
    (tmp_path / "pair.toml").write_text(base)
    sweep = tmp_path / "bad.sweep.toml"
    sweep.write_text('base = "pair.toml"\n[grid]\n"flows.7.cc" = ["cubic"]\n')
    r = cli("sweep", str(sweep), "-o", str(tmp_path / "o"))
    assert r.returncode == 2
    assert "grid.flows.7.cc" in r.stderr and "does not name a field" in r.stderr
    assert not (tmp_path / "o").exists()
