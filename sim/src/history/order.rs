//! Store decisions in the stores' own order.
//!
//! A process records a store's answer when it arrives, some time after the
//! store decided — much later if the process is starved (a paused process, a
//! busy scheduler) or the answer waits behind a slow one on the same
//! connection. Merged by their recording times, two answers can then appear
//! in the opposite order of the decisions, and the checker judges a history
//! the store never made:
//!
//! * **Downstream decisions.** An older token's write accepted *before* a
//!   newer one's, but recorded after it, reads as split-brain the downstream
//!   never allowed. A downstream that numbers its decisions (`decision`: the
//!   PostgreSQL tables draw it from a sequence in the write's own statement)
//!   removes the doubt ([`in_decision_order`]).
//! * **Lease decisions.** A release answered behind a renewal sent just
//!   before it (one connection: the answers come back in order, and the
//!   elector's tasks record them in either order) reads as a renewal of a
//!   released lease (`token-monotonic`), and the renewal then overlaps the
//!   successor's grant (`lease-exclusive`). Every grant, renewal and dated
//!   release carries the store's clock at its decision (`store_now_ns`); the
//!   PostgreSQL store reads it behind the role's lock and never lets it run
//!   backwards, so on one store it orders the decisions ([`in_store_order`]).
//!   Refusals (`held`) and undated releases keep their recorded place. A
//!   release with no answer at all counts as made when sent, but never
//!   before a renewal of the same term the process asked for before it
//!   ([`unanswered_release_points`]).
//!
//! Either way the ordered lines are put in that order, each at the latest
//! time the order allows: `t_k = min(recorded_j : j ≥ k in that order)`.
//! That time is never after the line's own recording, and never before the
//! decision was made (every later decision, hence this one, was made before
//! the later answer was recorded) — so a decision stays between its request
//! going out and its answer coming back, as the checker expects. Every other
//! line keeps its place; at equal times the earlier line of the recorded
//! merge goes first.
//!
//! The numbers (and the store times) of one set of histories must come from
//! one downstream (and one lease store): the lab's runs have one of each. A
//! decision number that repeats says they do not: the decisions are then
//! left in the order they were recorded, with a warning. Store times may tie
//! (the clock's resolution, or a clock stepped back and held at the role's
//! latest time): ties keep their recorded order.

use std::collections::{BTreeMap, BTreeSet};

use fenced::history::{Event, LeaseAnswer};

use super::Merged;

/// A number used twice: where (the index in the merge of the later line)
/// and the number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Repeated {
    pub(super) index: usize,
    pub(super) number: u64,
}

fn number(m: &Merged<'_>) -> Option<u64> {
    match m.event {
        Some(Event::WriteHandled { decision, .. }) => *decision,
        _ => None,
    }
}

/// The store's clock at a lease decision the checker judges (a grant, a
/// renewal, a dated release).
fn store_time(m: &Merged<'_>) -> Option<u64> {
    match m.event {
        Some(Event::LeaseHandled { store_now_ns, .. })
        | Some(Event::ReleaseHandled { store_now_ns, .. }) => *store_now_ns,
        _ => None,
    }
}

/// Puts the numbered decisions of `merged` (sorted by time, then file and
/// line) in number order, as the module explains; `Err` (and `merged`
/// unchanged) if a number repeats.
pub(super) fn in_decision_order(merged: &mut Vec<Merged<'_>>) -> Result<(), Repeated> {
    let mut numbered: Vec<(u64, usize)> = merged
        .iter()
        .enumerate()
        .filter_map(|(index, m)| number(m).map(|n| (n, index)))
        .collect();
    numbered.sort_unstable();
    if let Some(pair) = numbered.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        return Err(Repeated {
            index: pair[1].1.max(pair[0].1),
            number: pair[0].0,
        });
    }
    reorder(merged, &numbered);
    Ok(())
}

