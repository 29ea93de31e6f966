"""One self-contained HTML page for a result directory (``torrentlab report DIR``).

:func:`write_report` reads a result directory torrentlab wrote (a run, a sweep
or a reproduction) and writes one HTML file: what was run and what failed;
summary tables, sortable (a sweep's: mean, minimum and maximum over seeds of
the key metrics at every point); interactive plots drawn as SVG by the page's
own small script (``report_assets/report.js``) from data embedded as JSON; and
the provenance of every run (parameters, seed, version, wall time, scenario).
Its style, script, data and figures are all inside it and a
Content-Security-Policy forbids it any network access: it opens the same from
disk (``file://``), a mail attachment or offline. A result directory is
published whole (its manifest lists its files), so the report goes beside
it, ``DIR.html``, unless told otherwise. See docs/report.md.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from torrentlab.exceptions import OutputError, QueryError
from torrentlab.output import MANIFEST, _why, is_result
from torrentlab.report_page import (
    GENERATOR,
    _details,
    _esc,
    _facts,
    _frame_table,
    _Html,
    _is_num,
    _loads,
    _Page,
    _pre,
    _pretty,
    _table,
)

#: A series longer than this is thinned to this many points for the page.
MAX_POINTS = 5000
#: A CDF with more values than this is drawn through this many of them.
CDF_POINTS = 2000
#: Tables up to this many rows are shown whole; longer ones show their first :data:`HEAD_ROWS`.
MAX_ROWS = 300
HEAD_ROWS = 100

# A swept value read as a number: "20 ms" -> (20.0, "ms"), "3" -> (3.0, "").
_QUANTITY = re.compile(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z%/µ]*)\s*\Z")

#: The key metrics of a sweep, by scenario kind: column -> what it is.
SWARM_METRICS = {
    "mean_download_time_s": "mean download time [s]",
    "min_download_time_s": "fastest leecher's download time [s]",
    "max_download_time_s": "slowest leecher's download time [s]",
    "end_s": "end of the run [s]",
    "wasted_ratio": "wasted block bytes / downloaded",
}
DUMBBELL_METRICS = {
    "jain_index": "Jain's fairness index F",
    "efficiency": "efficiency (bottleneck use)",
    "mean_queue_delay_ms": "mean queueing delay [ms]",
    "loss_rate": "loss rate at the bottleneck",
    "goodput_bps": "goodput [bit/s]",
    "first_flow_share": "first flow's share of the goodput",
    "first_flow_done_s": "first flow's completion time [s]",
}
#: The x axis of a plot over simulated time, from 0.
_TIME = {"xlabel": "time [s]", "xdomain": [0, None]}
#: A dumbbell run's time series: timeseries column -> what it is.
TIMESERIES = {
    "cwnd_packets": "congestion window [packets]",
    "srtt_ms": "smoothed RTT [ms]",
    "goodput_bps": "goodput [bit/s]",
    "in_flight_bytes": "bytes in flight",
    "queuing_delay_ms": "LEDBAT's queueing-delay estimate [ms]",
    "delivered_bytes": "bytes delivered in order",
}


def write_report(result_dir: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *,
                 force: bool = False) -> Path:
    """Writes the HTML report of result directory `result_dir` to `out`
    (default: ``<result_dir>.html`` beside the directory) and returns its path.

    The file is written atomically (a temporary file in the same directory,
    then renamed). A file already at `out` is replaced only if it is a
    torrentlab report, or with ``force=True``. Raises :class:`QueryError`
    when `result_dir` is not a torrentlab result (or one of its tables cannot
    be read) and :class:`OutputError` when `out` cannot be written; either
    way nothing is written."""
    d = Path(result_dir)
    _manifest(d)  # not a result: say so before looking at the destination
    dest = _destination(d, out, force)
    page = render(d)
    _write_atomic(dest, page)
    return dest


def render(result_dir: str | os.PathLike[str]) -> str:
    """The report of result directory `result_dir`, as the text of an HTML page."""
    d = Path(result_dir)
    manifest = _manifest(d)
    kind = manifest.get("kind")
    page = _Page()
    name = {"run": manifest.get("scenario"), "reproduce": manifest.get("experiment"),
            "sweep": Path(str(manifest.get("sweep", ""))).name.removesuffix(".toml").removesuffix(".sweep")
            }.get(kind) or d.resolve().name
    page.title = f"{name}: torrentlab {kind or 'result'}"
    if kind == "sweep":
        _sweep(page, d, manifest)
    elif kind == "run":
        _run(page, d, manifest, level=2)
    else:  # a reproduction, or a kind this version does not know: its tables and figures
        _reproduce(page, d, manifest)
    return page.html(d)


# --- reading -----------------------------------------------------------------

def _manifest(d: Path) -> dict[str, Any]:
    if not d.exists():
        raise QueryError(d, "does not exist")
    if not d.is_dir():
        raise QueryError(d, "is not a directory; name a result directory written by torrentlab")
    if not is_result(d):
        raise QueryError(d, f"is not a torrentlab result (no {MANIFEST}); name a directory written by "
                            "torrentlab run, sweep or reproduce")
    try:
        doc = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise QueryError(d / MANIFEST, f"cannot be read: {e}") from None
    if not isinstance(doc, dict):
        raise QueryError(d / MANIFEST, "is not a JSON object; the result is damaged")
    return doc


def _read(path: Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """A Parquet table (only `columns` that it has, when given)."""
    return _parquet(path, lambda pf: pf.read([c for c in columns if c in pf.schema_arrow.names]
                                             if columns is not None else None).to_pandas())


def _head(path: Path) -> tuple[pd.DataFrame, int]:
    """A table whole if it is short, else its first :data:`HEAD_ROWS` rows; and its row count."""
    import pyarrow as pa

    def head(pf) -> tuple[pd.DataFrame, int]:
        n = pf.metadata.num_rows
        if n <= MAX_ROWS:
            return pf.read().to_pandas(), n
        return pa.Table.from_batches([next(pf.iter_batches(batch_size=HEAD_ROWS))]).to_pandas(), n

    return _parquet(path, head)


def _parquet(path: Path, use: Any) -> Any:
    """`use` applied to the Parquet file at `path`; a file that cannot be read is a :class:`QueryError`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return use(pq.ParquetFile(path))
    except (OSError, ValueError, StopIteration, pa.ArrowException) as e:
        raise QueryError(path, f"cannot be read as a Parquet table: {e}") from None


