//! Interest as libtorrent keeps it (`peer_connection::do_update_interest`,
//! in `interest`): a remote is interesting while it has a piece we lack,
//! whether or not its blocks are asked of others; updated on a bitfield, on
//! a HAVE (only towards interested), and when a piece passes; nobody is
//! interesting once the torrent is complete. And mainline's rule beside it.

use super::*;
use crate::client::InterestRule;

/// libtorrent without an upload limit (messages go out at once).
fn libtorrent() -> ClientConfig {
    ClientConfig::libtorrent(None)
}

/// (net, leecher, (a's link, slot), the blocks asked of a).
type Asking = (Net, usize, (u32, u32), Vec<(u32, u32)>);

/// Leecher `l` of `cfg` and `pieces` pieces of two blocks; scripted remote
/// `a` (no Fast Extension) has the pieces of `a_has` and unchokes us.
fn asking(cfg: ClientConfig, pieces: u32, a_has: &[u32]) -> Asking {
    let mut net = Net::new();
    let l = net.add(cfg, &Torrent::new(pieces as u64 * 32_768, 32_768), false);
    net.start(l);
    let (la, a) = net.accept_from(l, 9);
    net.inject(l, a, Frame::Handshake { fast: false });
    net.inject(l, a, Frame::Bitfield(Box::new(bits(pieces, a_has))));
    net.send(l, a, Message::Unchoke);
    let asked = requested(&net.io(l).msgs(la));
    (net, l, (la, a), asked)
}

fn bits(pieces: u32, set: &[u32]) -> Bitfield {
    let mut b = Bitfield::new(pieces);
    for &p in set {
        b.set(p);
    }
    b
}

/// A piece both of whose blocks are among `asked`.
fn whole(asked: &[(u32, u32)]) -> u32 {
    let p = asked.iter().map(|b| b.0).find(|&p| asked.contains(&(p, 0)) && asked.contains(&(p, 1)));
    p.expect("a piece asked for whole")
}

/// A scripted remote (no Fast Extension) with the pieces of `has`.
fn remote(net: &mut Net, l: usize, id: u32, pieces: u32, has: &[u32]) -> (u32, u32) {
    let (link, slot) = net.accept_from(l, id);
    net.inject(l, slot, Frame::Handshake { fast: false });
    net.inject(l, slot, Frame::Bitfield(Box::new(bits(pieces, has))));
    (link, slot)
}

#[test]
fn a_libtorrent_peer_stays_interested_in_a_remote_whose_only_missing_pieces_are_all_requested_from_others() {
    let (mut net, l, _, asked) = asking(libtorrent(), 4, &[0, 1, 2, 3]);
    let p = whole(&asked);
    let (lc, c) = remote(&mut net, l, 10, 4, &[p]);
    assert_eq!(net.io(l).msgs(lc), vec![Message::Interested], "we lack p, though all of it is asked of a");
    net.send(l, c, Message::Unchoke);
    assert_eq!(net.io(l).msgs(lc), vec![Message::Interested], "nothing to ask of c: it waits, still interested");
    assert!(net.c(l).connection(c).unwrap().am_interested);
    assert!(net.c(l).rows_mirror_connections());
}

#[test]
fn the_libtorrent_profile_under_mainlines_rule_is_not_interested_in_a_remote_whose_pieces_are_all_requested() {
    let cfg = ClientConfig { interest: InterestRule::Mainline, ..libtorrent() };
    let (mut net, l, _, asked) = asking(cfg, 4, &[0, 1, 2, 3]);
    let p = whole(&asked);
    let (lc, c) = remote(&mut net, l, 10, 4, &[p]);
    assert!(net.io(l).msgs(lc).is_empty(), "no block of p left to request");
    assert!(!net.c(l).connection(c).unwrap().am_interested);
}

#[test]
fn a_libtorrent_peer_says_not_interested_once_it_has_every_piece_the_remote_has() {
    let (mut net, l, (_, a), asked) = asking(libtorrent(), 4, &[0, 1, 2, 3]);
    let p = whole(&asked);
    let (lc, c) = remote(&mut net, l, 10, 4, &[p]);
    net.send(l, a, piece(p, 0));
    assert_eq!(net.io(l).msgs(lc), vec![Message::Interested], "p has not passed yet");
    net.send(l, a, piece(p, 1));
    let said = [Message::Interested, Message::Have { piece: p }, Message::NotInterested];
    assert_eq!(net.io(l).msgs(lc), said, "after the HAVE, as libtorrent's deferred update");
    assert!(!net.c(l).connection(c).unwrap().am_interested);
    assert!(net.c(l).connection(a).unwrap().am_interested, "a still has pieces we lack");
    assert_eq!(net.c(l).stats.not_interested_sent, 1);
}

