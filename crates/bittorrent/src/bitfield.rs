//! Which pieces a peer has. On the wire (BEP 3) bit `i` is piece `i`, the high
//! bit of byte 0 is piece 0, and spare bits at the end are zero.

/// A fixed-size set of pieces with a running count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bitfield {
    words: Vec<u64>,
    len: u32,
    count: u32,
}

impl Bitfield {
    pub fn new(len: u32) -> Self {
        Bitfield { words: vec![0; (len as usize).div_ceil(64)], len, count: 0 }
    }

    /// Every piece set (a seed).
    pub fn full(len: u32) -> Self {
        let mut b = Self::new(len);
        for i in 0..len {
            b.set(i);
        }
        b
    }

    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of pieces set.
    pub fn count(&self) -> u32 {
        self.count
    }

    pub fn is_complete(&self) -> bool {
        self.count == self.len
    }

    #[inline]
    pub fn has(&self, i: u32) -> bool {
        self.words[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    /// The bits, 64 pieces per word (piece `i` is bit `i % 64` of word `i / 64`).
    #[inline]
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Whether this set has a piece that `other` (of the same length) lacks.
    #[inline]
    pub fn has_any_missing_from(&self, other: &Bitfield) -> bool {
        debug_assert_eq!(self.len, other.len, "bitfields of one torrent");
        self.words.iter().zip(&other.words).any(|(&a, &b)| a & !b != 0)
    }

    /// Clears piece `i`; returns true if it was set.
    pub fn unset(&mut self, i: u32) -> bool {
        let w = &mut self.words[(i / 64) as usize];
        let bit = 1 << (i % 64);
        if *w & bit == 0 {
            return false;
        }
        *w &= !bit;
        self.count -= 1;
        true
    }

    /// Sets piece `i`; returns true if it was not set before.
    pub fn set(&mut self, i: u32) -> bool {
        assert!(i < self.len, "piece {i} out of range ({} pieces)", self.len);
        let w = &mut self.words[(i / 64) as usize];
        let bit = 1 << (i % 64);
        if *w & bit != 0 {
            return false;
        }
        *w |= bit;
        self.count += 1;
        true
    }

    /// Bytes of the BEP 3 `bitfield` payload: `ceil(len / 8)`.
    pub fn wire_len(&self) -> u32 {
        self.len.div_ceil(8)
    }

    /// The BEP 3 payload: high bit of byte 0 is piece 0, spare bits zero.
    pub fn to_wire(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.wire_len() as usize];
        for i in 0..self.len {
            if self.has(i) {
                out[(i / 8) as usize] |= 0x80 >> (i % 8);
            }
        }
        out
    }

    /// Parses a BEP 3 payload for `len` pieces; `None` if the size is wrong or a
    /// spare bit is set (clients drop such peers).
    pub fn from_wire(bytes: &[u8], len: u32) -> Option<Bitfield> {
        if bytes.len() != len.div_ceil(8) as usize {
            return None;
        }
        let mut b = Bitfield::new(len);
        for (k, byte) in bytes.iter().enumerate() {
            for j in 0..8 {
                if byte & (0x80 >> j) != 0 {
                    let i = (k * 8 + j) as u32;
                    if i >= len {
                        return None;
                    }
                    b.set(i);
                }
            }
        }
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_set_has_a_piece_missing_from_another_only_when_it_holds_one_the_other_lacks() {
        let (mut a, mut b) = (Bitfield::new(130), Bitfield::new(130));
        assert!(!a.has_any_missing_from(&b), "empty");
        a.set(129);
        assert!(a.has_any_missing_from(&b) && !b.has_any_missing_from(&a));
        b.set(129);
        b.set(3);
        assert!(!a.has_any_missing_from(&b), "b has all of a");
        assert!(b.has_any_missing_from(&a));
        assert!(!Bitfield::full(130).has_any_missing_from(&Bitfield::full(130)));
    }

    #[test]
    fn piece_zero_is_the_high_bit_of_the_first_byte_and_spare_bits_are_zero() {
        let mut b = Bitfield::new(10);
        b.set(0);
        b.set(9);
        assert_eq!(b.to_wire(), vec![0b1000_0000, 0b0100_0000]);
        assert_eq!(b.wire_len(), 2);
        assert!(Bitfield::from_wire(&[0, 0b0010_0000], 10).is_none(), "spare bit set");
        assert!(Bitfield::from_wire(&[0], 10).is_none(), "too short");
    }

    #[test]
    fn a_full_bitfield_is_complete_and_one_missing_piece_is_not() {
        let mut b = Bitfield::new(100);
        for i in 0..99 {
            b.set(i);
        }
        assert!(!b.is_complete());
        b.set(99);
        assert!(b.is_complete() && Bitfield::full(100).is_complete());
    }

    proptest! {
        #[test]
        fn the_wire_layout_round_trips_and_the_count_is_exact(
            len in 1u32..500, picks in proptest::collection::vec(0u32..500, 0..200)
        ) {
            let mut b = Bitfield::new(len);
            let mut n = 0;
            for p in picks.into_iter().filter(|p| *p < len) {
                if b.set(p) { n += 1; }
            }
            prop_assert_eq!(b.count(), n);
            prop_assert_eq!(Bitfield::from_wire(&b.to_wire(), len), Some(b));
        }
    }
}
