//! libtorrent 2.1's piece-picking order (`piece_picker::pick_pieces`, with the
//! options `peer_connection::picker_options` sets and the number of peers
//! `request_blocks` passes), for default settings, no sequential download, no
//! time-critical pieces and no piece priorities:
//!
//! * **priority**: a piece's place in the picker is `piece_pos::priority`,
//!   availability x (priority levels - piece priority) x 3 plus -3 for a
//!   piece being downloaded, -2 for an open one and -1 for a reverse one
//!   (started by a snubbed peer). With every piece at the default priority
//!   the step between two availabilities (12) exceeds the adjustments, so
//!   the order is by availability, and a piece being downloaded wins only
//!   ties. Equal priorities are picked at random;
//! * **rarest first**: from `initial_picker_threshold` (4) pieces on, the
//!   free piece the peer has with the lowest priority; for a snubbed peer
//!   (`reverse`) the highest: the most common piece, reverse pieces first;
//! * **initial phase**: below 4 pieces, `prioritize_partials` without
//!   `rarest_first`: the first partial piece the peer has (the picker's
//!   partial pieces are in piece order), else a random start and the first
//!   free piece the peer has from there on (wrapping around);
//! * **too many partials**: with more partial pieces than 3/2 of the
//!   torrent's peers, or more than 2048 blocks' worth of them, partial
//!   pieces come first (`prioritize_partials`); past the initial phase they
//!   are sorted by availability, then most blocks requested or received
//!   first (`partial_compare_rarest_first`; equal ones in piece order).
//!
//! A partial piece here is libtorrent's `piece_downloading`: some blocks
//! requested or received, some free; a piece whose every block is requested
//! (`piece_full`) is not picked before end game. A peer fast enough to send
//! a piece within `whole_pieces_threshold` picks whole pieces instead
//! (`prefer_contiguous_blocks`: [`super::whole_pieces`]). Not modelled:
//! libtorrent picking the blocks of several pieces from one random start in
//! one call (here each pick draws a new start).

use super::{least_of, PieceCounts, PiecePicker};
use crate::bitfield::Bitfield;

/// Pieces we have below which libtorrent picks at random (`initial_picker_threshold`).
pub const INITIAL_PICKER_THRESHOLD: u32 = 4;

/// Partial pieces' blocks beyond which partial pieces come first (2048: 32 MiB).
const MAX_PARTIAL_BLOCKS: u32 = 2048;

/// The pieces set in both `a` and `b`, in order.
pub(super) fn both<'a>(a: &'a [u64], b: &'a [u64]) -> impl Iterator<Item = u32> + Clone + 'a {
    a.iter().zip(b).enumerate().flat_map(|(w, (&x, &y))| {
        let mut bits = x & y;
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                w as u32 * 64 + b
            })
        })
    })
}

impl PiecePicker {
    /// Too many partial pieces for `peers` connections (`pick_pieces`).
    pub(super) fn too_many_partials(&self, peers: u32) -> bool {
        let n = self.partial.count();
        let blocks_per_piece = self.pieces.first().map_or(0, |c| c.blocks);
        n > peers * 3 / 2 || n * blocks_per_piece > MAX_PARTIAL_BLOCKS
    }

    /// libtorrent's order (the module doc).
    pub(super) fn pick_libtorrent(&mut self, peer: &Bitfield, ctx: super::PickContext) -> Option<u32> {
        let initial = self.have.count() < INITIAL_PICKER_THRESHOLD;
        if initial || self.too_many_partials(ctx.peers) {
            let mut partials = both(peer.words(), self.partial.words());
            let first = if initial {
                partials.next()
            } else {
                let (avail, pieces) = (&self.availability, &self.pieces);
                partials.min_by_key(|&i| (avail[i as usize], std::cmp::Reverse(pieces[i as usize].requested)))
            };
            if first.is_some() {
                return first;
            }
        }
        if initial {
            return self.random_walk(peer);
        }
        self.by_priority(peer, ctx.snubbed)
    }

