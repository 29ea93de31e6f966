//! Scripted tests of the Fast Extension (BEP 6) between libtorrent clients:
//! `have_all`/`have_none`, the allowed-fast set offered on interest and
//! served while choked (with libtorrent's limits), rejects on a choke and
//! what the downloader does with them, and nothing of it against a peer
//! without the extension.

use super::*;
use crate::fast::allowed_fast_set;
use crate::picker::PickOrder;

/// 40 pieces of two blocks, info hash 0xaa x 20.
fn torrent40() -> Torrent {
    Torrent::new(40 * 32_768, 32_768).with_info_hash([0xaa; 20])
}

/// libtorrent without an upload limit (blocks go out at once).
fn libtorrent() -> ClientConfig {
    ClientConfig::libtorrent(None)
}

/// The allowed-fast set a libtorrent peer offers peer `remote` (at
/// 10.0.0.(remote + 1), `Rec::address`) of [`torrent40`].
fn set_for(remote: u32) -> Vec<u32> {
    allowed_fast_set(&[10, 0, 0, remote as u8 + 1], &[0xaa; 20], 5, 40, |_| false)
}

/// A libtorrent seed with one upload slot, which scripted remotes 8 and 9
/// dial, handshake with (announcing the Fast Extension or not; with it they
/// send `have_none`) and tell they are interested. Returns (net, seed,
/// [(link, slot); 2]).
fn seed_with_two_interested(fast: bool) -> (Net, usize, Vec<(u32, u32)>) {
    let mut net = Net::new();
    let s = net.add(ClientConfig { upload_slots: 1, ..libtorrent() }, &torrent40(), true);
    net.start(s);
    let mut ends = vec![];
    for remote in [8, 9] {
        let (link, slot) = net.accept_from(s, remote);
        net.inject(s, slot, Frame::Handshake { fast });
        if fast {
            net.send(s, slot, Message::HaveNone);
        }
        net.send(s, slot, Message::Interested);
        ends.push((link, slot));
    }
    (net, s, ends)
}

/// A libtorrent seed with one upload slot, taken by scripted remote 8 (A);
/// scripted remote 9 (B) has said it is interested and stays choked.
/// Returns (net, seed, (A's link, slot), (B's link, slot)).
fn seed_with_a_choked_peer() -> (Net, usize, (u32, u32), (u32, u32)) {
    let (net, s, ends) = seed_with_two_interested(true);
    assert!(!net.c(s).connection(ends[0].1).unwrap().am_choking, "A has the slot");
    assert!(net.c(s).connection(ends[1].1).unwrap().am_choking, "B waits");
    (net, s, ends[0], ends[1])
}

#[test]
fn interested_brings_five_allowed_fast_pieces_which_a_choking_seed_serves_while_it_rejects_any_other_request() {
    let (mut net, s, _, (lb, b)) = seed_with_a_choked_peer();
    let set = set_for(9);
    assert_eq!(set.len(), 5);
    // Handshake with the bit, have_all (5 bytes) in place of a bitfield,
    // then on B's interested five 9-byte allowed_fast messages and no unchoke.
    let mut want = vec![(0, Frame::Handshake { fast: true }), (68, Frame::Msg(Message::HaveAll))];
    want.extend(
        set.iter().enumerate().map(|(i, &piece)| (73 + 9 * i as u64, Frame::Msg(Message::AllowedFast { piece }))),
    );
    assert_eq!(net.io(s).frames_on(lb), want);
    assert_eq!(net.io(s).sizes(lb), vec![68, 5, 9, 9, 9, 9, 9]);
    assert_eq!(net.c(s).stats.allowed_fast_sent, 10, "five to A, five to B");
    // B asks for a block of an allowed-fast piece while choked: served.
    let p = set[0];
    net.send(s, b, request(p, 1));
    assert_eq!(net.io(s).msgs(lb).last(), Some(&piece(p, 1)));
    assert_eq!(net.io(s).sizes(lb).iter().sum::<u32>(), 68 + 5 + 45 + PIECE_MSG);
    assert_eq!(net.c(s).stats.fast_requests_served, 1);
    // A block of any other piece: a 17-byte reject_request.
    let q = (0..40).find(|x| !set.contains(x)).unwrap();
    net.send(s, b, request(q, 0));
    assert_eq!(net.io(s).msgs(lb).last(), Some(&Message::RejectRequest { piece: q, begin: 0, length: BLOCK }));
    assert_eq!(net.io(s).sizes(lb).last(), Some(&17));
    assert_eq!((net.c(s).stats.requests_while_choked, net.c(s).stats.rejects_sent), (1, 1));
    assert!(net.io(s).closes.is_empty(), "within 2 s of the choke");
    // A second interested offers no second set.
    net.send(s, b, Message::NotInterested);
    net.send(s, b, Message::Interested);
    assert_eq!(net.c(s).stats.allowed_fast_sent, 10);
}

