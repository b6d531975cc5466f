//! What the search deduplicates, and by which key: a schedule's whole
//! state right after its last fault began, with the choices still open.
//! The rule is stated in the module docs of [`super`], "What is and is not
//! deduplicated".

use std::collections::BTreeMap;

use super::candidates;
use super::schedule::{FaultChoice, Schedule};
use super::{hosts, nanos, Bounds, RunResult, VerifyError};
use crate::scenario::{ProtocolSpec, Scenario};
use crate::simulation::symmetry::Symmetry;
use crate::simulation::NotedInstants;

/// What the search deduplicates, stated in every result.
pub(super) const DEDUPLICATION: &str =
    "states: a schedule whose whole state (hosts, pending events, \
     network, clocks, RNG positions, the checker) right after its last fault began equals an \
     earlier schedule's there, with the same fault choices still open, is run but not extended \
     (every extension would repeat one of the earlier schedule's from that state on); no \
     symmetry reduction unless --symmetry (below); same-instant events of different hosts are not \
     reordered (partial-order reduction)";

/// What a search that cannot deduplicate says instead.
pub(super) const NO_DEDUPLICATION: &str =
    "none: deduplication applies to searches of faults alone, two or \
     more (a deviation, loss, copy or reorder may fall before the state compared), or was \
     turned off (--no-dedup); distinct behaviours are distinct trace hashes, measured, not \
     pruned; no symmetry reduction; same-instant events of different hosts are not reordered \
     (partial-order reduction)";

/// Whether `bounds` let the search deduplicate states (see the module
/// docs): asked for, faults alone, and a fault after a fault possible.
pub(super) fn deduplicating(bounds: &Bounds) -> bool {
    bounds.deduplicate
        && bounds.faults >= 2
        && bounds.deviations == 0
        && bounds.drops == 0
        && bounds.duplicates == 0
        && bounds.reorders == 0
}

/// What two schedules must share for the longer schedules through one to
/// repeat those through the other (`None`: no fingerprint was taken): the
/// state right after the last fault began, the faults still allowed, and
/// the start instants from there on that the run had noted by then (a
/// lease's expiry one TTL after a request that came before); with the last
/// fault itself, returned beside the key: a next fault is ordered after
/// it, so of two schedules with one key, the one whose last fault comes
/// first in the canonical order has every extension the other has (at the
/// same instant, each next fault begins right after the last one, before
/// anything else). The rest of the candidates come from the run after the
/// state, which equal states make equal.
pub(super) fn state_key(
    scenario: &Scenario,
    bounds: &Bounds,
    schedule: &Schedule,
    run: &RunResult,
) -> Option<(u128, FaultChoice)> {
    use std::hash::{Hash, Hasher};
    let taken = run.fingerprint.as_ref()?;
    let last = schedule.faults.last()?;
    let none = NotedInstants::default();
    let noted = taken.instants.as_ref().unwrap_or(&none);
    let starts = candidates::starts(scenario, bounds, noted, taken.at_ns);
    // With a symmetry the state is canonical (renamed), and so must the
    // faults still open be: their starts are instants, which no renaming
    // moves; their hosts are compared in `Seen::Images`.
    let (mut a, mut b) = (
        std::collections::hash_map::DefaultHasher::new(),
        std::collections::hash_map::DefaultHasher::new(),
    );
    b.write_u64(0x6a09_e667_f3bc_c908);
    for h in [&mut a, &mut b] {
        taken.state.hash(h);
        schedule.faults.len().hash(h);
        starts.hash(h);
    }
    let key = (u128::from(a.finish()) << 64) | u128::from(b.finish());
    Some((key, *last))
}

/// What the search knows of a state key: the least last fault that
/// reached it (without a symmetry: of two schedules with one key, the one
/// whose last fault comes first has every extension the other has), or,
/// with a symmetry, the faults starting at the state's own instant that
/// the schedules extended from it may still add, each named in the
/// canonical form's nodes (a bit per kind, host and length). Faults
/// starting later are open to every schedule with the key (they are part
/// of it), so those at the instant are all that can differ.
#[derive(Debug)]
pub(super) enum Seen {
    Last(FaultChoice),
    Images(Vec<u64>),
}

/// What recording a schedule's state decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Recorded {
    /// A state no earlier schedule reached.
    New,
    /// Reached before, by schedules whose extensions include every one of
    /// this schedule's: not extended.
    Pruned,
    /// Reached before, but this schedule may add faults those could not:
    /// extended.
    Extended,
}

/// The states seen so far, by key.
#[derive(Debug, Default)]
pub(super) struct SeenStates(BTreeMap<u128, Seen>);

