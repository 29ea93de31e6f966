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
pub struct Lanes<E> {
    lanes: Vec<VecDeque<(Time, E)>>,
    len: usize,
}

impl<E> Lanes<E> {
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
        debug_assert!(q.back().is_none_or(|(t, _)| *t <= time), "lane {lane} would go back in time");
        q.push_back((time, event));
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
        q.front().map(|(t, _)| *t)
    }

    /// The `i`-th waiting event of `lane` (0: its head), if there is one.
    #[inline]
    pub fn get(&self, lane: usize, i: usize) -> Option<&E> {
        self.lanes[lane].get(i).map(|(_, e)| e)
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
        self.lanes.iter().flat_map(|q| q.iter().map(|(_, e)| e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_push_into_an_empty_lane_asks_for_scheduling() {
        let mut l = Lanes::new(2);
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
    #[should_panic(expected = "back in time")]
    #[cfg(debug_assertions)]
    fn a_lane_refuses_an_event_earlier_than_its_last() {
        let mut l = Lanes::new(1);
        l.push(0, Time(5), ());
        l.push(0, Time(4), ());
    }
}