    /// From a random piece on, the first free piece the peer has.
    fn random_walk(&mut self, peer: &Bitfield) -> Option<u32> {
        let n = self.have.len();
        if n == 0 {
            return None;
        }
        let start = self.rng.range_inclusive(0, n as u64 - 1) as u32;
        let (pw, fw) = (peer.words(), self.free.words());
        both(pw, fw).find(|&i| i >= start).or_else(|| both(pw, fw).find(|&i| i < start))
    }

    /// Rarest first by `piece_pos::priority` (availability, then being
    /// downloaded before open before reverse), or its reverse; ties at
    /// random. Pieces nobody has are not in libtorrent's list.
    fn by_priority(&mut self, peer: &Bitfield, reverse: bool) -> Option<u32> {
        let (avail, pieces, rev) = (&self.availability, &self.pieces, &self.reverse);
        let key = |i: u32| priority_key(avail, pieces, rev, i, reverse);
        let candidates = both(peer.words(), self.free.words()).filter(|&i| avail[i as usize] > 0);
        least_of(key, &mut self.rng, candidates)
    }
}

/// A piece's place in libtorrent's order (`piece_pos::priority`, see
/// [`PiecePicker::by_priority`]): availability, then being downloaded
/// before open before reverse (the adjustment as 0, 1, 2); for a snubbed
/// peer (`reverse`) the other way round.
pub(super) fn priority_key(avail: &[u32], pieces: &[PieceCounts], rev: &Bitfield, i: u32, reverse: bool) -> u64 {
    let adjust = if rev.has(i) {
        2
    } else if pieces[i as usize].requested > 0 {
        0
    } else {
        1
    };
    let k = avail[i as usize] as u64 * 4 + adjust;
    if reverse {
        u64::MAX - k
    } else {
        k
    }
}

#[cfg(test)]
mod tests {
    use super::super::{PickContext, PickOrder};
    use super::*;
    use crate::torrent::Torrent;
    use torrentlab_engine::{EntityId, EntityRng};

    /// A libtorrent-order picker of `pieces` two-block pieces.
    fn picker(pieces: u32, order: PickOrder) -> PiecePicker {
        PiecePicker::new(&Torrent::new(pieces as u64 * 32768, 32768), EntityRng::new(7, EntityId(3))).with_order(order)
    }

    fn complete(p: &mut PiecePicker, piece: u32) {
        while p.next_block(piece).is_some() {}
        for b in 0..p.blocks_in(piece) {
            p.block_received(piece, b);
        }
    }

    /// Starts `piece`: one of its two blocks requested.
    fn start(p: &mut PiecePicker, piece: u32, snubbed: bool) {
        p.requested_by(piece, false, snubbed);
        p.next_block(piece);
    }

    fn ctx(peers: u32, snubbed: bool) -> PickContext {
        PickContext { peers, snubbed }
    }

    fn only(n: u32, pieces: &[u32]) -> Bitfield {
        let mut b = Bitfield::new(n);
        for &i in pieces {
            b.set(i);
        }
        b
    }

    /// Past the initial phase: 20 pieces, 0-3 had, every piece on 2 peers
    /// and `rare` on one more.
    fn past_initial(order: PickOrder, common: &[u32]) -> PiecePicker {
        let mut p = picker(20, order);
        let all = Bitfield::full(20);
        p.peer_bitfield(&all, true);
        p.peer_bitfield(&all, true);
        p.peer_bitfield(&only(20, common), true);
        for i in 0..4 {
            complete(&mut p, i);
        }
        p
    }

