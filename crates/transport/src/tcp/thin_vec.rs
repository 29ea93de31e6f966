//! [`ThinVec`]: a vector that costs one pointer while it has never held
//! anything.
//!
//! A TCP endpoint keeps two lists that are empty unless segments are lost or
//! reordered: the receiver's out-of-order ranges and the sender's SACK
//! scoreboard. As `Vec`s they took 24 bytes each of every connection;
//! as a `ThinVec` they take 8, and a connection that never sees a loss never
//! allocates them.

use std::ops::{Deref, DerefMut};

/// A `Vec<T>` behind an optional box: 8 bytes, allocated on first growth and
/// kept from then on (losses tend to recur on the same connection).
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::box_collection)] // the box is the point: 8 bytes instead of 24
pub(crate) struct ThinVec<T>(Option<Box<Vec<T>>>);

impl<T> Default for ThinVec<T> {
    fn default() -> Self {
        ThinVec(None)
    }
}

impl<T> ThinVec<T> {
    /// The vector, allocated now if it never was: for growing it.
    #[inline]
    pub fn vec(&mut self) -> &mut Vec<T> {
        self.0.get_or_insert_with(Default::default)
    }

    /// Removes the first `n` elements (nothing to do, and nothing allocated, for 0).
    #[inline]
    pub fn drop_front(&mut self, n: usize) {
        if n > 0 {
            self.vec().drain(..n);
        }
    }
}

impl<T> Deref for ThinVec<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        self.0.as_deref().map_or(&[], |v| v.as_slice())
    }
}

impl<T> DerefMut for ThinVec<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.0 {
            Some(v) => v.as_mut_slice(),
            None => &mut [],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thin_vec_is_one_pointer_and_allocates_only_when_it_grows() {
        assert_eq!(std::mem::size_of::<ThinVec<(u64, u64, u64)>>(), 8);
        let mut v: ThinVec<u32> = ThinVec::default();
        assert!(v.is_empty());
        v.drop_front(0);
        assert!(v.0.is_none(), "dropping nothing allocates nothing");
        v.vec().extend([1, 2, 3, 4]);
        v[0] = 9;
        v.drop_front(2);
        assert_eq!(&*v, &[3, 4]);
        v.drop_front(2);
        assert!(v.is_empty() && v.0.is_some(), "kept for the next loss");
    }
}
