"""``torrentlab validate-sim``: one swarm scenario on real peers and in the
simulator, side by side.

The testbed (:mod:`torrentlab.testbed`) runs the scenario ``iterations``
times; the simulator runs it with as many seeds (``run.seed``,
``run.seed + 1``, ...), with every limited uplink logged
(``metrics.uplink_log_peers``). Both write the same tables; the report
compares, per side:

- **completion**: the leechers' ``download_time_s``, pooled over runs: the
  medians, their relative difference and the two-sample Kolmogorov-Smirnov
  statistic D (with its p-value); the CDFs overlaid (``completion.png`` and ``.svg``);
- **queueing delay** at the uplinks: the mean per packet (``uplinks``'
  ``mean_delay_ms``, weighted by packets served; the testbed's comes from
  Little's law over its qdisc samples), and the distribution in time of the
  delay a packet arriving would see (bytes waiting x 8 / capacity, each
  sample held until the next: the testbed's qdisc samples, the simulator's
  dequeue log), as CCDFs (``queue_delay.png`` and ``.svg``);
- **byte shares** per transport (``transports.piece_bytes``);
- **uplink utilisation** (``uplinks.utilisation``, seeds and leechers).

A relative difference above 15 % on median completion time or mean queueing
delay is flagged (issue 44: the cause is then to be found or documented in
docs/validation.md). Output: ``testbed-<i>/`` and ``sim-<k>/`` (each a
torrentlab result), ``report.md``, ``report.json``, the figures.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

#: A relative difference above this is flagged.
THRESHOLD = 0.15


def _load_toml(path: str) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    with open(path, "rb") as f:
        return tomllib.load(f)


def sim_scenario(path: str, n_logged: int, name: str) -> dict[str, Any]:
    """The scenario as a dict, with the first `n_logged` uplinks logged."""
    doc = _load_toml(path)
    doc["name"] = name
    doc.setdefault("metrics", {})["uplink_log_peers"] = n_logged
    return doc


def _held(ts: np.ndarray, vals: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Values held from each time to the next (the last to `hi`), weights = time held inside [lo, hi]."""
    if len(ts) == 0:
        return np.zeros(0), np.zeros(0)
    nxt = np.append(ts[1:], hi)
    w = np.clip(np.minimum(nxt, hi) - np.maximum(ts, lo), 0, None)
    return vals, w


def queue_delays(result: Path, role: str) -> tuple[np.ndarray, np.ndarray]:
    """Delay (ms) a packet arriving at a logged uplink of a `role` peer would
    wait, in time: values and weights (seconds held), over those uplinks."""
    import torrentlab

    q = torrentlab.load(result, "uplink_queue")
    up = torrentlab.load(result, "uplinks").set_index("peer")
    peers = torrentlab.load(result, "peers").set_index("peer")
    end = float(torrentlab.load(result, "summary")["end_s"].iloc[0])
    # The simulator logs the queue just after each dequeue, its lowest point
    # between two dequeues; the testbed samples at times unrelated to the
    # packets. Held from a dequeue, the simulator's queue is taken at the
    # midpoint: what waits after it plus half the packet that left.
    per_dequeue = json.loads((Path(result) / "manifest.json").read_text()).get("kind") != "testbed"
    vals, weights = [], []
    for peer, g in q.groupby("peer"):
        cap = up.loc[peer, "capacity_bps"]
        if peers.loc[peer, "role"] != role or not cap or math.isnan(cap):
            continue
        g = g.sort_values("time_s", kind="stable")
        lo = float(peers.loc[peer, "join_s"]) if not math.isnan(peers.loc[peer, "join_s"]) else 0.0
        b = g["bytes"].to_numpy(dtype=float)
        if per_dequeue:
            b = b + np.diff(g["served_bytes"].to_numpy(dtype=float), prepend=0.0) / 2
        v, w = _held(g["time_s"].to_numpy(), b * 8 / cap * 1e3, lo, end)
        vals.append(v)
        weights.append(w)
    if not vals:
        return np.zeros(0), np.zeros(0)
    return np.concatenate(vals), np.concatenate(weights)


