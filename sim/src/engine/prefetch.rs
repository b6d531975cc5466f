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

// ----- what the engine prefetches -----

use super::queue::Stage;
use super::{Address, Engine, Envelope, Event, Hint, Hosts};
use crate::observation::Observer;

/// The hint of an event for no process: nothing to prefetch.
const NO_PROCESS: u32 = u32::MAX;
/// Set in the hint of a message to a server from a process (the rest of
/// the hint is its sender's slot): the server reads the sender's `Life`.
const SENDER: u32 = 1 << 31;

impl<M: Envelope, T> Hint for Event<M, T> {
    /// The process the event is for (its slot), or that sent a message to a
    /// server (with [`SENDER`]), or [`NO_PROCESS`].
    #[inline(always)]
    fn hint(&self) -> u32 {
        match self {
            Event::Deliver {
                to: Address::Process { pid, .. },
                ..
            }
            | Event::Timer {
                to: Address::Process { pid, .. },
                ..
            } => *pid,
            Event::Deliver {
                to: Address::Server(_),
                msg,
                ..
            } => msg.sender().map_or(NO_PROCESS, |pid| pid | SENDER),
            Event::Timer { .. } | Event::Control(_) => NO_PROCESS,
        }
    }
}

impl<H: Hosts, O: Observer> Engine<H, O> {
    /// Prefetches what the next events will read (see
    /// [`EventQueue::upcoming`](super::queue::EventQueue::upcoming) for
    /// which): their slots in the queue, their processes' `Life` rows and,
    /// for a whole one, what the hosts and the observers say of its
    /// process (or, for a message to a server, its sender's owner-id text,
    /// which the lease store compares); for the next timer, what the
    /// observers' rows of its process point to. In a large fleet each of these rows
    /// is a cache miss; asked for an event or two ahead, the misses overlap
    /// with the handling of the events before. A hint: no outcome changes
    /// (`sim/src/engine/prefetch.rs`).
    #[inline(always)]
    pub(super) fn prefetch_upcoming(&self) {
        self.queue.upcoming(|slot, hint, stage| {
            if hint == NO_PROCESS {
                prefetch_lines(slot, 1);
                return;
            }
            let pid = hint & !SENDER;
            if stage == Stage::Behind {
                if hint & SENDER == 0 {
                    self.observers.prefetch_near(pid);
                }
                return;
            }
            prefetch_lines(slot, 1);
            self.lives.prefetch(pid);
            self.streams.prefetch(pid);
            if stage == Stage::Rows {
                return;
            }
            if hint & SENDER == 0 {
                self.hosts.prefetch(pid);
                self.observers.prefetch(pid);
            } else {
                self.lives.prefetch_owner(pid);
            }
        });
    }
}
