//! Prefetch hints of the world's event loop: what the packets a few places
//! ahead in a lane will read (their lane entry, their connection and
//! receiving endpoint), asked for early so that it has arrived when they are
//! handled; what the application reading a frame a packet completes will
//! read ([`super::App::prefetch_reader`]); and every line of an endpoint at
//! once when a write or a due timer touches it first. Every packet in flight
//! was written long before it is read, and a swarm's connections do not fit
//! in the cache. Hints only: no result depends
//! on them (the golden digests are the same with and without), and they stay
//! in the world: the protocol crates know nothing of the machine.

use torrentlab_engine::prefetch;

use super::app::Link;
use super::conn::{Conn, NO_SLOT};
use super::fabric::Fabric;
use super::World;
use crate::endpoint::Transport;

/// How many packets ahead in a lane to ask for the receiving connection.
pub(super) const LOOKAHEAD: usize = 6;
/// How many packets ahead in a lane to ask for the lane's own entry: its
/// ring of packets in flight has left the cache since they were sent, and
/// reading the packet [`LOOKAHEAD`] ahead would wait for it.
pub(super) const LANE_AHEAD: usize = 12;
/// Bytes of a connection's record up to its endpoints (read by every packet).
const CONN_HEAD: usize = std::mem::offset_of!(Conn, ep);
/// How many packets ahead in a lane to ask the receiving application for
/// what reading a frame the packet completes will need: by then the
/// connection's lines, asked for [`LOOKAHEAD`] ahead, have arrived and say
/// which application and slot.
pub(super) const READER_AHEAD: usize = 3;

/// Asks for every line of an endpoint about to be used when nothing could
/// ask earlier (a write, a due timer): its handling and the drive after it
/// read lines all over it, and asked for together they arrive together
/// instead of one after another.
#[inline]
pub(super) fn hint_endpoint(ep: &Transport) {
    prefetch::prefetch(ep);
}

impl Fabric {
    /// Asks for what the packets behind the head of path lane `lane` will read.
    #[inline]
    pub(super) fn hint_lane(&self, lane: usize) {
        if let Some(far) = self.lanes.get(lane, LANE_AHEAD) {
            prefetch::prefetch(far);
        }
        if let Some(ahead) = self.lanes.get(lane, LOOKAHEAD) {
            if let Some(c) = self.conns.get(ahead.conn as usize) {
                prefetch::prefetch_bytes(c as *const Conn, CONN_HEAD);
                let ep = &c.ep[ahead.to as usize];
                prefetch::prefetch(ep);
            }
        }
    }
}

impl World {
    /// When the packet [`READER_AHEAD`] places behind the head of path lane
    /// `lane` will bring its receiver's stream to the read mark (a frame
    /// complete), lets the receiving application start loading what its
    /// `readable` call will read ([`super::App::prefetch_reader`]). TCP
    /// only: a uTP packet's sequence number counts packets, not bytes.
    #[inline]
    pub(super) fn hint_reader(&self, lane: usize) {
        let Some(x) = self.f.lanes.get(lane, READER_AHEAD) else { return };
        if x.len == 0 || x.not_tcp() {
            return;
        }
        let Some(c) = self.f.conns.get(x.conn as usize) else { return };
        let s = x.to as usize;
        if c.slot[s] == NO_SLOT || x.seq() + (x.len as u64) < c.read_mark[s] {
            return;
        }
        if let Some(app) = self.apps.get(c.owner[s] as usize) {
            app.prefetch_reader(&self.f, Link::new(x.conn, s), c.slot[s]);
        }
    }
}
