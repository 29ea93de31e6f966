//! How much memory a run will need, estimated from its scenario before it runs,
//! so a caller can refuse a run that would not fit (issue 38).
//!
//! The estimate is a sum of parts, each driven by one scenario field: the
//! engine's state (per flow, per peer, per connection, per piece) and the logs
//! that grow while the run goes (the bottleneck's queue log, the time series,
//! `haves`, `chokes`, `sends`, `connections`). A logged row is counted three
//! times its column bytes: up to twice while its columns grow (a `Vec` doubles)
//! and once more when the tables are copied out to Python. The per-object
//! constants are fitted to peak RSS of real runs (see the tests and
//! docs/scenarios.md); they are rounded up, so the estimate errs high.
//!
//! A swarm's logs that grow with time are counted up to an estimated end of the
//! run, [`swarm_end`]: the last join plus four times the time the seeds and
//! the whole swarm's upload limits need to move the content, capped by
//! `run.duration`.

use crate::scenario::swarm::{Departure, JoinSpec, SwarmScenario};
use crate::scenario::{AnyScenario, Scenario};
use torrentlab_net::{BufferLimit, LinkConfig};

/// Bytes of a process with the engine loaded and nothing simulated yet.
const BASE: f64 = 4.0 * 1024.0 * 1024.0;
/// Peak bytes per logged row, per 8-byte column: see the module comment.
const PER_COLUMN: f64 = 3.0 * 8.0;
/// Bytes per packet held in a queue or in flight (the packet and its slot).
const PER_PACKET: f64 = 128.0;
/// Bytes per dumbbell flow: two hosts, an access link, both endpoints.
const PER_FLOW: f64 = 32.0 * 1024.0;
/// Bytes per swarm peer besides its pieces: client, choker, limiter, host.
const PER_PEER: f64 = 16.0 * 1024.0;
/// Bytes per piece per peer: the picker's counts, order and availability.
const PER_PIECE: f64 = 40.0;
/// Bytes per block per peer: the picker's block states.
const PER_BLOCK: f64 = 1.0;
/// Bytes per connection: both TCP endpoints, the frame queues, both clients'
/// view of the other side; fitted to peak RSS (the tests below).
const PER_CONN: f64 = 4.0 * 1024.0;
/// Bytes per peer per simulated second that a swarm's state grows by besides
/// its logs (rate meters, request history); fitted to peak RSS.
const PER_PEER_SECOND: f64 = 16.0;
/// Rows of `chokes` per peer per simulated second; fitted, rounded up.
const CHOKES_PER_PEER_SECOND: f64 = 1.0;
/// Rows of `sends` per logged leecher: this many per piece per connection (a
/// HAVE to each, with margin for choke, interest and end-game messages), per
/// block (its request, and the blocks it uploads in turn, twice over), and per
/// simulated second (keep-alives, rechokes); fitted, rounded up.
const SENDS_PER_PIECE_CONN: f64 = 3.0;
const SENDS_PER_BLOCK: f64 = 4.0;
const SENDS_PER_SECOND: f64 = 2.0;
/// Rows of `uplink_queue` per logged peer per byte its uplink can carry (at
/// the smaller of its capacity and its upload limit) per second: one
/// 1448-byte data packet, and as many ACKs and control packets again.
const UPLINK_ROWS_PER_BYTE: f64 = 2.0 / 1448.0;
/// How many times the ideal transfer time a swarm is expected to take at most.
const SWARM_SLACK: f64 = 4.0;

/// An estimate of the memory a run needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Footprint {
    /// Estimated peak bytes of the run, its result tables and their copy to Python.
    pub bytes: u64,
    /// The scenario field that drives the largest part (`metrics.queue_log`,
    /// `peers[1].count`, ...): the one to change to need less.
    pub field: String,
    /// Every part, largest first.
    pub parts: Vec<Part>,
}

/// One part of a [`Footprint`].
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    /// What it is (`"queue log"`, `"connections"`, ...).
    pub what: &'static str,
    /// The scenario field that drives it.
    pub field: String,
    /// Rows of a log, or objects (flows, peers, connections) of state.
    pub count: u64,
    /// Estimated bytes.
    pub bytes: u64,
}

/// The parts that are logs a run can hand over in chunks as it goes (see
/// [`crate::Spill`]).
const SPILLED_LOGS: [&str; 6] =
    ["queue log", "time series", "haves log", "chokes log", "sends log", "uplink queue log"];

