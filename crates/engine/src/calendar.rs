//! A calendar queue (R. Brown, CACM 1988) of 128-bit event keys whose top 64
//! bits are a time in nanoseconds: the ordering structure behind
//! [`crate::EventQueue`].
//!
//! Time is cut into buckets of `2^SHIFT` ns. The bucket being served is a
//! small sorted vector; the next `BUCKETS - 1` buckets are unsorted vectors in a
//! ring, with a bitmap of the non-empty ones; keys beyond that window wait in
//! a binary heap and move into the ring as the window reaches them. Most
//! events of a simulation are due within a few hundred milliseconds, so a
//! push is an append and a pop takes the last key of one bucket's sorted
//! few, instead of working on a heap of every pending event. Because the
//! served bucket is sorted, the keys a few pops ahead are known
//! ([`CalendarQueue::ahead`]), so their owners' state can be loaded early.
//!
//! Keys leave in exactly ascending order, like a heap's: buckets are disjoint
//! time ranges served in order, and keys within the bucket being served are
//! ordered by the whole key.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::queue::Sift;

/// log2 of the bucket width in ns: 2^22 ns is about 4.2 ms. Wider buckets
/// mean fewer of them to touch (each a small vector of its own) at the cost
/// of more keys to sort in the one being served. On the E0 benchmark swarm,
/// paired runs (BENCHMARKS.md): 2.1 ms buckets took 0.968x the time of
/// 1.05 ms ones (eighth session, about 24 events per 2.1 ms); once stale
/// timers were sifted out (about 20 events per 2.1 ms), 4.2 ms took 0.951x
/// and 0.960x the time of 2.1 ms, and 8.4 ms 1.010x that of 4.2 ms
/// (twenty-second session).
const SHIFT: u32 = 22;
/// Buckets in the ring: a window of 1024 x 4.2 ms, about 4.3 s.
const BUCKETS: usize = 1024;
const MASK: u64 = BUCKETS as u64 - 1;
const WORDS: usize = BUCKETS / 64;

#[inline]
fn bucket(k: u128) -> u64 {
    ((k >> 64) as u64) >> SHIFT
}

/// Keys in ascending order, for keys never below the last one popped.
pub(crate) struct CalendarQueue {
    /// The bucket being served (absolute bucket number `cur`), sorted in
    /// descending order: the next key is the last.
    current: Vec<u128>,
    cur: u64,
    /// Bucket `b` in `(cur, cur + BUCKETS)` waits unsorted at `ring[b & MASK]`.
    ring: Vec<Vec<u128>>,
    /// Bit `i`: `ring[i]` is not empty.
    occupied: [u64; WORDS],
    in_ring: usize,
    /// Keys at or beyond bucket `cur + BUCKETS`.
    far: BinaryHeap<Reverse<u128>>,
    len: usize,
    /// Scratch for the keys a sift moves.
    moved: Vec<u128>,
}

impl Default for CalendarQueue {
    fn default() -> Self {
        CalendarQueue {
            current: Vec::with_capacity(64),
            cur: 0,
            ring: (0..BUCKETS).map(|_| Vec::new()).collect(),
            occupied: [0; WORDS],
            in_ring: 0,
            far: BinaryHeap::new(),
            len: 0,
            moved: Vec::new(),
        }
    }
}

impl CalendarQueue {
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Adds a key. Its time must not be before the last key popped.
    #[inline]
    pub fn push(&mut self, k: u128) {
        self.len += 1;
        let b = bucket(k);
        if b <= self.cur {
            // The bucket being served, or (a key from a lane head popped
            // before this bucket's keys) an earlier one: both go in order.
            self.serve(k);
        } else if b < self.cur + BUCKETS as u64 {
            self.ring_push(b, k);
        } else {
            self.far.push(Reverse(k));
        }
    }

    #[inline]
    fn ring_push(&mut self, b: u64, k: u128) {
        let i = (b & MASK) as usize;
        self.ring[i].push(k);
        self.occupied[i / 64] |= 1 << (i % 64);
        self.in_ring += 1;
    }

    /// Inserts `k` into the bucket being served, in order.
    #[inline]
    fn serve(&mut self, k: u128) {
        let at = self.current.partition_point(|&x| x > k);
        self.current.insert(at, k);
    }

    /// The next three keys of the bucket being served (fewer if it holds
    /// fewer), in descending order: the last is the one [`Self::pop`]
    /// returns next. Keys pushed later may come between them.
    #[inline]
    pub fn next_few(&self) -> &[u128] {
        let s = self.current.as_slice();
        &s[s.len().saturating_sub(3)..]
    }

