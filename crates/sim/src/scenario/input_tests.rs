//! Checks of what a scenario's author can get wrong in its input: names used
//! as paths, quantities out of range or in the wrong case, serde's messages in
//! plain words, `.torrent` limits, and every shipped scenario still valid.

use super::*;

const DUMBBELL: &str = r#"
[run]
duration = "30 s"
[network]
one_way_delay = "25 ms"
[network.bottleneck]
capacity = "10 Mbit/s"
buffer = "40 packets"
[[flows]]
cc = "newreno"
count = 2
"#;

const SWARM: &str = r#"
[run]
duration = "1 h"
[torrent]
size = "4 MB"
[[peers]]
role = "seed"
[[peers]]
role = "leecher"
count = 5
"#;

fn dumbbell(text: &str) -> Result<AnyScenario, ScenarioError> {
    AnyScenario::from_toml_str(text, "a.toml")
}

fn bad_dumbbell(from: &str, to: &str) -> ScenarioError {
    assert!(DUMBBELL.contains(from), "{from}");
    dumbbell(&DUMBBELL.replacen(from, to, 1)).expect_err("must be rejected")
}

fn bad_swarm(from: &str, to: &str) -> ScenarioError {
    assert!(SWARM.contains(from), "{from}");
    AnyScenario::from_toml_str(&SWARM.replacen(from, to, 1), "a.toml").expect_err("must be rejected")
}

// ---- names ---------------------------------------------------------------

#[test]
fn a_name_that_climbs_out_of_the_results_directory_is_rejected() {
    let e = dumbbell(&format!("name = \"../x\"\n{DUMBBELL}")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "a.toml: name: must be one plain file name (no '/' or '\\', no control characters, not '.' or '..', \
         not empty): \"../x\""
    );
}

#[test]
fn empty_dot_absolute_backslash_and_control_character_names_are_rejected() {
    for name in ["", " ", ".", "..", "/tmp/x", "a/b", "a\\\\b", "a\\u0000b", "a\\nb", "C:\\\\x"] {
        let e = dumbbell(&format!("name = \"{name}\"\n{DUMBBELL}")).unwrap_err();
        assert_eq!(e.field, "name", "{name}");
        assert!(e.message.starts_with("must be one plain file name"), "{name}: {e}");
    }
    let e = bad_swarm("[run]", "name = \"..\"\n[run]");
    assert_eq!(e.field, "name");
}

#[test]
fn a_name_longer_than_255_bytes_is_rejected() {
    let e = dumbbell(&format!("name = \"{}\"\n{DUMBBELL}", "x".repeat(256))).unwrap_err();
    assert_eq!(e.field, "name");
    assert!(e.message.starts_with("is 256 bytes long; at most 255"), "{e}");
    assert!(dumbbell(&format!("name = \"{}\"\n{DUMBBELL}", "x".repeat(255))).is_ok());
}

#[test]
fn plain_names_with_dots_dashes_and_spaces_are_kept() {
    for name in ["rossi2010-a", "a.b", "...", "run 1", "é"] {
        let s = dumbbell(&format!("name = \"{name}\"\n{DUMBBELL}")).unwrap();
        assert_eq!(s.name(), name);
    }
}

#[test]
fn the_default_name_from_the_file_name_is_always_one_safe_component() {
    use validate::default_name;
    assert_eq!(default_name("scenarios/rao2010/flash-crowd.toml"), "flash-crowd");
    assert_eq!(default_name("<dict>"), "<dict>");
    assert_eq!(default_name("x/..toml"), "scenario", "the stem of ..toml is .");
    assert_eq!(default_name("x/.."), "scenario");
    assert_eq!(default_name("/"), "scenario");
    assert_eq!(default_name(""), "scenario");
    assert_eq!(default_name("d/a\\b\nc.toml"), "a_b_c");
    assert_eq!(default_name(&format!("{}.toml", "y".repeat(300))).len(), 255);
    let s = AnyScenario::from_toml_str(DUMBBELL, "dir/..toml").unwrap();
    assert_eq!(s.name(), "scenario");
}

