"""E3 `bufferbloat-voip`: what a BitTorrent client does to a household's
ping and VoIP, and whether pacing its uploads fixes it.

After a practitioner's measurement write-up, "Why BitTorrent causes so much
jitter (high ping) and how to fix it" (2008). A DSL line (416 kbit/s up,
2.4 Mbit/s down, 12 ms to the ISP's first hop) with drop-tail queues in the
modem and the DSLAM; ping to the first hop every 250 ms; a G.711 call to a
remote host. Download cases: one HTTP source at 260 kB/s, or BitTorrent
from 20 seeds at 13 kB/s each. Upload cases: BitTorrent seeding at 47, 28
and 10 kB/s, with each pacing mode; FTP at 47 kB/s; the call alone, and
beside BitTorrent at 28 kB/s. See docs/experiments/bufferbloat-voip.md.
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

CASES = "cases.sweep.toml"
#: A ping slower than this is a spike (the write-up's "over 1 s").
SPIKE_MS = 1000.0
#: Pacing modes in the order the figures show them.
PACING = ["off", "even", "voip-friendly", "game-friendly"]
#: Upload caps of the BitTorrent upload cases, kB/s.
CAPS = [47, 28, 10]


@dataclass
class Report:
    """What `reproduce` produced: the per-case table and where files went."""

    table: pd.DataFrame
    out_dir: Path
    figures: list[Path]


def case_of(params: dict) -> dict:
    """A run's case: its name (the scenario's description), and for
    BitTorrent cases the client, the upload cap (kB/s) and the pacing."""
    name = params["description"]
    peers = params["peers"]
    home = next((p for p in peers if p.get("home")), None)
    return {
        "case": name,
        "client": home["client"] if home else "",
        "cap_kBps": float(home["upload_limit"].split()[0]) if home and home["role"] == "seed" else float("nan"),
        "pacing": home.get("pacing", "off") if home else "",
    }


def keep_run(job: Job, res: RunResult) -> dict[str, pd.DataFrame]:
    """The run's summary with its case, every probe, every call packet."""
    case = case_of(dict(job.params)) | {"iteration": job.seed}
    s = res.summary.iloc[0]
    duration = float(s["end_s"])
    run = pd.DataFrame([case | {
        "ping_idle_ms": s["ping_idle_ms"], "ping_mean_ms": s["ping_mean_ms"],
        "ping_mean_increase_ms": s["ping_mean_increase_ms"], "ping_max_ms": s["ping_max_ms"],
        "ping_timeouts": int(s["ping_timeouts"]), "ping_spikes_over_1s": int(s["ping_spikes_over_1s"]),
        "ping_probes": int(s["ping_probes"]),
        "voip_out_mean_delay_ms": s["voip_out_mean_delay_ms"], "voip_out_p99_delay_ms": s["voip_out_p99_delay_ms"],
        "voip_in_mean_delay_ms": s["voip_in_mean_delay_ms"], "voip_in_p99_delay_ms": s["voip_in_p99_delay_ms"],
        "voip_out_max_jitter_ms": s["voip_out_max_jitter_ms"], "voip_in_max_jitter_ms": s["voip_in_max_jitter_ms"],
        "voip_lost": int(s["voip_out_lost"] + s["voip_in_lost"]),
        "bt_up_kBps": s["home_bytes_up"] / duration / 1e3, "bt_down_kBps": s["home_bytes_down"] / duration / 1e3,
        "transfer_kBps": res.tables["transfers"].column("mean_rate_Bps").to_pandas().sum() / 1e3
        if res.tables["transfers"].num_rows else float("nan"),
        "duration_s": duration,
    }])
    ping = res.tables["ping"].to_pandas()[["sent_s", "rtt_ms", "timed_out"]].assign(**case)
    voip = res.tables["voip"].to_pandas()
    voip = voip.assign(direction=voip["from"].map(lambda f: "up" if f == "home" else "down"))
    voip = voip[["direction", "seq", "sent_s", "delay_ms", "jitter_ms"]].assign(**case)
    return {"runs": run, "ping": ping, "voip": voip}


