//! Mainline's round-robin limiter with a second, throttled class of
//! connections: how libtorrent's `mixed_mode_algorithm` limits its TCP peer
//! class while uTP peers are active.
//!
//! libtorrent (RC_1_2 `session_impl::on_tick`, once a second, default
//! `peer_proportional`): count the peers past their handshake that are
//! uploading (a non-empty upload queue), by transport. With no uploading uTP
//! peer the TCP class is not throttled; otherwise it may upload at
//! `max(rate x n_tcp / (n_tcp + n_utp), 5000 B/s)`, where `rate` is the
//! session's upload rate (a 5-second average) and `n_tcp` is at least 1.
//! `prefer_tcp` never throttles. The client counts and sets the rate
//! ([`UploadLimiter::throttle`]); this limiter enforces it.
//!
//! A connection of the throttled class sends only while both the session's
//! debt and the class's are paid; the others only wait for the session's.
//! Connections take turns in ring order, a throttled one that must wait
//! keeping its place. libtorrent hands out quota in 500 ms ticks; here
//! writes are spread as mainline's limiter spreads them.

use std::collections::VecDeque;

use torrentlab_engine::{Duration, Time};

use super::{UploadLimiter, UNIT_SIZE, UNLIMITED_RATE, UNLIMITED_UNIT_SIZE};

/// libtorrent's `mixed_mode_algorithm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MixedMode {
    /// TCP is never throttled.
    PreferTcp,
    /// TCP is throttled to its share of the session's rate while uTP peers
    /// upload (libtorrent's default).
    PeerProportional,
}

/// The lowest rate the TCP class is throttled to, bytes/s (libtorrent's
/// upload floor).
pub const TCP_FLOOR: f64 = 5000.0;

/// `peer_proportional`'s rate for the TCP class: `None` (not throttled)
/// when no uTP peer uploads, else `max(rate x n_tcp / (n_tcp + n_utp), 5000)`
/// with `n_tcp` at least 1. `rate`: the session's upload rate, bytes/s.
pub fn peer_proportional(rate: f64, uploading_tcp: u32, uploading_utp: u32) -> Option<f64> {
    if uploading_utp == 0 {
        return None;
    }
    let tcp = uploading_tcp.max(1) as f64;
    Some((rate * tcp / (tcp + uploading_utp as f64)).max(TCP_FLOOR))
}

/// Bytes written beyond a rate, paid down as time passes.
#[derive(Clone, Copy, Debug)]
struct Debt {
    rate: f64,
    owed: f64,
    last: Time,
}

impl Debt {
    fn pay(&mut self, now: Time) {
        self.owed -= now.saturating_since(self.last).as_secs_f64() * self.rate;
        self.last = now;
    }

    /// How long until nothing is owed.
    fn wait(&self) -> Duration {
        Duration::from_nanos((self.owed / self.rate * 1e9).ceil().max(1.0) as u64)
    }
}

/// The limiter (see the module).
#[derive(Clone, Debug)]
pub struct ClassLimiter {
    session: Debt,
    /// The throttled class's, while it is throttled.
    class: Option<Debt>,
    unit: u32,
    ring: VecDeque<u32>,
    /// By connection id: in the throttled class.
    throttled: Vec<bool>,
    due: Option<Time>,
}

impl ClassLimiter {
    /// `rate`: the session's limit in bytes/s, `None` for unlimited.
    pub fn new(rate: Option<f64>) -> Self {
        let (rate, unit) = match rate {
            Some(r) if r > 0.0 => (r, UNIT_SIZE),
            _ => (UNLIMITED_RATE, UNLIMITED_UNIT_SIZE),
        };
        ClassLimiter {
            session: Debt { rate, owed: 0.0, last: Time::ZERO },
            class: None,
            unit,
            ring: VecDeque::new(),
            throttled: Vec::new(),
            due: None,
        }
    }

    fn is_throttled(&self, conn: u32) -> bool {
        self.throttled.get(conn as usize).copied().unwrap_or(false)
    }

    /// The throttled class's rate, bytes/s, if it is throttled.
    pub fn class_rate(&self) -> Option<f64> {
        self.class.map(|c| c.rate)
    }

    /// The next connection allowed to write: the first in ring order whose
    /// debts are paid.
    fn next(&self) -> Option<usize> {
        if self.session.owed > 0.0 {
            return None;
        }
        let class_paid = self.class.is_none_or(|c| c.owed <= 0.0);
        self.ring.iter().position(|&c| class_paid || !self.is_throttled(c))
    }
}

impl UploadLimiter for ClassLimiter {
    fn due(&self) -> Option<Time> {
        self.due
    }

    fn contains(&self, conn: u32) -> bool {
        self.ring.contains(&conn)
    }

    fn remove(&mut self, conn: u32) {
        self.ring.retain(|&c| c != conn);
        if self.ring.is_empty() {
            self.due = None;
        }
    }

    fn queue(&mut self, now: Time, conn: u32, send: &mut dyn FnMut(u32, u32) -> (u32, bool)) {
        debug_assert!(!self.ring.contains(&conn), "a connection is queued once");
        let was_empty = self.ring.is_empty();
        self.ring.push_back(conn);
        if was_empty {
            self.try_send(now, true, send);
        } else if self.due.is_none() {
            // Everyone waiting was throttled; this one may not be.
            self.due = Some(now);
        }
    }

