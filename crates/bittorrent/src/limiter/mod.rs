//! Upload rate limiters: one per client, shared by all its connections,
//! behind [`UploadLimiter`]. [`RateLimiter`] is mainline 4.0.x's (below);
//! [`BandwidthManager`] is libtorrent's ([`bandwidth`]); [`AnyLimiter`]
//! holds either, as a client profile chooses ([`LimiterKind`]).
//!
//! Mainline 4.0.x's upload rate limiter (`RateLimiter.py`):
//! connections with something to send and a flushed socket wait in a
//! round-robin ring. `try_send` first pays the debt down by `elapsed x rate`;
//! then, while the debt is not positive, the connection at the front writes up
//! to `unit` bytes (1380 by default, `upload_unit_size`) and the debt grows by
//! what it wrote. A connection that wrote nothing, or whose socket is no longer
//! flushed, leaves the ring (it rejoins when its socket drains or a request
//! arrives); otherwise it goes to the back. With debt left, the next
//! `try_send` is due `debt / rate` later. A connection joining an empty ring
//! clamps the debt at zero first: idle time earns no credit.
//!
//! Unlimited (rate 0 in mainline) is rate 1e10 bytes/s with 17 000-byte units:
//! a whole 16 KiB piece message per turn.
//!
//! A second, throttled class of connections ([`classes`]: libtorrent's TCP
//! peer class in mixed mode) is held to its own rate too: while it owes,
//! its connections keep their place in the ring and the others take turns.
//! Mainline never throttles a class, and then this is exactly its limiter.

use std::collections::VecDeque;

use torrentlab_engine::{Duration, Time};

pub mod bandwidth;
pub mod classes;
pub use bandwidth::BandwidthManager;
pub use classes::{MixedMode, Series};

/// Mainline's `upload_unit_size`.
pub const UNIT_SIZE: u32 = 1380;
/// The unit when uploads are unlimited.
pub const UNLIMITED_UNIT_SIZE: u32 = 17_000;
const UNLIMITED_RATE: f64 = 1e10;

/// The client's side of an upload limiter: its connections' writes.
pub trait Uploads {
    /// Writes up to `max` bytes of what `conn` has to send (at most one
    /// piece message; control messages held back behind it follow it and
    /// may pass `max`). Returns (bytes written, socket still flushed).
    fn send(&mut self, conn: u32, max: u32) -> (u32, bool);
    /// Bytes `conn` has to send now: the rest of its piece message under
    /// way, a piece message per request it will serve, the control messages
    /// held back. 0 when `send` would write nothing.
    fn pending(&self, conn: u32) -> u64;
}

/// What the client asks of an upload limiter. Writes go through
/// [`Uploads::send`]. [`RateLimiter`] is mainline 4.0.x's,
/// [`BandwidthManager`] libtorrent's.
pub trait UploadLimiter: Send {
    /// The client starts (its session's clock: libtorrent ticks from here).
    fn start(&mut self, _now: Time) {}
    /// When [`UploadLimiter::try_send`] should next run.
    fn due(&self) -> Option<Time>;
    /// `conn` waits for the limiter to write (the client queues it only when not).
    fn contains(&self, conn: u32) -> bool;
    /// `conn` is closed.
    fn remove(&mut self, conn: u32);
    /// `conn` has something to send and a flushed socket.
    fn queue(&mut self, now: Time, conn: u32, out: &mut dyn Uploads);
    /// The timer: send what the rate allows.
    fn try_send(&mut self, now: Time, check_time: bool, out: &mut dyn Uploads);
    /// `conn` belongs to the throttled class (libtorrent's TCP peer class).
    fn set_throttled(&mut self, conn: u32, throttled: bool);
    /// The throttled class's rate from `now` on, bytes/s (`None`: not throttled).
    fn throttle(&mut self, now: Time, rate: Option<f64>);
    /// `conn` read or wrote `bytes` outside the limiter's turns (libtorrent
    /// estimates the IP overhead of each read and write).
    fn transceived(&mut self, _conn: u32, _bytes: u32) {}
    /// The client's once-a-second tick (libtorrent charges the second's
    /// estimated IP overhead).
    fn second_tick(&mut self, _now: Time) {}
    /// Whether every write of the connections (control messages too) must
    /// wait for the limiter: libtorrent's when it charges IP overhead.
    fn charges_control(&self) -> bool {
        false
    }
}

