use super::*;
use torrentlab_bittorrent::wire::{self, Message};
use torrentlab_transport::tcp::{Flags, SackBlocks, Segment, Timestamps};
use torrentlab_transport::utp::{Header, SackMask, UtpPacket};

fn ids() -> Ids {
    Ids { info_hash: [7; 20], peer_id: *b"M4-0-2--000000000000" }
}

/// A connection from host 0 to host 1 whose dialler wrote a handshake and
/// a piece message.
fn conn() -> Conn {
    let mut c = Conn::new(3, [0, 1]);
    c.streams[0].push(0, &Frame::Handshake { fast: false });
    c.streams[0].push(68, &Frame::Msg(Message::Piece { piece: 1, begin: 0, length: 16_384 }));
    c.ends[0].shift = 7;
    c
}

/// The RFC 9293 pseudo-header of `packet`'s transport segment.
fn pseudo_sum_ok(packet: &[u8], proto: u8) -> bool {
    let mut p = [0u8; 12];
    p[..8].copy_from_slice(&packet[12..20]);
    p[9] = proto;
    p[10..12].copy_from_slice(&((packet.len() - IPV4_LEN) as u16).to_be_bytes());
    headers::checksum(&[&p, &packet[IPV4_LEN..]]) == 0
}

#[test]
fn a_rebuilt_tcp_segment_is_as_long_as_the_model_says_with_every_checksum_right() {
    let c = conn();
    let seg = Segment {
        seq: 60,
        ack: 0,
        len: 1448,
        flags: Flags::ACK,
        window: 1 << 20,
        timestamps: Some(Timestamps { val: Time(1_000_000), ecr: Some(Time(900_000)), delay: None }),
        sack: SackBlocks::NONE,
    };
    let w = Wire::Tcp(seg);
    let mut out = Vec::new();
    let n = build(&mut out, &c, 0, &w, 60, &ids());
    assert_eq!(n as u32, w.wire_len());
    assert_eq!(n, 1500);
    assert_eq!(headers::checksum(&[&out[..20]]), 0, "IPv4 header checksum");
    assert_eq!((&out[12..16], &out[16..20]), (&[10, 0, 0, 1][..], &[10, 0, 0, 2][..]));
    assert!(pseudo_sum_ok(&out, PROTO_TCP), "TCP checksum");
    let payload = &out[52..];
    assert_eq!(&payload[..8], &b"M4-0-2--000000000000"[12..20], "the handshake's last 8 bytes come first");
    assert_eq!(payload[8..21], [0, 0, 0x40, 0x09, 7, 0, 0, 0, 1, 0, 0, 0, 0], "then the piece message's head");
    assert!(payload[21..].iter().all(|&b| b == 0), "then zero-filled block data");
}

#[test]
fn a_rebuilt_utp_packet_carries_its_bep_29_header_over_udp_port_6881() {
    let c = conn();
    let header = Header {
        kind: PacketType::Data,
        connection_id: 0x1234,
        timestamp_us: 99,
        timestamp_diff_us: 5,
        wnd_size: 1 << 20,
        seq_nr: 2,
        ack_nr: 17,
        sack: SackMask::default(),
    };
    let w = Wire::Utp(UtpPacket { header, payload: 100 });
    let mut out = Vec::new();
    let n = build(&mut out, &c, 0, &w, 0, &ids());
    assert_eq!(n as u32, w.wire_len());
    assert_eq!(out[9], PROTO_UDP);
    assert_eq!(out[20..26], [0x1a, 0xe1, 0x1a, 0xe1, 0, 8 + 20 + 100], "ports 6881, UDP length");
    assert!(pseudo_sum_ok(&out, PROTO_UDP), "UDP checksum");
    assert_eq!(Header::decode(&out[28..]), Some(header));
    assert_eq!(out[48..68], wire::handshake(&[7; 20], b"M4-0-2--000000000000", false)[..20]);
}

#[test]
fn a_resent_utp_data_packet_carries_the_bytes_of_its_first_sending() {
    let mut u = UtpOffsets::default();
    assert_eq!(u.sent(65_535, 100), 0);
    assert_eq!(u.sent(0, 50), 100, "sequence numbers wrap");
    assert_eq!(u.sent(1, 10), 150);
    assert_eq!(u.sent(65_535, 100), 0, "a resend");
    assert_eq!(u.sent(2, 10), 160, "the next new packet follows the last new one");
    assert_eq!(u.received(0), 100);
}

#[test]
fn isns_differ_between_the_sides_and_the_connections() {
    let (a, b) = (Conn::new(0, [0, 1]), Conn::new(1, [0, 1]));
    let isns = [a.ends[0].isn, a.ends[1].isn, b.ends[0].isn, b.ends[1].isn];
    for i in 0..4 {
        for j in i + 1..4 {
            assert_ne!(isns[i], isns[j]);
        }
    }
    assert_eq!(a.ends[0].peer_isn, a.ends[1].isn);
    assert_eq!((a.ends[0].src_port, a.ends[0].dst_port, b.ends[1].src_port), (49152, BT_PORT, BT_PORT));
}

#[test]
fn peer_ids_follow_each_clients_style() {
    assert_eq!(&peer_id(ClientName::Mainline, 7), b"M4-0-2--000000000007");
    assert_eq!(&peer_id(ClientName::Libtorrent, 12_345)[..8], b"-LT1200-");
}
