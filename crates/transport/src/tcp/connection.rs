//! A whole TCP connection (RFC 9293): the three-way handshake, data in both
//! directions with piggybacked ACKs, FIN teardown and RST, built on a
//! [`TcpSender`] and a [`TcpReceiver`].
//!
//! SYN and FIN each take one sequence number on the wire; internally the data
//! stream keeps its 0-based offsets, so the connection adjusts the ACK numbers
//! that cover a FIN. The SYN is retransmitted after 1 s, doubling, up to 6 times
//! (Linux `tcp_syn_retries`); the SYN-ACK up to 5 (`tcp_synack_retries`). The
//! handshake RTT seeds SRTT, as in Linux.

use std::sync::Arc;

use torrentlab_engine::{Duration, OptTime, Time};

use super::config::TcpConfig;
use super::receiver::ReceiverState;
use super::sack::SackBlocks;
use super::segment::{Flags, Segment, Timestamps};
use super::sender::TcpSender;
use crate::cc::Controller;

const SYN_RETRIES: u32 = 6;
const SYNACK_RETRIES: u32 = 5;

/// Connection state (the states that matter to a simulation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpState {
    Listen,
    SynSent,
    SynReceived,
    Established,
    /// Reset by a RST, or given up after the handshake retries.
    Reset,
}

/// One end of a TCP connection: the connection's state and flags, the
/// receiver, the sender and the handshake's bookkeeping. One configuration
/// serves both halves: the sender's.
pub struct TcpConnection {
    state: TcpState,
    rst_pending: bool,
    syn_pending: bool,
    closing: bool,
    fin_sent: bool,
    fin_pending: bool,
    fin_acked: bool,
    peer_fin: bool,
    /// The handshake's SYN retransmission deadline until the FIN is sent;
    /// the FIN's after (the two never overlap: see [`Self::syn_deadline`]).
    ctl_deadline: OptTime,
    rx: ReceiverState,
    tx: TcpSender,
    /// The peer's SYN TSval, echoed by our handshake, FIN and RST segments.
    peer_ts: OptTime,
    syn_first_sent: OptTime,
    fin_rto: Duration,
    syn_tries: u32,
    syn_retransmitted: bool,
}

impl TcpConnection {
    fn new(cfg: Arc<TcpConfig>, cc: impl Into<Controller>, state: TcpState) -> Self {
        TcpConnection {
            fin_rto: cfg.initial_rto,
            tx: TcpSender::new(cfg, cc),
            rx: ReceiverState::new(),
            state,
            syn_pending: state == TcpState::SynSent,
            syn_first_sent: OptTime::NONE,
            syn_retransmitted: false,
            ctl_deadline: OptTime::NONE,
            syn_tries: 0,
            peer_ts: OptTime::NONE,
            closing: false,
            fin_sent: false,
            fin_pending: false,
            fin_acked: false,
            peer_fin: false,
            rst_pending: false,
        }
    }

    /// An active opener: sends a SYN at its first transmission opportunity.
    /// `cfg` may be shared (`Arc<TcpConfig>`) by many connections.
    pub fn connect(cfg: impl Into<Arc<TcpConfig>>, cc: impl Into<Controller>) -> Self {
        Self::new(cfg.into(), cc, TcpState::SynSent)
    }

    /// A passive opener waiting for a SYN.
    pub fn listen(cfg: impl Into<Arc<TcpConfig>>, cc: impl Into<Controller>) -> Self {
        Self::new(cfg.into(), cc, TcpState::Listen)
    }

    pub fn state(&self) -> TcpState {
        self.state
    }

    pub fn sender(&self) -> &TcpSender {
        &self.tx
    }

    pub fn receiver(&self) -> &ReceiverState {
        &self.rx
    }

    pub fn write(&mut self, bytes: u64) {
        self.tx.write(bytes);
    }

    pub fn stop_writing(&mut self) {
        self.tx.stop_writing();
    }

    /// Ends the outgoing stream: a FIN follows the last byte once it is acknowledged.
    pub fn close(&mut self) {
        self.closing = true;
    }

    /// Aborts the connection with a RST.
    pub fn abort(&mut self) {
        self.rst_pending = true;
    }

