use super::*;

fn ms(x: u64) -> Time {
    Time(x * 1_000_000)
}

/// Connections with `left[c]` bytes to send, written as piece messages of
/// 16 397 bytes at most per `send`, on sockets that take everything except
/// those marked `full`; logs every write as (time, connection, bytes).
struct Peers {
    now: Time,
    left: Vec<u64>,
    partial: Vec<u64>,
    full: Vec<bool>,
    log: Vec<(Time, u32, u32)>,
}

impl Peers {
    fn new(left: &[u64]) -> Self {
        Peers {
            now: Time::ZERO,
            left: left.to_vec(),
            partial: vec![0; left.len()],
            full: vec![false; left.len()],
            log: Vec::new(),
        }
    }

    /// Bytes `conn` wrote.
    fn sent(&self, conn: u32) -> u64 {
        self.log.iter().filter(|w| w.1 == conn).map(|w| w.2 as u64).sum()
    }

    /// (time, bytes) of every instant anything was written, in order.
    fn bursts(&self) -> Vec<(Time, u64)> {
        let mut out: Vec<(Time, u64)> = Vec::new();
        for &(t, _, b) in &self.log {
            match out.last_mut() {
                Some(last) if last.0 == t => last.1 += b as u64,
                _ => out.push((t, b as u64)),
            }
        }
        out
    }
}

impl Uploads for Peers {
    fn send(&mut self, conn: u32, max: u32) -> (u32, bool) {
        let c = conn as usize;
        if self.partial[c] == 0 {
            self.partial[c] = self.left[c].min(PIECE_MSG);
        }
        let bytes = self.partial[c].min(max as u64);
        self.partial[c] -= bytes;
        self.left[c] -= bytes;
        if bytes > 0 {
            self.log.push((self.now, conn, bytes as u32));
        }
        (bytes as u32, !self.full[c])
    }

    fn pending(&self, conn: u32) -> u64 {
        self.left[conn as usize]
    }
}

/// Queues `conns` at time 0, then runs the ticks up to `end`.
fn drive(l: &mut BandwidthManager, peers: &mut Peers, conns: &[u32], end: Time) {
    for &c in conns {
        l.queue(Time::ZERO, c, peers);
    }
    run(l, peers, end);
}

fn run(l: &mut BandwidthManager, peers: &mut Peers, end: Time) {
    while let Some(t) = l.due().filter(|&t| t <= end) {
        peers.now = t;
        l.try_send(t, false, peers);
    }
}

const LOTS: u64 = 1 << 40;
/// A piece message of a 16 KiB block.
const MSG: u64 = PIECE_MSG;

fn on_a_tick(t: Time) -> bool {
    t.as_nanos().is_multiple_of(TICK.as_nanos())
}

#[test]
fn with_a_47_kb_s_limit_a_peer_with_a_lot_queued_writes_in_bursts_at_500_ms_ticks_of_23_5_kb_on_average() {
    let mut l = BandwidthManager::new(Some(47_000.0));
    let mut p = Peers::new(&[LOTS]);
    drive(&mut l, &mut p, &[0], ms(30_000));
    let bursts = p.bursts();
    assert_eq!(bursts[0], (ms(500), MSG), "nothing before the first tick, then one send buffer");
    assert!(bursts.iter().all(|&(t, _)| on_a_tick(t)), "{bursts:?}");
    // Once its rate is known: a burst every tick, 23.5 kB each on average,
    // none as much as two ticks' worth.
    let late: Vec<u64> = bursts.iter().filter(|b| b.0 > ms(20_000)).map(|b| b.1).collect();
    assert_eq!(late.len(), 20, "one burst per tick");
    let mean = late.iter().sum::<u64>() as f64 / late.len() as f64;
    assert!((mean - 23_500.0).abs() < 500.0, "{mean} bytes a tick");
    assert!(late.iter().all(|&b| b > 10_000 && b < 47_000), "{late:?}");
    let total = p.sent(0) as f64;
    assert!((total - 47_000.0 * 29.5).abs() < 47_000.0, "{total} bytes in 30 s");
}

