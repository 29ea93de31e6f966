//! The world of one run: it owns the scheduler, the network, every endpoint and
//! the recorders, and drives the sans-IO transports with `now`.
//!
//! Host layout of the dumbbell: host 0 is the receiver (its downlink is the
//! bottleneck); host `i + 1` is the sender of flow `i`.

use std::ops::ControlFlow;

use torrentlab_engine::{Duration, EntityId, EntityRng, EventQueue, Lanes, Packed, Time};
use torrentlab_net::{HostConfig, HostId, Latency, LinkConfig, LinkId, LinkStats, Network, Transit};
use torrentlab_transport::stream::{Endpoint, Wire};
use torrentlab_transport::tcp::{TcpConnection, TcpReceiver, TcpSender};
use torrentlab_transport::utp::{UtpSocket, Variant};

use crate::event_bits;
use crate::recorder::Recorder;
use crate::report::queue_rows;
use crate::scenario::{ClockOffsets, Scenario, StartSpec};
use crate::timer::{Tag, Timer};
use crate::watch::{Pacer, Spill, Watch};

/// RNG stream kind tag for flows (see [`EntityId::new`]).
const RNG_KIND_FLOW: u16 = 2;
/// RNG stream kind tag for host clocks.
const RNG_KIND_CLOCK: u16 = 3;
const RECEIVER: HostId = HostId(0);

/// A packet in flight: addressing, wire size and the segment (no payload).
#[derive(Clone, Copy, Debug)]
struct Packet {
    dst: HostId,
    flow: u32,
    to_receiver: bool,
    wire: u32,
    body: Wire,
}

/// Where a packet in flight is going next.
#[derive(Clone, Copy, Debug)]
enum Hop {
    /// The entrance of a (capacity-limited) downlink.
    Link(LinkId),
    /// Its destination host.
    Host,
}

#[derive(Clone, Copy, Debug)]
struct InFlight {
    hop: Hop,
    pkt: Packet,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// The head of a FIFO lane of packets in flight is due.
    Lane {
        lane: u32,
    },
    /// An endpoint's timer (endpoint = flow * 2 + side); see [`Timer`].
    Timer {
        ep: u32,
        tag: Tag,
    },
    Start {
        flow: u32,
    },
    Stop {
        flow: u32,
    },
    Sample,
    WindowStart,
    End,
}

/// Lanes and timers ride in their queue keys.
impl Packed for Ev {
    #[inline]
    fn pack(&self) -> Option<u32> {
        match *self {
            Ev::Lane { lane } => event_bits::pack_index(0, lane),
            Ev::Timer { ep, tag } => event_bits::pack_timer(1, ep, tag),
            _ => None,
        }
    }

    #[inline]
    fn unpack(bits: u32) -> Self {
        match event_bits::kind(bits) {
            0 => Ev::Lane { lane: event_bits::index(bits) },
            _ => {
                let (ep, tag) = event_bits::timer(bits);
                Ev::Timer { ep, tag }
            }
        }
    }
}

/// One bulk flow: a sender on its own host, a receiver on the shared host.
pub(crate) struct Flow {
    pub label: String,
    pub cc: &'static str,
    /// "tcp" or "utp".
    pub transport: &'static str,
    pub sender: Box<dyn Endpoint>,
    pub receiver: Box<dyn Endpoint>,
    pub host: HostId,
    pub start: Time,
    pub stop: Option<Time>,
    pub size: Option<u64>,
    pub started: bool,
    pub completed_at: Option<Time>,
    /// Wire bytes (headers included) sent towards the receiver, and back.
    pub wire_bytes_forward: u64,
    pub wire_bytes_reverse: u64,
}

/// Counters a benchmark reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Perf {
    /// Events the scheduler delivered.
    pub events: u64,
    /// Data segments (payload > 0) that reached a receiver.
    pub data_packets_delivered: u64,
    /// Simulated time covered.
    pub sim_seconds: f64,
}

