"""E2 `testa2013`: data-plane throughput against control-plane delay.

C. Testa, D. Rossi, A. Rao, A. Legout, "Data Plane Throughput vs Control
Plane Delay: Experimental Study of BitTorrent Performance", IEEE P2P 2013.
1 seed + 75 leechers, 100 MB; leecher uplinks at 1 Mbit/s, the seed's at 5,
1 s buffers, upload limits at 5 x the uplink. Applications: BT (mainline over
TCP Cubic, NewReno, Vegas, Nice or LP) and UT (uTorrent dual stack, or TCP
only); homogeneous swarms and half-Cubic mixes; the Spearman rank
correlation of completion time and queue across swarms. See
docs/experiments/testa2013.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from torrentlab.api import RunResult
from torrentlab.experiments import scenario_dir
from torrentlab.output import atomic_dir, write_frame
from torrentlab.plots import cdf, legend, save, table_figure
from torrentlab.sweep import Job, Sweep, run_jobs

MAIN = "main.sweep.toml"
#: The applications in the study's order.
APPS = ["BT:Cubic", "BT:NewReno", "BT:Vegas", "BT:Nice", "BT:LP", "UT:uTP", "UT:Cubic"]
#: The Spearman table's measures: (T statistic, B statistic).
PAIRS = [("median", "median"), ("median", "p90"), ("p90", "median"), ("p90", "p90")]


@dataclass
class Report:
    """What `reproduce` produced: the Spearman table and where files went."""

    table: pd.DataFrame
    out_dir: Path
    figures: list[Path]


def swarm_of(params: dict) -> tuple[str, bool]:
    """A run's swarm name (`BT:Vegas`, or `BT:Cubic + UT:uTP`) and whether it
    is homogeneous."""
    a, b = params["peers.1"]["label"], params["peers.2"]["label"]
    return (a, True) if a == b else (f"{a} + {b}", False)


def keep_run(job: Job, res: RunResult) -> dict[str, pd.DataFrame]:
    """Each leecher's completion time T and mean uplink queue B, with its
    application, and one row of the run's statistics of both."""
    swarm, homogeneous = swarm_of(dict(job.params))
    extra = {"swarm": swarm, "homogeneous": homogeneous, "iteration": job.seed}
    p = res.peers
    up = res.uplinks.set_index("peer")["mean_queue_bytes"]
    leechers = p[p["role"] == "leecher"][["peer", "class", "client", "download_time_s"]].copy()
    leechers["B_bytes"] = leechers["peer"].map(up)
    leechers = leechers.rename(columns={"class": "app", "download_time_s": "T_s"}).assign(**extra)
    t, b = leechers["T_s"], leechers["B_bytes"]
    run = pd.DataFrame([{
        **extra, "bt_only": bool((p["client"] == "mainline").all()), "completed": int(t.notna().sum()),
        "leechers": len(leechers), "T_median_s": t.median(), "T_p90_s": t.quantile(0.9),
        "B_median_bytes": b.median(), "B_p90_bytes": b.quantile(0.9),
    }])
    return {"runs": run, "leechers": leechers}


def spearman_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Spearman's rank correlation across swarms (runs) between the median
    or 90th percentile of T and the median or 90th percentile of B, for the
    swarms of every application and of mainline (BT) only, homogeneous,
    heterogeneous and both; with its two-sided p-value (scipy.stats)."""
    from scipy.stats import spearmanr

    rows = []
    for apps, sel in (("UT and BT", runs), ("BT only", runs[runs["bt_only"]])):
        for kind, part in (("homogeneous", sel[sel["homogeneous"]]), ("heterogeneous", sel[~sel["homogeneous"]]),
                           ("all", sel)):
            row = {"applications": apps, "swarms": kind, "n": len(part)}
            for ts, bs in PAIRS:
                x, y = part[f"T_{ts}_s"], part[f"B_{bs}_bytes"]
                ok = x.notna() & y.notna()
                if ok.sum() >= 3 and x[ok].nunique() > 1 and y[ok].nunique() > 1:
                    r = spearmanr(x[ok], y[ok])
                    rho, pv = float(r.statistic), float(r.pvalue)
                else:
                    rho, pv = float("nan"), float("nan")
                row[f"rho_T{ts}_B{bs}"] = rho
                row[f"p_T{ts}_B{bs}"] = pv
            rows.append(row)
    return pd.DataFrame(rows)


def per_swarm(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per swarm: its statistics averaged over the iterations."""
    cols = ["T_median_s", "T_p90_s", "B_median_bytes", "B_p90_bytes"]
    g = runs.groupby(["swarm", "homogeneous"], sort=False)
    t = g[cols].mean().reset_index()
    t["runs"] = g.size().to_numpy()
    t["completed"] = (g["completed"].sum().astype(str) + "/" + g["leechers"].sum().astype(str)).to_numpy()
    return t


def fig_homogeneous(leechers: pd.DataFrame, out: Path) -> list[Path]:
    """Homogeneous swarms: the CDF of T over every leecher of the
    iterations (left) and of B, each peer's mean uplink queue (right), one
    curve per application."""
    fig, (ax_t, ax_b) = plt.subplots(1, 2, figsize=(9, 3.4))
    part = leechers[leechers["homogeneous"]]
    for app in [a for a in APPS if a in set(part["swarm"])]:
        g = part[part["swarm"] == app]
        # UT dashed: UT:Cubic runs mainline's algorithms over the same TCP as
        # BT:Cubic, so its curves lie on BT:Cubic's.
        style = {"ls": "--"} if app.startswith("UT") else {}
        cdf(ax_t, g["T_s"], app, **style)
        cdf(ax_b, g["B_bytes"] / 1e3, app, **style)
    ax_t.set_xlabel("completion time T [s]")
    ax_b.set_xlabel("mean uplink queue B [kB]")
    ax_t.set_ylabel("CDF over leechers")
    ax_t.set_title("homogeneous swarms")
    legend(ax_b)
    return save(fig, out / "fig_homogeneous")