/// Whose upload limiter a client runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimiterKind {
    /// Mainline 4.0.x's round robin of 1380-byte writes ([`RateLimiter`]).
    Mainline,
    /// libtorrent's bandwidth manager, quota in 500 ms ticks ([`BandwidthManager`]).
    Libtorrent,
}

/// Either limiter, chosen per client (a client profile's): one match per
/// call, held inline.
#[derive(Clone, Debug)]
pub enum AnyLimiter {
    Mainline(RateLimiter),
    Libtorrent(BandwidthManager),
}

macro_rules! either {
    ($self:expr, $l:ident => $call:expr) => {
        match $self {
            AnyLimiter::Mainline($l) => $call,
            AnyLimiter::Libtorrent($l) => $call,
        }
    };
}

impl AnyLimiter {
    /// `kind`'s limiter for an upload limit in bytes/s (`None`: unlimited);
    /// libtorrent's charges IP overhead with `ip_overhead`
    /// (`rate_limit_ip_overhead`; mainline's never does).
    pub fn new(kind: LimiterKind, rate: Option<f64>, ip_overhead: bool) -> Self {
        match kind {
            LimiterKind::Mainline => AnyLimiter::Mainline(RateLimiter::new(rate)),
            LimiterKind::Libtorrent => {
                AnyLimiter::Libtorrent(BandwidthManager::new(rate).with_ip_overhead(ip_overhead))
            }
        }
    }

    /// The throttled class's rate, bytes/s, if it is throttled.
    pub fn class_rate(&self) -> Option<f64> {
        either!(self, l => l.class_rate())
    }
}

impl UploadLimiter for AnyLimiter {
    fn start(&mut self, now: Time) {
        either!(self, l => l.start(now))
    }
    fn due(&self) -> Option<Time> {
        either!(self, l => l.due())
    }
    fn contains(&self, conn: u32) -> bool {
        either!(self, l => l.contains(conn))
    }
    fn remove(&mut self, conn: u32) {
        either!(self, l => l.remove(conn))
    }
    fn queue(&mut self, now: Time, conn: u32, out: &mut dyn Uploads) {
        either!(self, l => l.queue(now, conn, out))
    }
    fn try_send(&mut self, now: Time, check_time: bool, out: &mut dyn Uploads) {
        either!(self, l => l.try_send(now, check_time, out))
    }
    fn set_throttled(&mut self, conn: u32, throttled: bool) {
        either!(self, l => l.set_throttled(conn, throttled))
    }
    fn throttle(&mut self, now: Time, rate: Option<f64>) {
        either!(self, l => l.throttle(now, rate))
    }
    fn transceived(&mut self, conn: u32, bytes: u32) {
        either!(self, l => l.transceived(conn, bytes))
    }
    fn second_tick(&mut self, now: Time) {
        either!(self, l => l.second_tick(now))
    }
    fn charges_control(&self) -> bool {
        either!(self, l => l.charges_control())
    }
}

/// Closures as [`Uploads`] in tests: `send` is the closure; every
/// connection has endless data.
#[cfg(test)]
pub(crate) struct Endless<F: FnMut(u32, u32) -> (u32, bool)>(pub F);

#[cfg(test)]
impl<F: FnMut(u32, u32) -> (u32, bool)> Uploads for Endless<F> {
    fn send(&mut self, conn: u32, max: u32) -> (u32, bool) {
        (self.0)(conn, max)
    }
    fn pending(&self, _: u32) -> u64 {
        u64::MAX
    }
}

/// The round-robin upload rate limiter of one client. Connections are the
/// caller's ids.
#[derive(Clone, Debug)]
pub struct RateLimiter {
    /// Bytes per second.
    rate: f64,
    unit: u32,
    /// Front = the connection whose turn it is (mainline `last.next_upload`).
    ring: VecDeque<u32>,
    /// Bytes written beyond what the rate allows so far (`offset_amount`).
    debt: f64,
    last: Time,
    /// When the next `try_send` is due, if one is.
    due: Option<Time>,
    /// The throttled class's rate and debt, while it is throttled.
    class: Option<ClassDebt>,
    /// By connection id: in the throttled class.
    throttled: Vec<bool>,
}

/// Bytes the throttled class wrote beyond its rate, paid down as time passes.
#[derive(Clone, Copy, Debug)]
struct ClassDebt {
    rate: f64,
    owed: f64,
    last: Time,
}