// ---- quantities in context ---------------------------------------------------

#[test]
fn a_duration_out_of_range_names_its_field_and_the_maximum() {
    let e = bad_dumbbell("\"30 s\"", "\"1e400 s\"");
    assert_eq!(
        e.to_string(),
        "a.toml: run.duration: '1e400 s' is out of range; the largest duration allowed is 8760 h (one year)"
    );
    let e = bad_dumbbell("\"25 ms\"", "\"9000 h\"");
    assert_eq!(e.field, "network.one_way_delay");
    assert!(e.message.contains("out of range"), "{e}");
}

#[test]
fn a_scenario_in_scientific_notation_is_accepted() {
    let text = DUMBBELL.replace("\"30 s\"", "\"3e4 ms\"").replace("\"10 Mbit/s\"", "\"1e7 bit/s\"");
    let AnyScenario::Dumbbell(s) = dumbbell(&text).unwrap() else { panic!("a dumbbell") };
    assert_eq!(s.duration, Duration::from_secs(30));
    assert_eq!(s.network.bottleneck.capacity_bps, Some(10_000_000));
}

#[test]
fn a_capacity_past_one_terabit_per_second_is_rejected_not_capped() {
    let e = bad_dumbbell("\"10 Mbit/s\"", "\"3e10 Gbit/s\"");
    assert_eq!(e.field, "network.bottleneck.capacity");
    assert!(e.message.contains("out of range") && e.message.contains("1 Tbit/s"), "{e}");
}

#[test]
fn a_wrong_case_unit_in_a_file_names_the_field_and_the_right_unit() {
    let e = bad_dumbbell("\"10 Mbit/s\"", "\"10 mbit/s\"");
    assert_eq!(e.field, "network.bottleneck.capacity");
    assert!(e.message.contains("did you mean \"Mbit/s\"?"), "{e}");
    let e = bad_swarm("\"4 MB\"", "\"4 mb\"");
    assert_eq!(e.field, "torrent.size");
    assert!(e.message.contains("did you mean \"MB\"?") && e.message.contains("KiB"), "{e}");
    let e = bad_swarm("\"4 MB\"", "\"1 TB\"");
    assert!(e.message.contains("\"TB\" is not a size unit") && e.message.contains("GiB"), "{e}");
    let e = bad_dumbbell("[[flows]]", "[network.access]\ncapacity = \"Unlimited\"\n[[flows]]");
    assert_eq!(e.field, "network.access.capacity");
    assert!(e.message.contains("did you mean \"unlimited\"?"), "{e}");
}

#[test]
fn a_swarm_may_hold_a_hundred_thousand_peers_and_no_more() {
    // The seed and 99,999 leechers.
    let ok = SWARM.replace("count = 5", "count = 99999");
    assert!(AnyScenario::from_toml_str(&ok, "a.toml").is_ok());
    let e = bad_swarm("count = 5", "count = 100000");
    assert_eq!(e.field, "peers[1].count");
    assert_eq!(e.message, "the swarm would exceed 100000 peers");
    let e = bad_swarm("count = 5", "count = 100001");
    assert_eq!(e.message, "must be between 1 and 100000");
}

#[test]
fn poisson_arrivals_that_could_outrun_the_clock_are_rejected() {
    let e = bad_swarm("count = 5", "count = 19999\njoin = { poisson = \"8760 h\" }");
    assert_eq!(e.field, "peers[1].join.poisson");
    assert!(e.message.contains("ten years"), "{e}");
    let ok = SWARM.replace("count = 5", "count = 10\njoin = { poisson = \"8760 h\" }");
    assert!(AnyScenario::from_toml_str(&ok, "a.toml").is_ok());
}

// ---- serde's messages in plain words ----------------------------------------

