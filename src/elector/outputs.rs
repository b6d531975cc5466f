//! The elector's queue of outputs, kept inside the elector.
//!
//! Why not a `VecDeque`: its buffer is a separate allocation, and in a
//! simulated fleet of 10 000 electors that buffer is a cache line of its own
//! that every request writes — measured, the hottest instruction of sending a
//! request. An elector queues one to three outputs per input and the host
//! drains them all before the next input, so they fit inline; a host that
//! does not drain spills to the heap and loses nothing.

use smallvec::SmallVec;

use super::ElectorOutput;

/// A first-in first-out queue of outputs, inline up to three.
#[derive(Clone, Debug, Default)]
pub(super) struct Outputs {
    queued: SmallVec<[ElectorOutput; 3]>,
    /// How many of `queued` were already taken (their places are dead
    /// placeholders until the queue empties and is cleared).
    taken: usize,
}

impl Outputs {
    #[inline]
    pub(super) fn push_back(&mut self, output: ElectorOutput) {
        self.queued.push(output);
    }

    #[inline]
    pub(super) fn pop_front(&mut self) -> Option<ElectorOutput> {
        if self.taken == self.queued.len() {
            // Drained: reuse the places from the front.
            self.queued.clear();
            self.taken = 0;
            return None;
        }
        // The placeholder left behind is never read: only places at
        // `taken` and after are outputs.
        let placeholder = ElectorOutput::LeaderObserved { leader: None };
        let output = std::mem::replace(&mut self.queued[self.taken], placeholder);
        self.taken += 1;
        Some(output)
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

    #[test]
    fn first_in_first_out_inline_and_spilled() {
        let mut q = Outputs::default();
        for round in 0..3 {
            // Two, then ten (spilled), interleaving pops with pushes.
            let n = if round == 1 { 10 } else { 2 };
            for i in 1..=n {
                q.push_back(release(i));
            }
            assert_eq!(q.pop_front(), Some(release(1)));
            q.push_back(release(n + 1));
            for i in 2..=n + 1 {
                assert_eq!(q.pop_front(), Some(release(i)));
            }
            assert_eq!(q.pop_front(), None);
            assert_eq!(q.pop_front(), None);
            assert!(q.queued.is_empty(), "a drained queue reuses its places");
        }
    }
}
