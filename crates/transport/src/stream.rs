//! The transport-neutral view of a connection endpoint: what the layers above
//! (a bulk application now, the BitTorrent peer wire later) and the simulator's
//! world need from TCP and uTP alike.
//!
//! Byte counts only: `write` adds bytes to the outgoing stream, `delivered`
//! counts bytes received in order. Packets are [`Wire`] values; every input
//! carries `now` and every output is polled.

use torrentlab_engine::{Duration, Time};

use crate::datagram::Datagram;
use crate::tcp::{Segment, TcpConnection, TcpReceiver, TcpSender, TcpState};
use crate::utp::{UtpPacket, UtpSocket, UtpState};

/// A transport packet, as the network carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Tcp(Segment),
    Utp(UtpPacket),
    /// A UDP datagram or an ICMP echo ([`crate::datagram`]).
    Datagram(Datagram),
}

impl Wire {
    /// Bytes of the IP packet.
    #[inline]
    pub fn wire_len(&self) -> u32 {
        match self {
            Wire::Tcp(s) => s.wire_len(),
            Wire::Utp(p) => p.wire_len(),
            Wire::Datagram(d) => d.wire_len(),
        }
    }

    /// Application payload bytes.
    #[inline]
    pub fn payload_len(&self) -> u32 {
        match self {
            Wire::Tcp(s) => s.len,
            Wire::Utp(p) => p.payload,
            Wire::Datagram(d) => d.payload,
        }
    }
}

/// Sender-side state for metrics (a TCP_INFO-like snapshot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnInfo {
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes (`None`: not applicable or infinite).
    pub ssthresh: Option<u64>,
    pub bytes_in_flight: u64,
    pub srtt: Option<Duration>,
    /// The congestion controller's queuing-delay estimate, if it keeps one.
    pub queuing_delay: Option<Duration>,
    /// Payload bytes per full packet.
    pub packet_size: u32,
}

/// Per-connection counters (payload bytes; packets of this transport).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnCounters {
    pub bytes_sent: u64,
    pub packets_sent: u64,
    pub retransmitted_packets: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub duplicate_acks: u64,
    /// The largest delay sample handed to the congestion controller: an RTT
    /// for TCP, a one-way delay for uTP (as read: clock offsets included).
    pub max_delay_sample: Duration,
    /// The largest one-way-delay sample handed to the controller (uTP: the
    /// same as `max_delay_sample`; TCP: the delay its ACKs carried).
    pub max_one_way_delay: Duration,
    /// TCP: retransmissions found lost again by RACK or FACK (Linux
    /// `TCPLostRetransmit`).
    pub lost_retransmits: u64,
    /// TCP: tail loss probes sent (Linux `TCPLossProbes`).
    pub loss_probes: u64,
    /// TCP: timeouts F-RTO found spurious (Linux `TCPSpuriousRTOs`).
    pub spurious_timeouts: u64,
}

/// One end of a connection, driven by a simulator or a real socket loop.
pub trait Endpoint: Send {
    /// The application writes `bytes` more bytes.
    fn write(&mut self, _bytes: u64) {}
    /// The application writes nothing more beyond what has been sent.
    fn stop_writing(&mut self) {}
    /// The application has written everything: end the stream after it (FIN).
    fn close(&mut self) {}
    /// Bytes received in order so far.
    fn delivered(&self) -> u64 {
        0
    }
    /// Bytes written by the application and not yet acknowledged by the peer.
    fn unacked(&self) -> u64 {
        0
    }
    /// True once the peer has ended its stream (FIN) after all its data.
    fn peer_finished(&self) -> bool {
        false
    }
    fn handle(&mut self, now: Time, packet: &Wire);
    fn poll_transmit(&mut self, now: Time) -> Option<Wire>;
    fn poll_timeout(&self) -> Option<Time>;
    fn handle_timeout(&mut self, now: Time);
    /// Sender-side snapshot, for endpoints that send data.
    fn info(&self) -> Option<ConnInfo> {
        None
    }
    fn counters(&self) -> ConnCounters {
        ConnCounters::default()
    }
    /// False once the connection is dead (reset or given up).
    fn is_alive(&self) -> bool {
        true
    }
    /// Ends the connection at once: TCP sends a RST, uTP an ST_RESET.
    fn abort(&mut self) {}
    /// The initiator's handshake is complete (TCP ESTABLISHED; uTP CONNECTED).
    fn is_established(&self) -> bool {
        true
    }
    /// An acceptor has just heard a connection request: TCP SYN-RECEIVED;
    /// uTP answers a SYN at once, so CONNECTED.
    fn syn_received(&self) -> bool {
        false
    }
    /// The congestion window (bytes) and the payload bytes of a full packet,
    /// for a driver's socket-buffer rules.
    fn window(&self) -> (u64, u32) {
        (0, 0)
    }
}

/// What changed on an endpoint since the application last looked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// `bytes` more bytes arrived in order.
    Readable { bytes: u64 },
    /// Unacknowledged written data fell to or below the low-water mark: the
    /// application may write more.
    Writable,
    /// The peer finished its stream, or the connection died.
    Closed,
}

