//! Scripted, message-by-message tests of the peer wire between clients.
//!
//! Each client gets a recording [`Io`]; a [`Net`] joins their connections
//! with instant pipes: a frame reaches the other end (`on_frame`) once all of
//! its bytes have been written. Time only moves when a test says so, through
//! the clients' own timers. A test may also play a remote itself: a
//! connection accepted from a scripted peer, whose frames the test injects.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;

use torrentlab_engine::{EntityId, EntityRng, Time};

use super::{rows, Client, ClientConfig, Frame, Io, Note, Stage};
use crate::bitfield::Bitfield;
use crate::dial::Transport;
use crate::torrent::{Torrent, BLOCK};
use crate::tracker::AnnounceEvent;
use crate::wire::Message;

const RATE: f64 = 20_480.0;
/// A `piece` message carrying a 16 KiB block.
const PIECE_MSG: u32 = 13 + BLOCK;

fn secs(s: f64) -> Time {
    Time((s * 1e9).round() as u64)
}

fn mainline() -> ClientConfig {
    ClientConfig::mainline(Some(RATE))
}

fn four_pieces() -> Torrent {
    Torrent::new(4 * 262_144, 262_144)
}

fn client(id: u32, cfg: ClientConfig, torrent: &Torrent, seed: bool) -> Client {
    let rng = |k: u64| EntityRng::new(42, EntityId(10 * id as u64 + k));
    Client::new(id, cfg, torrent.clone(), seed, [rng(0), rng(1), rng(2)])
}

fn request(piece: u32, block: u32) -> Message {
    Message::Request { piece, begin: block * BLOCK, length: BLOCK }
}

fn piece(piece: u32, block: u32) -> Message {
    Message::Piece { piece, begin: block * BLOCK, length: BLOCK }
}

/// The blocks asked for by the `request` messages among `ms`.
fn requested(ms: &[Message]) -> Vec<(u32, u32)> {
    ms.iter()
        .filter_map(|m| match *m {
            Message::Request { piece, begin, length } => {
                assert_eq!(length, BLOCK);
                Some((piece, begin / BLOCK))
            }
            _ => None,
        })
        .collect()
}

/// A frame and the stream offset of its first byte.
struct Sent {
    link: u32,
    at: u64,
    frame: Frame,
}

/// Everything one client did through its [`Io`].
struct Rec {
    now: Time,
    frames: Vec<Sent>,
    writes: Vec<(Time, u32, u32)>,
    connects: Vec<(u32, u32, u32)>,
    closes: Vec<u32>,
    announces: Vec<(AnnounceEvent, u32)>,
    notes: Vec<Note>,
    /// What `flushed` answers, except for the links in `stuck` (never flushed).
    flushed: bool,
    stuck: Vec<u32>,
    written: BTreeMap<u32, u64>,
    next_link: Rc<Cell<u32>>,
}

impl Rec {
    fn new(next_link: Rc<Cell<u32>>) -> Self {
        Rec {
            now: Time::ZERO,
            frames: vec![],
            writes: vec![],
            connects: vec![],
            closes: vec![],
            announces: vec![],
            notes: vec![],
            flushed: true,
            stuck: vec![],
            written: BTreeMap::new(),
            next_link,
        }
    }

    fn frames_on(&self, link: u32) -> Vec<(u64, Frame)> {
        self.frames.iter().filter(|s| s.link == link).map(|s| (s.at, s.frame.clone())).collect()
    }

    /// The messages (not handshakes or bitfields) written to `link`.
    fn msgs(&self, link: u32) -> Vec<Message> {
        self.frames_on(link)
            .into_iter()
            .filter_map(|(_, f)| match f {
                Frame::Msg(m) => Some(m),
                _ => None,
            })
            .collect()
    }

    fn writes_on(&self, link: u32) -> Vec<(Time, u32)> {
        self.writes.iter().filter(|w| w.1 == link).map(|w| (w.0, w.2)).collect()
    }

    fn sizes(&self, link: u32) -> Vec<u32> {
        self.writes_on(link).into_iter().map(|w| w.1).collect()
    }
}

