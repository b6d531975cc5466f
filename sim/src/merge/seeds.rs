//! Which seeds of a shard were seen, kept as runs of consecutive seeds of
//! the shard (a step of `shards` apart) — a complete shard is one run,
//! whatever its size — and the missing ones described the same way.

use std::collections::BTreeMap;

use crate::explore::SeedRange;

/// What inserting a seed found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Insert {
    /// A seed not seen before.
    New,
    /// A seed already seen.
    Repeat,
    /// A seed that cannot belong to the same shard as those before it (not
    /// a multiple of the step away from them).
    OffStep,
}

/// The seeds seen of one shard: runs `first..=last` of seeds `step` apart,
/// keyed by their first seed. Seeds arriving in order (as a shard writes
/// them) extend one run: memory grows with the gaps, not with the seeds.
#[derive(Clone, Debug)]
pub(crate) struct SeedRuns {
    step: u64,
    residue: Option<u64>,
    runs: BTreeMap<u64, u64>,
    count: u64,
}

impl SeedRuns {
    /// No seed yet, of a shard whose seeds are `step` apart (its shard count).
    pub(crate) fn new(step: u64) -> Self {
        SeedRuns {
            step: step.max(1),
            residue: None,
            runs: BTreeMap::new(),
            count: 0,
        }
    }

    /// How many different seeds were seen.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The smallest and largest seed seen.
    pub(crate) fn bounds(&self) -> Option<(u64, u64)> {
        let first = *self.runs.keys().next()?;
        let last = *self.runs.values().next_back()?;
        Some((first, last))
    }

    /// Records `seed`.
    pub(crate) fn insert(&mut self, seed: u64) -> Insert {
        let step = self.step;
        match self.residue {
            None => self.residue = Some(seed % step),
            Some(r) if r != seed % step => return Insert::OffStep,
            Some(_) => {}
        }
        let before = self.runs.range(..=seed).next_back().map(|(&f, &l)| (f, l));
        if let Some((_, last)) = before {
            if seed <= last {
                return Insert::Repeat;
            }
        }
        let next_first = seed.checked_add(step);
        let after = next_first.and_then(|n| self.runs.get(&n).map(|&l| (n, l)));
        let extends_before = before.filter(|(_, last)| last.checked_add(step) == Some(seed));
        match (extends_before, after) {
            (Some((first, _)), Some((next, next_last))) => {
                self.runs.remove(&next);
                self.runs.insert(first, next_last);
            }
            (Some((first, _)), None) => {
                self.runs.insert(first, seed);
            }
            (None, Some((next, next_last))) => {
                self.runs.remove(&next);
                self.runs.insert(seed, next_last);
            }
            (None, None) => {
                self.runs.insert(seed, seed);
            }
        }
        self.count += 1;
        Insert::New
    }

    /// The seeds of `plan` not seen, as runs (`first`, `last`), in order;
    /// at most `limit` of them, with how many seeds are missing in all.
    /// `plan` must be the shard these seeds belong to (its step is theirs).
    pub(crate) fn missing(&self, plan: &SeedRange, limit: usize) -> (Vec<(u64, u64)>, u64) {
        let (Some(first), Some(last)) = (plan.nth(0), plan.last()) else {
            return (Vec::new(), 0);
        };
        let total = plan.len().saturating_sub(self.count);
        let step = self.step;
        let mut gaps = Vec::new();
        let mut next = Some(first);
        for (&run_first, &run_last) in self.runs.range(first..=last) {
            if gaps.len() >= limit {
                break;
            }
            if let Some(from) = next {
                if run_first > from {
                    gaps.push((from, run_first - step));
                }
            }
            next = run_last.checked_add(step).filter(|n| *n <= last);
        }
        if let Some(from) = next {
            if gaps.len() < limit && from <= last {
                gaps.push((from, last));
            }
        }
        (gaps, total)
    }
}

/// The seeds `first, first + step, …, last` in a few words: `7`, `7, 11`,
/// or `7, 11, …, 99 (24 seeds)`.
pub(crate) fn describe_run(first: u64, last: u64, step: u64) -> String {
    let count = (last - first) / step.max(1) + 1;
    match count {
        1 => format!("{first}"),
        2 => format!("{first}, {last}"),
        _ => format!(
            "{first}, {}, …, {last} ({} seeds)",
            first + step,
            thousands(count)
        ),
    }
}

/// An integer with thin groups of three digits (`1 000 000`), for messages.
pub(crate) fn thousands(n: impl Into<u128>) -> String {
    let digits = n.into().to_string();
    let mut out = String::with_capacity(digits.len() * 4 / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(start: u64, count: u64, shard: u64, shards: u64) -> SeedRange {
        SeedRange {
            start,
            count,
            shard,
            shards,
        }
    }

    #[test]
    fn seeds_in_order_make_one_run_and_a_full_shard_misses_nothing() {
        let p = plan(10, 1000, 3, 4);
        let mut s = SeedRuns::new(4);
        for seed in p.seeds() {
            assert_eq!(s.insert(seed), Insert::New);
        }
        assert_eq!(s.runs.len(), 1);
        assert_eq!(s.count(), 250);
        assert_eq!(s.missing(&p, 10), (vec![], 0));
        assert_eq!(s.insert(13), Insert::Repeat);
        assert_eq!(s.insert(14), Insert::OffStep);
    }

    #[test]
    fn seeds_out_of_order_join_up_and_gaps_are_named() {
        let p = plan(0, 100, 1, 10);
        let mut s = SeedRuns::new(10);
        for seed in [41, 21, 1, 31, 81] {
            assert_eq!(s.insert(seed), Insert::New);
        }
        assert_eq!(s.runs.len(), 3, "{:?}", s.runs);
        assert_eq!(s.missing(&p, 10), (vec![(11, 11), (51, 71), (91, 91)], 5));
        assert_eq!(s.missing(&p, 1), (vec![(11, 11)], 5));
        assert_eq!(s.bounds(), Some((1, 81)));
        let empty = SeedRuns::new(10);
        assert_eq!(empty.missing(&p, 3), (vec![(1, 91)], 10));
    }

    #[test]
    fn runs_are_described_compactly() {
        assert_eq!(describe_run(7, 7, 4), "7");
        assert_eq!(describe_run(7, 11, 4), "7, 11");
        assert_eq!(
            describe_run(2, 9_999_998, 4),
            "2, 6, …, 9999998 (2 500 000 seeds)"
        );
        assert_eq!(thousands(999u64), "999");
        assert_eq!(thousands(1000u64), "1 000");
    }

    #[test]
    fn the_largest_seeds_do_not_overflow() {
        let mut s = SeedRuns::new(u64::MAX);
        assert_eq!(s.insert(u64::MAX), Insert::New);
        assert_eq!(s.insert(u64::MAX), Insert::Repeat);
        let p = plan(u64::MAX, 1, 0, 1);
        let mut t = SeedRuns::new(1);
        assert_eq!(t.missing(&p, 3), (vec![(u64::MAX, u64::MAX)], 1));
        t.insert(u64::MAX);
        assert_eq!(t.missing(&p, 3), (vec![], 0));
    }
}
