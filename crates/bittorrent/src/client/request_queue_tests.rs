//! Scripted tests of libtorrent's request queue with whole pieces for fast
//! peers (`whole_pieces_threshold`, `prefer_contiguous_blocks`) inside the
//! client.

use super::libtorrent_tests::{secs, unchoked_leecher, Requests};
use super::{Client, ClientConfig, Frame};
use crate::torrent::BLOCK;
use crate::wire::Message;

/// A libtorrent leecher (whole pieces after `threshold` s; 0: off) of 8
/// pieces of 16 blocks, and the slot of a seed (no Fast Extension) that
/// unchokes it.
fn leecher(threshold: u32) -> (Client, Requests, u32) {
    unchoked_leecher(ClientConfig { whole_pieces_threshold: threshold, ..ClientConfig::libtorrent(None) })
}

/// The seed sends the oldest block asked of it at `t`.
fn deliver_oldest(c: &mut Client, io: &mut Requests, slot: u32, t: f64) {
    let (piece, block) = c.connection(slot).expect("live").active[0];
    c.on_frame(secs(t), slot, Frame::Msg(Message::Piece { piece, begin: block * BLOCK, length: BLOCK }), io);
}

/// `first_second` blocks arrive in the first second (the 5-second average
/// after the tick: a fifth of them), then blocks until one of a second
/// piece is requested. Returns the client, its Io, the seed's slot, that
/// second piece and the time.
fn until_a_second_piece(threshold: u32, first_second: u32) -> (Client, Requests, u32, u32, f64) {
    let (mut c, mut io, s) = leecher(threshold);
    let first = io.0[0].1;
    let mut t = 0.1;
    for _ in 0..first_second {
        deliver_oldest(&mut c, &mut io, s, t);
        t += 0.1;
    }
    t = 1.0;
    c.handle_timeout(secs(t), &mut io);
    loop {
        let pc = c.connection(s).expect("live");
        if let Some(&(p, _)) = pc.active.iter().chain(&pc.pending).find(|b| b.0 != first) {
            return (c, io, s, p, t);
        }
        t += 0.01;
        deliver_oldest(&mut c, &mut io, s, t);
    }
}

#[test]
fn a_leecher_whose_rate_would_fetch_a_piece_within_20_s_takes_a_whole_piece_and_queues_it_beyond_its_queue_size() {
    // 6 blocks in the first second: an average of 19,660 B/s, 393,216 B in
    // 20 s: one piece of 262,144.
    let (c, _, s, second, _) = until_a_second_piece(20, 6);
    let pc = c.connection(s).expect("live");
    let desired = pc.queue.desired(false, false) as usize;
    assert!(!c.picker().has_free_blocks(second), "all 16 blocks of piece {second} are taken at once");
    let of_second = |v: &Vec<(u32, u32)>| v.iter().filter(|b| b.0 == second).count();
    assert_eq!(of_second(&pc.active) + of_second(&pc.pending), 16);
    assert!(!pc.pending.is_empty(), "the blocks beyond the queue size wait in the request queue");
    assert_eq!(pc.active.len(), desired, "as many requested as the queue size");
}

#[test]
fn a_slow_peer_keeps_the_rarest_first_block_order_with_no_request_queue() {
    // 4 blocks in the first second: 13,107 B/s, 262,140 B in 20 s: short of a piece.
    for (threshold, first_second) in [(20, 4), (0, 6)] {
        let (c, _, s, second, _) = until_a_second_piece(threshold, first_second);
        let pc = c.connection(s).expect("live");
        assert!(pc.pending.is_empty(), "threshold {threshold}: nothing queued");
        assert!(c.picker().has_free_blocks(second), "threshold {threshold}: only the blocks the queue has room for");
    }
}

#[test]
fn a_choke_gives_the_queued_blocks_back_to_the_picker() {
    let (mut c, mut io, s, second, t) = until_a_second_piece(20, 6);
    c.on_frame(secs(t + 0.01), s, Frame::Msg(Message::Choke), &mut io);
    let pc = c.connection(s).expect("live");
    assert!(pc.pending.is_empty() && pc.active.is_empty());
    assert!(c.picker().has_free_blocks(second));
    assert!((0..16).all(|b| !c.picker().is_outstanding(second, b)), "none requested any more");
}

#[test]
fn a_peer_that_sends_nothing_for_20_s_loses_its_queued_blocks_but_not_its_outstanding_requests() {
    let (mut c, mut io, s, second, t) = until_a_second_piece(20, 6);
    let sent: Vec<_> = c.connection(s).expect("live").active.clone();
    let mut now = t.ceil();
    while now < t + 20.0 {
        c.handle_timeout(secs(now), &mut io);
        now += 1.0;
    }
    assert!(!c.connection(s).expect("live").pending.is_empty(), "20 s: not snubbed yet");
    c.handle_timeout(secs(now + 1.0), &mut io);
    let pc = c.connection(s).expect("live");
    assert!(pc.pending.is_empty(), "snubbed: the request queue is cleared");
    assert_eq!(pc.active, sent, "the requests sent stay");
    assert!(c.picker().has_free_blocks(second));
}
