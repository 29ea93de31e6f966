//! What an application is to the world: the callbacks through which the
//! world tells it what happened to its connections, its timers and its own
//! events. An application drives the network only through the
//! [`Fabric`](super::Fabric) it is handed (dial, write, close, schedule).
//!
//! Adding an application means a module that implements [`App`] and a
//! topology that attaches it to hosts; the event loop does not change.

use std::any::Any;
use std::ops::ControlFlow;

use torrentlab_engine::Time;
use torrentlab_net::HostId;

use super::Fabric;
use crate::timer::Tag;
use crate::watch::Spill;

/// One end of a connection: connection `id / 2`, side `id % 2` (side 0
/// dialled, side 1 accepted). Applications keep it as their handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Link(pub u32);

impl Link {
    #[inline]
    pub fn new(conn: u32, side: usize) -> Link {
        Link(conn * 2 + side as u32)
    }
    #[inline]
    pub fn conn(self) -> usize {
        (self.0 / 2) as usize
    }
    #[inline]
    pub fn side(self) -> usize {
        (self.0 % 2) as usize
    }
    /// The other end of the same connection.
    #[inline]
    pub fn peer(self) -> Link {
        Link(self.0 ^ 1)
    }
}

/// An application: it owns ends of connections (each with its own `slot`,
/// the application's id for that end) and events and timers it scheduled.
/// Every callback may use the fabric: what it writes is sent when the
/// callback returns, or earlier at [`Fabric::flush`].
pub(crate) trait App {
    /// An event the application scheduled ([`Fabric::schedule`]) is due.
    /// `Break` ends the run now.
    fn event(&mut self, now: Time, f: &mut Fabric, ev: u32) -> ControlFlow<()>;

    /// Timer `timer` of this application ([`Fabric::new_timer`]) fired
    /// with `tag` (see [`crate::timer::Timer`] for stale tags).
    fn timer(&mut self, _now: Time, _f: &mut Fabric, _timer: u32, _tag: Tag) {}

    /// A dial from `remote` reached `link` on `host`: the slot to take it
    /// under, or `None` to refuse (the world then resets it, unless the
    /// application had it dropped without a word with [`Fabric::ignore`]).
    fn accept(&mut self, now: Time, f: &mut Fabric, link: Link, host: HostId, remote: HostId) -> Option<u32>;

    /// The dialling end `link` is connected.
    fn connected(&mut self, _now: Time, _f: &mut Fabric, _link: Link, _slot: u32) {}

    /// `link` has received, in order, at least as far as its read mark
    /// ([`Fabric::set_read_mark`]).
    fn readable(&mut self, _now: Time, _f: &mut Fabric, _link: Link, _slot: u32) {}

    /// A hint, given a few packets before a `readable` call for `link` is
    /// expected: start loading what that call will read (prefetches, no
    /// change of state). Results never depend on it.
    fn prefetch_reader(&self, _f: &Fabric, _link: Link, _slot: u32) {}

    /// `link`'s socket, full when last written to, can take more.
    fn writable(&mut self, _now: Time, _f: &mut Fabric, _link: Link, _slot: u32) {}

    /// `link`'s connection died (reset, or given up).
    fn closed(&mut self, _now: Time, _f: &mut Fabric, _link: Link, _slot: u32) {}

    /// Connection `conn`, whose side 0 this application owns, is over
    /// (see [`super::ConnTable`]): the last look at it before its place
    /// goes to another connection (for reports: name it by its serial).
    fn retire(&mut self, _f: &Fabric, _conn: u32) {}

    /// Hands over growing logs, if there are `sp.rows` rows or more.
    fn spill(&mut self, _now: Time, _f: &mut Fabric, _sp: &mut Spill<'_>) {}

    /// For an application whose end ends the run: its work done and its
    /// whole work, in units of its own (a swarm: pieces). Asked only when
    /// the run is watched, to show progress.
    fn work(&self) -> Option<(u64, u64)> {
        None
    }

    /// For reports: the application as its own type.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}
