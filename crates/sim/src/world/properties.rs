//! The world's invariants over random mixed worlds: a swarm whose peers dial
//! over TCP or uTP, with constant-bit-rate flows over either transport
//! between random pairs of its hosts, on random access links and delays.
//!
//! - packets and bytes are conserved in the network, on every link and on
//!   every connection;
//! - no queue holds more than its limit;
//! - logged time never goes backwards;
//! - no delay sample handed to a congestion controller exceeds what the path
//!   can hold: a one-way delay (uTP's, and the one a TCP ACK carries, drops
//!   and losses or not) at most the propagation delay plus a full uplink
//!   buffer, the packet in service and its own serialisation; an RTT (TCP) at
//!   most twice that plus the delayed-ACK timeout, where the peer's uplink
//!   lost no ACK (after a lost ACK the next one echoes an older timestamp,
//!   RFC 7323 §4.1, and the sample includes the wait, as Linux's would).

use proptest::prelude::*;
use torrentlab_engine::{Duration, Time};
use torrentlab_net::HostId;
use torrentlab_transport::cc::CcConfig;
use torrentlab_transport::stream::Endpoint;
use torrentlab_transport::tcp::{TcpConfig, TcpConnection};
use torrentlab_transport::utp::{UtpConfig, UtpSocket};

use super::{Link, World};
use crate::apps::cbr::Cbr;
use crate::endpoint::{Transport, TransportKind};
use crate::scenario::{AnyScenario, SwarmScenario};
use crate::swarm::recorder::{enable_uplink_logs, take_uplink_logs};
use crate::table::ColumnData;
use crate::watch::progress_only;

/// The largest IP packet either transport sends (a full TCP segment).
const MAX_PACKET: u64 = 1500;

#[derive(Debug, Clone)]
struct Case {
    seed: u64,
    tcp_leechers: u32,
    utp_leechers: u32,
    rtt_ms: u64,
    up_kbps: u64,
    buffer: u32,
    size: &'static str,
    /// (from, to, over uTP) as fractions of the host count.
    flows: Vec<(u32, u32, bool)>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        0u64..1_000_000,
        0u32..4,
        0u32..4,
        5u64..120,
        300u64..4000,
        4u32..50,
        prop::collection::vec((0u32..100, 0u32..100, any::<bool>()), 0..3),
    )
        .prop_filter("at least two leechers", |c| c.1 + c.2 >= 2)
        .prop_map(|(seed, tcp_leechers, utp_leechers, rtt_ms, up_kbps, buffer, flows)| Case {
            seed,
            tcp_leechers,
            utp_leechers,
            rtt_ms,
            up_kbps,
            buffer,
            size: "256 KiB",
            flows,
        })
}

fn scenario(c: &Case) -> SwarmScenario {
    let class = |transport: &str, count: u32| {
        if count == 0 {
            return String::new();
        }
        format!(
            "[[peers]]\nrole = \"leecher\"\nlabel = \"{transport}\"\ncount = {count}\nupload_limit = \"unlimited\"\ntransport = \"{transport}\"\n"
        )
    };
    let toml = format!(
        r#"
        [run]
        seed = {seed}
        duration = "30 min"
        [torrent]
        size = "{size}"
        piece_size = "32 KiB"
        [network]
        rtt = "{rtt} ms"
        clock_offsets = "zero"
        [network.access]
        up = "{up} kbit/s"
        down = "unlimited"
        buffer = "{buffer} packets"
        [metrics]
        connections = true
        [[peers]]
        role = "seed"
        upload_limit = "unlimited"
        {tcp}
        {utp}
        "#,
        seed = c.seed,
        rtt = c.rtt_ms,
        up = c.up_kbps,
        buffer = c.buffer,
        size = c.size,
        tcp = class("tcp", c.tcp_leechers),
        utp = class("utp", c.utp_leechers),
    );
    match AnyScenario::from_toml_str(&toml, "properties.toml") {
        Ok(AnyScenario::Swarm(s)) => s,
        other => panic!("not a swarm: {:?}", other.err()),
    }
}

/// The swarm of `c` with its constant-bit-rate flows attached.
fn world(c: &Case) -> (World, Vec<usize>) {
    let sc = scenario(c);
    let hosts = sc.peer_count() as u32;
    let mut w = crate::topology::swarm::build(&sc);
    enable_uplink_logs(&mut w.f.net, hosts);
    let mut cbrs = Vec::new();
    for (i, &(a, b, utp)) in c.flows.iter().enumerate() {
        let from = a * hosts / 100;
        let to = (from + 1 + b * (hosts - 1) / 100) % hosts;
        let id = w.apps.len();
        let ep = if utp {
            let cfg = UtpConfig::default();
            [
                Transport::Utp(UtpSocket::connect(cfg.clone(), Time::ZERO, 1000 + i as u16, 1, 0)),
                Transport::Utp(UtpSocket::accept(cfg, 1000 + i as u16, 7, 0)),
            ]
        } else {
            let cfg = std::sync::Arc::new(TcpConfig { handshake: true, ..TcpConfig::linux() });
            [
                Transport::Tcp(TcpConnection::connect(cfg.clone(), CcConfig::NewReno.build())),
                Transport::Tcp(TcpConnection::listen(cfg, CcConfig::NewReno.build())),
            ]
        };
        let conn = w.f.open(Time::ZERO, [HostId(from), HostId(to)], [id as u32; 2], ep);
        let start = Time::ZERO + Duration::from_millis(100 * i as u64);
        let stop = start + Duration::from_secs(20);
        let cbr = Cbr::new(id as u32, &mut w.f, Link::new(conn, 0), 1000, Duration::from_millis(50), start, stop);
        w.apps.push(Box::new(cbr));
        cbrs.push(id);
    }
    (w, cbrs)
}

