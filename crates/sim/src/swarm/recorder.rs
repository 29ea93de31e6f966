//! What a swarm run records as it goes: pieces verified (HAVEs), chokes, the
//! application sends of selected leechers with the TCP state at that moment,
//! the distribution of gaps between sends, and TCP payload lengths on the wire.

use torrentlab_bittorrent::client::Note;
use torrentlab_engine::{Duration, Time};
use torrentlab_net::{HostId, Network, QueueRecord};
use torrentlab_transport::stream::Endpoint;

use crate::endpoint::Transport;

use crate::scenario::swarm::SwarmMetrics;
use crate::table::Table;
use crate::watch::Spill;

/// Gap histogram: 10 log-spaced bins per decade from 1 us to 10^4 s; bin 0
/// holds gaps under 1 us (sends in the same instant).
pub(crate) const GAP_BINS_PER_DECADE: usize = 10;
pub(crate) const GAP_MIN_S: f64 = 1e-6;
pub(crate) const GAP_DECADES: usize = 10;

#[derive(Default)]
pub(crate) struct SwarmRecorder {
    pub haves: bool,
    pub chokes: bool,
    pub have_t: Vec<f64>,
    pub have_peer: Vec<i64>,
    pub have_piece: Vec<i64>,
    pub choke_t: Vec<f64>,
    pub choke_peer: Vec<i64>,
    pub choke_remote: Vec<i64>,
    pub choke_choked: Vec<i64>,
    pub send_t: Vec<f64>,
    pub send_peer: Vec<i64>,
    pub send_conn: Vec<i64>,
    pub send_bytes: Vec<i64>,
    pub send_gap_s: Vec<f64>,
    pub send_srtt_ms: Vec<f64>,
    pub send_cwnd: Vec<i64>,
    /// Gaps between successive sends on a connection, at leechers.
    pub gap_hist: Vec<u64>,
    /// `gap_starts[i]`: the shortest gap, ns, in bin `i + 1` (see [`gap_bin`]).
    gap_starts: Vec<u64>,
    /// `octave_bins[e]`: the bin of a gap of `2^e` ns, the lowest bin of any
    /// gap in `[2^e, 2^(e+1))` ns. A doubling spans about three bins, so the
    /// bin of a gap is at most a few steps up from its octave's.
    octave_bins: Vec<u8>,
    pub wasted: Vec<u64>,
    /// When each peer was first unchoked by anyone (the unchoke's send
    /// time), seconds; NaN: never.
    pub first_unchoked: Vec<f64>,
    /// When each piece was first verified by a peer that did not start with
    /// it, seconds (NaN: never), and how many peers verified it.
    pub piece_first: Vec<f64>,
    pub piece_copies: Vec<u32>,
}

impl SwarmRecorder {
    /// Rows in the largest of the logs that grow as the run goes (`haves`,
    /// `chokes`, `sends`), not yet taken.
    pub fn log_rows(&self) -> usize {
        self.have_t.len().max(self.choke_t.len()).max(self.send_t.len())
    }

    /// Hands over the rows of `haves`, `chokes` and `sends` recorded so far;
    /// recording goes on.
    pub fn take_logs(&mut self) -> [(&'static str, Table); 3] {
        use std::mem::take;
        let mut haves = Table::default();
        haves
            .f64("time_s", take(&mut self.have_t))
            .i64("peer", take(&mut self.have_peer))
            .i64("piece", take(&mut self.have_piece));
        let mut chokes = Table::default();
        chokes
            .f64("time_s", take(&mut self.choke_t))
            .i64("peer", take(&mut self.choke_peer))
            .i64("remote", take(&mut self.choke_remote))
            .i64("choked", take(&mut self.choke_choked));
        let mut sends = Table::default();
        sends
            .f64("time_s", take(&mut self.send_t))
            .i64("peer", take(&mut self.send_peer))
            .i64("conn", take(&mut self.send_conn))
            .i64("bytes", take(&mut self.send_bytes))
            .f64("gap_s", take(&mut self.send_gap_s))
            .f64("srtt_ms", take(&mut self.send_srtt_ms))
            .i64("cwnd_bytes", take(&mut self.send_cwnd));
        [("haves", haves), ("chokes", chokes), ("sends", sends)]
    }

    /// For a swarm of `peers` peers and a torrent of `pieces` pieces.
    pub fn new(m: &SwarmMetrics, peers: usize, pieces: usize) -> Self {
        SwarmRecorder {
            haves: m.haves,
            chokes: m.chokes,
            gap_hist: vec![0; 1 + GAP_BINS_PER_DECADE * GAP_DECADES],
            octave_bins: octave_bins(&gap_starts()),
            gap_starts: gap_starts(),
            wasted: vec![0; peers],
            first_unchoked: vec![f64::NAN; peers],
            piece_first: vec![f64::NAN; pieces],
            piece_copies: vec![0; pieces],
            ..Default::default()
        }
    }

    /// An application write of `bytes` on connection `conn` (its serial) of `peer`: its gap counts in
    /// the histogram at leechers, and `log` puts it in the send log.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn send(
        &mut self,
        now: Time,
        peer: u32,
        conn: u32,
        bytes: u32,
        gap: Option<Duration>,
        leecher: bool,
        log: bool,
        ep: &Transport,
    ) {
        if let Some(g) = gap.filter(|_| leecher) {
            let b = self.bin_of(g.as_nanos());
            self.gap_hist[b] += 1;
        }
        if log {
            let info = ep.info().expect("both transports send");
            self.send_t.push(now.as_secs_f64());
            self.send_peer.push(peer as i64);
            self.send_conn.push(conn as i64);
            self.send_bytes.push(bytes as i64);
            self.send_gap_s.push(gap.map_or(f64::NAN, |g| g.as_secs_f64()));
            self.send_srtt_ms.push(info.srtt.map_or(f64::NAN, |d| d.as_millis_f64()));
            self.send_cwnd.push(info.cwnd as i64);
        }
    }

