//! Loss-recovery rules on which the RFCs and Linux's kernel eras differ, as
//! [`TcpConfig`](super::TcpConfig) switches (docs/model.md, "Loss recovery by
//! kernel era"). The `rfc` preset takes the RFC reading of each; the
//! `linux-2.6.32` and `linux-6` presets take what those kernels do.
//!
//! * [`NewRenoTimer`]: which ACKs restart the retransmission timer during
//!   NewReno fast recovery (RFC 6582 §4).
//! * [`rto_reduces_ssthresh`]: whether a timeout inside a loss episode sets
//!   ssthresh again (Linux `tcp_enter_loss`).
//! * [`limited_transmit_room`]: new data on the first two duplicate ACKs
//!   (RFC 3042).
//! * [`LossDetection`]: RFC 6675's duplicate-ACK rules, 2.6's FACK, or RACK
//!   (RFC 8985).
//! * [`Frto`]: spurious-timeout detection (RFC 5682) and its response.
//! * [`RecoveryRate`] and [`RateReduction`]: how fast a fast recovery sends
//!   (RFC 6675 / 6582 as written, Linux 2.6's rate halving, or PRR).

use serde::{Deserialize, Serialize};

use crate::cc::Window;

/// Which ACKs restart the retransmission timer during NewReno fast recovery
/// (RFC 6582 §4 names both variants). Outside NewReno fast recovery every
/// ACK that advances `snd_una` restarts it (RFC 6298 (5.3)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NewRenoTimer {
    /// Only the first partial ACK of a recovery restarts the timer (RFC 6582
    /// §3.2 step 5 and §4, the RFC's recommendation). NewReno repairs one hole
    /// per RTT, so a window with more holes than RTOs fit in RTTs ends in a
    /// timeout, and with it a go-back-N.
    Impatient,
    /// Every partial ACK restarts the timer: a recovery of n holes takes n
    /// RTTs and no timeout while the ACK clock runs. Linux in every era
    /// (`tcp_ack_packets_out` in 2.6, `tcp_rearm_rto` from `tcp_clean_rtx_queue`
    /// later) restarts it on every ACK that acknowledges data.
    SlowButSteady,
}

impl NewRenoTimer {
    /// Whether a partial ACK restarts the timer; `first` is true for the
    /// first partial ACK of the recovery.
    #[inline]
    pub(crate) fn restarts_on_partial_ack(self, first: bool) -> bool {
        match self {
            NewRenoTimer::Impatient => first,
            NewRenoTimer::SlowButSteady => true,
        }
    }
}

/// The loss episode a sender is in: from a fast retransmit or a timeout until
/// `snd_una` reaches the highest byte sent when it began (`recover`, Linux
/// `high_seq`). Linux's `TCP_CA_Recovery` and `TCP_CA_Loss` states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Episode {
    /// Begun by a fast retransmit (`TCP_CA_Recovery`).
    FastRecovery,
    /// Begun by a timeout (`TCP_CA_Loss`).
    Timeout,
}

/// Whether a timeout recomputes ssthresh, as Linux's `tcp_enter_loss`
/// decides it ("Reduce ssthresh if it has not yet been made inside this
/// window", the same test in 2.6 and 6.x): yes outside a loss episode (Open
/// or Disorder, or `snd_una` at or past `high_seq`), no inside a fast
/// recovery (its ssthresh stands), and inside the episode of an earlier
/// timeout only if data was acknowledged since that timeout
/// (`icsk_retransmits == 0`; `backoffs` counts the timeouts since the last
/// ACK that advanced `snd_una`). RFC 5681 §3.1 asks the same of repeated
/// timeouts: ssthresh stays as the first one set it. The ssthresh from the
/// flight at the time would otherwise count, after a long NewReno recovery,
/// every segment the duplicate ACKs inflated the window by.
#[inline]
pub(crate) fn rto_reduces_ssthresh(episode: Option<Episode>, backoffs: u32) -> bool {
    match episode {
        None => true,
        Some(Episode::FastRecovery) => false,
        Some(Episode::Timeout) => backoffs == 0,
    }
}

