#!/usr/bin/env python3
"""Cross-check torrentlab's TCP congestion controllers against ns-3.

Runs the same single-bottleneck dumbbell cases in torrentlab (in this process)
and in ns-3 (PyPI wheel ``ns3``, in subprocesses), then writes
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

ns-3 runs every case twice, with its default loss recovery (PRR) and with
TcpClassicRecovery, plus a few diagnostic runs (LP and LEDBAT variants, see
docs/validation.md).  This is evidence, not a test: nothing is tuned to make
the numbers agree.

The ns-3 runs are spread over ``--jobs`` worker subprocesses
(``--ns3-batch``): the ns3 wheel globs the current directory for its
libraries, so a worker chdirs into a fresh temporary directory before its
~11 s ``from ns import ns``, and then runs its cases one after another
(``Simulator::Destroy`` between them).  ``--isolated`` runs one subprocess per
ns-3 case instead (slower, same numbers).
"""

import argparse
import datetime as _dt
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "validation.md"

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
# controller by a subclass defined below in NS3_CPP:
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


# ---------------------------------------------------------------------------
# ns-3 side (runs in worker subprocesses: --ns3-batch)
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
static std::vector<Ptr<Application>> g_sinks, g_bulks;
static std::vector<uint64_t> g_rxStart;
static std::vector<uint64_t> g_rto, g_rec, g_retx;
static std::vector<uint32_t> g_cwnd;
static std::vector<std::vector<uint32_t>> g_cwndSeries;
static std::vector<uint32_t> g_qSeries;
static double g_seriesStep = 0.0;

void Reset()
{
    g_q = nullptr;
    g_lastT = 0.0; g_len = 0; g_area = 0.0; g_maxLen = 0;
    g_enq = 0; g_drops = 0; g_winStart = 0.0; g_areaStart = 0.0;
    g_enqStart = 0; g_dropsStart = 0;
    g_sinks.clear(); g_bulks.clear(); g_rxStart.clear();
    g_rto.clear(); g_rec.clear(); g_retx.clear(); g_cwnd.clear();
    g_cwndSeries.clear(); g_qSeries.clear(); g_seriesStep = 0.0;
}

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
}

static void EnqCb(Ptr<const Packet> p) { if (p->GetSize() > 100) g_enq++; }
static void DropCb(Ptr<const Packet> p) { if (p->GetSize() > 100) g_drops++; }

static Ptr<Queue<Packet>> DevQueue(Ptr<NetDevice> d)
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
// leave the router on this device, and drops on the router are filtered to
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
uint64_t RxStart(uint32_t i) { return g_rxStart[i]; }
uint64_t Rto(uint32_t i) { return g_rto[i]; }
uint64_t Rec(uint32_t i) { return g_rec[i]; }
uint64_t Retx(uint32_t i) { return g_retx[i]; }
uint32_t SeriesLen() { return g_qSeries.size(); }
uint32_t CwndAt(uint32_t i, uint32_t k) { return g_cwndSeries[i][k]; }
uint32_t QAt(uint32_t k) { return g_qSeries[k]; }

// ---- diagnostic controller variants (not ns-3 as released) ----------------

// Read TcpLp's private state flag (standard explicit-instantiation access).
template <typename Tag, typename Tag::type M>
struct Rob { friend typename Tag::type get(Tag) { return M; } };
struct LpFlag { typedef uint32_t TcpLp::*type; friend type get(LpFlag); };
template struct Rob<LpFlag, &TcpLp::m_flag>;
static const uint32_t kLpWithinInference = (1 << 4);  // TcpLp::LP_WITHIN_INF

// TcpLp suppresses growth within the inference time-out only in congestion
// avoidance; Linux tcp_lp suppresses tcp_reno_cong_avoid, i.e. slow start too.
class TcpLpNoGrowthInInference : public TcpLp
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::TlvalTcpLpNoGrowthInInference")
                                .SetParent<TcpLp>()
                                .AddConstructor<TcpLpNoGrowthInInference>()
                                .SetGroupName("Internet");
        return tid;
    }
    TcpLpNoGrowthInInference() : TcpLp() {}
    TcpLpNoGrowthInInference(const TcpLpNoGrowthInInference& o) : TcpLp(o) {}
    std::string GetName() const override { return "TlvalTcpLpNoGrowthInInference"; }
    Ptr<TcpCongestionOps> Fork() override { return CopyObject<TcpLpNoGrowthInInference>(this); }
    void IncreaseWindow(Ptr<TcpSocketState> tcb, uint32_t segmentsAcked) override
    {
        if ((this->*get(LpFlag())) & kLpWithinInference) return;
        TcpLp::IncreaseWindow(tcb, segmentsAcked);
    }
};

// ns-3.44 TcpLedbat caps cwnd at (HighTxMark - LastAckedSeq) + acked, and
// LastAckedSeq is already the new ACK: the cap is the flight before the ACK,
// so the window cannot grow in congestion avoidance.  ns-3.47 caps at
// flight before the ACK + AllowedIncrease (1) MSS.  Shift LastAckedSeq back by
// one MSS around the call to get that cap from the 3.44 code.
class TcpLedbatCap : public TcpLedbat
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::TlvalTcpLedbatCap")
                                .SetParent<TcpLedbat>()
                                .AddConstructor<TcpLedbatCap>()
                                .SetGroupName("Internet");
        return tid;
    }
    TcpLedbatCap() : TcpLedbat() {}
    TcpLedbatCap(const TcpLedbatCap& o) : TcpLedbat(o) {}
    std::string GetName() const override { return "TlvalTcpLedbatCap"; }
    Ptr<TcpCongestionOps> Fork() override { return CopyObject<TcpLedbatCap>(this); }
  protected:
    void CongestionAvoidance(Ptr<TcpSocketState> tcb, uint32_t segmentsAcked) override
    {
        SequenceNumber32 saved = tcb->m_lastAckedSeq;
        tcb->m_lastAckedSeq = saved - tcb->m_segmentSize;
        TcpLedbat::CongestionAvoidance(tcb, segmentsAcked);
        tcb->m_lastAckedSeq = saved;
    }
};

