//! LEDBAT for uTP, in three selectable forms:
//!
//! * `bep29`: as libutp implements BEP 29 (`apply_ccontrol`): at most
//!   `max_increase` (3000) bytes of growth per RTT, scaled by
//!   `min(acked, W) / max(W, acked)` and by `off_target / target`; growth is
//!   suppressed when the window has not been full for a second; "slow start"
//!   adds one packet per RTT on top and ends at ssthresh or when the delay
//!   reaches 0.9 target; the window halves on loss at most once per 100 ms;
//!   the delay is the minimum of the last 3 samples minus a base kept over 13
//!   one-minute buckets, capped by the RTT of the acknowledged packets.
//! * `rfc6817`: RFC 6817 §2.4: `cwnd += GAIN x off_target x bytes_acked x MSS /
//!   cwnd`, capped at `flightsize + ALLOWED_INCREASE x MSS`, floored at
//!   `MIN_CWND x MSS` (2); 10 one-minute base buckets, a 4-sample current filter;
//!   on loss (once per RTT) `cwnd = max(cwnd / 2, MIN_CWND x MSS)`; on timeout
//!   `cwnd = 1 x MSS`; initial window 2 x MSS.
//! * `draft`: the early draft of E4 (TARGET 25 ms, GAIN = 1/TARGET, base delay
//!   = minimum ever, latest sample, halve on loss, floor one packet).

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

use torrentlab_engine::{Duration, Time};

/// Which LEDBAT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Variant {
    Bep29,
    Rfc6817,
    Draft,
}

/// Parameters of uTP's LEDBAT. Build one with [`UtpCcConfig::bep29`],
/// [`UtpCcConfig::rfc6817`] or [`UtpCcConfig::draft`], then adjust.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UtpCcConfig {
    pub variant: Variant,
    /// Target queuing delay.
    pub target: Duration,
    /// rfc6817 / draft: GAIN (1.0 means GAIN = 1 in RFC units, i.e. at most one
    /// MSS per RTT).
    pub gain: f64,
    /// bep29: maximum window growth per RTT, bytes (libutp: 3000).
    pub max_increase_bytes_per_rtt: f64,
    /// Window floor, in packets.
    pub min_window_packets: f64,
    /// Initial window, in packets.
    pub initial_window_packets: f64,
    /// Base-delay history: `Some((buckets, interval))` or `None` (minimum ever).
    pub base_history: Option<(usize, Duration)>,
    /// Delay samples whose minimum is the current delay.
    pub current_filter: usize,
    /// bep29: libutp's slow start.
    pub slow_start: bool,
    /// bep29: at most one halving per this interval (100 ms).
    pub loss_decay_interval: Duration,
}

impl UtpCcConfig {
    /// libutp's LEDBAT (BEP 29), target 100 ms.
    pub fn bep29() -> Self {
        UtpCcConfig {
            variant: Variant::Bep29,
            target: Duration::from_millis(100),
            gain: 1.0,
            max_increase_bytes_per_rtt: 3000.0,
            min_window_packets: 1.0,
            initial_window_packets: 1.0,
            base_history: Some((13, Duration::from_secs(60))),
            current_filter: 3,
            slow_start: true,
            loss_decay_interval: Duration::from_millis(100),
        }
    }

    /// RFC 6817 with its recommended constants, target 100 ms.
    pub fn rfc6817() -> Self {
        UtpCcConfig {
            variant: Variant::Rfc6817,
            target: Duration::from_millis(100),
            gain: 1.0,
            max_increase_bytes_per_rtt: 0.0,
            min_window_packets: 2.0,
            initial_window_packets: 2.0,
            base_history: Some((10, Duration::from_secs(60))),
            current_filter: 4,
            slow_start: false,
            loss_decay_interval: Duration::ZERO,
        }
    }

    /// The early draft as in E4: target 25 ms, base delay = minimum ever.
    pub fn draft() -> Self {
        UtpCcConfig {
            variant: Variant::Draft,
            target: Duration::from_millis(25),
            gain: 1.0,
            max_increase_bytes_per_rtt: 0.0,
            min_window_packets: 1.0,
            initial_window_packets: 2.0,
            base_history: None,
            current_filter: 1,
            slow_start: false,
            loss_decay_interval: Duration::ZERO,
        }
    }
}

