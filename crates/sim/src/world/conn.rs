//! One connection as the world holds it: both endpoints (any transport),
//! which application owns each end, the read marks and flags through which
//! the world tells the owners what changed, each end's timer, and counters.

use torrentlab_engine::Time;

use crate::endpoint::Transport;
use crate::timer::Timer;

/// No application slot (before accept, after close).
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// Side 0 dialled (initiator), side 1 accepted. Both run one transport.
pub(crate) struct Conn {
    /// The host of each side.
    pub host: [u32; 2],
    /// The application of each side (an index into the world's).
    pub owner: [u32; 2],
    /// Each side's id in its application (`NO_SLOT` before accept / after close).
    pub slot: [u32; 2],
    /// The owner of side `s` is told when `s` has received this many bytes
    /// in order (`u64::MAX`: never); see `Fabric::set_read_mark`.
    pub read_mark: [u64; 2],
    /// The side's socket said "not flushed": tell its owner when it drains.
    pub blocked: [bool; 2],
    /// The initiator's owner has been told the connection is up.
    pub connected: bool,
    /// The acceptor's owner has been asked (accept or refuse).
    pub asked: bool,
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