impl Footprint {
    /// The estimate when the growing logs are handed over (spilled to disk)
    /// every `rows` rows: each log holds at most that many rows in memory.
    pub fn spilled(&self, rows: u64) -> Footprint {
        let parts = self
            .parts
            .iter()
            .map(|p| {
                let mut p = p.clone();
                if SPILLED_LOGS.contains(&p.what) && p.count > rows {
                    p.bytes = (p.bytes as f64 * rows as f64 / p.count as f64).ceil() as u64;
                    p.count = rows;
                }
                p
            })
            .collect();
        Parts(parts).finish()
    }
}

/// Estimates the memory `sc` needs to run.
pub fn estimate(sc: &AnyScenario) -> Footprint {
    match sc {
        AnyScenario::Dumbbell(s) => dumbbell(s),
        AnyScenario::Swarm(s) => swarm(s),
    }
}

/// Collects parts: (what, field, count, bytes per item).
struct Parts(Vec<Part>);

impl Parts {
    fn add(&mut self, what: &'static str, field: impl Into<String>, count: f64, each: f64) {
        let count = count.max(0.0);
        self.0.push(Part { what, field: field.into(), count: to_u64(count), bytes: to_u64(count * each) });
    }

    fn finish(mut self) -> Footprint {
        self.0.sort_by_key(|p| std::cmp::Reverse(p.bytes));
        let bytes = self.0.iter().fold(BASE as u64, |s, p| s.saturating_add(p.bytes));
        let field = self.0.first().map_or_else(|| "run.duration".to_string(), |p| p.field.clone());
        Footprint { bytes, field, parts: self.0 }
    }
}

fn to_u64(x: f64) -> u64 {
    // `as` saturates at the ends; the estimate is a bound, so saturation is the
    // right reading of a value past u64 here (it cannot happen within the
    // validated maxima, but a bound must not wrap).
    x.ceil() as u64
}

/// Packets a link's queue can hold at most: its packet limit, or its byte
/// limit in the smallest packets that use it; none when it has no capacity
/// (an unlimited link has no queue).
fn queue_packets(link: &LinkConfig, smallest_packet: f64) -> f64 {
    if link.capacity_bps.is_none() {
        return 0.0;
    }
    match link.buffer {
        BufferLimit::Packets(n) => n as f64,
        BufferLimit::Bytes(b) => b as f64 / smallest_packet,
    }
}

/// The estimate for a dumbbell.
pub fn dumbbell(sc: &Scenario) -> Footprint {
    let mut parts = Parts(Vec::new());
    let secs = sc.duration.as_secs_f64();
    let n = sc.flows.len() as f64;
    // The smallest full data packet any flow sends, in wire bytes: the most
    // dequeues per second at the bottleneck.
    let smallest = sc
        .flows
        .iter()
        .map(|f| match &f.utp {
            // IPv4 + UDP + uTP headers; MTU probing starts at a 548-byte payload.
            Some(u) => 48.0 + if u.mtu_probing { 548.0 } else { u.packet_size as f64 },
            None => 40.0 + if f.tcp.timestamps { 12.0 } else { 0.0 } + f.tcp.mss as f64,
        })
        .fold(f64::INFINITY, f64::min);
    let rate = sc.network.bottleneck.capacity_bps.unwrap_or(0) as f64;
    let per_flow_field = |f: &str| if sc.flows.len() > 1 { f.to_string() } else { "flows[0]".to_string() };
    parts.add("flows", per_flow_field("flows"), n, PER_FLOW);
    let queued = queue_packets(&sc.network.bottleneck, smallest) + n * queue_packets(&sc.network.access, smallest);
    parts.add("queued packets", "network.bottleneck.buffer", queued, PER_PACKET);
    // Packets on the wire: the bottleneck's rate over a round trip.
    let rtt = 2.0 * (sc.network.one_way_delay + sc.network.access.delay).as_secs_f64();
    parts.add("packets in flight", "network.one_way_delay", rate * rtt / 8.0 / smallest, PER_PACKET);
    if sc.metrics.queue_log {
        // One row per dequeue: at most the bottleneck's packet rate for the
        // whole run, and at most every byte of sized flows (with a margin for
        // retransmissions) when all of them are sized.
        let mut rows = secs * rate / 8.0 / smallest;
        if sc.flows.iter().all(|f| f.size.is_some()) {
            let bytes: f64 = sc.flows.iter().map(|f| f.size.unwrap_or(0) as f64).sum();
            rows = rows.min(2.0 * bytes / (smallest - 52.0).max(1.0) + 100.0);
        }
        parts.add("queue log", "metrics.queue_log", rows, 6.0 * PER_COLUMN);
    }
    if let Some(dt) = sc.metrics.sample_interval {
        let rows = n * (secs / dt.as_secs_f64()).ceil();
        parts.add("time series", "metrics.sample_interval", rows, 12.0 * PER_COLUMN);
    }
    parts.finish()
}