impl Io for Rec {
    fn connect(&mut self, remote: u32, slot: u32, _transport: Transport) -> u32 {
        let link = self.next_link.get();
        self.next_link.set(link + 1);
        self.connects.push((remote, slot, link));
        link
    }
    fn frame(&mut self, link: u32, frame: Frame) {
        let at = self.written.get(&link).copied().unwrap_or(0);
        self.frames.push(Sent { link, at, frame });
    }
    fn write(&mut self, link: u32, bytes: u32) {
        *self.written.entry(link).or_default() += bytes as u64;
        self.writes.push((self.now, link, bytes));
    }
    fn flushed(&self, link: u32) -> bool {
        self.flushed && !self.stuck.contains(&link)
    }
    fn close(&mut self, link: u32) {
        self.closes.push(link);
    }
    fn announce(&mut self, event: AnnounceEvent, numwant: u32) {
        self.announces.push((event, numwant));
    }
    fn note(&mut self, note: Note) {
        self.notes.push(note);
    }
    /// Peer `remote` is at 10.0.0.(remote + 1), the simulator's address plan.
    fn address(&self, remote: u32) -> Option<[u8; 4]> {
        Some([10, 0, 0, remote as u8 + 1])
    }
}

struct Peer {
    c: Client,
    io: Rec,
    /// Dials and closes already carried out by the net.
    dialed: usize,
    closed: usize,
    /// When its timers woke it.
    wakeups: Vec<Time>,
}

/// One direction of a connection between two clients of the net.
struct Link {
    from: usize,
    to: usize,
    /// The receiver's slot.
    slot: u32,
    /// The other direction.
    back: u32,
    /// Index in the sender's frames from which to look for the next one.
    next: usize,
    open: bool,
}

/// Clients joined by instant pipes; time moves only through `run_until`.
struct Net {
    now: Time,
    peers: Vec<Peer>,
    links: BTreeMap<u32, Link>,
    next_link: Rc<Cell<u32>>,
}

impl Net {
    fn new() -> Self {
        Net { now: Time::ZERO, peers: vec![], links: BTreeMap::new(), next_link: Rc::new(Cell::new(100)) }
    }

    fn push(&mut self, c: Client) -> usize {
        self.peers.push(Peer { c, io: Rec::new(self.next_link.clone()), dialed: 0, closed: 0, wakeups: vec![] });
        self.peers.len() - 1
    }

    /// A client whose id is its index.
    fn add(&mut self, cfg: ClientConfig, torrent: &Torrent, seed: bool) -> usize {
        let id = self.peers.len() as u32;
        self.push(client(id, cfg, torrent, seed))
    }

    fn c(&self, i: usize) -> &Client {
        &self.peers[i].c
    }

    fn io(&self, i: usize) -> &Rec {
        &self.peers[i].io
    }

    fn new_link(&self) -> u32 {
        let l = self.next_link.get();
        self.next_link.set(l + 1);
        l
    }

    /// Calls `f` on client `i` now, without delivering anything.
    fn call<R>(&mut self, i: usize, f: impl FnOnce(&mut Client, Time, &mut Rec) -> R) -> R {
        let p = &mut self.peers[i];
        p.io.now = self.now;
        f(&mut p.c, self.now, &mut p.io)
    }

    /// Calls `f` on client `i` now, then lets the wire settle.
    fn with<R>(&mut self, i: usize, f: impl FnOnce(&mut Client, Time, &mut Rec) -> R) -> R {
        let r = self.call(i, f);
        self.settle();
        r
    }

    fn start(&mut self, i: usize) {
        self.with(i, |c, now, io| c.start(now, io));
    }

    /// A connection to client `i` from a scripted remote: (link of `i`'s end, slot).
    fn accept_from(&mut self, i: usize, remote: u32) -> (u32, u32) {
        let link = self.new_link();
        let slot = self.with(i, |c, now, io| c.accept(now, remote, link, Transport::Tcp, io)).expect("accepted");
        (link, slot)
    }

    /// The scripted remote on `slot` of client `i` sends `frame`.
    fn inject(&mut self, i: usize, slot: u32, frame: Frame) {
        self.with(i, |c, now, io| c.on_frame(now, slot, frame, io));
    }

    fn send(&mut self, i: usize, slot: u32, m: Message) {
        self.inject(i, slot, Frame::Msg(m));
    }

