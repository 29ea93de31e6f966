//! The uTP packet header (BEP 29, version 1): 20 bytes, big-endian, followed by
//! an extension chain. Only the selective-ACK extension (type 1) is produced.

/// Packet types (BEP 29).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PacketType {
    Data = 0,
    Fin = 1,
    State = 2,
    Reset = 3,
    Syn = 4,
}

impl PacketType {
    /// The type whose BEP 29 number is `v`, if any.
    pub fn from_u8(v: u8) -> Option<PacketType> {
        Some(match v {
            0 => PacketType::Data,
            1 => PacketType::Fin,
            2 => PacketType::State,
            3 => PacketType::Reset,
            4 => PacketType::Syn,
            _ => return None,
        })
    }
}

/// Bytes of the fixed header.
pub const HEADER_LEN: u32 = 20;

/// A selective ACK bitmask: bit `i` (LSB of byte 0 first) acknowledges packet
/// `ack_nr + 2 + i`. Its length is a multiple of 4 bytes (32 packets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackMask {
    pub bytes: [u8; 8],
    /// Length in bytes: 0 (no extension), 4 or 8.
    pub len: u8,
}

impl SackMask {
    /// Whether packet `ack_nr + 2 + i` is acknowledged.
    pub fn get(&self, i: usize) -> bool {
        i < self.len as usize * 8 && self.bytes[i / 8] & (1 << (i % 8)) != 0
    }

    /// Marks packet `ack_nr + 2 + i`; grows the mask to 4 or 8 bytes as needed.
    /// Returns false if `i` does not fit in 64 packets.
    pub fn set(&mut self, i: usize) -> bool {
        if i >= 64 {
            return false;
        }
        let need = if i < 32 { 4 } else { 8 };
        self.len = self.len.max(need);
        self.bytes[i / 8] |= 1 << (i % 8);
        true
    }

    /// Bytes on the wire: 2 (next-extension, length) + the mask.
    pub fn wire_len(&self) -> u32 {
        if self.len == 0 {
            0
        } else {
            2 + self.len as u32
        }
    }
}

/// The header fields of one uTP packet, plus its payload length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: PacketType,
    pub connection_id: u16,
    /// Sender's clock when sent, in microseconds (wraps at 2^32).
    pub timestamp_us: u32,
    /// Sender's clock when it received the last packet, minus that packet's
    /// timestamp: the peer's view of our one-way delay (plus clock offset).
    pub timestamp_diff_us: u32,
    /// Advertised receive window, bytes.
    pub wnd_size: u32,
    pub seq_nr: u16,
    pub ack_nr: u16,
    pub sack: SackMask,
}

impl Header {
    /// Header plus extensions, in bytes.
    pub fn byte_len(&self) -> u32 {
        HEADER_LEN + self.sack.wire_len()
    }

    /// Writes the header and extension chain; returns the number of bytes.
    pub fn encode(&self, buf: &mut [u8; 32]) -> usize {
        buf[0] = ((self.kind as u8) << 4) | 1;
        buf[1] = if self.sack.len > 0 { 1 } else { 0 };
        buf[2..4].copy_from_slice(&self.connection_id.to_be_bytes());
        buf[4..8].copy_from_slice(&self.timestamp_us.to_be_bytes());
        buf[8..12].copy_from_slice(&self.timestamp_diff_us.to_be_bytes());
        buf[12..16].copy_from_slice(&self.wnd_size.to_be_bytes());
        buf[16..18].copy_from_slice(&self.seq_nr.to_be_bytes());
        buf[18..20].copy_from_slice(&self.ack_nr.to_be_bytes());
        let mut n = 20;
        if self.sack.len > 0 {
            buf[20] = 0; // no further extension
            buf[21] = self.sack.len;
            buf[22..22 + self.sack.len as usize].copy_from_slice(&self.sack.bytes[..self.sack.len as usize]);
            n += 2 + self.sack.len as usize;
        }
        n
    }