void RegisterVariants()
{
    TcpLpNoGrowthInInference::GetTypeId();
    TcpLedbatCap::GetTypeId();
}

} // namespace tlval
"""


def ns3_case(ns, tl, case):
    """Build, run and measure one ns-3 case (ns imported, helpers defined)."""
    db = dumbbell(case["dumbbell"])
    duration = float(case["duration"])
    window_start = float(case["window_start"])
    tl.Reset()

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
    C("ns3::TcpL4Protocol::RecoveryType",
      ns.TypeIdValue(ns.TypeId.LookupByName(RECOVERY[case["recovery"]])))

    n = len(case["ccs"])
    senders = ns.NodeContainer()
    senders.Create(n)
    others = ns.NodeContainer()
    others.Create(2)
    router, rx = others.Get(0), others.Get(1)
    ns.InternetStackHelper().InstallAll()
    override = case.get("cc_override", {})
    for i, cc in enumerate(case["ccs"]):
        node = senders.Get(i)
        ns.Config.Set(f"/NodeList/{node.GetId()}/$ns3::TcpL4Protocol/SocketType",
                      ns.TypeIdValue(ns.TypeId.LookupByName(override.get(cc, NS3_CC[cc]))))

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
    drops = int(tl.Drops()) - int(tl.DropsStart())
    arrived = (int(tl.Enq()) - int(tl.EnqStart())) + drops
    out = {
        "tool": "ns-3",
        "ns3_version": importlib.metadata.version("ns3"),
        "wall_seconds": wall,
        "goodput_bps": goodput,
        "jain": jain(goodput),
        "mean_queue_packets": (float(tl.Area()) - float(tl.AreaStart())) / win,
        "arrived": arrived,
        "drops": drops,
        "drops_whole_run": int(tl.Drops()),
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


def ns3_batch_worker(specs):
    """Subprocess body: import ns-3 once, run the cases, one JSON line each."""
    # The ns3 wheel finds its shared libraries by globbing the current
    # directory recursively: run from a fresh empty directory.
    os.chdir(tempfile.mkdtemp(prefix="validate_ns3_"))
    from ns import ns  # slow (~11 s)

    ns.cppyy.cppdef(NS3_CPP)
    tl = ns.cppyy.gbl.tlval
    tl.RegisterVariants()
    for spec in specs:
        res = ns3_case(ns, tl, spec)
        print(json.dumps({"key": spec["key"], "result": res}), flush=True)


def run_ns3_batches(specs, jobs, isolated, on_result):
    """Run ns-3 specs in worker subprocesses; call on_result(spec, result)."""
    if isolated:
        batches = [[s] for s in specs]
    else:
        batches = [specs[i::jobs] for i in range(min(jobs, len(specs)))]
    by_key = {s["key"]: s for s in specs}
    lock = threading.Lock()
    errors = []
    pending = list(batches)

    def worker():
        while True:
            with lock:
                if not pending:
                    return
                batch = pending.pop(0)
            err = tempfile.TemporaryFile(mode="w+")
            p = subprocess.Popen([sys.executable, str(Path(__file__).resolve()),
                                  "--ns3-batch", json.dumps(batch)],
                                 stdout=subprocess.PIPE, stderr=err, text=True,
                                 cwd=tempfile.gettempdir())
            got = 0
            for line in p.stdout:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                msg = json.loads(line)
                got += 1
                with lock:
                    on_result(by_key[msg["key"]], msg["result"])
            p.wait()
            if p.returncode != 0 or got != len(batch):
                err.seek(0)
                errors.append(f"ns-3 worker failed (exit {p.returncode}) after {got}/{len(batch)} "
                              f"cases:\n{err.read()[-4000:]}")

    threads = [threading.Thread(target=worker) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError("\n".join(errors))


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


def cell(runs, get, fmt):
    """'a \\| b \\| c' for one quantity over several runs (None: n/a)."""
    vals = []
    for r in runs:
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
    """rows: (case, [torrentlab, ns-3 prr, ns-3 classic])."""
    L = [f"### {db['title']}", ""]
    L.append(f"Bottleneck {db['capacity_mbps']:g} Mbit/s, one-way delay "
             f"{db['one_way_delay_ms']:g} ms, buffer {db['buffer_text']}.")
    L.append("")
    L.append("Each cell is **torrentlab \\| ns-3 PRR (default) \\| ns-3 classic recovery**. "
             "Goodput in Mbit/s over the window. Share: the first (non-cubic) flow's "
             "fraction of the total goodput.")
    L.append("")
    L.append("| case | flow 1 goodput | cubic goodput | share of flow 1 | Jain index |")
    L.append("|---|---|---|---|---|")
    for case, runs in rows:
        two = len(case["ccs"]) == 2
        g1 = cell(runs, lambda r: r["goodput_bps"][0], mbps)
        g2 = cell(runs, lambda r: r["goodput_bps"][1], mbps) if two else "-"
        sh = cell(runs, share, pct) if two else "-"
        ji = cell(runs, lambda r: r["jain"], f3) if two else "-"
        L.append(f"| {case['name']} | {g1} | {g2} | {sh} | {ji} |")
    L.append("")
    L.append("Same layout. Total goodput in Mbit/s. Mean queue: time-averaged packets waiting "
             "in the bottleneck queue over the window. Drops: data packets dropped at the "
             "bottleneck in the window (loss rate = drops / arrivals). RTOs, fast recoveries "
             "and retransmitted segments: per flow (flow 1 + cubic), whole run.")
    L.append("")
    L.append("| case | total goodput | mean queue (packets) | drops (loss rate) | RTOs "
             "| fast recoveries | retransmitted segments |")
    L.append("|---|---|---|---|---|---|---|")
    for case, runs in rows:
        tot = cell(runs, lambda r: sum(r["goodput_bps"]), mbps)
        mq = cell(runs, lambda r: r["mean_queue_packets"], f2)
        lo = cell(runs, loss, str)
        rto = cell(runs, per_flow("timeouts"), str)
        fr = cell(runs, per_flow("fast_retransmits"), str)
        rt = cell(runs, per_flow("retransmitted"), str)
        L.append(f"| {case['name']} | {tot} | {mq} | {lo} | {rto} | {fr} | {rt} |")
    L.append("")
    return "\n".join(L)


def diagnostics_table(R, diag):
    """R[(db, case name)] -> dict of runs; diag: DIAGNOSTICS key."""
    cc = DIAGNOSTICS[diag]["cc"]
    L = ["| case | goodput of the " + cc + " flow (Mbit/s) | share of the " + cc
         + " flow | mean queue (packets) |", "|---|---|---|---|"]
    for db in DUMBBELLS:
        for name in (f"{cc} alone", f"{cc} vs cubic"):
            runs = R.get((db["key"], name))
            if not runs or diag not in runs:
                continue
            rr = [runs["torrentlab"], runs["classic"], runs[diag]]
            g = cell(rr, lambda r: r["goodput_bps"][0], mbps)
            sh = cell(rr, share, pct) if name.endswith("cubic") else "-"
            mq = cell(rr, lambda r: r["mean_queue_packets"], f2)
            L.append(f"| {db['key']}: {name} | {g} | {sh} | {mq} |")
    return "\n".join(L)


def reflow(md, width=79):
    """Re-wrap plain paragraphs and list items (the f-string substitutions
    leave ragged lines); tables, headings and code blocks stay as they are."""
    import textwrap

    out, para, in_code = [], [], False

    def flush():
        if not para:
            return
        items, cur = [], None
        for line in para:
            if line.startswith("- "):
                cur = [line[2:].strip()]
                items.append(cur)
            elif cur is not None and line.startswith("  "):
                cur.append(line.strip())
            else:
                cur = None
                items.append([line.strip(), None])
        # a paragraph: consecutive non-list lines joined
        merged, buf = [], []
        for it in items:
            if it[-1] is None:
                buf.append(it[0])
            else:
                if buf:
                    merged.append(("p", " ".join(buf)))
                    buf = []
                merged.append(("li", " ".join(it)))
        if buf:
            merged.append(("p", " ".join(buf)))
        for kind, text in merged:
            if kind == "p":
                out.extend(textwrap.wrap(text, width, break_long_words=False,
                                         break_on_hyphens=False))
            else:
                out.extend(textwrap.wrap(text, width, initial_indent="- ",
                                         subsequent_indent="  ", break_long_words=False,
                                         break_on_hyphens=False))
        para.clear()

    for line in md.split("\n"):
        if line.startswith("```"):
            flush()
            in_code = not in_code
            out.append(line)
        elif in_code or not line.strip() or line.startswith(("|", "#")):
            flush()
            out.append(line)
        else:
            para.append(line)
    flush()
    return "\n".join(out)


def render(results, meta):
    """results: list of (case, {"torrentlab": r, "prr": r, "classic": r, diag: r, ...})."""
    by_db = {}
    for case, runs in results:
        by_db.setdefault(case["dumbbell"], []).append(
            (case, [runs["torrentlab"], runs.get("prr"), runs.get("classic")]))
    tables = "\n".join(results_tables(dumbbell(k), by_db[k]) for k in by_db)
    R = {(c["dumbbell"], c["name"]): runs for c, runs in results}
    return reflow(page_text(meta, tables, R))


def page_text(meta, tables, R):
    m = meta
    return f"""# Validation against ns-3

