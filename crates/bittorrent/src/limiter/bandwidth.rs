//! libtorrent's upload bandwidth manager: quota handed out once per session
//! tick, every 500 ms. Read in libtorrent RC_1_2 (`src/bandwidth_manager.cpp`
//! `update_quotas`, `src/bandwidth_queue_entry.cpp` `assign_bandwidth`,
//! `src/bandwidth_limit.cpp` the channel, and the peer's side in
//! `src/peer_connection.cpp`: `request_bandwidth`, `wanted_transfer`,
//! `setup_send`, `fill_send_buffer`, `second_tick`) and written anew here.
//! Units: bytes, bytes/s, ticks of 500 ms (`tick_interval`).
//!
//! **Channels.** Each limited peer class has a bandwidth channel: the
//! session's (the upload limit, every connection) and in mixed mode the TCP
//! class's ([`super::classes`], its TCP connections). A channel without a
//! limit takes no part (`copy_pertinent_channels`). At each tick, a channel
//! on which some request waits gains `limit x 0.5 s` of quota, capped at 3 s
//! of its limit, and its quota is shared equally among the requests waiting
//! on it (libtorrent shares by priority; every peer has the same here).
//!
//! **Requests.** A connection with something to send and no request under
//! way asks for `max(send buffer, 2 x upload rate x 0.5 s)` bytes less the
//! quota it still holds, and for nothing while that covers it
//! (`wanted_transfer`, `request_bandwidth`). Its upload rate is libtorrent's
//! 5-second average, updated each second, of what it wrote. Its send buffer
//! is modelled as what `fill_send_buffer` would hold: 16 KiB blocks read as
//! piece messages while it holds less than `clamp(0.5 x last second's upload,
//! 10 KiB, 500 KiB)`, so that bound rounded up to whole piece messages, or
//! what the connection has to send if less (an approximation: libtorrent's
//! buffer may also hold the rest of a half-written message beyond the
//! bound). Unsure: libtorrent counts the rate with IP overhead and the
//! last second's upload as payload only; here both are the bytes the
//! connection wrote through the limiter. A request is granted at once
//! when no channel of the connection is limited, and when each limited one
//! holds a second of its limit beyond it (`need_queueing`: taken at once).
//! Otherwise it joins the queue, on the channels that could not grant it;
//! at each tick it takes the least of its channels' shares, and is handed
//! out when complete, or with what it has after 20 ticks (`ttl`). A tick
//! hands out its complete requests last completed first, as libtorrent does.
//!
//! **Writes** (`setup_send`). A connection writes what it has, up to the
//! quota it holds, while its socket takes it; what is left of its quota
//! stays with it. libtorrent writes its send buffer in one `async_write` at a
//! time and refills the buffer from disk; here piece messages are written one
//! after another, the disk answering at once. With a limit, writes therefore
//! come in bursts at tick boundaries; without one, everything goes at once.
//!
//! **IP overhead** (`rate_limit_ip_overhead`, on by default; read in
//! RC_2_1: `aux_/stat.hpp` `trancieve_ip_packet`,
//! `peer_connection::account_received_bytes`, `on_send_data`,
//! `second_tick`, `session_impl::use_quota_overhead`). libtorrent cannot
//! see packets, so it estimates: every read from and every write to a
//! peer's socket of `n` bytes counts `max(1, ceil(n / 1460))` packets of 40
//! header bytes (IPv4 20 + TCP 20; the MTU 1500 less them is 1460 bytes a
//! packet), one header for the packet and one for its ACK, and adds that
//! estimate to both the peer's upload and its download overhead counters,
//! whatever the transport (the estimate lives in `peer_connection`; uTP
//! peers are counted the same way). Once a second (the peer's
//! `second_tick`), with the setting on, the second's counters are taken
//! from the channels of the peer's classes (`use_quota_overhead`:
//! `bandwidth_channel::use_quota`, which may leave a channel's quota below
//! zero), upload overhead from the upload channels. The testbed's session
//! upload limit is the global class's, which every peer is in; the TCP class
//! (mixed mode) is charged for its TCP peers. A download therefore costs its
//! ACKs' estimate, about 2.7 % of its bytes, on the peer's upload channel:
//! a low upload limit slows the peer's downloads, because its requests wait
//! for upload quota too. Here the client reports every read and every write
//! it makes outside the manager ([`BandwidthManager::transceived`]); the
//! writes the manager hands quota to are counted as it makes them, one write
//! a turn. A peer's upload rate (`stat::upload_rate`) then includes its
//! overhead, as libtorrent's does. Download channels are not modelled (no
//! download limits), nor the 40 bytes of a SYN and of the ACK of a SYN-ACK.
//! With the setting off, the counters are not kept (libtorrent still counts
//! them into the upload rate: not modelled).
//!
//! Not modelled: the per-torrent and per-peer channels (no limits by
//! default). Control messages that follow a piece message in one write may
//! overdraw a connection's quota by a few bytes: forgiven.