def _json_file(path: Path) -> Any:
    try:
        return _loads(path.read_text(encoding="utf-8"))
    except OSError:
        return None


# --- writing -----------------------------------------------------------------

def _destination(d: Path, out: str | os.PathLike[str] | None, force: bool) -> Path:
    """Where the report goes; refuses (:class:`OutputError`) what may not be written."""
    if out is not None and str(out).strip() == "":
        raise OutputError(out, "must name the report's file, not an empty string")
    if out is None:
        here = d.resolve()
        dest = here.parent / f"{here.name}.html"
    else:
        dest = Path(out)
    if dest.is_dir():
        raise OutputError(dest, "is a directory; name the report's file, e.g. report.html")
    target, home = dest.resolve(), d.resolve()
    if home == target or home in target.parents:
        raise OutputError(dest, f"is inside the result directory {d}, which torrentlab publishes whole "
                                "(its manifest lists its files); write the report beside it")
    if (dest.exists() or dest.is_symlink()) and not force and not _is_report(dest):
        raise OutputError(dest, "exists and is not a torrentlab report; choose another file name "
                                "(or --force, force=True in Python, to replace it)")
    parent = dest.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OutputError(dest, f"{parent} is a file, not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(dest, f"cannot write into {parent}: permission denied")
    return dest


def _is_report(path: Path) -> bool:
    """Whether `path` is a file a torrentlab report wrote (its head carries :data:`GENERATOR`)."""
    try:
        with open(path, "rb") as f:
            return f'<meta name="generator" content="{GENERATOR}'.encode() in f.read(2048)
    except OSError:
        return False


def _write_atomic(dest: Path, text: str) -> None:
    """Writes `text` to a temporary file beside `dest`, then renames it into place."""
    tmp = dest.parent / f".{dest.name}.tmp-{os.getpid()}"
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, dest)
    except BaseException as e:  # an interrupt too: no temporary file is left behind
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise OutputError(dest, f"cannot be written: {_why(e)}") from None
        raise


