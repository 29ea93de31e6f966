//! The tracker (BEP 3 announces, mainline 4.0.x `track.py` defaults) and the
//! client's announce schedule (`Rerequester.py`).
//!
//! * A `started` announce joins the swarm; the reply lists up to `numwant`
//!   peers (50 by default, `response_size`) drawn at random from the others.
//! * The client looks every 60 s from its start (`Rerequester.begin`) and
//!   announces again once more than `interval` (1800 s) has passed since the
//!   last announce, or early when at least `rerequest_interval` (300 s) has
//!   and it is short of peers: fewer than `min_peers` (20) connections, or,
//!   once any peer has connected to it (`ever_got_incoming`), no more than
//!   `min_peers / 3` (6). With `max_initiate` connections or more it asks for
//!   `numwant = 0`.
//! * `completed` records the leecher's completion time as the tracker sees it
//!   (what the experiments report); `stopped` removes the peer.

use torrentlab_engine::{Duration, EntityRng, Time};

/// Peers a reply lists when the client does not say (`response_size`).
pub const DEFAULT_NUMWANT: u32 = 50;
/// The tracker's `interval` (`reannounce_interval`).
pub const REANNOUNCE_INTERVAL: Duration = Duration::from_secs(1800);
/// The client's shortest gap between announces (`rerequest_interval`).
pub const REREQUEST_INTERVAL: Duration = Duration::from_secs(300);
/// Below this many connections the client announces early (`min_peers`).
pub const MIN_PEERS: u32 = 20;
/// How often the client looks whether to announce (`Rerequester.begin`).
pub const CHECK_INTERVAL: Duration = Duration::from_secs(60);

/// The announce event (BEP 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnnounceEvent {
    Started,
    /// A periodic or early re-announce (empty event).
    Regular,
    Completed,
    Stopped,
}

/// One tracker for one torrent.
#[derive(Clone, Debug)]
pub struct Tracker {
    /// Peers in the swarm, in join order.
    peers: Vec<u32>,
    /// When the tracker heard each peer's `completed`, by peer id.
    completed: Vec<Option<Time>>,
    rng: EntityRng,
}

impl Tracker {
    pub fn new(rng: EntityRng) -> Self {
        Tracker { peers: Vec::new(), completed: Vec::new(), rng }
    }

    /// Handles an announce from `peer` at `now`; returns the peers of the reply.
    pub fn announce(&mut self, now: Time, peer: u32, event: AnnounceEvent, numwant: u32) -> Vec<u32> {
        match event {
            AnnounceEvent::Stopped => {
                self.peers.retain(|&p| p != peer);
                return Vec::new();
            }
            AnnounceEvent::Completed => {
                if self.completed.len() <= peer as usize {
                    self.completed.resize(peer as usize + 1, None);
                }
                self.completed[peer as usize].get_or_insert(now);
            }
            AnnounceEvent::Started | AnnounceEvent::Regular => {}
        }
        if !self.peers.contains(&peer) {
            self.peers.push(peer);
        }
        // A uniformly random subset of the others (partial Fisher-Yates).
        let mut others: Vec<u32> = self.peers.iter().copied().filter(|&p| p != peer).collect();
        let k = (numwant as usize).min(others.len());
        for i in 0..k {
            let j = self.rng.range_inclusive(i as u64, others.len() as u64 - 1) as usize;
            others.swap(i, j);
        }
        others.truncate(k);
        others
    }

    /// When the tracker recorded `peer`'s completion.
    pub fn completed_at(&self, peer: u32) -> Option<Time> {
        self.completed.get(peer as usize).copied().flatten()
    }

    pub fn peers(&self) -> &[u32] {
        &self.peers
    }
}

/// When a client announces again (mainline 4.0.x `Rerequester._check`).
#[derive(Clone, Copy, Debug)]
pub struct AnnounceSchedule {
    last: Option<Time>,
    interval: Duration,
    /// A peer has connected to us (mainline `Encoder.everinc`, set when an
    /// incoming connection's handshake completes).
    ever_got_incoming: bool,
    /// When the client next looks ([`CHECK_INTERVAL`] apart).
    next_check: Option<Time>,
}

impl Default for AnnounceSchedule {
    fn default() -> Self {
        AnnounceSchedule { last: None, interval: REANNOUNCE_INTERVAL, ever_got_incoming: false, next_check: None }
    }
}

impl AnnounceSchedule {
    /// The client starts at `now`: it first looks [`CHECK_INTERVAL`] later.
    pub fn start(&mut self, now: Time) {
        self.next_check = Some(now + CHECK_INTERVAL);
    }

    /// The client stops looking (it left).
    pub fn stop(&mut self) {
        self.next_check = None;
    }

    pub fn announced(&mut self, now: Time) {
        self.last = Some(now);
    }

    /// A peer's connection to us completed its handshake.
    pub fn got_incoming(&mut self) {
        self.ever_got_incoming = true;
    }

