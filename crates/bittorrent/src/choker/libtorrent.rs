//! libtorrent's default choker, read from its source (RC_1_2
//! `session_impl::recalculate_unchoke_slots`, `src/choker.cpp`
//! `unchoke_sort` with `unchoke_compare_rr`, `session_impl::
//! recalculate_optimistic_unchoke_slots`, `torrent::maybe_unchoke_this_peer`):
//! `fixed_slots_choker` with the `round_robin` seed ordering.
//!
//! * A regular round every `unchoke_interval` (15 s): the candidates are the
//!   interested peers. They are ranked by the bytes they sent us in the last
//!   round (most first); then a peer unchoked for more than a minute that has
//!   been sent more than 20 pieces' worth since its unchoke ranks below the
//!   others (its quota is complete); then by the bytes we sent it in the last
//!   round (0 if it is choked now); then the one unchoked longest ago first.
//!   The first `slots - optimistic` (7 of 8) are unchoked, the rest choked,
//!   but for the optimistic unchoke. A peer that is not interested is choked.
//! * An optimistic round every `optimistic_unchoke_interval` (30 s, every
//!   second regular round) and whenever the optimistic peer is promoted to a
//!   regular slot: of the interested peers that are choked (or the current
//!   optimistic one), the one optimistically unchoked longest ago (never
//!   first) is unchoked. `max(1, slots / 5)` optimistic slots: 1 of 8.
//! * Between rounds, a choked peer that becomes interested is unchoked at
//!   once while fewer than `slots` are unchoked; and a slot freed by a peer
//!   that leaves or loses interest goes to the best-ranked candidate (libtorrent
//!   runs a regular round within the next second).
//!
//! libtorrent counts slots over the session; a client here shares one
//! torrent, so its slots are the session's. libtorrent leaves the order of
//! the top `slots` peers unspecified (`nth_element`); here they are fully
//! sorted, ties to the lower connection slot.

use torrentlab_engine::{Duration, EntityRng, Time};

use super::{Choker, Decision, PeerView};

/// A peer unchoked this long or more, with its quota sent, yields its slot.
const QUOTA_TIME: Duration = Duration::from_secs(60);
/// Pieces' worth sent since an unchoke that completes a peer's quota
/// (`seeding_piece_quota`).
const PIECE_QUOTA: u64 = 20;

/// What the choker remembers of one connection.
#[derive(Clone, Copy, Debug, Default)]
struct Memo {
    /// Totals at the start of this round (bytes received, sent).
    downloaded_at_round: u64,
    uploaded_at_round: u64,
    /// The last unchoke (any kind), or when the connection was ready if it
    /// never was (libtorrent starts `m_last_unchoke` at the connection's
    /// construction), and bytes sent by then.
    unchoked_at: Time,
    uploaded_at_unchoke: u64,
    last_optimistic: Option<Time>,
    optimistic: bool,
}

/// libtorrent's `fixed_slots_choker` with `round_robin` seed ordering.
#[derive(Clone, Debug)]
pub struct LibtorrentChoker {
    slots: u32,
    optimistic_slots: u32,
    /// Regular rounds per optimistic round (30 s / 15 s).
    optimistic_every: u64,
    /// A piece's length in bytes (the quota is counted in pieces).
    piece_length: u64,
    rounds: u64,
    memo: Vec<Memo>,
    /// Scratch: (rank key, id, index in the views) of the candidates.
    ranked: Vec<(Rank, u32, usize)>,
}

/// The sort key of `unchoke_compare_rr`: smaller ranks first.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
struct Rank {
    /// Minus the bytes the peer sent us in the last round.
    neg_downloaded: i64,
    quota_complete: bool,
    /// Minus the bytes we sent it in the last round (0 when choked).
    neg_uploaded: i64,
    /// The last unchoke (or the connection's start), ns: the longest ago first.
    unchoked_at: u64,
}

impl LibtorrentChoker {
    /// `slots` (`unchoke_slots_limit`, 8), a regular round every
    /// `interval` and an optimistic one every `optimistic_interval`, pieces
    /// of `piece_length` bytes.
    pub fn new(slots: u32, interval: Duration, optimistic_interval: Duration, piece_length: u64) -> Self {
        let every = (optimistic_interval.0 / interval.0.max(1)).max(1);
        LibtorrentChoker {
            slots,
            optimistic_slots: (slots / 5).max(1),
            optimistic_every: every,
            piece_length,
            rounds: 0,
            memo: Vec::new(),
            ranked: Vec::new(),
        }
    }

    /// libtorrent's defaults: 8 slots, 15 s rounds, optimistic every 30 s.
    pub fn defaults(piece_length: u64) -> Self {
        Self::new(8, Duration::from_secs(15), Duration::from_secs(30), piece_length)
    }

