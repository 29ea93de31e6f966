//! Packets as they wait in the world's lanes: one cache line each, TCP
//! segments and uTP packets alike.
//!
//! A [`Segment`] is 96 bytes (64-bit sequence numbers, an optional pair of
//! timestamps, up to four SACK blocks), so a lane entry holding one with its
//! connection, hop and arrival time took 128 bytes: two or three cache lines
//! at 8-byte alignment. Every packet is written into a lane when sent and
//! read back when it arrives, a few hundred milliseconds later, after those
//! lines have left the cache. [`InFlight`] packs the same fields into 56
//! bytes; with its arrival time, in lanes aligned to cache lines
//! ([`torrentlab_engine::CacheLine`]), that is one line written and one read.
//! Only the SACK blocks do not fit: the ACKs that carry them (after a loss)
//! leave them in a side queue of the same lane, taken back in the same FIFO
//! order when the ACK leaves the lane ([`PacketLanes`] keeps the two in step).
//!
//! Nothing is lost in the packing: [`InFlight::wire`] gives back the
//! packet that was sent, except that an advertised window above
//! `u32::MAX` bytes is kept as `u32::MAX`, which is all that a sender keeps of
//! it and more than a TCP header can say (RFC 7323 §2.3: 1 GiB at most).
//! A uTP packet (BEP 29) fits whole: its 20-byte header and selective-ACK
//! mask take the fields a segment's sequence numbers and timestamps use.

use std::collections::VecDeque;

use torrentlab_engine::{CacheLine, Duration, Lanes, Time};
use torrentlab_net::LinkId;
use torrentlab_transport::datagram::{Datagram, Protocol};
use torrentlab_transport::stream::Wire;
use torrentlab_transport::tcp::{Flags, SackBlocks, Segment, Timestamps};
use torrentlab_transport::utp::{Header, PacketType, SackMask, UtpPacket};

/// A packet on its way: the segment, its connection and receiving side, its
/// size on the wire and where it goes next (a downlink, or the host).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct InFlight {
    /// A TCP segment's stream offset below [`OFFSET_BITS`], and above it the
    /// high half of [`Timestamps::delay`] in µs (see [`InFlight::seq`]).
    seq: u64,
    /// The acknowledged offset, and above [`OFFSET_BITS`] the delay's low half.
    ack: u64,
    ts_val: u64,
    ts_ecr: u64,
    pub conn: u32,
    /// Payload bytes (none are stored).
    pub len: u32,
    /// Advertised receive window, bytes (saturated at `u32::MAX`).
    window: u32,
    /// Bytes of the IP packet.
    pub wire: u32,
    /// The downlink the packet crosses next, or [`InFlight::HOST`].
    hop: u32,
    /// The side that receives it.
    pub to: u8,
    flags: u8,
    /// [`TS`], [`ECR`], [`DELAY`], [`SACK`], [`UTP`], [`DGRAM`].
    opts: u8,
}

/// The segment carries timestamps.
const TS: u8 = 1;
/// Its timestamps echo one (TSecr is set).
const ECR: u8 = 2;
/// Its SACK blocks wait in the lane's side queue.
const SACK: u8 = 4;
/// A uTP packet, not a TCP segment.
const UTP: u8 = 8;
/// A datagram (UDP or ICMP echo), not a TCP segment.
const DGRAM: u8 = 16;
/// Its timestamps carry a one-way delay (in the top bits of `seq` and `ack`).
const DELAY: u8 = 32;
/// TCP stream offsets stay below 2^48 bytes (256 TiB) in a lane entry; the
/// 16 bits above them in `seq` and in `ack` carry [`Timestamps::delay`] (µs,
/// as the receiver reads it), so the entry stays one cache line.
const OFFSET_BITS: u32 = 48;
const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;

/// Where a packet goes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hop {
    /// Into this downlink's queue.
    Link(LinkId),
    /// To the receiving host.
    Host,
}

impl InFlight {
    const HOST: u32 = u32::MAX;

