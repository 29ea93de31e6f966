//! The network side of the world: the event queue, hosts and links, the
//! packets in flight, and every connection. Applications act on the world
//! through it ([`Fabric::connect`], [`Fabric::write`], [`Fabric::schedule`]...);
//! the event loop ([`super::World::run`]) moves packets with it.

use torrentlab_engine::{EventQueue, Time};
use torrentlab_net::{HostId, Network, Transit};
use torrentlab_transport::datagram::{Arrival, Datagram};
use torrentlab_transport::stream::{Endpoint, Wire};
use torrentlab_transport::tcp::SackBlocks;

use super::app::Link;
use super::conn::{Conn, Life, NO_SLOT};
use super::conn_table::ConnTable;
use super::pacer::{Offer, PaceRule, Pacer};
use super::packet::{Hop, InFlight, PacketLanes};
use super::Ev;
use crate::capture::Capture;
use crate::endpoint::Transport;
use crate::timer::Tag;

/// Which FIFO lane a packet waits in on its way to a downlink or host.
/// Packets of one lane must arrive in the order they were sent.
pub(crate) enum Route {
    /// One lane per connection and direction (`2 x conn + side`): always
    /// FIFO, as a connection's packets in one direction share every link.
    PerConnection,
    /// One lane per (source, destination latency group): FIFO when every
    /// host has the same access links, as the packets of a lane then cross
    /// the same uplink (or none) and take the same delay. `src[h]` and
    /// `dst[h]` are host `h`'s parts of a lane index; `dsts` the groups.
    ByPath { src: Vec<u32>, dst: Vec<u32>, dsts: u32 },
}

impl Route {
    #[inline]
    fn lane(&self, conn: u32, side: usize, src: u32, dst: u32) -> usize {
        match self {
            Route::PerConnection => 2 * conn as usize + side,
            Route::ByPath { src: s, dst: d, dsts } => (s[src as usize] * dsts + d[dst as usize]) as usize,
        }
    }
}

pub(crate) struct Fabric {
    pub(super) q: EventQueue<Ev>,
    pub net: Network,
    /// Packets on their way to a downlink or host (see [`Route`]).
    pub(super) lanes: PacketLanes,
    route: Route,
    /// Packets that left a host's downlink, one lane per host.
    host_lanes: PacketLanes,
    pub conns: ConnTable,
    /// Ends with something new to send: (conn, side), driven last first.
    dirty: Vec<(u32, u8)>,
    /// Application timers: (application, its key).
    pub(super) timers: Vec<(u32, u32)>,
    /// Data packets (payload > 0) that reached their endpoint.
    pub data_packets_delivered: u64,
    /// Packets sent, by payload bytes (index 0: none).
    pub payload_hist: Vec<u64>,
    /// Each host's pacer, if its application paces (empty: nobody does).
    pacers: Vec<Option<Pacer>>,
    /// Packet captures (`[capture]`), if any: shown every packet a captured
    /// host sends or receives, and nothing else changes.
    pub(crate) capture: Option<Box<Capture>>,
}

impl Fabric {
    /// `lanes`: how many lanes `route` needs. The run ends at `end` at the
    /// latest (the first event queued, so it comes before anything else due then).
    pub fn new(net: Network, route: Route, lanes: usize, conns: ConnTable, end: Time) -> Fabric {
        let hosts = net.host_count();
        let mut q = EventQueue::new();
        q.schedule(end, Ev::End);
        Fabric {
            q,
            net,
            lanes: PacketLanes::new(lanes),
            route,
            host_lanes: PacketLanes::new(hosts),
            conns,
            dirty: Vec::new(),
            timers: Vec::new(),
            data_packets_delivered: 0,
            payload_hist: Vec::new(),
            pacers: Vec::new(),
            capture: None,
        }
    }

    /// Opens a connection from `hosts[0]` to `hosts[1]` with these
    /// endpoints, side `s` owned by application `owners[s]`. Nothing is sent
    /// until the dialling end is written to or [`Fabric::flush`]ed.
    pub fn open(&mut self, now: Time, hosts: [HostId; 2], owners: [u32; 2], ep: [Transport; 2]) -> u32 {
        self.conns.push(Conn::new(now, [hosts[0].0, hosts[1].0], owners, ep))
    }

    /// Dials: opens a connection whose side 0 is `slot` of its owner, and
    /// sends its first packet when the caller's turn ends.
    pub fn connect(&mut self, now: Time, hosts: [HostId; 2], owners: [u32; 2], ep: [Transport; 2], slot: u32) -> Link {
        let id = self.open(now, hosts, owners, ep);
        self.conns[id as usize].slot[0] = slot;
        self.mark(id, 0);
        Link::new(id, 0)
    }