/// What one ACK tells the controller.
#[derive(Clone, Copy, Debug)]
pub struct UtpAck {
    pub now: Time,
    /// Bytes newly acknowledged (payload).
    pub acked_bytes: u64,
    /// Bytes in flight before this ACK.
    pub flight_before: u64,
    /// The peer's `timestamp_difference_microseconds` (our one-way delay plus
    /// the clock offset between the hosts).
    pub delay_sample_us: Option<u32>,
    /// Smallest RTT among the packets this ACK acknowledged.
    pub min_rtt: Option<Duration>,
    /// Payload bytes per packet.
    pub packet_size: u32,
    /// When the send window was last full (for bep29's app-limited guard).
    pub window_last_full: Time,
}

/// The most samples the current-delay filter takes (the variants use 1 to 4).
pub const MAX_CURRENT_FILTER: usize = 4;

/// uTP's congestion window.
#[derive(Clone, Debug)]
pub struct UtpLedbat {
    cfg: UtpCcConfig,
    /// Window, bytes.
    cwnd: f64,
    ssthresh: f64,
    slow_start: bool,
    /// Delay samples are compared relative to the first one (wrapping u32 us).
    origin: Option<u32>,
    /// The base-delay buckets closed so far, oldest first (at most
    /// `buckets - 1` of them), and their minimum (`i64::MAX`: none).
    base_closed: VecDeque<i64>,
    base_closed_min: i64,
    /// The minimum of the bucket being filled (with no history: of every sample).
    base_open: Option<i64>,
    bucket_start: Option<Time>,
    /// The last `current_filter` samples, in a ring.
    current: [i64; MAX_CURRENT_FILTER],
    current_len: u8,
    current_next: u8,
    our_delay_us: Option<i64>,
    last_decrease: Option<Time>,
}

impl UtpLedbat {
    pub fn new(cfg: UtpCcConfig, packet_size: u32) -> Self {
        assert!(
            (1..=MAX_CURRENT_FILTER).contains(&cfg.current_filter),
            "current_filter must be 1 to {MAX_CURRENT_FILTER}"
        );
        assert!(cfg.base_history.is_none_or(|(n, _)| n >= 1), "a base history needs a bucket");
        let cwnd = cfg.initial_window_packets * packet_size as f64;
        UtpLedbat {
            slow_start: cfg.slow_start,
            cfg,
            cwnd,
            ssthresh: f64::INFINITY,
            origin: None,
            base_closed: VecDeque::new(),
            base_closed_min: i64::MAX,
            base_open: None,
            bucket_start: None,
            current: [0; MAX_CURRENT_FILTER],
            current_len: 0,
            current_next: 0,
            our_delay_us: None,
            last_decrease: None,
        }
    }

    /// The congestion window in bytes.
    pub fn window(&self) -> u64 {
        self.cwnd as u64
    }

    /// Current queuing-delay estimate.
    pub fn queuing_delay(&self) -> Option<Duration> {
        self.our_delay_us.map(|d| Duration::from_micros(d.max(0) as u64))
    }

    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    fn floor(&self, packet_size: u32) -> f64 {
        self.cfg.min_window_packets * packet_size as f64
    }

    fn add_sample(&mut self, now: Time, raw: u32) {
        let origin = *self.origin.get_or_insert(raw);
        let d = raw.wrapping_sub(origin) as i32 as i64;
        match self.cfg.base_history {
            None => self.base_open = Some(self.base_open.map_or(d, |b| b.min(d))),
            Some((n, interval)) => {
                if self.bucket_start.is_none_or(|s| now.saturating_since(s) >= interval) {
                    // A new bucket: the open one closes, the oldest goes.
                    self.bucket_start = Some(now);
                    if let Some(b) = self.base_open.replace(d) {
                        self.base_closed.push_back(b);
                        if self.base_closed.len() >= n {
                            self.base_closed.pop_front();
                        }
                        self.base_closed_min = self.base_closed.iter().copied().min().unwrap_or(i64::MAX);
                    }
                } else if let Some(b) = &mut self.base_open {
                    *b = (*b).min(d);
                }
            }
        }
        let filter = self.cfg.current_filter;
        self.current[self.current_next as usize] = d;
        self.current_next = ((self.current_next as usize + 1) % filter) as u8;
        self.current_len = (self.current_len + 1).min(filter as u8);
        let base = self.base_closed_min.min(self.base_open.unwrap_or(d));
        let current = self.current[..self.current_len as usize].iter().copied().min().unwrap_or(d);
        self.our_delay_us = Some(current - base);
    }

