"""The figure builders every `reproduce` command uses.

Each builder draws one kind of curve on a matplotlib axes and returns what it
drew; `legend` puts an axes' legend outside its plotting area (to the right),
so it is never over data; `save` writes a figure as PNG and SVG, like the
studies'. Units are the caller's: x and y are drawn as given, and the axis
labels (set by the caller) name the units.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
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
        "lines.linewidth": 1,
        "svg.hashsalt": "torrentlab",  # stable SVG ids
    }
)

#: Font size (points) of legend entries and table cells.
SMALL = 7


def save(fig, stem: str | os.PathLike[str]) -> list[Path]:
    """Saves `fig` as `<stem>.png` and `<stem>.svg` and closes it; returns
    both paths. The saved area is the figure's tight bounding box, which takes
    in legends placed outside the axes; the SVG has no date and stable ids, so
    the same figure gives the same bytes."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    fig.savefig(paths[0], bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return paths


def legend(ax, title: str | None = None, handles: Sequence | None = None):
    """The legend of `ax`'s labelled curves, to the right of the axes with its
    top at the axes' top: outside the plotting area, so it never covers data.
    In a row of panels, give only the rightmost one a legend (one to the right
    of any other would fall on its neighbour), and pass as `handles` the
    labelled curves of every panel (each label is listed once, at its first
    curve). Returns the legend, or None when nothing has a label."""
    where = {"fontsize": SMALL, "bbox_to_anchor": (1.02, 1), "loc": "upper left", "borderaxespad": 0}
    if handles is None:
        if not ax.get_legend_handles_labels()[0]:
            return None
        return ax.legend(title=title, **where)
    first = {}
    for h in handles:
        text = h.get_label()
        if text and not text.startswith("_"):
            first.setdefault(text, h)
    if not first:
        return None
    return ax.legend(list(first.values()), list(first), title=title, **where)


def _finite(values) -> np.ndarray:
    """`values` as sorted floats without NaN."""
    v = np.asarray(values, dtype=float)
    return np.sort(v[~np.isnan(v)])


def cdf(ax, values: Sequence[float], label: str | None, **kw):
    """Empirical CDF of `values` (NaN ignored) as a step line: at x, the
    fraction of values <= x; it rises from 0 at the smallest value to 1 at the
    largest. x is in the values' unit. Returns the line, or None (nothing
    drawn) when there is no value."""
    v = _finite(values)
    if len(v) == 0:
        return None
    y = np.arange(1, len(v) + 1) / len(v)
    (line,) = ax.step(np.concatenate([[v[0]], v]), np.concatenate([[0.0], y]), where="post", label=label, **kw)
    return line


#: The name the first figures used.
ecdf = cdf


def ccdf(ax, values: Sequence[float], label: str | None, log_y: bool = False, **kw):
    """Empirical complementary CDF of `values` (NaN ignored) as a step line:
    at x, the fraction of values >= x. It is 1 at the smallest value and 1/n
    at the largest (n values), never 0, so it can be drawn with a log y axis
    (`log_y`). Point i (sorted, from 0) is 1 - CDF(point i - 1), with
    CDF(point -1) = 0. Returns the line, or None when there is no value."""
    v = _finite(values)
    if len(v) == 0:
        return None
    y = (len(v) - np.arange(len(v))) / len(v)
    (line,) = ax.step(v, y, where="post", label=label, **kw)
    if log_y:
        ax.set_yscale("log")
    return line


def cdf_from_histogram(ax, upper_edges: Sequence[float], counts: Sequence[float], label: str | None, **kw):
    """CDF of a histogram as a step line: at each bin's upper edge (or exact
    value, for a histogram of exact values), the fraction of all counts in
    bins up to and including it. Rows may come in any order and repeat an
    edge (e.g. the same histogram of several runs): counts of equal edges are
    added. x is in the edges' unit. Returns the line, or None when the counts
    add up to 0."""
    h = pd.Series(np.asarray(counts, dtype=float)).groupby(np.asarray(upper_edges, dtype=float)).sum().sort_index()
    total = h.sum()
    if not total > 0:
        return None
    (line,) = ax.step(h.index.to_numpy(), (h.cumsum() / total).to_numpy(), where="post", label=label, **kw)
    return line


def cdf_envelope(ax, groups: Sequence[Sequence[float]], label: str | None, **kw):
    """The CDF of every value of `groups` pooled (a step line, as `cdf`),
    with the band between the lowest and highest of the groups' own CDFs
    shaded (e.g. the envelope over a study's iterations). Returns the line,
    or None when there is no value."""
    finite = [g for g in (_finite(g) for g in groups) if len(g)]
    if not finite:
        return None
    line = cdf(ax, np.concatenate(finite), label, **kw)
    if len(finite) > 1:
        x = np.unique(np.concatenate(finite))
        each = np.array([np.searchsorted(g, x, side="right") / len(g) for g in finite])
        ax.fill_between(x, each.min(axis=0), each.max(axis=0), step="post", alpha=0.2, color=line.get_color(), lw=0)
    return line