def _ccdf(vals: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    o = np.argsort(vals)
    v, c = vals[o], np.cumsum(w[o])
    return v, 1 - c / c[-1] if len(c) and c[-1] > 0 else c


def side_metrics(results: list[Path]) -> dict[str, Any]:
    """What the report compares, from one side's result directories."""
    import torrentlab

    dts, shares, util_seed, util_lee, mean_delay, served = [], [], [], [], [], []
    by_role: dict[str, tuple[list, list]] = {"seed": ([], []), "leecher": ([], [])}
    queues: dict[str, tuple[list, list]] = {"seed": ([], []), "leecher": ([], [])}
    for r in results:
        peers = torrentlab.load(r, "peers")
        lee = peers[peers["role"] == "leecher"]
        dts += [float(x) for x in lee["download_time_s"] if not math.isnan(x)]
        tr = torrentlab.load(r, "transports").set_index("transport")["piece_bytes"]
        tot = float(tr.sum())
        shares.append(float(tr.get("utp", 0)) / tot if tot else math.nan)
        up = torrentlab.load(r, "uplinks").merge(peers[["peer", "role"]], on="peer")
        up = up[up["capacity_bps"].notna()]
        util_seed += list(up[up["role"] == "seed"]["utilisation"].dropna())
        util_lee += list(up[up["role"] == "leecher"]["utilisation"].dropna())
        m = up[up["mean_delay_ms"].notna() & (up["served_packets"] > 0)]
        mean_delay += list(m["mean_delay_ms"])
        served += list(m["served_packets"])
        for role, (d, n) in by_role.items():
            d += list(m[m["role"] == role]["mean_delay_ms"])
            n += list(m[m["role"] == role]["served_packets"])
        for role, (qv, qw) in queues.items():
            v, w = queue_delays(r, role)
            qv.append(v)
            qw.append(w)
    held = {role: (np.concatenate(qv) if qv else np.zeros(0), np.concatenate(qw) if qw else np.zeros(0))
            for role, (qv, qw) in queues.items()}
    tw_mean = {role: float((v * w).sum() / w.sum()) if w.sum() > 0 else math.nan for role, (v, w) in held.items()}
    sw = float(np.sum(served))
    return {
        "runs": len(results),
        "download_times_s": dts,
        "median_download_s": float(np.median(dts)) if dts else math.nan,
        "mean_download_s": float(np.mean(dts)) if dts else math.nan,
        "mean_queue_delay_ms": float(np.dot(mean_delay, served) / sw) if sw else math.nan,
        **{f"{role}_mean_queue_delay_ms": float(np.dot(d, n) / np.sum(n)) if np.sum(n) else math.nan
           for role, (d, n) in by_role.items()},
        "seed_time_mean_queue_delay_ms": tw_mean["seed"],
        "leecher_time_mean_queue_delay_ms": tw_mean["leecher"],
        "utp_byte_share": float(np.nanmean(shares)) if shares else math.nan,
        "seed_utilisation": float(np.mean(util_seed)) if util_seed else math.nan,
        "leecher_utilisation": float(np.mean(util_lee)) if util_lee else math.nan,
        "_queue": held,
    }


def _rel(a: float, b: float) -> float:
    """Relative difference of the simulator's value `b` to the testbed's `a`."""
    if a is None or b is None or math.isnan(a) or math.isnan(b) or a == 0:
        return math.nan
    return (b - a) / a


def compare(real: dict[str, Any], sim: dict[str, Any]) -> dict[str, Any]:
    from scipy.stats import ks_2samp

    ks = ks_2samp(real["download_times_s"], sim["download_times_s"]) if real["download_times_s"] and \
        sim["download_times_s"] else None
    rows = {}
    for key in ("median_download_s", "mean_download_s", "mean_queue_delay_ms", "seed_mean_queue_delay_ms",
                "leecher_mean_queue_delay_ms", "seed_time_mean_queue_delay_ms", "leecher_time_mean_queue_delay_ms",
                "utp_byte_share", "seed_utilisation", "leecher_utilisation"):
        rel = _rel(real[key], sim[key])
        if key.endswith("_ms") and max(abs(real[key]), abs(sim[key])) < 0.5:
            rel = math.nan  # both under half a millisecond: no queue to speak of
        rows[key] = {"testbed": real[key], "sim": sim[key], "rel_diff": rel}
    flagged = [k for k in ("median_download_s", "mean_queue_delay_ms")
               if not math.isnan(rows[k]["rel_diff"]) and abs(rows[k]["rel_diff"]) > THRESHOLD]
    return {"metrics": rows, "ks_download": {"D": float(ks.statistic), "p": float(ks.pvalue)} if ks else None,
            "flagged": flagged}


def figures(real: dict[str, Any], sim: dict[str, Any], out: Path, title: str) -> list[str]:
    """The completion-time CDFs and the queueing-delay CCDFs of both sides,
    overlaid (``completion`` and ``queue_delay``, PNG and SVG); returns the
    file names."""
    from torrentlab import plots

    names = []
    fig, ax = plots.plt.subplots(figsize=(6, 4))
    for side, m, style in (("testbed", real, "-"), ("simulator", sim, "--")):
        d = m["download_times_s"]
        plots.cdf(ax, d, f"{side} (n={len(d)})", linestyle=style)
    ax.set_xlabel("download time (s)")
    ax.set_ylabel("CDF")
    ax.set_title(f"{title}: completion times")
    ax.grid(alpha=0.3)
    plots.legend(ax)
    names += [p.name for p in plots.save(fig, out / "completion")]
    fig, ax = plots.plt.subplots(figsize=(6, 4))
    for side, m, style in (("testbed", real, "-"), ("simulator", sim, "--")):
        for role, color in (("seed", "C0"), ("leecher", "C1")):
            v, w = m["_queue"][role]
            if len(v) and w.sum() > 0:
                x, y = _ccdf(v, w)
                ax.step(x, y, style, color=color, where="post", label=f"{side}, {role}s' uplinks")
    ax.set_yscale("log")
    ax.set_xlabel("uplink queueing delay (ms), in time")
    ax.set_ylabel("CCDF")
    ax.set_title(f"{title}: uplink queueing delay")
    ax.grid(alpha=0.3)
    plots.legend(ax)
    names += [p.name for p in plots.save(fig, out / "queue_delay")]
    return names


def _fmt(x: float, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{100 * x:+.1f} %" if pct else f"{x:.4g}"


def report_md(name: str, cmp: dict[str, Any], real: dict[str, Any], sim: dict[str, Any], info: dict[str, Any]) -> str:
    labels = {"median_download_s": "median download time (s)", "mean_download_s": "mean download time (s)",
              "mean_queue_delay_ms": "mean uplink queueing delay per packet (ms)",
              "seed_mean_queue_delay_ms": "the same at the seeds' uplinks (ms)",
              "leecher_mean_queue_delay_ms": "the same at the leechers' uplinks (ms)",
              "seed_time_mean_queue_delay_ms": "time-averaged queueing delay at the seeds' uplinks (ms)",
              "leecher_time_mean_queue_delay_ms": "time-averaged queueing delay at the leechers' uplinks (ms)",
              "utp_byte_share": "uTP share of piece bytes", "seed_utilisation": "seed uplink utilisation",
              "leecher_utilisation": "leecher uplink utilisation"}
    lines = [f"# validate-sim: {name}", "",
             f"{real['runs']} testbed runs, {sim['runs']} simulator runs; {info['scenario']}; "
             f"torrentlab {info['torrentlab']}, libtorrent {info.get('libtorrent', '?')}, kernel {info['kernel']}.",
             "", "| metric | testbed | simulator | sim vs testbed |", "|---|---|---|---|"]
    for k, row in cmp["metrics"].items():
        flag = " **>15 %**" if k in cmp["flagged"] else ""
        lines.append(f"| {labels[k]} | {_fmt(row['testbed'])} | {_fmt(row['sim'])} | "
                     f"{_fmt(row['rel_diff'], pct=True)}{flag} |")
    ks = cmp["ks_download"]
    if ks:
        lines += ["", f"Two-sample KS on download times: D = {ks['D']:.3f} (p = {ks['p']:.3g}; "
                      f"n = {len(real['download_times_s'])} and {len(sim['download_times_s'])})."]
    lines += ["", "![completion times](completion.png)", "", "![uplink queueing delay](queue_delay.png)", ""]
    if cmp["flagged"]:
        lines.append("Flagged (> 15 %): " + ", ".join(labels[k] for k in cmp["flagged"]) +
                     ". See docs/validation.md.")
    return "\n".join(lines) + "\n"


def write_report(out: Path, name: str, info: dict[str, Any]) -> dict[str, Any]:
    """Compares ``out``'s ``testbed-*`` and ``sim-*`` results and writes
    ``report.md``, ``report.json`` and the figures there; returns the comparison."""
    real_dirs = sorted(out.glob("testbed-*"), key=lambda p: int(p.name.split("-")[1]))
    sim_dirs = sorted(out.glob("sim-*"), key=lambda p: int(p.name.split("-")[1]))
    real, sim = side_metrics(real_dirs), side_metrics(sim_dirs)
    cmp = compare(real, sim)
    tb_json = real_dirs[0] / "testbed.json" if real_dirs else None
    tb_info = json.loads(tb_json.read_text()) if tb_json is not None and tb_json.exists() else {}
    info = {**info, "libtorrent": tb_info.get("libtorrent")}
    figures(real, sim, out, name)
    (out / "report.md").write_text(report_md(name, cmp, real, sim, info))
    strip = [{k: v for k, v in m.items() if not k.startswith("_")} for m in (real, sim)]
    (out / "report.json").write_text(json.dumps({"info": info, "compare": cmp, "testbed": strip[0], "sim": strip[1]},
                                                indent=1, default=float) + "\n")
    return cmp


def rewrite_report(out_dir: str) -> Path:
    """Writes the report of an existing validate-sim directory again (after a change to the report)."""
    out = Path(out_dir)
    old = json.loads((out / "report.json").read_text())
    name = json.loads((out / "manifest.json").read_text()).get("scenario", out.name)
    write_report(out, name, old["info"])
    return out


def _logged_uplinks(pl: Any) -> int:
    """How many uplinks the simulator side logs: the first peers', as far as
    each is limited (a logged uplink must be)."""
    logged = 0
    for q in pl.peers:
        if q.up_bps is None:
            break
        logged += 1
    return logged


def rerun_sim(file: str, out_dir: str, *, sim_seeds: int | None = None) -> Path:
    """Runs the simulator side of the validate-sim directory ``out_dir`` (of
    ``file``) again and rewrites its report, keeping its testbed runs: after a
    change to the model. Needs no root. The directory is replaced as a whole
    when done; on error or interrupt it is left as it was."""
    import os
    import shutil

    import torrentlab
    from torrentlab import testbed
    from torrentlab.exceptions import TestbedError
    from torrentlab.output import MANIFEST, atomic_dir

    out = Path(out_dir)
    try:
        manifest = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        manifest = {}
    real_dirs = sorted(out.glob("testbed-*"))
    if manifest.get("kind") != "validate-sim" or not real_dirs:
        raise TestbedError(f"{out_dir}: not a validate-sim result with testbed runs (--sim-only keeps them)")
    pl = testbed.plan(file, ignore_rtt=True)
    if manifest.get("scenario") != pl.name:
        raise TestbedError(f"{out_dir}: its runs are of scenario {manifest.get('scenario')!r}, {file} is "
                           f"{pl.name!r}")
    old = json.loads((out / "report.json").read_text())["info"] if (out / "report.json").exists() else {}
    logged = _logged_uplinks(pl)
    sim_seeds = sim_seeds or len(real_dirs)
    with atomic_dir(out_dir, force=True, kind="validate-sim", scenario=pl.name, scenario_kind="swarm",
                    seed=pl.seed) as tmp:
        for d in real_dirs:
            shutil.copytree(d, tmp / d.name)
        doc = sim_scenario(file, logged, pl.name)
        for k in range(sim_seeds):
            torrentlab.run(doc, seed=pl.seed + k, spill_dir=tmp).write(tmp / f"sim-{k}")
        info = {"kernel": os.uname().release, "iterations": len(real_dirs), **old, "scenario": str(file),
                "torrentlab": torrentlab.__version__, "sim_seeds": sim_seeds, "sim_rerun": time.strftime("%Y-%m-%d")}
        write_report(tmp, pl.name, info)
    return out


def run(file: str, out_dir: str, *, iterations: int = 3, sim_seeds: int | None = None, force: bool = False,
        prefix: str = "v", subnet: int = 232, sample_interval_s: float = 0.02, timeout_s: float | None = None,
        quiet: bool = True) -> Path:
    import os

    import torrentlab
    from torrentlab import testbed
    from torrentlab.output import atomic_dir, check_output

    pl = testbed.plan(file)
    check_output(out_dir, force=force)
    testbed.netns.check_host()
    logged = _logged_uplinks(pl)
    sim_seeds = sim_seeds or iterations
    with atomic_dir(out_dir, force=force, kind="validate-sim", scenario=pl.name, scenario_kind="swarm",
                    seed=pl.seed) as tmp:
        for i in range(iterations):
            if not quiet:
                print(f"[{time.strftime('%H:%M:%S')}] testbed run {i + 1}/{iterations}", flush=True)
            d = tmp / f"testbed-{i}"
            testbed.run(file, d, prefix=prefix, subnet=subnet, sample_interval_s=sample_interval_s,
                        timeout_s=timeout_s, quiet=quiet)
        doc = sim_scenario(file, logged, pl.name)
        for k in range(sim_seeds):
            d = tmp / f"sim-{k}"
            torrentlab.run(doc, seed=pl.seed + k, spill_dir=tmp).write(d)
        info = {"scenario": str(file), "torrentlab": torrentlab.__version__,
                "kernel": os.uname().release, "iterations": iterations, "sim_seeds": sim_seeds}
        write_report(tmp, pl.name, info)
    return Path(out_dir)


def table(dirs: list[str]) -> str:
    """One Markdown row per validate-sim directory: the numbers of its report.json."""
    lines = ["| case | runs (tb/sim) | median download s (tb / sim, diff) | KS D | mean queue delay ms, all uplinks "
             "(tb / sim, diff) | seeds' | leechers' | uTP share (tb / sim) | leecher utilisation (tb / sim) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for d in dirs:
        r = json.loads((Path(d) / "report.json").read_text())
        m, ks = r["compare"]["metrics"], r["compare"]["ks_download"]

        def pair(k: str, m=m, r=r) -> str:
            flag = " **!**" if k in r["compare"]["flagged"] else ""
            return f"{_fmt(m[k]['testbed'])} / {_fmt(m[k]['sim'])} ({_fmt(m[k]['rel_diff'], pct=True)}){flag}"

        lines.append(f"| {Path(d).name} | {r['testbed']['runs']}/{r['sim']['runs']} | {pair('median_download_s')} | "
                     f"{ks['D']:.2f} | {pair('mean_queue_delay_ms')} | {pair('seed_mean_queue_delay_ms')} | "
                     f"{pair('leecher_mean_queue_delay_ms')} | {_fmt(m['utp_byte_share']['testbed'])} / "
                     f"{_fmt(m['utp_byte_share']['sim'])} | {_fmt(m['leecher_utilisation']['testbed'])} / "
                     f"{_fmt(m['leecher_utilisation']['sim'])} |")
    return "\n".join(lines) + "\n"
