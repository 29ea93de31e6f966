//! The swarm topology: one host per peer, each behind its access links,
//! a latency core (one RTT for every pair, or emulated ASes), and the
//! BitTorrent application on every host.

use std::sync::Arc;

use torrentlab_bittorrent::client::Client;
use torrentlab_bittorrent::tracker::Tracker;
use torrentlab_engine::{Duration, EntityId, EntityRng, Time};
use torrentlab_net::{HostConfig, HostId, Latency, Network};

use crate::apps::bittorrent::{ClassProto, Peer, Swarm};
use crate::scenario::pacing::Pacing;
use crate::scenario::swarm::{JoinSpec, SwarmScenario};
use crate::scenario::ClockOffsets;
use crate::swarm::recorder::SwarmRecorder;
use crate::world::{ConnTable, Fabric, PaceRule, Route, World};

/// RNG stream kinds (see [`EntityId::new`]).
const RNG_PICKER: u16 = 20;
const RNG_CHOKER: u16 = 21;
const RNG_CLIENT: u16 = 22;
const RNG_JOIN: u16 = 23;
const RNG_TRACKER: u16 = 24;
/// A dialler's uTP connection ids and the acceptor's first sequence number.
const RNG_DIAL: u16 = 25;
/// Each host's clock offset (uTP timestamps).
const RNG_CLOCK: u16 = 26;

/// The BitTorrent application's index in a swarm world.
pub(crate) const SWARM_APP: usize = 0;

/// A world running `sc`: peer `i` is host `i` (a household places the
/// other hosts after the peers: [`super::household`]).
pub(crate) fn build(sc: &SwarmScenario) -> World {
    if let Some(h) = &sc.household {
        return super::household::build(sc, h);
    }
    let (peers, class_of, groups_of) = peers(sc);
    let hosts: Vec<HostConfig> = class_of
        .iter()
        .map(|&ci| {
            let c = &sc.classes[ci];
            HostConfig { uplink: c.uplink, downlink: c.downlink, ingress_loss: sc.ingress_loss }
        })
        .collect();
    let (latency, tracker_delay) = if sc.groups.is_empty() {
        let d = Duration(sc.rtt.0 / 2);
        (Latency::Uniform(d), vec![d; peers.len()])
    } else {
        let g = sc.groups.len();
        let mut delays = vec![Duration::ZERO; g * g];
        for i in 0..g {
            for j in 0..g {
                // Same AS: out and back over the loopback device (RTT 4 x intra);
                // across: each side's inter-AS device (RTT 2 x (inter_i + inter_j)).
                delays[i * g + j] =
                    if i == j { Duration(2 * sc.groups[i].intra.0) } else { sc.groups[i].inter + sc.groups[j].inter };
            }
        }
        let tg = sc.tracker_group.unwrap_or(0);
        let td = groups_of.iter().map(|&pg| delays[pg as usize * g + tg]).collect();
        (Latency::Groups { of_host: groups_of, groups: g, delays }, td)
    };
    let route = lanes(&hosts, &latency);
    let net = Network::new(sc.seed, &hosts, latency);
    let end = Time::ZERO + sc.duration;
    let mut f = Fabric::new(net, route.0, route.1, connection_table(&peers, true), end);
    if let Some(spec) = &sc.capture {
        f.capture = Some(Box::new(crate::capture::for_swarm(sc, spec, &class_of)));
    }
    let app = swarm_app(sc, peers, class_of, tracker_delay, &mut f, true);
    World::new(f, vec![Box::new(app)], end)
}

/// Every peer of `sc` in class order, each one's class and latency group.
pub(super) fn peers(sc: &SwarmScenario) -> (Vec<Peer>, Vec<usize>, Vec<u16>) {
    let mut peers = Vec::new();
    let mut class_of = Vec::new();
    let mut groups_of = Vec::new();
    let mut log_left = sc.metrics.send_log_peers;
    for (ci, class) in sc.classes.iter().enumerate() {
        let mut join_rng = EntityRng::new(sc.seed, EntityId::new(RNG_JOIN, ci as u64));
        let mut t = match &class.join {
            JoinSpec::At(t) | JoinSpec::Poisson { start: t, .. } => *t,
            JoinSpec::Times(_) => Duration::ZERO,
        };
        for k in 0..class.count {
            let id = peers.len() as u32;
            let join = match &class.join {
                JoinSpec::At(t) => *t,
                JoinSpec::Times(ts) => ts[k as usize],
                JoinSpec::Poisson { mean_gap, .. } => {
                    // Exponential gaps: -mean x ln(1 - U).
                    let gap = -(1.0 - join_rng.uniform()).ln() * mean_gap.as_secs_f64();
                    t += Duration::from_secs_f64(gap);
                    t
                }
            };
            let rngs =
                [RNG_PICKER, RNG_CHOKER, RNG_CLIENT].map(|k| EntityRng::new(sc.seed, EntityId::new(k, id as u64)));
            let client = Client::new(id, class.client.clone(), sc.torrent.clone(), class.seed, rngs);
            let log_sends = !class.seed && log_left > 0;
            if log_sends {
                log_left -= 1;
            }
            peers.push(Peer {
                client,
                class: ci,
                seed: class.seed,
                join: Time::ZERO + join,
                departure: class.departure,
                joined: false,
                left: None,
                timer: Default::default(),
                timer_id: 0,
                log_sends,
            });
            class_of.push(ci);
            groups_of.push(class.group.unwrap_or(0) as u16);
        }
    }
    (peers, class_of, groups_of)
}

