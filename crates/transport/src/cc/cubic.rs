//! CUBIC (RFC 9438) as Linux runs it by default, with HyStart.
//!
//! Window in segments: `W_cubic(t) = C (t - K)^3 + W_max`, with
//! `K = cbrt((W_max - cwnd_epoch) / C)`. Each ACK in congestion avoidance moves
//! cwnd towards `target = W_cubic(t + RTT)`, clamped to `[cwnd, 1.5 cwnd]`
//! (§4.2), unless the Reno-friendly estimate `W_est` (grown by
//! `alpha_cubic = 3 (1 - beta) / (1 + beta)` segments per window, §4.3) is
//! larger, in which case cwnd follows `W_est`. On loss `ssthresh = beta cwnd`
//! and, with fast convergence (§4.7), `W_max` is lowered further when the window
//! had not regained its previous maximum.
//!
//! HyStart (Ha & Rhee 2011, Linux `hystart_update`) ends slow start early, from
//! a window of 16 segments on: when a train of ACKs spaced at most 2 ms apart
//! lasts longer than half the minimum RTT, or when the smallest of the first 8
//! RTT samples of a round exceeds the minimum RTT by
//! `clamp(min RTT / 8, 4 ms, 16 ms)`. Either sets ssthresh to the window.

use serde::{Deserialize, Serialize};
use torrentlab_engine::{Duration, OptDuration, OptTime, Time};

use super::newreno::reno_increase;
use super::{grow, AckSample, CongestionControl, Window};

/// CUBIC parameters. `Default` is RFC 9438 / Linux.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CubicConfig {
    /// C, in segments / s^3 (0.4).
    pub c: f64,
    /// beta_cubic, the multiplicative decrease factor (0.7).
    pub beta: f64,
    /// Fast convergence (§4.7), on in Linux.
    pub fast_convergence: bool,
    /// The Reno-friendly region (§4.3).
    pub tcp_friendliness: bool,
    /// HyStart slow-start exit (on in Linux and ns-3).
    pub hystart: bool,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig { c: 0.4, beta: 0.7, fast_convergence: true, tcp_friendliness: true, hystart: true }
    }
}

/// The CUBIC controller.
#[derive(Clone, Debug)]
pub struct Cubic {
    hystart: HyStart,
    /// Window before the last reduction, in segments.
    w_max: f64,
    epoch_start: OptTime,
    k: f64,
    min_rtt: OptDuration,
    /// Reno-friendly estimate, in segments.
    w_est: f64,
    frac: f64,
    acked_in_ss: u64,
    cfg: CubicConfig,
}

/// HyStart's per-round state (Linux `bictcp`: round_start, last_ack, end_seq,
/// curr_rtt, sample_cnt).
#[derive(Clone, Debug, Default)]
struct HyStart {
    end_seq: u64,
    round_start: Time,
    last_ack: Time,
    curr_rtt: OptDuration,
    samples: u32,
}

/// Windows below this many segments never trigger HyStart (`hystart_low_window`).
const HYSTART_LOW_WINDOW: u64 = 16;
/// ACKs at most this far apart form a train (`hystart_ack_delta_us`).
const HYSTART_ACK_DELTA: Duration = Duration::from_millis(2);
/// RTT samples per round for the delay test (`HYSTART_MIN_SAMPLES`).
const HYSTART_MIN_SAMPLES: u32 = 8;

impl Cubic {
    pub fn new(cfg: CubicConfig) -> Self {
        Cubic {
            cfg,
            w_max: 0.0,
            epoch_start: OptTime::NONE,
            k: 0.0,
            w_est: 0.0,
            min_rtt: OptDuration::NONE,
            frac: 0.0,
            acked_in_ss: 0,
            hystart: HyStart::default(),
        }
    }

    fn alpha(&self) -> f64 {
        3.0 * (1.0 - self.cfg.beta) / (1.0 + self.cfg.beta)
    }

    /// `W_cubic(t)` in segments, `t` in seconds since the epoch started.
    fn w_cubic(&self, t: f64) -> f64 {
        self.cfg.c * (t - self.k).powi(3) + self.w_max
    }

    fn reduce(&mut self, cwnd_segments: f64) {
        self.epoch_start = OptTime::NONE;
        self.w_max = if self.cfg.fast_convergence && cwnd_segments < self.w_max {
            cwnd_segments * (1.0 + self.cfg.beta) / 2.0
        } else {
            cwnd_segments
        };
    }

