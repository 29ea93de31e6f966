//! Interest as mainline 4.0.x keeps it (`Downloader.py`): a remote is
//! interesting when it has a piece with blocks left to request, found out on
//! a bitfield, a HAVE, a choke elsewhere (`_letgo`), or when a piece runs
//! out of blocks to request (`_request_more`'s `lost_interests`).

use super::*;

/// Leecher `l` of `pieces` pieces of two blocks, and a scripted remote for
/// each bitfield in `remotes` (handshake done, bitfield sent if any piece):
/// (net, l, [(link, slot)]).
fn leecher_with(pieces: u32, remotes: &[Bitfield]) -> (Net, usize, Vec<(u32, u32)>) {
    let mut net = Net::new();
    let l = net.add(mainline(), &Torrent::new(pieces as u64 * 32_768, 32_768), false);
    net.start(l);
    let mut ends = vec![];
    for (i, b) in remotes.iter().enumerate() {
        let (link, slot) = net.accept_from(l, 9 + i as u32);
        net.inject(l, slot, Frame::Handshake { fast: false });
        if b.count() > 0 {
            net.inject(l, slot, Frame::Bitfield(Box::new(b.clone())));
        }
        ends.push((link, slot));
    }
    (net, l, ends)
}

#[test]
fn a_have_makes_a_choking_peer_interesting_only_for_a_piece_with_blocks_left_to_request() {
    let (mut net, l, ends) = leecher_with(2, &[Bitfield::full(2), Bitfield::new(2)]);
    let [(la, a), (lb, b)] = ends[..] else { panic!() };
    net.send(l, a, Message::Unchoke);
    let p = requested(&net.io(l).msgs(la))[0].0;
    assert_eq!(requested(&net.io(l).msgs(la)), vec![(p, 0), (p, 1)], "the backlog of 2 takes all of p");
    net.send(l, b, Message::Have { piece: p });
    assert!(net.io(l).msgs(lb).is_empty(), "p has no block left to request: not interesting");
    assert!(!net.c(l).connection(b).unwrap().am_interested);
    net.send(l, b, Message::Have { piece: 1 - p });
    assert_eq!(net.io(l).msgs(lb), vec![Message::Interested]);
    assert!(net.c(l).rows_mirror_connections());
}

#[test]
fn a_choke_makes_a_choking_peer_that_has_a_lost_piece_interesting() {
    let (mut net, l, ends) = leecher_with(3, &[Bitfield::full(3)]);
    let [(la, a)] = ends[..] else { panic!() };
    net.send(l, a, Message::Unchoke);
    let p = requested(&net.io(l).msgs(la))[0].0;
    let (lc, c) = net.accept_from(l, 20);
    net.inject(l, c, Frame::Handshake { fast: false });
    net.send(l, c, Message::Have { piece: p });
    assert!(net.io(l).msgs(lc).is_empty(), "all of p is asked of a");
    net.send(l, a, Message::Choke);
    assert_eq!(net.io(l).msgs(lc), vec![Message::Interested], "p has blocks to request again, and c has it");
    assert!(net.c(l).picker().has_free_blocks(p));
}

#[test]
fn a_choke_asks_the_peers_that_unchoke_us_for_the_lost_pieces_before_any_choking_one_is_told_interested() {
    let (mut net, l, ends) = leecher_with(3, &[Bitfield::full(3)]);
    let [(la, a)] = ends[..] else { panic!() };
    net.send(l, a, Message::Unchoke);
    let p = requested(&net.io(l).msgs(la))[0].0;
    let remote = |net: &mut Net, id: u32| {
        let (link, slot) = net.accept_from(l, id);
        net.inject(l, slot, Frame::Handshake { fast: false });
        net.send(l, slot, Message::Have { piece: p });
        (link, slot)
    };
    let (lb, b) = remote(&mut net, 20);
    let (lc, _) = remote(&mut net, 21);
    net.send(l, b, Message::Unchoke);
    assert!(net.io(l).msgs(lb).is_empty(), "not interested in b: its unchoke asks nothing");
    net.send(l, a, Message::Choke);
    assert_eq!(net.io(l).msgs(lb), vec![Message::Interested, request(p, 0), request(p, 1)]);
    assert!(net.io(l).msgs(lc).is_empty(), "b took every block of p before c was looked at");
}

#[test]
fn an_idle_interesting_peer_is_told_not_interested_once_its_pieces_have_no_blocks_left_to_request() {
    let (mut net, l, ends) = leecher_with(2, &[Bitfield::full(2), Bitfield::full(2)]);
    let [(la, a), (lc, c)] = ends[..] else { panic!() };
    assert_eq!(net.io(l).msgs(lc), vec![Message::Interested]);
    net.send(l, a, Message::Unchoke);
    let p = requested(&net.io(l).msgs(la))[0].0;
    let q = 1 - p;
    assert_eq!(net.c(l).connection(c).unwrap().example_interest, q, "c still offers q");
    assert_eq!(net.io(l).msgs(lc), vec![Message::Interested]);
    net.send(l, a, piece(p, 0));
    assert_eq!(requested(&net.io(l).msgs(la)), vec![(p, 0), (p, 1), (q, 0)]);
    net.send(l, a, piece(p, 1));
    assert_eq!(requested(&net.io(l).msgs(la)), vec![(p, 0), (p, 1), (q, 0), (q, 1)]);
    // q ran out of blocks to request; c, asked nothing, has nothing else.
    // That was the last free block: end game begins, and c, which has the
    // outstanding blocks of q, is interesting again. Then p's HAVE.
    let msgs = [Message::Interested, Message::NotInterested, Message::Interested, Message::Have { piece: p }];
    assert_eq!(net.io(l).msgs(lc), msgs);
    assert!(net.c(l).picker().in_end_game());
    assert!(net.c(l).connection(a).unwrap().am_interested, "a has our requests: it stays interesting");
    assert!(net.c(l).rows_mirror_connections());
}

#[test]
fn a_choke_offers_the_lost_pieces_in_the_order_they_were_requested() {
    // Mainline keeps its requests in a list (`remove` keeps the order) and
    // `_letgo` collects the lost pieces from it in that order.
    let cfg = ClientConfig { pipeline: crate::pipeline::Pipeline::Fixed(4), ..mainline() };
    let mut net = Net::new();
    let l = net.add(cfg, &Torrent::new(8 * 32_768, 32_768), false);
    net.start(l);
    let (la, a) = net.accept_from(l, 9);
    net.inject(l, a, Frame::Handshake { fast: false });
    net.inject(l, a, Frame::Bitfield(Box::new(Bitfield::full(8))));
    net.send(l, a, Message::Unchoke);
    let asked = requested(&net.io(l).msgs(la));
    let (p, q) = (asked[0].0, asked[2].0);
    assert_eq!(asked, vec![(p, 0), (p, 1), (q, 0), (q, 1)]);
    net.send(l, a, piece(p, 0));
    let (lc, c) = net.accept_from(l, 10);
    net.inject(l, c, Frame::Handshake { fast: false });
    let mut pq = Bitfield::new(8);
    pq.set(p);
    pq.set(q);
    net.inject(l, c, Frame::Bitfield(Box::new(pq)));
    net.send(l, c, Message::Unchoke);
    assert!(net.io(l).msgs(lc).is_empty(), "every block c has is asked of a");
    net.send(l, a, Message::Choke);
    let expect = [Message::Interested, request(p, 1), request(q, 0), request(q, 1)];
    assert_eq!(net.io(l).msgs(lc), expect, "p was asked for first, so it comes first");
}
