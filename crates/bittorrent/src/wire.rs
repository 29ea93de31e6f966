//! The BEP 3 peer wire protocol: the 68-byte handshake, then messages with a
//! 4-byte big-endian length prefix and a 1-byte id. Sizes are the real ones
//! (a `piece` message carrying a 16 KiB block is 16 397 bytes); block payloads
//! are never stored, only their lengths.
//!
//! The Fast Extension (BEP 6) adds five messages (`suggest_piece` 13,
//! `have_all` 14, `have_none` 15, `reject_request` 16, `allowed_fast` 17),
//! used on a connection only when both handshakes set its reserved bit
//! ([`FAST_BIT`] of `reserved[7]`).

/// Bytes of the handshake: pstrlen (1), "BitTorrent protocol" (19), reserved
/// (8), info_hash (20), peer_id (20).
pub const HANDSHAKE_LEN: u32 = 68;
/// The protocol string of the handshake.
pub const PSTR: &[u8; 19] = b"BitTorrent protocol";
/// The Fast Extension's bit of the handshake's last reserved byte (BEP 6:
/// `reserved[7] |= 0x04`).
pub const FAST_BIT: u8 = 0x04;
/// Largest message length mainline 4.0.x accepts (`2**23`).
pub const MAX_MESSAGE_LEN: u32 = 1 << 23;

/// One peer wire message (BEP 3, plus `port` of BEP 5 and the Fast
/// Extension's of BEP 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    KeepAlive,
    Choke,
    Unchoke,
    Interested,
    NotInterested,
    Have {
        piece: u32,
    },
    /// A bitfield of this many payload bytes (`ceil(pieces / 8)`).
    Bitfield {
        bytes: u32,
    },
    Request {
        piece: u32,
        begin: u32,
        length: u32,
    },
    /// A block of `length` bytes (payload not stored).
    Piece {
        piece: u32,
        begin: u32,
        length: u32,
    },
    Cancel {
        piece: u32,
        begin: u32,
        length: u32,
    },
    Port {
        port: u16,
    },
    /// BEP 6: the sender suggests this piece (not sent by the model).
    SuggestPiece {
        piece: u32,
    },
    /// BEP 6: the sender has every piece (in place of a bitfield).
    HaveAll,
    /// BEP 6: the sender has no piece (in place of a bitfield).
    HaveNone,
    /// BEP 6: the sender will not serve this request.
    RejectRequest {
        piece: u32,
        begin: u32,
        length: u32,
    },
    /// BEP 6: the sender serves requests for this piece even while it
    /// chokes the receiver.
    AllowedFast {
        piece: u32,
    },
}

impl Message {
    /// The message id (`None` for keep-alive).
    pub fn id(&self) -> Option<u8> {
        Some(match self {
            Message::KeepAlive => return None,
            Message::Choke => 0,
            Message::Unchoke => 1,
            Message::Interested => 2,
            Message::NotInterested => 3,
            Message::Have { .. } => 4,
            Message::Bitfield { .. } => 5,
            Message::Request { .. } => 6,
            Message::Piece { .. } => 7,
            Message::Cancel { .. } => 8,
            Message::Port { .. } => 9,
            Message::SuggestPiece { .. } => 13,
            Message::HaveAll => 14,
            Message::HaveNone => 15,
            Message::RejectRequest { .. } => 16,
            Message::AllowedFast { .. } => 17,
        })
    }

    /// The value of the length prefix: id + payload.
    pub fn length_prefix(&self) -> u32 {
        match self {
            Message::KeepAlive => 0,
            Message::Choke
            | Message::Unchoke
            | Message::Interested
            | Message::NotInterested
            | Message::HaveAll
            | Message::HaveNone => 1,
            Message::Have { .. } | Message::SuggestPiece { .. } | Message::AllowedFast { .. } => 5,
            Message::Bitfield { bytes } => 1 + bytes,
            Message::Request { .. } | Message::Cancel { .. } | Message::RejectRequest { .. } => 13,
            Message::Piece { length, .. } => 9 + length,
            Message::Port { .. } => 3,
        }
    }

    /// Bytes on the wire: the 4-byte prefix plus the prefixed length.
    pub fn wire_len(&self) -> u32 {
        4 + self.length_prefix()
    }