def ccdf_from_histogram(ax, lower_edges: Sequence[float], counts: Sequence[float], label: str | None,
                        log_y: bool = True, **kw):
    """Complementary CDF of a histogram as a step line: at each bin's lower
    edge, the fraction of all counts in that bin and above (1 at the lowest
    bin, never 0, so a log y axis works: `log_y`). Rows may come in any order
    and repeat an edge (several runs' histograms): counts are added. Returns
    the line, or None when the counts add up to 0."""
    h = pd.Series(np.asarray(counts, dtype=float)).groupby(np.asarray(lower_edges, dtype=float)).sum().sort_index()
    total = h.sum()
    if not total > 0:
        return None
    above = h[::-1].cumsum()[::-1] / total
    (line,) = ax.step(h.index.to_numpy(), above.to_numpy(), where="post", label=label, **kw)
    if log_y:
        ax.set_yscale("log")
    return line


def timeseries(ax, t: Sequence[float], y: Sequence[float], label: str | None = None, step: bool = False, **kw):
    """`y` against time `t` (seconds): a line through the points, or with
    `step` a staircase that holds each value until the next time (for
    quantities that change at events, e.g. a queue length). Returns the line."""
    if step:
        (line,) = ax.step(t, y, where="post", label=label, **kw)
    else:
        (line,) = ax.plot(t, y, label=label, **kw)
    return line


def errorbar_sweep(ax, x: Sequence[float], mean: Sequence[float], lo: Sequence[float], hi: Sequence[float],
                   label: str | None, **kw):
    """One point of a sweep per x: a marker at `mean` joined by a line, with
    an asymmetric bar from `lo` to `hi` (e.g. the fastest and slowest over
    runs), in the unit of `mean`. Needs lo <= mean <= hi. Returns matplotlib's
    ErrorbarContainer."""
    mean, lo, hi = (np.asarray(a, dtype=float) for a in (mean, lo, hi))
    style = {"marker": "o", "ms": 3, "capsize": 3, **kw}
    return ax.errorbar(x, mean, yerr=[mean - lo, hi - mean], label=label, **style)


def bars(ax, x: Sequence[float], height: Sequence[float], label: str | None = None,
         lo: Sequence[float] | None = None, hi: Sequence[float] | None = None, width: float = 0.8, **kw):
    """One bar per x of `height`; with `lo` and `hi`, an error bar on each
    from lo to hi (height between them). For groups of bars side by side,
    call once per group with x shifted and a narrower `width` (in x units).
    Returns matplotlib's BarContainer."""
    if lo is not None and hi is not None:
        h, lo, hi = (np.asarray(a, dtype=float) for a in (height, lo, hi))
        kw = {"yerr": [h - lo, hi - h], "capsize": 3, **kw}
    return ax.bar(x, height, width=width, label=label, **kw)


def _cell(value, spec: str) -> str:
    if isinstance(value, (float, np.floating)):
        return "" if math.isnan(value) else format(value, spec)
    return str(value)


def table_figure(df: pd.DataFrame, title: str | None = None, formats: Mapping[str, str] | None = None):
    """A table as a figure (save it with `save`): the columns of `df` as the
    header, one row per row. Floats are written with `formats[column]` (a
    format spec such as ".1f"; ".4g" by default) and NaN as an empty cell;
    anything else with str(). The figure grows with the rows; columns are as
    wide as their text. Returns the figure."""
    if len(df.columns) == 0 or len(df) == 0:
        raise ValueError("table_figure needs at least one row and one column")
    formats = formats or {}
    cols = [str(c) for c in df.columns]
    text = [[_cell(v, formats.get(c, ".4g")) for c, v in zip(cols, row, strict=True)]
            for row in df.itertuples(index=False)]
    fig, ax = plt.subplots(figsize=(6, 0.4 + 0.22 * (len(df) + 1)))
    ax.axis("off")
    tab = ax.table(cellText=text, colLabels=cols, loc="upper center", cellLoc="right")
    tab.auto_set_font_size(False)
    tab.set_fontsize(SMALL)
    tab.auto_set_column_width(range(len(cols)))
    if title:
        ax.set_title(title)
    return fig


def windows_and_queue(ax_w, ax_q, timeseries_df: pd.DataFrame, flows: pd.DataFrame, queue: pd.DataFrame,
                      title: str, with_legend: bool = True):
    """Top: each flow's congestion window (packets) over time (s); bottom: the
    bottleneck queue (packets) after every dequeue. The flows' legend goes to
    the right of the top axes (`with_legend=False` leaves it out, for all but
    the rightmost of panels side by side)."""
    for _, f in flows.iterrows():
        ts = timeseries_df[timeseries_df["flow"] == f["flow"]]
        timeseries(ax_w, ts["time_s"], ts["cwnd_packets"], label=f"{f['label']} ({f['cc']})")
    ax_w.set_ylabel("cwnd [packets]")
    ax_w.set_title(title)
    if with_legend:
        legend(ax_w)
    if len(queue):
        timeseries(ax_q, queue["time_s"], queue["packets"], step=True, lw=0.6, color="0.3")
    ax_q.set_ylabel("queue [packets]")
    ax_q.set_xlabel("time [s]")