fn column_i64(t: &crate::table::Table, name: &str) -> Vec<i64> {
    match t.column(name) {
        Some(ColumnData::I64(v)) => v.clone(),
        _ => panic!("no column {name}"),
    }
}

fn column_f64(t: &crate::table::Table, name: &str) -> Vec<f64> {
    match t.column(name) {
        Some(ColumnData::F64(v)) => v.clone(),
        _ => panic!("no column {name}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn mixed_worlds_conserve_bytes_keep_queues_within_limits_and_bound_every_delay_sample(c in case()) {
        let (mut w, _) = world(&c);
        let _ = w.run(Duration::from_secs(60), &mut progress_only(&mut |_| {}), None);
        let end = w.end;
        let f = &mut w.f;

        // Conserved in the network as a whole...
        let s = f.net.stats();
        let (packets, bytes) = f.in_flight();
        prop_assert_eq!(s.sent_packets, s.delivered_packets + s.dropped_packets + s.lost_packets + packets);
        prop_assert_eq!(s.sent_bytes, s.delivered_bytes + s.dropped_bytes + s.lost_bytes + bytes);
        // ...on every link (what arrived was served, dropped, or is queued)...
        for h in 0..f.net.host_count() as u32 {
            for l in [f.net.uplink(HostId(h)), f.net.downlink(HostId(h))] {
                let link = f.net.link_mut(l);
                let st = link.stats(end);
                let (_, queued) = link.occupancy(end);
                prop_assert_eq!(st.arrived_bytes, st.served_bytes + st.dropped_bytes + queued, "link {:?}", l);
            }
        }
        // ...and on every connection: nobody reads more than was written.
        for (_, c) in f.conns.live() {
            for s in 0..2 {
                prop_assert!(c.ep[1 - s].delivered() <= c.written[s]);
            }
        }
        // No uplink held more than its buffer, and its log runs forward in time.
        let log = take_uplink_logs(&mut w.f.net, end);
        let queued = column_i64(&log, "packets");
        prop_assert!(queued.iter().all(|&q| q <= c.buffer as i64), "a queue above {} packets", c.buffer);
        let t = column_f64(&log, "time_s");
        prop_assert!(t.windows(2).all(|p| p[0] <= p[1]), "the uplink log goes back in time");

        // No delay sample beyond what the path can hold.
        let up_bps = c.up_kbps * 1000;
        let serialise = |bytes: u64| Duration(bytes * 8 * 1_000_000_000 / up_bps + 1);
        // Behind a full buffer and the packet in service, then its own serialisation.
        let one_way = Duration(c.rtt_ms * 1_000_000 / 2) + serialise((c.buffer as u64 + 2) * MAX_PACKET);
        let tcp_rtt = one_way.saturating_mul(2) + Duration::from_millis(40) + Duration::from_millis(1);
        let drops: Vec<u64> = (0..w.f.net.host_count() as u32)
            .map(|h| {
                let up = w.f.net.uplink(HostId(h));
                w.f.net.link_mut(up).stats(end).dropped_packets
            })
            .collect();
        for (i, conn) in w.f.conns.live() {
            for (s, ep) in conn.ep.iter().enumerate() {
                let got = ep.counters().max_delay_sample;
                let bound = match ep.kind() {
                    TransportKind::Utp => one_way + Duration::from_micros(1),
                    TransportKind::Tcp if drops[conn.host[1 - s] as usize] == 0 => tcp_rtt,
                    TransportKind::Tcp | TransportKind::Datagram => continue,
                };
                prop_assert!(got <= bound, "connection {} ({:?}): a sample of {} above {}", i, ep.kind(), got, bound);
            }
            for ep in &conn.ep {
                let owd = ep.counters().max_one_way_delay;
                prop_assert!(owd <= one_way + Duration::from_micros(1), "connection {}: a one-way delay of {} above {}", i, owd, one_way);
            }
        }
    }
}

#[test]
fn the_flows_of_a_mixed_world_deliver_every_message() {
    let c = Case {
        seed: 5,
        tcp_leechers: 2,
        utp_leechers: 2,
        rtt_ms: 40,
        up_kbps: 1000,
        buffer: 30,
        size: "8 MiB", // the swarm outlasts the flows
        flows: vec![(0, 50, true), (60, 10, false)],
    };
    let (mut w, cbrs) = world(&c);
    let _ = w.run(Duration::from_secs(60), &mut progress_only(&mut |_| {}), None);
    for id in cbrs {
        let cbr = w.take_app::<Cbr>(id);
        assert_eq!(cbr.sent.len(), 400, "20 s of 50 ms ticks");
        assert_eq!(cbr.received.len(), cbr.sent.len(), "every message arrives");
        assert!(cbr.sent.iter().zip(&cbr.received).all(|(s, r)| r >= s));
    }
}
