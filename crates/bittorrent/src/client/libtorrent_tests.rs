//! Scripted tests of the libtorrent profile's request queue inside the
//! client: slow start from 4 requests, one more per block, and strict end
//! game (one request at a time, only with nothing outstanding).

use torrentlab_engine::{EntityId, EntityRng, Time};

use super::{Client, ClientConfig, Frame, Io, Note};
use crate::bitfield::Bitfield;
use crate::dial::Transport;
use crate::torrent::{Torrent, BLOCK};
use crate::tracker::AnnounceEvent;
use crate::wire::Message;

/// The requests a client wrote, by link; its sockets are full when `full`.
#[derive(Default)]
pub(super) struct Requests(pub(super) Vec<(u32, u32, u32)>, pub(super) bool);

impl Io for Requests {
    fn connect(&mut self, _: u32, _: u32, _: Transport) -> u32 {
        0
    }
    fn frame(&mut self, link: u32, frame: Frame) {
        if let Frame::Msg(Message::Request { piece, begin, .. }) = frame {
            self.0.push((link, piece, begin / BLOCK));
        }
    }
    fn write(&mut self, _: u32, _: u32) {}
    fn flushed(&self, _: u32) -> bool {
        !self.1
    }
    fn close(&mut self, _: u32) {}
    fn announce(&mut self, _: AnnounceEvent, _: u32) {}
    fn note(&mut self, _: Note) {}
}

pub(super) fn secs(s: f64) -> Time {
    Time((s * 1e9) as u64)
}

/// A libtorrent leecher of a `pieces`-piece torrent (16 blocks each),
/// connected on links 1..=n to seeds that unchoke it.
fn leecher(pieces: u32, seeds: u32) -> (Client, Requests, Vec<u32>) {
    let torrent = Torrent::new(pieces as u64 * 262_144, 262_144);
    let rng = |k: u64| EntityRng::new(3, EntityId(k));
    let mut c = Client::new(0, ClientConfig::libtorrent(None), torrent, false, [rng(0), rng(1), rng(2)]);
    let mut io = Requests::default();
    c.start(Time::ZERO, &mut io);
    let mut slots = Vec::new();
    for link in 1..=seeds {
        let slot = c.accept(Time::ZERO, 10 + link, link, Transport::Utp, &mut io).expect("accepted");
        c.on_frame(Time::ZERO, slot, Frame::Handshake { fast: false }, &mut io);
        c.on_frame(Time::ZERO, slot, Frame::Bitfield(Box::new(Bitfield::full(pieces))), &mut io);
        c.on_frame(Time::ZERO, slot, Frame::Msg(Message::Unchoke), &mut io);
        slots.push(slot);
    }
    (c, io, slots)
}

fn outstanding(c: &Client, slot: u32) -> usize {
    c.connection(slot).map_or(0, |pc| pc.active.len())
}

#[test]
fn a_libtorrent_leecher_starts_with_four_requests_and_asks_one_more_per_block() {
    let (mut c, mut io, slots) = leecher(8, 1);
    assert_eq!(io.0.len(), 4, "slow start begins at 4");
    let s = slots[0];
    for k in 0..3 {
        let (_, piece, block) = io.0[k];
        c.on_frame(secs(0.1), s, Frame::Msg(Message::Piece { piece, begin: block * BLOCK, length: BLOCK }), &mut io);
        assert_eq!(outstanding(&c, s), 5 + k, "one more outstanding after each block");
    }
}

#[test]
fn in_end_game_a_libtorrent_leecher_asks_for_a_busy_block_only_with_nothing_outstanding_one_at_a_time() {
    // One piece of 16 blocks and two seeds a and b, 4 requests to each at
    // first; a's deliveries grow its queue until every block is asked for.
    let (mut c, mut io, slots) = leecher(1, 2);
    let (a, b) = (slots[0], slots[1]);
    let active = |c: &Client, s: u32| c.connection(s).map_or(Vec::new(), |pc| pc.active.clone());
    let mut t = 0.1;
    let mut deliver = |c: &mut Client, io: &mut Requests, s: u32, (piece, block): (u32, u32)| {
        c.on_frame(secs(t), s, Frame::Msg(Message::Piece { piece, begin: block * BLOCK, length: BLOCK }), io);
        t += 0.01;
    };
    while !c.picker().in_end_game() {
        let first = active(&c, a)[0];
        deliver(&mut c, &mut io, a, first);
    }
    let b_blocks = active(&c, b);
    assert!(!b_blocks.is_empty());
    loop {
        let before = active(&c, a);
        let Some(&own) = before.iter().find(|x| !b_blocks.contains(x)) else { break };
        deliver(&mut c, &mut io, a, own);
        let after = active(&c, a);
        if before.len() > 1 {
            assert_eq!(after.len(), before.len() - 1, "no busy block while a has others outstanding");
        } else {
            assert_eq!(after.len(), 1, "with nothing outstanding, one busy block");
            assert!(b_blocks.contains(&after[0]), "asked of b already");
        }
    }
    assert_eq!(active(&c, a).len(), 1);
}

