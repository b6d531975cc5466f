//! How much of a bounded search's abstract state space a random swarm
//! visits: `explore`'s seeds on the same scenario, measured against the
//! states `verify` reached by enumerating every schedule within its bounds.
//!
//! The measure is the abstract state of `observation::AbstractStates` — per
//! node its lives, pause, isolation and whether it leads the newest term or
//! an older one; the store's pause, isolation and last grantee; every time
//! dropped. The swarm's seeds are exactly `fenced-sim explore SCENARIO`'s:
//! seed `s` runs [`generate`]`(scenario, s)` (its
//! own faults, timings and liveness phase), so the figure says what `explore
//! --seeds N` covers, not what some other sampler would. A swarm can visit
//! states outside the search's space (a fault kind or a count the bounds
//! left out); those are counted apart, never as coverage.

use std::collections::BTreeSet;

use serde::Serialize;

use super::VerifyError;
use crate::explore::{check_base, generate};
use crate::{RunOptions, Scenario, Simulation};

/// The most seeds one measure runs.
pub const MAX_SWARM_SEEDS: u64 = 10_000_000;

/// The swarm after its first `seeds` seeds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SwarmPoint {
    /// Seeds run (0 .. seeds).
    pub seeds: u64,
    /// Abstract states of the search's space the swarm visited.
    pub covered: u64,
    /// The search's abstract states.
    pub space: u64,
    /// Abstract states the swarm visited that the search did not.
    pub outside: u64,
    /// The search's states the swarm has not visited yet, in code order
    /// (at most [`MAX_MISSED`]).
    pub missed: Vec<u64>,
}

/// The most missed states a point lists.
pub const MAX_MISSED: usize = 64;

impl SwarmPoint {
    /// `covered / space`, 0 for an empty space.
    pub fn fraction(&self) -> f64 {
        if self.space == 0 {
            0.0
        } else {
            self.covered as f64 / self.space as f64
        }
    }
}

/// Runs `explore`'s seeds `0 .. max(checkpoints)` on `scenario` (with
/// `options`: a planted bug, the event budget) on up to `jobs` threads, and
/// reports the coverage of `space` after each checkpoint's number of seeds,
/// in increasing order. The result does not depend on `jobs`.
///
/// # Errors
/// A scenario explore cannot use as a base, a checkpoint of 0 or above
/// [`MAX_SWARM_SEEDS`], or a generated run that cannot start.
pub fn coverage(
    scenario: &Scenario,
    options: &RunOptions,
    space: &BTreeSet<u64>,
    checkpoints: &[u64],
    jobs: usize,
) -> Result<Vec<SwarmPoint>, VerifyError> {
    check_base(scenario).map_err(|e| VerifyError::Scenario(format!("explore's base: {e}")))?;
    let mut checkpoints = checkpoints.to_vec();
    checkpoints.sort_unstable();
    checkpoints.dedup();
    if checkpoints.iter().any(|&n| n == 0 || n > MAX_SWARM_SEEDS) {
        return Err(VerifyError::Bound(
            "--swarm",
            format!("each number of seeds from 1 to {MAX_SWARM_SEEDS}"),
        ));
    }
    let mut visited = BTreeSet::new();
    let mut points = Vec::with_capacity(checkpoints.len());
    let mut next = 0u64;
    let batch = (jobs.max(1) * 32) as u64;
    for &target in &checkpoints {
        while next < target {
            let end = (next + batch).min(target);
            for states in run_seeds(scenario, options, next..end, jobs)? {
                visited.extend(states);
            }
            next = end;
        }
        let covered = visited.intersection(space).count() as u64;
        points.push(SwarmPoint {
            seeds: target,
            covered,
            space: space.len() as u64,
            outside: visited.len() as u64 - covered,
            missed: space
                .difference(&visited)
                .take(MAX_MISSED)
                .copied()
                .collect(),
        });
    }
    Ok(points)
}

/// The abstract states of each seed of `seeds`, on up to `jobs` threads.
fn run_seeds(
    base: &Scenario,
    options: &RunOptions,
    seeds: std::ops::Range<u64>,
    jobs: usize,
) -> Result<Vec<BTreeSet<u64>>, VerifyError> {
    let one = |seed: u64| -> Result<BTreeSet<u64>, VerifyError> {
        let (scenario, _) = generate(base, seed);
        let mut sim = Simulation::from_scenario(&scenario, options.clone())
            .map_err(|e| VerifyError::Scenario(format!("explore seed {seed}: {e}")))?;
        sim.record_abstract_states();
        sim.run_to_end();
        Ok(sim.take_abstract_states().unwrap_or_default())
    };
    let all: Vec<u64> = seeds.collect();
    let per = all.len().div_ceil(jobs.max(1)).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = all
            .chunks(per)
            .map(|part| scope.spawn(move || part.iter().map(|&s| one(s)).collect::<Vec<_>>()))
            .collect();
        let mut out = Vec::new();
        for handle in handles {
            let part = handle
                .join()
                .map_err(|_| VerifyError::Halted("a swarm thread panicked".to_string()))?;
            for states in part {
                out.push(states?);
            }
        }
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_is_a_fraction_of_its_space() {
        let point = SwarmPoint {
            seeds: 10,
            covered: 3,
            space: 4,
            outside: 7,
            missed: vec![1],
        };
        assert_eq!(point.fraction(), 0.75);
        let empty = SwarmPoint {
            space: 0,
            ..point.clone()
        };
        assert_eq!(empty.fraction(), 0.0);
    }
}
