//! Transparent huge pages for the large arrays a run jumps around in.
//!
//! A swarm of 300 peers keeps about 16,000 connections (some 24 MB) and
//! touches a different one with almost every packet. With 4 KiB pages nearly
//! every such touch also misses the TLB; 2 MiB pages cover the whole array
//! with a few dozen entries. Linux gives a region huge pages when asked with
//! `madvise(MADV_HUGEPAGE)` (or always, if so configured); elsewhere this
//! does nothing. It changes memory layout only, never results.
//!
//! [`advise`] does it for one array (a chunk of the connection table); [`HugePageHeap`], a global
//! allocator a binary opts into, does it for the whole heap:
//! `#[global_allocator] static A: torrentlab_sim::HugePageHeap = torrentlab_sim::HugePageHeap;`.
//! `TORRENTLAB_HUGEPAGES=0` in the environment turns all of it off.
//!
//! All of it is behind the cargo feature `hugepages` of this crate, off by
//! default here and on for the Python extension and the `bench` example.
//! Without it the same functions exist and do nothing, and [`HugePageHeap`] is
//! the system allocator, so call sites need no `cfg`.
//!
//! What it is worth (Rust runner, `--features hugepages` against without,
//! `python3 bench/ab.py OFF ON`, runs alternating on one core, AMD EPYC host
//! shared with another build, THP `madvise`, 2026-11-27): 0.814x (95 %
//! interval 0.723-0.917) on the 10 MB E0 variant in 8 rounds, 0.900x
//! (0.804-1.007) on the 3 MB variant in 16 rounds.

pub(crate) use imp::advise;
pub use imp::{adopt_heap, HugePageHeap};

