//! `[capture]`: a 1 seed + 2 leecher swarm over TCP and uTP, captured at
//! every peer. The captures must change no result, and each must read back
//! as pcapng whose every packet has a right IPv4 header, right checksums, a
//! real uTP header, and BitTorrent handshakes where the model says.

mod common;

use torrentlab_sim::capture::headers::{address, checksum};
use torrentlab_sim::capture::pcapng::{self, Block};
use torrentlab_sim::{digest_tables, run_swarm, SwarmOutput, SwarmScenario};
use torrentlab_transport::utp::{Header, PacketType};

/// scenarios/capture/mixed-swarm.toml without its `[capture]` table: the
/// seed sends over uTP and TCP, the leechers trade over TCP (see the file).
fn mixed() -> &'static str {
    let file = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/capture/mixed-swarm.toml"));
    &file[..file.find("\n[capture]").expect("the file captures") + 1]
}

fn run(capture: &str) -> SwarmOutput {
    let sc: SwarmScenario = common::swarm_from_toml(&format!("{}{capture}", mixed()), "capture-mixed.toml");
    run_swarm(&sc, &mut |_| {})
}

fn file<'a>(out: &'a SwarmOutput, name: &str) -> &'a [u8] {
    &out.captures.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no {name}: {:?}", out.captures)).bytes
}

fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

/// The packets of a capture, checked block by block: a section, one raw-IP
/// interface with ns timestamps and `snaplen`, the peers' names, then
/// packets in time order.
fn packets(bytes: &[u8], peer: u32, snaplen: u32) -> Vec<(u64, Vec<u8>, u32, u32)> {
    let blocks = pcapng::read(bytes).unwrap_or_else(|e| panic!("peer {peer}: {e}"));
    assert!(matches!(&blocks[0], Block::Section { app: Some(a) } if a.starts_with("torrentlab")), "{:?}", blocks[0]);
    let want = Block::Interface { linktype: 101, snaplen, name: Some(format!("peer-{peer}")), tsresol: Some(9) };
    assert_eq!(blocks[1], want);
    let Block::Names(names) = &blocks[2] else { panic!("no name resolution block") };
    assert_eq!(names[peer as usize], (address(peer), format!("peer-{peer}")));
    let mut out = Vec::new();
    for b in &blocks[3..] {
        let Block::Packet { ts_ns, data, orig_len, flags } = b else { panic!("a second header block: {b:?}") };
        out.push((*ts_ns, data.clone(), *orig_len, flags.expect("every packet has its direction")));
    }
    assert!(out.windows(2).all(|w| w[0].0 <= w[1].0), "packets in time order");
    out
}

#[test]
fn capturing_a_swarm_changes_none_of_its_results() {
    let (with, without) = (run("[capture]\npeers = [0, 1, 2]\n"), run(""));
    let digest = |o: &SwarmOutput| digest_tables(o.tables.iter().map(|(n, t)| (*n, t)));
    assert_eq!(digest(&with), digest(&without));
    assert_eq!(with.perf.events, without.perf.events);
    assert_eq!(with.captures.len(), 4, "three traces and the index");
    assert!(without.captures.is_empty());
}

#[test]
fn every_captured_packet_has_a_right_ipv4_header_right_checksums_and_its_direction() {
    let out = run("[capture]\npeers = [0, 1, 2]\n");
    for peer in 0..3u32 {
        let ps = packets(file(&out, &format!("peer-{peer}.pcapng")), peer, 262_144);
        assert!(ps.len() > 500, "peer {peer}: {} packets", ps.len());
        let (mut tcp, mut utp) = (0, 0);
        for (_, d, orig, dir) in &ps {
            assert_eq!(d.len() as u32, *orig, "whole packets");
            assert_eq!((d[0], be16(d, 2) as u32), (0x45, *orig), "IPv4, no options, its total length");
            assert_eq!(checksum(&[&d[..20]]), 0, "IPv4 header checksum");
            let own = if *dir == pcapng::OUTBOUND { &d[12..16] } else { &d[16..20] };
            assert_eq!(own, address(peer), "the peer's own address on its side of the packet");
            let mut pseudo = [0u8; 12];
            pseudo[..8].copy_from_slice(&d[12..20]);
            pseudo[9] = d[9];
            pseudo[10..].copy_from_slice(&(d.len() as u16 - 20).to_be_bytes());
            assert_eq!(checksum(&[&pseudo, &d[20..]]), 0, "TCP / UDP checksum");
            match d[9] {
                6 => tcp += 1,
                17 => {
                    assert_eq!((be16(d, 20), be16(d, 22)), (6881, 6881));
                    Header::decode(&d[28..]).expect("a BEP 29 header");
                    utp += 1;
                }
                p => panic!("protocol {p}"),
            }
        }
        // Leecher 1 speaks TCP only; the seed and leecher 2 both.
        assert!(tcp > 0 && (utp > 0) == (peer != 1), "peer {peer}: {tcp} TCP and {utp} uTP packets");
    }
}

