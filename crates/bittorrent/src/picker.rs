//! Mainline 4.0.x's piece picker (`PiecePicker.py`, `Downloader.py`), from what
//! each peer has:
//!
//! * **strict priority**: a piece already started (some blocks requested and
//!   not all) that the peer has comes first, the one with the fewest copies;
//! * **random first**: while fewer than `rarest_first_cutoff` (4) pieces are
//!   complete, the first wanted piece the peer has in a per-torrent random
//!   permutation;
//! * **rarest first**: otherwise a wanted piece the peer has with the fewest
//!   copies among connected peers, ties broken at random; pieces nobody has are
//!   never picked;
//! * **end game**: once every block of every missing piece has been requested.
//!
//! Random choices draw from the picker's own stream, so runs are reproducible.

use torrentlab_engine::EntityRng;

use crate::bitfield::Bitfield;
use crate::torrent::Torrent;

/// Pieces completed before rarest first takes over (mainline `rarest_first_cutoff`).
pub const RAREST_FIRST_CUTOFF: u32 = 4;

#[derive(Clone, Copy, Debug, Default)]
struct PieceState {
    /// Blocks requested at least once.
    requested: u32,
    /// Blocks received.
    received: u32,
}

/// The piece picker of one peer.
#[derive(Clone, Debug)]
pub struct PiecePicker {
    blocks: Vec<u32>,
    have: Bitfield,
    availability: Vec<u32>,
    random_order: Vec<u32>,
    state: Vec<PieceState>,
    rng: EntityRng,
}

impl PiecePicker {
    pub fn new(torrent: &Torrent, mut rng: EntityRng) -> Self {
        let n = torrent.pieces();
        let mut random_order: Vec<u32> = (0..n).collect();
        for i in (1..random_order.len()).rev() {
            let j = rng.range_inclusive(0, i as u64) as usize;
            random_order.swap(i, j);
        }
        PiecePicker {
            blocks: (0..n).map(|i| torrent.blocks_in(i)).collect(),
            have: Bitfield::new(n),
            availability: vec![0; n as usize],
            random_order,
            state: vec![PieceState::default(); n as usize],
            rng,
        }
    }

    pub fn have(&self) -> &Bitfield {
        &self.have
    }

    /// A connected peer announced `piece` (HAVE) or has it in its bitfield.
    pub fn peer_has(&mut self, piece: u32) {
        self.availability[piece as usize] += 1;
    }

    /// A peer with bitfield `b` connected (`+1`) or left (`-1`).
    pub fn peer_bitfield(&mut self, b: &Bitfield, connected: bool) {
        for i in 0..b.len() {
            if b.has(i) {
                let a = &mut self.availability[i as usize];
                *a = if connected { *a + 1 } else { a.saturating_sub(1) };
            }
        }
    }

    /// Copies of `piece` among connected peers.
    pub fn availability(&self, piece: u32) -> u32 {
        self.availability[piece as usize]
    }

    fn wanted(&self, i: u32) -> bool {
        let s = self.state[i as usize];
        !self.have.has(i) && s.requested < self.blocks[i as usize]
    }

    fn started(&self, i: u32) -> bool {
        let s = self.state[i as usize];
        s.requested > 0 && s.requested < self.blocks[i as usize]
    }

    /// True once every block of every missing piece has been requested.
    pub fn in_end_game(&self) -> bool {
        (0..self.have.len()).all(|i| self.have.has(i) || self.state[i as usize].requested >= self.blocks[i as usize])
    }

    /// The piece to request blocks from next, among those `peer` has.
    pub fn pick(&mut self, peer: &Bitfield) -> Option<u32> {
        let n = self.have.len();
        let candidates = |f: &dyn Fn(u32) -> bool| (0..n).filter(|&i| peer.has(i) && f(i)).collect::<Vec<u32>>();
        // Strict priority: started pieces first, the rarest of them.
        let started = candidates(&|i| self.started(i));
        if !started.is_empty() {
            return Some(self.rarest_of(&started));
        }
        if self.have.count() < RAREST_FIRST_CUTOFF {
            return self.random_order.iter().copied().find(|&i| peer.has(i) && self.wanted(i));
        }
        let wanted = candidates(&|i| self.wanted(i) && self.availability[i as usize] > 0);
        (!wanted.is_empty()).then(|| self.rarest_of(&wanted))
    }

