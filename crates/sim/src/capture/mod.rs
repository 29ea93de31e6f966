//! Packet captures (`[capture]` of a swarm scenario): for each selected
//! peer, a pcapng trace of every packet its access link carries, as real
//! bytes a dissector reads (Wireshark's `tcp`, `bt-utp` and `bittorrent`).
//!
//! The model's packets carry lengths and header fields, not bytes. A capture
//! rebuilds the bytes of each packet of a captured host when the host hands
//! it to its uplink (outbound: [`Capture::sent`], before the uplink may drop
//! it) and when it reaches the host past its downlink and ingress loss
//! (inbound: [`Capture::arrived`]), stamped with the simulated time in ns:
//!
//! - IPv4 (RFC 791) from host `h` at 10.0.0.0 + h + 1 ([`headers::address`]);
//! - TCP (RFC 9293) with the model's sequence numbers after a per-connection
//!   ISN, flags, window (scaled, RFC 7323) and options (MSS, SACK-permitted,
//!   window scale on the SYN; timestamps; SACK blocks), from port
//!   49152 + (connection mod 16384) of the dialler to port [`BT_PORT`];
//! - UDP (RFC 768) from and to port [`BT_PORT`] (one uTP socket per client,
//!   as libutp and libtorrent have) and the uTP header (BEP 29) as the model
//!   sent it;
//! - as payload, the BitTorrent stream bytes (BEP 3) the packet covers,
//!   rebuilt from the frames the client announced ([`stream::StreamLog`]):
//!   block data zero-filled, everything else as a real client sends it.
//!
//! A rebuilt packet is exactly as long as the model's `wire_len`. Nothing
//! here reads a random stream or changes the world: a run with captures
//! gives the same results as one without.

pub mod headers;
pub mod pcapng;
pub(crate) mod stream;

use std::collections::{BTreeMap, HashMap, VecDeque};

use torrentlab_bittorrent::client::Frame;
use torrentlab_engine::Time;
use torrentlab_transport::stream::{Endpoint, Wire};
use torrentlab_transport::tcp::{Flags, Segment};
use torrentlab_transport::utp::PacketType;

use crate::endpoint::Transport;
use crate::scenario::capture::CaptureSpec;
use crate::scenario::{ClientName, SwarmScenario};
use headers::{TcpEnds, IPV4_LEN, PROTO_TCP, PROTO_UDP, UDP_LEN};
use stream::{Complete, Ids, StreamLog};

/// The port every peer listens on for TCP and sends and receives uTP on
/// (BitTorrent's conventional first port; Wireshark's `bittorrent` dissector
/// claims TCP 6881-6889 by default).
pub const BT_PORT: u16 = 6881;
/// The first ephemeral port of a dialler (IANA's dynamic range).
const EPHEMERAL: u16 = 49152;

/// One file of a run's captures: its name in the result's `capture/`
/// directory and its bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct CaptureFile {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for CaptureFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CaptureFile({}, {} bytes)", self.name, self.bytes.len())
    }
}

/// What a captured host sent or received, as the model counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    /// Messages wholly carried (see [`Capture::finish`]).
    messages: Complete,
    /// uTP `ST_DATA` packets.
    utp_data: u64,
}

/// One captured host: its file and counters.
struct Host {
    host: u32,
    file: pcapng::Writer,
    packets: u64,
    sent: Counts,
    received: Counts,
}

/// Where a direction of a uTP connection put its data packets in its stream.
#[derive(Default)]
struct UtpOffsets {
    /// The `seq_nr` of the next new data packet (after the last one sent).
    next: Option<u16>,
    /// The stream offset of the next new data byte.
    offset: u64,
    /// Each data packet's stream offset, by `seq_nr` (wrapping: the latest
    /// packet of a number).
    at: HashMap<u16, u64>,
}

impl UtpOffsets {
    /// The stream offset of data packet `seq` of `len` bytes, sent now:
    /// the next new one, or a resend of one sent before.
    fn sent(&mut self, seq: u16, len: u32) -> u64 {
        if self.next.is_none_or(|n| n == seq) {
            let at = self.offset;
            self.at.insert(seq, at);
            self.offset += len as u64;
            self.next = Some(seq.wrapping_add(1));
            at
        } else {
            self.received(seq)
        }
    }