#[test]
fn a_table_given_a_number_says_a_table_not_a_struct() {
    let e = dumbbell("run = 3\n").unwrap_err();
    assert_eq!(e.field, "run");
    assert_eq!(e.message, "invalid type: integer `3`, expected a table");
}

#[test]
fn a_count_given_as_text_or_negative_says_a_whole_number() {
    let e = bad_dumbbell("count = 2", "count = \"2\"");
    assert_eq!(e.field, "flows[0].count");
    assert_eq!(e.message, "invalid type: string \"2\", expected a whole number from 0 to 4294967295");
    let e = bad_dumbbell("count = 2", "count = -2");
    assert!(e.message.contains("expected a whole number") && !e.message.contains("u32"), "{e}");
    let e = dumbbell(&format!("[run]\nseed = \"x\"\n{}", DUMBBELL.replace("[run]", ""))).unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.message.as_str()),
        ("run.seed", "invalid type: string \"x\", expected a whole number >= 0")
    );
}

#[test]
fn a_probability_given_as_text_says_a_number() {
    let e = bad_dumbbell("[[flows]]", "[network.loss]\ndata = \"1%\"\n[[flows]]");
    assert_eq!(e.field, "network.loss.data");
    assert_eq!(e.message, "invalid type: string \"1%\", expected a number");
}

#[test]
fn a_flag_given_as_text_says_true_or_false() {
    let e = bad_dumbbell("[[flows]]", "[metrics]\nqueue_log = \"yes\"\n[[flows]]");
    assert_eq!(e.field, "metrics.queue_log");
    assert_eq!(e.message, "invalid type: string \"yes\", expected true or false");
}

#[test]
fn flows_given_as_a_table_say_a_list() {
    let text = DUMBBELL.replace("[[flows]]\ncc = \"newreno\"\ncount = 2", "[flows]\ncc = \"newreno\"");
    let e = dumbbell(&text).unwrap_err();
    assert_eq!(e.field, "flows");
    assert_eq!(e.message, "invalid type: table, expected a list");
}

#[test]
fn a_controller_given_as_a_number_lists_the_names() {
    let e = bad_dumbbell("cc = \"newreno\"", "cc = 3");
    assert_eq!(e.field, "flows[0].cc");
    assert!(e.message.starts_with("expected a string, one of \"newreno\", \"cubic\""), "{e}");
    let e = AnyScenario::from_json_str(
        r#"{"run": {"duration": "1 s"}, "torrent": {"size": "1 MB"},
        "peers": [{"role": 1}]}"#,
        "<dict>",
    )
    .unwrap_err();
    assert_eq!(e.field, "peers[0].role");
    assert!(e.message.ends_with("expected a string, one of \"seed\", \"leecher\""), "{e}");
}

#[test]
fn a_join_of_the_wrong_form_lists_the_forms() {
    let e = bad_swarm("count = 5", "count = 5\njoin = 3");
    assert_eq!(e.field, "peers[1].join");
    assert!(e.message.starts_with("expected a time such as \"30 s\"") && e.message.contains("poisson"), "{e}");
    let e = bad_swarm("count = 5", "count = 5\npipeline = true");
    assert_eq!(e.field, "peers[1].pipeline");
    assert_eq!(e.message, "expected \"mainline\" or a whole number from 1 to 1000");
}

#[test]
fn no_message_names_a_rust_type() {
    let cases = [
        ("count = 2", "count = 2.5"),
        ("count = 2", "count = []"),
        ("count = 2", "tcp = 3"),
        ("count = 2", "tcp = { mss = \"big\" }"),
        ("count = 2", "label = 3"),
        ("[[flows]]", "[cubic]\nc = \"x\"\n[[flows]]"),
        ("[[flows]]", "[network.loss]\ndata = []\n[[flows]]"),
    ];
    for (from, to) in cases {
        let e = bad_dumbbell(from, to);
        for word in ["u32", "u64", "f64", "i64", "usize", "struct", "Raw", "sequence", " map", "enum"] {
            assert!(!e.message.contains(word), "{to}: {e}");
        }
    }
}

