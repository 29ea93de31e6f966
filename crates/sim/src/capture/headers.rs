//! Real header bytes for a captured packet, built from the fields the model
//! carries: IPv4 (RFC 791) with its header checksum, TCP (RFC 9293) with the
//! options the model counts in its sizes, UDP (RFC 768), and the uTP header
//! (BEP 29, from `torrentlab_transport::utp::Header::encode`). Checksums are
//! the Internet checksum (RFC 1071) over the RFC 9293 §3.1 / RFC 768
//! pseudo-header.
//!
//! Every size here equals the model's: [`tcp`] writes exactly
//! [`Segment::header_len`] bytes, so a captured packet is as long as the
//! model's `wire_len` (the tests hold the two together).

use torrentlab_net::wire::{IPV4_HEADER, UDP_HEADER};
use torrentlab_transport::tcp::{Flags, Segment};

/// IP protocol numbers (IANA).
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

/// Bytes of the IPv4 header (no options), as the model counts it.
pub const IPV4_LEN: usize = IPV4_HEADER as usize;
/// Bytes of the UDP header.
pub const UDP_LEN: usize = UDP_HEADER as usize;

/// Host `host`'s IPv4 address: 10.0.0.0 + host + 1 (host 0 is 10.0.0.1;
/// 2^24 - 2 hosts fit, far more than a scenario may hold).
pub fn address(host: u32) -> [u8; 4] {
    let a = 0x0a00_0000u32 + (host & 0x00ff_ffff) + 1;
    a.to_be_bytes()
}

/// The ones' complement sum of `data` as 16-bit big-endian words, added to
/// `acc` (RFC 1071 §4.1); an odd last byte is padded with a zero. Only the
/// last piece of a checksummed run may have an odd length.
fn ones_sum(data: &[u8], mut acc: u64) -> u64 {
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        acc += u16::from_be_bytes([w[0], w[1]]) as u64;
    }
    if let [last] = words.remainder() {
        acc += (*last as u64) << 8;
    }
    acc
}

