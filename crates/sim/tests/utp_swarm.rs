//! Swarms over uTP (BEP 29) and over TCP and uTP side by side, end to end.

mod common;
use common::{strs, swarm_from_toml};
use torrentlab_sim::swarm::run_swarm_checked;
use torrentlab_sim::{SwarmOutput, SwarmScenario};

fn swarm(toml: &str) -> SwarmScenario {
    swarm_from_toml(toml, "test.toml")
}

/// 1 seed + `leechers` at 1 Mbit/s uplinks with a 1 s buffer, no upload
/// limit; the seed's class and the leechers' dial with the given transports.
fn crowd(leechers: u32, seed_transport: &str, leecher_classes: &[(&str, u32)]) -> SwarmScenario {
    let mut classes = String::new();
    for (transport, count) in leecher_classes {
        classes += &format!(
            "[[peers]]\nrole = \"leecher\"\nlabel = \"{transport}\"\ncount = {count}\nupload_limit = \"unlimited\"\ntransport = \"{transport}\"\n"
        );
    }
    assert_eq!(leecher_classes.iter().map(|c| c.1).sum::<u32>(), leechers);
    swarm(&format!(
        r#"
        [run]
        seed = 11
        duration = "2 h"
        [torrent]
        size = "2 MB"
        piece_size = "256 KiB"
        [network]
        rtt = "60 ms"
        [network.access]
        up = "1 Mbit/s"
        down = "10 Mbit/s"
        buffer = "100 packets"
        [metrics]
        connections = true
        [[peers]]
        role = "seed"
        upload_limit = "unlimited"
        transport = "{seed_transport}"
        {classes}
        "#
    ))
}

fn every_leecher_has_the_file(sc: &SwarmScenario, out: &SwarmOutput) {
    let peers = out.table("peers");
    let roles = strs(out, "peers", "role");
    for (i, role) in roles.iter().enumerate() {
        if role == "leecher" {
            assert_eq!(peers.i64_column("pieces")[i], sc.torrent.pieces() as i64, "leecher {i}");
            assert_eq!(peers.i64_column("bytes_down")[i] as u64, sc.torrent.length, "leecher {i}");
        }
    }
    assert_eq!(
        out.table("summary").i64_column("completed")[0],
        roles.iter().filter(|r| *r == "leecher").count() as i64
    );
}

#[test]
fn a_seed_and_fifteen_leechers_all_over_utp_finish_and_every_connection_is_utp() {
    let sc = crowd(15, "utp", &[("utp", 15)]);
    let (out, _) = run_swarm_checked(&sc);
    every_leecher_has_the_file(&sc, &out);
    let transports = strs(&out, "connections", "transport");
    assert!(!transports.is_empty());
    assert!(transports.iter().all(|t| t == "utp"), "{transports:?}");
    // Piece payload rides uTP: at least every leecher's copy of the file.
    let c = out.table("connections");
    let piece: i64 = c.i64_column("piece_bytes_forward").iter().chain(c.i64_column("piece_bytes_reverse")).sum();
    assert!(piece as u64 >= 15 * sc.torrent.length, "{piece}");
}

#[test]
fn a_mixed_swarm_finishes_and_its_bytes_by_transport_sum_to_the_total() {
    let sc = crowd(15, "tcp", &[("tcp", 7), ("utp", 8)]);
    let (out, _) = run_swarm_checked(&sc);
    every_leecher_has_the_file(&sc, &out);
    let c = out.table("connections");
    let transports = strs(&out, "connections", "transport");
    let initiators = c.i64_column("initiator");
    let classes = strs(&out, "peers", "class");
    // The dialler's class decides the transport.
    for (t, &i) in transports.iter().zip(initiators) {
        let dialler = &classes[i as usize];
        let expected = if dialler == "seed" { "tcp" } else { dialler.as_str() };
        assert_eq!(t, expected, "a connection dialled by a {dialler}");
    }
    let by = |kind: &str| -> i64 {
        (0..c.rows())
            .filter(|&r| transports[r] == kind)
            .map(|r| c.i64_column("piece_bytes_forward")[r] + c.i64_column("piece_bytes_reverse")[r])
            .sum()
    };
    let (tcp, utp) = (by("tcp"), by("utp"));
    assert!(tcp > 0 && utp > 0, "both carry pieces: tcp {tcp}, utp {utp}");
    let uploaded: i64 = out.table("peers").i64_column("bytes_up").iter().sum();
    assert_eq!(tcp + utp, uploaded, "piece bytes by transport sum to what the clients uploaded");
    // The always-on summary by transport says the same, and its kinds add up
    // to every byte written into the streams.
    let t = out.table("transports");
    let kinds = strs(&out, "transports", "transport");
    let row = |k: &str| kinds.iter().position(|x| x == k).unwrap();
    assert_eq!(t.i64_column("piece_bytes")[row("tcp")], tcp);
    assert_eq!(t.i64_column("piece_bytes")[row("utp")], utp);
    let per_conn = |name: &str| -> i64 {
        c.i64_column(&format!("{name}_forward")).iter().chain(c.i64_column(&format!("{name}_reverse"))).sum()
    };
    let by_kind: i64 = t.i64_column("piece_bytes").iter().chain(t.i64_column("control_bytes")).sum();
    assert_eq!(by_kind, per_conn("piece_bytes") + per_conn("control_bytes"), "the summary is the connections' sum");
    let written = per_conn("stream_bytes");
    // Every message begun: what was written, and the rest of a piece message
    // still being written when the run ended (at most one per direction).
    assert!(by_kind >= written && by_kind - written <= 2 * 16_397 * c.rows() as i64, "{by_kind} vs {written}");
    assert_eq!(t.i64_column("connections").iter().sum::<i64>(), c.rows() as i64);
}

#[test]
fn a_utp_swarm_is_the_same_for_the_same_seed() {
    let sc = crowd(6, "utp", &[("utp", 6)]);
    let (a, _) = run_swarm_checked(&sc);
    let (b, _) = run_swarm_checked(&sc);
    for ((n, ta), (_, tb)) in a.tables.iter().zip(&b.tables) {
        assert_eq!(ta.digest(), tb.digest(), "table {n}");
    }
}