/// RFC 3042 §2, limited transmit: the bytes by which new data may exceed
/// cwnd after `dupacks` duplicate ACKs, outside loss recovery: one segment
/// on each of the first two (the flight stays within cwnd + 2 SMSS; cwnd
/// itself is unchanged). With a small window a single loss then still
/// brings the third duplicate ACK that starts fast retransmit, where
/// without it the timer has to fire. Linux gets the same in every era from
/// counting SACKed (or, without SACK, duplicate-ACKed) segments out of
/// `tcp_packets_in_flight` while in the Disorder state.
#[inline]
pub(crate) fn limited_transmit_room(dupacks: u32, dupthresh: u32, mss: u32) -> u64 {
    if dupacks >= dupthresh {
        return 0;
    }
    dupacks.min(2) as u64 * mss as u64
}

/// How a SACK sender decides that a segment is lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LossDetection {
    /// RFC 6675: DupThresh duplicate ACKs, or IsLost (more than DupThresh - 1
    /// segments' worth, or DupThresh blocks, SACKed above a hole); a hole
    /// retransmitted once is not found lost again before the timeout.
    Rfc6675,
    /// RACK (RFC 8985 §6, Linux 4.18+'s only SACK loss detection): by send
    /// time, with a reordering window; lost retransmissions are found too
    /// (`tcp/rack.rs`).
    Rack,
    /// Forward acknowledgement, Linux's default up to 4.10 (`tcp_fack =
    /// 1`), as 2.6.32 runs it: every unSACKed segment DupThresh segments or
    /// more below the highest SACKed byte is lost, and a recovery starts as
    /// soon as one is; in a recovery, a retransmission is lost once data sent
    /// after it is SACKed (`tcp_mark_lost_retrans`), and segments out longer
    /// than the RTO are lost (`tcp_timeout_skbs`); with nothing new to send,
    /// holes below the highest SACK go again (forward retransmission).
    Fack,
}

/// F-RTO (RFC 5682 §3, the SACK-enhanced algorithm; Linux 3.10+
/// `tcp_process_loss`, and from 2.6.24 an earlier SACK-enhanced form on by
/// default): after a timeout only the first segment is resent; if the first
/// ACK then advances the window, new data goes out instead of further
/// retransmissions, and if the ACKs go on to acknowledge (or SACK) data
/// sent before the timeout and never resent, the timeout was spurious (a
/// delay spike, not a loss). With SACK and the log's loss detection only
/// (RACK or FACK).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Frto {
    /// Every timeout is a loss.
    Off,
    /// A spurious timeout is undone: cwnd and ssthresh go back to what they
    /// were before it (Linux 3.10+, `tcp_try_undo_loss`).
    Undo,
    /// A spurious timeout ends the loss state with cwnd = the reduced
    /// ssthresh and no further retransmission (Linux 2.6's default response,
    /// `tcp_frto_response = 0`: `tcp_ratehalving_spur_to_response`).
    Reduce,
}

/// How fast recovery paces what it sends, and with it how NewReno counts the
/// duplicate ACKs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecoveryRate {
    /// As the RFCs write it. SACK (RFC 6675 §5): cwnd = ssthresh at once, and
    /// the sender waits until the pipe has drained below it. NewReno (RFC
    /// 6582, RFC 5681 §3.2): cwnd = ssthresh + 3 SMSS, inflated by one SMSS per
    /// further duplicate ACK and deflated by partial ACKs, against the whole
    /// flight.
    Rfc,
    /// Linux up to 3.1 (`tcp_cwnd_down`): cwnd starts where it was and loses
    /// one segment every second ACK that brings news (data acknowledged or
    /// SACKed, or a duplicate ACK without SACK), not below ssthresh, and never
    /// more than one segment above what is in flight; recovery ends with
    /// cwnd = min(cwnd, ssthresh) (`tcp_complete_cwr`).
    RateHalving,
    /// Proportional Rate Reduction (RFC 6937 §3 with PRR-SSRB; Linux 3.2+
    /// `tcp_cwnd_reduction`): while the pipe is above ssthresh, the sender
    /// sends `ssthresh / RecoverFS` of what is delivered (rounded up to whole
    /// segments, with RecoverFS = cwnd at the start, Linux's `prior_cwnd`);
    /// below it, it catches up to ssthresh by at most one segment more than
    /// is delivered. Recovery ends with cwnd = ssthresh.
    Prr,
}

