//! Chokers: who gets an upload slot. Mainline 4.0.x's (`Choker.py`) here, as
//! a policy behind a trait; libtorrent's in [`libtorrent`].
//!
//! Mainline's:
//!
//! * Every 10 s a rechoke; every third one (30 s) the ring of connections is
//!   first rotated to start at the first peer that is choked and interested:
//!   the new optimistic unchoke.
//! * Leecher: the `slots - 1` fastest interested, non-snubbed peers by their
//!   download rate to us are unchoked; then, walking the ring, peers are
//!   unchoked until `max(1, min_uploads - preferred)` interested ones have been
//!   (uninterested ones met on the way are unchoked for free); the rest choked.
//! * Seed: peers unchoked in the last 20 s (or with requests queued and a
//!   flushed socket) rank first, most recent first; the others by our upload
//!   rate to them. The top `slots - forced` stay unchoked; the remaining slots go
//!   to choked, interested, flushed peers in ring order, and the ring then
//!   starts after the last one unchoked. With 4 slots, 1, 1 and 0 new unchokes
//!   are forced over each 30 s cycle.
//! * New connections enter the ring at a uniformly random position.

use torrentlab_engine::{EntityRng, Time};

pub mod libtorrent;
pub use libtorrent::LibtorrentChoker;

/// What the choker needs to know about one connection at a rechoke.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PeerView {
    pub id: u32,
    /// The peer is interested in us.
    pub interested: bool,
    /// No piece data from the peer for longer than `snub_time` (30 s).
    pub snubbed: bool,
    /// Bytes/s the peer sends us (20 s window). Mainline measures it only
    /// for interested, non-snubbed peers (the leecher's candidates); 0 otherwise.
    pub download_rate: f64,
    /// Bytes/s we send the peer. Mainline measures it only when seeding, for
    /// unchoked interested peers (the seed's ranking); 0 otherwise.
    pub upload_rate: f64,
    /// We currently choke the peer.
    pub choked: bool,
    /// The peer has requests queued with us.
    pub has_requests: bool,
    /// Our socket to the peer has room (its send buffer is flushed).
    pub flushed: bool,
    /// Block bytes received from the peer, and sent to it, since the
    /// connection opened: read only for a choker that asks
    /// ([`Choker::reads_totals`]); 0 otherwise.
    pub downloaded: u64,
    pub uploaded: u64,
}

/// A rechoke decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Choke(u32),
    Unchoke(u32),
}

/// A choking policy.
pub trait Choker {
    /// A connection is ready at `now`.
    fn add_peer(&mut self, now: Time, id: u32, rng: &mut EntityRng);
    fn remove_peer(&mut self, id: u32);
    /// The periodic rechoke (every 10 s for mainline) at `now`. `seeding`:
    /// we have every piece. Appends the changes to `out` (only peers whose
    /// state changes).
    fn rechoke(&mut self, now: Time, peers: &[PeerView], seeding: bool, out: &mut Vec<Decision>);
    /// A rechoke outside the timer, on an event (mainline: an unchoked peer
    /// became interested or not interested, or an unchoked interested peer
    /// left). Nothing rotates and the seed forces no new unchokes.
    fn rechoke_event(&mut self, now: Time, peers: &[PeerView], seeding: bool, out: &mut Vec<Decision>);
    /// Whether this policy reads [`PeerView::flushed`] when `seeding`. The
    /// client looks at every socket only when it does.
    fn reads_flushed(&self, seeding: bool) -> bool {
        let _ = seeding;
        true
    }
    /// Whether this policy reads [`PeerView::downloaded`] and
    /// [`PeerView::uploaded`] (each connection's totals).
    fn reads_totals(&self) -> bool {
        false
    }
    /// Whether a choked peer that becomes interested calls for an event
    /// rechoke (libtorrent unchokes it at once while a slot is free);
    /// mainline rechokes only when an unchoked peer's interest changes.
    fn rechokes_on_interest(&self) -> bool {
        false
    }
}

/// Which choker a client runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChokerKind {
    Mainline,
    Libtorrent,
}

/// Either choker, chosen per client (a client profile's): calls are per
/// rechoke, so the match costs nothing that matters.
#[derive(Clone, Debug)]
pub enum AnyChoker {
    Mainline(MainlineChoker),
    Libtorrent(LibtorrentChoker),
}

macro_rules! either {
    ($self:expr, $c:ident => $call:expr) => {
        match $self {
            AnyChoker::Mainline($c) => $call,
            AnyChoker::Libtorrent($c) => $call,
        }
    };
}

