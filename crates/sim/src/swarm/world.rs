//! The swarm world: one host per peer, a TCP connection per peer pair that
//! met, each peer's BitTorrent client driven through [`Io`], the tracker, and
//! the event loop.
//!
//! Host `i` is peer `i`. The tracker is not a host: announces travel as
//! control-plane messages with the one-way delay between the peer and the
//! tracker's place (a few hundred bytes every 30 minutes would not change
//! what the access links carry).

use std::ops::ControlFlow;
use std::sync::Arc;
use torrentlab_bittorrent::client::{Client, Frame, Io, Note};
use torrentlab_bittorrent::tracker::{AnnounceEvent, Tracker};
use torrentlab_engine::{prefetch, Duration, EntityId, EntityRng, EventQueue, OptTime, Packed, Sift, Time};
use torrentlab_net::{HostConfig, HostId, Latency, Network, Transit};

use torrentlab_transport::cc::CcConfig;
use torrentlab_transport::tcp::{SackBlocks, TcpConfig, TcpConnection, TcpState};

use super::conn::{Conn, NO_SLOT};
use super::packet::{Hop, InFlight, PacketLanes};
use super::recorder::SwarmRecorder;
use crate::event_bits;
use crate::hugepages;
use crate::scenario::swarm::{Departure, JoinSpec, SwarmScenario};
use crate::timer::{Firing, Tag, Timer};
use crate::watch::{Pacer, Spill, Watch};

mod cycles;
mod hints;
use cycles::{EventCycles, Kind};
use hints::{prefetch_end, CLIENT_AHEAD, LANE_AHEAD, LOOKAHEAD};

/// RNG stream kinds (see [`EntityId::new`]).
const RNG_PICKER: u16 = 20;
const RNG_CHOKER: u16 = 21;
const RNG_CLIENT: u16 = 22;
const RNG_JOIN: u16 = 23;
const RNG_TRACKER: u16 = 24;

/// The lane a packet leaves: a path lane, or a host's downlink lane.
#[derive(Clone, Copy, Debug)]
enum Lane {
    Path(u32),
    Host(u32),
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// Head of a path lane (see [`Route::lane`]).
    PathLane {
        lane: u32,
    },
    /// Head of the lane of packets leaving a host's downlink.
    HostLane {
        host: u32,
    },
    /// The timer of endpoint `side` of connection `conn` (see [`Timer`]).
    EpTimer {
        conn: u32,
        side: u8,
        tag: Tag,
    },
    ClientTimer {
        peer: u32,
        tag: Tag,
    },
    Join {
        peer: u32,
    },
    Leave {
        peer: u32,
    },
    /// An announce reaches the tracker.
    Announce {
        peer: u32,
        event: u8,
        numwant: u32,
    },
    /// The tracker's reply (an index into `replies`) reaches the peer.
    Reply {
        peer: u32,
        reply: u32,
    },
    End,
}

/// Packets and timers, nearly every event, ride in their queue keys.
impl Packed for Ev {
    #[inline]
    fn pack(&self) -> Option<u32> {
        match *self {
            Ev::PathLane { lane } => event_bits::pack_index(0, lane),
            Ev::HostLane { host } => event_bits::pack_index(1, host),
            Ev::EpTimer { conn, side, tag } => event_bits::pack_timer(2, conn.checked_mul(2)? | side as u32, tag),
            Ev::ClientTimer { peer, tag } => event_bits::pack_timer(3, peer, tag),
            _ => None,
        }
    }

    #[inline]
    fn unpack(bits: u32) -> Self {
        match event_bits::kind(bits) {
            0 => Ev::PathLane { lane: event_bits::index(bits) },
            1 => Ev::HostLane { host: event_bits::index(bits) },
            2 => {
                let (link, tag) = event_bits::timer(bits);
                Ev::EpTimer { conn: link / 2, side: (link % 2) as u8, tag }
            }
            _ => {
                let (peer, tag) = event_bits::timer(bits);
                Ev::ClientTimer { peer, tag }
            }
        }
    }
}

