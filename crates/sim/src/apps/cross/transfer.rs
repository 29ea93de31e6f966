//! One TCP transfer between two hosts, as an HTTP download or an FTP
//! upload: written as fast as TCP takes it, or `chunk` bytes at a time at
//! a capped rate (a server or client rate limit that writes a chunk each
//! chunk / rate seconds).

use torrentlab_engine::{Duration, OptTime, Time};

use crate::table::Table;
use crate::world::{Fabric, Link};

pub(crate) struct Transfer {
    pub label: String,
    /// Side 0 sends, side 1 receives.
    pub conn: u32,
    pub start: Time,
    /// No more is written at or after this.
    pub stop: Time,
    /// Bytes/s, or `None`: as fast as TCP goes.
    pub rate: Option<u64>,
    pub chunk: u64,
    /// Bytes to move, or `None`: no end.
    pub size: Option<u64>,
    pub from: &'static str,
    pub to: &'static str,
    pub cc: &'static str,
    pub written: u64,
    pub started: OptTime,
    pub completed: OptTime,
}

impl Transfer {
    pub fn receiver(&self) -> Link {
        Link::new(self.conn, 1)
    }

    /// Starts, or writes the next chunk of a capped transfer; when the next
    /// one is due.
    pub fn send(&mut self, now: Time, f: &mut Fabric) -> Option<Time> {
        let sender = Link::new(self.conn, 0);
        if !self.started.is_some() {
            self.started = OptTime::some(now);
            if let Some(size) = self.size {
                f.set_read_mark(self.receiver(), size);
            }
        }
        if now >= self.stop {
            f.stop_writing(sender);
            return None;
        }
        let left = self.size.map_or(u64::MAX / 4, |s| s - self.written);
        let Some(rate) = self.rate else {
            if self.written == 0 {
                f.write_all(sender, left);
                if self.size.is_some() {
                    f.finish(sender);
                }
                self.written += left;
            }
            return Some(self.stop); // to stop writing then
        };
        let n = self.chunk.min(left);
        f.write_all(sender, n);
        self.written += n;
        if Some(self.written) == self.size {
            f.finish(sender);
        }
        let gap = Duration((n as u128 * 1_000_000_000 / rate as u128) as u64);
        (self.written < self.size.unwrap_or(u64::MAX)).then_some(now + gap)
    }

    /// Every byte of a sized transfer arrived.
    pub fn completed(&mut self, now: Time, f: &mut Fabric, link: Link) {
        if !self.completed.is_some() {
            self.completed = OptTime::some(now);
        }
        f.set_read_mark(link, u64::MAX);
    }
}

/// One row per transfer (docs/metrics.md, `transfers`).
pub(super) fn table(ts: &[&Transfer], f: &Fabric, end: Time) -> Table {
    let delivered: Vec<u64> = ts.iter().map(|t| f.delivered(t.receiver())).collect();
    let secs = |t: OptTime| t.get().map_or(f64::NAN, |t| t.as_secs_f64());
    let mean_rate = ts
        .iter()
        .zip(&delivered)
        .map(|(t, &b)| {
            let from = t.started.get().unwrap_or(end);
            let until = t.completed.get().unwrap_or(end).min(end);
            let span = until.saturating_since(from).as_secs_f64();
            if span > 0.0 {
                b as f64 / span
            } else {
                f64::NAN
            }
        })
        .collect();
    let mut out = Table::default();
    out.str("label", ts.iter().map(|t| t.label.clone()).collect())
        .str("from", ts.iter().map(|t| t.from.to_string()).collect())
        .str("to", ts.iter().map(|t| t.to.to_string()).collect())
        .str("cc", ts.iter().map(|t| t.cc.to_string()).collect())
        .f64("rate_cap_Bps", ts.iter().map(|t| t.rate.map_or(f64::NAN, |r| r as f64)).collect())
        .f64("started_s", ts.iter().map(|t| secs(t.started)).collect())
        .f64("completed_s", ts.iter().map(|t| secs(t.completed)).collect())
        .i64("bytes", delivered.iter().map(|&b| b as i64).collect())
        .f64("mean_rate_Bps", mean_rate);
    out
}
