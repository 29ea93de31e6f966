//! Prefetch hints of the world's event loop: what the packets a few places
//! ahead in a lane will read (their lane entry, their connection and
//! receiving endpoint), asked for early so that it has arrived when they are
//! handled. Every packet in flight was written long before it is read, and a
//! swarm's connections do not fit in the cache. Hints only: no result depends
//! on them (the golden digests are the same with and without), and they stay
//! in the world: the protocol crates know nothing of the machine.

use torrentlab_engine::prefetch;

use super::conn::Conn;
use super::fabric::Fabric;

/// How many packets ahead in a lane to ask for the receiving connection.
pub(super) const LOOKAHEAD: usize = 6;
/// How many packets ahead in a lane to ask for the lane's own entry: its
/// ring of packets in flight has left the cache since they were sent, and
/// reading the packet [`LOOKAHEAD`] ahead would wait for it.
pub(super) const LANE_AHEAD: usize = 12;
/// Bytes of a connection's record up to its endpoints (read by every packet).
const CONN_HEAD: usize = std::mem::offset_of!(Conn, ep);
/// Bytes of a receiving endpoint asked for: a data segment's handling reads
/// its state and flags, its receiver and its sender's first part.
const ENDPOINT_DATA: usize = 256;
/// Bytes of an endpoint asked for ahead of anything else (an ACK, which
/// reads the sender's window and controller too).
const ENDPOINT_ALL: usize = 448;

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
                let part = if ahead.len > 0 { ENDPOINT_DATA } else { ENDPOINT_ALL };
                let ep = &c.ep[ahead.to as usize];
                prefetch::prefetch_bytes(ep as *const _, part.min(std::mem::size_of_val(ep)));
            }
        }
    }
}