    /// The candidate with the fewest copies, ties broken uniformly at random.
    fn rarest_of(&mut self, pieces: &[u32]) -> u32 {
        let min = pieces.iter().map(|&i| self.availability[i as usize]).min().expect("non-empty");
        let rarest: Vec<u32> = pieces.iter().copied().filter(|&i| self.availability[i as usize] == min).collect();
        rarest[self.rng.range_inclusive(0, rarest.len() as u64 - 1) as usize]
    }

    /// The next block of `piece` not requested yet (blocks are requested in order).
    pub fn next_block(&mut self, piece: u32) -> Option<u32> {
        let s = &mut self.state[piece as usize];
        (s.requested < self.blocks[piece as usize]).then(|| {
            s.requested += 1;
            s.requested - 1
        })
    }

    /// A requested block was dropped (choke, lost peer): it may be requested again.
    pub fn block_unrequested(&mut self, piece: u32) {
        let s = &mut self.state[piece as usize];
        s.requested = s.requested.saturating_sub(1).max(s.received);
    }

    /// A block arrived. Returns true when the piece is complete (and checked:
    /// only then does it count as had).
    pub fn block_received(&mut self, piece: u32) -> bool {
        let s = &mut self.state[piece as usize];
        s.received += 1;
        if s.received == self.blocks[piece as usize] {
            self.have.set(piece);
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torrentlab_engine::EntityId;

    fn picker(pieces: u32) -> PiecePicker {
        PiecePicker::new(&Torrent::new(pieces as u64 * 32768, 32768), EntityRng::new(7, EntityId(3)))
    }

    fn complete(p: &mut PiecePicker, piece: u32) {
        while p.next_block(piece).is_some() {}
        while !p.block_received(piece) {}
    }

    #[test]
    fn the_first_four_pieces_come_from_a_random_permutation() {
        let mut p = picker(100);
        let all = Bitfield::full(100);
        p.peer_bitfield(&all, true);
        let first = p.pick(&all).unwrap();
        assert_eq!(first, p.random_order[0]);
        assert_ne!(p.random_order, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn a_started_piece_is_finished_before_a_new_one_is_begun() {
        let mut p = picker(100);
        let all = Bitfield::full(100);
        let first = p.pick(&all).unwrap();
        p.next_block(first);
        assert_eq!(p.pick(&all), Some(first), "strict priority");
        p.next_block(first);
        assert_ne!(p.pick(&all), Some(first), "fully requested: no longer wanted");
    }

    #[test]
    fn after_four_pieces_the_rarest_piece_the_peer_has_is_picked() {
        let mut p = picker(20);
        let all = Bitfield::full(20);
        p.peer_bitfield(&all, true);
        p.peer_bitfield(&all, true);
        let mut rare = Bitfield::new(20);
        rare.set(13);
        p.peer_bitfield(&rare, true); // piece 13: 3 copies; the others: 2
        for i in [0, 1, 2, 3] {
            complete(&mut p, i);
        }
        let mut only = Bitfield::new(20);
        only.set(13);
        only.set(17);
        assert_eq!(p.pick(&only), Some(17), "17 has fewer copies than 13");
        assert_eq!(p.pick(&Bitfield::new(20)), None, "nothing the peer has");
    }

    #[test]
    fn pieces_nobody_else_has_are_never_picked_by_rarest_first() {
        let mut p = picker(10);
        for i in 0..4 {
            complete(&mut p, i);
        }
        assert_eq!(p.pick(&Bitfield::full(10)), None, "availability 0 everywhere");
    }

    #[test]
    fn end_game_starts_when_every_missing_block_is_requested() {
        let mut p = picker(5);
        for i in 0..5 {
            assert!(!p.in_end_game());
            while p.next_block(i).is_some() {}
        }
        assert!(p.in_end_game());
        p.block_unrequested(2);
        assert!(!p.in_end_game(), "a dropped request makes a block wanted again");
    }

    #[test]
    fn a_piece_counts_as_had_only_when_every_block_arrived() {
        let mut p = picker(3);
        p.next_block(1);
        p.next_block(1);
        assert!(!p.block_received(1));
        assert!(!p.have().has(1));
        assert!(p.block_received(1));
        assert!(p.have().has(1));
    }
}
