"""Cases, dumbbells and the torrentlab side of the ns-3 cross-check."""

import time

MSS = 1448

NS3_CC = {
    "newreno": "ns3::TcpNewReno",
    "cubic": "ns3::TcpCubic",
    "vegas": "ns3::TcpVegas",
    "lp": "ns3::TcpLp",
    "ledbat": "ns3::TcpLedbat",
    "nice": None,  # no ns-3 implementation
}

RECOVERY = {
    "prr": "ns3::TcpPrrRecovery",  # ns-3's default
    "classic": "ns3::TcpClassicRecovery",
}

DUMBBELLS = [
    {
        "key": "A",
        "title": "Dumbbell A: 10 Mbit/s, 40-packet buffer, RTT 50 ms",
        "capacity_mbps": 10.0,
        "one_way_delay_ms": 25.0,
        "tl_buffer": "40 packets",
        "ns3_queue_packets": 40,
        "buffer_text": "40 packets",
    },
    {
        "key": "B",
        "title": "Dumbbell B: 1 Mbit/s, 1 s buffer (83 packets), RTT 50 ms",
        "capacity_mbps": 1.0,
        "one_way_delay_ms": 25.0,
        "tl_buffer": "1 s",  # 125,000 bytes at 1 Mbit/s: 83 full 1500-byte packets
        "ns3_queue_packets": 83,
        "buffer_text": "1 s at capacity = 125,000 bytes = 83 full packets "
                       "(torrentlab: `\"1 s\"`, a byte limit; ns-3: a packet limit of 83)",
    },
]

ALONE = ["newreno", "cubic", "vegas", "lp", "ledbat", "nice"]
VS_CUBIC = ["newreno", "vegas", "lp", "ledbat", "nice"]

# Diagnostic ns-3 variants (classic recovery), each replacing one ns-3
# controller by a subclass defined in ns3_side.NS3_CPP:
#   lp-linux:  TcpLp that, like Linux tcp_lp, does not grow the window at all
#              (slow start included) within the inference time-out;
#   ledbat-cap: TcpLedbat whose per-ACK window cap is "flight before the ACK
#              + 1 MSS" as in ns-3.47's fixed TcpLedbat, instead of 3.44's
#              "flight before the ACK", which freezes the window.
DIAGNOSTICS = {
    "lp-linux": {"cc": "lp", "type": "ns3::TlvalTcpLpNoGrowthInInference",
                 "label": "TcpLp + no growth (slow start included) within the inference time-out"},
    "ledbat-cap": {"cc": "ledbat", "type": "ns3::TlvalTcpLedbatCap",
                   "label": "TcpLedbat + ns-3.47 window cap (flight + 1 MSS)"},
}


def cases():
    out = []
    for db in DUMBBELLS:
        for cc in ALONE:
            out.append({"dumbbell": db["key"], "name": f"{cc} alone", "ccs": [cc]})
        for cc in VS_CUBIC:
            out.append({"dumbbell": db["key"], "name": f"{cc} vs cubic", "ccs": [cc, "cubic"]})
    return out


def dumbbell(key):
    return next(d for d in DUMBBELLS if d["key"] == key)



# ---------------------------------------------------------------------------
# torrentlab side
# ---------------------------------------------------------------------------

def tl_scenario(case, duration, window_start):
    db = dumbbell(case["dumbbell"])
    return {
        "name": f"validate-{case['dumbbell']}-{case['name'].replace(' ', '-')}",
        "run": {"duration": f"{duration:g} s", "seed": 1},
        "network": {
            "one_way_delay": f"{db['one_way_delay_ms']:g} ms",
            "bottleneck": {"capacity": f"{db['capacity_mbps']:g} Mbit/s",
                           "buffer": db["tl_buffer"]},
        },
        # The rfc preset's RTO formula, max(min_rto, SRTT + max(G, 4 RTTVAR)),
        # is the one ns-3 uses; initial window and minimum RTO as in ns-3 below.
        "tcp": {"preset": "rfc", "mss": MSS, "initial_window": 10, "min_rto": "200 ms",
                "timestamps": True, "delayed_ack": False, "sack": True},
        # ns-3 TcpLedbat's TargetDelay default is 100 ms (ours: 25 ms).
        "ledbat": {"target": "100 ms"},
        "flows": [{"cc": cc, "label": f"{cc}-{i}"} for i, cc in enumerate(case["ccs"])],
        "metrics": {"timeseries": False, "queue_log": False,
                    "summary_start": f"{window_start:g} s"},
    }


def _col(df, *names):
    return df[next(n for n in names if n in df.columns)]


def run_torrentlab(case, duration, window_start):
    import torrentlab

    t0 = time.perf_counter()
    res = torrentlab.run(tl_scenario(case, duration, window_start))
    wall = time.perf_counter() - t0
    s = res.summary.iloc[0]
    fl = res.flows
    return {
        "tool": "torrentlab",
        "wall_seconds": wall,
        "goodput_bps": [float(x) for x in fl["window_rate_bps"]],
        "jain": float(s["jain_index"]),
        "mean_queue_packets": float(s["mean_queue_packets"]),
        "mean_queue_delay_ms": float(s["mean_queue_delay_ms"]),
        "arrived": int(s["bottleneck_arrived_packets"]),
        "drops": int(s["bottleneck_dropped_packets"]),
        "drops_whole_run": int(s["network_dropped_packets"]),
        "loss_rate": float(s["loss_rate"]),
        "efficiency": float(s["efficiency"]),
        "timeouts": [int(x) for x in fl["timeouts"]],
        "fast_retransmits": [int(x) for x in fl["fast_retransmits"]],
        # (renamed from retransmitted_segments when uTP flows arrived)
        "retransmitted": [int(x) for x in _col(fl, "retransmitted_packets",
                                                "retransmitted_segments")],
    }