/// The state of one fast recovery under [`RecoveryRate::RateHalving`] or
/// [`RecoveryRate::Prr`]. Both count what is in flight as Linux's
/// `tcp_packets_in_flight` does, so without SACK each duplicate ACK counts
/// as one segment the receiver holds (Linux's `tcp_add_reno_sack`) and the
/// window is never inflated.
#[derive(Clone, Debug, Default)]
pub(crate) struct RateReduction {
    /// cwnd when the recovery began (Linux `prior_cwnd`).
    prior_cwnd: u64,
    /// Bytes delivered to the receiver since then (`prr_delivered`).
    delivered: u64,
    /// Bytes sent since then (`prr_out`).
    out: u64,
    /// Rate halving: a reduction is owed from the last progress ACK
    /// (`snd_cwnd_cnt & 1`).
    owed: bool,
    /// NewReno: bytes the duplicate ACKs of this recovery say the receiver
    /// holds above the hole (Linux `sacked_out` without SACK).
    pub reno_sacked: u64,
}

impl RateReduction {
    /// A recovery begins with the window at `cwnd`.
    pub fn start(&mut self, cwnd: u64) {
        *self = RateReduction { prior_cwnd: cwnd.max(1), ..RateReduction::default() };
    }

    /// `len` bytes left during the recovery.
    #[inline]
    pub fn sent(&mut self, len: u32) {
        self.out += len as u64;
    }

    /// NewReno: a duplicate ACK in recovery: one more segment held by the
    /// receiver, at most all of the `flight` but one segment. Returns the bytes
    /// it delivered.
    pub fn reno_duplicate(&mut self, flight: u64, mss: u64) -> u64 {
        let before = self.reno_sacked;
        self.reno_sacked = (before + mss).min(flight.saturating_sub(mss));
        self.reno_sacked.saturating_sub(before)
    }

    /// NewReno: a partial ACK of `acked` bytes: the hole it filled plus
    /// segments duplicate ACKs had counted (Linux `tcp_remove_reno_sacks`).
    /// Returns the bytes it delivered (at least one segment).
    pub fn reno_partial_ack(&mut self, acked: u64, mss: u64) -> u64 {
        let delivered = acked.saturating_sub(self.reno_sacked).max(mss);
        self.reno_sacked = self.reno_sacked.saturating_sub(acked.saturating_sub(mss));
        delivered
    }

    /// The window after an ACK of the recovery that delivered `delivered`
    /// bytes, with `pipe` bytes in flight now.
    pub fn cwnd_after_ack(&mut self, rate: RecoveryRate, w: &Window, pipe: u64, delivered: u64) -> u64 {
        let mss = w.mss as u64;
        match rate {
            RecoveryRate::Rfc => w.cwnd,
            RecoveryRate::RateHalving => {
                if delivered == 0 {
                    return w.cwnd;
                }
                let mut cwnd = w.cwnd;
                // Every second ACK with news takes a segment off, down to ssthresh.
                self.owed = !self.owed;
                if !self.owed && cwnd > w.ssthresh {
                    cwnd = cwnd.saturating_sub(mss).max(w.ssthresh);
                }
                cwnd.min(pipe + mss)
            }
            RecoveryRate::Prr => {
                if delivered == 0 {
                    return w.cwnd; // Linux: no news, no change
                }
                self.delivered += delivered;
                let sndcnt = if pipe > w.ssthresh {
                    // Proportional part, in whole segments as Linux counts.
                    let share = self.delivered as u128 * w.ssthresh as u128;
                    let segments = share.div_ceil(self.prior_cwnd as u128 * mss as u128);
                    (segments as u64 * mss).saturating_sub(self.out)
                } else {
                    // PRR-SSRB: catch up to ssthresh, one segment ahead of delivery.
                    let limit = self.delivered.saturating_sub(self.out).max(delivered) + mss;
                    (w.ssthresh - pipe).min(limit)
                };
                // The first retransmission of a recovery always goes.
                let sndcnt = if self.out == 0 { sndcnt.max(mss) } else { sndcnt };
                pipe + sndcnt
            }
        }
    }