pub(crate) struct World {
    q: EventQueue<Ev>,
    pub net: Network,
    /// Packets in flight. Lane `2f` carries flow f's data to the bottleneck,
    /// `2f + 1` its ACKs home; lane `2n + h` carries what leaves host h's
    /// downlink. Each lane is FIFO in time, so only its head sits in `q`.
    lanes: Lanes<InFlight>,
    n_flows: usize,
    pub flows: Vec<Flow>,
    timers: Vec<Timer>,
    pub end: Time,
    pub bottleneck: LinkId,
    pub bottleneck_rate: u64,
    sample_interval: Option<Duration>,
    pub window_start: Time,
    pub at_window_start: Option<Snapshot>,
    pub data_packets_delivered: u64,
    pub rec: Recorder,
}

/// Counters at the start of the summary window.
#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    pub delivered: Vec<u64>,
    pub bottleneck: LinkStats,
}

impl World {
    pub fn build(sc: &Scenario) -> World {
        let n = &sc.network;
        let receiver =
            HostConfig { uplink: LinkConfig::TRANSPARENT, downlink: n.bottleneck, ingress_loss: n.data_loss };
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
                ClockOffsets::Random => {
                    EntityRng::new(sc.seed, EntityId::new(RNG_KIND_CLOCK, h as u64)).next_u64() as u32
                }
            })
            .collect();
        let mut q = EventQueue::new();
        let end = Time::ZERO + sc.duration;
        q.schedule(end, Ev::End);
        let mut flows = Vec::with_capacity(sc.flows.len());
        for (i, f) in sc.flows.iter().enumerate() {
            let mut rng = EntityRng::new(sc.seed, EntityId::new(RNG_KIND_FLOW, i as u64));
            let start = match f.start {
                StartSpec::At(t) => t,
                StartSpec::Uniform(lo, hi) => Duration(rng.range_inclusive(lo.0, hi.0)),
            };
            let start = Time::ZERO + start;
            q.schedule(start, Ev::Start { flow: i as u32 });
            let (sender, receiver): (Box<dyn Endpoint>, Box<dyn Endpoint>) = match &f.utp {
                None if f.tcp.handshake => (
                    Box::new(TcpConnection::connect(f.tcp.clone(), f.cc.build())),
                    Box::new(TcpConnection::listen(f.tcp.clone(), f.cc.build())),
                ),
                None => {
                    (Box::new(TcpSender::new(f.tcp.clone(), f.cc.build())), Box::new(TcpReceiver::new(f.tcp.clone())))
                }
                Some(u) => {
                    // BEP 29: a random connection id; the initiator starts at
                    // sequence 1, the acceptor at a random one (as libutp).
                    let conn_id = rng.next_u64() as u16;
                    let acceptor_seq = rng.next_u64() as u16;
                    let clock = |h: usize| clocks[h];
                    (
                        Box::new(UtpSocket::connect(u.clone(), start, conn_id, 1, clock(i + 1))),
                        Box::new(UtpSocket::accept(u.clone(), conn_id, acceptor_seq, clock(0))),
                    )
                }
            };
            let stop = f.stop.map(|s| Time::ZERO + s);
            if let Some(s) = stop {
                q.schedule(s, Ev::Stop { flow: i as u32 });
            }
            flows.push(Flow {
                label: f.label.clone(),
                cc: match &f.utp {
                    None => f.cc.name(),
                    Some(u) => match u.cc.variant {
                        Variant::Bep29 => "ledbat-bep29",
                        Variant::Rfc6817 => "ledbat-rfc6817",
                        Variant::Draft => "ledbat-draft",
                    },
                },
                transport: if f.utp.is_some() { "utp" } else { "tcp" },
                sender,
                receiver,
                host: HostId(i as u32 + 1),
                start,
                stop,
                size: f.size,
                started: false,
                completed_at: None,
                wire_bytes_forward: 0,
                wire_bytes_reverse: 0,
            });
        }
        let last_start = flows.iter().map(|f| f.start).max().unwrap_or(Time::ZERO);
        let window_start = sc.metrics.summary_start.map_or(last_start, |s| Time::ZERO + s);
        q.schedule(window_start, Ev::WindowStart);
        if sc.metrics.sample_interval.is_some() {
            q.schedule(Time::ZERO, Ev::Sample);
        }
        let timers = vec![Timer::default(); flows.len() * 2];
        World {
            q,
            lanes: Lanes::new(flows.len() * 2 + hosts.len()),
            n_flows: flows.len(),
            timers,
            end,
            bottleneck,
            bottleneck_rate: n.bottleneck.capacity_bps.expect("validated: the bottleneck has a capacity"),
            sample_interval: sc.metrics.sample_interval,
            window_start,
            at_window_start: None,
            data_packets_delivered: 0,
            rec: Recorder::new(sc.metrics.sample_interval.is_some()),
            net,
            flows,
        }
    }

    /// Runs to the end of the scenario, or until `watch` breaks. `watch` is
    /// called with the simulated time at least once per `every` of simulated
    /// time and once per [`crate::watch::WATCH_EVENTS`] events, so a caller can stop a run
    /// within milliseconds of wall time whatever the scenario.
    pub fn run(
        &mut self,
        every: Duration,
        watch: &mut Watch<'_>,
        mut spill: Option<&mut Spill<'_>>,
    ) -> ControlFlow<()> {
        let mut pacer = Pacer::new(every);
        while let Some((now, ev)) = self.q.pop() {
            if pacer.due(now) {
                watch(now)?;
                if let Some(sp) = spill.as_deref_mut() {
                    self.spill(now, sp);
                }
            }
            match ev {
                Ev::Lane { lane } => {
                    let x = *self.lanes.get(lane as usize, 0).expect("a scheduled lane has a head");
                    let next = self.lanes.advance(lane as usize);
                    if let Some(t) = next {
                        self.q.schedule_head(t, Ev::Lane { lane });
                    }
                    match x.hop {
                        Hop::Link(link) => match self.net.arrive(now, link, x.pkt.wire) {
                            Transit::Dropped { .. } => {}
                            Transit::AtHost { host, time } => {
                                let lane = 2 * self.n_flows + host.0 as usize;
                                self.enqueue(lane, time, InFlight { hop: Hop::Host, pkt: x.pkt });
                            }
                            Transit::AtLink { .. } => unreachable!("a downlink feeds a host"),
                        },
                        Hop::Host => self.arrive_host(now, x.pkt),
                    }
                }
                Ev::Timer { ep, tag } => self.timer(now, ep, tag),
                Ev::Start { flow } => {
                    let f = &mut self.flows[flow as usize];
                    f.started = true;
                    f.sender.write(f.size.unwrap_or(u64::MAX / 4));
                    if f.size.is_some() {
                        f.sender.close(); // the transfer ends after these bytes
                    }
                    self.drive_sender(now, flow as usize);
                }
                Ev::Stop { flow } => self.flows[flow as usize].sender.stop_writing(),
                Ev::Sample => {
                    self.rec.sample(now, &self.flows);
                    if let Some(iv) = self.sample_interval {
                        if now + iv < self.end {
                            self.q.schedule(now + iv, Ev::Sample);
                        }
                    }
                }
                Ev::WindowStart => {
                    self.at_window_start = Some(Snapshot {
                        delivered: self.flows.iter().map(|f| f.receiver.delivered()).collect(),
                        bottleneck: self.net.link_mut(self.bottleneck).stats(now),
                    });
                }
                Ev::End => break,
            }
        }
        watch(self.end)
    }

    /// Hands over the queue log and the time series when they have grown to
    /// `sp.rows` rows (see [`Spill`]).
    fn spill(&mut self, now: Time, sp: &mut Spill<'_>) {
        let link = self.net.link_mut(self.bottleneck);
        if link.logged() >= sp.rows {
            (sp.sink)("queue", queue_rows(&link.drain_log(now)));
        }
        if self.rec.rows() >= sp.rows {
            (sp.sink)("timeseries", self.rec.take_table());
        }
    }

    fn arrive_host(&mut self, now: Time, p: Packet) {
        if !self.net.ingress(p.dst, p.wire) {
            return;
        }
        let fi = p.flow as usize;
        if p.to_receiver {
            let f = &mut self.flows[fi];
            f.receiver.handle(now, &p.body);
            if p.body.payload_len() > 0 {
                self.data_packets_delivered += 1;
            }
            if f.completed_at.is_none() && f.size.is_some_and(|s| f.receiver.delivered() >= s) {
                f.completed_at = Some(now);
            }
            self.drive_receiver(now, fi);
        } else {
            self.flows[fi].sender.handle(now, &p.body);
            self.drive_sender(now, fi);
        }
    }

    fn timer(&mut self, now: Time, ep: u32, tag: Tag) {
        if !self.timers[ep as usize].fire(tag, now) {
            return; // superseded by an earlier timer
        }
        let fi = (ep / 2) as usize;
        if ep.is_multiple_of(2) {
            self.flows[fi].sender.handle_timeout(now);
            self.drive_sender(now, fi);
        } else {
            self.flows[fi].receiver.handle_timeout(now);
            self.drive_receiver(now, fi);
        }
    }

    /// Makes sure a timer event fires no later than `deadline`. A deadline that
    /// moved later keeps the earlier event, which then fires harmlessly and
    /// re-arms (see [`Timer`]).
    #[inline]
    fn arm(&mut self, ep: usize, deadline: Option<Time>) {
        if let (Some(d), Some(tag)) = (deadline, self.timers[ep].arm(deadline)) {
            self.q.schedule(d.max(self.q.now()), Ev::Timer { ep: ep as u32, tag });
        }
    }

    fn drive_sender(&mut self, now: Time, fi: usize) {
        let src = self.flows[fi].host;
        while let Some(body) = self.flows[fi].sender.poll_transmit(now) {
            self.transmit(now, src, RECEIVER, fi as u32, true, body);
        }
        let d = self.flows[fi].sender.poll_timeout();
        self.arm(fi * 2, d);
    }

    fn drive_receiver(&mut self, now: Time, fi: usize) {
        let dst = self.flows[fi].host;
        while let Some(body) = self.flows[fi].receiver.poll_transmit(now) {
            self.transmit(now, RECEIVER, dst, fi as u32, false, body);
        }
        let d = self.flows[fi].receiver.poll_timeout();
        self.arm(fi * 2 + 1, d);
    }

    #[inline]
    fn transmit(&mut self, now: Time, src: HostId, dst: HostId, flow: u32, to_receiver: bool, body: Wire) {
        let wire = body.wire_len();
        let f = &mut self.flows[flow as usize];
        if to_receiver {
            f.wire_bytes_forward += wire as u64;
        } else {
            f.wire_bytes_reverse += wire as u64;
        }
        let pkt = Packet { dst, flow, to_receiver, wire, body };
        let lane = 2 * flow as usize + usize::from(!to_receiver);
        match self.net.send(now, src, dst, wire) {
            Transit::Dropped { .. } => {}
            Transit::AtLink { link, time } => self.enqueue(lane, time, InFlight { hop: Hop::Link(link), pkt }),
            Transit::AtHost { time, .. } => self.enqueue(lane, time, InFlight { hop: Hop::Host, pkt }),
        }
    }

    #[inline]
    fn enqueue(&mut self, lane: usize, time: Time, x: InFlight) {
        if self.lanes.push(lane, time, x) {
            self.q.schedule_head(time, Ev::Lane { lane: lane as u32 });
        }
    }

    /// Packets and wire bytes currently in flight (in the arena), for
    /// conservation checks.
    pub fn in_flight(&self) -> (u64, u64) {
        (self.lanes.len() as u64, self.lanes.values().map(|x| x.pkt.wire as u64).sum())
    }

    pub fn perf(&self) -> Perf {
        Perf {
            events: self.q.events_processed(),
            data_packets_delivered: self.data_packets_delivered,
            sim_seconds: self.end.as_secs_f64(),
        }
    }
}