    /// Parses a header; `None` for a wrong version, an unknown type or a
    /// truncated extension chain. Unknown extensions are skipped.
    pub fn decode(buf: &[u8]) -> Option<Header> {
        if buf.len() < 20 || buf[0] & 0x0f != 1 {
            return None;
        }
        let be16 = |i: usize| u16::from_be_bytes([buf[i], buf[i + 1]]);
        let be32 = |i: usize| u32::from_be_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
        let mut h = Header {
            kind: PacketType::from_u8(buf[0] >> 4)?,
            connection_id: be16(2),
            timestamp_us: be32(4),
            timestamp_diff_us: be32(8),
            wnd_size: be32(12),
            seq_nr: be16(16),
            ack_nr: be16(18),
            sack: SackMask::default(),
        };
        let (mut ext, mut i) = (buf[1], 20);
        while ext != 0 {
            let next = *buf.get(i)?;
            let len = *buf.get(i + 1)? as usize;
            let body = buf.get(i + 2..i + 2 + len)?;
            if ext == 1 {
                if !len.is_multiple_of(4) || len == 0 || len > 8 {
                    return None;
                }
                // A later SACK extension replaces an earlier one entirely,
                // so no bytes of a longer earlier mask are left behind.
                h.sack = SackMask { len: len as u8, ..SackMask::default() };
                h.sack.bytes[..len].copy_from_slice(body);
            }
            ext = next;
            i += 2 + len;
        }
        Some(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            kind: PacketType::Data,
            connection_id: 0xBEEF,
            timestamp_us: 0xDEAD_BEEF,
            timestamp_diff_us: 25_000,
            wnd_size: 1 << 20,
            seq_nr: 65535,
            ack_nr: 7,
            sack: SackMask::default(),
        }
    }

    #[test]
    fn the_header_is_20_bytes_with_type_and_version_in_the_first_byte() {
        let mut buf = [0u8; 32];
        assert_eq!(header().encode(&mut buf), 20);
        assert_eq!(buf[0], 0x01, "ST_DATA (0) << 4 | version 1");
        assert_eq!(&buf[2..4], &[0xBE, 0xEF]);
        assert_eq!(&buf[16..20], &[0xFF, 0xFF, 0x00, 0x07]);
        assert_eq!(Header::decode(&buf[..20]), Some(header()));
    }

    #[test]
    fn a_selective_ack_extension_round_trips_with_its_bit_order() {
        let mut h = Header { kind: PacketType::State, ..header() };
        assert!(h.sack.set(0)); // ack_nr + 2
        assert!(h.sack.set(9)); // ack_nr + 11
        assert_eq!(h.sack.bytes[..4], [0b0000_0001, 0b0000_0010, 0, 0]);
        assert_eq!(h.byte_len(), 26);
        let mut buf = [0u8; 32];
        let n = h.encode(&mut buf);
        assert_eq!((n, buf[0], buf[1], buf[21]), (26, 0x21, 1, 4));
        let d = Header::decode(&buf[..n]).unwrap();
        assert!(d.sack.get(0) && d.sack.get(9) && !d.sack.get(1));
        assert!(h.sack.set(40));
        assert_eq!(h.sack.wire_len(), 10);
    }

    #[test]
    fn decoding_rejects_other_versions_types_and_truncated_extensions() {
        let mut buf = [0u8; 32];
        let n = Header { kind: PacketType::Syn, ..header() }.encode(&mut buf);
        assert_eq!(Header::decode(&buf[..n]).unwrap().kind, PacketType::Syn);
        let mut v2 = buf;
        v2[0] = 0x42;
        assert!(Header::decode(&v2[..20]).is_none());
        let mut bad_type = buf;
        bad_type[0] = 0x71;
        assert!(Header::decode(&bad_type[..20]).is_none());
        let mut ext = buf;
        ext[1] = 1; // claims a SACK extension that is not there
        assert!(Header::decode(&ext[..20]).is_none());
    }

    #[test]
    fn a_second_selective_ack_extension_replaces_the_first_entirely() {
        // Found by the utp_header fuzz target (fuzz/): an 8-byte mask followed
        // by a 4-byte one kept the first's upper bytes, so the decoded header
        // did not survive encode -> decode.
        let mut fixed = [0u8; 32];
        Header { kind: PacketType::State, ..header() }.encode(&mut fixed);
        let mut buf = [0u8; 36];
        buf[..20].copy_from_slice(&fixed[..20]);
        buf[1] = 1;
        buf[20..30].copy_from_slice(&[1, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        buf[30..36].copy_from_slice(&[0, 4, 0b101, 0, 0, 0]);
        let h = Header::decode(&buf).unwrap();
        assert_eq!(h.sack, SackMask { bytes: [0b101, 0, 0, 0, 0, 0, 0, 0], len: 4 });
        let mut again = [0u8; 32];
        let n = h.encode(&mut again);
        assert_eq!(Header::decode(&again[..n]), Some(h));
    }
}
