//! The event queue: a total order of events (time, then insertion sequence).
//!
//! Each event gets a 16-byte key, `time << 64 | seq << 32 | low`, so one
//! integer comparison orders two events; the keys are ordered by a
//! [`CalendarQueue`], except those of lane heads (see
//! [`EventQueue::schedule_head`]), which wait in a small binary heap of their
//! own; a pop takes the smaller of the two fronts.
//!
//! An event that fits in 31 bits ([`Packed`]) travels in `low` itself, with
//! the top bit set; any other waits in a slab at slot `low`. Most events of a
//! simulation are small (a lane index, a timer owner), and a packed one is
//! never written to or read back from memory that has gone cold while it
//! waited.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::calendar::CalendarQueue;
use crate::time::Time;

/// The top bit of a key's low word: the event is packed in the rest.
const PACKED: u32 = 1 << 31;

/// What [`EventQueue::pop_sifted`] does with an event it is shown (and the
/// calendar with a key: `T` is then the key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sift<T = Time> {
    /// It stays where it is.
    Keep,
    /// It is dropped: it will never pop.
    Drop,
    /// It moves to this later time.
    Move(T),
}

/// An event type of an [`EventQueue`]: events that fit in 31 bits can ride
/// in their key instead of the slab. The default packs nothing.
pub trait Packed: Sized {
    /// The event in 31 bits (the top bit clear), or `None` to use the slab.
    #[inline]
    fn pack(&self) -> Option<u32> {
        None
    }

    /// The event [`Packed::pack`] gave `bits` for.
    fn unpack(bits: u32) -> Self {
        unreachable!("pack gave no bits ({bits:#x}) for this event type")
    }
}

#[inline]
fn key(time: Time, seq: u32, low: u32) -> u128 {
    ((time.0 as u128) << 64) | ((seq as u128) << 32) | low as u128
}

#[inline]
fn key_time(k: u128) -> Time {
    Time((k >> 64) as u64)
}

#[inline]
fn key_low(k: u128) -> u32 {
    k as u32
}

/// A deterministic discrete-event queue.
///
/// Events fire in order of time, then of scheduling order (a FIFO among equal
/// times). The queue tracks the current time and refuses to schedule an event
/// before it, so time never goes backwards; it counts every event it delivers.
pub struct EventQueue<E> {
    keys: CalendarQueue,
    /// Keys of lane heads: at most one per lane, so few, and kept hot.
    heads: BinaryHeap<Reverse<u128>>,
    /// Events that do not pack, by slot; `None` when free.
    slab: Vec<Option<E>>,
    free: Vec<u32>,
    /// Sequence number of the next scheduled event. 32 bits: when they run
    /// out, the waiting events are renumbered in order (see `renumber`).
    next_seq: u32,
    now: Time,
    popped: u64,
}