def fig_heterogeneous(leechers: pd.DataFrame, out: Path) -> list[Path]:
    """Each half-Cubic swarm: the CDF of T per application class (the two
    halves), one panel per swarm; an application has one colour in every
    panel, and one legend to the right of the panels lists them."""
    part = leechers[~leechers["homogeneous"]]
    swarms = list(dict.fromkeys(part["swarm"]))
    if not swarms:
        return []
    apps = [a for a in APPS if a in set(part["app"])] + [a for a in dict.fromkeys(part["app"]) if a not in APPS]
    fig, axes = plt.subplots(1, len(swarms), figsize=(2.8 * len(swarms), 3.2), sharey=True, squeeze=False)
    for ax, s in zip(axes[0], swarms, strict=True):
        g = part[part["swarm"] == s]
        for app, h in g.groupby("app", sort=False):
            cdf(ax, h["T_s"], app, color=f"C{apps.index(app) % 10}")
        ax.set_title(s, fontsize=8)
        ax.set_xlabel("T [s]")
    axes[0][0].set_ylabel("CDF over the class's leechers")
    handles = {h.get_label(): h for ax in axes[0] for h in ax.get_legend_handles_labels()[0]}
    legend(axes[0][-1], title="application", handles=[handles[a] for a in apps if a in handles])
    return save(fig, out / "fig_heterogeneous")


def fig_t_vs_b(runs: pd.DataFrame, out: Path) -> list[Path]:
    """Median T against median B per run, homogeneous and heterogeneous
    swarms marked apart: the cloud the rank correlations summarise."""
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for homog, marker in ((True, "o"), (False, "^")):
        part = runs[runs["homogeneous"] == homog]
        for swarm, g in part.groupby("swarm", sort=False):
            ax.scatter(g["B_median_bytes"] / 1e3, g["T_median_s"], s=14, marker=marker, label=swarm)
    ax.set_xlabel("median B over the swarm's leechers [kB]")
    ax.set_ylabel("median T [s]")
    legend(ax)
    return save(fig, out / "fig_t_vs_b")


def render(report: Report, title: str):
    """The Spearman table as a rich table."""
    from rich.table import Table

    t = Table(title=title)
    for c in ("applications", "swarms", "n", *(f"ρ(T{a}, B{b})" for a, b in PAIRS)):
        t.add_column(c, justify="left" if c in ("applications", "swarms") else "right")
    for _, r in report.table.iterrows():
        cells = [f"{r[f'rho_T{a}_B{b}']:+.2f}" if r[f"rho_T{a}_B{b}"] == r[f"rho_T{a}_B{b}"] else "-"
                 for a, b in PAIRS]
        t.add_row(r["applications"], r["swarms"], str(r["n"]), *cells)
    return t


def reproduce(out_dir: str | os.PathLike[str], quick: bool = False, workers: int | None = None,
              show_progress: bool = True, force: bool = False, executor=None) -> Report:
    """Runs E2's swarms (on `executor`, see :mod:`torrentlab.executors`),
    writes Parquet tables and figures into `out_dir` atomically, and returns
    the Spearman table."""
    out = Path(out_dir)
    with atomic_dir(out, force=force, kind="reproduce", experiment="testa2013", quick=quick) as tmp:
        sweep = Sweep.from_file(scenario_dir("testa2013") / MAIN)
        kept = run_jobs(sweep.jobs(quick=quick), workers=workers, describe="testa2013 swarms",
                        show_progress=show_progress, keep=keep_run, executor=executor,
                        tables=("peers", "uplinks"))
        runs = pd.concat([k["runs"] for k in kept], ignore_index=True)
        leechers = pd.concat([k["leechers"] for k in kept], ignore_index=True)
        write_frame(runs, tmp / "runs.parquet")
        write_frame(leechers, tmp / "leechers.parquet")
        swarms = per_swarm(runs)
        write_frame(swarms, tmp / "swarms.parquet")
        table = spearman_table(runs)
        write_frame(table, tmp / "spearman.parquet")
        figs = fig_homogeneous(leechers, tmp)
        figs += fig_heterogeneous(leechers, tmp)
        figs += fig_t_vs_b(runs, tmp)
        swarm_fmt = {"T_median_s": ".0f", "T_p90_s": ".0f", "B_median_bytes": ".3g", "B_p90_bytes": ".3g"}
        figs += save(table_figure(swarms, title="E2: completion time T and uplink queue B per swarm",
                                  formats=swarm_fmt), tmp / "fig_swarms")
        fmt = {c: "+.2f" for c in table.columns if c.startswith("rho_")} | {
            c: ".2g" for c in table.columns if c.startswith("p_")}
        figs += save(table_figure(table, title="E2: Spearman's ρ across swarms (T against B)", formats=fmt),
                     tmp / "fig_summary")
    return Report(table=table, out_dir=out, figures=[out / p.name for p in figs])