#[test]
fn peers_whose_requests_fill_at_the_same_ticks_write_together_in_one_burst() {
    // 8 peers at 47 kB/s: each tick shares 23 500 bytes eight ways, so a
    // send buffer of 16 397 bytes fills in 6 ticks, everyone's at once.
    let mut l = BandwidthManager::new(Some(47_000.0));
    let mut p = Peers::new(&[LOTS; 8]);
    drive(&mut l, &mut p, &[0, 1, 2, 3, 4, 5, 6, 7], ms(30_000));
    let bursts = p.bursts();
    assert_eq!(bursts[0], (ms(3_000), 8 * MSG));
    assert!(bursts.iter().all(|&(t, b)| on_a_tick(t) && b == 8 * MSG), "{bursts:?}");
    let total = bursts.iter().map(|b| b.1).sum::<u64>() as f64;
    assert!((total - 47_000.0 * 30.0).abs() < 8.0 * MSG as f64, "{total}");
}

#[test]
fn unlimited_uploads_go_out_at_once_with_no_tick() {
    let mut l = BandwidthManager::new(None);
    let mut p = Peers::new(&[5 * MSG, 0]);
    l.queue(Time::ZERO, 0, &mut p);
    assert_eq!(p.bursts(), vec![(Time::ZERO, 5 * MSG)]);
    assert_eq!(l.due(), None);
    assert!(!l.contains(0), "nothing left to send: out of the limiter");
    assert_eq!(l.waiting(), 0);
}

#[test]
fn a_channel_is_topped_up_by_half_a_second_of_its_limit_a_tick_to_at_most_3_seconds_of_it() {
    let mut ch = Channel { limit: 47_000, quota: 100_000, ..Channel::default() };
    ch.refill();
    assert_eq!((ch.quota, ch.share), (123_500, 123_500));
    ch.refill();
    assert_eq!((ch.quota, ch.share), (141_000, 141_000), "3 s of 47 kB/s");
    let mut free = Channel::default();
    free.refill();
    assert_eq!(free.quota, 0, "no limit, no quota");
}

#[test]
fn a_session_channel_held_back_by_the_tcp_class_never_holds_more_than_3_seconds_of_its_limit() {
    // Its requests take only the TCP class's 500 bytes a tick of the
    // session's 5000: the session's quota piles up to its cap.
    let mut l = BandwidthManager::new(Some(10_000.0));
    l.set_throttled(0, true);
    l.throttle(Time::ZERO, Some(1_000.0));
    let mut p = Peers::new(&[LOTS]);
    l.queue(Time::ZERO, 0, &mut p);
    let mut most = 0;
    while let Some(t) = l.due().filter(|&t| t <= ms(60_000)) {
        p.now = t;
        l.try_send(t, false, &mut p);
        most = most.max(l.session_quota());
    }
    assert_eq!(most, 30_000 - 500, "capped at 30 000, then one share taken");
    assert!((p.sent(0) as f64 - 60_000.0).abs() < MSG as f64, "the class's 1000 B/s");
}

#[test]
fn a_request_the_quota_cannot_fill_is_handed_out_in_part_after_20_ticks() {
    // 1000 B/s: 500 bytes a tick, 33 ticks for a 16 397-byte send buffer.
    let mut l = BandwidthManager::new(Some(1_000.0));
    let mut p = Peers::new(&[LOTS]);
    drive(&mut l, &mut p, &[0], ms(12_000));
    assert_eq!(p.bursts()[0], (ms(10_000), 20 * 500), "tick 20: what it has");
}

#[test]
fn two_waiting_peers_share_each_tick_equally_and_the_last_complete_writes_first() {
    // 20 kB/s: 10 000 bytes a tick, 5000 each; both send buffers are full
    // at the fourth tick.
    let mut l = BandwidthManager::new(Some(20_000.0));
    let mut p = Peers::new(&[LOTS, LOTS]);
    drive(&mut l, &mut p, &[0, 1], ms(2_000));
    assert_eq!(p.log, vec![(ms(2_000), 1, MSG as u32), (ms(2_000), 0, MSG as u32)]);
    run(&mut l, &mut p, ms(60_000));
    assert!(p.sent(0).abs_diff(p.sent(1)) <= MSG, "{} {}", p.sent(0), p.sent(1));
    let total = (p.sent(0) + p.sent(1)) as f64;
    assert!((total - 20_000.0 * 60.0).abs() < 2.0 * MSG as f64, "{total}");
}