#[test]
fn a_choked_peer_is_disconnected_past_three_requests_per_block_of_an_allowed_fast_piece_or_asking_late_for_another() {
    let (mut net, s, _, (lb, b)) = seed_with_a_choked_peer();
    let set = set_for(9);
    // Two blocks per piece: 3 x 2 = 6 requests for one piece are served.
    for k in 0..6 {
        net.send(s, b, request(set[1], k % 2));
    }
    assert_eq!(net.io(s).msgs(lb).iter().filter(|m| matches!(m, Message::Piece { .. })).count(), 6);
    assert!(net.io(s).closes.is_empty());
    net.send(s, b, request(set[1], 0));
    assert_eq!(net.io(s).closes, vec![lb], "libtorrent disconnects on the seventh");
    assert!(net.c(s).connection(b).is_none());

    // A request outside the set more than 2 s after the choke (here, the
    // connection's start) is rejected, then the connection closed.
    let (mut net, s, _, (lb, b)) = seed_with_a_choked_peer();
    net.run_until(secs(2.5));
    let q = (0..40).find(|x| !set.contains(x)).unwrap();
    net.send(s, b, request(q, 0));
    assert_eq!(net.io(s).msgs(lb).last(), Some(&Message::RejectRequest { piece: q, begin: 0, length: BLOCK }));
    assert_eq!(net.io(s).closes, vec![lb]);
}

#[test]
fn a_choke_rejects_each_queued_request_outside_the_allowed_fast_set_and_the_rest_are_still_served() {
    let (mut net, s, (la, a), _) = seed_with_a_choked_peer();
    let set = set_for(8);
    let (p, q) = (set[0], (0..40).find(|x| !set.contains(x)).unwrap());
    // A's socket is full: its requests wait.
    net.peers[s].io.stuck.push(la);
    for (piece, block) in [(q, 0), (p, 0), (q, 1)] {
        net.send(s, a, request(piece, block));
    }
    assert_eq!(net.c(s).connection(a).unwrap().queued.len(), 3);
    let before = net.io(s).msgs(la).len();
    net.with(s, |c, now, io| c.choke(now, a, io));
    let reject = |block: u32| Message::RejectRequest { piece: q, begin: block * BLOCK, length: BLOCK };
    assert_eq!(net.io(s).msgs(la)[before..], [Message::Choke, reject(0), reject(1)]);
    assert_eq!(net.io(s).sizes(la)[before + 1..], [5, 17, 17]);
    assert_eq!(net.c(s).connection(a).unwrap().queued, [(p, 0)]);
    assert!(net.c(s).rows_mirror_connections());
    // Flushed, the allowed-fast block goes out to the choked peer.
    net.peers[s].io.stuck.clear();
    net.with(s, |c, now, io| c.on_flushed(now, a, io));
    assert_eq!(net.io(s).msgs(la).last(), Some(&piece(p, 0)));
    assert!(net.c(s).connection(a).unwrap().queued.is_empty());
}

/// A libtorrent leecher and scripted libtorrent seeds 8 (A) and 9 (B), each
/// handshaken with the bit and `have_all`: (net, leecher, [(link, slot)]).
fn leecher_with_two_seeds() -> (Net, usize, Vec<(u32, u32)>) {
    leecher_with_two_seeds_picking(PickOrder::Libtorrent)
}

