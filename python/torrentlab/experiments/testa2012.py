"""E1 `testa2012`: completion time in homogeneous and mixed TCP/uTP swarms.

C. Testa, D. Rossi, A. Rao, A. Legout, "Experimental Assessment of BitTorrent
Completion Time in Heterogeneous TCP/uTP swarms", TMA 2012. The local
calibration (a single uTP flow at 5 Mbit/s with targets 25 and 100 ms; the
disposition cases between two leechers) and the main runs: 1 seed + 75
uTorrent leechers, uplinks at C = 1, 2, 5 Mbit/s with 1 s buffers, every
homogeneous swarm (31, 10, 5) and the 13/14 mixes, 3 iterations each. See
docs/experiments/testa2012.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from torrentlab.api import RunResult
from torrentlab.experiments import scenario_dir
from torrentlab.output import atomic_dir, write_frame
from torrentlab.plots import (
    bars,
    ccdf_from_histogram,
    cdf,
    cdf_envelope,
    legend,
    save,
    table_figure,
    timeseries,
)
from torrentlab.sweep import Job, Sweep, load_toml, run_jobs

MAIN = "main.sweep.toml"
PAIRS = "pairs.sweep.toml"
#: Calibration (a): the uTP target (ms) -> its scenario in scenarios/calibration.
CALIBRATION = {25: "utp-alone-5mbit-target25.toml", 100: "utp-alone-5mbit-target100.toml"}
#: The cases in the study's order.
CASES = ["all 31", "all 10", "all 5", "13/14 25/75", "13/14 50/50", "13/14 75/25"]


@dataclass
class Report:
    """What `reproduce` produced: the summary table and where files went."""

    table: pd.DataFrame
    out_dir: Path
    figures: list[Path]


def case_of(params: dict) -> tuple[str, float]:
    """A main run's case from its two leecher classes, and the share of its
    leechers that attempt TCP only (13s) in a mix (NaN when homogeneous)."""
    a, b = params["peers.1"], params["peers.2"]
    if a["label"] == b["label"]:
        return f"all {a['label']}", float("nan")
    share = a["count"] / (a["count"] + b["count"])
    pct = round(100 * share / 25) * 25
    return f"{a['label']}/{b['label']} {pct}/{100 - pct}", share


def _mbps(rate: str) -> float:
    return float(str(rate).removesuffix(" Mbit/s"))


def keep_main(job: Job, res: RunResult) -> dict[str, pd.DataFrame]:
    """What each main run keeps: its leechers' completion times, its uplinks'
    E[Q], its pooled queueing-delay histogram and one row of run measures."""
    params = dict(job.params)
    case, share = case_of(params)
    extra = {"case": case, "C_mbps": _mbps(params["network.access.up"]), "iteration": job.seed}
    peers = res.peers
    leechers = peers[peers["role"] == "leecher"][["peer", "class", "download_time_s"]].assign(**extra)
    up = res.uplinks[["peer", "capacity_bps", "buffer_bytes", "mean_queue_bytes", "mean_delay_ms",
                      "dropped_packets", "served_packets"]].assign(**extra)
    d = res.uplink_delays.groupby(["delay_lo_ms", "delay_hi_ms"], as_index=False)["packets"].sum().assign(**extra)
    tr = res.transports.set_index("transport")["piece_bytes"]
    tcp, utp = int(tr.get("tcp", 0)), int(tr.get("utp", 0))
    t = leechers["download_time_s"]
    run = pd.DataFrame([{
        **extra, "tcp_preferring_share": share, "leechers": len(leechers), "completed": int(t.notna().sum()),
        "mean_T_s": t.mean(), "sd_T_s": t.std(ddof=1), "tcp_piece_bytes": tcp, "utp_piece_bytes": utp,
        "tcp_byte_share": tcp / (tcp + utp) if tcp + utp else float("nan"),
        "mean_queue_bytes": up["mean_queue_bytes"].mean(), "end_s": float(res.summary["end_s"].iloc[0]),
    }])
    return {"runs": run, "peers": leechers, "uplinks": up, "delays": d}


def keep_pair(job: Job, res: RunResult) -> pd.DataFrame:
    """A two-leecher run: each connection between the leechers (1 = A,
    2 = B), its transport and the piece bytes each way."""
    a, b = (dict(job.params)["peers.1.disposition+peers.2.disposition"])
    c = res.connections
    between = c[c["initiator"].isin([1, 2]) & c["acceptor"].isin([1, 2])]
    rows = []
    for _, r in between.iterrows():
        fwd, rev = int(r["piece_bytes_forward"]), int(r["piece_bytes_reverse"])
        a_to_b, b_to_a = (fwd, rev) if r["initiator"] == 1 else (rev, fwd)
        rows.append({"A": a, "B": b, "dialler": "A" if r["initiator"] == 1 else "B",
                     "transport": r["transport"], "A_to_B_bytes": a_to_b, "B_to_A_bytes": b_to_a,
                     "opened_s": r["opened_s"], "closed_s": r["closed_s"]})
    if not rows:
        rows.append({"A": a, "B": b, "dialler": "", "transport": "none", "A_to_B_bytes": 0, "B_to_A_bytes": 0,
                     "opened_s": float("nan"), "closed_s": float("nan")})
    return pd.DataFrame(rows)


def summary_table(runs: pd.DataFrame, peers: pd.DataFrame) -> pd.DataFrame:
    """One row per (C, case): E[T] and sigma[T] over every leecher of the
    iterations (the spread of the iterations' own means as `sd_mean_T_s`),
    the byte-wise TCP share, E[Q] and the runs."""
    rows = []
    for (c, case), g in runs.groupby(["C_mbps", "case"], sort=False):
        t = peers[(peers["C_mbps"] == c) & (peers["case"] == case)]["download_time_s"]
        rows.append({
            "C_mbps": c, "case": case, "runs": len(g),
            "completed": f"{int(g['completed'].sum())}/{int(g['leechers'].sum())}",
            "E_T_s": t.mean(), "sigma_T_s": t.std(ddof=1),
            "sd_mean_T_s": g["mean_T_s"].std(ddof=1) if len(g) > 1 else float("nan"),
            "tcp_byte_share": g["tcp_byte_share"].mean(), "E_Q_kB": g["mean_queue_bytes"].mean() / 1e3,
        })
    t = pd.DataFrame(rows)
    t["case"] = pd.Categorical(t["case"], CASES, ordered=True)
    return t.sort_values(["C_mbps", "case"]).reset_index(drop=True).assign(case=lambda d: d["case"].astype(str))


def _panels(n: int, tables: bool = False, **kw):
    """A row of `n` panels; with `tables`, a row of table cells under them
    (for each panel's E[T], sigma[T] or E[Q], which never cover a curve)."""
    if not tables:
        fig, axes = plt.subplots(1, n, figsize=(3.6 * n, 3.3), squeeze=False, **kw)
        return fig, axes[0], None
    fig, axes = plt.subplots(2, n, figsize=(3.6 * n, 4.8), squeeze=False, height_ratios=[3, 1.2],
                             gridspec_kw={"hspace": 0.45}, **kw)
    for t in axes[1]:
        t.axis("off")
    return fig, axes[0], axes[1]


def _table(ax, cells: list[list[str]], columns: list[str]) -> None:
    """`cells` as a small table filling `ax` (an axes turned off)."""
    t = ax.table(cellText=cells, colLabels=columns, bbox=(0.0, 0.0, 1.0, 1.0))
    t.auto_set_font_size(False)
    t.set_fontsize(6.5)
    for cell in t.get_celld().values():
        cell.set_linewidth(0.3)


def fig_calibration(cal: dict[int, RunResult], out: Path) -> list[Path]:
    """Calibration (a): a lone uTP flow on a 5 Mbit/s link, targets 25 and
    100 ms: its throughput (top) and RTT (bottom) over time."""
    fig, (ax_r, ax_d) = plt.subplots(2, 1, figsize=(6, 4.5), sharex=True)
    for target, res in cal.items():
        ts = res.timeseries
        timeseries(ax_r, ts["time_s"], ts["goodput_bps"] / 1e6, label=f"target {target} ms")
        timeseries(ax_d, ts["time_s"], ts["srtt_ms"], label=f"target {target} ms")
    ax_r.set_ylabel("throughput [Mbit/s]")
    ax_d.set_ylabel("smoothed RTT [ms]")
    ax_d.set_xlabel("time [s]")
    legend(ax_r)
    ax_r.set_title("Calibration (a): one uTP flow, 5 Mbit/s, 1 s buffer")
    return save(fig, out / "fig_calibration")


def fig_completion(peers: pd.DataFrame, out: Path) -> list[Path]:
    """Completion-time CDFs per case, one panel per C: the CDF over every
    leecher of the iterations, the band between the iterations' own CDFs,
    and a table of E[T] and sigma[T] under each panel."""
    cs = sorted(peers["C_mbps"].unique())
    fig, axes, below = _panels(len(cs), tables=True)
    for ax, tab, c in zip(axes, below, cs, strict=True):
        part = peers[peers["C_mbps"] == c]
        cells = []
        for case in [k for k in CASES if k in set(part["case"])]:
            g = part[part["case"] == case]
            groups = [it["download_time_s"] for _, it in g.groupby("iteration")]
            cdf_envelope(ax, groups, case)
            t = g["download_time_s"]
            cells.append([case, f"{t.mean():.0f}", f"{t.std(ddof=1):.0f}"])
        ax.set_title(f"C = {c:g} Mbit/s")
        ax.set_xlabel("completion time T [s]")
        _table(tab, cells, ["case", "E[T] s", "σ[T] s"])
    axes[0].set_ylabel("CDF over leechers")
    legend(axes[-1])
    return save(fig, out / "fig_completion")


def fig_queue(delays: pd.DataFrame, runs: pd.DataFrame, out: Path) -> list[Path]:
    """CCDF of the uplink queue over every packet served at every peer's
    uplink, per case, one panel per C: queueing delay on the top axis (ms),
    the queue it means at C on the bottom axis (kB); under each panel a
    table of E[Q], the time-averaged queue (the mean over peers and
    iterations)."""
    cs = sorted(delays["C_mbps"].unique())
    fig, axes, below = _panels(len(cs), tables=True)
    for ax, tab, c in zip(axes, below, cs, strict=True):
        kb_per_ms = c * 1e6 / 8 / 1e3 / 1e3  # kB of queue per ms of delay at C
        part = delays[delays["C_mbps"] == c]
        cells = []
        for case in [k for k in CASES if k in set(part["case"])]:
            g = part[part["case"] == case]
            eq = runs[(runs["C_mbps"] == c) & (runs["case"] == case)]["mean_queue_bytes"].mean() / 1e3
            ccdf_from_histogram(ax, g["delay_lo_ms"] * kb_per_ms, g["packets"], case)
            cells.append([case, f"{eq:.1f}"])
        _table(tab, cells, ["case", "E[Q] kB"])
        ax.set_xlabel("queue at the uplink [kB]")
        top = ax.secondary_xaxis("top", functions=(lambda x, k=kb_per_ms: x / k, lambda x, k=kb_per_ms: x * k))
        top.set_xlabel("queueing delay [ms]")
        ax.set_title(f"C = {c:g} Mbit/s", fontsize=8, pad=22)
        ax.set_ylim(1e-4, 1.05)
    legend(axes[-1])
    axes[0].set_ylabel("CCDF over packets served")
    return save(fig, out / "fig_queue")


def fig_share(runs: pd.DataFrame, out: Path) -> list[Path]:
    """The byte-wise TCP share of piece data per case, bars grouped by C
    (the mean over iterations, with their range)."""
    cs = sorted(runs["C_mbps"].unique())
    fig, ax = plt.subplots(figsize=(7, 3.3))
    width = 0.8 / len(cs)
    cases = [k for k in CASES if k in set(runs["case"])]
    for i, c in enumerate(cs):
        g = runs[runs["C_mbps"] == c].groupby("case")["tcp_byte_share"].agg(["mean", "min", "max"]).reindex(cases)
        x = np.arange(len(cases)) + (i - (len(cs) - 1) / 2) * width
        bars(ax, x, g["mean"], f"C = {c:g} Mbit/s", lo=g["min"], hi=g["max"], width=width)
    ax.set_xticks(np.arange(len(cases)), cases)
    ax.set_ylabel("TCP share of piece bytes")
    ax.set_ylim(0, 1.05)
    legend(ax)
    return save(fig, out / "fig_share")


def fig_t_vs(runs: pd.DataFrame, out: Path) -> list[Path]:
    """Mean completion time per run against the byte-wise TCP share (with a
    least-squares line over the runs whose share is not 0) and against the
    mean uplink queue, one colour per C."""
    fig, (ax_s, ax_q) = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for c, g in runs.groupby("C_mbps"):
        pts = ax_s.scatter(g["tcp_byte_share"], g["mean_T_s"], s=10, label=f"C = {c:g} Mbit/s")
        nz = g[g["tcp_byte_share"] > 0]
        if len(nz) >= 2 and nz["tcp_byte_share"].nunique() > 1:
            slope, icpt = np.polyfit(nz["tcp_byte_share"], nz["mean_T_s"], 1)
            x = np.linspace(nz["tcp_byte_share"].min(), nz["tcp_byte_share"].max(), 2)
            ax_s.plot(x, slope * x + icpt, color=pts.get_facecolor()[0], lw=1,
                      label=f"fit: {slope:+.0f} s per unit share")
        ax_q.scatter(g["mean_queue_bytes"] / 1e3, g["mean_T_s"], s=10, label=f"C = {c:g} Mbit/s")
    ax_s.set_xlabel("TCP share of piece bytes")
    ax_s.set_ylabel("mean completion time per run [s]")
    ax_q.set_xlabel("mean uplink queue E[Q] [kB]")
    # Both panels' entries (points and fits) in one legend to the right.
    handles, labels = ax_s.get_legend_handles_labels()
    ax_q.legend(handles, labels, fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left", borderaxespad=0)
    return save(fig, out / "fig_t_vs")


def fig_classes(peers: pd.DataFrame, out: Path) -> list[Path]:
    """Completion-time CDFs per peer class (13 and 14) in each mixed case,
    one panel per C."""
    mixed = peers[peers["case"].str.startswith("13/14")]
    cs = sorted(mixed["C_mbps"].unique())
    if not cs:
        return []
    fig, axes, _ = _panels(len(cs))
    for ax, c in zip(axes, cs, strict=True):
        part = mixed[mixed["C_mbps"] == c]
        for case in [k for k in CASES if k in set(part["case"])]:
            for cls, g in part[part["case"] == case].groupby("class"):
                cdf(ax, g["download_time_s"], f"{case}: {cls}s", ls="-" if cls == "13" else "--")
        ax.set_title(f"C = {c:g} Mbit/s")
        ax.set_xlabel("completion time T [s]")
    axes[0].set_ylabel("CDF over the class's leechers")
    legend(axes[-1])
    return save(fig, out / "fig_classes")


def render(report: Report, title: str):
    """The summary as a rich table."""
    from rich.table import Table

    t = Table(title=title)
    for c in ("C", "case", "runs", "done", "E[T] s", "σ[T] s", "TCP share", "E[Q] kB"):
        t.add_column(c, justify="left" if c == "case" else "right")
    for _, r in report.table.iterrows():
        t.add_row(f"{r['C_mbps']:g}", r["case"], str(r["runs"]), r["completed"], f"{r['E_T_s']:.0f}",
                  f"{r['sigma_T_s']:.0f}", f"{r['tcp_byte_share']:.2f}", f"{r['E_Q_kB']:.0f}")
    return t


def reproduce(out_dir: str | os.PathLike[str], quick: bool = False, workers: int | None = None,
              show_progress: bool = True, force: bool = False, executor=None) -> Report:
    """Runs E1 (on `executor`, see :mod:`torrentlab.executors`): the
    calibration runs, the two-leecher disposition cases and the main sweep;
    writes Parquet tables and figures into `out_dir` atomically; returns the
    summary table."""
    out = Path(out_dir)
    d = scenario_dir("testa2012")
    with atomic_dir(out, force=force, kind="reproduce", experiment="testa2012", quick=quick) as tmp:
        cal_jobs = []
        for target, fname in CALIBRATION.items():
            doc = load_toml(scenario_dir("calibration") / fname)
            cal_jobs.append(Job(doc, int(doc.get("run", {}).get("seed", 1)), (("target_ms", target),)))
        cal = run_jobs(cal_jobs, workers=workers, describe="testa2012 calibration (a)", show_progress=show_progress,
                       executor=executor, tables=("timeseries",))
        cal = {dict(j.params)["target_ms"]: r for j, r in zip(cal_jobs, cal, strict=True)}
        cal_ts = pd.concat([r.timeseries.assign(target_ms=t) for t, r in cal.items()], ignore_index=True)
        write_frame(cal_ts, tmp / "calibration_timeseries.parquet")
        pairs = Sweep.from_file(d / PAIRS)
        pair_rows = run_jobs(pairs.jobs(quick=quick), workers=workers, describe="testa2012 dispositions (b)",
                             show_progress=show_progress, keep=keep_pair, executor=executor,
                             tables=("connections",))
        pair_table = pd.concat(pair_rows, ignore_index=True)
        write_frame(pair_table, tmp / "dispositions.parquet")
        main = Sweep.from_file(d / MAIN)
        kept = run_jobs(main.jobs(quick=quick), workers=workers, describe="testa2012 main runs",
                        show_progress=show_progress, keep=keep_main, executor=executor,
                        tables=("summary", "peers", "uplinks", "uplink_delays", "transports"))
        tables = {k: pd.concat([r[k] for r in kept], ignore_index=True) for k in ("runs", "peers", "uplinks", "delays")}
        for name, df in tables.items():
            write_frame(df, tmp / f"{name}.parquet")
        table = summary_table(tables["runs"], tables["peers"])
        write_frame(table, tmp / "summary.parquet")
        figs = fig_calibration(cal, tmp)
        figs += save(table_figure(pair_table.drop(columns=["opened_s", "closed_s"]),
                                  title="E1 (b): connections between leechers A and B (B dials A)"),
                     tmp / "fig_dispositions")
        figs += fig_completion(tables["peers"], tmp)
        figs += fig_queue(tables["delays"], tables["runs"], tmp)
        figs += fig_share(tables["runs"], tmp)
        figs += fig_t_vs(tables["runs"], tmp)
        figs += fig_classes(tables["peers"], tmp)
        figs += save(table_figure(table, title="E1: completion time, TCP share and queue per case",
                                  formats={"E_T_s": ".0f", "sd_mean_T_s": ".0f", "sigma_T_s": ".0f",
                                           "tcp_byte_share": ".2f", "E_Q_kB": ".0f"}), tmp / "fig_summary")
    return Report(table=table, out_dir=out, figures=[out / p.name for p in figs])
