//! The receiving half of a TCP connection: reassembly (lengths only),
//! cumulative ACKs, SACK blocks (RFC 2018), RFC 7323 timestamp echo and
//! RFC 5681 §4.2 delayed ACKs.

use std::sync::Arc;

use torrentlab_engine::{Duration, OptTime, Time};

use super::config::TcpConfig;
use super::sack::SackBlocks;
use super::segment::{Flags, Segment, Timestamps};
use super::thin_vec::ThinVec;

/// Counters of one receiver. Bytes are payload bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    pub segments_received: u64,
    pub bytes_received: u64,
    pub acks_sent: u64,
    /// Payload bytes received that had already arrived (spurious retransmissions).
    pub duplicate_bytes: u64,
    pub out_of_order_segments: u64,
}

/// The receiving half of a TCP connection on its own (a bulk transfer's
/// receiver): its configuration and its [`ReceiverState`].
pub struct TcpReceiver {
    cfg: Arc<TcpConfig>,
    state: ReceiverState,
}

impl TcpReceiver {
    pub fn new(cfg: impl Into<Arc<TcpConfig>>) -> Self {
        TcpReceiver { cfg: cfg.into(), state: ReceiverState::new() }
    }

    /// Bytes delivered in order to the application so far.
    pub fn delivered(&self) -> u64 {
        self.state.delivered()
    }

    pub fn stats(&self) -> &ReceiverStats {
        self.state.stats()
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        self.state.poll_timeout()
    }

    /// Fires the delayed-ACK timer if due; harmless otherwise.
    pub fn handle_timeout(&mut self, now: Time) {
        self.state.handle_timeout(now)
    }

    /// Processes a data segment from the sender.
    pub fn handle_segment(&mut self, now: Time, seg: &Segment) {
        self.state.handle_segment(&self.cfg, now, seg)
    }

    /// The ACK to send, if one is due.
    pub fn poll_transmit(&mut self, now: Time) -> Option<Segment> {
        self.state.poll_transmit(&self.cfg, now)
    }

    /// See [`ReceiverState::ack_segment`].
    pub fn ack_segment(&mut self, now: Time) -> Segment {
        self.state.ack_segment(&self.cfg, now)
    }

    /// See [`ReceiverState::advertised_window`].
    pub fn advertised_window(&self) -> u64 {
        self.state.advertised_window(&self.cfg)
    }

    /// Sets TS.Recent from a handshake segment (a SYN's TSval).
    pub fn set_ts_recent(&mut self, t: Time) {
        self.state.set_ts_recent(t)
    }

    /// True when an ACK is due now.
    pub fn wants_ack(&self) -> bool {
        self.state.wants_ack()
    }

    /// Asks for an ACK at the next transmission opportunity.
    pub fn request_ack(&mut self) {
        self.state.request_ack()
    }
}

/// A receiver's state, without its configuration: a
/// [`TcpConnection`](super::TcpConnection) keeps one configuration for both
/// halves and hands it in.
#[derive(Debug)]
pub struct ReceiverState {
    /// Next in-order byte expected: everything below it has been delivered.
    rcv_nxt: u64,
    /// Out-of-order data above `rcv_nxt`: sorted, disjoint, non-adjacent ranges,
    /// each with the arrival count of its latest segment (for SACK block order).
    ooo: ThinVec<(u64, u64, u64)>,
    arrivals: u64,
    /// TS.Recent (RFC 7323 §4.3): the TSval to echo.
    ts_recent: OptTime,
    /// The one-way delay of the latest data segment, until an ACK carries it
    /// ([`Timestamps::delay`]).
    latest_delay: Option<Duration>,
    /// The acknowledgement number of the last ACK sent (RFC 7323 Last.ACK.sent).
    last_ack_sent: u64,
    /// Payload bytes received since the last ACK.
    unacked_bytes: u64,
    /// Segments still to be ACKed at once (quick-ACK mode).
    quickacks_left: u32,
    ack_now: bool,
    last_data_at: OptTime,
    delack_deadline: OptTime,
    stats: ReceiverStats,
}

