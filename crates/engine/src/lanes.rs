//! FIFO lanes: events that are known to fire in the order they are created.
//!
//! Packets on one path (same links, same propagation delay) arrive in the order
//! they were sent. Keeping each path's pending arrivals in its own FIFO and only
//! the head of each lane in the [`crate::EventQueue`] keeps the heap as small as
//! the number of busy paths instead of the number of packets in flight (the
//! queue keeps lane heads in a heap of their own:
//! [`crate::EventQueue::schedule_head`]).

use std::collections::VecDeque;

use crate::time::Time;

/// A set of FIFO lanes of `(time, event)`, each non-decreasing in time.
///
/// `A` sets the alignment of each entry (its time and event) without adding
/// to its size: `()` for none beyond the fields', [`CacheLine`] to start every
/// entry on a cache line, so that an entry of 64 bytes is read and written as
/// one line rather than straddling two.
pub struct Lanes<E, A = ()> {
    lanes: Vec<VecDeque<Entry<E, A>>>,
    len: usize,
}

/// One waiting event with its time, aligned as `A` is.
#[repr(C)]
struct Entry<E, A> {
    _align: [A; 0],
    time: Time,
    event: E,
}

/// Aligns lane entries to a 64-byte cache line (see [`Lanes`]).
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub struct CacheLine;

impl<E, A> Lanes<E, A> {
    pub fn new(count: usize) -> Self {
        Lanes { lanes: (0..count).map(|_| VecDeque::new()).collect(), len: 0 }
    }

    /// Appends an event to `lane`. Returns true when the lane was empty: the
    /// caller must then schedule the lane's head at `time`.
    ///
    /// # Panics
    /// In debug builds, if `time` is earlier than the lane's last event.
    #[inline]
    pub fn push(&mut self, lane: usize, time: Time, event: E) -> bool {
        let q = &mut self.lanes[lane];
        debug_assert!(q.back().is_none_or(|e| e.time <= time), "lane {lane} would go back in time");
        q.push_back(Entry { _align: [], time, event });
        self.len += 1;
        q.len() == 1
    }

    /// Drops the head of `lane`, which the caller has read (copied) with
    /// [`Lanes::get`]; returns the time of the new head. (There is no `pop`
    /// returning the head: for events of a hundred bytes and more, moving one
    /// out through an `Option` of a tuple was compiled into overlapping
    /// copies through the stack that stalled the loop.)
    ///
    /// # Panics
    /// In debug builds, if `lane` is empty.
    #[inline]
    pub fn advance(&mut self, lane: usize) -> Option<Time> {
        let q = &mut self.lanes[lane];
        let head = q.pop_front();
        debug_assert!(head.is_some(), "advance on empty lane {lane}");
        self.len -= usize::from(head.is_some());
        q.front().map(|e| e.time)
    }

    /// The `i`-th waiting event of `lane` (0: its head), if there is one.
    #[inline]
    pub fn get(&self, lane: usize, i: usize) -> Option<&E> {
        self.lanes[lane].get(i).map(|e| &e.event)
    }

    /// Events waiting in all lanes.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every waiting event, lane by lane.
    pub fn values(&self) -> impl Iterator<Item = &E> {
        self.lanes.iter().flat_map(|q| q.iter().map(|e| &e.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_push_into_an_empty_lane_asks_for_scheduling() {
        let mut l: Lanes<char> = Lanes::new(2);
        assert!(l.push(0, Time(5), 'a'));
        assert!(!l.push(0, Time(5), 'b'));
        assert!(l.push(1, Time(1), 'c'));
        assert_eq!((l.get(0, 1), l.get(0, 2), l.get(1, 0)), (Some(&'b'), None, Some(&'c')));
        assert_eq!(l.advance(0), Some(Time(5)), "b is next, at the same time");
        assert_eq!(l.get(0, 0), Some(&'b'));
        assert_eq!(l.advance(0), None);
        assert_eq!(l.get(0, 0), None);
        assert_eq!(l.len(), 1, "lane 1's");
        l.push(0, Time(7), 'e');
        l.push(0, Time(9), 'f');
        assert_eq!(l.get(0, 0), Some(&'e'));
        assert_eq!(l.advance(0), Some(Time(9)), "the new head's time");
        assert_eq!((l.get(0, 0), l.len()), (Some(&'f'), 2));
        assert_eq!(l.advance(0), None);
        assert_eq!(l.advance(1), None);
        assert!(l.is_empty());
    }

    #[test]
    fn cache_line_lanes_keep_each_entry_of_up_to_56_bytes_on_one_line() {
        assert_eq!(std::mem::size_of::<Entry<[u64; 7], CacheLine>>(), 64);
        assert_eq!(std::mem::size_of::<Entry<u32, ()>>(), 16, "no alignment: no padding beyond the fields'");
        let mut l: Lanes<[u64; 7], CacheLine> = Lanes::new(1);
        for i in 0..10 {
            l.push(0, Time(i), [i; 7]);
        }
        for i in 0..10 {
            let e = l.get(0, i as usize).expect("pushed");
            assert_eq!(e[0], i);
            assert_eq!((e as *const _ as usize - 8) % 64, 0, "entry {i} starts a line");
        }
    }

    #[test]
    #[should_panic(expected = "back in time")]
    #[cfg(debug_assertions)]
    fn a_lane_refuses_an_event_earlier_than_its_last() {
        let mut l: Lanes<()> = Lanes::new(1);
        l.push(0, Time(5), ());
        l.push(0, Time(4), ());
    }
}