impl SeenStates {
    /// Records the state `run` took (if it took one) and says whether the
    /// schedule is extended; `None`: no state was taken.
    pub(super) fn record(
        &mut self,
        scenario: &Scenario,
        bounds: &Bounds,
        schedule: &Schedule,
        run: &RunResult,
    ) -> Option<Recorded> {
        let (key, last) = state_key(scenario, bounds, schedule, run)?;
        let permutation = run.fingerprint.as_ref()?.permutation.as_deref();
        let seen = match permutation {
            None => Seen::Last(last),
            Some(p) => Seen::Images(images(scenario, bounds, last, p)),
        };
        use std::collections::btree_map::Entry;
        let mut entry = match self.0.entry(key) {
            Entry::Vacant(entry) => {
                entry.insert(seen);
                return Some(Recorded::New);
            }
            Entry::Occupied(entry) => entry,
        };
        Some(match (entry.get_mut(), seen) {
            (Seen::Last(stored), Seen::Last(last)) if *stored <= last => Recorded::Pruned,
            (Seen::Last(stored), Seen::Last(last)) => {
                *stored = last;
                Recorded::Extended
            }
            (Seen::Images(stored), Seen::Images(new)) => {
                if new.iter().zip(stored.iter()).all(|(n, s)| n & !s == 0) {
                    Recorded::Pruned
                } else {
                    // Every image in the union is extended by one schedule
                    // or another with this key.
                    for (s, n) in stored.iter_mut().zip(&new) {
                        *s |= n;
                    }
                    Recorded::Extended
                }
            }
            // One search either renames every state or none.
            (_, seen) => {
                entry.insert(seen);
                Recorded::Extended
            }
        })
    }
}

/// The faults at `last`'s instant that come after it (the schedule's
/// extensions there), each with its host renamed by `permutation`, as a
/// bit set over kinds x hosts x lengths.
fn images(
    scenario: &Scenario,
    bounds: &Bounds,
    last: FaultChoice,
    permutation: &[u32],
) -> Vec<u64> {
    let nodes = scenario.nodes.len() as u32;
    let hosts = hosts(scenario, bounds.servers).len() as u32;
    let lengths: Vec<u64> = bounds.lengths.iter().map(|&l| nanos(l)).collect();
    let per_host = lengths.len().max(1);
    let bits = bounds.kinds.len() * hosts as usize * per_host;
    let mut set = vec![0u64; bits.div_ceil(64)];
    for (k, &kind) in bounds.kinds.iter().enumerate() {
        let (on_nodes, on_servers) = kind.targets();
        let kind_lengths: &[u64] = if kind.has_length() { &lengths } else { &[0] };
        for host in (0..hosts).filter(|&h| if h < nodes { on_nodes } else { on_servers }) {
            for (l, &length_ns) in kind_lengths.iter().enumerate() {
                let fault = FaultChoice {
                    at_ns: last.at_ns,
                    kind,
                    host,
                    length_ns,
                };
                if fault <= last {
                    continue;
                }
                let image = permutation.get(host as usize).copied().unwrap_or(host);
                let bit = (k * hosts as usize + image as usize) * per_host + l;
                set[bit / 64] |= 1 << (bit % 64);
            }
        }
    }
    set
}

/// What a search without `--symmetry` says of it (the human output leaves
/// the line out then).
pub const SYMMETRY_NOT_ASKED: &str = "none: not asked for (--symmetry)";

/// The renaming of interchangeable nodes a search deduplicates by, when
/// `--symmetry` asks for it and the scenario allows one, with what the
/// output says of it. The conditions (`simulation::symmetry`, (1)): the
/// fenced protocol, no fault of the scenario's own, no elector jitter, and
/// nodes declared alike but for their ids and start instants.
pub(super) fn symmetry_of(
    scenario: &Scenario,
    bounds: &Bounds,
) -> Result<(Option<Symmetry>, String), VerifyError> {
    let none = |why: &str| Ok((None, format!("none: {why}")));
    if !bounds.symmetry {
        return Ok((None, SYMMETRY_NOT_ASKED.to_string()));
    }
    if !deduplicating(bounds) {
        return none("the search does not deduplicate states");
    }
    if scenario.election.protocol != ProtocolSpec::Fenced {
        return none("the field table covers the fenced protocol's state only");
    }
    if !scenario.faults.is_empty() {
        return none("the scenario has faults of its own (a resolved schedule is not state)");
    }
    if scenario.heal_at.is_some() {
        return none("the heal resumes and restarts nodes in the order they are declared");
    }
    if scenario.election.jitter != 0.0 {
        return none("electors draw jitter from generators seeded per node");
    }
    let declarations: Vec<_> = scenario
        .nodes
        .iter()
        .map(|n| (n.clock_offset, n.clock_drift.to_bits(), n.protocol.clone()))
        .collect();
    let symmetry = Symmetry::from_declarations(&declarations)
        .map_err(|e| VerifyError::Bound("--symmetry", e.to_string()))?;
    let Some(symmetry) = symmetry else {
        return none("no two nodes are declared alike");
    };
    let classes: Vec<String> = symmetry
        .classes()
        .iter()
        .map(|c| {
            let ids: Vec<&str> = c
                .iter()
                .map(|&i| scenario.nodes[i as usize].id.as_str())
                .collect();
            ids.join(", ")
        })
        .collect();
    let said = format!("nodes interchangeable: {{{}}}", classes.join("}, {"));
    Ok((Some(symmetry), said))
}