use torrentlab_engine::{Duration, Time};

use super::{UploadLimiter, Uploads};
use crate::torrent::BLOCK;

/// libtorrent's `tick_interval`: quota is handed out this often.
pub const TICK: Duration = Duration::from_millis(500);
const TICK_MS: i64 = 500;
/// Ticks after which a request is handed out what it has (`bw_request::ttl`).
pub const TTL: u8 = 20;
/// A channel holds at most this many seconds of its limit.
pub const QUOTA_SECS: i64 = 3;
/// `send_buffer_low_watermark` and `send_buffer_watermark`: the send buffer's
/// bounds, bytes.
pub const SEND_BUFFER_MIN: u64 = 10 * 1024;
pub const SEND_BUFFER_MAX: u64 = 500 * 1024;
/// `send_buffer_watermark_factor`: the send buffer in percent of the last
/// second's upload.
const SEND_BUFFER_PERCENT: u64 = 50;
/// What `fill_send_buffer` reads at a time: a piece message of a 16 KiB block.
const PIECE_MSG: u64 = BLOCK as u64 + 13;
const SECOND_NS: u64 = 1_000_000_000;

/// libtorrent's estimate of a packet's IPv4 and TCP headers, bytes.
pub const IP_HEADER: u32 = 20 + 20;
/// Payload bytes a packet carries in the estimate: an MTU of 1500 less the headers.
pub const IP_PACKET: u32 = 1500 - IP_HEADER;

/// libtorrent's estimate of the IP overhead of a read or write of `bytes`
/// (`stat::trancieve_ip_packet`): a header for each packet, at least one,
/// and as much again for the ACKs. The same amount is counted on the upload
/// and on the download side.
pub fn ip_overhead(bytes: u32) -> u32 {
    bytes.div_ceil(IP_PACKET).max(1) * IP_HEADER
}

/// A request's channels, bits.
const SESSION: u8 = 1;
const TCP: u8 = 2;

/// A connection's flags: it waits for the limiter to write (its socket was
/// flushed and it had something to send), it has a request queued, it is in
/// the TCP class.
const ACTIVE: u8 = 1;
const WAITING: u8 = 2;
const THROTTLED: u8 = 4;

/// One peer class's upload channel (`bandwidth_channel`).
#[derive(Clone, Copy, Debug, Default)]
struct Channel {
    /// Bytes/s; 0: unlimited (`m_limit`).
    limit: i64,
    /// Bytes it may still hand out (`m_quota_left`).
    quota: i64,
    /// This tick's quota to share (`distribute_quota`), and the requests
    /// sharing it (`tmp`).
    share: i64,
    waiting: i64,
}

impl Channel {
    fn limited(&self) -> bool {
        self.limit > 0
    }

    /// A tick's quota (`update_quota`): `limit x 0.5 s`, capped at 3 s.
    fn refill(&mut self) {
        if !self.limited() {
            return;
        }
        self.quota += (self.limit * TICK_MS + 500) / 1000;
        self.quota = self.quota.min(QUOTA_SECS * self.limit);
        self.share = self.quota.max(0);
    }

    /// Whether a request of `bytes` must wait; if not, it is taken at once
    /// (`need_queueing`: the channel holds a second's worth beyond it).
    fn must_wait(&mut self, bytes: u32) -> bool {
        if self.quota - (bytes as i64) < self.limit {
            return true;
        }
        self.quota -= bytes as i64;
        false
    }

    /// `bytes` cut to one waiting request's share of this tick.
    fn cap(&self, bytes: u32) -> u32 {
        if !self.limited() || self.waiting == 0 {
            return bytes;
        }
        bytes.min(u32::try_from(self.share / self.waiting).unwrap_or(u32::MAX))
    }

    /// `bytes` handed out (`use_quota`), or given back by a closed
    /// connection (`return_quota`, negative).
    fn take(&mut self, bytes: i64) {
        if self.limited() {
            self.quota -= bytes;
        }
    }
}

/// A queued request (`bw_request`).
#[derive(Clone, Copy, Debug)]
struct Request {
    conn: u32,
    size: u32,
    /// Bytes assigned at the ticks so far.
    assigned: u32,
    /// Ticks left before a partial amount is handed out.
    ttl: u8,
    /// The channels it waits on ([`SESSION`], [`TCP`]).
    channels: u8,
}

