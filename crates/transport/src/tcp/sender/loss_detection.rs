//! The sender with a segment log ([`super::super::rack`]): RACK-TLP (RFC
//! 8985) as Linux 4.18+ runs it for SACK flows, or 2.6's FACK. Every
//! segment's send time is logged, ACKs deliver segments and RACK (or FACK)
//! marks the lost ones, a loss starts fast recovery (no duplicate-ACK
//! count), recovery resends what is marked lost and then new data while the
//! pipe (Linux `tcp_packets_in_flight`) is below cwnd, a timeout marks lost
//! all but (RACK) the recently sent, and the tail loss probe fires in the
//! Open state.

use torrentlab_engine::{OptTime, OptU64, Time};

use super::super::rack::{self, Rack};
use super::super::recovery::{Frto, LossDetection};
use super::super::segment::Segment;
use super::episode::{rack, rack_mut};
use super::TcpSender;
use crate::cc::CongestionControl;

impl TcpSender {
    /// The RACK-TLP state a configuration asks for: with SACK, under RACK
    /// loss detection or the tail loss probe.
    pub(super) fn rack_for(cfg: &super::TcpConfig) -> Option<Rack> {
        (cfg.sack && (cfg.loss_detection != LossDetection::Rfc6675 || cfg.tail_loss_probe)).then(Rack::default)
    }

    /// The sender keeps RACK-TLP's state.
    #[inline]
    pub(super) fn has_rack(&self) -> bool {
        rack(&self.rare).is_some()
    }

    /// The segment log decides what is lost: RACK or FACK, not RFC 6675's
    /// rules.
    #[inline]
    pub(super) fn log_detects(&self) -> bool {
        self.has_rack() && self.cfg.loss_detection != LossDetection::Rfc6675
    }

    /// An ACK's deliveries into the log (before the sender's own state
    /// moves). Returns whether it SACKed something new.
    #[cold]
    pub(super) fn rack_on_ack(&mut self, now: Time, seg: &Segment, ack: u64) -> bool {
        let Some(r) = rack_mut(&mut self.rare) else { return false };
        let sacked = r.sacked;
        r.on_ack(now, ack.max(self.snd_una), seg.sack.ranges(ack));
        r.sacked > sacked
    }

    /// RFC 8985 §6.2 step 5 after an ACK or at the reordering timer: marks
    /// the lost segments and sets the reordering timer. Returns the bytes
    /// newly marked lost.
    #[cold]
    pub(super) fn rack_detect_loss(&mut self, now: Time, force: bool) -> u64 {
        let in_recovery = self.recovery.is_some();
        let dupthresh = self.cfg.dupack_threshold as u64 * self.cfg.mss as u64;
        let srtt = self.rtt.srtt();
        let Some(r) = rack_mut(&mut self.rare) else { return 0 };
        if !force && !r.advanced() {
            return 0;
        }
        let reo_wnd = r.reo_wnd(in_recovery, dupthresh, srtt);
        r.detect_loss(now, reo_wnd)
    }

    /// F-RTO (RFC 5682 §3; Linux `tcp_process_loss`) on an ACK after a
    /// timeout: data sent before the timeout (before the step-2b send) and
    /// never resent is delivered: spurious (step 3b); after the step-2b send,
    /// a duplicate or a SACK: the loss was real (step 3a); the first ACK that
    /// advances the window: new data goes out in place of retransmissions
    /// (step 2b), if there is any to send.
    fn frto_on_ack(&mut self, seg: &Segment, ack: u64, advances: bool, sack_news: bool) {
        let can_send_new = self.app_end > self.snd_max && self.snd_max - self.snd_una < self.peer_window as u64;
        let snd_max = self.snd_max;
        let Some(point) = self.rto_recovery() else {
            if let Some(r) = rack_mut(&mut self.rare) {
                r.frto = false; // the loss state ended: nothing left to judge
            }
            return;
        };
        let Some(r) = rack_mut(&mut self.rare) else { return };
        if r.orig_delivered_end <= point {
            self.frto_spurious();
        } else if r.frto_new_data {
            if sack_news || (!advances && seg.len == 0) {
                r.frto = false;
            }
        } else if advances && ack < point {
            if can_send_new {
                r.frto_new_data = true;
                self.recovery = OptU64::some(snd_max);
                self.recover = OptU64::some(snd_max);
            } else {
                r.frto = false;
            }
        }
    }

    /// A timeout found spurious: nothing is lost after all, the loss state
    /// ends, and the window is undone or kept reduced ([`Frto`]).
    fn frto_spurious(&mut self) {
        let Some(r) = rack_mut(&mut self.rare) else { return };
        r.unmark_lost();
        r.spurious_timeouts += 1;
        let (cwnd, ssthresh) = r.prior;
        match self.cfg.frto {
            Frto::Undo => {
                self.w.cwnd = self.w.cwnd.max(cwnd);
                self.w.ssthresh = self.w.ssthresh.max(ssthresh);
            }
            Frto::Reduce | Frto::Off => self.w.cwnd = self.w.cwnd.max(self.w.ssthresh.min(cwnd)),
        }
        self.recovery = OptU64::NONE;
        self.recover = OptU64::some(self.snd_una);
        self.after_rto = false;
    }