    /// Writes the message up to (not including) any bitfield or block payload;
    /// returns the bytes. `wire_len() - header.len()` payload bytes would follow.
    pub fn encode_header(&self) -> Vec<u8> {
        let mut out = self.length_prefix().to_be_bytes().to_vec();
        if let Some(id) = self.id() {
            out.push(id);
        }
        match *self {
            Message::Have { piece } | Message::SuggestPiece { piece } | Message::AllowedFast { piece } => {
                out.extend(piece.to_be_bytes())
            }
            Message::Request { piece, begin, length }
            | Message::Cancel { piece, begin, length }
            | Message::RejectRequest { piece, begin, length } => {
                out.extend(piece.to_be_bytes());
                out.extend(begin.to_be_bytes());
                out.extend(length.to_be_bytes());
            }
            Message::Piece { piece, begin, .. } => {
                out.extend(piece.to_be_bytes());
                out.extend(begin.to_be_bytes());
            }
            Message::Port { port } => out.extend(port.to_be_bytes()),
            _ => {}
        }
        out
    }

    /// Parses a message from its header bytes and the total prefixed length
    /// (the payload of `bitfield` and `piece` is taken from the prefix).
    pub fn decode(buf: &[u8]) -> Result<Message, String> {
        if buf.len() < 4 {
            return Err("shorter than the 4-byte length prefix".into());
        }
        let be32 = |i: usize| u32::from_be_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
        let len = be32(0);
        if len > MAX_MESSAGE_LEN {
            return Err(format!("length {len} exceeds the 2^23-byte limit"));
        }
        if len == 0 {
            return Ok(Message::KeepAlive);
        }
        let id = *buf.get(4).ok_or("missing message id")?;
        let need = |n: usize| if buf.len() >= 5 + n { Ok(()) } else { Err(format!("message {id} truncated")) };
        let fixed = |expected: u32| {
            if len == expected {
                Ok(())
            } else {
                Err(format!("message {id} has length {len}, expected {expected}"))
            }
        };
        Ok(match id {
            0 => fixed(1).map(|_| Message::Choke)?,
            1 => fixed(1).map(|_| Message::Unchoke)?,
            2 => fixed(1).map(|_| Message::Interested)?,
            3 => fixed(1).map(|_| Message::NotInterested)?,
            4 | 13 | 17 => {
                fixed(5)?;
                need(4)?;
                let piece = be32(5);
                match id {
                    4 => Message::Have { piece },
                    13 => Message::SuggestPiece { piece },
                    _ => Message::AllowedFast { piece },
                }
            }
            14 => fixed(1).map(|_| Message::HaveAll)?,
            15 => fixed(1).map(|_| Message::HaveNone)?,
            5 => Message::Bitfield { bytes: len - 1 },
            6 | 8 | 16 => {
                fixed(13)?;
                need(12)?;
                let (piece, begin, length) = (be32(5), be32(9), be32(13));
                match id {
                    6 => Message::Request { piece, begin, length },
                    8 => Message::Cancel { piece, begin, length },
                    _ => Message::RejectRequest { piece, begin, length },
                }
            }
            7 => {
                if len < 9 {
                    return Err("piece message shorter than its index and offset".into());
                }
                need(8)?;
                Message::Piece { piece: be32(5), begin: be32(9), length: len - 9 }
            }
            9 => {
                fixed(3)?;
                need(2)?;
                Message::Port { port: u16::from_be_bytes([buf[5], buf[6]]) }
            }
            other => return Err(format!("unknown message id {other}")),
        })
    }
}

