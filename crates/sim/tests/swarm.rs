//! Swarms end to end: a 1 seed + 20 leechers flash crowd, determinism, and
//! invariants over random small swarms (packets and bytes conserved, no
//! leecher complete without every piece, uploads account for downloads, time
//! never goes backwards).

use proptest::prelude::*;
use torrentlab_sim::swarm::run_swarm_checked;
use torrentlab_sim::{AnyScenario, SwarmOutput, SwarmScenario};

fn swarm(toml: &str) -> SwarmScenario {
    match AnyScenario::from_toml_str(toml, "test.toml") {
        Ok(AnyScenario::Swarm(s)) => s,
        Ok(_) => panic!("not a swarm"),
        Err(e) => panic!("{e}"),
    }
}

fn flash_crowd(leechers: u32, size: &str, rtt_ms: u64, extra: &str) -> SwarmScenario {
    swarm(&format!(
        r#"
        [run]
        seed = 3
        duration = "3 h"
        [torrent]
        size = "{size}"
        piece_size = "256 KiB"
        [network]
        rtt = "{rtt_ms} ms"
        {extra}
        [[peers]]
        role = "seed"
        upload_limit = "20 kB/s"
        [[peers]]
        role = "leecher"
        count = {leechers}
        upload_limit = "20 kB/s"
        "#
    ))
}

fn leechers(out: &SwarmOutput) -> Vec<usize> {
    let roles = match out.table("peers").column("role") {
        Some(torrentlab_sim::ColumnData::Str(v)) => v.clone(),
        _ => panic!("no role column"),
    };
    (0..roles.len()).filter(|&i| roles[i] == "leecher").collect()
}

#[test]
fn a_seed_and_twenty_leechers_all_finish_with_every_piece_and_the_tracker_hears_it_after_the_one_way_delay() {
    let sc = flash_crowd(20, "3 MB", 100, "");
    let (out, _) = run_swarm_checked(&sc);
    let peers = out.table("peers");
    let pieces = sc.torrent.pieces() as i64;
    let local = peers.f64_column("completed_s");
    let tracker = peers.f64_column("tracker_completed_s");
    let down = peers.i64_column("bytes_down");
    for i in leechers(&out) {
        assert_eq!(peers.i64_column("pieces")[i], pieces, "leecher {i} has every piece");
        assert_eq!(down[i] as u64, sc.torrent.length, "leecher {i} downloaded the file once (wasted bytes apart)");
        assert!((tracker[i] - local[i] - 0.05).abs() < 1e-9, "the announce takes the 50 ms one-way delay");
    }
    let s = out.table("summary");
    assert_eq!(s.i64_column("completed")[0], 20);
    assert_eq!(out.table("haves").rows(), 20 * pieces as usize, "one verified piece per leecher per piece");
    let (mean, min, max) = (
        s.f64_column("mean_download_time_s")[0],
        s.f64_column("min_download_time_s")[0],
        s.f64_column("max_download_time_s")[0],
    );
    assert!(min <= mean && mean <= max);
    // 3 MB at 20 kB/s from one seed needs at least 150 s before any leecher
    // can hold every piece; 21 uploaders cannot beat 60 MB / 420 kB/s.
    assert!(min > 150.0, "{min}");
    assert!(mean > 60e6 / (21.0 * 20_480.0), "{mean}");
    assert!(s.f64_column("end_s")[0] >= max, "the run ends when the last leecher is done");
}