def per_case(runs: pd.DataFrame) -> pd.DataFrame:
    """The write-up's table, per case over its iterations: mean ping increase
    over the idle line's, maximum, spikes over 1 s, timeouts; the call's
    mean and 99th-percentile delay each way; BitTorrent's upload."""
    g = runs.groupby("case", sort=False)
    t = pd.DataFrame({
        "ping +mean (ms)": g["ping_mean_increase_ms"].mean(),
        "ping max (ms)": g["ping_max_ms"].max(),
        "spikes >1 s": g["ping_spikes_over_1s"].mean(),
        "timeouts": g["ping_timeouts"].mean(),
        "call up p99 (ms)": g["voip_out_p99_delay_ms"].mean(),
        "call down p99 (ms)": g["voip_in_p99_delay_ms"].mean(),
        "call jitter max (ms)": g[["voip_out_max_jitter_ms", "voip_in_max_jitter_ms"]].max().max(axis=1),
        "BT up (kB/s)": g["bt_up_kBps"].mean(),
    })
    return t.reset_index()


def fig_ping_over_time(ping: pd.DataFrame, out: Path) -> list[Path]:
    """Ping over time in each case without pacing and without the call
    beside BitTorrent (first iteration), as the write-up's traces: timeouts
    drawn at the timeout line."""
    first = ping[(ping["iteration"] == ping["iteration"].min()) & ping["pacing"].isin(["", "off"])
                 & ~ping["case"].str.startswith("call + ")]
    cases = list(dict.fromkeys(first["case"]))
    cols = 3
    rows = -(-len(cases) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.4 * rows), sharex=True, squeeze=False)
    top = max(1100.0, float(first["rtt_ms"].max(skipna=True) or 0) * 1.05)
    marks = []
    for ax, case in zip(axes.flat, cases, strict=False):
        d = first[first["case"] == case]
        ax.plot(d["sent_s"], d["rtt_ms"], lw=0.7, color="C0")
        lost = d[d["timed_out"] == 1]
        if len(lost):
            marks += ax.plot(lost["sent_s"], [SPIKE_MS] * len(lost), "x", color="C3", ms=3, label="timeout")
        ax.set_ylim(0, top)
        ax.set_title(case, fontsize=9)
        ax.set_ylabel("ping RTT (ms)")
    for ax in axes.flat[len(cases):]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    # One legend, right of the first row's last panel (one beside any other
    # panel would cover its neighbour).
    legend(axes.flat[min(cols, len(cases)) - 1], handles=marks)
    fig.suptitle("E3: ping to the first hop over time (no pacing)")
    return save(fig, out / "fig_ping_over_time")


def fig_voip(voip: pd.DataFrame, out: Path) -> list[Path]:
    """CDFs of the call's one-way delay and RFC 3550 jitter, each way: the
    call alone, and beside BitTorrent seeding at 28 kB/s with each pacing
    mode, one figure per client."""
    figs = []
    for client in sorted(c for c in voip["client"].unique() if c):
        keep = voip[voip["client"].isin(["", client])]
        fig, axes = plt.subplots(2, 2, figsize=(10, 7))
        for j, direction in enumerate(("up", "down")):
            d = keep[keep["direction"] == direction]
            for i, case in enumerate(dict.fromkeys(d["case"])):
                c = d[d["case"] == case]
                cdf(axes[0, j], c["delay_ms"], case, color=f"C{i}")
                cdf(axes[1, j], c["jitter_ms"], case, color=f"C{i}")
            axes[0, j].set_xlabel("one-way delay (ms)")
            axes[1, j].set_xlabel("RFC 3550 jitter (ms)")
            axes[0, j].set_title(f"call {'home → remote' if direction == 'up' else 'remote → home'}")
            for ax in axes[:, j]:
                ax.set_ylabel("CDF")
        legend(axes[0, 1])
        fig.suptitle(f"E3: a call beside BitTorrent seeding at 28 kB/s ({client})")
        figs += save(fig, out / f"fig_voip_{client}")
    return figs