    /// 2.6's FACK marking, on an ACK with SACK news or with anything SACKed
    /// or in recovery (what reaches `tcp_fastretrans_alert`).
    #[cold]
    fn fack_detect(&mut self, now: Time, sack_news: bool) -> u64 {
        let in_fast_recovery = self.fast_recovery().is_some();
        let dubious = sack_news || self.recovery.is_some();
        let (una, rto) = (self.snd_una, self.rtt.rto(&self.cfg));
        let dupthresh = self.cfg.dupack_threshold as u64 * self.cfg.mss as u64;
        let Some(r) = rack_mut(&mut self.rare) else { return 0 };
        if !dubious && r.sacked == 0 {
            return 0;
        }
        r.fack_detect(now, una, dupthresh, rto, in_fast_recovery)
    }

    /// RACK found a loss outside any loss episode (Linux's Open or
    /// Disorder state, `tcp_time_to_recover`: "the loss is proven"): fast
    /// recovery.
    #[cold]
    pub(super) fn rack_may_enter_recovery(&mut self) {
        let lost = rack(&self.rare).is_some_and(|r| r.lost > 0);
        if lost && self.recovery.is_none() && self.episode().is_none() {
            self.enter_fast_recovery();
        }
    }

    /// After an ACK's own processing: what the probe found, RACK's loss
    /// marking and the recovery it starts, and the probe timer (Linux
    /// `tcp_process_tlp_ack`, `tcp_fastretrans_alert`, `tcp_set_xmit_timer`).
    #[cold]
    pub(super) fn rack_after_ack(&mut self, now: Time, seg: &Segment, ack: u64, advances: bool, sack_news: bool) {
        self.process_tlp_ack(seg, ack, advances, sack_news);
        if rack(&self.rare).is_some_and(|r| r.frto) {
            self.frto_on_ack(seg, ack, advances, sack_news);
        }
        let newly = match self.cfg.loss_detection {
            LossDetection::Rfc6675 => 0,
            LossDetection::Rack => self.rack_detect_loss(now, false),
            LossDetection::Fack => self.fack_detect(now, sack_news),
        };
        if newly > 0 {
            self.rack_may_enter_recovery();
        }
        if advances {
            self.schedule_probe(now, true);
        }
    }

    /// Transmission in a loss episode under RACK: the first retransmission
    /// of an episode at once, then, while `pipe + SMSS <= cwnd`, lost
    /// segments in sequence order, then new data (Linux
    /// `tcp_xmit_retransmit_queue`, then `tcp_write_xmit`).
    #[cold]
    pub(super) fn rack_transmit(&mut self, now: Time) -> Option<Segment> {
        let mss = self.cfg.mss;
        let r = rack(&self.rare)?;
        let lost = r.next_lost(mss);
        if std::mem::take(&mut self.retransmit_pending) {
            if let Some((seq, len)) = lost {
                return Some(self.retransmit(now, seq, len));
            }
        }
        if r.frto {
            // F-RTO: nothing more before the first ACK; new data only after it.
            if !r.frto_new_data || r.pipe(self.snd_max - self.snd_una) + mss as u64 > self.w.cwnd {
                return None;
            }
            return self.send_new_data(now);
        }
        if r.pipe(self.snd_max - self.snd_una) + mss as u64 > self.w.cwnd {
            return None;
        }
        if let Some((seq, len)) = lost {
            return Some(self.retransmit(now, seq, len));
        }
        let new = self.send_new_data(now);
        if new.is_some() || self.cfg.loss_detection != LossDetection::Fack || self.fast_recovery().is_none() {
            return new;
        }
        let (seq, len) = rack(&self.rare)?.next_forward(mss)?;
        Some(self.retransmit(now, seq, len))
    }

    /// The pipe of a SACK recovery: RACK's count, or RFC 6675's SetPipe.
    pub(super) fn sack_pipe(&self) -> u64 {
        if let Some(r) = rack(&self.rare).filter(|_| self.log_detects()) {
            return r.pipe(self.snd_max - self.snd_una);
        }
        let lost_below = self.scoreboard.lost_boundary(self.cfg.dupack_threshold, self.cfg.mss);
        let high_rxt = self.high_rxt.max(self.snd_una);
        self.scoreboard.pipe(self.snd_una, self.snd_max, high_rxt, lost_below.unwrap_or(self.snd_una))
    }

    /// Linux's Open state, where a probe may be scheduled: no loss episode,
    /// nothing SACKed, lost or being retransmitted, no duplicate ACKs.
    fn is_open(&self) -> bool {
        self.recovery.is_none()
            && self.episode().is_none()
            && self.dupacks == 0
            && rack(&self.rare).is_some_and(|r| r.is_open())
    }

