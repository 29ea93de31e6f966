#!/usr/bin/env python3
"""Cross-check torrentlab's TCP congestion controllers against ns-3.

Runs the same single-bottleneck dumbbell cases in torrentlab (in this process)
and in ns-3 (PyPI wheel ``ns3``, one subprocess per case), then writes
``docs/validation.md`` (or prints it with ``--print``).

    python3 bench/validate_ns3.py            # full: 60 s per case, window [10 s, 60 s]
    python3 bench/validate_ns3.py --quick    # 20 s per case, window [5 s, 20 s]

Cases, for each of two dumbbells (A: 10 Mbit/s, 40-packet buffer; B: 1 Mbit/s,
1 s of buffer = 83 packets; one-way delay 25 ms, RTT 50 ms): every controller
alone (newreno, cubic, vegas, lp, ledbat, nice) and each of newreno, vegas,
lp, ledbat and nice against one cubic flow.  TCP Nice has no ns-3
counterpart: it runs in torrentlab only.

Common TCP settings: MSS 1448 with timestamps (1500-byte IP packets), SACK on,
no delayed ACKs, initial window 10, minimum RTO 200 ms (RFC 6298 formula in
both tools), all flows start at t = 0.  Per-flow goodput is in-order payload
delivered to the application in the measurement window.

This is evidence, not a test: nothing is tuned to make the numbers agree.

Internal use: ``--ns3-case JSON`` runs one ns-3 case and prints one JSON
object on stdout (the parent process does this in a subprocess per case,
because the ns3 wheel globs the current directory for its libraries and takes
~11 s to import).
"""

import argparse
import concurrent.futures as cf
import datetime as _dt
import importlib.metadata
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "validation.md"

MSS = 1448
PKT = 1500  # IP bytes of a full segment (20 IP + 20 TCP + 12 timestamps + 1448)

NS3_CC = {
    "newreno": "ns3::TcpNewReno",
    "cubic": "ns3::TcpCubic",
    "vegas": "ns3::TcpVegas",
    "lp": "ns3::TcpLp",
    "ledbat": "ns3::TcpLedbat",
    "nice": None,  # no ns-3 implementation
}

DUMBBELLS = [
    {
        "key": "A",
        "title": "Dumbbell A: 10 Mbit/s, 40-packet buffer, RTT 50 ms",
        "capacity_mbps": 10.0,
        "one_way_delay_ms": 25.0,
        "tl_buffer": "40 packets",
        "ns3_queue_packets": 40,
        "buffer_text": "40 packets (drop-tail, waiting packets)",
    },
    {
        "key": "B",
        "title": "Dumbbell B: 1 Mbit/s, 1 s buffer (83 packets), RTT 50 ms",
        "capacity_mbps": 1.0,
        "one_way_delay_ms": 25.0,
        "tl_buffer": "1 s",  # 125,000 bytes at 1 Mbit/s: 83 full 1500-byte packets
        "ns3_queue_packets": 83,
        "buffer_text": "1 s at capacity = 125,000 bytes, i.e. 83 full packets "
                       "(torrentlab: byte limit `\"1 s\"`; ns-3: DropTail of 83 packets)",
    },
]

# ns-3 runs every case twice: with its default loss recovery (PRR) and with
# TcpClassicRecovery, which with SACK is RFC 6675 with cwnd = ssthresh, as in
# torrentlab (see docs/validation.md for why both are shown).
NS3_VARIANTS = {
    "prr": {"label": "ns-3 (PRR, default)", "defaults": {}},
    "classic": {"label": "ns-3 (classic recovery)",
                "defaults": {"ns3::TcpL4Protocol::RecoveryType": "ns3::TcpClassicRecovery"}},
}

ALONE = ["newreno", "cubic", "vegas", "lp", "ledbat", "nice"]
VS_CUBIC = ["newreno", "vegas", "lp", "ledbat", "nice"]


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
        "loss_rate": float(s["loss_rate"]),
        "efficiency": float(s["efficiency"]),
        "timeouts": [int(x) for x in fl["timeouts"]],
        "fast_retransmits": [int(x) for x in fl["fast_retransmits"]],
        # (renamed from retransmitted_segments when uTP flows arrived)
        "retransmitted": [int(x) for x in fl[next(c for c in ("retransmitted_packets",
                                                               "retransmitted_segments")
                                                  if c in fl.columns)]],
    }


