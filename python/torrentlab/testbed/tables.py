"""The simulator's result tables, filled from a testbed run.

Every table ``torrentlab run`` writes for a swarm is written, with the same
column names, types and units (the schemas are taken from the engine itself,
by running a tiny swarm). What the testbed cannot measure is null (NaN in a
DataFrame); tables it cannot fill at all (``sends``,
``send_gaps``, ``payload_lengths``, ``uplink_delays``) have no rows. Times
are seconds from ``t0``, the instant the flash crowd was started. See
docs/testbed.md for each column's source.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pyarrow as pa

#: Tables written by a swarm run, in the simulator's order.
SWARM_TABLES = ("summary", "peers", "connections", "haves", "chokes", "sends", "send_gaps", "payload_lengths",
                "transports", "uplinks", "uplink_queue", "uplink_delays", "piece_spread")

_TINY = {"run": {"duration": "10 s"}, "torrent": {"size": "16 KiB", "piece_size": "16 KiB"},
         "network": {"access": {"up": "1 Mbit/s"}},
         "peers": [{"role": "seed", "client": "libtorrent"}, {"role": "leecher", "client": "libtorrent"}],
         "metrics": {"uplink_log_peers": 1, "send_log_peers": 1}}


@functools.lru_cache(maxsize=1)
def schemas() -> dict[str, pa.Schema]:
    """The engine's schema of every swarm table (from a run of a tiny swarm)."""
    import torrentlab

    res = torrentlab.run(_TINY)
    return {name: res.tables[name].schema for name in SWARM_TABLES}


