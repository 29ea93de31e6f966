//! The tables of a finished run: per-flow totals, the bottleneck queue log and
//! the one-row summary.

use torrentlab_net::{LinkStats, QueueRecord};

use crate::apps::bulk::{Bulk, Flow};
use crate::scenario::Scenario;
use crate::table::{jain_index, Table};
use crate::topology::dumbbell::BULK_APP;
use crate::world::World;

/// Everything one run produces.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// One row per flow: totals.
    pub flows: Table,
    /// One row per flow per sample: window, RTT, goodput...
    pub timeseries: Table,
    /// One row per dequeue at the bottleneck.
    pub queue: Table,
    /// One row: fairness, efficiency, loss over the summary window.
    pub summary: Table,
    pub perf: crate::world::Perf,
}

impl RunOutput {
    /// The tables by name, in the order they are written.
    pub fn into_tables(self) -> Vec<(&'static str, Table)> {
        vec![("summary", self.summary), ("flows", self.flows), ("timeseries", self.timeseries), ("queue", self.queue)]
    }
}

/// The largest one-way-delay sample the sender's controller got (ms), NaN
/// if none (no timestamps, or the controller's path carried none).
fn max_owd_ms(c: torrentlab_transport::stream::ConnCounters) -> f64 {
    if c.max_one_way_delay == torrentlab_engine::Duration::ZERO {
        f64::NAN
    } else {
        c.max_one_way_delay.as_secs_f64() * 1e3
    }
}

fn nan_or(v: Option<f64>) -> f64 {
    v.unwrap_or(f64::NAN)
}

