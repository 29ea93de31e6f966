//! Datagrams without a connection: UDP (RFC 768) and ICMP echo (RFC 792),
//! as ping and a VoIP call's RTP stream (RFC 3550) use them. No handshake,
//! no acknowledgement, no retransmission, no congestion control: what is
//! sent leaves at once, and what is lost stays lost.
//!
//! Each datagram carries the sender's sequence number and a 64-bit stamp
//! (simulated nanoseconds when it was first sent; an echo carries the stamp
//! of the request it answers back unchanged, as `ping` reads its own
//! timestamp from the echoed payload). A receiver keeps every [`Arrival`]
//! until its owner takes them ([`DatagramSocket::take_arrivals`]).

use std::collections::VecDeque;

use torrentlab_engine::Time;

use crate::stream::{ConnCounters, Endpoint, Wire};

/// IPv4 header bytes.
pub const IPV4_HEADER: u32 = 20;
/// UDP header bytes (RFC 768).
pub const UDP_HEADER: u32 = 8;
/// ICMP echo header bytes (RFC 792: type, code, checksum, identifier, sequence).
pub const ICMP_ECHO_HEADER: u32 = 8;
/// RTP fixed header bytes (RFC 3550 §5.1), counted as UDP payload.
pub const RTP_HEADER: u32 = 12;

/// What a datagram is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// A UDP datagram.
    Udp,
    /// An ICMP echo request (RFC 792 type 8).
    EchoRequest,
    /// An ICMP echo reply (type 0), answering a request.
    EchoReply,
}

impl Protocol {
    /// Header bytes between the IP header and the payload.
    pub fn header(self) -> u32 {
        match self {
            Protocol::Udp => UDP_HEADER,
            Protocol::EchoRequest | Protocol::EchoReply => ICMP_ECHO_HEADER,
        }
    }
}

/// One datagram on the wire: lengths and the fields a receiver reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram {
    pub protocol: Protocol,
    /// The sender's sequence number (an RTP sequence number, an echo's).
    pub seq: u32,
    /// When the datagram (or the request an echo answers) was first sent,
    /// nanoseconds of simulated time.
    pub stamp: u64,
    /// Payload bytes after the UDP or ICMP header.
    pub payload: u32,
}

impl Datagram {
    /// Bytes of the IP packet.
    #[inline]
    pub fn wire_len(&self) -> u32 {
        IPV4_HEADER + self.protocol.header() + self.payload
    }
}

/// A datagram as it reached its receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    pub datagram: Datagram,
    pub at: Time,
}

/// One end of a datagram exchange: sends what its owner hands it, keeps what
/// arrives, and (an echo responder) answers each echo request with a reply
/// of the same size, sequence number and stamp.
#[derive(Clone, Debug, Default)]
pub struct DatagramSocket {
    /// Answer echo requests (a host's ICMP stack; ping's far end).
    echo: bool,
    out: VecDeque<Datagram>,
    arrivals: Vec<Arrival>,
    /// Payload bytes received, so a driver can tell its owner of arrivals
    /// the way it tells a stream's owner of bytes.
    received: u64,
    counters: ConnCounters,
}

impl DatagramSocket {
    /// A socket that keeps what arrives.
    pub fn new() -> DatagramSocket {
        DatagramSocket::default()
    }

    /// A socket that also answers every echo request at once (and keeps
    /// nothing of them).
    pub fn echo_responder() -> DatagramSocket {
        DatagramSocket { echo: true, ..DatagramSocket::default() }
    }

    /// Queues `d` to be sent at the next [`Endpoint::poll_transmit`].
    pub fn send(&mut self, d: Datagram) {
        self.out.push_back(d);
    }

    /// Everything that arrived since the last call, in arrival order.
    pub fn take_arrivals(&mut self) -> Vec<Arrival> {
        std::mem::take(&mut self.arrivals)
    }

    /// How many arrivals wait to be taken.
    pub fn pending_arrivals(&self) -> usize {
        self.arrivals.len()
    }
}

impl Endpoint for DatagramSocket {
    /// Payload bytes received (echo requests answered are not counted).
    fn delivered(&self) -> u64 {
        self.received
    }

    fn handle(&mut self, now: Time, packet: &Wire) {
        let Wire::Datagram(d) = packet else { return };
        if self.echo && d.protocol == Protocol::EchoRequest {
            self.out.push_back(Datagram { protocol: Protocol::EchoReply, ..*d });
            return;
        }
        self.received += u64::from(d.payload).max(1);
        self.arrivals.push(Arrival { datagram: *d, at: now });
    }

    fn poll_transmit(&mut self, _now: Time) -> Option<Wire> {
        let d = self.out.pop_front()?;
        self.counters.packets_sent += 1;
        self.counters.bytes_sent += u64::from(d.payload);
        Some(Wire::Datagram(d))
    }

    fn poll_timeout(&self) -> Option<Time> {
        None
    }

    fn handle_timeout(&mut self, _now: Time) {}

    fn counters(&self) -> ConnCounters {
        self.counters
    }

    /// Datagram sockets need no handshake.
    fn is_established(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torrentlab_engine::Duration;

    fn at(ms: u64) -> Time {
        Time::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn an_icmp_echo_of_56_payload_bytes_is_an_84_byte_ip_packet_and_a_g711_rtp_packet_200() {
        let ping = Datagram { protocol: Protocol::EchoRequest, seq: 1, stamp: 0, payload: 56 };
        assert_eq!(ping.wire_len(), 84);
        let voip = Datagram { protocol: Protocol::Udp, seq: 1, stamp: 0, payload: RTP_HEADER + 160 };
        assert_eq!(voip.wire_len(), 200);
    }

    #[test]
    fn a_sent_datagram_leaves_at_the_next_poll_and_only_once() {
        let mut s = DatagramSocket::new();
        let d = Datagram { protocol: Protocol::Udp, seq: 7, stamp: 42, payload: 100 };
        s.send(d);
        assert_eq!(s.poll_transmit(at(1)), Some(Wire::Datagram(d)));
        assert_eq!(s.poll_transmit(at(1)), None);
        assert_eq!((s.counters().packets_sent, s.counters().bytes_sent), (1, 100));
        assert_eq!(s.poll_timeout(), None, "nothing is ever retransmitted");
    }

    #[test]
    fn an_echo_responder_answers_a_request_with_the_same_sequence_stamp_and_size() {
        let mut r = DatagramSocket::echo_responder();
        let req = Datagram { protocol: Protocol::EchoRequest, seq: 3, stamp: 12_000_000, payload: 56 };
        r.handle(at(6), &Wire::Datagram(req));
        let Some(Wire::Datagram(reply)) = r.poll_transmit(at(6)) else { panic!("no reply") };
        assert_eq!(reply, Datagram { protocol: Protocol::EchoReply, ..req });
        assert_eq!((r.pending_arrivals(), r.delivered()), (0, 0), "a request answered is not kept");
    }

    #[test]
    fn arrivals_are_kept_in_order_with_their_time_until_taken() {
        let mut s = DatagramSocket::new();
        for (seq, ms) in [(1, 5), (3, 9), (2, 11)] {
            s.handle(at(ms), &Wire::Datagram(Datagram { protocol: Protocol::Udp, seq, stamp: 0, payload: 172 }));
        }
        assert_eq!(s.delivered(), 3 * 172);
        let got: Vec<(u32, Time)> = s.take_arrivals().iter().map(|a| (a.datagram.seq, a.at)).collect();
        assert_eq!(got, [(1, at(5)), (3, at(9)), (2, at(11))]);
        assert!(s.take_arrivals().is_empty());
    }
}
