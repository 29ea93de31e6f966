//! TCP Vegas (Brakmo & Peterson 1994) as Linux `tcp_vegas.c` runs it.
//!
//! Once per RTT (when an ACK passes the `snd_nxt` recorded at the start of the
//! round), with `baseRTT` the minimum RTT ever seen and `rtt` the minimum in the
//! round: `diff = cwnd (rtt - baseRTT) / baseRTT` packets queued in the network.
//! In congestion avoidance: `diff > beta` -> cwnd - 1, `diff < alpha` -> cwnd + 1,
//! else hold. In slow start, `diff > gamma` ends it with
//! `cwnd = min(cwnd, target + 1)`. Rounds with two or fewer RTT samples fall back
//! to Reno; the window never goes below 2 segments.

use serde::{Deserialize, Serialize};
use torrentlab_engine::Duration;

use super::newreno::reno_increase;
use super::{AckSample, CongestionControl, Window};

/// Vegas thresholds in packets. `Default`: alpha 2, beta 4, gamma 1 (Linux).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VegasConfig {
    pub alpha: f64,
    pub beta: f64,
    pub gamma: f64,
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig { alpha: 2.0, beta: 4.0, gamma: 1.0 }
    }
}

/// Per-round RTT bookkeeping shared by Vegas and Nice.
#[derive(Clone, Debug, Default)]
pub(crate) struct Rounds {
    pub base_rtt: Option<Duration>,
    pub min_rtt_in_round: Option<Duration>,
    pub samples_in_round: u32,
    beg_snd_nxt: u64,
}

impl Rounds {
    pub fn on_sample(&mut self, s: &AckSample) {
        if let Some(r) = s.rtt {
            self.base_rtt = Some(self.base_rtt.map_or(r, |b| b.min(r)));
            self.min_rtt_in_round = Some(self.min_rtt_in_round.map_or(r, |m| m.min(r)));
            self.samples_in_round += 1;
        }
    }

    /// True when this ACK ends a round; starts the next one.
    pub fn round_ended(&mut self, s: &AckSample) -> bool {
        if s.ack > self.beg_snd_nxt {
            self.beg_snd_nxt = s.snd_nxt;
            true
        } else {
            false
        }
    }

    pub fn reset_round(&mut self) {
        self.min_rtt_in_round = None;
        self.samples_in_round = 0;
    }
}

/// The Vegas controller.
#[derive(Clone, Debug)]
pub struct Vegas {
    cfg: VegasConfig,
    pub(crate) rounds: Rounds,
    acked: u64,
}

impl Vegas {
    pub fn new(cfg: VegasConfig) -> Self {
        Vegas { cfg, rounds: Rounds::default(), acked: 0 }
    }

    /// Packets Vegas estimates it has queued in the network, from the last round.
    pub(crate) fn diff(&self, w: &Window) -> Option<(f64, f64)> {
        let base = self.rounds.base_rtt?.as_secs_f64();
        let rtt = self.rounds.min_rtt_in_round?.as_secs_f64();
        if base <= 0.0 {
            return None;
        }
        let cwnd = w.cwnd as f64 / w.mss as f64;
        Some((cwnd * (rtt - base) / base, cwnd * base / rtt))
    }

    /// Slow-start growth between round ends.
    pub(crate) fn on_ack_in_round(&mut self, w: &mut Window, s: &AckSample) {
        reno_increase(w, s.bytes_acked, &mut self.acked);
    }

