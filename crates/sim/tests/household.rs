//! The household (experiment E3): ping, a VoIP call and transfers beside a
//! BitTorrent client behind a DSL line, and paced uploads.

mod common;
use common::{strs, swarm_from_toml};
use torrentlab_sim::swarm::run_swarm_checked;
use torrentlab_sim::{AnyScenario, SwarmScenario};

/// The write-up's line: 416 kbit/s up, 2.4 Mbit/s down, 12 ms to the first hop.
const LINE: &str = r#"
    [network]
    rtt = "60 ms"
    [household]
    up = "416 kbit/s"
    down = "2.4 Mbit/s"
    up_buffer = "40 packets"
    down_buffer = "40 packets"
    first_hop_rtt = "12 ms"
"#;

fn household(duration: &str, rest: &str) -> SwarmScenario {
    let toml = format!("[run]\nseed = 3\nduration = \"{duration}\"\n{LINE}\n{rest}");
    swarm_from_toml(&toml, "household.toml")
}

/// Serialisation of `bytes` at `bps`, milliseconds.
fn ser_ms(bytes: f64, bps: f64) -> f64 {
    bytes * 8.0 / bps * 1e3
}

#[test]
fn on_an_idle_line_every_ping_takes_the_paths_round_trip_and_serialisation() {
    let sc = household("10 s", "[[traffic]]\nkind = \"ping\"\ninterval = \"100 ms\"\n");
    let (out, _) = run_swarm_checked(&sc);
    let rtt = out.table("ping").f64_column("rtt_ms");
    // 12 ms, and an 84-byte packet on each of the two links.
    let want = 12.0 + ser_ms(84.0, 416e3) + ser_ms(84.0, 2.4e6);
    assert_eq!(rtt.len(), 90, "one probe every 100 ms until a timeout before the end");
    assert!(rtt.iter().all(|r| (r - want).abs() < 1e-3), "{want} ms: {rtt:?}");
    let s = out.table("summary");
    assert!((s.f64_column("ping_idle_ms")[0] - want).abs() < 1e-3);
    assert!(s.f64_column("ping_mean_increase_ms")[0].abs() < 1e-3);
    assert_eq!(s.i64_column("ping_timeouts")[0], 0);
}

#[test]
fn a_probe_that_times_out_keeps_its_row_and_is_counted() {
    // A 5 ms timeout on a 12 ms path: every probe times out.
    let sc = household("5 s", "[[traffic]]\nkind = \"ping\"\ninterval = \"500 ms\"\ntimeout = \"5 ms\"\n");
    let (out, _) = run_swarm_checked(&sc);
    let p = out.table("ping");
    assert_eq!(p.rows(), 10);
    assert!(p.i64_column("timed_out").iter().all(|&t| t == 1));
    assert!(p.f64_column("rtt_ms").iter().all(|r| r.is_nan()));
    assert_eq!(out.table("summary").i64_column("ping_timeouts")[0], 10);
}

/// The first VoIP packet from the home, sent 1 ns after a transfer wrote
/// `k` full-size segments to an established connection: its one-way delay.
fn voip_delay_behind(k: u64) -> f64 {
    // The transfer writes k x 1448 bytes at t = 0 (the handshake, then the
    // segments, long done by 1 s) and again at t = 1 s; the call starts 1 ns later.
    let chunk = k.max(1) * 1448;
    let transfer = if k == 0 {
        String::new()
    } else {
        format!(
            "[[traffic]]\nkind = \"transfer\"\nfrom = \"home\"\nto = \"isp\"\nsize = \"{} B\"\nchunk = \"{chunk} B\"\nrate = \"{} bit/s\"\n",
            2 * chunk,
            chunk * 8
        )
    };
    let sc = household(
        "4 s",
        &format!("{transfer}[[traffic]]\nkind = \"voip\"\nstart = \"1000000001 ns\"\ninterval = \"10 s\"\n"),
    );
    let (out, _) = run_swarm_checked(&sc);
    let v = out.table("voip");
    let from = strs(&out, "voip", "from");
    let row = (0..v.rows()).find(|&r| from[r] == "home").expect("a packet from the home");
    v.f64_column("delay_ms")[row]
}

#[test]
fn a_voip_packet_behind_k_full_size_packets_on_the_uplink_waits_k_serialisations() {
    let alone = voip_delay_behind(0);
    // 6 ms to the first hop and the 200-byte packet on the modem's link.
    assert!((alone - (6.0 + ser_ms(200.0, 416e3))).abs() < 1e-3, "{alone}");
    for k in [1, 3, 10] {
        let waited = voip_delay_behind(k) - alone;
        let want = k as f64 * ser_ms(1500.0, 416e3) - 1e-6;
        assert!((waited - want).abs() < 1e-3, "k = {k}: waited {waited} ms, want {want}");
    }
}

/// The home seeds to 8 remote leechers without an upload limit, with
/// `pacing`: the most bytes waiting in its modem's queue, the most data
/// packets (over 200 bytes) its modem sent in one second, and what it uploaded.
fn home_seed(pacing: &str) -> (i64, usize, i64) {
    let sc = household(
        "30 s",
        &format!(
            r#"
            [metrics]
            uplink_log_peers = 1
            [torrent]
            size = "20 MB"
            [[peers]]
            role = "seed"
            home = true
            upload_limit = "unlimited"
            pacing = {pacing}
            [[peers]]
            role = "leecher"
            count = 8
            upload_limit = "unlimited"
            "#
        ),
    );
    let (out, _) = run_swarm_checked(&sc);
    let q = out.table("uplink_queue");
    // Bytes waiting behind the packet being sent, at each dequeue.
    let held = q.i64_column("bytes").iter().copied().max().unwrap_or(0);
    let (t, served) = (q.f64_column("time_s"), q.i64_column("served_bytes"));
    let data: Vec<f64> = (1..q.rows()).filter(|&r| served[r] - served[r - 1] > 200).map(|r| t[r]).collect();
    let per_second = (0..data.len()).map(|i| data[i..].iter().take_while(|&&x| x < data[i] + 1.0).count()).max();
    (held, per_second.unwrap_or(0), out.table("summary").i64_column("home_bytes_up")[0])
}

