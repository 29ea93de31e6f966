//! One end of a uTP connection (BEP 29), sans-IO.

use std::collections::VecDeque;
use std::sync::Arc;

use torrentlab_engine::{Duration, OptDuration, OptTime, Time};
use torrentlab_net::wire::{IPV4_HEADER, UDP_HEADER};

use super::config::UtpConfig;
use super::header::{Header, PacketType, SackMask, HEADER_LEN};
use super::ledbat::{UtpAck, UtpLedbat};

/// Connection state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UtpState {
    /// An acceptor waiting for a SYN.
    Listening,
    SynSent,
    Connected,
    /// Gave up (timeouts) or received a RESET.
    Reset,
}

/// A packet on the wire: header, extensions and payload length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UtpPacket {
    pub header: Header,
    pub payload: u32,
}

impl UtpPacket {
    /// IPv4 + UDP + uTP header and extensions + payload, in bytes.
    pub fn wire_len(&self) -> u32 {
        IPV4_HEADER + UDP_HEADER + self.header.byte_len() + self.payload
    }
}

/// Counters of one socket. Bytes are payload bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UtpStats {
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub retransmitted_packets: u64,
    pub retransmitted_bytes: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub acks_sent: u64,
    pub duplicate_acks: u64,
    pub packets_received: u64,
    pub duplicate_bytes: u64,
    /// The largest one-way delay sample handed to LEDBAT, microseconds, as
    /// read (the peer's clock offset from ours included).
    pub max_delay_sample_us: u64,
}

/// A snapshot for metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UtpInfo {
    pub cwnd: u64,
    pub bytes_in_flight: u64,
    pub srtt: Option<Duration>,
    pub rto: Duration,
    pub queuing_delay: Option<Duration>,
    pub slow_start: bool,
}

#[derive(Clone, Copy, Debug)]
struct Sent {
    kind: PacketType,
    len: u32,
    sent_at: Time,
    /// Position of the last transmission in this socket's sending order.
    sent_order: u64,
    transmissions: u32,
    need_resend: bool,
    /// Acknowledged selectively (no longer in flight).
    acked: bool,
    /// An MTU probe of this UDP payload size.
    probe: Option<u32>,
}

/// `a - b` on the 16-bit sequence circle, as a signed distance.
fn seq_diff(a: u16, b: u16) -> i32 {
    a.wrapping_sub(b) as i16 as i32
}

/// One end of a uTP connection.
pub struct UtpSocket {
    /// Shared by the sockets of one configuration.
    cfg: Arc<UtpConfig>,
    state: UtpState,
    clock_offset_us: u32,
    recv_id: u16,
    send_id: u16,
    /// Sequence number of the next packet we send.
    seq_nr: u16,
    /// Last packet received in order from the peer.
    ack_nr: u16,
    /// Unacknowledged packets; `out[k]` has sequence number `seq_una + k`.
    out: VecDeque<Sent>,
    seq_una: u16,
    /// Bytes in flight: sent, not acknowledged, not waiting for a resend.
    cur_window: u64,
    /// Packets sent before and now waiting for a resend (so the send path
    /// scans the window only when there is something to resend).
    resends: usize,
    app_pending: u64,
    /// Payload bytes of the packets in `out` not acknowledged yet.
    out_unacked: u64,
    /// Packets in `out` not acknowledged yet (SYN and FIN included).
    out_unacked_packets: u32,
    /// An abort's RESET is still to be sent.
    reset_pending: bool,
    closing: bool,
    fin_queued: bool,
    peer_wnd: u64,
    cc: UtpLedbat,
    rtt: OptDuration,
    rtt_var: Duration,
    rto: Duration,
    rto_deadline: OptTime,
    consecutive_timeouts: u32,
    dupacks: u32,
    last_ack_seen: Option<u16>,
    window_last_full: Time,
    /// Out-of-order packets: `reorder[i]` holds the payload of `ack_nr + 1 + i`.
    reorder: VecDeque<Option<u32>>,
    reorder_bytes: u64,
    delivered: u64,
    peer_fin: Option<u16>,
    /// Our clock at the last receipt minus that packet's timestamp (echoed).
    reply_micro: u32,
    ack_pending: bool,
    /// MTU discovery state (UDP payload bytes, uTP header included).
    mtu_floor: u32,
    mtu_ceiling: u32,
    probe_in_flight: bool,
    stats: UtpStats,
}

