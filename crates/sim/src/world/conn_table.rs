//! The world's connections by index ([`ConnTable`]), and, in worlds that
//! ask for it, the places of connections that are over handed to new ones.
//!
//! A swarm opens connections all run long (a flash crowd of 1,000 mainline
//! peers opens 48,825 and holds at most 39,900 at once, in its first half
//! second: dials refused by a full peer, duplicates; later seeds close on
//! seeds); each place is about 1.3 kB. Recycling keeps the table at the
//! connections alive, not those ever opened, and the table is reserved up
//! front for the most the peers can dial at once (address space, not
//! memory, until used), so that it rarely grows: growing copies it, and
//! needs both buffers at once.
//!
//! A connection is *over* when nothing refers to it any more: both owners
//! have let it go, both endpoints are dead (reset or given up, nothing left
//! to send), no packet of it is on the network or held by a pacer, and
//! neither endpoint timer has an event queued. The world checks a
//! connection when one of these may have become true ([`ConnTable::check`]);
//! one that is over is *ripe*, and at the top of the next event (when no end
//! waits to be driven) its owner is shown it a last time
//! ([`App::retire`](super::App::retire)) and its place goes to the next
//! connection opened. Which place a connection gets changes nothing a run
//! computes: events are ordered by time and scheduling order, and reports
//! name connections by their serial number ([`Conn::serial`]), the order
//! they were opened in.

use std::ops::{Index, IndexMut};

use super::conn::{Conn, Life};
use crate::hugepages;
use crate::timer::Timer;

/// Every connection of a world, by index (see the module docs).
pub(crate) struct ConnTable {
    conns: Vec<Conn>,
    /// Connections opened so far (the next one's serial number).
    opened: u32,
    /// Whether places of connections that are over are reused.
    recycle: bool,
    /// Free places, the last freed reused first.
    free: Vec<u32>,
    /// Connections found over since the last [`ConnTable::take_ripe`].
    ripe: Vec<u32>,
}

impl ConnTable {
    /// An empty table with room for `reserve` connections before it grows;
    /// `recycle`: reuse the places of connections that are over.
    pub fn new(recycle: bool, reserve: usize) -> ConnTable {
        let conns = Vec::with_capacity(reserve);
        hugepages::advise(&conns);
        ConnTable { conns, opened: 0, recycle, free: Vec::new(), ripe: Vec::new() }
    }

    /// Adds `c` as the next connection opened (its serial number is set
    /// here); returns its index.
    pub fn push(&mut self, mut c: Conn) -> u32 {
        c.serial = self.opened;
        self.opened += 1;
        if let Some(i) = self.free.pop() {
            let old = &mut self.conns[i as usize];
            c.timer = [Timer::after(&old.timer[0]), Timer::after(&old.timer[1])];
            *old = c;
            return i;
        }
        let cap = self.conns.capacity();
        self.conns.push(c);
        if self.conns.capacity() != cap {
            hugepages::advise(&self.conns);
        }
        self.conns.len() as u32 - 1
    }

    /// Places ever used: every index below this is a connection, live or over.
    #[inline]
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// Connections opened so far.
    pub fn opened(&self) -> u32 {
        self.opened
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<&Conn> {
        self.conns.get(i)
    }

    /// The connections not yet over, with their indices.
    pub fn live(&self) -> impl Iterator<Item = (usize, &Conn)> {
        self.conns.iter().enumerate().filter(|(_, c)| c.life != Life::Free)
    }

    /// Notes connection `i` as ripe if it is over (see the module docs).
    /// Call after anything that may have made it so, once no end of it
    /// waits to be driven.
    #[inline]
    pub fn check(&mut self, i: u32) {
        if !self.recycle {
            return;
        }
        let c = &mut self[i as usize];
        if c.life == Life::Live && c.is_over() {
            c.life = Life::Ripe;
            self.ripe.push(i);
        }
    }

    /// Whether some connection is ripe.
    #[inline]
    pub fn has_ripe(&self) -> bool {
        !self.ripe.is_empty()
    }

    /// The ripe connections, in the order they ripened; each must be
    /// handed back with [`ConnTable::release`] if [`ConnTable::still_over`].
    pub fn take_ripe(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.ripe)
    }

    /// Whether ripe connection `i` is still over; if not, it is live again
    /// (and checked again when it may be over).
    pub fn still_over(&mut self, i: u32) -> bool {
        let c = &mut self[i as usize];
        debug_assert_eq!(c.life, Life::Ripe);
        if !c.is_over() {
            c.life = Life::Live;
            return false;
        }
        true
    }

    /// Frees the place of ripe connection `i` for the next connection opened.
    pub fn release(&mut self, i: u32) {
        let c = &mut self[i as usize];
        debug_assert_eq!(c.life, Life::Ripe);
        c.life = Life::Free;
        self.free.push(i);
    }
}

impl Index<usize> for ConnTable {
    type Output = Conn;
    #[inline]
    fn index(&self, i: usize) -> &Conn {
        &self.conns[i]
    }
}

