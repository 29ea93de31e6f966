//! [`Timer`]: one owner's timer in the event queue, with lazy cancellation.
//!
//! An entity (a TCP endpoint, a client) has one deadline at a time. Events
//! cannot be taken out of the queue, so arming an earlier deadline queues a
//! new event under a new generation and the old one finds itself stale when
//! it fires. A deadline that moved later keeps the queued event: one queue
//! operation per timeout period, not per ACK.
//!
//! An event carries only the low 8 bits of its generation (a [`Tag`]), so that
//! it packs into its queue key with its owner's index. It is the queued one
//! when its tag matches and the queued deadline is not after the time it
//! fires. A stale event can pass both only when it fires at the same instant
//! as the queued one and 256 generations have gone by while it waited; it
//! then does at that instant what the queued one would have done there, and
//! the queued one finds itself stale.
//!
//! Most stale and moved events never reach their owner: when the queue moves
//! on to their bucket of time, [`Timer::sift`] drops or moves them there
//! ([`torrentlab_engine::EventQueue::pop_sifted`]).

use torrentlab_engine::{Sift, Time};

/// The low 8 bits of a timer's generation: what its queued event carries.
pub(crate) type Tag = u8;

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
    /// Notes the owner's deadline (`None`: none). Returns the tag to queue an
    /// event with at that deadline (or now, if it has passed) when it is
    /// earlier than the event already queued.
    #[inline]
    pub fn arm(&mut self, deadline: Option<Time>) -> Option<Tag> {
        let d = deadline.unwrap_or(NEVER);
        self.want = d;
        if d < self.at {
            self.gen = self.gen.wrapping_add(1);
            self.at = d;
            Some(self.gen as Tag)
        } else {
            None
        }
    }

    /// A timer for a new owner of `prev`'s place: nothing queued, and its
    /// generations go on from `prev`'s, so that an event `prev` left queued
    /// (superseded, hence stale) does not match the new owner's.
    pub fn after(prev: &Timer) -> Timer {
        Timer { gen: prev.gen, ..Timer::default() }
    }

    /// The queued event of this timer, if any, has fired or been dropped
    /// (stale events superseded by it may still wait in the queue).
    #[inline]
    pub fn idle(&self) -> bool {
        self.at == NEVER
    }

    /// Whether an event with `tag` firing at `now` is the queued one. The
    /// queued event fires at its deadline `at` or, if that had passed when it
    /// was queued, later; so never before `at`.
    #[inline]
    fn queued(&self, tag: Tag, now: Time) -> bool {
        self.gen as Tag == tag && self.at <= now
    }

    /// An event with `tag` fired at `now`: true if it is the queued one (then
    /// nothing is queued any more), false if it is stale.
    #[inline]
    pub fn fire(&mut self, tag: Tag, now: Time) -> bool {
        if !self.queued(tag, now) {
            return false;
        }
        self.at = NEVER;
        true
    }

    /// What the queue should do, before its turn, with the event `tag`
    /// queued for `at`, for owners whose every deadline change goes through
    /// [`Timer::arm`] (those that use [`Timer::fire_following`]): drop it if
    /// it was superseded or the deadline has gone, move it to the deadline if
    /// that moved later, keep it if it is due at `at` as things stand.
    ///
    /// The timer then goes on as if the event had been queued where it now
    /// is: after a drop, the next [`Timer::arm`] queues a new event; after a
    /// move, an earlier deadline supersedes it. The deadlines met are those
    /// `fire_following` would have met at `at`; only the order among events
    /// at the very same nanosecond can differ.
    ///
    /// A superseded tag is dropped even though, 256 generations on, the tag
    /// could match again: the old event would then fire at the same instant
    /// as the queued one and do what the queued one does (see the module
    /// docs), which the queued one now does itself.
    #[inline]
    pub fn sift(&mut self, tag: Tag, at: Time) -> Sift {
        if self.gen as Tag != tag {
            return Sift::Drop;
        }
        // Not the queued event (tags wrapped: the handler decides), or due.
        if self.at != at || self.want <= at {
            return Sift::Keep;
        }
        // As `fire_following` follows it: later, or gone (`NEVER`).
        self.at = self.want;
        if self.want == NEVER {
            Sift::Drop
        } else {
            Sift::Move(self.want)
        }
    }

    /// Like [`Timer::fire`], for owners whose every deadline change goes
    /// through [`Timer::arm`]: a deadline that moved later (or went away) is
    /// followed without waking the owner (the event is queued again at the
    /// new deadline with the same tag).
    #[inline]
    pub fn fire_following(&mut self, tag: Tag, now: Time) -> Firing {
        if !self.queued(tag, now) {
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
        assert!(t.fire(g2, Time(50)));
        assert!(!t.fire(g1, Time(100)), "superseded");
        assert_eq!(t.arm(Some(Time(150))), Some(g2 + 1), "after firing, any deadline queues");
    }

    #[test]
    fn a_timer_for_a_reused_place_ignores_the_events_its_predecessor_left_queued() {
        let mut old = Timer::default();
        let stale = old.arm(Some(Time(100))).unwrap();
        let g = old.arm(Some(Time(50))).unwrap();
        assert!(old.fire(g, Time(50)));
        assert!(old.idle(), "its queued event fired; the superseded one still waits");
        let mut new = Timer::after(&old);
        assert!(new.idle());
        let tag = new.arm(Some(Time(100))).unwrap();
        assert_ne!(tag, stale, "a fresh timer would have reused the stale tag");
        assert!(!new.fire(stale, Time(100)), "the predecessor's event is stale");
        assert!(new.fire(tag, Time(100)));
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

    #[test]
    fn a_stale_event_at_the_same_instant_as_the_queued_one_is_told_apart_by_its_tag() {
        // RTO at 100 queued; a delayed ACK at 40 supersedes it; once that has
        // fired, the RTO at 100 is queued again: two events at 100.
        let mut t = Timer::default();
        let old = t.arm(Some(Time(100))).unwrap();
        let ack = t.arm(Some(Time(40))).unwrap();
        assert!(t.fire(ack, Time(40)));
        let new = t.arm(Some(Time(100))).unwrap();
        assert_ne!(old, new);
        assert!(!t.fire(old, Time(100)), "the superseded event at the same instant is stale");
        assert!(t.fire(new, Time(100)));
    }

    #[test]
    fn a_sift_drops_a_superseded_event_and_keeps_a_due_one() {
        let mut t = Timer::default();
        let old = t.arm(Some(Time(100))).unwrap();
        let new = t.arm(Some(Time(40))).unwrap();
        assert_eq!(t.sift(old, Time(100)), Sift::Drop);
        assert_eq!(t.sift(new, Time(40)), Sift::Keep);
        assert_eq!(t.fire_following(new, Time(40)), Firing::Due, "a kept event fires as before");
    }

    #[test]
    fn a_sift_moves_an_event_whose_deadline_moved_later_and_it_is_then_due_there() {
        let mut t = Timer::default();
        let g = t.arm(Some(Time(100))).unwrap();
        assert_eq!(t.arm(Some(Time(250))), None);
        assert_eq!(t.sift(g, Time(100)), Sift::Move(Time(250)));
        assert_eq!(t.arm(Some(Time(300))), None, "the moved event is the queued one");
        assert_eq!(t.sift(g, Time(250)), Sift::Move(Time(300)));
        assert_eq!(t.fire_following(g, Time(300)), Firing::Due);
    }

    #[test]
    fn a_sift_drops_an_event_whose_deadline_has_gone_and_the_next_deadline_queues_afresh() {
        let mut t = Timer::default();
        let g = t.arm(Some(Time(100))).unwrap();
        t.arm(None);
        assert_eq!(t.sift(g, Time(100)), Sift::Drop);
        let again = t.arm(Some(Time(120))).expect("nothing is queued: a later deadline queues an event");
        assert_ne!(again, g);
        assert_eq!(t.fire_following(g, Time(100)), Firing::Stale, "the dropped tag is no longer the queued one");
        assert_eq!(t.fire_following(again, Time(120)), Firing::Due);
    }

    #[test]
    fn an_event_queued_late_for_a_passed_deadline_is_still_the_queued_one() {
        let mut t = Timer::default();
        let g = t.arm(Some(Time(10))).unwrap();
        // The owner queues it at now = 25 (the deadline had passed).
        assert_eq!(t.fire_following(g, Time(25)), Firing::Due);
    }

    #[test]
    fn tags_wrap_after_256_generations_and_an_early_stale_event_stays_stale() {
        let mut t = Timer::default();
        let first = t.arm(Some(Time(1_000))).unwrap();
        for i in 0..255u64 {
            let g = t.arm(Some(Time(10 + i))).unwrap();
            assert!(t.fire(g, Time(10 + i)));
        }
        let again = t.arm(Some(Time(2_000))).unwrap();
        assert_eq!(again, first, "the tag has wrapped");
        assert!(!t.fire(first, Time(1_000)), "the old event fires before the queued deadline: stale");
        assert!(t.fire(again, Time(2_000)));
    }
}