    /// True once our FIN is acknowledged and the peer's FIN has arrived.
    pub fn is_closed(&self) -> bool {
        self.fin_acked && self.peer_fin
    }

    /// True once the peer's FIN (after all its data) has arrived.
    pub fn peer_finished(&self) -> bool {
        self.peer_fin
    }

    fn blank(&self, now: Time, flags: Flags, seq: u64) -> Segment {
        let cfg = self.tx.config();
        Segment {
            seq,
            ack: 0,
            len: 0,
            flags,
            window: cfg.receive_window,
            timestamps: cfg.timestamps.then_some(Timestamps { val: now, ecr: self.peer_ts.get(), delay: None }),
            sack: SackBlocks::NONE,
        }
    }

    /// Copies the receiver's acknowledgement state into `seg` (piggybacking).
    fn with_ack(&mut self, now: Time, mut seg: Segment) -> Segment {
        let a = self.rx.ack_segment(self.tx.config(), now);
        seg.ack = a.ack + u64::from(self.peer_fin);
        seg.flags = seg.flags | Flags::ACK;
        seg.window = a.window;
        seg.sack = a.sack;
        if let (Some(ts), Some(ats)) = (seg.timestamps.as_mut(), a.timestamps) {
            ts.ecr = ats.ecr;
            ts.delay = ats.delay;
        }
        seg
    }

    fn arm_syn_timer(&mut self, now: Time) {
        let rto = Duration(self.tx.config().initial_rto.0.saturating_mul(1 << self.syn_tries.min(20)));
        debug_assert!(!self.fin_sent);
        self.ctl_deadline = OptTime::some(now + rto);
    }

    /// The SYN retransmission deadline. A SYN (or SYN-ACK) is only sent
    /// before the connection is established, a FIN only after, so
    /// `ctl_deadline` is the SYN's until `fin_sent` and the FIN's from then on.
    #[inline]
    fn syn_deadline(&self) -> OptTime {
        if self.fin_sent {
            OptTime::NONE
        } else {
            self.ctl_deadline
        }
    }

    /// The FIN retransmission deadline (see [`Self::syn_deadline`]).
    #[inline]
    fn fin_deadline(&self) -> OptTime {
        if self.fin_sent {
            self.ctl_deadline
        } else {
            OptTime::NONE
        }
    }

    /// The next segment to send, if any.
    ///
    /// Most calls (a delayed ACK waits, nothing new was written) find nothing
    /// and change nothing: that case is decided inline, from the fields the
    /// full look reads first, without a call.
    #[inline]
    pub fn poll_transmit(&mut self, now: Time) -> Option<Segment> {
        if self.is_quiet() {
            return None;
        }
        self.poll_transmit_any(now)
    }

    /// True when [`TcpConnection::poll_transmit`] would return `None` and
    /// change nothing (false says nothing).
    #[inline]
    pub(super) fn is_quiet(&self) -> bool {
        !self.rst_pending
            && self.state == TcpState::Established
            && self.tx.is_quiet()
            && !self.closing
            && !self.rx.wants_ack()
    }

    #[inline(never)]
    pub(super) fn poll_transmit_any(&mut self, now: Time) -> Option<Segment> {
        // Tested before cleared: an unconditional clear would dirty the
        // connection's first line on every call, to be written back later.
        if self.rst_pending {
            self.rst_pending = false;
            self.state = TcpState::Reset;
            let mut rst = self.blank(now, Flags::RST, self.tx.snd_max());
            rst.timestamps = None; // Linux sends RSTs without options
            return Some(rst);
        }
        match self.state {
            TcpState::Listen | TcpState::Reset => None,
            TcpState::SynSent | TcpState::SynReceived => {
                if !std::mem::take(&mut self.syn_pending) {
                    return None;
                }
                if self.syn_first_sent.is_some() {
                    self.syn_retransmitted = true;
                } else {
                    self.syn_first_sent = OptTime::some(now);
                }
                self.arm_syn_timer(now);
                let flags = if self.state == TcpState::SynSent { Flags::SYN } else { Flags::SYN | Flags::ACK };
                Some(self.blank(now, flags, 0))
            }
            TcpState::Established => {
                if let Some(d) = self.tx.poll_transmit(now) {
                    return Some(self.with_ack(now, d));
                }
                let all_acked = self.tx.unacked_app_bytes() == 0;
                if self.closing && all_acked && (!self.fin_sent || self.fin_pending) {
                    self.fin_sent = true;
                    self.fin_pending = false;
                    self.ctl_deadline = OptTime::some(now + self.tx.rto().max(self.fin_rto));
                    let fin = self.blank(now, Flags::FIN, self.tx.snd_max());
                    return Some(self.with_ack(now, fin));
                }
                if self.rx.wants_ack() {
                    let mut a = self.rx.ack_segment(self.tx.config(), now);
                    a.ack += u64::from(self.peer_fin);
                    return Some(a);
                }
                None
            }
        }
    }

