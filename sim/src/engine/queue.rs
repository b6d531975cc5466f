//! The event queue: events ordered by `(time, sequence number)`.
//!
//! Time jumps from one event to the next; there is no tick. The sequence
//! number breaks ties in insertion order, which makes the order of
//! simultaneous events — and so the whole run — deterministic.
//!
//! The heaps hold only 16-byte keys; events live in a slab of reusable slots,
//! so sifting moves small keys and steady-state runs allocate nothing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::calendar::Calendar;
use super::prefetch::prefetch_lines;
use crate::time::SimTime;

/// Bits of a key that hold the slot index: at most 2^24 (16.7 M) pending
/// events, a limit no realistic run approaches (a 500-node fleet keeps about
/// two thousand).
const SLOT_BITS: u32 = 24;
const SLOT_MASK: u128 = (1 << SLOT_BITS) - 1;
/// How much [`EventQueue::upcoming`] asks to prefetch of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Its slot and its process's `Life` row.
    Rows,
    /// Those, and every row its handling reads.
    Whole,
    /// What those rows point to (they were asked for before).
    Behind,
}

/// How far ahead in the calendar's sorted run [`EventQueue::upcoming`]
/// prefetches a timer's rows: far enough that its misses overlap with the
/// handling of the events before it.
const RUN_AHEAD: usize = 2;
/// The most events a queue may hold at once.
pub(crate) const MAX_PENDING: usize = 1 << SLOT_BITS;

/// A priority queue of `E` by `(time, insertion order)`.
///
/// Each heap entry is one `u128`: the time in the top 64 bits, the sequence
/// number in the next 40, the slot of the event in the low 24. Ordering keys
/// is then a single integer comparison, and `(time, sequence)` decides it
/// because sequence numbers are unique. Events live in a slab of reusable
/// slots, so sifting moves 16-byte keys and steady-state runs allocate
/// nothing. (A radix heap was tried and measured slower at every fleet size
/// of the benchmark; so was a 4-ary heap.)
///
/// Keys live in two queues: `soon` for events the caller says come soon
/// ([`push_soon`](Self::push_soon): messages in flight, due within a
/// latency) and `later` for the rest (timers, due in seconds; a binary heap
/// that becomes a calendar of buckets when a fleet keeps thousands, see
/// [`Calendar`]). A message is
/// due before nearly every timer, so in one heap it would sift up to the
/// root on every push and down from it on every pop; in a heap of the few
/// messages in flight it moves a level or two. A pop takes the smaller of
/// the two minimums: the keys are unique, so the order of events is exactly
/// that of one heap.
#[derive(Debug)]
pub(crate) struct EventQueue<E> {
    soon: BinaryHeap<Reverse<u128>>,
    later: Calendar,
    slots: Vec<Slot<E>>,
    /// Each slot's event's [`Hint`], beside the slab: 4 bytes a slot, so
    /// that the hints of the next events are warm where their slots are
    /// cold.
    hints: Vec<u32>,
    free: Vec<u32>,
    next_seq: u64,
}

/// What the queue keeps of an event beside its slot: a number its owner
/// (the engine) reads back for the next events, to prefetch the rows their
/// handling will read ([`upcoming`](EventQueue::upcoming)). Only a hint: it
/// changes no order and no outcome.
pub(crate) trait Hint {
    /// The event's hint.
    fn hint(&self) -> u32;
}

/// A slot of the slab: one event, aligned to a cache line. The fenced
/// protocol's event is 64 bytes, and in a slab aligned as a `Vec` aligns it
/// (8 bytes) most slots straddled two lines: a timer's slot, cold after
/// seconds in the calendar, cost two cache misses to read where one line
/// holds it (measured with cachegrind on a 10 000-node fleet).
#[derive(Debug)]
#[repr(align(64))]
struct Slot<E>(Option<E>);

impl<E: Hint> EventQueue<E> {
    pub(crate) fn new() -> Self {
        EventQueue {
            soon: BinaryHeap::with_capacity(64),
            later: Calendar::with_capacity(256),
            slots: Vec::with_capacity(256),
            hints: Vec::with_capacity(256),
            free: Vec::with_capacity(256),
            next_seq: 0,
        }
    }

    /// Schedules `event` at `time`, after every event already scheduled then.
    ///
    /// # Panics
    /// If [`MAX_PENDING`] events are already pending, or after 2^40 pushes —
    /// bounds a simulation reaches only through a bug.
    #[inline]
    pub(crate) fn push(&mut self, time: SimTime, event: E) {
        let key = self.key(time, event);
        self.later.push(key);
    }

    /// [`push`](Self::push) for an event due soon (a message in flight):
    /// the same order, a cheaper heap (see the type's documentation).
    #[inline]
    pub(crate) fn push_soon(&mut self, time: SimTime, event: E) {
        let key = self.key(time, event);
        self.soon.push(Reverse(key));
    }