#[test]
fn a_have_from_a_remote_a_libtorrent_peer_is_already_interested_in_asks_nothing_until_a_piece_it_has_passes() {
    // a lacks piece 3: only c can give it.
    let (mut net, l, (_, a), asked) = asking(libtorrent(), 4, &[0, 1, 2]);
    let p = whole(&asked);
    let (lc, c) = remote(&mut net, l, 10, 4, &[p]);
    net.send(l, c, Message::Unchoke);
    net.send(l, c, Message::Have { piece: 3 });
    assert_eq!(net.io(l).msgs(lc), vec![Message::Interested], "already interested: incoming_have asks nothing");
    net.send(l, a, piece(p, 0));
    net.send(l, a, piece(p, 1));
    // p passed and c has it: c's interest is updated, and c, still
    // interesting (piece 3), is asked for a block: one, as c entered
    // end-game mode when the picker found nothing for it on the unchoke
    // (`desired_queue_size` 1); the pick fills that and ends the mode.
    let msgs = net.io(l).msgs(lc);
    assert_eq!(msgs[..2], [Message::Interested, Message::Have { piece: p }]);
    assert_eq!(requested(&msgs), vec![(3, 0)]);
    assert!(!net.c(l).connection(c).unwrap().endgame);
}

#[test]
fn a_have_for_a_piece_we_lack_makes_a_remote_interesting_to_a_libtorrent_peer_even_with_every_block_asked() {
    let (mut net, l, _, asked) = asking(libtorrent(), 4, &[0, 1, 2, 3]);
    let p = whole(&asked);
    let (lc, c) = remote(&mut net, l, 10, 4, &[]);
    assert!(net.io(l).msgs(lc).is_empty(), "nothing we lack");
    net.send(l, c, Message::Have { piece: p });
    assert_eq!(net.io(l).msgs(lc), vec![Message::Interested]);
    assert!(net.c(l).connection(c).unwrap().am_interested);
}

#[test]
fn a_libtorrent_peer_that_completes_the_torrent_is_interested_in_nobody_and_told_each_remote_once() {
    let (mut net, l, (_, a), asked) = asking(libtorrent(), 2, &[0, 1]);
    assert_eq!(asked.len(), 4, "slow start asks for all four blocks");
    let (lc, _) = remote(&mut net, l, 10, 2, &[0]);
    let (ld, _) = remote(&mut net, l, 11, 2, &[]);
    for &(p, b) in &asked {
        net.send(l, a, piece(p, b));
    }
    assert!(net.c(l).is_seed());
    let said = |net: &Net, link: u32, m: Message| net.io(l).msgs(link).iter().filter(|&&x| x == m).count();
    assert_eq!((said(&net, lc, Message::Interested), said(&net, lc, Message::NotInterested)), (1, 1));
    assert_eq!((said(&net, ld, Message::Interested), said(&net, ld, Message::NotInterested)), (0, 0));
    assert!(net.c(l).connections().all(|(_, c)| !c.am_interested));
}

#[test]
fn a_mainline_peer_still_drops_interest_when_every_block_the_remote_has_is_requested() {
    // Mainline asks a for two blocks (one piece, p); c has another piece
    // q, and b has only q: asking b for all of q leaves c nothing to give.
    let (mut net, l, _, asked) = asking(mainline(), 3, &[0, 1, 2]);
    let p = whole(&asked);
    let q = (p + 1) % 3;
    let (lc, c) = remote(&mut net, l, 10, 3, &[q]);
    assert_eq!(net.io(l).msgs(lc), vec![Message::Interested]);
    let (lb, b) = remote(&mut net, l, 11, 3, &[q]);
    net.send(l, b, Message::Unchoke);
    assert_eq!(requested(&net.io(l).msgs(lb)), vec![(q, 0), (q, 1)]);
    assert_eq!(net.io(l).msgs(lc), vec![Message::Interested, Message::NotInterested]);
    assert!(!net.c(l).connection(c).unwrap().am_interested);
    assert!(!net.c(l).picker().in_end_game(), "the third piece still has blocks to request");
}
