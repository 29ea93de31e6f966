//! One direction of a captured connection's BitTorrent byte stream, rebuilt
//! from the frames the client announced (`Io::frame`): the 68-byte BEP 3
//! handshake, then length-prefixed messages with their real fields. The
//! model carries lengths, not bytes; the bytes here are what a real client
//! would have sent, with every `piece` block's data zero-filled (and a
//! `bitfield`'s real bits).

use torrentlab_bittorrent::client::Frame;
use torrentlab_bittorrent::wire::{self, Message};

/// A frame as the log keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kept {
    /// The handshake, with the Fast Extension's reserved bit (BEP 6) or not.
    Handshake {
        fast: bool,
    },
    /// A `bitfield` message's payload (BEP 3 bit order).
    Bitfield(Vec<u8>),
    Msg(Message),
}

impl Kept {
    fn wire_len(&self) -> u64 {
        match self {
            Kept::Handshake { .. } => wire::HANDSHAKE_LEN as u64,
            Kept::Bitfield(b) => 5 + b.len() as u64,
            Kept::Msg(m) => m.wire_len() as u64,
        }
    }
}

/// What the handshake of this direction says: the torrent's info hash and
/// the sender's peer id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ids {
    pub info_hash: [u8; 20],
    pub peer_id: [u8; 20],
}

/// Frames of one stream direction, by the stream offset where each starts.
#[derive(Clone, Debug, Default)]
pub struct StreamLog {
    starts: Vec<u64>,
    frames: Vec<Kept>,
}

/// Messages of a stream that lie wholly below an offset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Complete {
    pub handshakes: u64,
    pub pieces: u64,
    pub haves: u64,
}

impl StreamLog {
    /// Notes `frame`, which starts at stream offset `at` (the stream's end
    /// when the client announced it).
    pub fn push(&mut self, at: u64, frame: &Frame) {
        debug_assert!(self.starts.last().is_none_or(|&s| s < at || self.frames.is_empty()), "frames in stream order");
        let kept = match frame {
            Frame::Handshake { fast } => Kept::Handshake { fast: *fast },
            Frame::Bitfield(b) => Kept::Bitfield(b.to_wire()),
            Frame::Msg(m) => Kept::Msg(*m),
        };
        self.starts.push(at);
        self.frames.push(kept);
    }

    /// Handshakes, `piece` and `have` messages that end at or below `upto`.
    pub fn complete_below(&self, upto: u64) -> Complete {
        let mut c = Complete::default();
        for (s, f) in self.starts.iter().zip(&self.frames) {
            if s + f.wire_len() > upto {
                break;
            }
            match f {
                Kept::Handshake { .. } => c.handshakes += 1,
                Kept::Msg(Message::Piece { .. }) => c.pieces += 1,
                Kept::Msg(Message::Have { .. }) => c.haves += 1,
                _ => {}
            }
        }
        c
    }

    /// Writes the stream's bytes from offset `from` into `out` (as many as
    /// it holds). Bytes no frame covers, and block data, are zero.
    pub fn render(&self, from: u64, out: &mut [u8], ids: &Ids) {
        out.fill(0);
        let end = from + out.len() as u64;
        // The last frame starting at or before `from`.
        let mut i = self.starts.partition_point(|&s| s <= from).saturating_sub(1);
        while i < self.frames.len() && self.starts[i] < end {
            let (start, f) = (self.starts[i], &self.frames[i]);
            let f_end = start + f.wire_len();
            if f_end > from {
                let head = head(f, ids);
                // The frame's bytes [lo, hi) fall in the packet.
                let (lo, hi) = (from.max(start), end.min(f_end));
                let head_end = (start + head.len() as u64).min(hi);
                if lo < head_end {
                    let src = &head[(lo - start) as usize..(head_end - start) as usize];
                    let at = (lo - from) as usize;
                    out[at..at + src.len()].copy_from_slice(src);
                }
                if let Kept::Bitfield(bits) = f {
                    // The payload after the 5-byte prefix and id.
                    let (b_lo, b_hi) = (lo.max(start + 5), hi);
                    if b_lo < b_hi {
                        let src = &bits[(b_lo - start - 5) as usize..(b_hi - start - 5) as usize];
                        let at = (b_lo - from) as usize;
                        out[at..at + src.len()].copy_from_slice(src);
                    }
                }
            }
            i += 1;
        }
    }
}