/// Turns an endpoint's byte counts into readable / writable / closed events,
/// for applications (the BitTorrent peer wire) that react to them.
#[derive(Clone, Debug)]
pub struct StreamEvents {
    last_delivered: u64,
    low_water: u64,
    writable: bool,
    closed: bool,
}

impl StreamEvents {
    /// `low_water`: at or below this many unacknowledged bytes the stream is
    /// writable (Linux's `TCP_NOTSENT_LOWAT` plays this role; libtorrent uses 16 KiB).
    pub fn new(low_water: u64) -> Self {
        StreamEvents { last_delivered: 0, low_water, writable: false, closed: false }
    }

    /// The next event, if any; call until `None` after each step of the endpoint.
    pub fn poll(&mut self, ep: &dyn Endpoint) -> Option<StreamEvent> {
        let delivered = ep.delivered();
        if delivered > self.last_delivered {
            let bytes = delivered - self.last_delivered;
            self.last_delivered = delivered;
            return Some(StreamEvent::Readable { bytes });
        }
        let writable = ep.unacked() <= self.low_water;
        if writable && !self.writable {
            self.writable = true;
            return Some(StreamEvent::Writable);
        }
        self.writable = writable;
        if !self.closed && (ep.peer_finished() || !ep.is_alive()) {
            self.closed = true;
            return Some(StreamEvent::Closed);
        }
        None
    }
}

impl Endpoint for TcpSender {
    fn write(&mut self, bytes: u64) {
        TcpSender::write(self, bytes)
    }
    fn unacked(&self) -> u64 {
        self.unacked_app_bytes()
    }
    fn stop_writing(&mut self) {
        TcpSender::stop_writing(self)
    }
    fn handle(&mut self, now: Time, packet: &Wire) {
        if let Wire::Tcp(seg) = packet {
            self.handle_ack(now, seg);
        }
    }
    #[inline]
    fn poll_transmit(&mut self, now: Time) -> Option<Wire> {
        TcpSender::poll_transmit(self, now).map(Wire::Tcp)
    }
    fn poll_timeout(&self) -> Option<Time> {
        TcpSender::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Time) {
        TcpSender::handle_timeout(self, now)
    }
    fn window(&self) -> (u64, u32) {
        let w = TcpSender::window(self);
        (w.cwnd, w.mss)
    }
    fn info(&self) -> Option<ConnInfo> {
        let i = TcpSender::info(self);
        Some(ConnInfo {
            cwnd: i.cwnd,
            ssthresh: (i.ssthresh < u64::MAX / 2).then_some(i.ssthresh),
            bytes_in_flight: i.bytes_in_flight,
            srtt: i.srtt,
            queuing_delay: i.queuing_delay,
            packet_size: self.window().mss,
        })
    }
    fn counters(&self) -> ConnCounters {
        let s = self.stats();
        ConnCounters {
            bytes_sent: s.bytes_sent,
            packets_sent: s.segments_sent,
            retransmitted_packets: s.retransmitted_segments,
            fast_retransmits: s.fast_retransmits,
            timeouts: s.timeouts,
            duplicate_acks: s.duplicate_acks,
            max_delay_sample: Duration(s.max_rtt_sample_ns),
            max_one_way_delay: Duration(s.max_owd_sample_ns),
            lost_retransmits: s.lost_retransmits,
            loss_probes: s.loss_probes,
            spurious_timeouts: s.spurious_timeouts,
        }
    }
}

impl Endpoint for TcpReceiver {
    fn delivered(&self) -> u64 {
        TcpReceiver::delivered(self)
    }
    fn handle(&mut self, now: Time, packet: &Wire) {
        if let Wire::Tcp(seg) = packet {
            self.handle_segment(now, seg);
        }
    }
    #[inline]
    fn poll_transmit(&mut self, now: Time) -> Option<Wire> {
        TcpReceiver::poll_transmit(self, now).map(Wire::Tcp)
    }
    fn poll_timeout(&self) -> Option<Time> {
        TcpReceiver::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Time) {
        TcpReceiver::handle_timeout(self, now)
    }
}

