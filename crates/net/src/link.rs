//! An access link in one direction: drop-tail FIFO, serialiser, propagation delay.
//!
//! The queue is simulated exactly but without a "transmission finished" event per
//! packet: a FIFO served at a constant rate is fully determined by arrival times,
//! so when a packet is admitted its dequeue time is `max(arrival, previous
//! finish)` and its finish time is that plus `wire bytes x 8 / capacity`. What the
//! queue holds at any instant is the admitted packets whose dequeue time is still
//! in the future; they are retired lazily (and logged, when monitored) the next
//! time the link is touched. At an instant shared by a dequeue and an arrival,
//! the dequeue happens first.

use std::collections::VecDeque;

use torrentlab_engine::{Duration, Time};

use crate::monitor::{DelayHistogram, QueueLog, QueueRecord, QueueStats};

/// How much a drop-tail queue may hold. The packet being serialised is not in
/// the queue (as with a Linux qdisc or an ns-3 device queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferLimit {
    /// At most this many waiting packets.
    Packets(u32),
    /// At most this many waiting wire bytes (a packet that would exceed it is dropped).
    Bytes(u64),
}

/// Static parameters of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkConfig {
    /// Capacity in bit/s; `None` is unlimited (no serialisation delay, no queue).
    pub capacity_bps: Option<u64>,
    /// Queue limit.
    pub buffer: BufferLimit,
    /// Propagation delay added after serialisation.
    pub delay: Duration,
}

impl LinkConfig {
    /// An unlimited, zero-delay link: packets pass straight through.
    pub const TRANSPARENT: LinkConfig =
        LinkConfig { capacity_bps: None, buffer: BufferLimit::Packets(u32::MAX), delay: Duration::ZERO };

    /// True when the link neither delays nor queues nor drops.
    pub fn is_transparent(&self) -> bool {
        self.capacity_bps.is_none() && self.delay == Duration::ZERO
    }
}

/// Counters of one link. Bytes are wire bytes (headers included).
///
/// `repr(C)`: the four counters every packet updates come first (see [`Link`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct LinkStats {
    pub arrived_packets: u64,
    pub arrived_bytes: u64,
    /// Packets dequeued for the wire (including those that found the link idle).
    pub served_packets: u64,
    pub served_bytes: u64,
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    /// Sum over dequeued packets of the time each waited in the queue (ns).
    pub wait_ns: u128,
    /// Sum over dequeued packets of wire bytes x time waited (byte-ns): divided
    /// by a span it gives the time-averaged queue in bytes.
    pub wait_byte_ns: u128,
    /// At the time these stats were taken: how long the packet being serialised
    /// still needs (ns). `served_bytes * 8 - unsent_ns * capacity / 1e9` is the
    /// number of bits actually on the wire by then.
    pub unsent_ns: u64,
}

impl LinkStats {
    /// Bits put on the wire by the time these stats were taken, for a link of
    /// `capacity_bps` (bytes of the packet still being serialised excluded).
    pub fn transmitted_bits(&self, capacity_bps: u64) -> f64 {
        self.served_bytes as f64 * 8.0 - self.unsent_ns as f64 * capacity_bps as f64 / 1e9
    }
}

/// What happened to a packet offered to a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    /// The queue was full: the packet is gone.
    Dropped,
    /// The packet will be dequeued at `dequeue` and reach the far end at `arrival`.
    Departs { dequeue: Time, arrival: Time },
}

#[derive(Clone, Copy, Debug)]
struct Waiting {
    arrival: Time,
    dequeue: Time,
    finish: Time,
    bytes: u32,
    /// Bytes admitted to this link up to and including this packet.
    cum_bytes: u64,
}

/// One direction of an access link.
///
/// The layout puts what a packet on an unlimited link reads and writes (the
/// capacity, the delay, the first four counters) in the first cache line.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Link {
    /// Copies of `cfg.capacity_bps` and `cfg.delay`, kept hot.
    capacity_bps: Option<u64>,
    delay: Duration,
    stats: LinkStats,
    cfg: LinkConfig,
    waiting: VecDeque<Waiting>,
    waiting_bytes: u64,
    admitted_bytes: u64,
    busy_until: Time,
    /// Finish time of the last packet dequeued.
    last_finish: Time,
    log: Option<QueueLog>,
    /// Arrival times of dropped packets not yet accounted in the log.
    pending_drops: VecDeque<Time>,
    logged_drops: u64,
    /// Delay histogram and time non-empty ([`Link::enable_queue_stats`]).
    queue_stats: Option<Box<QueueStats>>,
}

