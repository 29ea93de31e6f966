//! The tables of a finished swarm run (docs/metrics.md lists every column).

use torrentlab_engine::Time;
use torrentlab_net::{BufferLimit, HostId};
use torrentlab_transport::stream::Endpoint;

use std::collections::HashMap;

use super::connections::{connections_table, transports_table, ConnRow};
use super::recorder::{gap_edges, take_uplink_logs, SwarmRecorder};
use crate::apps::bittorrent::{Peer, Swarm};
use crate::apps::cross::Cross;
use crate::capture::CaptureFile;
use crate::scenario::swarm::SwarmScenario;
use crate::table::Table;
use crate::topology::household::{hosts, CROSS_APP};
use crate::topology::swarm::SWARM_APP;
use crate::world::{ConnTable, Perf, World};
use torrentlab_bittorrent::client::ClientStats;

/// Everything one swarm run produces: named tables and performance counters.
#[derive(Clone, Debug)]
pub struct SwarmOutput {
    pub tables: Vec<(&'static str, Table)>,
    pub perf: Perf,
    /// The files of `[capture]` (none without it): see [`crate::capture`].
    pub captures: Vec<CaptureFile>,
}

impl SwarmOutput {
    pub fn table(&self, name: &str) -> &Table {
        &self.tables.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no table {name}")).1
    }
}

fn secs(t: Option<Time>) -> f64 {
    t.map_or(f64::NAN, |t| t.as_secs_f64())
}

pub(crate) fn report(sc: &SwarmScenario, mut world: World) -> SwarmOutput {
    let perf = world.perf();
    let captures = match world.f.capture.take() {
        Some(cap) => {
            let conns = &world.f.conns;
            let index: HashMap<u32, usize> = conns.live().map(|(i, c)| (c.serial, i)).collect();
            cap.finish(|serial, side| conns[index[&serial]].ep[side].delivered())
        }
        None => Vec::new(),
    };
    let mut w: Box<Swarm> = world.take_app(SWARM_APP);
    // A frames record for every connection (cross traffic's have none).
    w.frames.resize_with(world.f.conns.len(), crate::apps::ConnFrames::new);
    // Every connection of the peers: those over, and those still open.
    let mut rows = std::mem::take(&mut w.retired);
    let live = world.f.conns.live().filter(|(_, c)| c.owner[0] == SWARM_APP as u32);
    rows.extend(live.map(|(i, c)| ConnRow::of(c, &w.frames[i])));
    rows.sort_unstable_by_key(|r| r.serial);
    let opened = world.f.conns.opened();
    // The peers' connections are not read from here on: their memory goes
    // before the tables are built (a run's peak is often here). A
    // household's cross traffic reads its own connections at the end.
    if sc.household.is_none() {
        world.f.conns = ConnTable::new(false, 0);
    }
    w.frames = Vec::new();
    let (f, end) = (&world.f, world.end);
    let n = w.peers.len();
    let mut rec = std::mem::take(&mut w.rec);
    let mut peers = Table::default();
    let tracker_done: Vec<f64> = (0..n).map(|i| secs(w.tracker.completed_at(i as u32))).collect();
    let join: Vec<f64> = w.peers.iter().map(|p| p.join.as_secs_f64()).collect();
    let download_time: Vec<f64> = w
        .peers
        .iter()
        .zip(&tracker_done)
        .map(|(p, &t)| if p.seed { f64::NAN } else { t - p.join.as_secs_f64() })
        .collect();
    let stat = |g: &dyn Fn(&Peer) -> u64| w.peers.iter().map(|p| g(p) as i64).collect::<Vec<_>>();
    let utilisation: Vec<f64> = w.peers.iter().map(|p| upload_utilisation(sc, p, end)).collect();
    peers
        .i64("peer", (0..n as i64).collect())
        .str("class", w.peers.iter().map(|p| sc.classes[p.class].label.clone()).collect())
        .str("client", w.peers.iter().map(|p| sc.classes[p.class].profile.name().to_string()).collect())
        .str("role", w.peers.iter().map(|p| if p.seed { "seed".to_string() } else { "leecher".to_string() }).collect())
        .str(
            "group",
            w.peers
                .iter()
                .map(|p| sc.classes[p.class].group.map_or(String::new(), |g| sc.groups[g].name.clone()))
                .collect(),
        )
        .f64("join_s", join)
        .f64(
            "completed_s",
            w.peers.iter().map(|p| if p.seed { f64::NAN } else { secs(p.client.completed_at()) }).collect(),
        )
        .f64("tracker_completed_s", tracker_done)
        .f64("download_time_s", download_time.clone())
        .f64("left_s", w.peers.iter().map(|p| secs(p.left)).collect())
        .i64("pieces", stat(&|p| p.client.pieces_had() as u64))
        .i64("bytes_down", stat(&|p| p.client.stats.bytes_down))
        .i64("bytes_wasted", stat(&|p| p.client.stats.bytes_wasted))
        .i64("bytes_up", stat(&|p| p.client.stats.bytes_up))
        .i64("connections_opened", stat(&|p| p.client.stats.connections_opened))
        .i64("connections_refused", stat(&|p| p.client.stats.connections_refused))
        .i64("fallbacks", stat(&|p| p.client.stats.fallbacks))
        .f64("first_unchoked_s", rec.first_unchoked.clone())
        .f64("upload_utilisation", utilisation.clone());

    let conns = if sc.metrics.connections { connections_table(&rows) } else { Table::default() };

    let [(_, haves), (_, chokes), (_, sends)] = rec.take_logs();
    let mut gaps = Table::default();
    let edges: Vec<(f64, f64)> = (0..rec.gap_hist.len()).map(gap_edges).collect();
    gaps.f64("gap_lo_s", edges.iter().map(|e| e.0).collect())
        .f64("gap_hi_s", edges.iter().map(|e| e.1).collect())
        .i64("sends", rec.gap_hist.iter().map(|&c| c as i64).collect());
    let mut payload = Table::default();
    let hist = &f.payload_hist;
    let lens: Vec<usize> = (1..hist.len()).filter(|&l| hist[l] > 0).collect();
    payload
        .i64("payload_bytes", lens.iter().map(|&l| l as i64).collect())
        .i64("segments", lens.iter().map(|&l| hist[l] as i64).collect());

    let done: Vec<f64> = download_time.iter().copied().filter(|t| t.is_finite()).collect();
    let mean = if done.is_empty() { f64::NAN } else { done.iter().sum::<f64>() / done.len() as f64 };
    let min = done.iter().copied().fold(f64::INFINITY, f64::min);
    let max = done.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let ns = f.net.stats();
    let total_down: u64 = w.peers.iter().map(|p| p.client.stats.bytes_down).sum();
    let total_wasted: u64 = w.peers.iter().map(|p| p.client.stats.bytes_wasted).sum();
    let mut summary = Table::default();
    summary
        .str("scenario", vec![sc.name.clone()])
        .i64("seed", vec![sc.seed as i64])
        .i64("peers", vec![n as i64])
        .i64("leechers", vec![sc.leecher_count() as i64])
        .i64("completed", vec![done.len() as i64])
        .f64("mean_download_time_s", vec![mean])
        .f64("min_download_time_s", vec![if done.is_empty() { f64::NAN } else { min }])
        .f64("max_download_time_s", vec![if done.is_empty() { f64::NAN } else { max }])
        .f64("end_s", vec![end.as_secs_f64()])
        .i64("file_bytes", vec![sc.torrent.length as i64])
        .i64("pieces", vec![sc.torrent.pieces() as i64])
        .f64("wasted_ratio", vec![if total_down > 0 { total_wasted as f64 / total_down as f64 } else { f64::NAN }])
        .i64("connections", vec![opened as i64])
        .i64("network_sent_packets", vec![ns.sent_packets as i64])
        .i64("network_dropped_packets", vec![ns.dropped_packets as i64])
        .i64("network_lost_packets", vec![ns.lost_packets as i64]);
    diagnostics(&mut summary, sc, &w.peers, &rec, &utilisation);
    let transports = transports_table(&rows);
    let uplinks = uplinks_table(&w, &mut world.f.net, end);
    let uplink_queue = take_uplink_logs(&mut world.f.net, end);
    let uplink_delays = uplink_delays_table(&world.f.net, w.peers.len());
    let mut tables = vec![
        ("summary", summary),
        ("peers", peers),
        ("connections", conns),
        ("haves", haves),
        ("chokes", chokes),
        ("sends", sends),
        ("send_gaps", gaps),
        ("payload_lengths", payload),
        ("transports", transports),
        ("uplinks", uplinks),
        ("uplink_queue", uplink_queue),
        ("uplink_delays", uplink_delays),
        ("piece_spread", piece_spread(&rec)),
    ];
    if sc.household.is_some() {
        let cross: Box<Cross> = world.take_app(CROSS_APP);
        let home = hosts(sc).home as usize;
        let home_peer = w.peers.get(home);
        let summary = &mut tables[0].1;
        summary
            .i64("home_bytes_up", vec![home_peer.map_or(0, |p| p.client.stats.bytes_up as i64)])
            .i64("home_bytes_down", vec![home_peer.map_or(0, |p| p.client.stats.bytes_down as i64)]);
        cross.summary_columns(summary);
        tables.extend(cross.tables(&world.f, end));
    }
    SwarmOutput { tables, perf, captures }
}

/// The share of what a peer could upload that it did: block bytes sent over
/// the lower of its upload limit and its uplink's rate, times its time in
/// the swarm (join to departure or the run's end). NaN with neither limit,
/// or before it joined.
fn upload_utilisation(sc: &SwarmScenario, p: &Peer, end: Time) -> f64 {
    let link = sc.classes[p.class].uplink.capacity_bps.map(|b| b as f64 / 8.0);
    let cap = match (p.client.config().upload_rate, link) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => return f64::NAN,
    };
    let span = p.left.unwrap_or(end).min(end).saturating_since(p.join).as_secs_f64();
    if span > 0.0 {
        p.client.stats.bytes_up as f64 / (cap * span)
    } else {
        f64::NAN
    }
}

