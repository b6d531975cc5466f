//! Spans computed from the report and the timeline for drawing: where two
//! processes believe they lead at once ([`overlaps`]), and where a process
//! believes it leads without the store giving it the lease ([`no_lease`]).

use std::collections::BTreeMap;

use crate::svg::time::NS_PER_MS;
use crate::timeline::{Belief, Timeline};

/// Intervals (start, end) where at least two terms overlap.
pub(super) fn overlaps(terms: &[Belief]) -> Vec<(u64, u64)> {
    let mut edges: Vec<(u64, i32)> = Vec::new();
    for t in terms {
        if t.end_ns > t.start_ns {
            edges.push((t.start_ns, 1));
            edges.push((t.end_ns, -1));
        }
    }
    // Ends before starts at the same instant: touching terms do not overlap.
    edges.sort();
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut depth = 0;
    let mut since = 0;
    for (t, d) in edges {
        let before = depth;
        depth += d;
        if before < 2 && depth >= 2 {
            since = t;
        } else if before >= 2 && depth < 2 && t > since {
            out.push((since, t));
        }
    }
    out
}

/// `[a, b)` minus a sorted list of intervals.
fn subtract(a: u64, b: u64, holes: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = a;
    for &(s, e) in holes {
        if e <= at || s >= b {
            continue;
        }
        if s > at {
            out.push((at, s));
        }
        at = at.max(e);
    }
    if at < b {
        out.push((at, b));
    }
    out
}

/// Where a process believed it led without the store giving it the lease:
/// `(term index, start, end)`, at least a millisecond long.
pub(super) fn no_lease(timeline: &Timeline) -> Vec<(usize, u64, u64)> {
    let mut truths: BTreeMap<(&str, u64), Vec<(u64, u64)>> = BTreeMap::new();
    for h in &timeline.truth {
        truths
            .entry((h.owner.as_str(), h.token))
            .or_default()
            .push((h.start_ns, h.end_ns));
    }
    let mut out = Vec::new();
    for (i, term) in timeline.beliefs.iter().enumerate() {
        // A protocol without tokens draws its truth with token 0.
        let held = truths
            .get(&(term.owner.as_str(), term.token))
            .or_else(|| truths.get(&(term.owner.as_str(), 0)))
            .map_or(&[][..], Vec::as_slice);
        for (s, e) in subtract(term.start_ns, term.end_ns, held) {
            if e - s >= NS_PER_MS {
                out.push((i, s, e));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlaps_need_two_believers() {
        let term = |s: u64, e: u64| Belief {
            node: "n".into(),
            owner: "n#1".into(),
            token: 1,
            start_ns: s * NS_PER_MS,
            end_ns: e * NS_PER_MS,
            end_reason: "x".into(),
        };
        assert_eq!(overlaps(&[term(0, 10), term(10, 20)]), vec![]);
        assert_eq!(
            overlaps(&[term(0, 10), term(5, 20)]),
            vec![(5 * NS_PER_MS, 10 * NS_PER_MS)]
        );
    }

    #[test]
    fn subtract_leaves_the_gaps() {
        assert_eq!(subtract(0, 10, &[(2, 4), (6, 12)]), vec![(0, 2), (4, 6)]);
        assert_eq!(subtract(0, 10, &[]), vec![(0, 10)]);
    }
}
