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

use crate::monitor::{QueueLog, QueueRecord};

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
