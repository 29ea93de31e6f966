"""ns-3 side of the cross-check: runs in worker subprocesses (--ns3-batch).

The workers re-invoke ``bench/validate_ns3.py --ns3-batch JSON``; each chdirs
into a fresh temporary directory before ``from ns import ns`` (the ns3 wheel
globs the current directory for its libraries).
"""

import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .cases import DIAGNOSTICS, MSS, NS3_CC, RECOVERY, dumbbell
from .report import jain

# The entry point the worker subprocesses run (with --ns3-batch).
SCRIPT = Path(__file__).resolve().parent.parent / "validate_ns3.py"

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
            p = subprocess.Popen([sys.executable, str(SCRIPT),
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
