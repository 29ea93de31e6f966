//! Invariants over random small dumbbells: packets are conserved, time never
//! goes backwards (the event queue asserts it), no link carries more than its
//! capacity, and a sized flow completes only with every byte delivered.

mod common;

use proptest::prelude::*;
use torrentlab_engine::Duration;
use torrentlab_net::{BufferLimit, LinkConfig};
use torrentlab_sim::scenario::{ClockOffsets, DumbbellSpec, FlowSpec, MetricsSpec, StartSpec};
use torrentlab_sim::{run_checked, Scenario};
use torrentlab_transport::cc::{CcConfig, CubicConfig, LedbatConfig, LpConfig, NiceConfig, VegasConfig};
use torrentlab_transport::tcp::TcpConfig;
use torrentlab_transport::utp::UtpConfig;

#[allow(clippy::too_many_arguments)]
fn scenario(
    seed: u64,
    flows: Vec<(u8, u64, Option<u64>, bool)>,
    rate_mbps: u64,
    buffer: u32,
    delay_ms: u64,
    loss: (f64, f64),
    sack: bool,
    handshake: bool,
) -> Scenario {
    Scenario {
        name: "prop".into(),
        description: String::new(),
        seed,
        duration: Duration::from_secs(8),
        network: DumbbellSpec {
            one_way_delay: Duration::from_millis(delay_ms),
            bottleneck: LinkConfig {
                capacity_bps: Some(rate_mbps * 1_000_000),
                buffer: BufferLimit::Packets(buffer),
                delay: Duration::ZERO,
            },
            access: LinkConfig {
                capacity_bps: Some(rate_mbps * 2_000_000),
                buffer: BufferLimit::Bytes(30_000),
                delay: Duration::from_millis(1),
            },
            data_loss: loss.0,
            ack_loss: loss.1,
            clock_offsets: ClockOffsets::Random,
        },
        flows: flows
            .into_iter()
            .map(|(cc, start_ms, size, delack)| FlowSpec {
                label: "f".into(),
                cc: match cc % 6 {
                    0 => CcConfig::NewReno,
                    1 => CcConfig::Cubic(CubicConfig::default()),
                    2 => CcConfig::Vegas(VegasConfig::default()),
                    3 => CcConfig::Lp(LpConfig::default()),
                    4 => CcConfig::Nice(NiceConfig::default()),
                    _ => CcConfig::Ledbat(LedbatConfig::default()),
                },
                tcp: TcpConfig {
                    delayed_ack: delack.then_some(Duration::from_millis(40)),
                    min_rto: Duration::from_millis(200),
                    sack,
                    handshake,
                    ..TcpConfig::rfc()
                },
                start: StartSpec::At(Duration::from_millis(start_ms)),
                stop: None,
                size,
                one_way_delay: None,
                utp: (cc % 7 == 6).then(UtpConfig::default),
            })
            .collect(),
        metrics: MetricsSpec {
            sample_interval: Some(Duration::from_millis(250)),
            queue_log: true,
            summary_start: None,
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn packets_are_conserved_links_respect_capacity_and_completion_means_every_byte(
        seed in 0u64..1000,
        flows in proptest::collection::vec(
            (0u8..7, 0u64..3000, proptest::option::of(1u64..400_000), any::<bool>()), 1..5),
        rate_mbps in 1u64..20,
        buffer in 2u32..60,
        delay_ms in 0u64..80,
        data_loss in 0.0f64..0.05,
        ack_loss in 0.0f64..0.05,
        sack in any::<bool>(),
        handshake in any::<bool>(),
    ) {
        // uTP reads its delays against the peer's clock (random offsets here).
        let utp: Vec<bool> = flows.iter().map(|f| f.0 % 7 == 6).collect();
        let sc = scenario(seed, flows, rate_mbps, buffer, delay_ms, (data_loss, ack_loss), sack, handshake);
        // run_checked asserts sent = delivered + dropped + lost + in flight.
        let (out, _) = run_checked(&sc);
        let eff = out.summary.f64_column("efficiency")[0];
        prop_assert!(eff <= 1.0 + 1e-9, "efficiency {}", eff);
        let sent = out.flows.i64_column("bytes_sent");
        let delivered = out.flows.i64_column("bytes_delivered");
        let size = out.flows.f64_column("size_bytes");
        let done = out.flows.f64_column("completion_s");
        for i in 0..sent.len() {
            prop_assert!(delivered[i] <= sent[i]);
            if !done[i].is_nan() {
                prop_assert_eq!(delivered[i] as f64, size[i]);
            } else if !size[i].is_nan() {
                prop_assert!((delivered[i] as f64) < size[i]);
            }
        }
        // The queue log is in time order and never exceeds the buffer.
        let t = out.queue.f64_column("time_s");
        prop_assert!(t.windows(2).all(|w| w[0] <= w[1]));
        prop_assert!(out.queue.i64_column("packets").iter().all(|&p| p <= buffer as i64));
        let ts = out.timeseries.f64_column("time_s");
        prop_assert!(ts.windows(2).all(|w| w[0] <= w[1]));
        // No TCP one-way-delay sample beyond what the path holds: the propagation
        // delay, the sender's access link (1 ms, a 30 kB buffer at twice the
        // rate) and the bottleneck's full buffer, each with the packet in
        // service and its own serialisation. Loss recovery must not add to it.
        let at = |bytes: f64, mbps: f64| bytes * 8.0 / (mbps * 1e6) * 1e3;
        let r = rate_mbps as f64;
        let bound = delay_ms as f64 + 1.0 + at(30_000.0 + 2.0 * 1500.0, 2.0 * r) + at((buffer as f64 + 2.0) * 1500.0, r);
        for (i, &owd) in out.flows.f64_column("max_one_way_delay_ms").iter().enumerate() {
            prop_assert!(utp[i] || owd.is_nan() || owd <= bound + 1e-3, "flow {}: a one-way delay of {} ms above {} ms", i, owd, bound);
        }
    }
}