/// Endpoint timers that went stale, or whose deadline moved later, while
/// they waited are sifted out or moved when their bucket of time comes up
/// (see [`Timer::sift`]); other events stay.
#[inline]
fn sift_timer(conns: &mut [Conn], at: Time, ev: &Ev) -> Sift {
    match *ev {
        Ev::EpTimer { conn, side, tag } => conns[conn as usize].timer[side as usize].sift(tag, at),
        _ => Sift::Keep,
    }
}

const EVENTS: [AnnounceEvent; 4] =
    [AnnounceEvent::Started, AnnounceEvent::Regular, AnnounceEvent::Completed, AnnounceEvent::Stopped];

/// One peer: its client and where it is in its life.
///
/// `repr(C)`, the client's timer and the two flags every call into the
/// client reads first: they share a cache line (with the client's first
/// bytes), which the calendar's hint asks for before a timer event and which
/// arming the timer after each call touches anyway.
#[repr(C)]
pub(crate) struct Peer {
    pub timer: Timer,
    pub seed: bool,
    /// Log this peer's sends.
    pub log_sends: bool,
    pub client: Client,
    pub class: usize,
    pub join: Time,
    pub departure: Departure,
    pub joined: bool,
    pub left: Option<Time>,
}

/// What the clients' [`Io`] calls leave for the world to do.
#[derive(Default)]
pub(crate) struct Pending {
    /// Endpoints with something new to send: (conn, side).
    dirty: Vec<(u32, u8)>,
    announces: Vec<(u32, AnnounceEvent, u32)>,
    completed: Vec<u32>,
}

/// The borrowed parts of the world a client may touch.
struct Wires<'a> {
    now: Time,
    peer: u32,
    conns: &'a mut Vec<Conn>,
    proto: &'a [(Arc<TcpConfig>, CcConfig)],
    class_of: &'a [usize],
    /// The peer's sends go to the send log.
    log_peer: bool,
    /// The peer is an initial seed (its send gaps are not counted).
    seed: bool,
    pending: &'a mut Pending,
    rec: &'a mut SwarmRecorder,
}

/// Linux lets a socket queue about twice the congestion window (at least
/// twice the initial window) before `write` blocks (`tcp_sndbuf_expand`).
#[inline]
fn socket_flushed(ep: &TcpConnection) -> bool {
    let tx = ep.sender();
    let w = tx.window();
    tx.unacked_app_bytes() < 2 * w.cwnd.max(10 * w.mss as u64)
}

impl Io for Wires<'_> {
    fn connect(&mut self, remote: u32, slot: u32) -> u32 {
        let (tcp, cc) = &self.proto[self.class_of[self.peer as usize]];
        let (rtcp, rcc) = &self.proto[self.class_of[remote as usize]];
        let ep = [TcpConnection::connect(tcp.clone(), cc.build()), TcpConnection::listen(rtcp.clone(), rcc.build())];
        let id = self.conns.len() as u32;
        let mut c = Conn::new(self.now, self.peer, remote, ep);
        c.slot[0] = slot;
        hugepages::push(self.conns, c);
        self.pending.dirty.push((id, 0));
        id * 2
    }

    fn frame(&mut self, link: u32, frame: Frame) {
        self.conns[(link / 2) as usize].frame((link % 2) as usize, frame);
    }

    fn write(&mut self, link: u32, bytes: u32) {
        let (ci, s) = ((link / 2) as usize, (link % 2) as usize);
        let c = &mut self.conns[ci];
        c.ep[s].write(bytes as u64);
        c.written[s] += bytes as u64;
        let gap = c.last_send[s].get().map(|t| self.now.saturating_since(t));
        c.last_send[s] = OptTime::some(self.now);
        self.rec.send(self.now, self.peer, link, bytes, gap, !self.seed, self.log_peer, &c.ep[s]);
        if !socket_flushed(&c.ep[s]) {
            c.blocked[s] = true; // the client is told when it drains
        }
        self.pending.dirty.push((ci as u32, s as u8));
    }

    fn flushed(&self, link: u32) -> bool {
        socket_flushed(&self.conns[(link / 2) as usize].ep[(link % 2) as usize])
    }

    fn close(&mut self, link: u32) {
        let (ci, s) = ((link / 2) as usize, (link % 2) as usize);
        let c = &mut self.conns[ci];
        c.slot[s] = NO_SLOT;
        c.closed[s].get_or_insert(self.now);
        if c.ep[s].state() != TcpState::Reset {
            c.ep[s].abort();
            self.pending.dirty.push((ci as u32, s as u8));
        }
    }

    fn announce(&mut self, event: AnnounceEvent, numwant: u32) {
        self.pending.announces.push((self.peer, event, numwant));
    }

    #[inline]
    fn prefetch(&self, link: u32) {
        prefetch_end(self.conns, (link / 2) as usize, (link % 2) as usize, false);
    }

    fn note(&mut self, note: Note) {
        if note == Note::Completed {
            self.pending.completed.push(self.peer);
        }
        self.rec.note(self.now, self.peer, note);
    }
}

