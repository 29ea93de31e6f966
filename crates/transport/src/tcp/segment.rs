//! TCP segments: what travels between a sender and a receiver, and its real
//! header layout (RFC 9293 §3.1, timestamps option RFC 7323 §3).

use torrentlab_engine::{Duration, Time};
use torrentlab_net::wire::{IPV4_HEADER, TCP_HEADER, TCP_TIMESTAMPS_OPTION};

use super::sack::SackBlocks;

/// TCP control bits (the low byte of the flags field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags(pub u8);

impl Flags {
    pub const FIN: Flags = Flags(0x01);
    pub const SYN: Flags = Flags(0x02);
    pub const RST: Flags = Flags(0x04);
    pub const PSH: Flags = Flags(0x08);
    pub const ACK: Flags = Flags(0x10);

    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, o: Flags) -> Flags {
        Flags(self.0 | o.0)
    }
}

/// RFC 7323 timestamps. The simulator carries exact sender clock readings
/// (nanoseconds); on the wire they are 32-bit microsecond ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timestamps {
    /// TSval: the sender's clock when the segment left.
    pub val: Time,
    /// TSecr: the TSval being echoed (TS.Recent), if any.
    pub ecr: Option<Time>,
    /// Not on the wire (the option keeps its 10 bytes): the one-way delay
    /// of the latest data segment this ACK answers, as its receiver read it
    /// on arrival (its clock minus the segment's TSval), sent on the first
    /// ACK after that arrival only. It stands for the echo of ns-2's TCP
    /// sink, which returned the timestamp of the segment that caused the
    /// ACK, and is what uTP's `timestamp_difference` is. TSval − TSecr is no
    /// such sample: RFC 7323 §4.3 echoes the last in-order segment, so
    /// during loss recovery it would add the recovery's time to the delay.
    pub delay: Option<Duration>,
}

/// One TCP segment. `seq` and `ack` are 64-bit byte offsets in the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub seq: u64,
    pub ack: u64,
    /// Payload length in bytes (no payload is stored).
    pub len: u32,
    pub flags: Flags,
    /// Advertised receive window in bytes.
    pub window: u64,
    pub timestamps: Option<Timestamps>,
    /// SACK blocks (RFC 2018), on ACKs only.
    pub sack: SackBlocks,
}

impl Segment {
    /// TCP header length in bytes, options included. A SYN carries Linux's
    /// options instead: MSS (4), SACK-permitted (2), timestamps (10, if on) and
    /// window scale (3), padded to a multiple of 4 (20 bytes with timestamps).
    #[inline]
    pub fn header_len(&self) -> u32 {
        if self.flags.contains(Flags::SYN) {
            let opts: u32 = 4 + 2 + if self.timestamps.is_some() { 10 } else { 0 } + 3;
            return TCP_HEADER + opts.div_ceil(4) * 4;
        }
        TCP_HEADER + if self.timestamps.is_some() { TCP_TIMESTAMPS_OPTION } else { 0 } + self.sack.option_len()
    }

    /// Bytes of the IP packet carrying this segment: IPv4 + TCP header + payload.
    #[inline]
    pub fn wire_len(&self) -> u32 {
        IPV4_HEADER + self.header_len() + self.len
    }

    /// Writes the real TCP header (ports, 32-bit seq/ack, data offset, flags,
    /// window, zero checksum, timestamps and SACK options) into `buf`; returns
    /// its length. On a SYN the space of the other handshake options (MSS,
    /// SACK-permitted, window scale) is written as NOPs.
    /// The window is written unscaled, saturated at 65535.
    pub fn encode(&self, src_port: u16, dst_port: u16, buf: &mut [u8; 60]) -> usize {
        let hlen = self.header_len() as usize;
        buf[..hlen].fill(0);
        if self.flags.contains(Flags::SYN) {
            buf[20..hlen].fill(1); // NOPs where the handshake options go
        }
        buf[0..2].copy_from_slice(&src_port.to_be_bytes());
        buf[2..4].copy_from_slice(&dst_port.to_be_bytes());
        buf[4..8].copy_from_slice(&(self.seq as u32).to_be_bytes());
        buf[8..12].copy_from_slice(&(self.ack as u32).to_be_bytes());
        buf[12] = ((hlen / 4) as u8) << 4;
        buf[13] = self.flags.0;
        buf[14..16].copy_from_slice(&(self.window.min(65535) as u16).to_be_bytes());
        if let Some(ts) = self.timestamps {
            buf[20] = 1; // NOP
            buf[21] = 1; // NOP
            buf[22] = 8; // kind: timestamps
            buf[23] = 10; // length
            buf[24..28].copy_from_slice(&micros32(ts.val).to_be_bytes());
            buf[28..32].copy_from_slice(&ts.ecr.map_or(0, micros32).to_be_bytes());
        }
        if !self.sack.is_empty() {
            let mut i = 20 + if self.timestamps.is_some() { 12 } else { 0 };
            buf[i] = 1; // NOP
            buf[i + 1] = 1; // NOP
            buf[i + 2] = 5; // kind: SACK
            buf[i + 3] = (2 + 8 * self.sack.len()) as u8;
            i += 4;
            for (l, r) in self.sack.ranges(self.ack) {
                buf[i..i + 4].copy_from_slice(&(l as u32).to_be_bytes());
                buf[i + 4..i + 8].copy_from_slice(&(r as u32).to_be_bytes());
                i += 8;
            }
        }
        hlen
    }
}

