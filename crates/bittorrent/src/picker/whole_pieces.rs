//! libtorrent 2.1's preference for whole pieces from fast peers: the
//! picker's side of `prefer_contiguous_blocks` (`piece_picker::pick_pieces`
//! with `add_blocks`, `add_blocks_downloading` and `expand_piece`), for a
//! peer that `request_a_block` found fast enough to send a piece within
//! `whole_pieces_threshold` (the client computes how many blocks it should
//! prefer: [`crate::pipeline::RequestQueue::prefer_contiguous_blocks`]).
//!
//! * **too many partials**: the mode is off (`pick_pieces` sets
//!   `prefer_contiguous_blocks` to 0), and [`PiecePicker::pick_for`] picks;
//! * **partial pieces are backups**: a piece being downloaded in which
//!   another peer has a request outstanding (not `exclusive_active` in
//!   `requested_from`) is not picked while a free piece will do; its free
//!   blocks are backups, taken only to make up the number of blocks asked
//!   for (`append_blocks`). A partial piece with no other peer's request
//!   outstanding is picked whole: all its free blocks (the largest free run
//!   of a partial piece is always shorter than a whole piece, so the
//!   `prefer_contiguous_blocks > contiguous_blocks` test reduces to
//!   `exclusive_active`);
//! * **whole pieces**: a free piece that nobody has started is taken with
//!   every block, and with the open pieces beside it that the peer has
//!   (`expand_piece`), up to `prefer_contiguous_blocks` blocks' worth of
//!   whole pieces, however common those neighbours are;
//! * **more blocks than asked**: pieces are taken whole until at least the
//!   number of blocks asked for is reached, so a pick may return many more
//!   (the client queues them: libtorrent's request queue);
//! * **order**: past the initial phase by `piece_pos::priority` as in
//!   [`PiecePicker::pick_for`] (rarest first, or the commonest first for a
//!   snubbed peer); in the initial phase (fewer than 4 pieces had) partial
//!   pieces in piece order first (with their backups appended at once,
//!   `prioritize_partials`), then from a random start the first free
//!   piece on, expanded.
//!
//! Not modelled: the order of blocks inside a partial piece (libtorrent
//! starts from its largest free run; here the lowest free block first),
//! and libtorrent's fixed shuffle of equal priorities (here each pick
//! breaks ties anew, as [`PiecePicker::pick_for`] does).

use super::libtorrent::{both, priority_key, INITIAL_PICKER_THRESHOLD};
use super::{least_of, PickContext, PickOrder, PiecePicker};
use crate::bitfield::Bitfield;

/// Every free block of the piece, in a [`PiecePicker::pick_whole_pieces`] answer.
pub const ALL_BLOCKS: u32 = u32::MAX;

impl PiecePicker {
    /// Free blocks of `piece` (none requested or received).
    fn free_in(&self, piece: u32) -> u32 {
        let c = self.pieces[piece as usize];
        c.blocks - c.requested
    }

    /// Blocks of `piece` requested and not received, from any peer.
    pub fn outstanding_in(&self, piece: u32) -> u32 {
        let c = self.pieces[piece as usize];
        c.requested - c.received
    }

    /// libtorrent's `can_pick` for `expand_piece`: the peer has it, we lack
    /// it, and no block of it is requested or received (`piece_open`).
    fn can_expand_into(&self, peer: &Bitfield, piece: u32) -> bool {
        peer.has(piece) && !self.have.has(piece) && self.pieces[piece as usize].requested == 0
    }

    /// libtorrent `expand_piece`: the open pieces around `piece` the peer
    /// has, at most `ceil(prefer / blocks per piece)` of them, from at most
    /// that many less one below `piece` (no `align_expanded_pieces`).
    pub(super) fn expand_piece(&self, peer: &Bitfield, piece: u32, prefer: u32) -> std::ops::Range<u32> {
        let per_piece = self.pieces.first().map_or(1, |c| c.blocks).max(1);
        let whole = prefer.div_ceil(per_piece).max(1);
        let lower = (piece + 1).saturating_sub(whole);
        let mut start = piece;
        while start > lower && self.can_expand_into(peer, start - 1) {
            start -= 1;
        }
        let upper = (start + whole).min(self.have.len());
        let mut end = piece + 1;
        while end < upper && self.can_expand_into(peer, end) {
            end += 1;
        }
        start..end
    }

