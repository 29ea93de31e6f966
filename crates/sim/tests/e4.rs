//! Experiment E4 (rossi2010), each run type at small scale. The assertions are
//! about mechanisms (who yields to whom, where the queue settles), not about
//! numbers from the paper.

mod common;
use common::*;
use torrentlab_engine::Duration;
use torrentlab_sim::{run, run_checked};

#[test]
fn run_a_ledbat_yields_to_newreno_and_the_link_stays_busy() {
    let (out, _) = run_checked(&shipped("rossi2010/a-newreno-vs-ledbat.toml", Some(30)));
    let (tcp, ledbat) = (rate(&out, 0), rate(&out, 1));
    assert!(tcp > 3.0 * ledbat, "tcp {tcp} bit/s vs ledbat {ledbat} bit/s");
    assert!(summary(&out, "efficiency") > 0.9);
    assert!(summary(&out, "efficiency") <= 1.0);
    assert!(summary(&out, "jain_index") < 0.9);
}

#[test]
fn run_b_two_ledbat_flows_from_time_zero_share_fairly_near_the_target_delay() {
    let (out, _) = run_checked(&shipped("rossi2010/b-ledbat-vs-ledbat.toml", Some(30)));
    assert!(summary(&out, "jain_index") > 0.95, "F = {}", summary(&out, "jain_index"));
    assert_eq!(summary(&out, "loss_rate"), 0.0, "LEDBAT alone keeps the queue below 40 packets");
    // Queueing delay settles around TARGET = 25 ms (it starts from zero).
    let d = summary(&out, "mean_queue_delay_ms");
    assert!(d > 10.0 && d < 30.0, "mean queueing delay {d} ms");
}

#[test]
fn run_c_a_latecomer_ledbat_takes_more_than_the_first_flow() {
    // With dT = 10 s the first flow already holds a standing queue, which the
    // newcomer counts into its base delay. (With dT = 2 s the queue is still
    // building and both windows freeze where they are when it reaches TARGET.)
    for file in ["rossi2010/c2-latecomer-dt10-b40.toml", "rossi2010/c3-latecomer-dt10-b100.toml"] {
        let (out, _) = run_checked(&shipped(file, Some(40)));
        let (first, second) = (rate(&out, 0), rate(&out, 1));
        assert!(second > first, "{file}: latecomer {second} bit/s vs first {first} bit/s");
        assert!(out.flows.f64_column("start_s")[1] > 0.0);
    }
}

#[test]
fn run_d_measures_fairness_once_both_flows_are_active_with_and_without_slow_start() {
    for slow_start in [false, true] {
        let mut sc = shipped("rossi2010/d-ledbat-vs-ledbat-random-start.toml", Some(30));
        for f in &mut sc.flows {
            f.tcp.slow_start = slow_start;
        }
        let (out, _) = run_checked(&sc);
        let second_start = out.flows.f64_column("start_s")[1];
        assert_eq!(summary(&out, "window_start_s"), second_start);
        let f = summary(&out, "jain_index");
        assert!((0.5..=1.0).contains(&f), "F = {f}");
        assert!(out.timeseries.rows() == 0 && out.queue.rows() == 0, "(d) records summaries only");
    }
}

#[test]
fn run_d_with_slow_start_gets_no_delay_sample_beyond_a_full_buffer_even_through_its_losses() {
    // 2 Mbit/s and 50 packets, slow start on: each flow overshoots, loses
    // packets and recovers. A sample is the delay of the segment that caused
    // the ACK, so none exceeds the 25 ms path, a full buffer, the packet in
    // service and its own serialisation: 25 + 52 x 6 ms = 337 ms. (TSval -
    // TSecr read up to 652 ms here: RFC 7323 echoes the last in-order segment
    // while holes are filled.)
    let bound = 25.0 + 52.0 * 1500.0 * 8.0 / 2e6 * 1e3;
    let mut lossy = 0;
    for seed in 1..=6 {
        let mut sc = shipped("rossi2010/d-ledbat-vs-ledbat-random-start.toml", Some(60));
        sc.seed = seed;
        sc.network.bottleneck.capacity_bps = Some(2_000_000);
        sc.network.bottleneck.buffer = torrentlab_net::BufferLimit::Packets(50);
        for f in &mut sc.flows {
            f.tcp.slow_start = true;
        }
        let (out, _) = run_checked(&sc);
        lossy += (summary(&out, "loss_rate") > 0.0) as u32;
        for &owd in out.flows.f64_column("max_one_way_delay_ms").iter() {
            assert!(owd > 100.0 && owd <= bound, "seed {seed}: largest sample {owd} ms, bound {bound} ms");
        }
    }
    assert!(lossy >= 3, "the runs recover from losses ({lossy} of 6 lost packets)");
}

