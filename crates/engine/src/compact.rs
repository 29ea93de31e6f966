//! Optional values in 8 bytes.
//!
//! `Option<u64>`, `Option<Time>` and `Option<Duration>` take 16 bytes each,
//! as a `u64` has no spare bit pattern for `None`. A swarm keeps tens of
//! thousands of TCP endpoints, and every packet reads one of them from memory
//! that is no longer in cache, so the bytes of that state are the cache lines
//! a packet waits for. These types give up the one value no run reaches,
//! `u64::MAX` (584 years in ns, or a byte offset of 16 EiB), to mean none.

use std::fmt;

use crate::time::{Duration, Time};

macro_rules! compact_option {
    ($(#[$doc:meta])* $name:ident, $t:ty, $wrap:expr, $unwrap:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name(u64);

        impl $name {
            pub const NONE: $name = $name(u64::MAX);

            /// `Some(v)`. `v` must not be the one value kept for none.
            #[inline]
            pub fn some(v: $t) -> Self {
                let raw: u64 = $unwrap(v);
                debug_assert!(raw != u64::MAX, "{} cannot hold u64::MAX", stringify!($name));
                $name(raw)
            }

            #[inline]
            pub fn get(self) -> Option<$t> {
                (self.0 != u64::MAX).then(|| $wrap(self.0))
            }

            #[inline]
            pub fn is_some(self) -> bool {
                self.0 != u64::MAX
            }

            #[inline]
            pub fn is_none(self) -> bool {
                self.0 == u64::MAX
            }

            /// The smaller of two values, none counting as later than any:
            /// the earlier of two optional deadlines, without a branch.
            #[inline]
            pub fn earliest(self, other: Self) -> Self {
                $name(self.0.min(other.0))
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::NONE
            }
        }

        impl From<Option<$t>> for $name {
            #[inline]
            fn from(v: Option<$t>) -> Self {
                v.map_or(Self::NONE, Self::some)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.get().fmt(f)
            }
        }
    };
}

compact_option!(
    /// An `Option<u64>` in 8 bytes (`u64::MAX` is none).
    OptU64,
    u64,
    |x| x,
    |v| v
);
compact_option!(
    /// An `Option<Time>` in 8 bytes ([`Time::MAX`] is none).
    OptTime,
    Time,
    Time,
    |t: Time| t.0
);
compact_option!(
    /// An `Option<Duration>` in 8 bytes ([`Duration::MAX`] is none).
    OptDuration,
    Duration,
    Duration,
    |d: Duration| d.0
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_compact_option_round_trips_and_takes_8_bytes() {
        assert_eq!(std::mem::size_of::<OptTime>(), 8);
        for v in [None, Some(Time::ZERO), Some(Time(123))] {
            assert_eq!(OptTime::from(v).get(), v);
            assert_eq!(format!("{:?}", OptTime::from(v)), format!("{v:?}"));
        }
        assert_eq!(OptDuration::from(Some(Duration(7))).get(), Some(Duration(7)));
        assert!(OptU64::default().is_none() && OptU64::some(0).is_some());
    }

    #[test]
    fn earliest_is_the_earlier_deadline_and_none_only_when_both_are_none() {
        let (a, b, none) = (OptTime::some(Time(5)), OptTime::some(Time(9)), OptTime::NONE);
        for (x, y, want) in [(a, b, a), (b, a, a), (a, none, a), (none, b, b), (none, none, none)] {
            assert_eq!(x.earliest(y), want);
            assert_eq!(x.earliest(y).get(), Time::earliest(x.get(), y.get()), "agrees with Time::earliest");
        }
    }

    #[test]
    #[should_panic(expected = "cannot hold")]
    #[cfg(debug_assertions)]
    fn the_value_kept_for_none_is_refused() {
        OptTime::some(Time::MAX);
    }
}