    /// libtorrent's `pick_pieces` with `prefer_contiguous_blocks` =
    /// `prefer` (> 0) for a peer with pieces `peer`, asked for `num_blocks`
    /// (the request queue's room): the pieces to request, each with the
    /// number of its free blocks to take ([`ALL_BLOCKS`]: all), appended
    /// to `out` in order. `mine(piece)`: the blocks of `piece` outstanding
    /// with this peer (its request and download queues), which tells a
    /// partial piece only this peer is downloading. Returns `false`, with
    /// nothing picked, when the mode does not apply: not libtorrent's
    /// order, or too many partial pieces (the caller then picks as usual).
    pub fn pick_whole_pieces(
        &mut self,
        peer: &Bitfield,
        ctx: PickContext,
        num_blocks: u32,
        prefer: u32,
        mine: &dyn Fn(u32) -> u32,
        out: &mut Vec<(u32, u32)>,
    ) -> bool {
        if self.order != PickOrder::Libtorrent || prefer == 0 || self.too_many_partials(ctx.peers) {
            return false;
        }
        let mut left = num_blocks as i64;
        // Partial pieces with another peer's request outstanding: backups.
        let exclusive = |p: &Self, i: u32| p.outstanding_in(i) <= mine(i);
        let mut backups: Vec<u32> = Vec::new();
        let start = out.len();
        let taken = |out: &Vec<(u32, u32)>, i: u32| out[start..].iter().any(|&(p, _)| p == i);
        if self.have.count() < INITIAL_PICKER_THRESHOLD {
            // `prioritize_partials`, in piece order.
            let mut backup_blocks = 0i64;
            for i in both(peer.words(), self.partial.words()) {
                if exclusive(self, i) {
                    out.push((i, ALL_BLOCKS));
                    left -= self.free_in(i) as i64;
                    if left <= 0 {
                        return true;
                    }
                } else {
                    if backup_blocks >= left {
                        break;
                    }
                    backups.push(i);
                    backup_blocks += self.free_in(i) as i64;
                }
            }
            left = self.append_backups(&backups, left, out);
            if left <= 0 {
                return true;
            }
            // From a random start, the first free piece on, expanded.
            let n = self.have.len();
            let first = self.rng.range_inclusive(0, n as u64 - 1) as u32;
            let mut prefer = prefer as i64;
            let mut i = first;
            loop {
                if self.has_free_blocks(i) && peer.has(i) && !taken(out, i) && self.pieces[i as usize].requested == 0 {
                    if prefer == 0 {
                        // `add_blocks` without the mode: the blocks still asked for.
                        let n = (self.blocks_in(i) as i64).min(left);
                        out.push((i, n as u32));
                        left -= n;
                    } else {
                        // `expand_piece` while `prefer` > 1; below, one
                        // piece (`add_blocks` with a negative preference).
                        let range = if prefer > 1 { self.expand_piece(peer, i, prefer as u32) } else { i..i + 1 };
                        for k in range.clone() {
                            if !taken(out, k) {
                                out.push((k, ALL_BLOCKS));
                                left -= self.blocks_in(k) as i64;
                                prefer -= self.blocks_in(k) as i64;
                            }
                        }
                        i = range.end - 1;
                    }
                }
                i = if i + 1 == n { 0 } else { i + 1 };
                if left <= 0 || i == first {
                    break;
                }
            }
            return true;
        }
        // Rarest first (or its reverse): the first piece in priority order
        // that is open, or partial with no other peer's request; expanded
        // if open; until the blocks asked for are reached.
        loop {
            let pick = {
                let (avail, pieces, rev, partial) = (&self.availability, &self.pieces, &self.reverse, &self.partial);
                let shared = |i: u32| {
                    let c = pieces[i as usize];
                    partial.has(i) && c.requested - c.received > mine(i)
                };
                let candidates = both(peer.words(), self.free.words())
                    .filter(|&i| avail[i as usize] > 0 && !shared(i) && !taken(out, i));
                let key = |i: u32| priority_key(avail, pieces, rev, i, ctx.snubbed);
                least_of(key, &mut self.rng, candidates)
            };
            let Some(piece) = pick else { break };
            if self.pieces[piece as usize].requested > 0 {
                out.push((piece, ALL_BLOCKS));
                left -= self.free_in(piece) as i64;
            } else {
                for k in self.expand_piece(peer, piece, prefer) {
                    if !taken(out, k) {
                        out.push((k, ALL_BLOCKS));
                        left -= self.blocks_in(k) as i64;
                    }
                }
            }
            if left <= 0 {
                return true;
            }
        }
        // Not enough: the backups, in priority order, make up the rest.
        let avail = &self.availability;
        backups.extend(
            both(peer.words(), self.partial.words())
                .filter(|&i| avail[i as usize] > 0 && !exclusive(self, i) && !taken(out, i)),
        );
        let (avail, pieces, rev) = (&self.availability, &self.pieces, &self.reverse);
        backups.sort_by_key(|&i| (priority_key(avail, pieces, rev, i, ctx.snubbed), i));
        self.append_backups(&backups, left, out);
        true
    }

