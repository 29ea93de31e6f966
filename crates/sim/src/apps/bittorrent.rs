//! The BitTorrent application: one client per peer host (mainline 4.0.x,
//! crates/bittorrent), driven through [`Io`] over the world's connections,
//! and the tracker.
//!
//! The tracker is not a host: announces travel as control-plane messages
//! with the one-way delay between the peer and the tracker's place (a few
//! hundred bytes every 30 minutes would not change what the access links
//! carry).

use std::any::Any;
use std::ops::ControlFlow;
use std::sync::Arc;

use torrentlab_bittorrent::client::{Client, Frame, Io, Note};
use torrentlab_bittorrent::dial::{Refusal, Transport as BtTransport};
use torrentlab_bittorrent::tracker::{AnnounceEvent, Tracker};
use torrentlab_engine::{prefetch, Duration, EntityRng, OptTime, Time};
use torrentlab_net::HostId;
use torrentlab_transport::cc::CcConfig;
use torrentlab_transport::tcp::{TcpConfig, TcpConnection};
use torrentlab_transport::utp::{UtpConfig, UtpSocket};

use super::frames::ConnFrames;
use crate::endpoint::Transport;
use crate::scenario::swarm::Departure;
use crate::swarm::connections::ConnRow;
use crate::swarm::recorder::SwarmRecorder;
use crate::timer::{Tag, Timer};
use crate::watch::Spill;
use crate::world::{App, Fabric, Link};

/// One peer: its client and where it is in its life. Peer `i` is host `i`.
pub(crate) struct Peer {
    pub timer: Timer,
    /// Its timer's id in the fabric.
    pub timer_id: u32,
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

/// The transport settings of the peers of one class, for the connections
/// they dial and those they answer (which transports they use is the
/// client's choice: `ClientConfig::transports`).
pub(crate) struct ClassProto {
    pub tcp: Arc<TcpConfig>,
    pub cc: CcConfig,
    pub utp: Arc<UtpConfig>,
}

/// The application's own events.
#[derive(Clone, Copy, Debug)]
enum Event {
    Join(u32),
    Leave(u32),
    /// An announce reaches the tracker.
    Announce {
        peer: u32,
        event: AnnounceEvent,
        numwant: u32,
    },
    /// The tracker's reply (an index into `replies`) reaches the peer.
    Reply {
        peer: u32,
        reply: u32,
    },
}

/// What the clients' [`Io`] calls leave for after their sends.
#[derive(Default)]
struct Pending {
    announces: Vec<(u32, AnnounceEvent, u32)>,
    completed: Vec<u32>,
}

pub(crate) struct Swarm {
    /// This application's index in the world.
    pub id: u32,
    pub peers: Vec<Peer>,
    pub class_of: Vec<usize>,
    pub proto: Vec<ClassProto>,
    /// Each host's clock offset, microseconds (uTP timestamps).
    pub clocks: Vec<u32>,
    /// Each peer's stream for uTP connection ids.
    pub dial_rngs: Vec<EntityRng>,
    pub tracker: Tracker,
    pub tracker_delay: Vec<Duration>,
    replies: Vec<Vec<u32>>,
    events: Vec<Event>,
    pending: Pending,
    /// Frames of every connection, by connection.
    pub frames: Vec<ConnFrames>,
    /// The report rows of connections over (their places reused).
    pub retired: Vec<ConnRow>,
    pub rec: SwarmRecorder,
    pub leechers_left: usize,
    /// End the run when the last leecher has finished (a household's run
    /// lasts its duration, for the traffic beside the swarm).
    pub end_when_done: bool,
}

/// The parts of the world and of the application a client may touch.
struct Wires<'a> {
    now: Time,
    app: u32,
    peer: u32,
    f: &'a mut Fabric,
    frames: &'a mut Vec<ConnFrames>,
    proto: &'a [ClassProto],
    class_of: &'a [usize],
    clocks: &'a [u32],
    dial_rng: &'a mut EntityRng,
    /// The peer's sends go to the send log.
    log_peer: bool,
    /// The peer is an initial seed (its send gaps are not counted).
    seed: bool,
    pending: &'a mut Pending,
    rec: &'a mut SwarmRecorder,
}