    /// One Vegas round decision (Linux `tcp_vegas_cong_avoid`).
    pub(crate) fn round(&mut self, w: &mut Window, s: &AckSample) {
        let mss = w.mss as u64;
        if self.rounds.samples_in_round <= 2 {
            // Too few samples: Linux falls back to `tcp_reno_cong_avoid`,
            // which leaves a window that is not in use alone.
            if !s.app_limited {
                reno_increase(w, s.bytes_acked, &mut self.acked);
            }
        } else if let Some((diff, target)) = self.diff(w) {
            if w.in_slow_start() {
                if diff > self.cfg.gamma {
                    let t = (target.floor() as u64 + 1) * mss;
                    w.cwnd = w.cwnd.min(t);
                    w.ssthresh = w.ssthresh.min(w.cwnd.saturating_sub(mss));
                } else {
                    reno_increase(w, s.bytes_acked, &mut self.acked);
                }
            } else if diff > self.cfg.beta {
                w.cwnd = w.cwnd.saturating_sub(mss);
                w.ssthresh = w.ssthresh.min(w.cwnd.saturating_sub(mss));
            } else if diff < self.cfg.alpha {
                w.cwnd += mss;
            }
            w.cwnd = w.cwnd.max(2 * mss);
        }
        self.rounds.reset_round();
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn on_sample(&mut self, s: &AckSample) {
        self.rounds.on_sample(s);
    }

    fn on_ack(&mut self, w: &mut Window, s: &AckSample) {
        if self.rounds.round_ended(s) {
            self.round(w, s);
        } else if w.in_slow_start() {
            self.on_ack_in_round(w, s);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use torrentlab_engine::Time;

    pub const MSS: u32 = 1000;

    /// One round of ACKs, each with `rtt_ms`. As in Linux, a round's decision is
    /// taken on the first ACK past the round's `snd_nxt`, i.e. at the start of
    /// the next call.
    pub fn round(cc: &mut dyn CongestionControl, w: &mut Window, snd: &mut u64, rtt_ms: u64) {
        let n = (w.cwnd / MSS as u64).max(1);
        let start = *snd;
        for i in 1..=n {
            let s = AckSample {
                now: Time(*snd * 1000),
                ack: start + i * MSS as u64,
                snd_nxt: start + n * MSS as u64,
                bytes_acked: MSS as u64,
                rtt: Some(Duration::from_millis(rtt_ms)),
                ..AckSample::default()
            };
            cc.on_sample(&s);
            cc.on_ack(w, &s);
        }
        *snd = start + n * MSS as u64;
    }

    fn ca(packets: u64) -> Window {
        Window { cwnd: packets * MSS as u64, ssthresh: 0, mss: MSS }
    }

    #[test]
    fn with_no_queue_vegas_adds_one_packet_per_rtt() {
        let mut v = Vegas::new(VegasConfig::default());
        let (mut w, mut snd) = (ca(10), 0);
        round(&mut v, &mut w, &mut snd, 100);
        let before = w.cwnd;
        round(&mut v, &mut w, &mut snd, 100);
        assert_eq!(w.cwnd, before + MSS as u64);
    }

    #[test]
    fn more_than_beta_packets_queued_takes_one_packet_off_per_rtt() {
        let mut v = Vegas::new(VegasConfig::default());
        let (mut w, mut snd) = (ca(20), 0);
        round(&mut v, &mut w, &mut snd, 100); // base RTT 100 ms
        round(&mut v, &mut w, &mut snd, 130);
        let before = w.cwnd;
        round(&mut v, &mut w, &mut snd, 130); // decides on the last round: diff = 21 x 0.3 = 6.3 > 4
        assert_eq!(w.cwnd, before - MSS as u64);
    }

    #[test]
    fn between_alpha_and_beta_the_window_holds() {
        let mut v = Vegas::new(VegasConfig::default());
        let (mut w, mut snd) = (ca(20), 0);
        round(&mut v, &mut w, &mut snd, 100);
        round(&mut v, &mut w, &mut snd, 115);
        let before = w.cwnd;
        round(&mut v, &mut w, &mut snd, 115); // diff = 21 x 0.15 = 3.15
        assert_eq!(w.cwnd, before);
    }

    #[test]
    fn a_queue_in_slow_start_ends_slow_start_near_the_target_window() {
        let mut v = Vegas::new(VegasConfig::default());
        let mut w = Window { cwnd: 4 * MSS as u64, ssthresh: u64::MAX, mss: MSS };
        let mut snd = 0;
        round(&mut v, &mut w, &mut snd, 100);
        round(&mut v, &mut w, &mut snd, 200);
        assert!(w.in_slow_start(), "no queue seen yet in a whole round");
        let before = w.cwnd;
        round(&mut v, &mut w, &mut snd, 200); // diff = cwnd x 1.0 > gamma
        assert!(!w.in_slow_start());
        assert!(w.cwnd <= before, "the window is cut back towards the target, {before} -> {}", w.cwnd);
    }
}
