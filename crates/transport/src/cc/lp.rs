//! TCP-LP, low-priority TCP (Kuzmanovic & Knightly 2003), as Linux `tcp_lp.c`
//! runs it.
//!
//! One-way delays (from timestamps) are smoothed, `sOWD = 7/8 sOWD + 1/8 OWD`,
//! and tracked as a min/max range (the max "forgets" one outlier through a
//! reserve). An early congestion indication is inferred when
//! `sOWD > owd_min + threshold (owd_max - owd_min)`. On one, the range is reset
//! around sOWD and the window halves, or drops to one segment when the previous
//! indication was less than the inference time-out (3 RTT) ago. While within
//! that time-out the window does not grow; otherwise it grows like Reno. Loss is
//! handled as in NewReno.

use serde::{Deserialize, Serialize};
use torrentlab_engine::{Duration, Time};

use super::newreno::reno_increase;
use super::{AckSample, CongestionControl, Window};

/// TCP-LP parameters. `Default`: threshold 0.15 of the delay range, inference
/// time-out 3 RTT (Linux `tcp_lp.c`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LpConfig {
    pub threshold: f64,
    pub inference_rtts: f64,
}

impl Default for LpConfig {
    fn default() -> Self {
        LpConfig { threshold: 0.15, inference_rtts: 3.0 }
    }
}

/// The TCP-LP controller.
#[derive(Clone, Debug)]
pub struct Lp {
    cfg: LpConfig,
    /// One-way delays in ns.
    owd_min: f64,
    owd_max: f64,
    owd_max_rsv: f64,
    sowd: Option<f64>,
    inference: Duration,
    last_indication: Option<Time>,
    within_inference: bool,
    acked: u64,
    indications: u64,
}

impl Lp {
    pub fn new(cfg: LpConfig) -> Self {
        Lp {
            cfg,
            owd_min: f64::INFINITY,
            owd_max: 0.0,
            owd_max_rsv: 0.0,
            sowd: None,
            inference: Duration::ZERO,
            last_indication: None,
            within_inference: false,
            acked: 0,
            indications: 0,
        }
    }

    /// Early congestion indications inferred so far.
    pub fn indications(&self) -> u64 {
        self.indications
    }

    fn track(&mut self, owd: f64) {
        self.owd_min = self.owd_min.min(owd);
        if owd > self.owd_max {
            if owd > self.owd_max_rsv {
                self.owd_max = if self.owd_max_rsv == 0.0 { owd } else { self.owd_max_rsv };
                self.owd_max_rsv = owd;
            } else {
                self.owd_max = owd;
            }
        }
        self.sowd = Some(self.sowd.map_or(owd, |s| s + (owd - s) / 8.0));
    }
}

