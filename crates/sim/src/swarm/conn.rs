//! One TCP connection between two peers, as the swarm world holds it: both
//! endpoints, the frames each side's stream carries (so the reader knows where
//! messages end), and counters.

use std::collections::VecDeque;

use torrentlab_bittorrent::client::Frame;
use torrentlab_bittorrent::wire::Message;
use torrentlab_engine::{OptTime, Time};
use torrentlab_transport::tcp::TcpConnection;

use crate::timer::Timer;

/// No client slot.
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// Side 0 dialled (initiator), side 1 accepted.
///
/// `repr(C, align(64))` keeps what every packet reads or writes (peers,
/// slots, where the next frame ends, flags, the endpoints' timers and wire
/// counters) in the first two cache lines, then what an application write
/// touches, ahead of the two endpoints and of what only reports read. Sending
/// a segment re-arms its endpoint's timer, so the timer sits beside what the
/// packet already brought into the cache.
#[repr(C, align(64))]
pub(crate) struct Conn {
    pub peer: [u32; 2],
    /// The client slot of each side (`NO_SLOT` before accept / after close).
    pub slot: [u32; 2],
    /// Stream offset where the first frame still unread in side `s`'s
    /// stream ends (`u64::MAX`: none); a copy of `frames[s].front()`'s, kept
    /// here so most segments need not look at the queue.
    pub next_end: [u64; 2],
    /// The side's socket said "not flushed": tell its client when it drains.
    pub blocked: [bool; 2],
    /// The initiator's client has been told the connection is up.
    pub connected: bool,
    /// The acceptor's client has been asked (accept or refuse).
    pub asked: bool,
    /// Side `s`'s endpoint timer.
    pub timer: [Timer; 2],
    /// IP bytes sent by side `s`.
    pub wire_bytes: [u64; 2],
    /// Stream bytes written by side `s`.
    pub written: [u64; 2],
    pub last_send: [OptTime; 2],
    /// Frames written by side `s`, with the stream offset where each ends.
    frames: [VecDeque<(u64, Frame)>; 2],
    pub ep: [TcpConnection; 2],
    /// Block payload bytes framed by side `s` (piece messages).
    pub piece_bytes: [u64; 2],
    pub opened: Time,
    pub closed: [Option<Time>; 2],
}

impl Conn {
    pub fn new(now: Time, a: u32, b: u32, ep: [TcpConnection; 2]) -> Self {
        Conn {
            peer: [a, b],
            slot: [NO_SLOT; 2],
            next_end: [u64::MAX; 2],
            written: [0; 2],
            blocked: [false; 2],
            connected: false,
            asked: false,
            timer: [Timer::default(); 2],
            last_send: [OptTime::NONE; 2],
            ep,
            frames: [VecDeque::new(), VecDeque::new()],
            piece_bytes: [0; 2],
            wire_bytes: [0; 2],
            opened: now,
            closed: [None; 2],
        }
    }

    /// Registers a frame starting at the current end of side `s`'s stream.
    #[inline]
    pub fn frame(&mut self, s: usize, f: Frame) {
        if let Frame::Msg(Message::Piece { length, .. }) = f {
            self.piece_bytes[s] += length as u64;
        }
        let end = self.written[s] + f.wire_len() as u64;
        if self.frames[s].is_empty() {
            self.next_end[s] = end;
        }
        self.frames[s].push_back((end, f));
    }

    /// The next frame of side `s`'s stream if the reader has all of it:
    /// `delivered` stream bytes have arrived in order.
    #[inline]
    pub fn take_frame(&mut self, s: usize, delivered: u64) -> Option<Frame> {
        if self.next_end[s] > delivered {
            return None;
        }
        let (_, f) = self.frames[s].pop_front().expect("next_end marks a queued frame");
        self.next_end[s] = self.frames[s].front().map_or(u64::MAX, |&(end, _)| end);
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_every_packet_reads_is_in_the_first_two_cache_lines() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(align_of::<Conn>(), 64, "connections start on a line");
        assert!(offset_of!(Conn, asked) < 64 && offset_of!(Conn, blocked) < 64);
        assert!(offset_of!(Conn, slot) + 8 <= 64 && offset_of!(Conn, next_end) + 16 <= 64);
        assert!(offset_of!(Conn, timer) + size_of::<[Timer; 2]>() <= 128);
        assert!(offset_of!(Conn, wire_bytes) + 16 <= 128);
    }
}
