//! uTorrent's transport disposition between two leechers (E1's local
//! calibration, Testa et al. TMA 2012): which transport carries the data
//! in each direction when one peer dials the other. Connections are
//! bidirectional: a peer that only attempts TCP still uploads over a uTP
//! connection the other side opened.

mod common;
use common::swarm_from_toml;
use torrentlab_sim::swarm::run_swarm_checked;
use torrentlab_sim::{ColumnData, SwarmOutput, SwarmScenario};

/// 1 seed (disposition 31) and two leechers, all with 1 Mbit/s uplinks and
/// 1 s buffers. The seed's client uploads at 400 kbit/s, shared by the two
/// leechers whatever their transports (uTP would otherwise yield the seed's
/// uplink to TCP), so each leecher has pieces the other needs; the leechers
/// have no upload limit; leecher A joins at 0 s, leecher B at 0.2 s
/// (so B dials A: A hears of B only at its next announce).
fn pair(a: u32, b: u32) -> SwarmScenario {
    let toml = format!(
        r#"
        [run]
        seed = 3
        duration = "1 h"
        [torrent]
        size = "4 MB"
        piece_size = "256 KiB"
        [network]
        rtt = "40 ms"
        [network.access]
        up = "1 Mbit/s"
        buffer = "1 s"
        [metrics]
        connections = true
        [[peers]]
        role = "seed"
        client = "utorrent"
        upload_limit = "400 kbit/s"
                [[peers]]
        role = "leecher"
        label = "A"
        client = "utorrent"
        disposition = {a}
        [[peers]]
        role = "leecher"
        label = "B"
        client = "utorrent"
        disposition = {b}
        join = "200 ms"
        "#
    );
    parse(&toml, "pair.toml")
}

fn parse(toml: &str, name: &str) -> SwarmScenario {
    swarm_from_toml(toml, name)
}

/// One connection between the two leechers (peers 1 and 2).
#[derive(Debug)]
struct Between {
    dialler: i64,
    transport: String,
    /// Piece bytes from the dialler, and to it.
    forward: i64,
    reverse: i64,
    /// IP bytes the acceptor sent.
    wire_reverse: i64,
}

fn between_leechers(out: &SwarmOutput) -> Vec<Between> {
    let c = out.table("connections");
    let Some(ColumnData::Str(transport)) = c.column("transport") else { panic!("no transport column") };
    let (from, to) = (c.i64_column("initiator"), c.i64_column("acceptor"));
    (0..c.rows())
        .filter(|&r| (from[r] == 1 && to[r] == 2) || (from[r] == 2 && to[r] == 1))
        .map(|r| Between {
            dialler: from[r],
            transport: transport[r].clone(),
            forward: c.i64_column("piece_bytes_forward")[r],
            reverse: c.i64_column("piece_bytes_reverse")[r],
            wire_reverse: c.i64_column("wire_bytes_reverse")[r],
        })
        .collect()
}

fn run(a: u32, b: u32) -> Vec<Between> {
    let sc = pair(a, b);
    let (out, _) = run_swarm_checked(&sc);
    assert_eq!(out.table("summary").i64_column("completed")[0], 2, "both leechers finish");
    between_leechers(&out)
}

/// The connections that carried piece data, as (transport, forward > 0, reverse > 0).
fn carriers(conns: &[Between]) -> Vec<(&str, bool, bool)> {
    conns
        .iter()
        .filter(|c| c.forward + c.reverse > 0)
        .map(|c| (c.transport.as_str(), c.forward > 0, c.reverse > 0))
        .collect()
}

#[test]
fn a_tcp_preferring_peer_uploads_over_the_utp_connection_a_utp_preferring_peer_opened_to_it() {
    // A = 13 (attempts TCP), B = 14 (attempts uTP) dials A.
    let conns = run(13, 14);
    assert!(conns.iter().all(|c| c.dialler == 2 && c.transport == "utp"), "{conns:?}");
    assert_eq!(carriers(&conns), [("utp", true, true)], "data flows both ways over uTP: {conns:?}");
}