impl Default for ReceiverState {
    fn default() -> Self {
        Self::new()
    }
}

impl ReceiverState {
    pub fn new() -> Self {
        ReceiverState {
            rcv_nxt: 0,
            ooo: ThinVec::default(),
            arrivals: 0,
            ts_recent: OptTime::NONE,
            latest_delay: None,
            last_ack_sent: 0,
            ack_now: false,
            unacked_bytes: 0,
            quickacks_left: 0,
            last_data_at: OptTime::NONE,
            delack_deadline: OptTime::NONE,
            stats: ReceiverStats::default(),
        }
    }

    /// Bytes delivered in order to the application so far.
    pub fn delivered(&self) -> u64 {
        self.rcv_nxt
    }

    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        self.deadline().get()
    }

    /// [`TcpReceiver::poll_timeout`] as an [`OptTime`].
    #[inline]
    pub(crate) fn deadline(&self) -> OptTime {
        self.delack_deadline
    }

    /// Fires the delayed-ACK timer if due; harmless otherwise.
    pub fn handle_timeout(&mut self, now: Time) {
        if self.delack_deadline.get().is_some_and(|d| now >= d) {
            self.delack_deadline = OptTime::NONE;
            self.ack_now = true;
        }
    }

    /// Processes a data segment from the sender.
    pub fn handle_segment(&mut self, cfg: &TcpConfig, now: Time, seg: &Segment) {
        if seg.len == 0 {
            return;
        }
        self.stats.segments_received += 1;
        self.stats.bytes_received += seg.len as u64;
        let (start, end) = (seg.seq, seg.seq + seg.len as u64);
        if let Some(ts) = seg.timestamps {
            // Read to the microsecond, as uTP's clock reads it.
            self.latest_delay =
                Some(Duration::from_micros(now.saturating_since(ts.val).as_micros().min(u32::MAX as u64)));
        }
        // Linux quick-ACK mode: at the start, and after a gap longer than the RTO.
        if self.last_data_at.get().is_none_or(|t| now.saturating_since(t) > cfg.initial_rto) {
            self.quickacks_left = cfg.quickacks;
        }
        self.last_data_at = OptTime::some(now);
        let quick = self.quickacks_left > 0;
        self.quickacks_left = self.quickacks_left.saturating_sub(1);
        let mut immediate = cfg.delayed_ack.is_none() || quick;
        if start <= self.rcv_nxt {
            // RFC 7323 §4.3: TS.Recent comes from a segment at or below
            // Last.ACK.sent, so with delayed ACKs the echo is the earliest
            // unacknowledged segment's TSval (and the RTT includes the hold).
            if let Some(ts) = seg.timestamps {
                if start <= self.last_ack_sent || self.ts_recent.is_none() {
                    self.ts_recent = OptTime::some(ts.val);
                }
            }
            if end <= self.rcv_nxt {
                self.stats.duplicate_bytes += seg.len as u64;
                immediate = true;
            } else {
                self.stats.duplicate_bytes += self.rcv_nxt - start;
                self.rcv_nxt = end;
                if !self.ooo.is_empty() {
                    immediate = true; // filling a hole: ACK at once (RFC 5681 §4.2)
                    self.absorb_in_order();
                }
            }
        } else {
            self.stats.out_of_order_segments += 1;
            if self.ts_recent.is_none() {
                self.ts_recent = seg.timestamps.map(|t| t.val).into();
            }
            self.stats.duplicate_bytes += self.insert_out_of_order(start, end);
            immediate = true; // out-of-order: duplicate ACK at once
        }
        if immediate {
            self.ack_now = true;
        } else {
            // RFC 5681 §4.2: ACK at least every second full-sized segment's worth
            // (a TSO segment of two or more MSS is ACKed at once).
            self.unacked_bytes += seg.len as u64;
            if self.unacked_bytes >= 2 * cfg.mss as u64 {
                self.ack_now = true;
            } else if self.delack_deadline.is_none() {
                self.delack_deadline = cfg.delayed_ack.map(|d| now + d).into();
            }
        }
    }

    fn absorb_in_order(&mut self) {
        let mut consumed = 0;
        for &(s, e, _) in self.ooo.iter() {
            if s > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(e);
            consumed += 1;
        }
        self.ooo.drop_front(consumed);
    }

    /// Inserts `[start, end)` into the out-of-order set; returns how many of its
    /// bytes were already there.
    fn insert_out_of_order(&mut self, mut start: u64, mut end: u64) -> u64 {
        let len = end - start;
        let i = self.ooo.partition_point(|&(_, e, _)| e < start);
        let mut j = i;
        let mut overlap = 0;
        while j < self.ooo.len() && self.ooo[j].0 <= end {
            let (s, e, _) = self.ooo[j];
            overlap += e.min(end).saturating_sub(s.max(start));
            start = start.min(s);
            end = end.max(e);
            j += 1;
        }
        self.arrivals += 1;
        self.ooo.vec().splice(i..j, std::iter::once((start, end, self.arrivals)));
        overlap.min(len)
    }

    /// SACK blocks for the next ACK: the block holding the most recent
    /// out-of-order arrival first, then the others by recency (RFC 2018 §4);
    /// three fit beside the timestamps option, four without.
    fn sack_blocks(&self, cfg: &TcpConfig) -> SackBlocks {
        if !cfg.sack || self.ooo.is_empty() {
            return SackBlocks::NONE;
        }
        let max = if cfg.timestamps { 3 } else { 4 };
        let mut recent: [(u64, u64, u64); 4] = [(0, 0, 0); 4];
        let mut n = 0;
        for &r in self.ooo.iter() {
            // Keep the `max` most recent, newest first (insertion into a tiny array).
            let mut k = n.min(max);
            while k > 0 && recent[k - 1].2 < r.2 {
                if k < max {
                    recent[k] = recent[k - 1];
                }
                k -= 1;
            }
            if k < max {
                recent[k] = r;
                n = (n + 1).min(max);
            }
        }
        SackBlocks::new(self.rcv_nxt, recent[..n].iter().map(|&(s, e, _)| (s, e)))
    }

    /// The ACK to send, if one is due.
    pub fn poll_transmit(&mut self, cfg: &TcpConfig, now: Time) -> Option<Segment> {
        if !self.ack_now {
            return None;
        }
        Some(self.ack_segment(cfg, now))
    }

    /// An ACK segment with the current acknowledgement state, sent now (a
    /// connection piggybacks these fields on its data segments); clears any
    /// pending or delayed ACK.
    pub fn ack_segment(&mut self, cfg: &TcpConfig, now: Time) -> Segment {
        self.ack_now = false;
        self.unacked_bytes = 0;
        self.delack_deadline = OptTime::NONE;
        self.stats.acks_sent += 1;
        self.last_ack_sent = self.rcv_nxt;
        Segment {
            seq: 0,
            ack: self.rcv_nxt,
            len: 0,
            flags: Flags::ACK,
            window: self.advertised_window(cfg),
            timestamps: cfg.timestamps.then_some(Timestamps {
                val: now,
                ecr: self.ts_recent.get(),
                delay: self.latest_delay.take(),
            }),
            sack: self.sack_blocks(cfg),
        }
    }

    /// The receive window to advertise: the buffer less the out-of-order bytes
    /// it holds (in-order bytes go to the application at once).
    pub fn advertised_window(&self, cfg: &TcpConfig) -> u64 {
        let held: u64 = self.ooo.iter().map(|&(s, e, _)| e - s).sum();
        cfg.receive_window.saturating_sub(held)
    }

    /// Sets TS.Recent from a handshake segment (a SYN's TSval).
    pub fn set_ts_recent(&mut self, t: Time) {
        self.ts_recent = OptTime::some(t);
    }

    /// True when an ACK is due now.
    pub fn wants_ack(&self) -> bool {
        self.ack_now
    }

    /// Asks for an ACK at the next transmission opportunity.
    pub fn request_ack(&mut self) {
        self.ack_now = true;
    }
}
