//! The elector's queue of outputs, kept inside the elector.
//!
//! Why not a bare `VecDeque`: its buffer is a separate allocation, and in a
//! simulated fleet of 10 000 electors that buffer is a cache line of its own
//! that every request writes — measured, the hottest instruction of sending a
//! request. An elector queues one to three outputs per input and the host
//! drains them all before the next input, so they fit in a ring inside the
//! elector; a host that does not drain spills to a `VecDeque` and loses
//! nothing.

use std::collections::VecDeque;

use super::ElectorOutput;

/// Places in the inline ring (a power of two: positions wrap by a mask).
const RING: usize = 4;

/// A first-in first-out queue of outputs: the oldest in an inline ring of
/// [`RING`], any beyond in `spill`.
///
/// Laid out in this order (`repr(C)`): what every push and pop reads (the
/// counts, whether anything spilled) before the ring, whose first place is
/// the one an input that queues a single output uses (an emptied ring starts
/// again at its first place), so that such an input touches one cache line
/// of it (when the queue starts 8 bytes or less into a line). The spill
/// comes last: `spilled` says whether it holds anything, so that a push or
/// a pop reads it only when it does (measured: reading the spill's length
/// cost a follower's request a cache miss in a 10 000-node fleet).
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub(super) struct Outputs {
    /// The ring's oldest place, and how many places hold an output.
    head: u8,
    len: u8,
    /// Whether `spill` holds any output.
    spilled: bool,
    ring: [Option<ElectorOutput>; RING],
    /// Outputs queued while the ring was full, all newer than the ring's:
    /// while it holds any, new outputs join it, so the order stays FIFO.
    spill: VecDeque<ElectorOutput>,
}

impl Outputs {
    #[inline]
    pub(super) fn push_back(&mut self, output: ElectorOutput) {
        let len = usize::from(self.len);
        if len == RING || self.spilled {
            self.spill.push_back(output);
            self.spilled = true;
            return;
        }
        let at = (usize::from(self.head) + len) % RING;
        debug_assert!(self.ring[at].is_none());
        self.ring[at] = Some(output);
        self.len += 1;
    }

    #[inline]
    pub(super) fn pop_front(&mut self) -> Option<ElectorOutput> {
        if self.len == 0 {
            if !self.spilled {
                return None;
            }
            let output = self.spill.pop_front();
            self.spilled = !self.spill.is_empty();
            return output;
        }
        let output = self.ring[usize::from(self.head)].take();
        debug_assert!(output.is_some(), "the ring's places from head hold outputs");
        self.head = ((usize::from(self.head) + 1) % RING) as u8;
        self.len -= 1;
        if self.len == 0 {
            // Empty: the next output goes to the first place, beside the
            // counts (any place would do; the order is the same).
            self.head = 0;
        }
        output
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::FencingToken;

    fn release(n: u64) -> ElectorOutput {
        ElectorOutput::Release {
            token: FencingToken::new(n).expect("tokens start at 1"),
        }
    }

    /// Against a `VecDeque`, with bursts that fit the ring, fill it, and
    /// spill past it, pops interleaved with pushes.
    #[test]
    fn first_in_first_out_in_the_ring_and_spilled() {
        let mut q = Outputs::default();
        let mut model = VecDeque::new();
        let mut next = 1;
        for burst in [1, 2, 3, 4, 5, 9, 2, 0, 7, 1, 4] {
            for _ in 0..burst {
                q.push_back(release(next));
                model.push_back(release(next));
                next += 1;
            }
            // Take about half, then the rest on every third burst.
            let take = if next % 3 == 0 {
                model.len()
            } else {
                model.len() / 2
            };
            for _ in 0..take {
                assert_eq!(q.pop_front(), model.pop_front());
            }
        }
        while let Some(expected) = model.pop_front() {
            assert_eq!(q.pop_front(), Some(expected));
        }
        assert_eq!(q.pop_front(), None);
        assert!(q.spill.is_empty() && !q.spilled && q.len == 0);
    }
}
