//! libtorrent's `mixed_mode_algorithm`: how it limits its TCP peer class
//! while uTP peers are active (the rate; the limiters hold the class to it).
//!
//! libtorrent (`session_impl::on_tick`, once a second, default
//! `peer_proportional`) counts the peers past their handshake that are
//! uploading, by transport, and sets the TCP class's upload rate from the
//! session's upload rate (`rate`, a 5-second average). The rule changed in
//! 2.0.6 (commit c2695967, "tweak mixed mode algorithm to throttle less"):
//!
//! - **1.2** (RC_1_2, and 2.0.0 to 2.0.5): a peer uploads when its upload
//!   queue is not empty. With no uploading uTP peer the TCP class is not
//!   throttled; otherwise it may upload at
//!   `max(rate x n_tcp / (n_tcp + n_utp), 5000 B/s)`, `n_tcp` at least 1.
//! - **2.0** (2.0.6 and later, RC_2_1 too): a peer uploads when its upload
//!   queue is not empty *and* it waits on the network (a write to its
//!   socket is under way, `peer_info::bw_network`). With no uploading uTP
//!   peer, or fewer than 5 uploading peers in all, the TCP class is not
//!   throttled; otherwise `max(rate x n_tcp x 4 / (n_tcp + n_utp),
//!   5000 B/s)`, the total taken before `n_tcp` is raised to at least 1.
//!   2.0 throttles the TCP class's downloads the same way (floor
//!   30,000 B/s); the model has no download limiter, so that half is not
//!   modelled (it binds only while TCP peers are under a quarter of the
//!   downloading ones).
//!
//! `prefer_tcp` never throttles. The client counts and sets the rate
//! ([`super::UploadLimiter::throttle`]); the limiter enforces it.
//!
//! In [`super::RateLimiter`] (mainline's writes, spread) a connection of the
//! throttled class sends only while both the session's debt and the class's
//! are paid; the others only wait for the session's. Connections take turns
//! in ring order, a throttled one that must wait keeping its place.
//! [`super::BandwidthManager`] holds the class as libtorrent does: a
//! bandwidth channel of its own with its own quota, and a request of a
//! connection in the class is handed only what both that channel and the
//! session's can give.

/// libtorrent's `mixed_mode_algorithm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MixedMode {
    /// TCP is never throttled.
    PreferTcp,
    /// TCP is throttled to a share of the session's rate while uTP peers
    /// upload (libtorrent's default), by the rule of the given series.
    PeerProportional(Series),
}

/// The libtorrent release series whose `peer_proportional` rule applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Series {
    /// RC_1_2 (and 2.0.0 to 2.0.5).
    #[default]
    V1_2,
    /// 2.0.6 and later, 2.1 included.
    V2_0,
}

impl Series {
    /// Whether a connection with upload work counts as uploading: in 2.0
    /// only while a write to its socket waits on the network.
    pub fn counts_uploading(self, waits_on_network: bool) -> bool {
        match self {
            Series::V1_2 => true,
            Series::V2_0 => waits_on_network,
        }
    }
}

/// The lowest rate the TCP class is throttled to, bytes/s (libtorrent's
/// upload floor).
pub const TCP_FLOOR: f64 = 5000.0;

/// The fewest uploading peers, both transports, with which 2.0 throttles.
pub const MIN_PEERS_2_0: u32 = 5;