/// [`leecher_with_two_seeds`], the leecher picking in `order`.
fn leecher_with_two_seeds_picking(order: PickOrder) -> (Net, usize, Vec<(u32, u32)>) {
    let mut net = Net::new();
    let l = net.add(ClientConfig { pick_order: order, ..libtorrent() }, &torrent40(), false);
    net.start(l);
    let mut ends = vec![];
    for remote in [8, 9] {
        let (link, slot) = net.accept_from(l, remote);
        net.inject(l, slot, Frame::Handshake { fast: true });
        net.send(l, slot, Message::HaveAll);
        ends.push((link, slot));
    }
    (net, l, ends)
}

#[test]
fn a_leecher_says_have_none_and_asks_a_seed_that_chokes_it_for_blocks_of_its_allowed_fast_pieces() {
    let (mut net, l, ends) = leecher_with_two_seeds();
    let (la, a) = ends[0];
    let frames = net.io(l).frames_on(la);
    assert_eq!(frames[..2], [(0, Frame::Handshake { fast: true }), (68, Frame::Msg(Message::HaveNone))]);
    assert_eq!(net.io(l).msgs(la), vec![Message::HaveNone, Message::Interested], "have_all makes A interesting");
    assert!(net.c(l).connection(a).unwrap().have.is_complete());
    net.send(l, a, Message::AllowedFast { piece: 7 });
    net.send(l, a, Message::AllowedFast { piece: 30 });
    // A still chokes us: only allowed-fast pieces are asked of it, up to
    // libtorrent's slow start of 4 requests.
    let asked = requested(&net.io(l).msgs(la));
    assert_eq!(asked.len(), 4);
    assert!(asked.iter().all(|&(p, _)| p == 7 || p == 30), "{asked:?}");
    // A block of one arrives: the pipeline is refilled from the set only.
    let (p, blk) = asked[0];
    net.send(l, a, piece(p, blk));
    assert!(requested(&net.io(l).msgs(la)).iter().all(|&(p, _)| p == 7 || p == 30));
    assert_eq!(net.c(l).stats.bytes_down, BLOCK as u64);
}

#[test]
fn a_choke_keeps_the_leechers_requests_until_rejected_and_each_rejected_block_is_asked_of_another_peer() {
    // Mainline's order: the rejected pieces stay started, and strict
    // priority asks for them first.
    let (mut net, l, ends) = leecher_with_two_seeds_picking(PickOrder::Mainline);
    let [(la, a), (lb, b)] = ends[..] else { panic!() };
    net.send(l, a, Message::Unchoke);
    let mut asked = requested(&net.io(l).msgs(la));
    assert_eq!(asked.len(), 4);
    // A chokes: nothing is let go yet (the Fast Extension's choke cancels nothing).
    net.send(l, a, Message::Choke);
    assert_eq!(net.c(l).connection(a).unwrap().active, asked);
    assert!(asked.iter().all(|&(p, k)| net.c(l).picker().is_outstanding(p, k)));
    // A rejects each: they go back to the picker.
    for &(p, k) in &asked {
        net.send(l, a, Message::RejectRequest { piece: p, begin: k * BLOCK, length: BLOCK });
    }
    assert!(net.c(l).connection(a).unwrap().active.is_empty());
    assert!(asked.iter().all(|&(p, k)| !net.c(l).picker().is_outstanding(p, k)));
    assert_eq!(net.c(l).stats.rejects_received, 4);
    // B unchokes us: the same blocks, those of the started pieces, are asked of it.
    net.send(l, b, Message::Unchoke);
    let mut again = requested(&net.io(l).msgs(lb));
    asked.sort_unstable();
    again.sort_unstable();
    assert_eq!(again, asked);
    assert!(net.c(l).rows_mirror_connections());
}

#[test]
fn in_libtorrents_order_a_rejected_piece_with_nothing_else_asked_is_open_again_and_picked_like_any_other() {
    let (mut net, l, ends) = leecher_with_two_seeds();
    let [(la, a), (lb, b)] = ends[..] else { panic!() };
    net.send(l, a, Message::Unchoke);
    let asked = requested(&net.io(l).msgs(la));
    assert_eq!(asked.len(), 4, "two two-block pieces");
    net.send(l, a, Message::Choke);
    // A rejects all but the last block: its piece stays partial, the other is open.
    for &(p, k) in &asked[..3] {
        net.send(l, a, Message::RejectRequest { piece: p, begin: k * BLOCK, length: BLOCK });
    }
    let (partial, last) = asked[3];
    let (open, _) = asked[0];
    assert_ne!(partial, open);
    net.send(l, b, Message::Unchoke);
    let again = requested(&net.io(l).msgs(lb));
    assert_eq!(again.len(), 4);
    assert_eq!(again[0], (partial, 1 - last), "the partial piece first (initial phase)");
    assert!(again[1..].iter().all(|&(p, _)| p != partial), "then new pieces from a random start");
    assert!(net.c(l).rows_mirror_connections());
}