/// The 68-byte handshake with the given info hash and peer id; its reserved
/// bytes are zero but for the Fast Extension's bit when `fast`.
pub fn handshake(info_hash: &[u8; 20], peer_id: &[u8; 20], fast: bool) -> [u8; 68] {
    let mut h = [0u8; 68];
    h[0] = 19;
    h[1..20].copy_from_slice(PSTR);
    if fast {
        h[20 + 7] |= FAST_BIT;
    }
    h[28..48].copy_from_slice(info_hash);
    h[48..68].copy_from_slice(peer_id);
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::torrent::BLOCK;

    #[test]
    fn message_sizes_are_those_of_bep_3() {
        let sizes = [
            (Message::KeepAlive, 4),
            (Message::Choke, 5),
            (Message::Interested, 5),
            (Message::Have { piece: 7 }, 9),
            (Message::Bitfield { bytes: 24 }, 29),
            (Message::Request { piece: 1, begin: 0, length: BLOCK }, 17),
            (Message::Piece { piece: 1, begin: 0, length: BLOCK }, 16_397),
            (Message::Cancel { piece: 1, begin: 0, length: BLOCK }, 17),
            (Message::Port { port: 6881 }, 7),
        ];
        for (m, len) in sizes {
            assert_eq!(m.wire_len(), len, "{m:?}");
        }
        assert_eq!(handshake(&[1; 20], &[2; 20], false).len() as u32, HANDSHAKE_LEN);
    }

    #[test]
    fn fast_extension_messages_have_the_ids_and_sizes_of_bep_6() {
        let fast = [
            (Message::SuggestPiece { piece: 3 }, 13, 9),
            (Message::HaveAll, 14, 5),
            (Message::HaveNone, 15, 5),
            (Message::RejectRequest { piece: 1, begin: 0, length: BLOCK }, 16, 17),
            (Message::AllowedFast { piece: 1059 }, 17, 9),
        ];
        for (m, id, len) in fast {
            assert_eq!((m.id(), m.wire_len()), (Some(id), len), "{m:?}");
            assert_eq!(m.encode_header().len() as u32, len, "no payload after the header: {m:?}");
        }
        assert_eq!(
            Message::AllowedFast { piece: 1059 }.encode_header(),
            [0, 0, 0, 5, 17, 0, 0, 0x04, 0x23],
            "length 5, id 17, piece 1059"
        );
    }

    #[test]
    fn the_handshake_sets_the_fast_extension_bit_of_the_last_reserved_byte_only_when_asked() {
        let plain = handshake(&[1; 20], &[2; 20], false);
        let fast = handshake(&[1; 20], &[2; 20], true);
        assert_eq!(&plain[20..28], &[0; 8]);
        assert_eq!(&fast[20..28], &[0, 0, 0, 0, 0, 0, 0, 0x04]);
        assert_eq!((&plain[..20], &plain[28..]), (&fast[..20], &fast[28..]));
    }

    #[test]
    fn every_message_decodes_from_its_encoded_header() {
        for m in [
            Message::KeepAlive,
            Message::Choke,
            Message::Unchoke,
            Message::Interested,
            Message::NotInterested,
            Message::Have { piece: 190 },
            Message::Bitfield { bytes: 24 },
            Message::Request { piece: 3, begin: 16384, length: BLOCK },
            Message::Piece { piece: 3, begin: 16384, length: BLOCK },
            Message::Cancel { piece: 3, begin: 0, length: BLOCK },
            Message::Port { port: 6881 },
            Message::SuggestPiece { piece: 12 },
            Message::HaveAll,
            Message::HaveNone,
            Message::RejectRequest { piece: 3, begin: 16384, length: BLOCK },
            Message::AllowedFast { piece: 431 },
        ] {
            assert_eq!(Message::decode(&m.encode_header()), Ok(m));
        }
    }

    #[test]
    fn malformed_messages_are_refused() {
        assert!(Message::decode(&[0, 0, 0, 2, 0, 0]).unwrap_err().contains("expected 1"));
        assert!(Message::decode(&[0, 0, 0, 1, 42]).unwrap_err().contains("unknown message id 42"));
        assert!(Message::decode(&[0x01, 0, 0, 0, 7]).unwrap_err().contains("2^23"));
        assert!(Message::decode(&[0, 0, 0, 5, 4, 0]).unwrap_err().contains("truncated"));
        assert!(Message::decode(&[0, 0, 0, 2, 14, 0]).unwrap_err().contains("expected 1"));
        assert!(Message::decode(&[0, 0, 0, 5, 16, 0, 0, 0, 1]).unwrap_err().contains("expected 13"));
        let h = handshake(&[9; 20], &[8; 20], false);
        assert_eq!((h[0], &h[1..20]), (19, &PSTR[..]));
    }
}
