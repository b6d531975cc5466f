//! What the search deduplicates, and by which key: a schedule's whole
//! state right after its last fault began, with the choices still open.
//! The rule is stated in the module docs of [`super`], "What is and is not
//! deduplicated".

use super::candidates;
use super::schedule::{FaultChoice, Schedule};
use super::{Bounds, RunResult};
use crate::scenario::Scenario;
use crate::simulation::NotedInstants;

/// What the search deduplicates, stated in every result.
pub(super) const DEDUPLICATION: &str =
    "states: a schedule whose whole state (hosts, pending events, \
     network, clocks, RNG positions, the checker) right after its last fault began equals an \
     earlier schedule's there, with the same fault choices still open, is run but not extended \
     (every extension would repeat one of the earlier schedule's from that state on); no \
     symmetry reduction (a state names its nodes in ways no swap of two nodes can rename: \
     README, \"No symmetry reduction\"); same-instant events of different hosts are not reordered \
     (partial-order reduction)";

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