/// One connection's side.
#[derive(Clone, Copy, Debug, Default)]
struct Peer {
    /// Bytes granted and not written yet (`m_quota[upload_channel]`).
    quota: u32,
    /// Bytes written in second `second`, and in the second before it
    /// (`m_uploaded_last_second`; libtorrent counts payload only).
    this_second: u32,
    last_second: u32,
    /// The 5-second average of bytes/s written (`stat::upload_rate`;
    /// libtorrent counts IP overhead too).
    rate: u32,
    /// Whole seconds since the session started.
    second: u32,
    flags: u8,
    /// Estimated IP overhead of its reads and writes since the last second
    /// tick, not charged yet (`stat::upload_ip_overhead`), and charged
    /// overhead waiting to enter its upload rate with the second's bytes.
    ip: u32,
    ip_rate: u32,
}

impl Peer {
    /// libtorrent's second tick of the connection's statistics up to second
    /// `s`: each second's bytes into the 5-second average
    /// (`stat_channel::second_tick`).
    fn roll(&mut self, s: u32) {
        if s <= self.second {
            return;
        }
        let n = s - self.second;
        self.last_second = if n == 1 { self.this_second } else { 0 };
        let sample = self.this_second as u64 + std::mem::take(&mut self.ip_rate) as u64;
        let (mut sample, mut rate) = (sample, self.rate as u64);
        for _ in 0..n {
            rate = rate * 4 / 5 + sample / 5;
            sample = 0;
            if rate == 0 {
                break;
            }
        }
        (self.rate, self.this_second, self.second) = (rate as u32, 0, s);
    }

    /// The send buffer `fill_send_buffer` fills to, bytes: whole piece
    /// messages up to the watermark.
    fn buffer(&self) -> u64 {
        let mark = (self.last_second as u64 * SEND_BUFFER_PERCENT / 100).clamp(SEND_BUFFER_MIN, SEND_BUFFER_MAX);
        mark.div_ceil(PIECE_MSG) * PIECE_MSG
    }

    /// Two ticks of the connection's upload rate, bytes.
    fn floor(&self) -> u64 {
        2 * self.rate as u64 * TICK_MS as u64 / 1000
    }

    /// What it asks for with `pending` bytes to send (`wanted_transfer`).
    fn wanted(&self, pending: u64) -> u32 {
        pending.min(self.buffer()).max(self.floor()).min(u32::MAX as u64) as u32
    }
}

/// libtorrent's upload bandwidth manager of one client. Connections are the
/// caller's ids.
#[derive(Clone, Debug)]
pub struct BandwidthManager {
    /// The session's channel (the upload limit) and the TCP class's.
    session: Channel,
    tcp: Channel,
    /// By connection id.
    peers: Vec<Peer>,
    /// Waiting requests, oldest first, one per connection at most.
    queue: Vec<Request>,
    /// A tick's scratch: the requests handed out, (connection, bytes).
    granted: Vec<(u32, u32)>,
    /// The session's start: ticks fall at `origin + k x 500 ms`, the
    /// connections' seconds at `origin + k s`.
    origin: Time,
    /// The next tick, while requests wait.
    due: Option<Time>,
    /// `rate_limit_ip_overhead`: the estimated IP overhead is charged.
    ip_overhead: bool,
}

/// A limit in bytes/s as libtorrent holds it (0: unlimited).
fn limit(rate: Option<f64>) -> i64 {
    match rate {
        Some(r) if r > 0.0 => (r.round() as i64).max(1),
        _ => 0,
    }
}

impl BandwidthManager {
    /// `rate`: the session's upload limit, bytes/s, `None` for unlimited.
    pub fn new(rate: Option<f64>) -> Self {
        BandwidthManager {
            session: Channel { limit: limit(rate), ..Channel::default() },
            tcp: Channel::default(),
            peers: Vec::new(),
            queue: Vec::new(),
            granted: Vec::new(),
            origin: Time::ZERO,
            due: None,
            ip_overhead: false,
        }
    }

    /// With `on`, the estimated IP overhead is charged to the channels
    /// (libtorrent's `rate_limit_ip_overhead`).
    pub fn with_ip_overhead(mut self, on: bool) -> Self {
        self.ip_overhead = on;
        self
    }

    /// Whether the estimated IP overhead is charged.
    pub fn charges_ip_overhead(&self) -> bool {
        self.ip_overhead
    }

    /// Estimated IP overhead of `conn`'s reads and writes not charged yet, bytes.
    pub fn ip_owed(&self, conn: u32) -> u32 {
        self.peers.get(conn as usize).map_or(0, |p| p.ip)
    }

