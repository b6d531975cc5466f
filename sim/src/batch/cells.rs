//! The one way the batch tools run: every seed of every cell, on `jobs`
//! threads ([`run`]). Runs are generated lazily, cell by cell and seed by
//! seed, and each result is folded into its cell's [`Totals`] as it
//! finishes, in that order whatever the threads' timing, then forgotten —
//! so the result does not depend on `jobs` and memory does not grow with
//! the number of seeds.

use super::Seeds;
use crate::parallel::{SpawnError, StreamError};

/// What the runs of one cell add up to: one run's measurement `S` folded
/// in at a time, in seed order.
pub(crate) trait Totals<S>: Default {
    /// Folds one run in.
    fn add(&mut self, run: S);
}

/// Runs every seed of `seeds` of every cell of `cells` (cell by cell, seed
/// by seed) with `jobs` threads — no more than there are runs — calling
/// `progress` after each run, and folds each measurement `run` returns into
/// its cell's totals, in that order. The totals come back in the order of
/// `cells`.
///
/// `run` decides what a run is and which runs are refused (sweep and
/// compare both refuse a run that halted on a limit): its first error
/// stops the batch, and no run after it is started.
///
/// # Errors
/// The first error `run` returns, or a worker thread that cannot be started
/// (as the tool's own error, `E::from`).
pub(crate) fn run<C: Sync, S: Send, T: Totals<S>, E: Send + From<SpawnError>>(
    cells: &[C],
    seeds: Seeds,
    jobs: usize,
    run: &(dyn Fn(&C, u64) -> Result<S, E> + Sync),
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<T>, E> {
    let each = seeds.iter();
    let runs = (0..cells.len()).flat_map(move |c| each.clone().map(move |s| (c, s)));
    let mut totals: Vec<T> = cells.iter().map(|_| T::default()).collect();
    // No more threads than runs.
    let total = (cells.len() as u64).saturating_mul(seeds.count);
    let jobs = jobs.min(usize::try_from(total).unwrap_or(usize::MAX));
    crate::parallel::stream(
        runs,
        jobs,
        &|(c, seed)| (c, run(&cells[c], seed)),
        progress,
        &mut |(c, measured)| {
            totals[c].add(measured?);
            Ok(())
        },
    )
    .map_err(|e| match e {
        StreamError::Spawn(e) => E::from(e),
        StreamError::Sink(e) => e,
    })?;
    Ok(totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test run's error.
    #[derive(Debug)]
    enum Refused {
        Seed(u64),
        Spawn,
    }

    impl From<SpawnError> for Refused {
        fn from(_: SpawnError) -> Self {
            Refused::Spawn
        }
    }

    /// The seeds a cell saw, in the order it saw them.
    #[derive(Default)]
    struct Seen(Vec<u64>);

    impl Totals<u64> for Seen {
        fn add(&mut self, run: u64) {
            self.0.push(run);
        }
    }

    #[test]
    fn every_cell_folds_its_seeds_in_order_whatever_the_jobs() {
        // Proves that each cell's totals see exactly its seeds, in seed order, for any number
        // of threads.
        let cells = [10u64, 20, 30];
        let seeds = Seeds {
            start: 5,
            count: 40,
        };
        for jobs in [1, 2, 7] {
            let totals: Vec<Seen> = run(
                &cells,
                seeds,
                jobs,
                &|&c, seed| Ok::<u64, Refused>(c * 1000 + seed),
                &|| {},
            )
            .unwrap();
            for (c, seen) in cells.iter().zip(&totals) {
                let want: Vec<u64> = seeds.iter().map(|s| c * 1000 + s).collect();
                assert_eq!(seen.0, want);
            }
        }
    }

    #[test]
    fn the_first_refused_run_stops_the_batch() {
        // Proves that a run's error is the batch's error, the first in run order.
        let result: Result<Vec<Seen>, _> = run(
            &[1u64, 2],
            Seeds {
                start: 0,
                count: 100,
            },
            3,
            &|&c, seed| {
                if c == 2 && seed >= 3 {
                    Err(Refused::Seed(seed))
                } else {
                    Ok(seed)
                }
            },
            &|| {},
        );
        assert!(matches!(result, Err(Refused::Seed(3))));
    }
}
