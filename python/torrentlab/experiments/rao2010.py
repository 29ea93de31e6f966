"""E0 `rao2010`: latency and loss in a BitTorrent flash crowd.

A. Rao, A. Legout, W. Dabbous, "Can realistic BitTorrent experiments be
performed on clusters?", IEEE P2P 2010. One seed and 300 leechers (mainline
4.0.x over TCP Cubic) share a 50 MB file; the sweeps vary the RTT between
peers and the upload limits, place peers in emulated ASes, and add 5 % ingress
loss with TSO off and on. See docs/experiments/rao2010.md.
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
from torrentlab.plots import bars, cdf, cdf_from_histogram, errorbar_sweep, legend, save, table_figure, timeseries
from torrentlab.sweep import Job, Sweep, label, run_jobs

SWEEPS = {"rtt": "rtt.sweep.toml", "as": "as.sweep.toml", "loss": "loss.sweep.toml"}
LIMITS = "peers.0.upload_limit+peers.1.upload_limit"
AS_KEY = "peers.1.group+peers.2.group+peers.3.group+peers.0.group+network.tracker_group"
AS_LIMITS = "peers.0.upload_limit+peers.1.upload_limit+peers.2.upload_limit+peers.3.upload_limit"


@dataclass
class Report:
    """What `reproduce` produced: the summary table and where files went."""

    table: pd.DataFrame
    out_dir: Path
    figures: list[Path]


def limits_label(v) -> str:
    """``["50 kB/s", "20 kB/s"]`` -> ``"seed 50 / leechers 20 kB/s"``."""
    seed, leech = (x.removesuffix(" kB/s") for x in (v[0], v[1]))
    return f"{seed}/{leech} kB/s" if seed != leech else f"{seed} kB/s"


def _keep(sweep: str):
    """What to keep of each run: its summary and histograms (with the grid
    parameters and seed), and the HAVE log of the first seed."""

    def keep(job: Job, res: RunResult) -> dict[str, pd.DataFrame]:
        extra = {"sweep": sweep, "seed": job.seed}
        for k, v in job.params:
            extra[k] = label(v) if isinstance(v, (list, dict)) else v
        kept = {
            "summary": res.summary.assign(**extra),
            "send_gaps": res.send_gaps.assign(**extra),
            "payload_lengths": res.payload_lengths.assign(**extra),
        }
        if job.seed == 1:
            kept["haves"] = res.haves.assign(**extra)
            if sweep == "rtt":
                kept["sends"] = res.sends.assign(**extra)
        return kept

    return keep


def _params_of(job: Job) -> dict:
    return dict(job.params)


def run_all(quick: bool, workers: int | None, show_progress: bool, executor=None) -> dict[str, pd.DataFrame]:
    """Runs the three sweeps (on `executor`, default a thread pool of
    `workers`); returns each kept table concatenated over runs."""
    kept: dict[str, list[pd.DataFrame]] = {}
    for name, fname in SWEEPS.items():
        sweep = Sweep.from_file(scenario_dir("rao2010") / fname)
        for r in run_jobs(sweep.jobs(quick=quick), workers=workers, describe=f"rao2010 {name}",
                          keep=_keep(name), show_progress=show_progress, executor=executor):
            for t, df in r.items():
                kept.setdefault(t, []).append(df)
    return {t: pd.concat(dfs, ignore_index=True) for t, dfs in kept.items()}


def summary_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per sweep point: mean download time over runs, with the
    fastest and slowest leecher over all runs."""
    rows = []
    for sweep, part in runs.groupby("sweep", sort=False):
        keys = [c for c in part.columns if "." in c or "+" in c]
        keys = [k for k in keys if part[k].notna().all()]
        for point, g in part.groupby(keys, sort=False):
            point = point if isinstance(point, tuple) else (point,)
            rows.append({
                "sweep": sweep,
                "setting": ", ".join(_short(k, v) for k, v in zip(keys, point, strict=True)),
                "runs": len(g),
                "mean_download_time_s": g["mean_download_time_s"].mean(),
                "sd_s": g["mean_download_time_s"].std(ddof=1) if len(g) > 1 else float("nan"),
                "min_download_time_s": g["min_download_time_s"].min(),
                "max_download_time_s": g["max_download_time_s"].max(),
                "completed": int(g["completed"].sum()),
                "leechers": int(g["leechers"].sum()),
                "wasted_ratio": g["wasted_ratio"].mean(),
            })
    return pd.DataFrame(rows)


def _short(key: str, value) -> str:
    if key == LIMITS or key == AS_LIMITS:
        parts = str(value).split("; ")
        return "limits " + limits_label(parts[:2])
    if key == AS_KEY:
        g = str(value).split("; ")
        return f"leechers {'/'.join(g[:3])}, seed {g[3]}"
    return f"{key.split('.')[-1]} {value}"


def _rtt_ms(v: str) -> float:
    return float(str(v).removesuffix(" ms"))