#[test]
fn a_utp_preferring_peer_uploads_over_the_tcp_connection_a_tcp_preferring_peer_opened_to_it() {
    // A = 14, B = 13 dials A over TCP.
    let conns = run(14, 13);
    assert!(conns.iter().all(|c| c.dialler == 2 && c.transport == "tcp"), "{conns:?}");
    assert_eq!(carriers(&conns), [("tcp", true, true)], "data flows both ways over TCP: {conns:?}");
}

#[test]
fn a_default_peer_dialling_a_legacy_peer_gets_no_answer_over_utp_and_talks_tcp() {
    // A = 5 (TCP only), B = 31 dials both; A drops the uTP SYN without a word.
    let conns = run(5, 31);
    let utp: Vec<&Between> = conns.iter().filter(|c| c.transport == "utp").collect();
    assert_eq!(utp.len(), 1, "the uTP attempt: {conns:?}");
    assert_eq!(utp[0].forward + utp[0].reverse, 0);
    assert_eq!(utp[0].wire_reverse, 0, "the SYN is dropped without an answer (no ST_RESET)");
    assert_eq!(carriers(&conns), [("tcp", true, true)], "{conns:?}");
}

#[test]
fn a_legacy_peer_dialling_a_default_peer_talks_tcp_both_ways() {
    let conns = run(31, 5);
    assert!(conns.iter().all(|c| c.transport == "tcp" && c.dialler == 2), "{conns:?}");
    assert_eq!(carriers(&conns), [("tcp", true, true)]);
}

#[test]
fn two_default_peers_keep_the_utp_connection_and_close_the_parallel_tcp_attempt() {
    let conns = run(31, 31);
    assert_eq!(conns.len(), 2, "a uTP and a TCP attempt: {conns:?}");
    assert_eq!(carriers(&conns), [("utp", true, true)], "{conns:?}");
}

#[test]
fn a_utp_only_peer_and_a_legacy_peer_never_connect() {
    // 10 speaks uTP only, 5 TCP only: B (5) dials A (10) over TCP and is reset.
    let conns = run(10, 5);
    assert!(conns.iter().all(|c| c.forward + c.reverse == 0), "{conns:?}");
}

/// 1 seed (31) + 15 leechers of four dispositions and a mainline class,
/// E1's access links (1 Mbit/s up, 1 s buffers, unlimited down; the seed
/// at 5 Mbit/s), every uplink logged.
fn mixed_crowd() -> SwarmScenario {
    let toml = r#"
        [run]
        seed = 8
        duration = "2 h"
        [torrent]
        size = "3 MB"
        piece_size = "256 KiB"
        [network]
        rtt = "40 ms"
        [network.access]
        up = "1 Mbit/s"
        buffer = "1 s"
        [metrics]
        connections = true
        uplink_log_peers = 16
        [[peers]]
        role = "seed"
        client = "utorrent"
        access = { up = "5 Mbit/s" }
        [[peers]]
        role = "leecher"
        label = "ut31"
        client = "utorrent"
        count = 4
        [[peers]]
        role = "leecher"
        label = "ut13"
        client = "utorrent"
        disposition = 13
        count = 3
        upload_limit = "5 x uplink"
        [[peers]]
        role = "leecher"
        label = "ut14"
        client = "utorrent"
        disposition = 14
        count = 3
        [[peers]]
        role = "leecher"
        label = "ut5"
        client = "utorrent"
        disposition = 5
        count = 3
        [[peers]]
        role = "leecher"
        label = "bt"
        count = 2
        upload_limit = "unlimited"
        "#;
    parse(toml, "mixed.toml")
}