#[test]
fn the_throttled_tcp_class_is_held_to_its_own_rate_and_the_others_get_the_rest_of_the_session() {
    let mut l = BandwidthManager::new(Some(100_000.0));
    l.set_throttled(1, true);
    l.throttle(Time::ZERO, Some(20_000.0));
    assert_eq!(l.class_rate(), Some(20_000.0));
    let mut p = Peers::new(&[LOTS, LOTS, LOTS]);
    drive(&mut l, &mut p, &[1, 2], ms(60_000));
    let (tcp, utp) = (p.sent(1) as f64 / 60.0, p.sent(2) as f64 / 60.0);
    assert!((tcp - 20_000.0).abs() < 1_000.0, "the TCP class: {tcp} B/s");
    assert!((tcp + utp - 100_000.0).abs() < 2_000.0, "the session: {} B/s", tcp + utp);
}

#[test]
fn an_unlimited_session_still_holds_the_throttled_class_to_its_rate() {
    let mut l = BandwidthManager::new(None);
    l.set_throttled(3, true);
    l.throttle(Time::ZERO, Some(5_000.0));
    let mut p = Peers::new(&[0, 0, 0, LOTS]);
    drive(&mut l, &mut p, &[3], ms(60_000));
    assert!((p.sent(3) as f64 / 60.0 - 5_000.0).abs() < MSG as f64 / 60.0, "{}", p.sent(3));
}

#[test]
fn lifting_the_throttle_hands_out_a_request_waiting_only_on_the_tcp_class_at_the_next_tick() {
    let mut l = BandwidthManager::new(None);
    l.set_throttled(0, true);
    l.throttle(Time::ZERO, Some(1_000.0));
    let mut p = Peers::new(&[3 * MSG]);
    l.queue(Time::ZERO, 0, &mut p);
    assert_eq!((l.waiting(), l.due()), (1, Some(ms(500))));
    l.throttle(ms(200), None);
    assert_eq!(l.class_rate(), None);
    run(&mut l, &mut p, ms(500));
    // Its request, then everything else at once: nothing limits it now.
    assert_eq!(p.bursts(), vec![(ms(500), 3 * MSG)]);
    assert_eq!(l.due(), None);
}

#[test]
fn a_request_is_granted_at_once_while_the_channel_holds_a_second_of_its_limit_beyond_it() {
    let mut l = BandwidthManager::new(Some(47_000.0));
    l.session.quota = 141_000;
    let mut p = Peers::new(&[LOTS]);
    l.queue(Time::ZERO, 0, &mut p);
    // 141 000 less 16 397 at a time while 47 000 is left beyond the request.
    assert_eq!(p.bursts(), vec![(Time::ZERO, 5 * MSG)]);
    assert_eq!(l.session_quota(), 141_000 - 5 * MSG as i64);
    assert_eq!(l.waiting(), 1, "the sixth waits for a tick");
}

#[test]
fn a_peer_asks_for_its_send_buffer_or_two_ticks_of_its_rate_whichever_is_more() {
    let fresh = Peer::default();
    assert_eq!(fresh.wanted(LOTS), MSG as u32, "10 KiB, so one piece message");
    assert_eq!(fresh.wanted(1_000), 1_000, "only what it has");
    let busy = Peer { last_second: 100_000, ..Peer::default() };
    assert_eq!(busy.wanted(LOTS), 4 * MSG as u32, "50 000 bytes, in whole messages");
    let fast = Peer { last_second: 2_000_000, ..Peer::default() };
    assert_eq!(fast.wanted(LOTS), 32 * MSG as u32, "500 KiB at most, in whole messages");
    let steady = Peer { rate: 200_000, ..Peer::default() };
    assert_eq!(steady.wanted(1_000), 200_000, "2 x 0.5 s of its rate");
}

#[test]
fn a_peers_upload_rate_takes_a_fifth_of_each_seconds_bytes() {
    let mut p = Peer { this_second: 50_000, ..Peer::default() };
    p.roll(1);
    assert_eq!((p.rate, p.last_second, p.this_second), (10_000, 50_000, 0));
    p.roll(3);
    assert_eq!((p.rate, p.last_second), (6_400, 0), "two idle seconds");
    p.roll(200);
    assert_eq!(p.rate, 0);
}

