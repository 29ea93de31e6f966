#!/usr/bin/env python3
"""Reference benchmark: an N-flow TCP NewReno dumbbell in ns-3 (PyPI wheel ``ns3``).

Topology (all links point-to-point, PPP framing, MTU 1500)::

    S_0 ──┐  1 Mbit/s, 20 ms, DropTail 100p (both directions)
    S_1 ──┤
    ...   ├── R1 ══════════ R2 ──────────── RX
    S_N-1─┘      100 Mbit/s      100 Gbit/s, 0 ms,
                 --bottleneck-delay-ms   DropTail 1,000,000p
                 DropTail 100p          (effectively unlimited)

* The traffic-control layer is removed: ``Ipv4AddressHelper::Assign`` installs
  a default pfifo_fast root queue disc on every device; right after assigning
  addresses we call ``TrafficControlHelper().Uninstall(devices)`` on every
  device container, so the only queues on the data path are the
  point-to-point device queues (DropTailQueue<Packet>).  The script checks
  that no root queue disc remains on any device.
* TCP: TcpNewReno (classic recovery, i.e. RFC 6582 NewReno fast recovery
  instead of ns-3's default PRR), SegmentSize 1448, timestamps on
  (1448 + 12 B options + 20 TCP + 20 IP = 1500 B IP packets), DelAckCount 1,
  SACK off, MinRto 200 ms, InitialCwnd 10, Snd/RcvBufSize 4 MiB.
* One BulkSendApplication per sender (MaxBytes 0), start t=0, and one
  PacketSink per flow (one port per flow) on RX.  Simulator::Stop at
  --duration.
* "delivered_packets" counts IPv4 packets received at RX's Ipv4L3Protocol
  "Rx" trace whose TCP payload is > 0 bytes (pure ACKs/SYNs excluded,
  retransmissions included), counted in C++ (cppyy.cppdef).
  "delivered_bytes" is the sum of PacketSink::GetTotalRx() (in-order bytes
  handed to the applications; excludes duplicate retransmissions, which
  delivered_packets includes).
* Drop counters (extra JSON keys): with no queue disc, a packet that finds
  its 100-packet device queue full is dropped by the traffic-control layer
  (trace "TcDrop": the device queue is flow-controlled and stopped when full),
  so both TcDrop and the queue's own "Drop" trace are counted, data packets
  only.  bottleneck_drops = at R1, access_drops = at the senders.
* cppyy may print "Failed to materialize symbols" on stderr at import; it is
  harmless.  With --json, stdout carries only the JSON object.

Only ``ns.Simulator.Run()`` is timed as wall_seconds; building the topology
is reported separately as setup_seconds (the ~11 s ``from ns import ns`` is in
neither).
"""