impl Link {
    pub fn new(cfg: LinkConfig) -> Self {
        Link {
            capacity_bps: cfg.capacity_bps,
            delay: cfg.delay,
            cfg,
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            admitted_bytes: 0,
            busy_until: Time::ZERO,
            last_finish: Time::ZERO,
            stats: LinkStats::default(),
            log: None,
            pending_drops: VecDeque::new(),
            logged_drops: 0,
            queue_stats: None,
        }
    }

    pub fn config(&self) -> &LinkConfig {
        &self.cfg
    }

    /// Starts logging every dequeue (see [`QueueRecord`]).
    pub fn enable_monitor(&mut self) {
        if self.log.is_none() {
            self.log = Some(QueueLog::default());
        }
    }

    /// Starts keeping the queueing delay of every packet served, in a
    /// [`DelayHistogram`], and the time the queue is non-empty. Does nothing
    /// on an unlimited link: it never queues, so it costs nothing per packet.
    pub fn enable_queue_stats(&mut self) {
        if self.capacity_bps.is_some() && self.queue_stats.is_none() {
            self.queue_stats = Some(Box::default());
        }
    }

    /// Queueing delays of the packets served so far (None: not kept, see
    /// [`Link::enable_queue_stats`]).
    pub fn delay_histogram(&self) -> Option<&DelayHistogram> {
        self.queue_stats.as_ref().map(|q| &q.delays)
    }

    /// How long, up to `now`, at least one packet was waiting in the queue
    /// (the packet being serialised does not count), ns; None when not kept.
    pub fn queue_nonempty_ns(&mut self, now: Time) -> Option<u64> {
        self.retire(now);
        let first_waiting = self.waiting.front().map(|w| w.arrival);
        let q = self.queue_stats.as_ref()?;
        let open = first_waiting.map_or(0, |a| now.0.saturating_sub(a.0.max(q.covered.0)));
        Some(q.nonempty_ns + open)
    }

    /// When the last packet admitted so far finishes serialisation.
    pub fn busy_until(&self) -> Time {
        self.busy_until
    }

    /// True when every dequeue is logged ([`Link::enable_monitor`]).
    pub fn is_monitored(&self) -> bool {
        self.log.is_some()
    }

    /// Offers a packet of `bytes` wire bytes to the link at `now`.
    #[inline]
    pub fn offer(&mut self, now: Time, bytes: u32) -> Offer {
        self.stats.arrived_packets += 1;
        self.stats.arrived_bytes += bytes as u64;
        let Some(rate) = self.capacity_bps else {
            self.stats.served_packets += 1;
            self.stats.served_bytes += bytes as u64;
            return Offer::Departs { dequeue: now, arrival: now + self.delay };
        };
        self.offer_queued(now, bytes, rate)
    }

    /// [`Link::offer`] on a link of `rate` bit/s: the queue. Kept out of line
    /// so that the unlimited case inlines into its callers.
    #[inline(never)]
    fn offer_queued(&mut self, now: Time, bytes: u32, rate: u64) -> Offer {
        self.retire(now);
        let would_wait = self.busy_until > now;
        if would_wait && self.is_full_for(bytes) {
            self.stats.dropped_packets += 1;
            self.stats.dropped_bytes += bytes as u64;
            if self.log.is_some() {
                self.pending_drops.push_back(now);
            }
            return Offer::Dropped;
        }
        let dequeue = if would_wait { self.busy_until } else { now };
        let finish = dequeue + Duration::serialization(bytes as u64, rate);
        self.busy_until = finish;
        self.admitted_bytes += bytes as u64;
        let entry = Waiting { arrival: now, dequeue, finish, bytes, cum_bytes: self.admitted_bytes };
        if would_wait {
            self.waiting.push_back(entry);
            self.waiting_bytes += bytes as u64;
        } else {
            self.dequeued(entry);
        }
        Offer::Departs { dequeue, arrival: finish + self.delay }
    }