impl UtpSocket {
    fn new(
        cfg: Arc<UtpConfig>,
        state: UtpState,
        recv_id: u16,
        send_id: u16,
        initial_seq: u16,
        clock_offset_us: u32,
    ) -> Self {
        let (cfg_mtu_floor, cfg_mtu_ceiling) = (cfg.mtu_floor, cfg.mtu_ceiling);
        let first = if cfg.mtu_probing { cfg.mtu_floor - HEADER_LEN } else { cfg.packet_size };
        let cc = UtpLedbat::new(cfg.cc.clone(), first);
        UtpSocket {
            rto: cfg.initial_rto,
            peer_wnd: cfg.receive_buffer as u64,
            cfg,
            state,
            clock_offset_us,
            recv_id,
            send_id,
            seq_nr: initial_seq,
            ack_nr: 0,
            out: VecDeque::new(),
            seq_una: initial_seq,
            cur_window: 0,
            resends: 0,
            app_pending: 0,
            out_unacked: 0,
            out_unacked_packets: 0,
            reset_pending: false,
            closing: false,
            fin_queued: false,
            cc,
            rtt: OptDuration::NONE,
            rtt_var: Duration::ZERO,
            rto_deadline: OptTime::NONE,
            consecutive_timeouts: 0,
            dupacks: 0,
            last_ack_seen: None,
            window_last_full: Time::ZERO,
            reorder: VecDeque::new(),
            reorder_bytes: 0,
            delivered: 0,
            peer_fin: None,
            reply_micro: 0,
            ack_pending: false,
            mtu_floor: cfg_mtu_floor,
            mtu_ceiling: cfg_mtu_ceiling,
            probe_in_flight: false,
            stats: UtpStats::default(),
        }
    }

    /// An initiator: sends a SYN with connection id `conn_id` (it receives on
    /// `conn_id`, sends on `conn_id + 1`).
    pub fn connect(
        cfg: impl Into<Arc<UtpConfig>>,
        now: Time,
        conn_id: u16,
        initial_seq: u16,
        clock_offset_us: u32,
    ) -> Self {
        let mut s =
            Self::new(cfg.into(), UtpState::SynSent, conn_id, conn_id.wrapping_add(1), initial_seq, clock_offset_us);
        s.push_out(PacketType::Syn, 0, now);
        s
    }

    /// An acceptor for connection id `conn_id` (it receives on `conn_id + 1`).
    pub fn accept(cfg: impl Into<Arc<UtpConfig>>, conn_id: u16, initial_seq: u16, clock_offset_us: u32) -> Self {
        Self::new(cfg.into(), UtpState::Listening, conn_id.wrapping_add(1), conn_id, initial_seq, clock_offset_us)
    }

    pub fn state(&self) -> UtpState {
        self.state
    }

    /// Payload bytes per full packet (with MTU probing: what the floor allows).
    pub fn packet_size(&self) -> u32 {
        if self.cfg.mtu_probing {
            self.mtu_floor - HEADER_LEN
        } else {
            self.cfg.packet_size
        }
    }

    /// The MTU search range (UDP payload bytes).
    pub fn mtu_range(&self) -> (u32, u32) {
        (self.mtu_floor, self.mtu_ceiling)
    }

    /// The UDP payload size of a probe to send now, if one is due.
    fn probe_size(&self) -> Option<u32> {
        let due = self.cfg.mtu_probing
            && !self.probe_in_flight
            && self.mtu_ceiling > self.mtu_floor + 16
            && self.cc.window() > 3 * self.mtu_floor as u64;
        due.then_some((self.mtu_floor + self.mtu_ceiling) / 2)
    }

    pub fn stats(&self) -> &UtpStats {
        &self.stats
    }

    /// In-order payload bytes received and handed to the application.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// True once the peer's FIN and everything before it have arrived.
    pub fn peer_finished(&self) -> bool {
        self.peer_fin.is_some_and(|f| seq_diff(self.ack_nr, f) >= 0)
    }

    /// Bytes written and not yet acknowledged.
    pub fn unacked_bytes(&self) -> u64 {
        self.app_pending + self.out_unacked
    }

    /// The congestion window, bytes.
    pub fn cwnd(&self) -> u64 {
        self.cc.window()
    }

