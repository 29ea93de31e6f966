//! TCP Nice (Venkataramani, Kokku, Dahlin, OSDI 2002): Vegas plus an early,
//! multiplicative back-off for background transfers.
//!
//! Each ACK whose RTT exceeds `minRTT + threshold (maxRTT - minRTT)` counts as a
//! congestion signal. At the end of a round, if more than `fraction x W` of the
//! round's ACKs were such signals, the window halves; otherwise Vegas decides.
//! The window may fall below one packet: the sender then sends one packet every
//! `1/W` RTTs (see `TcpSender`).

use serde::{Deserialize, Serialize};
use torrentlab_engine::Duration;

use super::vegas::{Vegas, VegasConfig};
use super::{AckSample, CongestionControl, Window};

/// Nice parameters. `Default`: threshold t = 0.1, fraction f = 0.5 (the paper's
/// simulation defaults), Vegas' thresholds, and a floor of 1/48 of a packet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NiceConfig {
    pub threshold: f64,
    pub fraction: f64,
    /// Smallest window, in packets (may be below 1). The paper allows windows
    /// below one packet without giving a floor; this one is torrentlab's.
    pub min_window: f64,
    pub vegas: VegasConfig,
}

impl Default for NiceConfig {
    fn default() -> Self {
        NiceConfig { threshold: 0.1, fraction: 0.5, min_window: 1.0 / 48.0, vegas: VegasConfig::default() }
    }
}

/// The Nice controller.
#[derive(Clone, Debug)]
pub struct Nice {
    cfg: NiceConfig,
    vegas: Vegas,
    min_rtt: Option<Duration>,
    max_rtt: Option<Duration>,
    signals_in_round: u32,
    halvings: u64,
}

impl Nice {
    pub fn new(cfg: NiceConfig) -> Self {
        let vegas = Vegas::new(cfg.vegas.clone());
        Nice { cfg, vegas, min_rtt: None, max_rtt: None, signals_in_round: 0, halvings: 0 }
    }

    /// Times the window was halved by the Nice rule.
    pub fn halvings(&self) -> u64 {
        self.halvings
    }
}

impl CongestionControl for Nice {
    fn name(&self) -> &'static str {
        "nice"
    }

    fn on_sample(&mut self, s: &AckSample) {
        self.vegas.on_sample(s);
        if let Some(r) = s.rtt {
            let (lo, hi) = (self.min_rtt.map_or(r, |m| m.min(r)), self.max_rtt.map_or(r, |m| m.max(r)));
            self.min_rtt = Some(lo);
            self.max_rtt = Some(hi);
            let limit = lo.0 as f64 + self.cfg.threshold * (hi.0 - lo.0) as f64;
            if r.0 as f64 > limit {
                self.signals_in_round += 1;
            }
        }
    }

    fn on_ack(&mut self, w: &mut Window, s: &AckSample) {
        if !self.vegas.rounds.round_ended(s) {
            if w.in_slow_start() {
                self.vegas.on_ack_in_round(w, s);
            }
            return;
        }
        let packets = w.cwnd as f64 / w.mss as f64;
        if self.signals_in_round as f64 > self.cfg.fraction * packets {
            let floor = (self.cfg.min_window * w.mss as f64).ceil() as u64;
            w.cwnd = (w.cwnd / 2).max(floor.max(1));
            w.ssthresh = w.ssthresh.min(w.cwnd);
            self.halvings += 1;
            self.vegas.rounds.reset_round();
        } else {
            self.vegas.round(w, s);
        }
        self.signals_in_round = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::super::vegas::tests::{round, MSS};
    use super::*;

    #[test]
    fn most_acks_above_the_delay_threshold_halve_the_window() {
        let mut n = Nice::new(NiceConfig::default());
        let mut w = Window { cwnd: 20 * MSS as u64, ssthresh: 0, mss: MSS };
        let mut snd = 0;
        round(&mut n, &mut w, &mut snd, 100); // min RTT 100 ms
        round(&mut n, &mut w, &mut snd, 300); // max 300: every ACK above 100 + 0.1 x 200
        let before = w.cwnd;
        round(&mut n, &mut w, &mut snd, 300);
        assert_eq!(w.cwnd, before / 2);
        assert!(n.halvings() >= 1);
    }

    #[test]
    fn the_window_can_fall_below_one_packet_down_to_the_floor() {
        let mut n = Nice::new(NiceConfig::default());
        let mut w = Window { cwnd: 4 * MSS as u64, ssthresh: 0, mss: MSS };
        let mut snd = 0;
        round(&mut n, &mut w, &mut snd, 100);
        for _ in 0..20 {
            round(&mut n, &mut w, &mut snd, 400);
        }
        assert!(w.cwnd < MSS as u64, "window {} bytes", w.cwnd);
        assert_eq!(w.cwnd, (MSS as f64 / 48.0).ceil() as u64);
    }

    #[test]
    fn without_delay_signals_nice_behaves_like_vegas() {
        let mut n = Nice::new(NiceConfig::default());
        let mut v = Vegas::new(VegasConfig::default());
        let (mut wn, mut wv) = (
            Window { cwnd: 10 * MSS as u64, ssthresh: 0, mss: MSS },
            Window { cwnd: 10 * MSS as u64, ssthresh: 0, mss: MSS },
        );
        let (mut a, mut b) = (0, 0);
        for _ in 0..5 {
            round(&mut n, &mut wn, &mut a, 100);
            round(&mut v, &mut wv, &mut b, 100);
        }
        assert_eq!(wn.cwnd, wv.cwnd);
    }
}
