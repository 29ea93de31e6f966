//! The sending half of a TCP connection: windows, loss recovery and the
//! retransmission timer.
//!
//! * Window growth is delegated to a [`CongestionControl`].
//! * Loss recovery is SACK-based (RFC 6675) by default: a scoreboard of what
//!   the receiver holds, recovery on the third duplicate ACK or as soon as a
//!   hole has three segments' worth of SACKed data above it, `cwnd = ssthresh`
//!   and transmission while `cwnd - pipe >= SMSS` (lost holes first, then new
//!   data, then other holes). After a timeout every unSACKed byte below the
//!   highest sent is lost and is resent in the same way from a one-segment
//!   window.
//! * Without SACK it is NewReno (RFC 5681 §3.2, RFC 6582): fast retransmit on
//!   the third duplicate ACK, window inflation by one SMSS per further
//!   duplicate, partial ACKs retransmit the next hole and deflate the window
//!   (the first one, or each one, also restarts the timer:
//!   [`super::NewRenoTimer`]), a full ACK (covering `recover`) ends recovery
//!   with `cwnd = ssthresh`; a timeout goes back to `snd_una` (go-back-N).
//! * The rules on which the RFCs and Linux differ are switches of the
//!   configuration, in [`super::recovery`]: the timer in NewReno recovery,
//!   ssthresh on a timeout inside a loss episode, limited transmit, and the
//!   send rate in fast recovery (rate halving or PRR in place of the above,
//!   NewReno then without window inflation).
//! * With SACK, a segment log can take the place of RFC 6675's loss rules:
//!   RACK-TLP (RFC 8985) or 2.6's FACK ([`super::LossDetection`]), with the
//!   tail loss probe and F-RTO (`TcpConfig::tail_loss_probe`,
//!   [`super::Frto`]; `sender/loss_detection.rs`).
//! * The retransmission timer is RFC 6298's: started when data is sent and none is
//!   running, restarted on each ACK of new data, stopped when all is acknowledged;
//!   on expiry the window collapses to the loss window and the timer backs off
//!   exponentially.

use std::sync::Arc;

use torrentlab_engine::{Duration, OptTime, OptU64, Time};

use super::config::TcpConfig;
use super::recovery::{RateReduction, RecoveryRate};
use super::rtt::RttEstimator;
use super::sack::{SackBlocks, Scoreboard};
use super::segment::{Flags, Segment, Timestamps};
use crate::cc::{AckSample, CongestionControl, Controller, Window};

mod episode;
mod loss_detection;
use episode::{rack, rack_mut, Rare};

/// Counters of one sender. Bytes are payload bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub segments_sent: u64,
    pub bytes_sent: u64,
    pub retransmitted_segments: u64,
    pub retransmitted_bytes: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub acks_received: u64,
    pub duplicate_acks: u64,
    /// The largest RTT sample handed to the congestion controller (ns).
    pub max_rtt_sample_ns: u64,
    /// The largest one-way-delay sample handed to the controller (ns).
    pub max_owd_sample_ns: u64,
    /// RACK or FACK: retransmissions found lost (Linux `TCPLostRetransmit`).
    pub lost_retransmits: u64,
    /// Tail loss probes sent (Linux `TCPLossProbes`).
    pub loss_probes: u64,
    /// Timeouts F-RTO found spurious (Linux `TCPSpuriousRTOs`).
    pub spurious_timeouts: u64,
}

/// A TCP_INFO-like snapshot of the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpInfo {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub bytes_in_flight: u64,
    pub srtt: Option<Duration>,
    pub rttvar: Duration,
    pub rto: Duration,
    pub in_recovery: bool,
    /// The controller's queuing-delay estimate, if it keeps one.
    pub queuing_delay: Option<Duration>,
}

/// The counters every segment sent or ACK received updates.
#[derive(Clone, Copy, Debug, Default)]
struct Sent {
    segments: u64,
    bytes: u64,
    acks: u64,
    /// The largest RTT sample handed to the controller (ns).
    max_rtt: u64,
    /// The largest one-way-delay sample handed to the controller (ns).
    max_owd: u64,
}

