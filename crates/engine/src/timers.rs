//! Re-armable timers: at most one pending deadline per timer id, moved or
//! cancelled in O(1).
//!
//! A transport endpoint's deadline moves on almost every packet (each ACK
//! pushes the retransmission timeout later). In a heap that leaves stale
//! entries, and firing them early costs a no-op event each. A timing wheel
//! (Varghese and Lauck, 1987) moves an entry instead: slots of `2^shift` ns in
//! a ring of `2^bits` slots, a bitmap of occupied slots, and an overflow list
//! for deadlines beyond the ring. Each entry carries a sequence number from the
//! caller's event queue, so timers and queued events share one total order
//! (time, then sequence).

use crate::time::Time;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    at: Time,
    seq: u64,
    /// Ring slot (index into `slots`), `OVERFLOW`, or `NONE` when not armed.
    slot: u32,
    /// Position in its slot's (or the overflow) list.
    pos: u32,
}

const OVERFLOW: u32 = u32::MAX - 1;

/// A timing wheel of re-armable timers, ids `0..`.
pub struct TimerWheel {
    shift: u32,
    mask: u64,
    slots: Vec<Vec<u32>>,
    occupied: Vec<u64>,
    overflow: Vec<u32>,
    entries: Vec<Entry>,
    /// Absolute slot number (time >> shift) of the earliest armed deadline
    /// possible: no armed entry is earlier.
    base: u64,
    armed: usize,
}

impl TimerWheel {
    /// Slots of `2^shift` ns, `2^bits` of them.
    pub fn new(shift: u32, bits: u32) -> Self {
        let n = 1usize << bits;
        TimerWheel {
            shift,
            mask: n as u64 - 1,
            slots: (0..n).map(|_| Vec::new()).collect(),
            occupied: vec![0; n.div_ceil(64)],
            overflow: Vec::new(),
            entries: Vec::new(),
            base: 0,
            armed: 0,
        }
    }

    /// Timers armed.
    pub fn len(&self) -> usize {
        self.armed
    }

    pub fn is_empty(&self) -> bool {
        self.armed == 0
    }

    /// The deadline of timer `id`, if armed.
    pub fn deadline(&self, id: u32) -> Option<Time> {
        self.entries.get(id as usize).filter(|e| e.slot != NONE).map(|e| e.at)
    }

    fn unlink(&mut self, id: u32) {
        let e = self.entries[id as usize];
        if e.slot == NONE {
            return;
        }
        let list = if e.slot == OVERFLOW { &mut self.overflow } else { &mut self.slots[e.slot as usize] };
        list.swap_remove(e.pos as usize);
        if let Some(&moved) = list.get(e.pos as usize) {
            self.entries[moved as usize].pos = e.pos;
        }
        if e.slot != OVERFLOW && list.is_empty() {
            self.occupied[e.slot as usize / 64] &= !(1 << (e.slot % 64));
        }
        self.entries[id as usize].slot = NONE;
        self.armed -= 1;
    }

    fn link(&mut self, id: u32) {
        let e = &mut self.entries[id as usize];
        let abs = e.at.0 >> self.shift;
        debug_assert!(abs >= self.base, "a timer before the wheel's time");
        let (slot, list) = if abs <= self.base + self.mask {
            let s = (abs & self.mask) as usize;
            self.occupied[s / 64] |= 1 << (s % 64);
            (s as u32, &mut self.slots[s])
        } else {
            (OVERFLOW, &mut self.overflow)
        };
        e.slot = slot;
        e.pos = list.len() as u32;
        list.push(id);
        self.armed += 1;
    }

    /// Arms timer `id` at `at` (moving it if armed) with sequence `seq`, or
    /// cancels it (`None`). `at` must not be before the last popped deadline.
    pub fn set(&mut self, id: u32, at: Option<Time>, seq: u64) {
        if self.entries.len() <= id as usize {
            self.entries.resize(id as usize + 1, Entry { at: Time::ZERO, seq: 0, slot: NONE, pos: 0 });
        }
        self.unlink(id);
        if let Some(at) = at {
            let e = &mut self.entries[id as usize];
            e.at = at;
            e.seq = seq;
            self.link(id);
        }
    }

