//! A BitTorrent client for one peer of one torrent, sans-IO: mainline 4.0.x
//! behaviour by default (choker, piece picker, request pipeline, upload rate
//! limiter, peer-set limits, announces).
//!
//! The driver (the simulator, or a test script) owns the transport. It calls
//! the client's inputs with `now` and an [`Io`] through which the client writes
//! to connections, opens and closes them, and announces; the client never
//! reads a clock. Timers are polled: [`Client::poll_timeout`] and
//! [`Client::handle_timeout`].
//!
//! Modules: `config` (the settings of [`ClientConfig`]), [`conn`] (per-connection state), `rows` (what a rechoke reads of
//! every connection, dense), `upload` (requests served, choking, the
//! rate-limited writer), `download` (interest, requests made, pieces),
//! `endgame` (the last blocks asked of everyone, with cancels), `holders`
//! (which remotes have each piece, dense), `fast` (the Fast Extension of
//! BEP 6: `have_all`/`have_none`, allowed-fast pieces served and requested
//! while choked, rejected requests), `request_queue` (libtorrent's request
//! queue, and the whole pieces it gives fast peers), `interest`
//! (libtorrent's interest rule).

mod config;
pub mod conn;
mod connect;
mod download;
mod endgame;
mod fast;
mod holders;
mod interest;
mod peer_end_game;
mod request_queue;
mod rows;
mod slot_set;
mod upload;

#[cfg(test)]
mod connect_tests;
#[cfg(test)]
mod libtorrent_tests;
#[cfg(test)]
mod request_queue_tests;
#[cfg(test)]
mod tests;

use torrentlab_engine::{Duration, EntityRng, Time};

use crate::choker::{AnyChoker, Choker, ChokerKind, Decision, LibtorrentChoker, MainlineChoker, PeerView};
use crate::dial::Transport;
use crate::limiter::{AnyLimiter, MixedMode, Series, UploadLimiter};
use crate::picker::{Picker, PiecePicker};
use crate::pipeline::Pipeline;
use crate::torrent::Torrent;
use crate::tracker::{AnnounceEvent, AnnounceSchedule};
use crate::wire::Message;
pub use config::ClientConfig;
use conn::BlockRef;
pub use conn::{FastConn, Frame, PeerConn, Stage};
pub use interest::InterestRule;
pub use peer_end_game::{EndGameRule, END_GAME_RETRY};
use slot_set::SlotSet;

/// Something the driver may record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Note {
    /// We choked (`true`) or unchoked the remote of `link`.
    Choke { link: u32, remote: u32, choked: bool },
    /// A piece was completed and checked (a HAVE goes to every peer).
    PieceVerified { piece: u32 },
    /// Every piece is here.
    Completed,
    /// Block bytes that arrived but were not needed (end-game duplicates,
    /// blocks whose request had been dropped).
    Wasted { link: u32, bytes: u32 },
}

/// What the client asks of its driver.
pub trait Io {
    /// Opens a connection to `remote` over `transport`; `slot` is the
    /// client's id for it, to be passed back in the inputs. Returns the
    /// driver's id of our end.
    fn connect(&mut self, remote: u32, slot: u32, transport: Transport) -> u32;
    /// A frame starts at the current end of `link`'s outgoing stream; its
    /// bytes follow through [`Io::write`].
    fn frame(&mut self, link: u32, frame: Frame);
    /// Writes `bytes` more bytes to the socket of `link`.
    fn write(&mut self, link: u32, bytes: u32);
    /// The socket of `link` can take more (mainline `is_flushed`).
    fn flushed(&self, link: u32) -> bool;
    /// Closes `link` (the remote learns it from the transport).
    fn close(&mut self, link: u32);
    fn announce(&mut self, event: AnnounceEvent, numwant: u32);
    fn note(&mut self, note: Note);
    /// The IPv4 address this client sees for peer `remote`, which the Fast
    /// Extension's allowed-fast set hashes; `None` (the default): unknown,
    /// and no set is offered.
    fn address(&self, remote: u32) -> Option<[u8; 4]> {
        let _ = remote;
        None
    }
}