fn micros32(t: Time) -> u32 {
    (t.as_nanos() / 1_000) as u32
}

/// The fields of a TCP header as read back from the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodedHeader {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub header_len: usize,
    pub flags: Flags,
    pub window: u16,
    /// (TSval, TSecr) in microsecond ticks.
    pub timestamps: Option<(u32, u32)>,
    /// SACK blocks as 32-bit (left, right) edges, up to four.
    pub sack: [(u32, u32); 4],
    pub sack_blocks: usize,
}

/// Parses a TCP header; `None` if it is truncated or malformed.
pub fn decode(buf: &[u8]) -> Option<DecodedHeader> {
    if buf.len() < 20 {
        return None;
    }
    let be16 = |i: usize| u16::from_be_bytes([buf[i], buf[i + 1]]);
    let be32 = |i: usize| u32::from_be_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
    let header_len = (buf[12] >> 4) as usize * 4;
    if header_len < 20 || buf.len() < header_len {
        return None;
    }
    let mut timestamps = None;
    let (mut sack, mut sack_blocks) = ([(0u32, 0u32); 4], 0);
    let mut i = 20;
    while i < header_len {
        match buf[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let len = *buf.get(i + 1)? as usize;
                if len < 2 || i + len > header_len {
                    return None;
                }
                if kind == 8 && len == 10 {
                    timestamps = Some((be32(i + 2), be32(i + 6)));
                }
                if kind == 5 {
                    if !(len - 2).is_multiple_of(8) || len > 34 {
                        return None;
                    }
                    sack_blocks = (len - 2) / 8;
                    for (k, b) in sack.iter_mut().enumerate().take(sack_blocks) {
                        *b = (be32(i + 2 + 8 * k), be32(i + 6 + 8 * k));
                    }
                }
                i += len;
            }
        }
    }
    Some(DecodedHeader {
        src_port: be16(0),
        dst_port: be16(2),
        seq: be32(4),
        ack: be32(8),
        header_len,
        flags: Flags(buf[13]),
        window: be16(14),
        timestamps,
        sack,
        sack_blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(len: u32, ts: bool) -> Segment {
        Segment {
            seq: (1u64 << 32) + 1000,
            ack: 7,
            len,
            flags: Flags::ACK,
            window: 1 << 20,
            timestamps: ts.then_some(Timestamps { val: Time(5_000_000), ecr: Some(Time(2_000)), delay: None }),
            sack: SackBlocks::NONE,
        }
    }

    #[test]
    fn a_full_segment_with_timestamps_makes_a_1500_byte_ip_packet() {
        assert_eq!(data(1448, true).wire_len(), 1500);
        assert_eq!(data(0, true).wire_len(), 52);
        assert_eq!(data(1460, false).wire_len(), 1500);
    }

    #[test]
    fn encoding_writes_a_header_that_decodes_back_to_the_same_fields() {
        let mut buf = [0u8; 60];
        let n = data(1448, true).encode(6881, 51413, &mut buf);
        assert_eq!(n, 32);
        let h = decode(&buf[..n]).unwrap();
        assert_eq!((h.src_port, h.dst_port), (6881, 51413));
        assert_eq!(h.seq, 1000, "the 64-bit offset wraps to 32 bits on the wire");
        assert_eq!(h.ack, 7);
        assert_eq!(h.header_len, 32);
        assert_eq!(h.flags, Flags::ACK);
        assert_eq!(h.window, 65535);
        assert_eq!(h.timestamps, Some((5_000, 2)));
    }

    #[test]
    fn an_ack_with_sack_blocks_carries_them_in_real_option_bytes() {
        let mut ack = data(0, true);
        ack.ack = 10_000;
        ack.sack = SackBlocks::new(10_000, [(20_000, 30_000), (40_000, 41_448)]);
        assert_eq!(ack.header_len(), 20 + 12 + 4 + 16);
        assert_eq!(ack.wire_len(), 72);
        let mut buf = [0u8; 60];
        let n = ack.encode(1, 2, &mut buf);
        let h = decode(&buf[..n]).unwrap();
        assert_eq!(h.sack_blocks, 2);
        assert_eq!(h.sack[..2], [(20_000, 30_000), (40_000, 41_448)]);
        assert_eq!(h.timestamps, Some((5_000, 2)));
    }

    #[test]
    fn decoding_rejects_truncated_headers_and_bad_option_lengths() {
        let mut buf = [0u8; 60];
        let n = data(0, true).encode(1, 2, &mut buf);
        assert!(decode(&buf[..19]).is_none());
        assert!(decode(&buf[..n - 1]).is_none());
        buf[23] = 40; // timestamps option claiming 40 bytes
        assert!(decode(&buf[..n]).is_none());
    }
}
