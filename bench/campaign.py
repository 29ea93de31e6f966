#!/usr/bin/env python3
"""The campaign machinery's cost and scaling: one 200-run campaign of small
swarms (1 seed and 10 to 40 leechers sharing 4 MB, 0.05-0.3 s each), timed as whole processes:

- ``direct``: one process expands the sweep and calls ``torrentlab.run`` for
  each run in turn, keeping nothing (the engine alone, plus Python's start);
- ``local-1``, ``local-2``: ``torrentlab sweep FILE -o DIR -q -j N``, each run
  written as it finishes, the tables collected at the end;
- ``ray``: the same sweep with ``--ray ADDRESS``, on a Ray instance of 2 CPUs
  started once beforehand (``ray start --head``), so Ray's own start is not
  counted.

The modes alternate within each round (a drift of the machine weighs on all
alike); each figure is the median over rounds. Reported: runs per minute of
each mode (medians), and, as geometric means of the ratios of modes timed in
the same round with their 95 % intervals: the scaling of 2 local workers over
1 (target over 1.8x), the campaign against ``direct`` with one worker (its
per-run overhead; target under 1.05x), once one after the other and once
side by side (the two at the same time, each pinned to a core of its own,
swapped every round, so that both see the same phase of the host), and Ray
against ``local-2``.

    python3 bench/campaign.py [--rounds 3] [--runs 50] [--no-ray]
"""

from __future__ import annotations

import argparse
import math
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SWARM = """\
[run]
duration = "2 h"

[torrent]
size = "4 MB"
piece_size = "256 KiB"

[network]
rtt = "100 ms"

[[peers]]
role = "seed"
upload_limit = "40 kB/s"

[[peers]]
role = "leecher"
count = 4
upload_limit = "20 kB/s"
"""


def direct(sweep_file: str) -> None:
    """The engine alone: every run of the sweep, one after the other."""
    import torrentlab
    from torrentlab.sweep import Sweep

    for job in Sweep.from_file(sweep_file).jobs():
        torrentlab.run(job.scenario, seed=job.seed)


# Two-sided 97.5 % quantiles of Student's t, by degrees of freedom.
T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23}


def paired(num: list[float], den: list[float]) -> str:
    """The geometric mean of the per-round ratios num/den, with its 95 % interval."""
    logs = [math.log(a / b) for a, b in zip(num, den, strict=True)]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return f"{math.exp(mean):.3f}x"
    half = T975.get(len(logs) - 1, 2.0) * statistics.stdev(logs) / math.sqrt(len(logs))
    return f"{math.exp(mean):.3f}x ({math.exp(mean - half):.3f}-{math.exp(mean + half):.3f})"


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def together(cmds: list[list[str]], env: dict[str, str]) -> list[float]:
    """Runs the commands at the same time, each pinned to a core of its own;
    returns each one's wall time."""
    t0 = time.perf_counter()
    procs = [subprocess.Popen(["taskset", "-c", str(i), *cmd], env=env, stdout=subprocess.DEVNULL)
             for i, cmd in enumerate(cmds)]
    ends = [0.0] * len(procs)
    while not all(ends):
        for i, p in enumerate(procs):
            if not ends[i] and p.poll() is not None:
                if p.returncode:
                    raise subprocess.CalledProcessError(p.returncode, p.args)
                ends[i] = time.perf_counter() - t0
        time.sleep(0.01)
    return ends


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=50, help="seeds per point (4 points)")
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--direct", metavar="SWEEP", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.direct:
        direct(args.direct)
        return 0

    work = Path(tempfile.mkdtemp(prefix="tl-campaign-bench-"))
    (work / "swarm.toml").write_text(SWARM)
    sweep = work / "c.sweep.toml"
    sweep.write_text(f'base = "swarm.toml"\nruns = {args.runs}\n[grid]\n"peers.1.count" = [10, 20, 30, 40]\n')
    total = 4 * args.runs
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    exe = [sys.executable, "-m", "torrentlab.cli"]
    modes: dict[str, list[str]] = {
        "direct": [sys.executable, __file__, "--direct", str(sweep)],
        "local-1": [*exe, "sweep", str(sweep), "-q", "-j", "1", "-o"],
        "local-2": [*exe, "sweep", str(sweep), "-q", "-j", "2", "-o"],
    }
    ray_exe = shutil.which("ray") or str(Path(sys.executable).with_name("ray"))
    if not args.no_ray:
        (work / "token").write_text(secrets.token_hex(32))
        env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(work / "token"))
        port = 6390
        subprocess.run([ray_exe, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                        "--disable-usage-stats", f"--temp-dir={work / 'ray'}"], check=True, env=env,
                       capture_output=True)
        modes["ray"] = [*exe, "sweep", str(sweep), "-q", "--ray", f"127.0.0.1:{port}", "-o"]
    times: dict[str, list[float]] = {m: [] for m in modes}
    side: dict[str, list[float]] = {"direct": [], "local-1": []}
    try:
        for r in range(args.rounds):
            order = list(modes) if r % 2 == 0 else list(reversed(modes))
            for m in order:
                cmd = modes[m] + ([str(work / f"out-{m}-{r}")] if m != "direct" else [])
                times[m].append(timed(cmd, env))
                print(f"round {r + 1}/{args.rounds} {m}: {times[m][-1]:.1f} s", file=sys.stderr)
            # direct and local-1 side by side, one core each, cores swapped every round.
            pair = ["direct", "local-1"] if r % 2 == 0 else ["local-1", "direct"]
            walls = together([modes[m] + ([str(work / f"side-{r}")] if m != "direct" else []) for m in pair], env)
            for m, w in zip(pair, walls, strict=True):
                side[m].append(w)
            print(f"round {r + 1}/{args.rounds} side by side: direct {side['direct'][-1]:.1f} s, "
                  f"local-1 {side['local-1'][-1]:.1f} s", file=sys.stderr)
    finally:
        if not args.no_ray:
            subprocess.run([ray_exe, "stop", "--force"], env=env, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)

    med = {m: statistics.median(t) for m, t in times.items()}
    print(f"{total} runs per campaign, {args.rounds} rounds; median wall time per mode")
    print(f"{'mode':8} {'wall s':>8} {'runs/min':>9}")
    for m, t in med.items():
        print(f"{m:8} {t:8.1f} {60 * total / t:9.0f}")
    # Ratios of modes timed in the same round, then their geometric mean.
    scaling = paired(times["local-1"], times["local-2"])
    print(f"scaling, 2 local workers over 1: {scaling} (target over 1.8x)")
    overhead = paired(times["local-1"], times["direct"])
    print(f"campaign over direct, 1 worker: {overhead} (target under 1.05x; "
          f"{1000 * (med['local-1'] - med['direct']) / total:+.1f} ms per run from the medians)")
    print(f"campaign over direct, 1 worker, side by side: {paired(side['local-1'], side['direct'])} "
          "(target under 1.05x)")
    if "ray" in times:
        print(f"ray (2 CPUs) over local-2: {paired(times['ray'], times['local-2'])} "
              f"({1000 * (med['ray'] - med['local-2']) / total:+.1f} ms per run from the medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
