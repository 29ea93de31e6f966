"""The `torrentlab` command line.

    torrentlab validate FILE...             check scenario files
    torrentlab run FILE [-o DIR]            run one scenario, write Parquet
    torrentlab reproduce EXPERIMENT [--quick] [-o DIR] [-j N]
    torrentlab sweep FILE [--quick] [-o DIR] [-j N]
    torrentlab bench [--scenario FILE] [--repeat N] [--json]
    torrentlab query DIR SQL [--csv]        SQL over a result's tables (DuckDB)
    torrentlab testbed FILE -o DIR          run a swarm on real libtorrent peers (root)
    torrentlab testbed --cleanup            remove what a killed testbed run left
    torrentlab validate-sim FILE -o DIR     testbed and simulator side by side, a report

Exit codes: 0 success, 2 invalid input (scenario or arguments), 1 internal error.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import statistics
import sys
import threading
from contextlib import closing
from pathlib import Path
from typing import NoReturn

from rich.console import Console
from rich.markup import escape
from rich.table import Table

import torrentlab
from torrentlab.exceptions import (
    ClusterError,
    OutputError,
    QueryError,
    ScenarioError,
    TestbedError,
    TorrentlabError,
)
from torrentlab.experiments import EXPERIMENTS, scenario_dir

# Tables stay readable when the output is a pipe or a file (rich assumes 80 columns).
out = Console(width=None if sys.stdout.isatty() else 120)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


def _describe(info: dict) -> str:
    if info["kind"] == "swarm":
        what = (f"swarm of {info['peers']} peers ({info['leechers']} leechers), "
                f"{info['file_bytes'] / 1e6:g} MB in {info['pieces']} pieces")
    else:
        what = f"{info['flows']} flows ({', '.join(sorted(set(info['controllers'])))})"
    return f"{info['name']}, {what}, {info['duration_s']:g} s"


def _validate_sweep(path: str) -> str:
    """Checks a sweep file: the sweep itself, its base scenario, and the first run
    of every grid point (with and without the quick overrides). Returns a
    description, or raises ScenarioError naming the sweep file, the field and
    the grid point."""
    from torrentlab.inputs import error
    from torrentlab.sweep import Sweep, load_toml

    try:
        sweep = Sweep.from_file(path)
        info = torrentlab.validate(Path(path).parent / load_toml(path)["base"])
    except ScenarioError as e:
        if e.file == path:
            raise
        # The base scenario is bad: say which sweep refers to it.
        raise error(path, "base", str(e)) from None
    points = sweep.points()
    for quick in (False, True) if sweep.quick else (False,):
        sweep.check(path, quick)
    quick_runs = f", {sweep.quick_runs} with --quick" if sweep.quick_runs != sweep.runs else ""
    return (f"sweep of {points} grid point{'s' * (points != 1)} x {sweep.runs} run{'s' * (sweep.runs != 1)}"
            f"{quick_runs}, over {_describe(info)}")


def _cmd_validate(args) -> int:
    """Checks every file (a scenario, or a sweep: ``*.sweep.toml``), one line each;
    goes on past a bad one and exits 2 if any was bad."""
    bad = 0
    for f in args.files:
        try:
            what = _validate_sweep(f) if f.endswith(".sweep.toml") else _describe(torrentlab.validate(f))
        except ScenarioError as e:
            bad += 1
            err.print(f"[red]error[/]: {escape(str(e))}", highlight=False, soft_wrap=True)
            continue
        # One line per file, however long (stdout is often a pipe: 120 columns).
        out.print(f"[green]ok[/]: {escape(f)}: {escape(what)}", soft_wrap=True, highlight=False)
    return 2 if bad else 0


SUMMARY_COLUMNS = ("flows", "window_s", "jain_index", "efficiency", "loss_rate", "goodput_bps", "mean_queue_delay_ms")


SWARM_SUMMARY_COLUMNS = ("peers", "completed", "mean_download_time_s", "min_download_time_s", "max_download_time_s",
                         "end_s", "wasted_ratio")

#: A household run's (a swarm with the home's other traffic).
HOUSEHOLD_SUMMARY_COLUMNS = ("peers", "end_s", "home_bytes_up", "home_bytes_down", "ping_mean_increase_ms",
                             "ping_max_ms", "ping_timeouts", "voip_out_p99_delay_ms", "voip_in_p99_delay_ms")


def _print_summary(res) -> None:
    s = res.summary.iloc[0]
    t = Table(title=f"{res.name} (seed {s['seed']})")
    columns = SWARM_SUMMARY_COLUMNS if res.kind == "swarm" else SUMMARY_COLUMNS
    if "ping_probes" in res.summary.columns:
        columns = HOUSEHOLD_SUMMARY_COLUMNS
    for col in columns:
        t.add_column(col, justify="right")
    t.add_row(*(f"{s[c]:.4g}" if isinstance(s[c], float) else str(s[c]) for c in columns))
    out.print(t)


def _cmd_run(args) -> int:
    from torrentlab.guards import check_memory
    from torrentlab.output import atomic_dir
    from torrentlab.progress import RunBar

    info = torrentlab.validate(args.file)
    # The engine accepts only names that are one plain file name.
    dest = Path(args.output) if args.output else Path("results") / info["name"]
    check_memory(info, args.file, max_memory=args.max_memory)
    # The destination is checked and claimed before the first simulated second.
    with atomic_dir(dest, force=args.force, kind="run", scenario=info["name"], scenario_kind=info["kind"],
                    seed=args.seed if args.seed is not None else info["seed"]) as tmp:
        with RunBar(f"running {info['name']}", info["duration_s"], show=not args.quiet) as bar:
            res = torrentlab.run(args.file, seed=args.seed, max_memory=args.max_memory, spill_dir=tmp,
                                 progress=bar.update)
        res.write_into(tmp)
    if not args.quiet:
        _print_summary(res)
        out.print(f"wrote {dest}/ ({', '.join(sorted(p.name for p in dest.iterdir()))})")
    return 0


def _cmd_testbed(args) -> int:
    from torrentlab import testbed

    if args.cleanup:
        testbed.netns.check_host()
        found = testbed.cleanup(args.prefix or "")
        if not args.quiet:
            busy = f"; left alone, as their runs are alive: {', '.join(found['busy'])}" if found["busy"] else ""
            out.print(f"cleanup: killed {found['processes']} processes, deleted {found['namespaces']} namespaces, "
                      f"removed {found['scratch']} scratch directories{busy}", highlight=False)
        return 0
    if not args.file or not args.output:
        raise TestbedError("torrentlab testbed: give a scenario FILE and -o DIR (or --cleanup)")
    from torrentlab.progress import RunBar

    pl = testbed.plan(args.file, ignore_rtt=args.ignore_rtt)
    with RunBar(f"testbed {pl.name}", pl.duration_s, show=not args.quiet) as bar:
        dest = testbed.run(args.file, args.output, force=args.force, ignore_rtt=args.ignore_rtt,
                           prefix=args.prefix or "a", subnet=args.subnet, sample_interval_s=args.sample_interval / 1e3,
                           timeout_s=args.timeout, keep_raw=not args.no_raw, progress=bar.update)
    if not args.quiet:
        _print_summary(_Loaded(dest))
        out.print(f"wrote {dest}/", highlight=False)
    return 0


class _Loaded:
    """A result directory read back, for :func:`_print_summary`."""

    def __init__(self, path) -> None:
        self.summary = torrentlab.load(path, "summary")
        self.name = self.summary["scenario"].iloc[0]
        self.kind = "swarm"


def _cmd_validate_sim(args) -> int:
    from torrentlab import validate_sim

    if args.sim_only:
        dest = validate_sim.rerun_sim(args.file, args.output, sim_seeds=args.sim_seeds)
    else:
        dest = validate_sim.run(args.file, args.output, iterations=args.iterations, sim_seeds=args.sim_seeds,
                                force=args.force, prefix=args.prefix or "v", subnet=args.subnet,
                                sample_interval_s=args.sample_interval / 1e3, timeout_s=args.timeout,
                                quiet=args.quiet)
    if not args.quiet:
        out.print((dest / "report.md").read_text(), highlight=False, markup=False)
        out.print(f"wrote {dest}/", highlight=False)
    return 0


def _cmd_reproduce(args) -> int:
    module = importlib.import_module(EXPERIMENTS[args.experiment])
    dest = Path(args.output) if args.output else Path("results") / args.experiment
    from torrentlab.executors import executor

    with closing(executor(args.ray, args.jobs)) as ex:
        report = module.reproduce(dest, quick=args.quick, show_progress=not args.quiet, force=args.force,
                                  executor=ex)
    out.print(module.render(report, title=f"{args.experiment}{' (quick)' if args.quick else ''}"))
    out.print(f"wrote {report.out_dir}/: tables (Parquet) and {len(report.figures)} figure files")
    return 0


def _cmd_sweep(args) -> int:
    from torrentlab.campaign import campaign_dir, collect, run_campaign
    from torrentlab.executors import executor
    from torrentlab.output import publish, write_frame
    from torrentlab.sweep import Sweep

    sweep = Sweep.from_file(args.file)
    workers = args.jobs or os.cpu_count() or 1
    # Every point is checked before any runs (on Ray, each node checks the
    # memory a run needs when it starts one).
    sweep.check(args.file, args.quick, memory=True, max_memory=args.max_memory,
                at_once=1 if args.ray else min(workers, sweep.count(args.quick)))
    jobs = sweep.jobs(quick=args.quick)
    name = Path(args.file).name.removesuffix(".toml").removesuffix(".sweep")
    dest = Path(args.output) if args.output else Path("results") / name
    # A campaign: each run is kept as it finishes; a sweep stopped at any
    # moment and run again into the same place runs only what is missing.
    campaign = name + (" --quick" if args.quick else "")
    ex = executor(args.ray, args.jobs)
    with closing(ex), campaign_dir(dest, campaign, force=args.force, mix_versions=args.mix_versions) as (tmp, replace):
        made: dict = {}  # the tables of the runs made now, so that collecting need not read them back
        failed = run_campaign(jobs, tmp, executor=ex, describe=name, show_progress=not args.quiet, made=made)
        runs, second, second_name = collect(tmp, jobs, made)
        swarm = second_name == "peers"
        if len(runs):
            write_frame(runs, tmp / "runs.parquet")
            write_frame(second, tmp / f"{second_name}.parquet")
        publish(tmp, dest, force=replace, kind="sweep", sweep=str(args.file), quick=args.quick, runs=len(jobs),
                failed=len(failed))
    for key in failed:
        err.print(f"[red]failed[/]: run {key}: see {dest}/failed/{key}.json", highlight=False)
    if not len(runs):
        return 1
    params = sweep.params()
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


def _cmd_query(args) -> int:
    """Prints the answer to an SQL query over a result's tables: a table on a
    terminal (the first rows, with the count), CSV with --csv."""
    from torrentlab.store import query

    df = query(args.dir, args.sql)
    if args.csv:
        sys.stdout.write(df.to_csv(index=False))
        return 0
    t = Table()
    for c in df.columns:
        t.add_column(escape(str(c)))
    for row in df.head(args.limit).itertuples(index=False):
        t.add_row(*(escape(f"{v:.6g}" if isinstance(v, float) else str(v)) for v in row))
    out.print(t)
    shown = f" (the first {args.limit} shown; --csv prints every row)" if len(df) > args.limit else ""
    out.print(f"{len(df)} row{'s' * (len(df) != 1)}{shown}", highlight=False)
    return 0


def _cmd_report(args) -> int:
    """Writes the self-contained HTML report of a result directory."""
    from torrentlab.report import write_report

    path = write_report(args.dir, args.output, force=args.force)
    if not args.quiet:
        out.print(f"wrote {path}", highlight=False)
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


#: ``--cc``: the congestion controllers of crates/sim/src/scenario/raw.rs (``CcName``), and uTP.
CC_CHOICES = ("newreno", "cubic", "vegas", "lp", "nice", "ledbat", "utp")
SEED_MAX = 2**64 - 1


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line: ``torrentlab run: error: argument --seed: ...`` (exit 2)."""

    def error(self, message: str) -> NoReturn:
        message = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _whole(low: int, high: int | None = None, what: str = "a whole number"):
    """An argparse type: a whole number from ``low`` (to ``high``), one clear line otherwise."""
    allowed = f"from {low} to {high}" if high is not None else f"of {low} or more"

    def parse(text: str) -> int:
        try:
            n = int(text.strip(), 10)
        except ValueError:
            n = None
        if n is None or n < low or (high is not None and n > high):
            raise argparse.ArgumentTypeError(f"must be {what} {allowed}, not {text!r}")
        return n

    parse.__name__ = what  # argparse names the type in some messages
    return parse