impl CongestionControl for Lp {
    fn name(&self) -> &'static str {
        "lp"
    }

    fn on_sample(&mut self, s: &AckSample) {
        if let Some(owd) = s.one_way_delay {
            self.track(owd.0 as f64);
        }
        if let Some(rtt) = s.rtt {
            self.inference = Duration::from_secs_f64(rtt.as_secs_f64() * self.cfg.inference_rtts);
        }
        self.within_inference = self.last_indication.is_some_and(|t| s.now.saturating_since(t) < self.inference);
    }

    fn on_ack(&mut self, w: &mut Window, s: &AckSample) {
        if let Some(sowd) = self.sowd {
            let threshold = self.owd_min + self.cfg.threshold * (self.owd_max - self.owd_min);
            if sowd >= threshold {
                // Early congestion indication (Linux: not "within threshold").
                self.indications += 1;
                self.owd_min = sowd;
                self.owd_max = 2.0 * sowd;
                self.owd_max_rsv = 2.0 * sowd;
                let mss = w.mss as u64;
                w.cwnd = if self.within_inference { mss } else { (w.cwnd / 2).max(mss) };
                self.last_indication = Some(s.now);
                return;
            }
        }
        // Linux `tcp_lp_cong_avoid`: `tcp_reno_cong_avoid` outside the inference time.
        if !self.within_inference && !s.app_limited {
            reno_increase(w, s.bytes_acked, &mut self.acked);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn ack(ms: u64, owd_ms: u64) -> AckSample {
        AckSample {
            now: Time(ms * 1_000_000),
            bytes_acked: MSS as u64,
            rtt: Some(Duration::from_millis(100)),
            one_way_delay: Some(Duration::from_millis(owd_ms)),
            ..AckSample::default()
        }
    }

    fn feed(lp: &mut Lp, w: &mut Window, ms: u64, owd_ms: u64) {
        let s = ack(ms, owd_ms);
        lp.on_sample(&s);
        lp.on_ack(w, &s);
    }

    #[test]
    fn a_steady_delay_grows_the_window_only_while_the_sender_uses_it() {
        let mut lp = Lp::new(LpConfig::default());
        let mut w = Window { cwnd: 10 * MSS as u64, ssthresh: u64::MAX, mss: MSS };
        feed(&mut lp, &mut w, 0, 50); // the first sample is an indication (as Linux)
        let after_first = w.cwnd;
        for i in 0..20 {
            let s = AckSample { app_limited: true, ..ack(1000 + 10 * i, 50) };
            lp.on_sample(&s);
            lp.on_ack(&mut w, &s);
        }
        assert_eq!(w.cwnd, after_first, "not using its window: Reno's growth waits");
        feed(&mut lp, &mut w, 2000, 50);
        assert!(w.cwnd > after_first, "using it: slow start goes on");
    }

    #[test]
    fn a_rising_one_way_delay_halves_the_window_before_any_loss() {
        let mut lp = Lp::new(LpConfig::default());
        let mut w = Window { cwnd: 40 * MSS as u64, ssthresh: 0, mss: MSS };
        feed(&mut lp, &mut w, 0, 50); // first sample: min = max, an indication (as Linux)
        let mut t = 1000;
        for _ in 0..200 {
            feed(&mut lp, &mut w, t, 50);
            t += 10;
        }
        feed(&mut lp, &mut w, t, 100); // widen the range: max 100 ms
        let before = w.cwnd;
        let n0 = lp.indications();
        for _ in 0..30 {
            t += 10;
            feed(&mut lp, &mut w, t, 100); // sOWD climbs above min + 15 % of the range
            if lp.indications() > n0 {
                break;
            }
        }
        assert_eq!(lp.indications(), n0 + 1);
        assert!(w.cwnd <= before / 2 + MSS as u64, "{} -> {}", before, w.cwnd);
    }

    #[test]
    fn a_second_indication_within_the_inference_time_out_drops_to_one_segment() {
        let mut lp = Lp::new(LpConfig::default());
        let mut w = Window { cwnd: 40 * MSS as u64, ssthresh: 0, mss: MSS };
        feed(&mut lp, &mut w, 0, 50);
        assert_eq!(w.cwnd, 20 * MSS as u64, "first indication halves");
        // 100 ms later (< 3 RTT = 300 ms) the delay jumps again.
        feed(&mut lp, &mut w, 100, 500);
        feed(&mut lp, &mut w, 110, 500);
        assert_eq!(w.cwnd, MSS as u64);
    }

    #[test]
    fn within_the_inference_time_out_the_window_does_not_grow() {
        let mut lp = Lp::new(LpConfig::default());
        let mut w = Window { cwnd: 10 * MSS as u64, ssthresh: 0, mss: MSS };
        feed(&mut lp, &mut w, 0, 50); // indication at t = 0
        let after = w.cwnd;
        for t in 1..20 {
            feed(&mut lp, &mut w, t * 10, 50);
        }
        assert_eq!(w.cwnd, after, "no increase for 3 RTT");
        for t in 31..200 {
            feed(&mut lp, &mut w, t * 10, 50);
        }
        assert!(w.cwnd > after, "Reno growth after the time-out");
    }
}
