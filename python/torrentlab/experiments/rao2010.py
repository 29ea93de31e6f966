"""E0 `rao2010`: latency and loss in a BitTorrent flash crowd.

A. Rao, A. Legout, W. Dabbous, "Can realistic BitTorrent experiments be
performed on clusters?", IEEE P2P 2010. One seed and 300 leechers (mainline
4.0.x over TCP Cubic) share a 50 MB file; the sweeps vary the RTT between
peers and the upload limits, place peers in emulated ASes, and fill the study's
table of TSO off and on without loss and TSO off with 5 % ingress loss. See
docs/experiments/rao2010.md.
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
TSO, LOSS = "tcp.tso", "network.ingress_loss"
#: The RTTs that fig_send_gaps and fig_pieces draw (those of the loss table).
SHOWN_RTTS = ("0 ms", "400 ms", "1000 ms")
#: The (seed, leechers) upload limits of fig_pieces' panels.
PIECES_LIMITS = ("20 kB/s; 20 kB/s", "50 kB/s; 20 kB/s")
#: Every figure `reproduce` writes (each as PNG and SVG).
FIGURES = ("fig_rtt", "fig_as", "fig_loss", "fig_loss_table", "fig_send_gaps", "fig_srtt", "fig_pieces",
           "fig_payload", "fig_summary")


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
    """What to keep of each run (with the grid parameters and seed): its
    summary and payload-length histogram; of the first seed, its HAVE log; of
    the first seed of the RTT sweep, its send log, and at the RTTs
    fig_send_gaps draws (every upload limit), its send-gap histogram."""

    def keep(job: Job, res: RunResult) -> dict[str, pd.DataFrame]:
        extra = {"sweep": sweep, "seed": job.seed}
        for k, v in job.params:
            extra[k] = label(v) if isinstance(v, (list, dict)) else v
        kept = {
            "summary": res.summary.assign(**extra),
            "payload_lengths": res.payload_lengths.assign(**extra),
        }
        if job.seed == 1:
            kept["haves"] = res.haves.assign(**extra)
            if sweep == "rtt":
                kept["sends"] = res.sends.assign(**extra)
                if extra["network.rtt"] in SHOWN_RTTS:
                    kept["send_gaps"] = res.send_gaps.assign(**extra)
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


#: The settings of the study's loss and TSO table, in its column order:
#: (column prefix, heading, tcp.tso, network.ingress_loss).
LOSS_CELLS = (("tso_off", "TSO off, no loss", False, 0.0), ("tso_on", "TSO on, no loss", True, 0.0),
              ("tso_off_loss5", "TSO off, 5 % loss", False, 0.05))


def _setting(part: pd.DataFrame, tso: bool, loss: float) -> pd.DataFrame:
    """The rows of `part` (loss sweep) run with TSO `tso` and ingress loss `loss`."""
    return part[(part[TSO] == tso) & np.isclose(part[LOSS].astype(float), loss)]


def loss_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The study's table of the loss sweep: one row per upload limit and RTT
    (limits outer, each in the sweep's order); for each setting of
    `LOSS_CELLS` (prefix P): `P_s`, the mean over runs of each run's mean
    download time; `P_sd_s`, their standard deviation over runs (NaN with one
    run); `P_min_s` and `P_max_s`, the fastest and the slowest leecher over
    all runs; `P_runs`, the number of runs."""
    part = runs[runs["sweep"] == "loss"]
    rows = []
    for lim in dict.fromkeys(part[LIMITS]):
        for rtt in dict.fromkeys(part["network.rtt"]):
            at = part[(part[LIMITS] == lim) & (part["network.rtt"] == rtt)]
            row = {"upload_limit": limits_label(str(lim).split("; ")), "rtt": rtt}
            for name, _, tso, loss in LOSS_CELLS:
                g = _setting(at, tso, loss)
                t = g["mean_download_time_s"]
                row.update({f"{name}_s": t.mean(), f"{name}_sd_s": t.std(ddof=1) if len(t) > 1 else float("nan"),
                            f"{name}_min_s": g["min_download_time_s"].min(),
                            f"{name}_max_s": g["max_download_time_s"].max(), f"{name}_runs": len(g)})
            rows.append(row)
    return pd.DataFrame(rows)