    /// The stream offset of data packet `seq`, sent before.
    fn received(&self, seq: u16) -> u64 {
        debug_assert!(self.at.contains_key(&seq), "a data packet is sent before it arrives");
        self.at.get(&seq).copied().unwrap_or(self.offset)
    }
}

/// A connection one of whose hosts is captured.
struct Conn {
    hosts: [u32; 2],
    /// Side `s`'s stream (what side `s` writes).
    streams: [StreamLog; 2],
    /// Side `s`'s TCP port, ISN, window shift and advertised MSS.
    ends: [TcpEnds; 2],
    utp: [UtpOffsets; 2],
    /// The highest stream offset side `s` has sent (for counting).
    sent_hi: [u64; 2],
    /// Side `s`'s SND.NXT as a stream offset: past its last data byte, and
    /// its FIN. The model's pure ACKs carry no sequence number (its
    /// receiver half does not know the sender's); on the wire they carry this.
    snd_nxt: [u64; 2],
    /// Side `s`'s pure ACKs on their way to a captured host, in send order:
    /// (ack, TSval in ns or `u64::MAX`, SND.NXT when sent).
    acks: [VecDeque<(u64, u64, u64)>; 2],
    /// Bytes each side had received in order when the connection was over
    /// ([`Capture::retire`]); `None` while it may still receive.
    delivered: Option<[u64; 2]>,
}

impl Conn {
    fn new(id: u32, hosts: [u32; 2]) -> Conn {
        let port = [EPHEMERAL + (id % 16_384) as u16, BT_PORT];
        let isn = [mix(id as u64 * 2), mix(id as u64 * 2 + 1)];
        let end = |s: usize| TcpEnds {
            src_port: port[s],
            dst_port: port[1 - s],
            isn: isn[s],
            peer_isn: isn[1 - s],
            shift: 0,
            mss: 0,
        };
        Conn {
            hosts,
            streams: Default::default(),
            ends: [end(0), end(1)],
            utp: Default::default(),
            sent_hi: [0; 2],
            snd_nxt: [0; 2],
            acks: Default::default(),
            delivered: None,
        }
    }
}

/// A segment without data, SYN, FIN or RST: the model gives it no sequence
/// number.
fn pure_ack(seg: &Segment) -> bool {
    seg.len == 0 && seg.flags.0 & (Flags::SYN.0 | Flags::FIN.0 | Flags::RST.0) == 0
}

/// A pure ACK's TSval in ns, or `u64::MAX` without timestamps.
fn ts_val(seg: &Segment) -> u64 {
    seg.timestamps.map_or(u64::MAX, |t| t.val.as_nanos())
}

impl Conn {
    /// The SND.NXT side `side` sent pure ACK `seg` with, which has now
    /// arrived: the first queued one that matches it (those before it were
    /// dropped on the way).
    fn ack_seq(&mut self, side: usize, seg: &Segment) -> u64 {
        let key = (seg.ack, ts_val(seg));
        let found = loop {
            match self.acks[side].pop_front() {
                Some((ack, ts, at)) if (ack, ts) == key => break Some(at),
                Some(_) => {}
                None => break None,
            }
        };
        debug_assert!(found.is_some(), "a pure ACK arrived that was not sent");
        found.unwrap_or(self.snd_nxt[side])
    }
}

/// A fixed 32-bit mix (splitmix64's finaliser) for the ISNs: spread, and
/// independent of every random stream of the run.
fn mix(x: u64) -> u32 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u32
}

/// The captures of one run.
pub(crate) struct Capture {
    snaplen: u32,
    /// Each host's index in `hosts`, or `u32::MAX` if it is not captured.
    index: Vec<u32>,
    hosts: Vec<Host>,
    conns: BTreeMap<u32, Conn>,
    info_hash: [u8; 20],
    /// Each host's peer id (BEP 20 style, by its client).
    peer_ids: Vec<[u8; 20]>,
    /// The packet being built.
    scratch: Vec<u8>,
}

const NOT: u32 = u32::MAX;