impl<E: Packed> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Packed> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            keys: CalendarQueue::default(),
            heads: BinaryHeap::new(),
            slab: Vec::with_capacity(1024),
            free: Vec::new(),
            next_seq: 0,
            now: Time::ZERO,
            popped: 0,
        }
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
        self.keys.len() + self.heads.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedules `event` at `time`.
    ///
    /// # Panics
    /// If `time` is before the current time: that would make time go backwards,
    /// which is always a bug in the caller.
    #[inline(always)]
    pub fn schedule(&mut self, time: Time, event: E) {
        let k = self.key_for(time, event);
        self.keys.push(k);
    }

    /// Schedules the event for the head of a FIFO lane (see [`crate::Lanes`]):
    /// the same order as [`EventQueue::schedule`], but the key waits in a
    /// binary heap of lane heads instead of the calendar. There are at most as
    /// many as lanes, so that heap stays small and in the cache, while a
    /// calendar bucket written to has usually gone cold.
    ///
    /// # Panics
    /// As [`EventQueue::schedule`].
    #[inline(always)]
    pub fn schedule_head(&mut self, time: Time, event: E) {
        let k = self.key_for(time, event);
        self.heads.push(Reverse(k));
    }

    /// The key of `event` at `time`: its place in the total order.
    #[inline(always)]
    fn key_for(&mut self, time: Time, event: E) -> u128 {
        assert!(time >= self.now, "event scheduled in the past: {:?} < now {:?}", time, self.now);
        let low = match event.pack() {
            Some(bits) => {
                debug_assert!(bits & PACKED == 0, "a packed event uses 31 bits");
                bits | PACKED
            }
            None => self.park(event),
        };
        if self.next_seq == u32::MAX {
            self.renumber();
        }
        let k = key(time, self.next_seq, low);
        self.next_seq += 1;
        k
    }

    /// The time of the next event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        let head = self.heads.peek().map(|r| r.0);
        match (self.keys.peek(), head) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map(key_time)
    }

    /// The `n`-th event from the front of the calendar's bucket being served
    /// (`0`: its front), with its time, if that bucket holds it and it rides
    /// in its key. Lane heads and keys pushed later may come before it: a
    /// hint for loading what the event will read, never a promise of what
    /// pops next.
    #[inline]
    pub fn calendar_ahead(&self, n: usize) -> Option<(Time, E)> {
        let k = self.keys.ahead(n)?;
        let low = key_low(k);
        (low & PACKED != 0).then(|| (key_time(k), E::unpack(low & !PACKED)))
    }

    /// Removes and returns the earliest event, advancing the current time to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.pop_sifted(|_, _| Sift::Keep)
    }

    /// Like [`EventQueue::pop`], but when the calendar moves on to its next
    /// bucket of time (a few milliseconds' worth of events), `sift` is
    /// shown each packed event in it, with its time, and may drop it or move
    /// it to a later time. This is for owners whose events go stale while
    /// they wait (lazily cancelled timers): a stale event dropped here never
    /// goes through a pop and its handler. A moved event is queued again at
    /// once, so among events at its new time it takes its place as if
    /// scheduled now.
    #[inline]
    pub fn pop_sifted(&mut self, mut sift: impl FnMut(Time, &E) -> Sift) -> Option<(Time, E)> {
        let next_seq = &mut self.next_seq;
        let front = self.keys.front_sifted(|k| {
            let low = key_low(k);
            // At the end of the sequence numbers, keep (renumbering waits
            // for the next schedule).
            if low & PACKED == 0 || *next_seq == u32::MAX {
                return Sift::Keep;
            }
            match sift(key_time(k), &E::unpack(low & !PACKED)) {
                Sift::Keep => Sift::Keep,
                Sift::Drop => Sift::Drop,
                Sift::Move(to) => {
                    debug_assert!(to > key_time(k), "an event moves later");
                    let moved = key(to, *next_seq, low);
                    *next_seq += 1;
                    Sift::Move(moved)
                }
            }
        });
        let top = match (front, self.heads.peek()) {
            (Some(k), Some(&Reverse(h))) if h < k => self.heads.pop()?.0,
            (Some(_), _) => self.keys.pop()?,
            (None, Some(_)) => self.heads.pop()?.0,
            (None, None) => return None,
        };
        let time = key_time(top);
        debug_assert!(time >= self.now);
        self.now = time;
        self.popped += 1;
        let low = key_low(top);
        if low & PACKED != 0 {
            return Some((time, E::unpack(low & !PACKED)));
        }
        let event = self.slab[low as usize].take().expect("a queued slot holds its event");
        self.free.push(low);
        // The events of the next pops are known: start loading the slab
        // entries among them, which are scattered, while this one is handled.
        for &k in self.keys.next_few() {
            let low = key_low(k);
            if low & PACKED == 0 {
                if let Some(e) = self.slab.get(low as usize) {
                    crate::prefetch::prefetch(e);
                }
            }
        }
        Some((time, event))
    }

    /// Puts an event that does not pack in the slab; returns its slot.
    #[inline(never)]
    fn park(&mut self, event: E) -> u32 {
        match self.free.pop() {
            Some(s) => {
                self.slab[s as usize] = Some(event);
                s
            }
            None => {
                assert!(self.slab.len() < PACKED as usize, "more than 2^31 events waiting in the slab");
                self.slab.push(Some(event));
                (self.slab.len() - 1) as u32
            }
        }
    }

    /// Gives the waiting events fresh sequence numbers 0, 1, ... in their
    /// order, so the 32-bit counter can go on without changing any order.
    #[cold]
    fn renumber(&mut self) {
        // A key's new sequence number is its rank among all waiting keys,
        // lane heads included; heads go back to their own heap.
        let heads: Vec<u128> = std::mem::take(&mut self.heads).into_iter().map(|r| r.0).collect();
        let mut renumbered_heads = Vec::new();
        let mut waiting = 0;
        self.keys.rewrite(|keys| {
            let mut all: Vec<u128> = keys.iter().chain(&heads).copied().collect();
            all.sort_unstable();
            let rank = |k: u128| key(key_time(k), all.binary_search(&k).expect("a waiting key") as u32, key_low(k));
            for k in keys.iter_mut() {
                *k = rank(*k);
            }
            renumbered_heads = heads.iter().map(|&k| Reverse(rank(k))).collect();
            waiting = all.len();
        });
        self.heads = BinaryHeap::from(renumbered_heads);
        self.next_seq = waiting as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;
    use proptest::prelude::*;

    fn ms(x: u64) -> Time {
        Time(x * 1_000_000)
    }

    impl Packed for i32 {}
    impl Packed for usize {}
    impl Packed for u64 {}
    impl Packed for char {}
    impl Packed for () {}

    /// Small values ride in the key, large ones in the slab.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    enum Mixed {
        Small(u32),
        Big(u64),
    }

    impl Packed for Mixed {
        fn pack(&self) -> Option<u32> {
            match *self {
                Mixed::Small(x) if x < PACKED => Some(x),
                _ => None,
            }
        }
        fn unpack(bits: u32) -> Self {
            Mixed::Small(bits)
        }
    }

    #[test]
    fn packed_events_never_touch_the_slab_and_come_back_as_they_went_in() {
        let mut q = EventQueue::new();
        q.schedule(Time(5), Mixed::Small(PACKED - 1));
        q.schedule(Time(5), Mixed::Big(7));
        q.schedule(Time(2), Mixed::Small(0));
        assert_eq!(q.slab.len(), 1, "only the big event is parked");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec![Mixed::Small(0), Mixed::Small(PACKED - 1), Mixed::Big(7)]);
        assert_eq!(q.free, vec![0], "the parked event's slot is free again");
    }

    /// Drops `Small(1)`, moves `Small(2)` to 50 ms once, keeps the rest;
    /// counts what it is shown.
    #[derive(Default)]
    struct TestSifter {
        shown: Vec<Mixed>,
    }

    impl TestSifter {
        fn sift(&mut self, at: Time, e: &Mixed) -> Sift {
            self.shown.push(*e);
            match *e {
                Mixed::Small(1) => Sift::Drop,
                Mixed::Small(2) if at < ms(50) => Sift::Move(ms(50)),
                _ => Sift::Keep,
            }
        }
    }

    #[test]
    fn a_sifted_out_event_never_pops_and_a_moved_one_pops_after_those_already_at_its_new_time() {
        let mut q = EventQueue::new();
        q.schedule(ms(10), Mixed::Small(1));
        q.schedule(ms(11), Mixed::Small(2));
        q.schedule(ms(12), Mixed::Small(3));
        q.schedule(ms(13), Mixed::Big(9));
        q.schedule(ms(50), Mixed::Small(4));
        let mut sifter = TestSifter::default();
        let out: Vec<_> = std::iter::from_fn(|| q.pop_sifted(|at, e| sifter.sift(at, e))).collect();
        assert_eq!(
            out,
            vec![
                (ms(12), Mixed::Small(3)),
                (ms(13), Mixed::Big(9)),
                (ms(50), Mixed::Small(4)),
                (ms(50), Mixed::Small(2)),
            ]
        );
        assert_eq!(q.len(), 0, "dropped and moved events are counted out");
        assert_eq!(q.events_processed(), 4, "a dropped event is never delivered");
        assert!(!sifter.shown.contains(&Mixed::Big(9)), "events in the slab are not shown");
        let twos = sifter.shown.iter().filter(|&&e| e == Mixed::Small(2)).count();
        assert_eq!(twos, 2, "a moved event is shown again when its new bucket comes up");
    }

    #[test]
    fn an_event_scheduled_into_the_bucket_being_served_is_not_sifted() {
        let mut q = EventQueue::new();
        q.schedule(ms(10), Mixed::Small(7));
        let mut sifter = TestSifter::default();
        assert_eq!(q.pop_sifted(|at, e| sifter.sift(at, e)), Some((ms(10), Mixed::Small(7))));
        q.schedule(ms(10), Mixed::Small(1));
        assert_eq!(q.pop_sifted(|at, e| sifter.sift(at, e)), Some((ms(10), Mixed::Small(1))));
        assert_eq!(sifter.shown, vec![Mixed::Small(7)]);
    }

    #[test]
    fn calendar_ahead_shows_the_packed_events_that_pop_next_from_the_calendar() {
        let mut q = EventQueue::new();
        q.schedule(Time(9), Mixed::Small(3));
        q.schedule(Time(4), Mixed::Small(1));
        q.schedule(Time(4), Mixed::Big(2));
        q.schedule_head(Time(1), Mixed::Small(0)); // a lane head: not in the calendar
        assert_eq!(q.pop(), Some((Time(1), Mixed::Small(0))));
        // The calendar now serves its bucket: 1, then the parked 2, then 3.
        assert_eq!(q.calendar_ahead(0), Some((Time(4), Mixed::Small(1))));
        assert_eq!(q.calendar_ahead(1), None, "a parked event is not shown");
        assert_eq!(q.calendar_ahead(2), Some((Time(9), Mixed::Small(3))));
        assert_eq!(q.calendar_ahead(3), None);
        assert_eq!(q.pop(), Some((Time(4), Mixed::Small(1))));
        assert_eq!(q.calendar_ahead(1), Some((Time(9), Mixed::Small(3))));
    }

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

    #[test]
    fn renumbering_the_sequence_keeps_the_order_of_waiting_events() {
        let mut q = EventQueue::new();
        q.next_seq = u32::MAX - 3;
        for i in 0..10 {
            q.schedule(Time(7), i);
        }
        q.schedule(Time(3), 100);
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec![100, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn renumbering_keeps_lane_heads_in_their_heap_and_the_order_of_everything() {
        let mut q = EventQueue::new();
        q.next_seq = u32::MAX - 4;
        q.schedule(Time(7), 1);
        q.schedule_head(Time(7), 2);
        q.schedule(Time(7), 3);
        q.schedule_head(Time(2), 4); // the counter runs out here: renumbered
        q.schedule(Time(7), 5);
        q.schedule_head(Time(7), 6);
        assert_eq!((q.heads.len(), q.keys.len()), (3, 3));
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec![4, 1, 2, 3, 5, 6]);
    }

    proptest! {
        #[test]
        fn lane_heads_and_calendar_events_pop_in_one_order_of_time_then_scheduling(
            ops in proptest::collection::vec((0u64..3_000_000_000, any::<bool>(), 0usize..3), 1..300)
        ) {
            // Each pop schedules up to 2 events at now + delta, some as lane heads.
            let mut q = EventQueue::new();
            let mut reference = std::collections::BTreeSet::new();
            let mut seq = 0u64;
            q.schedule(Time(0), seq);
            reference.insert((0u64, seq));
            for (delta, head, fanout) in ops {
                let Some((t, id)) = q.pop() else { break };
                prop_assert_eq!(Some((t.0, id)), reference.pop_first());
                for k in 0..fanout {
                    seq += 1;
                    let at = t.0 + delta / (k as u64 + 1);
                    if head && k == 0 {
                        q.schedule_head(Time(at), seq);
                    } else {
                        q.schedule(Time(at), seq);
                    }
                    reference.insert((at, seq));
                }
                prop_assert_eq!(q.peek_time().map(|t| t.0), reference.first().map(|r| r.0));
            }
            prop_assert_eq!(q.len(), reference.len());
        }

        #[test]
        fn a_sifted_queue_delivers_every_event_once_in_order_unless_dropped(
            ops in proptest::collection::vec((0u64..3_000_000_000, 0usize..3), 1..300)
        ) {
            // Events are ids; the sifter drops multiples of 3 and moves ids
            // that are 1 mod 3 by (id % 7 + 1) ms, once. Only events pushed
            // into the bucket being served escape the sifter.
            struct Rule { dropped: u32, moved: std::collections::HashMap<u32, Time> }
            impl Rule {
                fn sift(&mut self, at: Time, e: &Mixed) -> Sift {
                    let Mixed::Small(id) = *e else { return Sift::Keep };
                    match id % 3 {
                        0 => { self.dropped += 1; Sift::Drop }
                        1 if !self.moved.contains_key(&id) => {
                            let to = at + Duration::from_millis(id as u64 % 7 + 1);
                            self.moved.insert(id, to);
                            Sift::Move(to)
                        }
                        _ => Sift::Keep,
                    }
                }
            }
            let mut rule = Rule { dropped: 0, moved: Default::default() };
            let mut q = EventQueue::new();
            let mut due = std::collections::HashMap::new();
            let mut next = 0u32;
            q.schedule(Time(0), Mixed::Small(next));
            due.insert(next, Time(0));
            let mut popped = std::collections::HashSet::new();
            let mut last = Time::ZERO;
            for (delta, fanout) in ops {
                let Some((t, Mixed::Small(id))) = q.pop_sifted(|at, e| rule.sift(at, e)) else { break };
                prop_assert!(t >= last, "time never goes backwards");
                last = t;
                prop_assert!(popped.insert(id), "event {} delivered twice", id);
                let at = rule.moved.get(&id).copied().unwrap_or(due[&id]);
                prop_assert_eq!(t, at, "event {} due at {:?}", id, at);
                for k in 0..fanout {
                    next += 1;
                    let when = t + Duration(delta / (k as u64 + 1));
                    q.schedule(when, Mixed::Small(next));
                    due.insert(next, when);
                }
            }
            prop_assert_eq!(popped.len() + rule.dropped as usize + q.len(), due.len());
        }

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
        fn packed_and_parked_events_interleave_in_time_then_scheduling_order(
            evs in proptest::collection::vec((0u64..40, any::<bool>(), 0u32..1000), 1..300)
        ) {
            let mut q = EventQueue::new();
            let mut reference = Vec::new();
            for (i, &(t, small, x)) in evs.iter().enumerate() {
                let e = if small { Mixed::Small(x) } else { Mixed::Big(x as u64 + (1 << 40)) };
                q.schedule(Time(t), e);
                reference.push((t, i, e));
            }
            reference.sort();
            let out: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(t, e)| (t.0, e)).collect();
            let want: Vec<_> = reference.into_iter().map(|(t, _, e)| (t, e)).collect();
            prop_assert_eq!(out, want);
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