pub(crate) fn report(sc: &Scenario, mut world: World) -> RunOutput {
    let perf = world.perf();
    let mut w: Box<Bulk> = world.take_app(BULK_APP);
    let (end, net, conns) = (world.end, &mut world.f.net, &world.f.conns);
    let end_stats = net.link_mut(w.bottleneck).stats(end);
    let queue = queue_rows(&net.link_mut(w.bottleneck).take_log(end).map(|l| l.records).unwrap_or_default());
    let snap = w.at_window_start.clone();
    let window = end.saturating_since(w.window_start).as_secs_f64();
    let start_stats = snap.as_ref().map_or(LinkStats::default(), |s| s.bottleneck);

    let mut flows = Table::default();
    let n = w.flows.len();
    let mut window_rates = Vec::with_capacity(n);
    let (mut throughput, mut completion) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for (i, f) in w.flows.iter().enumerate() {
        let delivered = f.receiver(conns).delivered();
        let before = snap.as_ref().map_or(0, |s| s.delivered[i]);
        window_rates.push(if window > 0.0 { (delivered - before) as f64 * 8.0 / window } else { f64::NAN });
        let active_end = f.completed_at.unwrap_or(end);
        let active = active_end.saturating_since(f.start).as_secs_f64();
        throughput.push(if active > 0.0 { delivered as f64 * 8.0 / active } else { f64::NAN });
        completion.push(nan_or(f.completed_at.map(|t| t.as_secs_f64())));
    }
    let col = |g: &dyn Fn(&Flow) -> u64| w.flows.iter().map(|f| g(f) as i64).collect::<Vec<_>>();
    flows
        .i64("flow", (0..n as i64).collect())
        .str("label", w.flows.iter().map(|f| f.label.clone()).collect())
        .str("transport", w.flows.iter().map(|f| f.transport.to_string()).collect())
        .str("cc", w.flows.iter().map(|f| f.cc.to_string()).collect())
        .f64("start_s", w.flows.iter().map(|f| f.start.as_secs_f64()).collect())
        .f64("stop_s", w.flows.iter().map(|f| nan_or(f.stop.map(|t| t.as_secs_f64()))).collect())
        .f64("size_bytes", w.flows.iter().map(|f| nan_or(f.size.map(|s| s as f64))).collect())
        .f64("completion_s", completion)
        .i64("bytes_sent", col(&|f| f.sender(conns).counters().bytes_sent))
        .i64("bytes_delivered", col(&|f| f.receiver(conns).delivered()))
        .i64("packets_sent", col(&|f| f.sender(conns).counters().packets_sent))
        .i64("retransmitted_packets", col(&|f| f.sender(conns).counters().retransmitted_packets))
        .i64("fast_retransmits", col(&|f| f.sender(conns).counters().fast_retransmits))
        .i64("timeouts", col(&|f| f.sender(conns).counters().timeouts))
        .i64("duplicate_acks", col(&|f| f.sender(conns).counters().duplicate_acks))
        .i64("lost_retransmits", col(&|f| f.sender(conns).counters().lost_retransmits))
        .i64("loss_probes", col(&|f| f.sender(conns).counters().loss_probes))
        .i64("spurious_timeouts", col(&|f| f.sender(conns).counters().spurious_timeouts))
        .f64("max_one_way_delay_ms", w.flows.iter().map(|f| max_owd_ms(f.sender(conns).counters())).collect())
        .i64("connection_failed", col(&|f| u64::from(!f.sender(conns).is_alive())))
        .i64("wire_bytes_forward", col(&|f| f.wire_bytes(conns)[0]))
        .i64("wire_bytes_reverse", col(&|f| f.wire_bytes(conns)[1]))
        .f64("throughput_bps", throughput)
        .f64("window_rate_bps", window_rates.clone());

    let arrived = end_stats.arrived_packets - start_stats.arrived_packets;
    let dropped = end_stats.dropped_packets - start_stats.dropped_packets;
    let rate = w.bottleneck_rate;
    let wire_bits = end_stats.transmitted_bits(rate) - start_stats.transmitted_bits(rate);
    let served_pkts = end_stats.served_packets - start_stats.served_packets;
    let wait_ns = (end_stats.wait_ns - start_stats.wait_ns) as f64;
    let wait_byte_ns = (end_stats.wait_byte_ns - start_stats.wait_byte_ns) as f64;
    let window_ns = window * 1e9;
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    let ns = net.stats();
    let mut summary = Table::default();
    summary
        .str("scenario", vec![sc.name.clone()])
        .i64("seed", vec![sc.seed as i64])
        .f64("duration_s", vec![sc.duration.as_secs_f64()])
        .i64("flows", vec![n as i64])
        .f64("window_start_s", vec![w.window_start.as_secs_f64()])
        .f64("window_s", vec![window])
        .f64("jain_index", vec![jain_index(&window_rates)])
        .f64("efficiency", vec![ratio(wire_bits, rate as f64 * window)])
        .f64("loss_rate", vec![ratio(dropped as f64, arrived as f64)])
        .f64("goodput_bps", vec![window_rates.iter().sum()])
        .i64("bottleneck_arrived_packets", vec![arrived as i64])
        .i64("bottleneck_dropped_packets", vec![dropped as i64])
        .f64("mean_queue_packets", vec![ratio(wait_ns, window_ns)])
        .f64("mean_queue_bytes", vec![ratio(wait_byte_ns, window_ns)])
        .f64("mean_queue_delay_ms", vec![ratio(wait_ns, served_pkts as f64) * 1e-6])
        .i64("network_sent_packets", vec![ns.sent_packets as i64])
        .i64("network_dropped_packets", vec![ns.dropped_packets as i64])
        .i64("network_lost_packets", vec![ns.lost_packets as i64]);

    RunOutput { flows, timeseries: w.rec.take_table(), queue, summary, perf }
}

/// The `queue` table's rows for these dequeue records.
pub(crate) fn queue_rows(records: &[QueueRecord]) -> Table {
    let mut t = Table::default();
    t.f64("time_s", records.iter().map(|r| r.time.as_secs_f64()).collect())
        .i64("bytes", records.iter().map(|r| r.bytes_left as i64).collect())
        .i64("packets", records.iter().map(|r| r.packets_left as i64).collect())
        .i64("served_packets", records.iter().map(|r| r.served_packets as i64).collect())
        .i64("served_bytes", records.iter().map(|r| r.served_bytes as i64).collect())
        .i64("dropped_packets", records.iter().map(|r| r.dropped_packets as i64).collect());
    t
}