impl ClassDebt {
    fn pay(&mut self, now: Time) {
        self.owed -= now.saturating_since(self.last).as_secs_f64() * self.rate;
        self.last = now;
    }
}

/// How long `owed` bytes take at `rate`, at least 1 ns (rounded up: a turn due
/// a fraction of a nanosecond early would find the debt still positive, write
/// nothing and wake again 1 ns later).
fn wait(owed: f64, rate: f64) -> Duration {
    Duration::from_nanos((owed / rate * 1e9).ceil() as u64).max(Duration(1))
}

impl RateLimiter {
    /// `rate`: bytes/s, `None` for unlimited.
    pub fn new(rate: Option<f64>) -> Self {
        let (rate, unit) = match rate {
            Some(r) if r > 0.0 => (r, UNIT_SIZE),
            _ => (UNLIMITED_RATE, UNLIMITED_UNIT_SIZE),
        };
        RateLimiter {
            rate,
            unit,
            ring: VecDeque::new(),
            debt: 0.0,
            last: Time::ZERO,
            due: None,
            class: None,
            throttled: Vec::new(),
        }
    }

    pub fn unit(&self) -> u32 {
        self.unit
    }

    /// Connections waiting for their turn, front first.
    pub fn ring(&self) -> impl Iterator<Item = u32> + '_ {
        self.ring.iter().copied()
    }

    /// The throttled class's rate, bytes/s, if it is throttled.
    pub fn class_rate(&self) -> Option<f64> {
        self.class.map(|c| c.rate)
    }

    fn is_throttled(&self, conn: u32) -> bool {
        self.throttled.get(conn as usize).copied().unwrap_or(false)
    }

    /// The ring position of the next connection allowed to write: the front,
    /// or while the throttled class owes, the first not in it.
    fn next(&self) -> Option<usize> {
        if self.debt > 0.0 {
            return None;
        }
        match self.class {
            Some(c) if c.owed > 0.0 => self.ring.iter().position(|&conn| !self.is_throttled(conn)),
            _ => (!self.ring.is_empty()).then_some(0),
        }
    }
}

impl UploadLimiter for RateLimiter {
    fn due(&self) -> Option<Time> {
        self.due
    }

    fn contains(&self, conn: u32) -> bool {
        self.ring.contains(&conn)
    }

    /// A connection drops out (closed): it leaves the ring.
    fn remove(&mut self, conn: u32) {
        self.ring.retain(|&c| c != conn);
        if self.ring.is_empty() {
            self.due = None;
        }
    }

    /// `conn` has something to send and its socket is flushed: it joins the
    /// ring at the back. Joining an empty ring runs `try_send` at once.
    fn queue(&mut self, now: Time, conn: u32, out: &mut dyn Uploads) {
        debug_assert!(!self.ring.contains(&conn), "a connection is queued once");
        let was_empty = self.ring.is_empty();
        self.ring.push_back(conn);
        if was_empty {
            self.try_send(now, true, out);
        } else if self.due.is_none() {
            // Everyone waiting was in the throttled class; this one may not be.
            self.due = Some(now);
        }
    }

