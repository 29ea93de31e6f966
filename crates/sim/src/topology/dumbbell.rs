//! The dumbbell: bulk flows whose senders sit on hosts of their own, each
//! behind its access uplink, and whose receivers share one host whose
//! downlink is the bottleneck (a shared queue in front of the receiver).
//!
//! Host 0 is the receiver; host `i + 1` the sender of flow `i`; flow `i`
//! is connection `i` (its sender side 0, its receiver side 1).

use torrentlab_engine::{Duration, EntityId, EntityRng, Time};
use torrentlab_net::{HostConfig, HostId, Latency, LinkConfig, Network};
use torrentlab_transport::stream::Endpoint;
use torrentlab_transport::tcp::{TcpConnection, TcpReceiver, TcpSender};
use torrentlab_transport::utp::{UtpSocket, Variant};

use crate::apps::bulk::{Bulk, Flow};
use crate::endpoint::{Transport, TransportKind};
use crate::recorder::Recorder;
use crate::scenario::{ClockOffsets, Scenario, StartSpec};
use crate::world::{ConnTable, Fabric, Link, Route, World};

/// RNG stream kind tag for flows (see [`EntityId::new`]).
const RNG_KIND_FLOW: u16 = 2;
/// RNG stream kind tag for host clocks.
const RNG_KIND_CLOCK: u16 = 3;
const RECEIVER: HostId = HostId(0);

/// The bulk application's index in a dumbbell world.
pub(crate) const BULK_APP: usize = 0;

pub(crate) fn build(sc: &Scenario) -> World {
    let n = &sc.network;
    let receiver = HostConfig { uplink: LinkConfig::TRANSPARENT, downlink: n.bottleneck, ingress_loss: n.data_loss };
    let sender = HostConfig {
        uplink: n.access,
        downlink: LinkConfig { capacity_bps: None, ..n.access },
        ingress_loss: n.ack_loss,
    };
    let mut hosts = vec![receiver];
    hosts.extend(std::iter::repeat_n(sender, sc.flows.len()));
    let latency = if sc.flows.iter().any(|f| f.one_way_delay.is_some()) {
        // Per-flow delays: a matrix, symmetric between each sender and the receiver.
        let size = hosts.len();
        let mut delays = vec![Duration::ZERO; size * size];
        for (i, f) in sc.flows.iter().enumerate() {
            let d = f.one_way_delay.unwrap_or(n.one_way_delay);
            delays[(i + 1) * size] = d;
            delays[i + 1] = d;
        }
        Latency::Matrix { n: size, delays }
    } else {
        Latency::Uniform(n.one_way_delay)
    };
    let mut net = Network::new(sc.seed, &hosts, latency);
    let bottleneck = net.downlink(RECEIVER);
    if sc.metrics.queue_log {
        net.link_mut(bottleneck).enable_monitor();
    }

    // Each host's clock runs at simulated speed from its own origin, as real
    // hosts' clocks do (uTP measures one-way delays against them).
    let clocks: Vec<u32> = (0..hosts.len())
        .map(|h| match sc.network.clock_offsets {
            ClockOffsets::Zero => 0,
            ClockOffsets::Random => EntityRng::new(sc.seed, EntityId::new(RNG_KIND_CLOCK, h as u64)).next_u64() as u32,
        })
        .collect();
    let end = Time::ZERO + sc.duration;
    let app = BULK_APP as u32;
    let mut f =
        Fabric::new(net, Route::PerConnection, 2 * sc.flows.len(), ConnTable::new(false, 2 * sc.flows.len()), end);
    let mut flows = Vec::with_capacity(sc.flows.len());
    for (i, fs) in sc.flows.iter().enumerate() {
        let mut rng = EntityRng::new(sc.seed, EntityId::new(RNG_KIND_FLOW, i as u64));
        let start = match fs.start {
            StartSpec::At(t) => t,
            StartSpec::Uniform(lo, hi) => Duration(rng.range_inclusive(lo.0, hi.0)),
        };
        let start = Time::ZERO + start;
        let half = |e: Box<dyn Endpoint>| Transport::Other(e, TransportKind::Tcp);
        let ep = match &fs.utp {
            None if fs.tcp.handshake => [
                Transport::Tcp(TcpConnection::connect(fs.tcp.clone(), fs.cc.build())),
                Transport::Tcp(TcpConnection::listen(fs.tcp.clone(), fs.cc.build())),
            ],
            None => [
                half(Box::new(TcpSender::new(fs.tcp.clone(), fs.cc.build()))),
                half(Box::new(TcpReceiver::new(fs.tcp.clone()))),
            ],
            Some(u) => {
                // BEP 29: a random connection id; the initiator starts at
                // sequence 1, the acceptor at a random one (as libutp).
                let conn_id = rng.next_u64() as u16;
                let acceptor_seq = rng.next_u64() as u16;
                [
                    Transport::Utp(UtpSocket::connect(u.clone(), start, conn_id, 1, clocks[i + 1])),
                    Transport::Utp(UtpSocket::accept(u.clone(), conn_id, acceptor_seq, clocks[0])),
                ]
            }
        };
        let conn = f.open(Time::ZERO, [HostId(i as u32 + 1), RECEIVER], [app, app], ep);
        f.claim(Link::new(conn, 0), i as u32);
        f.claim(Link::new(conn, 1), i as u32);
        flows.push(Flow {
            label: fs.label.clone(),
            cc: match &fs.utp {
                None => fs.cc.name(),
                Some(u) => match u.cc.variant {
                    Variant::Bep29 => "ledbat-bep29",
                    Variant::Rfc6817 => "ledbat-rfc6817",
                    Variant::Draft => "ledbat-draft",
                },
            },
            transport: if fs.utp.is_some() { "utp" } else { "tcp" },
            conn,
            start,
            stop: fs.stop.map(|s| Time::ZERO + s),
            size: fs.size,
            started: false,
            completed_at: None,
        });
    }
    let last_start = flows.iter().map(|f| f.start).max().unwrap_or(Time::ZERO);
    let bulk = Bulk {
        id: app,
        flows,
        rec: Recorder::new(sc.metrics.sample_interval.is_some()),
        sample_interval: sc.metrics.sample_interval,
        end,
        bottleneck,
        bottleneck_rate: n.bottleneck.capacity_bps.expect("validated: the bottleneck has a capacity"),
        window_start: sc.metrics.summary_start.map_or(last_start, |s| Time::ZERO + s),
        at_window_start: None,
    };
    bulk.schedule(&mut f);
    World::new(f, vec![Box::new(bulk)], end)
}