def _text(what: str):
    """An argparse type: non-empty text (an empty path would mean the current directory)."""

    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"must be {what}, not an empty string")
        return text

    parse.__name__ = what
    return parse


def _experiments_help() -> str:
    """One line per experiment, from the first line of its module's docstring (not imported: fast)."""
    import ast
    import importlib.util

    lines = ["experiments:"]
    width = max(map(len, EXPERIMENTS))
    for name, module in sorted(EXPERIMENTS.items()):
        title = ""
        try:
            spec = importlib.util.find_spec(module)
            if spec and spec.origin:
                doc = ast.get_docstring(ast.parse(Path(spec.origin).read_text(encoding="utf-8"))) or ""
                title = doc.strip().splitlines()[0].replace(f" `{name}`", "") if doc.strip() else ""
        except (OSError, SyntaxError, ValueError, ImportError):
            pass
        lines.append(f"  {name:<{width}}  {title}".rstrip())
    return "\n".join(lines)


def _memory(text: str) -> int:
    """An argparse type: a memory size such as ``8 GiB``."""
    from torrentlab.guards import parse_size

    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _output_safety(c: argparse.ArgumentParser) -> None:
    """The options of a command that writes a result directory."""
    c.add_argument("--force", action="store_true",
                   help="replace an older torrentlab result in the output directory (never anything else)")
    c.add_argument("--max-memory", metavar="SIZE", type=_memory, default=None,
                   help="refuse runs estimated to need more memory than this, e.g. '8 GiB' "
                        "(default: the memory available)")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="torrentlab", description="Packet-level BitTorrent and congestion-control experiments.")
    p.add_argument("--version", action="version", version=f"torrentlab {torrentlab.__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    file_arg = _text("a file path")
    dir_arg = _text("a directory path")

    v = sub.add_parser("validate", help="check scenario and sweep files without running them",
                       description="Check scenario files and sweep files (*.sweep.toml: the sweep, its base and "
                                   "every grid point) without running them. One line per file; every bad file "
                                   "is reported; exit 2 if any was bad.")
    v.add_argument("files", nargs="+", metavar="FILE", type=file_arg)
    v.set_defaults(func=_cmd_validate)

    r = sub.add_parser("run", help="run one scenario and write its tables as Parquet")
    r.add_argument("file", metavar="FILE", type=file_arg)
    r.add_argument("-o", "--output", metavar="DIR", type=dir_arg, help="output directory (default results/<name>)")
    r.add_argument("--seed", type=_whole(0, SEED_MAX), help=f"override run.seed (0 to {SEED_MAX})")
    r.add_argument("-q", "--quiet", action="store_true")
    _output_safety(r)
    r.set_defaults(func=_cmd_run)

    def many_runs(cmd, help, target, quick, default_dir, func, **kw):
        """A command that runs many scenarios in parallel and writes a directory."""
        c = sub.add_parser(cmd, help=help, **kw)
        c.add_argument(target[0], metavar=target[1], **target[2])
        c.add_argument("--quick", action="store_true", help=quick)
        c.add_argument("-o", "--output", metavar="DIR", type=dir_arg,
                       help=f"output directory (default results/<{default_dir}>)")
        c.add_argument("-j", "--jobs", type=_whole(1), default=None,
                       help="parallel runs, 1 or more (default: every core)")
        c.add_argument("--ray", metavar="ADDRESS", type=_text("a Ray address"),
                       help="run on a Ray cluster: 'auto' (the cluster on this machine, or a local one) or its "
                            "address (HOST:6379, ray://HOST:10001); see docs/cluster.md")
        c.add_argument("-q", "--quiet", action="store_true")
        _output_safety(c)
        c.set_defaults(func=func)
        return c

    many_runs("reproduce", "run a published experiment and draw its figures",
              ("experiment", "EXPERIMENT", {"choices": sorted(EXPERIMENTS), "help": "one of the experiments below"}),
              "fewer runs, for a first look and for tests", "experiment", _cmd_reproduce,
              epilog=_experiments_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    sw = many_runs("sweep", "run a sweep file (a base scenario x a grid x seeds) on all cores; run again into "
                            "the same place, it runs only what is missing",
                   ("file", "FILE", {"type": file_arg}), "use the sweep's quick_runs seeds", "sweep name", _cmd_sweep)
    sw.add_argument("--mix-versions", action="store_true",
                    help="add runs of this torrentlab version to a campaign that holds another version's")

    rp = sub.add_parser("report", help="write one self-contained HTML page of a result directory (plots, "
                                       "tables, every run's scenario); opens from disk, no network")
    rp.add_argument("dir", metavar="DIR", type=dir_arg)
    rp.add_argument("-o", "--output", metavar="FILE", help="where to write it (default DIR.html beside DIR)")
    rp.add_argument("--force", action="store_true", help="replace a file at FILE that is not a torrentlab report")
    rp.add_argument("-q", "--quiet", action="store_true")
    rp.set_defaults(func=_cmd_report)

    b = sub.add_parser("bench", help="time the engine on one scenario (default: the benchmark dumbbell; one core)")
    b.add_argument("--scenario", metavar="FILE", type=file_arg)
    b.add_argument("--cc", choices=CC_CHOICES, help="run every flow with this congestion controller (or 'utp')")
    b.add_argument("--repeat", type=_whole(1), default=5, help="timed runs, 1 or more (default 5)")
    b.add_argument("--warmup", type=_whole(0), default=1, help="untimed runs first, 0 or more (default 1)")
    b.add_argument("--json", action="store_true", help="print one JSON object")
    b.set_defaults(func=_cmd_bench)

    q = sub.add_parser("query", help="SQL over a result directory's tables (DuckDB)",
                       description="Run an SQL query (DuckDB's dialect) over the Parquet tables of a result "
                                   "directory, each a view named after its file (runs, peers, summary, ...). "
                                   "Swept parameters are columns; quote dotted names: \"network.rtt\".")
    q.add_argument("dir", metavar="DIR", type=dir_arg)
    q.add_argument("sql", metavar="SQL", type=_text("an SQL query"))
    q.add_argument("--csv", action="store_true", help="print every row as CSV instead of a table")
    q.add_argument("--limit", type=_whole(1), default=50, help="rows shown in the table (default 50)")
    q.set_defaults(func=_cmd_query)

    def testbed_options(c):
        c.add_argument("--prefix", type=_prefix, default=None,
                       help="namespaces are tlt<PREFIX>-* (1 to 8 lower-case letters or digits; default a, "
                            "validate-sim: v); runs at once need different prefixes and --subnet")
        c.add_argument("--subnet", type=_whole(1, 254), default=232, help="peers get 10.SUBNET.0.x (default 232)")
        c.add_argument("--sample-interval", metavar="MS", type=_whole(1, 10000), default=20,
                       help="uplink qdisc sampling period, ms (default 20)")
        c.add_argument("--timeout", metavar="S", type=_whole(1), default=None,
                       help="stop a real run after this many seconds (default: run.duration)")
        c.add_argument("--force", action="store_true",
                       help="replace an older torrentlab result in the output directory (never anything else)")
        c.add_argument("-q", "--quiet", action="store_true")

    tb = sub.add_parser("testbed", help="run a swarm scenario on real libtorrent peers in network namespaces "
                                        "(root; docs/testbed.md)",
                        description="Run a swarm scenario on real libtorrent peers, one network namespace each, "
                                    "uplinks shaped with tbf, and write the simulator's tables. Needs root and "
                                    "the libtorrent Python bindings (pip install 'torrentlab[testbed]'). "
                                    "Exit 2 when the scenario needs what the kernel lacks (propagation delay, a "
                                    "congestion control it does not have).")
    tb.add_argument("file", metavar="FILE", nargs="?", type=file_arg)
    tb.add_argument("-o", "--output", metavar="DIR", type=dir_arg)
    tb.add_argument("--ignore-rtt", action="store_true",
                    help="run a scenario with network.rtt > 0 without the delay (recorded in testbed.json)")
    tb.add_argument("--no-raw", action="store_true", help="do not keep the peers' event logs (raw/)")
    tb.add_argument("--cleanup", action="store_true",
                    help="kill what runs in tlt* namespaces (tlt<PREFIX>-* with --prefix) and delete them, "
                         "except those of a run still alive; safe to run again")
    testbed_options(tb)
    tb.set_defaults(func=_cmd_testbed)

    vs = sub.add_parser("validate-sim", help="run a swarm scenario on the testbed and in the simulator and "
                                             "write a comparison report (root)",
                        description="Run FILE on real peers (torrentlab testbed) --iterations times and in the "
                                    "simulator with as many seeds, and write report.md with completion-time "
                                    "CDFs, queueing-delay CCDFs, medians and two-sample KS statistics, byte "
                                    "shares per transport and uplink utilisation.")
    vs.add_argument("file", metavar="FILE", type=file_arg)
    vs.add_argument("-o", "--output", metavar="DIR", type=dir_arg, required=True)
    vs.add_argument("--iterations", type=_whole(1, 1000), default=3, help="real runs (default 3)")
    vs.add_argument("--sim-seeds", type=_whole(1, 10000), default=None,
                    help="simulator runs (default: as many as --iterations)")
    vs.add_argument("--sim-only", action="store_true",
                    help="keep DIR's testbed runs (an earlier validate-sim of FILE) and run only the simulator "
                         "side again, then rewrite the report (after a change to the model; no root needed)")
    testbed_options(vs)
    vs.set_defaults(func=_cmd_validate_sim)
    return p


def _prefix(text: str) -> str:
    import re

    if not re.fullmatch(r"[a-z0-9]{1,8}", text):
        raise argparse.ArgumentTypeError(f"must be 1 to 8 lower-case letters or digits, not {text!r}")
    return text


class _Terminated(BaseException):
    """SIGTERM, raised like Ctrl-C so that the same clean-up runs."""


def _on_sigterm(signum, frame) -> None:
    raise _Terminated()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return args.func(args)
    except (ScenarioError, OutputError, QueryError, ClusterError, TestbedError) as e:
        err.print(f"[red]error[/]: {escape(str(e))}", highlight=False, soft_wrap=True)
        return 2
    except _Terminated:
        err.print("terminated")
        return 143
    except TorrentlabError as e:
        err.print(f"[red]error[/]: {escape(str(e))}", highlight=False, soft_wrap=True)
        return 1
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except Exception as e:  # a bug: say so plainly, traceback only on request
        if os.environ.get("TORRENTLAB_DEBUG"):
            raise
        err.print(f"[red]internal error[/]: {type(e).__name__}: {escape(str(e))} "
                  "(set TORRENTLAB_DEBUG=1 for a traceback)",
                  highlight=False, soft_wrap=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
