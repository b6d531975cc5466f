//! The one software prefetch of the crate (and its one `unsafe` block).
//!
//! Why: a 10 000-node fleet runs in step, so between a process's request
//! and its answer the other nodes' rows pass through the cache, and every
//! row an event touches is a miss. The engine knows its next events, so
//! while it handles one it asks the CPU to bring in the rows the next ones
//! will read (see `Engine::prefetch_upcoming`).

/// Asks the CPU to bring the cache line holding `p` into the cache. Never
/// changes what the program computes: a hint, no more.
#[inline(always)]
#[allow(unsafe_code)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` is a hint. It never faults — not on a dangling,
    // unmapped or null address — reads nothing the program sees and writes
    // nothing; it only moves a line into the cache. SSE, the intrinsic's
    // target feature, is in every x86_64 CPU (part of the architecture's
    // baseline, which the compiler assumes).
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// [`prefetch`] of the first `lines` cache lines from `p` (a row aligned to
/// a line).
#[inline(always)]
pub(crate) fn prefetch_lines<T>(p: *const T, lines: usize) {
    let bytes = p.cast::<u8>();
    for line in 0..lines {
        // `wrapping_add`: the address is only a hint, never dereferenced.
        prefetch(bytes.wrapping_add(line * 64));
    }
}