    /// Packs `seg`, sent on side `1 - to` of connection `conn`; its SACK
    /// blocks go to [`PacketLanes::push`] beside it.
    #[inline]
    pub fn pack(hop: Hop, conn: u32, to: u8, wire: u32, seg: &Segment) -> InFlight {
        let (ts_val, ts_ecr, delay_us, ts) = match seg.timestamps {
            None => (0, 0, 0, 0),
            Some(Timestamps { val, ecr, delay }) => (
                val.0,
                ecr.map_or(0, |e| e.0),
                delay.map_or(0, |d| d.as_micros().min(u32::MAX as u64)),
                TS | if ecr.is_some() { ECR } else { 0 } | if delay.is_some() { DELAY } else { 0 },
            ),
        };
        debug_assert!(seg.seq <= OFFSET_MASK && seg.ack <= OFFSET_MASK, "stream offsets below 2^48");
        debug_assert!(seg.timestamps.and_then(|t| t.delay).is_none_or(|d| d.0 % 1000 == 0), "delays in whole µs");
        InFlight {
            seq: seg.seq | (delay_us >> 16) << OFFSET_BITS,
            ack: seg.ack | (delay_us & 0xffff) << OFFSET_BITS,
            ts_val,
            ts_ecr,
            conn,
            len: seg.len,
            window: seg.window.min(u32::MAX as u64) as u32,
            wire,
            hop: Self::hop_bits(hop),
            to,
            flags: seg.flags.0,
            opts: ts | if seg.sack.is_empty() { 0 } else { SACK },
        }
    }

    /// Packs `w`, a TCP segment (see [`InFlight::pack`]) or a uTP packet.
    #[inline]
    pub fn pack_wire(hop: Hop, conn: u32, to: u8, wire: u32, w: &Wire) -> InFlight {
        match w {
            Wire::Tcp(seg) => Self::pack(hop, conn, to, wire, seg),
            Wire::Utp(p) => {
                let h = &p.header;
                InFlight {
                    seq: h.seq_nr as u64
                        | (h.ack_nr as u64) << 16
                        | (h.connection_id as u64) << 32
                        | (h.kind as u64) << 48
                        | (h.sack.len as u64) << 56,
                    ack: u64::from_le_bytes(h.sack.bytes),
                    ts_val: h.timestamp_us as u64,
                    ts_ecr: h.timestamp_diff_us as u64,
                    len: p.payload,
                    window: h.wnd_size,
                    conn,
                    wire,
                    hop: Self::hop_bits(hop),
                    to,
                    flags: 0,
                    opts: UTP,
                }
            }
            Wire::Datagram(d) => InFlight {
                seq: d.seq as u64,
                ack: 0,
                ts_val: d.stamp,
                ts_ecr: 0,
                conn,
                len: d.payload,
                window: 0,
                wire,
                hop: Self::hop_bits(hop),
                to,
                flags: match d.protocol {
                    Protocol::Udp => 0,
                    Protocol::EchoRequest => 1,
                    Protocol::EchoReply => 2,
                },
                opts: DGRAM,
            },
        }
    }

    /// The packet that was packed, with `sack`, the SACK blocks of a TCP
    /// segment from the side queue (or none).
    #[inline]
    pub fn wire(&self, sack: SackBlocks) -> Wire {
        if self.opts & (UTP | DGRAM) == 0 {
            return Wire::Tcp(self.segment(sack));
        }
        if self.opts & DGRAM != 0 {
            let protocol = match self.flags {
                0 => Protocol::Udp,
                1 => Protocol::EchoRequest,
                _ => Protocol::EchoReply,
            };
            return Wire::Datagram(Datagram { protocol, seq: self.seq as u32, stamp: self.ts_val, payload: self.len });
        }
        let header = Header {
            kind: PacketType::from_u8((self.seq >> 48) as u8).expect("packed from a packet type"),
            connection_id: (self.seq >> 32) as u16,
            timestamp_us: self.ts_val as u32,
            timestamp_diff_us: self.ts_ecr as u32,
            wnd_size: self.window,
            seq_nr: self.seq as u16,
            ack_nr: (self.seq >> 16) as u16,
            sack: SackMask { bytes: self.ack.to_le_bytes(), len: (self.seq >> 56) as u8 },
        };
        Wire::Utp(UtpPacket { header, payload: self.len })
    }

    #[inline]
    fn hop_bits(hop: Hop) -> u32 {
        match hop {
            Hop::Link(l) => {
                debug_assert_ne!(l.0, Self::HOST, "link ids stay below u32::MAX");
                l.0
            }
            Hop::Host => Self::HOST,
        }
    }