def fig_throughput(runs: pd.DataFrame, out: Path) -> list[Path]:
    """BitTorrent's upload by cap and pacing mode (mean over iterations),
    each client a panel, with the cap drawn over it."""
    up = runs[runs["cap_kBps"].notna()]
    clients = sorted(up["client"].unique())
    fig, axes = plt.subplots(1, len(clients), figsize=(5.5 * len(clients), 3.6), squeeze=False, sharey=True)
    width = 0.8 / len(PACING)
    for ax, client in zip(axes[0], clients, strict=True):
        d = up[up["client"] == client].groupby(["cap_kBps", "pacing"])["bt_up_kBps"].mean()
        for k, pacing in enumerate(PACING):
            x = [i + (k - 1.5) * width for i in range(len(CAPS))]
            ax.bar(x, [d.get((c, pacing), float("nan")) for c in CAPS], width, label=pacing)
        for i, c in enumerate(CAPS):
            ax.hlines(c, i - 0.45, i + 0.45, colors="k", lw=0.8)
        ax.set_xticks(range(len(CAPS)), [f"cap {c} kB/s" for c in CAPS])
        ax.set_title(client)
        ax.set_ylabel("home upload (kB/s)")
    legend(axes[0][-1], "pacing")
    fig.suptitle("E3: BitTorrent's upload with and without pacing (line: the cap)")
    return save(fig, out / "fig_throughput")


def render(report: Report, title: str):
    from rich.table import Table

    t = Table(title=title)
    cols = ["case", "ping +mean (ms)", "ping max (ms)", "spikes >1 s", "call up p99 (ms)", "BT up (kB/s)"]
    for c in cols:
        t.add_column(c, justify="left" if c == "case" else "right")
    for _, r in report.table.iterrows():
        t.add_row(*(str(r[c]) if c == "case" else f"{r[c]:.1f}" for c in cols))
    return t


def reproduce(out_dir: str | os.PathLike[str], quick: bool = False, workers: int | None = None,
              show_progress: bool = True, force: bool = False, executor=None) -> Report:
    """Runs E3's cases (on `executor`, see :mod:`torrentlab.executors`),
    writes Parquet tables and figures into `out_dir` atomically, and returns
    the per-case table."""
    out = Path(out_dir)
    with atomic_dir(out, force=force, kind="reproduce", experiment="bufferbloat-voip", quick=quick) as tmp:
        sweep = Sweep.from_file(scenario_dir("bufferbloat-voip") / CASES)
        kept = run_jobs(sweep.jobs(quick=quick), workers=workers, describe="bufferbloat-voip cases",
                        show_progress=show_progress, keep=keep_run, executor=executor,
                        tables=("summary", "ping", "voip", "transfers"))
        runs = pd.concat([k["runs"] for k in kept], ignore_index=True)
        ping = pd.concat([k["ping"] for k in kept], ignore_index=True)
        voip = pd.concat([k["voip"] for k in kept], ignore_index=True)
        # The idle line's mean ping is every case's baseline (the model's
        # idle round trip is the summary's ping_idle_ms).
        idle = runs.loc[runs["case"] == "idle", "ping_mean_ms"].mean()
        runs["ping_increase_over_idle_ms"] = runs["ping_mean_ms"] - idle
        write_frame(runs, tmp / "runs.parquet")
        write_frame(ping, tmp / "ping.parquet")
        write_frame(voip, tmp / "voip.parquet")
        table = per_case(runs)
        write_frame(table, tmp / "cases.parquet")
        figs = fig_ping_over_time(ping, tmp)
        figs += fig_voip(voip, tmp)
        figs += fig_throughput(runs, tmp)
        fmt = {c: ".1f" for c in table.columns if c != "case"}
        figs += save(table_figure(table, title="E3: ping and the call in each case", formats=fmt),
                     tmp / "fig_summary")
    return Report(table=table, out_dir=out, figures=[out / p.name for p in figs])
