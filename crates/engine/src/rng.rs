//! One random stream per simulated entity.
//!
//! Each stream is a xoshiro256++ generator seeded from `(run seed, entity id)`
//! through SplitMix64 mixing, so streams are independent of each other and of the
//! order in which entities are created.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Identifies a random stream within a run. By convention the high 16 bits say
/// what kind of entity owns it (host, flow, link...) and the low bits which one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntityId(pub u64);

impl EntityId {
    /// Builds an id from a kind tag and an index.
    pub const fn new(kind: u16, index: u64) -> Self {
        EntityId(((kind as u64) << 48) | (index & 0x0000_FFFF_FFFF_FFFF))
    }
}

/// SplitMix64 finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
#[inline]
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A per-entity random stream.
#[derive(Clone, Debug)]
pub struct EntityRng {
    inner: Xoshiro256PlusPlus,
}

impl EntityRng {
    /// The stream of `entity` in a run with seed `run_seed`.
    pub fn new(run_seed: u64, entity: EntityId) -> Self {
        let mixed = splitmix64(splitmix64(run_seed) ^ splitmix64(entity.0.rotate_left(17) ^ 0x5EED));
        EntityRng { inner: Xoshiro256PlusPlus::seed_from_u64(mixed) }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.inner.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p` (a Bernoulli trial). `p <= 0` never, `p >= 1` always.
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            false
        } else if p >= 1.0 {
            true
        } else {
            self.uniform() < p
        }
    }

    /// Uniform integer in `[lo, hi]` (inclusive), without modulo bias
    /// (Lemire's multiply-shift with rejection).
    ///
    /// A draw is kept when the low half of `x * n` is at most
    /// `zone = 2^64 - 1 - (2^64 mod n)`. Since `2^64 mod n < n`, every low
    /// half up to `2^64 - 1 - n` is inside the zone, so the division that
    /// finds the zone's exact end runs only for the other `n` values out of
    /// `2^64` (the same draws are kept as with it computed first).
    #[inline]
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi);
        let span = hi - lo;
        if span == u64::MAX {
            return self.next_u64();
        }
        let n = span + 1;
        let m = (self.next_u64() as u128) * (n as u128);
        if (m as u64) <= u64::MAX - n {
            return lo + (m >> 64) as u64;
        }
        self.range_slow(lo, n, m)
    }

    /// Shuffles `items` in place: Fisher-Yates from the back, one
    /// [`EntityRng::range_inclusive`] draw per position after the first.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.range_inclusive(0, i as u64) as usize;
            items.swap(i, j);
        }
    }

    /// [`EntityRng::range_inclusive`] past its fast test: `m` is the first
    /// draw times `n`, whose low half may fall outside the zone.
    #[cold]
    fn range_slow(&mut self, lo: u64, n: u64, mut m: u128) -> u64 {
        let zone = u64::MAX - (u64::MAX - n + 1) % n;
        while (m as u64) > zone {
            m = (self.next_u64() as u128) * (n as u128);
        }
        lo + (m >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shuffle_is_a_permutation_drawn_from_the_back_one_draw_per_position() {
        let (mut a, mut b) = (EntityRng::new(7, EntityId::new(1, 2)), EntityRng::new(7, EntityId::new(1, 2)));
        let mut xs: Vec<u32> = (0..50).collect();
        a.shuffle(&mut xs);
        let mut ys: Vec<u32> = (0..50).collect();
        for i in (1..ys.len()).rev() {
            let j = b.range_inclusive(0, i as u64) as usize;
            ys.swap(i, j);
        }
        assert_eq!(xs, ys);
        assert_ne!(xs, (0..50).collect::<Vec<_>>());
        xs.sort_unstable();
        assert_eq!(xs, (0..50).collect::<Vec<_>>());
        assert_eq!(a.next_u64(), b.next_u64(), "the same number of draws");
    }

    #[test]
    fn the_same_seed_and_entity_give_the_same_stream() {
        let mut a = EntityRng::new(7, EntityId::new(1, 3));
        let mut b = EntityRng::new(7, EntityId::new(1, 3));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn different_entities_and_seeds_give_different_streams() {
        let first = |seed, e| EntityRng::new(seed, e).next_u64();
        let base = first(7, EntityId::new(1, 3));
        assert_ne!(base, first(7, EntityId::new(1, 4)));
        assert_ne!(base, first(7, EntityId::new(2, 3)));
        assert_ne!(base, first(8, EntityId::new(1, 3)));
    }

    #[test]
    fn uniform_stays_in_the_unit_interval_and_has_mean_near_one_half() {
        let mut r = EntityRng::new(1, EntityId(0));
        let n = 100_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let u = r.uniform();
            assert!((0.0..1.0).contains(&u));
            sum += u;
        }
        assert!((sum / n as f64 - 0.5).abs() < 0.01);
    }

    #[test]
    fn bernoulli_hits_its_probability_within_sampling_error() {
        let mut r = EntityRng::new(2, EntityId(5));
        let n = 200_000;
        let hits = (0..n).filter(|_| r.bernoulli(0.05)).count();
        let p = hits as f64 / n as f64;
        // 5 standard errors of a binomial proportion.
        assert!((p - 0.05).abs() < 5.0 * (0.05f64 * 0.95 / n as f64).sqrt(), "p = {p}");
    }

    /// The textbook form the fast path must agree with draw for draw.
    fn reference_range(r: &mut EntityRng, lo: u64, hi: u64) -> u64 {
        let n = hi - lo + 1;
        let zone = u64::MAX - (u64::MAX - n + 1) % n;
        loop {
            let m = (r.next_u64() as u128) * (n as u128);
            if (m as u64) <= zone {
                return lo + (m >> 64) as u64;
            }
        }
    }

    #[test]
    fn range_inclusive_draws_what_the_division_first_form_draws() {
        // Spans up to 2^63 + 1 make the slow path (a low half above
        // 2^64 - 1 - n) common enough to be taken here.
        let spans = [1u64, 2, 3, 7, 80, 1 << 20, (1 << 62) + 3, (1 << 63) + 1, u64::MAX - 1];
        let (mut a, mut b) = (EntityRng::new(4, EntityId(2)), EntityRng::new(4, EntityId(2)));
        for _ in 0..2_000 {
            for &n in &spans {
                assert_eq!(a.range_inclusive(0, n - 1), reference_range(&mut b, 0, n - 1), "span {n}");
                assert_eq!(a.range_inclusive(9, 9 + n % 1000), reference_range(&mut b, 9, 9 + n % 1000));
            }
        }
        assert_eq!(a.next_u64(), b.next_u64(), "both consumed the same draws");
    }

    #[test]
    fn range_inclusive_covers_both_ends_and_nothing_outside() {
        let mut r = EntityRng::new(3, EntityId(9));
        let mut seen = [false; 4];
        for _ in 0..1000 {
            let x = r.range_inclusive(10, 13);
            assert!((10..=13).contains(&x));
            seen[(x - 10) as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }
}