    /// An ACK of `acked_bytes` new bytes.
    pub fn on_ack(&mut self, a: &UtpAck) {
        if let Some(raw) = a.delay_sample_us {
            self.add_sample(a.now, raw);
        }
        if a.acked_bytes == 0 {
            return;
        }
        let Some(mut our_delay) = self.our_delay_us else { return };
        let target = self.cfg.target.as_nanos() as f64 / 1000.0;
        let mss = a.packet_size as f64;
        match self.cfg.variant {
            Variant::Bep29 => {
                if let Some(rtt) = a.min_rtt {
                    our_delay = our_delay.min((rtt.as_nanos() / 1000) as i64);
                }
                let off_target = target - our_delay as f64;
                let acked = a.acked_bytes as f64;
                let window_factor = acked.min(self.cwnd) / self.cwnd.max(acked);
                let mut gain = self.cfg.max_increase_bytes_per_rtt * window_factor * off_target / target;
                if gain > 0.0 && a.now.saturating_since(a.window_last_full) > Duration::from_secs(1) {
                    gain = 0.0; // not using the window: do not grow it
                }
                let ledbat = (self.cwnd + gain).max(self.floor(a.packet_size));
                if self.slow_start {
                    let ss = self.cwnd + window_factor * mss;
                    if ss > self.ssthresh {
                        self.slow_start = false;
                    } else if our_delay as f64 > target * 0.9 {
                        self.slow_start = false;
                        self.ssthresh = self.cwnd;
                    } else {
                        self.cwnd = ss.max(ledbat);
                    }
                } else {
                    self.cwnd = ledbat;
                }
            }
            Variant::Rfc6817 | Variant::Draft => {
                let off_target = (target - our_delay as f64) / target;
                self.cwnd += self.cfg.gain * off_target * a.acked_bytes as f64 * mss / self.cwnd;
                if self.cfg.variant == Variant::Rfc6817 {
                    // ALLOWED_INCREASE = 1 MSS beyond what was in flight.
                    self.cwnd = self.cwnd.min(a.flight_before as f64 + mss);
                }
                self.cwnd = self.cwnd.max(self.floor(a.packet_size));
            }
        }
    }

    /// A packet was lost (fast retransmit). `rtt` rate-limits rfc6817/draft to one
    /// reduction per round trip.
    pub fn on_loss(&mut self, now: Time, rtt: Duration, packet_size: u32) {
        let interval = match self.cfg.variant {
            Variant::Bep29 => self.cfg.loss_decay_interval,
            _ => rtt,
        };
        if self.last_decrease.is_some_and(|t| now.saturating_since(t) < interval) {
            return;
        }
        self.last_decrease = Some(now);
        self.cwnd = (self.cwnd / 2.0).max(self.floor(packet_size));
        if self.cfg.variant == Variant::Bep29 {
            self.slow_start = false;
            self.ssthresh = self.cwnd;
        }
    }

