//! Good and bad scenario files: every bad one gives one message naming the file,
//! the field and what is allowed.

use super::*;
use torrentlab_net::BufferLimit;

const GOOD: &str = r#"
[run]
seed = 7
duration = "30 s"

[network]
one_way_delay = "25 ms"
[network.bottleneck]
capacity = "10 Mbit/s"
buffer = "40 packets"

[[flows]]
cc = "newreno"

[[flows]]
cc = "ledbat"
start = "2 s"
"#;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::from_toml_str(text, "test.toml")
}

/// Replaces `from` by `to` in the good file and returns the error.
fn bad(from: &str, to: &str) -> ScenarioError {
    assert!(GOOD.contains(from), "{from} not in the good scenario");
    let e = parse(&GOOD.replacen(from, to, 1)).expect_err("must be rejected");
    assert_eq!(e.file, "test.toml");
    e
}

#[test]
fn a_good_scenario_parses_with_defaults_filled_in() {
    let s = parse(GOOD).unwrap();
    assert_eq!(s.seed, 7);
    assert_eq!(s.name, "test");
    assert_eq!(s.duration, Duration::from_secs(30));
    assert_eq!(s.network.bottleneck.buffer, BufferLimit::Packets(40));
    assert_eq!(s.flows.len(), 2);
    assert_eq!(s.flows[1].start, StartSpec::At(Duration::from_secs(2)));
    assert_eq!(s.flows[0].tcp, TcpConfig::rfc());
    assert!(matches!(s.flows[1].cc, CcConfig::Ledbat(_)));
    assert_eq!(s.metrics.sample_interval, Some(Duration::from_millis(100)));
}

#[test]
fn per_flow_settings_override_the_global_ones_field_by_field() {
    let text = GOOD.replace(
        "[[flows]]\ncc = \"newreno\"",
        "[tcp]\npreset = \"linux\"\nmss = 1000\n\n[[flows]]\ncc = \"newreno\"\ncount = 3\ntcp = { initial_window = 4 }",
    );
    let s = parse(&text).unwrap();
    assert_eq!(s.flows.len(), 4);
    assert_eq!(s.flows[0].tcp.initial_window, 4);
    assert_eq!(s.flows[0].tcp.mss, 1000);
    assert_eq!(s.flows[0].tcp.min_rto, Duration::from_millis(200));
    assert_eq!(s.flows[3].tcp.initial_window, 10, "the linux preset's window");
    assert_eq!(s.flows[2].label, "newreno-2");
}

#[test]
fn a_flow_can_have_its_own_one_way_delay() {
    let s = parse(&GOOD.replace("start = \"2 s\"", "start = \"2 s\"\none_way_delay = \"100 ms\"")).unwrap();
    assert_eq!(s.flows[0].one_way_delay, None);
    assert_eq!(s.flows[1].one_way_delay, Some(Duration::from_millis(100)));
}

#[test]
fn a_buffer_in_seconds_becomes_bytes_at_the_link_capacity() {
    let s = parse(&GOOD.replace("\"40 packets\"", "\"1 s\"")).unwrap();
    assert_eq!(s.network.bottleneck.buffer, BufferLimit::Bytes(1_250_000));
}

#[test]
fn an_empty_file_is_reported_as_empty() {
    let e = parse("  \n").unwrap_err();
    assert_eq!(e.field, "(file)");
    assert!(e.message.contains("empty"), "{e}");
}

#[test]
fn a_missing_file_is_reported_as_missing() {
    let e = Scenario::from_file(Path::new("/nonexistent/x.toml")).unwrap_err();
    assert_eq!((e.file.as_str(), e.field.as_str()), ("/nonexistent/x.toml", "(file)"));
    assert!(e.message.contains("no such file"), "{e}");
}