    fn memo(&mut self, id: u32) -> &mut Memo {
        let i = id as usize;
        if self.memo.len() <= i {
            self.memo.resize(i + 1, Memo::default());
        }
        &mut self.memo[i]
    }

    fn rank(&self, now: Time, p: &PeerView) -> Rank {
        let m = self.memo.get(p.id as usize).copied().unwrap_or_default();
        let since_unchoke = p.uploaded.saturating_sub(m.uploaded_at_unchoke);
        let quota_complete = !p.choked
            && since_unchoke > self.piece_length * PIECE_QUOTA
            && now.saturating_since(m.unchoked_at) > QUOTA_TIME;
        let up = if p.choked { 0 } else { p.uploaded.saturating_sub(m.uploaded_at_round) };
        Rank {
            neg_downloaded: -(p.downloaded.saturating_sub(m.downloaded_at_round) as i64),
            quota_complete,
            neg_uploaded: -(up as i64),
            unchoked_at: m.unchoked_at.0,
        }
    }

    /// Whether `p` is choked once the decisions in `out` are carried out.
    fn choked(p: &PeerView, out: &[Decision]) -> bool {
        out.iter()
            .rev()
            .find_map(|d| match *d {
                Decision::Choke(i) if i == p.id => Some(true),
                Decision::Unchoke(i) if i == p.id => Some(false),
                _ => None,
            })
            .unwrap_or(p.choked)
    }

    fn unchoke(&mut self, now: Time, p: &PeerView, optimistic: bool, out: &mut Vec<Decision>) {
        let choked = Self::choked(p, out);
        let m = self.memo(p.id);
        if optimistic {
            m.optimistic = true;
            m.last_optimistic = Some(now);
        }
        if choked {
            m.unchoked_at = now;
            m.uploaded_at_unchoke = p.uploaded;
            out.push(Decision::Unchoke(p.id));
        }
    }

    fn choke(&mut self, p: &PeerView, out: &mut Vec<Decision>) {
        self.memo(p.id).optimistic = false;
        if !Self::choked(p, out) {
            out.push(Decision::Choke(p.id));
        }
    }

    /// The candidates (interested peers), best first.
    fn rank_candidates(&mut self, now: Time, peers: &[PeerView]) {
        let mut ranked = std::mem::take(&mut self.ranked);
        ranked.clear();
        ranked
            .extend(peers.iter().enumerate().filter(|(_, p)| p.interested).map(|(i, p)| (self.rank(now, p), p.id, i)));
        ranked.sort_by(|a, b| a.0.partial_cmp(&b.0).expect("no NaN in a rank").then(a.1.cmp(&b.1)));
        self.ranked = ranked;
    }

    fn is_optimistic(&self, id: u32) -> bool {
        self.memo.get(id as usize).is_some_and(|m| m.optimistic)
    }

    /// The regular round; returns whether the optimistic peer was promoted.
    fn regular(&mut self, now: Time, peers: &[PeerView], out: &mut Vec<Decision>) -> bool {
        self.rank_candidates(now, peers);
        let regular = self.slots.saturating_sub(self.optimistic_slots) as usize;
        let ranked = std::mem::take(&mut self.ranked);
        let mut promoted = false;
        for (k, &(_, id, i)) in ranked.iter().enumerate() {
            let p = &peers[i];
            if k < regular {
                if self.is_optimistic(id) {
                    promoted = true;
                    self.memo(id).optimistic = false;
                }
                self.unchoke(now, p, false, out);
            } else if !self.is_optimistic(id) {
                self.choke(p, out);
            }
        }
        for p in peers.iter().filter(|p| !p.interested) {
            self.choke(p, out);
        }
        // The round's counts start again.
        for p in peers {
            let m = self.memo(p.id);
            m.downloaded_at_round = p.downloaded;
            m.uploaded_at_round = p.uploaded;
        }
        self.ranked = ranked;
        promoted
    }

    /// The optimistic round: the interested peer, choked or optimistic now,
    /// optimistically unchoked longest ago (never first; ties to the lower
    /// slot) takes the optimistic slot.
    fn optimistic(&mut self, now: Time, peers: &[PeerView], out: &mut Vec<Decision>) {
        let mut candidates: Vec<(Option<Time>, u32)> = peers
            .iter()
            .filter(|p| p.interested && (Self::choked(p, out) || self.is_optimistic(p.id)))
            .map(|p| (self.memo.get(p.id as usize).and_then(|m| m.last_optimistic), p.id))
            .collect();
        candidates.sort();
        let chosen: Vec<u32> = candidates.iter().take(self.optimistic_slots as usize).map(|c| c.1).collect();
        for p in peers {
            if chosen.contains(&p.id) {
                self.unchoke(now, p, true, out);
            } else if self.is_optimistic(p.id) {
                self.choke(p, out);
            }
        }
    }
}