    /// Carries out dials and closes and delivers whole frames until nothing moves.
    fn settle(&mut self) {
        loop {
            let mut progress = false;
            for i in 0..self.peers.len() {
                while self.peers[i].dialed < self.peers[i].io.connects.len() {
                    let (remote, slot, link) = self.peers[i].io.connects[self.peers[i].dialed];
                    self.peers[i].dialed += 1;
                    let Some(r) = self.peers.iter().position(|p| p.c.id == remote) else { continue };
                    progress = true;
                    let back = self.new_link();
                    let me = self.peers[i].c.id;
                    match self.call(r, |c, now, io| c.accept(now, me, back, Transport::Tcp, io)) {
                        Ok(rs) => {
                            self.links.insert(link, Link { from: i, to: r, slot: rs, back, next: 0, open: true });
                            self.links.insert(back, Link { from: r, to: i, slot, back: link, next: 0, open: true });
                            self.call(i, |c, now, io| c.on_connected(now, slot, io));
                        }
                        Err(_) => self.call(i, |c, now, io| c.on_closed(now, slot, io)),
                    }
                }
                while self.peers[i].closed < self.peers[i].io.closes.len() {
                    let link = self.peers[i].io.closes[self.peers[i].closed];
                    self.peers[i].closed += 1;
                    let Some(l) = self.links.get_mut(&link).filter(|l| l.open) else { continue };
                    progress = true;
                    l.open = false;
                    let (to, slot, back) = (l.to, l.slot, l.back);
                    self.links.get_mut(&back).expect("both directions").open = false;
                    self.call(to, |c, now, io| c.on_closed(now, slot, io));
                }
            }
            let ids: Vec<u32> = self.links.keys().copied().collect();
            for id in ids {
                let l = &self.links[&id];
                let io = &self.peers[l.from].io;
                let Some(k) = (l.next..io.frames.len()).find(|&k| io.frames[k].link == id) else { continue };
                let s = &io.frames[k];
                if !l.open || s.at + s.frame.wire_len() as u64 > io.written.get(&id).copied().unwrap_or(0) {
                    continue;
                }
                let (to, slot, frame) = (l.to, l.slot, s.frame.clone());
                self.links.get_mut(&id).expect("link").next = k + 1;
                self.call(to, |c, now, io| c.on_frame(now, slot, frame, io));
                progress = true;
            }
            if !progress {
                return;
            }
        }
    }

    /// Runs every client timer due up to `end`, in time order.
    fn run_until(&mut self, end: Time) {
        self.settle();
        while let Some((t, i)) =
            self.peers.iter().enumerate().filter_map(|(i, p)| p.c.poll_timeout().map(|t| (t, i))).min()
        {
            if t > end {
                break;
            }
            self.now = self.now.max(t);
            self.peers[i].wakeups.push(self.now);
            self.with(i, |c, now, io| c.handle_timeout(now, io));
        }
        self.now = end;
    }
}

/// A seed (0) and a leecher (1) of four 256 KiB pieces, started at 0 s; the
/// leecher has dialled the seed. Returns (net, seed, leecher, leecher's link,
/// seed's link).
fn pair() -> (Net, usize, usize, u32, u32) {
    pair_dialled_at(Time::ZERO)
}

/// [`pair`], with the leecher dialling at `at`.
fn pair_dialled_at(at: Time) -> (Net, usize, usize, u32, u32) {
    let t = four_pieces();
    let mut net = Net::new();
    let s = net.add(mainline(), &t, true);
    let l = net.add(mainline(), &t, false);
    net.start(s);
    net.start(l);
    net.run_until(at);
    net.with(l, |c, now, io| c.on_tracker_reply(now, &[s as u32], io));
    let up = net.io(l).connects[0].2;
    let down = net.links[&up].back;
    (net, s, l, up, down)
}

