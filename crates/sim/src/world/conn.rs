//! One connection as the world holds it: both endpoints (any transport),
//! which application owns each end, the read marks and flags through which
//! the world tells the owners what changed, each end's timer, and counters.

use torrentlab_engine::Time;

use torrentlab_transport::stream::Endpoint;

use crate::endpoint::Transport;
use crate::timer::Timer;

/// No application slot (before accept, after close).
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// Side 0 dialled (initiator), side 1 accepted. Both run one transport.
///
/// Laid out for the world's loop (`repr(C, align(64))`): what every packet
/// reads or writes first (hosts, owners, slots, read marks, flags, timers,
/// counters) fills the first two cache lines, and the endpoints start the
/// third; what only reports read comes last.
#[repr(C, align(64))]
pub(crate) struct Conn {
    /// The host of each side.
    pub host: [u32; 2],
    /// The application of each side (an index into the world's).
    pub owner: [u32; 2],
    /// Each side's id in its application (`NO_SLOT` before accept / after close).
    pub slot: [u32; 2],
    /// The side's socket said "not flushed": tell its owner when it drains.
    pub blocked: [bool; 2],
    /// The initiator's owner has been told the connection is up.
    pub connected: bool,
    /// The acceptor's owner has been asked (accept or refuse).
    pub asked: bool,
    /// Packets of this connection on the network or held by a pacer.
    pub in_flight: u32,
    /// The owner of side `s` is told when `s` has received this many bytes
    /// in order (`u64::MAX`: never); see `Fabric::set_read_mark`.
    pub read_mark: [u64; 2],
    /// Side `s`'s endpoint timer.
    pub timer: [Timer; 2],
    /// IP bytes sent by side `s`.
    pub wire_bytes: [u64; 2],
    /// Stream bytes written by side `s`.
    pub written: [u64; 2],
    pub ep: [Transport; 2],
    pub opened: Time,
    pub closed: [Option<Time>; 2],
    /// Its place in the order connections were opened: what reports call
    /// it (its index may have served a connection before; see
    /// [`super::ConnTable`]).
    pub serial: u32,
    pub life: Life,
}

/// Where a connection is in its life as the table sees it (see [`super::ConnTable`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Life {
    /// Something may still refer to it.
    Live,
    /// Over: its owner is shown it a last time at the next event.
    Ripe,
    /// Over and retired: its place waits for the next connection opened.
    Free,
}

impl Conn {
    pub fn new(now: Time, host: [u32; 2], owner: [u32; 2], ep: [Transport; 2]) -> Self {
        Conn {
            host,
            owner,
            slot: [NO_SLOT; 2],
            read_mark: [u64::MAX; 2],
            blocked: [false; 2],
            connected: false,
            asked: false,
            timer: [Timer::default(); 2],
            wire_bytes: [0; 2],
            written: [0; 2],
            ep,
            opened: now,
            closed: [None; 2],
            in_flight: 0,
            serial: 0,
            life: Life::Live,
        }
    }

    /// Nothing refers to the connection any more: both owners let it go,
    /// both endpoints are dead, no packet of it is on its way, and neither
    /// endpoint timer has an event queued. A dead endpoint sends nothing
    /// unless a packet reaches it, so the connection stays over.
    #[inline]
    pub fn is_over(&self) -> bool {
        self.slot == [NO_SLOT; 2]
            && self.in_flight == 0
            && self.timer.iter().all(Timer::idle)
            && self.ep.iter().all(|e| !e.is_alive())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of};

    #[test]
    fn what_every_packet_reads_comes_before_the_endpoints_on_their_own_lines() {
        assert_eq!(align_of::<Conn>(), 64);
        assert!(offset_of!(Conn, written) + 16 <= offset_of!(Conn, ep));
        assert_eq!(offset_of!(Conn, ep), 128, "the endpoints start the third line");
        assert!(offset_of!(Conn, in_flight) < 64, "counted with every packet, beside the hosts");
    }
}