    pub fn hop(&self) -> Hop {
        if self.hop == Self::HOST {
            Hop::Host
        } else {
            Hop::Link(LinkId(self.hop))
        }
    }

    /// The same packet, going on to its host.
    pub fn to_host(mut self) -> InFlight {
        self.hop = Self::HOST;
        self
    }

    /// A TCP segment's sequence number (stream offset, bytes).
    #[inline]
    pub fn seq(&self) -> u64 {
        self.seq & OFFSET_MASK
    }

    /// Not a TCP segment (a uTP packet or a datagram).
    #[inline]
    pub fn not_tcp(&self) -> bool {
        self.opts & (UTP | DGRAM) != 0
    }

    #[inline]
    pub fn has_sack(&self) -> bool {
        self.opts & SACK != 0
    }

    /// The segment that was packed, with `sack` from the side queue (or none).
    #[inline]
    pub fn segment(&self, sack: SackBlocks) -> Segment {
        debug_assert_eq!(self.has_sack(), !sack.is_empty(), "side queue out of step");
        Segment {
            seq: self.seq(),
            ack: self.ack & OFFSET_MASK,
            len: self.len,
            flags: Flags(self.flags),
            window: self.window as u64,
            timestamps: (self.opts & TS != 0).then_some(Timestamps {
                val: Time(self.ts_val),
                ecr: (self.opts & ECR != 0).then_some(Time(self.ts_ecr)),
                delay: (self.opts & DELAY != 0)
                    .then(|| Duration::from_micros((self.seq >> OFFSET_BITS) << 16 | self.ack >> OFFSET_BITS)),
            }),
            sack,
        }
    }
}

/// FIFO lanes of packets on their way ([`Lanes`] of [`InFlight`], one cache
/// line each), with the SACK blocks of the packets that carry some in a side
/// queue per lane, in lane order. Its forwarders are `inline(always)`: with
/// plain `#[inline]` the event loop was inlined differently and ran 0.8 %
/// more instructions per event.
pub(crate) struct PacketLanes {
    lanes: Lanes<InFlight, CacheLine>,
    sacks: Vec<VecDeque<SackBlocks>>,
}

impl PacketLanes {
    pub fn new(count: usize) -> Self {
        PacketLanes { lanes: Lanes::new(count), sacks: (0..count).map(|_| VecDeque::new()).collect() }
    }

    /// Appends `x` to `lane` at `time`, and `sack`, the blocks it was packed
    /// without, when it has some. True when the lane was empty (see
    /// [`Lanes::push`]).
    #[inline(always)]
    pub fn push(&mut self, lane: usize, time: Time, x: InFlight, sack: &SackBlocks) -> bool {
        if x.has_sack() {
            self.sacks[lane].push_back(*sack);
        }
        self.lanes.push(lane, time, x)
    }

    /// The `i`-th packet waiting in `lane` (0: its head).
    #[inline(always)]
    pub fn get(&self, lane: usize, i: usize) -> Option<&InFlight> {
        self.lanes.get(lane, i)
    }

    /// Drops the head of `lane`, read with [`PacketLanes::get`] (its SACK
    /// blocks, if any, taken with [`PacketLanes::take_sack`]); returns the
    /// time of the new head.
    #[inline(always)]
    pub fn advance(&mut self, lane: usize) -> Option<Time> {
        self.lanes.advance(lane)
    }

    /// The SACK blocks of the packet with some that leaves `lane` now.
    pub fn take_sack(&mut self, lane: usize) -> SackBlocks {
        self.sacks[lane].pop_front().expect("a packet with SACK blocks has them queued")
    }

    /// Packets waiting in all lanes.
    pub fn len(&self) -> usize {
        self.lanes.len()
    }