impl Choker for AnyChoker {
    fn add_peer(&mut self, now: Time, id: u32, rng: &mut EntityRng) {
        either!(self, c => c.add_peer(now, id, rng))
    }
    fn remove_peer(&mut self, id: u32) {
        either!(self, c => c.remove_peer(id))
    }
    fn rechoke(&mut self, now: Time, peers: &[PeerView], seeding: bool, out: &mut Vec<Decision>) {
        either!(self, c => c.rechoke(now, peers, seeding, out))
    }
    fn rechoke_event(&mut self, now: Time, peers: &[PeerView], seeding: bool, out: &mut Vec<Decision>) {
        either!(self, c => c.rechoke_event(now, peers, seeding, out))
    }
    fn reads_flushed(&self, seeding: bool) -> bool {
        either!(self, c => c.reads_flushed(seeding))
    }
    fn reads_totals(&self) -> bool {
        either!(self, c => c.reads_totals())
    }
    fn rechokes_on_interest(&self) -> bool {
        either!(self, c => c.rechokes_on_interest())
    }
}

/// Upload slots from the upload limit in kB/s (mainline `_set_auto_uploads`):
/// 0 (unlimited) -> 7; below 9 -> 2; below 15 -> 3; below 42 -> 4; else
/// `int(sqrt(0.6 r))`.
pub fn upload_slots(max_upload_rate_kb: f64) -> u32 {
    if max_upload_rate_kb <= 0.0 {
        7
    } else if max_upload_rate_kb < 9.0 {
        2
    } else if max_upload_rate_kb < 15.0 {
        3
    } else if max_upload_rate_kb < 42.0 {
        4
    } else {
        (0.6 * max_upload_rate_kb).sqrt() as u32
    }
}

/// Mainline 4.0.x's choker.
#[derive(Clone, Debug)]
pub struct MainlineChoker {
    slots: u32,
    min_uploads: u32,
    /// Connections in ring order.
    ring: Vec<u32>,
    /// Rechokes so far (`count`).
    count: u64,
    /// Round of each peer's last unchoke by the seed algorithm.
    unchoke_round: Vec<(u32, u64)>,
    /// Seed unchokes made by event rechokes since the last timed one.
    unchokes_since_last: u64,
    /// Scratch space reused by every rechoke (no allocation per rechoke).
    scratch: Scratch,
}

#[derive(Clone, Debug, Default)]
struct Scratch {
    /// Position of each peer id in the views.
    at: Vec<u32>,
    /// (download rate, id) of preferred peers (leecher), or unchoke ranks (seed).
    preferred: Vec<(f64, u32)>,
    ranked: Vec<(u8, i64, f64, u32)>,
    /// Peers that keep their slot.
    kept: Vec<u32>,
}

impl MainlineChoker {
    pub fn new(slots: u32) -> Self {
        MainlineChoker {
            slots,
            min_uploads: 2,
            ring: Vec::new(),
            count: 0,
            unchoke_round: Vec::new(),
            unchokes_since_last: 0,
            scratch: Scratch::default(),
        }
    }

    pub fn ring(&self) -> &[u32] {
        &self.ring
    }

    /// Fills `at` with the position of each peer id in `peers` (ids are
    /// small: connection slots).
    fn index(at: &mut Vec<u32>, peers: &[PeerView]) {
        let len = peers.iter().map(|p| p.id as usize + 1).max().unwrap_or(0);
        at.clear();
        at.resize(len, u32::MAX);
        for (i, p) in peers.iter().enumerate() {
            at[p.id as usize] = i as u32;
        }
    }

