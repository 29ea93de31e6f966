//! The libtorrent client profile in swarms: uTP first with TCP after a
//! failed uTP connect, its choker (an interested peer unchoked at once while a
//! slot is free; rounds every 15 s), its request queue and strict end game.

mod common;
use common::{strs, swarm_from_toml};
use torrentlab_sim::swarm::run_swarm_checked;
use torrentlab_sim::SwarmScenario;

fn swarm(leechers: &str) -> SwarmScenario {
    let toml = format!(
        r#"
        [run]
        seed = 5
        duration = "2 h"
        [torrent]
        size = "3 MB"
        piece_size = "256 KiB"
        [network]
        rtt = "20 ms"
        [network.access]
        up = "2 Mbit/s"
        buffer = "100 packets"
        [metrics]
        connections = true
        [[peers]]
        role = "seed"
        client = "libtorrent"
        {leechers}
        "#
    );
    swarm_from_toml(&toml, "lt.toml")
}

#[test]
fn a_libtorrent_swarm_finishes_over_utp_and_its_first_unchokes_come_before_the_first_round() {
    let sc = swarm("[[peers]]\nrole = \"leecher\"\nclient = \"libtorrent\"\ncount = 10\n");
    let (out, _) = run_swarm_checked(&sc);
    assert_eq!(out.table("summary").i64_column("completed")[0], 10);
    let c = out.table("connections");
    let transport = strs(&out, "connections", "transport");
    let carried: Vec<i64> = (0..c.rows())
        .map(|r| c.i64_column("piece_bytes_forward")[r] + c.i64_column("piece_bytes_reverse")[r])
        .collect();
    assert!((0..c.rows()).filter(|&r| carried[r] > 0).all(|r| transport[r] == "utp"), "uTP is dialled first");
    assert!(out.table("peers").i64_column("fallbacks").iter().all(|&f| f == 0), "every uTP dial connects");
    // Mainline's first unchokes wait for its first rechoke at 10 s; libtorrent
    // unchokes an interested peer at once while a slot is free.
    let chokes = out.table("chokes");
    let first = (0..chokes.rows())
        .filter(|&r| chokes.i64_column("choked")[r] == 0)
        .map(|r| chokes.f64_column("time_s")[r])
        .fold(f64::INFINITY, f64::min);
    assert!(first < 1.0, "the first unchoke at {first} s");
    // At most 8 peers unchoked by any peer once each rechoke's decisions
    // are carried out (an unchoke ends with a choke, or when the connection
    // closes).
    let (peer, remote, choked, t) = (
        chokes.i64_column("peer"),
        chokes.i64_column("remote"),
        chokes.i64_column("choked"),
        chokes.f64_column("time_s"),
    );
    let (from, to, closed) = (c.i64_column("initiator"), c.i64_column("acceptor"), c.f64_column("closed_s"));
    let closed_between = |a: i64, b: i64, lo: f64, hi: f64| {
        (0..c.rows())
            .any(|r| ((from[r], to[r]) == (a, b) || (from[r], to[r]) == (b, a)) && closed[r] >= lo && closed[r] <= hi)
    };
    for p in 0..11 {
        let mut open: std::collections::BTreeMap<i64, f64> = Default::default();
        let rows: Vec<usize> = (0..chokes.rows()).filter(|&r| peer[r] == p).collect();
        for (k, &r) in rows.iter().enumerate() {
            open.retain(|&q, &mut since| !closed_between(p, q, since, t[r]));
            if choked[r] == 0 {
                open.insert(remote[r], t[r]);
            } else {
                open.remove(&remote[r]);
            }
            let last_of_instant = rows.get(k + 1).is_none_or(|&n| t[n] > t[r]);
            assert!(!last_of_instant || open.len() <= 8, "peer {p} unchokes {} at {} s", open.len(), t[r]);
        }
    }
}

#[test]
fn a_libtorrent_peer_falls_back_to_tcp_with_mainline_peers_that_do_not_answer_utp() {
    let sc = swarm(
        "[[peers]]\nrole = \"leecher\"\nlabel = \"bt\"\ncount = 4\nupload_limit = \"unlimited\"\n\
         [[peers]]\nrole = \"leecher\"\nlabel = \"lt\"\nclient = \"libtorrent\"\ncount = 2\njoin = \"5 s\"\n",
    );
    let (out, _) = run_swarm_checked(&sc);
    assert_eq!(out.table("summary").i64_column("completed")[0], 6);
    let peers = out.table("peers");
    let class = strs(&out, "peers", "class");
    let fallbacks = peers.i64_column("fallbacks");
    for (i, k) in class.iter().enumerate() {
        match k.as_str() {
            // Each lt peer dials the 4 mainline peers (uTP unanswered, then TCP).
            "lt" => assert!(fallbacks[i] >= 4, "peer {i}: {} fallbacks", fallbacks[i]),
            _ => assert_eq!(fallbacks[i], 0),
        }
    }
    // The fallback TCP dial leaves when the uTP SYN times out: 3 s after it.
    let c = out.table("connections");
    let transport = strs(&out, "connections", "transport");
    let (from, to, opened) = (c.i64_column("initiator"), c.i64_column("acceptor"), c.f64_column("opened_s"));
    for lt in (0..class.len()).filter(|&i| class[i] == "lt") {
        for bt in (0..class.len()).filter(|&i| class[i] == "bt") {
            let dial = |t: &str| {
                (0..c.rows())
                    .find(|&r| from[r] == lt as i64 && to[r] == bt as i64 && transport[r] == t)
                    .map(|r| opened[r])
            };
            let (Some(u), Some(t)) = (dial("utp"), dial("tcp")) else { continue };
            assert!((t - u - 3.0).abs() < 0.6, "peer {lt} -> {bt}: uTP at {u} s, TCP at {t} s");
        }
    }
}
