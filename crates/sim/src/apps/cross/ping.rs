//! ping: an ICMP echo request every interval from one host to another,
//! whose ICMP stack answers it (RFC 792). The round trip of each probe is
//! read from the stamp the reply carries back; a reply later than the
//! timeout, or none, is a timeout (as `ping -W` counts it), and the probe
//! keeps its row.

use torrentlab_engine::{Duration, EntityRng, OptTime, Time};
use torrentlab_transport::datagram::{Datagram, Protocol};

use crate::table::Table;
use crate::world::{Fabric, Link};

/// One probe: when it left, and when its reply came back.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Probe {
    pub sent: Time,
    pub reply: OptTime,
}

pub(crate) struct Ping {
    pub label: String,
    /// Side 0 pings, side 1 answers.
    pub conn: u32,
    pub start: Time,
    /// No probe leaves at or after this.
    pub stop: Time,
    pub interval: Duration,
    /// Draws exponential gaps of mean `interval` (Poisson sampling), if set.
    pub poisson: Option<EntityRng>,
    pub timeout: Duration,
    /// Bytes after the ICMP header.
    pub payload: u32,
    pub from: &'static str,
    pub to: &'static str,
    /// The round trip of a probe on an idle line, when it leaves the home.
    pub idle_rtt: Option<Duration>,
    pub probes: Vec<Probe>,
}

impl Ping {
    /// Sends the next probe; when the one after it is due.
    pub fn send(&mut self, now: Time, f: &mut Fabric) -> Option<Time> {
        if now >= self.stop {
            return None;
        }
        let seq = self.probes.len() as u32;
        self.probes.push(Probe { sent: now, reply: OptTime::NONE });
        let probe = Datagram { protocol: Protocol::EchoRequest, seq, stamp: now.0, payload: self.payload };
        f.send_datagram(Link::new(self.conn, 0), probe);
        let gap = match &mut self.poisson {
            None => self.interval,
            // -mean x ln(1 - U), at least 1 ns.
            Some(rng) => Duration(((-(1.0 - rng.uniform()).ln()) * self.interval.0 as f64) as u64).max(Duration(1)),
        };
        Some(now + gap)
    }

    /// Replies reached the pinging side: each probe's first one counts.
    pub fn arrived(&mut self, f: &mut Fabric, link: Link) {
        for a in f.take_arrivals(link) {
            if let Some(p) = self.probes.get_mut(a.datagram.seq as usize) {
                if !p.reply.is_some() && a.datagram.protocol == Protocol::EchoReply {
                    p.reply = OptTime::some(a.at);
                }
            }
        }
    }

    /// The probe's round trip, if its reply came within the timeout.
    pub fn rtt(&self, p: &Probe) -> Option<Duration> {
        let rtt = p.reply.get()?.saturating_since(p.sent);
        (rtt <= self.timeout).then_some(rtt)
    }
}

/// One row per probe (docs/metrics.md, `ping`).
pub(super) fn table(pings: &[&Ping]) -> Table {
    let rows = || pings.iter().flat_map(|p| p.probes.iter().enumerate().map(move |(k, pr)| (*p, k, pr)));
    let mut t = Table::default();
    t.str("label", rows().map(|(p, _, _)| p.label.clone()).collect())
        .str("from", rows().map(|(p, _, _)| p.from.to_string()).collect())
        .str("to", rows().map(|(p, _, _)| p.to.to_string()).collect())
        .i64("seq", rows().map(|(_, k, _)| k as i64).collect())
        .f64("sent_s", rows().map(|(_, _, pr)| pr.sent.as_secs_f64()).collect())
        .f64("rtt_ms", rows().map(|(p, _, pr)| p.rtt(pr).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)).collect())
        .i64("timed_out", rows().map(|(p, _, pr)| p.rtt(pr).is_none() as i64).collect());
    t
}