/// The path lanes: one per (source, destination latency group).
struct Route {
    /// Source part of a host's lane index.
    src: Vec<u32>,
    /// Destination part of a host's lane index (its latency group).
    dst: Vec<u32>,
    /// Number of destination groups.
    dsts: u32,
}

impl Route {
    /// The lane of packets from `src` to `dst`: they arrive in the order they
    /// were sent whatever the connection, as every packet of a lane crosses
    /// the same FIFO uplink (or none) and takes the same one-way delay.
    #[inline]
    fn lane(&self, src: u32, dst: u32) -> usize {
        (self.src[src as usize] * self.dsts + self.dst[dst as usize]) as usize
    }
}

pub(crate) struct SwarmWorld {
    q: EventQueue<Ev>,
    pub net: Network,
    /// Packets on their way to a downlink or host, one FIFO lane per path
    /// class (see [`Route::lane`]).
    lanes: PacketLanes,
    /// Which path lane a packet takes.
    route: Route,
    host_lanes: PacketLanes,
    pub conns: Vec<Conn>,
    pub peers: Vec<Peer>,
    class_of: Vec<usize>,
    proto: Vec<(Arc<TcpConfig>, CcConfig)>,
    pub tracker: Tracker,
    tracker_delay: Vec<Duration>,
    replies: Vec<Vec<u32>>,
    pending: Pending,
    pub rec: SwarmRecorder,
    pub end: Time,
    pub leechers_left: usize,
    pub data_packets_delivered: u64,
    /// Cycles by kind of event (the `event-cycles` feature; nothing otherwise).
    cycles: EventCycles,
}