# ---------------------------------------------------------------------------
# ns-3 side (runs in a subprocess: --ns3-case)
# ---------------------------------------------------------------------------

NS3_CPP = r"""
#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/internet-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/applications-module.h"
#include <vector>

namespace tlval {
using namespace ns3;

static Ptr<Queue<Packet>> g_q;
static double g_lastT = 0.0;       // s, last change of the queue length
static uint32_t g_len = 0;         // packets waiting in the bottleneck device queue
static double g_area = 0.0;        // integral of g_len over time (packet-seconds)
static uint32_t g_maxLen = 0;
static uint64_t g_enq = 0, g_drops = 0;   // data packets (IP size > 100 B)
static double g_winStart = 0.0;
static double g_areaStart = 0.0;
static uint64_t g_enqStart = 0, g_dropsStart = 0;
static uint32_t g_maxLenWin = 0;
static std::vector<Ptr<Application>> g_sinks, g_bulks;
static std::vector<uint64_t> g_rxStart;
static std::vector<uint64_t> g_rto, g_rec, g_retx;
static std::vector<uint32_t> g_cwnd;
static std::vector<std::vector<uint32_t>> g_cwndSeries;
static std::vector<uint32_t> g_qSeries;
static double g_seriesStep = 0.0;

static void Advance()
{
    double now = Simulator::Now().GetSeconds();
    g_area += g_len * (now - g_lastT);
    g_lastT = now;
}

static void QLenCb(uint32_t oldv, uint32_t newv)
{
    Advance();
    g_len = newv;
    if (newv > g_maxLen) g_maxLen = newv;
    if (Simulator::Now().GetSeconds() >= g_winStart && newv > g_maxLenWin) g_maxLenWin = newv;
}

static void EnqCb(Ptr<const Packet> p) { if (p->GetSize() > 100) g_enq++; }
static void DropCb(Ptr<const Packet> p) { if (p->GetSize() > 100) g_drops++; }

static ns3::Ptr<ns3::Queue<ns3::Packet>> DevQueue(ns3::Ptr<ns3::NetDevice> d)
{
    Ptr<PointToPointNetDevice> p2p = d->GetObject<PointToPointNetDevice>();
    NS_ABORT_MSG_IF(!p2p, "not a PointToPointNetDevice");
    return p2p->GetQueue();
}

void SetQueuePackets(Ptr<NetDevice> d, uint32_t pkts)
{
    DevQueue(d)->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, pkts));
}

uint32_t QueueMaxPackets(Ptr<NetDevice> d) { return DevQueue(d)->GetMaxSize().GetValue(); }

bool HasRootQueueDisc(Ptr<NetDevice> d)
{
    Ptr<TrafficControlLayer> tc = d->GetNode()->GetObject<TrafficControlLayer>();
    return tc && tc->GetRootQueueDiscOnDevice(d) != nullptr;
}

// The bottleneck: router -> receiver device.  With no queue disc, a packet
// that finds the device queue full (stopped) is dropped by the traffic-control
// layer (TcDrop); the queue's own Drop trace is hooked too.  Only data packets
// leave the router on this device, and TcDrop on the router is filtered to
// data-sized packets (ACKs to the senders are 52 + 2 bytes).
void WatchBottleneck(Ptr<NetDevice> d)
{
    g_q = DevQueue(d);
    g_q->TraceConnectWithoutContext("PacketsInQueue", MakeCallback(&QLenCb));
    g_q->TraceConnectWithoutContext("Enqueue", MakeCallback(&EnqCb));
    g_q->TraceConnectWithoutContext("Drop", MakeCallback(&DropCb));
    Ptr<TrafficControlLayer> tc = d->GetNode()->GetObject<TrafficControlLayer>();
    NS_ABORT_MSG_IF(!tc, "no TrafficControlLayer");
    bool ok = tc->TraceConnectWithoutContext("TcDrop", MakeCallback(&DropCb));
    NS_ABORT_MSG_IF(!ok, "could not connect TcDrop");
}

void AddFlow(Ptr<Application> sink, Ptr<Application> bulk)
{
    g_sinks.push_back(sink);
    g_bulks.push_back(bulk);
    g_rxStart.push_back(0);
    g_rto.push_back(0);
    g_rec.push_back(0);
    g_retx.push_back(0);
    g_cwnd.push_back(0);
    g_cwndSeries.emplace_back();
}

uint64_t SinkRx(uint32_t i)
{
    Ptr<PacketSink> s = DynamicCast<PacketSink>(g_sinks[i]);
    NS_ABORT_MSG_IF(!s, "not a PacketSink");
    return s->GetTotalRx();
}

// RTO expiries: ReTxTimeout doubles m_rto (capped at 60 s); an RTT update
// recomputes it from SRTT/RTTVAR and practically never doubles it exactly.
static void RtoCb(uint32_t i, Time oldv, Time newv)
{
    if (newv == oldv + oldv || (newv == Seconds(60) && oldv >= Seconds(30))) g_rto[i]++;
}

static void CongStateCb(uint32_t i, TcpSocketState::TcpCongState_t oldv,
                        TcpSocketState::TcpCongState_t newv)
{
    if (newv == TcpSocketState::CA_RECOVERY) g_rec[i]++;
}

static void RetxCb(uint32_t i, Ptr<const Packet> p, const TcpHeader& h, const Address& a,
                   const Address& b, Ptr<const TcpSocketBase> s)
{
    g_retx[i]++;
}

static void CwndCb(uint32_t i, uint32_t oldv, uint32_t newv) { g_cwnd[i] = newv; }

static void ConnectSockets()
{
    for (uint32_t i = 0; i < g_bulks.size(); i++)
    {
        Ptr<BulkSendApplication> b = DynamicCast<BulkSendApplication>(g_bulks[i]);
        Ptr<Socket> s = b->GetSocket();
        NS_ABORT_MSG_IF(!s, "BulkSend socket not created yet");
        bool ok = s->TraceConnectWithoutContext("RTO", MakeBoundCallback(&RtoCb, i));
        ok = ok && s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&CongStateCb, i));
        ok = ok && s->TraceConnectWithoutContext("Retransmission", MakeBoundCallback(&RetxCb, i));
        ok = ok && s->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&CwndCb, i));
        NS_ABORT_MSG_IF(!ok, "could not connect a socket trace");
    }
}

static void WindowStart()
{
    Advance();
    g_areaStart = g_area;
    g_enqStart = g_enq;
    g_dropsStart = g_drops;
    g_maxLenWin = g_len;
    for (uint32_t i = 0; i < g_sinks.size(); i++) g_rxStart[i] = SinkRx(i);
}

static void Sample()
{
    for (uint32_t i = 0; i < g_cwnd.size(); i++) g_cwndSeries[i].push_back(g_cwnd[i]);
    g_qSeries.push_back(g_len);
    Simulator::Schedule(Seconds(g_seriesStep), &Sample);
}

void Arm(double windowStart, double seriesStep)
{
    g_winStart = windowStart;
    Simulator::Schedule(NanoSeconds(1), &ConnectSockets);  // apps start (and create sockets) at t = 0
    Simulator::Schedule(Seconds(windowStart), &WindowStart);
    if (seriesStep > 0) { g_seriesStep = seriesStep; Simulator::Schedule(NanoSeconds(2), &Sample); }
}

void Finish() { Advance(); }
double Area() { return g_area; }
double AreaStart() { return g_areaStart; }
uint64_t Enq() { return g_enq; }
uint64_t EnqStart() { return g_enqStart; }
uint64_t Drops() { return g_drops; }
uint64_t DropsStart() { return g_dropsStart; }
uint32_t MaxLen() { return g_maxLen; }
uint32_t MaxLenWin() { return g_maxLenWin; }
uint64_t RxStart(uint32_t i) { return g_rxStart[i]; }
uint64_t Rto(uint32_t i) { return g_rto[i]; }
uint64_t Rec(uint32_t i) { return g_rec[i]; }
uint64_t Retx(uint32_t i) { return g_retx[i]; }
uint32_t SeriesLen() { return g_qSeries.size(); }
uint32_t CwndAt(uint32_t i, uint32_t k) { return g_cwndSeries[i][k]; }
uint32_t QAt(uint32_t k) { return g_qSeries[k]; }

} // namespace tlval
"""