    /// libtorrent `append_blocks`: free blocks of `backups`, in order, up
    /// to `left`; returns what is left to find.
    fn append_backups(&self, backups: &[u32], mut left: i64, out: &mut Vec<(u32, u32)>) -> i64 {
        for &i in backups {
            if left <= 0 {
                break;
            }
            let n = (self.free_in(i) as i64).min(left);
            out.push((i, n as u32));
            left -= n;
        }
        left
    }
}

#[cfg(test)]
mod tests {
    use super::super::{PickContext, PickOrder};
    use super::*;
    use crate::torrent::Torrent;
    use torrentlab_engine::{EntityId, EntityRng};

    /// A libtorrent-order picker of `pieces` four-block pieces.
    fn picker(pieces: u32) -> PiecePicker {
        PiecePicker::new(&Torrent::new(pieces as u64 * 65536, 65536), EntityRng::new(7, EntityId(3)))
            .with_order(PickOrder::Libtorrent)
    }

    fn only(n: u32, pieces: &[u32]) -> Bitfield {
        let mut b = Bitfield::new(n);
        for &i in pieces {
            b.set(i);
        }
        b
    }

    fn complete(p: &mut PiecePicker, piece: u32) {
        while p.next_block(piece).is_some() {}
        for b in 0..p.blocks_in(piece) {
            p.block_received(piece, b);
        }
    }

    /// 20 pieces, 0-3 had; every piece on 2 peers, `common` on one more.
    fn past_initial(common: &[u32]) -> PiecePicker {
        let mut p = picker(20);
        p.peer_bitfield(&Bitfield::full(20), true);
        p.peer_bitfield(&Bitfield::full(20), true);
        p.peer_bitfield(&only(20, common), true);
        for i in 0..4 {
            complete(&mut p, i);
        }
        p
    }

    fn ctx() -> PickContext {
        PickContext { peers: 10, snubbed: false }
    }

