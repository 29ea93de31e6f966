//! LEDBAT in the form of the early IETF draft (draft-shalunov-ledbat-congestion)
//! as Rossi et al. (ICCCN 2010) simulate it, riding on TCP's reliability (as
//! ns-3's `TcpLedbat` does):
//!
//! * `queuing_delay = current one-way delay - base delay`, the base being the
//!   minimum one-way delay ever observed (or, optionally, a minimum over
//!   one-minute buckets as RFC 6817 later specified);
//! * `off_target = (TARGET - queuing_delay) / TARGET`;
//! * per ACK: `cwnd += GAIN_x * off_target * bytes_acked * MSS / cwnd`, i.e. in
//!   packets `+ off_target / cwnd` per acknowledged packet with the default
//!   `GAIN = 1/TARGET`: at most one packet per RTT when the queue is empty, and
//!   minus one packet per RTT when the queuing delay is twice the target;
//! * halve on loss; optional TCP slow start; a floor of `min_cwnd` packets.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

use torrentlab_engine::{Duration, Time};

use super::newreno::reno_increase;
use super::{grow, AckSample, CongestionControl, Window};

/// LEDBAT parameters. `Default` is the E4 (early draft) form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LedbatConfig {
    /// TARGET queuing delay (draft: 25 ms).
    pub target: Duration,
    /// Gain as a multiple of `1/TARGET` (1.0 = the draft's `GAIN = 1/TARGET`).
    pub gain: f64,
    /// Window floor in packets.
    pub min_cwnd: u32,
    /// Number of recent delay samples whose minimum is the "current" delay
    /// (the draft's CURRENT_FILTER; 1 = the latest sample).
    pub current_filter: usize,
    /// `None`: base delay = minimum ever observed. `Some((n, interval))`: minimum
    /// over the last `n` intervals (RFC 6817: 10 one-minute buckets).
    pub base_history: Option<(usize, Duration)>,
}

impl Default for LedbatConfig {
    fn default() -> Self {
        LedbatConfig {
            target: Duration::from_millis(25),
            gain: 1.0,
            min_cwnd: 1,
            current_filter: 1,
            base_history: None,
        }
    }
}

/// The LEDBAT controller.
#[derive(Clone, Debug)]
pub struct Ledbat {
    cfg: LedbatConfig,
    /// Minima of one-way delay, one per bucket, oldest first.
    base: VecDeque<Duration>,
    bucket_start: Option<Time>,
    current: VecDeque<Duration>,
    /// Sub-byte remainder of window growth, so small increments add up exactly.
    frac: f64,
    acked_in_ca: u64,
}

impl Ledbat {
    pub fn new(cfg: LedbatConfig) -> Self {
        assert!(cfg.current_filter >= 1);
        Ledbat { cfg, base: VecDeque::new(), bucket_start: None, current: VecDeque::new(), frac: 0.0, acked_in_ca: 0 }
    }

    /// Base delay: the minimum one-way delay in the history.
    pub fn base_delay(&self) -> Option<Duration> {
        self.base.iter().min().copied()
    }

    fn current_delay(&self) -> Option<Duration> {
        self.current.iter().min().copied()
    }

    fn update_base(&mut self, now: Time, owd: Duration) {
        match self.cfg.base_history {
            None => match self.base.front_mut() {
                Some(b) => *b = (*b).min(owd),
                None => self.base.push_back(owd),
            },
            Some((n, interval)) => {
                let rolled = self.bucket_start.is_none_or(|s| now.saturating_since(s) >= interval);
                if rolled {
                    self.bucket_start = Some(now);
                    if self.base.len() == n {
                        self.base.pop_front();
                    }
                    self.base.push_back(owd);
                } else if let Some(last) = self.base.back_mut() {
                    *last = (*last).min(owd);
                }
            }
        }
    }
}