#[test]
fn the_swarm_diagnostics_agree_with_the_peers_and_the_logs_they_summarise() {
    let sc = flash_crowd(8, "2 MB", 100, "");
    let (out, _) = run_swarm_checked(&sc);
    let (s, peers, spread) = (out.table("summary"), out.table("peers"), out.table("piece_spread"));
    let pieces = sc.torrent.pieces() as usize;
    // The seed is the only source: every piece left it at least once.
    let seed_up = peers.i64_column("bytes_up")[0] as f64;
    let copies = s.f64_column("seed_copies_uploaded")[0];
    assert!((copies - seed_up / sc.torrent.length as f64).abs() < 1e-12 && copies >= 1.0, "{copies}");
    // Every leecher completed every piece once.
    assert_eq!(spread.rows(), pieces);
    assert!(spread.i64_column("copies").iter().all(|&c| c == 8));
    assert_eq!(s.i64_column("pieces_reached_leechers")[0], pieces as i64);
    let first = spread.f64_column("first_s");
    let haves = out.table("haves");
    for (p, &first_s) in first.iter().enumerate() {
        let earliest = (0..haves.rows())
            .filter(|&r| haves.i64_column("piece")[r] == p as i64)
            .map(|r| haves.f64_column("time_s")[r])
            .fold(f64::INFINITY, f64::min);
        assert_eq!(first_s, earliest, "piece {p}: the first HAVE");
    }
    // Waste by cause sums to the waste.
    let wasted: i64 = peers.i64_column("bytes_wasted").iter().sum();
    let by_cause: i64 = ["wasted_dropped_bytes", "wasted_duplicate_bytes", "wasted_end_game_bytes"]
        .iter()
        .map(|c| s.i64_column(c)[0])
        .sum();
    assert_eq!(by_cause, wasted);
    // The first unchoke is the chokes log's first, and every leecher got one.
    let chokes = out.table("chokes");
    let first_unchoke = (0..chokes.rows())
        .filter(|&r| chokes.i64_column("choked")[r] == 0)
        .map(|r| chokes.f64_column("time_s")[r])
        .fold(f64::INFINITY, f64::min);
    assert_eq!(s.f64_column("first_unchoke_s")[0], first_unchoke);
    let unchoked = peers.f64_column("first_unchoked_s");
    assert!(leechers(&out).iter().all(|&i| unchoked[i] >= first_unchoke));
    // Uploads stay within what the limit allows.
    let util = peers.f64_column("upload_utilisation");
    assert!(util.iter().all(|&u| (0.0..=1.01).contains(&u)), "{util:?}");
    let mean = s.f64_column("leecher_upload_utilisation")[0];
    assert!(mean > 0.0 && mean <= 1.01, "{mean}");
}

#[test]
fn the_same_seed_gives_the_same_swarm_and_another_seed_another() {
    let sc = flash_crowd(8, "1 MB", 40, "");
    let a = torrentlab_sim::run_swarm(&sc, &mut |_| {});
    let b = torrentlab_sim::run_swarm(&sc, &mut |_| {});
    // Debug text compares NaN (no value) cells as equal, unlike `==`.
    assert!(format!("{:?}", a.tables) == format!("{:?}", b.tables), "same scenario and seed, same tables");
    assert_eq!(a.perf.events, b.perf.events);
    let mut other = sc.clone();
    other.seed = 4;
    let c = torrentlab_sim::run_swarm(&other, &mut |_| {});
    assert!(a.table("haves") != c.table("haves"), "another seed, another swarm");
}

#[test]
fn every_connection_accounts_for_the_piece_bytes_its_peers_uploaded() {
    let sc = flash_crowd(10, "2 MB", 200, "ingress_loss = 0.02");
    let (out, _) = run_swarm_checked(&sc);
    let up: i64 = out.table("peers").i64_column("bytes_up").iter().sum();
    let c = out.table("connections");
    let framed: i64 = c.i64_column("piece_bytes_forward").iter().sum::<i64>()
        + c.i64_column("piece_bytes_reverse").iter().sum::<i64>();
    assert_eq!(up, framed);
    let down: i64 = out.table("peers").i64_column("bytes_down").iter().sum();
    let wasted: i64 = out.table("peers").i64_column("bytes_wasted").iter().sum();
    assert!(down + wasted <= up, "nothing arrives that was not sent");
    assert!(c.i64_column("retransmitted_packets").iter().sum::<i64>() > 0, "2 % loss makes TCP retransmit");
}

