"""End to end: `torrentlab reproduce testa2013 --quick` (E2), and its Spearman table."""

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from conftest import cli
from torrentlab.experiments.testa2013 import APPS, spearman_table


def test_reproduce_quick_runs_every_swarm_and_writes_the_spearman_table(tmp_path):
    out = tmp_path / "e2"
    r = cli("reproduce", "testa2013", "--quick", "-o", str(out), "-q")
    assert r.returncode == 0, r.stderr
    runs = pq.read_table(out / "runs.parquet").to_pandas()
    assert len(runs) == 12 * 3
    assert (runs["completed"] == 75).all()
    assert set(runs.loc[runs["homogeneous"], "swarm"]) == set(APPS)
    assert runs["homogeneous"].sum() == 21
    # Only the swarms with a uTorrent class are not BT-only.
    ut = runs["swarm"].str.contains("UT:")
    assert (runs["bt_only"] == ~ut).all()
    leechers = pq.read_table(out / "leechers.parquet").to_pandas()
    # UT:uTP keeps its uplink queue lower than BT:Cubic (LEDBAT's 100 ms target).
    b = leechers[leechers["homogeneous"]].groupby("swarm")["B_bytes"].median()
    assert b["UT:uTP"] < b["BT:Cubic"]
    rho = pq.read_table(out / "spearman.parquet").to_pandas()
    assert list(rho["applications"]) == ["UT and BT"] * 3 + ["BT only"] * 3
    assert list(rho["n"]) == [21, 15, 36, 15, 12, 27]
    cols = [c for c in rho.columns if c.startswith("rho_")]
    assert len(cols) == 4 and rho[cols].abs().le(1).all().all()
    for fig in ("fig_homogeneous", "fig_heterogeneous", "fig_t_vs_b", "fig_swarms", "fig_summary"):
        assert (out / f"{fig}.png").stat().st_size > 5000, fig
    assert "BT only" in r.stdout


def test_spearman_is_one_for_a_monotone_relation_and_minus_one_for_a_reversed_one():
    n = 8
    base = {"homogeneous": [True] * 4 + [False] * 4, "bt_only": [True] * n}
    t = np.arange(n, dtype=float)
    up = pd.DataFrame({**base, "T_median_s": t, "T_p90_s": t * 2, "B_median_bytes": t ** 3, "B_p90_bytes": -t})
    table = spearman_table(up)
    row = table[(table["applications"] == "UT and BT") & (table["swarms"] == "all")].iloc[0]
    assert row["rho_Tmedian_Bmedian"] == 1.0 and row["rho_Tp90_Bp90"] == -1.0
    assert row["n"] == n
    few = table[table["swarms"] == "homogeneous"].iloc[0]
    assert few["n"] == 4 and few["rho_Tmedian_Bmedian"] == 1.0
    # Fewer than three swarms: no coefficient.
    assert np.isnan(spearman_table(up.iloc[:2])["rho_Tmedian_Bmedian"].iloc[0])