    /// The `n`-th key from the front of the bucket being served, if it holds
    /// that many (`ahead(0)` is the key [`Self::pop`] returns next). Keys
    /// pushed later may come before it.
    #[inline]
    pub fn ahead(&self, n: usize) -> Option<u128> {
        let i = self.current.len().checked_sub(n + 1)?;
        Some(self.current[i])
    }

    /// The smallest key, if any.
    pub fn peek(&self) -> Option<u128> {
        if let Some(&k) = self.current.last() {
            return Some(k);
        }
        if self.in_ring > 0 {
            let i = self.next_occupied();
            return self.ring[i].iter().copied().min();
        }
        self.far.peek().map(|r| r.0)
    }

    /// Removes and returns the smallest key.
    /// The smallest key, moving on to the next occupied bucket first if the
    /// one being served is empty (what [`CalendarQueue::pop`] would return).
    #[inline]
    pub fn front(&mut self) -> Option<u128> {
        self.front_sifted(|_| Sift::Keep)
    }

    /// Like [`CalendarQueue::front`], but a bucket about to be served is first
    /// sifted: `sift` sees each of its keys once and may drop it or move it
    /// (to a key of a later time; it is pushed again). Keys pushed into the
    /// bucket being served are not sifted.
    #[inline]
    pub fn front_sifted(&mut self, mut sift: impl FnMut(u128) -> Sift<u128>) -> Option<u128> {
        while self.current.is_empty() {
            if !self.advance(&mut sift) {
                return None;
            }
        }
        self.current.last().copied()
    }

    #[inline]
    pub fn pop(&mut self) -> Option<u128> {
        self.front()?;
        self.len -= 1;
        self.current.pop()
    }

    /// Ring slot of the first non-empty bucket after `cur`. Needs `in_ring > 0`.
    fn next_occupied(&self) -> usize {
        let start = ((self.cur + 1) & MASK) as usize;
        let (w0, b0) = (start / 64, start % 64);
        let first = self.occupied[w0] & (!0u64 << b0);
        if first != 0 {
            return w0 * 64 + first.trailing_zeros() as usize;
        }
        for step in 1..=WORDS {
            let w = (w0 + step) % WORDS;
            let bits = if w == w0 { self.occupied[w] & !(!0u64 << b0) } else { self.occupied[w] };
            if bits != 0 {
                return w * 64 + bits.trailing_zeros() as usize;
            }
        }
        unreachable!("in_ring counts keys the bitmap does not show")
    }

    /// Moves on to the next non-empty bucket, sifted (which may leave it
    /// empty); false if there are no keys.
    #[cold]
    fn advance(&mut self, sift: &mut impl FnMut(u128) -> Sift<u128>) -> bool {
        let b = if self.in_ring > 0 {
            let i = self.next_occupied() as u64;
            self.cur + (i.wrapping_sub(self.cur) & MASK)
        } else if let Some(Reverse(k)) = self.far.peek() {
            bucket(*k)
        } else {
            return false;
        };
        self.cur = b;
        let i = (b & MASK) as usize;
        let mut keys = std::mem::take(&mut self.ring[i]);
        if self.occupied[i / 64] & (1 << (i % 64)) != 0 {
            self.occupied[i / 64] &= !(1 << (i % 64));
            self.in_ring -= keys.len();
        }
        // The window moved: far keys it now covers join their buckets.
        while let Some(&Reverse(k)) = self.far.peek() {
            let fb = bucket(k);
            if fb >= self.cur + BUCKETS as u64 {
                break;
            }
            self.far.pop();
            if fb == self.cur {
                keys.push(k);
            } else {
                self.ring_push(fb, k);
            }
        }
        let mut moved = std::mem::take(&mut self.moved);
        let before = keys.len();
        keys.retain(|&k| match sift(k) {
            Sift::Keep => true,
            Sift::Drop => false,
            Sift::Move(to) => {
                debug_assert!(to > k, "a key moves to a later time");
                moved.push(to);
                false
            }
        });
        self.len -= before - keys.len();
        // Keys are unique (they hold a sequence number): an unstable sort
        // gives the one order. The emptied buffer goes back to the ring.
        keys.sort_unstable_by(|a, b| b.cmp(a));
        self.ring[i] = std::mem::replace(&mut self.current, keys);
        for k in moved.drain(..) {
            self.push(k);
        }
        self.moved = moved;
        true
    }