    pub fn info(&self) -> UtpInfo {
        UtpInfo {
            cwnd: self.cc.window(),
            bytes_in_flight: self.cur_window,
            srtt: self.rtt.get(),
            rto: self.rto,
            queuing_delay: self.cc.queuing_delay(),
            slow_start: self.cc.in_slow_start(),
        }
    }

    /// The application writes `bytes` more bytes.
    pub fn write(&mut self, bytes: u64) {
        self.app_pending = self.app_pending.saturating_add(bytes);
    }

    /// The application is done writing: a FIN follows the data.
    pub fn close(&mut self) {
        self.closing = true;
    }

    /// Stops sending anything not yet packetised.
    pub fn stop_writing(&mut self) {
        self.app_pending = 0;
    }

    /// Ends the connection at once, as libutp's and libtorrent's sockets do
    /// when the application gives up on a peer: an ST_RESET goes to the peer
    /// (unless nobody has dialled this acceptor yet) and nothing else follows.
    pub fn abort(&mut self) {
        if self.state == UtpState::Reset {
            return;
        }
        self.reset_pending = self.state != UtpState::Listening;
        self.state = UtpState::Reset;
        self.rto_deadline = OptTime::NONE;
        self.app_pending = 0;
        self.ack_pending = false;
        self.out.clear();
        (self.out_unacked, self.out_unacked_packets, self.cur_window, self.resends) = (0, 0, 0, 0);
    }

    /// Drops a SYN the application refuses without answering it (libutp's
    /// firewall callback, libtorrent's `enable_incoming_utp` off): nothing
    /// is sent, and later packets of the dial are ignored. The dialler
    /// learns nothing until its SYN times out.
    pub fn ignore(&mut self) {
        self.abort();
        self.reset_pending = false;
    }

    fn clock_us(&self, now: Time) -> u32 {
        ((now.as_nanos() / 1000) as u32).wrapping_add(self.clock_offset_us)
    }

    fn push_out(&mut self, kind: PacketType, len: u32, now: Time) {
        self.out_unacked += len as u64;
        self.out_unacked_packets += 1;
        self.out.push_back(Sent {
            kind,
            len,
            sent_at: now,
            sent_order: 0,
            transmissions: 0,
            need_resend: true,
            acked: false,
            probe: None,
        });
        self.seq_nr = self.seq_nr.wrapping_add(1);
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        self.rto_deadline.get()
    }

    fn header(&mut self, now: Time, kind: PacketType, seq_nr: u16) -> Header {
        let mut sack = SackMask::default();
        for (i, slot) in self.reorder.iter().enumerate().skip(1) {
            if slot.is_some() && !sack.set(i - 1) {
                break;
            }
        }
        Header {
            kind,
            connection_id: if kind == PacketType::Syn { self.recv_id } else { self.send_id },
            timestamp_us: self.clock_us(now),
            timestamp_diff_us: self.reply_micro,
            wnd_size: (self.cfg.receive_buffer as u64).saturating_sub(self.reorder_bytes) as u32,
            seq_nr,
            ack_nr: self.ack_nr,
            sack,
        }
    }

    fn window_allows(&mut self, now: Time, len: u32) -> bool {
        // One packet may always be in flight, whatever the window.
        let window = self.cc.window().min(self.peer_wnd);
        if self.cur_window + len as u64 > window && self.cur_window > 0 {
            self.window_last_full = now;
            false
        } else {
            true
        }
    }

    /// The next packet to send, if any.
    pub fn poll_transmit(&mut self, now: Time) -> Option<UtpPacket> {
        if self.reset_pending {
            self.reset_pending = false;
            return Some(UtpPacket { header: self.header(now, PacketType::Reset, self.seq_nr), payload: 0 });
        }
        if matches!(self.state, UtpState::Reset | UtpState::Listening) {
            return self.ack_packet(now);
        }
        // Packets waiting for a (re)send, oldest first, as the window allows.
        let unsent_syn = self.out.front().is_some_and(|p| p.transmissions == 0);
        let waiting =
            if self.resends > 0 || unsent_syn { self.out.iter().position(|p| p.need_resend && !p.acked) } else { None };
        if let Some(k) = waiting {
            let p = self.out[k];
            if p.kind == PacketType::Syn || self.window_allows(now, p.len) {
                return Some(self.transmit(now, k));
            }
            return self.ack_packet(now);
        }
        if self.state != UtpState::Connected {
            return None;
        }
        if self.app_pending > 0 {
            let full = self.packet_size();
            let probe = self.probe_size().filter(|p| self.app_pending >= (p - HEADER_LEN) as u64);
            let len = match probe {
                Some(p) => p - HEADER_LEN,
                None => self.app_pending.min(full as u64) as u32,
            };
            // Scanned only for a short packet (bulk transfers never pay for it).
            let nagle_holds = self.cfg.nagle
                && len < full
                && self.out.iter().any(|p| !p.acked && p.kind == PacketType::Data && p.len < full);
            if !nagle_holds && self.window_allows(now, len) {
                self.app_pending -= len as u64;
                self.push_out(PacketType::Data, len, now);
                if let Some(p) = probe {
                    self.out.back_mut().expect("just pushed").probe = Some(p);
                    self.probe_in_flight = true;
                }
                return Some(self.transmit(now, self.out.len() - 1));
            }
        } else if self.closing && !self.fin_queued {
            self.fin_queued = true;
            self.push_out(PacketType::Fin, 0, now);
            return Some(self.transmit(now, self.out.len() - 1));
        }
        self.ack_packet(now)
    }

