//! A queue monitor: one record per dequeue, as E1/E4 log the bottleneck.

use torrentlab_engine::Time;

/// The state of a link's queue right after a packet left it for the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueRecord {
    /// When the packet was dequeued (started serialisation).
    pub time: Time,
    /// Bytes still waiting in the queue after this dequeue (wire bytes).
    pub bytes_left: u64,
    /// Packets still waiting after this dequeue.
    pub packets_left: u32,
    /// Packets dequeued so far, this one included.
    pub served_packets: u64,
    /// Wire bytes dequeued so far, this one included.
    pub served_bytes: u64,
    /// Packets dropped on arrival so far (strictly before `time`).
    pub dropped_packets: u64,
}

/// Every dequeue of one link, in time order.
#[derive(Clone, Debug, Default)]
pub struct QueueLog {
    pub records: Vec<QueueRecord>,
}

/// Sub-buckets per doubling of the delay in a [`DelayHistogram`], as a power of two.
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;

/// The queueing delays (whole ns) of the packets a link served, in
/// log-spaced buckets: delays under 32 ns each have their own bucket, and
/// every doubling above is split into 16 equal buckets, so a bucket is at most
/// 1/16 of its lower edge wide. A quantile is reported as the middle of the
/// bucket that holds it, hence within **1/32 (3.125 %) of the exact
/// quantile** of the sample (nearest-rank definition; exact below 32 ns).
///
/// Recording is a leading-zero count, a shift and an increment. The counters
/// grow to the largest bucket used so far (at most 976 of them, 7.8 kB; 450,
/// 3.6 kB, for delays up to a second), so a link only pays memory for the
/// delays it saw, and a delay never allocates unless it is the longest yet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DelayHistogram {
    counts: Vec<u64>,
    total: u64,
}

impl DelayHistogram {
    /// The bucket of a delay of `ns`.
    #[inline]
    pub fn bucket(ns: u64) -> usize {
        if ns < 2 * SUB {
            return ns as usize;
        }
        let e = 63 - ns.leading_zeros(); // >= SUB_BITS + 1
        (((e - SUB_BITS + 1) as usize) << SUB_BITS) + ((ns >> (e - SUB_BITS)) & (SUB - 1)) as usize
    }

    /// Lowest delay (ns) in bucket `b` and the bucket's width (ns).
    pub fn bucket_range(b: usize) -> (u64, u64) {
        if (b as u64) < 2 * SUB {
            return (b as u64, 1);
        }
        let e = (b >> SUB_BITS) as u32 + SUB_BITS - 1;
        let sub = b as u64 & (SUB - 1);
        let width = 1u64 << (e - SUB_BITS);
        ((SUB + sub) * width, width)
    }

    /// Counts one delay of `ns`.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let b = Self::bucket(ns);
        if b >= self.counts.len() {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        self.total += 1;
    }

    /// Delays recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The `q` quantile (0 < q <= 1) in ns: the middle of the bucket holding
    /// the delay of rank `ceil(q x count)` in increasing order; None when empty.
    pub fn quantile_ns(&self, q: f64) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, w) = Self::bucket_range(b);
                return Some(lo as f64 + (w - 1) as f64 / 2.0);
            }
        }
        unreachable!("the counts sum to the total")
    }

    /// The buckets that counted anything: (lowest delay ns, width ns, count),
    /// in increasing order of delay.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(b, &c)| {
            let (lo, w) = Self::bucket_range(b);
            (lo, w, c)
        })
    }

    /// Bytes of counters held.
    pub fn heap_bytes(&self) -> usize {
        self.counts.capacity() * 8
    }
}

/// What a capacity-limited link keeps about its queue besides the counters
/// (see [`crate::Link::enable_queue_stats`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct QueueStats {
    pub delays: DelayHistogram,
    /// Time during which at least one packet was waiting (ns), up to `covered`.
    pub nonempty_ns: u64,
    /// The end of the last stretch of time counted in `nonempty_ns`.
    pub covered: Time,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_buckets_that_counted_come_in_increasing_order_and_sum_to_the_count() {
        let mut h = DelayHistogram::default();
        for ns in [0, 0, 5, 1_000, 1_010, 2_000_000, 7] {
            h.record(ns);
        }
        let b: Vec<(u64, u64, u64)> = h.buckets().collect();
        assert_eq!(b.iter().map(|x| x.2).sum::<u64>(), h.count());
        assert!(b.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0), "{b:?}");
        assert_eq!(b[0], (0, 1, 2), "two packets waited 0");
        assert!(b.iter().any(|&(lo, w, c)| lo <= 2_000_000 && 2_000_000 < lo + w && c == 1));
    }

    #[test]
    fn every_delay_falls_in_the_bucket_whose_range_holds_it() {
        let probes = (0..64).flat_map(|e| {
            let p = 1u64 << e;
            [p.saturating_sub(1), p, p + 1, p + p / 3, p.saturating_mul(3) / 2]
        });
        for ns in probes.chain([0, u64::MAX]) {
            let b = DelayHistogram::bucket(ns);
            let (lo, w) = DelayHistogram::bucket_range(b);
            assert!(lo <= ns && ns - lo < w, "{ns} in bucket {b} = [{lo}, {lo} + {w})");
            assert!(w == 1 || w * 16 <= lo, "bucket {b} is at most 1/16 of its lower edge wide");
        }
        assert_eq!(DelayHistogram::bucket(u64::MAX), 975);
    }

    #[test]
    fn the_p95_from_the_histogram_is_within_one_thirty_second_of_the_exact_p95() {
        // A synthetic sample: a mix of idle-link zeros, sub-microsecond waits
        // and a heavy tail up to seconds.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut sample = Vec::new();
        for i in 0..50_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            sample.push(match i % 5 {
                0 => 0,
                1 => x % 1000,
                _ => (x % 1_000_000) * (1 + (x >> 40) % 2000),
            });
        }
        let mut h = DelayHistogram::default();
        sample.iter().for_each(|&s| h.record(s));
        sample.sort_unstable();
        for q in [0.5, 0.9, 0.95, 0.99, 1.0] {
            let exact = sample[(q * sample.len() as f64).ceil() as usize - 1] as f64;
            let est = h.quantile_ns(q).unwrap();
            assert!((est - exact).abs() <= exact / 32.0, "q {q}: histogram {est} vs exact {exact}");
        }
        assert_eq!(h.count(), 50_000);
        assert_eq!(DelayHistogram::default().quantile_ns(0.95), None);
    }

    proptest! {
        /// The documented error bound holds for any sample and quantile.
        #[test]
        fn any_quantile_is_within_one_thirty_second_of_the_exact_one(
            sample in proptest::collection::vec(0u64..1u64 << 45, 1..400),
            q in 0.01f64..1.0,
        ) {
            let mut h = DelayHistogram::default();
            sample.iter().for_each(|&s| h.record(s));
            let mut sorted = sample.clone();
            sorted.sort_unstable();
            let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
            let exact = sorted[rank - 1] as f64;
            let est = h.quantile_ns(q).unwrap();
            prop_assert!((est - exact).abs() <= exact / 32.0, "{} vs {}", est, exact);
        }
    }
}
