//! libtorrent's per-peer end game (`request_a_block`'s `set_endgame`,
//! strict end game with one busy block, `second_tick`'s 5-second retry,
//! and no CANCEL for a busy block's other copy).

use super::*;
use crate::bitfield::Bitfield;

/// (net, leecher, (a's link, slot), the blocks asked of a).
type Asking = (Net, usize, (u32, u32), Vec<(u32, u32)>);

/// Leecher `l` (libtorrent, no upload limit) of `pieces` pieces of two
/// blocks; scripted remote `a` (no Fast Extension) has every piece and
/// unchokes us: slow start asks it for four blocks.
fn asking(pieces: u32) -> Asking {
    let mut net = Net::new();
    let l = net.add(ClientConfig::libtorrent(None), &Torrent::new(pieces as u64 * 32_768, 32_768), false);
    net.start(l);
    let all: Vec<u32> = (0..pieces).collect();
    let (la, a) = remote(&mut net, l, 9, pieces, &all);
    net.send(l, a, Message::Unchoke);
    let asked = requested(&net.io(l).msgs(la));
    (net, l, (la, a), asked)
}

/// A scripted remote (no Fast Extension) with the pieces of `has`.
fn remote(net: &mut Net, l: usize, id: u32, pieces: u32, has: &[u32]) -> (u32, u32) {
    let mut b = Bitfield::new(pieces);
    for &p in has {
        b.set(p);
    }
    let (link, slot) = net.accept_from(l, id);
    net.inject(l, slot, Frame::Handshake { fast: false });
    net.inject(l, slot, Frame::Bitfield(Box::new(b)));
    (link, slot)
}

fn endgame(net: &Net, l: usize, slot: u32) -> bool {
    net.c(l).connection(slot).unwrap().endgame
}

#[test]
fn an_unchoked_libtorrent_peer_the_picker_cannot_fill_enters_end_game_mode_and_asks_again_after_5_s() {
    let (mut net, l, (_, a), asked) = asking(4);
    assert_eq!(asked.len(), 4, "two whole pieces");
    let (p, q) = (asked[0].0, asked[2].0);
    let (lc, c) = remote(&mut net, l, 10, 4, &[p]);
    net.send(l, c, Message::Unchoke);
    assert_eq!(net.io(l).msgs(lc), vec![Message::Interested], "p is all asked of a; two pieces are open");
    assert!(endgame(&net, l, c), "fewer blocks picked than wanted, and c unchokes us");
    assert!(!endgame(&net, l, a));
    // q arrives from a, which is asked for the two open pieces.
    net.send(l, a, piece(q, 0));
    net.send(l, a, piece(q, 1));
    assert_eq!(requested(&net.io(l).msgs(net_link(&net, l, a))).len(), 8, "every piece is being downloaded");
    net.run_until(secs(4.9));
    assert!(requested(&net.io(l).msgs(lc)).is_empty(), "nothing asks c before 5 s");
    net.run_until(secs(5.5));
    let busy = requested(&net.io(l).msgs(lc));
    assert_eq!(busy.len(), 1, "the retry picks one busy block");
    assert_eq!(busy[0].0, p);
    assert!(asked.contains(&busy[0]), "a block already asked of a");
}

/// The link of the connection on `slot`.
fn net_link(net: &Net, l: usize, slot: u32) -> u32 {
    net.c(l).connection(slot).unwrap().link
}

#[test]
fn with_every_wanted_piece_being_downloaded_an_idle_libtorrent_peer_requests_exactly_one_busy_block() {
    let (mut net, l, _, asked) = asking(2);
    assert_eq!(asked.len(), 4, "every block is asked of a");
    let (lc, c) = remote(&mut net, l, 10, 2, &[0, 1]);
    net.send(l, c, Message::Unchoke);
    let busy = requested(&net.io(l).msgs(lc));
    assert_eq!(busy.len(), 1, "one busy block, though slow start would queue four");
    assert!(asked.contains(&busy[0]));
    assert!(endgame(&net, l, c));
    net.run_until(secs(12.0));
    assert_eq!(requested(&net.io(l).msgs(lc)).len(), 1, "with one outstanding, the retry asks nothing more");
}

#[test]
fn with_unrequested_pieces_left_a_libtorrent_peer_never_requests_a_busy_block_strict_end_game() {
    let (mut net, l, _, asked) = asking(4);
    let p = asked[0].0;
    let (lc, c) = remote(&mut net, l, 10, 4, &[p]);
    net.send(l, c, Message::Unchoke);
    net.run_until(secs(30.0));
    assert!(requested(&net.io(l).msgs(lc)).is_empty(), "two pieces are still open: no busy block, retry or not");
    assert!(endgame(&net, l, c));
    assert!(net.c(l).connection(c).unwrap().am_interested, "still interested: c has a piece we lack");
}

#[test]
fn when_a_busy_block_arrives_a_libtorrent_peer_sends_no_cancel_and_the_other_copy_is_end_game_waste() {
    let (mut net, l, (la, a), _) = asking(2);
    let (lc, c) = remote(&mut net, l, 10, 2, &[0, 1]);
    net.send(l, c, Message::Unchoke);
    let (p, b) = requested(&net.io(l).msgs(lc))[0];
    net.send(l, c, piece(p, b));
    assert!(!net.io(l).msgs(la).iter().any(|m| matches!(m, Message::Cancel { .. })), "cancel_request finds it writing");
    let again = requested(&net.io(l).msgs(lc));
    assert_eq!(again.len(), 2, "c, idle again, is given another busy block");
    assert_ne!(again[1], (p, b));
    net.send(l, a, piece(p, b));
    let st = &net.c(l).stats;
    assert_eq!((st.wasted_end_game, st.wasted_duplicate, st.wasted_dropped), (16_384, 0, 0));
}

#[test]
fn a_choke_frees_only_the_blocks_no_other_libtorrent_peer_has_asked() {
    let (mut net, l, (_, a), asked) = asking(2);
    let (lc, c) = remote(&mut net, l, 10, 2, &[0, 1]);
    net.send(l, c, Message::Unchoke);
    let busy = requested(&net.io(l).msgs(lc))[0];
    net.send(l, a, Message::Choke);
    for &(p, b) in &asked {
        let outstanding = net.c(l).picker().is_outstanding(p, b);
        assert_eq!(outstanding, (p, b) == busy, "{p},{b}: only the busy block is still asked, of c");
    }
}

#[test]
fn a_mainline_client_keeps_the_torrent_wide_end_game_and_no_peer_enters_end_game_mode() {
    let mut net = Net::new();
    let l = net.add(mainline(), &Torrent::new(2 * 32_768, 32_768), false);
    net.start(l);
    let (_, a) = remote(&mut net, l, 9, 2, &[0, 1]);
    net.send(l, a, Message::Unchoke);
    let (_, c) = remote(&mut net, l, 10, 2, &[0, 1]);
    net.send(l, c, Message::Unchoke);
    assert!(net.c(l).picker().in_end_game());
    assert!(!endgame(&net, l, a) && !endgame(&net, l, c));
}