/// When a swarm is expected to end at the latest, in seconds: the last join
/// plus [`SWARM_SLACK`] times the longer of the time the seeds need to upload
/// the content once and the time the whole swarm needs to upload it to every
/// leecher, capped by `run.duration` (which it is when an upload is unlimited).
pub fn swarm_end(sc: &SwarmScenario) -> f64 {
    let cap = sc.duration.as_secs_f64();
    let mut last_join = 0.0f64;
    let (mut seed_up, mut all_up) = (0.0, 0.0);
    for c in &sc.classes {
        let join = match &c.join {
            JoinSpec::At(t) => t.as_secs_f64(),
            JoinSpec::Times(ts) => ts.iter().map(|t| t.as_secs_f64()).fold(0.0, f64::max),
            JoinSpec::Poisson { start, mean_gap } => start.as_secs_f64() + c.count as f64 * mean_gap.as_secs_f64(),
        };
        last_join = last_join.max(join);
        let link = c.uplink.capacity_bps.map(|b| b as f64 / 8.0);
        let Some(up) = [c.client.upload_rate, link].into_iter().flatten().reduce(f64::min) else {
            return cap;
        };
        // A leecher that leaves on completion uploads for part of the run only;
        // counting it in full would shorten the estimate.
        let counted = if c.seed || c.departure == Departure::Stay { c.count as f64 } else { 0.0 };
        all_up += up * counted;
        if c.seed {
            seed_up += up * c.count as f64;
        }
    }
    let size = sc.torrent.length as f64;
    let demand = size * sc.leecher_count() as f64;
    if seed_up <= 0.0 || all_up <= 0.0 {
        return cap;
    }
    let ideal = (size / seed_up).max(demand / all_up);
    (last_join + SWARM_SLACK * ideal).min(cap)
}

/// Bytes of a limited link's queueing-delay histogram: a counter per bucket
/// up to that of the longest wait its buffer allows (packets counted at 64 KiB,
/// the largest TSO segment), and the box that holds it.
fn delay_histogram_bytes(link: &LinkConfig) -> f64 {
    let Some(cap) = link.capacity_bps else { return 0.0 };
    let bytes = match link.buffer {
        BufferLimit::Packets(n) => n as f64 * 65_536.0,
        BufferLimit::Bytes(b) => b as f64,
    };
    let wait_ns = (bytes * 8.0 / cap as f64 * 1e9).min(u64::MAX as f64) as u64;
    (torrentlab_net::DelayHistogram::bucket(wait_ns) + 1) as f64 * 8.0 + 64.0
}

