//! The world of one run, and its one event loop.
//!
//! A world is a [`Fabric`] (the event queue, hosts with their access links,
//! the latency core, packets in flight, and connections holding a
//! transport-neutral endpoint at each end) and the applications attached to
//! its hosts ([`App`]): bulk senders and receivers, BitTorrent clients, any
//! other. Topologies (`crate::topology`) build worlds from scenarios.
//!
//! The loop moves packets lane by lane, fires endpoint timers, and tells the
//! owners of connection ends what changed (a dial to accept, a dial
//! answered, bytes to read, room to write, a reset); applications answer
//! through the fabric. Time is integer nanoseconds and the event order total
//! (time, then scheduling order), so a run is reproducible bit for bit.

mod app;
mod conn;
mod conn_table;
mod fabric;
mod hints;
pub(crate) mod pacer;
pub(crate) mod packet;
#[cfg(test)]
mod properties;

pub(crate) use app::{App, Link};
pub(crate) use conn::{Conn, Life, NO_SLOT};
pub(crate) use conn_table::ConnTable;
pub(crate) use fabric::{Fabric, Route};
pub(crate) use pacer::PaceRule;

use std::ops::ControlFlow;

use torrentlab_engine::{Duration, Packed, Sift, Time};
use torrentlab_net::HostId;
use torrentlab_transport::stream::Endpoint;

use crate::event_bits;
use crate::timer::{Firing, Tag};
use crate::watch::{Look, Pacer, Spill, Watch};

/// Counters a benchmark reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Perf {
    /// Events the scheduler delivered.
    pub events: u64,
    /// Data segments (payload > 0) that reached a receiver.
    pub data_packets_delivered: u64,
    /// Simulated time covered.
    pub sim_seconds: f64,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    /// Head of a path lane (see [`Route`]).
    PathLane {
        lane: u32,
    },
    /// Head of the lane of packets leaving a host's downlink.
    HostLane {
        host: u32,
    },
    /// The timer of endpoint `side` of connection `conn` (see [`crate::timer::Timer`]).
    EpTimer {
        conn: u32,
        side: u8,
        tag: Tag,
    },
    /// An application's timer ([`Fabric::new_timer`]).
    AppTimer {
        timer: u32,
        tag: Tag,
    },
    /// An application's own event ([`Fabric::schedule`]).
    App {
        app: u32,
        ev: u32,
    },
    /// Host `host`'s pacer may send its next held packet ([`pacer`]).
    Pace {
        host: u32,
    },
    End,
}

/// Packets and timers, nearly every event, ride in their queue keys.
impl Packed for Ev {
    #[inline]
    fn pack(&self) -> Option<u32> {
        match *self {
            Ev::PathLane { lane } => event_bits::pack_index(0, lane),
            Ev::HostLane { host } => event_bits::pack_index(1, host),
            Ev::EpTimer { conn, side, tag } => event_bits::pack_timer(2, conn.checked_mul(2)? | side as u32, tag),
            Ev::AppTimer { timer, tag } => event_bits::pack_timer(3, timer, tag),
            _ => None,
        }
    }

    #[inline]
    fn unpack(bits: u32) -> Self {
        match event_bits::kind(bits) {
            0 => Ev::PathLane { lane: event_bits::index(bits) },
            1 => Ev::HostLane { host: event_bits::index(bits) },
            2 => {
                let (link, tag) = event_bits::timer(bits);
                Ev::EpTimer { conn: link / 2, side: (link % 2) as u8, tag }
            }
            _ => {
                let (timer, tag) = event_bits::timer(bits);
                Ev::AppTimer { timer, tag }
            }
        }
    }
}

/// Endpoint timers that went stale, or whose deadline moved later, while
/// they waited are sifted out or moved when their bucket of time comes up
/// (see [`crate::timer::Timer::sift`]); other events stay.
#[inline]
fn sift_timer(conns: &mut ConnTable, at: Time, ev: &Ev) -> Sift {
    match *ev {
        Ev::EpTimer { conn, side, tag } => {
            let sift = conns[conn as usize].timer[side as usize].sift(tag, at);
            if sift == Sift::Drop {
                conns.check(conn);
            }
            sift
        }
        _ => Sift::Keep,
    }
}

