//! NewReno window growth (RFC 5681 §3.1). Fast recovery itself (RFC 6582) lives
//! in the TCP sender, which calls these hooks.

use super::{AckSample, CongestionControl, Window};

/// Slow start (+min(N, SMSS) per ACK) and congestion avoidance (+1 SMSS per
/// window of acknowledged bytes, RFC 5681 §3.1 with byte counting as RFC 3465
/// describes for CA, so delayed ACKs do not slow growth).
#[derive(Clone, Debug, Default)]
pub struct NewReno {
    /// Bytes acknowledged since the window last grew in congestion avoidance.
    acked_in_ca: u64,
}

/// One step of RFC 5681 growth, shared with controllers that fall back to it.
#[inline]
pub(crate) fn reno_increase(w: &mut Window, acked: u64, acked_in_ca: &mut u64) {
    let mss = w.mss as u64;
    if w.in_slow_start() {
        w.cwnd += acked.min(mss);
    } else {
        *acked_in_ca += acked;
        if *acked_in_ca >= w.cwnd {
            *acked_in_ca -= w.cwnd;
            w.cwnd += mss;
        }
    }
}

impl CongestionControl for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    /// Linux `tcp_reno_cong_avoid`: nothing while the window is not in use.
    fn on_ack(&mut self, w: &mut Window, s: &AckSample) {
        if !s.app_limited {
            reno_increase(w, s.bytes_acked, &mut self.acked_in_ca);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(bytes: u64) -> AckSample {
        AckSample { bytes_acked: bytes, ..AckSample::default() }
    }

    #[test]
    fn slow_start_adds_one_mss_per_full_segment_acknowledged() {
        let mut w = Window { cwnd: 3000, ssthresh: u64::MAX, mss: 1000 };
        let mut r = NewReno::default();
        for _ in 0..3 {
            r.on_ack(&mut w, &ack(1000));
        }
        assert_eq!(w.cwnd, 6000, "one RTT of slow start doubles the window");
    }

    #[test]
    fn an_ack_to_a_sender_not_using_its_window_grows_nothing_in_either_phase() {
        let mut r = NewReno::default();
        for ssthresh in [u64::MAX, 5000] {
            let mut w = Window { cwnd: 10_000, ssthresh, mss: 1000 };
            for _ in 0..30 {
                r.on_ack(&mut w, &AckSample { app_limited: true, ..ack(1000) });
            }
            assert_eq!(w.cwnd, 10_000);
        }
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_window_of_acknowledged_data() {
        let mut w = Window { cwnd: 10_000, ssthresh: 5000, mss: 1000 };
        let mut r = NewReno::default();
        for _ in 0..10 {
            r.on_ack(&mut w, &ack(1000));
        }
        assert_eq!(w.cwnd, 11_000);
        for _ in 0..5 {
            r.on_ack(&mut w, &ack(2000)); // delayed ACKs: same growth per byte
        }
        assert_eq!(w.cwnd, 11_000, "10 000 bytes acked < an 11 000-byte window");
        r.on_ack(&mut w, &ack(1000));
        assert_eq!(w.cwnd, 12_000);
    }

    #[test]
    fn loss_sets_ssthresh_to_half_the_flight_but_never_below_two_segments() {
        let mut r = NewReno::default();
        let w = Window { cwnd: 20_000, ssthresh: u64::MAX, mss: 1000 };
        assert_eq!(r.ssthresh_after_loss(&w, 20_000), 10_000);
        assert_eq!(r.ssthresh_after_loss(&w, 1_000), 2_000);
    }

    #[test]
    fn a_timeout_collapses_the_window_to_one_segment() {
        let mut r = NewReno::default();
        let mut w = Window { cwnd: 20_000, ssthresh: u64::MAX, mss: 1000 };
        r.on_timeout(&mut w, 16_000);
        assert_eq!((w.cwnd, w.ssthresh), (1000, 8000));
    }
}