impl Endpoint for UtpSocket {
    fn write(&mut self, bytes: u64) {
        UtpSocket::write(self, bytes)
    }
    fn stop_writing(&mut self) {
        UtpSocket::stop_writing(self)
    }
    fn close(&mut self) {
        UtpSocket::close(self)
    }
    fn delivered(&self) -> u64 {
        UtpSocket::delivered(self)
    }
    fn unacked(&self) -> u64 {
        self.unacked_bytes()
    }
    fn peer_finished(&self) -> bool {
        UtpSocket::peer_finished(self)
    }
    fn handle(&mut self, now: Time, packet: &Wire) {
        if let Wire::Utp(p) = packet {
            UtpSocket::handle(self, now, p);
        }
    }
    #[inline]
    fn poll_transmit(&mut self, now: Time) -> Option<Wire> {
        UtpSocket::poll_transmit(self, now).map(Wire::Utp)
    }
    fn poll_timeout(&self) -> Option<Time> {
        UtpSocket::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Time) {
        UtpSocket::handle_timeout(self, now)
    }
    fn info(&self) -> Option<ConnInfo> {
        let i = UtpSocket::info(self);
        Some(ConnInfo {
            cwnd: i.cwnd,
            ssthresh: None,
            bytes_in_flight: i.bytes_in_flight,
            srtt: i.srtt,
            queuing_delay: i.queuing_delay,
            packet_size: self.packet_size(),
        })
    }
    fn counters(&self) -> ConnCounters {
        let s = self.stats();
        ConnCounters {
            bytes_sent: s.bytes_sent,
            packets_sent: s.packets_sent,
            retransmitted_packets: s.retransmitted_packets,
            fast_retransmits: s.fast_retransmits,
            timeouts: s.timeouts,
            duplicate_acks: s.duplicate_acks,
            max_delay_sample: Duration::from_micros(s.max_delay_sample_us),
            max_one_way_delay: Duration::from_micros(s.max_delay_sample_us),
            ..ConnCounters::default()
        }
    }
    fn is_alive(&self) -> bool {
        self.state() != UtpState::Reset
    }
    fn abort(&mut self) {
        UtpSocket::abort(self)
    }
    fn is_established(&self) -> bool {
        self.state() == UtpState::Connected
    }
    fn syn_received(&self) -> bool {
        self.state() == UtpState::Connected
    }
    fn window(&self) -> (u64, u32) {
        (self.cwnd(), self.packet_size())
    }
}

impl Endpoint for TcpConnection {
    fn write(&mut self, bytes: u64) {
        TcpConnection::write(self, bytes)
    }
    fn stop_writing(&mut self) {
        TcpConnection::stop_writing(self)
    }
    fn close(&mut self) {
        TcpConnection::close(self)
    }
    fn delivered(&self) -> u64 {
        self.receiver().delivered()
    }
    fn unacked(&self) -> u64 {
        self.sender().unacked_app_bytes()
    }
    fn peer_finished(&self) -> bool {
        TcpConnection::peer_finished(self)
    }
    fn handle(&mut self, now: Time, packet: &Wire) {
        if let Wire::Tcp(seg) = packet {
            TcpConnection::handle(self, now, seg);
        }
    }
    #[inline]
    fn poll_transmit(&mut self, now: Time) -> Option<Wire> {
        TcpConnection::poll_transmit(self, now).map(Wire::Tcp)
    }
    fn poll_timeout(&self) -> Option<Time> {
        TcpConnection::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Time) {
        TcpConnection::handle_timeout(self, now)
    }
    fn info(&self) -> Option<ConnInfo> {
        Endpoint::info(self.sender())
    }
    fn counters(&self) -> ConnCounters {
        Endpoint::counters(self.sender())
    }
    fn is_alive(&self) -> bool {
        self.state() != TcpState::Reset
    }
    fn abort(&mut self) {
        TcpConnection::abort(self)
    }
    fn is_established(&self) -> bool {
        self.state() == TcpState::Established
    }
    fn syn_received(&self) -> bool {
        self.state() == TcpState::SynReceived
    }
    fn window(&self) -> (u64, u32) {
        Endpoint::window(self.sender())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcConfig;
    use crate::tcp::TcpConfig;

    fn ms(x: u64) -> Time {
        Time(x * 1_000_000)
    }

    #[test]
    fn events_report_new_bytes_room_to_write_and_the_peer_finishing() {
        let cfg = TcpConfig { initial_window: 10, ..TcpConfig::rfc() };
        let mut a: Box<dyn Endpoint> = Box::new(TcpConnection::connect(cfg.clone(), CcConfig::NewReno.build()));
        let mut b: Box<dyn Endpoint> = Box::new(TcpConnection::listen(cfg, CcConfig::NewReno.build()));
        let (mut ea, mut eb) = (StreamEvents::new(0), StreamEvents::new(0));
        assert_eq!(ea.poll(a.as_ref()), Some(StreamEvent::Writable), "nothing unacknowledged yet");
        a.write(4000);
        a.close();
        let (mut seen, mut a_seen) = (vec![], vec![]);
        let mut now = ms(0);
        for _ in 0..20 {
            now += torrentlab_engine::Duration::from_millis(10);
            while let Some(p) = a.poll_transmit(now) {
                b.handle(now, &p);
            }
            while let Some(p) = b.poll_transmit(now) {
                a.handle(now, &p);
            }
            while let Some(e) = eb.poll(b.as_ref()) {
                seen.push(e);
            }
            while let Some(e) = ea.poll(a.as_ref()) {
                a_seen.push(e);
            }
        }
        let read: u64 = seen.iter().map(|e| if let StreamEvent::Readable { bytes } = e { *bytes } else { 0 }).sum();
        assert_eq!(read, 4000);
        assert_eq!(seen.last(), Some(&StreamEvent::Closed));
        assert!(a_seen.contains(&StreamEvent::Writable), "writable again once the 4000 bytes are acknowledged");
    }
}