impl Capture {
    /// Captures of `spec.peers` among `names.len()` hosts named `names`
    /// (each with its interface description), whose handshakes carry
    /// `info_hash` and `peer_ids`; `app` names the writer.
    pub fn new(
        spec: &CaptureSpec,
        app: &str,
        names: &[(String, String)],
        info_hash: [u8; 20],
        peer_ids: Vec<[u8; 20]>,
    ) -> Capture {
        let mut index = vec![NOT; names.len()];
        let resolved: Vec<([u8; 4], String)> =
            names.iter().enumerate().map(|(h, (n, _))| (headers::address(h as u32), n.clone())).collect();
        let hosts = spec
            .peers
            .iter()
            .enumerate()
            .map(|(i, &h)| {
                index[h as usize] = i as u32;
                let (name, description) = &names[h as usize];
                Host {
                    host: h,
                    file: pcapng::Writer::new(app, name, description, spec.snaplen, &resolved),
                    packets: 0,
                    sent: Counts::default(),
                    received: Counts::default(),
                }
            })
            .collect();
        Capture {
            snaplen: spec.snaplen,
            index,
            hosts,
            conns: BTreeMap::new(),
            info_hash,
            peer_ids,
            scratch: Vec::new(),
        }
    }

    /// Whether a connection between `hosts` is captured.
    #[inline]
    pub fn watches(&self, hosts: [u32; 2]) -> bool {
        hosts.iter().any(|&h| self.index.get(h as usize).is_some_and(|&i| i != NOT))
    }

    fn conn(&mut self, id: u32, hosts: [u32; 2]) -> &mut Conn {
        self.conns.entry(id).or_insert_with(|| Conn::new(id, hosts))
    }

    /// Side `side` of connection `id` (between `hosts`) announced `frame`,
    /// starting at offset `at` of its stream.
    pub fn frame(&mut self, id: u32, side: usize, hosts: [u32; 2], at: u64, frame: &Frame) {
        if self.watches(hosts) {
            self.conn(id, hosts).streams[side].push(at, frame);
        }
    }

    /// Side `side` of connection `id` (between `hosts`, its endpoint `ep`)
    /// hands `w` to its host's uplink now.
    pub fn sent(&mut self, now: Time, id: u32, side: usize, hosts: [u32; 2], w: &Wire, ep: &Transport) {
        if !self.watches(hosts) {
            return;
        }
        let to_captured = self.index[hosts[1 - side] as usize] != NOT;
        let c = self.conn(id, hosts);
        let offset = match w {
            Wire::Tcp(seg) if seg.flags.contains(Flags::SYN) => {
                // What this end announces for the rest of the connection.
                let ts = if seg.timestamps.is_some() { 12 } else { 0 };
                let e = &mut c.ends[side];
                e.shift = headers::window_shift(seg.window);
                e.mss = (ep.window().1 + ts).min(0xffff) as u16;
                0
            }
            Wire::Tcp(seg) if pure_ack(seg) => {
                let at = c.snd_nxt[side];
                if to_captured {
                    c.acks[side].push_back((seg.ack, ts_val(seg), at));
                }
                at
            }
            Wire::Tcp(seg) => {
                let fin = u64::from(seg.flags.contains(Flags::FIN));
                c.snd_nxt[side] = c.snd_nxt[side].max(seg.seq + seg.len as u64 + fin);
                seg.seq
            }
            Wire::Utp(p) if p.header.kind == PacketType::Data => c.utp[side].sent(p.header.seq_nr, p.payload),
            Wire::Utp(p) => {
                if p.header.kind == PacketType::Fin && c.utp[side].next.is_none_or(|n| n == p.header.seq_nr) {
                    c.utp[side].next = Some(p.header.seq_nr.wrapping_add(1));
                }
                0
            }
            Wire::Datagram(_) => return, // no datagram runs in a captured (swarm) run
        };
        let hi = offset + w.payload_len() as u64;
        c.sent_hi[side] = c.sent_hi[side].max(hi);
        let i = self.index[hosts[side] as usize];
        if i != NOT {
            self.record(now, i, id, side, w, offset, pcapng::OUTBOUND);
        }
    }

    /// `w`, sent by side `1 - to` of connection `id` (between `hosts`),
    /// reached side `to`'s host now (past its downlink and ingress loss).
    pub fn arrived(&mut self, now: Time, id: u32, to: usize, hosts: [u32; 2], w: &Wire) {
        let i = match self.index.get(hosts[to] as usize) {
            Some(&i) if i != NOT => i,
            _ => return,
        };
        let side = 1 - to;
        let offset = match w {
            Wire::Tcp(seg) if pure_ack(seg) => match self.conns.get_mut(&id) {
                Some(c) => c.ack_seq(side, seg),
                None => 0,
            },
            Wire::Tcp(seg) => seg.seq,
            Wire::Utp(p) if p.header.kind == PacketType::Data => match self.conns.get(&id) {
                Some(c) => c.utp[side].received(p.header.seq_nr),
                None => 0,
            },
            Wire::Utp(_) => 0,
            Wire::Datagram(_) => return,
        };
        self.conn(id, hosts);
        self.record(now, i, id, side, w, offset, pcapng::INBOUND);
    }

