//! Downstream decisions in the downstream's own order.
//!
//! A writer records a `write-handled` when its answer arrives, some time
//! after the downstream decided — much later if the writer is starved (a
//! paused process, a busy scheduler). Merged by their recording times, two
//! writers' answers can then appear in the opposite order of the decisions:
//! an older token's write accepted *before* a newer one's, but recorded
//! after it, reads as split-brain the downstream never allowed.
//!
//! A downstream that numbers its decisions (`decision`: the PostgreSQL
//! tables draw it from a sequence in the write's own statement) removes the
//! doubt. Numbered decisions are put in number order, each at the latest
//! time that order allows: `t_k = min(recorded_j : j ≥ k in number order)`.
//! That time is never after the decision's own answer was recorded, and
//! never before the decision was made (every later decision, hence this
//! one, was made before the later answer was recorded) — so a decision stays
//! between its write going out and its answer coming back, as the checker
//! expects. Every other line keeps its place; at equal times the earlier
//! line of the recorded merge goes first.
//!
//! The numbers of one set of histories must come from one downstream (the
//! lab's runs have one). A number that repeats says they do not: the
//! decisions are then left in the order they were recorded, with a warning.

use fenced::history::Event;

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

/// Puts the numbered decisions of `merged` (sorted by time, then file and
/// line) in number order, as the module explains; `Err` (and `merged`
/// unchanged) if a number repeats.
pub(super) fn in_decision_order(merged: &mut Vec<Merged<'_>>) -> Result<(), Repeated> {
    let mut numbered: Vec<(u64, usize)> = merged
        .iter()
        .enumerate()
        .filter_map(|(index, m)| number(m).map(|n| (n, index)))
        .collect();
    if numbered.len() < 2 {
        return Ok(());
    }
    numbered.sort_unstable();
    if let Some(pair) = numbered.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        return Err(Repeated {
            index: pair[1].1.max(pair[0].1),
            number: pair[0].0,
        });
    }
    // `rank[index]`: the place of line `index` among the numbered ones.
    let mut rank = vec![usize::MAX; merged.len()];
    for (place, &(_, index)) in numbered.iter().enumerate() {
        rank[index] = place;
    }
    // The latest time the number order allows each decision.
    let mut times = vec![0_u64; numbered.len()];
    let mut latest = u64::MAX;
    for place in (0..numbered.len()).rev() {
        latest = latest.min(merged[numbered[place].1].at_ns);
        times[place] = latest;
    }
    let mut moved: Vec<Option<(usize, Merged<'_>)>> = Vec::new();
    moved.resize_with(numbered.len(), || None);
    let mut rest = Vec::with_capacity(merged.len() - numbered.len());
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
    Ok(())
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