/// `peer_proportional`'s rate for the TCP class under `series`' rule (see
/// the module doc): `None` when not throttled. `rate`: the session's upload
/// rate, bytes/s; `uploading_tcp`, `uploading_utp`: the uploading peers.
pub fn peer_proportional(series: Series, rate: f64, uploading_tcp: u32, uploading_utp: u32) -> Option<f64> {
    let total = uploading_tcp + uploading_utp;
    if uploading_utp == 0 || (series == Series::V2_0 && total < MIN_PEERS_2_0) {
        return None;
    }
    let tcp = uploading_tcp.max(1) as f64;
    let share = match series {
        Series::V1_2 => tcp / (tcp + uploading_utp as f64),
        Series::V2_0 => tcp * 4.0 / total as f64,
    };
    Some((rate * share).max(TCP_FLOOR))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::{Endless, RateLimiter, UploadLimiter, UNLIMITED_UNIT_SIZE};
    use torrentlab_engine::Time;

    fn secs(x: f64) -> Time {
        Time((x * 1e9) as u64)
    }

    /// Runs with endless data on every queued connection until `end`;
    /// returns the bytes each of `conns` wrote.
    fn drive(l: &mut RateLimiter, conns: &[u32], start: Time, end: Time) -> Vec<u64> {
        let mut sent = vec![0u64; conns.iter().max().map_or(0, |&m| m as usize + 1)];
        let mut send = Endless(|c, m| {
            sent[c as usize] += m as u64;
            (m, true)
        });
        for &c in conns {
            if !l.contains(c) {
                l.queue(start, c, &mut send);
            }
        }
        while let Some(t) = l.due() {
            if t > end {
                break;
            }
            l.try_send(t, false, &mut send);
        }
        conns.iter().map(|&c| sent[c as usize]).collect()
    }

    #[test]
    fn peer_proportional_gives_tcp_its_share_of_uploading_peers_above_a_floor_and_nothing_without_utp() {
        let v = Series::V1_2;
        assert_eq!(peer_proportional(v, 100_000.0, 3, 0), None);
        assert_eq!(peer_proportional(v, 100_000.0, 1, 3), Some(25_000.0));
        assert_eq!(peer_proportional(v, 100_000.0, 0, 3), Some(25_000.0), "n_tcp is at least 1");
        assert_eq!(peer_proportional(v, 10_000.0, 1, 9), Some(TCP_FLOOR));
    }

    #[test]
    fn the_2_0_rule_waits_for_five_uploading_peers_and_gives_tcp_four_times_its_share() {
        let v = Series::V2_0;
        assert_eq!(peer_proportional(v, 100_000.0, 3, 0), None, "no uTP peer");
        assert_eq!(peer_proportional(v, 100_000.0, 1, 3), None, "four peers in all");
        assert_eq!(peer_proportional(v, 100_000.0, 1, 4), Some(80_000.0), "1 x 4 / 5 of the rate");
        assert_eq!(peer_proportional(v, 100_000.0, 4, 4), Some(200_000.0), "half TCP: twice the rate, never binding");
        assert_eq!(peer_proportional(v, 100_000.0, 0, 8), Some(50_000.0), "n_tcp raised to 1 after the total is taken");
        assert_eq!(peer_proportional(v, 10_000.0, 1, 19), Some(TCP_FLOOR));
    }

    #[test]
    fn in_2_0_only_a_connection_waiting_on_its_socket_counts_as_uploading() {
        assert!(Series::V1_2.counts_uploading(false));
        assert!(!Series::V2_0.counts_uploading(false));
        assert!(Series::V2_0.counts_uploading(true));
    }

    #[test]
    fn without_a_throttle_it_shares_the_session_rate_in_turns() {
        let mut l = RateLimiter::new(Some(100_000.0));
        l.set_throttled(1, true);
        let sent = drive(&mut l, &[1, 2], Time::ZERO, secs(10.0));
        let total: u64 = sent.iter().sum();
        assert!((total as f64 - 1_000_000.0).abs() < 2.0 * 1380.0, "{total}");
        assert!(sent[0].abs_diff(sent[1]) <= 1380, "{sent:?}");
    }

    #[test]
    fn a_throttled_class_gets_its_rate_and_the_others_the_rest_of_the_session() {
        let mut l = RateLimiter::new(Some(100_000.0));
        l.set_throttled(1, true);
        l.throttle(Time::ZERO, Some(20_000.0));
        let sent = drive(&mut l, &[1, 2], Time::ZERO, secs(20.0));
        let (tcp, utp) = (sent[0] as f64 / 20.0, sent[1] as f64 / 20.0);
        assert!((tcp - 20_000.0).abs() < 500.0, "the throttled class: {tcp} B/s");
        assert!((tcp + utp - 100_000.0).abs() < 500.0, "the session: {} B/s", tcp + utp);
    }

    #[test]
    fn an_unlimited_session_still_holds_the_throttled_class_to_its_rate() {
        let mut l = RateLimiter::new(None);
        l.set_throttled(3, true);
        l.throttle(Time::ZERO, Some(5_000.0));
        let sent = drive(&mut l, &[3], Time::ZERO, secs(10.0));
        assert!((sent[0] as f64 / 10.0 - 5_000.0).abs() < UNLIMITED_UNIT_SIZE as f64 / 10.0 + 1.0, "{sent:?}");
    }

    #[test]
    fn lifting_the_throttle_lets_a_waiting_connection_write_at_once() {
        let mut l = RateLimiter::new(None);
        l.set_throttled(1, true);
        l.throttle(Time::ZERO, Some(1_000.0));
        let mut n = 0;
        l.queue(
            Time::ZERO,
            1,
            &mut Endless(|_, m| {
                n += 1;
                (m, true)
            }),
        );
        assert_eq!(n, 1);
        // The session's 1.7 us for 17 kB at its 1e10 B/s, then its class's 17 s.
        let t = l.due().expect("a turn");
        l.try_send(
            t,
            false,
            &mut Endless(|_, m| {
                n += 1;
                (m, true)
            }),
        );
        assert_eq!(n, 1, "the class still owes");
        let due = l.due().expect("waits for its class");
        assert!(due > secs(10.0), "17 kB at 1 kB/s");
        l.throttle(secs(1.0), None);
        assert_eq!(l.due(), Some(secs(1.0)));
        assert_eq!(l.class_rate(), None);
    }
}