    /// Mainline `try_send`: writes while the rate (and the throttled class's) allows.
    fn try_send(&mut self, now: Time, check_time: bool, out: &mut dyn Uploads) {
        self.due = None;
        self.debt -= now.saturating_since(self.last).as_secs_f64() * self.rate;
        self.last = now;
        if let Some(c) = self.class.as_mut() {
            c.pay(now);
        }
        if check_time {
            // Idle time earns no credit.
            self.debt = self.debt.max(0.0);
            if let Some(c) = self.class.as_mut() {
                c.owed = c.owed.max(0.0);
            }
        }
        while let Some(k) = self.next() {
            let cur = self.ring.remove(k).expect("a ring position");
            let (bytes, flushed) = out.send(cur, self.unit);
            self.debt += bytes as f64;
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
            return; // mainline breaks out without scheduling
        }
        self.due = Some(match self.class {
            // Only throttled connections wait, for their class.
            Some(c) if self.debt <= 0.0 => now + wait(c.owed, c.rate),
            _ => now + wait(self.debt, self.rate),
        });
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
            (Some(r), None) => self.class = Some(ClassDebt { rate: r, owed: 0.0, last: now }),
        }
        if !self.ring.is_empty() {
            self.due = Some(self.due.map_or(now, |d| d.min(now)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time(x * 1_000_000)
    }

    /// Runs the limiter with endless data on `conns` until `end`; returns the
    /// (time, conn, bytes) of every write.
    fn drive(rate: f64, conns: &[u32], end: Time) -> Vec<(Time, u32, u32)> {
        let mut l = RateLimiter::new(Some(rate));
        let mut log = vec![];
        let mut now = Time::ZERO;
        for &c in conns {
            l.queue(
                now,
                c,
                &mut Endless(|c, max| {
                    log.push((now, c, max));
                    (max, true)
                }),
            );
        }
        while let Some(t) = l.due() {
            if t > end {
                break;
            }
            now = t;
            l.try_send(
                now,
                false,
                &mut Endless(|c, max| {
                    log.push((now, c, max));
                    (max, true)
                }),
            );
        }
        log
    }

    #[test]
    fn writes_of_1380_bytes_leave_every_1380_over_rate_seconds() {
        let log = drive(20_480.0, &[7], ms(10_000));
        assert!(log.iter().all(|&(_, c, b)| c == 7 && b == 1380));
        // 20 KiB/s: one write per 67.4 ms.
        let gaps: Vec<f64> = log.windows(2).map(|w| (w[1].0 - w[0].0).as_secs_f64()).collect();
        for g in &gaps {
            assert!((g - 1380.0 / 20_480.0).abs() < 1e-6, "gap {g}");
        }
        let bytes: u64 = log.iter().map(|x| x.2 as u64).sum();
        assert!((bytes as f64 / 10.0 - 20_480.0).abs() < 1380.0 / 10.0 + 1.0, "{bytes} bytes in 10 s");
    }

    #[test]
    fn connections_take_turns_in_round_robin_order() {
        let log = drive(10_000.0, &[1, 2, 3], ms(2_000));
        // 1 writes at once on joining the empty ring; 2 and 3 join behind it.
        let order: Vec<u32> = log.iter().map(|x| x.1).take(10).collect();
        assert_eq!(order, vec![1, 1, 2, 3, 1, 2, 3, 1, 2, 3]);
    }

    #[test]
    fn a_connection_with_nothing_to_send_or_a_full_socket_leaves_the_ring() {
        let mut l = RateLimiter::new(Some(10_000.0));
        let mut writes = vec![];
        l.queue(
            Time::ZERO,
            1,
            &mut Endless(|c, m| {
                writes.push(c);
                (m, true)
            }),
        );
        l.queue(Time::ZERO, 2, &mut Endless(|_, _| unreachable!("not empty: no try_send")));
        let t = l.due().unwrap();
        // 1 has nothing more; 2 writes and fills its socket.
        l.try_send(
            t,
            false,
            &mut Endless(|c, m| {
                writes.push(c);
                if c == 1 {
                    (0, true)
                } else {
                    (m, false)
                }
            }),
        );
        assert_eq!(writes, vec![1, 1, 2]);
        assert_eq!(l.ring().count(), 0);
        assert_eq!(l.due(), None, "an empty ring schedules nothing");
    }

    #[test]
    fn idle_time_earns_no_credit() {
        let mut l = RateLimiter::new(Some(1380.0));
        let mut n = 0;
        l.queue(
            Time::ZERO,
            1,
            &mut Endless(|_, m| {
                n += 1;
                (m, n < 1)
            }),
        );
        assert_eq!(n, 1);
        // Ten seconds idle, then two connections join: only one unit goes at once.
        let mut first = 0;
        l.queue(
            ms(10_000),
            1,
            &mut Endless(|_, m| {
                first += 1;
                (m, true)
            }),
        );
        assert_eq!(first, 1, "debt clamped at zero, not -10 units");
        assert_eq!(l.due(), Some(ms(11_000)));
    }

    #[test]
    fn unlimited_uploads_write_whole_piece_messages_microseconds_apart() {
        let mut l = RateLimiter::new(None);
        assert_eq!(l.unit(), UNLIMITED_UNIT_SIZE);
        let mut left = 3;
        let mut send = Endless(|_, m| {
            assert_eq!(m, 17_000);
            left -= 1;
            (if left >= 0 { 16_397 } else { 0 }, true)
        });
        l.queue(Time::ZERO, 4, &mut send);
        let mut turns = 1;
        while let Some(t) = l.due() {
            assert!(t < Time(10_000), "1e10 bytes/s: a piece message costs 1.6 us");
            l.try_send(t, false, &mut send);
            turns += 1;
        }
        assert_eq!(turns, 4, "three pieces, then a turn with nothing to send");
    }
}
