//! RACK-TLP (RFC 8985): time-based loss detection for SACK flows, the only
//! SACK loss detection of Linux since 4.18, and the tail loss probe (Linux
//! 3.10+, on by default: `tcp_early_retrans = 3`).
//!
//! RACK keeps the send time of every segment in flight. A segment is lost
//! when a segment sent after it has been delivered (cumulatively ACKed or
//! SACKed) and it is still unacknowledged a reordering window after that
//! delivery's RTT: `xmit_ts + RACK.rtt + reo_wnd <= now`. Retransmissions
//! get new send times, so a lost retransmission is found the same way, one
//! RTT later, instead of by the retransmission timer. When the window has not
//! yet passed, a reordering timer fires when it does. Before the loss is
//! proven with fewer than DupThresh segments SACKed, the window is a quarter
//! of the minimum RTT; once DupThresh are SACKed, or in a recovery, it is 0
//! unless reordering has been seen (RFC 8985 §6.2 step 4, Linux
//! `tcp_rack_reo_wnd`).
//!
//! TLP: with data in flight, nothing SACKed or lost and no recovery under
//! way (Linux's Open state), a probe timer of two SRTTs (plus 200 ms with a
//! single segment out, for the receiver's delayed ACK; at most the time left
//! to the RTO) sends one new segment, or retransmits the last one, so that a
//! tail loss brings SACKs and a fast recovery instead of a timeout. One probe
//! per flight (`tlp_high_seq`); a probe retransmission that the ACKs show
//! repaired a loss reduces the window once (Linux `tcp_process_tlp_ack`).
//!
//! The same log serves Linux 2.6's FACK ([`Rack::fack_detect`]: by sequence,
//! not time) and F-RTO's verdict on a timeout (RFC 5682).
//!
//! Byte counts follow Linux's packet counters: `pipe = flight - sacked -
//! lost + retransmitted-and-in-flight` (`tcp_packets_in_flight`). This module
//! keeps the per-segment log and the state of RACK, TLP and F-RTO; the
//! sender's use of it is in `sender/loss_detection.rs`.

use std::collections::VecDeque;

use torrentlab_engine::{Duration, OptTime, OptU64, Time};

/// A segment in flight as RACK sees it: where it is, when it (last) left,
/// and what the ACKs said of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sent {
    seq: u64,
    len: u32,
    flags: u8,
    /// When this copy left (the last retransmission's time).
    xmit: Time,
    /// The highest byte sent + 1 when this copy left (Linux 2.6 keeps it in
    /// a resent segment's `ack_seq` for `tcp_mark_lost_retrans`).
    nxt: u64,
}

/// SACKed by the receiver.
const SACKED: u8 = 1;
/// Deemed lost (Linux `TCPCB_LOST`; it stays when the segment is resent,
/// so lost and not yet resent is `LOST` without `RETRANS`).
const LOST: u8 = 2;
/// A retransmission of it is in flight (Linux `TCPCB_SACKED_RETRANS`).
const RETRANS: u8 = 4;
/// Retransmitted at least once (Linux `TCPCB_EVER_RETRANS`).
const EVER_RETRANS: u8 = 8;

impl Sent {
    fn end(&self) -> u64 {
        self.seq + self.len as u64
    }

    fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// RFC 8985 §6.2 `RACK_sent_after`: was (t1, seq1) sent after (t2, seq2)?
/// Segments that left at the same instant are ordered by sequence number.
#[inline]
fn sent_after(t1: Time, seq1: u64, t2: Time, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

/// The segment log, RACK's state (RFC 8985 §6.1) and TLP's (§7.1).
#[derive(Debug, Default)]
pub(crate) struct Rack {
    /// The segments from `snd_una` to `snd_max`, in sequence order.
    log: VecDeque<Sent>,
    /// `RACK.xmit_ts` and `RACK.end_seq`: the most recently sent segment
    /// known delivered.
    xmit_ts: Time,
    end_seq: u64,
    /// `RACK.rtt`: the RTT of that delivery.
    rtt: Duration,
    /// The smallest RTT of a segment never retransmitted (Linux windows it
    /// over 300 s; here it is the connection's minimum).
    min_rtt: Option<Duration>,
    /// `RACK.fack`: the highest end of a delivered segment.
    fack: u64,
    /// The highest end of a SACKed segment (Linux `tcp_highest_sack_seq`).
    high_sack: u64,
    /// A segment never retransmitted was delivered below `fack`.
    reordering_seen: bool,
    /// A delivery moved RACK's state since the last detection (Linux
    /// `rack.advanced`).
    advanced: bool,
    /// Bytes SACKed, deemed lost (resent or not), and retransmitted and in
    /// flight: Linux's `sacked_out`, `lost_out` and `retrans_out` in bytes.
    pub sacked: u64,
    pub lost: u64,
    pub retrans: u64,
    /// Lost retransmissions found (Linux `TCPLostRetransmit`).
    pub lost_retransmits: u64,
    /// When the reordering window of a not-yet-lost segment ends.
    pub reo_deadline: OptTime,
    /// TLP: when the probe timer fires.
    pub pto_deadline: OptTime,
    /// TLP: `snd_nxt` when the last probe left, until the ACKs tell what
    /// it found (`TLP.end_seq`, Linux `tlp_high_seq`).
    pub tlp_high_seq: OptU64,
    /// TLP: the last probe was a retransmission.
    pub tlp_retrans: bool,
    /// TLP: the probe timer fired; the next transmission is the probe.
    pub probe_pending: bool,
    /// Probes sent.
    pub probes: u64,
    /// The lowest end of a segment never retransmitted that the last ACK
    /// delivered (`u64::MAX`: none); Linux's `FLAG_ORIG_SACK_ACKED` is this
    /// at or below `high_seq`.
    pub orig_delivered_end: u64,
    /// F-RTO (RFC 5682): the timeout's verdict is still open.
    pub frto: bool,
    /// F-RTO: new data went out after the first ACK (step 2b).
    pub frto_new_data: bool,
    /// cwnd and ssthresh before the last timeout that reduced them (Linux
    /// `prior_cwnd`, `prior_ssthresh`), for an undo.
    pub prior: (u64, u64),
    /// Timeouts found spurious (Linux `TCPSpuriousRTOs`).
    pub spurious_timeouts: u64,
}

impl Rack {
    /// `len` bytes at `seq` left at `now`: new data joins the log; a
    /// retransmission takes a new send time (the entry is split first if it
    /// covers more than was resent).
    pub fn on_send(&mut self, now: Time, seq: u64, len: u32) {
        let snd_max = self.log.back().map_or(0, |s| s.end());
        if seq >= snd_max {
            let end = seq + len as u64;
            self.log.push_back(Sent { seq, len, flags: 0, xmit: now, nxt: end });
            return;
        }
        let Some(i) = self.split_at(seq) else { return };
        self.split_at(seq + len as u64);
        let mut j = i;
        while j < self.log.len() && self.log[j].seq < seq + len as u64 {
            let s = &mut self.log[j];
            j += 1;
            if s.has(SACKED) {
                continue;
            }
            if !s.has(RETRANS) {
                self.retrans += s.len as u64;
            }
            s.flags |= RETRANS | EVER_RETRANS;
            s.xmit = now;
            s.nxt = snd_max;
        }
    }

    /// Splits the entry holding `at` so that one begins there; returns the
    /// index of the entry beginning at `at`, if any entry holds it.
    fn split_at(&mut self, at: u64) -> Option<usize> {
        let i = self.log.partition_point(|s| s.end() <= at);
        let s = *self.log.get(i)?;
        if s.seq >= at {
            return Some(i);
        }
        let head = (at - s.seq) as u32;
        self.log[i].len = head;
        self.log.insert(i + 1, Sent { seq: at, len: s.len - head, ..s });
        Some(i + 1)
    }

    /// An ACK arrived at `now`: everything below `ack` and inside the SACK
    /// `blocks` is delivered (RFC 8985 §6.2 steps 1-3).
    pub fn on_ack(&mut self, now: Time, ack: u64, blocks: impl Iterator<Item = (u64, u64)>) {
        self.orig_delivered_end = u64::MAX;
        while let Some(&s) = self.log.front() {
            if s.seq >= ack {
                break;
            }
            if s.end() > ack {
                // Part of it is acknowledged: keep the rest (counted by its share).
                let done = (ack - s.seq) as u32;
                self.forget(&Sent { len: done, ..s });
                let front = self.log.front_mut().expect("just read");
                front.seq = ack;
                front.len -= done;
                if !s.has(SACKED) {
                    self.deliver(now, &s);
                }
                break;
            }
            self.log.pop_front();
            self.forget(&s);
            if !s.has(SACKED) {
                self.deliver(now, &s);
            }
        }
        for (a, b) in blocks {
            let mut i = self.log.partition_point(|s| s.end() <= a);
            while i < self.log.len() && self.log[i].end() <= b {
                let s = self.log[i];
                if s.seq >= a && !s.has(SACKED) {
                    let l = s.len as u64;
                    self.sacked += l;
                    if s.has(LOST) {
                        self.lost -= l;
                    }
                    if s.has(RETRANS) {
                        self.retrans -= l;
                    }
                    self.log[i].flags = (s.flags & !(LOST | RETRANS)) | SACKED;
                    self.high_sack = self.high_sack.max(s.end());
                    self.deliver(now, &s);
                }
                i += 1;
            }
        }
    }

    /// Takes a segment leaving the log out of the counters.
    fn forget(&mut self, s: &Sent) {
        let l = s.len as u64;
        if s.has(SACKED) {
            self.sacked -= l;
        }
        if s.has(LOST) {
            self.lost -= l;
        }
        if s.has(RETRANS) {
            self.retrans -= l;
        }
    }

    /// RFC 8985 §6.2 steps 2 and 3 for one delivered segment (Linux
    /// `tcp_rack_advance`, `tcp_rack_reo_wnd`'s reordering test). Which copy
    /// of a retransmitted segment arrived is ambiguous: as in Linux, it
    /// counts unless its RTT is below the minimum (RFC 8985's optional test
    /// of the echoed timestamp is not made: an ACK of out-of-order data
    /// echoes an older segment's, RFC 7323 §4.3).
    fn deliver(&mut self, now: Time, s: &Sent) {
        let rtt = now.saturating_since(s.xmit);
        if s.has(EVER_RETRANS) {
            if self.min_rtt.is_some_and(|m| rtt < m) {
                return;
            }
        } else {
            self.orig_delivered_end = self.orig_delivered_end.min(s.end());
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
            if s.end() < self.fack {
                self.reordering_seen = true;
            }
        }
        self.fack = self.fack.max(s.end());
        self.advanced = true;
        self.rtt = rtt;
        if sent_after(s.xmit, s.end(), self.xmit_ts, self.end_seq) {
            self.xmit_ts = s.xmit;
            self.end_seq = s.end();
        }
    }

    /// RFC 8985 §6.2 step 4: the reordering window. 0 once the loss is
    /// proven by DupThresh SACKed segments or a recovery is under way, unless
    /// reordering was seen; else a quarter of the minimum RTT, at most SRTT.
    pub fn reo_wnd(&self, in_recovery: bool, dupthresh_bytes: u64, srtt: Option<Duration>) -> Duration {
        if !self.reordering_seen && (in_recovery || self.sacked >= dupthresh_bytes) {
            return Duration::ZERO;
        }
        let quarter = Duration(self.min_rtt.unwrap_or(Duration::ZERO).0 / 4);
        srtt.map_or(quarter, |s| quarter.min(s))
    }

    /// Whether this ACK moved RACK's state (then [`Rack::detect_loss`] has
    /// something to do; Linux `tcp_rack_mark_lost` returns at once otherwise).
    pub fn advanced(&self) -> bool {
        self.advanced
    }

    /// RFC 8985 §6.2 step 5 (Linux `tcp_rack_detect_loss`): marks lost every
    /// segment sent before the last delivered one whose reordering window
    /// has passed, and sets the reordering timer for the earliest one whose
    /// window has not. Returns the bytes newly marked lost (lost
    /// retransmissions included).
    pub fn detect_loss(&mut self, now: Time, reo_wnd: Duration) -> u64 {
        self.advanced = false;
        let mut newly = 0;
        let mut wait = Duration::ZERO;
        for s in self.log.iter_mut() {
            if s.has(SACKED) || (s.has(LOST) && !s.has(RETRANS)) {
                continue;
            }
            if !sent_after(self.xmit_ts, self.end_seq, s.xmit, s.end()) {
                if !s.has(EVER_RETRANS) {
                    // Segments never resent leave in sequence order, and a
                    // resent one left after its first copy: none further on
                    // was sent before the last delivery.
                    break;
                }
                continue;
            }
            let due = s.xmit + self.rtt + reo_wnd;
            if due <= now {
                // Linux `tcp_mark_skb_lost`: a lost segment resent and lost
                // again is to be resent again; else it joins the lost.
                let l = s.len as u64;
                if s.has(LOST) {
                    s.flags &= !RETRANS;
                    self.retrans -= l;
                    self.lost_retransmits += 1;
                } else {
                    s.flags |= LOST;
                    self.lost += l;
                }
                newly += l;
            } else {
                wait = wait.max(due - now);
            }
        }
        self.reo_deadline = if wait > Duration::ZERO { OptTime::some(now + wait) } else { OptTime::NONE };
        newly
    }

    /// Linux 2.6's FACK loss marking, run on an ACK that brings SACK news or
    /// in a recovery (`tcp_update_scoreboard`, `tcp_mark_lost_retrans`,
    /// `tcp_timeout_skbs`), with `dupthresh` bytes standing for
    /// `tp->reordering` segments:
    ///
    /// * every unSACKed segment ending at least `dupthresh` below the highest
    ///   SACKed byte is lost (`fackets_out - reordering` from the head);
    /// * in a recovery, a retransmission is lost once a byte above the
    ///   highest sent at its sending is SACKed;
    /// * from the head on, segments (or their last copies) sent an `rto` or
    ///   more ago are lost.
    ///
    /// Returns the bytes newly marked lost (lost retransmissions included).
    pub fn fack_detect(&mut self, now: Time, snd_una: u64, dupthresh: u64, rto: Duration, in_recovery: bool) -> u64 {
        let high = self.high_sack.max(snd_una);
        let boundary = high.saturating_sub(dupthresh);
        let mut newly = 0;
        let mut timed_out = true;
        for s in self.log.iter_mut() {
            timed_out &= s.xmit + rto <= now;
            if s.seq >= high && !timed_out {
                break;
            }
            if s.has(SACKED) {
                continue;
            }
            let l = s.len as u64;
            if in_recovery && s.has(RETRANS) && high > s.nxt {
                if !s.has(LOST) {
                    self.lost += l;
                }
                s.flags = (s.flags & !RETRANS) | LOST;
                self.retrans -= l;
                self.lost_retransmits += 1;
                newly += l;
                continue;
            }
            if !s.has(LOST) && (s.end() <= boundary || timed_out) {
                s.flags |= LOST;
                self.lost += l;
                newly += l;
            }
        }
        newly
    }

    /// F-RTO found the timeout spurious: nothing is deemed lost any more
    /// (Linux `tcp_undo_cwnd_reduction` with `unmark_loss`).
    pub fn unmark_lost(&mut self) {
        for s in self.log.iter_mut() {
            s.flags &= !LOST;
        }
        self.lost = 0;
        self.frto = false;
    }

    /// The first unSACKed segment below the highest SACKed byte that is
    /// neither lost nor resent (2.6's forward retransmission, RFC 6675's
    /// NextSeg rule 3), at most `mss` bytes of it.
    pub fn next_forward(&self, mss: u32) -> Option<(u64, u32)> {
        let s = self
            .log
            .iter()
            .take_while(|s| s.end() <= self.high_sack)
            .find(|s| s.flags & (SACKED | LOST | RETRANS) == 0)?;
        Some((s.seq, s.len.min(mss)))
    }

    /// At a retransmission timeout: the first unSACKed segment is lost, and
    /// every later one, except (with `spare_recent`, Linux 4.4+'s
    /// `tcp_timeout_mark_lost`) those out for less than RACK's RTT, which
    /// are left to RACK. The resends of those count as lost too (as 2.6's
    /// `tcp_enter_loss` clears them).
    pub fn mark_lost_on_timeout(&mut self, now: Time, spare_recent: bool) {
        let mut first = true;
        for s in self.log.iter_mut() {
            if s.has(SACKED) {
                continue;
            }
            if !first && spare_recent && s.xmit + self.rtt > now {
                continue;
            }
            first = false;
            let l = s.len as u64;
            if s.has(RETRANS) {
                self.retrans -= l;
            }
            if !s.has(LOST) {
                self.lost += l;
            }
            s.flags = (s.flags & !RETRANS) | LOST;
        }
        self.reo_deadline = OptTime::NONE;
        self.pto_deadline = OptTime::NONE;
        self.tlp_high_seq = OptU64::NONE;
        self.probe_pending = false;
    }

    /// The first lost segment not yet retransmitted, at most `mss` bytes of
    /// it (Linux `tcp_xmit_retransmit_queue` goes in sequence order).
    pub fn next_lost(&self, mss: u32) -> Option<(u64, u32)> {
        let s = self.log.iter().find(|s| s.has(LOST) && !s.has(RETRANS))?;
        Some((s.seq, s.len.min(mss)))
    }

    /// The last segment sent and not SACKed (TLP's retransmission probe).
    pub fn last_unsacked(&self, mss: u32) -> Option<(u64, u32)> {
        let s = self.log.iter().rev().find(|s| !s.has(SACKED))?;
        let len = s.len.min(mss);
        Some((s.end() - len as u64, len))
    }

    /// Bytes in the network by Linux's count: the flight less what is SACKED
    /// or lost, plus retransmissions in flight (a lost segment resent counts
    /// once, a segment resent without being deemed lost twice).
    pub fn pipe(&self, flight: u64) -> u64 {
        (flight + self.retrans).saturating_sub(self.sacked + self.lost)
    }

    /// Linux's Open state as far as RACK-TLP asks: nothing SACKed, lost or
    /// retransmitted in flight.
    pub fn is_open(&self) -> bool {
        self.sacked == 0 && self.lost == 0 && self.retrans == 0
    }

    /// The earliest of the reordering and probe timers.
    pub fn deadline(&self) -> OptTime {
        self.reo_deadline.earliest(self.pto_deadline)
    }
}

/// RFC 8985 §7.2 (Linux `tcp_schedule_loss_probe`): the probe timeout for
/// `segments` segments in flight: 2 SRTT, plus `min_rto` (the receiver's
/// delayed ACK) for a single segment or 2 ms (two jiffies) otherwise; the
/// initial RTO before any RTT sample.
pub(crate) fn probe_timeout(
    srtt: Option<Duration>,
    segments: u64,
    min_rto: Duration,
    initial_rto: Duration,
) -> Duration {
    match srtt {
        Some(s) => Duration(2 * s.0) + if segments <= 1 { min_rto } else { Duration::from_millis(2) },
        None => initial_rto,
    }
}

#[cfg(test)]
#[path = "rack_tests.rs"]
mod tests;
