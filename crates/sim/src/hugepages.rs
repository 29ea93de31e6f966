//! Transparent huge pages for the large arrays a run jumps around in.
//!
//! A swarm of 300 peers keeps about 16,000 connections (some 22 MB) and
//! touches a different one with almost every packet. With 4 KiB pages nearly
//! every such touch also misses the TLB; 2 MiB pages cover the whole array
//! with a few dozen entries. Linux gives a region huge pages when asked with
//! `madvise(MADV_HUGEPAGE)` (or always, if so configured); elsewhere this
//! does nothing. It changes memory layout only, never results.

/// Bytes in a huge page on x86-64 and most arm64 kernels.
const HUGE: usize = 2 << 20;

/// The whole huge pages inside `bytes` bytes from address `start`, as
/// (first address, length); `None` if there is none.
fn huge_range(start: usize, bytes: usize) -> Option<(usize, usize)> {
    let (a, b) = ((start + HUGE - 1) & !(HUGE - 1), (start + bytes) & !(HUGE - 1));
    (b > a).then(|| (a, b - a))
}

/// Asks for huge pages under the 2 MiB-aligned part of `v`'s buffer.
pub(crate) fn advise<T>(v: &Vec<T>) {
    let Some((a, len)) = huge_range(v.as_ptr() as usize, v.capacity() * std::mem::size_of::<T>()) else {
        return;
    };
    #[cfg(target_os = "linux")]
    // SAFETY: the range lies inside `v`'s live allocation; MADV_HUGEPAGE only
    // changes how the kernel backs it, not its contents. A refusal (THP off)
    // is harmless and ignored.
    unsafe {
        libc::madvise(a as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (a, len);
}

/// Pushes `x` onto `v`, asking for huge pages whenever the buffer moves.
#[inline]
pub(crate) fn push<T>(v: &mut Vec<T>, x: T) {
    let cap = v.capacity();
    v.push(x);
    if v.capacity() != cap {
        advise(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushing_through_growth_keeps_every_element_in_order() {
        let mut v = Vec::new();
        for i in 0..(3 * HUGE / 8) as u64 {
            push(&mut v, i);
        }
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    }

    #[test]
    fn only_whole_aligned_huge_pages_inside_the_buffer_are_advised() {
        assert_eq!(huge_range(HUGE, 3 * HUGE), Some((HUGE, 3 * HUGE)));
        assert_eq!(
            huge_range(HUGE + 1, 3 * HUGE),
            Some((2 * HUGE, 2 * HUGE)),
            "partial pages at both ends are left out"
        );
        assert_eq!(huge_range(HUGE + 1, HUGE), None, "straddles a boundary without covering a page");
        assert_eq!(huge_range(0, HUGE - 1), None);
    }

    #[test]
    fn a_buffer_smaller_than_a_huge_page_is_left_alone() {
        let v = vec![0u8; 1000];
        advise(&v); // nothing to align: no call, no panic
        assert_eq!(v.len(), 1000);
    }
}