/// The counters of loss recovery, which most segments leave alone.
#[derive(Clone, Copy, Debug, Default)]
struct Losses {
    retransmitted_segments: u64,
    retransmitted_bytes: u64,
    fast_retransmits: u64,
    timeouts: u64,
    duplicate_acks: u64,
}

/// The sending half of a TCP connection: sequence numbers, deadlines and the
/// SACK scoreboard; the congestion controller, window and RTT estimator; and
/// the loss-recovery state.
pub struct TcpSender {
    cfg: Arc<TcpConfig>,
    /// Oldest unacknowledged byte.
    snd_una: u64,
    /// Next byte to send (moves back to `snd_una` after a timeout).
    snd_nxt: u64,
    /// Highest byte ever sent + 1.
    snd_max: u64,
    /// Bytes the application has written so far (the end of the stream to send).
    app_end: u64,
    /// The receiver's advertised window (bytes; TCP's largest is 2^30).
    peer_window: u32,
    /// Cwnd validation: the largest flight (bytes) of the current round
    /// while the window was not filled (Linux `max_packets_out`, in bytes).
    max_flight: u32,
    rto_deadline: OptTime,
    /// End of the last segment sent shorter than the MSS (Linux `snd_sml`).
    snd_sml: u64,
    /// `Some(point)` while recovering from a loss: in fast recovery (RFC
    /// 6582, `point` is `recover`), or, with SACK after a timeout
    /// (`after_rto`), resending every unSACKed byte below `point`. The two
    /// never overlap; read them through [`Self::fast_recovery`] and
    /// [`Self::rto_recovery`].
    recovery: OptU64,
    /// Cwnd validation: the current round ends when `snd_una` reaches this
    /// (Linux `cwnd_usage_seq`).
    cwnd_usage_seq: u64,
    sent: Sent,
    dupacks: u32,
    /// A partial ACK has restarted the timer in this recovery already.
    partial_ack_seen: bool,
    retransmit_pending: bool,
    /// Cwnd validation: the flight reached the window in the current round
    /// (Linux `is_cwnd_limited`).
    cwnd_limited: bool,
    /// The last loss episode (the one up to `recover`) began with a timeout,
    /// not a fast retransmit (Linux `TCP_CA_Loss` against `TCP_CA_Recovery`):
    /// `recovery`, if set, is the resending after a timeout.
    after_rto: bool,
    /// SACK: what the receiver holds above `snd_una`.
    scoreboard: Scoreboard,
    cc: Controller,
    rtt: RttEstimator,
    w: Window,
    /// When new data last left (Linux `lsndtime`).
    last_data_sent: OptTime,
    /// Highest byte sent when loss was last handled; duplicate ACKs at or below it
    /// do not start a new fast retransmit (RFC 6582 §3.2 step 1).
    recover: OptU64,
    /// SACK: the highest byte retransmitted in this recovery (RFC 6675 HighRxt).
    high_rxt: u64,
    losses: Losses,
    /// State few senders need (pacing below one segment, limited transmit, a
    /// recovery at a reduced rate, RACK-TLP's segment log), boxed to keep an
    /// endpoint small.
    rare: Option<Box<Rare>>,
}