    /// HyStart: true when slow start should end at this ACK.
    fn hystart_exit(&mut self, w: &Window, s: &AckSample) -> bool {
        let Some(delay_min) = self.min_rtt.get() else { return false };
        let h = &mut self.hystart;
        if s.ack > h.end_seq {
            // A new round: the ACK train and the delay samples start again.
            h.end_seq = s.snd_nxt;
            h.round_start = s.now;
            h.last_ack = s.now;
            h.curr_rtt = OptDuration::NONE;
            h.samples = 0;
        }
        if w.cwnd < HYSTART_LOW_WINDOW * w.mss as u64 {
            return false;
        }
        if s.now.saturating_since(h.last_ack) <= HYSTART_ACK_DELTA {
            h.last_ack = s.now;
            if s.now.saturating_since(h.round_start) > Duration(delay_min.0 / 2) {
                return true;
            }
        }
        if let Some(rtt) = s.rtt {
            if h.samples < HYSTART_MIN_SAMPLES {
                h.curr_rtt = OptDuration::some(h.curr_rtt.get().map_or(rtt, |c| c.min(rtt)));
                h.samples += 1;
            } else {
                let eta = Duration(delay_min.0 / 8).max(Duration::from_millis(4)).min(Duration::from_millis(16));
                if h.curr_rtt.get().is_some_and(|c| c >= delay_min + eta) {
                    return true;
                }
            }
        }
        false
    }