impl IndexMut<usize> for ConnTable {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut Conn {
        &mut self.conns[i]
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use torrentlab_engine::Time;
    use torrentlab_transport::cc::CcConfig;
    use torrentlab_transport::stream::Endpoint;
    use torrentlab_transport::tcp::{TcpConfig, TcpConnection};

    use super::*;
    use crate::endpoint::Transport;
    use crate::world::NO_SLOT;

    fn tcp_conn() -> Conn {
        let cfg = Arc::new(TcpConfig::default());
        let ep = [
            Transport::Tcp(TcpConnection::connect(cfg.clone(), CcConfig::NewReno.build())),
            Transport::Tcp(TcpConnection::listen(cfg, CcConfig::NewReno.build())),
        ];
        Conn::new(Time::ZERO, [0, 1], [0, 0], ep)
    }

    /// Both ends reset (each sends its RST): dead, with nothing left to send.
    fn kill(c: &mut Conn) {
        for ep in &mut c.ep {
            ep.abort();
            while ep.poll_transmit(Time::ZERO).is_some() {}
        }
    }

    #[test]
    fn a_table_within_its_reserve_never_moves_and_grows_past_it_keeping_every_connection() {
        let mut t = ConnTable::new(false, 100);
        t.push(tcp_conn());
        let first: *const Conn = &t[0];
        for _ in 1..100 {
            t.push(tcp_conn());
        }
        assert!(std::ptr::eq(first, &t[0]), "within the reserve the table did not move");
        for _ in 0..150 {
            t.push(tcp_conn());
        }
        assert_eq!(t.len(), 250);
        assert!((0..t.len()).all(|i| t[i].serial == i as u32), "serials in the order opened");
        assert!(t.get(250).is_none());
    }

    #[test]
    fn a_connection_over_gives_its_place_to_the_next_one_opened_under_a_new_serial() {
        let mut t = ConnTable::new(true, 4);
        assert_eq!((t.push(tcp_conn()), t.push(tcp_conn())), (0, 1));
        kill(&mut t[0]);
        t.check(0);
        t.check(1);
        assert_eq!(t.take_ripe(), vec![0], "only the dead one, once");
        t.check(0);
        assert!(!t.has_ripe(), "a ripe connection is not noted twice");
        t.release(0);
        assert_eq!(t.live().map(|(i, _)| i).collect::<Vec<_>>(), vec![1]);
        assert_eq!(t.push(tcp_conn()), 0, "the freed place");
        assert_eq!((t[0].serial, t.opened(), t.len()), (2, 3, 2));
    }

    #[test]
    fn a_ripe_connection_referred_to_again_before_it_is_retired_lives_on_and_ripens_later() {
        let mut t = ConnTable::new(true, 4);
        t.push(tcp_conn());
        kill(&mut t[0]);
        t.check(0);
        let tag = t[0].timer[1].arm(Some(Time(9))).expect("a deadline after it ripened");
        assert_eq!(t.take_ripe(), vec![0]);
        assert!(!t.still_over(0), "its timer has an event queued");
        assert_eq!(t[0].life, Life::Live);
        t[0].timer[1].arm(None);
        assert_eq!(t[0].timer[1].fire_following(tag, Time(9)), crate::timer::Firing::Stale);
        t.check(0);
        assert_eq!(t.take_ripe(), vec![0]);
        assert!(t.still_over(0));
        t.release(0);
        assert_eq!(t.live().count(), 0);
    }

    #[test]
    fn a_connection_is_not_over_while_an_owner_a_packet_or_a_timer_refers_to_it() {
        let mut t = ConnTable::new(true, 4);
        t.push(tcp_conn());
        kill(&mut t[0]);
        t[0].slot[1] = 3;
        t[0].in_flight = 1;
        assert!(t[0].timer[0].arm(Some(Time(5))).is_some());
        t.check(0);
        t[0].slot[1] = NO_SLOT;
        t.check(0);
        t[0].in_flight = 0;
        t.check(0);
        assert!(!t.has_ripe(), "the timer's event is still queued");
        // The event fires and finds nothing wanted any more.
        t[0].timer[0].arm(None);
        let tag = t[0].timer[0].arm(Some(Time(1))).expect("an earlier deadline queues anew");
        t[0].timer[0].arm(None);
        assert_eq!(t[0].timer[0].fire_following(tag, Time(1)), crate::timer::Firing::Stale);
        t.check(0);
        assert_eq!(t.take_ripe(), vec![0]);
    }

    #[test]
    fn a_connection_with_a_live_end_is_not_over() {
        let mut t = ConnTable::new(true, 4);
        t.push(tcp_conn());
        let ep = &mut t[0].ep[0];
        ep.abort();
        while ep.poll_transmit(Time::ZERO).is_some() {}
        t.check(0);
        assert!(!t.has_ripe(), "the listening end lives");
    }

    #[test]
    fn without_recycling_no_place_is_reused() {
        let mut t = ConnTable::new(false, 4);
        t.push(tcp_conn());
        kill(&mut t[0]);
        t.check(0);
        assert!(!t.has_ripe());
        assert_eq!(t.push(tcp_conn()), 1);
    }
}
