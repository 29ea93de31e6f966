"""End to end: `torrentlab reproduce testa2012 --quick` (E1), and its pieces."""

import pyarrow.parquet as pq

from conftest import cli
from torrentlab.experiments import scenario_dir
from torrentlab.experiments.testa2012 import CASES, case_of
from torrentlab.sweep import Sweep

FIGURES = ("fig_calibration", "fig_dispositions", "fig_completion", "fig_queue", "fig_share", "fig_t_vs",
           "fig_classes", "fig_summary")


def test_reproduce_quick_runs_every_case_at_every_capacity_and_draws_every_figure(tmp_path):
    out = tmp_path / "e1"
    r = cli("reproduce", "testa2012", "--quick", "-o", str(out), "-q")
    assert r.returncode == 0, r.stderr
    summary = pq.read_table(out / "summary.parquet").to_pandas()
    assert len(summary) == 3 * 6
    assert sorted(summary["C_mbps"].unique()) == [1.0, 2.0, 5.0]
    assert set(summary["case"]) == set(CASES)
    assert (summary["runs"] == 3).all()
    assert (summary["completed"] == "225/225").all(), summary["completed"]
    runs = pq.read_table(out / "runs.parquet").to_pandas()
    # Byte-wise TCP share: none in the uTP swarms (31 among themselves keep
    # uTP; 10 speak nothing else), all of it in the legacy swarm, some in the mixes.
    share = runs.groupby("case")["tcp_byte_share"].agg(["min", "max"])
    assert share.loc["all 10", "max"] == 0 and share.loc["all 5", "min"] == 1
    assert share.loc["all 31", "max"] < 0.01
    for mix in ("13/14 25/75", "13/14 50/50", "13/14 75/25"):
        assert 0 < share.loc[mix, "min"] and share.loc[mix, "max"] < 1, mix
    # More TCP-preferring peers, more TCP bytes.
    means = runs.groupby("case")["tcp_byte_share"].mean()
    assert means["13/14 25/75"] < means["13/14 50/50"] < means["13/14 75/25"]
    # A faster uplink finishes sooner.
    t = summary.groupby("C_mbps")["E_T_s"].mean()
    assert t[1.0] > t[2.0] > t[5.0]
    # Every peer's E[Q] stays within its 1 s buffer.
    up = pq.read_table(out / "uplinks.parquet").to_pandas()
    assert (up["mean_queue_bytes"] <= up["buffer_bytes"]).all()
    pairs = pq.read_table(out / "dispositions.parquet").to_pandas()
    carried = pairs[(pairs["A_to_B_bytes"] + pairs["B_to_A_bytes"]) > 0]
    got = {(int(a), int(b)): set(g["transport"]) for (a, b), g in carried.groupby(["A", "B"])}
    assert got[(13, 14)] == {"utp"} and got[(14, 13)] == {"tcp"} and got[(5, 31)] == {"tcp"}
    assert (10, 5) not in got, "uTP-only and TCP-only peers never talk"
    for fig in FIGURES:
        for ext in (".png", ".svg"):
            assert (out / (fig + ext)).stat().st_size > 5000, fig
    assert "all 31" in r.stdout and "13/14 25/75" in r.stdout


def test_a_main_point_is_named_by_its_leecher_classes():
    sweep = Sweep.from_file(scenario_dir("testa2012") / "main.sweep.toml")
    names = [case_of(dict(params))[0] for params, _ in sweep.point_docs()]
    assert sorted(set(names)) == sorted(CASES)
    _, share = case_of({"peers.1": {"label": "13", "count": 19}, "peers.2": {"label": "14", "count": 56}})
    assert abs(share - 19 / 75) < 1e-12