def fig_loss(table: pd.DataFrame, out: Path) -> list[Path]:
    """The loss table as bars: for each upload limit and RTT, one bar per
    setting (TSO off and on without loss, TSO off with 5 % loss): the mean
    completion time, with a bar from the fastest to the slowest leecher."""
    fig, ax = plt.subplots(figsize=(8, 3.8))
    x = np.arange(len(table))
    width = 0.8 / len(LOSS_CELLS)
    for i, (name, heading, _, _) in enumerate(LOSS_CELLS):
        bars(ax, x + (i - (len(LOSS_CELLS) - 1) / 2) * width, table[f"{name}_s"], label=heading,
             lo=table[f"{name}_min_s"], hi=table[f"{name}_max_s"], width=width, color=f"C{i}")
    ax.set_xticks(x, [f"{r['upload_limit']}\n{r['rtt']}" for _, r in table.iterrows()], fontsize=6)
    ax.set_xlabel("upload limit, RTT")
    ax.set_ylabel("download completion time [s]")
    ax.set_title("TSO and 5 % ingress loss (mean, min/max over leechers and runs)")
    legend(ax, title="setting")
    return save(fig, out / "fig_loss")


def _cell(r, name: str) -> str:
    """A cell of the drawn loss table: mean ± sd (fastest–slowest), in s."""
    if not r[f"{name}_runs"]:
        return ""
    sd = f" ± {r[f'{name}_sd_s']:.0f}" if r[f"{name}_sd_s"] == r[f"{name}_sd_s"] else ""
    return f"{r[f'{name}_s']:.0f}{sd} ({r[f'{name}_min_s']:.0f}–{r[f'{name}_max_s']:.0f})"


def fig_loss_table(table: pd.DataFrame, out: Path) -> list[Path]:
    """The loss table drawn in the study's layout: a row per upload limit
    and RTT, a column per setting; each cell the mean completion time ± its
    standard deviation over runs, with the fastest and the slowest leecher."""
    drawn = pd.DataFrame({"upload limit": table["upload_limit"], "RTT": table["rtt"]})
    for name, heading, _, _ in LOSS_CELLS:
        drawn[heading] = [_cell(r, name) for _, r in table.iterrows()]
    fig = table_figure(drawn, title="E0: download completion time [s], mean ± sd over runs (fastest–slowest leecher)")
    return save(fig, out / "fig_loss_table")


def fig_send_gaps(gaps: pd.DataFrame, out: Path) -> list[Path]:
    """CDF of the time between successive application sends at the leechers
    (log x), one panel per RTT of `SHOWN_RTTS`, one line per upload limit
    (seed/leechers) of the RTT sweep; first run of each point."""
    part = gaps[gaps["sweep"] == "rtt"]
    rtts = [r for r in SHOWN_RTTS if (part["network.rtt"] == r).any()]
    limits = list(dict.fromkeys(part[LIMITS]))
    fig, axes = plt.subplots(1, len(rtts), figsize=(3.4 * len(rtts), 3.6), sharey=True, squeeze=False)
    for ax, rtt in zip(axes[0], rtts, strict=True):
        at = part[part["network.rtt"] == rtt]
        for i, lim in enumerate(limits):
            g = at[at[LIMITS] == lim]
            cdf_from_histogram(ax, g["gap_hi_s"], g["sends"], limits_label(str(lim).split("; ")), color=f"C{i}")
        ax.set_xscale("log")
        ax.set_xlabel("time between sends [s]")
        ax.set_title(f"RTT {rtt}")
    axes[0][0].set_ylabel("CDF of sends on a connection")
    fig.suptitle("Time between successive application sends at leechers", y=1.01)
    legend(axes[0][-1], title="upload limit (seed/leechers)", handles=_handles(axes[0]))
    return save(fig, out / "fig_send_gaps")