#[test]
fn tso_lets_segments_exceed_the_mss_and_without_it_none_do() {
    for tso in [false, true] {
        // Unlimited uploads write whole piece messages: data piles up in the socket.
        let sc = swarm(&format!(
            "[run]\nduration = \"1 h\"\n[torrent]\nsize = \"1 MB\"\n[network]\nrtt = \"100 ms\"\n[tcp]\ntso = {tso}\n\
             [[peers]]\nrole = \"seed\"\nupload_limit = \"unlimited\"\n\
             [[peers]]\nrole = \"leecher\"\ncount = 4\nupload_limit = \"unlimited\"\n"
        ));
        let out = torrentlab_sim::run_swarm(&sc, &mut |_| {});
        let p = out.table("payload_lengths");
        let longest = *p.i64_column("payload_bytes").iter().max().unwrap();
        if tso {
            assert!(longest > 1448, "TSO: {longest}");
        } else {
            assert!(longest <= 1448, "no TSO: {longest}");
        }
    }
}

#[test]
fn leechers_that_leave_on_completion_still_count_and_the_rest_still_finish() {
    let sc = swarm(
        r#"
        [run]
        duration = "3 h"
        [torrent]
        size = "1 MB"
        [network]
        rtt = "20 ms"
        [[peers]]
        role = "seed"
        [[peers]]
        role = "leecher"
        count = 6
        departure = "leave"
        join = { poisson = "20 s" }
        "#,
    );
    let (out, _) = run_swarm_checked(&sc);
    let peers = out.table("peers");
    let left = peers.f64_column("left_s");
    let done = peers.f64_column("completed_s");
    let join = peers.f64_column("join_s");
    for i in leechers(&out) {
        assert!(left[i] >= done[i], "a leecher leaves only once complete");
    }
    assert!(join.windows(2).skip(1).all(|w| w[0] <= w[1]), "Poisson arrivals in order");
    assert!(join[6] > join[1], "arrivals are spread out");
    assert_eq!(out.table("summary").i64_column("completed")[0], 6);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_small_swarms_conserve_packets_and_complete_only_with_every_piece(
        seed in 1u64..1000,
        leechers in 1u32..7,
        pieces in 1u32..6,
        rtt in 0u64..300,
        loss in prop_oneof![Just(0.0), 0.0..0.08],
        limit in prop_oneof![Just("unlimited".to_string()), (5u32..100).prop_map(|k| format!("{k} kB/s"))],
        pipeline in prop_oneof![Just("\"mainline\"".to_string()), (1u32..8).prop_map(|n| n.to_string())],
        tso in any::<bool>(),
        up in prop_oneof![Just("unlimited".to_string()), (1u32..20).prop_map(|m| format!("{m} Mbit/s"))],
        down in prop_oneof![Just("unlimited".to_string()), (1u32..20).prop_map(|m| format!("{m} Mbit/s"))],
    ) {
        let sc = swarm(&format!(
            r#"
            [run]
            seed = {seed}
            duration = "2 h"
            [torrent]
            size = "{size} B"
            piece_size = "32 KiB"
            [network]
            rtt = "{rtt} ms"
            ingress_loss = {loss}
            [network.access]
            up = "{up}"
            down = "{down}"
            buffer = "30 packets"
            [tcp]
            tso = {tso}
            [[peers]]
            role = "seed"
            upload_limit = "{limit}"
            [[peers]]
            role = "leecher"
            count = {leechers}
            upload_limit = "{limit}"
            pipeline = {pipeline}
            "#,
            size = pieces as u64 * 32768 - 1000,
        ));
        // Conservation is asserted inside run_swarm_checked.
        let (out, _) = run_swarm_checked(&sc);
        let peers = out.table("peers");
        let had = peers.i64_column("pieces");
        let done = peers.f64_column("completed_s");
        let haves = out.table("haves");
        for i in 1..had.len() {
            prop_assert_eq!(done[i].is_finite(), had[i] == pieces as i64, "complete exactly with every piece");
            let from_haves = haves.i64_column("peer").iter().filter(|&&p| p == i as i64).count();
            prop_assert_eq!(from_haves as i64, had[i], "one HAVE broadcast per verified piece");
        }
        let t = haves.f64_column("time_s");
        prop_assert!(t.windows(2).all(|w| w[0] <= w[1]), "time never goes backwards");
        let up: i64 = peers.i64_column("bytes_up").iter().sum();
        let down: i64 = peers.i64_column("bytes_down").iter().sum();
        let wasted: i64 = peers.i64_column("bytes_wasted").iter().sum();
        prop_assert!(down + wasted <= up);
        prop_assert_eq!(had[0], pieces as i64, "the seed keeps every piece");
        let links = out.table("uplinks");
        prop_assert_eq!(links.rows(), had.len(), "one uplink row per peer");
        for col in ["utilisation", "queue_nonempty_fraction"] {
            let x = links.f64_column(col);
            prop_assert!(x.iter().all(|&v| v.is_nan() || (0.0..=1.0).contains(&v)), "{}: {:?}", col, x);
        }
    }
}