    /// `conn`'s upload rate as libtorrent holds it (a 5-second average, bytes/s).
    pub fn upload_rate(&self, conn: u32) -> u32 {
        self.peers.get(conn as usize).map_or(0, |p| p.rate)
    }

    /// The throttled class's rate, bytes/s, if it is throttled.
    pub fn class_rate(&self) -> Option<f64> {
        self.tcp.limited().then_some(self.tcp.limit as f64)
    }

    /// The session channel's quota, bytes.
    pub fn session_quota(&self) -> i64 {
        self.session.quota
    }

    /// Bytes granted to `conn` and not written yet.
    pub fn held(&self, conn: u32) -> u32 {
        self.peers.get(conn as usize).map_or(0, |p| p.quota)
    }

    /// Requests waiting for a tick.
    pub fn waiting(&self) -> usize {
        self.queue.len()
    }

    fn peer(&mut self, conn: u32) -> &mut Peer {
        let i = conn as usize;
        if self.peers.len() <= i {
            self.peers.resize(i + 1, Peer::default());
        }
        &mut self.peers[i]
    }

    fn second(&self, now: Time) -> u32 {
        (now.saturating_since(self.origin).as_nanos() / SECOND_NS) as u32
    }

    /// The first tick after `now`.
    fn next_tick(&self, now: Time) -> Time {
        let k = now.saturating_since(self.origin).as_nanos() / TICK.as_nanos();
        self.origin + Duration::from_nanos((k + 1) * TICK.as_nanos())
    }

    /// `conn` asks for bandwidth with `pending` bytes to send
    /// (`request_bandwidth`): granted at once, or queued.
    fn request(&mut self, now: Time, conn: u32, pending: u64) {
        let p = &self.peers[conn as usize];
        let wanted = p.wanted(pending);
        if p.quota >= wanted {
            return;
        }
        let size = wanted - p.quota;
        let mut channels = 0;
        if self.session.limited() && self.session.must_wait(size) {
            channels |= SESSION;
        }
        if p.flags & THROTTLED != 0 && self.tcp.limited() && self.tcp.must_wait(size) {
            channels |= TCP;
        }
        let p = &mut self.peers[conn as usize];
        if channels == 0 {
            p.quota += size;
            return;
        }
        p.flags |= WAITING;
        self.queue.push(Request { conn, size, assigned: 0, ttl: TTL, channels });
        if self.due.is_none() {
            self.due = Some(self.next_tick(now));
        }
    }

    /// `setup_send` for an active `conn`: asks for more when its quota may
    /// not cover what it wants, writes while it holds quota and its socket
    /// takes it. It stays active only while it waits for a tick.
    fn serve(&mut self, now: Time, conn: u32, out: &mut dyn Uploads) {
        let s = self.second(now);
        loop {
            let p = &mut self.peers[conn as usize];
            p.roll(s);
            if p.flags & WAITING == 0 && (p.quota as u64) < p.buffer().max(p.floor()) {
                let pending = out.pending(conn);
                if pending == 0 {
                    p.flags &= !ACTIVE;
                    return;
                }
                self.request(now, conn, pending);
            }
            let quota = self.peers[conn as usize].quota;
            if quota == 0 {
                return; // its request waits for a tick
            }
            let (bytes, flushed) = out.send(conn, quota);
            let p = &mut self.peers[conn as usize];
            p.quota = p.quota.saturating_sub(bytes);
            p.this_second = p.this_second.saturating_add(bytes);
            if self.ip_overhead && bytes > 0 {
                p.ip = p.ip.saturating_add(ip_overhead(bytes));
            }
            if bytes == 0 || !flushed {
                p.flags &= !ACTIVE;
                return;
            }
        }
    }

