"""The comparison side of `bench/mainline_swarm.py`: torrentlab's swarm
metrics computed from the mainline probes' event logs, the same scenario run
in the model, and the side-by-side table (docs/validation.md, "Mainline
against mainline")."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path


def real_metrics(args, events: dict[str, list[dict]], labels: list[str], ips: dict[str, str]) -> dict:
    """torrentlab's swarm summary, peers and piece_spread, from the probes' logs."""
    by_ip = {ip: lab for lab, ip in ips.items()}
    first = lambda lab, ev, **kw: next((e for e in events[lab] if e["ev"] == ev  # noqa: E731
                                        and all(e.get(a) == b for a, b in kw.items())), None)
    t0 = first("seed", "announce", event="started")["t"]
    cap = min(args.limit * 1024.0, args.uplink_bps / 8.0)
    npieces = math.ceil(args.size / args.piece_size)
    first_unchoked = {lab: math.nan for lab in labels}
    first_unchoked_rx = {lab: math.nan for lab in labels}
    piece_first = [math.nan] * npieces
    piece_copies = [0] * npieces
    for lab in labels:
        for e in events[lab]:
            if e["ev"] == "unchoke_sent" and e["to"] in by_ip:
                r = by_ip[e["to"]]
                first_unchoked[r] = min(first_unchoked[r], e["t"] - t0) if not math.isnan(first_unchoked[r]) \
                    else e["t"] - t0
            elif e["ev"] == "unchoked_by":
                v = e["t"] - t0
                first_unchoked_rx[lab] = v if math.isnan(first_unchoked_rx[lab]) else min(first_unchoked_rx[lab], v)
            elif e["ev"] == "piece" and lab != "seed":
                p = e["piece"]
                v = e["t"] - t0
                piece_first[p] = v if math.isnan(piece_first[p]) else min(piece_first[p], v)
                piece_copies[p] += 1
    # Wasted bytes from the waste events. Logs of the probe's first version
    # (no `in_active`) classed a block no longer asked of its sender but
    # already here from another peer as `duplicate`; torrentlab calls that
    # `dropped`, and outside end game mainline never has one block asked of
    # two peers, so every such `duplicate` was a dropped one.
    wasted = {lab: {"dropped": 0, "duplicate": 0, "end_game": 0} for lab in labels}
    for lab in labels:
        for e in events[lab]:
            if e["ev"] == "waste":
                kind = e["kind"]
                if kind == "duplicate" and "in_active" not in e:
                    kind = "dropped"
                wasted[lab][kind] += e["bytes"]
    peers = []
    for lab in labels:
        ev = events[lab]
        st = first(lab, "announce", event="started")
        fin = first(lab, "finished")
        tot = [e for e in ev if e["ev"] == "totals"]
        tot = tot[-1] if tot else {}
        join = st["t"] - t0 if st else math.nan
        done = fin["t"] - t0 if (fin and lab != "seed") else math.nan
        peers.append({
            "label": lab, "role": "seed" if lab == "seed" else "leecher", "ip": ips[lab],
            "join_s": join, "completed_s": done, "download_time_s": done - join,
            "bytes_up": tot.get("up_block", 0), "bytes_down": tot.get("down_block", 0),
            "wasted_dropped": wasted[lab]["dropped"], "wasted_duplicate": wasted[lab]["duplicate"],
            "wasted_end_game": wasted[lab]["end_game"], "mainline_discarded": tot.get("mainline_discarded"),
            "choked_by": sum(1 for e in ev if e["ev"] == "choked_by"),
            "mainline_up_total": tot.get("mainline_up_total"), "cpu_s": tot.get("cpu_s"),
            "first_unchoked_s": first_unchoked[lab], "first_unchoked_rx_s": first_unchoked_rx[lab],
            "connections": len({e["ip"] for e in ev if e["ev"] == "conn_up"}),
            "tcp_cc": next((e["cc"] for e in ev if e["ev"] == "tcp_cc"), None),
        })
    leech = [p for p in peers if p["role"] == "leecher"]
    done = [p["download_time_s"] for p in leech if not math.isnan(p["download_time_s"])]
    end = max((p["completed_s"] for p in leech if not math.isnan(p["completed_s"])), default=math.nan)
    for p in peers:
        span = end - p["join_s"]
        p["upload_utilisation"] = p["bytes_up"] / (cap * span) if span > 0 else math.nan
    fin = lambda xs: [x for x in xs if not math.isnan(x)]  # noqa: E731
    mean = lambda xs: statistics.fmean(fin(xs)) if fin(xs) else math.nan  # noqa: E731
    summary = {
        "peers": len(peers), "leechers": len(leech), "completed": len(done),
        "mean_download_time_s": mean(done), "min_download_time_s": min(done, default=math.nan),
        "max_download_time_s": max(done, default=math.nan), "end_s": end, "file_bytes": args.size,
        "pieces": npieces,
        "seed_copies_uploaded": peers[0]["bytes_up"] / args.size,
        "pieces_reached_leechers": len(fin(piece_first)),
        "leecher_upload_utilisation": mean([p["upload_utilisation"] for p in leech]),
        "wasted_dropped_bytes": sum(p["wasted_dropped"] for p in peers),
        "wasted_duplicate_bytes": sum(p["wasted_duplicate"] for p in peers),
        "wasted_end_game_bytes": sum(p["wasted_end_game"] for p in peers),
        "first_unchoke_s": min(fin([p["first_unchoked_s"] for p in peers]), default=math.nan),
        "mean_time_to_first_unchoke_s": mean([p["first_unchoked_s"] - p["join_s"] for p in leech]),
        "mean_join_s": mean([p["join_s"] for p in leech]),
        "all_pieces_in_leechers_s": max(piece_first) if len(fin(piece_first)) == npieces else math.nan,
        "mean_peer_connections": mean([float(p["connections"]) for p in peers]),
    }
    return {"summary": summary, "peers": peers,
            "piece_spread": [{"piece": i, "first_s": piece_first[i], "copies": piece_copies[i]}
                             for i in range(npieces)]}


# ---------------------------------------------------------------- the model


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(v)


def to_toml(sc: dict) -> str:
    """Enough TOML for the scenario dicts below (tables, arrays of tables)."""
    lines = [f"{k} = {toml_value(v)}" for k, v in sc.items() if not isinstance(v, (dict, list))]

    def table(name: str, d: dict) -> None:
        lines.append(f"\n[{name}]")
        for k, v in d.items():
            if not isinstance(v, dict):
                lines.append(f"{k} = {toml_value(v)}")
        for k, v in d.items():
            if isinstance(v, dict):
                table(f"{name}.{k}", v)

    for k, v in sc.items():
        if isinstance(v, dict):
            table(k, v)
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            for item in v:
                lines.append(f"\n[[{k}]]")
                lines += [f"{a} = {toml_value(b)}" for a, b in item.items()]
    return "\n".join(lines) + "\n"


def model_scenario(args, joins: list[float]) -> dict:
    lim = f"{args.limit} KiB/s"  # mainline's --max_upload_rate L is L x 1024 B/s
    return {
        "name": f"mainline-validation-{args.leechers}L-{args.limit}k",
        "description": "bench/mainline_swarm.py: the real testbed's scenario (1 seed, flash crowd, tbf uplinks)",
        "run": {"seed": 1, "duration": "6 h"},
        "torrent": {"size": f"{args.size} B", "piece_size": f"{args.piece_size} B"},
        "network": {"rtt": "0 ms", "ingress_loss": 0.0,
                    "access": {"up": f"{args.uplink_bps} bit/s", "down": "unlimited", "buffer": f"{args.buffer_s} s"}},
        "tcp": {"preset": "linux", "mss": 1448, "tso": False},
        "peers": [
            {"role": "seed", "label": "seed", "join": "0 s", "upload_limit": lim, "cc": args.cc},
            {"role": "leecher", "label": "leecher", "count": args.leechers,
             "join": [f"{max(j, 0.0):.3f} s" for j in joins], "upload_limit": lim, "departure": "stay",
             "cc": args.cc},
        ],
        "metrics": {"haves": True, "chokes": True, "connections": True},
    }


def model_runs(args, out: Path, real: list[dict]) -> list[dict]:
    import torrentlab  # noqa: PLC0415

    mdir = out / "model"
    mdir.mkdir(parents=True, exist_ok=True)
    joins_by_it = []
    for m in real:
        j = [p["join_s"] for p in m["peers"] if p["role"] == "leecher"]
        joins_by_it.append([x if not math.isnan(x) else 0.0 for x in j])
    if not joins_by_it:
        joins_by_it = [[0.0] * args.leechers]
    res = []
    for k in range(args.model_seeds):
        it = k % len(joins_by_it)
        path = mdir / f"scenario-{it}.toml"
        if not path.exists() or k < len(joins_by_it):
            path.write_text("# written by bench/mainline_swarm.py; leecher joins from real iteration "
                            f"{it}\n" + to_toml(model_scenario(args, joins_by_it[it])))
        r = torrentlab.run(str(path), seed=k + 1)
        s = r.summary.iloc[0].to_dict()
        peers = r.peers
        pieces = r.piece_spread
        lee = peers[peers["role"] == "leecher"]
        summary = {c: (float(s[c]) if isinstance(s[c], (int, float)) else s[c]) for c in s}
        summary["mean_join_s"] = float(lee["join_s"].mean())
        ps = pieces["first_s"].to_numpy()
        summary["all_pieces_in_leechers_s"] = float(ps.max()) if not any(math.isnan(x) for x in ps) else math.nan
        partners: dict[int, set] = {}
        for a, b in zip(r.connections["initiator"], r.connections["acceptor"], strict=True):
            partners.setdefault(int(a), set()).add(int(b))
            partners.setdefault(int(b), set()).add(int(a))
        summary["mean_peer_connections"] = statistics.fmean(len(partners.get(i, ())) for i in range(len(peers)))
        m = {"seed": k + 1, "join_iteration": it, "summary": summary,
             "peers": json.loads(peers.to_json(orient="records")),
             "piece_spread": json.loads(pieces.to_json(orient="records"))}
        d = mdir / f"seed-{k + 1}"
        d.mkdir(exist_ok=True)
        (d / "metrics.json").write_text(json.dumps(m, indent=1, default=float))
        res.append(m)
    return res


# ---------------------------------------------------------------- the table

ROWS = [
    ("completed leechers", "completed", "{:.0f}"),
    ("mean download time (s)", "mean_download_time_s", "{:.0f}"),
    ("min download time (s)", "min_download_time_s", "{:.0f}"),
    ("max download time (s)", "max_download_time_s", "{:.0f}"),
    ("seed_copies_uploaded", "seed_copies_uploaded", "{:.2f}"),
    ("pieces_reached_leechers", "pieces_reached_leechers", "{:.1f}"),
    ("all pieces in leechers at (s)", "all_pieces_in_leechers_s", "{:.0f}"),
    ("leecher_upload_utilisation", "leecher_upload_utilisation", "{:.3f}"),
    ("first_unchoke_s", "first_unchoke_s", "{:.1f}"),
    ("mean_time_to_first_unchoke_s", "mean_time_to_first_unchoke_s", "{:.1f}"),
    ("wasted_dropped_bytes (kB)", "wasted_dropped_bytes", "k"),
    ("wasted_duplicate_bytes (kB)", "wasted_duplicate_bytes", "k"),
    ("wasted_end_game_bytes (kB)", "wasted_end_game_bytes", "k"),
    ("mean leecher join (s)", "mean_join_s", "{:.2f}"),
    ("peers met per peer (connections)", "mean_peer_connections", "{:.1f}"),
]


def cell(xs: list[float], fmt: str) -> str:
    xs = [float(x) for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    if not xs:
        return "n/a"
    if fmt == "k":
        xs = [x / 1000 for x in xs]
        fmt = "{:.0f}"
    m = statistics.fmean(xs)
    if len(xs) == 1:
        return fmt.format(m)
    return f"{fmt.format(m)} ± {fmt.format(statistics.stdev(xs))} [{fmt.format(min(xs))}–{fmt.format(max(xs))}]"


def piece_ranks(runs: list[dict], npieces: int) -> list[list[float]]:
    """For each run, the time the k-th distinct piece reached a leecher."""
    out = []
    for m in runs:
        f = sorted(x["first_s"] for x in m["piece_spread"]
                   if x["first_s"] is not None and not math.isnan(x["first_s"]))
        out.append(f + [math.nan] * (npieces - len(f)))
    return out


def table(out: Path) -> str:
    cfg = json.loads((out / "config.json").read_text())
    real = [json.loads(p.read_text()) for p in sorted(out.glob("real-*/metrics.json"))]
    model = [json.loads(p.read_text()) for p in sorted(out.glob("model/seed-*/metrics.json"))]
    lines = [f"### {cfg['leechers']} leechers, {cfg['size'] / 1e6:g} MB, pieces {cfg['piece_size'] // 1024} KiB, "
             f"upload limit {cfg['limit']} KiB/s, uplink {cfg['uplink_bps'] / 1e6:g} Mbit/s, buffer "
             f"{cfg['buffer_s']:g} s",
             "",
             f"Real: {len(real)} iteration(s); model: {len(model)} seed(s). Mean ± standard deviation [min–max].",
             "",
             "| metric | real mainline 4.0.4" + (f" (probe variant `{cfg['probe_variant']}`, not as released)"
                                               if cfg.get("probe_variant") else "") + " | torrentlab `mainline` |",
             "|---|---|---|"]
    for name, key, fmt in ROWS:
        lines.append(f"| {name} | {cell([m['summary'].get(key) for m in real], fmt)} | "
                     f"{cell([m['summary'].get(key) for m in model], fmt)} |")
    npieces = math.ceil(cfg["size"] / cfg["piece_size"])
    rr, mr = piece_ranks(real, npieces), piece_ranks(model, npieces)
    ks = sorted({1, 2, 5, 10, npieces // 2, npieces} & set(range(1, npieces + 1)))
    for k in ks:
        lines.append(f"| piece_spread: {k}-th distinct piece in a leecher (s) | "
                     f"{cell([r[k - 1] for r in rr], '{:.0f}')} | {cell([r[k - 1] for r in mr], '{:.0f}')} |")
    if real and real[0].get("cpu"):
        cpus = [m["cpu"] for m in real]
        lines.append("")
        lines.append("Real runs, whole machine CPU busy (all users, /proc/stat every 2 s): mean "
                     f"{statistics.fmean(c['machine_busy_mean_pct'] for c in cpus):.0f} %, max "
                     f"{max(c['machine_busy_max_pct'] for c in cpus):.0f} %; the clients' own CPU "
                     f"{statistics.fmean(c['clients_cpu_s'] / c['wall_s'] * 100 for c in cpus):.1f} % of one core "
                     f"on average; wall time per iteration {statistics.fmean(c['wall_s'] for c in cpus):.0f} s.")
        drops = [sum(q.get("dropped", 0) for q in m["uplink_qdisc"].values()) for m in real]
        lines.append(f"Real tbf drops (all uplinks, per iteration): {drops}.")
        ccs = {p.get("tcp_cc") for m in real for p in m["peers"]}
        lines.append(f"TCP congestion control seen on the real sockets: {sorted(c for c in ccs if c)}.")
    return "\n".join(lines) + "\n"
