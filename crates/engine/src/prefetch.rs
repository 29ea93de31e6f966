//! Software prefetch: a hint to start loading memory that an event a little
//! later will read.
//!
//! A swarm's connections are far larger than the caches, and the packets in
//! a lane are known before their turn comes. Asking for the next packets'
//! state a few events ahead overlaps those loads with the work in between
//! instead of waiting for each in turn. A hint never changes results.

/// Starts loading the cache lines of the `bytes` bytes at `p` (no-op off x86-64).
#[inline(always)]
pub fn prefetch_bytes<T>(p: *const T, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // Every line the span touches, from the one holding its first byte.
        let p = p as *const i8;
        let lead = p as usize % 64;
        let mut off = 0;
        while off < lead + bytes {
            // SAFETY: a prefetch is a hint that never faults, whatever the
            // address; nothing is read through the pointer.
            unsafe { _mm_prefetch(p.wrapping_sub(lead).wrapping_add(off), _MM_HINT_T0) };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, bytes);
}

/// Starts loading `*r`.
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    prefetch_bytes(r as *const T, std::mem::size_of::<T>());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefetch_of_any_address_is_harmless_and_changes_nothing() {
        let v = vec![7u64; 100];
        prefetch_bytes(v.as_ptr(), 800);
        prefetch(&v[99]);
        prefetch_bytes(std::ptr::null::<u8>(), 4096); // never dereferenced
        prefetch_bytes(usize::MAX as *const u8, 128);
        assert!(v.iter().all(|&x| x == 7));
    }
}