    /// A tick (`update_quotas`): the channels with requests waiting gain
    /// quota, each request takes its share, the complete ones (and those out
    /// of ticks with something) are handed out and their connections write.
    fn tick(&mut self, now: Time, out: &mut dyn Uploads) {
        let on = |bit: u8| self.queue.iter().filter(|r| r.channels & bit != 0).count() as i64;
        (self.session.waiting, self.tcp.waiting) = (on(SESSION), on(TCP));
        for ch in [&mut self.session, &mut self.tcp] {
            if ch.waiting > 0 {
                ch.refill();
            }
        }
        let (session, tcp, granted) = (&mut self.session, &mut self.tcp, &mut self.granted);
        granted.clear();
        self.queue.retain_mut(|r| {
            r.ttl = r.ttl.saturating_sub(1);
            let mut bytes = r.size - r.assigned;
            if r.channels & SESSION != 0 {
                bytes = session.cap(bytes);
            }
            if r.channels & TCP != 0 {
                bytes = tcp.cap(bytes);
            }
            r.assigned += bytes;
            if r.channels & SESSION != 0 {
                session.take(bytes as i64);
            }
            if r.channels & TCP != 0 {
                tcp.take(bytes as i64);
            }
            let done = r.assigned == r.size || (r.ttl == 0 && r.assigned > 0);
            if done {
                granted.push((r.conn, r.assigned));
            }
            !done
        });
        let granted = std::mem::take(&mut self.granted);
        for &(conn, bytes) in granted.iter().rev() {
            let p = &mut self.peers[conn as usize];
            p.quota = p.quota.saturating_add(bytes);
            p.flags &= !WAITING;
            if p.flags & ACTIVE != 0 {
                self.serve(now, conn, out);
            }
        }
        self.granted = granted;
    }
}

impl UploadLimiter for BandwidthManager {
    /// The session's clock starts: ticks and seconds count from `now`.
    fn start(&mut self, now: Time) {
        self.origin = now;
    }

    fn due(&self) -> Option<Time> {
        self.due
    }

    fn contains(&self, conn: u32) -> bool {
        self.peers.get(conn as usize).is_some_and(|p| p.flags & ACTIVE != 0)
    }

    /// A closed connection: its request leaves the queue, what it was
    /// assigned goes back to its channels; what it held is lost.
    fn remove(&mut self, conn: u32) {
        let Some(p) = self.peers.get_mut(conn as usize) else { return };
        *p = Peer { flags: p.flags & THROTTLED, ..Peer::default() };
        if let Some(k) = self.queue.iter().position(|r| r.conn == conn) {
            let r = self.queue.remove(k);
            if r.channels & SESSION != 0 {
                self.session.take(-(r.assigned as i64));
            }
            if r.channels & TCP != 0 {
                self.tcp.take(-(r.assigned as i64));
            }
        }
        if self.queue.is_empty() {
            self.due = None;
        }
    }

    /// `conn` has something to send and its socket is flushed: it writes
    /// what quota it holds and asks for more.
    fn queue(&mut self, now: Time, conn: u32, out: &mut dyn Uploads) {
        let p = self.peer(conn);
        debug_assert!(p.flags & ACTIVE == 0, "a connection is queued once");
        p.flags |= ACTIVE;
        self.serve(now, conn, out);
    }

    /// The tick that is due, if it is.
    fn try_send(&mut self, now: Time, _check_time: bool, out: &mut dyn Uploads) {
        if self.due.is_none_or(|t| t > now) {
            return;
        }
        self.due = None;
        self.tick(now, out);
        self.due = (!self.queue.is_empty()).then(|| self.next_tick(now));
    }

    fn set_throttled(&mut self, conn: u32, throttled: bool) {
        let p = self.peer(conn);
        p.flags = if throttled { p.flags | THROTTLED } else { p.flags & !THROTTLED };
    }

    /// The TCP class's limit (`bandwidth_channel::throttle`): its quota
    /// stays; requests waiting on it see the new limit at the next tick.
    fn throttle(&mut self, _now: Time, rate: Option<f64>) {
        self.tcp.limit = limit(rate);
    }

    /// With IP overhead charged, control messages wait for quota too (all
    /// of libtorrent's writes do).
    fn charges_control(&self) -> bool {
        self.ip_overhead
    }

    /// A read or write of `bytes` on `conn` outside the manager's turns:
    /// its estimated IP overhead, when that is charged.
    fn transceived(&mut self, conn: u32, bytes: u32) {
        if self.ip_overhead {
            let p = self.peer(conn);
            p.ip = p.ip.saturating_add(ip_overhead(bytes));
        }
    }

    /// The peers' second tick (`peer_connection::second_tick`): each one's
    /// estimated IP overhead of the second is taken from its channels (the
    /// session's; the TCP class's too for its TCP peers), which may leave
    /// them owing, and joins its upload rate.
    fn second_tick(&mut self, now: Time) {
        if !self.ip_overhead {
            return;
        }
        let s = self.second(now);
        for p in &mut self.peers {
            if p.ip == 0 {
                continue;
            }
            let ip = std::mem::take(&mut p.ip);
            self.session.take(ip as i64);
            if p.flags & THROTTLED != 0 {
                self.tcp.take(ip as i64);
            }
            // Into the sample of the second that ends now.
            p.roll(s.saturating_sub(1));
            p.ip_rate = p.ip_rate.saturating_add(ip);
            p.roll(s);
        }
    }
}

#[cfg(test)]
mod tests;