#[test]
fn the_initiator_handshakes_the_acceptor_answers_with_handshake_and_bitfield_and_the_leecher_becomes_interested() {
    let t = Torrent::new(20 * 32_768, 32_768);
    let mut net = Net::new();
    let s = net.add(mainline(), &t, true);
    let l = net.add(mainline(), &t, false);
    net.start(s);
    net.start(l);
    assert_eq!(net.io(l).announces, vec![(AnnounceEvent::Started, 50)]);
    net.call(l, |c, now, io| c.on_tracker_reply(now, &[s as u32], io));
    let (remote, slot, up) = net.io(l).connects[0];
    assert_eq!(remote, s as u32);
    assert_eq!(net.c(l).connection(slot).unwrap().stage, Stage::Connecting);
    assert!(net.io(l).writes.is_empty(), "nothing before the transport connects");
    net.settle();
    let down = net.links[&up].back;
    // Initiator: its 68-byte handshake, then (on the seed's bitfield) interested.
    assert_eq!(
        net.io(l).frames_on(up),
        vec![(0, Frame::Handshake { fast: false }), (68, Frame::Msg(Message::Interested))]
    );
    assert_eq!(net.io(l).sizes(up), vec![68, 5]);
    // Acceptor: its handshake, then a bitfield of 5 + ceil(20 / 8) bytes.
    let full = Frame::Bitfield(Box::new(Bitfield::full(20)));
    assert_eq!(net.io(s).frames_on(down), vec![(0, Frame::Handshake { fast: false }), (68, full)]);
    assert_eq!(net.io(s).sizes(down), vec![68, 8]);
    let (_, sc) = net.c(s).connections().next().unwrap();
    assert!(sc.ready() && sc.remote_interested && sc.am_choking && !sc.initiator);
    let lc = net.c(l).connection(slot).unwrap();
    assert!(lc.ready() && lc.am_interested && lc.remote_choking && lc.have.is_complete());
    assert_eq!(net.c(l).picker().availability(7), 1);
}

#[test]
fn the_seeds_first_rechoke_unchokes_the_leecher_which_then_requests_two_blocks_of_one_piece() {
    let (mut net, s, l, up, down) = pair();
    net.run_until(Time(secs(10.0).0 - 1));
    assert!(!net.io(s).msgs(down).contains(&Message::Unchoke));
    assert!(requested(&net.io(l).msgs(up)).is_empty(), "no requests while choked");
    net.run_until(secs(10.0));
    assert_eq!(net.io(s).frames_on(down)[2], (74, Frame::Msg(Message::Unchoke)));
    assert_eq!(net.io(s).sizes(down)[2], 5);
    assert!(net.io(s).notes.contains(&Note::Choke { link: down, remote: l as u32, choked: false }));
    // Mainline backlog with no measured rate: 2 + int(4 x 0 / 16384) = 2.
    let reqs: Vec<(u64, Message)> = net
        .io(l)
        .frames_on(up)
        .into_iter()
        .filter_map(|(at, f)| match f {
            Frame::Msg(m @ Message::Request { .. }) => Some((at, m)),
            _ => None,
        })
        .collect();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].0, reqs[0].0 + 17, "two 17-byte requests back to back");
    let blocks = requested(&[reqs[0].1, reqs[1].1]);
    assert_eq!(blocks, vec![(blocks[0].0, 0), (blocks[0].0, 1)], "blocks 0 and 1 of one piece");
    let w = net.io(l).writes_on(up);
    // (then the leecher's own rechoke unchokes the seed: 5 bytes)
    assert_eq!(w[2..], [(secs(10.0), 17), (secs(10.0), 17), (secs(10.0), 5)]);
    assert_eq!(net.c(l).connections().next().unwrap().1.active.len(), 2);
}

#[test]
fn piece_messages_go_out_in_1380_byte_writes_paced_at_1380_over_the_rate_ending_with_a_1217_byte_remainder() {
    let (mut net, s, _, _, down) = pair();
    net.run_until(secs(13.0));
    // Handshake, bitfield, unchoke; then only piece messages, back to back.
    let frames = net.io(s).frames_on(down);
    let mut at = 68 + 6 + 5;
    for (off, f) in &frames[3..] {
        assert!(matches!(f, Frame::Msg(Message::Piece { length: BLOCK, .. })), "{f:?}");
        assert_eq!((*off, f.wire_len()), (at, PIECE_MSG));
        at += PIECE_MSG as u64;
    }
    let w = &net.io(s).writes_on(down)[3..];
    assert_eq!(w[0].0, secs(10.0), "the first request is served at once");
    assert_eq!(PIECE_MSG % 1380, 1217);
    let whole = w.len() / 12;
    assert!(whole >= 3, "{} writes", w.len());
    let mut one = vec![1380; 11];
    one.push(1217);
    for msg in w.chunks(12).take(whole) {
        assert_eq!(msg.iter().map(|x| x.1).collect::<Vec<_>>(), one);
    }
    // Each write leaves (bytes written) / rate seconds before the next.
    for p in w.windows(2) {
        let gap = (p[1].0 - p[0].0).as_secs_f64();
        assert!((gap - p[0].1 as f64 / RATE).abs() < 1e-8, "gap {gap} after {} bytes", p[0].1);
    }
    // Every wakeup of the limiter writes: none comes early with nothing to send.
    let wakeups = net.peers[s].wakeups.iter().filter(|&&t| t > secs(10.0)).count();
    assert_eq!(wakeups, w.len() - 1);
    let bytes: u32 = w.iter().map(|x| x.1).sum();
    assert!((bytes as f64 - 3.0 * RATE).abs() <= 1380.0, "{bytes} bytes in 3 s");
}

