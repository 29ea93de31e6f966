//! The household topology (experiment E3): the home behind its DSL line,
//! the ISP's first hop, and remote peers and a server beyond it.
//!
//! ```text
//!   home --modem queue (uplink)--> . . first_hop_rtt/2 . . isp . . (rtt - first_hop_rtt)/2 . . remote peers, server
//!   home <--DSLAM queue (downlink)--
//! ```
//!
//! Hosts: the peers first (peer `i` is host `i`, as in every swarm; the
//! home's client is one of them), then the home itself when no peer lives
//! there, the ISP's first hop, and the remote server. Every packet from
//! beyond the first hop to the home waits in the one DSLAM queue, so many
//! remote sources can burst into it; every packet the home sends waits in
//! the modem's.
//!
//! Latency: three groups (home, the first hop, everything beyond), one-way
//! delays half the round trips of [`Household`].

use std::sync::Arc;

use torrentlab_engine::{Duration, EntityId, EntityRng, OptTime, Time};
use torrentlab_net::{HostConfig, HostId, Latency, LinkConfig, Network};
use torrentlab_transport::datagram::DatagramSocket;
use torrentlab_transport::tcp::{TcpConfig, TcpConnection};

use super::swarm::{connection_table, lanes, peers, swarm_app};
use crate::apps::cross::{stop_time, Cross, Entry, Ping, Transfer, Voip};
use crate::endpoint::Transport;
use crate::scenario::household::{Household, Place, TrafficKind};
use crate::scenario::swarm::SwarmScenario;
use crate::world::{Fabric, World};

/// The cross-traffic application's index in a household world (the
/// swarm's is 0).
pub(crate) const CROSS_APP: usize = 1;

/// RNG stream kind of each traffic entry (Poisson probe gaps); the swarm's
/// are 20 to 26.
const RNG_TRAFFIC: u16 = 27;

/// Latency groups.
const HOME: u16 = 0;
const ISP: u16 = 1;
const REMOTE: u16 = 2;

/// Where the household's hosts are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hosts {
    pub home: u32,
    pub isp: u32,
    pub remote: u32,
}

impl Hosts {
    pub fn of(&self, p: Place) -> u32 {
        match p {
            Place::Home => self.home,
            Place::Isp => self.isp,
            Place::Remote => self.remote,
        }
    }
}

/// The hosts of `sc`'s household: after its `n` peers.
pub(crate) fn hosts(sc: &SwarmScenario) -> Hosts {
    let n = sc.peer_count() as u32;
    let home_peer = sc.classes.iter().take_while(|c| !c.home).map(|c| c.count).sum::<u32>();
    let home = if sc.classes.iter().any(|c| c.home) { home_peer } else { n };
    let isp = if home == n { n + 1 } else { n };
    Hosts { home, isp, remote: isp + 1 }
}

/// The one-way delays between the groups, row-major.
fn delays(h: &Household) -> Vec<Duration> {
    let first = Duration(h.first_hop_rtt.0 / 2);
    let beyond = Duration(h.remote_rtt.0 / 2);
    let onward = Duration(beyond.0 - first.0);
    #[rustfmt::skip]
    let d = vec![
        Duration::ZERO, first,          beyond,
        first,          Duration::ZERO, onward,
        beyond,         onward,         beyond,
    ];
    d
}

/// The round trip of an idle ping of `payload` bytes from the home to
/// `to`: propagation, and the request's and the reply's serialisation on
/// the modem's and the DSLAM's links.
pub fn idle_ping_rtt(h: &Household, to: Place, payload: u32) -> Duration {
    let bytes = (20 + 8 + payload) as u64;
    let ser = |l: &LinkConfig| l.capacity_bps.map_or(0, |c| bytes * 8 * 1_000_000_000 / c);
    let prop = match to {
        Place::Home => Duration::ZERO,
        Place::Isp => h.first_hop_rtt,
        Place::Remote => h.remote_rtt,
    };
    prop + Duration(ser(&h.modem) + ser(&h.dslam))
}