    /// Stores `event` in a slot and returns its key.
    #[inline]
    fn key(&mut self, time: SimTime, event: E) -> u128 {
        // Hints are kept only while the queue is large (see `is_large`):
        // a slot filled before holds a stale one, which at worst prefetches
        // a line for nothing.
        let hint = if self.is_large() { event.hint() } else { 0 };
        let slot = match self.free.pop() {
            Some(slot) => {
                if self.is_large() {
                    self.hints[slot as usize] = hint;
                }
                // A free slot is empty (`pop` took its event): it is filled
                // in place, with no old event to drop first.
                let entry = &mut self.slots[slot as usize].0;
                match entry {
                    None => *entry = Some(event),
                    Some(_) => unreachable!("a free slot holds no event"),
                }
                slot
            }
            None => {
                assert!(
                    self.slots.len() < MAX_PENDING,
                    "more than 2^24 pending events"
                );
                self.slots.push(Slot(Some(event)));
                self.hints.push(hint);
                (self.slots.len() - 1) as u32
            }
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        assert!(seq < 1 << 40, "more than 2^40 events scheduled");
        (u128::from(time.as_nanos()) << 64) | (u128::from(seq) << SLOT_BITS) | u128::from(slot)
    }

    /// The smallest key, and whether it is in `soon`.
    #[inline]
    fn first(&self) -> Option<(u128, bool)> {
        match (self.soon.peek(), self.later.peek()) {
            (Some(&Reverse(soon)), Some(later)) => Some(if soon < later {
                (soon, true)
            } else {
                (later, false)
            }),
            (Some(&Reverse(soon)), None) => Some((soon, true)),
            (None, Some(later)) => Some((later, false)),
            (None, None) => None,
        }
    }

    /// Writes every pending event in the order it will be handled, each
    /// with its due time, for a state's fingerprint. The sequence numbers
    /// are left out: only their order decides anything (a later push gets
    /// a larger one whatever the counter's value), and that order is the
    /// order written. Where each key lives (`soon`, the calendar's heap,
    /// run or wheel) and which slot holds an event change no outcome and
    /// are left out too.
    pub(crate) fn write_pending(&self, w: &mut dyn std::fmt::Write) -> std::fmt::Result
    where
        E: std::fmt::Debug,
    {
        let mut keys: Vec<u128> = self.soon.iter().map(|&Reverse(key)| key).collect();
        self.later.keys(&mut keys);
        keys.sort_unstable();
        for key in keys {
            let event = &self.slots[(key & SLOT_MASK) as usize].0;
            write!(w, "{}:{:?};", (key >> 64) as u64, event)?;
        }
        Ok(())
    }

    /// The time of the earliest event, if any.
    #[inline]
    pub(crate) fn peek_time(&self) -> Option<SimTime> {
        self.first()
            .map(|(key, _)| SimTime::from_nanos((key >> 64) as u64))
    }

    /// The earliest event and its time, left in place.
    pub(crate) fn peek(&self) -> Option<(SimTime, &E)> {
        let (key, _) = self.first()?;
        let event = self.slots[(key & SLOT_MASK) as usize].0.as_ref()?;
        Some((SimTime::from_nanos((key >> 64) as u64), event))
    }

    /// Removes and returns the earliest event with its time (the tests'
    /// way; the engine pops in two steps, see [`pop_slot`](Self::pop_slot)).
    #[cfg(test)]
    pub(crate) fn pop(&mut self) -> Option<(SimTime, E)> {
        let (time, slot) = self.pop_slot()?;
        self.take(slot).map(|e| (time, e))
    }

    /// Removes the earliest event's key: its time and its slot, whose event
    /// [`take`](Self::take) then moves out. Two steps so that the caller
    /// moves the event straight from its slot into place: returned inside a
    /// `(time, event)` pair, it is copied once more at an offset, and that
    /// copy stalled on reading back what it had just written (measured:
    /// the hottest instruction of the explore loop).
    #[inline]
    pub(crate) fn pop_slot(&mut self) -> Option<(SimTime, u32)> {
        let (_, soon) = self.first()?;
        let key = if soon {
            self.soon.pop()?.0
        } else {
            self.later.pop()?
        };
        let slot = (key & SLOT_MASK) as u32;
        self.free.push(slot);
        Some((SimTime::from_nanos((key >> 64) as u64), slot))
    }

    /// What to prefetch for the next events, given to `f` as (slot
    /// address, hint, [`Stage`]): `soon`'s first key (the next message)
    /// whole, its root's two children only their slots and `Life` rows,
    /// and of `later`'s sorted run the key [`RUN_AHEAD`] places ahead
    /// whole, and its next key what its rows point to. A timer is prefetched once, that far ahead: asked for
    /// the run's next keys at every event (each key three times), the
    /// prefetches cost about 150 instructions an event, most of them for
    /// lines already on their way (callgrind, 10 000-node fleet). Then
    /// prefetches the slot the next push after the one taking the warm
    /// slot just freed would fill. Reads only warm memory: the heap's
    /// first level, the run, the hints and the free list's top.
    #[inline(always)]
    pub(crate) fn upcoming(&self, mut f: impl FnMut(*const u8, u32, Stage)) {
        let mut hinted = |key: u128, stage: Stage| {
            let slot = (key & SLOT_MASK) as usize;
            f(
                self.slots.as_ptr().wrapping_add(slot).cast(),
                self.hints[slot],
                stage,
            );
        };
        let soon = self.soon.as_slice();
        if let Some(&Reverse(key)) = soon.first() {
            hinted(key, Stage::Whole);
            for &Reverse(key) in soon.iter().skip(1).take(2) {
                hinted(key, Stage::Rows);
            }
        }
        if let Some(key) = self.later.run_ahead(RUN_AHEAD) {
            hinted(key, Stage::Whole);
        }
        if let Some(key) = self.later.run_ahead(0) {
            hinted(key, Stage::Behind);
        }
        // The free list's top is the slot just popped (warm); the one below
        // it was freed earlier and may be cold (a push reads its slot to
        // find it empty).
        if let Some(&slot) = self.free.len().checked_sub(2).map(|i| &self.free[i]) {
            prefetch_lines(self.slots.as_ptr().wrapping_add(slot as usize), 1);
        }
    }

    /// Whether the queue holds thousands of timers
    /// ([`Calendar::is_large`]):
    /// then its slots and its events' rows no longer fit in the cache, and
    /// [`upcoming`](Self::upcoming) is worth its instructions (a 500-node
    /// fleet, whose rows stay in the cache, ran 30 % more instructions
    /// with it, callgrind).
    #[inline(always)]
    pub(crate) fn is_large(&self) -> bool {
        self.later.is_large()
    }

    /// The event in `slot`, moved out (see [`pop_slot`](Self::pop_slot)).
    #[inline]
    pub(crate) fn take(&mut self, slot: u32) -> Option<E> {
        self.slots[slot as usize].0.take()
    }

    /// How many events are pending.
    pub(crate) fn len(&self) -> usize {
        self.soon.len() + self.later.len()
    }

    /// The pending events, in no particular order (slot order). For reports,
    /// never for the loop.
    pub(crate) fn pending(&self) -> impl Iterator<Item = &E> {
        self.slots.iter().filter_map(|slot| slot.0.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Hint for &str {
        fn hint(&self) -> u32 {
            0
        }
    }

    impl Hint for u64 {
        fn hint(&self) -> u32 {
            *self as u32
        }
    }

    #[test]
    fn pops_by_time_then_insertion_order() {
        let mut q = EventQueue::new();
        let t = SimTime::from_nanos;
        q.push(t(5), "c");
        q.push(t(1), "a");
        q.push(t(5), "d");
        q.push(t(1), "b");
        let order: Vec<_> = std::iter::from_fn(|| q.pop())
            .map(|(time, e)| (time.as_nanos(), e))
            .collect();
        assert_eq!(order, vec![(1, "a"), (1, "b"), (5, "c"), (5, "d")]);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn the_queue_matches_a_sorted_order_under_random_monotone_use() {
        use crate::rng::{uniform_inclusive, SeedDeriver};
        let mut rng = SeedDeriver::new(3, "queue").rng();
        let mut q = EventQueue::new();
        let mut model: Vec<(u64, u64)> = Vec::new();
        let mut now = 0u64;
        let mut id = 0u64;
        for _ in 0..20_000 {
            if uniform_inclusive(&mut rng, 0, 2) > 0 || model.is_empty() {
                // Either heap, whatever the time: the order is the keys'.
                let time = now + uniform_inclusive(&mut rng, 0, 1_000_000_000);
                if uniform_inclusive(&mut rng, 0, 1) == 0 {
                    q.push(SimTime::from_nanos(time), id);
                } else {
                    q.push_soon(SimTime::from_nanos(time), id);
                }
                model.push((time, id));
                id += 1;
            } else {
                // The model's minimum by (time, insertion order).
                let (i, _) = model.iter().enumerate().min_by_key(|(_, e)| **e).unwrap();
                let expected = model.remove(i);
                assert_eq!(q.peek_time(), Some(SimTime::from_nanos(expected.0)));
                assert_eq!(q.pop(), Some((SimTime::from_nanos(expected.0), expected.1)));
                now = expected.0;
            }
            assert_eq!(q.len(), model.len());
        }
    }

    #[test]
    fn slots_are_reused() {
        let mut q = EventQueue::new();
        for round in 0..100u64 {
            q.push(SimTime::from_nanos(round), round);
            q.push(SimTime::from_nanos(round), round);
            q.pop();
            q.pop();
        }
        assert_eq!(q.slots.len(), 2);
    }
}