    /// Processes a segment from the peer.
    pub fn handle(&mut self, now: Time, seg: &Segment) {
        if seg.flags.contains(Flags::RST) {
            self.state = TcpState::Reset;
            return;
        }
        let syn = seg.flags.contains(Flags::SYN);
        let ack = seg.flags.contains(Flags::ACK);
        if let Some(ts) = seg.timestamps {
            if syn {
                self.peer_ts = OptTime::some(ts.val);
                self.rx.set_ts_recent(ts.val);
            }
        }
        match self.state {
            TcpState::Reset => return,
            TcpState::Listen => {
                if syn && !ack {
                    self.state = TcpState::SynReceived;
                    self.syn_pending = true;
                }
                return;
            }
            TcpState::SynSent => {
                if syn && ack {
                    self.established(now);
                    self.rx.request_ack();
                }
                return;
            }
            TcpState::SynReceived => {
                if syn {
                    self.syn_pending = true; // our SYN-ACK was lost
                    return;
                }
                if !ack {
                    return;
                }
                self.established(now);
            }
            TcpState::Established => {
                if syn {
                    self.rx.request_ack(); // our handshake ACK was lost
                    return;
                }
            }
        }
        if ack {
            let mut acked = seg.ack;
            if self.fin_sent && acked > self.tx.snd_max() {
                self.fin_acked = true;
                self.ctl_deadline = OptTime::NONE; // the FIN's: `fin_sent` holds
                acked = self.tx.snd_max();
            }
            self.tx.handle_ack_of(now, seg, acked);
        }
        if seg.len > 0 {
            self.rx.handle_segment(self.tx.config(), now, seg);
        }
        if seg.flags.contains(Flags::FIN) {
            if seg.seq + seg.len as u64 == self.rx.delivered() {
                self.peer_fin = true;
            }
            self.rx.request_ack();
        }
    }

    fn established(&mut self, now: Time) {
        self.state = TcpState::Established;
        debug_assert!(!self.fin_sent);
        self.ctl_deadline = OptTime::NONE; // the SYN's
        if let (Some(t), false) = (self.syn_first_sent.get(), self.syn_retransmitted) {
            self.tx.rtt_sample(now.saturating_since(t)); // Karn: only unambiguous samples
        }
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        let data = if self.state == TcpState::Established { self.tx.deadline() } else { OptTime::NONE };
        let fin = if self.fin_acked { OptTime::NONE } else { self.fin_deadline() };
        self.syn_deadline().earliest(fin).earliest(data).earliest(self.rx.deadline()).get()
    }

    /// Fires whichever timers are due; harmless otherwise.
    pub fn handle_timeout(&mut self, now: Time) {
        if self.syn_deadline().get().is_some_and(|d| now >= d) {
            self.ctl_deadline = OptTime::NONE;
            self.syn_tries += 1;
            let limit = if self.state == TcpState::SynSent { SYN_RETRIES } else { SYNACK_RETRIES };
            if self.syn_tries > limit {
                self.state = TcpState::Reset;
                return;
            }
            self.syn_pending = true;
        }
        if self.fin_deadline().get().is_some_and(|d| now >= d) && !self.fin_acked {
            self.fin_pending = true;
            self.fin_rto = self.fin_rto.saturating_mul(2);
            self.ctl_deadline = OptTime::NONE;
        }
        if self.state == TcpState::Established {
            self.tx.handle_timeout(now);
        }
        self.rx.handle_timeout(now);
    }
}