    /// The bin of a gap of `g` ns by table: equal to [`gap_bin`] for every
    /// whole ns, without its logarithm. Starts at the bin of the gap's octave
    /// (`floor(log2 g)`) and steps up past the starts it reaches.
    #[inline]
    fn bin_of(&self, g: u64) -> usize {
        let octave = 63 - (g | 1).leading_zeros() as usize;
        let mut b = self.octave_bins[octave] as usize;
        while b < self.gap_starts.len() && self.gap_starts[b] <= g {
            b += 1;
        }
        b
    }

    pub fn note(&mut self, now: Time, peer: u32, note: Note) {
        // Always kept (the summary's diagnostics); the logs below as asked.
        match note {
            Note::Choke { remote, choked: false, .. } => {
                let first = &mut self.first_unchoked[remote as usize];
                if first.is_nan() {
                    *first = now.as_secs_f64();
                }
            }
            Note::PieceVerified { piece } => {
                let p = piece as usize;
                if self.piece_first[p].is_nan() {
                    self.piece_first[p] = now.as_secs_f64();
                }
                self.piece_copies[p] += 1;
            }
            _ => {}
        }
        match note {
            Note::PieceVerified { piece } if self.haves => {
                self.have_t.push(now.as_secs_f64());
                self.have_peer.push(peer as i64);
                self.have_piece.push(piece as i64);
            }
            Note::Choke { remote, choked, .. } if self.chokes => {
                self.choke_t.push(now.as_secs_f64());
                self.choke_peer.push(peer as i64);
                self.choke_remote.push(remote as i64);
                self.choke_choked.push(choked as i64);
            }
            Note::Wasted { bytes, .. } => self.wasted[peer as usize] += bytes as u64,
            _ => {}
        }
    }
}

/// Turns on the queue monitor of the uplinks of the first `peers` peers
/// (`metrics.uplink_log_peers`; peer `i` is host `i`).
pub(crate) fn enable_uplink_logs(net: &mut Network, peers: u32) {
    for h in 0..peers.min(net.host_count() as u32) {
        let up = net.uplink(HostId(h));
        net.link_mut(up).enable_monitor();
    }
}

/// The monitored uplinks, in peer order: the first peers, up to the first
/// that is not monitored (see [`enable_uplink_logs`]).
fn logged_uplinks(net: &Network) -> impl Iterator<Item = u32> + '_ {
    (0..net.host_count() as u32).take_while(|&h| net.link(net.uplink(HostId(h))).is_monitored())
}

/// Rows of the uplink logs not yet taken.
pub(crate) fn uplink_log_rows(net: &Network) -> usize {
    logged_uplinks(net).map(|h| net.link(net.uplink(HostId(h))).logged()).sum()
}

