//! The sender in and around a loss episode: entering fast recovery, the
//! retransmission timeout, and the rules of [`super::super::recovery`] that
//! the configuration switches on (limited transmit, ssthresh on a timeout
//! inside an episode, rate halving and PRR).

use torrentlab_engine::{OptTime, OptU64, Time};

use super::super::rack::Rack;
use super::super::recovery::{self, Episode, RateReduction, RecoveryRate};
use super::TcpSender;
use crate::cc::CongestionControl;

impl TcpSender {
    /// The loss episode under way, if any: until `snd_una` reaches `recover`.
    #[inline]
    pub(super) fn episode(&self) -> Option<Episode> {
        let by_timeout = self.after_rto;
        self.recover.get().filter(|&r| self.snd_una < r).map(|_| {
            if by_timeout {
                Episode::Timeout
            } else {
                Episode::FastRecovery
            }
        })
    }

    /// RFC 3042: how far new data may go beyond cwnd on this many duplicate
    /// ACKs, if limited transmit is on and no loss episode is under way.
    #[inline]
    pub(super) fn limited_transmit_room(&self) -> u64 {
        if !self.cfg.limited_transmit || self.recovery.is_some() || self.episode().is_some() {
            return 0;
        }
        recovery::limited_transmit_room(self.dupacks, self.cfg.dupack_threshold, self.cfg.mss)
    }

    /// New data was acknowledged, or the timer fired: what limited transmit
    /// sent no longer matters.
    pub(super) fn forget_limited_transmit(&mut self) {
        if let Some(r) = self.rare.as_deref_mut() {
            r.limited_sent = 0;
        }
    }

    /// NewReno fast recovery at a reduced rate: the bytes duplicate ACKs say
    /// the receiver holds (0 otherwise).
    #[inline]
    pub(super) fn reno_held(&self) -> u64 {
        match (&self.rare, self.recovery.is_some()) {
            (Some(r), true) => r.rate.reno_sacked,
            _ => 0,
        }
    }

    /// Rate halving or PRR after an ACK in fast recovery that delivered
    /// `delivered` bytes: the window is set from what is in flight now.
    #[cold]
    pub(super) fn reduce_rate(&mut self, delivered: u64) {
        let mss = self.cfg.mss as u64;
        let pipe = if self.cfg.sack {
            self.sack_pipe()
        } else {
            let flight = self.snd_max - self.snd_una;
            let head = if self.retransmit_pending { flight.min(mss) } else { 0 };
            (flight - self.reno_held()).saturating_sub(head)
        };
        let rate = self.cfg.recovery_rate;
        if let Some(r) = self.rare.as_deref_mut() {
            self.w.cwnd = r.rate.cwnd_after_ack(rate, &self.w, pipe, delivered).max(mss);
        }
    }

    /// Fast retransmit: ssthresh from the controller, the window by
    /// [`RecoveryRate`], and the first retransmission at once (RFC 5681 §3.2,
    /// RFC 6582 §3.2 step 2, RFC 6675 §5).
    pub(super) fn enter_fast_recovery(&mut self) {
        let mss = self.cfg.mss as u64;
        // Without what limited transmit sent (RFC 5681 §3.2 step 2).
        let limited = self.rare.as_deref_mut().map_or(0, |r| std::mem::take(&mut r.limited_sent));
        let flight = (self.snd_max - self.snd_una).saturating_sub(limited);
        let prior_cwnd = self.w.cwnd;
        self.w.ssthresh = self.cc.ssthresh_after_loss(&self.w, flight);
        // NewReno inflates by the three segments that left; SACK counts the pipe.
        self.w.cwnd = if self.cfg.sack { self.w.ssthresh } else { self.w.ssthresh + 3 * mss };
        if self.cfg.recovery_rate != RecoveryRate::Rfc {
            // The window moves from where it was, ACK by ACK (`reduce_rate`);
            // without SACK the duplicates so far count as segments held.
            self.w.cwnd = prior_cwnd;
            let r = &mut self.rare.get_or_insert_with(Default::default).rate;
            r.start(prior_cwnd);
            if !self.cfg.sack {
                r.reno_sacked = (self.dupacks as u64 * mss).min((self.snd_max - self.snd_una).saturating_sub(mss));
            }
        }
        self.high_rxt = self.snd_una;
        self.recovery = OptU64::some(self.snd_max);
        self.after_rto = false;
        self.partial_ack_seen = false;
        self.recover = OptU64::some(self.snd_max);
        self.retransmit_pending = true;
        self.losses.fast_retransmits += 1;
        self.rack_episode_begins();
    }