    /// RFC 8985 §7.2 (Linux `tcp_schedule_loss_probe`): after new data
    /// left (`on_ack` false), or after an ACK of new data (`on_ack` true),
    /// in the Open state with data in flight, the probe timer is set to the
    /// probe timeout, but no later than the retransmission timer would fire
    /// (on an ACK: one RTO from now). Elsewhere it is stopped.
    #[cold]
    pub(super) fn schedule_probe(&mut self, now: Time, on_ack: bool) {
        if !self.cfg.tail_loss_probe {
            return;
        }
        let flight = self.snd_max - self.snd_una;
        let open = flight > 0 && self.is_open();
        let rto = self.rtt.rto(&self.cfg);
        let rto_left = if on_ack { rto } else { self.rto_deadline.get().map_or(rto, |t| t.saturating_since(now)) };
        let segments = flight.div_ceil(self.cfg.mss as u64);
        let pto = rack::probe_timeout(self.rtt.srtt(), segments, self.cfg.min_rto, self.cfg.initial_rto);
        let Some(r) = rack_mut(&mut self.rare) else { return };
        r.pto_deadline = if open { OptTime::some(now + pto.min(rto_left)) } else { OptTime::NONE };
    }

    /// The probe timer fired (Linux `tcp_send_loss_probe`): one probe per
    /// flight, and only in the Open state; otherwise the retransmission
    /// timer takes over.
    #[cold]
    pub(super) fn probe_timer_fired(&mut self, now: Time) {
        let open = self.is_open();
        let Some(r) = rack_mut(&mut self.rare) else { return };
        r.pto_deadline = OptTime::NONE;
        if r.tlp_high_seq.is_some() || !open || self.snd_max == self.snd_una {
            self.rto_deadline = OptTime::some(now + self.rtt.rto(&self.cfg));
            return;
        }
        r.probe_pending = true;
    }

    /// The probe itself: one segment of new data if the receive window lets
    /// it out (whatever cwnd says), else the last segment again; then the
    /// retransmission timer restarts.
    #[cold]
    pub(super) fn send_probe(&mut self, now: Time) -> Option<Segment> {
        let mss = self.cfg.mss;
        let r = rack_mut(&mut self.rare)?;
        r.probe_pending = false;
        let new_fits =
            self.snd_nxt < self.app_end && self.snd_nxt - self.snd_una + mss as u64 <= self.peer_window as u64;
        let seg = if new_fits {
            let len = (self.app_end - self.snd_nxt).min(mss as u64);
            self.send_new(now, len)
        } else {
            let (seq, len) = r.last_unsacked(mss)?;
            self.retransmit(now, seq, len)
        };
        let r = rack_mut(&mut self.rare).expect("checked above");
        r.tlp_retrans = !new_fits;
        r.tlp_high_seq = OptU64::some(self.snd_nxt);
        r.probes += 1;
        self.rto_deadline = OptTime::some(now + self.rtt.rto(&self.cfg));
        Some(seg)
    }

    /// Linux `tcp_process_tlp_ack`: an ACK at or above the probe's
    /// `snd_nxt` tells what it found. A probe of new data needs nothing; a
    /// retransmission that the ACK passes repaired a loss, and the window is
    /// reduced once (ssthresh from the controller, cwnd = ssthresh); a pure
    /// duplicate says both copies arrived.
    #[cold]
    pub(super) fn process_tlp_ack(&mut self, seg: &Segment, ack: u64, advances: bool, sack_news: bool) {
        let flight = self.snd_max - self.snd_una;
        let Some(r) = rack_mut(&mut self.rare) else { return };
        let Some(high) = r.tlp_high_seq.get() else { return };
        if ack < high {
            return;
        }
        if !r.tlp_retrans {
            r.tlp_high_seq = OptU64::NONE;
        } else if ack > high {
            r.tlp_high_seq = OptU64::NONE;
            self.w.ssthresh = self.cc.ssthresh_after_loss(&self.w, flight);
            self.w.cwnd = self.w.ssthresh;
        } else if !advances && !sack_news && seg.len == 0 {
            r.tlp_high_seq = OptU64::NONE;
        }
    }

    /// A loss episode begins: no probe in it (Linux `tcp_init_cwnd_reduction`
    /// and `tcp_enter_loss` clear `tlp_high_seq`).
    pub(super) fn rack_episode_begins(&mut self) {
        if let Some(r) = rack_mut(&mut self.rare) {
            r.tlp_high_seq = OptU64::NONE;
            r.pto_deadline = OptTime::NONE;
            r.probe_pending = false;
        }
    }

    /// The reordering or probe timer, if one is due; true if one fired.
    #[cold]
    pub(super) fn rack_timers(&mut self, now: Time) -> bool {
        let Some(r) = rack(&self.rare) else { return false };
        let (reo, pto) = (r.reo_deadline.get(), r.pto_deadline.get());
        let mut fired = false;
        if reo.is_some_and(|t| t <= now) {
            fired = true;
            // Linux `tcp_rack_reo_timeout`.
            if let Some(r) = rack_mut(&mut self.rare) {
                r.reo_deadline = OptTime::NONE;
            }
            if self.rack_detect_loss(now, true) > 0 {
                self.rack_may_enter_recovery();
            }
        }
        if pto.is_some_and(|t| t <= now) {
            fired = true;
            self.probe_timer_fired(now);
        }
        fired
    }
}