#[test]
fn slow_start_reaches_a_large_window_faster_than_congestion_avoidance() {
    let mut sc = shipped("rossi2010/b-ledbat-vs-ledbat.toml", Some(2));
    sc.flows.truncate(1);
    sc.metrics.sample_interval = Some(Duration::from_millis(100));
    let without = run(&sc);
    sc.flows[0].tcp.slow_start = true;
    let with = run(&sc);
    let at_half_second = |o: &torrentlab_sim::RunOutput| o.timeseries.f64_column("cwnd_packets")[5];
    assert!(at_half_second(&with) > 2.0 * at_half_second(&without));
}

#[test]
fn a_flow_with_a_longer_path_gets_a_longer_rtt() {
    let mut sc = shipped("rossi2010/b-ledbat-vs-ledbat.toml", Some(5));
    sc.flows[1].one_way_delay = Some(Duration::from_millis(100));
    let out = run(&sc);
    let min_rtt = |flow: i64| {
        let ts = &out.timeseries;
        let (f, r) = (ts.i64_column("flow"), ts.f64_column("srtt_ms"));
        f.iter().zip(r).filter(|(x, r)| **x == flow && !r.is_nan()).map(|(_, r)| *r).fold(f64::MAX, f64::min)
    };
    assert!((50.0..52.0).contains(&min_rtt(0)), "flow 0 RTT {}", min_rtt(0));
    assert!((200.0..202.0).contains(&min_rtt(1)), "flow 1 RTT {}", min_rtt(1));
}

/// Run (d) with slow start at 2 Mbit/s and 50 packets, seed 13, the TCP
/// preset replaced by `preset` (the file's own fields, NewReno without
/// delayed ACKs, stay): the timeouts of each flow.
fn run_d_timeouts_with_preset(preset: &str) -> Vec<i64> {
    let file = scenario_path("rossi2010/d-ledbat-vs-ledbat-random-start.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("preset = \"rfc\""));
    let text = text.replace("preset = \"rfc\"", &format!("preset = \"{preset}\""));
    let mut sc = torrentlab_sim::Scenario::from_toml_str(&text, "d.toml").unwrap();
    sc.seed = 13;
    sc.network.bottleneck.capacity_bps = Some(2_000_000);
    sc.network.bottleneck.buffer = torrentlab_net::BufferLimit::Packets(50);
    for f in &mut sc.flows {
        f.tcp.slow_start = true;
    }
    let (out, _) = run_checked(&sc);
    out.flows.i64_column("timeouts").to_vec()
}

#[test]
fn run_d_with_slow_start_has_its_timeout_cascade_under_the_rfc_preset_and_not_under_the_linux_eras() {
    // Under `rfc` NewReno's "Impatient" timer fires in every long recovery
    // (10 to 17 holes, one per RTT), and each timeout takes ssthresh from a
    // flight the duplicate ACKs inflated to 200 packets and more, so the next
    // slow start overshoots a 59-packet pipe and the cycle repeats. Linux, in
    // every era, restarts the timer on each partial ACK and keeps the
    // recovery's ssthresh on a timeout (docs/model.md, "Loss recovery by
    // kernel era").
    let rfc = run_d_timeouts_with_preset("rfc");
    assert!(rfc.iter().any(|&t| t >= 10), "the cascade as shipped: {rfc:?}");
    for preset in ["linux-6", "linux-2.6.32"] {
        let t = run_d_timeouts_with_preset(preset);
        assert!(t.iter().all(|&t| t < 3), "{preset}: timeouts per flow {t:?}");
    }
}
