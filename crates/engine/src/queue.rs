//! The event queue: a min-heap with a total order (time, then insertion sequence).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::time::Time;

/// One scheduled event. Ordered so that `BinaryHeap` (a max-heap) pops the
/// earliest time first and, among equal times, the lowest sequence number.
struct Entry<E> {
    time: Time,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: the smallest (time, seq) is the "greatest" for the max-heap.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// A deterministic discrete-event queue.
///
/// Events fire in order of time, then of scheduling order (a FIFO among equal
/// times). The queue tracks the current time and refuses to schedule an event
/// before it, so time never goes backwards; it counts every event it delivers.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    now: Time,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(1024), next_seq: 0, now: Time::ZERO, popped: 0 }
    }

    /// The time of the event most recently popped (zero before the first).
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Number of events delivered by [`EventQueue::pop`] so far.
    #[inline]
    pub fn events_processed(&self) -> u64 {
        self.popped
    }

    /// Number of events waiting.
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedules `event` at `time`.
    ///
    /// # Panics
    /// If `time` is before the current time: that would make time go backwards,
    /// which is always a bug in the caller.
    #[inline]
    pub fn schedule(&mut self, time: Time, event: E) {
        assert!(time >= self.now, "event scheduled in the past: {:?} < now {:?}", time, self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { time, seq, event });
    }

    /// The time of the next event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.time)
    }

    /// Removes and returns the earliest event, advancing the current time to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let e = self.heap.pop()?;
        debug_assert!(e.time >= self.now);
        self.now = e.time;
        self.popped += 1;
        Some((e.time, e.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn events_at_the_same_time_fire_in_the_order_they_were_scheduled() {
        let mut q = EventQueue::new();
        for i in 0..5 {
            q.schedule(Time(10), i);
        }
        q.schedule(Time(5), 99);
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec![99, 0, 1, 2, 3, 4]);
    }

    #[test]
    #[should_panic(expected = "scheduled in the past")]
    fn scheduling_before_now_panics() {
        let mut q = EventQueue::new();
        q.schedule(Time(10), ());
        q.pop();
        q.schedule(Time(9), ());
    }

    #[test]
    fn pop_counts_events_and_advances_now() {
        let mut q = EventQueue::new();
        q.schedule(Time(3), 'a');
        q.schedule(Time(7), 'b');
        assert_eq!(q.pop(), Some((Time(3), 'a')));
        assert_eq!(q.now(), Time(3));
        assert_eq!(q.pop(), Some((Time(7), 'b')));
        assert_eq!(q.events_processed(), 2);
        assert_eq!(q.pop(), None);
    }

    proptest! {
        #[test]
        fn time_never_goes_backwards_and_ties_keep_insertion_order(
            times in proptest::collection::vec(0u64..50, 1..200)
        ) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.schedule(Time(*t), i);
            }
            let mut last = (Time::ZERO, 0usize);
            let mut first = true;
            while let Some((t, i)) = q.pop() {
                if !first {
                    prop_assert!(t > last.0 || (t == last.0 && i > last.1));
                }
                first = false;
                last = (t, i);
            }
        }

        #[test]
        fn interleaved_scheduling_pops_in_the_same_order_as_a_sorted_reference(
            ops in proptest::collection::vec((0u64..1_000_000, 0usize..4), 1..400)
        ) {
            // Each pop may schedule up to 3 new events at now + delta.
            let mut q = EventQueue::new();
            let mut reference = std::collections::BTreeSet::new();
            let mut seq = 0u64;
            q.schedule(Time(0), seq);
            reference.insert((0u64, seq));
            for (delta, fanout) in ops {
                let Some((t, id)) = q.pop() else { break };
                let expected = reference.pop_first().unwrap();
                prop_assert_eq!((t.0, id), expected);
                for k in 0..fanout {
                    seq += 1;
                    let at = t.0 + delta * k as u64 / 2;
                    q.schedule(Time(at), seq);
                    reference.insert((at, seq));
                }
            }
            prop_assert_eq!(q.len(), reference.len());
        }
    }
}