    #[inline]
    fn is_full_for(&self, bytes: u32) -> bool {
        match self.cfg.buffer {
            BufferLimit::Packets(n) => self.waiting.len() as u64 >= n as u64,
            BufferLimit::Bytes(b) => self.waiting_bytes + bytes as u64 > b,
        }
    }

    /// Dequeues (and logs) every packet whose dequeue time is at or before `now`.
    #[inline]
    fn retire(&mut self, now: Time) {
        while let Some(front) = self.waiting.front() {
            if front.dequeue > now {
                break;
            }
            let e = self.waiting.pop_front().expect("front exists");
            self.waiting_bytes -= e.bytes as u64;
            self.dequeued(e);
        }
    }

    #[inline]
    fn dequeued(&mut self, e: Waiting) {
        self.stats.served_packets += 1;
        self.stats.served_bytes += e.bytes as u64;
        self.last_finish = e.finish;
        let waited = (e.dequeue.0 - e.arrival.0) as u128;
        self.stats.wait_ns += waited;
        self.stats.wait_byte_ns += waited * e.bytes as u128;
        if let Some(q) = self.queue_stats.as_deref_mut() {
            q.delays.record(waited as u64);
            if waited > 0 {
                // FIFO: arrivals and dequeues both come in order, so the
                // stretches [arrival, dequeue) of waiting packets are merged
                // by counting each one only past the end of the last.
                q.nonempty_ns += e.dequeue.0 - e.arrival.0.max(q.covered.0).min(e.dequeue.0);
                q.covered = e.dequeue;
            }
        }
        if let Some(log) = self.log.as_mut() {
            // Packets still waiting at e.dequeue: those behind it that had arrived
            // strictly before that instant (arrivals are in FIFO order).
            let k = self.waiting.partition_point(|w| w.arrival < e.dequeue);
            let bytes_left = if k > 0 { self.waiting[k - 1].cum_bytes - e.cum_bytes } else { 0 };
            while self.pending_drops.front().is_some_and(|t| *t < e.dequeue) {
                self.pending_drops.pop_front();
                self.logged_drops += 1;
            }
            log.records.push(QueueRecord {
                time: e.dequeue,
                bytes_left,
                packets_left: k as u32,
                served_packets: self.stats.served_packets,
                served_bytes: self.stats.served_bytes,
                dropped_packets: self.logged_drops,
            });
        }
    }

    /// Packets and wire bytes waiting in the queue at `now` (not counting the one
    /// being serialised).
    pub fn occupancy(&mut self, now: Time) -> (u32, u64) {
        self.retire(now);
        (self.waiting.len() as u32, self.waiting_bytes)
    }

    /// Counters as of `now` (dequeues up to `now` included).
    pub fn stats(&mut self, now: Time) -> LinkStats {
        self.retire(now);
        LinkStats { unsent_ns: self.last_finish.saturating_since(now).0, ..self.stats }
    }

    /// Counters as of the last time the link was touched.
    pub fn stats_so_far(&self) -> LinkStats {
        self.stats
    }

    /// Retires everything dequeued by `now` and hands over the records logged
    /// so far, leaving the monitor on (empty: not monitored). Records are the
    /// same however often the log is drained.
    pub fn drain_log(&mut self, now: Time) -> Vec<QueueRecord> {
        self.retire(now);
        self.log.as_mut().map_or_else(Vec::new, |l| std::mem::take(&mut l.records))
    }

    /// Records logged and not yet drained (0 when not monitored).
    pub fn logged(&self) -> usize {
        self.log.as_ref().map_or(0, |l| l.records.len())
    }

    /// Retires everything dequeued by `now` and hands over the log (if monitored).
    pub fn take_log(&mut self, now: Time) -> Option<QueueLog> {
        self.retire(now);
        self.log.take()
    }

