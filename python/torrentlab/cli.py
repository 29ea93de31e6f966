"""The `torrentlab` command line.

    torrentlab validate FILE...             check scenario files
    torrentlab run FILE [-o DIR]            run one scenario, write Parquet
    torrentlab reproduce EXPERIMENT [--quick] [-o DIR] [-j N]
    torrentlab sweep FILE [--quick] [-o DIR] [-j N]
    torrentlab bench [--scenario FILE] [--repeat N] [--json]

Exit codes: 0 success, 2 invalid input (scenario or arguments), 1 internal error.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

import torrentlab
from torrentlab.exceptions import ScenarioError, TorrentlabError
from torrentlab.experiments import EXPERIMENTS, scenario_dir

# Tables stay readable when the output is a pipe or a file (rich assumes 80 columns).
out = Console(width=None if sys.stdout.isatty() else 120)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


def _cmd_validate(args) -> int:
    for f in args.files:
        info = torrentlab.validate(f)
        if info["kind"] == "swarm":
            what = (f"swarm of {info['peers']} peers ({info['leechers']} leechers), "
                    f"{info['file_bytes'] / 1e6:g} MB in {info['pieces']} pieces")
        else:
            what = f"{info['flows']} flows ({', '.join(sorted(set(info['controllers'])))})"
        # One line per file, however long (stdout is often a pipe: 120 columns).
        out.print(f"[green]ok[/]: {escape(f)}: {escape(info['name'])}, {what}, {info['duration_s']:g} s",
                  soft_wrap=True)
    return 0


SUMMARY_COLUMNS = ("flows", "window_s", "jain_index", "efficiency", "loss_rate", "goodput_bps", "mean_queue_delay_ms")


SWARM_SUMMARY_COLUMNS = ("peers", "completed", "mean_download_time_s", "min_download_time_s", "max_download_time_s",
                         "end_s", "wasted_ratio")


def _print_summary(res) -> None:
    s = res.summary.iloc[0]
    t = Table(title=f"{res.name} (seed {s['seed']})")
    columns = SWARM_SUMMARY_COLUMNS if res.kind == "swarm" else SUMMARY_COLUMNS
    for col in columns:
        t.add_column(col, justify="right")
    t.add_row(*(f"{s[c]:.4g}" if isinstance(s[c], float) else str(s[c]) for c in columns))
    out.print(t)


def _cmd_run(args) -> int:
    info = torrentlab.validate(args.file)
    dest = Path(args.output) if args.output else Path("results") / info["name"]
    from rich.progress import Progress

    with Progress(transient=True, console=err, disable=args.quiet) as bar:
        task = bar.add_task(f"running {info['name']}", total=info["duration_s"])
        res = torrentlab.run(args.file, seed=args.seed, progress=lambda t: bar.update(task, completed=t))
    res.write(dest)
    if not args.quiet:
        _print_summary(res)
        out.print(f"wrote {dest}/ ({', '.join(sorted(p.name for p in dest.iterdir()))})")
    return 0


def _cmd_reproduce(args) -> int:
    module = importlib.import_module(EXPERIMENTS[args.experiment])
    dest = Path(args.output) if args.output else Path("results") / args.experiment
    report = module.reproduce(dest, quick=args.quick, workers=args.jobs, show_progress=not args.quiet)
    out.print(module.render(report, title=f"{args.experiment}{' (quick)' if args.quick else ''}"))
    out.print(f"wrote {report.out_dir}/: tables (Parquet) and {len(report.figures)} figure files")
    return 0


def _cmd_sweep(args) -> int:
    import pandas as pd

    from torrentlab.output import atomic_dir, write_frame
    from torrentlab.sweep import Sweep, run_jobs, tables_with_params

    sweep = Sweep.from_file(args.file)
    jobs = sweep.jobs(quick=args.quick)
    name = Path(args.file).name.removesuffix(".toml").removesuffix(".sweep")
    dest = Path(args.output) if args.output else Path("results") / name
    results = run_jobs(jobs, workers=args.jobs, describe=name, keep=tables_with_params, show_progress=not args.quiet)
    runs = pd.concat([r[0] for r in results], ignore_index=True)
    second = pd.concat([r[1] for r in results], ignore_index=True)
    swarm = "peers" in runs.columns and "mean_download_time_s" in runs.columns
    with atomic_dir(dest) as tmp:
        write_frame(runs, tmp / "runs.parquet")
        write_frame(second, tmp / ("peers.parquet" if swarm else "flows.parquet"))
    params = list(sweep.grid)
    if swarm:
        t = Table(title=f"{name}: {len(jobs)} runs (over seeds)")
        for c in params + ["runs", "mean download s", "min s", "max s", "completed"]:
            t.add_column(c)
        for key, g in runs.groupby(params, sort=False) if params else [((), runs)]:
            key = key if isinstance(key, tuple) else (key,)
            t.add_row(*map(str, key), str(len(g)), f"{g.mean_download_time_s.mean():.1f}",
                      f"{g.min_download_time_s.min():.1f}", f"{g.max_download_time_s.max():.1f}",
                      f"{g.completed.sum()}/{g.leechers.sum()}")
        out.print(t)
        out.print(f"wrote {dest}/ (runs.parquet, peers.parquet)")
        return 0
    flows = second
    t = Table(title=f"{name}: {len(jobs)} runs (means over seeds)")
    for c in params + ["F", "efficiency", "queue delay ms", "loss", "first flow share", "first flow done s"]:
        t.add_column(c)
    first = flows[flows["flow"] == 0].set_index(runs.index)
    runs = runs.assign(first_share=first["window_rate_bps"] / runs["goodput_bps"], first_done=first["completion_s"])
    for key, g in runs.groupby(params, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        t.add_row(*map(str, key), f"{g.jain_index.mean():.3f}", f"{g.efficiency.mean():.3f}",
                  f"{g.mean_queue_delay_ms.mean():.1f}", f"{g.loss_rate.mean():.2e}", f"{g.first_share.mean():.3f}",
                  f"{g.first_done.mean():.1f}")
    out.print(t)
    out.print(f"wrote {dest}/ (runs.parquet, flows.parquet)")
    return 0


def _cmd_bench(args) -> int:
    path = args.scenario or str(scenario_dir("bench") / "dumbbell-100-newreno.toml")
    scenario = path
    kind = torrentlab.validate(path)["kind"]
    if args.cc and kind != "dumbbell":
        raise ScenarioError(f"{path}: --cc: only applies to dumbbell scenarios ([[flows]]); this is a {kind}")
    if args.cc:
        from torrentlab.sweep import load_toml

        scenario = load_toml(path)
        for flow in scenario["flows"]:
            if args.cc == "utp":
                flow.pop("cc", None)
                flow["transport"] = "utp"
            else:
                flow["cc"] = args.cc
        scenario.setdefault("name", Path(path).stem)
    import resource

    runs = []
    for _ in range(args.warmup + args.repeat):
        runs.append(torrentlab.run(scenario).perf)
    # Peak resident memory of this process (the interpreter included), MiB.
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    runs = runs[args.warmup:]
    wall = statistics.median(r["wall_seconds"] for r in runs)
    med = min(runs, key=lambda r: abs(r["wall_seconds"] - wall))
    result = {
        "tool": "torrentlab",
        "version": torrentlab.__version__,
        "scenario": path,
        "cc": args.cc or "as in the scenario",
        "repeat": args.repeat,
        "sim_seconds": med["sim_seconds"],
        "wall_seconds": wall,
        "wall_seconds_all": [r["wall_seconds"] for r in runs],
        "events": med["events"],
        "delivered_packets": med["data_packets_delivered"],
        "packets_per_wall_second": med["data_packets_delivered"] / wall,
        "events_per_wall_second": med["events"] / wall,
        "sim_seconds_per_wall_second": med["sim_seconds"] / wall,
        "peak_rss_mib": peak_mib,
    }
    if args.json:
        print(json.dumps(result))
    else:
        t = Table(title=f"bench: {Path(path).name}{f' with {args.cc}' if args.cc else ''} (median of {args.repeat})")
        t.add_column("figure")
        t.add_column("value", justify="right")
        for k in ("wall_seconds", "events", "delivered_packets", "packets_per_wall_second",
                  "events_per_wall_second", "sim_seconds_per_wall_second", "peak_rss_mib"):
            t.add_row(k, f"{result[k]:,.3f}" if isinstance(result[k], float) else f"{result[k]:,}")
        out.print(t)
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="torrentlab", description="Packet-level BitTorrent and congestion-control experiments.")
    p.add_argument("--version", action="version", version=f"torrentlab {torrentlab.__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    v = sub.add_parser("validate", help="check scenario files without running them")
    v.add_argument("files", nargs="+", metavar="FILE")
    v.set_defaults(func=_cmd_validate)

    r = sub.add_parser("run", help="run one scenario and write its tables as Parquet")
    r.add_argument("file", metavar="FILE")
    r.add_argument("-o", "--output", metavar="DIR", help="output directory (default results/<name>)")
    r.add_argument("--seed", type=int, help="override run.seed")
    r.add_argument("-q", "--quiet", action="store_true")
    r.set_defaults(func=_cmd_run)

    def many_runs(cmd, help, target, quick, default_dir, func):
        """A command that runs many scenarios in parallel and writes a directory."""
        c = sub.add_parser(cmd, help=help)
        c.add_argument(target[0], metavar=target[1], **target[2])
        c.add_argument("--quick", action="store_true", help=quick)
        c.add_argument("-o", "--output", metavar="DIR", help=f"output directory (default results/<{default_dir}>)")
        c.add_argument("-j", "--jobs", type=int, default=None, help="parallel runs (default: every core)")
        c.add_argument("-q", "--quiet", action="store_true")
        c.set_defaults(func=func)

    many_runs("reproduce", "run a published experiment and draw its figures",
              ("experiment", "EXPERIMENT", {"choices": sorted(EXPERIMENTS)}),
              "fewer runs, for a first look and for tests", "experiment", _cmd_reproduce)
    many_runs("sweep", "run a sweep file (a base scenario x a grid x seeds) on all cores",
              ("file", "FILE", {}), "use the sweep's quick_runs seeds", "sweep name", _cmd_sweep)

    b = sub.add_parser("bench", help="time the engine on one scenario (default: the benchmark dumbbell; one core)")
    b.add_argument("--scenario", metavar="FILE")
    b.add_argument("--cc", metavar="NAME", help="run every flow with this congestion controller (or 'utp')")
    b.add_argument("--repeat", type=int, default=5)
    b.add_argument("--warmup", type=int, default=1)
    b.add_argument("--json", action="store_true", help="print one JSON object")
    b.set_defaults(func=_cmd_bench)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except ScenarioError as e:
        err.print(f"[red]error[/]: {escape(str(e))}", highlight=False, soft_wrap=True)
        return 2
    except TorrentlabError as e:
        err.print(f"[red]error[/]: {escape(str(e))}", highlight=False, soft_wrap=True)
        return 1
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except Exception as e:  # a bug: say so plainly, traceback only on request
        if os.environ.get("TORRENTLAB_DEBUG"):
            raise
        err.print(f"[red]internal error[/]: {type(e).__name__}: {escape(str(e))} (set TORRENTLAB_DEBUG=1 for a traceback)",
                  highlight=False, soft_wrap=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
