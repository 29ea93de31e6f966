//! Paced uploads: a host's application that spaces its data packets out
//! instead of letting its transports send them back to back.
//!
//! The fix a practitioner proposed for what BitTorrent does to a household's
//! VoIP and games ("Why BitTorrent causes so much jitter (high ping) and how
//! to fix it", 2008): a full-size packet holds the modem's uplink for 28 ms
//! at 416 kbit/s, and a few back to back hold a VoIP packet for longer than
//! its jitter buffer. Sent evenly, at most one of them waits ahead of it.
//!
//! The pacer sits under the application's rate limit, at packet level: the
//! transports send as they would, and every data packet (payload > 0) of the
//! paced application's connections on the host passes one gate, which lets
//! a packet go at most once per gap and holds the others in order, as a
//! pacing queue in the sending host does. Packets without payload (ACKs,
//! handshakes) are never held. Segment sizes are the transports' own: a
//! packet size cap is a smaller MSS (see the scenario's `pacing`).

use std::collections::VecDeque;

use torrentlab_engine::{Duration, Time};
use torrentlab_transport::stream::Wire;

/// How far apart a pacer lets packets go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaceRule {
    /// One packet per this gap, whatever its size (packets per second).
    PerPacket(Duration),
    /// A gap of payload / rate after each packet (an even rate, bytes per
    /// second of payload).
    Rate(u64),
}

impl PaceRule {
    /// The gap after a packet of `payload` bytes.
    pub fn gap(self, payload: u32) -> Duration {
        match self {
            PaceRule::PerPacket(d) => d,
            PaceRule::Rate(bps) => Duration((payload as u128 * 1_000_000_000 / bps.max(1) as u128) as u64),
        }
    }
}

/// What a pacer does with a packet offered to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    /// Send it now.
    SendNow,
    /// Held; `wake` is when the pacer must be called ([`Pacer::release`])
    /// if no call is due yet.
    Held { wake: Option<Time> },
}

/// One host's pacer for the data packets of application `app`.
#[derive(Clone, Debug)]
pub struct Pacer {
    pub app: u32,
    rule: PaceRule,
    /// The earliest time the next packet may go.
    next: Time,
    /// Packets waiting: (connection, side, packet), oldest first.
    held: VecDeque<(u32, u8, Wire)>,
}

impl Pacer {
    pub fn new(app: u32, rule: PaceRule) -> Pacer {
        Pacer { app, rule, next: Time::ZERO, held: VecDeque::new() }
    }

    /// A data packet the application's transport sends now.
    pub fn offer(&mut self, now: Time, conn: u32, side: u8, pkt: Wire) -> Offer {
        if self.held.is_empty() && self.next <= now {
            self.next = now + self.rule.gap(pkt.payload_len());
            return Offer::SendNow;
        }
        self.held.push_back((conn, side, pkt));
        Offer::Held { wake: (self.held.len() == 1).then_some(self.next.max(now)) }
    }

    /// The wake-up is due: the packet to send now, and when to call again.
    pub fn release(&mut self, now: Time) -> (Option<(u32, u8, Wire)>, Option<Time>) {
        if self.next > now {
            return (None, Some(self.next)); // not yet (cannot happen: woken at `next`)
        }
        let Some(held) = self.held.pop_front() else { return (None, None) };
        self.next = now + self.rule.gap(held.2.payload_len());
        (Some(held), (!self.held.is_empty()).then_some(self.next))
    }

    /// Packets waiting.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torrentlab_transport::datagram::{Datagram, Protocol};

    fn pkt(payload: u32) -> Wire {
        Wire::Datagram(Datagram { protocol: Protocol::Udp, seq: 0, stamp: 0, payload })
    }

    fn ms(n: u64) -> Time {
        Time::ZERO + Duration::from_millis(n)
    }

    /// Offers `n` packets at once and releases them as woken: their send times.
    fn burst(rule: PaceRule, n: usize, payload: u32) -> Vec<Time> {
        let mut p = Pacer::new(0, rule);
        let mut sent = Vec::new();
        let mut wake = None;
        for _ in 0..n {
            match p.offer(ms(0), 1, 0, pkt(payload)) {
                Offer::SendNow => sent.push(ms(0)),
                Offer::Held { wake: w } => wake = wake.or(w),
            }
        }
        while let Some(at) = wake {
            let (got, next) = p.release(at);
            if got.is_some() {
                sent.push(at);
            }
            wake = next;
        }
        assert_eq!(p.held(), 0);
        sent
    }

    #[test]
    fn a_burst_leaves_one_packet_per_gap_at_fifty_packets_per_second() {
        let sent = burst(PaceRule::PerPacket(Duration::from_millis(20)), 5, 775);
        assert_eq!(sent, [ms(0), ms(20), ms(40), ms(60), ms(80)]);
    }

    #[test]
    fn an_even_rate_spaces_packets_by_their_payload_over_the_rate() {
        // 1448-byte payloads at 47 kB/s: 30.8 ms apart.
        let sent = burst(PaceRule::Rate(47_000), 3, 1448);
        let gap = Duration(1448 * 1_000_000_000 / 47_000);
        assert_eq!(sent, [ms(0), ms(0) + gap, ms(0) + gap + gap]);
    }

    #[test]
    fn a_packet_offered_after_a_long_pause_goes_at_once() {
        let mut p = Pacer::new(0, PaceRule::PerPacket(Duration::from_millis(20)));
        assert_eq!(p.offer(ms(0), 1, 0, pkt(100)), Offer::SendNow);
        assert_eq!(p.offer(ms(500), 1, 0, pkt(100)), Offer::SendNow);
        assert_eq!(p.offer(ms(505), 1, 0, pkt(100)), Offer::Held { wake: Some(ms(520)) });
        assert_eq!(p.offer(ms(506), 1, 0, pkt(100)), Offer::Held { wake: None }, "one wake-up at a time");
    }
}
