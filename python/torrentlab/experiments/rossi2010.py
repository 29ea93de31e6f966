"""E4 `rossi2010`: LEDBAT against TCP and against itself.

D. Rossi, C. Testa, S. Valenti, L. Muscariello, "LEDBAT: the new BitTorrent
congestion control protocol", ICCCN 2010. Runs (a) NewReno vs LEDBAT, (b) LEDBAT
vs LEDBAT, (c) LEDBAT vs a latecomer LEDBAT for three (dT, B), and (d) the
fairness sweep with and without slow start. See docs/experiments/rossi2010.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from torrentlab.experiments import scenario_dir
from torrentlab.output import atomic_dir, write_frame
from torrentlab.plots import cdf, legend, save, table_figure, windows_and_queue
from torrentlab.sweep import Job, Sweep, load_toml, run_jobs, summary_with_params

#: Single runs: key -> (scenario file, caption).
SINGLE_RUNS = {
    "a": ("a-newreno-vs-ledbat.toml", "(a) NewReno vs LEDBAT"),
    "b": ("b-ledbat-vs-ledbat.toml", "(b) LEDBAT vs LEDBAT"),
    "c1": ("c1-latecomer-dt2-b40.toml", "(c) dT = 2 s, B = 40"),
    "c2": ("c2-latecomer-dt10-b40.toml", "(c) dT = 10 s, B = 40"),
    "c3": ("c3-latecomer-dt10-b100.toml", "(c) dT = 10 s, B = 100"),
}
SWEEP = "d.sweep.toml"
METRICS = ["jain_index", "efficiency", "loss_rate"]


@dataclass
class Report:
    """What `reproduce` produced: the summary table and where files went."""

    table: pd.DataFrame
    out_dir: Path
    figures: list[Path]


def single_jobs() -> list[Job]:
    d = scenario_dir("rossi2010")
    jobs = []
    for key, (fname, _) in SINGLE_RUNS.items():
        doc = load_toml(d / fname)
        jobs.append(Job(doc, int(doc.get("run", {}).get("seed", 1)), (("run", key),)))
    return jobs


def summary_table(single: dict[str, pd.DataFrame], sweep: pd.DataFrame) -> pd.DataFrame:
    """F, efficiency and loss per run type: one row per single run, one row per
    (C, B, slow start) point of (d) with the mean and standard deviation over runs."""
    rows = []
    for key, s in single.items():
        r = s.iloc[0]
        rows.append({"run": key, "setting": SINGLE_RUNS[key][1], "runs": 1, **{m: r[m] for m in METRICS}})
    group = ["network.bottleneck.capacity", "network.bottleneck.buffer", "tcp.slow_start"]
    for (cap, buf, ss), g in sweep.groupby(group, sort=False):
        buf = buf.removesuffix(" packets")
        row = {"run": "d", "setting": f"C={cap}, B={buf}, slow start {'on' if ss else 'off'}", "runs": len(g)}
        for m in METRICS:
            row[m] = g[m].mean()
            row[f"{m}_sd"] = g[m].std(ddof=1) if len(g) > 1 else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def figures(results: dict, sweep: pd.DataFrame, out: Path) -> list[Path]:
    """fig_a, fig_b: windows and queue of (a) and (b); fig_c: the same for the
    three latecomer runs side by side; fig_d: CDF of F over the runs of (d) per
    (C, B), slow start off and on. Side by side panels share their curves'
    labels and colours, so only the rightmost has the legend."""
    paths = []
    for key in ("a", "b"):
        res = results[key]
        fig, (aw, aq) = plt.subplots(2, 1, figsize=(6, 4.5), sharex=True, height_ratios=[2, 1])
        windows_and_queue(aw, aq, res.timeseries, res.flows, res.queue, SINGLE_RUNS[key][1])
        paths += save(fig, out / f"fig_{key}")
    fig, axes = plt.subplots(2, 3, figsize=(12, 4.5), sharex=True, height_ratios=[2, 1])
    latecomers = ("c1", "c2", "c3")
    for i, key in enumerate(latecomers):
        res = results[key]
        windows_and_queue(axes[0, i], axes[1, i], res.timeseries, res.flows, res.queue, SINGLE_RUNS[key][1],
                          with_legend=key == latecomers[-1])
    paths += save(fig, out / "fig_c")
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), sharey=True)
    for ax, ss in zip(axes, (False, True), strict=True):
        part = sweep[sweep["tcp.slow_start"] == ss]
        for (cap, buf), g in part.groupby(["network.bottleneck.capacity", "network.bottleneck.buffer"], sort=False):
            cdf(ax, g["jain_index"], f"C={cap}, B={buf}")
        ax.set_title(f"(d) slow start {'on' if ss else 'off'}")
        ax.set_xlabel("Jain's fairness index F")
    legend(axes[-1])
    axes[0].set_ylabel("CDF over runs")
    paths += save(fig, out / "fig_d")
    return paths


def render(report: Report, title: str):
    """The summary as a rich table: F, efficiency and loss per run type."""
    from rich.table import Table

    t = Table(title=title)
    for c in ("run", "setting", "runs", "F", "efficiency", "loss rate"):
        t.add_column(c, justify="left" if c in ("run", "setting") else "right")

    def cell(row, m):
        sd = row.get(f"{m}_sd")
        return f"{row[m]:.3f}" + (f" ± {sd:.3f}" if sd is not None and sd == sd else "")

    for _, row in report.table.iterrows():
        t.add_row(row["run"], row["setting"], str(row["runs"]), cell(row, "jain_index"),
                  cell(row, "efficiency"), f"{row['loss_rate']:.2e}")
    return t


def reproduce(out_dir: str | os.PathLike[str], quick: bool = False, workers: int | None = None,
              show_progress: bool = True, force: bool = False, executor=None) -> Report:
    """Runs E4 (a)-(d) (on `executor`, see :mod:`torrentlab.executors`),
    writes Parquet tables and figures into `out_dir` atomically, and returns
    the summary table."""
    out = Path(out_dir)
    with atomic_dir(out, force=force, kind="reproduce", experiment="rossi2010", quick=quick) as tmp:
        sjobs = single_jobs()
        single = run_jobs(sjobs, workers=workers, describe="rossi2010 (a)-(c)", show_progress=show_progress,
                          executor=executor)
        results = {dict(j.params)["run"]: r for j, r in zip(sjobs, single, strict=True)}
        for key, res in results.items():
            res.write(tmp / "runs" / key)
        sweep = Sweep.from_file(scenario_dir("rossi2010") / SWEEP)
        dres = run_jobs(sweep.jobs(quick=quick), workers=workers, describe="rossi2010 (d) sweep",
                        show_progress=show_progress, keep=summary_with_params, executor=executor,
                        tables=("summary",))
        dsum = pd.concat(dres, ignore_index=True)
        write_frame(dsum, tmp / "d_runs.parquet")
        table = summary_table({k: r.summary for k, r in results.items()}, dsum)
        write_frame(table, tmp / "summary.parquet")
        figs = figures(results, dsum, tmp)
        figs += save(table_figure(table, title="E4: fairness F, efficiency and loss per run",
                                  formats={"loss_rate": ".2e", "loss_rate_sd": ".2e"}), tmp / "fig_summary")
    return Report(table=table, out_dir=out, figures=[out / p.name for p in figs])