/// Puts the dated lease decisions of `merged` (sorted by time, then file
/// and line) in the order of the store's clock, ties in recorded order, as
/// the module explains.
pub(super) fn in_store_order(merged: &mut Vec<Merged<'_>>) {
    let mut dated: Vec<(u64, usize)> = merged
        .iter()
        .enumerate()
        .filter_map(|(index, m)| store_time(m).map(|t| (t, index)))
        .collect();
    // Unique keys (the index breaks ties), so unstable is stable here.
    dated.sort_unstable();
    reorder(merged, &dated);
}

/// Where the unanswered releases that cannot count as made when sent do
/// count: `after[i]` lists the releases (indices of `release-sent` lines)
/// made just after line `i`; `releases` is the set of them.
#[derive(Debug, Default)]
pub(super) struct DeferredReleases {
    pub(super) after: BTreeMap<usize, Vec<usize>>,
    pub(super) releases: BTreeSet<usize>,
}

/// An unanswered release (`unanswered`: indices of `release-sent` lines no
/// answer follows) counts as made when sent — the store may have freed the
/// lease at any moment from then — but never before a `renewed` answer of
/// the same process and token to a request it sent *before* the release:
/// a renewal finds the lease live, so the store made it before the release
/// freed it (whatever the order of their answers, or their absence). Such a
/// release is made just after the latest of those renewals in `merged`.
pub(super) fn unanswered_release_points(
    merged: &[Merged<'_>],
    unanswered: &BTreeSet<usize>,
) -> DeferredReleases {
    let mut deferred = DeferredReleases::default();
    if unanswered.is_empty() {
        return deferred;
    }
    // (file, request) → the line number of its `request-sent`.
    let mut sent_on_line: BTreeMap<(usize, u64), u64> = BTreeMap::new();
    // (file, token) → (line of the request, index in merged) of renewals.
    let mut renewals: BTreeMap<(usize, u64), Vec<(u64, usize)>> = BTreeMap::new();
    for (index, m) in merged.iter().enumerate() {
        match m.event {
            Some(Event::RequestSent { request, .. }) => {
                sent_on_line.insert((m.file, *request), m.line);
            }
            Some(Event::LeaseHandled {
                request,
                answer: LeaseAnswer::Renewed,
                token,
                ..
            }) => {
                if let Some(&line) = sent_on_line.get(&(m.file, *request)) {
                    renewals
                        .entry((m.file, token.get()))
                        .or_default()
                        .push((line, index));
                }
            }
            _ => {}
        }
    }
    for &release in unanswered {
        let m = &merged[release];
        let Some(Event::ReleaseSent { token }) = m.event else {
            continue;
        };
        let latest = renewals
            .get(&(m.file, token.get()))
            .into_iter()
            .flatten()
            .filter(|&&(line, _)| line < m.line)
            .map(|&(_, index)| index)
            .max();
        if let Some(after) = latest.filter(|&after| after > release) {
            deferred.after.entry(after).or_default().push(release);
            deferred.releases.insert(release);
        }
    }
    deferred
}

/// Moves the lines `order` names (`(key, index in merged)`, in the order
/// they must take) into that order, each at the latest time it allows; the
/// other lines keep their places.
fn reorder(merged: &mut Vec<Merged<'_>>, order: &[(u64, usize)]) {
    if order.len() < 2 || order.windows(2).all(|pair| pair[0].1 < pair[1].1) {
        return;
    }
    // `rank[index]`: the place of line `index` in the order.
    let mut rank = vec![usize::MAX; merged.len()];
    for (place, &(_, index)) in order.iter().enumerate() {
        rank[index] = place;
    }
    // The latest time the order allows each line.
    let mut times = vec![0_u64; order.len()];
    let mut latest = u64::MAX;
    for place in (0..order.len()).rev() {
        latest = latest.min(merged[order[place].1].at_ns);
        times[place] = latest;
    }
    let mut moved: Vec<Option<(usize, Merged<'_>)>> = Vec::new();
    moved.resize_with(order.len(), || None);
    let mut rest = Vec::with_capacity(merged.len() - order.len());
    for (index, mut m) in merged.drain(..).enumerate() {
        match rank[index] {
            usize::MAX => rest.push((index, m)),
            place => {
                m.at_ns = times[place];
                moved[place] = Some((index, m));
            }
        }
    }
    let mut moved = moved.into_iter().flatten().peekable();
    let mut rest = rest.into_iter().peekable();
    loop {
        let take_moved = match (moved.peek(), rest.peek()) {
            (Some((i, a)), Some((j, b))) => (a.at_ns, *i) < (b.at_ns, *j),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let next = if take_moved {
            moved.next()
        } else {
            rest.next()
        };
        if let Some((_, m)) = next {
            merged.push(m);
        }
    }
    debug_assert!(merged.windows(2).all(|w| w[0].at_ns <= w[1].at_ns));
}

#[cfg(test)]
mod tests {
    use super::*;
    use fenced::history::WriteVerdict;
    use fenced::{FencingToken, OwnerId};

    fn handled(writer: &str, token: u64, decision: Option<u64>) -> Event {
        Event::WriteHandled {
            writer: OwnerId::new(writer).expect("valid"),
            token: FencingToken::new(token).expect("non-zero"),
            unit: None,
            outcome: WriteVerdict::Accepted,
            highest: None,
            bound_to: None,
            decision,
        }
    }

    fn merged(events: &[(u64, Event)]) -> Vec<Merged<'_>> {
        events
            .iter()
            .enumerate()
            .map(|(line, (at_ns, event))| Merged {
                at_ns: *at_ns,
                file: 0,
                line: line as u64,
                event: Some(event),
            })
            .collect()
    }

    fn shape(merged: &[Merged<'_>]) -> Vec<(u64, String)> {
        merged
            .iter()
            .map(|m| {
                let what = match m.event {
                    Some(Event::WriteHandled {
                        writer, decision, ..
                    }) => format!("{writer}#{}", decision.unwrap_or(0)),
                    Some(other) => serde_json::to_string(other).unwrap_or_default(),
                    None => "end".to_string(),
                };
                (m.at_ns, what)
            })
            .collect()
    }

    // Proves: a starved writer's answer (decided first, recorded last)
    // moves back before the later decisions, to the latest time the order
    // allows, while unnumbered lines stay where they were.
    #[test]
    fn a_late_record_moves_back_to_its_place_in_the_number_order() {
        let events = [
            (10, handled("a", 1, Some(1))),
            (20, Event::ProcessStarted),
            (30, handled("b", 2, Some(3))),
            (40, handled("b", 2, Some(4))),
            (50, handled("a", 1, Some(2))),
            (60, handled("b", 2, Some(5))),
        ];
        let mut m = merged(&events);
        assert_eq!(in_decision_order(&mut m), Ok(()));
        let started = serde_json::to_string(&Event::ProcessStarted).expect("encodes");
        assert_eq!(
            shape(&m),
            vec![
                (10, "a#1".to_string()),
                (20, started),
                (30, "a#2".to_string()),
                (30, "b#3".to_string()),
                (40, "b#4".to_string()),
                (60, "b#5".to_string()),
            ]
        );
    }

    // Proves: in number order already, nothing moves; unnumbered decisions
    // keep their recorded place; a repeated number leaves everything as
    // recorded and names the later line.
    #[test]
    fn in_order_nothing_moves_and_a_repeat_changes_nothing() {
        let events = [
            (10, handled("a", 1, Some(7))),
            (20, handled("c", 1, None)),
            (30, handled("b", 2, Some(9))),
        ];
        let mut m = merged(&events);
        let before = shape(&m);
        assert_eq!(in_decision_order(&mut m), Ok(()));
        assert_eq!(shape(&m), before);

        let events = [
            (10, handled("a", 1, Some(4))),
            (20, handled("b", 2, Some(3))),
            (30, handled("a", 1, Some(4))),
        ];
        let mut m = merged(&events);
        let before = shape(&m);
        assert_eq!(
            in_decision_order(&mut m),
            Err(Repeated {
                index: 2,
                number: 4
            })
        );
        assert_eq!(shape(&m), before);
    }
}