    /// W_max in segments (for tests and metrics).
    pub fn w_max(&self) -> f64 {
        self.w_max
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn on_sample(&mut self, s: &AckSample) {
        if let Some(r) = s.rtt {
            self.min_rtt = OptDuration::some(self.min_rtt.get().map_or(r, |m| m.min(r)));
        }
    }

    /// Linux `cubictcp_cwnd_event(CA_EVENT_TX_START)`: a pause of the
    /// application moves the epoch on by as long, so that the time spent
    /// idle does not count on the cubic curve.
    #[inline]
    fn on_tx_start(&mut self, now: Time, idle: Duration) {
        if let Some(e) = self.epoch_start.get() {
            if idle > Duration::ZERO {
                self.epoch_start = OptTime::some((e + idle).min(now));
            }
        }
    }

    /// Linux `cubictcp_cong_avoid`, which leaves a window that is not in use
    /// alone. HyStart runs from Linux's `cubictcp_acked`, whatever the window's
    /// use, but only from 16 segments (`hystart_low_window`): below that, an
    /// ACK to a sender that is not using its window changes nothing.
    fn on_ack(&mut self, w: &mut Window, s: &AckSample) {
        let low = w.cwnd < HYSTART_LOW_WINDOW * w.mss as u64;
        if s.app_limited && (low || !w.in_slow_start()) {
            return;
        }
        if w.in_slow_start() {
            if self.cfg.hystart && self.hystart_exit(w, s) {
                w.ssthresh = w.cwnd;
                return;
            }
            if !s.app_limited {
                reno_increase(w, s.bytes_acked, &mut self.acked_in_ss);
            }
            return;
        }
        let mss = w.mss as f64;
        let cwnd = w.cwnd as f64 / mss;
        let epoch = match self.epoch_start.get() {
            Some(e) => e,
            None => {
                // A new epoch: K from the distance to W_max (RFC 9438 eq. 2).
                if cwnd < self.w_max {
                    self.k = ((self.w_max - cwnd) / self.cfg.c).cbrt();
                } else {
                    self.k = 0.0;
                    self.w_max = cwnd;
                }
                self.w_est = cwnd;
                self.epoch_start = OptTime::some(s.now);
                s.now
            }
        };
        let rtt = self.min_rtt.get().map_or(0.0, |r| r.as_secs_f64());
        let t = s.now.saturating_since(epoch).as_secs_f64();
        let target = self.w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
        let acked = s.bytes_acked as f64 / mss;
        self.w_est += self.alpha() * acked / cwnd;
        let delta_segments = if self.cfg.tcp_friendliness && self.w_cubic(t) < self.w_est {
            (self.w_est - cwnd).max(0.0)
        } else {
            (target - cwnd) / cwnd * acked
        };
        grow(w, delta_segments * mss, &mut self.frac, w.mss as u64);
    }

    /// RFC 9438 §4.6: `ssthresh = flight_size x beta_cubic`. The window before
    /// the reduction is the smaller of cwnd and the flight: NewReno-style
    /// recovery inflates cwnd, which must not count as window reached.
    fn ssthresh_after_loss(&mut self, w: &Window, flight: u64) -> u64 {
        let before = w.cwnd.min(flight.max(w.mss as u64));
        self.reduce(before as f64 / w.mss as f64);
        self.frac = 0.0;
        ((before as f64 * self.cfg.beta) as u64).max(2 * w.mss as u64)
    }

    /// RFC 9438 §4.8: a timeout is a congestion event too; cwnd restarts from
    /// one segment in slow start.
    fn on_timeout(&mut self, w: &mut Window, flight: u64) {
        w.ssthresh = self.ssthresh_after_loss(w, flight);
        w.cwnd = w.mss as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn ack_at(ms: u64) -> AckSample {
        AckSample {
            now: Time(ms * 1_000_000),
            bytes_acked: MSS as u64,
            rtt: Some(Duration::from_millis(100)),
            ..AckSample::default()
        }
    }

    #[test]
    fn an_ack_to_a_sender_not_using_its_window_moves_nothing_below_hystarts_low_window() {
        let mut c = Cubic::new(CubicConfig::default());
        let limited = AckSample { app_limited: true, ..ack_at(0) };
        for (cwnd, ssthresh) in [(10, u64::MAX), (40, 20_000)] {
            let mut w = Window { cwnd: cwnd * MSS as u64, ssthresh, mss: MSS };
            let before = w;
            for i in 0..50 {
                let s = AckSample { now: Time(i * 10_000_000), ..limited };
                c.on_sample(&s);
                c.on_ack(&mut w, &s);
            }
            assert_eq!(w, before, "slow start below 16 segments, or congestion avoidance");
            let s = ack_at(600);
            c.on_ack(&mut w, &s);
            assert!(w.cwnd > before.cwnd, "an ACK to a sender using its window grows it");
        }
    }

    #[test]
    fn a_pause_of_the_application_moves_the_epoch_on_by_as_long_but_not_past_now() {
        let mut c = Cubic::new(CubicConfig::default());
        c.on_tx_start(Time(5_000_000_000), Duration::from_secs(1));
        assert_eq!(c.epoch_start, OptTime::NONE, "no epoch yet: nothing to move");
        c.epoch_start = OptTime::some(Time(2_000_000_000));
        c.on_tx_start(Time(5_000_000_000), Duration::from_secs(1));
        assert_eq!(c.epoch_start, OptTime::some(Time(3_000_000_000)));
        c.on_tx_start(Time(5_000_000_000), Duration::from_secs(10));
        assert_eq!(c.epoch_start, OptTime::some(Time(5_000_000_000)), "capped at now");
    }

    /// Drives CA for `secs` seconds with one window of ACKs per 100 ms RTT.
    fn run(c: &mut Cubic, w: &mut Window, from_ms: u64, secs: u64) -> Vec<f64> {
        let mut per_rtt = vec![];
        for r in 0..secs * 10 {
            let now = from_ms + r * 100;
            for _ in 0..(w.cwnd / MSS as u64) {
                let s = ack_at(now);
                c.on_sample(&s);
                c.on_ack(w, &s);
            }
            per_rtt.push(w.cwnd as f64 / MSS as f64);
        }
        per_rtt
    }

    #[test]
    fn hystart_ends_slow_start_when_the_rtt_grows_within_a_round() {
        let mut c = Cubic::new(CubicConfig::default());
        let mut w = Window { cwnd: 20 * MSS as u64, ssthresh: u64::MAX, mss: MSS };
        let mut ack = 0;
        // Round 1: RTT 100 ms (the minimum); ACKs 10 ms apart (no train).
        for i in 0..20u64 {
            ack += MSS as u64;
            let s = AckSample { ack, snd_nxt: 20 * MSS as u64, now: Time(i * 10_000_000), ..ack_at(0) };
            c.on_sample(&s);
            c.on_ack(&mut w, &s);
        }
        assert!(w.in_slow_start());
        // Round 2: the queue adds 20 ms (> max(100/8, 4) = 12.5 ms).
        for i in 0..20u64 {
            ack += MSS as u64;
            let s = AckSample {
                ack,
                snd_nxt: 40 * MSS as u64,
                now: Time(300_000_000 + i * 10_000_000),
                rtt: Some(Duration::from_millis(120)),
                ..ack_at(0)
            };
            c.on_sample(&s);
            c.on_ack(&mut w, &s);
        }
        assert!(!w.in_slow_start(), "HyStart's delay test ends slow start");
        assert!(w.ssthresh < 60 * MSS as u64, "ssthresh set from the window, {}", w.ssthresh);
    }

    #[test]
    fn a_long_train_of_closely_spaced_acks_ends_slow_start() {
        // Min RTT 100 ms: 60 ACKs 1 ms apart form a train longer than 50 ms.
        let train = |hystart: bool| {
            let mut c = Cubic::new(CubicConfig { hystart, ..CubicConfig::default() });
            let mut w = Window { cwnd: 20 * MSS as u64, ssthresh: u64::MAX, mss: MSS };
            c.on_sample(&ack_at(0));
            for i in 0..60u64 {
                let s = AckSample {
                    ack: (i + 1) * MSS as u64,
                    snd_nxt: 500 * MSS as u64,
                    now: Time(i * 1_000_000),
                    rtt: None,
                    ..ack_at(0)
                };
                c.on_ack(&mut w, &s);
            }
            w
        };
        assert!(!train(true).in_slow_start());
        assert!(train(false).in_slow_start(), "without HyStart slow start goes on");
    }

    #[test]
    fn loss_reduces_the_window_by_beta_and_remembers_w_max() {
        let mut c = Cubic::new(CubicConfig::default());
        let w = Window { cwnd: 100 * MSS as u64, ssthresh: 0, mss: MSS };
        assert_eq!(c.ssthresh_after_loss(&w, 100 * MSS as u64), 70 * MSS as u64);
        assert_eq!(c.w_max(), 100.0);
    }

    #[test]
    fn a_window_inflated_by_recovery_does_not_count_at_a_timeout() {
        let mut c = Cubic::new(CubicConfig::default());
        let mut w = Window { cwnd: 200 * MSS as u64, ssthresh: 0, mss: MSS };
        c.on_timeout(&mut w, 60 * MSS as u64);
        assert_eq!((w.cwnd, w.ssthresh), (MSS as u64, 42 * MSS as u64));
        assert_eq!(c.w_max(), 60.0);
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_the_window_did_not_recover() {
        let mut c = Cubic::new(CubicConfig::default());
        c.ssthresh_after_loss(&Window { cwnd: 100 * MSS as u64, ssthresh: 0, mss: MSS }, 100 * MSS as u64);
        c.ssthresh_after_loss(&Window { cwnd: 80 * MSS as u64, ssthresh: 0, mss: MSS }, 80 * MSS as u64);
        assert!((c.w_max() - 80.0 * 1.7 / 2.0).abs() < 1e-9);
    }

    #[test]
    fn after_a_loss_the_window_climbs_back_to_w_max_in_about_k_seconds_then_probes_beyond() {
        let mut c = Cubic::new(CubicConfig { tcp_friendliness: false, ..CubicConfig::default() });
        let mut w = Window { cwnd: 100 * MSS as u64, ssthresh: 0, mss: MSS };
        c.on_sample(&ack_at(0));
        w.ssthresh = c.ssthresh_after_loss(&w, 100 * MSS as u64);
        w.cwnd = w.ssthresh;
        // K = cbrt(100 * 0.3 / 0.4) = 4.217 s
        let trace = run(&mut c, &mut w, 0, 8);
        let at = |s: f64| trace[(s * 10.0) as usize - 1];
        assert!(at(2.0) > 88.0 && at(2.0) < 100.0, "concave growth: {}", at(2.0));
        assert!((at(4.2) - 100.0).abs() < 3.0, "plateau near W_max: {}", at(4.2));
        assert!(at(8.0) > 115.0, "convex probing beyond W_max: {}", at(8.0));
    }

    #[test]
    fn growth_per_rtt_is_capped_at_half_the_window() {
        let mut c = Cubic::new(CubicConfig::default());
        let mut w = Window { cwnd: 10 * MSS as u64, ssthresh: 0, mss: MSS };
        c.w_max = 1000.0; // far above: the cubic target is huge
        c.on_sample(&ack_at(0));
        let trace = run(&mut c, &mut w, 0, 1);
        assert!(trace[0] <= 15.0 + 1e-9, "first RTT grew to {}", trace[0]);
    }

    #[test]
    fn in_the_reno_friendly_region_the_window_grows_at_least_like_alpha_per_rtt() {
        // With a tiny W_max gap and C small, W_cubic stays flat; W_est rules.
        let mut c = Cubic::new(CubicConfig { c: 0.0001, ..CubicConfig::default() });
        let mut w = Window { cwnd: 20 * MSS as u64, ssthresh: 0, mss: MSS };
        c.w_max = 20.0;
        c.on_sample(&ack_at(0));
        let trace = run(&mut c, &mut w, 0, 2);
        let alpha = 3.0 * 0.3 / 1.7;
        assert!(trace[19] >= 20.0 + 19.0 * alpha * 0.9, "grew to {}", trace[19]);
    }
}