    /// Builds `w` (sent by `side` of connection `id`, its payload, or a TCP
    /// segment's sequence number, from stream offset `offset`) and appends
    /// it to host `i`'s file.
    #[allow(clippy::too_many_arguments)]
    fn record(&mut self, now: Time, i: u32, id: u32, side: usize, w: &Wire, offset: u64, flags: u32) {
        let c = &self.conns[&id];
        let ids = Ids { info_hash: self.info_hash, peer_id: self.peer_ids[c.hosts[side] as usize] };
        let len = build(&mut self.scratch, c, side, w, offset, &ids);
        debug_assert_eq!(len as u32, w.wire_len(), "a rebuilt packet is as long as the model's");
        let h = &mut self.hosts[i as usize];
        let kept = len.min(self.snaplen as usize);
        h.file.packet(now.as_nanos(), &self.scratch[..kept], len as u32, flags);
        h.packets += 1;
        if let Wire::Utp(p) = w {
            if p.header.kind == PacketType::Data {
                if flags == pcapng::OUTBOUND {
                    h.sent.utp_data += 1;
                } else {
                    h.received.utp_data += 1;
                }
            }
        }
    }

    /// Connection `id` is over: side `s` received `delivered[s]` bytes in
    /// order, and nothing more will reach it (see [`Capture::finish`]).
    pub fn retire(&mut self, id: u32, delivered: [u64; 2]) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.delivered = Some(delivered);
        }
    }

    /// The files: one `peer-N.pcapng` per captured peer, in peer order, then
    /// `capture.json`, which maps files to peers and addresses and gives
    /// what the model counted of each peer's traffic: the handshakes,
    /// `piece` and `have` messages it sent whole (every byte handed to its
    /// uplink) and received whole (every byte delivered in order, as
    /// `delivered(conn, side)` says of a connection not over, or what it had
    /// received when it was), and its uTP data packets each way.
    pub fn finish(mut self, delivered: impl Fn(u32, usize) -> u64) -> Vec<CaptureFile> {
        for (&id, c) in &self.conns {
            for s in 0..2 {
                let (from, to) = (self.index[c.hosts[s] as usize], self.index[c.hosts[1 - s] as usize]);
                if from != NOT {
                    add(&mut self.hosts[from as usize].sent.messages, c.streams[s].complete_below(c.sent_hi[s]));
                }
                if to != NOT {
                    let got = c.delivered.map_or_else(|| delivered(id, 1 - s), |d| d[1 - s]);
                    let got = c.streams[s].complete_below(got);
                    add(&mut self.hosts[to as usize].received.messages, got);
                }
            }
        }
        let counts = |c: &Counts| {
            serde_json::json!({
                "handshakes": c.messages.handshakes,
                "pieces": c.messages.pieces,
                "haves": c.messages.haves,
                "utp_data_packets": c.utp_data,
            })
        };
        let mut files = Vec::new();
        let mut index = Vec::new();
        for h in self.hosts {
            let name = format!("peer-{}.pcapng", h.host);
            index.push(serde_json::json!({
                "file": name,
                "peer": h.host,
                "address": dotted(headers::address(h.host)),
                "packets": h.packets,
                "sent": counts(&h.sent),
                "received": counts(&h.received),
            }));
            files.push(CaptureFile { name, bytes: h.file.into_bytes() });
        }
        let doc = serde_json::json!({
            "format": "pcapng, LINKTYPE_RAW (101): each packet starts with its IPv4 header",
            "time": "simulated time from the start of the run (the run starts at 1970-01-01T00:00:00Z), ns",
            "addresses": "peer N is 10.0.0.0 + N + 1 (peer 0: 10.0.0.1)",
            "tcp_port": BT_PORT,
            "utp_port": BT_PORT,
            "snaplen": self.snaplen,
            "files": index,
        });
        let mut json = serde_json::to_string_pretty(&doc).expect("plain JSON values");
        json.push('\n');
        files.push(CaptureFile { name: "capture.json".into(), bytes: json.into_bytes() });
        files
    }
}