pub(crate) struct World {
    pub f: Fabric,
    pub apps: Vec<Box<dyn App>>,
    /// When the run ends (or ended).
    pub end: Time,
}

impl World {
    /// A world over `f` (built to end at `end`) with these applications.
    pub fn new(f: Fabric, apps: Vec<Box<dyn App>>, end: Time) -> World {
        World { f, apps, end }
    }

    /// Runs to the end, or until an application ends the run or `watch`
    /// breaks. `watch` is called with the simulated time at least once per
    /// `every` of simulated time and once per [`crate::watch::WATCH_EVENTS`]
    /// events, so a caller can stop a run within milliseconds of wall time.
    pub fn run(
        &mut self,
        every: Duration,
        watch: &mut Watch<'_>,
        mut spill: Option<&mut Spill<'_>>,
    ) -> ControlFlow<()> {
        let mut pacer = Pacer::new(every);
        while let Some((now, ev)) = self.f.q.pop_sifted(|at, ev| sift_timer(&mut self.f.conns, at, ev)) {
            if self.f.conns.has_ripe() {
                self.retire_ripe();
            }
            if pacer.due(now) {
                watch(self.look(now))?;
                if let Some(sp) = spill.as_deref_mut() {
                    for app in &mut self.apps {
                        app.spill(now, &mut self.f, sp);
                    }
                }
            }
            match ev {
                Ev::PathLane { lane } => {
                    self.hint_reader(lane as usize);
                    if let Some((conn, side)) = self.f.path_lane(now, lane) {
                        self.after_packet(now, conn, side);
                    }
                }
                Ev::HostLane { host } => {
                    if let Some((conn, side)) = self.f.host_lane(now, host) {
                        self.after_packet(now, conn, side);
                    }
                }
                Ev::EpTimer { conn, side, tag } => {
                    // Every change of an endpoint's deadline goes through `drive`.
                    match self.f.conns[conn as usize].timer[side as usize].fire_following(tag, now) {
                        Firing::Stale => self.f.conns.check(conn),
                        Firing::Moved(t) => self.f.q.schedule(t, Ev::EpTimer { conn, side, tag }),
                        Firing::Due => {
                            debug_assert_eq!(
                                self.f.conns[conn as usize].life,
                                Life::Live,
                                "a timer of a connection over"
                            );
                            let ep = &mut self.f.conns[conn as usize].ep[side as usize];
                            hints::hint_endpoint(ep);
                            ep.handle_timeout(now);
                            self.after_packet(now, conn, side as usize);
                        }
                    }
                }
                Ev::AppTimer { timer, tag } => {
                    let (app, key) = self.f.timers[timer as usize];
                    self.apps[app as usize].timer(now, &mut self.f, key, tag);
                    self.f.flush(now);
                }
                Ev::App { app, ev } => {
                    let flow = self.apps[app as usize].event(now, &mut self.f, ev);
                    self.f.flush(now);
                    if flow.is_break() {
                        self.end = now;
                        break;
                    }
                }
                Ev::Pace { host } => self.f.release_paced(now, host),
                Ev::End => break,
            }
        }
        watch(self.look(self.end))
    }

    /// Shows the owner of each ripe connection it a last time, then frees
    /// its place (see [`ConnTable`]). Called between events, when no end
    /// waits to be driven.
    #[cold]
    fn retire_ripe(&mut self) {
        for ci in self.f.conns.take_ripe() {
            // Something may have referred to it again since (its other end
            // driven after it ripened, and a timer armed): then it waits.
            if !self.f.conns.still_over(ci) {
                continue;
            }
            let owner = self.f.conns[ci as usize].owner[0];
            self.apps[owner as usize].retire(&self.f, ci);
            if let Some(cap) = self.f.capture.as_deref_mut() {
                let c = &self.f.conns[ci as usize];
                cap.retire(c.serial, [c.ep[0].delivered(), c.ep[1].delivered()]);
            }
            self.f.conns.release(ci);
        }
    }