#[test]
fn a_choke_empties_the_request_queue_at_once_or_after_the_half_written_piece_and_later_requests_are_ignored() {
    // One upload slot: a timed rechoke forcing a new unchoke chokes the current one.
    let mut net = Net::new();
    let s = net.add(ClientConfig { upload_slots: 1, ..mainline() }, &four_pieces(), true);
    net.start(s);
    let (la, a) = net.accept_from(s, 8);
    let (lb, b) = net.accept_from(s, 9);
    for slot in [a, b] {
        net.inject(s, slot, Frame::Handshake { fast: false });
        net.send(s, slot, Message::Interested);
    }
    net.run_until(secs(10.0));
    let unchoked = |net: &Net, link| net.io(s).msgs(link).last() == Some(&Message::Unchoke);
    let (x, lx, rx, y, ly, ry) = if unchoked(&net, la) { (a, la, 8, b, lb, 9) } else { (b, lb, 9, a, la, 8) };
    assert!(unchoked(&net, lx) && !unchoked(&net, ly));

    // X's socket is full: its requests wait, no piece message is begun.
    net.peers[s].io.stuck.push(lx);
    for blk in 0..3 {
        net.send(s, x, request(0, blk));
    }
    let c = net.c(s).connection(x).unwrap();
    assert_eq!((c.queued.len(), c.partial_left), (3, 0));
    let end = net.io(s).written[&lx];
    net.run_until(secs(20.0));
    // The second rechoke forces a new unchoke: X is choked at once, queue emptied.
    assert_eq!(net.io(s).frames_on(lx).last(), Some(&(end, Frame::Msg(Message::Choke))));
    assert_eq!(net.io(s).writes_on(lx).last(), Some(&(secs(20.0), 5)));
    assert!(net.c(s).connection(x).unwrap().queued.is_empty());
    assert!(unchoked(&net, ly));
    net.peers[s].io.stuck.clear();
    net.send(s, x, request(0, 3));
    assert_eq!(net.c(s).stats.requests_while_choked, 1);
    assert!(net.c(s).connection(x).unwrap().queued.is_empty());

    // Y asks for 48 blocks: 30 s of uploading at 20 KiB/s.
    for (p, blk) in (0..3).flat_map(|p| (0..16).map(move |blk| (p, blk))) {
        net.send(s, y, request(p, blk));
    }
    net.run_until(secs(49.9));
    assert!(!net.c(s).connection(y).unwrap().am_choking, "kept at 30 and 40 s");
    let notes = net.io(s).notes.len();
    net.run_until(secs(50.0));
    // Y is choked halfway through a piece message: the choke waits for its end.
    let new = &net.io(s).notes[notes..];
    assert_eq!(new.len(), 2);
    assert!(new.contains(&Note::Choke { link: ly, remote: ry, choked: true }));
    assert!(new.contains(&Note::Choke { link: lx, remote: rx, choked: false }), "X's turn again");
    let c = net.c(s).connection(y).unwrap();
    assert!(c.am_choking && !c.choke_sent && c.partial_left > 0 && !c.queued.is_empty());
    assert!(matches!(net.io(s).msgs(ly).last(), Some(Message::Piece { .. })));
    net.send(s, y, request(3, 0));
    assert_eq!(net.c(s).stats.requests_while_choked, 2);
    let pieces = net.io(s).msgs(ly).len();
    net.run_until(secs(51.0));
    let f = net.io(s).frames_on(ly);
    let [(po, Frame::Msg(Message::Piece { .. })), (co, Frame::Msg(Message::Choke))] = &f[f.len() - 2..] else {
        panic!("{:?}", &f[f.len() - 2..])
    };
    assert_eq!(*co, po + PIECE_MSG as u64, "the choke follows the piece message's last byte");
    let w = net.io(s).writes_on(ly);
    let [(t1, 1217), (t2, 5)] = w[w.len() - 2..] else { panic!("{:?}", &w[w.len() - 2..]) };
    assert_eq!(t1, t2, "in the same turn");
    assert_eq!(net.io(s).msgs(ly).len(), pieces + 1, "no piece message after the choke");
    let c = net.c(s).connection(y).unwrap();
    assert!(c.choke_sent && c.queued.is_empty() && c.partial_left == 0);
}

