//! Which connections' remotes have each piece: one bitset of slots per
//! piece, beside the connection table.
//!
//! Each connection keeps the remote's pieces as a bitfield (BEP 3's
//! `bitfield` and `have`). The download side also asks the other way round:
//! after a choke, which remotes have one of the pieces whose requests were
//! dropped (mainline `_letgo`), and when a piece runs out of blocks to
//! request, which interesting remotes have it (`lost_interests`). Answering
//! from each connection's bitfield reads two cache lines per remote, dozens
//! of remotes at a time; these bitsets hold the same bits transposed, a few
//! words per piece. They mirror the connections' bitfields, written where
//! those are (a debug build checks the mirror at every rechoke).

use super::slot_set::SlotSet;
use crate::bitfield::Bitfield;

/// Per piece, the slots whose remote has it.
#[derive(Clone, Debug)]
pub struct Holders {
    /// Words per piece: slots `0 .. 64 * stride` fit.
    stride: usize,
    /// `stride` words per piece, piece by piece.
    bits: Vec<u64>,
    pieces: u32,
}

impl Holders {
    pub fn new(pieces: u32) -> Self {
        let stride = 2;
        Holders { stride, bits: vec![0; pieces as usize * stride], pieces }
    }

    /// Makes room for slots below `slots`, keeping every bit.
    pub fn reserve(&mut self, slots: usize) {
        let stride = slots.div_ceil(64);
        if stride <= self.stride {
            return;
        }
        let mut bits = vec![0; self.pieces as usize * stride];
        for p in 0..self.pieces as usize {
            bits[p * stride..p * stride + self.stride]
                .copy_from_slice(&self.bits[p * self.stride..(p + 1) * self.stride]);
        }
        (self.stride, self.bits) = (stride, bits);
    }

    #[inline]
    fn at(&self, piece: u32, slot: u32) -> (usize, u64) {
        debug_assert!((slot as usize) < self.stride * 64, "slot {slot} beyond the reserved room");
        (piece as usize * self.stride + slot as usize / 64, 1 << (slot % 64))
    }

    /// The remote on `slot` has `piece`.
    #[inline]
    pub fn has(&self, piece: u32, slot: u32) -> bool {
        let (w, m) = self.at(piece, slot);
        self.bits[w] & m != 0
    }

    /// The remote on `slot` announced `piece` (HAVE).
    #[inline]
    pub fn set(&mut self, piece: u32, slot: u32) {
        let (w, m) = self.at(piece, slot);
        self.bits[w] |= m;
    }

    /// The remote on `slot` has the pieces of `have` (its bitfield).
    pub fn set_all(&mut self, slot: u32, have: &Bitfield) {
        for p in 0..have.len() {
            if have.has(p) {
                self.set(p, slot);
            }
        }
    }

    /// The connection on `slot`, whose remote had `have`, is gone.
    pub fn clear_all(&mut self, slot: u32, have: &Bitfield) {
        for p in 0..have.len() {
            if have.has(p) {
                let (w, m) = self.at(p, slot);
                self.bits[w] &= !m;
            }
        }
    }

    /// Sets `out` to the slots whose remote has at least one of `pieces`:
    /// the union of their bitsets.
    pub(crate) fn any_of(&self, pieces: impl Iterator<Item = u32>, out: &mut SlotSet) {
        out.reset(self.stride);
        for p in pieces {
            out.add_words(&self.bits[p as usize * self.stride..(p as usize + 1) * self.stride]);
        }
    }

    /// Every bit is what `have` says of its slot (`None`: a free slot).
    pub fn mirror<'a>(&self, slots: impl Iterator<Item = Option<&'a Bitfield>>) -> bool {
        slots.enumerate().all(|(s, have)| {
            (0..self.pieces).all(|p| {
                let want = have.is_some_and(|h| h.has(p));
                (s < self.stride * 64 && self.has(p, s as u32)) == want
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_follow_haves_and_bitfields_and_leave_with_the_connection() {
        let mut h = Holders::new(10);
        h.set(3, 5);
        assert!(h.has(3, 5) && !h.has(3, 4) && !h.has(2, 5));
        let mut b = Bitfield::new(10);
        b.set(0);
        b.set(9);
        h.set_all(70, &b);
        assert!(h.has(0, 70) && h.has(9, 70) && !h.has(3, 70));
        b.set(3);
        h.clear_all(70, &b);
        assert!(!h.has(0, 70) && !h.has(9, 70) && h.has(3, 5), "another slot's bits stay");
    }

    #[test]
    fn reserving_room_for_more_slots_keeps_every_bit() {
        let mut h = Holders::new(4);
        h.set(1, 127);
        h.set(3, 0);
        h.reserve(200);
        assert!(h.has(1, 127) && h.has(3, 0) && !h.has(1, 0));
        h.set(2, 199);
        assert!(h.has(2, 199));
        let (a, b, c) = (Bitfield::new(4), Bitfield::full(4), Bitfield::new(4));
        let mut one = Bitfield::new(4);
        one.set(1);
        assert!(!h.mirror([Some(&a), Some(&b), Some(&c)].into_iter()));
        let mut g = Holders::new(4);
        g.set_all(1, &b);
        g.set_all(2, &one);
        assert!(g.mirror([None, Some(&b), Some(&one)].into_iter()));
    }

    #[test]
    fn the_slots_holding_any_of_some_pieces_are_the_union_of_their_bitsets_lowest_first() {
        let mut h = Holders::new(5);
        h.reserve(200);
        for (piece, slot) in [(0, 3), (2, 3), (2, 130), (4, 64), (1, 7)] {
            h.set(piece, slot);
        }
        let slots = |m: &SlotSet| {
            let mut out = vec![];
            m.extend_into(&mut out);
            out
        };
        let mut m = SlotSet::default();
        h.any_of([2, 4].into_iter(), &mut m);
        assert_eq!(slots(&m), vec![3, 64, 130]);
        assert!(m.contains(64) && !m.contains(7) && !m.contains(1000));
        h.any_of([1].into_iter(), &mut m);
        assert_eq!(slots(&m), vec![7], "rebuilt, not added to");
        h.any_of(std::iter::empty(), &mut m);
        assert!(slots(&m).is_empty());
    }
}