/// The swarm diagnostics of the summary (docs/metrics.md): copies of the
/// content the initial seeds uploaded, pieces any leecher got, the leechers'
/// upload utilisation, wasted bytes by cause, and unchoke times.
fn diagnostics(t: &mut Table, sc: &SwarmScenario, peers: &[Peer], rec: &SwarmRecorder, util: &[f64]) {
    let seeds_up: u64 = peers.iter().filter(|p| p.seed).map(|p| p.client.stats.bytes_up).sum();
    let leechers: Vec<usize> = (0..peers.len()).filter(|&i| !peers[i].seed).collect();
    let mean = |xs: Vec<f64>| {
        let xs: Vec<f64> = xs.into_iter().filter(|x| x.is_finite()).collect();
        if xs.is_empty() {
            f64::NAN
        } else {
            xs.iter().sum::<f64>() / xs.len() as f64
        }
    };
    let wasted = |g: fn(&ClientStats) -> u64| peers.iter().map(|p| g(&p.client.stats)).sum::<u64>() as i64;
    let first = rec.first_unchoked.iter().copied().filter(|x| x.is_finite()).fold(f64::NAN, f64::min);
    t.f64("seed_copies_uploaded", vec![seeds_up as f64 / sc.torrent.length as f64])
        .i64("pieces_reached_leechers", vec![rec.piece_first.iter().filter(|x| x.is_finite()).count() as i64])
        .f64("leecher_upload_utilisation", vec![mean(leechers.iter().map(|&i| util[i]).collect())])
        .i64("wasted_dropped_bytes", vec![wasted(|s| s.wasted_dropped)])
        .i64("wasted_duplicate_bytes", vec![wasted(|s| s.wasted_duplicate)])
        .i64("wasted_end_game_bytes", vec![wasted(|s| s.wasted_end_game)])
        .f64("first_unchoke_s", vec![first])
        .f64(
            "mean_time_to_first_unchoke_s",
            vec![mean(leechers.iter().map(|&i| rec.first_unchoked[i] - peers[i].join.as_secs_f64()).collect())],
        );
}