    /// Every waiting packet, lane by lane.
    pub fn values(&self) -> impl Iterator<Item = &InFlight> {
        self.lanes.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg() -> Segment {
        Segment {
            seq: (1 << 40) + 7,
            ack: 99,
            len: 1448,
            flags: Flags::ACK | Flags::PSH,
            window: 3 << 20,
            timestamps: Some(Timestamps {
                val: Time(5_000_000_123),
                ecr: Some(Time(4_000_000_001)),
                delay: Some(Duration::from_micros(4_000_000_123)),
            }),
            sack: SackBlocks::NONE,
        }
    }

    #[test]
    fn a_lane_entry_with_its_arrival_time_fills_one_cache_line() {
        assert_eq!(std::mem::size_of::<(Time, InFlight)>(), 64);
    }

    #[test]
    fn packing_gives_back_the_segment_that_was_sent() {
        let cases = [
            seg(),
            Segment { timestamps: None, ..seg() },
            Segment {
                timestamps: Some(Timestamps { val: Time(3), ecr: None, delay: None }),
                flags: Flags::SYN,
                ..seg()
            },
            Segment { sack: SackBlocks::new(99, [(1000, 2448), (5000, 6448)]), len: 0, ..seg() },
        ];
        for s in cases {
            let x = InFlight::pack(Hop::Link(LinkId(17)), 42, 1, s.wire_len(), &s);
            assert_eq!((x.conn, x.to, x.wire, x.hop()), (42, 1, s.wire_len(), Hop::Link(LinkId(17))));
            assert_eq!(x.has_sack(), !s.sack.is_empty());
            assert_eq!(x.segment(s.sack), s);
            assert_eq!(x.to_host().hop(), Hop::Host);
        }
    }

    #[test]
    fn packing_gives_back_every_kind_of_utp_packet_that_was_sent() {
        let mut sack = SackMask::default();
        sack.set(0);
        sack.set(40);
        for (kind, payload, sack) in [
            (PacketType::Syn, 0, SackMask::default()),
            (PacketType::Data, 1382, SackMask::default()),
            (PacketType::State, 0, sack),
            (PacketType::Fin, 0, SackMask::default()),
            (PacketType::Reset, 0, SackMask::default()),
        ] {
            let header = Header {
                kind,
                connection_id: 0xbeef,
                timestamp_us: u32::MAX - 3,
                timestamp_diff_us: 123_456_789,
                wnd_size: 1 << 20,
                seq_nr: 65_535,
                ack_nr: 7,
                sack,
            };
            let w = Wire::Utp(UtpPacket { header, payload });
            let x = InFlight::pack_wire(Hop::Link(LinkId(3)), 9, 0, w.wire_len(), &w);
            assert!(!x.has_sack(), "uTP's mask travels in the entry itself");
            assert_eq!((x.conn, x.to, x.wire, x.len), (9, 0, w.wire_len(), payload));
            assert_eq!(x.wire(SackBlocks::NONE), w);
        }
    }

    #[test]
    fn packing_gives_back_every_kind_of_datagram_that_was_sent() {
        for protocol in [Protocol::Udp, Protocol::EchoRequest, Protocol::EchoReply] {
            let w = Wire::Datagram(Datagram { protocol, seq: u32::MAX, stamp: u64::MAX - 1, payload: 172 });
            let x = InFlight::pack_wire(Hop::Link(LinkId(5)), 2, 1, w.wire_len(), &w);
            assert!(!x.has_sack() && x.not_tcp());
            assert_eq!(x.wire(SackBlocks::NONE), w);
        }
    }

    #[test]
    fn a_tcp_segment_comes_back_as_a_tcp_wire() {
        let w = Wire::Tcp(seg());
        assert_eq!(InFlight::pack_wire(Hop::Host, 1, 1, 1500, &w).wire(SackBlocks::NONE), w);
    }

    #[test]
    fn a_window_beyond_32_bits_is_kept_as_the_largest_a_sender_reads() {
        let x = InFlight::pack(Hop::Host, 0, 0, 52, &Segment { window: u64::MAX, ..seg() });
        assert_eq!(x.segment(SackBlocks::NONE).window, u32::MAX as u64);
    }

    #[test]
    fn sack_blocks_come_back_with_their_own_packets_in_lane_order() {
        let mut q = PacketLanes::new(2);
        let a = Segment { sack: SackBlocks::new(99, [(1000, 2448)]), ..seg() };
        let b = Segment { sack: SackBlocks::new(99, [(3000, 4448)]), ..seg() };
        let packed: Vec<_> = [&a, &seg(), &b]
            .iter()
            .map(|s| {
                let x = InFlight::pack(Hop::Host, 1, 0, 100, s);
                q.push(1, Time(0), x, &s.sack);
                x
            })
            .collect();
        let back: Vec<_> =
            packed.iter().map(|x| x.segment(if x.has_sack() { q.take_sack(1) } else { SackBlocks::NONE })).collect();
        assert_eq!(back, vec![a, seg(), b]);
    }
}
