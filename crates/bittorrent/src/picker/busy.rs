//! libtorrent's busy blocks (RC_2_1 `piece_picker::pick_pieces`, its "end
//! game mode" tail, and `num_peers` of a block): a block requested from one
//! peer may be requested from another, one at a time. The picker counts the
//! extra requesters of each block, so that a dropped request
//! (`abort_download`) frees a block only when no peer has it requested.

use super::{BlockState, PiecePicker};
use crate::bitfield::Bitfield;

impl PiecePicker {
    /// libtorrent `strict_end_game_mode`'s test,
    /// `get_download_queue_size() >= num_want_left()`: every piece we lack
    /// has a block requested or received (none is still open).
    pub fn all_wanted_downloading(&self) -> bool {
        // An open piece has free blocks and none requested: in `free`,
        // not in `partial`.
        self.free.count() == self.partial.count()
    }

    /// The busy block `pick_pieces` adds in end game: among the pieces
    /// `peer` has whose blocks are all requested or received
    /// (`piece_full`), one at random, and in it, at random, a block
    /// requested and not received. The caller has nothing requested from
    /// that peer, so no such block is its own.
    pub fn pick_busy_block(&mut self, peer: &Bitfield) -> Option<(u32, u32)> {
        let full: Vec<u32> = (0..self.have.len())
            .filter(|&i| {
                let c = self.pieces[i as usize];
                peer.has(i) && !self.have.has(i) && c.requested == c.blocks && c.received < c.blocks
            })
            .collect();
        if full.is_empty() {
            return None;
        }
        let piece = full[self.rng.range_inclusive(0, full.len() as u64 - 1) as usize];
        let blocks: Vec<u32> =
            (0..self.blocks_in(piece)).filter(|&b| self.state(piece, b) == BlockState::Requested).collect();
        let block = blocks[self.rng.range_inclusive(0, blocks.len() as u64 - 1) as usize];
        Some((piece, block))
    }

    /// A requested block was asked of one more peer (`add_request` with
    /// `busy`: its `num_peers` grows).
    pub fn busy_requested(&mut self, piece: u32, block: u32) {
        debug_assert_eq!(self.state(piece, block), BlockState::Requested, "only a requested block is busy");
        *self.busy.entry(self.pieces[piece as usize].base + block).or_insert(0) += 1;
    }

    /// A dropped request of a block some other peer still has requested:
    /// one requester fewer, and `true` (the block stays requested).
    pub(super) fn unrequest_busy(&mut self, piece: u32, block: u32) -> bool {
        let key = self.pieces[piece as usize].base + block;
        match self.busy.get_mut(&key) {
            Some(n) => {
                *n -= 1;
                if *n == 0 {
                    self.busy.remove(&key);
                }
                true
            }
            None => false,
        }
    }

    /// The block arrived: nobody has it requested any more
    /// (`mark_as_writing` sets `num_peers` to 0).
    pub(super) fn received_busy(&mut self, piece: u32, block: u32) {
        if !self.busy.is_empty() {
            self.busy.remove(&(self.pieces[piece as usize].base + block));
        }
    }
}
