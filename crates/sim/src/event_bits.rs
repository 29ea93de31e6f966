//! The 31 bits a world's frequent events pack into (see
//! [`torrentlab_engine::Packed`]): a 2-bit kind in bits 29-30, then either an
//! index (a lane) in bits 0-28, or a timer's owner in bits 8-28 and its
//! [`Tag`] in bits 0-7. An index too large for its field does not pack; the
//! event then waits in the queue's slab, with the same meaning.

use crate::timer::Tag;

const KIND_SHIFT: u32 = 29;
const INDEX_BITS: u32 = 29;
const OWNER_BITS: u32 = 21;

/// `index` under `kind` (0-3), if it fits in 29 bits.
#[inline]
pub(crate) fn pack_index(kind: u32, index: u32) -> Option<u32> {
    debug_assert!(kind < 4);
    (index < 1 << INDEX_BITS).then_some(kind << KIND_SHIFT | index)
}

/// A timer event of `owner` with `tag` under `kind` (0-3), if the owner's
/// index fits in 21 bits.
#[inline]
pub(crate) fn pack_timer(kind: u32, owner: u32, tag: Tag) -> Option<u32> {
    debug_assert!(kind < 4);
    (owner < 1 << OWNER_BITS).then_some(kind << KIND_SHIFT | owner << 8 | tag as u32)
}

#[inline]
pub(crate) fn kind(bits: u32) -> u32 {
    bits >> KIND_SHIFT
}

#[inline]
pub(crate) fn index(bits: u32) -> u32 {
    bits & ((1 << INDEX_BITS) - 1)
}

/// (owner, tag) of a packed timer event.
#[inline]
pub(crate) fn timer(bits: u32) -> (u32, Tag) {
    ((bits >> 8) & ((1 << OWNER_BITS) - 1), bits as Tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_and_timers_come_back_with_their_kind_at_the_edges_of_their_fields() {
        for (k, i) in [(0, 0), (3, (1 << 29) - 1), (2, 12345)] {
            let b = pack_index(k, i).unwrap();
            assert!(b < 1 << 31, "31 bits");
            assert_eq!((kind(b), index(b)), (k, i));
        }
        for (k, o, t) in [(1, 0, 0), (3, (1 << 21) - 1, 255), (2, 777, 9)] {
            let b = pack_timer(k, o, t).unwrap();
            assert!(b < 1 << 31, "31 bits");
            assert_eq!((kind(b), timer(b)), (k, (o, t)));
        }
    }

    #[test]
    fn an_index_too_large_for_its_field_does_not_pack() {
        assert_eq!(pack_index(0, 1 << 29), None);
        assert_eq!(pack_timer(0, 1 << 21, 0), None);
    }
}