    fn ack_packet(&mut self, now: Time) -> Option<UtpPacket> {
        if !self.ack_pending {
            return None;
        }
        self.ack_pending = false;
        self.stats.acks_sent += 1;
        Some(UtpPacket { header: self.header(now, PacketType::State, self.seq_nr), payload: 0 })
    }

    fn transmit(&mut self, now: Time, k: usize) -> UtpPacket {
        let seq = self.seq_una.wrapping_add(k as u16);
        let p = &mut self.out[k];
        if p.need_resend && p.transmissions > 0 {
            self.resends -= 1;
        }
        p.need_resend = false;
        p.sent_at = now;
        p.sent_order = self.stats.packets_sent;
        p.transmissions += 1;
        let (kind, len, again) = (p.kind, p.len, p.transmissions > 1);
        self.cur_window += len as u64;
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += len as u64;
        if again {
            self.stats.retransmitted_packets += 1;
            self.stats.retransmitted_bytes += len as u64;
        }
        if self.rto_deadline.is_none() {
            self.rto_deadline = OptTime::some(now + self.rto);
        }
        self.ack_pending = false; // every packet carries ack_nr
        UtpPacket { header: self.header(now, kind, seq), payload: len }
    }

    /// Processes a packet from the peer.
    pub fn handle(&mut self, now: Time, pkt: &UtpPacket) {
        let h = &pkt.header;
        if self.state == UtpState::Reset {
            return;
        }
        if h.kind == PacketType::Syn {
            if self.state == UtpState::Listening && h.connection_id.wrapping_add(1) == self.recv_id {
                self.state = UtpState::Connected;
                self.ack_nr = h.seq_nr;
                self.ack_pending = true;
            } else if self.state == UtpState::Connected {
                self.ack_pending = true; // our STATE was lost: answer again
            }
            self.reply_micro = self.clock_us(now).wrapping_sub(h.timestamp_us);
            return;
        }
        if h.connection_id != self.recv_id {
            return;
        }
        self.stats.packets_received += 1;
        self.reply_micro = self.clock_us(now).wrapping_sub(h.timestamp_us);
        self.peer_wnd = h.wnd_size as u64;
        if h.kind == PacketType::Reset {
            self.state = UtpState::Reset;
            self.rto_deadline = OptTime::NONE;
            return;
        }
        if self.state == UtpState::SynSent && h.kind == PacketType::State {
            self.state = UtpState::Connected;
            self.ack_nr = h.seq_nr.wrapping_sub(1);
        }
        self.process_ack(now, h);
        if matches!(h.kind, PacketType::Data | PacketType::Fin) {
            self.receive(h.seq_nr, pkt.payload, h.kind == PacketType::Fin);
        }
    }

    fn receive(&mut self, seq: u16, len: u32, fin: bool) {
        self.ack_pending = true;
        if fin {
            self.peer_fin = Some(seq);
        }
        let ahead = seq_diff(seq, self.ack_nr);
        if ahead <= 0 {
            self.stats.duplicate_bytes += len as u64;
            return;
        }
        if ahead == 1 && self.reorder.is_empty() {
            // The next in order, nothing waiting behind it: straight through.
            self.delivered += len as u64;
            self.ack_nr = seq;
            return;
        }
        let i = (ahead - 1) as usize;
        if i >= 4096 {
            return; // far outside any window
        }
        if self.reorder.len() <= i {
            self.reorder.resize(i + 1, None);
        }
        if self.reorder[i].is_some() {
            self.stats.duplicate_bytes += len as u64;
            return;
        }
        self.reorder[i] = Some(len);
        self.reorder_bytes += len as u64;
        while let Some(Some(l)) = self.reorder.front().copied() {
            self.reorder.pop_front();
            self.reorder_bytes -= l as u64;
            self.delivered += l as u64;
            self.ack_nr = self.ack_nr.wrapping_add(1);
        }
    }