/// The mechanism (the `hugepages` feature).
#[cfg(feature = "hugepages")]
mod imp {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};

    /// Bytes in a huge page on x86-64 and most arm64 kernels.
    const HUGE: usize = 2 << 20;

    /// The whole huge pages inside `bytes` bytes from address `start`, as
    /// (first address, length); `None` if there is none.
    fn huge_range(start: usize, bytes: usize) -> Option<(usize, usize)> {
        let (a, b) = ((start + HUGE - 1) & !(HUGE - 1), (start + bytes) & !(HUGE - 1));
        (b > a).then(|| (a, b - a))
    }

    /// Whether to ask for huge pages: 0 not yet known, 1 yes, 2 no.
    static ENABLED: AtomicU8 = AtomicU8::new(0);

    /// Huge pages are asked for unless `TORRENTLAB_HUGEPAGES=0` (read once).
    /// Reads the environment with `getenv`, which does not allocate, so the
    /// allocator may call it.
    fn enabled() -> bool {
        match ENABLED.load(Relaxed) {
            1 => true,
            2 => false,
            _ => {
                #[cfg(target_os = "linux")]
                // SAFETY: `getenv` returns null or a NUL-terminated string that
                // stays valid while the environment is not changed; only its
                // first byte is read, at once.
                let off = unsafe {
                    let v = libc::getenv(c"TORRENTLAB_HUGEPAGES".as_ptr());
                    !v.is_null() && *v == b'0' as libc::c_char
                };
                #[cfg(not(target_os = "linux"))]
                let off = true;
                ENABLED.store(if off { 2 } else { 1 }, Relaxed);
                !off
            }
        }
    }

    /// Asks for huge pages under the 2 MiB-aligned part of `v`'s buffer.
    pub(crate) fn advise<T>(v: &Vec<T>) {
        if !enabled() {
            return;
        }
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

    /// `MADV_COLLAPSE` (Linux 6.1, the same value on every architecture; the
    /// `libc` crate defines it for glibc targets only).
    #[cfg(target_os = "linux")]
    const MADV_COLLAPSE: libc::c_int = 25;

    /// Puts the heap the process has already filled on huge pages, once per
    /// process: asks for them under every `[heap]` mapping and collapses the
    /// 2 MiB ranges already in use (`MADV_COLLAPSE`), where Linux allows
    /// (errors are ignored: an old kernel or THP off leaves the pages as they
    /// are).
    ///
    /// [`HugePageHeap`] advises the heap only from its own first allocation
    /// on. In a Python process the interpreter and the libraries it imported
    /// have filled tens of megabytes of heap before that on 4 KiB pages, and
    /// glibc hands the blocks they freed there to the simulation's small
    /// objects (client connection tables, bitfields, request lists), which a
    /// run then reads all over. The Python extension calls this before a run.
    pub fn adopt_heap() {
        use std::sync::atomic::AtomicBool;
        static DONE: AtomicBool = AtomicBool::new(false);
        if !enabled() || DONE.swap(true, Relaxed) {
            return;
        }
        #[cfg(target_os = "linux")]
        {
            let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return };
            for line in maps.lines().filter(|l| l.ends_with("[heap]")) {
                let Some((a, b)) = line.split_whitespace().next().and_then(|r| r.split_once('-')) else { continue };
                let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) else { continue };
                let Some((lo, len)) = huge_range(a, b - a) else { continue };
                // SAFETY: the range lies inside a mapping of this process;
                // MADV_HUGEPAGE and MADV_COLLAPSE change how pages are backed,
                // never their contents.
                unsafe {
                    libc::madvise(lo as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
                    for at in (lo..lo + len).step_by(HUGE) {
                        // One huge page at a time: a range with none of its
                        // pages in use is refused, and must not stop the rest.
                        libc::madvise(at as *mut libc::c_void, HUGE, MADV_COLLAPSE);
                    }
                }
            }
        }
    }

    // ---------------------------------------------------------------------------
    // [`HugePageHeap`]: the system allocator, asking for transparent huge pages
    // under the heap as it grows.
    //
    // The connection array is not all a run jumps around in: client connection
    // tables, bitfields, frame queues and event slots are tens of megabytes of
    // small objects on the heap. glibc can put its heap on huge pages itself
    // (`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`) but reads that only at process
    // start, which a library loaded into Python cannot arrange. This allocator
    // does the same from inside: it lets the heap grow in steps of `TOP_PAD`
    // bytes (`mallopt(M_TOP_PAD)`), so each step holds whole 2 MiB pages, and
    // `madvise(MADV_HUGEPAGE)`s every step, and every large block, the first time
    // it hands out memory there. It covers glibc's main arena (the heap of the
    // process's first thread, where runs happen) and large blocks; other
    // threads' arenas are left as they are. Elsewhere than Linux it is the
    // system allocator.
    // ---------------------------------------------------------------------------

    /// How much the heap grows by beyond a request: 16 MiB, 8 huge pages.
    #[cfg(target_os = "linux")]
    const TOP_PAD: i32 = 16 << 20;

    /// The system allocator with the heap on transparent huge pages (see the
    /// module documentation).
    pub struct HugePageHeap;

    /// Blocks ending below this address lie in heap already advised (0: none yet).
    static ADVISED_END: AtomicUsize = AtomicUsize::new(0);

    // SAFETY: every call is forwarded unchanged to `System`; the only addition is
    // advice about how pages are backed, which never changes memory contents.
    unsafe impl GlobalAlloc for HugePageHeap {
        #[inline]
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let p = unsafe { System.alloc(layout) };
            seen(p, layout.size());
            p
        }

        #[inline]
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            let p = unsafe { System.alloc_zeroed(layout) };
            seen(p, layout.size());
            p
        }

        #[inline]
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            unsafe { System.dealloc(ptr, layout) }
        }

        #[inline]
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            if new_size >= HUGE && enabled() {
                // SAFETY: as `GlobalAlloc::realloc` requires of its caller:
                // `ptr` is a live block of `layout`, and `new_size` with its
                // alignment is a valid layout.
                return unsafe { realloc_advised(ptr, layout, new_size) };
            }
            let p = unsafe { System.realloc(ptr, layout, new_size) };
            seen(p, new_size);
            p
        }
    }

    /// A large block grown: a new block, advised before anything is written to
    /// it, then the contents moved over. `System.realloc` would copy them into
    /// fresh pages first (glibc: a new mapping, a copy, the old one unmapped),
    /// faulting them in as 4 KiB pages before the advice could come; a large
    /// array then jumped around in (the swarm's connection table, once it
    /// outgrows its first capacity) missed the TLB on most touches from there on.
    ///
    /// # Safety
    /// As [`GlobalAlloc::realloc`].
    #[cold]
    #[inline(never)]
    unsafe fn realloc_advised(ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees a valid layout of `new_size` at this
        // alignment; the copy stays within both blocks (the smaller size), which
        // do not overlap (the new one is live while the old one is), and the old
        // block is freed once, with its own layout.
        unsafe {
            let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
            let p = System.alloc(new_layout);
            if p.is_null() {
                return p; // the old block stays live, as realloc promises
            }
            seen(p, new_size);
            std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
            System.dealloc(ptr, layout);
            p
        }
    }

    /// A block was handed out: the cheap check whether it lies in new ground.
    #[inline(always)]
    fn seen(p: *mut u8, size: usize) {
        if (p as usize).wrapping_add(size) > ADVISED_END.load(Relaxed) && !p.is_null() {
            advise_new(p as usize, size);
        }
    }

    #[cfg(target_os = "linux")]
    #[cold]
    #[inline(never)]
    fn advise_new(p: usize, size: usize) {
        if !enabled() {
            ADVISED_END.store(usize::MAX, Relaxed); // never here again
            return;
        }
        // SAFETY: `sbrk(0)` only reads the current break; `mallopt` and `madvise`
        // change allocation policy and page backing, never contents, and no call
        // here allocates. A refusal (THP off, a hole in the range) is harmless.
        unsafe {
            let brk = libc::sbrk(0) as usize;
            let end = ADVISED_END.load(Relaxed);
            if p < brk && p + size <= brk {
                // The main arena's heap, grown past what was advised.
                if end == 0 {
                    libc::mallopt(libc::M_TOP_PAD, TOP_PAD);
                }
                // `end < p + size <= brk` (else no call here), so `lo < brk`.
                let lo = end.max(p & !(HUGE - 1));
                libc::madvise(lo as *mut libc::c_void, brk - lo, libc::MADV_HUGEPAGE);
                ADVISED_END.store(brk, Relaxed);
            } else if let Some((a, len)) = huge_range(p, size) {
                // A block of its own (mmap'd) holding whole huge pages.
                libc::madvise(a as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn advise_new(_: usize, _: usize) {}

    #[cfg(test)]
    mod tests {
        use super::*;

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

        #[test]
        fn adopting_the_heap_keeps_what_is_on_it_and_a_second_call_does_nothing() {
            let v: Vec<u64> = (0..(3 * HUGE / 8) as u64).map(|i| i * 7).collect();
            adopt_heap();
            adopt_heap();
            assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 * 7));
        }

        #[test]
        fn blocks_from_the_huge_page_heap_keep_their_contents_through_growth_and_release() {
            let a = HugePageHeap;
            let small = Layout::from_size_align(48, 8).unwrap();
            let big = Layout::from_size_align(5 * HUGE, 64).unwrap();
            // SAFETY: each block is used within its layout and freed once with it.
            unsafe {
                let p = a.alloc(small);
                assert!(!p.is_null());
                p.write_bytes(0xab, 48);
                let q = a.alloc_zeroed(big);
                assert!(!q.is_null() && (q as usize).is_multiple_of(64));
                assert!((0..5 * HUGE).step_by(4093).all(|i| *q.add(i) == 0), "zeroed means zeroed");
                q.add(HUGE).write(7);
                let r = a.realloc(q, big, 9 * HUGE);
                assert_eq!(*r.add(HUGE), 7, "realloc keeps the contents");
                assert!((r as usize).is_multiple_of(64), "and the alignment");
                r.add(9 * HUGE - 1).write(9);
                assert!((0..48).all(|i| *p.add(i) == 0xab));
                let s = a.realloc(r, Layout::from_size_align(9 * HUGE, 64).unwrap(), 2 * HUGE);
                assert_eq!(*s.add(HUGE), 7, "a large block shrunk keeps what fits");
                a.dealloc(s, Layout::from_size_align(2 * HUGE, 64).unwrap());
                a.dealloc(p, small);
            }
        }
    }
}

/// Without the `hugepages` feature: the same interface, doing nothing.
#[cfg(not(feature = "hugepages"))]
mod imp {
    use std::alloc::{GlobalAlloc, Layout, System};

    /// Does nothing (the `hugepages` feature is off).
    #[inline(always)]
    pub(crate) fn advise<T>(_: &Vec<T>) {}

    /// Does nothing (the `hugepages` feature is off).
    pub fn adopt_heap() {}

    /// The system allocator (the `hugepages` feature is off).
    pub struct HugePageHeap;

    // SAFETY: every call is forwarded unchanged to `System`.
    unsafe impl GlobalAlloc for HugePageHeap {
        #[inline]
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            unsafe { System.alloc(layout) }
        }

        #[inline]
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            unsafe { System.alloc_zeroed(layout) }
        }

        #[inline]
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            unsafe { System.dealloc(ptr, layout) }
        }

        #[inline]
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn without_the_feature_advise_changes_nothing_and_the_heap_is_the_system_allocator() {
            let v: Vec<u64> = (0..100_000).collect();
            advise(&v);
            adopt_heap();
            assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
            let layout = Layout::from_size_align(4096, 64).unwrap();
            // SAFETY: the block is used within its layout and freed once with it.
            unsafe {
                let p = HugePageHeap.alloc_zeroed(layout);
                assert!(!p.is_null() && (0..4096).all(|i| *p.add(i) == 0));
                p.write(5);
                let q = HugePageHeap.realloc(p, layout, 8192);
                assert_eq!(*q, 5);
                HugePageHeap.dealloc(q, Layout::from_size_align(8192, 64).unwrap());
            }
        }
    }
}