/// The Internet checksum (RFC 1071) of the concatenation of `parts` (all but
/// the last of even length).
pub fn checksum(parts: &[&[u8]]) -> u16 {
    debug_assert!(parts.iter().rev().skip(1).all(|p| p.len() % 2 == 0), "only the last part may be odd");
    let mut acc = parts.iter().fold(0u64, |acc, p| ones_sum(p, acc));
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// Writes an IPv4 header (RFC 791) into `out[..20]`: version 4, IHL 5, no
/// TOS, `total_len` bytes in all, identification 0 with Don't Fragment set
/// (an atomic datagram, RFC 6864 §4.1), TTL 64, `proto`, and the header
/// checksum.
pub fn ipv4(out: &mut [u8], total_len: u16, proto: u8, src: [u8; 4], dst: [u8; 4]) {
    let h = &mut out[..IPV4_LEN];
    h[0] = 0x45;
    h[1] = 0;
    h[2..4].copy_from_slice(&total_len.to_be_bytes());
    h[4..6].copy_from_slice(&[0, 0]);
    h[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // DF, offset 0
    h[8] = 64;
    h[9] = proto;
    h[10..12].copy_from_slice(&[0, 0]);
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&dst);
    let c = checksum(&[h]);
    h[10..12].copy_from_slice(&c.to_be_bytes());
}

/// The RFC 9293 §3.1 / RFC 768 pseudo-header: source, destination, zero,
/// protocol, and the length of the TCP segment or UDP datagram.
fn pseudo(src: [u8; 4], dst: [u8; 4], proto: u8, len: u16) -> [u8; 12] {
    let mut p = [0u8; 12];
    p[0..4].copy_from_slice(&src);
    p[4..8].copy_from_slice(&dst);
    p[9] = proto;
    p[10..12].copy_from_slice(&len.to_be_bytes());
    p
}

/// Writes the transport checksum of `segment` (a TCP segment or UDP
/// datagram, header and payload, its checksum field zero) at `at` within it.
/// UDP sends an all-zero result as all ones (RFC 768).
pub fn transport_checksum(segment: &mut [u8], at: usize, proto: u8, src: [u8; 4], dst: [u8; 4]) {
    let p = pseudo(src, dst, proto, segment.len() as u16);
    let mut c = checksum(&[&p, segment]);
    if proto == PROTO_UDP && c == 0 {
        c = 0xffff;
    }
    segment[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

/// Writes a UDP header (RFC 768) into `out[..8]` for a datagram of `len`
/// bytes (header included), its checksum zero (see [`transport_checksum`]).
pub fn udp(out: &mut [u8], src_port: u16, dst_port: u16, len: u16) {
    out[0..2].copy_from_slice(&src_port.to_be_bytes());
    out[2..4].copy_from_slice(&dst_port.to_be_bytes());
    out[4..6].copy_from_slice(&len.to_be_bytes());
    out[6..8].copy_from_slice(&[0, 0]);
}

/// What a TCP header needs beyond the segment: the sending end's ports and
/// initial sequence number, the receiving end's (whose stream `ack` and the
/// SACK blocks count), the sender's window-scale shift and the MSS it
/// advertises on its SYN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpEnds {
    pub src_port: u16,
    pub dst_port: u16,
    /// The sender's initial sequence number: its SYN's; its first data byte
    /// is `isn + 1` (the model's stream offset 0).
    pub isn: u32,
    /// The receiver's initial sequence number.
    pub peer_isn: u32,
    /// The sender's window scale (RFC 7323 §2.2): the shift it announces on
    /// its SYN and applies to every later window.
    pub shift: u8,
    /// The MSS option of the sender's SYN (bytes).
    pub mss: u16,
}

/// The window-scale shift an end announces for a receive window of
/// `window` bytes: the smallest that fits it in 16 bits, at most 14
/// (RFC 7323 §2.3).
pub fn window_shift(window: u64) -> u8 {
    let mut s = 0u8;
    while s < 14 && window >> s > 0xffff {
        s += 1;
    }
    s
}

/// A model stream offset (64-bit, from 0) as a 32-bit sequence number on the
/// wire, after the SYN's (RFC 9293 §3.4).
fn wire_seq(isn: u32, offset: u64) -> u32 {
    isn.wrapping_add(1).wrapping_add(offset as u32)
}

/// RFC 7323 timestamps are 32-bit ticks; the model's clock readings are ns:
/// 1 tick = 1 µs, as the model's own encoder writes them.
fn ts_ticks(t: torrentlab_engine::Time) -> u32 {
    (t.as_nanos() / 1_000) as u32
}

/// Writes the TCP header of `seg` (RFC 9293 §3.1) into `out`, checksum zero;
/// returns its length, which is `seg.header_len()`.
///
/// Options, in Linux's order and padding: a SYN carries MSS, SACK-permitted,
/// timestamps (if on; RFC 7323 §3) and window scale (RFC 7323 §2), padded to
/// a 4-byte boundary with NOPs (20 bytes with timestamps, 12 without); any
/// other segment NOP, NOP, timestamps (12 bytes) and NOP, NOP, SACK (RFC
/// 2018 §3: 4 + 8 bytes a block). The window is the model's in bytes,
/// shifted by the sender's scale (a SYN's unscaled), saturated at 65535.
/// `ack` and the SACK edges count the receiver's stream after its SYN; the
/// ACK field is zero without the ACK flag (a RST).
pub fn tcp(seg: &Segment, ends: &TcpEnds, out: &mut [u8; 60]) -> usize {
    let syn = seg.flags.contains(Flags::SYN);
    let seq = if syn { ends.isn } else { wire_seq(ends.isn, seg.seq) };
    let ack = if seg.flags.contains(Flags::ACK) { wire_seq(ends.peer_isn, seg.ack) } else { 0 };
    let window = if syn { seg.window } else { seg.window >> ends.shift };
    out[0..2].copy_from_slice(&ends.src_port.to_be_bytes());
    out[2..4].copy_from_slice(&ends.dst_port.to_be_bytes());
    out[4..8].copy_from_slice(&seq.to_be_bytes());
    out[8..12].copy_from_slice(&ack.to_be_bytes());
    out[13] = seg.flags.0;
    out[14..16].copy_from_slice(&(window.min(0xffff) as u16).to_be_bytes());
    out[16..20].fill(0); // checksum (later), urgent pointer
    let mut i = 20;
    let mut put = |bytes: &[u8]| {
        out[i..i + bytes.len()].copy_from_slice(bytes);
        i += bytes.len();
    };
    let ts = seg.timestamps.map(|t| {
        let mut b = [0u8; 10];
        b[0] = 8; // kind: timestamps
        b[1] = 10;
        b[2..6].copy_from_slice(&ts_ticks(t.val).to_be_bytes());
        b[6..10].copy_from_slice(&t.ecr.map_or(0, ts_ticks).to_be_bytes());
        b
    });
    if syn {
        let m = ends.mss.to_be_bytes();
        put(&[2, 4, m[0], m[1]]); // MSS
        match ts {
            Some(ts) => {
                put(&[4, 2]); // SACK-permitted
                put(&ts);
            }
            None => put(&[1, 1, 4, 2]), // NOP, NOP, SACK-permitted
        }
        put(&[1, 3, 3, ends.shift]); // NOP, window scale
    } else {
        if let Some(ts) = ts {
            put(&[1, 1]);
            put(&ts);
        }
        if !seg.sack.is_empty() {
            put(&[1, 1, 5, (2 + 8 * seg.sack.len()) as u8]);
            for (l, r) in seg.sack.ranges(seg.ack) {
                put(&wire_seq(ends.peer_isn, l).to_be_bytes());
                put(&wire_seq(ends.peer_isn, r).to_be_bytes());
            }
        }
    }
    debug_assert_eq!(i as u32, seg.header_len(), "the model's header size");
    out[12] = ((i / 4) as u8) << 4;
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use torrentlab_engine::Time;
    use torrentlab_transport::tcp::{decode, SackBlocks, Timestamps};

    fn ends() -> TcpEnds {
        TcpEnds { src_port: 49153, dst_port: 6881, isn: 0xffff_fff0, peer_isn: 1000, shift: 7, mss: 1460 }
    }

    fn data(len: u32) -> Segment {
        Segment {
            seq: 100,
            ack: 68,
            len,
            flags: Flags::ACK | Flags::PSH,
            window: 3 << 20,
            timestamps: Some(Timestamps { val: Time(5_000_000), ecr: Some(Time(2_000)), delay: None }),
            sack: SackBlocks::NONE,
        }
    }

    #[test]
    fn the_checksum_of_rfc_1071s_example_is_the_complement_of_its_sum() {
        // RFC 1071 §3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
        assert_eq!(checksum(&[&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]]), !0xddf2);
        assert_eq!(checksum(&[&[0x00, 0x01], &[0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]]), !0xddf2, "split evenly");
        assert_eq!(checksum(&[&[0xab]]), !0xab00, "an odd byte is padded with a zero");
    }

    #[test]
    fn an_ipv4_header_is_byte_exact_and_sums_to_zero_with_its_checksum() {
        let mut h = [0u8; 20];
        ipv4(&mut h, 1500, PROTO_TCP, address(0), address(257));
        assert_eq!(
            h,
            [
                0x45, 0, 0x05, 0xdc, 0, 0, 0x40, 0, 64, 6, 0x20, 0x1a, 10, 0, 0, 1, 10, 0, 1, 2 //
            ]
        );
        assert_eq!(checksum(&[&h]), 0, "a header with a right checksum sums to ones");
    }

    #[test]
    fn host_addresses_are_ten_dot_and_distinct() {
        assert_eq!(address(0), [10, 0, 0, 1]);
        assert_eq!(address(254), [10, 0, 0, 255]);
        assert_eq!(address(19_999), [10, 0, 78, 32]);
    }

    #[test]
    fn a_data_segment_header_is_byte_exact() {
        let mut b = [0u8; 60];
        let n = tcp(&data(1448), &ends(), &mut b);
        assert_eq!(n, 32);
        assert_eq!(
            b[..32],
            [
                0xc0, 0x01, 0x1a, 0xe1, // ports 49153, 6881
                0x00, 0x00, 0x00, 0x55, // seq: isn + 1 + 100 wraps to 0x55
                0x00, 0x00, 0x04, 0x2d, // ack: 1000 + 1 + 68
                0x80, 0x18, // data offset 8 words; ACK | PSH
                0x60, 0x00, // window: 3 MiB >> 7 = 24576
                0, 0, 0, 0, // checksum, urgent pointer
                1, 1, 8, 10, 0, 0, 0x13, 0x88, 0, 0, 0, 2, // NOP NOP TSval 5000 µs TSecr 2 µs
            ]
        );
        let d = decode(&b[..n]).unwrap();
        assert_eq!((d.seq, d.ack, d.window, d.timestamps), (0x55, 1069, 24576, Some((5000, 2))));
    }

    #[test]
    fn a_syn_carries_mss_sack_permitted_timestamps_and_window_scale_in_the_models_20_bytes() {
        let syn = Segment { seq: 0, ack: 0, len: 0, flags: Flags::SYN, ..data(0) };
        let mut b = [0u8; 60];
        let n = tcp(&syn, &ends(), &mut b);
        assert_eq!(n as u32, syn.header_len());
        assert_eq!(b[4..8], 0xffff_fff0u32.to_be_bytes(), "a SYN's sequence number is the ISN");
        assert_eq!(b[8..12], [0, 0, 0, 0], "no ACK flag, no acknowledgement");
        assert_eq!(b[14..16], [0xff, 0xff], "a SYN's window is not scaled");
        assert_eq!(b[20..24], [2, 4, 0x05, 0xb4], "MSS 1460");
        assert_eq!(b[24..26], [4, 2], "SACK permitted");
        assert_eq!(b[26..28], [8, 10], "timestamps");
        assert_eq!(b[36..40], [1, 3, 3, 7], "NOP, window scale 7");
        let bare = Segment { timestamps: None, ..syn };
        let n = tcp(&bare, &ends(), &mut b);
        assert_eq!((n, &b[20..32]), (32, &[2, 4, 0x05, 0xb4, 1, 1, 4, 2, 1, 3, 3, 7][..]));
        assert_eq!(n as u32, bare.header_len());
    }

    #[test]
    fn sack_blocks_count_the_receivers_stream_after_its_syn() {
        let mut ack = data(0);
        ack.ack = 10_000;
        ack.sack = SackBlocks::new(10_000, [(20_000, 30_000), (40_000, 41_448)]);
        let mut b = [0u8; 60];
        let n = tcp(&ack, &ends(), &mut b);
        assert_eq!(n as u32, ack.header_len());
        let d = decode(&b[..n]).unwrap();
        assert_eq!(d.sack_blocks, 2);
        assert_eq!(d.sack[..2], [(21_001, 31_001), (41_001, 42_449)]);
        assert_eq!(d.ack, 11_001);
    }

    #[test]
    fn a_rst_without_ack_has_a_zero_acknowledgement_and_no_options() {
        let rst = Segment { flags: Flags::RST, timestamps: None, ..data(0) };
        let mut b = [0u8; 60];
        assert_eq!(tcp(&rst, &ends(), &mut b), 20);
        assert_eq!((&b[8..12], b[12], b[13]), (&[0u8, 0, 0, 0][..], 0x50, 0x04));
    }

    #[test]
    fn a_transport_checksum_makes_the_pseudo_header_and_segment_sum_to_ones() {
        let (src, dst) = (address(3), address(4));
        let mut seg = vec![0u8; 32 + 5];
        let mut h = [0u8; 60];
        let n = tcp(&data(5), &ends(), &mut h);
        seg[..n].copy_from_slice(&h[..n]);
        seg[n..].copy_from_slice(b"hello");
        transport_checksum(&mut seg, 16, PROTO_TCP, src, dst);
        let p = pseudo(src, dst, PROTO_TCP, seg.len() as u16);
        assert_eq!(checksum(&[&p, &seg]), 0);
        let mut u = vec![0u8; 8 + 3];
        udp(&mut u, 6881, 6881, 11);
        u[8..].copy_from_slice(&[1, 2, 3]);
        transport_checksum(&mut u, 6, PROTO_UDP, src, dst);
        assert_eq!(checksum(&[&pseudo(src, dst, PROTO_UDP, 11), &u]), 0);
    }

    #[test]
    fn the_window_shift_is_the_smallest_that_fits_the_window_in_16_bits() {
        assert_eq!(window_shift(65_535), 0);
        assert_eq!(window_shift(65_536), 1);
        assert_eq!(window_shift(3 << 20), 6);
        assert_eq!(window_shift(u64::MAX), 14);
    }
}