    /// Capacity in bit/s (`None`: unlimited).
    pub fn capacity_bps(&self) -> Option<u64> {
        self.capacity_bps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn link(rate: u64, buffer: BufferLimit) -> Link {
        Link::new(LinkConfig { capacity_bps: Some(rate), buffer, delay: Duration::from_millis(10) })
    }

    #[test]
    fn a_packet_on_an_idle_link_leaves_after_serialisation_plus_propagation() {
        let mut l = link(10_000_000, BufferLimit::Packets(5));
        let t = Time(1_000);
        assert_eq!(
            l.offer(t, 1500),
            Offer::Departs { dequeue: t, arrival: t + Duration::from_micros(1200) + Duration::from_millis(10) }
        );
    }

    #[test]
    fn back_to_back_packets_are_spaced_by_their_serialisation_time() {
        let mut l = link(8_000_000, BufferLimit::Packets(5)); // 1 byte per microsecond
        let a = l.offer(Time::ZERO, 1000);
        let b = l.offer(Time::ZERO, 500);
        let Offer::Departs { arrival: a_arr, .. } = a else { panic!() };
        let Offer::Departs { dequeue: b_deq, arrival: b_arr } = b else { panic!() };
        assert_eq!(b_deq, Time(1_000_000));
        assert_eq!(b_arr - a_arr, Duration::from_micros(500));
    }

    #[test]
    fn drop_tail_drops_exactly_when_the_packet_limit_is_reached() {
        let mut l = link(1_000_000, BufferLimit::Packets(3));
        // First packet goes straight onto the wire; three more fill the queue.
        for _ in 0..4 {
            assert!(matches!(l.offer(Time::ZERO, 1500), Offer::Departs { .. }));
        }
        assert_eq!(l.offer(Time::ZERO, 1500), Offer::Dropped);
        assert_eq!(l.occupancy(Time::ZERO), (3, 4500));
        // One serialisation time later one packet has left the queue: room for one.
        let t = Time::ZERO + Duration::serialization(1500, 1_000_000);
        assert!(matches!(l.offer(t, 1500), Offer::Departs { .. }));
        assert_eq!(l.offer(t, 1500), Offer::Dropped);
        let s = l.stats(t);
        assert_eq!((s.arrived_packets, s.dropped_packets), (7, 2));
    }

    #[test]
    fn a_byte_limit_drops_the_packet_that_would_exceed_it() {
        let mut l = link(1_000_000, BufferLimit::Bytes(2000));
        l.offer(Time::ZERO, 1500); // in service
        assert!(matches!(l.offer(Time::ZERO, 1500), Offer::Departs { .. })); // 1500 waiting
        assert_eq!(l.offer(Time::ZERO, 600), Offer::Dropped); // 2100 > 2000
        assert!(matches!(l.offer(Time::ZERO, 500), Offer::Departs { .. })); // 2000 fits
    }

    #[test]
    fn an_unlimited_link_never_queues_or_drops() {
        let mut l = Link::new(LinkConfig { capacity_bps: None, buffer: BufferLimit::Packets(0), delay: Duration(7) });
        for _ in 0..100 {
            assert_eq!(l.offer(Time(3), 65_000), Offer::Departs { dequeue: Time(3), arrival: Time(10) });
        }
    }

    #[test]
    fn the_monitor_logs_each_dequeue_with_what_was_left_behind() {
        let mut l = link(8_000_000, BufferLimit::Packets(10)); // 1 byte/us
        l.enable_monitor();
        l.offer(Time::ZERO, 1000); // dequeued at 0, nothing left
        l.offer(Time(100_000), 1000); // dequeued at 1 ms
        l.offer(Time(200_000), 1000); // dequeued at 2 ms
        l.offer(Time(1_500_000), 1000); // arrives after the 1 ms dequeue
        let log = l.take_log(Time(10_000_000)).unwrap();
        let left: Vec<_> = log.records.iter().map(|r| (r.time.0, r.packets_left, r.bytes_left)).collect();
        assert_eq!(left, vec![(0, 0, 0), (1_000_000, 1, 1000), (2_000_000, 1, 1000), (3_000_000, 0, 0)]);
        assert_eq!(log.records.last().unwrap().served_bytes, 4000);
    }

    #[test]
    fn draining_the_log_as_the_run_goes_gives_the_records_of_one_take_at_the_end() {
        let offers = [(0, 1000), (100_000, 1000), (200_000, 1000), (1_500_000, 1000), (1_600_000, 700)];
        let mut whole = link(8_000_000, BufferLimit::Packets(2));
        whole.enable_monitor();
        let mut drained = link(8_000_000, BufferLimit::Packets(2));
        drained.enable_monitor();
        let mut parts = Vec::new();
        for (t, bytes) in offers {
            whole.offer(Time(t), bytes);
            parts.extend(drained.drain_log(Time(t)));
            drained.offer(Time(t), bytes);
        }
        assert_eq!(drained.logged(), 0);
        parts.extend(drained.drain_log(Time(10_000_000)));
        assert_eq!(parts, whole.take_log(Time(10_000_000)).unwrap().records);
        assert_eq!((parts.len(), parts[3].dropped_packets), (4, 1), "four served, one dropped");
    }

    #[test]
    fn the_monitor_counts_a_drop_only_in_records_after_it() {
        let mut l = link(8_000_000, BufferLimit::Packets(1));
        l.enable_monitor();
        l.offer(Time::ZERO, 1000); // served at 0
        l.offer(Time::ZERO, 1000); // waits, served at 1 ms
        assert_eq!(l.offer(Time(10), 1000), Offer::Dropped);
        let log = l.take_log(Time(5_000_000)).unwrap();
        assert_eq!(log.records[0].dropped_packets, 0);
        assert_eq!(log.records[1].dropped_packets, 1);
    }

    #[test]
    fn the_queue_log_reconstructs_the_bytes_and_packets_the_link_served() {
        let mut l = link(1_000_000, BufferLimit::Bytes(6000));
        l.enable_monitor();
        let mut x = 7u64;
        for i in 0..2000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            l.offer(Time(i * 5_000_000 + (x >> 40) % 3_000_000), 40 + ((x >> 20) % 1461) as u32);
        }
        let end = Time(20_000_000_000);
        let s = l.stats(end);
        let log = l.take_log(end).unwrap().records;
        let (mut bytes, mut packets, mut prev) = (0, 0, (0, 0));
        for r in &log {
            bytes += r.served_bytes - prev.0;
            packets += r.served_packets - prev.1;
            prev = (r.served_bytes, r.served_packets);
        }
        assert_eq!((bytes, packets), (s.served_bytes, s.served_packets));
        assert_eq!(log.len() as u64, s.served_packets, "one record per dequeue");
        assert!(s.dropped_packets > 0 && log.last().unwrap().dropped_packets == s.dropped_packets);
    }

