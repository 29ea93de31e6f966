//! Scripted tests of connection management over two transports: the
//! dials a client makes, which connection to a peer it keeps, what it
//! refuses, libtorrent's fallback, and limits that count peers.

use torrentlab_engine::{EntityId, EntityRng, Time};

use super::{Client, ClientConfig, Frame, Io, Note, Stage};
use crate::dial::{Refusal, Transport, Transports};
use crate::torrent::Torrent;
use crate::tracker::AnnounceEvent;

/// What a client asked of its driver: dials (remote, slot, transport, link) and closes.
#[derive(Default)]
struct Script {
    dials: Vec<(u32, u32, Transport, u32)>,
    closes: Vec<u32>,
    next_link: u32,
}

impl Io for Script {
    fn connect(&mut self, remote: u32, slot: u32, transport: Transport) -> u32 {
        self.next_link += 1;
        self.dials.push((remote, slot, transport, self.next_link));
        self.next_link
    }
    fn frame(&mut self, _: u32, _: Frame) {}
    fn write(&mut self, _: u32, _: u32) {}
    fn flushed(&self, _: u32) -> bool {
        true
    }
    fn close(&mut self, link: u32) {
        self.closes.push(link);
    }
    fn announce(&mut self, _: AnnounceEvent, _: u32) {}
    fn note(&mut self, _: Note) {}
}

const NOW: Time = Time(1_000_000_000);

/// Client `id` (an empty leecher) with these transports, started.
fn client(id: u32, transports: Transports) -> (Client, Script) {
    let rng = |k: u64| EntityRng::new(7, EntityId(10 * id as u64 + k));
    let mut cfg = ClientConfig::mainline(None);
    cfg.transports = transports;
    let mut c = Client::new(id, cfg, Torrent::new(4 * 262_144, 262_144), false, [rng(0), rng(1), rng(2)]);
    let mut io = Script { next_link: 100, ..Script::default() };
    c.start(Time::ZERO, &mut io);
    (c, io)
}

/// The transports of the client's connections to `remote`, slot order.
fn to(c: &Client, remote: u32) -> Vec<(Transport, Stage)> {
    c.connections().filter(|(_, pc)| pc.remote == remote).map(|(_, pc)| (pc.transport, pc.stage)).collect()
}

#[test]
fn a_client_allowed_both_attempts_dials_utp_and_tcp_at_once_and_drops_tcp_when_utp_connects() {
    let (mut c, mut io) = client(1, Transports::disposition(31));
    c.on_tracker_reply(NOW, &[2], &mut io);
    let kinds: Vec<Transport> = io.dials.iter().map(|d| d.2).collect();
    assert_eq!(kinds, [Transport::Utp, Transport::Tcp], "uTP's SYN leaves first");
    let (utp_slot, tcp_link) = (io.dials[0].1, io.dials[1].3);
    c.on_connected(NOW, utp_slot, &mut io);
    assert_eq!(io.closes, [tcp_link], "the TCP attempt is closed");
    assert_eq!(to(&c, 2), [(Transport::Utp, Stage::Handshaking)]);
}

#[test]
fn a_tcp_connection_that_comes_up_first_is_used_until_the_utp_one_replaces_it() {
    let (mut c, mut io) = client(1, Transports::disposition(31));
    c.on_tracker_reply(NOW, &[2], &mut io);
    let (utp_slot, tcp_slot) = (io.dials[0].1, io.dials[1].1);
    c.on_connected(NOW, tcp_slot, &mut io);
    assert!(io.closes.is_empty(), "the handshake goes out over TCP meanwhile");
    assert_eq!(to(&c, 2).len(), 2);
    c.on_connected(NOW, utp_slot, &mut io);
    assert_eq!(to(&c, 2), [(Transport::Utp, Stage::Handshaking)]);
}

#[test]
fn a_failed_utp_attempt_leaves_the_tcp_one_and_limits_count_peers_not_sockets() {
    let (mut c, mut io) = client(1, Transports::disposition(31));
    let peers: Vec<u32> = (2..42).collect();
    c.on_tracker_reply(NOW, &peers, &mut io);
    assert_eq!(io.dials.len(), 80, "max_initiate = 40 peers, two attempts each");
    c.on_tracker_reply(NOW, &[50], &mut io); // a spare
    assert_eq!(io.dials.len(), 80);
    let (utp_slot, tcp_slot) = (io.dials[0].1, io.dials[1].1);
    c.on_connected(NOW, tcp_slot, &mut io);
    let before = io.dials.len();
    c.on_closed(NOW, utp_slot, &mut io); // peer 2 never answers uTP
    assert_eq!(io.dials.len(), before, "peer 2 is still connected: the spare waits");
    assert_eq!(to(&c, 2), [(Transport::Tcp, Stage::Handshaking)]);
    // When the peer is gone altogether, the spare takes its place.
    c.on_closed(NOW, tcp_slot, &mut io);
    assert_eq!(io.dials[before..].iter().map(|d| d.0).collect::<Vec<_>>(), [50, 50]);
}