#[test]
fn a_choked_leecher_returns_its_requests_to_the_picker_and_asks_for_the_same_blocks_after_the_unchoke() {
    let mut net = Net::new();
    let l = net.add(mainline(), &four_pieces(), false);
    net.start(l);
    let (link, slot) = net.accept_from(l, 9);
    net.inject(l, slot, Frame::Handshake { fast: false });
    net.inject(l, slot, Frame::Bitfield(Box::new(Bitfield::full(4))));
    assert_eq!(
        net.io(l).frames_on(link),
        vec![(0, Frame::Handshake { fast: false }), (68, Frame::Msg(Message::Interested))]
    );
    net.send(l, slot, Message::Unchoke);
    let first = requested(&net.io(l).msgs(link));
    let p = first[0].0;
    assert_eq!(first, vec![(p, 0), (p, 1)]);
    assert!(net.c(l).picker().is_outstanding(p, 0) && net.c(l).picker().is_outstanding(p, 1));
    let sent = net.io(l).frames.len();
    net.send(l, slot, Message::Choke);
    assert_eq!(net.io(l).frames.len(), sent, "a choke cancels requests silently");
    assert!(net.c(l).connection(slot).unwrap().active.is_empty());
    assert!(!net.c(l).picker().is_outstanding(p, 0) && !net.c(l).picker().is_outstanding(p, 1));
    // A block whose request was dropped is discarded if it comes all the same.
    net.send(l, slot, piece(p, 0));
    assert_eq!(net.io(l).notes, vec![Note::Wasted { link, bytes: BLOCK }]);
    assert_eq!((net.c(l).stats.bytes_wasted, net.c(l).picker().received_in(p)), (BLOCK as u64, 0));
    let st = &net.c(l).stats;
    assert_eq!(
        (st.wasted_dropped, st.wasted_duplicate, st.wasted_end_game),
        (BLOCK as u64, 0, 0),
        "counted as dropped"
    );
    net.send(l, slot, Message::Unchoke);
    assert_eq!(requested(&net.io(l).msgs(link)[first.len() + 1..]), first, "the same blocks again");
}

#[test]
fn a_completed_piece_sends_a_9_byte_have_to_every_peer_after_the_refill_and_the_last_one_closes_seeds_first() {
    let t = Torrent::new(2 * 32_768, 32_768);
    let mut net = Net::new();
    let l = net.add(mainline(), &t, false);
    net.start(l);
    let (l9, a) = net.accept_from(l, 9);
    net.inject(l, a, Frame::Handshake { fast: false });
    net.inject(l, a, Frame::Bitfield(Box::new(Bitfield::full(2))));
    let (l8, b) = net.accept_from(l, 8);
    net.inject(l, b, Frame::Handshake { fast: false });
    net.send(l, a, Message::Unchoke);
    let reqs = requested(&net.io(l).msgs(l9));
    let (p, q) = (reqs[0].0, 1 - reqs[0].0);
    assert_eq!(reqs, vec![(p, 0), (p, 1)]);
    net.run_until(secs(1.0));
    net.send(l, a, piece(p, 0));
    assert!(net.io(l).notes.is_empty());
    assert_eq!(requested(&net.io(l).msgs(l9)), vec![(p, 0), (p, 1), (q, 0)]);
    let sent9 = net.io(l).msgs(l9).len();
    net.send(l, a, piece(p, 1));
    assert_eq!(net.io(l).notes, vec![Note::PieceVerified { piece: p }]);
    // Mainline refills the pipeline inside `got_piece`; the HAVEs follow it.
    assert_eq!(net.io(l).msgs(l9)[sent9..], [request(q, 1), Message::Have { piece: p }]);
    assert_eq!(net.io(l).msgs(l8), vec![Message::Have { piece: p }]);
    assert_eq!(net.io(l).sizes(l8), vec![68, 9]);
    assert!(net.io(l).announces.iter().all(|a| a.0 == AnnounceEvent::Started));

    net.run_until(secs(2.0));
    net.send(l, a, piece(q, 0));
    net.send(l, a, piece(q, 1));
    let notes = [Note::PieceVerified { piece: p }, Note::PieceVerified { piece: q }, Note::Completed];
    assert_eq!(net.io(l).notes, notes);
    assert_eq!(net.io(l).announces.last(), Some(&(AnnounceEvent::Completed, 50)));
    assert_eq!((net.c(l).completed_at(), net.c(l).is_seed()), (Some(secs(2.0)), true));
    assert_eq!(net.io(l).msgs(l8), vec![Message::Have { piece: p }, Message::Have { piece: q }]);
    assert_eq!(net.io(l).sizes(l8), vec![68, 9, 9]);
    // The seed is told not interested (nothing left to ask of it); then,
    // seed to seed, the connection closes before the HAVEs go out.
    assert_eq!(net.io(l).msgs(l9)[sent9 + 2..], [Message::NotInterested]);
    assert_eq!(net.io(l).closes, vec![l9]);
    assert!(net.c(l).connection(a).is_none() && net.c(l).connection(b).is_some());
    assert_eq!(net.c(l).stats.bytes_down, 65_536);
}