    /// Gives `link` to `slot` of its owner (for connections opened with
    /// [`Fabric::open`], which the owner takes without being asked).
    pub fn claim(&mut self, link: Link, slot: u32) {
        let c = &mut self.conns[link.conn()];
        c.slot[link.side()] = slot;
        if link.side() == 1 {
            c.asked = true;
        }
    }

    #[inline]
    pub fn endpoint(&self, link: Link) -> &Transport {
        &self.conns[link.conn()].ep[link.side()]
    }

    /// Writes `bytes` more to `link`'s stream; returns whether its socket
    /// can take more (if not, its owner hears [`App::writable`](super::App::writable) when it can).
    #[inline]
    pub fn write(&mut self, link: Link, bytes: u64) -> bool {
        let (ci, s) = (link.conn(), link.side());
        let c = &mut self.conns[ci];
        debug_assert_eq!(c.life, Life::Live, "{link:?} was let go before");
        super::hints::hint_endpoint(&c.ep[s]);
        c.ep[s].write(bytes);
        c.written[s] += bytes;
        let flushed = c.ep[s].flushed();
        if !flushed {
            c.blocked[s] = true;
        }
        self.mark(ci as u32, s);
        flushed
    }

    /// Writes `bytes` more to `link`'s stream without asking to hear when
    /// its socket drains: for a sender that writes everything at once (a
    /// bulk transfer), whose socket would otherwise be checked on every ACK.
    pub fn write_all(&mut self, link: Link, bytes: u64) {
        let (ci, s) = (link.conn(), link.side());
        let c = &mut self.conns[ci];
        super::hints::hint_endpoint(&c.ep[s]);
        c.ep[s].write(bytes);
        c.written[s] += bytes;
        self.mark(ci as u32, s);
    }

    /// Notes that end (conn, side) has something new to send. A run of
    /// marks of one end (a client writing several messages to it) drives
    /// it once.
    #[inline]
    fn mark(&mut self, conn: u32, side: usize) {
        let end = (conn, side as u8);
        if self.dirty.last() != Some(&end) {
            self.dirty.push(end);
        }
    }

    /// Whether `link`'s socket can take more (see [`Transport::flushed`]).
    #[inline]
    pub fn flushed(&self, link: Link) -> bool {
        self.endpoint(link).flushed()
    }

    /// Sends datagram `d` from `link`, a datagram socket.
    pub fn send_datagram(&mut self, link: Link, d: Datagram) {
        let Transport::Datagram(sock) = &mut self.conns[link.conn()].ep[link.side()] else {
            panic!("{link:?} is not a datagram socket");
        };
        sock.send(d);
        self.mark(link.conn() as u32, link.side());
    }

    /// The datagrams that reached `link`, a datagram socket, since the last
    /// call; its owner hears of the next one ([`App::readable`](super::App::readable)).
    pub fn take_arrivals(&mut self, link: Link) -> Vec<Arrival> {
        let c = &mut self.conns[link.conn()];
        let Transport::Datagram(sock) = &mut c.ep[link.side()] else {
            panic!("{link:?} is not a datagram socket");
        };
        c.read_mark[link.side()] = sock.delivered() + 1;
        sock.take_arrivals()
    }

    /// Ends `link`'s stream after what was written (a FIN).
    pub fn finish(&mut self, link: Link) {
        self.conns[link.conn()].ep[link.side()].close();
        self.mark(link.conn() as u32, link.side());
    }

    /// Writes nothing more beyond what has been sent (nothing is sent now).
    pub fn stop_writing(&mut self, link: Link) {
        self.conns[link.conn()].ep[link.side()].stop_writing();
    }

    /// Closes `link` at once (a reset); its owner hears nothing more of it.
    pub fn abort(&mut self, now: Time, link: Link) {
        let (ci, s) = (link.conn(), link.side());
        let c = &mut self.conns[ci];
        debug_assert_eq!(c.life, Life::Live, "{link:?} was let go before");
        c.slot[s] = NO_SLOT;
        c.closed[s].get_or_insert(now);
        if c.ep[s].is_alive() {
            c.ep[s].abort();
            self.mark(ci as u32, s);
        } else {
            self.conns.check(ci as u32);
        }
    }

    /// Refuses the dial that reached acceptor end `link` without a word
    /// where its transport allows it (see [`Transport::ignore`]); called
    /// from [`App::accept`](super::App::accept), which then returns `None`.
    pub fn ignore(&mut self, link: Link) {
        self.conns[link.conn()].ep[link.side()].ignore();
    }

    /// Tells `link`'s owner ([`App::readable`](super::App::readable)) once
    /// `link` has received `bytes` bytes in order (`u64::MAX`: never).
    #[inline]
    pub fn set_read_mark(&mut self, link: Link, bytes: u64) {
        self.conns[link.conn()].read_mark[link.side()] = bytes;
    }

