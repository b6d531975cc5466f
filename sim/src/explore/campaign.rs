//! Running a campaign: one seed's outcome ([`run_seed`]), the seeds of a
//! range or shard ([`SeedRange`]), on worker threads in seed order, and the
//! totals over all seeds ([`CampaignSummary`]).

use super::generate::generate;
use super::{SpawnError, StreamError};
use crate::batch::SeedsError;
use crate::scenario::Scenario;

/// What one seed of a campaign found.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SeedOutcome {
    /// The seed.
    pub seed: u64,
    /// No violation (safety or liveness) and, if checked, deterministic.
    pub ok: bool,
    /// The first violation's invariant (`non-determinism` when two runs of
    /// the seed disagreed).
    pub invariant: Option<String>,
    /// When the first violation happened, ms.
    pub at_ms: Option<u64>,
    /// The first violation in one sentence.
    pub detail: Option<String>,
    /// How many violations the run had.
    pub violations: u64,
    /// The run's trace hash.
    pub trace_hash: String,
    /// Events processed.
    pub events: u64,
    /// Whether this seed was run twice to check determinism.
    pub determinism_checked: bool,
    /// The fault kinds the seed switched on.
    pub mix: Vec<String>,
    /// The interesting things that happened.
    pub coverage: crate::report::Coverage,
    /// Virtual time the run simulated, ms (0 when it could not run). Not in
    /// `explore --json`'s seed lines, which stay as they were; `explore
    /// --json --summary` adds it to them.
    #[serde(default, skip_serializing)]
    pub virtual_ms: u64,
}

/// One seed in every this-many is run twice and its hashes compared.
pub const DETERMINISM_SAMPLE: u64 = 16;

/// Runs seed `seed` of a campaign over `base`.
pub fn run_seed(base: &Scenario, seed: u64, options: &crate::RunOptions) -> SeedOutcome {
    let (scenario, mix) = generate(base, seed);
    let run = || -> Result<crate::Report, (&'static str, String)> {
        crate::scenario::check_budget(&scenario, options.event_budget())
            .map_err(|e| ("event-budget", e.to_string()))?;
        let finished =
            crate::Simulation::run_scenario(&scenario, options.clone()).map_err(|e| {
                // A generated schedule the validator refuses is a generator bug.
                (
                    "generator",
                    format!("the generated scenario is invalid: {e}"),
                )
            })?;
        if let Some(halt) = finished.report.halted {
            // Bounded, not judged: the seed needs a larger --max-events.
            return Err(("event-budget", halt.detail));
        }
        Ok(finished.report)
    };
    let report = match run() {
        Ok(report) => report,
        Err((invariant, detail)) => {
            return SeedOutcome {
                seed,
                ok: false,
                invariant: Some(invariant.to_string()),
                at_ms: None,
                detail: Some(detail),
                violations: 0,
                trace_hash: String::new(),
                events: 0,
                determinism_checked: false,
                mix: mix.names().iter().map(|s| s.to_string()).collect(),
                coverage: Default::default(),
                virtual_ms: 0,
            };
        }
    };
    let determinism_checked = seed % DETERMINISM_SAMPLE == 0;
    let mismatch =
        determinism_checked && run().map_or(true, |again| again.trace_hash != report.trace_hash);
    let first = report.violations.first();
    let (invariant, at_ms, detail) = if mismatch {
        (
            Some("non-determinism".to_string()),
            None,
            Some("two runs of this seed gave different trace hashes: a simulator bug".to_string()),
        )
    } else {
        (
            first.map(|v| v.invariant.clone()),
            first.map(|v| v.at_ms),
            first.map(|v| v.detail.clone()),
        )
    };
    SeedOutcome {
        seed,
        ok: report.violations_total == 0 && !mismatch,
        invariant,
        at_ms,
        detail,
        violations: report.violations_total,
        trace_hash: report.trace_hash,
        events: report.events,
        determinism_checked,
        mix: mix.names().iter().map(|s| s.to_string()).collect(),
        coverage: report.coverage,
        virtual_ms: report.virtual_ms,
    }
}

/// Which seeds a campaign runs: `count` seeds from `start`, of which this
/// shard takes every `shards`-th, beginning with the `shard`-th.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedRange {
    /// The first seed.
    pub start: u64,
    /// How many seeds in all shards together.
    pub count: u64,
    /// This shard's index, `0..shards`.
    pub shard: u64,
    /// How many shards.
    pub shards: u64,
}