impl TcpSender {
    pub fn new(cfg: impl Into<Arc<TcpConfig>>, cc: impl Into<Controller>) -> Self {
        let cfg: Arc<TcpConfig> = cfg.into();
        let iw = cfg.initial_window as u64 * cfg.mss as u64;
        let ssthresh = if cfg.slow_start { u64::MAX } else { iw };
        let rare = Self::rack_for(&cfg).map(|rack| Box::new(Rare { rack: Some(rack), ..Rare::default() }));
        TcpSender {
            rtt: RttEstimator::new(),
            w: Window { cwnd: iw, ssthresh, mss: cfg.mss },
            peer_window: window_u32(cfg.receive_window),
            max_flight: 0,
            cwnd_limited: false,
            cwnd_usage_seq: 0,
            last_data_sent: OptTime::NONE,
            cfg,
            cc: cc.into(),
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            app_end: 0,
            dupacks: 0,
            recovery: OptU64::NONE,
            partial_ack_seen: false,
            recover: OptU64::NONE,
            retransmit_pending: false,
            scoreboard: Scoreboard::default(),
            high_rxt: 0,
            after_rto: false,
            rto_deadline: OptTime::NONE,
            rare,
            snd_sml: 0,
            sent: Sent::default(),
            losses: Losses::default(),
        }
    }

    /// The application writes `bytes` more bytes to the stream.
    pub fn write(&mut self, bytes: u64) {
        self.app_end = self.app_end.saturating_add(bytes);
    }

    /// The application stops writing: nothing beyond what was sent so far
    /// (the stream ends at `snd_max`).
    pub fn stop_writing(&mut self) {
        self.app_end = self.snd_max;
    }

    /// Bytes written by the application and not yet acknowledged.
    pub fn unacked_app_bytes(&self) -> u64 {
        self.app_end - self.snd_una
    }

    /// Bytes acknowledged so far.
    pub fn bytes_acked(&self) -> u64 {
        self.snd_una
    }

    pub fn stats(&self) -> SenderStats {
        let (s, l) = (self.sent, self.losses);
        SenderStats {
            segments_sent: s.segments,
            bytes_sent: s.bytes,
            retransmitted_segments: l.retransmitted_segments,
            retransmitted_bytes: l.retransmitted_bytes,
            fast_retransmits: l.fast_retransmits,
            timeouts: l.timeouts,
            acks_received: s.acks,
            duplicate_acks: l.duplicate_acks,
            max_rtt_sample_ns: s.max_rtt,
            max_owd_sample_ns: s.max_owd,
            lost_retransmits: rack(&self.rare).map_or(0, |r| r.lost_retransmits),
            loss_probes: rack(&self.rare).map_or(0, |r| r.probes),
            spurious_timeouts: rack(&self.rare).map_or(0, |r| r.spurious_timeouts),
        }
    }