/// One row per piece: when a peer that did not start with it first had it
/// verified, and how many peers did (docs/metrics.md, `piece_spread`).
fn piece_spread(rec: &SwarmRecorder) -> Table {
    let mut t = Table::default();
    t.i64("piece", (0..rec.piece_first.len() as i64).collect())
        .f64("first_s", rec.piece_first.clone())
        .i64("copies", rec.piece_copies.iter().map(|&c| c as i64).collect());
    t
}

/// One row per peer: what its uplink did (docs/metrics.md, `uplinks`).
///
/// Utilisation and the time the queue was non-empty are over the time the
/// peer was in the swarm, from its join until it left (or the run ended),
/// extended to the end of its uplink's last transmission (what it held when
/// the peer left, resets sent after; at most the run's end): the link carries
/// nothing outside it, so utilisation is at most 1.
fn uplinks_table(w: &Swarm, net: &mut torrentlab_net::Network, end: Time) -> Table {
    let n = w.peers.len();
    let mut t = Table::default();
    let (mut capacity, mut buf_packets, mut buf_bytes, mut active) = (vec![], vec![], vec![], vec![]);
    let (mut served_p, mut served_b, mut dropped_p, mut dropped_b) = (vec![], vec![], vec![], vec![]);
    let (mut mean_ms, mut p95_ms, mut nonempty, mut util) = (vec![], vec![], vec![], vec![]);
    let mut mean_queue = vec![];
    for (i, p) in w.peers.iter().enumerate() {
        let up = net.uplink(HostId(i as u32));
        let link = net.link_mut(up);
        let s = link.stats(end);
        let cap = link.capacity_bps();
        let span_ns = if p.join <= end {
            let gone = p.left.unwrap_or(end).min(end).max(link.busy_until().min(end));
            gone.0 - p.join.0
        } else {
            0
        };
        let span = |x: f64| if span_ns > 0 { x / span_ns as f64 } else { f64::NAN };
        let served = s.served_packets;
        capacity.push(cap.map_or(f64::NAN, |c| c as f64));
        let (bp, bb) = match (cap, link.config().buffer) {
            (None, _) => (f64::NAN, f64::NAN),
            (Some(_), BufferLimit::Packets(k)) => (k as f64, f64::NAN),
            (Some(_), BufferLimit::Bytes(b)) => (f64::NAN, b as f64),
        };
        buf_packets.push(bp);
        buf_bytes.push(bb);
        active.push(span_ns as f64 * 1e-9);
        served_p.push(served as i64);
        served_b.push(s.served_bytes as i64);
        dropped_p.push(s.dropped_packets as i64);
        dropped_b.push(s.dropped_bytes as i64);
        let none = |x: f64| if served > 0 { x } else { f64::NAN };
        mean_ms.push(none(s.wait_ns as f64 / served.max(1) as f64 * 1e-6));
        // An unlimited link keeps no histogram: every packet waited 0.
        p95_ms.push(none(link.delay_histogram().map_or(Some(0.0), |h| h.quantile_ns(0.95)).unwrap_or(0.0) * 1e-6));
        nonempty.push(span(link.queue_nonempty_ns(end).unwrap_or(0) as f64));
        mean_queue.push(if cap.is_some() { span(s.wait_byte_ns as f64) } else { 0.0 });
        util.push(cap.map_or(f64::NAN, |c| span(s.transmitted_bits(c) / c as f64 * 1e9)));
    }
    t.i64("peer", (0..n as i64).collect())
        .f64("capacity_bps", capacity)
        .f64("buffer_packets", buf_packets)
        .f64("buffer_bytes", buf_bytes)
        .f64("active_s", active)
        .i64("served_packets", served_p)
        .i64("served_bytes", served_b)
        .i64("dropped_packets", dropped_p)
        .i64("dropped_bytes", dropped_b)
        .f64("mean_delay_ms", mean_ms)
        .f64("p95_delay_ms", p95_ms)
        .f64("queue_nonempty_fraction", nonempty)
        .f64("mean_queue_bytes", mean_queue)
        .f64("utilisation", util);
    t
}

/// The queueing delay of every packet served at each limited uplink, as a
/// histogram: one row per peer and delay bucket that counted anything
/// (docs/metrics.md, `uplink_delays`).
fn uplink_delays_table(net: &torrentlab_net::Network, n: usize) -> Table {
    let (mut peer, mut lo, mut hi, mut packets) = (vec![], vec![], vec![], vec![]);
    for i in 0..n {
        let link = net.link(net.uplink(HostId(i as u32)));
        let Some(h) = link.delay_histogram() else { continue };
        for (l, w, c) in h.buckets() {
            peer.push(i as i64);
            lo.push(l as f64 * 1e-6);
            hi.push((l + w) as f64 * 1e-6);
            packets.push(c as i64);
        }
    }
    let mut t = Table::default();
    t.i64("peer", peer).f64("delay_lo_ms", lo).f64("delay_hi_ms", hi).i64("packets", packets);
    t
}