    fn ack_one(&mut self, k: usize, now: Time, acked: &mut u64, min_rtt: &mut Option<Duration>) {
        let p = &mut self.out[k];
        if p.acked {
            return;
        }
        p.acked = true;
        self.out_unacked -= p.len as u64;
        self.out_unacked_packets -= 1;
        if p.need_resend && p.transmissions > 0 {
            self.resends -= 1;
        }
        if let Some(size) = p.probe {
            // The path carried the probe: raise the floor (libtorrent).
            self.mtu_floor = self.mtu_floor.max(size);
            self.probe_in_flight = false;
        }
        if p.transmissions > 0 && !p.need_resend {
            self.cur_window -= p.len as u64;
        }
        *acked += p.len as u64;
        if p.transmissions == 1 {
            let r = now.saturating_since(p.sent_at);
            *min_rtt = Some(min_rtt.map_or(r, |m| m.min(r)));
        }
    }

    fn process_ack(&mut self, now: Time, h: &Header) {
        let (mut acked, mut min_rtt) = (0u64, None);
        let flight_before = self.cur_window;
        // Cumulative: everything up to ack_nr.
        let covered = seq_diff(h.ack_nr, self.seq_una) + 1;
        let progressed = covered > 0 && covered as usize <= self.out.len();
        if progressed {
            for k in 0..covered as usize {
                self.ack_one(k, now, &mut acked, &mut min_rtt);
            }
            self.out.drain(..covered as usize);
            self.seq_una = h.ack_nr.wrapping_add(1);
        }
        // Selective: bit i is ack_nr + 2 + i.
        let mut highest_sacked = None;
        for i in 0..h.sack.len as usize * 8 {
            if h.sack.get(i) {
                let k = seq_diff(h.ack_nr.wrapping_add(2 + i as u16), self.seq_una);
                if k >= 0 && (k as usize) < self.out.len() {
                    self.ack_one(k as usize, now, &mut acked, &mut min_rtt);
                    highest_sacked = Some(k as usize);
                }
            }
        }
        if let Some(r) = min_rtt {
            self.rtt_sample(r);
        }
        let mut lost = false;
        let mut lost_probe: Option<u32> = None;
        // Duplicate ACKs: same ack_nr, nothing new, data outstanding.
        if !progressed && acked == 0 && h.kind == PacketType::State && self.cur_window > 0 {
            if self.last_ack_seen == Some(h.ack_nr) {
                self.stats.duplicate_acks += 1;
                self.dupacks += 1;
                if self.dupacks == self.cfg.dupack_threshold {
                    let first = self.out.front_mut().filter(|p| !p.acked && !p.need_resend && p.transmissions == 1);
                    if let Some(p) = first {
                        p.need_resend = true;
                        self.resends += 1;
                        self.cur_window -= p.len as u64;
                        match p.probe.take() {
                            Some(size) => lost_probe = Some(size),
                            None => lost = true,
                        }
                    }
                }
            }
        } else {
            self.dupacks = 0;
        }
        self.last_ack_seen = Some(h.ack_nr);
        // SACK: a packet with `dupack_threshold` packets SACKed above it, sent
        // after its last transmission, is lost (libutp resends up to 4 per ACK).
        // Packets SACKed before a retransmission say nothing about it.
        if let Some(top) = highest_sacked {
            // The largest send orders among the packets SACKed above k: k is lost
            // when `dupack_threshold` of them left after k's last transmission.
            let need = self.cfg.dupack_threshold.clamp(1, 8) as usize;
            let mut top_orders = [0u64; 8];
            let mut seen = 0usize;
            let mut resent = 0;
            for k in (0..=top).rev() {
                let p = &mut self.out[k];
                if p.acked {
                    // Insert into the (descending) top list, keeping `need` entries.
                    let mut i = seen.min(need);
                    while i > 0 && top_orders[i - 1] < p.sent_order {
                        if i < need {
                            top_orders[i] = top_orders[i - 1];
                        }
                        i -= 1;
                    }
                    if i < need {
                        top_orders[i] = p.sent_order;
                        seen = (seen + 1).min(need);
                    }
                    continue;
                }
                let later = top_orders[..seen].iter().filter(|o| **o > p.sent_order).count() as u32;
                if later >= self.cfg.dupack_threshold && !p.need_resend && resent < 4 {
                    p.need_resend = true;
                    self.resends += 1;
                    self.cur_window -= p.len as u64;
                    resent += 1;
                    match p.probe.take() {
                        Some(size) => lost_probe = Some(size),
                        None => lost = true,
                    }
                }
            }
        }
        if let Some(size) = lost_probe {
            // A lost probe says the path MTU is smaller, not that it is congested.
            self.mtu_ceiling = self.mtu_ceiling.min(size - 1);
            self.probe_in_flight = false;
            self.stats.fast_retransmits += u64::from(!lost);
        }
        if lost {
            self.stats.fast_retransmits += 1;
            let rtt = self.rtt.get().unwrap_or(self.rto);
            self.cc.on_loss(now, rtt, self.packet_size());
        }
        self.cc.on_ack(&UtpAck {
            now,
            acked_bytes: acked,
            flight_before,
            delay_sample_us: (h.timestamp_diff_us != 0).then(|| {
                self.stats.max_delay_sample_us = self.stats.max_delay_sample_us.max(h.timestamp_diff_us as u64);
                h.timestamp_diff_us
            }),
            min_rtt,
            packet_size: self.packet_size(),
            window_last_full: self.window_last_full,
        });
        if acked > 0 || progressed {
            self.consecutive_timeouts = 0;
            self.rto_deadline = (self.out_unacked_packets > 0).then(|| now + self.rto).into();
        }
    }