#[test]
fn pacing_bounds_the_queue_the_uploads_build_in_the_modem() {
    let (bursty, _, up_bursty) = home_seed("\"off\"");
    let (paced, per_second, up_paced) = home_seed("\"voip-friendly\"");
    // 815-byte packets 20 ms apart each leave in 15.7 ms: none waits for
    // another, and only small packets (ACKs, handshakes, requests) wait
    // behind one.
    assert!(paced <= 815, "paced: {paced} bytes queued");
    assert!(bursty >= 10 * 1500, "unpaced: {bursty} bytes queued");
    // Mainline unchokes at its first rechoke (10 s); from then on both
    // upload most of what they may: the line's 52 kB/s, or 50 x 763 B/s paced.
    assert!(up_bursty as f64 > 0.8 * 52_000.0 * 20.0, "{up_bursty}");
    assert!(up_paced as f64 > 0.8 * 50.0 * 763.0 * 20.0, "{up_paced}");
    assert!(per_second <= 50, "{per_second} data packets in one second");
}

#[test]
fn a_household_without_bittorrent_runs_its_cross_traffic_alone_to_the_end() {
    let sc = household(
        "20 s",
        "[[traffic]]\nkind = \"transfer\"\nfrom = \"remote\"\nto = \"home\"\nrate = \"260 kB/s\"\n\
         [[traffic]]\nkind = \"ping\"\n",
    );
    let (out, _) = run_swarm_checked(&sc);
    assert_eq!(out.table("summary").f64_column("end_s")[0], 20.0);
    let t = out.table("transfers");
    let rate = t.f64_column("mean_rate_Bps")[0];
    assert!((rate - 260_000.0).abs() < 0.05 * 260_000.0, "{rate}");
    assert!(out.table("peers").rows() == 0 && out.table("ping").rows() == 19);
    assert!(out.table("transfer_samples").rows() >= 20);
}

#[test]
fn poisson_probes_leave_at_exponential_gaps_of_the_interval_on_average() {
    let sc = household("400 s", "[[traffic]]\nkind = \"ping\"\ninterval = \"250 ms\"\nschedule = \"poisson\"\n");
    let (out, _) = run_swarm_checked(&sc);
    let sent = out.table("ping").f64_column("sent_s").to_vec();
    let gaps: Vec<f64> = sent.windows(2).map(|w| w[1] - w[0]).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    assert!((mean - 0.25).abs() < 0.25 * 0.1, "mean gap {mean}");
    // An exponential's standard deviation equals its mean.
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    assert!((sd / mean - 1.0).abs() < 0.15, "sd / mean {}", sd / mean);
    let again = run_swarm_checked(&sc).0;
    assert_eq!(again.table("ping").f64_column("sent_s"), &sent[..], "the run seed fixes the draws");
}

#[test]
fn household_mistakes_are_refused_naming_the_field() {
    let home = "[torrent]\nsize = \"1 MB\"\n[[peers]]\nrole = \"seed\"\nhome = true\n[[peers]]\nrole = \"leecher\"\n";
    let cases = [
        // A home class of two peers.
        (format!("{LINE}{}", home.replace("home = true", "home = true\ncount = 2")), "peers[0].count"),
        // The home's line is [household], not access.
        (format!("{LINE}{}", home.replace("home = true", "home = true\naccess = { up = \"1 Mbit/s\" }")), "peers[0].access"),
        // Peers but no home.
        (format!("{LINE}{}", home.replace("home = true\n", "")), "peers"),
        // Two homes.
        (format!("{LINE}{}", home.replace("role = \"leecher\"", "role = \"leecher\"\nhome = true")), "peers[1].home"),
        // A home without a household.
        (home.to_string(), "peers[0].home"),
        // Remote peers closer than the first hop.
        (LINE.replace("rtt = \"60 ms\"", "rtt = \"5 ms\""), "network.rtt"),
        // An unlimited line.
        (LINE.replace("up = \"416 kbit/s\"", "up = \"unlimited\""), "household.up"),
        // Cross traffic without a household.
        ("[torrent]\nsize = \"1 MB\"\n[[peers]]\nrole = \"seed\"\n[[peers]]\nrole = \"leecher\"\n[[traffic]]\nkind = \"ping\"\n"
            .to_string(), "traffic"),
        // Even pacing without a limit.
        (format!("{LINE}{}", home.replace("home = true", "home = true\nupload_limit = \"unlimited\"\npacing = \"even\"")), "peers[0].pacing"),
        // An unknown pacing preset.
        (format!("{LINE}{}", home.replace("home = true", "home = true\npacing = \"fast\"")), "peers[0].pacing"),
    ];
    for (rest, field) in cases {
        let toml = format!("[run]\nduration = \"10 s\"\n{rest}");
        match AnyScenario::from_toml_str(&toml, "h.toml") {
            Err(e) => assert_eq!(e.field, field, "{e}"),
            Ok(_) => panic!("accepted, expected an error at {field}:\n{toml}"),
        }
    }
}