#[test]
fn a_closed_connection_gives_back_what_its_request_was_assigned() {
    let mut l = BandwidthManager::new(Some(1_000.0));
    let mut p = Peers::new(&[LOTS]);
    drive(&mut l, &mut p, &[0], ms(1_500));
    assert_eq!(l.session_quota(), 0, "three ticks' 1500 bytes assigned");
    l.remove(0);
    assert_eq!((l.session_quota(), l.waiting(), l.due()), (1_500, 0, None));
    assert!(!l.contains(0));
}

#[test]
fn a_peer_whose_socket_fills_keeps_its_quota_and_writes_it_when_queued_again() {
    let mut l = BandwidthManager::new(Some(47_000.0));
    l.peer(0).quota = 30_000;
    let mut p = Peers::new(&[LOTS]);
    p.full[0] = true;
    l.queue(Time::ZERO, 0, &mut p);
    assert_eq!((p.sent(0), l.held(0), l.waiting()), (MSG, 30_000 - MSG as u32, 0));
    assert!(!l.contains(0), "out until its socket drains");
    p.full[0] = false;
    p.now = ms(1);
    l.queue(ms(1), 0, &mut p);
    // What it holds goes at once; a request for the rest of a send buffer waits.
    assert_eq!(p.log[1], (ms(1), 0, 30_000 - MSG as u32));
    assert_eq!((l.held(0), l.waiting(), l.due()), (0, 1, Some(ms(500))));
    assert!(l.contains(0), "it waits for a tick");
}

#[test]
fn ticks_fall_every_500_ms_from_the_sessions_start() {
    let mut l = BandwidthManager::new(Some(47_000.0));
    l.start(ms(300));
    let mut p = Peers::new(&[LOTS]);
    p.now = ms(1_000);
    l.queue(ms(1_000), 0, &mut p);
    assert_eq!(l.due(), Some(ms(1_300)));
    run(&mut l, &mut p, ms(10_000));
    assert!(p.log.iter().all(|w| (w.0.as_nanos() - ms(300).as_nanos()).is_multiple_of(TICK.as_nanos())));
}

// ---- IP overhead (`rate_limit_ip_overhead`) --------------------------------

#[test]
fn the_ip_overhead_estimate_is_40_bytes_for_each_1460_bytes_or_part_and_at_least_40() {
    assert_eq!(ip_overhead(0), 40, "libtorrent counts one packet at least");
    assert_eq!(ip_overhead(1), 40);
    assert_eq!(ip_overhead(17), 40, "a request");
    assert_eq!(ip_overhead(1460), 40);
    assert_eq!(ip_overhead(1461), 80);
    assert_eq!(ip_overhead(2920), 80);
    assert_eq!(ip_overhead(MSG as u32), 12 * 40, "a piece message of a 16 KiB block");
}

#[test]
fn a_download_at_a_rate_charges_its_ack_overhead_to_the_upload_channel_at_the_second_tick() {
    let mut l = BandwidthManager::new(Some(1_000.0)).with_ip_overhead(true);
    assert!(l.charges_control());
    // 100 kB/s of piece messages in: 6 reads of 16 397 bytes in the first second.
    for _ in 0..6 {
        l.transceived(3, MSG as u32);
    }
    assert_eq!(l.ip_owed(3), 6 * 480);
    assert_eq!(l.session_quota(), 0, "charged once a second, not at each read");
    l.second_tick(ms(1_000));
    assert_eq!(l.session_quota(), -6 * 480, "the channel owes the overhead");
    assert_eq!(l.ip_owed(3), 0);
    assert_eq!(l.upload_rate(3), 6 * 480 / 5, "the upload rate counts the overhead, as libtorrent's");
}

#[test]
fn overhead_is_charged_to_the_tcp_class_only_for_its_tcp_peers() {
    let mut l = BandwidthManager::new(Some(50_000.0)).with_ip_overhead(true);
    l.throttle(Time::ZERO, Some(10_000.0));
    l.set_throttled(1, true);
    l.transceived(1, 100);
    l.transceived(2, 100);
    l.second_tick(ms(1_000));
    assert_eq!((l.session.quota, l.tcp.quota), (-80, -40));
}