import argparse
import importlib.metadata
import json
import os
import sys
import tempfile
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--flows", type=int, default=100, help="number of senders (default 100)")
    p.add_argument("--duration", type=float, default=60.0,
                   help="simulated seconds (default 60)")
    p.add_argument("--bottleneck-delay-ms", type=float, default=0.0,
                   help="one-way delay of the R1->R2 link in ms (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    return p.parse_args(argv)


CPP_HELPERS = r"""
#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/internet-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/applications-module.h"

namespace tlbench {

static uint64_t g_dataPkts = 0;
static uint64_t g_otherPkts = 0;
static uint64_t g_payloadBytes = 0;
static uint64_t g_bottleneckDrops = 0;
static uint64_t g_accessDrops = 0;

static void
Ipv4RxCb(ns3::Ptr<const ns3::Packet> p, ns3::Ptr<ns3::Ipv4> ipv4, uint32_t iface)
{
    ns3::Ptr<ns3::Packet> c = p->Copy();
    ns3::Ipv4Header ip;
    c->RemoveHeader(ip);
    if (ip.GetProtocol() != 6) { g_otherPkts++; return; }
    ns3::TcpHeader tcp;
    c->RemoveHeader(tcp);
    uint32_t payload = c->GetSize();
    if (payload > 0) { g_dataPkts++; g_payloadBytes += payload; }
    else { g_otherPkts++; }
}

// Data packets (IP size > 100 B) dropped at a node.  With no queue disc the
// drop of a packet arriving at a full 100-packet device queue happens in the
// traffic-control layer ("TcDrop": the device queue is flow-controlled and
// stopped), not in the device queue itself; the queue's own "Drop" trace is
// hooked as well for completeness.
static void BottleneckDropCb(ns3::Ptr<const ns3::Packet> p) { if (p->GetSize() > 100) g_bottleneckDrops++; }
static void AccessDropCb(ns3::Ptr<const ns3::Packet> p) { if (p->GetSize() > 100) g_accessDrops++; }

static void ConnectTcDrop(ns3::Ptr<ns3::Node> node, void (*cb)(ns3::Ptr<const ns3::Packet>))
{
    ns3::Ptr<ns3::TrafficControlLayer> tc = node->GetObject<ns3::TrafficControlLayer>();
    NS_ABORT_MSG_IF(!tc, "no TrafficControlLayer");
    bool ok = tc->TraceConnectWithoutContext("TcDrop", ns3::MakeCallback(cb));
    NS_ABORT_MSG_IF(!ok, "could not connect TcDrop");
}

void ConnectRxCounter(ns3::Ptr<ns3::Node> node)
{
    ns3::Ptr<ns3::Ipv4L3Protocol> l3 = node->GetObject<ns3::Ipv4L3Protocol>();
    NS_ABORT_MSG_IF(!l3, "no Ipv4L3Protocol on receiver");
    bool ok = l3->TraceConnectWithoutContext("Rx", ns3::MakeCallback(&Ipv4RxCb));
    NS_ABORT_MSG_IF(!ok, "could not connect Ipv4L3Protocol Rx");
}

static ns3::Ptr<ns3::Queue<ns3::Packet>> DevQueue(ns3::Ptr<ns3::NetDevice> d)
{
    ns3::Ptr<ns3::PointToPointNetDevice> p2p = d->GetObject<ns3::PointToPointNetDevice>();
    NS_ABORT_MSG_IF(!p2p, "not a PointToPointNetDevice");
    return p2p->GetQueue();
}

void SetDeviceQueuePackets(ns3::Ptr<ns3::NetDevice> d, uint32_t pkts)
{
    DevQueue(d)->SetMaxSize(ns3::QueueSize(ns3::QueueSizeUnit::PACKETS, pkts));
}

uint32_t DeviceQueueMaxPackets(ns3::Ptr<ns3::NetDevice> d)
{
    return DevQueue(d)->GetMaxSize().GetValue();
}

// Bottleneck: every data-packet drop at R1 (only R1->R2 carries data out of R1).
void ConnectBottleneckDrop(ns3::Ptr<ns3::NetDevice> d)
{
    DevQueue(d)->TraceConnectWithoutContext("Drop", ns3::MakeCallback(&BottleneckDropCb));
    ConnectTcDrop(d->GetNode(), &BottleneckDropCb);
}

// Access: data-packet drops at a sender (its only device is its access link).
void ConnectAccessDrop(ns3::Ptr<ns3::NetDevice> d)
{
    DevQueue(d)->TraceConnectWithoutContext("Drop", ns3::MakeCallback(&AccessDropCb));
    ConnectTcDrop(d->GetNode(), &AccessDropCb);
}

bool HasRootQueueDisc(ns3::Ptr<ns3::NetDevice> d)
{
    ns3::Ptr<ns3::TrafficControlLayer> tc = d->GetNode()->GetObject<ns3::TrafficControlLayer>();
    if (!tc) return false;
    return tc->GetRootQueueDiscOnDevice(d) != nullptr;
}

uint64_t SinkTotalRx(ns3::Ptr<ns3::Application> app)
{
    ns3::Ptr<ns3::PacketSink> s = ns3::DynamicCast<ns3::PacketSink>(app);
    NS_ABORT_MSG_IF(!s, "not a PacketSink");
    return s->GetTotalRx();
}

uint64_t DataPkts() { return g_dataPkts; }
uint64_t OtherPkts() { return g_otherPkts; }
uint64_t PayloadBytes() { return g_payloadBytes; }
uint64_t BottleneckDrops() { return g_bottleneckDrops; }
uint64_t AccessDrops() { return g_accessDrops; }

} // namespace tlbench
"""


def main(argv=None):
    args = parse_args(argv)
    if args.flows < 1:
        sys.exit("--flows must be >= 1")

    # The ns3 wheel locates its shared libraries by globbing the current
    # directory recursively; run from a fresh empty directory.
    os.chdir(tempfile.mkdtemp(prefix="ns3_dumbbell_"))
    from ns import ns  # noqa: E402  (slow: ~11 s)

    ns.cppyy.cppdef(CPP_HELPERS)
    tl = ns.cppyy.gbl.tlbench

    t_setup0 = time.perf_counter()

    # ---- TCP defaults -------------------------------------------------------
    C = ns.Config.SetDefault
    C("ns3::TcpL4Protocol::SocketType",
      ns.TypeIdValue(ns.TypeId.LookupByName("ns3::TcpNewReno")))
    C("ns3::TcpL4Protocol::RecoveryType",
      ns.TypeIdValue(ns.TypeId.LookupByName("ns3::TcpClassicRecovery")))
    C("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1448))
    C("ns3::TcpSocket::DelAckCount", ns.UintegerValue(1))
    C("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    C("ns3::TcpSocket::SndBufSize", ns.UintegerValue(4 << 20))
    C("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(4 << 20))
    C("ns3::TcpSocketBase::Sack", ns.BooleanValue(False))
    C("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(True))
    C("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(True))
    C("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(200)))

    # ---- nodes --------------------------------------------------------------
    n = args.flows
    senders = ns.NodeContainer()
    senders.Create(n)
    routers = ns.NodeContainer()
    routers.Create(2)
    rx_nodes = ns.NodeContainer()
    rx_nodes.Create(1)
    r1, r2, rx = routers.Get(0), routers.Get(1), rx_nodes.Get(0)

    stack = ns.InternetStackHelper()
    stack.InstallAll()

    # ---- links --------------------------------------------------------------
    access = ns.PointToPointHelper()
    access.SetDeviceAttribute("DataRate", ns.StringValue("1Mbps"))
    access.SetChannelAttribute("Delay", ns.StringValue("20ms"))

    bneck = ns.PointToPointHelper()
    bneck.SetDeviceAttribute("DataRate", ns.StringValue("100Mbps"))
    bneck.SetChannelAttribute("Delay", ns.TimeValue(ns.MicroSeconds(
        int(round(args.bottleneck_delay_ms * 1000)))))

    last = ns.PointToPointHelper()
    last.SetDeviceAttribute("DataRate", ns.StringValue("100Gbps"))
    last.SetChannelAttribute("Delay", ns.StringValue("0ms"))

    tch = ns.TrafficControlHelper()
    all_devs = []

    access_addr = ns.Ipv4AddressHelper()
    access_addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.252"))
    for i in range(n):
        devs = access.Install(senders.Get(i), r1)
        for j in range(2):
            tl.SetDeviceQueuePackets(devs.Get(j), 100)
        tl.ConnectAccessDrop(devs.Get(0))
        access_addr.Assign(devs)
        access_addr.NewNetwork()
        tch.Uninstall(devs)  # drop the pfifo_fast root qdisc Assign() installed
        all_devs.append(devs)

    bdevs = bneck.Install(r1, r2)
    for j in range(2):
        tl.SetDeviceQueuePackets(bdevs.Get(j), 100)
    tl.ConnectBottleneckDrop(bdevs.Get(0))  # R1 -> R2 direction
    b_addr = ns.Ipv4AddressHelper()
    b_addr.SetBase(ns.Ipv4Address("172.16.0.0"), ns.Ipv4Mask("255.255.255.252"))
    b_addr.Assign(bdevs)
    tch.Uninstall(bdevs)
    all_devs.append(bdevs)

    ldevs = last.Install(r2, rx)
    for j in range(2):
        tl.SetDeviceQueuePackets(ldevs.Get(j), 1_000_000)
    l_addr = ns.Ipv4AddressHelper()
    l_addr.SetBase(ns.Ipv4Address("192.168.0.0"), ns.Ipv4Mask("255.255.255.252"))
    l_ifs = l_addr.Assign(ldevs)
    tch.Uninstall(ldevs)
    all_devs.append(ldevs)
    rx_addr = l_ifs.GetAddress(1)

    for devs in all_devs:
        for j in range(devs.GetN()):
            if tl.HasRootQueueDisc(devs.Get(j)):
                sys.exit("traffic-control root queue disc still installed")
    assert tl.DeviceQueueMaxPackets(all_devs[0].Get(0)) == 100
    assert tl.DeviceQueueMaxPackets(bdevs.Get(0)) == 100

    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    # ---- applications -------------------------------------------------------
    stop = ns.Seconds(args.duration)
    sinks = []
    base_port = 10000
    for i in range(n):
        port = base_port + i
        sink_helper = ns.PacketSinkHelper(
            "ns3::TcpSocketFactory",
            ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
        sapps = sink_helper.Install(rx)
        sapps.Start(ns.Seconds(0))
        sinks.append(sapps.Get(0))

        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory",
                                 ns.InetSocketAddress(rx_addr, port).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(1448))
        bapps = bulk.Install(senders.Get(i))
        bapps.Start(ns.Seconds(0))
        bapps.Stop(stop)

    tl.ConnectRxCounter(rx)
    ns.Simulator.Stop(stop)
    setup_seconds = time.perf_counter() - t_setup0

    # ---- run ------------------------------------------------------------------
    t0 = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - t0

    events = None
    if hasattr(ns.Simulator, "GetEventCount"):
        try:
            events = int(ns.Simulator.GetEventCount())
        except Exception:  # pragma: no cover
            events = None

    delivered_packets = int(tl.DataPkts())
    delivered_bytes = sum(int(tl.SinkTotalRx(s)) for s in sinks)
    per_flow = [int(tl.SinkTotalRx(s)) for s in sinks]
    result = {
        "tool": "ns-3",
        "ns3_version": importlib.metadata.version("ns3"),
        "flows": n,
        "sim_seconds": args.duration,
        "bottleneck_delay_ms": args.bottleneck_delay_ms,
        "wall_seconds": wall,
        "setup_seconds": setup_seconds,
        "delivered_packets": delivered_packets,
        "delivered_bytes": delivered_bytes,
        "rx_tcp_payload_bytes": int(tl.PayloadBytes()),
        "rx_non_data_packets": int(tl.OtherPkts()),
        "bottleneck_drops": int(tl.BottleneckDrops()),
        "access_drops": int(tl.AccessDrops()),
        "events": events,
        "packets_per_wall_second": delivered_packets / wall if wall > 0 else None,
        "events_per_wall_second": (events / wall) if (events is not None and wall > 0) else None,
        "sim_seconds_per_wall_second": args.duration / wall if wall > 0 else None,
    }
    ns.Simulator.Destroy()

    if args.json:
        print(json.dumps(result))
    else:
        bneck_pps = 100e6 / (1502 * 8)
        print(f"ns-3 {result['ns3_version']} dumbbell: {n} NewReno flows, "
              f"{args.duration:g} s simulated, bottleneck 100 Mbit/s "
              f"delay {args.bottleneck_delay_ms:g} ms")
        print(f"  setup            {setup_seconds:.3f} s")
        print(f"  Simulator.Run()  {wall:.3f} s wall "
              f"({result['sim_seconds_per_wall_second']:.3f} sim s / wall s)")
        print(f"  data packets at receiver  {delivered_packets} "
              f"({delivered_packets / (bneck_pps * args.duration):.1%} of "
              f"bottleneck capacity {bneck_pps * args.duration:.0f})")
        print(f"  bytes delivered to sinks  {delivered_bytes} "
              f"({delivered_bytes * 8 / args.duration / 1e6:.2f} Mbit/s goodput)")
        print(f"  per-flow goodput Mbit/s   min {min(per_flow) * 8 / args.duration / 1e6:.3f}"
              f" max {max(per_flow) * 8 / args.duration / 1e6:.3f}")
        print(f"  drops: bottleneck {result['bottleneck_drops']}, "
              f"access {result['access_drops']}")
        print(f"  events           {events}")
        print(f"  packets / wall s {result['packets_per_wall_second']:.0f}")
        if events is not None:
            print(f"  events / wall s  {result['events_per_wall_second']:.0f}")


if __name__ == "__main__":
    main()