#[test]
fn in_end_game_the_other_seed_is_asked_for_the_outstanding_blocks_and_cancelled_when_one_arrives() {
    let t = Torrent::new(32_768, 32_768);
    let mut net = Net::new();
    let s1 = net.add(mainline(), &t, true);
    let s2 = net.add(mainline(), &t, true);
    let l = net.add(mainline(), &t, false);
    net.start(s1);
    net.start(l);
    net.with(l, |c, now, io| c.on_tracker_reply(now, &[0, 1], io));
    let [(0, slot1, up1), (1, slot2, up2)] = net.io(l).connects[..] else { panic!() };
    net.run_until(secs(0.5));
    net.start(s2); // its rechokes come at 10.5 s, 20.5 s...
    net.run_until(secs(10.0));
    // Seed 1 unchokes: both blocks are requested from it; end game begins.
    assert_eq!(requested(&net.io(l).msgs(up1)), vec![(0, 0), (0, 1)]);
    assert!(net.c(l).picker().in_end_game());
    assert!(requested(&net.io(l).msgs(up2)).is_empty());
    net.run_until(secs(10.5));
    // Seed 2 unchokes: it is asked for the same outstanding blocks.
    let mut again = requested(&net.io(l).msgs(up2));
    again.sort();
    assert_eq!(again, vec![(0, 0), (0, 1)]);
    assert!(net.io(l).sizes(up2).ends_with(&[17, 17]));
    // Seed 1's first block lands at 10 + 11 x 1380 / 20480 s: seed 2 gets a cancel.
    net.run_until(secs(10.9));
    let (landed, last) = net.io(s1).writes_on(net.links[&up1].back)[3 + 11];
    assert_eq!(last, 1217);
    assert_eq!(net.io(l).msgs(up2).last(), Some(&Message::Cancel { piece: 0, begin: 0, length: BLOCK }));
    assert_eq!(net.io(l).writes_on(up2).last(), Some(&(landed, 17)));
    assert_eq!(net.c(l).connection(slot1).unwrap().active, vec![(0, 1)]);
    assert_eq!(net.c(l).connection(slot2).unwrap().active, vec![(0, 1)]);
    let at_s2 = net.c(s2).connections().next().unwrap().1;
    assert!(!at_s2.queued.contains(&(0, 0)));
    net.run_until(secs(13.0));
    assert!(net.c(l).is_seed());
    assert_eq!(net.c(l).stats.bytes_down, 32_768);
    assert!(net.c(l).connections().next().is_none(), "a seed keeps no connection to seeds");
    // Whatever end game wasted is counted as end-game waste.
    let st = &net.c(l).stats;
    assert_eq!((st.wasted_dropped, st.wasted_duplicate, st.bytes_wasted), (0, 0, st.wasted_end_game));
}