    pub fn controller_name(&self) -> &'static str {
        self.cc.name()
    }

    pub fn info(&self) -> TcpInfo {
        TcpInfo {
            cwnd: self.w.cwnd,
            ssthresh: self.w.ssthresh,
            bytes_in_flight: self.snd_nxt - self.snd_una,
            srtt: self.rtt.srtt(),
            rttvar: self.rtt.rttvar(),
            rto: self.rtt.rto(&self.cfg),
            in_recovery: self.recovery.is_some(),
            queuing_delay: self.cc.queuing_delay(),
        }
    }

    /// When [`TcpSender::handle_timeout`] should next be called.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.deadline().get()
    }

    /// [`TcpSender::poll_timeout`] as an [`OptTime`].
    #[inline]
    pub(crate) fn deadline(&self) -> OptTime {
        let paced = self.snd_nxt == self.snd_una && self.snd_nxt < self.app_end;
        let rto = self.rto_deadline.earliest(if paced {
            self.rare.as_ref().map_or(OptTime::NONE, |r| r.paced_until)
        } else {
            OptTime::NONE
        });
        match rack(&self.rare) {
            Some(r) => rto.earliest(r.deadline()),
            None => rto,
        }
    }

    #[inline]
    fn segment(&self, now: Time, seq: u64, len: u32) -> Segment {
        Segment {
            seq,
            ack: 0,
            len,
            flags: Flags::ACK,
            window: self.cfg.receive_window,
            timestamps: self.cfg.timestamps.then_some(Timestamps { val: now, ecr: None, delay: None }),
            sack: SackBlocks::NONE,
        }
    }

    #[inline]
    fn retransmit(&mut self, now: Time, seq: u64, len: u32) -> Segment {
        self.high_rxt = self.high_rxt.max(seq + len as u64);
        self.account_send(now, seq, len);
        self.segment(now, seq, len)
    }

    /// RFC 6675 §5: one segment, if `cwnd - pipe >= SMSS` (or the first
    /// retransmission of a recovery, which goes at once): a lost hole (NextSeg
    /// rule 1), else new data (rule 2), else another unSACKed hole (rule 3).
    fn sack_transmit(&mut self, now: Time) -> Option<Segment> {
        let mss = self.cfg.mss;
        self.high_rxt = self.high_rxt.max(self.snd_una);
        if std::mem::take(&mut self.retransmit_pending) {
            if let Some((seq, len)) = self.scoreboard.next_unsacked(self.snd_una, self.snd_max, mss) {
                return Some(self.retransmit(now, seq, len));
            }
        }
        let lost_below = match self.rto_recovery() {
            Some(point) => point,
            None => self.scoreboard.lost_boundary(self.cfg.dupack_threshold, mss).unwrap_or(self.snd_una),
        };
        let pipe = self.scoreboard.pipe(self.snd_una, self.snd_max, self.high_rxt, lost_below);
        if pipe + mss as u64 > self.w.cwnd {
            return None;
        }
        if let Some((seq, len)) = self.scoreboard.next_unsacked(self.high_rxt, lost_below, mss) {
            return Some(self.retransmit(now, seq, len));
        }
        if let Some(seg) = self.send_new_data(now) {
            return Some(seg);
        }
        let (seq, len) = self.scoreboard.next_unsacked(self.high_rxt, self.snd_max, mss)?;
        Some(self.retransmit(now, seq, len))
    }

    /// One segment of new data in a loss episode, if the receive window and
    /// Nagle let it out.
    fn send_new_data(&mut self, now: Time) -> Option<Segment> {
        if self.snd_nxt >= self.app_end {
            return None;
        }
        let len = (self.app_end - self.snd_nxt).min(self.cfg.mss as u64);
        if self.snd_nxt - self.snd_una + len > self.peer_window as u64 || self.nagle_holds(len) {
            return None;
        }
        Some(self.send_new(now, len))
    }

    /// `len` bytes of new data leave now.
    fn send_new(&mut self, now: Time, len: u64) -> Segment {
        let seq = self.snd_nxt;
        self.account_send(now, seq, len as u32);
        self.last_data_sent = OptTime::some(now);
        self.snd_nxt += len;
        self.snd_max = self.snd_max.max(self.snd_nxt);
        self.segment(now, seq, len as u32)
    }

    #[inline]
    fn account_send(&mut self, now: Time, seq: u64, len: u32) {
        self.sent.segments += 1;
        self.sent.bytes += len as u64;
        if seq < self.snd_max {
            self.losses.retransmitted_segments += 1;
            self.losses.retransmitted_bytes += len as u64;
        }
        if self.rto_deadline.is_none() {
            self.rto_deadline = OptTime::some(now + self.rtt.rto(&self.cfg));
        }
        if self.recovery.is_some() && !self.after_rto {
            if let Some(r) = self.rare.as_deref_mut() {
                r.rate.sent(len);
            }
        }
        if let Some(r) = rack_mut(&mut self.rare) {
            r.on_send(now, seq, len);
        }
    }

    /// True when [`TcpSender::poll_transmit`] would find nothing to send and
    /// change nothing: no loss recovery or retransmission under way, and
    /// every byte written already sent. (False says nothing: that call
    /// decides.)
    #[inline]
    pub fn is_quiet(&self) -> bool {
        self.recovery.is_none()
            && !self.retransmit_pending
            && self.snd_nxt >= self.app_end
            && rack(&self.rare).is_none_or(|r| !r.probe_pending)
    }

    /// The next segment to put on the wire, if the windows allow one.
    #[inline]
    pub fn poll_transmit(&mut self, now: Time) -> Option<Segment> {
        // The endpoint's own fields first: most calls find nothing to send
        // without reading the configuration.
        if let Some(r) = rack(&self.rare) {
            if r.probe_pending {
                return self.send_probe(now);
            }
            if self.recovery.is_some() && self.log_detects() {
                return self.rack_transmit(now);
            }
        }
        if self.recovery.is_some() && self.cfg.sack {
            return self.sack_transmit(now);
        }
        if self.retransmit_pending {
            self.retransmit_pending = false;
            let len = (self.snd_max - self.snd_una).min(self.cfg.mss as u64) as u32;
            if len > 0 {
                let seq = self.snd_una;
                self.account_send(now, seq, len);
                return Some(self.segment(now, seq, len));
            }
        }
        if self.snd_nxt >= self.app_end {
            return None;
        }
        let mss = self.cfg.mss as u64;
        let mut len = (self.app_end - self.snd_nxt).min(mss);
        let flight = self.snd_nxt - self.snd_una;
        if flight == 0 && self.cfg.slow_start_after_idle && self.restart_could_matter() {
            self.restart_after_idle(now);
        }
        let limited = if self.dupacks != 0 { self.limited_transmit_room() } else { 0 };
        let window = (self.w.cwnd + limited).min(self.peer_window as u64);
        // What the window is measured against: the flight, less what duplicate
        // ACKs say the receiver holds in a recovery at a reduced rate.
        let counted = flight.saturating_sub(self.reno_held());
        if let Some(tso) = self.cfg.tso_max {
            // TSO: as many whole segments as the window and the data allow, in
            // one unit of up to `tso` payload bytes.
            let room = window.saturating_sub(counted).min(self.app_end - self.snd_nxt).min(tso as u64);
            len = len.max(room / mss * mss);
        }
        if self.nagle_holds(len) {
            if flight + len > self.w.cwnd {
                self.validate_cwnd(flight, true); // Linux tests the window before Nagle
            }
            return None;
        }
        if counted + len > window {
            // A window below one segment (TCP Nice) sends one segment every
            // `1/W` RTTs when nothing is in flight.
            if !(self.w.cwnd < mss && flight == 0)
                || self.rare.as_ref().and_then(|r| r.paced_until.get()).is_some_and(|t| now < t)
            {
                if flight + len > self.w.cwnd {
                    self.validate_cwnd(flight, true);
                }
                return None;
            }
            let srtt = self.rtt.srtt().unwrap_or(self.rtt.rto(&self.cfg));
            let gap = srtt.as_secs_f64() * mss as f64 / self.w.cwnd.max(1) as f64;
            self.rare.get_or_insert_with(Default::default).paced_until =
                OptTime::some(now + Duration::from_secs_f64(gap));
        }
        let seq = self.snd_nxt;
        self.account_send(now, seq, len as u32);
        if limited != 0 && flight + len > self.w.cwnd {
            self.rare.get_or_insert_with(Default::default).limited_sent += len;
        }
        // Before the window first leaves slow start (ssthresh unset) no
        // controller has state the event moves: skip reading it.
        if flight == 0 && self.w.ssthresh != u64::MAX {
            self.tx_start(now);
        }
        self.last_data_sent = OptTime::some(now);
        self.snd_nxt += len;
        self.snd_max = self.snd_max.max(self.snd_nxt);
        if len < mss {
            self.snd_sml = self.snd_nxt;
        }
        let flight = self.snd_nxt - self.snd_una;
        self.validate_cwnd(flight, flight >= self.w.cwnd);
        if self.has_rack() {
            self.schedule_probe(now, false);
        }
        Some(self.segment(now, seq, len as u32))
    }

    /// Linux `tcp_cwnd_validate` after new data went out (or the window held
    /// it back, `limited`): a round (until `snd_una` passes the `snd_nxt` of
    /// its start) remembers whether the flight filled the window, and
    /// otherwise its largest flight.
    #[inline]
    fn validate_cwnd(&mut self, flight: u64, limited: bool) {
        if !self.cfg.cwnd_validation {
            return;
        }
        if self.snd_una >= self.cwnd_usage_seq || limited || (!self.cwnd_limited && flight > self.max_flight as u64) {
            self.cwnd_limited = limited;
            self.max_flight = window_u32(flight);
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    /// New data waits with nothing in flight: Linux's restart after idle
    /// (`tcp_slow_start_after_idle_check`, which runs when the application
    /// queues the data; with nothing in flight it leaves at once).
    #[cold]
    fn restart_after_idle(&mut self, now: Time) {
        let Some(last) = self.last_data_sent.get() else { return };
        let idle = now.saturating_since(last);
        let rto = self.rtt.rto(&self.cfg);
        if idle > rto {
            self.restart_window(idle, rto);
        }
    }

    /// Whether a restart could change the window at all: not for a window
    /// at or below the initial one with ssthresh at least 3/4 of it (then
    /// Linux's restart leaves both as they are), which is every rate-limited
    /// upload's.
    #[inline]
    fn restart_could_matter(&self) -> bool {
        let iw = self.cfg.initial_window as u64 * self.cfg.mss as u64;
        self.w.cwnd > iw || self.w.ssthresh < self.w.cwnd / 2 + self.w.cwnd / 4
    }

    /// New data leaves with nothing in flight: the controller's
    /// `CA_EVENT_TX_START` (Linux `tcp_event_data_sent`).
    #[inline]
    fn tx_start(&mut self, now: Time) {
        if let Some(last) = self.last_data_sent.get() {
            self.cc.on_tx_start(now, now.saturating_since(last));
        }
    }

    /// Linux `tcp_cwnd_restart` (RFC 2861 §3): ssthresh keeps at least 3/4
    /// of the window, and the window halves once for each RTO of idleness
    /// after the first, not below the smaller of the initial window and
    /// itself.
    fn restart_window(&mut self, idle: Duration, rto: Duration) {
        let iw = self.cfg.initial_window as u64 * self.cfg.mss as u64;
        let mut cwnd = self.w.cwnd;
        let restart = iw.min(cwnd);
        if self.fast_recovery().is_none() {
            // tcp_current_ssthresh outside a window reduction.
            self.w.ssthresh = self.w.ssthresh.max(cwnd / 2 + cwnd / 4);
        }
        let mut left = idle.0.saturating_sub(rto.0);
        while left > 0 && cwnd > restart {
            cwnd /= 2;
            left = left.saturating_sub(rto.0);
        }
        self.w.cwnd = cwnd.max(restart);
        // `slow_start = false` holds here too: the raised ssthresh must not
        // put the smaller window back into slow start.
        self.enforce_no_slow_start();
    }

    /// `Some(recover)` while in fast recovery (RFC 6582).
    #[inline]
    fn fast_recovery(&self) -> Option<u64> {
        self.recovery.get().filter(|_| !self.after_rto)
    }

    /// SACK: `Some(point)` while resending after a timeout: every unSACKed
    /// byte below `point` counts as lost.
    #[inline]
    fn rto_recovery(&self) -> Option<u64> {
        self.recovery.get().filter(|_| self.after_rto)
    }

    /// Linux `tcp_is_cwnd_limited`: the window is in use, so an ACK may grow
    /// it: the flight filled it this round, or, in slow start, it is below
    /// twice the round's largest flight. Always true without validation.
    #[inline]
    fn is_cwnd_limited(&self) -> bool {
        !self.cfg.cwnd_validation
            || self.cwnd_limited
            || (self.w.in_slow_start() && self.w.cwnd < 2 * self.max_flight as u64)
    }

    /// Nagle with Minshall's change (Linux `tcp_nagle_check`): hold a short
    /// segment while data is in flight and the last short one is unacknowledged.
    #[inline]
    fn nagle_holds(&self, len: u64) -> bool {
        self.cfg.nagle
            && len < self.cfg.mss as u64
            && self.snd_nxt > self.snd_una
            && self.snd_sml > self.snd_una
            && self.snd_sml <= self.snd_nxt
    }

    /// Processes an acknowledgement from the receiver.
    #[inline]
    pub fn handle_ack(&mut self, now: Time, seg: &Segment) {
        self.handle_ack_of(now, seg, seg.ack);
    }

    /// [`TcpSender::handle_ack`] with `ack` in place of `seg.ack` (a FIN's
    /// sequence number taken out by the connection), without copying the
    /// segment to change it.
    pub(crate) fn handle_ack_of(&mut self, now: Time, seg: &Segment, ack: u64) {
        if ack > self.snd_max {
            return; // acknowledges data never sent: ignore (RFC 9293 §3.10.7.4)
        }
        self.sent.acks += 1;
        self.peer_window = window_u32(seg.window);
        let advances = ack > self.snd_una;
        let echoed = seg.timestamps.and_then(|t| t.ecr.map(|e| (t.val, e)));
        let sample = AckSample {
            now,
            ack,
            snd_nxt: self.snd_nxt,
            bytes_acked: ack.saturating_sub(self.snd_una),
            rtt: echoed.filter(|_| advances).map(|(_, ecr)| now.saturating_since(ecr)),
            // The delay of the segment that caused this ACK, never TSval − TSecr
            // (see `Timestamps::delay`).
            one_way_delay: seg.timestamps.and_then(|t| t.delay),
            bytes_in_flight: self.snd_nxt - self.snd_una,
            // Only an ACK of new data asks (the window is in a line a data
            // segment that acknowledges nothing new need not read).
            app_limited: advances && !self.is_cwnd_limited(),
        };
        if let Some(r) = sample.rtt {
            self.sent.max_rtt = self.sent.max_rtt.max(r.0);
        }
        if let Some(d) = sample.one_way_delay {
            self.sent.max_owd = self.sent.max_owd.max(d.0);
        }
        self.cc.on_sample(&sample);
        // Rate halving and PRR count what each ACK delivers.
        let reduced_rate = self.cfg.recovery_rate != RecoveryRate::Rfc;
        let mut delivered = 0;
        let sack_news = self.has_rack() && self.rack_on_ack(now, seg, ack);
        if self.cfg.sack {
            let sacked_before = if reduced_rate { self.scoreboard.sacked_bytes() } else { 0 };
            self.scoreboard.update(ack, seg.sack.ranges(ack));
            if reduced_rate {
                let acked = ack.saturating_sub(self.snd_una);
                delivered = (acked + self.scoreboard.sacked_bytes()).saturating_sub(sacked_before);
            }
        }

        if advances {
            let acked = ack - self.snd_una;
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            if let Some(rtt) = sample.rtt {
                self.rtt.on_sample(rtt);
            }
            self.rtt.reset_backoff();
            if std::mem::take(&mut self.dupacks) != 0 {
                self.forget_limited_transmit();
            }
            let mss = self.cfg.mss as u64;
            // RFC 6298 (5.3): restart the timer on new data acknowledged, except
            // that in NewReno fast recovery with the "Impatient" timer (RFC 6582
            // §3.2 step 5 and §4) only the first partial ACK restarts it, so a
            // window with many holes ends in a timeout, not one hole per RTT.
            let mut restart_timer = true;
            if let Some(point) = self.rto_recovery() {
                // Resending after a timeout: the window grows (slow start).
                self.cc.on_ack(&mut self.w, &sample);
                if ack >= point {
                    self.recovery = OptU64::NONE;
                }
            } else {
                match self.fast_recovery() {
                    Some(recover) if ack >= recover => {
                        // Full acknowledgement: leave fast recovery with cwnd = ssthresh
                        // (RFC 6582 §3.2 step 3, option 2; what Linux and ns-3 do), or
                        // below it after rate halving (2.6's `tcp_complete_cwr`).
                        self.w.cwnd = RateReduction::cwnd_at_end(self.cfg.recovery_rate, &self.w);
                        self.recovery = OptU64::NONE;
                    }
                    Some(_) if self.cfg.sack => {} // SACK: pipe governs; no inflation to undo
                    Some(_) => {
                        // Partial acknowledgement: retransmit the next hole, deflate.
                        restart_timer = self.cfg.newreno_timer.restarts_on_partial_ack(!self.partial_ack_seen);
                        self.partial_ack_seen = true;
                        self.retransmit_pending = true;
                        if let Some(r) = self.rare.as_deref_mut().filter(|_| reduced_rate).map(|r| &mut r.rate) {
                            delivered = r.reno_partial_ack(acked, mss);
                        } else {
                            self.w.cwnd = self.w.cwnd.saturating_sub(acked);
                            if acked >= mss {
                                self.w.cwnd += mss;
                            }
                            self.w.cwnd = self.w.cwnd.max(mss);
                        }
                    }
                    None => self.cc.on_ack(&mut self.w, &sample),
                }
            }
            if self.snd_una >= self.snd_max {
                self.rto_deadline = OptTime::NONE;
            } else if restart_timer || self.rto_deadline.is_none() {
                self.rto_deadline = OptTime::some(now + self.rtt.rto(&self.cfg));
            }
        } else if ack == self.snd_una && seg.len == 0 && self.snd_max > self.snd_una {
            self.losses.duplicate_acks += 1;
            self.dupacks += 1;
            if self.cfg.sack {
                // Handled below: SACK recovery starts on the count or the scoreboard.
            } else if self.fast_recovery().is_some() {
                match self.rare.as_deref_mut().filter(|_| reduced_rate).map(|r| &mut r.rate) {
                    Some(r) => delivered = r.reno_duplicate(self.snd_max - self.snd_una, self.cfg.mss as u64),
                    None => self.w.cwnd += self.cfg.mss as u64,
                }
            } else if self.dupacks == self.cfg.dupack_threshold && self.recover.get().is_none_or(|r| ack > r) {
                self.enter_fast_recovery();
                delivered = self.cfg.mss as u64; // the duplicate's segment
            }
        }
        if self.has_rack() {
            self.rack_after_ack(now, seg, ack, advances, sack_news);
        }
        // `recover` is asked last: it lives with the loss-recovery fields, in
        // a line that an ACK with nothing lost need not read.
        if self.cfg.sack
            && !self.log_detects()
            && self.recovery.is_none()
            && self.snd_max > self.snd_una
            && (self.dupacks >= self.cfg.dupack_threshold
                || self.scoreboard.lost_boundary(self.cfg.dupack_threshold, self.cfg.mss).is_some())
            && self.recover.get().is_none_or(|r| ack > r)
        {
            self.enter_fast_recovery();
        }
        if reduced_rate && self.fast_recovery().is_some() {
            self.reduce_rate(delivered);
        }
        self.enforce_no_slow_start();
    }

    fn enforce_no_slow_start(&mut self) {
        if !self.cfg.slow_start && self.fast_recovery().is_none() {
            self.w.ssthresh = self.w.ssthresh.min(self.w.cwnd);
        }
    }

    /// The configuration (a connection shares it with its receiving half).
    #[inline]
    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }

    /// Congestion window and ssthresh (bytes).
    pub fn window(&self) -> Window {
        self.w
    }

    /// Feeds an RTT measured outside data transfer (the handshake), as Linux
    /// seeds SRTT from the SYN exchange.
    pub fn rtt_sample(&mut self, rtt: Duration) {
        self.rtt.on_sample(rtt);
    }

    /// The current retransmission timeout.
    pub fn rto(&self) -> Duration {
        self.rtt.rto(&self.cfg)
    }

    /// Highest byte sent + 1.
    pub fn snd_max(&self) -> u64 {
        self.snd_max
    }
}

/// A window in bytes as the sender keeps it: TCP's largest is 2^30 (RFC
/// 7323 §2.3), so anything above `u32::MAX` is as good as `u32::MAX`.
#[inline]
fn window_u32(bytes: u64) -> u32 {
    bytes.min(u32::MAX as u64) as u32
}