/// Counters of one client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Block payload bytes received that completed pieces, and wasted.
    pub bytes_down: u64,
    pub bytes_wasted: u64,
    /// Of `bytes_wasted`, outside end game: blocks whose request had been
    /// dropped (on a choke) before they arrived (`wasted_dropped`), and
    /// blocks that had already come from another peer (`wasted_duplicate`).
    pub wasted_dropped: u64,
    pub wasted_duplicate: u64,
    /// Of `bytes_wasted`, in end game: duplicates, and blocks whose request
    /// was cancelled (or dropped) while they were on their way.
    pub wasted_end_game: u64,
    /// Block payload bytes sent in piece messages.
    pub bytes_up: u64,
    pub connections_opened: u64,
    pub connections_refused: u64,
    /// uTP dials that failed and were followed by a TCP one (libtorrent).
    pub fallbacks: u64,
    /// Requests that arrived while we choked the peer (ignored; with the
    /// Fast Extension, rejected unless for an allowed-fast piece).
    pub requests_while_choked: u64,
    /// Fast Extension: `allowed_fast` messages sent, requests served while
    /// choking the remote, and `reject_request` messages sent and received.
    pub allowed_fast_sent: u64,
    pub fast_requests_served: u64,
    pub rejects_sent: u64,
    pub rejects_received: u64,
    /// `interested` and `not_interested` messages sent.
    pub interested_sent: u64,
    pub not_interested_sent: u64,
}

/// One peer's BitTorrent client, with its piece picker, choker and upload
/// limiter as type parameters: those of its profile by default
/// ([`Client::new`]: mainline's picker, the configured choker and limiter),
/// others through [`Client::with_policies`]. Held inline rather than boxed,
/// they share the client's memory and their calls are static.
pub struct Client<P = PiecePicker, C = AnyChoker, L = AnyLimiter> {
    pub id: u32,
    cfg: ClientConfig,
    torrent: Torrent,
    picker: P,
    choker: C,
    limiter: L,
    conns: Vec<Option<PeerConn>>,
    /// The rechoke's inputs of each slot of `conns`, dense.
    rows: rows::Rows,
    /// Per piece, the slots whose remote has it (the remotes' bitfields, transposed).
    holders: holders::Holders,
    free: Vec<u32>,
    /// Connections to a peer the client already had a connection to.
    twins: u32,
    /// Slots whose remote unchokes us (ready, not choking): what `let_go`
    /// asks for more, found without reading every connection.
    unchoking: SlotSet,
    /// Peers from the tracker not dialled yet (`spares`, at most `max_initiate`).
    spares: Vec<u32>,
    announces: AnnounceSchedule,
    started: bool,
    left: bool,
    completed_at: Option<Time>,
    next_rechoke: Option<Time>,
    next_keepalive: Option<Time>,
    /// libtorrent's once-a-second tick (request queues, mixed mode).
    next_second: Option<Time>,
    /// Piece payload sent by the last tick, and the session's 5-second
    /// average upload rate (bytes/s) for mixed mode.
    upload_at_second: u64,
    upload_average: u64,
    /// Ring positions of new connections.
    choker_rng: EntityRng,
    /// Shuffles (end game, requests after a choke).
    rng: EntityRng,
    scratch: Vec<(u32, u32)>,
    /// Whole-piece pick scratch: pieces and how many of their blocks.
    takes: Vec<(u32, u32)>,
    /// End game's outstanding blocks (mainline `all_requests`): those
    /// requested when it began, each taken off as it arrives.
    all_requests: Vec<BlockRef>,
    /// `let_go` scratch: the pieces of the requests let go.
    lost: Vec<u32>,
    /// `request_more` scratch: pieces whose last free block it requested.
    lost_interests: Vec<u32>,
    /// `recheck_interest` scratch: the slots it looks at.
    recheck: Vec<u32>,
    /// Connection slots, reused by `let_go`.
    slots: Vec<u32>,
    /// `let_go` scratch: each of `slots`' backlog if it has room (else 0).
    backlogs: Vec<u32>,
    /// `let_go` scratch: the slots whose remote has a lost piece with blocks
    /// to request.
    offered: SlotSet,
    /// `request_allowed_fast` scratch: a remote's allowed-fast pieces to
    /// pick from (empty until first needed, and cleared after each use).
    fast_mask: crate::bitfield::Bitfield,
    /// Rechoke scratch: the views and the choker's decisions.
    views: Vec<PeerView>,
    decisions: Vec<Decision>,
    /// The time of the input being handled (for control messages that wait
    /// for the limiter: [`UploadLimiter::charges_control`]).
    now: Time,
    pub stats: ClientStats,
}