    #[test]
    fn no_logged_queue_exceeds_the_buffer_limit() {
        for buffer in [BufferLimit::Bytes(4000), BufferLimit::Packets(3)] {
            let mut l = link(1_000_000, buffer);
            l.enable_monitor();
            for i in 0..3000u64 {
                l.offer(Time(i * 1_000_000), if i % 3 == 0 { 1500 } else { 52 });
                l.offer(Time(i * 1_000_000 + 10), 1500);
            }
            let log = l.take_log(Time::MAX).unwrap().records;
            let most_bytes = log.iter().map(|r| r.bytes_left).max().unwrap();
            let most_packets = log.iter().map(|r| r.packets_left).max().unwrap();
            match buffer {
                BufferLimit::Bytes(b) => assert!(most_bytes <= b && most_bytes > b / 2, "{most_bytes}"),
                // A record is taken right after a dequeue: one below a full queue at most.
                BufferLimit::Packets(k) => assert_eq!(most_packets, k - 1),
            }
        }
    }

    #[test]
    fn queue_stats_count_every_served_packet_and_the_time_a_packet_was_waiting() {
        let mut l = link(8_000_000, BufferLimit::Packets(10)); // 1 byte/us
        l.enable_queue_stats();
        l.offer(Time::ZERO, 1000); // served at once: waits 0
        l.offer(Time(200_000), 1000); // waits until 1 ms: 0.8 ms
        l.offer(Time(500_000), 1000); // waits until 2 ms: 1.5 ms; queue non-empty 0.2 to 2 ms
        l.offer(Time(5_000_000), 1000); // idle link: waits 0
        assert_eq!(l.queue_nonempty_ns(Time(10_000_000)), Some(1_800_000));
        let h = l.delay_histogram().unwrap();
        assert_eq!(h.count(), 4);
        let p = h.quantile_ns(1.0).unwrap();
        assert!((p - 1_500_000.0).abs() <= 1_500_000.0 / 32.0, "{p}");
        // Still waiting at the time asked: counted up to then.
        l.offer(Time(20_000_000), 1000);
        l.offer(Time(20_000_000), 1000);
        assert_eq!(l.queue_nonempty_ns(Time(20_000_400)), Some(1_800_400));
    }

