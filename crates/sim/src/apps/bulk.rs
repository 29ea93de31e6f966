//! Bulk transfers: each flow a sender that writes its bytes (or without
//! end) as fast as its transport allows, to a receiver that counts them, as
//! iperf or ns-3's BulkSend do. The flows of a dumbbell.

use std::any::Any;
use std::ops::ControlFlow;

use torrentlab_engine::{Duration, Time};
use torrentlab_net::{HostId, LinkId, LinkStats};
use torrentlab_transport::stream::Endpoint;

use crate::recorder::Recorder;
use crate::report::queue_rows;
use crate::watch::Spill;
use crate::world::{App, ConnTable, Fabric, Link};

/// One bulk flow: the sender is side 0 of connection `conn`, the receiver side 1.
pub(crate) struct Flow {
    pub label: String,
    pub cc: &'static str,
    /// "tcp" or "utp".
    pub transport: &'static str,
    pub conn: u32,
    pub start: Time,
    pub stop: Option<Time>,
    pub size: Option<u64>,
    pub started: bool,
    pub completed_at: Option<Time>,
}

impl Flow {
    pub fn sender<'a>(&self, conns: &'a ConnTable) -> &'a dyn Endpoint {
        &conns[self.conn as usize].ep[0]
    }
    pub fn receiver<'a>(&self, conns: &'a ConnTable) -> &'a dyn Endpoint {
        &conns[self.conn as usize].ep[1]
    }
    /// Wire bytes (headers included) sent towards the receiver, and back.
    pub fn wire_bytes(&self, conns: &ConnTable) -> [u64; 2] {
        conns[self.conn as usize].wire_bytes
    }
}

/// Counters at the start of the summary window.
#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    pub delivered: Vec<u64>,
    pub bottleneck: LinkStats,
}

/// The application's events, packed as `kind << 30 | flow`.
const START: u32 = 0;
const STOP: u32 = 1;
const SAMPLE: u32 = 2;
const WINDOW_START: u32 = 3;

/// The bulk flows of a run, their time series and the summary window.
pub(crate) struct Bulk {
    pub id: u32,
    pub flows: Vec<Flow>,
    pub rec: Recorder,
    pub sample_interval: Option<Duration>,
    pub end: Time,
    /// The link whose queue is logged and summarised.
    pub bottleneck: LinkId,
    pub bottleneck_rate: u64,
    pub window_start: Time,
    pub at_window_start: Option<Snapshot>,
}

impl Bulk {
    /// Schedules each flow's start (and stop), the summary window and the
    /// first sample, in that order.
    pub fn schedule(&self, f: &mut Fabric) {
        for (i, fl) in self.flows.iter().enumerate() {
            f.schedule(fl.start, self.id, START << 30 | i as u32);
            if let Some(s) = fl.stop {
                f.schedule(s, self.id, STOP << 30 | i as u32);
            }
            f.set_read_mark(Link::new(fl.conn, 1), fl.size.unwrap_or(u64::MAX));
        }
        f.schedule(self.window_start, self.id, WINDOW_START << 30);
        if self.sample_interval.is_some() {
            f.schedule(Time::ZERO, self.id, SAMPLE << 30);
        }
    }
}

impl App for Bulk {
    fn event(&mut self, now: Time, f: &mut Fabric, ev: u32) -> ControlFlow<()> {
        let i = (ev & ((1 << 30) - 1)) as usize;
        match ev >> 30 {
            START => {
                let fl = &mut self.flows[i];
                fl.started = true;
                let sender = Link::new(fl.conn, 0);
                f.write_all(sender, fl.size.unwrap_or(u64::MAX / 4));
                if fl.size.is_some() {
                    f.finish(sender); // the transfer ends after these bytes
                }
            }
            STOP => f.stop_writing(Link::new(self.flows[i].conn, 0)),
            SAMPLE => {
                self.rec.sample(now, &self.flows, &f.conns);
                if let Some(iv) = self.sample_interval {
                    if now + iv < self.end {
                        f.schedule(now + iv, self.id, SAMPLE << 30);
                    }
                }
            }
            _ => {
                self.at_window_start = Some(Snapshot {
                    delivered: self.flows.iter().map(|fl| fl.receiver(&f.conns).delivered()).collect(),
                    bottleneck: f.net.link_mut(self.bottleneck).stats(now),
                });
            }
        }
        ControlFlow::Continue(())
    }

    fn accept(&mut self, _: Time, _: &mut Fabric, link: Link, _: HostId, _: HostId) -> Option<u32> {
        Some(link.conn() as u32)
    }

    /// The receiver has every byte of a sized flow: it completes now.
    fn readable(&mut self, now: Time, f: &mut Fabric, link: Link, slot: u32) {
        let fl = &mut self.flows[slot as usize];
        fl.completed_at.get_or_insert(now);
        f.set_read_mark(link, u64::MAX);
    }

    /// Hands over the queue log and the time series when they have grown to
    /// `sp.rows` rows (see [`Spill`]).
    fn spill(&mut self, now: Time, f: &mut Fabric, sp: &mut Spill<'_>) {
        let link = f.net.link_mut(self.bottleneck);
        if link.logged() >= sp.rows {
            (sp.sink)("queue", queue_rows(&link.drain_log(now)));
        }
        if self.rec.rows() >= sp.rows {
            (sp.sink)("timeseries", self.rec.take_table());
        }
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
