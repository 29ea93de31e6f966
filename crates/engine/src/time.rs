//! Simulated time as integer nanoseconds.
//!
//! `u64` nanoseconds cover 584 years of simulated time, far beyond any run.

use std::fmt;

use serde::{Deserialize, Serialize};
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time, in nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Time(pub u64);

/// A span of simulated time, in nanoseconds (serialised as a number of ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Duration(pub u64);

impl Time {
    /// The start of every run.
    pub const ZERO: Time = Time(0);
    /// A time later than any event of any run; used as "never".
    pub const MAX: Time = Time(u64::MAX);

    /// Nanoseconds since the start of the run.
    #[inline]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Seconds since the start of the run, for reporting only.
    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// The span from `earlier` to `self`, or zero if `earlier` is later.
    #[inline]
    pub fn saturating_since(self, earlier: Time) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, clamped at [`Time::MAX`].
    #[inline]
    pub fn saturating_add(self, d: Duration) -> Time {
        Time(self.0.saturating_add(d.0))
    }

    /// The earlier of two optional deadlines (`None`: no deadline).
    #[inline]
    pub fn earliest(a: Option<Time>, b: Option<Time>) -> Option<Time> {
        match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, None) => x,
            (None, y) => y,
        }
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const MAX: Duration = Duration(u64::MAX);

    #[inline]
    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    #[inline]
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    #[inline]
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    #[inline]
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    /// Rounds to the nearest nanosecond; negative or NaN inputs give zero.
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_nan() || s <= 0.0 {
            Duration(0)
        } else {
            Duration((s * 1e9).round().min(u64::MAX as f64) as u64)
        }
    }
    #[inline]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Whole microseconds (rounded down).
    #[inline]
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }
    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    #[inline]
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    #[inline]
    pub fn saturating_mul(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
    #[inline]
    pub fn saturating_sub(self, other: Duration) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }

    /// Time to serialise `bytes` onto a link of `bits_per_second`, rounded up to
    /// the next nanosecond: `ceil(bytes * 8 * 1e9 / rate)`.
    #[inline]
    pub fn serialization(bytes: u64, bits_per_second: u64) -> Duration {
        debug_assert!(bits_per_second > 0);
        let num = bytes as u128 * 8_000_000_000u128;
        let rate = bits_per_second as u128;
        Duration(num.div_ceil(rate) as u64)
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    #[inline]
    fn add(self, d: Duration) -> Time {
        Time(self.0 + d.0)
    }
}

impl AddAssign<Duration> for Time {
    #[inline]
    fn add_assign(&mut self, d: Duration) {
        self.0 += d.0;
    }
}

impl Sub<Time> for Time {
    type Output = Duration;
    /// Panics in debug builds if `rhs` is later than `self`.
    #[inline]
    fn sub(self, rhs: Time) -> Duration {
        debug_assert!(rhs.0 <= self.0, "time subtraction went negative");
        Duration(self.0 - rhs.0)
    }
}

impl Add for Duration {
    type Output = Duration;
    #[inline]
    fn add(self, d: Duration) -> Duration {
        Duration(self.0 + d.0)
    }
}

impl AddAssign for Duration {
    #[inline]
    fn add_assign(&mut self, d: Duration) {
        self.0 += d.0;
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9} s", self.as_secs_f64())
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= 1_000_000_000 {
            write!(f, "{} s", self.as_secs_f64())
        } else if self.0 >= 1_000_000 {
            write!(f, "{} ms", self.as_millis_f64())
        } else {
            write!(f, "{} ns", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_of_two_deadlines_ignores_a_missing_one() {
        assert_eq!(Time::earliest(Some(Time(5)), Some(Time(3))), Some(Time(3)));
        assert_eq!(Time::earliest(None, Some(Time(3))), Some(Time(3)));
        assert_eq!(Time::earliest(Some(Time(5)), None), Some(Time(5)));
        assert_eq!(Time::earliest(None, None), None);
    }

    #[test]
    fn serialization_of_a_1500_byte_packet_at_10_mbit_per_s_takes_1_2_ms() {
        assert_eq!(Duration::serialization(1500, 10_000_000), Duration::from_micros(1200));
    }

    #[test]
    fn serialization_rounds_up_to_the_next_nanosecond() {
        // 1 byte at 3 bit/s = 8/3 s = 2.666...e9 ns -> rounded up.
        assert_eq!(Duration::serialization(1, 3).0, 2_666_666_667);
    }

    #[test]
    fn from_secs_f64_rounds_to_nanoseconds_and_clamps_negatives_to_zero() {
        assert_eq!(Duration::from_secs_f64(0.025), Duration::from_millis(25));
        assert_eq!(Duration::from_secs_f64(-1.0), Duration::ZERO);
        assert_eq!(Duration::from_secs_f64(f64::NAN), Duration::ZERO);
    }

    #[test]
    fn saturating_since_never_goes_negative() {
        assert_eq!(Time(5).saturating_since(Time(9)), Duration::ZERO);
        assert_eq!(Time(9).saturating_since(Time(5)), Duration(4));
    }
}