#[test]
fn writes_the_manager_hands_quota_to_count_their_overhead_one_write_a_turn() {
    let mut l = BandwidthManager::new(None).with_ip_overhead(true);
    let mut p = Peers::new(&[2 * MSG]);
    l.queue(Time::ZERO, 0, &mut p);
    assert_eq!(p.sent(0), 2 * MSG);
    assert_eq!(l.ip_owed(0), 2 * 480);
    l.second_tick(ms(1_000));
    assert_eq!(l.session_quota(), 0, "an unlimited channel owes nothing");
}

#[test]
fn with_rate_limit_ip_overhead_off_reads_writes_and_second_ticks_charge_nothing() {
    let mut l = BandwidthManager::new(Some(1_000.0));
    assert!(!l.charges_ip_overhead() && !l.charges_control());
    let mut p = Peers::new(&[LOTS]);
    l.queue(Time::ZERO, 0, &mut p);
    for _ in 0..100 {
        l.transceived(0, MSG as u32);
    }
    l.second_tick(ms(1_000));
    assert_eq!((l.ip_owed(0), l.session_quota(), l.upload_rate(0)), (0, 0, 0));
}

/// A download over a 1 Mbit/s link driven by requests that wait for upload
/// quota, as a libtorrent peer's do: `depth` requests outstanding, each
/// answered by a piece message of a 16 KiB block that arrives 10 ms after
/// the request went out at the soonest, the link carrying one every 131 ms.
/// Returns the blocks received in `secs` seconds.
fn download_behind_requests(limit: f64, ip: bool, depth: u32, secs: u64) -> u64 {
    struct Requests {
        now: Time,
        unsent: u32,
        written: Vec<Time>,
    }
    impl Uploads for Requests {
        // A turn writes every request waiting (control messages are not cut).
        fn send(&mut self, _: u32, max: u32) -> (u32, bool) {
            if max == 0 || self.unsent == 0 {
                return (0, true);
            }
            let n = std::mem::take(&mut self.unsent);
            self.written.extend((0..n).map(|_| self.now));
            (n * 17, true)
        }
        fn pending(&self, _: u32) -> u64 {
            self.unsent as u64 * 17
        }
    }
    let mut l = BandwidthManager::new(Some(limit)).with_ip_overhead(ip);
    let mut r = Requests { now: Time::ZERO, unsent: depth, written: Vec::new() };
    l.queue(Time::ZERO, 0, &mut r);
    let (mut link_free, mut arrivals, mut blocks) = (Time::ZERO, Vec::<Time>::new(), 0);
    let serialise = Duration::from_nanos(MSG * 8 * 1_000);
    for step in 1..=secs * 1_000 {
        let now = ms(step);
        r.now = now;
        for w in r.written.drain(..) {
            link_free = link_free.max(w + Duration::from_millis(10)) + serialise;
            arrivals.push(link_free);
        }
        let arrived = arrivals.iter().filter(|&&t| t <= now).count();
        arrivals.retain(|&t| t > now);
        for _ in 0..arrived {
            blocks += 1;
            l.transceived(0, MSG as u32);
            r.unsent += 1;
        }
        if arrived > 0 && !l.contains(0) {
            l.queue(now, 0, &mut r);
        }
        if l.due().is_some_and(|t| t <= now) {
            l.try_send(now, false, &mut r);
        }
        if step % 1_000 == 0 {
            l.second_tick(now);
        }
    }
    blocks
}

#[test]
fn a_1_kb_s_upload_limit_caps_downloads_near_the_limit_over_the_overhead_a_block_costs() {
    let secs = 120;
    let rate = |blocks: u64| (blocks * BLOCK as u64) as f64 / secs as f64;
    // Each block costs its reads' 480 bytes, its request's 17 and at most
    // the request's own 40: 1000 B/s buys 1.86 to 2.01 blocks a second.
    let capped = rate(download_behind_requests(1_000.0, true, 4, secs));
    let (low, high) = (1_000.0 / 537.0 * BLOCK as f64, 1_000.0 / 497.0 * BLOCK as f64);
    assert!(capped > 0.9 * low && capped < 1.05 * high, "{capped} B/s, libtorrent's rule {low}-{high}");
    // Without the charge, the link (125 kB/s) is the bound.
    let free = rate(download_behind_requests(1_000.0, false, 4, secs));
    assert!(free > 110_000.0, "{free} B/s");
}