    #[test]
    fn a_rarer_new_piece_beats_a_commoner_started_piece_in_libtorrents_order_but_not_in_mainlines() {
        for order in [PickOrder::Libtorrent, PickOrder::Mainline] {
            let mut p = past_initial(order, &[5]); // 5: 3 copies, 9: 2
            start(&mut p, 5, false);
            let pick = p.pick_for(&only(20, &[5, 9]), ctx(3, false));
            let want = if order == PickOrder::Libtorrent { 9 } else { 5 };
            assert_eq!(pick, Some(want), "{order:?}");
        }
    }

    #[test]
    fn a_started_piece_wins_a_tie_of_availability_over_new_pieces() {
        for seed in 0..20 {
            let mut p = past_initial(PickOrder::Libtorrent, &[]);
            p.rng = EntityRng::new(seed, EntityId(3));
            start(&mut p, 11, false);
            assert_eq!(p.pick_for(&Bitfield::full(20), ctx(3, false)), Some(11), "rng seed {seed}");
        }
    }

    #[test]
    fn equally_rare_new_pieces_are_picked_at_random() {
        let mut picks = std::collections::BTreeSet::new();
        for seed in 0..30 {
            let mut p = past_initial(PickOrder::Libtorrent, &[]);
            p.rng = EntityRng::new(seed, EntityId(3));
            picks.insert(p.pick_for(&Bitfield::full(20), ctx(3, false)).unwrap());
        }
        assert!(picks.len() > 5, "ties spread: {picks:?}");
        assert!(picks.iter().all(|&i| i >= 4), "never a piece we have");
    }

    #[test]
    fn in_the_initial_phase_a_partial_piece_the_peer_has_comes_first_whatever_its_rarity() {
        let mut p = picker(20, PickOrder::Libtorrent);
        p.peer_bitfield(&Bitfield::full(20), true);
        p.peer_bitfield(&only(20, &[13]), true); // 13 is the commonest
        start(&mut p, 13, false);
        start(&mut p, 17, false);
        assert_eq!(p.pick_for(&Bitfield::full(20), ctx(2, false)), Some(13), "partials in piece order");
        assert_eq!(p.pick_for(&only(20, &[2, 17]), ctx(2, false)), Some(17), "one the peer has");
        while p.next_block(13).is_some() {}
        while p.next_block(17).is_some() {}
        let next = p.pick_for(&Bitfield::full(20), ctx(2, false)).unwrap();
        assert!(next != 13 && next != 17, "fully requested pieces are not partial");
    }

    #[test]
    fn in_the_initial_phase_new_pieces_come_from_a_random_start_onwards() {
        let mut starts = std::collections::BTreeSet::new();
        for seed in 0..30 {
            let mut p = picker(20, PickOrder::Libtorrent);
            p.rng = EntityRng::new(seed, EntityId(3));
            p.peer_bitfield(&Bitfield::full(20), true);
            let pick = p.pick_for(&only(20, &[3, 15]), ctx(1, false)).unwrap();
            assert!(pick == 3 || pick == 15);
            starts.insert(pick);
        }
        assert_eq!(starts.len(), 2, "both, from different starts");
    }

    #[test]
    fn too_many_partial_pieces_make_partial_pieces_come_first_however_common() {
        // 4 partial pieces, all common: too many for 2 peers (> 3), not for 3 (> 4).
        let mut p = past_initial(PickOrder::Libtorrent, &[6, 7, 8, 9]);
        for i in [6, 7, 8, 9] {
            start(&mut p, i, false);
        }
        let all = Bitfield::full(20);
        assert!(p.too_many_partials(2) && !p.too_many_partials(3));
        let rare = p.pick_for(&all, ctx(3, false)).unwrap();
        assert!(!(6..10).contains(&rare), "3 peers: a rarer new piece ({rare})");
        let partial = p.pick_for(&all, ctx(2, false)).unwrap();
        assert!((6..10).contains(&partial), "2 peers: a partial piece ({partial})");
    }

