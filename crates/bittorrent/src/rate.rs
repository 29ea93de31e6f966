//! Mainline 4.0.x's rate estimator (`CurrentRateMeasure.Measure`): a decaying
//! window average. On every update
//! `rate = (rate x (last - since) + bytes) / (now - since)`, then `since` is
//! clamped to at least `now - max_rate_period` (20 s by default); `since`
//! starts 5 s before creation (the "fudge"), so a new peer's rate is not inflated.

use torrentlab_engine::{Duration, Time};

/// Mainline's `max_rate_period`.
pub const MAX_RATE_PERIOD: Duration = Duration::from_secs(20);
/// Mainline's initial fudge.
pub const RATE_FUDGE: Duration = Duration::from_secs(5);

/// A transfer rate estimate in bytes per second.
#[derive(Clone, Debug)]
pub struct RateMeasure {
    period_ns: f64,
    since_ns: f64,
    last_ns: f64,
    rate: f64,
    total: u64,
}

impl RateMeasure {
    pub fn new(now: Time) -> Self {
        Self::with_period(now, MAX_RATE_PERIOD, RATE_FUDGE)
    }

    pub fn with_period(now: Time, period: Duration, fudge: Duration) -> Self {
        let t = now.as_nanos() as f64;
        let since = t - fudge.as_nanos() as f64;
        RateMeasure { period_ns: period.as_nanos() as f64, since_ns: since, last_ns: since, rate: 0.0, total: 0 }
    }

    /// Records `bytes` transferred at `now`.
    pub fn update(&mut self, now: Time, bytes: u64) {
        self.total += bytes;
        let t = now.as_nanos() as f64;
        let span = t - self.since_ns;
        if span > 0.0 {
            self.rate = (self.rate * (self.last_ns - self.since_ns) + bytes as f64 * 1e9) / span;
        }
        self.last_ns = t;
        self.since_ns = self.since_ns.max(t - self.period_ns);
    }

    /// The rate at `now`, bytes per second.
    pub fn rate(&mut self, now: Time) -> f64 {
        self.update(now, 0);
        self.rate
    }

    /// Bytes recorded so far.
    pub fn total(&self) -> u64 {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: u64) -> Time {
        Time(x * 1_000_000_000)
    }

    #[test]
    fn a_steady_transfer_converges_to_its_rate() {
        let mut m = RateMeasure::new(s(0));
        for t in 1..=200 {
            m.update(s(t), 20_000);
        }
        // Each step is (20 r + bytes) / 21 once the window is full: geometric convergence.
        assert!((m.rate(s(200)) - 20_000.0).abs() < 20.0, "{}", m.rate(s(200)));
        assert_eq!(m.total(), 4_000_000);
    }

    #[test]
    fn the_fudge_keeps_a_new_peers_first_bytes_from_looking_fast() {
        let mut m = RateMeasure::new(s(0));
        m.update(s(1), 16_384);
        // 16 KiB over the 5 s fudge plus 1 s, not over 1 s.
        assert!((m.rate(s(1)) - 16_384.0 / 6.0).abs() < 1.0);
    }

    #[test]
    fn after_a_stop_the_rate_decays_over_the_20_s_window() {
        let mut m = RateMeasure::new(s(0));
        for t in 1..=40 {
            m.update(s(t), 10_000);
        }
        let at_40 = m.rate(s(40));
        let at_50 = m.rate(s(50));
        let at_80 = m.rate(s(80));
        // rate(50) = rate(40) x (40 - 20) / (50 - 20); rate(80) = rate(50) x (50 - 30) / (80 - 30).
        assert!((at_50 - at_40 * 2.0 / 3.0).abs() < 1e-6, "{at_40} -> {at_50}");
        assert!((at_80 - at_50 * 0.4).abs() < 1e-6, "{at_50} -> {at_80}");
    }
}