#[test]
fn leechers_that_leave_on_completion_still_have_uplink_utilisation_between_zero_and_one() {
    let mut sc = limited_uplinks("2 Mbit/s", "unlimited", "20 packets");
    for c in sc.classes.iter_mut().filter(|c| !c.seed) {
        c.departure = torrentlab_sim::scenario::swarm::Departure::Leave;
    }
    let (out, _) = run_swarm_checked(&sc);
    assert!(out.table("peers").f64_column("left_s")[1..].iter().all(|t| t.is_finite()), "every leecher left");
    let up = out.table("uplinks");
    for col in ["utilisation", "queue_nonempty_fraction"] {
        let x = up.f64_column(col);
        assert!(x.iter().all(|v| (0.0..=1.0).contains(v)), "{col}: {x:?}");
    }
    let active = up.f64_column("active_s");
    let end = out.table("summary").f64_column("end_s")[0];
    assert!(active[1..].iter().all(|&a| a > 0.0 && a <= end), "{active:?}");
}

/// 1 seed + 3 leechers, 1 MB, behind `up` uplinks with `buffer`, every
/// uplink logged; peers upload as fast as TCP lets them.
fn limited_uplinks(up: &str, down: &str, buffer: &str) -> SwarmScenario {
    swarm(&format!(
        r#"
        [run]
        seed = 2
        duration = "1 h"
        [torrent]
        size = "1 MB"
        piece_size = "64 KiB"
        [network]
        rtt = "40 ms"
        [network.access]
        up = "{up}"
        down = "{down}"
        buffer = "{buffer}"
        [metrics]
        uplink_log_peers = 4
        [[peers]]
        role = "seed"
        upload_limit = "unlimited"
        [[peers]]
        role = "leecher"
        count = 3
        upload_limit = "unlimited"
        "#
    ))
}

#[test]
fn a_small_swarm_gives_one_uplink_row_per_peer_with_utilisation_between_zero_and_one() {
    let (out, _) = run_swarm_checked(&limited_uplinks("2 Mbit/s", "10 Mbit/s", "30 packets"));
    assert_eq!(leechers(&out).len(), 3, "every leecher finishes");
    let up = out.table("uplinks");
    assert_eq!(up.i64_column("peer"), &[0, 1, 2, 3]);
    for (i, &u) in up.f64_column("utilisation").iter().enumerate() {
        assert!((0.0..=1.0).contains(&u), "peer {i}: utilisation {u}");
    }
    assert!(up.f64_column("utilisation")[0] > 0.2, "the seed is busy: {:?}", up.f64_column("utilisation"));
    for col in ["mean_delay_ms", "p95_delay_ms", "queue_nonempty_fraction"] {
        assert!(up.f64_column(col).iter().all(|&x| x >= 0.0), "{col}: {:?}", up.f64_column(col));
    }
    assert!(up.f64_column("p95_delay_ms")[0] >= up.f64_column("mean_delay_ms")[0] * 0.5);
    assert!(up.f64_column("capacity_bps").iter().all(|&c| c == 2e6));
    assert!(up.f64_column("buffer_packets").iter().all(|&b| b == 30.0));
    // The log's cumulative counters end at the summary's.
    let q = out.table("uplink_queue");
    for peer in 0..4 {
        let rows: Vec<usize> = (0..q.rows()).filter(|&r| q.i64_column("peer")[r] == peer).collect();
        let last = *rows.last().expect("every peer sent something");
        assert_eq!(q.i64_column("served_bytes")[last], up.i64_column("served_bytes")[peer as usize]);
        assert_eq!(rows.len() as i64, up.i64_column("served_packets")[peer as usize], "a row per dequeue");
        assert!(rows.iter().all(|&r| q.i64_column("packets")[r] < 30));
    }
    let t = q.f64_column("time_s");
    assert!(t.windows(2).all(|w| w[0] <= w[1]), "rows in time order");
}