impl SwarmWorld {
    pub fn build(sc: &SwarmScenario) -> SwarmWorld {
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
                    log_sends,
                });
                class_of.push(ci);
                groups_of.push(class.group.unwrap_or(0) as u16);
            }
        }
        let host = HostConfig { uplink: sc.uplink, downlink: sc.downlink, ingress_loss: sc.ingress_loss };
        let hosts = vec![host; peers.len()];
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
                    delays[i * g + j] = if i == j {
                        Duration(2 * sc.groups[i].intra.0)
                    } else {
                        sc.groups[i].inter + sc.groups[j].inter
                    };
                }
            }
            let tg = sc.tracker_group.unwrap_or(0);
            let td = groups_of.iter().map(|&pg| delays[pg as usize * g + tg]).collect();
            (Latency::Groups { of_host: groups_of, groups: g, delays }, td)
        };
        // Packets from one source to one latency group leave in send order
        // (a FIFO uplink) and all take the same delay, so they arrive in send
        // order too: they can share a lane. With unlimited uplinks the source
        // side only matters through its group. This relies on every host
        // having the same access links (`hosts` above); a lane that went back
        // in time would trip the event queue's check.
        debug_assert!(hosts.windows(2).all(|w| w[0] == w[1]), "lanes assume identical access links");
        let group_of = |h: usize| match &latency {
            Latency::Groups { of_host, .. } => of_host[h] as u32,
            _ => 0,
        };
        let lane_dsts = match &latency {
            Latency::Groups { groups, .. } => *groups as u32,
            _ => 1,
        };
        let lane_dst: Vec<u32> = (0..peers.len()).map(group_of).collect();
        let lane_src: Vec<u32> =
            if sc.uplink.capacity_bps.is_none() { lane_dst.clone() } else { (0..peers.len() as u32).collect() };
        let lane_count = (lane_src.iter().max().map_or(0, |&m| m as usize + 1)) * lane_dsts as usize;
        let net = Network::new(sc.seed, &hosts, latency);
        let mut q = EventQueue::new();
        let end = Time::ZERO + sc.duration;
        q.schedule(end, Ev::End);
        for (i, p) in peers.iter().enumerate() {
            q.schedule(p.join, Ev::Join { peer: i as u32 });
        }
        let n = peers.len();
        let rec = SwarmRecorder::new(&sc.metrics, n);
        // Every connection is dialled by someone: room for twice each peer's
        // initiations up front (peers dial again as connections close: the
        // full-size E0 point opens 1.3 times its first dials), on huge pages
        // from the first touch. Growing the table mid-run would copy it and
        // fault in a second one; the reserve that is never used costs address
        // space, not memory (at most 131,072 connections of 1.5 kB, ~190 MB
        // of it; beyond, the table grows).
        let dials: usize = peers.iter().map(|p| p.client.config().max_initiate as usize).sum();
        let conns = Vec::with_capacity((2 * dials).min(1 << 17));
        hugepages::advise(&conns);
        SwarmWorld {
            q,
            net,
            lanes: PacketLanes::new(lane_count),
            route: Route { src: lane_src, dst: lane_dst, dsts: lane_dsts },
            host_lanes: PacketLanes::new(n),
            conns,
            leechers_left: peers.iter().filter(|p| !p.seed).count(),
            peers,
            class_of,
            proto: sc.classes.iter().map(|c| (Arc::new(c.tcp.clone()), c.cc.clone())).collect(),
            tracker: Tracker::new(EntityRng::new(sc.seed, EntityId::new(RNG_TRACKER, 0))),
            tracker_delay,
            replies: Vec::new(),
            pending: Pending::default(),
            rec,
            end,
            data_packets_delivered: 0,
            cycles: EventCycles::default(),
        }
    }

    pub fn events(&self) -> u64 {
        self.q.events_processed()
    }

    /// Runs until every leecher has completed (as the tracker records it) or
    /// the scenario's duration.
    /// `watch` is called with the simulated time at least once per `every` of
    /// simulated time and once per [`crate::watch::WATCH_EVENTS`] events; a break stops the run.
    pub fn run(
        &mut self,
        every: Duration,
        watch: &mut Watch<'_>,
        mut spill: Option<&mut Spill<'_>>,
    ) -> ControlFlow<()> {
        let mut pacer = Pacer::new(every);
        while let Some((now, ev)) = self.q.pop_sifted(|at, ev| sift_timer(&mut self.conns, at, ev)) {
            if pacer.due(now) {
                watch(now)?;
                if let Some(sp) = spill.as_deref_mut() {
                    if self.rec.log_rows() >= sp.rows {
                        for (name, chunk) in self.rec.take_logs() {
                            (sp.sink)(name, chunk);
                        }
                    }
                    super::recorder::spill_uplink_logs(&mut self.net, now, sp); // hook (branch uplinks)
                }
            }
            self.cycles.begin();
            match ev {
                Ev::PathLane { lane } => {
                    let x = *self.lanes.get(lane as usize, 0).expect("a scheduled lane has a head");
                    self.cycles.kind(if x.len > 0 { Kind::Data } else { Kind::NoData });
                    let next = self.lanes.advance(lane as usize);
                    if let Some(t) = next {
                        self.q.schedule_head(t, Ev::PathLane { lane });
                    }
                    if let Some(far) = self.lanes.get(lane as usize, LANE_AHEAD) {
                        prefetch::prefetch(far);
                    }
                    if let Some(ahead) = self.lanes.get(lane as usize, LOOKAHEAD) {
                        prefetch_end(&self.conns, ahead.conn as usize, ahead.to as usize, ahead.len > 0);
                    }
                    if let Some(near) = self.lanes.get(lane as usize, CLIENT_AHEAD) {
                        self.prefetch_client(near);
                    }
                    if let Some(next) = self.lanes.get(lane as usize, 0) {
                        self.prefetch_frame(next);
                    }
                    self.hop(now, x, Lane::Path(lane));
                }
                Ev::HostLane { host } => {
                    let x = *self.host_lanes.get(host as usize, 0).expect("a scheduled lane has a head");
                    self.cycles.kind(if x.len > 0 { Kind::Data } else { Kind::NoData });
                    let next = self.host_lanes.advance(host as usize);
                    if let Some(t) = next {
                        self.q.schedule_head(t, Ev::HostLane { host });
                    }
                    self.hop(now, x, Lane::Host(host));
                }
                Ev::EpTimer { conn, side, tag } => {
                    self.prefetch_calendar();
                    // Every change of an endpoint's deadline goes through `drive`.
                    match self.conns[conn as usize].timer[side as usize].fire_following(tag, now) {
                        Firing::Stale => self.cycles.kind(Kind::TimerStale),
                        Firing::Moved(t) => {
                            self.cycles.kind(Kind::TimerMoved);
                            self.q.schedule(t, Ev::EpTimer { conn, side, tag });
                        }
                        Firing::Due => {
                            self.cycles.kind(Kind::TimerDue);
                            self.conns[conn as usize].ep[side as usize].handle_timeout(now);
                            self.after_segment(now, conn, side as usize);
                        }
                    }
                }
                Ev::ClientTimer { peer, tag } => {
                    self.prefetch_calendar();
                    self.cycles.kind(Kind::ClientStale);
                    if self.peers[peer as usize].timer.fire(tag, now) {
                        self.cycles.kind(Kind::Client);
                        self.with_client(now, peer, |c, io| c.handle_timeout(now, io));
                    }
                }
                Ev::Join { peer } => {
                    let p = &mut self.peers[peer as usize];
                    p.joined = true;
                    if let (true, Departure::SeedFor(d)) = (p.seed, p.departure) {
                        self.q.schedule(now + d, Ev::Leave { peer }); // an initial seed seeds from its join
                    }
                    self.with_client(now, peer, |c, io| c.start(now, io));
                }
                Ev::Leave { peer } => {
                    if self.peers[peer as usize].left.is_none() {
                        self.peers[peer as usize].left = Some(now);
                        self.with_client(now, peer, |c, io| c.leave(now, io));
                    }
                }
                Ev::Announce { peer, event, numwant } => {
                    let event = EVENTS[event as usize];
                    let reply = self.tracker.announce(now, peer, event, numwant);
                    if event == AnnounceEvent::Completed && !self.peers[peer as usize].seed {
                        self.leechers_left = self.leechers_left.saturating_sub(1);
                        if self.leechers_left == 0 {
                            self.end = now;
                            break;
                        }
                    }
                    if event != AnnounceEvent::Stopped {
                        self.replies.push(reply);
                        let at = now + self.tracker_delay[peer as usize];
                        self.q.schedule(at, Ev::Reply { peer, reply: self.replies.len() as u32 - 1 });
                    }
                }
                Ev::Reply { peer, reply } => {
                    let peers = std::mem::take(&mut self.replies[reply as usize]);
                    self.with_client(now, peer, |c, io| c.on_tracker_reply(now, &peers, io));
                }
                Ev::End => break,
            }
            self.cycles.end();
        }
        let flow = watch(self.end);
        let table = self.cycles.report();
        if !table.is_empty() {
            eprint!("cycles by kind of event (the event-cycles feature):\n{table}");
        }
        flow
    }

    /// Calls into one peer's client with an [`Io`] over the world, then does
    /// what it asked: sends, announces, departures, its timer.
    fn with_client(&mut self, now: Time, peer: u32, f: impl FnOnce(&mut Client, &mut dyn Io)) {
        let (log_peer, seed) = (self.peers[peer as usize].log_sends, self.peers[peer as usize].seed);
        {
            let mut io = Wires {
                now,
                peer,
                conns: &mut self.conns,
                proto: &self.proto,
                class_of: &self.class_of,
                log_peer,
                seed,
                pending: &mut self.pending,
                rec: &mut self.rec,
            };
            f(&mut self.peers[peer as usize].client, &mut io);
        }
        self.arm_client(peer);
        self.flush_pending(now);
    }

    fn flush_pending(&mut self, now: Time) {
        while let Some((c, s)) = self.pending.dirty.pop() {
            self.drive(now, c, s as usize);
        }
        // Announces and completions are rare: most calls into a client leave
        // both lists empty and end here.
        if self.pending.announces.is_empty() && self.pending.completed.is_empty() {
            return;
        }
        for (peer, event, numwant) in std::mem::take(&mut self.pending.announces) {
            let e = EVENTS.iter().position(|&x| x == event).expect("known event") as u8;
            self.q.schedule(now + self.tracker_delay[peer as usize], Ev::Announce { peer, event: e, numwant });
        }
        for peer in std::mem::take(&mut self.pending.completed) {
            let p = &self.peers[peer as usize];
            match p.departure {
                Departure::Stay => {}
                Departure::Leave => self.q.schedule(now, Ev::Leave { peer }),
                Departure::SeedFor(d) => self.q.schedule(now + d, Ev::Leave { peer }),
            }
        }
    }

    fn arm_client(&mut self, peer: u32) {
        let p = &mut self.peers[peer as usize];
        let Some(d) = p.client.poll_timeout() else { return };
        if let Some(tag) = p.timer.arm(Some(d)) {
            self.q.schedule(d.max(self.q.now()), Ev::ClientTimer { peer, tag });
        }
    }

    /// Sends what endpoint (conn, side) has to send and arms its timer.
    ///
    /// It holds one borrow of the connection throughout (the network, the
    /// lanes, the recorder and the queue are other fields), so the connection
    /// is found once rather than at every use.
    fn drive(&mut self, now: Time, ci: u32, s: usize) {
        let c = &mut self.conns[ci as usize];
        let (src, dst) = (c.peer[s], c.peer[1 - s]);
        while let Some(seg) = c.ep[s].poll_transmit(now) {
            // Looked up per segment: most calls send none (a delayed ACK
            // waits, Nagle holds), and few send more than one.
            let lane = self.route.lane(src, dst);
            let wire = seg.wire_len();
            c.wire_bytes[s] += wire as u64;
            if seg.len > 0 {
                self.rec.payload(seg.len);
            }
            let (hop, time) = match self.net.send(now, HostId(src), HostId(dst), wire) {
                Transit::Dropped { .. } => continue,
                Transit::AtLink { link, time } => (Hop::Link(link), time),
                Transit::AtHost { time, .. } => (Hop::Host, time),
            };
            if self.lanes.push(lane, time, InFlight::pack(hop, ci, (1 - s) as u8, wire, &seg), &seg.sack) {
                self.q.schedule_head(time, Ev::PathLane { lane: lane as u32 });
            }
        }
        let d = c.ep[s].poll_timeout();
        if let (Some(d), Some(tag)) = (d, c.timer[s].arm(d)) {
            self.q.schedule(d.max(now), Ev::EpTimer { conn: ci, side: s as u8, tag });
        }
    }

    /// Moves packet `x`, just out of lane `from`, on: into its downlink's
    /// queue, or to its receiving endpoint. Its SACK blocks, if any, leave
    /// the lane's side queue with it.
    fn hop(&mut self, now: Time, x: InFlight, from: Lane) {
        let sack = if x.has_sack() {
            match from {
                Lane::Path(l) => self.lanes.take_sack(l as usize),
                Lane::Host(h) => self.host_lanes.take_sack(h as usize),
            }
        } else {
            SackBlocks::NONE
        };
        match x.hop() {
            Hop::Link(link) => match self.net.arrive(now, link, x.wire) {
                Transit::Dropped { .. } => {}
                Transit::AtHost { host, time } => {
                    if self.host_lanes.push(host.0 as usize, time, x.to_host(), &sack) {
                        self.q.schedule_head(time, Ev::HostLane { host: host.0 });
                    }
                }
                Transit::AtLink { .. } => unreachable!("a downlink feeds a host"),
            },
            Hop::Host => {
                let s = x.to as usize;
                let dst = self.conns[x.conn as usize].peer[s];
                if !self.net.ingress(HostId(dst), x.wire) {
                    return;
                }
                if x.len > 0 {
                    self.data_packets_delivered += 1;
                }
                self.conns[x.conn as usize].ep[s].handle(now, &x.segment(sack));
                self.after_segment(now, x.conn, s);
            }
        }
    }

    /// After endpoint (conn, side) took a segment or a timeout: tell its
    /// client what changed (accept, connected, frames, closed, drained), then send.
    ///
    /// The connection is looked up again only where a call into a client may
    /// have come between (a client can open connections, which moves the
    /// table); most calls make none.
    fn after_segment(&mut self, now: Time, ci: u32, s: usize) {
        let link = ci * 2 + s as u32;
        let c = &mut self.conns[ci as usize];
        let peer = c.peer[s];
        let state = c.ep[s].state();
        // The acceptor's client decides on a new connection when the SYN arrives.
        if s == 1 && !c.asked && state == TcpState::SynReceived {
            c.asked = true;
            let remote = c.peer[0];
            self.accept(now, ci, peer, remote, link);
        }
        let c = &mut self.conns[ci as usize];
        let slot = c.slot[s];
        if slot != NO_SLOT {
            if s == 0 && !c.connected && state == TcpState::Established {
                c.connected = true;
                self.with_client(now, peer, |cl, io| cl.on_connected(now, slot, io));
            }
            // Whole frames of the other side's stream that have now arrived.
            loop {
                let c = &mut self.conns[ci as usize];
                if c.slot[s] == NO_SLOT {
                    break;
                }
                let delivered = c.ep[s].receiver().delivered();
                match c.take_frame(1 - s, delivered) {
                    Some(f) => {
                        let m = self.cycles.message_begin(&f);
                        self.with_client(now, peer, |cl, io| cl.on_frame(now, slot, f, io));
                        self.cycles.message_end(m);
                    }
                    None => break,
                }
            }
            let c = &mut self.conns[ci as usize];
            if c.slot[s] != NO_SLOT && c.ep[s].state() == TcpState::Reset {
                c.slot[s] = NO_SLOT;
                c.closed[s].get_or_insert(now);
                self.with_client(now, peer, |cl, io| cl.on_closed(now, slot, io));
            } else if c.slot[s] != NO_SLOT && c.blocked[s] && socket_flushed(&c.ep[s]) {
                c.blocked[s] = false;
                self.with_client(now, peer, |cl, io| cl.on_flushed(now, slot, io));
            }
        }
        self.drive(now, ci, s);
    }

    /// A SYN reached `peer` on side 1 of `ci`: its client accepts (taking a
    /// slot) or refuses (the endpoint resets).
    #[cold]
    fn accept(&mut self, now: Time, ci: u32, peer: u32, remote: u32, link: u32) {
        let joined = self.peers[peer as usize].joined && self.peers[peer as usize].left.is_none();
        let mut slot = None;
        if joined {
            self.with_client(now, peer, |c, io| slot = c.accept(now, remote, link, io));
        }
        let c = &mut self.conns[ci as usize];
        match slot {
            Some(sl) => c.slot[1] = sl,
            None => {
                c.closed[1].get_or_insert(now);
                c.ep[1].abort();
            }
        }
    }

    /// Packets and wire bytes in flight, for conservation checks.
    pub fn in_flight(&self) -> (u64, u64) {
        let n = (self.lanes.len() + self.host_lanes.len()) as u64;
        let b = self.lanes.values().chain(self.host_lanes.values()).map(|x| x.wire as u64).sum();
        (n, b)
    }
}
