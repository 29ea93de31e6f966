//! Per-flow time series, sampled at a fixed simulated period.

use torrentlab_engine::Time;

use crate::apps::bulk::Flow;
use crate::table::Table;
use crate::world::ConnTable;

/// Columns of the `timeseries` table, filled row by row.
#[derive(Default)]
pub(crate) struct Recorder {
    enabled: bool,
    last_time: Option<Time>,
    last_delivered: Vec<u64>,
    time_s: Vec<f64>,
    flow: Vec<i64>,
    cwnd_bytes: Vec<i64>,
    cwnd_packets: Vec<f64>,
    ssthresh_bytes: Vec<f64>,
    in_flight_bytes: Vec<i64>,
    srtt_ms: Vec<f64>,
    queuing_delay_ms: Vec<f64>,
    delivered_bytes: Vec<i64>,
    goodput_bps: Vec<f64>,
    retransmitted_packets: Vec<i64>,
    timeouts: Vec<i64>,
}

fn ms_or_nan(d: Option<torrentlab_engine::Duration>) -> f64 {
    d.map_or(f64::NAN, |d| d.as_millis_f64())
}

impl Recorder {
    pub fn new(enabled: bool) -> Self {
        Recorder { enabled, ..Default::default() }
    }

    /// One row per started flow at `now`. Goodput is in-order payload delivered
    /// since the previous sample, in bit/s.
    pub fn sample(&mut self, now: Time, flows: &[Flow], conns: &ConnTable) {
        if !self.enabled {
            return;
        }
        if self.last_delivered.len() != flows.len() {
            self.last_delivered = vec![0; flows.len()];
        }
        let dt = self.last_time.map(|t| now.saturating_since(t).as_secs_f64());
        for (i, f) in flows.iter().enumerate() {
            let delivered = f.receiver(conns).delivered();
            let prev = std::mem::replace(&mut self.last_delivered[i], delivered);
            if !f.started {
                continue;
            }
            let Some(info) = f.sender(conns).info() else { continue };
            let mss = info.packet_size as f64;
            self.time_s.push(now.as_secs_f64());
            self.flow.push(i as i64);
            self.cwnd_bytes.push(info.cwnd as i64);
            self.cwnd_packets.push(info.cwnd as f64 / mss);
            self.ssthresh_bytes.push(info.ssthresh.map_or(f64::INFINITY, |s| s as f64));
            self.in_flight_bytes.push(info.bytes_in_flight as i64);
            self.srtt_ms.push(ms_or_nan(info.srtt));
            self.queuing_delay_ms.push(ms_or_nan(info.queuing_delay));
            self.delivered_bytes.push(delivered as i64);
            self.goodput_bps.push(match dt {
                Some(dt) if dt > 0.0 => (delivered - prev) as f64 * 8.0 / dt,
                _ => f64::NAN,
            });
            let st = f.sender(conns).counters();
            self.retransmitted_packets.push(st.retransmitted_packets as i64);
            self.timeouts.push(st.timeouts as i64);
        }
        self.last_time = Some(now);
    }

    /// Rows recorded and not yet taken.
    pub fn rows(&self) -> usize {
        self.time_s.len()
    }

    /// Hands over the rows recorded so far; sampling goes on (goodput still
    /// counts from the last sample taken).
    pub fn take_table(&mut self) -> Table {
        let mut t = Table::default();
        t.f64("time_s", std::mem::take(&mut self.time_s))
            .i64("flow", std::mem::take(&mut self.flow))
            .i64("cwnd_bytes", std::mem::take(&mut self.cwnd_bytes))
            .f64("cwnd_packets", std::mem::take(&mut self.cwnd_packets))
            .f64("ssthresh_bytes", std::mem::take(&mut self.ssthresh_bytes))
            .i64("in_flight_bytes", std::mem::take(&mut self.in_flight_bytes))
            .f64("srtt_ms", std::mem::take(&mut self.srtt_ms))
            .f64("queuing_delay_ms", std::mem::take(&mut self.queuing_delay_ms))
            .i64("delivered_bytes", std::mem::take(&mut self.delivered_bytes))
            .f64("goodput_bps", std::mem::take(&mut self.goodput_bps))
            .i64("retransmitted_packets", std::mem::take(&mut self.retransmitted_packets))
            .i64("timeouts", std::mem::take(&mut self.timeouts));
        t
    }
}
