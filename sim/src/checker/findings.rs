//! The one sink every part writes its findings into: the violations in the
//! order they were found (capped at [`MAX_VIOLATIONS_LISTED`], all of them
//! counted), and the coverage counters.
//!
//! One sink, not one list per part, because the report lists violations in
//! the order they happened across invariants: a part appends at the moment
//! it judges, so that order is the order of the observations (and, within
//! one observation, the order the checker hands it to the parts).

use crate::observation::SimTime;
use crate::report::{Coverage, Invariant, Violation, MAX_VIOLATIONS_LISTED};
use crate::units::ms;

/// What the parts found so far.
#[derive(Clone, Debug, Default)]
pub(super) struct Findings {
    /// Breaches in order, at most [`MAX_VIOLATIONS_LISTED`].
    violations: Vec<Violation>,
    /// All breaches, listed or not.
    total: u64,
    /// Split-brain writes among them.
    split_brain: u64,
    /// How often the interesting situations came up.
    pub(super) coverage: Coverage,
}

impl Findings {
    /// Records a breach of `invariant` found at `at`.
    pub(super) fn violate(
        &mut self,
        invariant: Invariant,
        at: SimTime,
        detail: String,
        events: Vec<String>,
    ) {
        if invariant == Invariant::SplitBrain {
            self.split_brain += 1;
        }
        self.record(Violation {
            invariant: invariant.name().to_string(),
            at_ms: ms(at),
            detail,
            events,
        });
    }

    /// Records a breach already written out (the verdict's `liveness`).
    pub(super) fn record(&mut self, violation: Violation) {
        self.total += 1;
        if self.violations.len() < MAX_VIOLATIONS_LISTED {
            self.violations.push(violation);
        }
        debug_assert!(self.violations.len() as u64 <= self.total);
    }

    /// The breaches listed, in the order found (for the parts' tests).
    #[cfg(test)]
    pub(super) fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// The breaches, the total, the split-brain total and the coverage.
    pub(super) fn into_parts(self) -> (Vec<Violation>, u64, u64, Coverage) {
        (self.violations, self.total, self.split_brain, self.coverage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Proves the sink lists the first [`MAX_VIOLATIONS_LISTED`] breaches in
    /// order and counts every one, split-brain writes apart.
    #[test]
    fn the_list_is_capped_in_order_and_every_breach_is_counted() {
        let mut sink = Findings::default();
        for i in 0..MAX_VIOLATIONS_LISTED + 5 {
            let invariant = if i % 2 == 0 {
                Invariant::SplitBrain
            } else {
                Invariant::SingleWriter
            };
            sink.violate(invariant, SimTime::ZERO, i.to_string(), Vec::new());
        }
        let (listed, total, split_brain, _) = sink.into_parts();
        assert_eq!(listed.len(), MAX_VIOLATIONS_LISTED);
        assert_eq!(listed[0].detail, "0");
        assert_eq!(listed[MAX_VIOLATIONS_LISTED - 1].detail, "99");
        assert_eq!(total, MAX_VIOLATIONS_LISTED as u64 + 5);
        assert_eq!(split_brain, 53);
    }
}