impl Client {
    /// A client of `cfg`'s profile (choker and upload limiter) that starts
    /// as a seed (`seed`) or with nothing. `rngs`: the picker's, the
    /// choker's and the client's own streams.
    pub fn new(id: u32, cfg: ClientConfig, torrent: Torrent, seed: bool, rngs: [EntityRng; 3]) -> Self {
        let [picker_rng, choker_rng, rng] = rngs;
        let start = if seed { PiecePicker::complete } else { PiecePicker::new };
        let picker = start(&torrent, picker_rng).with_order(cfg.pick_order);
        let choker = match cfg.choker {
            ChokerKind::Mainline => AnyChoker::Mainline(MainlineChoker::new(cfg.upload_slots)),
            ChokerKind::Libtorrent => AnyChoker::Libtorrent(LibtorrentChoker::new(
                cfg.upload_slots,
                cfg.rechoke_interval,
                cfg.optimistic_interval,
                torrent.piece_length as u64,
            )),
        };
        let limiter = AnyLimiter::new(cfg.limiter, cfg.upload_rate, cfg.rate_limit_ip_overhead);
        Client::with_policies(id, cfg, torrent, [choker_rng, rng], picker, choker, limiter)
    }
}

impl<P: Picker, C: Choker, L: UploadLimiter> Client<P, C, L> {
    /// A client with the given policies. `rngs`: the choker's (ring
    /// positions) and the client's own streams.
    pub fn with_policies(
        id: u32,
        cfg: ClientConfig,
        torrent: Torrent,
        rngs: [EntityRng; 2],
        picker: P,
        choker: C,
        limiter: L,
    ) -> Self {
        let [choker_rng, rng] = rngs;
        let pieces = torrent.pieces();
        Client {
            id,
            choker,
            limiter,
            cfg,
            torrent,
            picker,
            conns: Vec::new(),
            rows: rows::Rows::default(),
            holders: holders::Holders::new(pieces),
            free: Vec::new(),
            twins: 0,
            unchoking: SlotSet::default(),
            spares: Vec::new(),
            announces: AnnounceSchedule::default(),
            started: false,
            left: false,
            completed_at: None,
            next_rechoke: None,
            next_keepalive: None,
            next_second: None,
            upload_at_second: 0,
            upload_average: 0,
            choker_rng,
            rng,
            scratch: Vec::new(),
            takes: Vec::new(),
            all_requests: Vec::new(),
            lost: Vec::new(),
            lost_interests: Vec::new(),
            recheck: Vec::new(),
            slots: Vec::new(),
            backlogs: Vec::new(),
            offered: SlotSet::default(),
            fast_mask: crate::bitfield::Bitfield::new(0),
            views: Vec::new(),
            decisions: Vec::new(),
            now: Time::ZERO,
            stats: ClientStats::default(),
        }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    pub fn is_seed(&self) -> bool {
        self.picker.have().is_complete()
    }

    /// The torrent this client shares.
    pub fn torrent(&self) -> &Torrent {
        &self.torrent
    }

    pub fn pieces_had(&self) -> u32 {
        self.picker.have().count()
    }

    pub fn picker(&self) -> &P {
        &self.picker
    }

    pub fn limiter(&self) -> &L {
        &self.limiter
    }

    pub fn completed_at(&self) -> Option<Time> {
        self.completed_at
    }

    pub fn has_left(&self) -> bool {
        self.left
    }

    /// Open connections (any stage).
    pub fn connections(&self) -> impl Iterator<Item = (u32, &PeerConn)> {
        self.conns.iter().enumerate().filter_map(|(i, c)| c.as_ref().map(|c| (i as u32, c)))
    }

    /// The connection table, indexed by slot (`None`: a free slot).
    pub fn slots(&self) -> &[Option<PeerConn>] {
        &self.conns
    }

    pub fn connection(&self, slot: u32) -> Option<&PeerConn> {
        self.conns.get(slot as usize).and_then(|c| c.as_ref())
    }

    /// Whether every slot's row, and the holders of every piece, say what
    /// the connections do (debug checks).
    fn rows_mirror_connections(&self) -> bool {
        self.holders.mirror(self.conns.iter().map(|c| c.as_ref().map(|c| &c.have)))
            && self.rows.len() == self.conns.len()
            && self.conns.iter().enumerate().all(|(i, c)| {
                let want = c.as_ref().map_or(0, |c| {
                    let flag = |on: bool, f: u8| if on { f } else { 0 };
                    flag(c.ready(), rows::READY)
                        | flag(c.remote_interested, rows::INTERESTED)
                        | flag(c.am_choking, rows::CHOKING)
                        | flag(!c.queued.is_empty(), rows::REQUESTS)
                        | flag(c.am_interested, rows::AM_INTERESTED)
                });
                self.rows.flags(i as u32) == want
            })
    }

    /// Peers connected (or being dialled): connections, less the second
    /// connections to a peer (`twins`).
    fn live(&self) -> u32 {
        (self.conns.len() - self.free.len()) as u32 - self.twins
    }

    #[inline]
    fn cref(&self, slot: u32) -> &PeerConn {
        self.conns[slot as usize].as_ref().expect("a live slot")
    }

    #[inline]
    fn conn(&mut self, slot: u32) -> &mut PeerConn {
        self.conns[slot as usize].as_mut().expect("a live slot")
    }

    fn alloc(&mut self, c: PeerConn) -> u32 {
        if self.connected_to(c.remote).is_some() {
            self.twins += 1;
        }
        let throttled = c.transport == Transport::Tcp;
        let slot = match self.free.pop() {
            Some(s) => {
                self.conns[s as usize] = Some(c);
                s
            }
            None => {
                self.conns.push(Some(c));
                self.conns.len() as u32 - 1
            }
        };
        self.rows.open(slot);
        self.holders.reserve(self.conns.len());
        self.limiter.set_throttled(slot, throttled);
        slot
    }

    // ---- lifecycle ------------------------------------------------------

    /// The client joins the swarm: `started` announce, timers running.
    pub fn start(&mut self, now: Time, io: &mut dyn Io) {
        self.now = now;
        self.started = true;
        self.limiter.start(now);
        self.announce(now, AnnounceEvent::Started, io);
        self.announces.start(now);
        self.next_rechoke = Some(now + self.cfg.rechoke_interval);
        self.next_keepalive = Some(now + self.cfg.keepalive_interval);
        if self.cfg.pipeline == Pipeline::Libtorrent
            || matches!(self.cfg.mixed_mode, Some(MixedMode::PeerProportional(_)))
        {
            self.next_second = Some(now + Duration::from_secs(1));
        }
    }

    fn announce(&mut self, now: Time, event: AnnounceEvent, io: &mut dyn Io) {
        self.announces.announced(now);
        io.announce(event, AnnounceSchedule::numwant(self.live(), self.cfg.max_initiate, self.cfg.numwant));
    }

    /// The client leaves: every connection closed, `stopped` announced.
    pub fn leave(&mut self, now: Time, io: &mut dyn Io) {
        if self.left {
            return;
        }
        self.now = now;
        // Leaving first: closing connections then asks nothing of the others.
        self.left = true;
        let slots: Vec<u32> = self.connections().map(|(s, _)| s).collect();
        for s in slots {
            let link = self.conn(s).link;
            io.close(link);
            self.drop_conn(now, s, io, false);
        }
        self.announce(now, AnnounceEvent::Stopped, io);
        self.announces.stop();
        self.next_rechoke = None;
        self.next_keepalive = None;
        self.next_second = None;
    }

    /// A frame arrived whole on `slot`.
    pub fn on_frame(&mut self, now: Time, slot: u32, frame: Frame, io: &mut dyn Io) {
        if self.conns.get(slot as usize).is_none_or(|c| c.is_none()) {
            return;
        }
        self.now = now;
        self.limiter.transceived(slot, frame.wire_len());
        match frame {
            Frame::Handshake { fast } => {
                let ours = self.cfg.fast_extension;
                let c = self.conn(slot);
                if ours && fast {
                    // BEP 6: both ends announced the extension.
                    let address = io.address(c.remote);
                    c.fast = Some(Box::new(FastConn { address, last_choke: c.opened, ..FastConn::default() }));
                }
                if !c.initiator {
                    let link = c.link;
                    let hs = Frame::Handshake { fast: ours };
                    let len = hs.wire_len();
                    io.frame(link, hs);
                    io.write(link, len);
                    self.limiter.transceived(slot, len);
                    self.announces.got_incoming();
                }
                self.ready(now, slot, io);
            }
            Frame::Bitfield(b) => self.got_bitfield(now, slot, *b, io),
            Frame::Msg(m) => self.on_message(now, slot, m, io),
        }
    }

    fn ready(&mut self, now: Time, slot: u32, io: &mut dyn Io) {
        let c = self.conn(slot);
        c.stage = Stage::Ready;
        let link = c.link;
        self.rows.set(slot, rows::READY, true);
        self.rows.got_piece(slot, now); // snubbing counts from the handshake
        let fast = self.cref(slot).fast.is_some();
        let count = self.picker.have().count();
        if fast && (count == 0 || self.is_seed()) {
            // BEP 6: `have_all` or `have_none` in place of the bitfield.
            let m = if count == 0 { Message::HaveNone } else { Message::HaveAll };
            io.frame(link, Frame::Msg(m));
            io.write(link, m.wire_len());
        } else if count > 0 {
            let f = Frame::Bitfield(Box::new(self.picker.have().clone()));
            let len = f.wire_len();
            io.frame(link, f);
            io.write(link, len);
            self.limiter.transceived(slot, len);
        }
        self.choker.add_peer(now, slot, &mut self.choker_rng);
    }

    fn on_message(&mut self, now: Time, slot: u32, m: Message, io: &mut dyn Io) {
        match m {
            Message::KeepAlive | Message::Port { .. } | Message::Bitfield { .. } => {}
            Message::Choke => {
                self.conn(slot).remote_choking = true;
                // BEP 6: with the Fast Extension a choke cancels no request
                // (the remote rejects what it will not serve); the blocks
                // not requested yet go back all the same.
                let dropped = self.dropped_on_choke(slot);
                self.unchoking.remove(slot);
                self.let_go(now, &dropped, io);
            }
            Message::Unchoke => {
                let c = self.conn(slot);
                c.remote_choking = false;
                let interested = c.am_interested;
                if c.ready() {
                    self.unchoking.insert(slot);
                }
                // Mainline `got_unchoke`.
                if interested {
                    self.request_more(now, slot, None, io);
                }
            }
            Message::Interested | Message::NotInterested => {
                if m == Message::Interested && self.cfg.fast_extension {
                    self.send_allowed_set(slot, io);
                }
                let c = self.conn(slot);
                c.remote_interested = m == Message::Interested;
                let (interested, choking) = (c.remote_interested, c.am_choking);
                if !interested {
                    // Mainline `Upload.got_not_interested`: its requests are dropped.
                    c.queued.clear();
                    self.rows.set(slot, rows::REQUESTS, false);
                }
                self.rows.set(slot, rows::INTERESTED, interested);
                if !choking || (interested && self.choker.rechokes_on_interest()) {
                    self.rechoke(now, io, true);
                }
            }
            Message::Have { piece } => self.got_have(now, slot, piece, io),
            Message::Request { piece, begin, length } => self.got_request(now, slot, piece, begin, length, io),
            Message::Piece { piece, begin, length } => self.got_piece(now, slot, piece, begin, length, io),
            Message::Cancel { piece, begin, .. } => {
                let b = (piece, begin / crate::torrent::BLOCK);
                let c = self.conn(slot);
                c.queued.retain(|&q| q != b);
                let any = !c.queued.is_empty();
                self.rows.set(slot, rows::REQUESTS, any);
            }
            Message::HaveAll
            | Message::HaveNone
            | Message::AllowedFast { .. }
            | Message::RejectRequest { .. }
            | Message::SuggestPiece { .. } => self.on_fast_message(now, slot, m, io),
        }
    }

    /// Writes a control message now, or after the piece message under way;
    /// or when every write waits for the limiter, when it hands out quota.
    fn send(&mut self, slot: u32, m: Message, io: &mut dyn Io) {
        let charged = self.limiter.charges_control();
        let c = self.conn(slot);
        if charged {
            c.outq.push(m);
            let link = c.link;
            if c.ready() && !self.limiter.contains(slot) && io.flushed(link) {
                self.queue_upload(self.now, slot, io);
            }
        } else if c.partial_left > 0 {
            c.outq.push(m);
        } else {
            let link = c.link;
            io.frame(link, Frame::Msg(m));
            io.write(link, m.wire_len());
        }
    }

    // ---- timers ----------------------------------------------------------

    pub fn poll_timeout(&self) -> Option<Time> {
        let t = Time::earliest(Time::earliest(self.limiter.due(), self.next_rechoke), self.next_keepalive);
        Time::earliest(Time::earliest(t, self.next_second), self.announces.next_check())
    }

    pub fn handle_timeout(&mut self, now: Time, io: &mut dyn Io) {
        self.now = now;
        if self.limiter.due().is_some_and(|t| t <= now) {
            self.try_send(now, io);
        }
        if let Some(t) = self.next_rechoke.filter(|&t| t <= now) {
            self.next_rechoke = Some(t + self.cfg.rechoke_interval);
            self.rechoke(now, io, false);
        }
        if self.announces.check(now, self.live()) {
            self.announce(now, AnnounceEvent::Regular, io);
        }
        if let Some(t) = self.next_second.filter(|&t| t <= now) {
            self.next_second = Some(t + Duration::from_secs(1));
            self.second_tick(now, io);
            self.release_snubbed(now, io);
            self.retry_end_game(now, io);
        }
        if let Some(t) = self.next_keepalive.filter(|&t| t <= now) {
            self.next_keepalive = Some(t + self.cfg.keepalive_interval);
            let ready: Vec<u32> = self.connections().filter(|(_, c)| c.ready()).map(|(s, _)| s).collect();
            for s in ready {
                self.send(s, Message::KeepAlive, io);
            }
        }
    }

    /// libtorrent's once-a-second work: each request queue's tick, and with
    /// `peer_proportional` the TCP class's rate from the uploading peers by
    /// transport and the session's upload rate (a 5-second average of the
    /// piece payload sent; libtorrent counts protocol and IP bytes too).
    /// A peer with upload work counts as uploading; under the 2.0 rule only
    /// while its socket is full (not [`Io::flushed`]), libtorrent's write
    /// under way (see [`crate::limiter::classes`]).
    fn second_tick(&mut self, now: Time, io: &dyn Io) {
        let snub = self.cfg.snub_time;
        let series = match self.cfg.mixed_mode {
            Some(MixedMode::PeerProportional(s)) => s,
            _ => Series::V1_2,
        };
        let mut uploading = [0u32; 2];
        for (slot, c) in self.conns.iter_mut().enumerate() {
            let Some(c) = c.as_mut().filter(|c| c.ready()) else { continue };
            if now.saturating_since(self.rows.last_piece(slot as u32)) > snub {
                c.queue.end_slow_start();
            }
            c.queue.second_tick(!c.remote_choking);
            if (!c.queued.is_empty() || c.partial_left > 0) && series.counts_uploading(!io.flushed(c.link)) {
                uploading[(c.transport == Transport::Utp) as usize] += 1;
            }
        }
        self.limiter.second_tick(now);
        let sent = self.stats.bytes_up - self.upload_at_second;
        self.upload_at_second = self.stats.bytes_up;
        self.upload_average = self.upload_average * 4 / 5 + sent / 5;
        if let Some(MixedMode::PeerProportional(series)) = self.cfg.mixed_mode {
            let rate = crate::limiter::classes::peer_proportional(
                series,
                self.upload_average as f64,
                uploading[0],
                uploading[1],
            );
            self.limiter.throttle(now, rate);
        }
    }

    /// A rechoke: the timed one every `rechoke_interval`, or one on an event.
    fn rechoke(&mut self, now: Time, io: &mut dyn Io, event: bool) {
        let snub = self.cfg.snub_time;
        let seeding = self.is_seed();
        let sockets = self.choker.reads_flushed(seeding);
        let mut views = std::mem::take(&mut self.views);
        views.clear();
        debug_assert!(self.rows_mirror_connections(), "the rows mirror the connections");
        // Every view from the dense rows first, rates and sockets aside.
        let rows = &self.rows;
        views.reserve(rows.len());
        for (slot, f, last_piece) in rows.iter() {
            if f & rows::READY == 0 {
                continue;
            }
            views.push(PeerView {
                id: slot,
                interested: f & rows::INTERESTED != 0,
                snubbed: now.saturating_since(last_piece) > snub,
                download_rate: 0.0,
                upload_rate: 0.0,
                choked: f & rows::CHOKING != 0,
                has_requests: f & rows::REQUESTS != 0,
                flushed: true,
                downloaded: 0,
                uploaded: 0,
            });
        }
        // Then the connections' own lines, only where the choker reads them:
        // all asked for before the first is read. Rates are read where
        // mainline reads them: a read moves the estimator's window
        // (`get_rate` is `update_rate(0)`).
        let reads_down = |v: &PeerView| v.interested && !v.snubbed;
        let reads_up = |v: &PeerView| seeding && v.interested && !v.choked;
        let totals = self.choker.reads_totals();
        for v in views.iter_mut().filter(|v| sockets || totals || reads_down(v) || reads_up(v)) {
            let c = self.conns[v.id as usize].as_mut().expect("a ready slot is live");
            if totals {
                (v.downloaded, v.uploaded) = (c.down_rate.total(), c.up_rate.total());
            }
            if reads_down(v) {
                v.download_rate = c.down_rate.rate(now);
            }
            if reads_up(v) {
                v.upload_rate = c.up_rate.rate(now);
            }
            if sockets {
                v.flushed = io.flushed(c.link);
            }
        }
        let mut decisions = std::mem::take(&mut self.decisions);
        decisions.clear();
        if event {
            self.choker.rechoke_event(now, &views, seeding, &mut decisions)
        } else {
            self.choker.rechoke(now, &views, seeding, &mut decisions)
        }
        self.views = views;
        for &d in &decisions {
            match d {
                Decision::Choke(s) => self.choke(now, s, io),
                Decision::Unchoke(s) => self.unchoke(now, s, io),
            }
        }
        self.decisions = decisions;
    }
}