impl Choker for LibtorrentChoker {
    fn add_peer(&mut self, now: Time, id: u32, _rng: &mut EntityRng) {
        *self.memo(id) = Memo { unchoked_at: now, ..Memo::default() };
    }

    fn remove_peer(&mut self, id: u32) {
        if let Some(m) = self.memo.get_mut(id as usize) {
            *m = Memo::default();
        }
    }

    fn rechoke(&mut self, now: Time, peers: &[PeerView], _seeding: bool, out: &mut Vec<Decision>) {
        let promoted = self.regular(now, peers, out);
        self.rounds += 1;
        if promoted || self.rounds.is_multiple_of(self.optimistic_every) {
            self.optimistic(now, peers, out);
        }
    }

    /// Free slots go to interested choked peers, best-ranked first.
    fn rechoke_event(&mut self, now: Time, peers: &[PeerView], _seeding: bool, out: &mut Vec<Decision>) {
        let unchoked = peers.iter().filter(|p| !p.choked).count();
        let mut free = (self.slots as usize).saturating_sub(unchoked);
        if free == 0 {
            return;
        }
        self.rank_candidates(now, peers);
        let ranked = std::mem::take(&mut self.ranked);
        for &(_, _, i) in &ranked {
            if free == 0 {
                break;
            }
            let p = &peers[i];
            if p.choked {
                self.unchoke(now, p, false, out);
                free -= 1;
            }
        }
        self.ranked = ranked;
    }

    fn reads_flushed(&self, _seeding: bool) -> bool {
        false
    }

    fn reads_totals(&self) -> bool {
        true
    }