    /// The window when the recovery ends with a full acknowledgement.
    pub fn cwnd_at_end(rate: RecoveryRate, w: &Window) -> u64 {
        match rate {
            RecoveryRate::RateHalving => w.cwnd.min(w.ssthresh),
            RecoveryRate::Rfc | RecoveryRate::Prr => w.ssthresh,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_impatient_timer_restarts_only_on_the_first_partial_ack_and_slow_but_steady_on_every_one() {
        assert!(NewRenoTimer::Impatient.restarts_on_partial_ack(true));
        assert!(!NewRenoTimer::Impatient.restarts_on_partial_ack(false));
        assert!(NewRenoTimer::SlowButSteady.restarts_on_partial_ack(false));
    }

    #[test]
    fn a_timeout_keeps_ssthresh_inside_a_recovery_and_after_a_timeout_with_no_progress() {
        assert!(rto_reduces_ssthresh(None, 0), "outside an episode");
        assert!(!rto_reduces_ssthresh(Some(Episode::FastRecovery), 0));
        assert!(!rto_reduces_ssthresh(Some(Episode::Timeout), 1), "a backed-off timeout");
        assert!(rto_reduces_ssthresh(Some(Episode::Timeout), 0), "data was acknowledged since the last");
    }

    #[test]
    fn without_sack_duplicates_count_as_held_segments_and_a_partial_ack_delivers_the_rest() {
        let mut r = RateReduction::default();
        r.start(20_000);
        assert_eq!(r.reno_duplicate(20_000, 1000), 1000);
        r.reno_sacked = 19_000;
        assert_eq!(r.reno_duplicate(20_000, 1000), 0, "never more than the flight but one segment");
        // A partial ACK of 10 segments: the hole and 9 the duplicates counted.
        r.reno_sacked = 9000;
        assert_eq!(r.reno_partial_ack(10_000, 1000), 1000, "the hole");
        assert_eq!(r.reno_sacked, 0);
        // Segments held from before this recovery are delivered by it too (Linux).
        r.reno_sacked = 2000;
        assert_eq!(r.reno_partial_ack(10_000, 1000), 8000);
    }

    #[test]
    fn rate_halving_takes_a_segment_every_second_ack_and_prr_a_share_in_whole_segments() {
        let w = Window { cwnd: 20_000, ssthresh: 10_000, mss: 1000 };
        let mut r = RateReduction::default();
        r.start(w.cwnd);
        let halving: Vec<u64> = (0..4).map(|_| r.cwnd_after_ack(RecoveryRate::RateHalving, &w, 19_000, 1000)).collect();
        assert_eq!(halving, [20_000, 19_000, 20_000, 19_000], "w is not updated here: the step, capped at pipe + 1");
        let mut p = RateReduction::default();
        p.start(w.cwnd);
        assert_eq!(p.cwnd_after_ack(RecoveryRate::Prr, &w, 16_000, 1000), 17_000, "the first retransmission");
        p.sent(1000);
        assert_eq!(p.cwnd_after_ack(RecoveryRate::Prr, &w, 15_000, 1000), 15_000, "ceil(2 x 1/2) - 1 = 0");
        assert_eq!(p.cwnd_after_ack(RecoveryRate::Prr, &w, 14_000, 1000), 15_000, "ceil(3 x 1/2) - 1 = 1");
        assert_eq!(p.cwnd_after_ack(RecoveryRate::Prr, &w, 14_000, 0), w.cwnd, "no news: as it was");
        assert_eq!(RateReduction::cwnd_at_end(RecoveryRate::RateHalving, &Window { cwnd: 8000, ..w }), 8000);
        assert_eq!(RateReduction::cwnd_at_end(RecoveryRate::Prr, &Window { cwnd: 8000, ..w }), 10_000);
    }

    #[test]
    fn limited_transmit_allows_one_segment_per_duplicate_for_the_first_two() {
        let room = |d| limited_transmit_room(d, 3, 1000);
        assert_eq!([room(0), room(1), room(2), room(3), room(4)], [0, 1000, 2000, 0, 0]);
        assert_eq!(limited_transmit_room(4, 5, 1000), 2000, "never more than two segments");
    }
}