    fn view<'a>(peers: &'a [PeerView], at: &[u32], id: u32) -> Option<&'a PeerView> {
        at.get(id as usize).filter(|&&i| i != u32::MAX).map(|&i| &peers[i as usize])
    }

    fn set_round(&mut self, id: u32) {
        let round = self.count;
        match self.unchoke_round.iter_mut().find(|(p, _)| *p == id) {
            Some(e) => e.1 = round,
            None => self.unchoke_round.push((id, round)),
        }
    }

    fn round_of(&self, id: u32) -> Option<u64> {
        self.unchoke_round.iter().find(|(p, _)| *p == id).map(|e| e.1)
    }

    fn leecher(&mut self, peers: &[PeerView], out: &mut Vec<Decision>) {
        let Scratch { at, preferred, .. } = &mut self.scratch;
        Self::index(at, peers);
        preferred.clear();
        preferred.extend(peers.iter().filter(|p| p.interested && !p.snubbed).map(|p| (p.download_rate, p.id)));
        preferred.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let prefcount = preferred.len().min(self.slots.saturating_sub(1) as usize);
        let mask = &preferred[..prefcount];
        let mut count = 1.max(self.min_uploads as i64 - prefcount as i64);
        for &id in &self.ring {
            let Some(p) = Self::view(peers, at, id) else { continue };
            let unchoke = if mask.iter().any(|m| m.1 == id) {
                true
            } else if count > 0 {
                if p.interested {
                    count -= 1;
                }
                true
            } else {
                false
            };
            match (unchoke, p.choked) {
                (true, true) => out.push(Decision::Unchoke(id)),
                (false, false) => out.push(Decision::Choke(id)),
                _ => {}
            }
        }
    }

    fn seed(&mut self, peers: &[PeerView], force: bool, out: &mut Vec<Decision>) {
        let mut scratch = std::mem::take(&mut self.scratch);
        let Scratch { at, ranked, kept, .. } = &mut scratch;
        Self::index(at, peers);
        // Mainline: i = (slots + 2) // 3; forced new unchokes only on the timer,
        // less those events made since the last one.
        let num_force = if force {
            let i = (self.slots as u64).div_ceil(3);
            let n = ((i + self.count % 3) / 3).saturating_sub(self.unchokes_since_last) as usize;
            self.unchokes_since_last = 0;
            n
        } else {
            0
        };
        let recent = self.count.saturating_sub(3);
        // (rank class, -unchoke round, -upload rate): class 0 = recent or busy.
        ranked.clear();
        ranked.extend(peers.iter().filter(|p| !p.choked && p.interested).map(|p| {
            let round = self.round_of(p.id);
            let recent_unchoke = round.is_some_and(|r| r > recent);
            if recent_unchoke || (p.has_requests && p.flushed) {
                (0, -(round.unwrap_or(0) as i64), -p.upload_rate, p.id)
            } else {
                (1, 0, -p.upload_rate, p.id)
            }
        }));
        ranked.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.total_cmp(&b.2)).then(a.3.cmp(&b.3)));
        let keep = (self.slots as usize).saturating_sub(num_force);
        kept.clear();
        kept.extend(ranked.iter().take(keep).map(|r| r.3));
        let mut free = self.slots as usize - kept.len();
        let mut last_unchoked = None;
        for k in 0..self.ring.len() {
            let id = self.ring[k];
            let Some(p) = Self::view(peers, at, id) else { continue };
            if kept.contains(&id) {
                continue;
            }
            if !p.interested {
                if !p.choked {
                    out.push(Decision::Choke(id));
                }
            } else if p.choked {
                if free > 0 && p.flushed {
                    out.push(Decision::Unchoke(id));
                    self.set_round(id);
                    if !force {
                        self.unchokes_since_last += 1;
                    }
                    free -= 1;
                    last_unchoked = Some(k);
                }
            } else {
                out.push(Decision::Choke(id));
            }
        }
        if let Some(k) = last_unchoked {
            self.ring.rotate_left(k + 1);
        }
        self.scratch = scratch;
    }
}

impl Choker for MainlineChoker {
    /// Mainline 3.9-5.x: a uniformly random ring position (`randrange(len + 1)`).
    fn add_peer(&mut self, _now: Time, id: u32, rng: &mut EntityRng) {
        let at = rng.range_inclusive(0, self.ring.len() as u64) as usize;
        self.ring.insert(at, id);
    }

    fn remove_peer(&mut self, id: u32) {
        self.ring.retain(|&p| p != id);
        self.unchoke_round.retain(|(p, _)| *p != id);
    }

    fn rechoke(&mut self, _now: Time, peers: &[PeerView], seeding: bool, out: &mut Vec<Decision>) {
        self.count += 1;
        if !seeding && self.count.is_multiple_of(3) {
            // The optimistic unchoke moves on: start the ring at the first
            // choked, interested peer.
            let at = &mut self.scratch.at;
            Self::index(at, peers);
            if let Some(k) =
                self.ring.iter().position(|&id| Self::view(peers, at, id).is_some_and(|p| p.choked && p.interested))
            {
                self.ring.rotate_left(k);
            }
        }
        if seeding {
            self.seed(peers, true, out)
        } else {
            self.leecher(peers, out)
        }
    }

    fn rechoke_event(&mut self, _now: Time, peers: &[PeerView], seeding: bool, out: &mut Vec<Decision>) {
        if seeding {
            self.seed(peers, false, out)
        } else {
            self.leecher(peers, out)
        }
    }