#[test]
fn peer_proportional_throttles_tcp_uploads_only_while_a_utp_peer_is_uploading_too() {
    let torrent = Torrent::new(4 * 262_144, 262_144);
    let rng = |k: u64| EntityRng::new(4, EntityId(k));
    let mut seed = Client::new(0, ClientConfig::libtorrent(None), torrent, true, [rng(0), rng(1), rng(2)]);
    // Full sockets: requests stay queued, so both peers count as uploading.
    let mut io = Requests(Vec::new(), true);
    seed.start(Time::ZERO, &mut io);
    let class_rate = |c: &Client| c.limiter().class_rate();
    let join = |c: &mut Client, io: &mut Requests, link: u32, t: Transport| {
        let slot = c.accept(Time::ZERO, link, link, t, io).expect("accepted");
        c.on_frame(Time::ZERO, slot, Frame::Handshake { fast: false }, io);
        c.on_frame(Time::ZERO, slot, Frame::Msg(Message::Interested), io);
        c.on_frame(Time::ZERO, slot, Frame::Msg(Message::Request { piece: 0, begin: 0, length: BLOCK }), io);
    };
    join(&mut seed, &mut io, 1, Transport::Tcp);
    seed.handle_timeout(secs(1.0), &mut io);
    assert_eq!(class_rate(&seed), None, "no uTP peer uploading: TCP is not throttled");
    join(&mut seed, &mut io, 2, Transport::Utp);
    seed.handle_timeout(secs(2.0), &mut io);
    // Nothing sent yet (full sockets): the share of 0 B/s, so the floor.
    assert_eq!(class_rate(&seed), Some(crate::limiter::classes::TCP_FLOOR));
}

#[test]
fn the_2_0_rule_throttles_tcp_only_with_five_peers_waiting_on_full_sockets() {
    use crate::limiter::{MixedMode, Series};
    let torrent = Torrent::new(4 * 262_144, 262_144);
    let rng = |k: u64| EntityRng::new(4, EntityId(k));
    let mut cfg = ClientConfig::libtorrent(None);
    cfg.mixed_mode = Some(MixedMode::PeerProportional(Series::V2_0));
    let mut seed = Client::new(0, cfg, torrent, true, [rng(0), rng(1), rng(2)]);
    let mut io = Requests(Vec::new(), true);
    seed.start(Time::ZERO, &mut io);
    let join = |c: &mut Client, io: &mut Requests, link: u32, t: Transport| {
        let slot = c.accept(Time::ZERO, link, link, t, io).expect("accepted");
        c.on_frame(Time::ZERO, slot, Frame::Handshake { fast: false }, io);
        c.on_frame(Time::ZERO, slot, Frame::Msg(Message::Interested), io);
        c.on_frame(Time::ZERO, slot, Frame::Msg(Message::Request { piece: 0, begin: 0, length: BLOCK }), io);
    };
    for (link, t) in [(1, Transport::Tcp), (2, Transport::Utp), (3, Transport::Utp), (4, Transport::Utp)] {
        join(&mut seed, &mut io, link, t);
    }
    seed.handle_timeout(secs(1.0), &mut io);
    assert_eq!(seed.limiter().class_rate(), None, "four uploading peers: 2.0 does not throttle");
    // Sockets that take everything: no peer waits on the network, none counts.
    join(&mut seed, &mut io, 5, Transport::Utp);
    io.1 = false;
    seed.handle_timeout(secs(2.0), &mut io);
    assert_eq!(seed.limiter().class_rate(), None, "nobody waits on a full socket");
    io.1 = true;
    seed.handle_timeout(secs(3.0), &mut io);
    assert_eq!(seed.limiter().class_rate(), Some(crate::limiter::classes::TCP_FLOOR), "five waiting peers");
}

/// Every write, with the time the test set.
#[derive(Default)]
struct Writes {
    now: Time,
    log: Vec<(Time, u32)>,
}