def _handles(axes) -> list:
    """Every labelled curve of `axes` (a row of panels), for one legend."""
    return [h for ax in axes for h in ax.get_legend_handles_labels()[0]]


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
    """Pieces available at leechers over time (from the HAVEs they sent), one
    panel per upload limit of `PIECES_LIMITS` (20/20 and 50/20 kB/s), one line
    per RTT of `SHOWN_RTTS` (first run of each point)."""
    part = haves[haves["sweep"] == "rtt"]
    cases = [lim for lim in PIECES_LIMITS if (part[LIMITS] == lim).any()]
    fig, axes = plt.subplots(1, len(cases), figsize=(4 * len(cases), 3.8), sharey=True, squeeze=False)
    for ax, lim in zip(axes[0], cases, strict=True):
        at = part[part[LIMITS] == lim]
        for i, rtt in enumerate(SHOWN_RTTS):
            t = np.sort(at.loc[at["network.rtt"] == rtt, "time_s"].to_numpy())
            if len(t):
                timeseries(ax, t, np.arange(1, len(t) + 1), rtt, color=f"C{i}")
        ax.set_xlabel("time [s]")
        ax.set_title(f"upload limit {limits_label(lim.split('; '))}")
    axes[0][0].set_ylabel("pieces held by all leechers")
    fig.suptitle("Pieces available at leechers over time (HAVE messages)", y=1.01)
    legend(axes[0][-1], title="RTT", handles=_handles(axes[0]))
    return save(fig, out / "fig_pieces")


def fig_payload(payload: pd.DataFrame, out: Path) -> list[Path]:
    """Distribution of TCP payload lengths on the wire at RTT 400 ms (every
    upload limit and run pooled), one line per setting of the loss table."""
    part = payload[(payload["sweep"] == "loss") & (payload["network.rtt"] == "400 ms")]
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, (_, heading, tso, loss) in enumerate(LOSS_CELLS):
        g = _setting(part, tso, loss)
        cdf_from_histogram(ax, g["payload_bytes"], g["segments"], heading, color=f"C{i}")
    ax.set_xscale("log")
    ax.set_xlabel("TCP payload length [bytes]")
    ax.set_ylabel("CDF of segments")
    ax.set_title("TCP payload lengths on the wire (RTT 400 ms)")
    legend(ax, title="setting")
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


def figures(kept: dict[str, pd.DataFrame], table: pd.DataFrame, loss: pd.DataFrame, out: Path) -> list[Path]:
    """Draws every figure of `FIGURES` into `out` from the kept tables (the
    runs' summaries as ``kept["summary"]``), the summary table and the loss
    table; returns the files written."""
    runs = kept["summary"]
    return (fig_rtt(runs, out) + fig_as(runs, out) + fig_loss(loss, out) + fig_loss_table(loss, out)
            + fig_send_gaps(kept["send_gaps"], out) + fig_srtt(kept["sends"], out) + fig_pieces(kept["haves"], out)
            + fig_payload(kept["payload_lengths"], out) + fig_summary(table, out))


def reproduce(out_dir: str | os.PathLike[str], quick: bool = False, workers: int | None = None,
              show_progress: bool = True, force: bool = False, executor=None) -> Report:
    """Runs the E0 sweeps (on `executor`, see :mod:`torrentlab.executors`),
    writes Parquet tables, the loss table as CSV too, and figures into
    `out_dir` atomically, and returns the summary table."""
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
        loss.to_csv(tmp / "loss_tso.csv", index=False, float_format="%.1f")
        figs = figures(kept, table, loss, tmp)
    return Report(table=table, out_dir=out, figures=[out / p.name for p in figs])