    #[test]
    fn too_many_partials_come_rarest_first_then_the_one_with_most_blocks_asked() {
        // 4-block pieces; 6 and 7 have a copy more than 8 and 9.
        let mut p = PiecePicker::new(&Torrent::new(20 * 65536, 65536), EntityRng::new(7, EntityId(3)))
            .with_order(PickOrder::Libtorrent);
        let all = Bitfield::full(20);
        p.peer_bitfield(&all, true);
        p.peer_bitfield(&only(20, &[6, 7]), true);
        for i in 0..4 {
            complete(&mut p, i);
        }
        for i in [6, 7, 8, 9] {
            start(&mut p, i, false);
        }
        assert_eq!(p.pick_for(&all, ctx(1, false)), Some(8), "8 and 9 rarest with a block each: piece order");
        p.next_block(9);
        assert_eq!(p.pick_for(&all, ctx(1, false)), Some(9), "9 has more blocks asked");
        assert_eq!(p.pick_for(&only(20, &[6, 7, 12]), ctx(1, false)), Some(6), "a partial before a rarer new piece");
    }

    #[test]
    fn too_many_partial_blocks_make_partial_pieces_come_first_whatever_the_peers() {
        // 64 partial pieces of 64 blocks: 4096 > 2048 blocks.
        let mut p = PiecePicker::new(&Torrent::new(100 * 64 * 16384, 64 * 16384), EntityRng::new(7, EntityId(3)))
            .with_order(PickOrder::Libtorrent);
        p.peer_bitfield(&Bitfield::full(100), true);
        p.peer_bitfield(&only(100, &(0..60).collect::<Vec<_>>()), true);
        for i in 0..4 {
            complete(&mut p, i);
        }
        assert!(!p.too_many_partials(1000));
        for i in 4..37 {
            start(&mut p, i, false);
        }
        assert!(p.too_many_partials(1000), "33 x 64 blocks");
        let pick = p.pick_for(&Bitfield::full(100), ctx(1000, false)).unwrap();
        assert!((4..37).contains(&pick), "a partial piece, not rarer 60-99: {pick}");
    }

    #[test]
    fn a_snubbed_peer_picks_the_commonest_piece_and_its_starts_become_reverse() {
        let mut p = past_initial(PickOrder::Libtorrent, &[5, 6]);
        let all = Bitfield::full(20);
        let pick = p.pick_for(&all, ctx(3, true)).unwrap();
        assert!(pick == 5 || pick == 6, "commonest: {pick}");
        start(&mut p, 5, true);
        assert!(p.reverse.has(5));
        assert_eq!(p.pick_for(&all, ctx(3, true)), Some(5), "reverse pieces first among the commonest");
        let other = p.pick_for(&all, ctx(3, false)).unwrap();
        assert!(other != 5 && other != 6, "an unsnubbed peer still picks rarest: {other}");
        start(&mut p, 5, false);
        assert!(!p.reverse.has(5), "an unsnubbed peer's request makes it normal");
        start(&mut p, 6, false);
        p.block_unrequested(6, 0);
        start(&mut p, 6, true);
        assert!(p.reverse.has(6), "open again, then started by a snubbed peer");
    }

    #[test]
    fn a_snubbed_peers_request_leaves_a_piece_with_blocks_outstanding_normal() {
        let mut p = past_initial(PickOrder::Libtorrent, &[]);
        start(&mut p, 8, false);
        start(&mut p, 8, true);
        assert!(!p.reverse.has(8), "block 0 is still outstanding from another peer");
        assert!(!p.partial.has(8), "both blocks requested: full, not partial");
    }

    #[test]
    fn a_dropped_request_returns_a_piece_with_nothing_else_to_the_open_pieces() {
        let mut p = past_initial(PickOrder::Libtorrent, &[]);
        start(&mut p, 8, true);
        assert!(p.partial.has(8) && p.reverse.has(8));
        p.block_unrequested(8, 0);
        assert!(!p.partial.has(8) && !p.reverse.has(8));
    }
}