    /// The earliest armed timer: (deadline, sequence, id).
    pub fn peek(&self) -> Option<(Time, u64, u32)> {
        if self.armed == 0 {
            return None;
        }
        // Every overflow entry is later than every ring entry (see `advance_to`).
        let list = match self.first_occupied() {
            Some(s) => &self.slots[s],
            None => &self.overflow,
        };
        let mut best = (Time(u64::MAX), u64::MAX, NONE);
        for &id in list {
            let e = &self.entries[id as usize];
            if (e.at, e.seq) < (best.0, best.1) {
                best = (e.at, e.seq, id);
            }
        }
        Some(best)
    }

    /// Moves `base` forward and pulls overflow entries that now fit the ring,
    /// keeping every overflow entry later than every ring entry.
    fn advance_to(&mut self, abs: u64) {
        debug_assert!(abs >= self.base);
        self.base = abs;
        let limit = self.base + self.mask;
        let mut i = 0;
        while i < self.overflow.len() {
            let id = self.overflow[i];
            if self.entries[id as usize].at.0 >> self.shift <= limit {
                self.unlink(id);
                self.link(id);
            } else {
                i += 1;
            }
        }
    }

    /// The first occupied ring slot at or after `base`, in ring order.
    fn first_occupied(&self) -> Option<usize> {
        let n = self.slots.len();
        let start = (self.base & self.mask) as usize;
        let words = self.occupied.len();
        // Scan words from start's word, wrapping once.
        for k in 0..=words {
            let w = (start / 64 + k) % words;
            let mut bits = self.occupied[w];
            if k == 0 {
                bits &= !0u64 << (start % 64);
            } else if k == words {
                bits &= (1u64 << (start % 64)).wrapping_sub(1);
            }
            if bits != 0 {
                let s = w * 64 + bits.trailing_zeros() as usize;
                if s < n {
                    return Some(s);
                }
            }
        }
        None
    }

    /// Removes and returns the earliest timer. The wheel's time moves to its
    /// deadline: later `set`s must not be earlier.
    pub fn pop(&mut self) -> Option<(Time, u64, u32)> {
        let best = self.peek()?;
        self.unlink(best.2);
        let abs = best.0 .0 >> self.shift;
        if abs > self.base {
            self.advance_to(abs);
        }
        Some(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn timers_fire_in_deadline_order_and_a_moved_timer_fires_once_at_its_new_time() {
        let mut w = TimerWheel::new(10, 4); // 1024 ns slots, 16 of them
        w.set(0, Some(Time(5_000)), 1);
        w.set(1, Some(Time(3_000)), 2);
        w.set(2, Some(Time(1_000_000)), 3); // beyond the ring: overflow
        w.set(1, Some(Time(7_000)), 4); // moved later
        w.set(0, None, 5); // cancelled
        assert_eq!(w.len(), 2);
        assert_eq!(w.pop(), Some((Time(7_000), 4, 1)));
        assert_eq!(w.pop(), Some((Time(1_000_000), 3, 2)));
        assert_eq!(w.pop(), None);
    }

    #[test]
    fn equal_deadlines_fire_in_sequence_order() {
        let mut w = TimerWheel::new(10, 4);
        w.set(3, Some(Time(2_000)), 9);
        w.set(1, Some(Time(2_000)), 4);
        w.set(2, Some(Time(2_000)), 7);
        let order: Vec<u32> = std::iter::from_fn(|| w.pop().map(|x| x.2)).collect();
        assert_eq!(order, vec![1, 2, 3]);
    }

    proptest! {
        #[test]
        fn the_wheel_pops_like_a_sorted_reference_under_random_re_arming(
            ops in proptest::collection::vec((0u32..12, proptest::option::of(0u64..50_000), any::<bool>()), 1..300)
        ) {
            let mut w = TimerWheel::new(8, 5); // 256 ns slots, 32 of them: plenty of overflow
            let mut reference: std::collections::BTreeMap<u32, (Time, u64)> = Default::default();
            let (mut now, mut seq) = (0u64, 0u64);
            for (id, delta, pop) in ops {
                if pop {
                    let expected = reference.iter().map(|(&i, &(t, s))| (t, s, i)).min();
                    let got = w.pop();
                    prop_assert_eq!(got, expected);
                    if let Some((t, _, i)) = got {
                        now = t.0;
                        reference.remove(&i);
                    }
                } else {
                    seq += 1;
                    let at = delta.map(|d| Time(now + d));
                    w.set(id, at, seq);
                    match at {
                        Some(t) => { reference.insert(id, (t, seq)); }
                        None => { reference.remove(&id); }
                    }
                }
                prop_assert_eq!(w.len(), reference.len());
            }
        }
    }
}