#[test]
fn two_libtorrent_clients_agree_on_the_extension_the_seed_says_have_all_and_the_leecher_starts_on_its_allowed_fast_set()
{
    let t = torrent40();
    let mut net = Net::new();
    let s = net.add(libtorrent(), &t, true);
    let l = net.add(libtorrent(), &t, false);
    net.start(s);
    net.start(l);
    net.with(l, |c, now, io| c.on_tracker_reply(now, &[s as u32], io));
    let up = net.io(l).connects[0].2;
    let down = net.links[&up].back;
    // The seed hashes the leecher's address, 10.0.0.2.
    let set = set_for(l as u32);
    let mut want = vec![(0, Frame::Handshake { fast: true }), (68, Frame::Msg(Message::HaveAll))];
    want.extend(
        set.iter().enumerate().map(|(i, &piece)| (73 + 9 * i as u64, Frame::Msg(Message::AllowedFast { piece }))),
    );
    want.push((118, Frame::Msg(Message::Unchoke)));
    assert_eq!(net.io(s).frames_on(down)[..8], want[..]);
    let mut first = vec![(0, Frame::Handshake { fast: true }), (68, Frame::Msg(Message::HaveNone))];
    first.push((73, Frame::Msg(Message::Interested)));
    assert_eq!(net.io(l).frames_on(up)[..3], first[..]);
    // Still choked, the leecher asks for the first allowed-fast pieces as
    // they arrive (two blocks each, up to its slow start of 4).
    let asked = requested(&net.io(l).msgs(up));
    assert_eq!(asked[..4], [(set[0], 0), (set[0], 1), (set[1], 0), (set[1], 1)]);
    // Unlimited, the seed then sends the rest at once and the leecher completes.
    assert!(net.c(l).is_seed());
}

#[test]
fn against_a_peer_without_the_extension_a_libtorrent_seed_sends_a_bitfield_no_allowed_fast_and_ignores_choked_requests()
{
    let (mut net, s, ends) = seed_with_two_interested(false);
    let (lb, b) = ends[1];
    assert!(net.c(s).connection(b).unwrap().fast.is_none());
    let full = Frame::Bitfield(Box::new(Bitfield::full(40)));
    assert_eq!(net.io(s).frames_on(lb), vec![(0, Frame::Handshake { fast: true }), (68, full)]);
    net.send(s, b, request(set_for(9)[0], 0));
    assert!(net.io(s).msgs(lb).is_empty(), "ignored, as BEP 3 has it");
    assert_eq!((net.c(s).stats.requests_while_choked, net.c(s).stats.allowed_fast_sent), (1, 0));
    // A Fast Extension message on such a connection is a protocol error.
    net.send(s, b, Message::HaveNone);
    assert_eq!(net.io(s).closes, vec![lb]);
}

#[test]
fn with_the_extension_off_a_libtorrent_client_announces_no_bit_and_keeps_bep_3() {
    let mut net = Net::new();
    let cfg = ClientConfig { fast_extension: false, ..libtorrent() };
    let l = net.add(cfg, &torrent40(), false);
    net.start(l);
    let (link, slot) = net.accept_from(l, 8);
    net.inject(l, slot, Frame::Handshake { fast: true });
    net.inject(l, slot, Frame::Bitfield(Box::new(Bitfield::full(40))));
    assert!(net.c(l).connection(slot).unwrap().fast.is_none(), "both must announce it");
    assert_eq!(
        net.io(l).frames_on(link),
        vec![(0, Frame::Handshake { fast: false }), (68, Frame::Msg(Message::Interested))]
    );
    net.send(l, slot, Message::Unchoke);
    assert_eq!(requested(&net.io(l).msgs(link)).len(), 4);
    net.send(l, slot, Message::Choke);
    assert!(net.c(l).connection(slot).unwrap().active.is_empty(), "a choke drops the requests");
}
