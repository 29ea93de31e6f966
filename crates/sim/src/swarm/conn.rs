//! One connection between two peers, as the swarm world holds it: both
//! endpoints (TCP or uTP), the frames each side's stream carries (so the
//! reader knows where messages end), and counters.

use std::collections::VecDeque;

use crate::endpoint::Transport;
use crate::timer::Timer;
use torrentlab_bittorrent::client::Frame;
use torrentlab_bittorrent::wire::Message;
use torrentlab_engine::{OptTime, Time};

/// No client slot.
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// Side 0 dialled (initiator), side 1 accepted. Both sides run the same
/// transport.
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
    pub ep: [Transport; 2],
    /// Block payload bytes framed by side `s` (piece messages).
    pub piece_bytes: [u64; 2],
    pub opened: Time,
    pub closed: [Option<Time>; 2],
}

impl Conn {
    pub fn new(now: Time, a: u32, b: u32, ep: [Transport; 2]) -> Self {
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

    fn conn() -> Conn {
        use std::sync::Arc;
        use torrentlab_transport::cc::CcConfig;
        use torrentlab_transport::tcp::TcpConfig;
        let cfg = Arc::new(TcpConfig::default());
        let cc = CcConfig::NewReno;
        use torrentlab_transport::tcp::TcpConnection;
        Conn::new(
            Time::ZERO,
            0,
            1,
            [
                Transport::Tcp(TcpConnection::connect(cfg.clone(), cc.build())),
                Transport::Tcp(TcpConnection::listen(cfg, cc.build())),
            ],
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
