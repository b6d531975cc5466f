//! The event queue: events ordered by `(time, sequence number)`.
//!
//! Time jumps from one event to the next; there is no tick. The sequence
//! number breaks ties in insertion order, which makes the order of
//! simultaneous events — and so the whole run — deterministic.
//!
//! The heap holds only 24-byte keys; events live in a slab of reusable slots,
//! so sifting moves small keys and steady-state runs allocate nothing.

/// Bits of a key that hold the slot index: at most 2^24 (16.7 M) pending
/// events, a limit no realistic run approaches (a 500-node fleet keeps about
/// two thousand).
const SLOT_BITS: u32 = 24;
const SLOT_MASK: u128 = (1 << SLOT_BITS) - 1;
/// The most events a queue may hold at once.
pub(crate) const MAX_PENDING: usize = 1 << SLOT_BITS;
/// Buckets of the radix heap: one per possible highest differing bit, plus
/// one for keys equal to the last key taken.
const BUCKETS: usize = 129;

/// A priority queue of `E` by `(time, insertion order)`.
///
/// Each key is one `u128`: the time in the top 64 bits, the sequence number in
/// the next 40, the slot of the event in the low 24. Comparing keys is a single
/// integer comparison, and `(time, sequence)` decides it because sequence
/// numbers are unique.
///
/// The queue is *monotone* — nothing is ever scheduled before the event being
/// handled — so it is a radix heap: a key lives in the bucket named by the
/// highest bit in which it differs from the last key taken. Pushing is O(1);
/// taking the minimum re-files the keys of one bucket into lower ones, and
/// each key descends at most 128 times in its life. In the simulator this is
/// several times faster than a binary heap at a few thousand pending events.
#[derive(Debug)]
pub(crate) struct EventQueue<E> {
    buckets: Vec<Vec<u128>>,
    /// Bit `i - 1` is set when bucket `i` (1..=128) holds keys, so finding
    /// the first non-empty bucket is one `trailing_zeros`.
    occupied: u128,
    /// The last key taken (all pending keys are greater).
    last: u128,
    len: usize,
    slots: Vec<Option<E>>,
    free: Vec<u32>,
    next_seq: u64,
}

#[inline]
fn bucket_of(key: u128, last: u128) -> usize {
    (128 - (key ^ last).leading_zeros()) as usize
}

impl<E> EventQueue<E> {
    pub(crate) fn new() -> Self {
        EventQueue {
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            occupied: 0,
            last: 0,
            len: 0,
            slots: Vec::with_capacity(256),
            free: Vec::with_capacity(256),
            next_seq: 0,
        }
    }

    /// Schedules `event` at `time`, after every event already scheduled then.
    /// `time` must not be before the last event taken (the queue is monotone).
    ///
    /// # Panics
    /// If [`MAX_PENDING`] events are already pending, after 2^40 pushes, or if
    /// `time` is in the past — bounds and rules a simulation breaks only
    /// through a bug.
    pub(crate) fn push(&mut self, time: u64, event: E) {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(event);
                slot
            }
            None => {
                assert!(
                    self.slots.len() < MAX_PENDING,
                    "more than 2^24 pending events"
                );
                self.slots.push(Some(event));
                (self.slots.len() - 1) as u32
            }
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        assert!(seq < 1 << 40, "more than 2^40 events scheduled");
        let key = (u128::from(time) << 64) | (u128::from(seq) << SLOT_BITS) | u128::from(slot);
        assert!(key >= self.last, "an event was scheduled in the past");
        self.file(key, self.last);
        self.len += 1;
    }

    #[inline]
    fn file(&mut self, key: u128, last: u128) {
        let bucket = bucket_of(key, last);
        self.buckets[bucket].push(key);
        if bucket > 0 {
            self.occupied |= 1 << (bucket - 1);
        }
    }

    /// Moves the smallest key into bucket 0, re-filing its bucket; returns it.
    fn settle(&mut self) -> Option<u128> {
        if let Some(&key) = self.buckets[0].last() {
            return Some(key);
        }
        if self.occupied == 0 {
            return None;
        }
        let index = self.occupied.trailing_zeros() as usize + 1;
        self.occupied &= !(1 << (index - 1));
        let bucket = std::mem::take(&mut self.buckets[index]);
        let min = bucket.iter().copied().min()?;
        self.last = min;
        for &key in &bucket {
            // Every key of bucket `index` shares its bits above `index` with
            // `min`, so it lands in a lower bucket.
            self.file(key, min);
        }
        // Give the emptied bucket its allocation back.
        let mut bucket = bucket;
        bucket.clear();
        self.buckets[index] = bucket;
        Some(min)
    }

    /// The time of the earliest event, if any.
    #[inline]
    pub(crate) fn peek_time(&mut self) -> Option<u64> {
        self.settle().map(|key| (key >> 64) as u64)
    }

    /// Removes and returns the earliest event with its time.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(u64, E)> {
        let key = self.settle()?;
        let taken = self.buckets[0].pop();
        debug_assert_eq!(taken, Some(key));
        self.len -= 1;
        let slot = (key & SLOT_MASK) as u32;
        let event = self.slots[slot as usize].take();
        self.free.push(slot);
        event.map(|e| ((key >> 64) as u64, e))
    }

    /// How many events are pending.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(5, "c");
        q.push(1, "a");
        q.push(5, "d");
        q.push(1, "b");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(1, "a"), (1, "b"), (5, "c"), (5, "d")]);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn a_radix_heap_matches_a_sorted_order_under_random_monotone_use() {
        use crate::rng::{uniform_inclusive, SeedDeriver};
        let mut rng = SeedDeriver::new(3, "queue").rng();
        let mut q = EventQueue::new();
        let mut model: Vec<(u64, u64)> = Vec::new();
        let mut now = 0u64;
        let mut id = 0u64;
        for _ in 0..20_000 {
            if uniform_inclusive(&mut rng, 0, 2) > 0 || model.is_empty() {
                let time = now + uniform_inclusive(&mut rng, 0, 1_000_000_000);
                q.push(time, id);
                model.push((time, id));
                id += 1;
            } else {
                // The model's minimum by (time, insertion order).
                let (i, _) = model.iter().enumerate().min_by_key(|(_, e)| **e).unwrap();
                let expected = model.remove(i);
                assert_eq!(q.peek_time(), Some(expected.0));
                assert_eq!(q.pop(), Some(expected));
                now = expected.0;
            }
            assert_eq!(q.len(), model.len());
        }
    }

    #[test]
    fn slots_are_reused() {
        let mut q = EventQueue::new();
        for round in 0..100u64 {
            q.push(round, round);
            q.push(round, round);
            q.pop();
            q.pop();
        }
        assert_eq!(q.slots.len(), 2);
    }
}