impl CongestionControl for Ledbat {
    fn name(&self) -> &'static str {
        "ledbat"
    }

    fn on_sample(&mut self, s: &AckSample) {
        let Some(owd) = s.one_way_delay else { return };
        self.update_base(s.now, owd);
        if self.current.len() == self.cfg.current_filter {
            self.current.pop_front();
        }
        self.current.push_back(owd);
    }

    fn on_ack(&mut self, w: &mut Window, s: &AckSample) {
        if w.in_slow_start() {
            reno_increase(w, s.bytes_acked, &mut self.acked_in_ca);
            return;
        }
        let Some(qd) = self.queuing_delay() else {
            // No delay measurement yet: behave like Reno (as ns-3 does).
            reno_increase(w, s.bytes_acked, &mut self.acked_in_ca);
            return;
        };
        let target = self.cfg.target.0 as f64;
        let off_target = (target - qd.0 as f64) / target;
        let mss = w.mss as f64;
        let delta = self.cfg.gain * off_target * s.bytes_acked as f64 * mss / w.cwnd as f64;
        grow(w, delta, &mut self.frac, self.cfg.min_cwnd as u64 * w.mss as u64);
        // Once in congestion avoidance, a window LEDBAT shrank must not slow-start
        // back up: ssthresh follows it down (as ns-3's TcpLedbat does).
        w.ssthresh = w.ssthresh.min(w.cwnd);
    }

    /// Halve on loss (not below the floor).
    fn ssthresh_after_loss(&mut self, w: &Window, _flight: u64) -> u64 {
        self.frac = 0.0;
        (w.cwnd / 2).max(self.cfg.min_cwnd as u64 * w.mss as u64)
    }

    fn on_timeout(&mut self, w: &mut Window, flight: u64) {
        self.frac = 0.0;
        w.ssthresh = (flight / 2).max(2 * w.mss as u64);
        w.cwnd = self.loss_window(w);
    }

    fn loss_window(&self, w: &Window) -> u64 {
        (self.cfg.min_cwnd.max(1) as u64) * w.mss as u64
    }

    fn queuing_delay(&self) -> Option<Duration> {
        Some(self.current_delay()?.saturating_sub(self.base_delay()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn sample(now_ms: u64, owd_ms: u64) -> AckSample {
        AckSample {
            now: Time(now_ms * 1_000_000),
            bytes_acked: MSS as u64,
            rtt: None,
            one_way_delay: Some(Duration::from_millis(owd_ms)),
            ..AckSample::default()
        }
    }

    /// Acks one full window of packets, each with one-way delay `owd_ms`.
    fn one_rtt(l: &mut Ledbat, w: &mut Window, owd_ms: u64) {
        let n = w.cwnd / MSS as u64;
        for _ in 0..n {
            let s = sample(0, owd_ms);
            l.on_sample(&s);
            l.on_ack(w, &s);
        }
    }

    fn ca_window(packets: u64) -> Window {
        Window { cwnd: packets * MSS as u64, ssthresh: 0, mss: MSS }
    }

    #[test]
    fn with_an_empty_queue_the_window_grows_by_at_most_one_packet_per_rtt() {
        let mut l = Ledbat::new(LedbatConfig::default());
        let mut w = ca_window(20);
        one_rtt(&mut l, &mut w, 25); // base = 25 ms, queuing delay 0
        let grown = w.cwnd as i64 - 20 * MSS as i64;
        assert!(grown > 0 && grown <= MSS as i64, "grew {grown} bytes");
        assert!(grown >= (MSS as i64 * 95) / 100, "grew {grown} bytes, nearly one packet");
    }

    #[test]
    fn the_window_shrinks_when_queuing_delay_exceeds_the_target() {
        let mut l = Ledbat::new(LedbatConfig::default());
        let mut w = ca_window(20);
        l.on_sample(&sample(0, 25)); // base delay 25 ms
        one_rtt(&mut l, &mut w, 25 + 50); // queuing delay 50 ms = 2 x TARGET
        let change = w.cwnd as i64 - 20 * MSS as i64;
        assert!(change < 0, "window must shrink, changed {change}");
        // One packet per RTT, a little more as the window shrinks during the round.
        assert!(change >= -(MSS as i64 * 11 / 10), "by about one packet per RTT at twice the target");
    }

    #[test]
    fn the_window_holds_when_queuing_delay_equals_the_target() {
        let mut l = Ledbat::new(LedbatConfig::default());
        let mut w = ca_window(20);
        l.on_sample(&sample(0, 10));
        one_rtt(&mut l, &mut w, 35);
        assert_eq!(w.cwnd, 20 * MSS as u64);
    }

    #[test]
    fn the_window_never_falls_below_the_floor() {
        let mut l = Ledbat::new(LedbatConfig { min_cwnd: 2, ..LedbatConfig::default() });
        let mut w = ca_window(3);
        l.on_sample(&sample(0, 1));
        for _ in 0..50 {
            one_rtt(&mut l, &mut w, 1000);
        }
        assert_eq!(w.cwnd, 2 * MSS as u64);
    }

    #[test]
    fn loss_halves_the_window() {
        let mut l = Ledbat::new(LedbatConfig::default());
        let w = ca_window(30);
        assert_eq!(l.ssthresh_after_loss(&w, 30 * MSS as u64), 15 * MSS as u64);
    }

    #[test]
    fn the_base_delay_is_the_minimum_ever_seen_by_default() {
        let mut l = Ledbat::new(LedbatConfig::default());
        for (t, d) in [(0, 40), (1, 30), (100_000, 50)] {
            l.on_sample(&sample(t, d));
        }
        assert_eq!(l.base_delay(), Some(Duration::from_millis(30)));
        assert_eq!(l.queuing_delay(), Some(Duration::from_millis(20)));
    }

    #[test]
    fn bucketed_base_history_forgets_minima_older_than_its_span() {
        let cfg = LedbatConfig { base_history: Some((2, Duration::from_secs(60))), ..LedbatConfig::default() };
        let mut l = Ledbat::new(cfg);
        l.on_sample(&sample(0, 10));
        l.on_sample(&sample(61_000, 30));
        assert_eq!(l.base_delay(), Some(Duration::from_millis(10)));
        l.on_sample(&sample(122_000, 40)); // the 10 ms bucket rolls out
        assert_eq!(l.base_delay(), Some(Duration::from_millis(30)));
    }

    #[test]
    fn a_window_shrunk_by_delay_does_not_slow_start_back_up() {
        let mut l = Ledbat::new(LedbatConfig::default());
        let mut w = Window { cwnd: 40 * MSS as u64, ssthresh: 40 * MSS as u64, mss: MSS };
        l.on_sample(&sample(0, 25));
        for _ in 0..5 {
            one_rtt(&mut l, &mut w, 25 + 500); // far above the target
        }
        assert!(w.cwnd < 10 * MSS as u64, "window {}", w.cwnd / MSS as u64);
        assert!(!w.in_slow_start());
    }

    #[test]
    fn slow_start_grows_like_reno_until_ssthresh() {
        let mut l = Ledbat::new(LedbatConfig::default());
        let mut w = Window { cwnd: 2 * MSS as u64, ssthresh: u64::MAX, mss: MSS };
        one_rtt(&mut l, &mut w, 25);
        assert_eq!(w.cwnd, 4 * MSS as u64);
    }
}