/// The estimate for a swarm.
pub fn swarm(sc: &SwarmScenario) -> Footprint {
    let mut parts = Parts(Vec::new());
    let peers = sc.peer_count() as f64;
    let pieces = sc.torrent.pieces() as f64;
    let blocks = sc.torrent.total_blocks() as f64;
    let secs = swarm_end(sc);
    // The class with the most peers: the field to change for fewer of them.
    let biggest = sc.classes.iter().enumerate().max_by_key(|(_, c)| c.count).map_or(0, |(i, _)| i);
    let count_field = format!("peers[{biggest}].count");
    parts.add("peers", count_field.clone(), peers, PER_PEER + pieces * PER_PIECE + blocks * PER_BLOCK);
    // Each peer dials up to max_initiate others once it has joined; every
    // connection stays in memory (closed ones too, for the connections table).
    let conns: f64 =
        sc.classes.iter().map(|c| c.count as f64 * (c.client.max_initiate as f64).min(peers - 1.0).max(0.0)).sum();
    parts.add("connections", count_field.clone(), conns, PER_CONN + 2.0 * pieces / 8.0);
    parts.add("peer state over time", "run.duration", peers * secs, PER_PEER_SECOND);
    let queued: f64 = sc
        .classes
        .iter()
        .map(|c| c.count as f64 * (queue_packets(&c.uplink, 60.0) + queue_packets(&c.downlink, 60.0)))
        .sum();
    parts.add("queued packets", "network.access.buffer", queued, PER_PACKET);
    if sc.metrics.haves {
        parts.add("haves log", "metrics.haves", sc.leecher_count() as f64 * pieces, 3.0 * PER_COLUMN);
    }
    if sc.metrics.chokes {
        parts.add("chokes log", "metrics.chokes", peers * secs * CHOKES_PER_PEER_SECOND, 4.0 * PER_COLUMN);
    }
    let logged = (sc.metrics.send_log_peers as f64).min(sc.leecher_count() as f64);
    if logged > 0.0 {
        // A peer's connections: those it dials and as many that dial it.
        let max_initiate = sc.classes.iter().map(|c| c.client.max_initiate).max().unwrap_or(0) as f64;
        let neighbours = (2.0 * max_initiate).min(peers - 1.0).max(1.0);
        let per_peer = SENDS_PER_PIECE_CONN * pieces * neighbours + SENDS_PER_BLOCK * blocks + SENDS_PER_SECOND * secs;
        parts.add("sends log", "metrics.send_log_peers", logged * per_peer, 7.0 * PER_COLUMN);
    }
    if sc.metrics.connections {
        parts.add("connections table", "metrics.connections", conns, 13.0 * PER_COLUMN);
    }
    let limited: Vec<_> = sc.classes.iter().filter(|c| c.uplink.capacity_bps.is_some()).collect();
    if !limited.is_empty() {
        // One per limited uplink, at the mean size over them.
        let n: f64 = limited.iter().map(|c| c.count as f64).sum();
        let bytes: f64 = limited.iter().map(|c| c.count as f64 * delay_histogram_bytes(&c.uplink)).sum();
        parts.add("uplink delay histograms", "network.access.up", n, bytes / n);
        // The first peers are logged; count each at its class's upload limit.
        let mut left = sc.metrics.uplink_log_peers as f64;
        let mut rows = 0.0;
        for c in &sc.classes {
            let logged = left.min(c.count as f64);
            left -= logged;
            let Some(cap) = c.uplink.capacity_bps else { continue };
            let rate = c.client.upload_rate.map_or(cap as f64 / 8.0, |r| r.min(cap as f64 / 8.0));
            rows += logged * rate * secs * UPLINK_ROWS_PER_BYTE;
        }
        if rows > 0.0 {
            parts.add("uplink queue log", "metrics.uplink_log_peers", rows, 7.0 * PER_COLUMN);
        }
    }
    if let Some(c) = &sc.capture {
        // A captured peer's file holds a record (48 bytes and at most
        // `snaplen` of the packet) of every packet its links carried: per
        // 1448 bytes of content, about 3 full data packets (down, up, and a
        // seed's extra copies) and 8 small ones (ACKs, control messages),
        // as measured on small swarms (a test holds the estimate at 1 to 4
        // times the files).
        let kept = |len: f64| len.min(c.snaplen as f64) + 48.0;
        let per_peer = sc.torrent.length as f64 / 1448.0 * (3.0 * kept(1500.0) + 8.0 * kept(66.0));
        parts.add("captures", "capture.peers", c.peers.len() as f64, per_peer);
    }
    parts.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn part<'a>(f: &'a Footprint, what: &str) -> &'a Part {
        f.parts.iter().find(|p| p.what == what).unwrap_or_else(|| panic!("no part {what}: {f:?}"))
    }

    fn shipped(rel: &str) -> AnyScenario {
        AnyScenario::from_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(rel)).unwrap()
    }

    /// `estimate / measured` is within `[lo, hi]`.
    fn within(what: &str, estimate: f64, measured: f64, lo: f64, hi: f64) {
        let r = estimate / measured;
        assert!(
            (lo..=hi).contains(&r),
            "{what}: estimate {estimate} / measured {measured} = {r:.2}, not in {lo}..{hi}"
        );
    }

    #[test]
    fn with_spilling_a_long_queue_log_holds_only_one_chunk_in_memory() {
        let mut sc = match shipped("rossi2010/b-ledbat-vs-ledbat.toml") {
            AnyScenario::Dumbbell(sc) => sc,
            _ => unreachable!(),
        };
        sc.duration = torrentlab_engine::Duration::from_secs(30 * 24 * 3600);
        let whole = dumbbell(&sc);
        assert_eq!(whole.field, "metrics.queue_log");
        assert!(whole.bytes > 20 << 30, "a month of dequeues at 10 Mbit/s: {} bytes", whole.bytes);
        let spilled = whole.spilled(1 << 20);
        let log = part(&spilled, "queue log");
        assert_eq!(log.count, 1 << 20);
        assert!(log.bytes < 200 << 20, "one chunk of rows: {} bytes", log.bytes);
        assert!(spilled.bytes < whole.bytes / 50);
        let state =
            |f: &Footprint| f.parts.iter().filter(|p| !SPILLED_LOGS.contains(&p.what)).map(|p| p.bytes).sum::<u64>();
        assert_eq!(state(&spilled), state(&whole), "the engine's own state is not spilled");
    }

    const SMALL_SWARM: &str = r#"
        [run]
        duration = "2 h"
        [torrent]
        size = "2 MB"
        piece_size = "32 KiB"
        [network]
        rtt = "50 ms"
        [[peers]]
        role = "seed"
        upload_limit = "40 kB/s"
        [[peers]]
        role = "leecher"
        count = 20
        upload_limit = "20 kB/s"
        [metrics]
        send_log_peers = 2
    "#;

    #[test]
    fn a_small_swarms_logs_are_estimated_within_a_factor_of_three_of_their_rows() {
        let AnyScenario::Swarm(sc) = AnyScenario::from_toml_str(SMALL_SWARM, "s.toml").unwrap() else { panic!() };
        let f = swarm(&sc);
        let out = crate::run_swarm(&sc, &mut |_| {});
        let rows = |t: &str| out.table(t).columns[0].data.len() as f64;
        assert_eq!(rows("haves"), 20.0 * 62.0, "every leecher completes every piece");
        within("haves", part(&f, "haves log").count as f64, rows("haves"), 1.0, 1.0);
        within("connections", part(&f, "connections table").count as f64, rows("connections"), 1.0, 1.5);
        within("chokes", part(&f, "chokes log").count as f64, rows("chokes"), 1.0, 3.0);
        within("sends", part(&f, "sends log").count as f64, rows("sends"), 1.0, 3.0);
        within("end", swarm_end(&sc), out.table("summary").f64_column("end_s")[0], 1.0, 4.0);
        assert_eq!(f.field, "peers[1].count", "{f:?}");
    }

    #[test]
    fn captures_are_estimated_at_one_to_four_times_the_files_they_write() {
        let cases = [("[0, 1, 2]", 262_144), ("[\"leecher\"]", 128), ("[0]", 128)];
        for (peers, snaplen) in cases {
            let text = format!("{SMALL_SWARM}\n[capture]\npeers = {peers}\nsnaplen = {snaplen}\n");
            let AnyScenario::Swarm(sc) = AnyScenario::from_toml_str(&text, "s.toml").unwrap() else { panic!() };
            let part = part(&swarm(&sc), "captures").clone();
            assert_eq!(
                (part.field.as_str(), part.count),
                ("capture.peers", sc.capture.as_ref().unwrap().peers.len() as u64)
            );
            let out = crate::run_swarm(&sc, &mut |_| {});
            let written: usize = out.captures.iter().map(|f| f.bytes.len()).sum();
            within(&format!("captures of {peers}, snaplen {snaplen}"), part.bytes as f64, written as f64, 1.0, 4.0);
        }
    }

    #[test]
    fn a_small_swarms_uplink_log_is_estimated_within_a_factor_of_three_of_its_rows() {
        let text = SMALL_SWARM
            .replace("[network]", "[network.access]\nup = \"1 Mbit/s\"\n[network]")
            .replace("send_log_peers = 2", "uplink_log_peers = 3");
        let AnyScenario::Swarm(sc) = AnyScenario::from_toml_str(&text, "s.toml").unwrap() else { panic!() };
        let f = swarm(&sc);
        let out = crate::run_swarm(&sc, &mut |_| {});
        let rows = out.table("uplink_queue").rows() as f64;
        within("uplink queue", part(&f, "uplink queue log").count as f64, rows, 1.0, 3.0);
        assert_eq!(part(&f, "uplink delay histograms").count, 21);
        let spilled = f.spilled(10);
        assert_eq!(part(&spilled, "uplink queue log").count, 10, "the uplink log is spilled");
    }

    #[test]
    fn a_dumbbells_queue_log_and_time_series_are_estimated_within_ten_percent_of_their_rows() {
        let text = r#"
            [run]
            duration = "20 s"
            [network]
            one_way_delay = "25 ms"
            [network.bottleneck]
            capacity = "10 Mbit/s"
            buffer = "40 packets"
            [[flows]]
            cc = "newreno"
            [[flows]]
            cc = "ledbat"
        "#;
        let AnyScenario::Dumbbell(sc) = AnyScenario::from_toml_str(text, "d.toml").unwrap() else { panic!() };
        let f = dumbbell(&sc);
        let out = crate::run(&sc);
        within("queue log", part(&f, "queue log").count as f64, out.queue.columns[0].data.len() as f64, 1.0, 1.1);
        within(
            "time series",
            part(&f, "time series").count as f64,
            out.timeseries.columns[0].data.len() as f64,
            1.0,
            1.1,
        );
        assert_eq!(f.field, "metrics.queue_log");
    }

    /// Peak RSS of the `bench` example (dev profile, `TORRENTLAB_HUGEPAGES=0`,
    /// `/usr/bin/time -v`) on six shipped scenarios, kB. The estimate also
    /// counts the copy of the tables to Python, which the example does not make.
    #[test]
    fn shipped_scenarios_are_estimated_within_a_factor_of_three_of_their_measured_peak_memory() {
        for (rel, kb) in [
            ("rao2010/flash-crowd.toml", 77_376.0),
            ("rao2010/as-placement.toml", 66_536.0),
            ("bench/rao2010-rtt400-20k.toml", 69_452.0),
            ("bench/dumbbell-100-newreno.toml", 6_992.0),
            ("rossi2010/a-newreno-vs-ledbat.toml", 8_752.0),
            ("calibration/stress.toml", 4_092.0),
        ] {
            within(rel, estimate(&shipped(rel)).bytes as f64, kb * 1024.0, 1.0, 3.0);
        }
    }

    #[test]
    fn the_field_named_is_the_one_that_drives_the_largest_part() {
        assert_eq!(estimate(&shipped("rossi2010/a-newreno-vs-ledbat.toml")).field, "metrics.queue_log");
        assert_eq!(estimate(&shipped("rao2010/flash-crowd.toml")).field, "peers[1].count");
        let AnyScenario::Swarm(mut sc) = shipped("rao2010/flash-crowd.toml") else { panic!() };
        sc.metrics.chokes = true;
        assert_eq!(swarm(&sc).field, "metrics.chokes");
        sc.metrics.send_log_peers = 300;
        assert_eq!(swarm(&sc).field, "metrics.send_log_peers");
    }

    #[test]
    fn a_longer_run_with_a_queue_log_needs_more_and_without_it_does_not() {
        let AnyScenario::Dumbbell(mut sc) = shipped("rossi2010/a-newreno-vs-ledbat.toml") else { panic!() };
        let short = dumbbell(&sc).bytes;
        sc.duration = sc.duration.saturating_mul(10);
        let long = dumbbell(&sc).bytes;
        assert!(long > 5 * short, "{short} -> {long}");
        sc.metrics.queue_log = false;
        sc.metrics.sample_interval = None;
        assert!(dumbbell(&sc).bytes < short, "no logs: only the state");
    }

    #[test]
    fn the_largest_scenario_allowed_is_estimated_without_overflow() {
        let text = r#"
            [run]
            duration = "8760 h"
            [torrent]
            size = "1000000 MiB"
            piece_size = "64 MiB"
            [[peers]]
            role = "seed"
            upload_limit = "unlimited"
            [[peers]]
            role = "leecher"
            count = 19999
            [metrics]
            send_log_peers = 19999
        "#;
        let f = estimate(&AnyScenario::from_toml_str(text, "big.toml").unwrap());
        assert!(f.bytes > 1 << 40, "{f:?}");
        assert_eq!(f.field, "metrics.send_log_peers");
    }
}