    fn try_send(&mut self, now: Time, check_time: bool, send: &mut dyn FnMut(u32, u32) -> (u32, bool)) {
        self.due = None;
        self.session.pay(now);
        if let Some(c) = self.class.as_mut() {
            c.pay(now);
        }
        if check_time {
            // Idle time earns no credit.
            self.session.owed = self.session.owed.max(0.0);
            if let Some(c) = self.class.as_mut() {
                c.owed = c.owed.max(0.0);
            }
        }
        while let Some(k) = self.next() {
            let cur = self.ring.remove(k).expect("a ring position");
            let (bytes, flushed) = send(cur, self.unit);
            self.session.owed += bytes as f64;
            if self.is_throttled(cur) {
                if let Some(c) = self.class.as_mut() {
                    c.owed += bytes as f64;
                }
            }
            if bytes > 0 && flushed {
                self.ring.push_back(cur);
            }
        }
        if self.ring.is_empty() {
            return;
        }
        let wait = if self.session.owed > 0.0 {
            self.session.wait()
        } else {
            // Only throttled connections wait, for their class.
            self.class.map_or(Duration(1), |c| c.wait())
        };
        self.due = Some(now + wait.max(Duration(1)));
    }

    fn set_throttled(&mut self, conn: u32, throttled: bool) {
        let i = conn as usize;
        if self.throttled.len() <= i {
            self.throttled.resize(i + 1, false);
        }
        self.throttled[i] = throttled;
    }

    fn throttle(&mut self, now: Time, rate: Option<f64>) {
        match (rate, self.class.as_mut()) {
            (None, _) => self.class = None,
            (Some(r), Some(c)) => {
                c.pay(now);
                c.rate = r;
            }
            (Some(r), None) => self.class = Some(Debt { rate: r, owed: 0.0, last: now }),
        }
        if !self.ring.is_empty() {
            self.due = Some(self.due.map_or(now, |d| d.min(now)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(x: f64) -> Time {
        Time((x * 1e9) as u64)
    }

    /// Runs with endless data on every queued connection until `end`;
    /// returns the bytes each of `conns` wrote.
    fn drive(l: &mut ClassLimiter, conns: &[u32], start: Time, end: Time) -> Vec<u64> {
        let mut sent = vec![0u64; conns.iter().max().map_or(0, |&m| m as usize + 1)];
        let mut send = |c: u32, m: u32| {
            sent[c as usize] += m as u64;
            (m, true)
        };
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
        assert_eq!(peer_proportional(100_000.0, 3, 0), None);
        assert_eq!(peer_proportional(100_000.0, 1, 3), Some(25_000.0));
        assert_eq!(peer_proportional(100_000.0, 0, 3), Some(25_000.0), "n_tcp is at least 1");
        assert_eq!(peer_proportional(10_000.0, 1, 9), Some(TCP_FLOOR));
    }

    #[test]
    fn without_a_throttle_it_shares_the_session_rate_in_turns() {
        let mut l = ClassLimiter::new(Some(100_000.0));
        l.set_throttled(1, true);
        let sent = drive(&mut l, &[1, 2], Time::ZERO, secs(10.0));
        let total: u64 = sent.iter().sum();
        assert!((total as f64 - 1_000_000.0).abs() < 2.0 * 1380.0, "{total}");
        assert!(sent[0].abs_diff(sent[1]) <= 1380, "{sent:?}");
    }

    #[test]
    fn a_throttled_class_gets_its_rate_and_the_others_the_rest_of_the_session() {
        let mut l = ClassLimiter::new(Some(100_000.0));
        l.set_throttled(1, true);
        l.throttle(Time::ZERO, Some(20_000.0));
        let sent = drive(&mut l, &[1, 2], Time::ZERO, secs(20.0));
        let (tcp, utp) = (sent[0] as f64 / 20.0, sent[1] as f64 / 20.0);
        assert!((tcp - 20_000.0).abs() < 500.0, "the throttled class: {tcp} B/s");
        assert!((tcp + utp - 100_000.0).abs() < 500.0, "the session: {} B/s", tcp + utp);
    }

    #[test]
    fn an_unlimited_session_still_holds_the_throttled_class_to_its_rate() {
        let mut l = ClassLimiter::new(None);
        l.set_throttled(3, true);
        l.throttle(Time::ZERO, Some(5_000.0));
        let sent = drive(&mut l, &[3], Time::ZERO, secs(10.0));
        assert!((sent[0] as f64 / 10.0 - 5_000.0).abs() < UNLIMITED_UNIT_SIZE as f64 / 10.0 + 1.0, "{sent:?}");
    }

    #[test]
    fn lifting_the_throttle_lets_a_waiting_connection_write_at_once() {
        let mut l = ClassLimiter::new(None);
        l.set_throttled(1, true);
        l.throttle(Time::ZERO, Some(1_000.0));
        let mut n = 0;
        l.queue(Time::ZERO, 1, &mut |_, m| {
            n += 1;
            (m, true)
        });
        assert_eq!(n, 1);
        // The session's 1.7 us for 17 kB at its 1e10 B/s, then its class's 17 s.
        let t = l.due().expect("a turn");
        l.try_send(t, false, &mut |_, m| {
            n += 1;
            (m, true)
        });
        assert_eq!(n, 1, "the class still owes");
        let due = l.due().expect("waits for its class");
        assert!(due > secs(10.0), "17 kB at 1 kB/s");
        l.throttle(secs(1.0), None);
        assert_eq!(l.due(), Some(secs(1.0)));
        assert_eq!(l.class_rate(), None);
    }
}