#[test]
fn with_a_one_second_buffer_at_one_megabit_and_an_unlimited_downlink_no_uplink_holds_more_than_125000_bytes() {
    let (out, _) = run_swarm_checked(&limited_uplinks("1 Mbit/s", "unlimited", "1 s"));
    let up = out.table("uplinks");
    assert!(up.f64_column("buffer_bytes").iter().all(|&b| b == 125_000.0));
    let q = out.table("uplink_queue");
    let most = q.i64_column("bytes").iter().copied().max().unwrap();
    assert!(most <= 125_000, "{most}");
    assert!(most > 20_000, "the queue did build up: {most}");
}

#[test]
fn unlimited_uplinks_report_no_capacity_no_utilisation_and_no_queueing() {
    let (out, _) = run_swarm_checked(&flash_crowd(3, "1 MB", 40, ""));
    let up = out.table("uplinks");
    assert_eq!(up.rows(), 4);
    assert!(up.f64_column("capacity_bps").iter().all(|c| c.is_nan()));
    assert!(up.f64_column("utilisation").iter().all(|u| u.is_nan()));
    assert!(up.f64_column("p95_delay_ms").iter().all(|&d| d == 0.0));
    assert!(up.f64_column("queue_nonempty_fraction").iter().all(|&f| f == 0.0));
    assert_eq!(out.table("uplink_queue").rows(), 0);
}

/// Every look a watch gets of a swarm run.
fn looks(sc: &SwarmScenario) -> Vec<torrentlab_sim::Look> {
    let mut seen = Vec::new();
    let watch = &mut |l| {
        seen.push(l);
        std::ops::ControlFlow::Continue(())
    };
    torrentlab_sim::run_swarm_watched(sc, watch, None).expect("never stopped");
    seen
}

#[test]
fn the_watch_sees_the_share_of_pieces_the_leechers_hold_rise_to_one_as_the_last_leecher_finishes() {
    let seen = looks(&flash_crowd(10, "2 MB", 100, ""));
    let done: Vec<f64> = seen.iter().map(|l| l.done.expect("a swarm reports its work")).collect();
    assert!(done.len() > 3, "looked at least once per simulated minute ({} looks)", done.len());
    assert!(done.windows(2).all(|w| w[0] <= w[1]), "pieces are never lost: {done:?}");
    assert!(done[0] < 0.5 && *done.last().unwrap() == 1.0, "{done:?}");
    assert!(seen.windows(2).all(|w| w[0].now <= w[1].now), "time never goes backwards");
}

#[test]
fn a_swarm_cut_short_by_its_duration_shows_part_of_its_work_done_at_its_last_look() {
    let mut sc = flash_crowd(10, "2 MB", 100, "");
    let full = looks(&sc).last().unwrap().now;
    sc.duration = torrentlab_engine::Duration::from_nanos(full.0 / 2);
    let last = *looks(&sc).last().unwrap();
    let done = last.done.unwrap();
    assert!(done > 0.0 && done < 1.0, "half the time, part of the pieces: {done}");
}
