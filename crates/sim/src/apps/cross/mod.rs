//! A household's other traffic, beside BitTorrent: ping, a VoIP call, an
//! HTTP or FTP transfer ([`crate::scenario::household`]). Each entry owns
//! one connection between its two hosts, opened when the world is built:
//! datagram sockets for ping and VoIP, TCP for a transfer.

mod ping;
mod transfer;
mod voip;

pub(crate) use ping::Ping;
pub(crate) use transfer::Transfer;
pub(crate) use voip::Voip;

use std::any::Any;
use std::ops::ControlFlow;

use torrentlab_engine::{Duration, Time};
use torrentlab_net::HostId;

use crate::table::Table;
use crate::world::{App, Fabric, Link};

/// One entry of the cross traffic.
pub(crate) enum Entry {
    Ping(Ping),
    Voip(Voip),
    Transfer(Transfer),
}

/// The application's events, packed as `kind << 28 | entry`.
const SEND: u32 = 0;
const SAMPLE: u32 = 1;
const ENTRY_BITS: u32 = 28;

/// Period of the transfers' throughput samples.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// Every cross-traffic entry of a run, and the transfers' throughput samples.
pub(crate) struct Cross {
    pub id: u32,
    pub entries: Vec<Entry>,
    /// (time, entry, bytes delivered so far) every [`SAMPLE_EVERY`].
    samples: Vec<(Time, u32, u64)>,
    end: Time,
}

impl Cross {
    pub fn new(id: u32, entries: Vec<Entry>, end: Time) -> Cross {
        Cross { id, entries, samples: Vec::new(), end }
    }

    /// Schedules each entry's first send and the first sample.
    pub fn schedule(&self, f: &mut Fabric) {
        for (i, e) in self.entries.iter().enumerate() {
            let start = match e {
                Entry::Ping(p) => p.start,
                Entry::Voip(v) => v.start,
                Entry::Transfer(t) => t.start,
            };
            f.schedule(start, self.id, SEND << ENTRY_BITS | i as u32);
        }
        if self.entries.iter().any(|e| matches!(e, Entry::Transfer(_))) {
            f.schedule(Time::ZERO, self.id, SAMPLE << ENTRY_BITS);
        }
    }

    /// `ping`, `voip`, `transfers` and `transfer_samples` (docs/metrics.md).
    pub fn tables(&self, f: &Fabric, end: Time) -> Vec<(&'static str, Table)> {
        let pings: Vec<&Ping> =
            self.entries.iter().filter_map(|e| if let Entry::Ping(p) = e { Some(p) } else { None }).collect();
        let calls: Vec<&Voip> =
            self.entries.iter().filter_map(|e| if let Entry::Voip(v) = e { Some(v) } else { None }).collect();
        let transfers: Vec<&Transfer> =
            self.entries.iter().filter_map(|e| if let Entry::Transfer(t) = e { Some(t) } else { None }).collect();
        let mut samples = Table::default();
        let label = |i: u32| match &self.entries[i as usize] {
            Entry::Transfer(t) => t.label.clone(),
            _ => unreachable!("only transfers are sampled"),
        };
        samples
            .f64("time_s", self.samples.iter().map(|s| s.0.as_secs_f64()).collect())
            .str("label", self.samples.iter().map(|s| label(s.1)).collect())
            .i64("bytes", self.samples.iter().map(|s| s.2 as i64).collect());
        vec![
            ("ping", ping::table(&pings)),
            ("voip", voip::table(&calls)),
            ("transfers", transfer::table(&transfers, f, end)),
            ("transfer_samples", samples),
        ]
    }
}

/// The mean of `xs` (NaN when empty).
fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        f64::NAN
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// The `q` quantile of `xs` (nearest rank; NaN when empty).
fn quantile(xs: &mut [f64], q: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let rank = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
    xs[rank - 1]
}

