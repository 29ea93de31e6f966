"""Figure helpers: every figure is written as PNG and SVG, like the studies'."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

plt.rcParams.update(
    {
        "figure.dpi": 110,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "font.size": 9,
        "svg.hashsalt": "torrentlab",  # stable SVG ids
    }
)


def save(fig, stem: str | os.PathLike[str]) -> list[Path]:
    """Saves `fig` as `<stem>.png` and `<stem>.svg`; returns both paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    fig.savefig(paths[0], bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return paths


def windows_and_queue(ax_w, ax_q, timeseries: pd.DataFrame, flows: pd.DataFrame, queue: pd.DataFrame, title: str):
    """Top: each flow's congestion window (packets) over time; bottom: the
    bottleneck queue (packets) after every dequeue."""
    for _, f in flows.iterrows():
        ts = timeseries[timeseries["flow"] == f["flow"]]
        ax_w.plot(ts["time_s"], ts["cwnd_packets"], lw=1, label=f"{f['label']} ({f['cc']})")
    ax_w.set_ylabel("cwnd [packets]")
    ax_w.set_title(title)
    ax_w.legend(loc="upper right", fontsize=7)
    if len(queue):
        ax_q.step(queue["time_s"], queue["packets"], where="post", lw=0.6, color="0.3")
    ax_q.set_ylabel("queue [packets]")
    ax_q.set_xlabel("time [s]")


def ecdf(ax, values: Sequence[float], label: str, **kw):
    """Empirical CDF as a step line."""
    v = np.sort(np.asarray(values, dtype=float))
    v = v[~np.isnan(v)]
    if len(v) == 0:
        return
    y = np.arange(1, len(v) + 1) / len(v)
    ax.step(np.concatenate([[v[0]], v]), np.concatenate([[0.0], y]), where="post", label=label, **kw)
