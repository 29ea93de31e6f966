//! The tracker (BEP 3 announces, mainline 4.0.x `track.py` defaults) and the
//! client's announce schedule (`Rerequester.py`).
//!
//! * A `started` announce joins the swarm; the reply lists up to `numwant`
//!   peers (50 by default, `response_size`) drawn at random from the others.
//! * The client announces again every `interval` (1800 s), or early when it
//!   has fewer than `min_peers` (20) connections and at least
//!   `rerequest_interval` (300 s) have passed since the last announce. With
//!   `max_initiate` connections or more it asks for `numwant = 0`.
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

/// When a client announces again (mainline `Rerequester`).
#[derive(Clone, Copy, Debug)]
pub struct AnnounceSchedule {
    last: Option<Time>,
    interval: Duration,
}

impl Default for AnnounceSchedule {
    fn default() -> Self {
        AnnounceSchedule { last: None, interval: REANNOUNCE_INTERVAL }
    }
}

impl AnnounceSchedule {
    pub fn announced(&mut self, now: Time) {
        self.last = Some(now);
    }

    /// A regular re-announce is due at `now` with `connections` open.
    pub fn due(&self, now: Time, connections: u32) -> bool {
        let Some(last) = self.last else { return false };
        let since = now.saturating_since(last);
        since >= self.interval || (connections < MIN_PEERS && since >= REREQUEST_INTERVAL)
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
    fn a_client_reannounces_every_1800_s_or_after_300_s_when_short_of_peers() {
        let mut a = AnnounceSchedule::default();
        assert!(!a.due(s(5000), 0), "nothing before the first announce");
        a.announced(s(0));
        assert!(!a.due(s(299), 5));
        assert!(a.due(s(300), 19), "fewer than 20 connections: early");
        assert!(!a.due(s(300), 20));
        assert!(a.due(s(1800), 40));
        assert_eq!(AnnounceSchedule::numwant(40, 40, DEFAULT_NUMWANT), 0);
        assert_eq!(AnnounceSchedule::numwant(39, 40, DEFAULT_NUMWANT), 50);
    }
}