impl Io for Wires<'_> {
    /// Host `remote`'s address in the capture's address plan (10.0.0.0 +
    /// host + 1: hosts 0 to 254 share 10.0.0.0/24), as every peer sees it.
    fn address(&self, remote: u32) -> Option<[u8; 4]> {
        Some(crate::capture::headers::address(remote))
    }

    fn connect(&mut self, remote: u32, slot: u32, transport: BtTransport) -> u32 {
        let mine = &self.proto[self.class_of[self.peer as usize]];
        let theirs = &self.proto[self.class_of[remote as usize]];
        // The dialler's settings; the acceptor answers with its own.
        let ep = match transport {
            BtTransport::Tcp => [
                Transport::Tcp(TcpConnection::connect(mine.tcp.clone(), mine.cc.build())),
                Transport::Tcp(TcpConnection::listen(theirs.tcp.clone(), theirs.cc.build())),
            ],
            BtTransport::Utp => {
                // BEP 29: a random connection id; the initiator starts at
                // sequence 1, the acceptor at a random one (as libutp).
                let conn_id = self.dial_rng.next_u64() as u16;
                let acceptor_seq = self.dial_rng.next_u64() as u16;
                let (here, there) = (self.clocks[self.peer as usize], self.clocks[remote as usize]);
                [
                    Transport::Utp(UtpSocket::connect(mine.utp.clone(), self.now, conn_id, 1, here)),
                    Transport::Utp(UtpSocket::accept(theirs.utp.clone(), conn_id, acceptor_seq, there)),
                ]
            }
        };
        let hosts = [HostId(self.peer), HostId(remote)];
        let link = self.f.connect(self.now, hosts, [self.app; 2], ep, slot);
        if self.frames.len() <= link.conn() {
            self.frames.resize_with(link.conn() + 1, ConnFrames::new);
        }
        link.0
    }

    fn frame(&mut self, link: u32, frame: Frame) {
        let link = Link(link);
        let written = self.f.conns[link.conn()].written[link.side()];
        if let Some(cap) = self.f.capture.as_deref_mut() {
            let c = &self.f.conns[link.conn()];
            cap.frame(c.serial, link.side(), c.host, written, &frame);
        }
        if let Some(mark) = self.frames[link.conn()].frame(link.side(), frame, written) {
            self.f.set_read_mark(link.peer(), mark);
        }
    }

    fn write(&mut self, link: u32, bytes: u32) {
        let link = Link(link);
        self.f.write(link, bytes as u64);
        let last = &mut self.frames[link.conn()].last_send[link.side()];
        let gap = last.get().map(|t| self.now.saturating_since(t));
        *last = OptTime::some(self.now);
        // The send log names the connection by its serial (read only for a logged peer).
        let serial = if self.log_peer { self.f.conns[link.conn()].serial } else { 0 };
        self.rec.send(self.now, self.peer, serial, bytes, gap, !self.seed, self.log_peer, self.f.endpoint(link));
    }

    fn flushed(&self, link: u32) -> bool {
        self.f.flushed(Link(link))
    }

    fn close(&mut self, link: u32) {
        self.f.abort(self.now, Link(link));
    }

    fn announce(&mut self, event: AnnounceEvent, numwant: u32) {
        self.pending.announces.push((self.peer, event, numwant));
    }

    fn note(&mut self, note: Note) {
        if note == Note::Completed {
            self.pending.completed.push(self.peer);
        }
        self.rec.note(self.now, self.peer, note);
    }
}