#[test]
fn a_legacy_client_refuses_a_utp_dial_for_its_transport_and_takes_tcp() {
    let (mut c, mut io) = client(1, Transports::disposition(5));
    assert_eq!(c.accept(NOW, 2, 7, Transport::Utp, &mut io), Err(Refusal::Transport));
    assert!(c.accept(NOW, 2, 8, Transport::Tcp, &mut io).is_ok());
    assert_eq!(c.stats.connections_refused, 1);
}

#[test]
fn a_utp_dial_from_a_peer_replaces_our_tcp_dial_to_it_when_we_prefer_utp() {
    // 13 dials TCP; 14 dials uTP; the dials cross.
    let (mut c, mut io) = client(5, Transports::disposition(13));
    c.on_tracker_reply(NOW, &[9], &mut io);
    let tcp_link = io.dials[0].3;
    let slot = c.accept(NOW, 9, 50, Transport::Utp, &mut io).expect("uTP accepted");
    assert_eq!(io.closes, [tcp_link]);
    assert_eq!(to(&c, 9), [(Transport::Utp, Stage::Handshaking)]);
    assert_eq!(c.connection(slot).map(|pc| pc.initiator), Some(false));
}

#[test]
fn a_tcp_dial_is_taken_while_our_utp_dial_is_under_way_and_closed_when_it_connects() {
    let (mut c, mut io) = client(5, Transports::disposition(14));
    c.on_tracker_reply(NOW, &[9], &mut io);
    let utp_slot = io.dials[0].1;
    c.accept(NOW, 9, 50, Transport::Tcp, &mut io).expect("taken for now");
    assert_eq!(to(&c, 9).len(), 2);
    c.on_connected(NOW, utp_slot, &mut io);
    assert_eq!(io.closes, [50]);
    assert_eq!(to(&c, 9), [(Transport::Utp, Stage::Handshaking)]);
    // Once a uTP connection is up, a TCP dial from the peer is a duplicate.
    assert_eq!(c.accept(NOW, 9, 51, Transport::Tcp, &mut io), Err(Refusal::Duplicate));
}

#[test]
fn without_a_preference_crossing_dials_are_settled_by_peer_id_whatever_their_transports() {
    // A mainline class dialling uTP meets a TCP dial from a lower id: ours loses.
    let (mut c, mut io) = client(5, Transports::mainline(Transport::Utp));
    c.on_tracker_reply(NOW, &[2, 9], &mut io);
    let to2 = io.dials[0].3;
    assert!(c.accept(NOW, 2, 60, Transport::Tcp, &mut io).is_ok());
    assert_eq!(io.closes, [to2]);
    // From a higher id, theirs is refused.
    assert_eq!(c.accept(NOW, 9, 61, Transport::Tcp, &mut io), Err(Refusal::Duplicate));
    // Mainline over TCP, as released, does not answer uTP at all.
    let (mut m, mut io) = client(5, Transports::mainline(Transport::Tcp));
    assert_eq!(m.accept(NOW, 2, 62, Transport::Utp, &mut io), Err(Refusal::Transport));
}

#[test]
fn libtorrent_dials_tcp_at_once_when_its_utp_connect_fails() {
    let (mut c, mut io) = client(1, Transports::libtorrent());
    c.on_tracker_reply(NOW, &[2], &mut io);
    assert_eq!(io.dials.iter().map(|d| d.2).collect::<Vec<_>>(), [Transport::Utp]);
    c.on_closed(NOW, io.dials[0].1, &mut io);
    assert_eq!(io.dials.iter().map(|d| (d.0, d.2)).collect::<Vec<_>>(), [(2, Transport::Utp), (2, Transport::Tcp)]);
    assert_eq!(c.stats.fallbacks, 1);
    // A uTP connection that was up and then closed is not retried over TCP.
    c.on_tracker_reply(NOW, &[3], &mut io);
    let slot = io.dials[2].1;
    c.on_connected(NOW, slot, &mut io);
    c.on_closed(NOW, slot, &mut io);
    assert_eq!(c.stats.fallbacks, 1);
    assert!(io.dials[3..].iter().all(|d| d.0 != 3 || d.2 != Transport::Tcp));
}

#[test]
fn at_its_limit_a_utorrent_client_still_takes_a_utp_connection_that_replaces_a_tcp_one() {
    let (mut c, mut io) = client(1, Transports::disposition(13));
    // 80 peers (max_allow_in) dial it over TCP; then one of them over uTP.
    for r in 2..82 {
        assert!(c.accept(NOW, r, 100 + r, Transport::Tcp, &mut io).is_ok());
    }
    assert_eq!(c.accept(NOW, 90, 300, Transport::Tcp, &mut io), Err(Refusal::Full), "a new peer is refused");
    assert!(c.accept(NOW, 5, 301, Transport::Utp, &mut io).is_ok(), "a twin is not a new peer");
    assert_eq!(to(&c, 5), [(Transport::Utp, Stage::Handshaking)]);
}