/// What is wrong with a [`SeedRange`], naming the flag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeedRangeError {
    /// `--shard I/N` with no shard or `I` not below `N`.
    Shard {
        /// `I`.
        shard: u64,
        /// `N`.
        shards: u64,
    },
    /// The seeds pass the largest (the sweep's and compare's own message).
    Seeds(SeedsError),
}

impl std::fmt::Display for SeedRangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SeedRangeError::Shard { shard, shards } => write!(
                f,
                "--shard {shard}/{shards}: I must be in 0..N and N at least 1"
            ),
            SeedRangeError::Seeds(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SeedRangeError {}

impl SeedRange {
    /// Checks the range: at least one shard, the shard among them, and the
    /// last seed (`start + count - 1`) no larger than `u64::MAX`.
    ///
    /// # Errors
    /// One sentence naming the flag (`--shard`, `--start`, `--seeds`).
    pub fn check(&self) -> Result<(), SeedRangeError> {
        if self.shards == 0 || self.shard >= self.shards {
            return Err(SeedRangeError::Shard {
                shard: self.shard,
                shards: self.shards,
            });
        }
        if self.count > 0 && self.start.checked_add(self.count - 1).is_none() {
            return Err(SeedRangeError::Seeds(SeedsError::PastTheLargest {
                start: self.start,
                count: self.count,
            }));
        }
        Ok(())
    }

    /// How many seeds this shard runs — computed, not counted, so a range of
    /// `u64::MAX` seeds costs nothing.
    pub fn len(&self) -> u64 {
        if self.shards == 0 || self.shard >= self.count {
            0
        } else {
            (self.count - 1 - self.shard) / self.shards + 1
        }
    }

    /// The `k`-th seed of this shard (from 0), if it has that many —
    /// computed, not counted.
    pub fn nth(&self, k: u64) -> Option<u64> {
        if k >= self.len() {
            return None;
        }
        let offset = k.checked_mul(self.shards)?.checked_add(self.shard)?;
        self.start.checked_add(offset)
    }

    /// This shard's last seed, if it has any.
    pub fn last(&self) -> Option<u64> {
        self.len().checked_sub(1).and_then(|k| self.nth(k))
    }

    /// Whether `seed` is one of this shard's seeds (arithmetic: `start +
    /// shard + k * shards` below `start + count`).
    pub fn contains(&self, seed: u64) -> bool {
        self.shards > 0
            && seed >= self.start
            && (seed - self.start) < self.count
            && (seed - self.start) % self.shards == self.shard
    }

    /// `jobs`, or fewer: no more threads than this shard has seeds.
    pub fn jobs(&self, jobs: usize) -> usize {
        jobs.min(usize::try_from(self.len()).unwrap_or(usize::MAX))
    }

    /// Whether this shard runs no seed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The seeds of this shard, in order, drawn lazily (a step of `shards`
    /// from the `shard`-th; no seed is visited only to be skipped).
    pub fn seeds(&self) -> impl Iterator<Item = u64> + Send + 'static {
        let SeedRange {
            start,
            count,
            shard,
            shards,
        } = *self;
        let mut next = (shards > 0 && shard < count).then_some(shard);
        std::iter::from_fn(move || {
            let i = next?;
            next = i.checked_add(shards).filter(|n| *n < count);
            Some(start.wrapping_add(i))
        })
    }
}

/// Runs every seed of `range` on `jobs` threads and hands the outcomes to
/// `sink` in seed order — identical whatever `jobs` is — holding at most
/// `jobs` × [`WINDOW_PER_JOB`](super::WINDOW_PER_JOB) of them at once. `progress` is called once per
/// finished seed (from any thread).
///
/// # Errors
/// A worker thread could not be started (before any outcome), or the sink's
/// first error (no seed starts after it).
pub fn stream_campaign<E>(
    base: &Scenario,
    range: SeedRange,
    jobs: usize,
    options: &crate::RunOptions,
    progress: &(dyn Fn() + Sync),
    sink: &mut dyn FnMut(SeedOutcome) -> Result<(), E>,
) -> Result<(), StreamError<E>> {
    crate::parallel::stream(
        range.seeds(),
        range.jobs(jobs),
        &|seed| run_seed(base, seed, options),
        progress,
        sink,
    )
}