    /// Bytes `link` has received in order.
    #[inline]
    pub fn delivered(&self, link: Link) -> u64 {
        self.endpoint(link).delivered()
    }

    /// Whether `link` still belongs to an application.
    #[inline]
    pub fn is_open(&self, link: Link) -> bool {
        self.conns[link.conn()].slot[link.side()] != NO_SLOT
    }

    /// Schedules event `ev` of application `app` at `at`.
    #[inline]
    pub fn schedule(&mut self, at: Time, app: u32, ev: u32) {
        self.q.schedule(at, Ev::App { app, ev });
    }

    /// A new timer of application `app`, which it knows as `key`; returns
    /// its id for [`Fabric::arm_timer`].
    pub fn new_timer(&mut self, app: u32, key: u32) -> u32 {
        self.timers.push((app, key));
        self.timers.len() as u32 - 1
    }

    /// Queues timer `timer`'s event with `tag` at `at` (or now, if past).
    #[inline]
    pub fn arm_timer(&mut self, timer: u32, at: Time, tag: Tag) {
        let at = at.max(self.q.now());
        self.q.schedule(at, Ev::AppTimer { timer, tag });
    }

    /// Sends what the applications wrote, end by end (the last written first).
    #[inline]
    pub fn flush(&mut self, now: Time) {
        while let Some((c, s)) = self.dirty.pop() {
            self.drive(now, c, s as usize);
        }
    }

    /// Sends what endpoint (conn, side) has to send and arms its timer.
    pub(super) fn drive(&mut self, now: Time, ci: u32, s: usize) {
        let (src, dst) = {
            let c = &self.conns[ci as usize];
            (c.host[s], c.host[1 - s])
        };
        while let Some(pkt) = self.conns[ci as usize].ep[s].poll_transmit(now) {
            if !self.pacers.is_empty() && self.hold_paced(now, ci, s, src, &pkt) {
                continue;
            }
            self.emit(now, ci, s, src, dst, &pkt);
        }
        let c = &mut self.conns[ci as usize];
        let d = c.ep[s].poll_timeout();
        if let (Some(d), Some(tag)) = (d, c.timer[s].arm(d)) {
            self.q.schedule(d.max(now), Ev::EpTimer { conn: ci, side: s as u8, tag });
        }
        if c.slot == [NO_SLOT; 2] {
            self.conns.check(ci);
        }
    }

    /// Puts `pkt`, sent by side `s` of connection `ci` from host `src`, on
    /// the network now.
    #[inline]
    fn emit(&mut self, now: Time, ci: u32, s: usize, src: u32, dst: u32, pkt: &Wire) {
        if let Some(cap) = self.capture.as_deref_mut() {
            let c = &self.conns[ci as usize];
            capture_sent(cap, now, c.serial, s, c, pkt);
        }
        // Looked up per packet: most calls send none (a delayed ACK
        // waits, Nagle holds), and few send more than one.
        let lane = self.route.lane(ci, s, src, dst);
        let wire = pkt.wire_len();
        let c = &mut self.conns[ci as usize];
        c.wire_bytes[s] += wire as u64;
        c.in_flight += 1;
        let len = pkt.payload_len() as usize;
        if len > 0 {
            if len >= self.payload_hist.len() {
                self.payload_hist.resize(len + 1, 0);
            }
            self.payload_hist[len] += 1;
        }
        let (hop, time) = match self.net.send(now, HostId(src), HostId(dst), wire) {
            Transit::Dropped { .. } => {
                self.conns[ci as usize].in_flight -= 1;
                return;
            }
            Transit::AtLink { link, time } => (Hop::Link(link), time),
            Transit::AtHost { time, .. } => (Hop::Host, time),
        };
        let sack = match pkt {
            Wire::Tcp(seg) => seg.sack,
            Wire::Utp(_) | Wire::Datagram(_) => SackBlocks::NONE,
        };
        if self.lanes.push(lane, time, InFlight::pack_wire(hop, ci, (1 - s) as u8, wire, pkt), &sack) {
            self.q.schedule_head(time, Ev::PathLane { lane: lane as u32 });
        }
    }

    /// Paces the data packets the application `app` sends from `host` by
    /// `rule` (see [`Pacer`]).
    pub fn pace(&mut self, host: HostId, app: u32, rule: PaceRule) {
        let i = host.0 as usize;
        if self.pacers.len() <= i {
            self.pacers.resize_with(i + 1, || None);
        }
        self.pacers[i] = Some(Pacer::new(app, rule));
    }