    /// The retransmission timer fired with `flight` bytes outstanding.
    pub fn on_timeout(&mut self, flight: u64, packet_size: u32) {
        let mss = packet_size as f64;
        match self.cfg.variant {
            Variant::Bep29 => {
                if flight == 0 && self.cwnd > mss {
                    self.cwnd = (self.cwnd * 2.0 / 3.0).max(mss);
                } else {
                    self.cwnd = mss;
                    self.slow_start = true;
                }
            }
            _ => self.cwnd = mss,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u32 = 1000;

    fn ack(ms: u64, delay_ms: u32, acked: u64, flight: u64) -> UtpAck {
        UtpAck {
            now: Time(ms * 1_000_000),
            acked_bytes: acked,
            flight_before: flight,
            delay_sample_us: Some(delay_ms * 1000),
            min_rtt: None,
            packet_size: P,
            window_last_full: Time(ms * 1_000_000),
        }
    }

    /// One RTT: a window's worth of packet ACKs at a fixed one-way delay.
    fn rtt(l: &mut UtpLedbat, ms: u64, delay_ms: u32) {
        let n = (l.window() / P as u64).max(1);
        let flight = l.window();
        for _ in 0..n {
            l.on_ack(&ack(ms, delay_ms, P as u64, flight));
        }
    }

    #[test]
    fn bep29_grows_at_most_3000_bytes_per_rtt_with_an_empty_queue() {
        let mut l = UtpLedbat::new(UtpCcConfig { slow_start: false, ..UtpCcConfig::bep29() }, P);
        l.cwnd = 20_000.0;
        l.on_ack(&ack(0, 50, 0, 0)); // base delay
        let before = l.window();
        rtt(&mut l, 10, 50);
        let grown = l.window() - before;
        assert!(grown <= 3000 && grown > 2500, "grew {grown} bytes");
    }

    #[test]
    fn bep29_does_not_grow_a_window_the_sender_does_not_fill() {
        let mut l = UtpLedbat::new(UtpCcConfig { slow_start: false, ..UtpCcConfig::bep29() }, P);
        l.cwnd = 20_000.0;
        let before = l.window();
        for _ in 0..20 {
            l.on_ack(&UtpAck { window_last_full: Time::ZERO, ..ack(5000, 50, P as u64, 5000) });
        }
        assert_eq!(l.window(), before);
    }

    #[test]
    fn bep29_slow_start_ends_near_the_target_delay() {
        let mut l = UtpLedbat::new(UtpCcConfig::bep29(), P);
        l.on_ack(&ack(0, 50, P as u64, P as u64));
        assert!(l.in_slow_start());
        for i in 0..3 {
            // Three samples: the current delay is the minimum of the last three.
            l.on_ack(&ack(10 + i, 50 + 95, P as u64, P as u64)); // 95 ms > 0.9 x 100 ms
        }
        assert!(!l.in_slow_start());
    }

    #[test]
    fn bep29_halves_on_loss_at_most_once_per_100_ms() {
        let mut l = UtpLedbat::new(UtpCcConfig::bep29(), P);
        l.cwnd = 40_000.0;
        l.on_loss(Time(0), Duration::from_millis(50), P);
        l.on_loss(Time(50_000_000), Duration::from_millis(50), P);
        assert_eq!(l.window(), 20_000);
        l.on_loss(Time(100_000_000), Duration::from_millis(50), P);
        assert_eq!(l.window(), 10_000);
    }

    #[test]
    fn rfc6817_never_exceeds_the_flight_plus_one_mss_and_never_falls_below_two() {
        let mut l = UtpLedbat::new(UtpCcConfig::rfc6817(), P);
        l.cwnd = 10_000.0;
        l.on_ack(&ack(0, 20, 0, 0));
        l.on_ack(&ack(1, 20, P as u64, 3000)); // app-limited: only 3 packets in flight
        assert_eq!(l.window(), 4000);
        for i in 0..200 {
            l.on_ack(&ack(2 + i, 20 + 1000, P as u64, 4000)); // far above target
        }
        assert_eq!(l.window(), 2 * P as u64);
    }

    #[test]
    fn a_timeout_with_packets_in_flight_restarts_from_one_packet() {
        for cfg in [UtpCcConfig::bep29(), UtpCcConfig::rfc6817(), UtpCcConfig::draft()] {
            let mut l = UtpLedbat::new(cfg, P);
            l.cwnd = 30_000.0;
            l.on_timeout(5000, P);
            assert_eq!(l.window(), P as u64);
        }
    }

    #[test]
    fn delay_samples_survive_the_32_bit_microsecond_wrap() {
        let mut l = UtpLedbat::new(UtpCcConfig::draft(), P);
        l.on_ack(&UtpAck { delay_sample_us: Some(u32::MAX - 1000), ..ack(0, 0, 0, 0) });
        l.on_ack(&UtpAck { delay_sample_us: Some(9_000), ..ack(1, 0, 0, 0) });
        assert_eq!(l.queuing_delay(), Some(Duration::from_micros(10_001)));
    }
}