def table(name: str, rows: dict[str, list]) -> pa.Table:
    """A table with the engine's schema for `name`: the columns in `rows`
    (lists of equal length; None or NaN: null), every other column null."""
    schema = schemas()[name]
    n = max((len(v) for v in rows.values()), default=0)
    arrays = []
    for f in schema:
        vals = rows.get(f.name)
        if vals is None:
            arrays.append(pa.nulls(n, type=f.type))
            continue
        clean = [None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in vals]
        if pa.types.is_integer(f.type):
            clean = [None if v is None else int(round(v)) for v in clean]
        elif pa.types.is_floating(f.type):
            clean = [None if v is None else float(v) for v in clean]
        arrays.append(pa.array(clean, type=f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _time_weighted(ts: np.ndarray, vals: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Sample-and-hold: each sample's value holds until the next; weights are
    the time each holds inside [lo, hi]."""
    if len(ts) == 0:
        return vals, np.zeros(0)
    nxt = np.append(ts[1:], hi)
    w = np.clip(np.minimum(nxt, hi) - np.maximum(ts, lo), 0, None)
    return vals, w


def _wquantile(vals: np.ndarray, w: np.ndarray, q: float) -> float:
    if w.sum() <= 0:
        return math.nan
    o = np.argsort(vals)
    c = np.cumsum(w[o]) / w.sum()
    return float(vals[o][min(np.searchsorted(c, q), len(c) - 1)])


def build(res: dict[str, Any]) -> dict[str, pa.Table]:
    """Every swarm table from a testbed run's raw material (see ``orchestrate.execute``)."""
    p = res["plan"]
    t0, t_end = res["t0"], res["t_end"]
    end_s = t_end - t0
    events = res["events"]
    ips = {ip: i for i, ip in enumerate(res["ips"])}
    n = len(p.peers)
    pieces_total = -(-p.file_bytes // p.piece_bytes)

    # ---- peers
    prow: dict[str, list] = {k: [] for k in (
        "peer", "class", "client", "role", "group", "join_s", "completed_s", "tracker_completed_s",
        "download_time_s", "pieces", "bytes_down", "bytes_wasted", "bytes_up", "connections_opened",
        "upload_utilisation")}
    conns_of: list[list[dict]] = []
    for i, q in enumerate(p.peers):
        ev = events[i]
        joined = next((e["t"] - t0 for e in ev if e["ev"] == "joined"), math.nan)
        fin = next((e["t"] - t0 for e in ev if e["ev"] == "finished"), math.nan) if q.role == "leecher" else math.nan
        st = next((e for e in reversed(ev) if e["ev"] == "status"), {})
        cs = next((e["conns"] for e in reversed(ev) if e["ev"] == "conns"), [])
        conns_of.append(cs)
        up = st.get("up", 0)
        rate = [r for r in (q.upload_limit_Bps, q.up_bps / 8 if q.up_bps else None) if r]
        active = end_s - joined
        util = up / (min(rate) * active) if rate and active > 0 else math.nan
        prow["peer"].append(i)
        prow["class"].append(q.label)
        prow["client"].append(q.client)
        prow["role"].append(q.role)
        prow["group"].append("")
        prow["join_s"].append(joined)
        prow["completed_s"].append(fin)
        prow["tracker_completed_s"].append(fin)  # no tracker; no delay to it
        prow["download_time_s"].append(fin - joined)
        prow["pieces"].append(st.get("pieces", 0))
        prow["bytes_down"].append(st.get("done", 0) if q.role == "leecher" else 0)
        prow["bytes_wasted"].append(st.get("redundant", 0) + st.get("failed", 0))
        prow["bytes_up"].append(up)
        prow["connections_opened"].append(sum(1 for c in cs if c["outgoing"]))
        prow["upload_utilisation"].append(util)

    # ---- connections: one per (initiator, acceptor, transport), seen from either end
    last_poll = max((c["last"] for cs in conns_of for c in cs), default=t_end)
    merged: dict[tuple, dict] = {}
    for i, cs in enumerate(conns_of):
        for c in cs:
            j = ips.get(c["remote_ip"])
            if j is None or j == i:  # not a peer of ours, or itself
                continue
            ini, acc = (i, j) if c["outgoing"] else (j, i)
            key = (ini, acc, c["transport"])
            fwd, rev = (c["up"], c["down"]) if c["outgoing"] else (c["down"], c["up"])
            m = merged.setdefault(key, {"first": c["first"], "last": c["last"], "fwd": fwd, "rev": rev})
            m["first"] = min(m["first"], c["first"])
            m["last"] = max(m["last"], c["last"])
            m["fwd"], m["rev"] = max(m["fwd"], fwd), max(m["rev"], rev)
    crow: dict[str, list] = {k: [] for k in ("conn", "initiator", "acceptor", "transport", "opened_s", "closed_s",
                                             "piece_bytes_forward", "piece_bytes_reverse")}
    for k, (key, m) in enumerate(sorted(merged.items(), key=lambda kv: (kv[1]["first"], kv[0]))):
        crow["conn"].append(k)
        crow["initiator"].append(key[0])
        crow["acceptor"].append(key[1])
        crow["transport"].append(key[2])
        crow["opened_s"].append(m["first"] - t0)
        crow["closed_s"].append(m["last"] - t0 if m["last"] < last_poll - 1.0 else math.nan)
        crow["piece_bytes_forward"].append(m["fwd"])
        crow["piece_bytes_reverse"].append(m["rev"])
    both = [f + r for f, r in zip(crow["piece_bytes_forward"], crow["piece_bytes_reverse"], strict=True)]
    trow = {"transport": ["tcp", "utp"],
            "connections": [crow["transport"].count(t) for t in ("tcp", "utp")],
            "piece_bytes": [sum(b for b, tr in zip(both, crow["transport"], strict=True) if tr == t)
                            for t in ("tcp", "utp")]}

    # ---- haves, piece_spread
    hrow: dict[str, list] = {"time_s": [], "peer": [], "piece": []}
    first = [math.nan] * pieces_total
    copies = [0] * pieces_total
    for i, q in enumerate(p.peers):
        if q.role != "leecher":
            continue
        for e in events[i]:
            if e["ev"] == "piece":
                t, k = e["t"] - t0, e["piece"]
                hrow["time_s"].append(t)
                hrow["peer"].append(i)
                hrow["piece"].append(k)
                if 0 <= k < pieces_total:
                    copies[k] += 1
                    first[k] = t if math.isnan(first[k]) else min(first[k], t)
    order = np.argsort(np.array(hrow["time_s"]), kind="stable")
    hrow = {k: [v[j] for j in order] for k, v in hrow.items()}

    # ---- chokes: whom each peer choked and unchoked, as its polls saw it
    krow: dict[str, list] = {"time_s": [], "peer": [], "remote": [], "choked": []}
    for i in range(n):
        for e in events[i]:
            j = ips.get(e.get("remote_ip")) if e["ev"] == "choke" else None
            if j is not None:
                krow["time_s"].append(e["t"] - t0)
                krow["peer"].append(i)
                krow["remote"].append(j)
                krow["choked"].append(bool(e["choked"]))
    order = np.lexsort((np.array(krow["peer"]), np.array(krow["time_s"]))) if krow["time_s"] else []
    krow = {k: [v[j] for j in order] for k, v in krow.items()}
    unchoked = [math.nan] * n
    for t, j, c in zip(krow["time_s"], krow["remote"], krow["choked"], strict=True):
        if not c and math.isnan(unchoked[j]):
            unchoked[j] = t
    prow["first_unchoked_s"] = unchoked

    # ---- uplinks, uplink_queue
    urow: dict[str, list] = {k: [] for k in (
        "peer", "capacity_bps", "buffer_packets", "buffer_bytes", "active_s", "served_packets", "served_bytes",
        "dropped_packets", "mean_delay_ms", "p95_delay_ms", "queue_nonempty_fraction", "mean_queue_bytes",
        "utilisation")}
    qrow: dict[str, list] = {k: [] for k in ("time_s", "peer", "bytes", "packets", "served_packets", "served_bytes",
                                             "dropped_packets")}
    sent = dropped = 0
    for i, q in enumerate(p.peers):
        rows = res["samples"].get(i)
        urow["peer"].append(i)
        urow["capacity_bps"].append(q.up_bps if q.up_bps else math.nan)
        kind, lim = q.up_buffer if q.up_buffer else (None, None)
        urow["buffer_packets"].append(lim if kind == "packets" else math.nan)
        urow["buffer_bytes"].append(lim if kind == "bytes" else math.nan)
        joined = prow["join_s"][i]
        active = max(0.0, end_s - joined)
        urow["active_s"].append(active)
        if not rows:
            for k in ("served_packets", "served_bytes", "dropped_packets"):
                urow[k].append(None)
            for k in ("mean_delay_ms", "p95_delay_ms", "queue_nonempty_fraction", "mean_queue_bytes", "utilisation"):
                urow[k].append(0.0 if not q.up_bps else math.nan)
            continue
        a = np.array(rows, dtype=float)
        ts = a[:, 0] - t0
        backlog, qlen = a[:, 1], a[:, 2]
        sb, sp, dr = a[:, 3] - a[0, 3], a[:, 4] - a[0, 4], a[:, 5] - a[0, 5]
        served_b, served_p, drops = sb[-1], sp[-1], dr[-1]
        sent += served_p
        dropped += drops
        lo, hi = joined, end_s
        _, w = _time_weighted(ts, backlog, lo, hi)
        tot = w.sum()
        mean_q = float((backlog * w).sum() / tot) if tot > 0 else math.nan
        mean_qlen = float((qlen * w).sum() / tot) if tot > 0 else math.nan
        # Little's law: the mean wait per packet = time-averaged packets waiting / packets served per second
        pkt_rate = served_p / active if active > 0 else 0
        delay_ms = backlog * 8 / q.up_bps * 1000
        urow["served_packets"].append(served_p)
        urow["served_bytes"].append(served_b)
        urow["dropped_packets"].append(drops)
        urow["mean_delay_ms"].append(mean_qlen / pkt_rate * 1000 if pkt_rate > 0 else math.nan)
        urow["p95_delay_ms"].append(_wquantile(delay_ms, w, 0.95))
        urow["queue_nonempty_fraction"].append(float(((qlen > 0) * w).sum() / tot) if tot > 0 else math.nan)
        urow["mean_queue_bytes"].append(mean_q)
        urow["utilisation"].append(min(1.0, served_b * 8 / q.up_bps / active) if active > 0 else math.nan)
        if i < p.uplink_log_peers:
            for k in range(len(ts)):
                qrow["time_s"].append(ts[k])
                qrow["peer"].append(i)
                qrow["bytes"].append(backlog[k])
                qrow["packets"].append(qlen[k])
                qrow["served_packets"].append(sp[k])
                qrow["served_bytes"].append(sb[k])
                qrow["dropped_packets"].append(dr[k])
    order = np.lexsort((np.array(qrow["peer"]), np.array(qrow["time_s"]))) if qrow["time_s"] else []
    qrow = {k: [v[j] for j in order] for k, v in qrow.items()}

    # ---- summary
    waits = [unchoked[i] - prow["join_s"][i] for i, q in enumerate(p.peers)
             if q.role == "leecher" and not math.isnan(unchoked[i])]
    lee = [i for i, q in enumerate(p.peers) if q.role == "leecher"]
    dts = [prow["download_time_s"][i] for i in lee if not math.isnan(prow["download_time_s"][i])]
    seeds_up = sum(prow["bytes_up"][i] for i, q in enumerate(p.peers) if q.role == "seed")
    down = sum(prow["bytes_down"])
    utils = [prow["upload_utilisation"][i] for i in lee if not math.isnan(prow["upload_utilisation"][i])]
    srow = {"scenario": [p.name], "seed": [p.seed], "peers": [n], "leechers": [len(lee)], "completed": [len(dts)],
            "mean_download_time_s": [float(np.mean(dts)) if dts else math.nan],
            "min_download_time_s": [min(dts) if dts else math.nan],
            "max_download_time_s": [max(dts) if dts else math.nan], "end_s": [end_s], "file_bytes": [p.file_bytes],
            "pieces": [pieces_total],
            "wasted_ratio": [sum(prow["bytes_wasted"]) / down if down else math.nan],
            "connections": [len(crow["conn"])], "network_sent_packets": [sent], "network_dropped_packets": [dropped],
            "network_lost_packets": [sum(x or 0 for x in res["lost"])],
            "seed_copies_uploaded": [seeds_up / p.file_bytes],
            "pieces_reached_leechers": [sum(1 for f in first if not math.isnan(f))],
            "leecher_upload_utilisation": [float(np.mean(utils)) if utils else math.nan],
            "first_unchoke_s": [min((t for t in unchoked if not math.isnan(t)), default=math.nan)],
            "mean_time_to_first_unchoke_s": [float(np.mean(waits)) if waits else math.nan]}
    return {
        "summary": table("summary", srow),
        "peers": table("peers", prow),
        "connections": table("connections", crow),
        "haves": table("haves", hrow),
        "chokes": table("chokes", krow),
        "sends": table("sends", {}),
        "send_gaps": table("send_gaps", {}),
        "payload_lengths": table("payload_lengths", {}),
        "transports": table("transports", trow),
        "uplinks": table("uplinks", urow),
        "uplink_queue": table("uplink_queue", qrow),
        "uplink_delays": table("uplink_delays", {}),
        "piece_spread": table("piece_spread", {"piece": list(range(pieces_total)), "first_s": first,
                                               "copies": copies}),
    }