    /// If `pkt` is a data packet of a paced application's end: sends it now
    /// when the host's pacer allows, else holds it for [`Ev::Pace`]. True
    /// when the pacer took it.
    fn hold_paced(&mut self, now: Time, ci: u32, s: usize, src: u32, pkt: &Wire) -> bool {
        let owner = self.conns[ci as usize].owner[s];
        let Some(Some(p)) = self.pacers.get_mut(src as usize) else { return false };
        if p.app != owner || pkt.payload_len() == 0 {
            return false;
        }
        match p.offer(now, ci, s as u8, *pkt) {
            Offer::SendNow => {
                let dst = self.conns[ci as usize].host[1 - s];
                self.emit(now, ci, s, src, dst, pkt);
            }
            Offer::Held { wake } => {
                // Counted as on its way: the pacer refers to the connection.
                self.conns[ci as usize].in_flight += 1;
                if let Some(at) = wake {
                    self.q.schedule(at, Ev::Pace { host: src });
                }
            }
        }
        true
    }

    /// Host `host`'s pacer is due: sends the packet it held longest.
    pub(super) fn release_paced(&mut self, now: Time, host: u32) {
        let Some(Some(p)) = self.pacers.get_mut(host as usize) else { return };
        let (held, wake) = p.release(now);
        if let Some(at) = wake {
            self.q.schedule(at, Ev::Pace { host });
        }
        if let Some((ci, s, pkt)) = held {
            let c = &mut self.conns[ci as usize];
            c.in_flight -= 1;
            let dst = c.host[1 - s as usize];
            self.emit(now, ci, s as usize, host, dst, &pkt);
        }
    }

    /// The head of path lane `lane` is due: moves it on. Returns the end it
    /// reached, if it reached one.
    #[inline]
    pub(super) fn path_lane(&mut self, now: Time, lane: u32) -> Option<(u32, usize)> {
        let x = *self.lanes.get(lane as usize, 0).expect("a scheduled lane has a head");
        if let Some(t) = self.lanes.advance(lane as usize) {
            self.q.schedule_head(t, Ev::PathLane { lane });
        }
        self.hint_lane(lane as usize);
        let sack = if x.has_sack() { self.lanes.take_sack(lane as usize) } else { SackBlocks::NONE };
        self.hop(now, x, sack)
    }

    /// The head of host `host`'s downlink lane is due: delivers it.
    #[inline]
    pub(super) fn host_lane(&mut self, now: Time, host: u32) -> Option<(u32, usize)> {
        let x = *self.host_lanes.get(host as usize, 0).expect("a scheduled lane has a head");
        if let Some(t) = self.host_lanes.advance(host as usize) {
            self.q.schedule_head(t, Ev::HostLane { host });
        }
        let sack = if x.has_sack() { self.host_lanes.take_sack(host as usize) } else { SackBlocks::NONE };
        self.hop(now, x, sack)
    }

    /// Moves packet `x` on: into its downlink's queue, or to its receiving
    /// endpoint, which takes it; returns that end.
    #[inline]
    fn hop(&mut self, now: Time, x: InFlight, sack: SackBlocks) -> Option<(u32, usize)> {
        match x.hop() {
            Hop::Link(link) => {
                match self.net.arrive(now, link, x.wire) {
                    Transit::Dropped { .. } => {
                        self.conns[x.conn as usize].in_flight -= 1;
                        self.conns.check(x.conn);
                    }
                    Transit::AtHost { host, time } => {
                        if self.host_lanes.push(host.0 as usize, time, x.to_host(), &sack) {
                            self.q.schedule_head(time, Ev::HostLane { host: host.0 });
                        }
                    }
                    Transit::AtLink { .. } => unreachable!("a downlink feeds a host"),
                }
                None
            }
            Hop::Host => {
                let s = x.to as usize;
                let c = &mut self.conns[x.conn as usize];
                debug_assert_eq!(c.life, Life::Live, "a packet reached a connection that is over");
                c.in_flight -= 1;
                if !self.net.ingress(HostId(c.host[s]), x.wire) {
                    self.conns.check(x.conn);
                    return None;
                }
                if x.len > 0 {
                    self.data_packets_delivered += 1;
                }
                let w = x.wire(sack);
                if let Some(cap) = self.capture.as_deref_mut() {
                    capture_arrived(cap, now, c.serial, s, c.host, &w);
                }
                c.ep[s].handle(now, &w);
                Some((x.conn, s))
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

/// Shows a captured run's capture a packet sent (out of line: most runs
/// capture nothing, and the send path stays as short as without).
#[cold]
#[inline(never)]
fn capture_sent(cap: &mut Capture, now: Time, ci: u32, s: usize, c: &Conn, pkt: &Wire) {
    cap.sent(now, ci, s, c.host, pkt, &c.ep[s]);
}

/// Shows a captured run's capture a packet that reached side `s`'s host.
#[cold]
#[inline(never)]
fn capture_arrived(cap: &mut Capture, now: Time, ci: u32, s: usize, hosts: [u32; 2], w: &Wire) {
    cap.arrived(now, ci, s, hosts, w);
}