# --- plot data ---------------------------------------------------------------

def _nums(values: Any) -> list[float | None]:
    """Numbers for the page's JSON: 6 significant digits, ``None`` for a missing one."""
    return [float(f"{v:.6g}") if math.isfinite(v) else None for v in np.asarray(values, dtype=float).tolist()]


def _thin(x: Any, y: Any, limit: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most `limit` points of a series ordered by x: the lowest and the
    highest y of each of limit/2 equal slices, so peaks stay visible."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) <= limit:
        return x, y
    edges = np.linspace(0, len(x), limit // 2 + 1).astype(int)
    low, high = np.where(np.isnan(y), np.inf, y), np.where(np.isnan(y), -np.inf, y)
    keep = set()
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        if b > a:
            keep.update((a + int(np.argmin(low[a:b])), a + int(np.argmax(high[a:b]))))
    idx = np.array(sorted(keep))
    return x[idx], y[idx]


def _series(name: str, x: Any, y: Any, **more: Any) -> dict[str, Any]:
    return {"name": name, "x": _nums(x), "y": _nums(y), **more}


def _cdf(name: str, values: Any, total: int) -> dict[str, Any] | None:
    """The empirical CDF of `values` as a step series, over `total` (values
    that never came, e.g. leechers that did not finish, keep it below 1)."""
    v = np.sort(np.asarray(values, dtype=float))
    v = v[np.isfinite(v)]
    if not len(v) or total <= 0:
        return None
    y = np.arange(1, len(v) + 1) / total
    if len(v) > CDF_POINTS:
        idx = np.unique(np.linspace(0, len(v) - 1, CDF_POINTS).round().astype(int))
        v, y = v[idx], y[idx]
    return _series(name, np.concatenate([[v[0]], v]), np.concatenate([[0.0], y]), step=True)


def _logish(values: Any) -> bool:
    """Whether values span two decades or more, all positive: a log axis suits them."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return bool(len(v) and (v > 0).all() and v.max() / v.min() >= 100)


def _thinned_note(what: str, n: int) -> str:
    return (f"{what}: {n:,} samples per series at most are drawn as {MAX_POINTS:,} points (the lowest and "
            f"highest of each of {MAX_POINTS // 2:,} equal slices, so peaks stay visible)." if n > MAX_POINTS else "")


@dataclass
class _Axis:
    """Where a swept parameter's values go on an x axis."""

    order: list[Any]
    pos: dict[Any, float]
    cats: list[str] | None
    label: str


def _axis(name: str, values: Iterable[Any]) -> _Axis:
    """Numbers (``"20 ms"``: 20, in ms) when every value reads as one in the
    same unit, in increasing order; otherwise categories in sweep order."""
    labels = list(dict.fromkeys(values))
    nums, units = {}, set()
    for v in labels:
        if _is_num(v):
            nums[v], unit = float(v), ""
        else:
            m = _QUANTITY.match(str(v))
            if not m:
                break
            nums[v], unit = float(m.group(1)), m.group(2)
        units.add(unit)
    if len(nums) == len(labels) and len(units) == 1 and len(set(nums.values())) == len(labels):
        unit = units.pop()
        return _Axis(sorted(labels, key=nums.get), nums, None, f"{name} [{unit}]" if unit else name)
    return _Axis(labels, {v: float(i) for i, v in enumerate(labels)}, [str(v) for v in labels], name)


def _groups(df: pd.DataFrame, by: list[str]) -> list[tuple[tuple, pd.DataFrame]]:
    """(key tuple, rows) per distinct value of `by`, in order of appearance."""
    if not by:
        return [((), df)]
    return [(k if isinstance(k, tuple) else (k,), g) for k, g in df.groupby(by, sort=False, dropna=False)]


def _point_name(params: Sequence[str], key: Sequence[Any]) -> str:
    return ", ".join(f"{p} = {v}" for p, v in zip(params, key, strict=True)) or "all runs"


# --- a sweep -----------------------------------------------------------------

def _swept(runs: pd.DataFrame, second: pd.DataFrame | None, failed: list[dict[str, Any]]) -> list[str]:
    """The swept parameters: the columns a sweep adds after ``seed`` to its
    second table, which runs has too (see campaign.keep_run)."""
    if second is not None and "seed" in second.columns:
        cols = list(second.columns)
        return [c for c in cols[cols.index("seed") + 1:] if c in runs.columns]
    if failed:
        return list(failed[0].get("params") or {})
    return [c for c in runs.columns if "." in c or "+" in c]


def _failed(d: Path) -> list[dict[str, Any]]:
    out = []
    for f in sorted((d / "failed").glob("*.json")):
        doc = _json_file(f)
        doc = doc if isinstance(doc, dict) else {"error": f"{f.name} cannot be read"}
        out.append({**doc, "key": f.stem})
    return out


def _first_flow(runs: pd.DataFrame, flows: pd.DataFrame | None, params: list[str]) -> pd.DataFrame:
    """Adds the first flow's share of the goodput and its completion time (as
    ``torrentlab sweep`` prints them)."""
    on = [*params, "seed"]
    need = {*on, "flow", "window_rate_bps", "completion_s"}
    if flows is None or not need <= set(flows.columns) or "goodput_bps" not in runs.columns:
        return runs
    first = flows.loc[flows["flow"] == 0, [*on, "window_rate_bps", "completion_s"]]
    if first.duplicated(on).any():
        return runs
    first = first.rename(columns={"window_rate_bps": "_rate", "completion_s": "first_flow_done_s"})
    runs = runs.merge(first, on=on, how="left")
    share = runs.pop("_rate") / runs["goodput_bps"]
    return runs.assign(first_flow_share=share.replace([np.inf, -np.inf], np.nan))


def _run_key(scenario_text: Any, seed: Any) -> str:
    """The run's file name in runs/ (see campaign.run_key), or "" if it cannot be made."""
    from torrentlab.campaign import run_key
    from torrentlab.sweep import Job

    doc = _loads(scenario_text)
    return run_key(Job(doc, int(seed), ())) if isinstance(doc, dict) else ""


def _sweep(page: _Page, d: Path, m: dict[str, Any]) -> None:
    runs = _read(d / "runs.parquet") if (d / "runs.parquet").is_file() else pd.DataFrame()
    second_name = next((n for n in ("peers", "flows") if (d / f"{n}.parquet").is_file()), None)
    second = _read(d / f"{second_name}.parquet") if second_name else None
    failed = _failed(d)
    params = _swept(runs, second, failed)
    swarm = "mean_download_time_s" in runs.columns or second_name == "peers"
    if not swarm:
        runs = _first_flow(runs, second, params)
    metrics = {c: t for c, t in (SWARM_METRICS if swarm else DUMBBELL_METRICS).items()
               if c in runs.columns and runs[c].notna().any()}
    points = _groups(runs, params) if len(runs) else []
    seeds = sorted({len(g) for _, g in points})
    first = runs["scenario"].iloc[0] if "scenario" in runs.columns and len(runs) else None
    base = doc.get("name") if isinstance(doc := _loads(first), dict) else None
    versions = sorted(map(str, runs["torrentlab_version"].unique())) if "torrentlab_version" in runs.columns else []
    page.header.append(_facts([
        ("result", d.resolve()), ("kind", f"sweep of {'a swarm' if swarm else 'a dumbbell'}"),
        ("sweep file", m.get("sweep")), ("base scenario", base), ("--quick", m.get("quick")),
        ("swept parameters", ", ".join(params) or "none (seeds only)"),
        ("runs", f"{len(runs)} finished, {len(failed)} failed, of {m.get('runs', len(runs) + len(failed))}"),
        ("points", f"{len(points)} (with {' or '.join(map(str, seeds))} seeds each)" if points else None),
        ("torrentlab", f"{m.get('torrentlab')} wrote the result; runs made by {', '.join(versions)}"
         if versions else m.get("torrentlab")),
        ("commit", m.get("commit")),
        ("written", m.get("written")),
        ("wall time", f"{runs['wall_s'].sum():.1f} s over all runs" if "wall_s" in runs.columns else None),
    ]))
    if failed:
        page.header.append(f'<p class="bad">{len(failed)} run{"s" * (len(failed) != 1)} failed: '
                           '<a href="#failed">see Failed runs</a>.</p>')
        _failed_section(page, failed)
    if not len(runs):
        page.add('<p class="bad">No run of this sweep finished: there is nothing to summarise.</p>')
    else:
        _sweep_summary(page, runs, params, points, metrics, swarm)
        _sweep_plots(page, runs, second if swarm else None, params, metrics)
        _sweep_runs(page, runs, params, metrics)
    page.heading(2, "Provenance")
    campaign = _json_file(d / "campaign.json")
    if campaign is not None:
        page.add(_details("campaign.json", _pre(campaign)))
    page.add(_details(f"{MANIFEST} (the result's files)", _pre(m)))


def _failed_section(page: _Page, failed: list[dict[str, Any]]) -> None:
    page.add('<h2 id="failed">Failed runs</h2>')
    page.toc.append(("failed", "Failed runs"))
    page.add('<p class="note">The engine failed on these runs (a bug: please report it with the scenario). '
             "The next sweep of the same file into the same place runs them again.</p>")
    rows = [[_Html(f'<span class="mono">{_esc(f["key"])}</span>'),
             ", ".join(f"{k} = {v}" for k, v in (f.get("params") or {}).items()), f.get("seed"),
             f.get("torrentlab"), _Html(f'<span class="bad wrap">{_esc(f.get("error", ""))}</span>')] for f in failed]
    page.add(_table(["run", "parameters", "seed", "torrentlab", "error"], rows))
    for f in failed:
        page.add(_details(f"scenario of failed run {f['key']} (seed {f.get('seed')})", _pre(f.get("scenario"))))


def _sweep_summary(page: _Page, runs: pd.DataFrame, params: list[str], points: list, metrics: dict[str, str],
                   swarm: bool) -> None:
    page.heading(2, "Summary over seeds")
    page.add('<p class="note">One row per point of the sweep: the mean, minimum and maximum over its seeds of '
             "each run's metric (runs where it is undefined, e.g. no leecher finished, are left out). "
             "Click a header to sort.</p>")
    columns = [*params, "runs"] + (["completed"] if swarm else [])
    groups: list[tuple[str, int]] = [("", len(columns))]
    for c in metrics:
        columns += ["mean", "min", "max"]
        groups.append((c, 3))
    rows = []
    for key, g in points:
        row: list[Any] = [*key, len(g)]
        if swarm:
            row.append(f"{int(g['completed'].sum())}/{int(g['leechers'].sum())}"
                       if {"completed", "leechers"} <= set(g.columns) else None)
        for c in metrics:
            row += [g[c].mean(), g[c].min(), g[c].max()]
        rows.append(row)
    page.add(_table(columns, rows, groups=groups, titles=metrics, ident="summary-table"))


def _sweep_plots(page: _Page, runs: pd.DataFrame, peers: pd.DataFrame | None, params: list[str],
                 metrics: dict[str, str]) -> None:
    page.heading(2, "Plots")
    for p in params:
        axis = _axis(p, runs[p])
        others = [q for q in params if q != p]
        variants = []
        for c, title in metrics.items():
            series = []
            for key, g in _groups(runs, others):
                st = g.groupby(p, sort=False, dropna=False)[c].agg(["mean", "min", "max", "count"])
                st = st.loc[[v for v in axis.order if v in st.index]]
                series.append(_series(_point_name(others, key), [axis.pos[v] for v in st.index], st["mean"],
                                      lo=_nums(st["min"]), hi=_nums(st["max"]), n=[int(n) for n in st["count"]]))
            variants.append({"name": c, "ylabel": title, "ylog": _logish(runs[c]), "series": series})
        if variants:
            xlog = axis.cats is None and _logish(list(axis.pos.values()))
            page.plot(f"Key metrics against {p}", {
                "xlabel": axis.label, "xcats": axis.cats, "xlog": xlog, "dodge": True, "markers": True,
                "variants": variants},
                note="Points: the mean over seeds; bars: the minimum and maximum over seeds. "
                     + ("One series per combination of the other parameters. " if others else "")
                     + "Choose the metric above the plot.")
    if peers is not None:
        _cdf_plot(page, "Download times of the leechers (CDF), per point", peers, params,
                  lambda key: _point_name(params, key), "Every leecher of every seed of a point. ")
    if not params:
        page.add('<p class="note">The sweep varies no parameter (seeds only): there is no parameter to plot '
                 "against.</p>")


def _cdf_plot(page: _Page, title: str, peers: pd.DataFrame, by: list[str], name: Any, note: str) -> None:
    """A plot of the CDF of the leechers' download times, one series per value of `by` (named by `name`)."""
    if not {"role", "download_time_s"} <= set(peers.columns):
        return
    leechers = peers[peers["role"] == "leecher"]
    series = [s for key, g in _groups(leechers, by) if (s := _cdf(name(key), g["download_time_s"], len(g)))]
    if series:
        page.plot(title, {"xlabel": "download time [s]", "xlog": _logish(leechers["download_time_s"]), "variants": [
            {"name": "fraction of leechers done", "ylabel": "fraction of leechers done", "ydomain": [0, 1.02],
             "series": series}]},
            note=note + "A curve that ends below 1: leechers that never finished. A curve over more than "
                        f"{CDF_POINTS:,} leechers is drawn through {CDF_POINTS:,} of its quantiles.")


def _sweep_runs(page: _Page, runs: pd.DataFrame, params: list[str], metrics: dict[str, str]) -> None:
    page.heading(2, "Runs")
    page.add('<p class="note">Every run: its parameters, seed, key metrics, the torrentlab version that made it '
             "and its wall time. <code>run</code> names its file in <code>runs/</code>; "
             "the full scenarios follow.</p>")
    text = runs["scenario"] if "scenario" in runs.columns else pd.Series([None] * len(runs))
    keys = [_run_key(t, s) for t, s in zip(text, runs["seed"], strict=True)]
    extra = [c for c in ("completed", "leechers") if c in runs.columns]
    cols = [c for c in ("torrentlab_version", "torrentlab_commit", "worker", "wall_s") if c in runs.columns]
    shown = [*params, "seed", *metrics, *extra, *cols]
    rows = ([_Html(f'<span class="mono">{_esc(k)}</span>'), *r]
            for k, r in zip(keys, runs[shown].itertuples(index=False), strict=True))
    page.add(_table(["run", *shown], rows, titles=metrics, ident="runs-table"))
    page.heading(3, "Scenarios")
    page.add('<p class="note">The scenario of every run, as it was run (the base scenario with the point\'s '
             "parameters set; the seed is apart). Runs that share a scenario are listed together.</p>")
    by_text: dict[Any, list[int]] = {}
    for i, t in enumerate(text):
        by_text.setdefault(t, []).append(i)
    for t, idx in by_text.items():
        key = [runs[p].iloc[idx[0]] for p in params]
        seeds = ", ".join(str(runs["seed"].iloc[i]) for i in idx)
        page.add(_details(f"{_point_name(params, key)}: {len(idx)} run{'s' * (len(idx) != 1)}, seeds {seeds}",
                          _pre(_pretty(t)) if t is not None else "<p>(no scenario recorded)</p>"))


# --- a run -------------------------------------------------------------------

def _run(page: _Page, d: Path, m: dict[str, Any], level: int) -> None:
    """A single run's section: facts, summary, tables and time series."""
    from torrentlab.store import tables

    found = tables(d)
    kind = m.get("scenario_kind") or ("swarm" if "peers" in found else "dumbbell")
    perf = _json_file(d / "perf.json") or {}
    facts = _facts([("result", d.resolve()), ("kind", f"run of a {kind}"), ("scenario", m.get("scenario")),
                    ("seed", m.get("seed")), ("torrentlab", m.get("torrentlab")), ("commit", m.get("commit")),
                    ("written", m.get("written")),
                    ("simulated", f"{perf['sim_seconds']:g} s" if _is_num(perf.get("sim_seconds")) else None),
                    ("wall time", f"{perf['wall_seconds']:.3g} s" if _is_num(perf.get("wall_seconds")) else None),
                    ("events", perf.get("events"))])
    (page.header if level == 2 else page.body).append(facts)
    if "summary" in found:
        page.heading(level, "Summary")
        s = _read(found["summary"])
        page.add(_table(["quantity", "value"], ([c, s[c].iloc[0]] for c in s.columns) if len(s) else []))
    page.heading(level, "Plots")
    if kind == "swarm":
        _swarm_plots(page, found)
    else:
        _dumbbell_plots(page, found)
    page.heading(level, "Tables")
    for name in ("flows", "peers", "uplinks", "transports", "payload_lengths"):
        if name in found:
            df, n = _head(found[name])
            more = f" (the first {len(df)} shown)" if n > len(df) else ""
            page.add(_details(f"{name}: {n} row{'s' * (n != 1)}{more}", _frame_table(df), open_=name == "flows"))
    page.add(f'<p class="note">Every table: {_esc(", ".join(found))}. Query them with '
             f"<code>torrentlab query {_esc(d)} SQL</code> (docs/metrics.md gives every column).</p>")
    page.heading(level, "Provenance")
    page.add('<p class="note">A single run\'s result names its scenario but does not keep the scenario file; '
             "keep the file (or use a sweep, which records every run's scenario).</p>")
    page.add(_details(f"{MANIFEST} (the result's files)", _pre(m)))
    if perf:
        page.add(_details("perf.json (events, wall time)", _pre(perf)))


def _dumbbell_plots(page: _Page, found: dict[str, Path]) -> None:
    flows = _read(found["flows"]) if "flows" in found else pd.DataFrame()
    names = {int(f.flow): f"flow {f.flow}: {f.label} ({f.cc})" if f.label else f"flow {f.flow} ({f.cc})"
             for f in flows.itertuples()} if {"flow", "label", "cc"} <= set(flows.columns) else {}
    drawn = False
    if "timeseries" in found:
        ts = _read(found["timeseries"], ["time_s", "flow", *TIMESERIES])
        longest = int(ts.groupby("flow").size().max()) if len(ts) else 0
        variants = []
        for col, title in TIMESERIES.items():
            if col not in ts.columns or not np.isfinite(ts[col].to_numpy(dtype=float)).any():
                continue
            series = []
            for flow, g in ts.groupby("flow", sort=True):
                x, y = _thin(g["time_s"], g[col])
                series.append(_series(names.get(int(flow), f"flow {flow}"), x, y))
            variants.append({"name": col, "ylabel": title, "ylog": False, "series": series})
        if variants:
            drawn = True
            page.plot("Flows over time", {**_TIME, "variants": variants},
                      note="One series per flow, sampled every metrics.sample_interval; choose the quantity above "
                           "the plot. " + _thinned_note("timeseries", longest))
    if "queue" in found:
        q = _read(found["queue"], ["time_s", "packets", "bytes"])
        if len(q):
            drawn = True
            variants = []
            for col, title in (("packets", "queue [packets]"), ("bytes", "queue [bytes]")):
                x, y = _thin(q["time_s"], q[col])
                variants.append({"name": col, "ylabel": title, "series": [_series("bottleneck queue", x, y,
                                                                                  step=True)]})
            page.plot("Bottleneck queue", {**_TIME, "variants": variants},
                      note="What waits in the bottleneck queue after each dequeue. " + _thinned_note("queue", len(q)))
    if not drawn:
        page.add('<p class="note">This run logged no time series (metrics.queue_log, sample_interval).</p>')


def _swarm_plots(page: _Page, found: dict[str, Path]) -> None:
    peers = _read(found["peers"]) if "peers" in found else pd.DataFrame(columns=["role"])
    by = ["class"] if "class" in peers.columns and peers.loc[peers["role"] == "leecher", "class"].nunique() > 1 else []
    _cdf_plot(page, "Download times of the leechers (CDF)", peers, by,
              lambda key: f"class {key[0]}" if by else "all leechers", "")
    if "haves" in found:
        h = _read(found["haves"], ["time_s"])
        n_pieces = _read(found["summary"], ["pieces"]) if "summary" in found else pd.DataFrame()
        need = len(peers[peers["role"] == "leecher"]) * int(n_pieces["pieces"].iloc[0]) if len(n_pieces) else 0
        if len(h) and need:
            t = np.sort(h["time_s"].to_numpy(dtype=float))
            x, y = _thin(t, np.arange(1, len(t) + 1) / need)
            page.plot("Pieces the leechers hold over time", {**_TIME, "variants": [{
                "name": "fraction of pieces", "ylabel": "pieces held / pieces needed", "ydomain": [0, 1.02],
                "series": [_series("all leechers", x, y, step=True)]}]},
                note="Every piece a leecher completed (the haves table), over all the leechers need. "
                     + _thinned_note("haves", len(t)))
    if "send_gaps" in found:
        g = _read(found["send_gaps"])
        g = g[(g["gap_lo_s"] > 0)] if "gap_lo_s" in g.columns else g.iloc[0:0]
        if len(g) and g["sends"].sum() > 0:
            mid = np.sqrt(g["gap_lo_s"] * g["gap_hi_s"].where(np.isfinite(g["gap_hi_s"]), g["gap_lo_s"] * 10))
            page.plot("Time between a leecher's writes on a connection", {
                "xlabel": "gap [s]", "xlog": True, "variants": [{"name": "sends", "ylabel": "writes per bin",
                                                                "series": [_series("writes", mid, g["sends"])]}]},
                note="The send_gaps histogram: 10 bins per decade (each point at its bin's geometric middle); "
                     "gaps under 1 µs are not drawn.")
    if "uplink_queue" in found:
        uq = _read(found["uplink_queue"], ["time_s", "peer", "packets"])
        if len(uq):
            series = []
            for peer, g in uq.groupby("peer", sort=True):
                x, y = _thin(g["time_s"], g["packets"])
                series.append(_series(f"peer {peer}", x, y, step=True))
            page.plot("Uplink queues of the logged peers", {**_TIME, "variants": [{
                "name": "packets", "ylabel": "uplink queue [packets]", "series": series}]},
                note="metrics.uplink_log_peers. " + _thinned_note("uplink_queue",
                                                                  int(uq.groupby("peer").size().max())))


# --- a reproduction (and any other result) -----------------------------------

def _reproduce(page: _Page, d: Path, m: dict[str, Any]) -> None:
    """A reproduction: its tables, its figures, and the runs it keeps as results of their own."""
    from torrentlab.store import tables

    page.header.append(_facts([("result", d.resolve()), ("kind", m.get("kind")),
                               ("experiment", m.get("experiment")), ("--quick", m.get("quick")),
                               ("torrentlab", m.get("torrentlab")), ("commit", m.get("commit")),
                               ("written", m.get("written"))]))
    try:
        found = tables(d)
    except QueryError:
        found = {}
    if "summary" in found:
        page.heading(2, "Summary")
        df, n = _head(found["summary"])
        page.add(_frame_table(df))
    figures = sorted({p.stem for p in d.glob("*.svg")} | {p.stem for p in d.glob("*.png")})
    if figures:
        page.heading(2, "Figures")
        page.add('<p class="note">The figures the experiment drew (static images, as written next to the '
                 "tables).</p>")
        for stem in figures:
            svg = d / f"{stem}.svg"
            path, mime = (svg, "image/svg+xml") if svg.is_file() else (d / f"{stem}.png", "image/png")
            try:
                data = base64.b64encode(path.read_bytes()).decode()
            except OSError as e:
                page.add(f'<p class="bad">{_esc(path.name)} cannot be read: {_esc(_why(e))}</p>')
                continue
            page.add(f'<figure class="tl-card"><figcaption>{_esc(path.name)}</figcaption>'
                     f'<img class="figure" alt="{_esc(stem)}" src="data:{mime};base64,{data}"></figure>')
    rest = {k: v for k, v in found.items() if k != "summary"}
    if rest:
        page.heading(2, "Tables")
        for name, path in rest.items():
            df, n = _head(path)
            more = f" (the first {len(df)} shown; torrentlab query gives every row)" if n > len(df) else ""
            page.add(_details(f"{name}: {n:,} row{'s' * (n != 1)}{more}", _frame_table(df)))
    subs = sorted(p.parent for p in d.rglob(MANIFEST) if p.parent != d)
    for sub in subs:
        sm = _manifest(sub)
        page.heading(2, f"{sub.relative_to(d).as_posix()}: {sm.get('scenario') or sm.get('kind')}")
        if sm.get("kind") == "run":
            _run(page, sub, sm, level=3)
        else:
            page.add(_details(MANIFEST, _pre(sm)))
    page.heading(2, "Provenance")
    page.add(_details(f"{MANIFEST} (the result's files)", _pre(m)))