    /// Applies `f` to every key (which must keep each key's time) and
    /// rebuilds the order. For renumbering, rarely.
    pub fn rewrite(&mut self, f: impl FnOnce(&mut Vec<u128>)) {
        let mut all: Vec<u128> = Vec::with_capacity(self.len);
        all.append(&mut self.current);
        for v in &mut self.ring {
            all.append(v);
        }
        all.extend(self.far.drain().map(|r| r.0));
        self.occupied = [0; WORDS];
        self.in_ring = 0;
        self.len = 0;
        f(&mut all);
        for k in all {
            self.push(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn k(time_ns: u64, seq: u64) -> u128 {
        ((time_ns as u128) << 64) | seq as u128
    }

    #[test]
    fn keys_in_the_served_bucket_the_ring_and_beyond_the_window_come_out_in_order() {
        let mut q = CalendarQueue::default();
        let width = 1u64 << SHIFT;
        let keys = [k(5, 0), k(3 * width, 1), k(3 * width, 2), k(width * BUCKETS as u64 * 3, 3), k(1, 4)];
        for &x in &keys {
            q.push(x);
        }
        let mut sorted = keys.to_vec();
        sorted.sort();
        let out: Vec<u128> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(out, sorted);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn a_key_before_the_bucket_front_moved_to_still_comes_out_first() {
        let mut q = CalendarQueue::default();
        let width = 1u64 << SHIFT;
        q.push(k(10 * width, 0));
        assert_eq!(q.front(), Some(k(10 * width, 0)), "front moves on to bucket 10");
        // Another queue (the lane heads) served an earlier event, whose
        // handler schedules into bucket 3.
        q.push(k(3 * width + 5, 1));
        q.push(k(12 * width, 2));
        let out: Vec<u128> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(out, vec![k(3 * width + 5, 1), k(10 * width, 0), k(12 * width, 2)]);
    }

    #[test]
    fn the_ring_wraps_around_as_time_moves_on() {
        let mut q = CalendarQueue::default();
        let width = 1u64 << SHIFT;
        let mut t = 0;
        for i in 0..10_000u64 {
            // Each pop schedules one key 1.7 buckets later: the ring wraps many times.
            q.push(k(t + width * 17 / 10, i));
            let x = q.pop().unwrap();
            assert_eq!(x, k(t + width * 17 / 10, i));
            t = (x >> 64) as u64;
        }
    }

    #[test]
    fn peek_shows_the_key_pop_returns() {
        let mut q = CalendarQueue::default();
        let width = 1u64 << SHIFT;
        for (i, t) in [width * 9, width * 4000, width * 2].into_iter().enumerate() {
            q.push(k(t, i as u64));
        }
        while let Some(p) = q.peek() {
            assert_eq!(q.pop(), Some(p));
        }
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn the_first_of_the_next_few_keys_is_the_one_pop_returns() {
        let mut q = CalendarQueue::default();
        let width = 1u64 << SHIFT;
        for (i, t) in [7, 3, 9, 3, width * 5].into_iter().enumerate() {
            q.push(k(t, i as u64));
        }
        q.pop();
        while let Some(&next) = q.next_few().last() {
            assert!(q.next_few().len() <= 3);
            assert_eq!(q.ahead(0), Some(next));
            let after = q.ahead(1);
            assert_eq!(q.pop(), Some(next));
            assert_eq!(q.ahead(0), after, "ahead(1) is the key after the next");
        }
        assert_eq!(q.pop(), Some(k(width * 5, 4)), "a later bucket is served once this one is empty");
    }

    proptest! {
        #[test]
        fn pops_follow_a_sorted_reference_whatever_the_spread_of_times(
            ops in proptest::collection::vec((0u64..6, 0u64..4_000_000_000, 0usize..4), 1..300)
        ) {
            // Deltas from 0 to 4 s scaled by powers of ten: same bucket, ring, far.
            let mut q = CalendarQueue::default();
            let mut reference = std::collections::BTreeSet::new();
            let mut seq = 0u64;
            q.push(k(0, seq));
            reference.insert(k(0, seq));
            for (scale, delta, fanout) in ops {
                let Some(x) = q.pop() else { break };
                prop_assert_eq!(Some(x), reference.pop_first());
                let now = (x >> 64) as u64;
                for _ in 0..fanout {
                    seq += 1;
                    let key = k(now + delta / 10u64.pow(scale as u32) * (scale + 1), seq);
                    q.push(key);
                    reference.insert(key);
                }
            }
            prop_assert_eq!(q.len(), reference.len());
        }
    }
}