impl Cross {
    /// The household's columns of the run's summary: the first ping's and
    /// the first call's figures and the transfers' (docs/metrics.md).
    pub fn summary_columns(&self, t: &mut Table) {
        let ping = self.entries.iter().find_map(|e| if let Entry::Ping(p) = e { Some(p) } else { None });
        let (mut probes, mut timeouts, mut spikes, mut idle) = (0i64, 0i64, 0i64, f64::NAN);
        let mut rtts = Vec::new();
        if let Some(p) = ping {
            probes = p.probes.len() as i64;
            idle = p.idle_rtt.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
            for pr in &p.probes {
                match p.rtt(pr) {
                    Some(r) => rtts.push(r.as_secs_f64() * 1e3),
                    None => timeouts += 1,
                }
                let late = pr.reply.get().is_none_or(|r| r.saturating_since(pr.sent) > Duration::from_secs(1));
                spikes += late as i64;
            }
        }
        let ping_mean = mean(&rtts);
        t.i64("ping_probes", vec![probes])
            .i64("ping_timeouts", vec![timeouts])
            .f64("ping_idle_ms", vec![idle])
            .f64("ping_mean_ms", vec![ping_mean])
            .f64("ping_mean_increase_ms", vec![ping_mean - idle])
            .f64("ping_max_ms", vec![rtts.iter().copied().fold(f64::NAN, f64::max)])
            .i64("ping_spikes_over_1s", vec![spikes]);
        let call = self.entries.iter().find_map(|e| if let Entry::Voip(v) = e { Some(v) } else { None });
        // (mean delay, p99 delay, max jitter, lost) of each direction.
        let columns = [
            ["voip_out_mean_delay_ms", "voip_out_p99_delay_ms", "voip_out_max_jitter_ms", "voip_out_lost"],
            ["voip_in_mean_delay_ms", "voip_in_p99_delay_ms", "voip_in_max_jitter_ms", "voip_in_lost"],
        ];
        for (d, [mean_col, p99_col, jitter_col, lost_col]) in columns.into_iter().enumerate() {
            let packets = call.map_or(&[][..], |v| &v.dirs[d].packets[..]);
            let mut delays: Vec<f64> = packets
                .iter()
                .filter_map(|p| p.arrived.get().map(|a| a.saturating_since(p.sent).as_secs_f64() * 1e3))
                .collect();
            let jitter = packets.iter().map(|p| p.jitter).filter(|j| j.is_finite()).fold(f64::NAN, f64::max);
            let lost = packets.iter().filter(|p| p.arrived.get().is_none()).count() as i64;
            t.f64(mean_col, vec![mean(&delays)])
                .f64(p99_col, vec![quantile(&mut delays, 0.99)])
                .f64(jitter_col, vec![jitter * 1e3])
                .i64(lost_col, vec![lost]);
        }
    }
}

impl App for Cross {
    fn event(&mut self, now: Time, f: &mut Fabric, ev: u32) -> ControlFlow<()> {
        let i = ev & ((1 << ENTRY_BITS) - 1);
        match ev >> ENTRY_BITS {
            SEND => {
                let next = match &mut self.entries[i as usize] {
                    Entry::Ping(p) => p.send(now, f),
                    Entry::Voip(v) => v.send(now, f),
                    Entry::Transfer(t) => t.send(now, f),
                };
                if let Some(at) = next {
                    f.schedule(at, self.id, SEND << ENTRY_BITS | i);
                }
            }
            _ => {
                for (k, e) in self.entries.iter().enumerate() {
                    if let Entry::Transfer(t) = e {
                        self.samples.push((now, k as u32, f.delivered(t.receiver())));
                    }
                }
                if now + SAMPLE_EVERY <= self.end {
                    f.schedule(now + SAMPLE_EVERY, self.id, SAMPLE << ENTRY_BITS);
                }
            }
        }
        ControlFlow::Continue(())
    }

    /// Every connection is opened and claimed when the world is built.
    fn accept(&mut self, _: Time, _: &mut Fabric, _: Link, _: HostId, _: HostId) -> Option<u32> {
        None
    }

    fn readable(&mut self, now: Time, f: &mut Fabric, link: Link, slot: u32) {
        match &mut self.entries[slot as usize] {
            Entry::Ping(p) => p.arrived(f, link),
            Entry::Voip(v) => v.arrived(f, link),
            Entry::Transfer(t) => t.completed(now, f, link),
        }
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// When an entry stops sending: at its `stop`, else `margin` before the
/// run's end (so that what it sent last has time to come back).
pub(crate) fn stop_time(stop: Option<Duration>, end: Time, margin: Duration) -> Time {
    match stop {
        Some(s) => (Time::ZERO + s).min(end),
        None => Time(end.0.saturating_sub(margin.0)),
    }
}