pub(crate) fn build(sc: &SwarmScenario, h: &Household) -> World {
    let (peers, class_of, _) = peers(sc);
    let at = hosts(sc);
    let unlimited = LinkConfig { capacity_bps: None, ..h.modem };
    let mut configs: Vec<HostConfig> = class_of
        .iter()
        .map(|&ci| {
            let c = &sc.classes[ci];
            HostConfig { uplink: c.uplink, downlink: c.downlink, ingress_loss: sc.ingress_loss }
        })
        .collect();
    let line = HostConfig { uplink: h.modem, downlink: h.dslam, ingress_loss: sc.ingress_loss };
    if at.home as usize == configs.len() {
        configs.push(line);
    } else {
        configs[at.home as usize] = line;
    }
    let open = HostConfig { uplink: unlimited, downlink: unlimited, ingress_loss: 0.0 };
    configs.push(open); // the first hop
    configs.push(open); // the remote server
    let mut of_host = vec![REMOTE; configs.len()];
    of_host[at.home as usize] = HOME;
    of_host[at.isp as usize] = ISP;
    let delays = delays(h);
    // The tracker sits beyond the first hop.
    let tracker_delay = (0..peers.len()).map(|i| delays[of_host[i] as usize * 3 + REMOTE as usize]).collect();
    let latency = Latency::Groups { of_host, groups: 3, delays };
    let (route, lane_count) = lanes(&configs, &latency);
    let net = Network::new(sc.seed, &configs, latency);
    let end = Time::ZERO + sc.duration;
    let mut f = Fabric::new(net, route, lane_count, connection_table(&peers, false), end);
    let swarm = swarm_app(sc, peers, class_of, tracker_delay, &mut f, false);
    let cross = cross_app(sc, h, at, end, &mut f);
    World::new(f, vec![Box::new(swarm), Box::new(cross)], end)
}

/// The cross traffic: each entry's connection opened and claimed.
fn cross_app(sc: &SwarmScenario, h: &Household, at: Hosts, end: Time, f: &mut Fabric) -> Cross {
    let id = CROSS_APP as u32;
    let tcp = Arc::new(TcpConfig { handshake: true, ..TcpConfig::linux() });
    let mut entries = Vec::new();
    for (k, t) in sc.traffic.iter().enumerate() {
        let hosts = [HostId(at.of(t.from)), HostId(at.of(t.to))];
        let start = Time::ZERO + t.start;
        let (from, to) = (t.from.name(), t.to.name());
        let (ep, entry) = match &t.kind {
            TrafficKind::Ping { interval, timeout, payload, poisson } => (
                [Transport::Datagram(DatagramSocket::new()), Transport::Datagram(DatagramSocket::echo_responder())],
                Entry::Ping(Ping {
                    label: t.label.clone(),
                    conn: 0,
                    start,
                    stop: stop_time(t.stop, end, *timeout),
                    interval: *interval,
                    poisson: poisson.then(|| EntityRng::new(sc.seed, EntityId::new(RNG_TRAFFIC, k as u64))),
                    timeout: *timeout,
                    payload: *payload,
                    from,
                    to,
                    idle_rtt: (t.from == Place::Home).then(|| idle_ping_rtt(h, t.to, *payload)),
                    probes: Vec::new(),
                }),
            ),
            TrafficKind::Voip { interval, payload } => (
                [Transport::Datagram(DatagramSocket::new()), Transport::Datagram(DatagramSocket::new())],
                Entry::Voip(Voip {
                    label: t.label.clone(),
                    conn: 0,
                    start,
                    stop: stop_time(t.stop, end, Duration::from_secs(1)),
                    interval: *interval,
                    payload: *payload,
                    from,
                    to,
                    dirs: Default::default(),
                }),
            ),
            TrafficKind::Transfer { rate, chunk, size, cc } => (
                [
                    Transport::Tcp(TcpConnection::connect(tcp.clone(), cc.build())),
                    Transport::Tcp(TcpConnection::listen(tcp.clone(), cc.build())),
                ],
                Entry::Transfer(Transfer {
                    label: t.label.clone(),
                    conn: 0,
                    start,
                    stop: stop_time(t.stop, end, Duration::ZERO),
                    rate: *rate,
                    chunk: *chunk,
                    size: *size,
                    from,
                    to,
                    cc: cc.name(),
                    written: 0,
                    started: OptTime::NONE,
                    completed: OptTime::NONE,
                }),
            ),
        };
        let conn = f.open(Time::ZERO, hosts, [id; 2], ep);
        for side in 0..2 {
            f.claim(crate::world::Link::new(conn, side), k as u32);
        }
        let mut entry = entry;
        match &mut entry {
            Entry::Ping(p) => p.conn = conn,
            Entry::Voip(v) => v.conn = conn,
            Entry::Transfer(t) => t.conn = conn,
        }
        // Datagram sockets tell their owner of the first arrival.
        if !matches!(entry, Entry::Transfer(_)) {
            f.set_read_mark(crate::world::Link::new(conn, 0), 1);
            f.set_read_mark(crate::world::Link::new(conn, 1), 1);
        }
        entries.push(entry);
    }
    let cross = Cross::new(id, entries, end);
    cross.schedule(f);
    cross
}