#[test]
fn accept_refuses_a_second_connection_from_a_peer_and_any_beyond_max_allow_in() {
    let mut net = Net::new();
    let c = net.push(client(5, ClientConfig { max_allow_in: 4, ..mainline() }, &four_pieces(), false));
    net.start(c);
    let (_, first) = net.accept_from(c, 9);
    let accept = |net: &mut Net, remote: u32, link: u32| {
        net.with(c, |cl, now, io| cl.accept(now, remote, link, Transport::Tcp, io).ok())
    };
    assert_eq!(accept(&mut net, 9, 500), None, "one connection per peer");
    assert_eq!(net.c(c).stats.connections_refused, 1);
    // Dials that cross ours: the one from the lower peer id wins.
    net.with(c, |cl, now, io| cl.on_tracker_reply(now, &[3, 7], io));
    let [(3, s3, l3), (7, _, _)] = net.io(c).connects[..] else { panic!() };
    assert_eq!(accept(&mut net, 7, 501), None, "ours to 7 wins");
    let s = accept(&mut net, 3, 502).expect("theirs from 3 wins");
    assert_eq!(net.io(c).closes, vec![l3]);
    let conn = net.c(c).connection(s).unwrap();
    assert_eq!((conn.remote, conn.link, conn.initiator, s), (3, 502, false, s3));
    assert!(accept(&mut net, 10, 503).is_some());
    assert_eq!(net.c(c).connections().count(), 4);
    assert_eq!(accept(&mut net, 11, 504), None, "max_allow_in");
    assert_eq!(net.c(c).stats.connections_refused, 3);
    net.with(c, |cl, now, io| cl.on_closed(now, first, io));
    assert!(accept(&mut net, 11, 505).is_some(), "room again");
}

#[test]
fn a_peer_that_loses_interest_has_its_queued_requests_dropped_though_still_unchoked() {
    // Mainline `Upload.got_not_interested`: `del self.buffer[:]`.
    let mut net = Net::new();
    let l = net.add(mainline(), &Torrent::new(2 * 32_768, 32_768), false);
    net.start(l);
    let (l9, a) = net.accept_from(l, 9);
    net.inject(l, a, Frame::Handshake { fast: false });
    net.inject(l, a, Frame::Bitfield(Box::new(Bitfield::full(2))));
    net.send(l, a, Message::Unchoke);
    let p = requested(&net.io(l).msgs(l9))[0].0;
    net.send(l, a, piece(p, 0));
    net.send(l, a, piece(p, 1));
    let (l8, b) = net.accept_from(l, 8);
    net.inject(l, b, Frame::Handshake { fast: false });
    net.send(l, b, Message::Interested);
    net.run_until(secs(10.0));
    assert_eq!(net.io(l).msgs(l8).last(), Some(&Message::Unchoke));
    net.send(l, b, request(p, 0));
    net.send(l, b, request(p, 1));
    assert_eq!(net.c(l).connection(b).unwrap().queued.len(), 1, "one piece message under way");
    net.send(l, b, Message::NotInterested);
    let c = net.c(l).connection(b).unwrap();
    assert!(!c.am_choking, "a leecher unchokes uninterested peers for free");
    assert!(c.queued.is_empty() && c.partial_left > 0);
    net.run_until(secs(12.0));
    let pieces = net.io(l).msgs(l8).iter().filter(|m| matches!(m, Message::Piece { .. })).count();
    assert_eq!(pieces, 1, "the message under way is finished, the queued one dropped");
}

#[test]
fn the_rechoke_rows_mirror_every_connection_and_time_the_last_block_from_the_handshake_on() {
    let (mut net, s, l, _, _) = pair_dialled_at(secs(3.0));
    net.settle();
    let (ls, _) = net.c(l).connections().next().unwrap();
    let (ss, _) = net.c(s).connections().next().unwrap();
    assert_eq!(net.c(l).rows.last_piece(ls), secs(3.0), "snubbing counts from the handshake");
    assert_eq!(net.c(s).rows.flags(ss), rows::READY | rows::INTERESTED | rows::CHOKING);
    net.run_until(secs(30.0));
    assert!(net.c(l).rows_mirror_connections() && net.c(s).rows_mirror_connections());
    // Unchoked at the 10 s rechoke: blocks have come since.
    let last = net.c(l).rows.last_piece(ls);
    assert!(last > secs(10.0) && last <= secs(30.0), "last block at {last:?}");
    assert_eq!(net.c(s).rows.flags(ss) & (rows::READY | rows::CHOKING), rows::READY);
}

#[path = "interest_tests.rs"]
mod interest;

#[path = "libtorrent_interest_tests.rs"]
mod libtorrent_interest;

#[path = "fast_tests.rs"]
mod fast;

#[path = "peer_end_game_tests.rs"]
mod peer_end_game;