def ns3_worker(case):
    """Run one ns-3 case; return a dict (called in a fresh subprocess)."""
    # The ns3 wheel finds its shared libraries by globbing the current
    # directory recursively: run from a fresh empty directory.
    os.chdir(tempfile.mkdtemp(prefix="validate_ns3_"))
    from ns import ns  # slow (~11 s)

    ns.cppyy.cppdef(NS3_CPP)
    tl = ns.cppyy.gbl.tlval
    db = dumbbell(case["dumbbell"])
    duration = float(case["duration"])
    window_start = float(case["window_start"])

    C = ns.Config.SetDefault
    C("ns3::TcpSocket::SegmentSize", ns.UintegerValue(MSS))
    C("ns3::TcpSocket::DelAckCount", ns.UintegerValue(1))
    C("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    C("ns3::TcpSocket::SndBufSize", ns.UintegerValue(4 << 20))
    C("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(4 << 20))
    C("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))
    C("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(True))
    C("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(True))
    C("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(200)))
    # Loss recovery: ns-3's default (TcpPrrRecovery) is kept.
    for k, v in case.get("ns3_defaults", {}).items():  # optional extra defaults
        C(k, ns.StringValue(v))

    n = len(case["ccs"])
    senders = ns.NodeContainer()
    senders.Create(n)
    others = ns.NodeContainer()
    others.Create(2)
    router, rx = others.Get(0), others.Get(1)
    ns.InternetStackHelper().InstallAll()
    for i, cc in enumerate(case["ccs"]):
        node = senders.Get(i)
        ns.Config.Set(f"/NodeList/{node.GetId()}/$ns3::TcpL4Protocol/SocketType",
                      ns.TypeIdValue(ns.TypeId.LookupByName(NS3_CC[cc])))

    tch = ns.TrafficControlHelper()
    all_devs = []

    access = ns.PointToPointHelper()
    access.SetDeviceAttribute("DataRate", ns.StringValue("1Gbps"))
    access.SetChannelAttribute("Delay", ns.StringValue("0ms"))
    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.252"))
    for i in range(n):
        devs = access.Install(senders.Get(i), router)
        for j in range(2):
            tl.SetQueuePackets(devs.Get(j), 100000)
        addr.Assign(devs)
        addr.NewNetwork()
        tch.Uninstall(devs)  # remove the pfifo_fast root queue disc Assign() installed
        all_devs.append(devs)

    bneck = ns.PointToPointHelper()
    bneck.SetDeviceAttribute("DataRate", ns.StringValue(f"{int(db['capacity_mbps'] * 1e6)}bps"))
    bneck.SetChannelAttribute("Delay", ns.TimeValue(ns.MicroSeconds(
        int(round(db["one_way_delay_ms"] * 1000)))))
    bdevs = bneck.Install(router, rx)
    # The reverse (ACK) direction is fast, as torrentlab's unlimited ACK path.
    bdevs.Get(1).SetAttribute("DataRate", ns.StringValue("1Gbps"))
    tl.SetQueuePackets(bdevs.Get(0), int(db["ns3_queue_packets"]))
    tl.SetQueuePackets(bdevs.Get(1), 100000)
    b_addr = ns.Ipv4AddressHelper()
    b_addr.SetBase(ns.Ipv4Address("192.168.0.0"), ns.Ipv4Mask("255.255.255.252"))
    b_ifs = b_addr.Assign(bdevs)
    tch.Uninstall(bdevs)
    all_devs.append(bdevs)
    rx_addr = b_ifs.GetAddress(1)

    for devs in all_devs:
        for j in range(devs.GetN()):
            if tl.HasRootQueueDisc(devs.Get(j)):
                raise SystemExit("traffic-control root queue disc still installed")
    assert tl.QueueMaxPackets(bdevs.Get(0)) == int(db["ns3_queue_packets"])
    tl.WatchBottleneck(bdevs.Get(0))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    for i in range(n):
        port = 10000 + i
        sink = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                                   ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
        sapps = sink.Install(rx)
        sapps.Start(ns.Seconds(0))
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory",
                                 ns.InetSocketAddress(rx_addr, port).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(MSS))
        bapps = bulk.Install(senders.Get(i))
        bapps.Start(ns.Seconds(0))
        tl.AddFlow(sapps.Get(0), bapps.Get(0))

    series_step = float(case.get("series_step", 0.0))
    tl.Arm(window_start, series_step)
    ns.Simulator.Stop(ns.Seconds(duration))
    t0 = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - t0
    tl.Finish()

    win = duration - window_start
    goodput = [(int(tl.SinkRx(i)) - int(tl.RxStart(i))) * 8 / win for i in range(n)]
    arrived = (int(tl.Enq()) - int(tl.EnqStart())) + (int(tl.Drops()) - int(tl.DropsStart()))
    drops = int(tl.Drops()) - int(tl.DropsStart())
    out = {
        "tool": "ns-3",
        "ns3_version": importlib.metadata.version("ns3"),
        "wall_seconds": wall,
        "goodput_bps": goodput,
        "jain": jain(goodput),
        "mean_queue_packets": (float(tl.Area()) - float(tl.AreaStart())) / win,
        "arrived": arrived,
        "drops": drops,
        "loss_rate": drops / arrived if arrived else 0.0,
        "max_queue_packets": int(tl.MaxLen()),
        "timeouts": [int(tl.Rto(i)) for i in range(n)],
        "fast_retransmits": [int(tl.Rec(i)) for i in range(n)],
        "retransmitted": [int(tl.Retx(i)) for i in range(n)],
    }
    if series_step > 0:
        k = int(tl.SeriesLen())
        out["series_step"] = series_step
        out["cwnd_packets"] = [[int(tl.CwndAt(i, j)) / MSS for j in range(k)] for i in range(n)]
        out["queue_packets"] = [int(tl.QAt(j)) for j in range(k)]
    ns.Simulator.Destroy()
    return out


def run_ns3(case, duration, window_start, extra=None):
    spec = dict(case, duration=duration, window_start=window_start, **(extra or {}))
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--ns3-case", json.dumps(spec)],
                       capture_output=True, text=True, cwd=tempfile.gettempdir())
    if p.returncode != 0:
        raise RuntimeError(f"ns-3 case {case['dumbbell']} {case['name']} failed "
                           f"(exit {p.returncode}):\n{p.stderr[-4000:]}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["process_seconds"] = time.perf_counter() - t0
    return res


# ---------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------

def jain(xs):
    s = sum(xs)
    q = sum(x * x for x in xs)
    return s * s / (len(xs) * q) if q > 0 else float("nan")


def mbps(x):
    return f"{x / 1e6:.3f}"


def f2(x):
    return f"{x:.2f}"


def f3(x):
    return f"{x:.3f}"


def pct(x):
    return f"{100 * x:.1f} %"


def cell(tl, ns, get, fmt):
    """'torrentlab | ns-3 PRR | ns-3 classic' for one quantity."""
    vals = []
    for r in [tl] + list(ns):
        v = get(r) if r is not None else None
        vals.append("n/a" if v is None else fmt(v))
    return " \\| ".join(vals)


def share(r):
    if len(r["goodput_bps"]) < 2:
        return None
    s = sum(r["goodput_bps"])
    return r["goodput_bps"][0] / s if s > 0 else float("nan")


def per_flow(key):
    return lambda r: "+".join(str(v) for v in r[key])


def loss(r):
    return f"{r['drops']} ({100 * r['loss_rate']:.2f} %)"


def results_tables(db, rows):
    cap = db["capacity_mbps"]
    L = []
    L.append(f"### {db['title']}")
    L.append("")
    L.append(f"Bottleneck {cap:g} Mbit/s, one-way delay {db['one_way_delay_ms']:g} ms, "
             f"buffer {db['buffer_text']}.")
    L.append("")
    L.append("Each cell is **torrentlab \\| ns-3 with PRR (its default) \\| ns-3 with "
             "classic recovery**. Goodput in Mbit/s over the window. Share: the first "
             "(non-cubic) flow's fraction of the total goodput.")
    L.append("")
    L.append("| case | flow 1 goodput | cubic goodput | share of flow 1 | Jain index |")
    L.append("|---|---|---|---|---|")
    for case, tl, ns in rows:
        two = len(case["ccs"]) == 2
        g1 = cell(tl, ns, lambda r: r["goodput_bps"][0], mbps)
        g2 = cell(tl, ns, lambda r: r["goodput_bps"][1], mbps) if two else "-"
        sh = cell(tl, ns, share, pct) if two else "-"
        ji = cell(tl, ns, lambda r: r["jain"], f3) if two else "-"
        L.append(f"| {case['name']} | {g1} | {g2} | {sh} | {ji} |")
    L.append("")
    L.append("Same layout. Total goodput in Mbit/s. Mean queue: time-averaged packets waiting "
             "in the bottleneck queue over the window. Drops: data packets dropped at the "
             "bottleneck in the window (loss rate = drops / arrivals). RTOs, fast recoveries "
             "and retransmitted segments: per flow (flow 1 + cubic), whole run.")
    L.append("")
    L.append("| case | total goodput | mean queue (packets) | drops (loss rate) | RTOs | fast recoveries | retransmitted segments |")
    L.append("|---|---|---|---|---|---|---|")
    for case, tl, ns in rows:
        tot = cell(tl, ns, lambda r: sum(r["goodput_bps"]), mbps)
        mq = cell(tl, ns, lambda r: r["mean_queue_packets"], f2)
        lo = cell(tl, ns, loss, str)
        rto = cell(tl, ns, per_flow("timeouts"), str)
        fr = cell(tl, ns, per_flow("fast_retransmits"), str)
        rt = cell(tl, ns, per_flow("retransmitted"), str)
        L.append(f"| {case['name']} | {tot} | {mq} | {lo} | {rto} | {fr} | {rt} |")
    L.append("")
    return "\n".join(L)


def render(results, meta):
    # results: list of (case, tl, ns3-or-None)
    by_db = {}
    for case, tl, ns in results:
        by_db.setdefault(case["dumbbell"], []).append((case, tl, ns))
    tables = "\n".join(results_tables(dumbbell(k), by_db[k]) for k in by_db)
    R = {(c["dumbbell"], c["name"]): (tl, *ns) for c, tl, ns in results}
    return DOC_TEMPLATE(meta, tables, R)


def DOC_TEMPLATE(meta, tables, R):  # noqa: N802  (the page text lives in validation_text())
    return validation_text(meta, tables, R)


def validation_text(meta, tables, R):
    m = meta
    return f"""# Validation against ns-3

This page compares torrentlab's TCP congestion controllers with the
implementations in [ns-3](https://www.nsnam.org/) on the same dumbbell. It is
evidence, not a pass/fail test: nothing on either side was tuned to make the
numbers agree. Where they disagree, the section
[Differences and why](#differences-and-why) says what we know about the cause.

- Measured on {m['date']} with ns-3 {m['ns3_version']} (PyPI wheel `ns3`) and
  torrentlab {m['torrentlab_version']} (git `{m['git']}`).
- Command: `{m['command']}` ({m['duration']:g} simulated seconds per case,
  measurement window [{m['window_start']:g} s, {m['duration']:g} s]; wall time
  {m['wall']:.0f} s on {m['cpus']} CPUs, nearly all of it ns-3's ~11 s import
  per case).
- `python3 bench/validate_ns3.py --quick` runs 20 s per case (window from 5 s);
  `--print` prints the page instead of writing it.

## What is compared

```
sender 1 --+
           +-- router ==[drop-tail queue]== bottleneck link ==> receiver
sender 2 --+            (capacity, one-way delay)
```

One or two long-lived flows, each from its own sender host, all starting at
t = 0 and sending for the whole run. The only queue that fills is the
bottleneck's. ACKs return on an uncongested path. RTT = 2 x one-way delay =
50 ms plus queueing.

**Cases.** For each dumbbell: each controller alone (newreno, cubic, vegas, lp,
ledbat, nice), and each of newreno, vegas, lp, ledbat and nice against one
cubic flow. TCP Nice has no ns-3 implementation: it runs in torrentlab only
(ns-3 column "n/a").

**Settings common to both tools.** MSS 1448 bytes with RFC 7323 timestamps,
so a full segment is a 1500-byte IP packet. SACK on. Every segment is ACKed
(no delayed ACKs). Initial window 10 segments. RTO = max(200 ms, SRTT +
max(1 ms, 4 RTTVAR)), initial RTO 1 s. Send and receive buffers large enough
never to limit the window. Each application always has data to send.

**Measurements.** Per-flow goodput = in-order payload bytes delivered to the
receiving application in the window x 8 / window length (torrentlab:
`flows.window_rate_bps` with `metrics.summary_start`; ns-3: `PacketSink`
`TotalRx` sampled at the window start and at the end). Jain's index over the
flows' goodputs. Mean queue = time average of the number of packets waiting in
the bottleneck queue (not counting the one being transmitted) over the window
(ns-3: the device queue's `PacketsInQueue` trace, integrated exactly). Drops =
data packets dropped at the bottleneck in the window; loss rate = drops /
packets arriving at the bottleneck in the window. RTOs, fast recoveries and
retransmitted segments are whole-run counts per flow (ns-3: RTO expiries
detected as doublings of the `RTO` trace, entries into `CA_RECOVERY` from the
`CongState` trace, and the socket's `Retransmission` trace).

| | torrentlab | ns-3 |
|---|---|---|
| topology | built-in dumbbell: per-flow sender host, core delay, receiver downlink = bottleneck | senders -(1 Gbit/s, 0 ms, point-to-point)- router -(bottleneck point-to-point link, one-way delay on this link)- receiver |
| bottleneck queue | drop-tail, limit counts waiting packets (A: `"40 packets"`; B: `"1 s"` = 125,000 bytes = 83 packets) | `PointToPointNetDevice` `DropTailQueue<Packet>` (A: 40 packets; B: 83 packets, packet-limited), traffic control uninstalled (`TrafficControlHelper::Uninstall`, checked), so the device queue is the only queue; a packet arriving at a full queue is dropped in the traffic-control layer (`TcDrop`) |
| packet on the wire | 1500 bytes | 1502 bytes (PPP header): the link carries 0.13 % fewer packets per second |
| ACK path | unlimited | receiver->router direction of the bottleneck link at 1 Gbit/s, same 25 ms delay |
| TCP preset | `preset = "rfc"`, `initial_window = 10`, `min_rto = "200 ms"`, `delayed_ack = false`, `sack = true`, `timestamps = true` | `SegmentSize` 1448, `DelAckCount` 1, `InitialCwnd` 10, `MinRto` 200 ms, `Sack` true, `Timestamp` true, `WindowScaling` true, `Snd/RcvBufSize` 4 MiB |
| loss recovery | RFC 6675 SACK scoreboard, cwnd = ssthresh on entry (no PRR) | ns-3 default `TcpPrrRecovery` (RFC 6937 PRR) over its RFC 6675 scoreboard; limited transmit on |
| controllers | `newreno`, `cubic`, `vegas`, `lp`, `ledbat` (with `[ledbat] target = "100 ms"`), `nice` | `TcpNewReno`, `TcpCubic`, `TcpVegas`, `TcpLp`, `TcpLedbat`, all with their default attributes, set per sender node through `/NodeList/<id>/$ns3::TcpL4Protocol/SocketType` |
| connection set-up | none: data flows from t = 0 | three-way handshake first (one RTT) |
| timestamps | exact simulated time (ns) for RTT and one-way delay | 1 ms ticks (`TcpOptionTS`) |

## Results

{tables}
## Differences and why

{differences_text(R, m)}
"""


def differences_text(R, m):
    return DIFFERENCES.strip()


DIFFERENCES = """
(to be written after a full run)
"""


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="20 s per case, window from 5 s")
    p.add_argument("--print", action="store_true", help="print the page instead of writing docs/validation.md")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="ns-3 subprocesses in parallel (default: CPU count)")
    p.add_argument("--json", metavar="FILE", help="also write the raw results as JSON")
    p.add_argument("--ns3-case", metavar="JSON", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def main(argv=None):
    args = parse_args(argv)
    if args.ns3_case:
        print(json.dumps(ns3_worker(json.loads(args.ns3_case))))
        return

    duration, window_start = (20.0, 5.0) if args.quick else (60.0, 10.0)
    t_start = time.perf_counter()
    all_cases = cases()

    log(f"torrentlab: {len(all_cases)} cases, {duration:g} s each")
    tl_res = {}
    for i, c in enumerate(all_cases):
        tl_res[i] = run_torrentlab(c, duration, window_start)
        log(f"  [{i + 1}/{len(all_cases)}] {c['dumbbell']} {c['name']}: "
            f"{' + '.join(mbps(g) for g in tl_res[i]['goodput_bps'])} Mbit/s "
            f"({tl_res[i]['wall_seconds']:.2f} s)")

    ns_idx = [i for i, c in enumerate(all_cases) if all(NS3_CC[cc] for cc in c["ccs"])]
    jobs = [(i, var) for var in NS3_VARIANTS for i in ns_idx]
    log(f"ns-3: {len(ns_idx)} cases x {len(NS3_VARIANTS)} recovery variants = {len(jobs)} runs, "
        f"one subprocess each, {args.jobs} in parallel (~11 s import per subprocess)")
    ns_res = {var: {} for var in NS3_VARIANTS}
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        futs = {ex.submit(run_ns3, all_cases[i], duration, window_start,
                          {"ns3_defaults": NS3_VARIANTS[var]["defaults"]}): (i, var)
                for i, var in jobs}
        done = 0
        for f in cf.as_completed(futs):
            i, var = futs[f]
            r = ns_res[var][i] = f.result()
            done += 1
            c = all_cases[i]
            log(f"  [{done}/{len(jobs)}] {c['dumbbell']} {c['name']} ({var}): "
                f"{' + '.join(mbps(g) for g in r['goodput_bps'])} Mbit/s "
                f"(Run {r['wall_seconds']:.2f} s, process {r['process_seconds']:.1f} s)")

    results = [(c, tl_res[i], [ns_res[var].get(i) for var in NS3_VARIANTS])
               for i, c in enumerate(all_cases)]
    import torrentlab

    try:
        git = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip() or "unknown"
    except OSError:
        git = "unknown"
    meta = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"),
        "ns3_version": importlib.metadata.version("ns3"),
        "torrentlab_version": getattr(torrentlab, "__version__", None)
        or importlib.metadata.version("torrentlab"),
        "git": git,
        "command": "python3 bench/validate_ns3.py" + (" --quick" if args.quick else ""),
        "duration": duration,
        "window_start": window_start,
        "wall": time.perf_counter() - t_start,
        "cpus": os.cpu_count(),
    }
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"meta": meta, "results": [{"case": c, "torrentlab": t,
                                        "ns3": dict(zip(NS3_VARIANTS, n))} for c, t, n in results]},
            indent=1))
    page = render(results, meta)
    if args.print:
        print(page)
    else:
        DOC.write_text(page)
        log(f"wrote {DOC}")
    log(f"total {meta['wall']:.0f} s")


if __name__ == "__main__":
    main()