    /// Only the seed algorithm looks at sockets.
    fn reads_flushed(&self, seeding: bool) -> bool {
        seeding
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torrentlab_engine::EntityId;

    fn peer(id: u32, interested: bool, rate: f64, choked: bool) -> PeerView {
        PeerView {
            id,
            interested,
            snubbed: false,
            download_rate: rate,
            upload_rate: rate,
            choked,
            has_requests: false,
            flushed: true,
            downloaded: 0,
            uploaded: 0,
        }
    }

    /// One timed (`event` false) or event rechoke; its decisions.
    fn run(c: &mut MainlineChoker, peers: &[PeerView], seeding: bool, event: bool) -> Vec<Decision> {
        let mut out = Vec::new();
        if event {
            c.rechoke_event(Time::ZERO, peers, seeding, &mut out);
        } else {
            c.rechoke(Time::ZERO, peers, seeding, &mut out);
        }
        out
    }

    fn choker_with(ids: &[u32]) -> MainlineChoker {
        let mut c = MainlineChoker::new(4);
        c.ring = ids.to_vec();
        c
    }

    #[test]
    fn the_upload_slot_table_follows_mainline() {
        let got: Vec<u32> = [0.0, 5.0, 10.0, 20.0, 42.0, 60.0, 100.0].iter().map(|r| upload_slots(*r)).collect();
        assert_eq!(got, vec![7, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn a_leecher_unchokes_the_three_fastest_and_one_more_in_ring_order() {
        let mut c = choker_with(&[1, 2, 3, 4, 5, 6]);
        let peers = [
            peer(1, true, 10.0, true),
            peer(2, true, 50.0, true),
            peer(3, true, 40.0, true),
            peer(4, true, 30.0, true),
            peer(5, true, 20.0, true),
            peer(6, true, 0.0, true),
        ];
        let d = run(&mut c, &peers, false, false);
        // 2, 3, 4 by rate; the ring starts at 1: the optimistic slot goes to 1.
        assert_eq!(d, vec![Decision::Unchoke(1), Decision::Unchoke(2), Decision::Unchoke(3), Decision::Unchoke(4)]);
    }

    #[test]
    fn the_regular_slots_go_to_the_fastest_with_ties_to_the_lower_id_whatever_the_view_order() {
        // Rates 30 (ids 9, 4), 20 (ids 8, 2, 5), 10 (id 1): the three regular
        // slots go to 4 and 9, then 2 (the lowest id at rate 20).
        let rates = [(9, 30.0), (8, 20.0), (1, 10.0), (2, 20.0), (4, 30.0), (5, 20.0)];
        for rotate in 0..rates.len() {
            let mut order = rates.to_vec();
            order.rotate_left(rotate);
            let mut c = choker_with(&[1, 2, 4, 5, 8, 9]);
            let peers: Vec<PeerView> = order.iter().map(|&(id, r)| peer(id, true, r, true)).collect();
            let d = run(&mut c, &peers, false, false);
            // The optimistic walk starts at 1 (the ring's first interested peer).
            let mut unchoked: Vec<u32> =
                d.iter().filter_map(|x| if let Decision::Unchoke(id) = x { Some(*id) } else { None }).collect();
            unchoked.sort_unstable();
            assert_eq!(unchoked, vec![1, 2, 4, 9], "view order rotated by {rotate}");
        }
    }

    #[test]
    fn snubbed_peers_lose_their_regular_slot_and_uninterested_ones_ride_free() {
        let mut c = choker_with(&[7, 1, 2, 3, 4]);
        let mut peers = vec![
            peer(7, false, 0.0, true),
            peer(1, true, 90.0, false),
            peer(2, true, 50.0, true),
            peer(3, true, 40.0, true),
            peer(4, true, 30.0, true),
        ];
        peers[1].snubbed = true;
        let d = run(&mut c, &peers, false, false);
        // Regular: 2, 3, 4. Optimistic walk: 7 (uninterested, free), then 1.
        assert!(d.contains(&Decision::Unchoke(7)));
        assert!(!d.contains(&Decision::Choke(1)), "1 keeps the optimistic slot: {d:?}");
        assert_eq!(d.iter().filter(|x| matches!(x, Decision::Unchoke(_))).count(), 4);
    }

    #[test]
    fn every_third_rechoke_moves_the_optimistic_unchoke_to_the_next_choked_interested_peer() {
        let mut c = choker_with(&[1, 2, 3, 4, 5, 6]);
        let rates = [(1, 0.0), (2, 50.0), (3, 40.0), (4, 30.0), (5, 0.0), (6, 0.0)];
        let mut choked: Vec<u32> = rates.iter().map(|r| r.0).collect();
        let mut optimistic = vec![];
        for _ in 0..3 {
            let peers: Vec<PeerView> = rates.iter().map(|&(id, r)| peer(id, true, r, choked.contains(&id))).collect();
            for d in run(&mut c, &peers, false, false) {
                match d {
                    Decision::Unchoke(id) => choked.retain(|&x| x != id),
                    Decision::Choke(id) => choked.push(id),
                }
            }
            optimistic.push(*[1, 5, 6].iter().find(|id| !choked.contains(id)).unwrap());
        }
        assert_eq!(optimistic, vec![1, 1, 5], "rotated at the third rechoke (30 s)");
    }

    #[test]
    fn a_seed_keeps_recent_unchokes_and_forces_new_ones_one_one_zero() {
        let mut c = choker_with(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let mut choked: Vec<u32> = (1..=8).collect();
        let mut new_per_round = vec![];
        for _ in 0..6 {
            let peers: Vec<PeerView> = (1..=8).map(|id| peer(id, true, id as f64, choked.contains(&id))).collect();
            let d = run(&mut c, &peers, true, false);
            new_per_round.push(d.iter().filter(|x| matches!(x, Decision::Unchoke(_))).count());
            for x in d {
                match x {
                    Decision::Unchoke(id) => choked.retain(|&y| y != id),
                    Decision::Choke(id) => choked.push(id),
                }
            }
            assert_eq!(8 - choked.len(), 4, "always 4 unchoked");
        }
        assert_eq!(new_per_round[3..], [1, 1, 0], "after the start-up rounds, 1, 1, 0 new unchokes per 30 s");
    }

    #[test]
    fn new_peers_enter_the_ring_at_random_positions() {
        let mut c = MainlineChoker::new(4);
        let mut rng = EntityRng::new(1, EntityId(1));
        for id in 0..50 {
            c.add_peer(Time::ZERO, id, &mut rng);
        }
        assert_eq!(c.ring().len(), 50);
        assert_ne!(c.ring(), (0..50).collect::<Vec<_>>().as_slice(), "not insertion order");
        c.remove_peer(10);
        assert!(!c.ring().contains(&10));
    }

    #[test]
    fn an_event_rechoke_neither_rotates_the_ring_nor_forces_seed_unchokes() {
        let mut c = choker_with(&[1, 2, 3, 4, 5, 6]);
        let ring = c.ring().to_vec();
        let peers: Vec<PeerView> = (1..=6).map(|i| peer(i, true, i as f64, true)).collect();
        for _ in 0..3 {
            run(&mut c, &peers, false, true);
        }
        assert_eq!(c.ring(), &ring[..], "only timed rechokes rotate");
        // Seed: with every slot free, an event fills them from the ring but
        // counts those unchokes against the next timed round's forced ones.
        let d = run(&mut c, &peers, true, true);
        assert_eq!(d.iter().filter(|x| matches!(x, Decision::Unchoke(_))).count(), 4);
        assert_eq!(c.unchokes_since_last, 4);
    }

    proptest::proptest! {
        #[test]
        fn no_rechoke_unchokes_more_interested_peers_than_the_slot_table_allows(
            rate_kb in 0.0f64..300.0,
            peers in proptest::collection::vec((proptest::bool::ANY, proptest::bool::ANY, 0.0f64..1e5), 1..40),
            rounds in 1usize..10,
            seeding in proptest::bool::ANY,
        ) {
            let slots = upload_slots(rate_kb);
            let mut c = MainlineChoker::new(slots);
            let mut rng = EntityRng::new(5, EntityId(1));
            let mut views: Vec<PeerView> = peers
                .iter()
                .enumerate()
                .map(|(i, &(interested, snubbed, rate))| PeerView { snubbed, ..peer(i as u32, interested, rate, true) })
                .collect();
            for v in &views {
                c.add_peer(Time::ZERO, v.id, &mut rng);
            }
            for r in 0..rounds {
                let d = if r % 2 == 0 { run(&mut c, &views, seeding, false) } else { run(&mut c, &views, seeding, true) };
                for x in d {
                    match x {
                        Decision::Choke(id) => views[id as usize].choked = true,
                        Decision::Unchoke(id) => views[id as usize].choked = false,
                    }
                }
                let interested_unchoked = views.iter().filter(|v| !v.choked && v.interested).count();
                proptest::prop_assert!(interested_unchoked <= slots as usize, "{} > {} slots", interested_unchoked, slots);
                if seeding {
                    proptest::prop_assert!(views.iter().filter(|v| !v.choked).count() <= slots as usize);
                }
            }
        }
    }
}