/// The lanes packets take (see [`Route`]) and how many there are.
pub(super) fn lanes(hosts: &[HostConfig], latency: &Latency) -> (Route, usize) {
    // Packets from one source to one latency group leave in send order
    // (a FIFO uplink, or none) and all take the same delay, so they arrive
    // in send order too: they can share a lane. When no uplink is limited,
    // a packet leaves as it is sent, and the sources of one group can share
    // a lane as well. (A lane that went back in time would trip the event
    // queue's check.)
    let all_unlimited = hosts.iter().all(|h| h.uplink.capacity_bps.is_none());
    let group_of = |h: usize| match latency {
        Latency::Groups { of_host, .. } => of_host[h] as u32,
        _ => 0,
    };
    let lane_dsts = match latency {
        Latency::Groups { groups, .. } => *groups as u32,
        _ => 1,
    };
    let lane_dst: Vec<u32> = (0..hosts.len()).map(group_of).collect();
    let lane_src: Vec<u32> = if all_unlimited { lane_dst.clone() } else { (0..hosts.len() as u32).collect() };
    let lane_count = (lane_src.iter().max().map_or(0, |&m| m as usize + 1)) * lane_dsts as usize;
    (Route::ByPath { src: lane_src, dst: lane_dst, dsts: lane_dsts }, lane_count)
}

/// An empty connection table for `peers`; `recycle`: reuse the places of
/// connections that are over (a swarm closes most of those it opens long
/// before the end: refused, duplicates, seeds on seeds).
pub(super) fn connection_table(peers: &[Peer], recycle: bool) -> ConnTable {
    // Room for half as much again as every peer dialling at once (a flash
    // crowd holds about that many: the dials before the refusals come
    // back), so the table rarely grows (a copy, both buffers at once); the
    // reserve costs address space, not memory, until used. At most 2^22
    // places (5.6 GB of address space).
    let dials: usize = peers.iter().map(|p| p.client.config().max_initiate as usize).sum();
    ConnTable::new(recycle, (dials + dials / 2).min(1 << 22))
}

/// The BitTorrent application over `peers`, its timers and pacers in `f`,
/// every arrival scheduled; with `end_when_done`, it ends the run when the
/// last leecher has finished.
pub(super) fn swarm_app(
    sc: &SwarmScenario,
    mut peers: Vec<Peer>,
    class_of: Vec<usize>,
    tracker_delay: Vec<Duration>,
    f: &mut Fabric,
    end_when_done: bool,
) -> Swarm {
    let n = peers.len();
    for (i, p) in peers.iter_mut().enumerate() {
        p.timer_id = f.new_timer(SWARM_APP as u32, i as u32);
    }
    let proto = sc
        .classes
        .iter()
        .map(|c| ClassProto { tcp: Arc::new(c.tcp.clone()), cc: c.cc.clone(), utp: Arc::new(c.utp.clone()) })
        .collect();
    // Each host's clock runs from its own origin, as real hosts' do (uTP
    // timestamps are read against them).
    let clocks = (0..n)
        .map(|h| match sc.clock_offsets {
            ClockOffsets::Zero => 0,
            ClockOffsets::Random => EntityRng::new(sc.seed, EntityId::new(RNG_CLOCK, h as u64)).next_u64() as u32,
        })
        .collect();
    let mut app = Swarm::new(
        SWARM_APP as u32,
        peers,
        class_of,
        proto,
        clocks,
        (0..n).map(|h| EntityRng::new(sc.seed, EntityId::new(RNG_DIAL, h as u64))).collect(),
        Tracker::new(EntityRng::new(sc.seed, EntityId::new(RNG_TRACKER, 0))),
        tracker_delay,
        SwarmRecorder::new(&sc.metrics, n, sc.torrent.pieces() as usize),
    );
    app.end_when_done = end_when_done;
    for (i, &ci) in app.class_of.iter().enumerate() {
        let c = &sc.classes[ci];
        let rule = match c.pacing {
            Pacing::Off => continue,
            Pacing::Even => PaceRule::Rate(c.client.upload_rate.expect("validated: even pacing has a limit") as u64),
            Pacing::Packets { .. } => PaceRule::PerPacket(c.pacing.gap().expect("a packet rate")),
        };
        f.pace(HostId(i as u32), SWARM_APP as u32, rule);
    }
    app.schedule_joins(f);
    app
}