/// Runs every seed of `range` on `jobs` threads and returns the outcomes in
/// seed order — identical whatever `jobs` is. For small campaigns; large
/// ones use [`stream_campaign`], which holds no more than a window of them.
///
/// # Errors
/// A worker thread could not be started.
pub fn run_campaign(
    base: &Scenario,
    range: SeedRange,
    jobs: usize,
    options: &crate::RunOptions,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<SeedOutcome>, SpawnError> {
    crate::parallel::map(
        range.seeds(),
        range.jobs(jobs),
        &|seed| run_seed(base, seed, options),
        progress,
    )
}

/// Totals over a campaign.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CampaignSummary {
    /// Seeds run.
    pub seeds: u64,
    /// Seeds that failed.
    pub failed: u64,
    /// Seeds run twice for determinism.
    pub determinism_checked: u64,
    /// Events processed in all.
    pub events: u64,
    /// Per-invariant count of failing seeds (by their first violation).
    pub failures_by_invariant: std::collections::BTreeMap<String, u64>,
    /// Coverage summed over all seeds.
    pub coverage: crate::report::Coverage,
    /// How many seeds exercised each coverage item at least once.
    pub seeds_covering: crate::report::Coverage,
    /// Virtual time simulated in all, ms (each seed's run counted once).
    #[serde(default)]
    pub virtual_ms: u64,
}

impl CampaignSummary {
    /// Sums `outcomes`.
    pub fn of(outcomes: &[SeedOutcome]) -> Self {
        let mut s = CampaignSummary::default();
        for o in outcomes {
            s.add(o);
        }
        s
    }

    /// Counts one more outcome (campaigns stream: they keep the totals, not
    /// the outcomes).
    pub fn add(&mut self, o: &SeedOutcome) {
        let s = self;
        s.seeds += 1;
        s.events += o.events;
        s.virtual_ms += o.virtual_ms;
        s.determinism_checked += u64::from(o.determinism_checked);
        if !o.ok {
            s.failed += 1;
            let name = o.invariant.clone().unwrap_or_else(|| "unknown".to_string());
            *s.failures_by_invariant.entry(name).or_insert(0) += 1;
        }
        let c = &o.coverage;
        let (t, n) = (&mut s.coverage, &mut s.seeds_covering);
        t.stale_write_rejected += c.stale_write_rejected;
        t.takeover_during_pause += c.takeover_during_pause;
        t.step_down_on_deadline += c.step_down_on_deadline;
        t.renewal_lost += c.renewal_lost;
        t.zombie_fenced += c.zombie_fenced;
        t.refused += c.refused;
        t.leader_stopped += c.leader_stopped;
        t.leader_abdicated += c.leader_abdicated;
        n.stale_write_rejected += u64::from(c.stale_write_rejected > 0);
        n.takeover_during_pause += u64::from(c.takeover_during_pause > 0);
        n.step_down_on_deadline += u64::from(c.step_down_on_deadline > 0);
        n.renewal_lost += u64::from(c.renewal_lost > 0);
        n.zombie_fenced += u64::from(c.zombie_fenced > 0);
        n.refused += u64::from(c.refused > 0);
        n.leader_stopped += u64::from(c.leader_stopped > 0);
        n.leader_abdicated += u64::from(c.leader_abdicated > 0);
    }

    /// Each "sometimes" property with the number of seeds it happened in, in
    /// a fixed order: the one list the summary prints and
    /// [`never_exercised`](Self::never_exercised) checks.
    pub fn sometimes(&self) -> [(&'static str, u64); 7] {
        let n = &self.seeds_covering;
        [
            ("stale write rejected", n.stale_write_rejected),
            ("takeover during a pause", n.takeover_during_pause),
            ("step-down on the local deadline", n.step_down_on_deadline),
            ("renewal lost", n.renewal_lost),
            ("zombie incarnation fenced", n.zombie_fenced),
            ("leader stopped gracefully", n.leader_stopped),
            ("leader abdicated", n.leader_abdicated),
        ]
    }

    /// The "sometimes" properties no seed exercised: a campaign on the default
    /// mix where this is non-empty means the generator is too tame.
    pub fn never_exercised(&self) -> Vec<&'static str> {
        self.sometimes()
            .into_iter()
            .filter(|(_, count)| *count == 0)
            .map(|(name, _)| name)
            .collect()
    }
}
