//! One connection as the world holds it: both endpoints (any transport),
//! which application owns each end, the read marks and flags through which
//! the world tells the owners what changed, each end's timer, and counters.

use torrentlab_engine::Time;

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
        }
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
    }
}