impl Io for Writes {
    fn connect(&mut self, _: u32, _: u32, _: Transport) -> u32 {
        0
    }
    fn frame(&mut self, _: u32, _: Frame) {}
    fn write(&mut self, _: u32, bytes: u32) {
        self.log.push((self.now, bytes));
    }
    fn flushed(&self, _: u32) -> bool {
        true
    }
    fn close(&mut self, _: u32) {}
    fn announce(&mut self, _: AnnounceEvent, _: u32) {}
    fn note(&mut self, _: Note) {}
}

#[test]
fn a_libtorrent_seed_with_an_upload_limit_writes_blocks_only_at_500_ms_ticks_from_its_start() {
    let torrent = Torrent::new(4 * 262_144, 262_144);
    let rng = |k: u64| EntityRng::new(5, EntityId(k));
    let mut seed = Client::new(0, ClientConfig::libtorrent(Some(47_000.0)), torrent, true, [rng(0), rng(1), rng(2)]);
    let start = secs(0.3);
    let mut io = Writes { now: start, ..Writes::default() };
    seed.start(start, &mut io);
    let slot = seed.accept(start, 1, 1, Transport::Utp, &mut io).expect("accepted");
    seed.on_frame(start, slot, Frame::Handshake { fast: false }, &mut io);
    seed.on_frame(start, slot, Frame::Msg(Message::Interested), &mut io);
    for block in 0..16 {
        let m = Message::Request { piece: 0, begin: block * BLOCK, length: BLOCK };
        seed.on_frame(start, slot, Frame::Msg(m), &mut io);
    }
    let setup = io.log.len();
    while let Some(t) = seed.poll_timeout().filter(|&t| t <= secs(5.3)) {
        io.now = t;
        seed.handle_timeout(t, &mut io);
    }
    let blocks = &io.log[setup..];
    assert_eq!(blocks[0], (secs(0.8), BLOCK + 13), "one send buffer at the first tick");
    let tick = 500_000_000;
    assert!(blocks.iter().all(|&(t, _)| (t.as_nanos() - start.as_nanos()).is_multiple_of(tick)), "{blocks:?}");
    let bytes: u32 = blocks.iter().map(|w| w.1).sum();
    assert!((bytes as f64 - 47_000.0 * 4.5).abs() < 47_000.0, "{bytes} bytes in 5 s");
}

/// A leecher with `cfg` of 8 pieces of 256 KiB, connected on link 1 to a
/// seed that unchokes it; returns the seed's slot too. (The seed announces
/// no Fast Extension: its bitfield and unchoke are BEP 3's.)
pub(super) fn unchoked_leecher(cfg: ClientConfig) -> (Client, Requests, u32) {
    let torrent = Torrent::new(8 * 262_144, 262_144);
    let rng = |k: u64| EntityRng::new(3, EntityId(k));
    let mut c = Client::new(0, cfg, torrent, false, [rng(0), rng(1), rng(2)]);
    let mut io = Requests::default();
    c.start(Time::ZERO, &mut io);
    let slot = c.accept(Time::ZERO, 11, 1, Transport::Utp, &mut io).expect("accepted");
    c.on_frame(Time::ZERO, slot, Frame::Handshake { fast: false }, &mut io);
    c.on_frame(Time::ZERO, slot, Frame::Bitfield(Box::new(Bitfield::full(8))), &mut io);
    c.on_frame(Time::ZERO, slot, Frame::Msg(Message::Unchoke), &mut io);
    (c, io, slot)
}

/// A libtorrent leecher held to 1 kB/s of upload, with or without
/// `rate_limit_ip_overhead`, unchoked by a seed ([`unchoked_leecher`]).
fn limited_leecher(ip_overhead: bool) -> (Client, Requests) {
    let cfg = ClientConfig { rate_limit_ip_overhead: ip_overhead, ..ClientConfig::libtorrent(Some(1_000.0)) };
    let (c, io, _) = unchoked_leecher(cfg);
    (c, io)
}

#[test]
fn with_rate_limit_ip_overhead_a_limited_leechers_requests_wait_for_upload_quota_and_without_it_go_at_once() {
    let (_, io) = limited_leecher(false);
    assert_eq!(io.0.len(), 4, "written at once, as before");
    let (mut c, mut io) = limited_leecher(true);
    assert!(io.0.is_empty(), "they wait for the limiter");
    c.handle_timeout(secs(0.25), &mut io);
    assert!(io.0.is_empty());
    c.handle_timeout(secs(0.5), &mut io);
    assert_eq!(io.0.len(), 4, "the first tick's quota carries them");
}