This page compares torrentlab's TCP congestion controllers with the
implementations in [ns-3](https://www.nsnam.org/) on the same dumbbell. It is
evidence, not a pass/fail test: nothing on either side was tuned to make the
numbers agree. Where they disagree, [Differences and why](#differences-and-why)
says what we found out about the cause, and what we could not explain.

- Measured on {m['date']} with ns-3 {m['ns3_version']} (PyPI wheel `ns3`) and
  the installed torrentlab {m['torrentlab_version']} (repository at git `{m['git']}`).
- Command: `{m['command']}`: {m['duration']:g} simulated seconds per case,
  measurement window [{m['window_start']:g} s, {m['duration']:g} s]. Wall time
  {m['wall']:.0f} s on {m['cpus']} CPUs, most of it ns-3.
- `python3 bench/validate_ns3.py --quick` runs 20 s per case (window from 5 s);
  `--print` prints this page instead of writing `docs/validation.md`;
  `--json FILE` also saves every number. The ns-3 runs share `--jobs` worker
  processes (one ~11 s import each); `--isolated` gives every ns-3 run its own
  process and produces the same numbers.
- Besides the two ns-3 columns (PRR and classic recovery), eight diagnostic
  ns-3 runs test two explanations (sections 2 and 3 below); they are not ns-3 as
  released.

## What is compared

```
sender 1 --+
           +-- router --[drop-tail queue]-- bottleneck link --> receiver
sender 2 --+             (capacity, one-way delay 25 ms)
```

One or two long-lived flows, each from its own sender host, all starting at
t = 0 and sending for the whole run. Only the bottleneck queue fills. ACKs
return on an uncongested path. RTT = 2 x one-way delay = 50 ms plus queueing.

**Cases.** For each dumbbell: each controller alone (newreno, cubic, vegas, lp,
ledbat, nice), and each of newreno, vegas, lp, ledbat and nice against one
cubic flow. TCP Nice has no ns-3 implementation. It runs in torrentlab only,
and its ns-3 cells say "n/a".

**Settings common to both tools.** MSS 1448 bytes with RFC 7323 timestamps,
so a full segment is a 1500-byte IP packet. SACK on. Every segment is ACKed
(no delayed ACKs). Initial window 10 segments. RTO = max(200 ms, SRTT +
max(1 ms, 4 RTTVAR)), initial RTO 1 s. The send and receive buffers never limit
the window. Each application always has data to send. Every controller keeps
its default parameters, except that torrentlab's LEDBAT target is set to ns-3's
100 ms (torrentlab's default is 25 ms).

**Measurements.** Everything except the last three columns is measured over
the window [{m['window_start']:g} s, {m['duration']:g} s], which skips slow start.
- Per-flow goodput: in-order payload bytes delivered to the receiving
  application in the window x 8 / window length. In torrentlab this is
  `flows.window_rate_bps` with `metrics.summary_start`. In ns-3 it is
  `PacketSink::GetTotalRx()` sampled at the window start and at the end.
- Jain's index over the flows' goodputs.
- Mean queue: the time average of the number of packets waiting in the
  bottleneck queue, not counting the one being transmitted. In ns-3 the device
  queue's `PacketsInQueue` trace is integrated exactly.
- Drops: data packets dropped at the bottleneck. Loss rate = drops / packets
  that arrived at the bottleneck.
- RTOs, fast recoveries and retransmitted segments are counted per flow over
  the whole run. In ns-3: RTO expiries are the doublings of the socket's `RTO`
  trace, fast recoveries are entries into `CA_RECOVERY` (`CongState` trace), and
  retransmissions come from the `Retransmission` trace.

| | torrentlab | ns-3 |
|---|---|---|
| topology | built-in dumbbell: a sender host per flow, core delay, receiver downlink = bottleneck | senders -(1 Gbit/s, 0 ms)- router -(bottleneck, 25 ms)- receiver, all point-to-point links; the whole one-way delay is on the bottleneck link |
| bottleneck queue | drop-tail; the limit counts waiting packets. A: `"40 packets"`. B: `"1 s"`, a byte limit of 125,000 bytes = 83 packets | the router's `PointToPointNetDevice` queue (`DropTailQueue<Packet>`, packet limit; A: 40, B: 83). Traffic control is uninstalled (`TrafficControlHelper::Uninstall`, and the script checks it), so the device queue is the only queue. A packet that finds it full is dropped in the traffic-control layer (`TcDrop`) |
| packet on the wire | 1500 bytes | 1502 bytes (PPP header): the bottleneck carries 0.13 % fewer packets per second |
| ACK path | unlimited | receiver-to-router direction of the bottleneck link at 1 Gbit/s, same 25 ms |
| TCP | `preset = "rfc"`, `initial_window = 10`, `min_rto = "200 ms"`, `delayed_ack = false`, `sack = true`, `timestamps = true` | `SegmentSize` 1448, `DelAckCount` 1, `InitialCwnd` 10, `MinRto` 200 ms, `Sack`, `Timestamp` and `WindowScaling` on, `SndBufSize`/`RcvBufSize` 4 MiB |
| loss recovery | RFC 6675 SACK scoreboard; on entry cwnd = ssthresh; sends while cwnd - pipe >= 1 MSS (no PRR) | run twice: the default `TcpPrrRecovery` (RFC 6937 PRR), and `TcpClassicRecovery`, which with SACK keeps cwnd = ssthresh and sends by RFC 6675 pipe, like torrentlab. Limited transmit on (default) |
| controllers | `newreno`, `cubic`, `vegas`, `lp`, `ledbat` (`[ledbat] target = "100 ms"`), `nice` | `TcpNewReno`, `TcpCubic`, `TcpVegas`, `TcpLp`, `TcpLedbat` with default attributes, set per sender node (`/NodeList/<id>/$ns3::TcpL4Protocol/SocketType`) |
| connection set-up | none: data flows from t = 0 | three-way handshake first (one RTT) |
| timestamps | exact simulated time (ns); on the wire, microsecond ticks | millisecond ticks (`TcpOptionTS`) |

## Results

{tables}
## Differences and why

{differences_text(R, m)}
"""


class _Lookup:
    """Formatted numbers from the results, for the text below."""

    def __init__(self, R):
        self.R = R

    def run(self, db, name, tool):
        return self.R[(db, name)].get(tool)

    def g(self, db, name, tool, i=0):  # goodput, Mbit/s
        r = self.run(db, name, tool)
        return "n/a" if r is None else f"{r['goodput_bps'][i] / 1e6:.2f}"

    def sh(self, db, name, tool):  # share of flow 1
        r = self.run(db, name, tool)
        return "n/a" if r is None else f"{100 * share(r):.1f} %"

    def q(self, db, name, tool):  # mean queue
        r = self.run(db, name, tool)
        return "n/a" if r is None else f"{r['mean_queue_packets']:.1f}"

    def d(self, db, name, tool):  # drops in the window
        r = self.run(db, name, tool)
        return "n/a" if r is None else f"{r['drops']}"

    def dw(self, db, name, tool):  # drops, whole run
        r = self.run(db, name, tool)
        return "n/a" if r is None else f"{r['drops_whole_run']}"

    def rx(self, db, name, tool, i=0):  # retransmitted segments, whole run
        r = self.run(db, name, tool)
        return "n/a" if r is None else f"{r['retransmitted'][i]}"


def differences_text(R, m):
    x = _Lookup(R)
    A, B = "A", "B"
    T, P, K = "torrentlab", "prr", "classic"
    diag_lp = diagnostics_table(R, "lp-linux")
    diag_ledbat = diagnostics_table(R, "ledbat-cap")
    return f"""Facts about ns-3 below were checked in the ns-3.44 sources
(`src/internet/model/tcp-*.cc` at tag `ns-3.44`), through `ns.TypeId`
attribute lookups in the installed wheel, or with traces (cwnd sampled every
10-100 ms, drop and state-change times) from extra runs of the same
scenarios. Time-stamped trace observations are from 60-s runs. "Classic" and
"PRR" are the two ns-3 columns.

**Where the tools agree.** NewReno alone matches closely in both dumbbells:
goodput {x.g(A, 'newreno alone', T)} vs {x.g(A, 'newreno alone', P)} Mbit/s, mean
queue {x.q(A, 'newreno alone', T)} vs {x.q(A, 'newreno alone', P)} packets, drops
{x.d(A, 'newreno alone', T)} vs {x.d(A, 'newreno alone', P)} in A; mean queue
{x.q(B, 'newreno alone', T)} vs {x.q(B, 'newreno alone', P)} packets in B. Every
controller except LP (and Nice in B) fills the link in both tools. The total goodput
differs by about 0.13 %, as expected from ns-3's 2-byte PPP header. Vegas alone
in B holds the same queue ({x.q(B, 'vegas alone', T)} vs {x.q(B, 'vegas alone', P)}
packets). LEDBAT against CUBIC in B yields in both tools ({x.sh(B, 'ledbat vs cubic', T)}
vs {x.sh(B, 'ledbat vs cubic', P)} / {x.sh(B, 'ledbat vs cubic', K)}). With classic
recovery, CUBIC alone in A ({x.q(A, 'cubic alone', T)} vs {x.q(A, 'cubic alone', K)}
packets of queue, {x.d(A, 'cubic alone', T)} vs {x.d(A, 'cubic alone', K)} drops) and
LP against CUBIC ({x.sh(A, 'lp vs cubic', T)} vs {x.sh(A, 'lp vs cubic', K)} in A,
{x.sh(B, 'lp vs cubic', T)} vs {x.sh(B, 'lp vs cubic', K)} in B) are also close.

### 1. ns-3's PRR counts delivered data twice with SACK (ns-3 issue, fixed after 3.48)

In ns-3.44 `TcpPrrRecovery::DoRecovery` adds one MSS to `DeliveredData` for
every duplicate ACK. But with SACK, `TcpSocketBase` already passes the newly
SACKed bytes. So each SACKed segment counts twice. PRR then sends about
2 x ssthresh / RecoverFS segments per delivered segment:

- For CUBIC (beta 0.7) that is about 1.4: the flight *grows* during recovery.
- For NewReno (beta 0.5) it is about 1: the flight does not shrink until
  recovery ends.

ns-3-dev fixed this on 2026-07-09 (commit 05c9099 "Fix PRR DeliveredData
double-count with SACK enabled", issue #1350). No release tag contains the
fix yet (newest tag checked: ns-3.48).

A trace of CUBIC alone in A with PRR shows the effect. Recovery starts at
24.830 s with cwnd 83 packets. cwnd then rises to 89 packets, and 7 more
packets are dropped between 24.833 s and 24.850 s. Recovery ends at 24.929 s,
a second one starts at 24.935 s, and ssthresh goes 58 -> 42. The queue
empties by 25.0 s. All nine loss episodes after slow start in that run look
the same: two cuts within 0.2 s, from about 83 to 42 packets. So ns-3 with PRR
shows:

- a lower mean queue and more drops for CUBIC alone:
  {x.q(A, 'cubic alone', P)} packets and {x.d(A, 'cubic alone', P)} drops, against
  {x.q(A, 'cubic alone', K)} and {x.d(A, 'cubic alone', K)} with classic recovery;
- NewReno *beating* CUBIC in A: {x.sh(A, 'newreno vs cubic', P)} NewReno share with
  PRR, {x.sh(A, 'newreno vs cubic', K)} with classic, {x.sh(A, 'newreno vs cubic', T)}
  in torrentlab;
- more room for the low-priority flows: LP gets {x.sh(B, 'lp vs cubic', P)} of B
  with PRR and {x.sh(B, 'lp vs cubic', K)} with classic.

With SACK, `TcpClassicRecovery` keeps cwnd = ssthresh (only the traced
`m_cWndInfl` is inflated) and sends by RFC 6675 pipe. That is what torrentlab
does. So the classic column is the like-for-like comparison for torrentlab's
recovery, and the PRR column shows ns-3 as shipped. torrentlab has no PRR.

### 2. ns-3.44 TcpLedbat cannot grow its window in congestion avoidance (fixed in ns-3.47)

`TcpLedbat::CongestionAvoidance` caps the new window at `(HighTxMark -
LastAckedSeq) + segmentsAcked x MSS`. But `TcpSocketBase::ProcessAck` has
already set `LastAckedSeq` to the new ACK. The cap is therefore the flight
*before* the ACK, and the window can only stay where it is or shrink. ns-3.47
replaced the cap with flight + `AllowedIncrease` (1) MSS (commit 609503f "tcp:
fix LEDBAT congestion window calculation").

Traces confirm it:

- In A the ns-3 LEDBAT window is 82 packets from t = 1 s (slow start, one loss,
  halving) to the end. 82 is just what the 41.7-packet path plus the 40-packet
  buffer holds, hence a mean queue of {x.q(A, 'ledbat alone', P)} packets and no
  drops in the window. torrentlab: {x.q(A, 'ledbat alone', T)} packets, {x.d(A, 'ledbat alone', T)} drops.
- In B the ns-3 window shrinks after slow start to 7 packets at about 8 s, and
  stays there: queue {x.q(B, 'ledbat alone', P)} packets, far below the
  100-ms target (8.3 packets at 1 Mbit/s).

The diagnostic variant below runs ns-3.44's TcpLedbat with the ns-3.47 cap:
`LastAckedSeq` is moved back by one MSS around the call. That removes most of
the gap. A's mean queue becomes {x.q(A, 'ledbat alone', 'ledbat-cap')} packets with
{x.d(A, 'ledbat alone', 'ledbat-cap')} drops, against torrentlab's
{x.q(A, 'ledbat alone', T)} and {x.d(A, 'ledbat alone', T)}.

{diag_ledbat}

(Cells: torrentlab \\| ns-3 classic \\| ns-3 classic with the capped TcpLedbat.)

Why LEDBAT behaves like a loss-based flow in A: at 10 Mbit/s the 40-packet
buffer holds at most 48 ms of queueing, below the 100-ms target. LEDBAT can
never reach its target there. It grows (by 0.5-1 packet per RTT) until a
loss and halves, much like NewReno. That is why it takes
{x.sh(A, 'ledbat vs cubic', T)} against CUBIC in torrentlab (NewReno:
{x.sh(A, 'newreno vs cubic', T)}).

What remains is {x.sh(A, 'ledbat vs cubic', T)} in torrentlab against
{x.sh(A, 'ledbat vs cubic', 'ledbat-cap')} with the capped ns-3 LEDBAT. Other
differences that may contribute, none of them tested separately:

- ns-3's current delay is the minimum of the last 3 one-way delays. The noise
  filter drops its oldest entry once it reaches `NoiseFilterLen` = 4.
  torrentlab uses the latest sample.
- ns-3's one-way delays are in 1-ms ticks.
- ns-3's per-ACK increase is truncated to whole bytes.
- ns-3's `MinCwnd` is 2 packets; torrentlab's is 1.

The base delay is *not* a difference in these runs. ns-3 starts a new
base-history bucket only when more than 60 s have passed since the last one,
so within a 60-s run its base delay is the minimum ever seen, like
torrentlab's default.

In B, torrentlab's LEDBAT mean queue ({x.q(B, 'ledbat alone', T)} packets) is
above the target (8.3 packets). The window [10 s, 60 s] includes the slow drain
after the slow-start overshoot: at 10 s the window is 46 packets with 550 ms of
estimated queueing delay. From about 18 s on, the estimate oscillates between
94 and 106 ms.

### 3. TCP-LP: Linux stops all growth in the inference time-out, ns-3 only congestion avoidance

torrentlab follows Linux `tcp_lp.c`. Within the inference time-out (3 RTT
after an early congestion indication) `tcp_lp_cong_avoid` skips
`tcp_reno_cong_avoid`, which includes slow start. ns-3's `TcpLp` overrides only
`CongestionAvoidance`. An early indication never changes ssthresh (in Linux,
ns-3 and torrentlab), and an LP flow alone never loses a packet here. So an LP
flow is in slow start all the time, and in ns-3 its window keeps doubling
straight after every indication.

torrentlab's trace in A shows the consequence. After a second indication
within the time-out, the window drops to 1 packet and stays there for
0.3-0.5 s, i.e. 6-10 RTTs (for example from 0.56 s to 0.88 s and from 1.28 s to
1.68 s). The reason is in the algorithm. Each indication resets the range to
[sOWD, 2 sOWD]. The next sample at the base delay b pulls the minimum back to
b. So as long as the smoothed delay is more than about 0.26 b above b
(7 ms in A), every new sample is another indication. That sets the window to 1
again and restarts the time-out. With a window of 1 there is one sample per
RTT, and sOWD loses only 1/8 of its excess per sample. ns-3's window does not
sit at 1: it grows within the time-out, so samples come faster.

The diagnostic variant is ns-3.44's TcpLp that also skips slow start within
the time-out. It reads TcpLp's own `LP_WITHIN_INF` flag. It moves ns-3 from
{x.g(A, 'lp alone', K)} to {x.g(A, 'lp alone', 'lp-linux')} Mbit/s in A (torrentlab:
{x.g(A, 'lp alone', T)}). In B it moves from {x.g(B, 'lp alone', K)} to
{x.g(B, 'lp alone', 'lp-linux')} (torrentlab: {x.g(B, 'lp alone', T)}):

{diag_lp}

(Cells: torrentlab \\| ns-3 classic \\| ns-3 classic with the Linux-like TcpLp.)

The rest of the gap in A (torrentlab {x.g(A, 'lp alone', T)} against
{x.g(A, 'lp alone', 'lp-linux')} Mbit/s) is not explained. Candidates:

- ns-3's one-way delays are in 1-ms ticks, about one packet time at 10 Mbit/s.
- The very first sample: ns-3 tests "within threshold" with `<=`, Linux and
  torrentlab with `<`. So Linux and torrentlab take the first sample, where
  min = max, as an indication, and ns-3 does not.
- ns-3 also calls `PktsAcked` on duplicate ACKs.

A poor LP alone is expected from the algorithm in both tools: it reacts to the
queue it builds itself.

### 4. Vegas: ns-3 computes diff differently, from the smoothed RTT

Linux `tcp_vegas.c`, and torrentlab with it, computes
`diff = cwnd (rtt - baseRTT) / baseRTT`. That is the expected-minus-actual rate
times the *measured* RTT. ns-3's `TcpVegas` computes
`diff = cwnd - floor(cwnd baseRtt / minRtt)` = cwnd (rtt - base) / rtt, the
rate difference times the *base* RTT (as in the Vegas paper), rounded up to an
integer. The two are about equal for a small queue. They differ by the factor
rtt/base when another flow fills the buffer:

- Against CUBIC in A the RTT is 70-100 ms for a 50-ms base. The ns-3 Vegas
  window stays at exactly 8 packets for the whole window (traced): 8 (1 -
  50/98) < 4 = beta, so it never decreases. torrentlab's Vegas oscillates
  between 4 and 6 packets.
- Hence the shares: {x.sh(A, 'vegas vs cubic', T)} in torrentlab,
  {x.sh(A, 'vegas vs cubic', K)} (classic) and {x.sh(A, 'vegas vs cubic', P)} (PRR) in
  ns-3. In B: {x.sh(B, 'vegas vs cubic', T)} against {x.sh(B, 'vegas vs cubic', K)} /
  {x.sh(B, 'vegas vs cubic', P)}.
- Alone in A the rounding holds ns-3's queue lower: {x.q(A, 'vegas alone', P)}
  against {x.q(A, 'vegas alone', T)} packets.

Second, ns-3.44 `TcpSocketBase` passes the *smoothed* RTT (`m_tcb->m_srtt`) as
the `rtt` argument of `PktsAcked`. ns-3 Vegas's baseRtt and per-round minimum
are therefore minima of SRTT. In slow start SRTT carries the queue left by the
previous round's burst. ns-3 Vegas leaves slow start at cwnd 35 packets after
0.2 s, with no loss (traced). torrentlab's Vegas, like Linux, takes the
minimum raw RTT of the round. In slow start the first packet of each burst
still finds the queue empty, so diff stays near 0. It keeps doubling to 160
packets and leaves slow start by a loss at 0.31 s:
{x.rx(A, 'vegas alone', T)} retransmissions against {x.rx(A, 'vegas alone', P)} in ns-3.
Also, on a loss ns-3 Vegas sets ssthresh = max(min(ssthresh, cwnd - 1 MSS),
2 MSS) (its own `GetSsThresh`), while Linux and torrentlab halve. That matters
only when the Vegas flow itself loses packets.

### 5. CUBIC details

- ns-3's `TcpCubic` has HyStart on by default (attributes checked: `HyStart`
  true, `HyStartLowWindow` 16, `HyStartDetect` BOTH). torrentlab models CUBIC
  without HyStart. This changes slow start only, which ends before the
  measurement window.
- In A, ns-3's CUBIC still overshoots in slow start (to 123 packets), has two
  recoveries and then an RTO at about 0.84 s (traced, both recovery types);
  torrentlab has no RTO.
- ns-3's CUBIC is the Linux `bictcp_update` form: ACK counting with `cnt`, an
  integer target, `CubicDelta`, `CntClamp`, and the Reno-friendly estimate by
  ACK counting. torrentlab implements RFC 9438 directly: W_cubic(t + RTT),
  clamped to 1.5 cwnd, and W_est.
- In B, ns-3 with classic recovery has RTO episodes that torrentlab does not
  have: {x.run(B, 'cubic alone', K)['timeouts'][0]} RTOs for CUBIC alone, and
  goodput {x.g(B, 'cubic alone', K)} against {x.g(B, 'cubic alone', T)} Mbit/s. In
  one traced episode, recovery starts at 24.085 s (cwnd 99 -> 69). The RTO
  fires at 25.136 s, still in recovery. That is about one RTT with an 83-packet
  (1 s) queue, so the timer apparently expired just before the retransmission
  could be ACKed. We did not find out why torrentlab's timer does not expire
  in the same situation.

### 6. Loss recovery and retransmission counts

When an RTO fires, both tools resend every unSACKed segment. With a 1-s
buffer, many of those are still queued, not lost. So in B the retransmissions
exceed the drops in both tools. For NewReno alone in B that is {x.rx(B, 'newreno alone', T)} retransmissions for
{x.dw(B, 'newreno alone', T)} drops in torrentlab, and {x.rx(B, 'newreno alone', P)}
for {x.dw(B, 'newreno alone', P)} in ns-3 (whole run; RTOs:
{x.run(B, 'newreno alone', T)['timeouts'][0]} and {x.run(B, 'newreno alone', P)['timeouts'][0]}).

### 7. TCP Nice (torrentlab only)

ns-3 has no Nice, so nothing checks these numbers. Nice alone in A behaves
exactly like Vegas alone. Against CUBIC it gives way almost completely
({x.sh(A, 'nice vs cubic', T)} in A, {x.sh(B, 'nice vs cubic', T)} in B), as designed.

Alone in B it does not fill the link: {x.g(B, 'nice alone', T)} Mbit/s against
{x.g(B, 'vegas alone', T)} for Vegas. Nice halves when more than half the ACKs
of a round see RTT > min + 0.1 (max - min). At 1 Mbit/s each queued packet adds
12 ms to the RTT, so Nice trips this threshold with its own Vegas queue.

A trace (every 100 ms, 20-23 s) shows a regular cycle of about 0.6 s. The
window grows from 2 to 8 packets by the Vegas rules, then halves in two
consecutive rounds (8 -> 4 -> 2), while the smoothed RTT moves between 69 and
89 ms. At 2-4 packets the window is below the path's 4.2-packet
bandwidth-delay product, so the link idles. This follows from the rule as
implemented. Whether it is the intended behaviour of Nice on so small a path
needs a reference we do not have.

### 8. Smaller modelling differences

- ns-3 opens each connection with a three-way handshake; torrentlab sends
  from t = 0.
- ns-3 timestamps tick in milliseconds.
- ns-3 frames packets with PPP (1502 bytes on the wire).
- ns-3's controllers get SRTT, not the latest RTT sample, in `PktsAcked`. This
  matters for Vegas and CUBIC's HyStart/`delayMin`; LP and LEDBAT use it only
  as a validity flag.

None of these is large enough to explain the differences above.

### Nothing found that looks like a torrentlab bug

Every large difference traced to an ns-3.44 defect (PRR, LEDBAT) or to
torrentlab following Linux where ns-3 does not (LP, Vegas). The unexplained
remainders are the ones listed in sections 2, 3 and 5, and Nice alone at
1 Mbit/s."""


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="20 s per case, window from 5 s")
    p.add_argument("--print", action="store_true",
                   help="print the page instead of writing docs/validation.md")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="ns-3 worker subprocesses in parallel (default: CPU count)")
    p.add_argument("--isolated", action="store_true",
                   help="one ns-3 subprocess per case (slower; same numbers)")
    p.add_argument("--json", metavar="FILE", help="also write every result as JSON")
    p.add_argument("--ns3-batch", metavar="JSON", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def ns3_specs(all_cases, duration, window_start):
    specs = []
    for i, c in enumerate(all_cases):
        if not all(NS3_CC[cc] for cc in c["ccs"]):
            continue
        for rec in ("prr", "classic"):
            specs.append(dict(c, key=f"{i}/{rec}", recovery=rec,
                              duration=duration, window_start=window_start))
        for diag, d in DIAGNOSTICS.items():
            if d["cc"] in c["ccs"]:
                specs.append(dict(c, key=f"{i}/{diag}", recovery="classic",
                                  cc_override={d["cc"]: d["type"]},
                                  duration=duration, window_start=window_start))
    return specs


def main(argv=None):
    args = parse_args(argv)
    if args.ns3_batch:
        ns3_batch_worker(json.loads(args.ns3_batch))
        return

    duration, window_start = (20.0, 5.0) if args.quick else (60.0, 10.0)
    t_start = time.perf_counter()
    all_cases = cases()
    runs = [dict() for _ in all_cases]

    log(f"torrentlab: {len(all_cases)} cases, {duration:g} s each")
    for i, c in enumerate(all_cases):
        r = runs[i]["torrentlab"] = run_torrentlab(c, duration, window_start)
        log(f"  [{i + 1}/{len(all_cases)}] {c['dumbbell']} {c['name']}: "
            f"{' + '.join(mbps(g) for g in r['goodput_bps'])} Mbit/s ({r['wall_seconds']:.2f} s)")

    specs = ns3_specs(all_cases, duration, window_start)
    jobs = max(1, min(args.jobs, len(specs)))
    log(f"ns-3: {len(specs)} runs in {len(specs) if args.isolated else jobs} subprocess(es), "
        f"{jobs} at a time (~11 s import each)")
    done = [0]

    def on_result(spec, res):
        i, variant = spec["key"].split("/")
        runs[int(i)][variant] = res
        done[0] += 1
        log(f"  [{done[0]}/{len(specs)}] {spec['dumbbell']} {spec['name']} ({variant}): "
            f"{' + '.join(mbps(g) for g in res['goodput_bps'])} Mbit/s "
            f"(Run {res['wall_seconds']:.2f} s)")

    run_ns3_batches(specs, jobs, args.isolated, on_result)

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
    results = list(zip(all_cases, runs))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"meta": meta, "results": [{"case": c, "runs": r} for c, r in results]}, indent=1))
    page = render(results, meta)
    if args.print:
        print(page)
    else:
        DOC.write_text(page)
        log(f"wrote {DOC}")
    log(f"total {meta['wall']:.0f} s")


if __name__ == "__main__":
    main()