/// Takes every dequeue logged at the monitored uplinks up to `now` (retiring
/// what left by then) as `uplink_queue` rows, ordered by time, then peer.
/// Every dequeue logged later is after `now`, so the rows taken in chunks
/// come in the same order as taken at once.
pub(crate) fn take_uplink_logs(net: &mut Network, now: Time) -> Table {
    let hosts: Vec<u32> = logged_uplinks(net).collect();
    let mut rows: Vec<(u32, QueueRecord)> = Vec::new();
    for h in hosts {
        let up = net.uplink(HostId(h));
        rows.extend(net.link_mut(up).drain_log(now).into_iter().map(|r| (h, r)));
    }
    rows.sort_by_key(|&(h, r)| (r.time, h));
    let mut t = Table::default();
    t.f64("time_s", rows.iter().map(|(_, r)| r.time.as_secs_f64()).collect())
        .i64("peer", rows.iter().map(|&(h, _)| h as i64).collect())
        .i64("bytes", rows.iter().map(|(_, r)| r.bytes_left as i64).collect())
        .i64("packets", rows.iter().map(|(_, r)| r.packets_left as i64).collect())
        .i64("served_packets", rows.iter().map(|(_, r)| r.served_packets as i64).collect())
        .i64("served_bytes", rows.iter().map(|(_, r)| r.served_bytes as i64).collect())
        .i64("dropped_packets", rows.iter().map(|(_, r)| r.dropped_packets as i64).collect());
    t
}

/// Hands the uplink logs to `sp` once they hold `sp.rows` rows together
/// (see [`Spill`]); called by the run loop where it spills the other logs.
pub(crate) fn spill_uplink_logs(net: &mut Network, now: Time, sp: &mut Spill<'_>) {
    if uplink_log_rows(net) >= sp.rows {
        (sp.sink)("uplink_queue", take_uplink_logs(net, now));
    }
}

/// The histogram bin of a gap.
pub(crate) fn gap_bin(g: Duration) -> usize {
    let s = g.as_secs_f64();
    if s < GAP_MIN_S {
        return 0;
    }
    let k = ((s / GAP_MIN_S).log10() * GAP_BINS_PER_DECADE as f64).floor() as usize;
    1 + k.min(GAP_BINS_PER_DECADE * GAP_DECADES - 1)
}

/// For each bin after the first, the shortest gap (whole ns) that
/// [`gap_bin`] puts there or later, found by bisection on the formula itself,
/// so binning by this table gives the formula's bins exactly.
fn gap_starts() -> Vec<u64> {
    (1..=GAP_BINS_PER_DECADE * GAP_DECADES)
        .map(|bin| {
            let (mut lo, mut hi) = (0u64, 1u64 << 60); // gap_bin(lo) < bin <= gap_bin(hi)
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if gap_bin(Duration(mid)) >= bin {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            hi
        })
        .collect()
}

/// For each octave `e`, the bin of a gap of `2^e` ns under `starts` (see
/// [`SwarmRecorder::bin_of`]).
fn octave_bins(starts: &[u64]) -> Vec<u8> {
    (0..64).map(|e| starts.partition_point(|&s| s <= 1u64 << e) as u8).collect()
}

/// Lower and upper edge of bin `i`, seconds.
pub(crate) fn gap_edges(i: usize) -> (f64, f64) {
    if i == 0 {
        return (0.0, GAP_MIN_S);
    }
    let e = |k: usize| GAP_MIN_S * 10f64.powf(k as f64 / GAP_BINS_PER_DECADE as f64);
    (e(i - 1), e(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_fall_in_log_spaced_bins_with_same_instant_sends_apart() {
        assert_eq!(gap_bin(Duration::ZERO), 0);
        let b = gap_bin(Duration::from_millis(67));
        let (lo, hi) = gap_edges(b);
        assert!(lo <= 0.067 && 0.067 < hi, "{lo} {hi}");
        assert_eq!(gap_bin(Duration::from_secs(1_000_000)), GAP_BINS_PER_DECADE * GAP_DECADES, "clamped to the last");
    }

    #[test]
    fn the_bin_table_agrees_with_the_formula_at_and_around_every_edge_and_octave() {
        let m =
            SwarmMetrics { send_log_peers: 0, haves: false, chokes: false, connections: false, uplink_log_peers: 0 };
        let rec = SwarmRecorder::new(&m, 1, 1);
        let starts = gap_starts();
        let octaves = (0..63).map(|e| 1u64 << e);
        let near_edges = starts.iter().flat_map(|&e| [e.saturating_sub(1), e, e + 1, e * 3 / 2]);
        for ns in near_edges.chain(octaves.clone()).chain(octaves.map(|o| 2 * o - 1)) {
            assert_eq!(rec.bin_of(ns), gap_bin(Duration(ns)), "gap {ns} ns");
        }
        assert_eq!(rec.bin_of(0), 0);
        assert_eq!(rec.bin_of(u64::MAX), GAP_BINS_PER_DECADE * GAP_DECADES);
    }
}