#[test]
fn a_non_utf8_file_is_reported_with_the_byte_offset() {
    let dir = std::env::temp_dir().join(format!("torrentlab-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.toml");
    std::fs::write(&p, b"[run]\nduration = \"1 s\xff\"\n").unwrap();
    let e = Scenario::from_file(&p).unwrap_err();
    assert!(e.message.contains("not UTF-8") && e.message.contains("offset 21"), "{e}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_toml_syntax_error_gives_its_line_and_column() {
    let e = bad("seed = 7", "seed = = 7");
    assert_eq!(e.field, "line 3, column 8");
    assert!(e.message.starts_with("TOML syntax error"), "{e}");
}

#[test]
fn an_unknown_field_is_named_with_the_allowed_ones() {
    let e = bad("buffer = \"40 packets\"", "buffer = \"40 packets\"\nbufer = 3");
    assert_eq!(e.field, "network.bottleneck.bufer");
    assert!(e.message.contains("unknown field `bufer`") && e.message.contains("`buffer`"), "{e}");
}

#[test]
fn a_wrong_type_names_the_field_and_the_expected_form() {
    let e = bad("duration = \"30 s\"", "duration = 30");
    assert_eq!(e.field, "run.duration");
    assert!(e.message.contains("integer") && e.message.contains("\"25 ms\""), "{e}");
}

#[test]
fn an_unknown_congestion_controller_lists_the_known_ones() {
    let e = bad("cc = \"ledbat\"", "cc = \"bbr\"");
    assert_eq!(e.field, "flows[1].cc");
    for known in ["newreno", "cubic", "vegas", "lp", "nice", "ledbat"] {
        assert!(e.message.contains(&format!("`{known}`")), "{e}");
    }
}

#[test]
fn a_negative_capacity_is_rejected() {
    let e = bad("\"10 Mbit/s\"", "\"-10 Mbit/s\"");
    assert_eq!(e.field, "network.bottleneck.capacity");
    assert!(e.message.contains("negative"), "{e}");
}

#[test]
fn a_zero_buffer_is_rejected() {
    let e = bad("\"40 packets\"", "\"0 packets\"");
    assert_eq!(e.field, "network.bottleneck.buffer");
    assert!(e.message.contains("at least one packet"), "{e}");
}

#[test]
fn a_flow_starting_after_the_end_of_the_run_is_rejected() {
    let e = bad("start = \"2 s\"", "start = \"45 s\"");
    assert_eq!(e.field, "flows[1].start");
    assert!(e.message.contains("after the end of the run"), "{e}");
}

#[test]
fn a_stop_before_the_start_is_rejected() {
    let e = bad("start = \"2 s\"", "start = \"2 s\"\nstop = \"1 s\"");
    assert_eq!(e.field, "flows[1].stop");
}

#[test]
fn a_reversed_uniform_start_range_is_rejected() {
    let e = bad("start = \"2 s\"", "start = { uniform = [\"5 s\", \"1 s\"] }");
    assert_eq!(e.field, "flows[1].start.uniform");
}

#[test]
fn a_loss_probability_outside_zero_to_one_is_rejected() {
    let e = bad("[[flows]]", "[network.loss]\ndata = 1.5\n\n[[flows]]");
    assert_eq!(e.field, "network.loss.data");
    assert!(e.message.contains("0 <= p < 1"), "{e}");
}

#[test]
fn a_missing_section_is_named() {
    let e = parse("[run]\nduration = \"1 s\"\n").unwrap_err();
    assert_eq!(e.field, "network");
    assert!(e.message.contains("missing field `network`"), "{e}");
}

#[test]
fn no_flows_at_all_is_rejected() {
    let text = "flows = []\n".to_string() + GOOD.split("[[flows]]").next().unwrap();
    let e = parse(&text).unwrap_err();
    assert_eq!(e.field, "flows");
}

#[test]
fn a_duration_without_a_unit_says_which_units_exist() {
    let e = bad("one_way_delay = \"25 ms\"", "one_way_delay = \"25\"");
    assert_eq!(e.field, "network.one_way_delay");
    assert!(e.message.contains("ms") && e.message.contains("min"), "{e}");
}

#[test]
fn ledbat_settings_on_a_newreno_flow_are_rejected() {
    let e = bad("cc = \"newreno\"", "cc = \"newreno\"\nledbat = { target = \"100 ms\" }");
    assert_eq!(e.field, "flows[0].ledbat");
}

#[test]
fn every_controller_is_selectable_per_flow_with_its_published_defaults() {
    let text = GOOD.replace(
        "cc = \"newreno\"",
        "cc = \"cubic\"\n\n[[flows]]\ncc = \"vegas\"\n\n[[flows]]\ncc = \"lp\"\n\n[[flows]]\ncc = \"nice\"",
    );
    let s = parse(&text).unwrap();
    let names: Vec<_> = s.flows.iter().map(|f| f.cc.name()).collect();
    assert_eq!(names, ["cubic", "vegas", "lp", "nice", "ledbat"]);
    assert_eq!(s.flows[0].cc, CcConfig::Cubic(torrentlab_transport::cc::CubicConfig::default()));
    assert_eq!(s.flows[3].cc, CcConfig::Nice(torrentlab_transport::cc::NiceConfig::default()));
}

#[test]
fn controller_tables_overlay_global_then_per_flow() {
    let text = GOOD.replace(
        "[[flows]]\ncc = \"newreno\"",
        "[vegas]\nalpha = 1.0\nbeta = 3.0\n\n[[flows]]\ncc = \"vegas\"\nvegas = { beta = 5.0 }",
    );
    let s = parse(&text).unwrap();
    let CcConfig::Vegas(v) = &s.flows[0].cc else { panic!() };
    assert_eq!((v.alpha, v.beta, v.gamma), (1.0, 5.0, 1.0));
}

#[test]
fn out_of_range_controller_parameters_name_their_field() {
    let e = bad("cc = \"newreno\"", "cc = \"cubic\"\ncubic = { beta = 1.5 }");
    assert_eq!(e.field, "flows[0].cubic.beta");
    assert!(e.message.contains("between 0 and 1"), "{e}");
    // A global table is checked even when no flow uses its controller.
    let e = parse(&format!("[nice]\nmin_window = 2.0\n{GOOD}")).unwrap_err();
    assert_eq!(e.field, "nice.min_window");
    let e = bad("cc = \"newreno\"", "cc = \"newreno\"\ncubic = { c = 0.4 }");
    assert_eq!(e.field, "flows[0].cubic");
    assert!(e.message.contains("only allowed when cc = \"cubic\""), "{e}");
}

#[test]
fn a_min_rto_above_the_max_rto_is_rejected_at_the_field_that_set_it() {
    let e = bad("cc = \"newreno\"", "cc = \"newreno\"\ntcp = { min_rto = \"90 s\" }");
    assert_eq!(e.field, "flows[0].tcp.min_rto");
}

#[test]
fn a_negative_seed_is_rejected() {
    let e = bad("seed = 7", "seed = -7");
    assert_eq!(e.field, "run.seed");
}

#[test]
fn json_documents_are_validated_the_same_way() {
    let e = Scenario::from_json_str(r#"{"run": {"duration": "1 s"}, "network": 3}"#, "<dict>").unwrap_err();
    assert_eq!((e.file.as_str(), e.field.as_str()), ("<dict>", "network"));
}

#[test]
fn a_utp_flow_takes_a_utp_table_with_its_ledbat_variant() {
    let text = GOOD.replace(
        "cc = \"ledbat\"",
        "transport = \"utp\"\nutp = { variant = \"rfc6817\", target = \"50 ms\", packet_size = 1000 }",
    );
    let s = parse(&text).unwrap();
    let u = s.flows[1].utp.as_ref().expect("a uTP flow");
    assert_eq!(u.packet_size, 1000);
    assert_eq!(u.cc.target, Duration::from_millis(50));
    assert_eq!(u.cc.variant, torrentlab_transport::utp::Variant::Rfc6817);
    assert_eq!(s.flows[1].label, "utp");
    assert!(s.flows[0].utp.is_none());
}

#[test]
fn utp_settings_are_checked_against_their_rfc_limits() {
    let e = bad("cc = \"ledbat\"", "transport = \"utp\"\nutp = { variant = \"rfc6817\", target = \"200 ms\" }");
    assert_eq!(e.field, "flows[1].utp.target");
    assert!(e.message.contains("<= 100 ms"), "{e}");
    let e = bad("cc = \"ledbat\"", "transport = \"utp\"\ncc = \"cubic\"");
    assert_eq!(e.field, "flows[1].cc");
    let e = bad("cc = \"ledbat\"", "cc = \"ledbat\"\nutp = { packet_size = 1000 }");
    assert_eq!(e.field, "flows[1].utp");
    let e = bad("cc = \"ledbat\"", "transport = \"utp\"\nutp = { packet_size = 100 }");
    assert_eq!(e.field, "flows[1].utp.packet_size");
}

#[test]
fn tso_allows_whole_segments_in_a_64_kib_packet() {
    let s = parse(&GOOD.replace("[[flows]]\ncc = \"newreno\"", "[tcp]\ntso = true\n\n[[flows]]\ncc = \"newreno\""))
        .unwrap();
    assert_eq!(s.flows[0].tcp.tso_max, Some(45 * 1448));
    assert_eq!(parse(GOOD).unwrap().flows[0].tcp.tso_max, None);
}

#[test]
fn window_validation_and_the_idle_restart_follow_the_preset_unless_a_flow_sets_them() {
    let text = GOOD.replace(
        "[[flows]]\ncc = \"newreno\"",
        "[tcp]\npreset = \"linux\"\n\n[[flows]]\ncc = \"newreno\"\ntcp = { cwnd_validation = false }",
    );
    let s = parse(&text).unwrap();
    assert!(!s.flows[0].tcp.cwnd_validation, "the flow's own setting");
    assert!(s.flows[1].tcp.cwnd_validation, "the linux preset validates");
    assert!(!parse(GOOD).unwrap().flows[0].tcp.cwnd_validation, "the rfc preset does not");
    assert!(s.flows[0].tcp.slow_start_after_idle && !parse(GOOD).unwrap().flows[0].tcp.slow_start_after_idle);
    let off = text.replace("cwnd_validation = false", "slow_start_after_idle = false");
    assert!(!parse(&off).unwrap().flows[0].tcp.slow_start_after_idle, "a flow can turn the restart off");
}

#[test]
fn a_receive_window_beyond_tcps_largest_is_rejected() {
    let e = bad("cc = \"newreno\"", "cc = \"newreno\"\ntcp = { receive_window = \"2 GiB\" }");
    assert_eq!(e.field, "flows[0].tcp.receive_window");
    assert!(e.message.contains("1 GiB"), "{}", e.message);
}

#[test]
fn the_era_presets_give_the_kernels_parameters_and_recovery_rules_and_the_2_6_window_follows_the_mss() {
    use torrentlab_transport::tcp::NewRenoTimer;
    let with = |preset: &str, extra: &str| {
        let tcp = format!("[tcp]\npreset = \"{preset}\"\n{extra}\n[[flows]]\ncc = \"newreno\"");
        parse(&GOOD.replace("[[flows]]\ncc = \"newreno\"", &tcp)).unwrap().flows[0].tcp.clone()
    };
    assert_eq!(with("linux-2.6.32", ""), TcpConfig::linux_2_6_32());
    assert_eq!(with("linux-6", ""), TcpConfig::linux_6());
    let old = with("linux-2.6.32", "");
    assert_eq!((old.initial_window, old.initial_rto), (3, Duration::from_secs(3)));
    assert_eq!(old.newreno_timer, NewRenoTimer::SlowButSteady);
    assert_eq!(with("linux-2.6.32", "mss = 1000").initial_window, 4, "2.6's tcp_init_cwnd for the MSS");
    assert_eq!(with("linux-2.6.32", "mss = 1460").initial_window, 3, "2.6's threshold is 1460, not 2190");
    assert_eq!(with("linux-6", "mss = 1000").initial_window, 10);
    assert_eq!(with("linux", "").newreno_timer, NewRenoTimer::Impatient, "linux keeps the RFC's recovery");
}
