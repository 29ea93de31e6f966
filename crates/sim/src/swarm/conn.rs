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
/// slots, the first unread frame of each stream and where it ends, flags,
/// the endpoints' timers) in the first two cache lines, then the counters a
/// send or an application write touches, ahead of the two endpoints and of
/// what only reports read. Sending a segment re-arms its endpoint's timer,
/// so the timer sits beside what the packet already brought into the cache;
/// and a segment that completes a frame finds it there too, not in the
/// queue's buffer elsewhere on the heap. Each endpoint (itself line-aligned)
/// starts a cache line, so what a segment reads of it is whole lines.
#[repr(C, align(64))]
pub(crate) struct Conn {
    pub peer: [u32; 2],
    /// The client slot of each side (`NO_SLOT` before accept / after close).
    pub slot: [u32; 2],
    /// Stream offset where `head[s]`, the first frame still unread in side
    /// `s`'s stream, ends (`u64::MAX`: none).
    pub next_end: [u64; 2],
    head: [Option<Frame>; 2],
    /// The side's socket said "not flushed": tell its client when it drains.
    pub blocked: [bool; 2],
    /// The initiator's client has been told the connection is up.
    pub connected: bool,
    /// The acceptor's client has been asked (accept or refuse).
    pub asked: bool,
    /// Frames of side `s`'s stream queued behind `head[s]` (`frames[s].len()`,
    /// here so that taking the head need not look at the queue).
    behind: [u32; 2],
    /// Side `s`'s endpoint timer.
    pub timer: [Timer; 2],
    /// IP bytes sent by side `s`.
    pub wire_bytes: [u64; 2],
    /// Stream bytes written by side `s`.
    pub written: [u64; 2],
    pub last_send: [OptTime; 2],
    /// Frames written by side `s` after `head[s]`, with the stream offset
    /// where each ends.
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
            head: [None, None],
            behind: [0; 2],
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
        if self.head[s].is_none() {
            self.next_end[s] = end;
            self.head[s] = Some(f);
        } else {
            self.frames[s].push_back((end, f));
            self.behind[s] += 1;
        }
    }

    /// The next frame of side `s`'s stream if the reader has all of it:
    /// `delivered` stream bytes have arrived in order.
    #[inline]
    pub fn take_frame(&mut self, s: usize, delivered: u64) -> Option<Frame> {
        if self.next_end[s] > delivered {
            return None;
        }
        let f = self.head[s].take().expect("next_end marks the head frame");
        if self.behind[s] > 0 {
            self.behind[s] -= 1;
            let (end, next) = self.frames[s].pop_front().expect("counted behind the head");
            self.next_end[s] = end;
            self.head[s] = Some(next);
        } else {
            self.next_end[s] = u64::MAX;
        }
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
        assert!(offset_of!(Conn, slot) + 8 <= 64 && offset_of!(Conn, next_end) + 16 <= 64);
        assert!(offset_of!(Conn, head) + size_of::<[Option<Frame>; 2]>() <= 64, "the head frames");
        assert!(offset_of!(Conn, asked) < 128 && offset_of!(Conn, blocked) < 128 && offset_of!(Conn, behind) < 128);
        assert!(offset_of!(Conn, timer) + size_of::<[Timer; 2]>() <= 128);
        assert!(offset_of!(Conn, wire_bytes) + 16 <= 192, "what a send counts, in the third line");
        // Each endpoint starts a line: a data segment's part of it is exactly
        // its four lines, not five straddling ones.
        let ep = size_of::<torrentlab_transport::tcp::TcpConnection>();
        assert_eq!((offset_of!(Conn, ep) % 64, ep % 64), (0, 0));
    }

    fn conn() -> Conn {
        use std::sync::Arc;
        use torrentlab_transport::cc::CcConfig;
        use torrentlab_transport::tcp::TcpConfig;
        let cfg = Arc::new(TcpConfig::default());
        let cc = CcConfig::NewReno;
        Conn::new(
            Time::ZERO,
            0,
            1,
            [TcpConnection::connect(cfg.clone(), cc.build()), TcpConnection::listen(cfg, cc.build())],
        )
    }

    #[test]
    fn frames_come_out_in_order_once_the_reader_has_all_of_each() {
        let mut c = conn();
        let msgs = [Message::Interested, Message::Have { piece: 3 }, Message::Unchoke];
        let mut ends = Vec::new();
        for m in msgs {
            c.frame(1, Frame::Msg(m));
            c.written[1] += m.wire_len() as u64;
            ends.push(c.written[1]);
        }
        assert_eq!(c.take_frame(1, ends[0] - 1), None, "one byte short");
        assert_eq!(c.take_frame(1, ends[0]), Some(Frame::Msg(msgs[0])));
        assert_eq!(c.take_frame(1, ends[0]), None);
        // The reader got the rest at once: both come out, then nothing.
        assert_eq!(c.take_frame(1, ends[2]), Some(Frame::Msg(msgs[1])));
        c.frame(1, Frame::Msg(Message::Choke)); // written while one is still unread
        assert_eq!(c.take_frame(1, ends[2]), Some(Frame::Msg(msgs[2])));
        assert_eq!(c.take_frame(1, ends[2]), None, "the choke's bytes have not arrived");
        assert_eq!(c.take_frame(1, ends[2] + Message::Choke.wire_len() as u64), Some(Frame::Msg(Message::Choke)));
        assert_eq!((c.take_frame(1, u64::MAX - 1), c.next_end[1]), (None, u64::MAX), "none left");
        assert_eq!(c.take_frame(0, u64::MAX - 1), None, "the other stream is apart");
    }
}