#[test]
fn the_index_counts_what_a_parse_of_each_capture_finds() {
    let out = run("[capture]\npeers = [\"seed\", \"utp\", 1]\n");
    let index: serde_json::Value = serde_json::from_slice(file(&out, "capture.json")).unwrap();
    let files = index["files"].as_array().unwrap();
    assert_eq!(files.len(), 3);
    let pstr = b"\x13BitTorrent protocol";
    for (peer, f) in files.iter().enumerate() {
        assert_eq!(
            (f["peer"].as_u64(), f["file"].as_str()),
            (Some(peer as u64), Some(&*format!("peer-{peer}.pcapng")))
        );
        let ps = packets(file(&out, &format!("peer-{peer}.pcapng")), peer as u32, 262_144);
        assert_eq!(f["packets"].as_u64(), Some(ps.len() as u64));
        // [handshakes, uTP data packets], sent and received.
        let mut seen = [[0u64; 2]; 2];
        for (_, d, _, dir) in &ps {
            let k = if *dir == pcapng::OUTBOUND { 0 } else { 1 };
            let payload = match d[9] {
                6 => &d[20 + (d[32] >> 4) as usize * 4..],
                _ => {
                    let h = Header::decode(&d[28..]).unwrap();
                    if h.kind == PacketType::Data {
                        seen[k][1] += 1;
                    }
                    &d[28 + h.byte_len() as usize..]
                }
            };
            if payload.starts_with(pstr) {
                seen[k][0] += 1;
            }
        }
        for (k, way) in ["sent", "received"].iter().enumerate() {
            let c = &f[*way];
            assert_eq!(c["handshakes"].as_u64(), Some(seen[k][0]), "peer {peer} {way}");
            assert_eq!(c["utp_data_packets"].as_u64(), Some(seen[k][1]), "peer {peer} {way}");
        }
        // 1 MB is 61 blocks of 16 KiB and one of 576 bytes.
        let pieces = |way: &str| f[way]["pieces"].as_u64().unwrap();
        if peer == 0 {
            assert!(pieces("sent") >= 62 && pieces("received") == 0, "the seed uploads, never downloads: {f}");
        } else {
            assert!(pieces("received") >= 62, "a leecher gets every one of the 62 blocks: {f}");
        }
    }
}

#[test]
fn a_snap_length_keeps_that_many_bytes_of_each_packet_and_the_original_length() {
    let whole = run("[capture]\npeers = [2]\n");
    let cut = run("[capture]\npeers = [2]\nsnaplen = 96\n");
    let (a, b) = (packets(file(&whole, "peer-2.pcapng"), 2, 262_144), packets(file(&cut, "peer-2.pcapng"), 2, 96));
    assert_eq!(a.len(), b.len());
    for ((ta, da, oa, fa), (tb, db, ob, fb)) in a.iter().zip(&b) {
        assert_eq!((ta, oa, fa), (tb, ob, fb));
        assert_eq!(db.len(), da.len().min(96));
        assert_eq!(db[..], da[..db.len()]);
    }
    assert!(b.iter().any(|p| p.1.len() == 96 && p.2 > 96), "some packets were cut");
}

#[test]
fn libtorrent_peers_capture_the_fast_extension_bit_have_all_have_none_and_allowed_fast_with_real_bytes() {
    // The mixed swarm with every peer on libtorrent over TCP.
    let toml = mixed()
        .replace("role = \"seed\"\n", "role = \"seed\"\nclient = \"libtorrent\"\n")
        .replace("role = \"leecher\"\n", "role = \"leecher\"\nclient = \"libtorrent\"\n")
        .replace("transport = \"utp\"", "transport = \"tcp\"");
    let sc: SwarmScenario = common::swarm_from_toml(&format!("{toml}[capture]\npeers = [0, 1, 2]\n"), "lt.toml");
    let out = run_swarm(&sc, &mut |_| {});
    let pstr = b"\x13BitTorrent protocol";
    let has = |p: &[u8], pat: &[u8]| p.windows(pat.len()).any(|w| w == pat);
    // Per peer, what it sent: handshakes (all with the bit), have_all,
    // have_none, allowed_fast.
    for peer in 0..3u32 {
        let ps = packets(file(&out, &format!("peer-{peer}.pcapng")), peer, 262_144);
        let (mut handshakes, mut have_all, mut have_none, mut allowed_fast) = (0, false, false, false);
        for (_, d, _, _) in ps.iter().filter(|p| p.3 == pcapng::OUTBOUND) {
            assert_eq!(d[9], 6, "TCP only");
            let payload = &d[20 + (d[32] >> 4) as usize * 4..];
            if payload.starts_with(pstr) {
                handshakes += 1;
                assert_eq!(&payload[20..28], &[0, 0, 0, 0, 0, 0, 0, 0x04], "reserved[7] |= 0x04 (BEP 6)");
                assert_eq!(&payload[28..48], &sc.torrent.info_hash);
            }
            have_all |= has(payload, &[0, 0, 0, 1, 14]);
            have_none |= has(payload, &[0, 0, 0, 1, 15]);
            allowed_fast |= has(payload, &[0, 0, 0, 5, 17]);
        }
        assert!(handshakes >= 2, "peer {peer}: {handshakes} handshakes");
        if peer == 0 {
            assert!(have_all && !have_none, "the seed says have_all");
        } else {
            assert!(have_none, "leecher {peer} starts with have_none");
        }
        assert!(allowed_fast, "peer {peer} offers allowed-fast pieces");
    }
}