    /// libutp's RTT filter: `rtt_var += (|rtt - sample| - rtt_var) / 4`,
    /// `rtt += (sample - rtt) / 8`, `rto = max(rtt + 4 rtt_var, min_rto)`.
    fn rtt_sample(&mut self, r: Duration) {
        match self.rtt.get() {
            None => {
                self.rtt = OptDuration::some(r);
                self.rtt_var = Duration(r.0 / 2);
            }
            Some(rtt) => {
                let delta = rtt.0.abs_diff(r.0) as i64;
                let var = self.rtt_var.0 as i64 + (delta - self.rtt_var.0 as i64) / 4;
                self.rtt_var = Duration(var.max(0) as u64);
                self.rtt = OptDuration::some(Duration((rtt.0 as i64 + (r.0 as i64 - rtt.0 as i64) / 8) as u64));
            }
        }
        self.rto = (self.rtt.get().unwrap_or(r) + self.rtt_var.saturating_mul(4)).max(self.cfg.min_rto);
    }

    /// Fires the retransmission timer if due: every packet in flight is to be
    /// resent, the window collapses and the timeout doubles; after
    /// `max_timeouts` in a row (or `syn_retries` for the SYN) the connection is
    /// given up.
    pub fn handle_timeout(&mut self, now: Time) {
        let Some(deadline) = self.rto_deadline.get() else { return };
        if now < deadline {
            return;
        }
        if self.out_unacked_packets == 0 {
            self.rto_deadline = OptTime::NONE;
            return;
        }
        self.consecutive_timeouts += 1;
        self.stats.timeouts += 1;
        let limit = if self.state == UtpState::SynSent { self.cfg.syn_retries } else { self.cfg.max_timeouts };
        if self.consecutive_timeouts > limit {
            self.state = UtpState::Reset;
            self.rto_deadline = OptTime::NONE;
            return;
        }
        let flight = self.cur_window;
        if let Some(size) = self.out.iter_mut().find(|p| !p.acked).and_then(|p| p.probe.take()) {
            self.mtu_ceiling = self.mtu_ceiling.min(size - 1);
            self.probe_in_flight = false;
        }
        self.cc.on_timeout(flight, self.packet_size());
        for p in self.out.iter_mut().filter(|p| !p.acked && !p.need_resend && p.transmissions > 0) {
            p.need_resend = true;
            self.resends += 1;
            self.cur_window -= p.len as u64;
        }
        self.rto = self.rto.saturating_mul(2);
        self.rto_deadline = OptTime::some(now + self.rto);
    }
}