    /// When the client next looks whether to announce.
    pub fn next_check(&self) -> Option<Time> {
        self.next_check
    }

    /// If its look is due at `now`, the client looks with `connections`
    /// open and schedules the next one: true when it announces.
    pub fn check(&mut self, now: Time, connections: u32) -> bool {
        match self.next_check {
            Some(t) if t <= now => {
                self.next_check = Some(t + CHECK_INTERVAL);
                self.due(now, connections)
            }
            _ => false,
        }
    }

    /// A regular re-announce is due at `now` with `connections` open.
    pub fn due(&self, now: Time, connections: u32) -> bool {
        let Some(last) = self.last else { return false };
        let since = now.saturating_since(last);
        let short = if self.ever_got_incoming { connections <= MIN_PEERS / 3 } else { connections < MIN_PEERS };
        since >= REREQUEST_INTERVAL && (short || since > self.interval)
    }

    /// `numwant` to send: 0 once at `max_initiate` connections, else `want`
    /// (mainline: [`DEFAULT_NUMWANT`]).
    pub fn numwant(connections: u32, max_initiate: u32, want: u32) -> u32 {
        if connections >= max_initiate {
            0
        } else {
            want
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torrentlab_engine::EntityId;

    fn s(x: u64) -> Time {
        Time(x * 1_000_000_000)
    }

    #[test]
    fn a_reply_lists_up_to_fifty_random_other_peers() {
        let mut t = Tracker::new(EntityRng::new(1, EntityId(9)));
        for p in 0..300 {
            t.announce(s(0), p, AnnounceEvent::Started, 0);
        }
        let reply = t.announce(s(1), 17, AnnounceEvent::Regular, DEFAULT_NUMWANT);
        assert_eq!(reply.len(), 50);
        assert!(!reply.contains(&17), "never the asking peer itself");
        let mut sorted = reply.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 50, "no peer twice");
        assert_ne!(reply, t.announce(s(2), 17, AnnounceEvent::Regular, DEFAULT_NUMWANT), "a fresh draw each time");
        assert_eq!(t.announce(s(3), 5, AnnounceEvent::Regular, 0), Vec::<u32>::new());
    }

    #[test]
    fn the_tracker_keeps_the_first_completion_time_and_forgets_stopped_peers() {
        let mut t = Tracker::new(EntityRng::new(1, EntityId(9)));
        t.announce(s(0), 0, AnnounceEvent::Started, 50);
        t.announce(s(0), 1, AnnounceEvent::Started, 50);
        t.announce(s(7), 1, AnnounceEvent::Completed, 50);
        t.announce(s(9), 1, AnnounceEvent::Completed, 50);
        assert_eq!(t.completed_at(1), Some(s(7)));
        assert_eq!(t.completed_at(0), None);
        t.announce(s(10), 1, AnnounceEvent::Stopped, 50);
        assert_eq!(t.peers(), &[0]);
    }

    #[test]
    fn a_client_reannounces_after_1800_s_or_after_300_s_when_short_of_peers() {
        let mut a = AnnounceSchedule::default();
        assert!(!a.due(s(5000), 0), "nothing before the first announce");
        a.announced(s(0));
        assert!(!a.due(s(299), 5));
        assert!(a.due(s(300), 19), "fewer than 20 connections: early");
        assert!(!a.due(s(300), 20));
        assert!(!a.due(s(1800), 40), "more than the interval, not as much");
        assert!(a.due(s(1801), 40));
        assert_eq!(AnnounceSchedule::numwant(40, 40, DEFAULT_NUMWANT), 0);
        assert_eq!(AnnounceSchedule::numwant(39, 40, DEFAULT_NUMWANT), 50);
    }

    #[test]
    fn once_a_peer_has_connected_to_it_a_client_is_short_of_peers_only_at_six_connections_or_fewer() {
        let mut a = AnnounceSchedule::default();
        a.announced(s(0));
        a.got_incoming();
        assert!(!a.due(s(400), 7), "20 / 3 = 6 in mainline's integer division");
        assert!(a.due(s(400), 6));
        assert!(!a.due(s(299), 0), "never within 300 s");
    }

    #[test]
    fn the_client_looks_every_60_s_from_its_start() {
        let mut a = AnnounceSchedule::default();
        a.start(s(7));
        a.announced(s(7));
        assert_eq!(a.next_check(), Some(s(67)));
        let mut looks = Vec::new();
        for t in 0..400 {
            if a.next_check().is_some_and(|c| c <= s(t)) {
                looks.push(t);
            }
            assert_eq!(a.check(s(t), 0), looks.last() == Some(&t) && t >= 307, "announces only on a look, once due");
        }
        assert_eq!(looks, vec![67, 127, 187, 247, 307, 367]);
        assert!(a.due(s(307), 0), "the first look 300 s after the announce finds it due");
        a.stop();
        assert_eq!(a.next_check(), None);
    }
}
