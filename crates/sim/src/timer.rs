//! [`Timer`]: one owner's timer in the event queue, with lazy cancellation.
//!
//! An entity (a TCP endpoint, a client) has one deadline at a time. Events
//! cannot be taken out of the queue, so arming an earlier deadline queues a
//! new event under a new generation and the old one finds itself stale when
//! it fires. A deadline that moved later keeps the queued event: one queue
//! operation per timeout period, not per ACK.

use torrentlab_engine::Time;

/// No deadline.
pub(crate) const NEVER: Time = Time(u64::MAX);

/// `at`: when the queued event fires (`NEVER`: none queued); `want`: the
/// owner's deadline as last armed, which may be later than `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Timer {
    at: Time,
    want: Time,
    gen: u32,
}

impl Default for Timer {
    fn default() -> Self {
        Timer { at: NEVER, want: NEVER, gen: 0 }
    }
}

/// What a fired timer event means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Firing {
    /// Superseded by an earlier event, or nothing is wanted any more.
    Stale,
    /// The owner's deadline has come: handle it.
    Due,
    /// The deadline moved later since the event was queued: queue it again
    /// at this time under the same generation.
    Moved(Time),
}

impl Timer {
    /// Notes the owner's deadline (`None`: none). Returns the generation to
    /// queue an event with at that deadline when it is earlier than the event
    /// already queued.
    #[inline]
    pub fn arm(&mut self, deadline: Option<Time>) -> Option<u32> {
        let d = deadline.unwrap_or(NEVER);
        self.want = d;
        if d < self.at {
            self.gen = self.gen.wrapping_add(1);
            self.at = d;
            Some(self.gen)
        } else {
            None
        }
    }

    /// An event of generation `gen` fired: true if it is the queued one
    /// (then nothing is queued any more), false if it is stale.
    #[inline]
    pub fn fire(&mut self, gen: u32) -> bool {
        if gen != self.gen {
            return false;
        }
        self.at = NEVER;
        true
    }

    /// Like [`Timer::fire`], for owners whose every deadline change goes
    /// through [`Timer::arm`]: a deadline that moved later (or went away) is
    /// followed without waking the owner.
    #[inline]
    pub fn fire_following(&mut self, gen: u32, now: Time) -> Firing {
        if gen != self.gen {
            return Firing::Stale;
        }
        if self.want > now {
            self.at = self.want;
            return if self.want == NEVER { Firing::Stale } else { Firing::Moved(self.want) };
        }
        self.at = NEVER;
        Firing::Due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_earlier_deadline_queues_a_new_event_and_the_old_one_goes_stale() {
        let mut t = Timer::default();
        let g1 = t.arm(Some(Time(100))).expect("first deadline");
        assert_eq!(t.arm(Some(Time(150))), None, "later: the queued event stays");
        let g2 = t.arm(Some(Time(50))).expect("earlier: a new event");
        assert!(!t.fire(g1));
        assert!(t.fire(g2));
        assert_eq!(t.arm(Some(Time(150))), Some(g2 + 1), "after firing, any deadline queues");
    }

    #[test]
    fn a_following_timer_moves_with_a_later_deadline_and_drops_a_vanished_one() {
        let mut t = Timer::default();
        let g = t.arm(Some(Time(100))).unwrap();
        t.arm(Some(Time(300)));
        assert_eq!(t.fire_following(g, Time(100)), Firing::Moved(Time(300)));
        assert_eq!(t.fire_following(g, Time(300)), Firing::Due);
        let g = t.arm(Some(Time(400))).unwrap();
        t.arm(None);
        assert_eq!(t.fire_following(g, Time(400)), Firing::Stale);
        assert_eq!(t.arm(Some(Time(500))), Some(g + 1), "nothing queued after a vanished deadline");
    }
}