    fn pick(p: &mut PiecePicker, peer: &Bitfield, n: u32, prefer: u32, mine: &dyn Fn(u32) -> u32) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        assert!(p.pick_whole_pieces(peer, ctx(), n, prefer, mine, &mut out));
        out
    }

    #[test]
    fn a_fast_peer_is_given_a_whole_free_piece_rather_than_the_rarest_pieces_remaining_blocks() {
        // 9 is the rarest (2 copies; the rest have 3), and another peer is
        // downloading it; 9's neighbours are common.
        let common: Vec<u32> = (4..20).filter(|&i| i != 9).collect();
        let mut p = past_initial(&common);
        p.requested_by(9, false, false);
        p.next_block(9); // another peer's request
        let all = Bitfield::full(20);
        let out = pick(&mut p, &all, 2, 4, &|_| 0);
        assert_eq!(out.len(), 1, "{out:?}");
        let (piece, n) = out[0];
        assert_ne!(piece, 9, "the rarest piece's blocks are only a backup");
        assert_eq!(n, ALL_BLOCKS, "all 4 blocks of a free piece, where 2 were asked for");
        assert_eq!(p.pick_for(&all, ctx()), Some(9), "without the mode: the rarest piece's remaining blocks");
    }

    #[test]
    fn a_partial_piece_only_this_peer_is_downloading_is_no_backup_and_wins_its_tie_with_all_its_free_blocks() {
        let mut p = past_initial(&[]);
        p.requested_by(9, false, false);
        p.next_block(9); // our own request, still outstanding
        let out = pick(&mut p, &Bitfield::full(20), 2, 4, &|i| (i == 9) as u32);
        assert_eq!(out, vec![(9, ALL_BLOCKS)], "its 3 free blocks, more than the 2 asked for");
        let out = pick(&mut p, &Bitfield::full(20), 5, 4, &|i| (i == 9) as u32);
        assert_eq!(out.len(), 2, "3 < 5: then a whole free piece: {out:?}");
        assert!(out[0] == (9, ALL_BLOCKS) && out[1].0 != 9 && out[1].1 == ALL_BLOCKS);
    }

    #[test]
    fn with_nothing_else_free_the_partial_pieces_blocks_make_up_only_what_was_asked_for() {
        let mut p = past_initial(&[]);
        p.requested_by(9, false, false);
        p.next_block(9);
        let out = pick(&mut p, &only(20, &[9]), 2, 4, &|_| 0);
        assert_eq!(out, vec![(9, 2)], "2 backup blocks, not all 3");
    }

    #[test]
    fn a_whole_piece_is_expanded_into_the_open_pieces_beside_it_up_to_the_preferred_blocks() {
        // 12 is the rarest; 8 blocks (2 pieces) preferred: 11-12 (11 open,
        // the peer has it), not 13 too.
        let common: Vec<u32> = (4..20).filter(|&i| i != 12).collect();
        let mut p = past_initial(&common);
        let out = pick(&mut p, &Bitfield::full(20), 3, 8, &|_| 0);
        assert_eq!(out, vec![(11, ALL_BLOCKS), (12, ALL_BLOCKS)]);
        // 11 started by someone: 12 and 13 instead.
        let mut p = past_initial(&common);
        p.requested_by(11, false, false);
        p.next_block(11);
        let out = pick(&mut p, &Bitfield::full(20), 3, 8, &|_| 0);
        assert_eq!(out, vec![(12, ALL_BLOCKS), (13, ALL_BLOCKS)]);
        // The peer lacks 11 and 13: 12 alone.
        let mut p = past_initial(&common);
        let peer = only(20, &[5, 12, 16]);
        let out = pick(&mut p, &peer, 3, 8, &|_| 0);
        assert_eq!(out, vec![(12, ALL_BLOCKS)]);
    }

    #[test]
    fn the_mode_is_off_with_too_many_partial_pieces() {
        let mut p = past_initial(&[]);
        for i in [5, 6, 7, 8] {
            p.requested_by(i, false, false);
            p.next_block(i);
        }
        let mut out = Vec::new();
        let few_peers = PickContext { peers: 2, snubbed: false };
        assert!(!p.pick_whole_pieces(&Bitfield::full(20), few_peers, 2, 4, &|_| 0, &mut out));
        assert!(out.is_empty());
        assert!(p.pick_whole_pieces(&Bitfield::full(20), ctx(), 2, 4, &|_| 0, &mut out));
    }

    #[test]
    fn mainlines_order_never_prefers_whole_pieces() {
        let mut p = past_initial(&[]).with_order(PickOrder::Mainline);
        let mut out = Vec::new();
        assert!(!p.pick_whole_pieces(&Bitfield::full(20), ctx(), 2, 4, &|_| 0, &mut out));
    }

    #[test]
    fn in_the_initial_phase_others_partial_pieces_still_come_first_as_backups_up_to_the_blocks_asked_for() {
        let mut p = picker(20);
        p.peer_bitfield(&Bitfield::full(20), true);
        p.requested_by(13, false, false);
        p.next_block(13); // another peer's
        let out = pick(&mut p, &Bitfield::full(20), 2, 4, &|_| 0);
        assert_eq!(out, vec![(13, 2)], "prioritize_partials appends backups at once");
        let out = pick(&mut p, &Bitfield::full(20), 5, 4, &|_| 0);
        assert_eq!(out[0], (13, 3));
        assert!(out[1..].iter().all(|&(i, n)| i != 13 && n == ALL_BLOCKS), "then a whole random piece: {out:?}");
    }

    #[test]
    fn the_expansion_reaches_back_at_most_one_piece_less_than_the_whole_pieces_wanted() {
        let mut p = past_initial(&[]);
        let all = Bitfield::full(20);
        assert_eq!(p.expand_piece(&all, 10, 4), 10..11, "one piece's worth: the piece alone");
        assert_eq!(p.expand_piece(&all, 10, 12), 8..11, "three pieces: 8-10, from the lowest start");
        assert_eq!(p.expand_piece(&all, 5, 12), 4..7, "4 is the lowest we lack (0-3 had)");
        p.requested_by(9, false, false);
        p.next_block(9);
        assert_eq!(p.expand_piece(&all, 10, 12), 10..13, "9 started: upwards");
        assert_eq!(p.expand_piece(&all, 19, 12), 17..20, "the last piece");
    }
}