    /// Fires the retransmission timer if it is due; harmless otherwise.
    pub fn handle_timeout(&mut self, now: Time) {
        if self.has_rack() {
            self.rack_timers(now);
        }
        let Some(deadline) = self.rto_deadline.get() else { return };
        if now < deadline {
            return;
        }
        if self.snd_una >= self.snd_max {
            self.rto_deadline = OptTime::NONE;
            return;
        }
        self.losses.timeouts += 1;
        let flight = self.snd_max - self.snd_una;
        // Linux `tcp_enter_loss`: what an undo would go back to, and whether
        // F-RTO may judge this timeout (not the first one inside a recovery).
        let cwnd = self.w.cwnd;
        let prior = (cwnd, self.w.ssthresh.max(cwnd / 2 + cwnd / 4));
        let frto = self.episode().is_none() || self.rtt.backoff_count() > 0;
        let reduces = recovery::rto_reduces_ssthresh(self.episode(), self.rtt.backoff_count());
        if self.cfg.rto_keeps_recovery_ssthresh && !reduces {
            // Linux `tcp_enter_loss` inside a loss episode: the loss window,
            // ssthresh as the episode set it.
            self.w.cwnd = self.cc.loss_window(&self.w);
        } else {
            self.cc.on_timeout(&mut self.w, flight);
        }
        self.after_rto = true;
        self.forget_limited_transmit();
        self.recovery = OptU64::NONE;
        self.recover = OptU64::some(self.snd_max);
        self.dupacks = 0;
        self.retransmit_pending = false;
        if self.cfg.sack {
            // Every unSACKed byte sent so far is lost; resend those, skipping
            // what the receiver holds (as Linux's loss state does).
            self.recovery = OptU64::some(self.snd_max);
            self.high_rxt = self.snd_una;
            if let Some(r) = rack_mut(&mut self.rare) {
                // RACK: the head and all but the recently sent are lost (FACK:
                // all); the head goes again at once (Linux
                // `tcp_retransmit_timer`).
                let rack = self.cfg.loss_detection == recovery::LossDetection::Rack;
                r.mark_lost_on_timeout(now, rack);
                r.frto = frto
                    && self.cfg.frto != recovery::Frto::Off
                    && self.cfg.loss_detection != recovery::LossDetection::Rfc6675;
                r.frto_new_data = false;
                if reduces || !self.cfg.rto_keeps_recovery_ssthresh {
                    r.prior = prior;
                }
                self.retransmit_pending = self.cfg.loss_detection != recovery::LossDetection::Rfc6675;
            }
        } else {
            self.snd_nxt = self.snd_una;
        }
        self.rtt.on_timeout();
        self.rto_deadline = OptTime::some(now + self.rtt.rto(&self.cfg));
        self.enforce_no_slow_start();
    }
}

/// RACK-TLP's state, if the sender keeps it (a function of the field, not of
/// the sender, so the other fields stay free to borrow beside it).
#[inline]
pub(super) fn rack(rare: &Option<Box<Rare>>) -> Option<&Rack> {
    rare.as_deref()?.rack.as_ref()
}

/// [`rack`], to change.
#[inline]
pub(super) fn rack_mut(rare: &mut Option<Box<Rare>>) -> Option<&mut Rack> {
    rare.as_deref_mut()?.rack.as_mut()
}

/// What few senders need, out of line.
#[derive(Debug, Default)]
pub(super) struct Rare {
    /// With a window below one segment (TCP Nice): the earliest time the next
    /// lone segment may leave, one segment per `srtt x mss / cwnd`.
    pub(super) paced_until: OptTime,
    /// Bytes sent by limited transmit since the last ACK of new data: not
    /// counted in the flight that sets ssthresh (RFC 5681 §3.2 step 2).
    pub(super) limited_sent: u64,
    /// A fast recovery under rate halving or PRR.
    pub(super) rate: RateReduction,
    /// RACK-TLP's segment log and timers (RFC 8985), for SACK flows that
    /// ask for either (from the start).
    pub(super) rack: Option<Rack>,
}
