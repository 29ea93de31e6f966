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
/// How many events ahead in the calendar's bucket being served (nearly all
/// timers of endpoints and clients; packets wait among the lane heads) to
/// ask for a timer's line, which says whether it will be due. Stale timers
/// rarely get this far: the calendar's sift drops them first
/// ([`torrentlab_engine::EventQueue::pop_sifted`]). Measured with the sift
/// (full size, Rust runners side by side, 6 rounds): asking for a due
/// endpoint's lines here without the check, and for the connection an
/// upload turn will write to one event ahead, gave 0.999x.
const TIMER_AHEAD: usize = 4;
/// How many events ahead in the calendar to ask for the connection and
/// endpoint of a timer that will be due.
const DUE_AHEAD: usize = 1;

/// Bytes of a [`Conn`] from its start that a side which receives without
/// sending reads: peers, slots, head frames, flags and timers (two lines).
/// The third holds the send and write counters, which only a side that
/// sends or writes reads.
const CONN_RECEIVE: usize = 128;
/// Bytes of a [`Conn`] from its start that a side which also sends reads.
const CONN_SEND: usize = 192;

/// Starts loading what a packet for side `s` of connection `ci`, or a write
/// by that side, reads first: the connection's first lines and side `s`'s
/// endpoint (see [`prefetch`]). The lanes ask for the packet [`LOOKAHEAD`]
/// places behind the current one; clients, through
/// [`Io::prefetch`](torrentlab_bittorrent::client::Io::prefetch), for
/// connections they will write to.
///
/// `data`: the packet carries data, so it most likely acknowledges nothing
/// new and reads only the first part of the endpoint
/// ([`TcpConnection::DATA_PART`]), and most likely sends nothing at once (a
/// delayed ACK waits), so not the connection's send counters either
/// ([`SwarmWorld::prefetch_client`] asks for them when the packet completes a
/// frame, to which the client may answer). Anything else reads the three
/// lines and the endpoint up to [`TcpConnection::HOT_PART`].
///
/// Measured at full size, Rust runners side by side, 8 rounds each
/// (BENCHMARKS.md, eighteenth session): leaving the counters' line out for
/// data packets gave 0.982x; a due timer reading
/// [`TcpConnection::DATA_PART`] (below), 0.988x. PGO wheels, both together:
/// 0.994x (0.975-1.014), within noise.
#[inline]
pub(super) fn prefetch_end(conns: &[Conn], ci: usize, s: usize, data: bool) {
    let Some(c) = conns.get(ci) else { return };
    prefetch::prefetch_bytes(c as *const Conn, if data { CONN_RECEIVE } else { CONN_SEND });
    let part = if data { TcpConnection::DATA_PART } else { TcpConnection::HOT_PART };
    prefetch::prefetch_bytes(&c.ep[s] as *const TcpConnection, part);
}

/// Starts loading what a due endpoint timer reads: nearly always a delayed
/// ACK, which sends (so the connection's three lines) but reads only the
/// endpoint's [`TcpConnection::DATA_PART`]. A retransmission timeout, rare,
/// reads more and waits for it.
#[inline]
fn prefetch_due(c: &Conn, s: usize) {
    prefetch::prefetch_bytes(c as *const Conn, CONN_SEND);
    prefetch::prefetch_bytes(&c.ep[s] as *const TcpConnection, TcpConnection::DATA_PART);
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
                        prefetch_due(c, side as usize);
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
        // The client will write back (a request, say): the send and write
        // counters, which the lane's hint left out for a data packet.
        prefetch::prefetch_bytes((c as *const Conn as *const u8).wrapping_add(CONN_RECEIVE), CONN_SEND - CONN_RECEIVE);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};
    use torrentlab_engine::OptTime;

    #[test]
    fn a_receiving_side_reads_the_first_two_lines_and_a_sending_side_the_third_too() {
        // What every packet reads (the head frames, flags and timers are
        // checked within the same two lines beside `Conn`).
        assert!(offset_of!(Conn, slot) + 8 <= CONN_RECEIVE && offset_of!(Conn, next_end) + 16 <= CONN_RECEIVE);
        assert!(offset_of!(Conn, timer) + size_of::<[crate::timer::Timer; 2]>() <= CONN_RECEIVE);
        // What a send or a write counts: beyond the receiving part, within the sending one.
        for (at, len) in [
            (offset_of!(Conn, wire_bytes), 16),
            (offset_of!(Conn, written), 16),
            (offset_of!(Conn, last_send), size_of::<[OptTime; 2]>()),
        ] {
            assert!(at >= CONN_RECEIVE && at + len <= CONN_SEND, "{at}");
        }
    }
}