impl Swarm {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: u32,
        peers: Vec<Peer>,
        class_of: Vec<usize>,
        proto: Vec<ClassProto>,
        clocks: Vec<u32>,
        dial_rngs: Vec<EntityRng>,
        tracker: Tracker,
        tracker_delay: Vec<Duration>,
        rec: SwarmRecorder,
    ) -> Swarm {
        Swarm {
            id,
            leechers_left: peers.iter().filter(|p| !p.seed).count(),
            peers,
            class_of,
            proto,
            clocks,
            dial_rngs,
            tracker,
            tracker_delay,
            replies: Vec::new(),
            events: Vec::new(),
            pending: Pending::default(),
            frames: Vec::new(),
            retired: Vec::new(),
            rec,
            end_when_done: true,
        }
    }

    /// Schedules `e` at `at` through the fabric.
    fn schedule(&mut self, f: &mut Fabric, at: Time, e: Event) {
        self.events.push(e);
        f.schedule(at, self.id, self.events.len() as u32 - 1);
    }

    /// Schedules every peer's arrival (at build time, in peer order).
    pub fn schedule_joins(&mut self, f: &mut Fabric) {
        for i in 0..self.peers.len() {
            let at = self.peers[i].join;
            self.schedule(f, at, Event::Join(i as u32));
        }
    }

    /// Calls into one peer's client with an [`Io`] over the world, then does
    /// what it asked: sends, its timer, announces, departures.
    fn with_client(&mut self, now: Time, f: &mut Fabric, peer: u32, call: impl FnOnce(&mut Client, &mut dyn Io)) {
        let p = &mut self.peers[peer as usize];
        let mut io = Wires {
            now,
            app: self.id,
            peer,
            f,
            frames: &mut self.frames,
            proto: &self.proto,
            class_of: &self.class_of,
            clocks: &self.clocks,
            dial_rng: &mut self.dial_rngs[peer as usize],
            log_peer: p.log_sends,
            seed: p.seed,
            pending: &mut self.pending,
            rec: &mut self.rec,
        };
        call(&mut p.client, &mut io);
        if let Some(d) = p.client.poll_timeout() {
            if let Some(tag) = p.timer.arm(Some(d)) {
                f.arm_timer(p.timer_id, d, tag);
            }
        }
        f.flush(now);
        // Announces and completions are rare: most calls into a client leave
        // both lists empty and end here.
        if self.pending.announces.is_empty() && self.pending.completed.is_empty() {
            return;
        }
        for (peer, event, numwant) in std::mem::take(&mut self.pending.announces) {
            let at = now + self.tracker_delay[peer as usize];
            self.schedule(f, at, Event::Announce { peer, event, numwant });
        }
        for peer in std::mem::take(&mut self.pending.completed) {
            match self.peers[peer as usize].departure {
                Departure::Stay => {}
                Departure::Leave => self.schedule(f, now, Event::Leave(peer)),
                Departure::SeedFor(d) => self.schedule(f, now + d, Event::Leave(peer)),
            }
        }
    }
}

impl App for Swarm {
    fn event(&mut self, now: Time, f: &mut Fabric, ev: u32) -> ControlFlow<()> {
        match self.events[ev as usize] {
            Event::Join(peer) => {
                let p = &mut self.peers[peer as usize];
                p.joined = true;
                if let (true, Departure::SeedFor(d)) = (p.seed, p.departure) {
                    self.schedule(f, now + d, Event::Leave(peer)); // an initial seed seeds from its join
                }
                self.with_client(now, f, peer, |c, io| c.start(now, io));
            }
            Event::Leave(peer) => {
                if self.peers[peer as usize].left.is_none() {
                    self.peers[peer as usize].left = Some(now);
                    self.with_client(now, f, peer, |c, io| c.leave(now, io));
                }
            }
            Event::Announce { peer, event, numwant } => {
                let reply = self.tracker.announce(now, peer, event, numwant);
                if event == AnnounceEvent::Completed && !self.peers[peer as usize].seed {
                    self.leechers_left = self.leechers_left.saturating_sub(1);
                    if self.leechers_left == 0 && self.end_when_done {
                        return ControlFlow::Break(());
                    }
                }
                if event != AnnounceEvent::Stopped {
                    self.replies.push(reply);
                    let at = now + self.tracker_delay[peer as usize];
                    self.schedule(f, at, Event::Reply { peer, reply: self.replies.len() as u32 - 1 });
                }
            }
            Event::Reply { peer, reply } => {
                let peers = std::mem::take(&mut self.replies[reply as usize]);
                self.with_client(now, f, peer, |c, io| c.on_tracker_reply(now, &peers, io));
            }
        }
        ControlFlow::Continue(())
    }