    /// What a watch sees at `now`: the time, and the share of the work done
    /// over the applications that report theirs ([`App::work`]).
    fn look(&self, now: Time) -> Look {
        let work = self.apps.iter().filter_map(|a| a.work()).reduce(|(d, t), (d2, t2)| (d + d2, t + t2));
        Look { now, done: work.map(|(d, t)| if t == 0 { 1.0 } else { d as f64 / t as f64 }) }
    }

    /// After endpoint (conn, side) took a packet or a timeout: tell its
    /// owner what changed (a dial to accept, the dial answered, bytes to
    /// read, a reset, room to write), then send.
    ///
    /// The connection is looked up again after each call into an
    /// application, which may open connections (moving the table).
    fn after_packet(&mut self, now: Time, ci: u32, s: usize) {
        let link = Link::new(ci, s);
        let c = &mut self.f.conns[ci as usize];
        // The acceptor's owner decides on a new connection when the SYN arrives.
        if s == 1 && !c.asked && c.ep[1].syn_received() {
            c.asked = true;
            let (owner, host, remote) = (c.owner[1] as usize, HostId(c.host[1]), HostId(c.host[0]));
            let slot = self.apps[owner].accept(now, &mut self.f, link, host, remote);
            self.f.flush(now);
            let c = &mut self.f.conns[ci as usize];
            match slot {
                Some(sl) => c.slot[1] = sl,
                None => {
                    c.closed[1].get_or_insert(now);
                    c.ep[1].abort();
                }
            }
        }
        let c = &mut self.f.conns[ci as usize];
        let slot = c.slot[s];
        if slot != NO_SLOT {
            let owner = c.owner[s] as usize;
            if s == 0 && !c.connected && c.ep[0].is_established() {
                c.connected = true;
                self.apps[owner].connected(now, &mut self.f, link, slot);
                self.f.flush(now);
            }
            let c = &self.f.conns[ci as usize];
            if c.slot[s] != NO_SLOT && c.ep[s].delivered() >= c.read_mark[s] {
                self.apps[owner].readable(now, &mut self.f, link, slot);
                self.f.flush(now);
            }
            let c = &mut self.f.conns[ci as usize];
            if c.slot[s] != NO_SLOT && !c.ep[s].is_alive() {
                c.slot[s] = NO_SLOT;
                c.closed[s].get_or_insert(now);
                self.apps[owner].closed(now, &mut self.f, link, slot);
                self.f.flush(now);
            } else if c.slot[s] != NO_SLOT && c.blocked[s] && c.ep[s].flushed() {
                c.blocked[s] = false;
                self.apps[owner].writable(now, &mut self.f, link, slot);
                self.f.flush(now);
            }
        }
        self.f.drive(now, ci, s);
    }

    pub fn perf(&self) -> Perf {
        Perf {
            events: self.f.q.events_processed(),
            data_packets_delivered: self.f.data_packets_delivered,
            sim_seconds: self.end.as_secs_f64(),
        }
    }

    /// The application at `index`, as its own type (for reports).
    pub fn take_app<T: 'static>(&mut self, index: usize) -> Box<T> {
        let app = std::mem::replace(&mut self.apps[index], Box::new(Gone));
        app.into_any()
            .downcast::<T>()
            .unwrap_or_else(|_| panic!("application {index} is not a {}", std::any::type_name::<T>()))
    }
}

/// What is left in the world of an application taken out for a report.
struct Gone;

impl App for Gone {
    fn event(&mut self, _: Time, _: &mut Fabric, _: u32) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
    fn accept(&mut self, _: Time, _: &mut Fabric, _: Link, _: HostId, _: HostId) -> Option<u32> {
        None
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}