// ---- .torrent files -----------------------------------------------------------

/// Writes a single-file `.torrent` with this length and piece length.
fn torrent_file(dir: &Path, length: u64, piece: u64) -> std::path::PathBuf {
    let pieces = length.div_ceil(piece) as usize;
    let mut b =
        format!("d4:infod6:lengthi{length}e4:name1:a12:piece lengthi{piece}e6:pieces{}:", pieces * 20).into_bytes();
    b.extend(vec![7u8; pieces * 20]);
    b.extend(b"ee");
    let p = dir.join(format!("t-{length}-{piece}.torrent"));
    std::fs::write(&p, b).unwrap();
    p
}

#[test]
fn a_torrent_file_keeps_to_the_documented_piece_size_limits() {
    let dir = std::env::temp_dir().join(format!("torrentlab-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("s.toml").display().to_string();
    let with = |p: &Path| {
        let text =
            SWARM.replace("size = \"4 MB\"", &format!("file = \"{}\"", p.file_name().unwrap().to_str().unwrap()));
        AnyScenario::from_toml_str(&text, &scenario)
    };
    let AnyScenario::Swarm(s) = with(&torrent_file(&dir, 1 << 20, 1 << 15)).unwrap() else { panic!() };
    assert_eq!((s.torrent.length, s.torrent.pieces()), (1 << 20, 32));
    let e = with(&torrent_file(&dir, 1 << 20, 8192)).unwrap_err();
    assert_eq!(e.field, "torrent.file");
    assert!(
        e.message.contains("piece length of 8192 bytes is out of range") && e.message.contains("16 KiB to 64 MiB"),
        "{e}"
    );
    let e = with(&torrent_file(&dir, 1 << 28, 128 << 20)).unwrap_err();
    assert!(e.message.contains("134217728 bytes is out of range"), "{e}");
    let e = with(&torrent_file(&dir, 1_000_001 * 16_384, 16_384)).unwrap_err();
    assert!(e.message.contains("1000001 pieces is more than 1000000"), "{e}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn torrent_sizes_keep_to_the_same_limits() {
    let e = bad_swarm("size = \"4 MB\"", "size = \"0 B\"");
    assert_eq!((e.field.as_str(), e.message.as_str()), ("torrent.size", "must be greater than zero"));
    let e = bad_swarm("size = \"4 MB\"", "size = \"4 MB\"\npiece_size = \"8 KiB\"");
    assert_eq!(e.field, "torrent.piece_size");
    let e = bad_swarm("size = \"4 MB\"", "size = \"20 GB\"\npiece_size = \"16 KiB\"");
    assert_eq!(e.field, "torrent.size");
    assert!(e.message.contains("1220704 pieces is more than 1000000"), "{e}");
}

// ---- shipped scenarios --------------------------------------------------------

#[test]
fn every_shipped_scenario_still_validates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut n = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".toml") && !name.ends_with(".sweep.toml") {
                AnyScenario::from_file(&p).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
    }
    assert!(n >= 14, "found {n} scenarios");
}

// ---- access links and their logs in a swarm --------------------------------

#[test]
fn a_buffer_given_as_time_is_taken_at_the_uplink_rate_and_ignored_on_an_unlimited_downlink() {
    let text = SWARM.replacen(
        "[[peers]]",
        "[network.access]\nup = \"1 Mbit/s\"\ndown = \"unlimited\"\nbuffer = \"1 s\"\n[[peers]]",
        1,
    );
    let Ok(AnyScenario::Swarm(sc)) = AnyScenario::from_toml_str(&text, "a.toml") else { panic!("must validate") };
    assert_eq!(sc.classes[0].uplink.buffer, torrentlab_net::BufferLimit::Bytes(125_000), "1 s at 1 Mbit/s");
    assert_eq!(sc.classes[1].downlink.capacity_bps, None);
}

fn swarm(from: &str, to: &str) -> crate::scenario::SwarmScenario {
    assert!(SWARM.contains(from), "{from}");
    match AnyScenario::from_toml_str(&SWARM.replacen(from, to, 1), "a.toml") {
        Ok(AnyScenario::Swarm(sc)) => sc,
        other => panic!("must validate as a swarm: {other:?}"),
    }
}

#[test]
fn a_class_access_table_overrides_network_access_field_by_field() {
    let sc = swarm(
        "role = \"seed\"\n",
        "role = \"seed\"\naccess = { up = \"5 Mbit/s\" }\n[network.access]\nup = \"1 Mbit/s\"\nbuffer = \"1 s\"\n",
    );
    let (seed, leecher) = (&sc.classes[0], &sc.classes[1]);
    assert_eq!(seed.uplink.capacity_bps, Some(5_000_000));
    assert_eq!(seed.uplink.buffer, torrentlab_net::BufferLimit::Bytes(625_000), "1 s at the class's 5 Mbit/s");
    assert_eq!(leecher.uplink.capacity_bps, Some(1_000_000));
    assert_eq!(leecher.uplink.buffer, torrentlab_net::BufferLimit::Bytes(125_000));
}

#[test]
fn an_upload_limit_as_a_multiple_of_the_uplink_needs_a_limited_uplink() {
    let sc = swarm("count = 5\n", "count = 5\nupload_limit = \"5 x uplink\"\naccess = { up = \"1 Mbit/s\" }\n");
    assert_eq!(sc.classes[1].client.upload_rate, Some(625_000.0));
    let e = bad_swarm("count = 5\n", "count = 5\nupload_limit = \"5 x uplink\"\n");
    assert_eq!(e.field, "peers[1].upload_limit");
    assert!(e.message.contains("\"unlimited\""), "{e}");
}

#[test]
fn a_libtorrent_class_gets_libtorrents_defaults_and_its_own_utp() {
    use torrentlab_bittorrent::choker::ChokerKind;
    use torrentlab_bittorrent::dial::{Dial, Transport};
    use torrentlab_bittorrent::pipeline::Pipeline;
    let sc = swarm("count = 5\n", "count = 5\nclient = \"libtorrent\"\n");
    let (seed, c) = (&sc.classes[0], &sc.classes[1]);
    assert_eq!(c.client.choker, ChokerKind::Libtorrent);
    assert_eq!(c.client.pipeline, Pipeline::Libtorrent);
    assert_eq!((c.client.upload_slots, c.client.upload_rate), (8, None));
    assert_eq!(c.client.transports.dial, Dial::UtpThenTcp);
    assert_eq!(c.utp, torrentlab_transport::utp::UtpConfig::libtorrent());
    assert_eq!(seed.utp, torrentlab_transport::utp::UtpConfig::default(), "a mainline class keeps libutp's");
    // One transport only, and the [utp] table over libtorrent's defaults.
    let sc =
        swarm("count = 5\n", "count = 5\nclient = \"libtorrent\"\ntransport = \"tcp\"\nutp = { target = \"50 ms\" }\n");
    let c = &sc.classes[1];
    assert_eq!(c.client.transports.dial, Dial::Only(Transport::Tcp));
    assert!(c.client.transports.accept_utp);
    assert_eq!(c.utp.cc.target, torrentlab_engine::Duration::from_millis(50));
    assert!(c.utp.mtu_probing && c.utp.min_rto == torrentlab_engine::Duration::from_millis(500));
    let e = bad_swarm("count = 5\n", "count = 5\nclient = \"libtorrent\"\ndisposition = 31\n");
    assert_eq!(e.field, "peers[1].disposition");
}

#[test]
fn a_libtorrent_class_follows_the_mixed_mode_rule_of_its_release_series() {
    use torrentlab_bittorrent::limiter::{MixedMode, Series};
    let sc = swarm("count = 5\n", "count = 5\nclient = \"libtorrent\"\n");
    assert_eq!(sc.classes[1].client.mixed_mode, Some(MixedMode::PeerProportional(Series::V1_2)));
    let sc = swarm("count = 5\n", "count = 5\nclient = \"libtorrent\"\nversion = \"2.0\"\n");
    assert_eq!(sc.classes[1].client.mixed_mode, Some(MixedMode::PeerProportional(Series::V2_0)));
    let sc =
        swarm("count = 5\n", "count = 5\nclient = \"libtorrent\"\nversion = \"2.0\"\nmixed_mode = \"prefer_tcp\"\n");
    assert_eq!(sc.classes[1].client.mixed_mode, Some(MixedMode::PreferTcp));
    let e = bad_swarm("count = 5\n", "count = 5\nversion = \"2.0\"\n");
    assert_eq!(e.field, "peers[1].version");
    assert!(e.message.contains("client = \"libtorrent\""), "{e}");
    let e = bad_swarm("count = 5\n", "count = 5\nclient = \"libtorrent\"\nversion = \"2.1\"\n");
    assert_eq!(e.field, "peers[1].version");
    assert!(e.message.contains("1.2") && e.message.contains("2.0"), "{e}");
}

#[test]
fn a_libtorrent_class_charges_ip_overhead_to_its_limit_unless_told_not_to_and_only_libtorrent_may_say() {
    let sc = swarm("count = 5\n", "count = 5\nclient = \"libtorrent\"\n");
    assert!(sc.classes[1].client.rate_limit_ip_overhead, "libtorrent's default");
    assert!(!sc.classes[0].client.rate_limit_ip_overhead, "mainline never");
    let sc = swarm("count = 5\n", "count = 5\nclient = \"libtorrent\"\nrate_limit_ip_overhead = false\n");
    assert!(!sc.classes[1].client.rate_limit_ip_overhead);
    let e = bad_swarm("count = 5\n", "count = 5\nrate_limit_ip_overhead = true\n");
    assert_eq!(e.field, "peers[1].rate_limit_ip_overhead");
    assert!(e.message.contains("client = \"libtorrent\""), "{e}");
    let e = bad_swarm("count = 5\n", "count = 5\nclient = \"utorrent\"\nrate_limit_ip_overhead = false\n");
    assert_eq!(e.field, "peers[1].rate_limit_ip_overhead");
}

#[test]
fn only_a_libtorrent_class_has_the_fast_extension_which_it_may_turn_off() {
    let sc = swarm("count = 5\n", "count = 5\nclient = \"libtorrent\"\n");
    let (seed, c) = (&sc.classes[0], &sc.classes[1]);
    assert!(c.client.fast_extension && c.client.allowed_fast_set_size == 5);
    assert!(!seed.client.fast_extension, "mainline 4.0.x has none");
    let sc = swarm("count = 5\n", "count = 5\nclient = \"libtorrent\"\nfast_extension = false\n");
    assert!(!sc.classes[1].client.fast_extension);
    let e = bad_swarm("count = 5\n", "count = 5\nfast_extension = true\n");
    assert_eq!(e.field, "peers[1].fast_extension");
    assert!(e.message.contains("only the libtorrent profile"), "{e}");
    // Every peer of a scenario hashes the same stand-in info hash.
    assert_ne!(sc.torrent.info_hash, [0; 20]);
}

#[test]
fn a_disposition_belongs_to_utorrent_classes_and_must_dial_or_answer_something() {
    use torrentlab_bittorrent::dial::{Dial, Transport};
    let e = bad_swarm("count = 5\n", "count = 5\ndisposition = 31\n");
    assert_eq!(e.field, "peers[1].disposition");
    assert!(e.message.contains("client = \"utorrent\""), "{e}");
    let e = bad_swarm("count = 5\n", "count = 5\nclient = \"utorrent\"\ndisposition = 16\n");
    assert_eq!(e.field, "peers[1].disposition");
    assert!(e.message.contains("at least one of 1, 2, 4, 8"), "{e}");
    let e = bad_swarm("count = 5\n", "count = 5\nclient = \"utorrent\"\ntransport = \"utp\"\n");
    assert_eq!(e.field, "peers[1].transport");
    let e = bad_swarm("count = 5\n", "count = 5\nclient = \"qbittorrent\"\n");
    assert_eq!(e.field, "peers[1].client");
    assert!(e.message.contains("mainline") && e.message.contains("utorrent"), "{e}");
    let sc = swarm("count = 5\n", "count = 5\nclient = \"utorrent\"\n");
    let c = &sc.classes[1];
    assert_eq!(c.client.transports.dial, Dial::Parallel, "31 by default");
    assert_eq!(c.client.upload_rate, None, "uTorrent uploads without a limit by default");
    let sc = swarm("count = 5\n", "count = 5\nclient = \"utorrent\"\ndisposition = 5\n");
    assert_eq!(sc.classes[1].client.transports.first_dials(), &[Transport::Tcp]);
    assert!(!sc.classes[1].client.transports.accept_utp);
}

#[test]
fn an_uplink_log_needs_a_limited_uplink_and_at_most_as_many_peers_as_there_are() {
    let e = bad_swarm("count = 5\n", "count = 5\n[metrics]\nuplink_log_peers = 1\n");
    assert_eq!(e.field, "metrics.uplink_log_peers");
    assert!(e.message.contains("unlimited") && e.message.contains("allowed: 0"), "{e}");
    // The seed's own uplink is limited; the leechers' are not.
    let e = bad_swarm(
        "role = \"seed\"\n",
        "role = \"seed\"\naccess = { up = \"1 Mbit/s\" }\n[metrics]\nuplink_log_peers = 2\n",
    );
    assert!(e.message.contains("network.access.up (class 1)") && e.message.contains("allowed: 0 to 1"), "{e}");
    let e =
        bad_swarm("count = 5\n", "count = 5\n[network.access]\nup = \"1 Mbit/s\"\n[metrics]\nuplink_log_peers = 7\n");
    assert_eq!(e.field, "metrics.uplink_log_peers");
    assert!(e.message.contains("allowed: 0 to 6"), "{e}");
}

#[test]
fn an_unknown_or_misspelt_tcp_preset_lists_the_preset_names() {
    let e = bad_dumbbell("cc = \"newreno\"", "cc = \"newreno\"\ntcp = { preset = \"linux-2.6\" }");
    assert_eq!(e.field, "flows[0].tcp.preset");
    for name in ["rfc", "linux", "linux-2.6.32", "linux-6"] {
        assert!(e.message.contains(&format!("`{name}`")), "{e}");
    }
    let e = bad_dumbbell("cc = \"newreno\"", "cc = \"newreno\"\ntcp = { preset = 6 }");
    assert_eq!(e.message, "expected a string, one of \"rfc\", \"linux\", \"linux-2.6.32\", \"linux-6\"", "{e}");
}

// ---- [capture] ----------------------------------------------------------------

#[test]
fn capture_peers_by_index_and_by_label_are_merged_sorted_and_without_repeats() {
    let sc = swarm("count = 5\n", "count = 5\n[capture]\npeers = [4, \"seed\", 2, 4]\nsnaplen = 128\n");
    let c = sc.capture.expect("captured");
    assert_eq!((c.peers, c.snaplen), (vec![0, 2, 4], 128));
    let sc = swarm("count = 5\n", "count = 5\n[capture]\npeers = [\"leecher\"]\n");
    assert_eq!(sc.capture.unwrap().peers, vec![1, 2, 3, 4, 5]);
    assert_eq!(swarm("count = 5\n", "count = 5\n[capture]\npeers = [1]\n").capture.unwrap().snaplen, 262_144);
    assert_eq!(swarm("count = 5\n", "count = 5\n").capture, None);
}

#[test]
fn a_capture_of_a_peer_or_class_that_does_not_exist_names_the_entry_and_what_is_allowed() {
    let e = bad_swarm("count = 5\n", "count = 5\n[capture]\npeers = [0, 6]\n");
    assert_eq!(e.field, "capture.peers[1]");
    assert!(e.message.contains("6 is not a peer") && e.message.contains("0 to 5"), "{e}");
    assert!(e.message.contains("\"seed\", \"leecher\""), "{e}");
    let e = bad_swarm("count = 5\n", "count = 5\n[capture]\npeers = [\"crowd\"]\n");
    assert_eq!(e.field, "capture.peers[0]");
    assert!(e.message.contains("\"crowd\" is no class's label"), "{e}");
    let e = bad_swarm("count = 5\n", "count = 5\n[capture]\npeers = [-1]\n");
    assert_eq!(e.field, "capture.peers[0]");
    let e = bad_swarm("count = 5\n", "count = 5\n[capture]\npeers = [1.5]\n");
    assert!(e.field.starts_with("capture.peers"), "{e}");
    assert!(e.message.contains("a peer index such as 0 or a class label"), "{e}");
}

#[test]
fn a_capture_needs_peers_and_a_snap_length_in_range() {
    let e = bad_swarm("count = 5\n", "count = 5\n[capture]\nsnaplen = 100\n");
    assert_eq!((e.field.as_str(), e.message.contains("missing")), ("capture.peers", true), "{e}");
    let e = bad_swarm("count = 5\n", "count = 5\n[capture]\npeers = []\n");
    assert!(e.message.contains("empty"), "{e}");
    for bad in ["84", "262145", "-1"] {
        let e = bad_swarm("count = 5\n", &format!("count = 5\n[capture]\npeers = [0]\nsnaplen = {bad}\n"));
        assert_eq!(e.field, "capture.snaplen");
        assert!(e.message.contains("allowed: 85 to 262144"), "{e}");
    }
    let e = bad_swarm("count = 5\n", "count = 5\n[capture]\npeers = [0]\nsnap = 100\n");
    assert!(e.field.starts_with("capture"), "{e}");
    assert!(e.message.contains("snap"), "{e}");
}

#[test]
fn more_peers_than_a_run_may_capture_are_refused() {
    let e = bad_swarm("count = 5\n", "count = 100\n[capture]\npeers = [\"leecher\"]\n");
    assert_eq!(e.field, "capture.peers");
    assert!(e.message.contains("at most 64"), "{e}");
}

#[test]
fn a_household_run_refuses_a_capture_naming_the_table() {
    let text = "[run]\nduration = \"10 s\"\n[network]\nrtt = \"60 ms\"\n[household]\nup = \"416 kbit/s\"\n\
                down = \"2.4 Mbit/s\"\nup_buffer = \"40 packets\"\ndown_buffer = \"40 packets\"\n\
                first_hop_rtt = \"12 ms\"\n[[traffic]]\nkind = \"ping\"\n\
                interval = \"100 ms\"\n[capture]\npeers = [0]\n";
    let e = AnyScenario::from_toml_str(text, "h.toml").expect_err("must be rejected");
    assert_eq!(e.field, "capture", "{e}");
    assert!(e.message.contains("household"), "{e}");
    let ok = text.replace("[capture]\npeers = [0]\n", "");
    assert!(AnyScenario::from_toml_str(&ok, "h.toml").is_ok(), "the same household without [capture] is fine");
}

#[test]
fn a_dumbbell_with_a_capture_is_told_captures_are_of_swarm_peers() {
    let e = dumbbell(&format!("{DUMBBELL}\n[capture]\npeers = [0]\n")).expect_err("must be rejected");
    assert_eq!(e.field, "capture");
    assert!(e.message.contains("swarm peers"), "{e}");
    let json = r#"{"run": {"duration": "1 s"}, "capture": {"peers": [0]}}"#;
    let e = AnyScenario::from_json_str(json, "<dict>").expect_err("must be rejected");
    assert_eq!((e.field.as_str(), e.file.as_str()), ("capture", "<dict>"));
}