#[test]
fn a_seed_and_fifteen_leechers_of_mixed_dispositions_finish_and_every_byte_is_accounted_for() {
    let sc = mixed_crowd();
    let (out, _) = run_swarm_checked(&sc);
    assert_eq!(out.table("summary").i64_column("completed")[0], 15);
    let c = out.table("connections");
    let Some(ColumnData::Str(transport)) = c.column("transport") else { panic!() };
    let Some(ColumnData::Str(class)) = out.table("peers").column("class") else { panic!() };
    let (from, to) = (c.i64_column("initiator"), c.i64_column("acceptor"));
    let carried = |r: usize| c.i64_column("piece_bytes_forward")[r] + c.i64_column("piece_bytes_reverse")[r];
    // Legacy peers speak TCP only, so no data ever reaches or leaves them over uTP.
    for r in 0..c.rows() {
        let ends = [&class[from[r] as usize], &class[to[r] as usize]];
        if ends.iter().any(|k| *k == "ut5") && transport[r] == "utp" {
            assert_eq!(carried(r), 0, "connection {r} between {ends:?}");
        }
    }
    // Both transports carry data; piece bytes by transport sum to what was uploaded.
    let by = |k: &str| (0..c.rows()).filter(|&r| transport[r] == k).map(carried).sum::<i64>();
    let (tcp, utp) = (by("tcp"), by("utp"));
    assert!(tcp > 0 && utp > 0, "tcp {tcp}, utp {utp}");
    let uploaded: i64 = out.table("peers").i64_column("bytes_up").iter().sum();
    assert_eq!(tcp + utp, uploaded);
    // Each uplink's queue log reconstructs what the link served: the
    // cumulative counter grows by one packet per row, and ends at the
    // uplink's total; what a peer sent was served, dropped, or is still
    // queued at the end.
    let q = out.table("uplink_queue");
    let up = out.table("uplinks");
    for peer in 0..16i64 {
        let rows: Vec<usize> = (0..q.rows()).filter(|&r| q.i64_column("peer")[r] == peer).collect();
        let served = q.i64_column("served_bytes");
        let mut prev = 0;
        for &r in &rows {
            let packet = served[r] - prev;
            // At most a full segment with timestamps and three SACK blocks:
            // the model sends a data segment whole when SACK blocks ride on
            // it, where Linux shrinks its payload to stay within the MTU.
            assert!((20..=1528).contains(&packet), "peer {peer}: a dequeued packet of {packet} bytes");
            prev = served[r];
        }
        assert_eq!(prev, up.i64_column("served_bytes")[peer as usize], "peer {peer}");
        let sent: i64 = (0..c.rows())
            .map(|r| {
                let mut b = 0;
                if from[r] == peer {
                    b += c.i64_column("wire_bytes_forward")[r];
                }
                if to[r] == peer {
                    b += c.i64_column("wire_bytes_reverse")[r];
                }
                b
            })
            .sum();
        let last_queued = rows.last().map_or(0, |&r| q.i64_column("bytes")[r]);
        let dropped = up.i64_column("dropped_bytes")[peer as usize];
        // Still queued at the end: what the last dequeue left, and what
        // arrived after it, within the buffer.
        let queued = sent - prev - dropped;
        let buffer = up.f64_column("buffer_bytes")[peer as usize] as i64;
        assert!(
            queued >= last_queued && queued <= buffer,
            "peer {peer}: {queued} queued at the end, {last_queued} after the last dequeue"
        );
        // The delay histogram counts every packet served; the time-averaged
        // queue stays within the buffer.
        let d = out.table("uplink_delays");
        let counted: i64 =
            (0..d.rows()).filter(|&r| d.i64_column("peer")[r] == peer).map(|r| d.i64_column("packets")[r]).sum();
        assert_eq!(counted, up.i64_column("served_packets")[peer as usize], "peer {peer}");
        let q = up.f64_column("mean_queue_bytes")[peer as usize];
        assert!(q >= 0.0 && q <= up.f64_column("buffer_bytes")[peer as usize], "peer {peer}: E[Q] {q}");
    }
    let eq: f64 = up.f64_column("mean_queue_bytes")[1..].iter().sum::<f64>() / 15.0;
    assert!(eq > 10_000.0, "leechers' uplinks do queue: mean E[Q] {eq}");
}