    #[test]
    fn an_unlimited_link_keeps_no_queue_stats() {
        let mut l = Link::new(LinkConfig::TRANSPARENT);
        l.enable_queue_stats();
        l.offer(Time(3), 1500);
        assert!(l.delay_histogram().is_none());
        assert_eq!(l.queue_nonempty_ns(Time(10)), None);
    }

    proptest! {
        /// Random offers to a monitored byte-limited link: the queue never
        /// holds more than the limit, the log never goes back in time, and
        /// every offered byte is served, dropped or still queued.
        #[test]
        fn random_offers_keep_the_queue_within_its_limit_the_log_in_order_and_the_bytes_conserved(
            offers in proptest::collection::vec((0u64..3_000_000, 40u32..1500), 1..400),
            limit in 1500u64..20_000,
            rate in 1_000_000u64..20_000_000,
        ) {
            let mut l = link(rate, BufferLimit::Bytes(limit));
            l.enable_monitor();
            l.enable_queue_stats();
            let mut offers = offers;
            offers.sort();
            let mut offered = 0u64;
            let mut log = Vec::new();
            for (i, &(t, b)) in offers.iter().enumerate() {
                l.offer(Time(t), b);
                offered += b as u64;
                if i % 7 == 0 {
                    log.extend(l.drain_log(Time(t)));
                }
                let (_, queued) = l.occupancy(Time(t));
                prop_assert!(queued <= limit);
                let s = l.stats_so_far();
                // The packet in service counts as served (it left the queue).
                prop_assert_eq!(s.served_bytes + s.dropped_bytes + queued, offered);
            }
            log.extend(l.drain_log(Time::MAX));
            prop_assert!(log.windows(2).all(|w| w[0].time <= w[1].time));
            prop_assert!(log.iter().all(|r| r.bytes_left <= limit));
            let s = l.stats(Time::MAX);
            prop_assert_eq!(s.served_bytes + s.dropped_bytes, offered);
            prop_assert_eq!(log.last().map_or(0, |r| r.served_bytes), s.served_bytes);
            prop_assert_eq!(l.delay_histogram().unwrap().count(), s.served_packets);
        }
    }

    proptest! {
        /// Conservation and utilisation: every offered packet is served or dropped
        /// (or still waiting), and the wire never carries more than capacity allows.
        #[test]
        fn offered_equals_served_plus_dropped_plus_waiting_and_utilisation_is_at_most_one(
            arrivals in proptest::collection::vec((0u64..2_000_000, 40u32..1500), 1..300),
            limit in 1u32..20,
        ) {
            let rate = 10_000_000;
            let mut l = link(rate, BufferLimit::Packets(limit));
            let mut times: Vec<_> = arrivals.clone();
            times.sort();
            let mut first_dequeue = None;
            let mut last_finish = Time::ZERO;
            for (t, b) in &times {
                if let Offer::Departs { dequeue, arrival } = l.offer(Time(*t), *b) {
                    first_dequeue.get_or_insert(dequeue);
                    prop_assert!(dequeue >= Time(*t));
                    prop_assert!(arrival >= last_finish);
                    last_finish = Time(arrival.0 - 10_000_000);
                }
            }
            let mid = Time(times[times.len() / 2].0);
            let (waiting, _) = l.occupancy(mid);
            let s = l.stats_so_far();
            prop_assert_eq!(s.arrived_packets, s.served_packets + s.dropped_packets + waiting as u64);
            prop_assert!(waiting <= limit);
            let s = l.stats(Time::MAX);
            prop_assert_eq!(s.arrived_packets, s.served_packets + s.dropped_packets);
            // Bits served over the busy span never exceed capacity x span.
            let span = last_finish - first_dequeue.unwrap();
            prop_assert!((s.served_bytes * 8) as u128 * 1_000_000_000 <= rate as u128 * span.0 as u128 + rate as u128);
        }
    }
}