    fn timer(&mut self, now: Time, f: &mut Fabric, peer: u32, tag: Tag) {
        if self.peers[peer as usize].timer.fire(tag, now) {
            self.with_client(now, f, peer, |c, io| c.handle_timeout(now, io));
        }
    }

    #[cold]
    fn accept(&mut self, now: Time, f: &mut Fabric, link: Link, host: HostId, remote: HostId) -> Option<u32> {
        let p = &self.peers[host.0 as usize];
        if !p.joined || p.left.is_some() {
            return None;
        }
        // Only a stream reaches a peer's listening socket.
        let Ok(transport) = BtTransport::try_from(f.endpoint(link).kind()) else { return None };
        let mut answer = Err(Refusal::Full);
        self.with_client(now, f, host.0, |c, io| answer = c.accept(now, remote.0, link.0, transport, io));
        if answer == Err(Refusal::Transport) {
            f.ignore(link);
        }
        answer.ok()
    }

    fn connected(&mut self, now: Time, f: &mut Fabric, link: Link, slot: u32) {
        let peer = f.conns[link.conn()].host[link.side()];
        self.with_client(now, f, peer, |c, io| c.on_connected(now, slot, io));
    }

    /// Hands the client each whole frame of the other side's stream that has
    /// now arrived, while the connection stays open.
    fn readable(&mut self, now: Time, f: &mut Fabric, link: Link, slot: u32) {
        let (ci, s) = (link.conn(), link.side());
        let peer = f.conns[ci].host[s];
        while f.is_open(link) {
            let Some(frame) = self.frames[ci].take_frame(1 - s, f.delivered(link)) else { break };
            f.set_read_mark(link, self.frames[ci].next_end[1 - s]);
            self.with_client(now, f, peer, |c, io| c.on_frame(now, slot, frame, io));
        }
    }

    /// The connection's frames and the client's state of the connection.
    fn prefetch_reader(&self, f: &Fabric, link: Link, slot: u32) {
        if let Some(frames) = self.frames.get(link.conn()) {
            prefetch::prefetch(frames);
        }
        let peer = f.conns[link.conn()].host[link.side()];
        // The slot's place, not its contents: reading whether it is taken
        // would wait for the very line asked for.
        if let Some(pc) = self.peers.get(peer as usize).and_then(|p| p.client.slots().get(slot as usize)) {
            prefetch::prefetch(pc);
        }
    }

    fn writable(&mut self, now: Time, f: &mut Fabric, link: Link, slot: u32) {
        let peer = f.conns[link.conn()].host[link.side()];
        self.with_client(now, f, peer, |c, io| c.on_flushed(now, slot, io));
    }

    fn closed(&mut self, now: Time, f: &mut Fabric, link: Link, slot: u32) {
        let peer = f.conns[link.conn()].host[link.side()];
        self.with_client(now, f, peer, |c, io| c.on_closed(now, slot, io));
    }

    fn retire(&mut self, f: &Fabric, conn: u32) {
        let frames = std::mem::replace(&mut self.frames[conn as usize], ConnFrames::new());
        self.retired.push(ConnRow::of(&f.conns[conn as usize], &frames));
    }

    fn spill(&mut self, now: Time, f: &mut Fabric, sp: &mut Spill<'_>) {
        if self.rec.log_rows() >= sp.rows {
            for (name, chunk) in self.rec.take_logs() {
                (sp.sink)(name, chunk);
            }
        }
        crate::swarm::recorder::spill_uplink_logs(&mut f.net, now, sp);
    }

    /// The pieces the leechers hold, of those they need (each leecher needs
    /// the whole torrent); none for a run that lasts its duration whatever
    /// the swarm does (a household's).
    fn work(&self) -> Option<(u64, u64)> {
        if !self.end_when_done {
            return None;
        }
        let leechers = self.peers.iter().filter(|p| !p.seed);
        let (had, need) = leechers.fold((0, 0), |(h, n), p| {
            (h + u64::from(p.client.pieces_had()), n + u64::from(p.client.torrent().pieces()))
        });
        Some((had, need))
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
