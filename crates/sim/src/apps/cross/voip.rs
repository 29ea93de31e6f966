//! A VoIP call: one RTP packet (RFC 3550) every interval from each end, a
//! constant bit rate such as G.711's 160 bytes of samples every 20 ms. Each
//! packet's one-way delay is its arrival less its send time (the hosts'
//! clocks agree here), and each direction keeps RFC 3550's interarrival
//! jitter (§6.4.1, A.8): J += (|D(i-1, i)| - J) / 16 at each arrival, where
//! D(i-1, i) = (R_i - R_{i-1}) - (S_i - S_{i-1}) over the packets in
//! arrival order.

use torrentlab_engine::{Duration, OptTime, Time};
use torrentlab_transport::datagram::{Datagram, Protocol};

use crate::table::Table;
use crate::world::{Fabric, Link};

/// One packet of one direction.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Packet {
    pub sent: Time,
    pub arrived: OptTime,
    /// The direction's jitter estimate after this packet arrived, seconds.
    pub jitter: f64,
}

/// One direction of the call: what its side sent and the receiver's jitter state.
#[derive(Clone, Debug, Default)]
pub(crate) struct Direction {
    pub packets: Vec<Packet>,
    /// The last arrival's (send, arrival) times.
    last: Option<(Time, Time)>,
    jitter: f64,
}

impl Direction {
    /// Packet `seq` arrived at `at` (duplicates are ignored).
    fn arrival(&mut self, seq: u32, at: Time) {
        let Some(p) = self.packets.get_mut(seq as usize) else { return };
        if p.arrived.is_some() {
            return;
        }
        if let Some((s0, r0)) = self.last {
            // In whole nanoseconds: a constant transit time gives exactly 0.
            let d = (at.0 as i128 - r0.0 as i128) - (p.sent.0 as i128 - s0.0 as i128);
            self.jitter += (d.unsigned_abs() as f64 * 1e-9 - self.jitter) / 16.0;
        }
        self.last = Some((p.sent, at));
        p.arrived = OptTime::some(at);
        p.jitter = self.jitter;
    }
}

pub(crate) struct Voip {
    pub label: String,
    /// Side 0 is `from`, side 1 `to`; both talk.
    pub conn: u32,
    pub start: Time,
    pub stop: Time,
    pub interval: Duration,
    /// UDP payload bytes (RTP header included).
    pub payload: u32,
    pub from: &'static str,
    pub to: &'static str,
    /// Direction 0: from -> to; 1: to -> from.
    pub dirs: [Direction; 2],
}

impl Voip {
    /// Each side sends its next packet; when the next ones are due.
    pub fn send(&mut self, now: Time, f: &mut Fabric) -> Option<Time> {
        if now >= self.stop {
            return None;
        }
        for (side, dir) in self.dirs.iter_mut().enumerate() {
            let seq = dir.packets.len() as u32;
            dir.packets.push(Packet { sent: now, arrived: OptTime::NONE, jitter: f64::NAN });
            let d = Datagram { protocol: Protocol::Udp, seq, stamp: now.0, payload: self.payload };
            f.send_datagram(Link::new(self.conn, side), d);
        }
        Some(now + self.interval)
    }

    /// Packets reached side `link.side()`: they belong to the other direction.
    pub fn arrived(&mut self, f: &mut Fabric, link: Link) {
        let dir = &mut self.dirs[1 - link.side()];
        for a in f.take_arrivals(link) {
            dir.arrival(a.datagram.seq, a.at);
        }
    }
}

/// One row per packet sent, both directions (docs/metrics.md, `voip`).
pub(super) fn table(calls: &[&Voip]) -> Table {
    let rows = || {
        calls.iter().flat_map(|v| {
            v.dirs
                .iter()
                .enumerate()
                .flat_map(move |(d, dir)| dir.packets.iter().enumerate().map(move |(k, p)| (*v, d, k, p)))
        })
    };
    let ends = |v: &Voip, d: usize| if d == 0 { (v.from, v.to) } else { (v.to, v.from) };
    let mut t = Table::default();
    t.str("label", rows().map(|(v, ..)| v.label.clone()).collect())
        .str("from", rows().map(|(v, d, ..)| ends(v, d).0.to_string()).collect())
        .str("to", rows().map(|(v, d, ..)| ends(v, d).1.to_string()).collect())
        .i64("seq", rows().map(|(_, _, k, _)| k as i64).collect())
        .f64("sent_s", rows().map(|(.., p)| p.sent.as_secs_f64()).collect())
        .f64(
            "delay_ms",
            rows()
                .map(|(.., p)| p.arrived.get().map_or(f64::NAN, |a| a.saturating_since(p.sent).as_secs_f64() * 1e3))
                .collect(),
        )
        .f64("jitter_ms", rows().map(|(.., p)| p.jitter * 1e3).collect());
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time::ZERO + Duration::from_millis(x)
    }

    #[test]
    fn jitter_follows_rfc_3550_over_packets_in_arrival_order() {
        let mut d = Direction::default();
        for k in 0..3 {
            d.packets.push(Packet { sent: ms(20 * k), arrived: OptTime::NONE, jitter: f64::NAN });
        }
        d.arrival(0, ms(10)); // transit 10 ms
        d.arrival(1, ms(40)); // transit 20 ms: |D| = 10 ms
        d.arrival(2, ms(50)); // transit 10 ms: |D| = 10 ms
        let j1 = 0.010 / 16.0;
        let j2 = j1 + (0.010 - j1) / 16.0;
        assert!((d.packets[1].jitter - j1).abs() < 1e-12);
        assert!((d.packets[2].jitter - j2).abs() < 1e-12);
        assert_eq!(d.packets[0].jitter, 0.0, "the first arrival has nothing to compare with");
    }

    #[test]
    fn a_constant_transit_time_leaves_no_jitter_and_a_duplicate_changes_nothing() {
        let mut d = Direction::default();
        for k in 0..5 {
            d.packets.push(Packet { sent: ms(20 * k), arrived: OptTime::NONE, jitter: f64::NAN });
            d.arrival(k as u32, ms(20 * k + 7));
        }
        d.arrival(4, ms(500));
        assert!(d.packets.iter().all(|p| p.jitter == 0.0));
        assert_eq!(d.packets[4].arrived.get(), Some(ms(87)));
    }
}
