//! The BitTorrent application's record of one connection: the frames each
//! side's stream carries, so that the reader knows where messages end (BEP 3
//! messages are length-prefixed; the simulation carries lengths, not bytes),
//! and what each side sent of them.

use std::collections::VecDeque;

use torrentlab_bittorrent::client::Frame;
use torrentlab_bittorrent::wire::Message;
use torrentlab_engine::OptTime;

/// Frames of both streams of one connection (side 0 dialled, side 1 accepted).
#[derive(Default)]
pub(crate) struct ConnFrames {
    /// Stream offset where `head[s]`, the first frame still unread in side
    /// `s`'s stream, ends (`u64::MAX`: none): the reader's read mark.
    pub next_end: [u64; 2],
    head: [Option<Frame>; 2],
    /// Frames written by side `s` after `head[s]`, with the stream offset
    /// where each ends.
    frames: [VecDeque<(u64, Frame)>; 2],
    /// When side `s` last wrote.
    pub last_send: [OptTime; 2],
    /// Block payload bytes framed by side `s` (piece messages).
    pub piece_bytes: [u64; 2],
    /// Bytes of every frame side `s` started (written, or being written).
    pub framed: [u64; 2],
}

impl ConnFrames {
    pub fn new() -> Self {
        ConnFrames { next_end: [u64::MAX; 2], ..Default::default() }
    }

    /// Registers a frame starting at offset `written` of side `s`'s stream.
    /// Returns the new read mark of the reader when `f` became the head.
    #[inline]
    pub fn frame(&mut self, s: usize, f: Frame, written: u64) -> Option<u64> {
        if let Frame::Msg(Message::Piece { length, .. }) = f {
            self.piece_bytes[s] += length as u64;
        }
        self.framed[s] += f.wire_len() as u64;
        let end = written + f.wire_len() as u64;
        if self.head[s].is_none() {
            self.next_end[s] = end;
            self.head[s] = Some(f);
            Some(end)
        } else {
            self.frames[s].push_back((end, f));
            None
        }
    }

    /// The next frame of side `s`'s stream if the reader has all of it:
    /// `delivered` stream bytes have arrived in order. The reader's read
    /// mark is then `next_end[s]`.
    #[inline]
    pub fn take_frame(&mut self, s: usize, delivered: u64) -> Option<Frame> {
        if self.next_end[s] > delivered {
            return None;
        }
        let f = self.head[s].take().expect("next_end marks the head frame");
        match self.frames[s].pop_front() {
            Some((end, next)) => {
                self.next_end[s] = end;
                self.head[s] = Some(next);
            }
            None => self.next_end[s] = u64::MAX,
        }
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_come_out_in_order_once_the_reader_has_all_of_each() {
        let mut c = ConnFrames::new();
        let msgs = [Message::Interested, Message::Have { piece: 3 }, Message::Unchoke];
        let (mut written, mut ends) = (0, Vec::new());
        for (i, m) in msgs.into_iter().enumerate() {
            let mark = c.frame(1, Frame::Msg(m), written);
            written += m.wire_len() as u64;
            assert_eq!(mark, (i == 0).then_some(written), "only the first becomes the head");
            ends.push(written);
        }
        assert_eq!(c.take_frame(1, ends[0] - 1), None, "one byte short");
        assert_eq!(c.take_frame(1, ends[0]), Some(Frame::Msg(msgs[0])));
        assert_eq!((c.take_frame(1, ends[0]), c.next_end[1]), (None, ends[1]));
        // The reader got the rest at once: both come out, then nothing.
        assert_eq!(c.take_frame(1, ends[2]), Some(Frame::Msg(msgs[1])));
        c.frame(1, Frame::Msg(Message::Choke), written); // written while one is still unread
        assert_eq!(c.take_frame(1, ends[2]), Some(Frame::Msg(msgs[2])));
        assert_eq!(c.take_frame(1, ends[2]), None, "the choke's bytes have not arrived");
        assert_eq!(c.take_frame(1, ends[2] + Message::Choke.wire_len() as u64), Some(Frame::Msg(Message::Choke)));
        assert_eq!((c.take_frame(1, u64::MAX - 1), c.next_end[1]), (None, u64::MAX), "none left");
        assert_eq!(c.take_frame(0, u64::MAX - 1), None, "the other stream is apart");
    }

    #[test]
    fn piece_messages_count_their_block_bytes() {
        let mut c = ConnFrames::new();
        c.frame(0, Frame::Msg(Message::Piece { piece: 1, begin: 0, length: 16_384 }), 0);
        c.frame(0, Frame::Msg(Message::Have { piece: 1 }), 16_397);
        assert_eq!(c.piece_bytes, [16_384, 0]);
        assert_eq!(c.framed, [16_397 + 9, 0], "a piece message's header and a HAVE");
    }
}