/// The captures of swarm `sc` (`[capture]` as `spec`), peer `i` being host
/// `i` of class `class_of[i]`.
pub(crate) fn for_swarm(sc: &SwarmScenario, spec: &CaptureSpec, class_of: &[usize]) -> Capture {
    let names: Vec<(String, String)> = class_of
        .iter()
        .enumerate()
        .map(|(h, &ci)| {
            let c = &sc.classes[ci];
            let role = if c.seed { "seed" } else { "leecher" };
            let what = format!(
                "{}: {role} of class \"{}\", {}",
                dotted(headers::address(h as u32)),
                c.label,
                c.profile.name()
            );
            (format!("peer-{h}"), what)
        })
        .collect();
    let peer_ids = class_of.iter().enumerate().map(|(h, &ci)| peer_id(sc.classes[ci].profile, h as u32)).collect();
    // The scenario's stand-in info hash (`scenario::swarm`), which the
    // clients' allowed-fast sets hash too.
    Capture::new(spec, concat!("torrentlab ", env!("CARGO_PKG_VERSION")), &names, sc.torrent.info_hash, peer_ids)
}

/// Host `host`'s peer id in its client's style (BEP 20): mainline 4.0.2's
/// `M4-0-2--`, uTorrent 3.3's `-UT3300-`, libtorrent 1.2's `-LT1200-`, then
/// the host's index in 12 digits (real clients draw these at random).
fn peer_id(client: ClientName, host: u32) -> [u8; 20] {
    let prefix = match client {
        ClientName::Mainline => "M4-0-2--",
        ClientName::Utorrent => "-UT3300-",
        ClientName::Libtorrent => "-LT1200-",
    };
    format!("{prefix}{host:012}").as_bytes().try_into().expect("8 + 12 bytes")
}

fn add(to: &mut Complete, c: Complete) {
    to.handshakes += c.handshakes;
    to.pieces += c.pieces;
    to.haves += c.haves;
}

fn dotted(a: [u8; 4]) -> String {
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}

/// Writes packet `w` (sent by side `side` of `c`, its payload (or a TCP
/// segment's sequence number) at stream offset `offset`) into `out`: IPv4, TCP or UDP + uTP, payload, with
/// every checksum. Returns its length.
fn build(out: &mut Vec<u8>, c: &Conn, side: usize, w: &Wire, offset: u64, ids: &Ids) -> usize {
    let (src, dst) = (headers::address(c.hosts[side]), headers::address(c.hosts[1 - side]));
    let stream = &c.streams[side];
    match w {
        Wire::Tcp(seg) => {
            // A pure ACK's sequence number is the sender's SND.NXT.
            let seg = Segment { seq: offset, ..*seg };
            let mut h = [0u8; 60];
            let hlen = headers::tcp(&seg, &c.ends[side], &mut h);
            let total = IPV4_LEN + hlen + seg.len as usize;
            out.clear();
            out.resize(total, 0);
            headers::ipv4(out, total as u16, PROTO_TCP, src, dst);
            out[IPV4_LEN..IPV4_LEN + hlen].copy_from_slice(&h[..hlen]);
            stream.render(offset, &mut out[IPV4_LEN + hlen..], ids);
            headers::transport_checksum(&mut out[IPV4_LEN..], 16, PROTO_TCP, src, dst);
            total
        }
        Wire::Utp(p) => {
            let mut h = [0u8; 32];
            let hlen = p.header.encode(&mut h);
            let udp_len = UDP_LEN + hlen + p.payload as usize;
            let total = IPV4_LEN + udp_len;
            out.clear();
            out.resize(total, 0);
            headers::ipv4(out, total as u16, PROTO_UDP, src, dst);
            headers::udp(&mut out[IPV4_LEN..], BT_PORT, BT_PORT, udp_len as u16);
            let at = IPV4_LEN + UDP_LEN;
            out[at..at + hlen].copy_from_slice(&h[..hlen]);
            stream.render(offset, &mut out[at + hlen..], ids);
            headers::transport_checksum(&mut out[IPV4_LEN..], 6, PROTO_UDP, src, dst);
            total
        }
        Wire::Datagram(_) => unreachable!("datagrams are not captured"),
    }
}

#[cfg(test)]
mod tests;