    fn rechokes_on_interest(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PIECE: u64 = 262_144;

    fn peer(id: u32, interested: bool, choked: bool, downloaded: u64, uploaded: u64) -> PeerView {
        PeerView {
            id,
            interested,
            snubbed: false,
            download_rate: 0.0,
            upload_rate: 0.0,
            choked,
            has_requests: false,
            flushed: true,
            downloaded,
            uploaded,
        }
    }

    fn choker(ids: impl IntoIterator<Item = u32>) -> LibtorrentChoker {
        let mut c = LibtorrentChoker::defaults(PIECE);
        let mut rng = EntityRng::new(1, torrentlab_engine::EntityId(1));
        for id in ids {
            c.add_peer(Time::ZERO, id, &mut rng);
        }
        c
    }

    fn secs(s: u64) -> Time {
        Time(s * 1_000_000_000)
    }

    fn unchoked(out: &[Decision]) -> Vec<u32> {
        let mut v: Vec<u32> =
            out.iter().filter_map(|d| if let Decision::Unchoke(i) = d { Some(*i) } else { None }).collect();
        v.sort();
        v
    }

    /// Applies decisions to the views' `choked` flags.
    fn apply(peers: &mut [PeerView], out: &[Decision]) {
        for d in out {
            match *d {
                Decision::Choke(i) => peers.iter_mut().find(|p| p.id == i).unwrap().choked = true,
                Decision::Unchoke(i) => peers.iter_mut().find(|p| p.id == i).unwrap().choked = false,
            }
        }
    }

    #[test]
    fn a_regular_round_unchokes_the_seven_peers_that_sent_us_the_most_and_one_optimistic_peer() {
        let mut c = choker(0..12);
        // Peer i sent us i x 10 kB this round; all interested and choked.
        let mut peers: Vec<PeerView> = (0..12).map(|i| peer(i, true, true, i as u64 * 10_000, 0)).collect();
        let mut out = Vec::new();
        c.rechoke(secs(15), &peers, false, &mut out);
        // Not an optimistic round yet (the first of every two): 7 regular.
        assert_eq!(unchoked(&out), vec![5, 6, 7, 8, 9, 10, 11]);
        apply(&mut peers, &out);
        // Over the next round the same peers send as much again, and we
        // send to those we unchoke.
        for p in &mut peers {
            p.downloaded *= 2;
            if !p.choked {
                p.uploaded += 100_000;
            }
        }
        out.clear();
        c.rechoke(secs(30), &peers, false, &mut out);
        // The second round: the same 7 stay, and the optimistic slot goes to
        // a peer never optimistically unchoked, the lowest slot.
        assert_eq!(unchoked(&out), vec![0]);
        assert!(out.iter().all(|d| matches!(d, Decision::Unchoke(_))), "{out:?}");
    }

    #[test]
    fn the_optimistic_slot_rotates_to_the_peer_optimistically_unchoked_longest_ago() {
        let mut c = choker(0..4);
        let mut peers: Vec<PeerView> = (0..4).map(|i| peer(i, true, true, 0, 0)).collect();
        // Only 8 slots matter with more peers; with 4, regular slots take all
        // of them: so use slots = 2 (1 regular + 1 optimistic).
        c.slots = 2;
        let mut optimistic = Vec::new();
        for round in 1..=8u64 {
            peers[0].downloaded += 10_000; // peer 0 keeps sending us data
            let mut out = Vec::new();
            c.rechoke(secs(15 * round), &peers, false, &mut out);
            apply(&mut peers, &out);
            if round % 2 == 0 {
                optimistic.push((0..4).find(|&i| c.is_optimistic(i)).unwrap());
            }
        }
        // Peer 0 holds the regular slot (it sends us the most); the
        // optimistic one cycles through the others, longest-waiting first.
        assert!(!peers[0].choked);
        assert_eq!(optimistic, vec![1, 2, 3, 1]);
    }

    #[test]
    fn an_interested_peer_is_unchoked_at_once_while_a_slot_is_free() {
        let mut c = choker(0..3);
        let peers = vec![peer(0, true, false, 0, 0), peer(1, true, true, 0, 0), peer(2, false, true, 0, 0)];
        let mut out = Vec::new();
        c.rechoke_event(secs(3), &peers, false, &mut out);
        assert_eq!(out, vec![Decision::Unchoke(1)], "peer 2 is not interested");
        // With every slot taken, nothing changes between rounds.
        let mut c = choker(0..10);
        let full: Vec<PeerView> = (0..10).map(|i| peer(i, true, i >= 8, 0, 0)).collect();
        out.clear();
        c.rechoke_event(secs(3), &full, false, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn a_peer_that_sends_nothing_yields_its_slot_to_one_that_waited_longer() {
        let mut c = choker(0..3);
        c.slots = 2; // one regular slot
        let mut peers: Vec<PeerView> = (0..3).map(|i| peer(i, true, true, 0, 0)).collect();
        let mut out = Vec::new();
        c.rechoke(secs(15), &peers, false, &mut out);
        apply(&mut peers, &out);
        assert_eq!(unchoked(&out), vec![0], "ties go to the lower slot");
        out.clear();
        c.rechoke(secs(30), &peers, false, &mut out);
        // Nothing moved either way: the peer waiting longest for an unchoke
        // (1, never unchoked) takes the regular slot. The optimistic slot
        // goes to a peer never optimistically unchoked: 0 and 2 tie, and the
        // lower slot wins, so 0 is choked and unchoked again in one rechoke
        // (libtorrent's two rounds would send both messages too).
        assert_eq!(out, vec![Decision::Unchoke(1), Decision::Choke(0), Decision::Unchoke(0)]);
        apply(&mut peers, &out);
        assert!(!peers[0].choked && !peers[1].choked && peers[2].choked);
        assert!(c.is_optimistic(0) && !c.is_optimistic(1));
    }

    #[test]
    fn a_seed_rotates_a_peer_that_has_had_its_twenty_pieces_and_a_minute() {
        let mut c = choker(0..9);
        c.slots = 2; // one regular slot, one optimistic
        let mut peers: Vec<PeerView> = (0..9).map(|i| peer(i, true, true, 0, 0)).collect();
        let mut out = Vec::new();
        c.rechoke(secs(15), &peers, true, &mut out);
        apply(&mut peers, &out);
        assert_eq!(unchoked(&out), vec![0]);
        // Peer 0 is sent 21 pieces over the next 75 s: past its quota and a minute.
        peers[0].uploaded = 21 * PIECE;
        for t in [30, 45, 60, 75] {
            out.clear();
            c.rechoke(secs(t), &peers, true, &mut out);
            apply(&mut peers, &out);
        }
        out.clear();
        c.rechoke(secs(90), &peers, true, &mut out);
        apply(&mut peers, &out);
        assert!(peers[0].choked, "peer 0 yields its regular slot: {out:?}");
        assert_eq!(peers.iter().filter(|p| !p.choked).count(), 2, "the slots stay full");
    }

    #[test]
    fn a_peer_that_is_not_interested_is_choked_in_a_round() {
        let mut c = choker(0..2);
        let peers = vec![peer(0, false, false, 0, 0), peer(1, true, false, 0, 0)];
        let mut out = Vec::new();
        c.rechoke(secs(15), &peers, false, &mut out);
        assert_eq!(out, vec![Decision::Choke(0)]);
    }
}
