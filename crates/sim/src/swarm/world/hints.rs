//! Prefetch hints of the swarm world: what the packets a few places ahead in
//! a lane, and the timers a few places ahead in the calendar, will read,
//! asked for early so that it has arrived when they are handled. Hints only:
//! no result depends on them (the digests of every benchmark scenario are the
//! same with and without).

use torrentlab_engine::prefetch;
use torrentlab_transport::tcp::TcpConnection;

use super::{Ev, SwarmWorld};
use crate::swarm::conn::{Conn, NO_SLOT};
use crate::swarm::packet::InFlight;

/// How many packets ahead in a lane to prefetch the receiving endpoint of.
/// Measured on the 10 MB E0 variant (paired runs): 6 ahead gave 0.91x the
/// time of no prefetch; 12 ahead, or also prefetching the receiving client's
/// connection state 3 ahead for every packet, was no better (for packets
/// that complete a frame only, it is: see [`CLIENT_AHEAD`]).
pub(super) const LOOKAHEAD: usize = 6;
/// How many packets ahead in a lane to prefetch the lane's own entry: a
/// lane's ring of packets in flight (64 bytes each) has left the cache since
/// they were sent, and reading the packet [`LOOKAHEAD`] ahead would wait for it.
pub(super) const LANE_AHEAD: usize = 12;
/// How many packets ahead in a lane to prefetch the receiving client's state
/// for a packet that will complete a frame: by then the connection's lines,
/// asked for at [`LOOKAHEAD`], have arrived and say where the client's is.
pub(super) const CLIENT_AHEAD: usize = 3;
/// How many events ahead in the calendar's bucket being served (timers of
/// endpoints and clients: about every other event) to ask for an endpoint
/// timer's line: most of these events only check it (the deadline has gone
/// or moved on).
const TIMER_AHEAD: usize = 4;
/// How many events ahead in the calendar to ask for the connection and
/// endpoint of a timer that will be due.
const DUE_AHEAD: usize = 1;

/// Starts loading what a packet for side `s` of connection `ci`, or a write
/// by that side, reads first: the connection's first three lines (shared
/// state, head frames, timers, send and write counters) and side `s`'s
/// endpoint (see [`prefetch`]). The lanes ask for the packet [`LOOKAHEAD`]
/// places behind the current one; clients, through
/// [`Io::prefetch`](torrentlab_bittorrent::client::Io::prefetch), for
/// connections they will write to.
///
/// `data`: the packet carries data, so it most likely acknowledges nothing
/// new and reads only the first part of the endpoint
/// ([`TcpConnection::DATA_PART`]); anything else reads up to
/// [`TcpConnection::HOT_PART`].
#[inline]
pub(super) fn prefetch_end(conns: &[Conn], ci: usize, s: usize, data: bool) {
    let Some(c) = conns.get(ci) else { return };
    prefetch::prefetch_bytes(c as *const Conn, 192);
    let part = if data { TcpConnection::DATA_PART } else { TcpConnection::HOT_PART };
    prefetch::prefetch_bytes(&c.ep[s] as *const TcpConnection, part);
}

impl SwarmWorld {
    /// Starts loading what the timer events a few places ahead in the
    /// calendar will read: [`TIMER_AHEAD`] events ahead, an endpoint timer's
    /// line, or a client timer's and its limiter's; and [`DUE_AHEAD`] ahead,
    /// where those lines have arrived, the connection and endpoint if the
    /// endpoint timer will be due (a delayed ACK or a retransmission to send),
    /// or the connection an upload turn will write to first. A hint: results
    /// never depend on it.
    #[inline]
    pub(super) fn prefetch_calendar(&self) {
        match self.q.calendar_ahead(TIMER_AHEAD) {
            Some((_, Ev::EpTimer { conn, side, .. })) => {
                if let Some(c) = self.conns.get(conn as usize) {
                    prefetch::prefetch(&c.timer[side as usize]);
                }
            }
            Some((_, Ev::ClientTimer { peer, .. })) => {
                if let Some(p) = self.peers.get(peer as usize) {
                    prefetch::prefetch(&p.timer);
                    p.client.prefetch_limiter();
                }
            }
            _ => {}
        }
        match self.q.calendar_ahead(DUE_AHEAD) {
            Some((at, Ev::EpTimer { conn, side, tag })) => {
                if let Some(c) = self.conns.get(conn as usize) {
                    if c.timer[side as usize].would_be_due(tag, at) {
                        prefetch_end(&self.conns, conn as usize, side as usize, false);
                    }
                }
            }
            Some((at, Ev::ClientTimer { peer, tag })) => {
                if let Some(p) = self.peers.get(peer as usize) {
                    if p.timer.would_fire(tag, at) {
                        p.client.prefetch_turn();
                    }
                }
            }
            _ => {}
        }
    }

    /// Starts loading the receiving client's state for `pkt`'s connection
    /// when `pkt` brings the end of the next frame (so the client will be
    /// called). A hint: results never depend on it.
    #[inline]
    pub(super) fn prefetch_client(&self, pkt: &InFlight) {
        let Some(c) = self.completes_frame(pkt) else { return };
        let s = pkt.to as usize;
        self.peers[c.peer[s] as usize].client.prefetch_conn(c.slot[s]);
        c.prefetch_behind(1 - s);
    }

    /// For the packet next in its lane: when it completes a frame, starts
    /// loading what that frame's handling reads beyond the client's
    /// connection state, which [`SwarmWorld::prefetch_client`] asked for a
    /// few packets ago (a hint).
    #[inline]
    pub(super) fn prefetch_frame(&self, pkt: &InFlight) {
        let Some(c) = self.completes_frame(pkt) else { return };
        let s = pkt.to as usize;
        if let Some(f) = c.head(1 - s) {
            self.peers[c.peer[s] as usize].client.prefetch_frame(c.slot[s], f);
        }
    }

    /// `pkt`'s connection, if `pkt` brings the end of the next frame to a
    /// side with a client.
    #[inline]
    fn completes_frame(&self, pkt: &InFlight) -> Option<&Conn> {
        let c = self.conns.get(pkt.conn as usize)?;
        let s = pkt.to as usize;
        let ends = pkt.len > 0 && pkt.seq + (pkt.len as u64) >= c.next_end[1 - s];
        (ends && c.slot[s] != NO_SLOT).then_some(c)
    }
}
