//! TCP loss recovery by kernel era on the path `bench/linux_loss.py` measures
//! the host kernel on: one bulk flow through a 2 Mbit/s bottleneck with a
//! 20-packet buffer, no propagation delay, 5 % random loss after the
//! bottleneck, SACK on, 20 s. Linux 6.18 there (RACK-TLP, PRR) took 0 to 1
//! timeouts per run and 1.80 Mbit/s (docs/model.md, "Against the kernel").

use torrentlab_sim::{run_checked, Scenario};

fn flow_on_lossy_path(preset: &str, cc: &str, seed: u64) -> (i64, f64) {
    let text = format!(
        r#"name = "lossy-path"
[run]
duration = "20 s"
[network]
topology = "dumbbell"
one_way_delay = "0 ms"
[network.bottleneck]
capacity = "2 Mbit/s"
buffer = "20 packets"
[network.loss]
data = 0.05
[tcp]
preset = "{preset}"
[[flows]]
cc = "{cc}"
[metrics]
timeseries = false
queue_log = false
"#
    );
    let mut sc = Scenario::from_toml_str(&text, "lossy-path.toml").unwrap();
    sc.seed = seed;
    let (out, _) = run_checked(&sc);
    (out.flows.i64_column("timeouts")[0], out.flows.f64_column("throughput_bps")[0])
}

#[test]
fn with_rack_tlp_a_flow_at_five_percent_loss_rarely_waits_for_the_timer_where_rfc6675_recovery_often_does() {
    // RFC 6675 recovery (the `linux` preset) leaves a lost retransmission and
    // a window too small for three duplicate ACKs to the timer: about 20
    // timeouts per run here. RACK finds both an RTT after the fact, and TLP
    // turns a lost tail into SACKs.
    let (mut rack, mut rfc) = ((0, 0.0), (0, 0.0));
    for seed in 1..=3 {
        for cc in ["cubic", "newreno"] {
            let (t, bps) = flow_on_lossy_path("linux-6", cc, seed);
            rack = (rack.0 + t, rack.1 + bps / 6.0);
            let (t, bps) = flow_on_lossy_path("linux", cc, seed);
            rfc = (rfc.0 + t, rfc.1 + bps / 6.0);
        }
    }
    assert!(rack.0 <= 6, "linux-6: {} timeouts in 6 runs", rack.0);
    assert!(rfc.0 >= 6 * 10, "linux: {} timeouts in 6 runs", rfc.0);
    assert!(rack.1 > 1.1 * rfc.1, "goodput: linux-6 {} bit/s, linux {} bit/s", rack.1, rfc.1);
}