def _points(runs: pd.DataFrame, key: str) -> pd.DataFrame:
    """Per value of `key`: the mean download time over runs (`mean`), the
    fastest (`lo`) and the slowest (`hi`) leecher over all runs."""
    return runs.groupby(key, sort=False).agg(
        mean=("mean_download_time_s", "mean"), lo=("min_download_time_s", "min"),
        hi=("max_download_time_s", "max")).reset_index()


def fig_rtt(runs: pd.DataFrame, out: Path) -> list[Path]:
    """Completion time vs RTT, min/max bars, one line per upload limit."""
    part = runs[runs["sweep"] == "rtt"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for lim, g in part.groupby(LIMITS, sort=False):
        pts = _points(g, "network.rtt")
        x = pts["network.rtt"].map(_rtt_ms)
        errorbar_sweep(ax, x, pts["mean"], pts["lo"], pts["hi"], limits_label(str(lim).split("; ")))
    ax.set_xlabel("RTT between peers [ms]")
    ax.set_ylabel("download completion time [s]")
    ax.set_title("Completion time vs RTT (mean, min/max over leechers and runs)")
    legend(ax, title="upload limit (seed/leechers)")
    return save(fig, out / "fig_rtt")


def fig_as(runs: pd.DataFrame, out: Path) -> list[Path]:
    """Completion time per AS placement and seed AS', per upload limit."""
    part = runs[runs["sweep"] == "as"]
    limits = list(dict.fromkeys(part[AS_LIMITS]))
    fig, axes = plt.subplots(1, len(limits), figsize=(5 * len(limits), 3.8), sharey=True, squeeze=False)
    for ax, lim in zip(axes[0], limits, strict=True):
        g = part[part[AS_LIMITS] == lim]
        pts = _points(g, AS_KEY)
        names = [f"{'/'.join(v.split('; ')[:3])}\nseed {v.split('; ')[3]}" for v in pts[AS_KEY]]
        x = np.arange(len(pts))
        bars(ax, x, pts["mean"], lo=pts["lo"], hi=pts["hi"], color="C0")
        ax.set_xticks(x, names, fontsize=6, rotation=45, ha="right")
        ax.set_title(f"upload limit {limits_label(lim.split('; ')[:2])}")
    axes[0][0].set_ylabel("download completion time [s]")
    return save(fig, out / "fig_as")


def loss_table(runs: pd.DataFrame) -> pd.DataFrame:
    """5 % loss: mean completion time per RTT and upload limit, TSO off vs on."""
    part = runs[runs["sweep"] == "loss"]
    t = part.pivot_table(index=["network.rtt", LIMITS], columns="tcp.tso", values="mean_download_time_s",
                         aggfunc="mean", sort=False)
    t.columns = [f"tso_{'on' if c else 'off'}_s" for c in t.columns]
    return t.reset_index().rename(columns={LIMITS: "upload_limits", "network.rtt": "rtt"})


def fig_loss(table: pd.DataFrame, out: Path) -> list[Path]:
    """5 % loss: mean completion time per RTT and upload limit, one bar for
    TSO off and one for TSO on (`loss_table`)."""
    fig, ax = plt.subplots(figsize=(7, 3.8))
    x = np.arange(len(table))
    for i, col in enumerate(c for c in table.columns if c.startswith("tso_")):
        bars(ax, x + (i - 0.5) * 0.4, table[col], label=col.removesuffix("_s").replace("_", " "), width=0.4)
    names = [f"{r['rtt']}\n{limits_label(r['upload_limits'].split('; '))}" for _, r in table.iterrows()]
    ax.set_xticks(x, names, fontsize=6)
    ax.set_ylabel("download completion time [s]")
    ax.set_title("5 % ingress loss: TSO off vs on")
    legend(ax)
    return save(fig, out / "fig_loss")


def fig_send_gaps(gaps: pd.DataFrame, out: Path) -> list[Path]:
    """CDF of the time between successive application sends at the leechers
    (log x), per RTT, at 20 kB/s."""
    part = gaps[(gaps["sweep"] == "rtt") & (gaps[LIMITS] == "20 kB/s; 20 kB/s")]
    fig, ax = plt.subplots(figsize=(6, 4))
    for rtt, g in part.groupby("network.rtt", sort=False):
        cdf_from_histogram(ax, g["gap_hi_s"], g["sends"], str(rtt))
    ax.set_xscale("log")
    ax.set_xlabel("time between successive sends on a connection [s]")
    ax.set_ylabel("CDF")
    ax.set_title("Time between application sends at leechers (20 kB/s)")
    legend(ax, title="RTT")
    return save(fig, out / "fig_send_gaps")


def fig_srtt(sends: pd.DataFrame, out: Path) -> list[Path]:
    """The TCP RTT estimate (SRTT) at every application send of the logged
    leecher, as a CDF per RTT, at 20 kB/s."""
    part = sends[(sends["sweep"] == "rtt") & (sends[LIMITS] == "20 kB/s; 20 kB/s")]
    fig, ax = plt.subplots(figsize=(6, 4))
    for rtt, g in part.groupby("network.rtt", sort=False):
        if rtt in ("0 ms", "120 ms", "400 ms", "1000 ms"):
            cdf(ax, g["srtt_ms"], str(rtt))
    ax.set_xlabel("SRTT at the application send [ms]")
    ax.set_ylabel("CDF of sends")
    ax.set_title("TCP RTT estimate at every send of one leecher (20 kB/s)")
    legend(ax, title="RTT")
    return save(fig, out / "fig_srtt")


def fig_pieces(haves: pd.DataFrame, out: Path) -> list[Path]:
    """Pieces available at leechers over time (from the HAVEs they sent), at
    20 kB/s, for a few RTTs (first seed of each point)."""
    part = haves[(haves["sweep"] == "rtt") & (haves[LIMITS] == "20 kB/s; 20 kB/s")]
    fig, ax = plt.subplots(figsize=(6, 4))
    for rtt, g in part.groupby("network.rtt", sort=False):
        if rtt not in ("0 ms", "400 ms", "1000 ms"):
            continue
        t = np.sort(g["time_s"].to_numpy())
        timeseries(ax, t, np.arange(1, len(t) + 1), str(rtt))
    ax.set_xlabel("time [s]")
    ax.set_ylabel("pieces held by all leechers")
    ax.set_title("Pieces available at leechers over time (HAVE messages)")
    legend(ax, title="RTT")
    return save(fig, out / "fig_pieces")


def fig_payload(payload: pd.DataFrame, out: Path) -> list[Path]:
    """Distribution of TCP payload lengths on the wire, TSO off vs on (5 % loss, RTT 400 ms)."""
    part = payload[(payload["sweep"] == "loss") & (payload["network.rtt"] == "400 ms")]
    fig, ax = plt.subplots(figsize=(6, 4))
    for tso, g in part.groupby("tcp.tso", sort=True):
        cdf_from_histogram(ax, g["payload_bytes"], g["segments"], f"TSO {'on' if tso else 'off'}")
    ax.set_xscale("log")
    ax.set_xlabel("TCP payload length [bytes]")
    ax.set_ylabel("CDF of segments")
    ax.set_title("TCP payload lengths on the wire (RTT 400 ms, 5 % loss)")
    legend(ax)
    return save(fig, out / "fig_payload")


def fig_summary(table: pd.DataFrame, out: Path) -> list[Path]:
    """The summary table (one row per sweep point) as a figure."""
    cols = ["sweep", "setting", "runs", "mean_download_time_s", "sd_s", "min_download_time_s",
            "max_download_time_s", "completed", "leechers"]
    fig = table_figure(table[cols], title="E0: download completion time per sweep point [s]",
                       formats={c: ".0f" for c in cols if c.endswith("_s")})
    return save(fig, out / "fig_summary")


def render(report: Report, title: str):
    from rich.table import Table

    t = Table(title=title)
    for c in ("sweep", "setting", "runs", "mean s", "min s", "max s", "done"):
        t.add_column(c, justify="left" if c in ("sweep", "setting") else "right")
    for _, r in report.table.iterrows():
        sd = f" ± {r['sd_s']:.0f}" if r["sd_s"] == r["sd_s"] else ""
        t.add_row(r["sweep"], r["setting"], str(r["runs"]), f"{r['mean_download_time_s']:.0f}{sd}",
                  f"{r['min_download_time_s']:.0f}", f"{r['max_download_time_s']:.0f}",
                  f"{r['completed']}/{r['leechers']}")
    return t


def reproduce(out_dir: str | os.PathLike[str], quick: bool = False, workers: int | None = None,
              show_progress: bool = True, force: bool = False, executor=None) -> Report:
    """Runs the E0 sweeps (on `executor`, see :mod:`torrentlab.executors`),
    writes Parquet tables and figures into `out_dir` atomically, and returns
    the summary table."""
    out = Path(out_dir)
    with atomic_dir(out, force=force, kind="reproduce", experiment="rao2010", quick=quick) as tmp:
        kept = run_all(quick, workers, show_progress, executor)
        runs = kept["summary"]
        for name, df in kept.items():
            write_frame(df, tmp / f"{'runs' if name == 'summary' else name}.parquet")
        table = summary_table(runs)
        write_frame(table, tmp / "summary.parquet")
        loss = loss_table(runs)
        write_frame(loss, tmp / "loss_tso.parquet")
        figs = (fig_rtt(runs, tmp) + fig_as(runs, tmp) + fig_loss(loss, tmp)
                + fig_send_gaps(kept["send_gaps"], tmp) + fig_srtt(kept["sends"], tmp) + fig_pieces(kept["haves"], tmp)
                + fig_payload(kept["payload_lengths"], tmp) + fig_summary(table, tmp))
    return Report(table=table, out_dir=out, figures=[out / p.name for p in figs])
