//! The event queue: events ordered by `(time, sequence number)`.
//!
//! Time jumps from one event to the next; there is no tick. The sequence
//! number breaks ties in insertion order, which makes the order of
//! simultaneous events — and so the whole run — deterministic.
//!
//! The heap holds only 24-byte keys; events live in a slab of reusable slots,
//! so sifting moves small keys and steady-state runs allocate nothing.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key {
    time: u64,
    seq: u64,
    slot: u32,
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest first.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A priority queue of `E` by `(time, insertion order)`.
#[derive(Debug)]
pub(crate) struct EventQueue<E> {
    heap: BinaryHeap<Key>,
    slots: Vec<Option<E>>,
    free: Vec<u32>,
    next_seq: u64,
}

impl<E> EventQueue<E> {
    pub(crate) fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(256),
            slots: Vec::with_capacity(256),
            free: Vec::with_capacity(256),
            next_seq: 0,
        }
    }

    /// Schedules `event` at `time`, after every event already scheduled then.
    pub(crate) fn push(&mut self, time: u64, event: E) {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(event);
                slot
            }
            None => {
                self.slots.push(Some(event));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 pending events")
            }
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Key { time, seq, slot });
    }

    /// The time of the earliest event, if any.
    pub(crate) fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|k| k.time)
    }

    /// Removes and returns the earliest event with its time.
    pub(crate) fn pop(&mut self) -> Option<(u64, E)> {
        let key = self.heap.pop()?;
        let event = self.slots[key.slot as usize].take();
        self.free.push(key.slot);
        event.map(|e| (key.time, e))
    }

    /// How many events are pending.
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
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