/// A frame's bytes up to its payload: the whole handshake; a message's
/// length prefix, id and fixed fields (`wire::Message::encode_header`).
fn head(f: &Kept, ids: &Ids) -> Vec<u8> {
    match f {
        Kept::Handshake { fast } => wire::handshake(&ids.info_hash, &ids.peer_id, *fast).to_vec(),
        Kept::Bitfield(b) => {
            let mut h = (1 + b.len() as u32).to_be_bytes().to_vec();
            h.push(5);
            h
        }
        Kept::Msg(m) => m.encode_header(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torrentlab_bittorrent::bitfield::Bitfield;

    fn ids() -> Ids {
        Ids { info_hash: [0xaa; 20], peer_id: *b"M4-0-2--000000000003" }
    }

    /// A handshake, a bitfield of 10 pieces (0 and 9 held), an interested,
    /// and a piece message of 16 KiB.
    fn log() -> (StreamLog, Vec<u8>) {
        let mut l = StreamLog::default();
        let mut bf = Bitfield::new(10);
        bf.set(0);
        bf.set(9);
        let frames = [
            Frame::Handshake { fast: false },
            Frame::Bitfield(Box::new(bf)),
            Frame::Msg(Message::Interested),
            Frame::Msg(Message::Piece { piece: 2, begin: 16_384, length: 16_384 }),
            Frame::Msg(Message::Have { piece: 7 }),
        ];
        let mut at = 0;
        let mut expected = Vec::new();
        for f in &frames {
            l.push(at, f);
            at += f.wire_len() as u64;
        }
        expected.extend_from_slice(&wire::handshake(&[0xaa; 20], b"M4-0-2--000000000003", false));
        expected.extend_from_slice(&[0, 0, 0, 3, 5, 0b1000_0000, 0b0100_0000]);
        expected.extend_from_slice(&[0, 0, 0, 1, 2]);
        expected.extend_from_slice(&[0, 0, 0x40, 0x09, 7, 0, 0, 0, 2, 0, 0, 0x40, 0]);
        expected.resize(expected.len() + 16_384, 0);
        expected.extend_from_slice(&[0, 0, 0, 5, 4, 0, 0, 0, 7]);
        assert_eq!(expected.len() as u64, at);
        (l, expected)
    }

    #[test]
    fn the_whole_stream_renders_as_the_real_bep_3_bytes() {
        let (l, expected) = log();
        let mut out = vec![0xffu8; expected.len()];
        l.render(0, &mut out, &ids());
        assert_eq!(out, expected);
    }

    #[test]
    fn any_slice_of_the_stream_renders_as_the_same_slice_of_its_bytes() {
        let (l, expected) = log();
        for (from, len) in [(0, 1), (1, 67), (60, 20), (68, 7), (70, 1448), (80, 2), (1000, 1448), (16_400, 100)] {
            let len = len.min(expected.len() - from);
            let mut out = vec![0xffu8; len];
            l.render(from as u64, &mut out, &ids());
            assert_eq!(out, expected[from..from + len], "bytes {from}..{}", from + len);
        }
        let mut past = [0xffu8; 8];
        l.render(expected.len() as u64, &mut past, &ids());
        assert_eq!(past, [0; 8], "bytes beyond every frame are zero");
    }

    #[test]
    fn only_messages_wholly_below_an_offset_are_complete() {
        let (l, expected) = log();
        let end = expected.len() as u64;
        assert_eq!(l.complete_below(67), Complete::default());
        assert_eq!(l.complete_below(68), Complete { handshakes: 1, ..Complete::default() });
        assert_eq!(l.complete_below(end - 9), Complete { handshakes: 1, pieces: 1, haves: 0 });
        assert_eq!(l.complete_below(end - 10).pieces, 0, "one byte of the piece message short");
        assert_eq!(l.complete_below(end), Complete { handshakes: 1, pieces: 1, haves: 1 });
    }
}
