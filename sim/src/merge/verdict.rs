//! What a merge gives back: the campaign's [`Verdict`] (its deterministic
//! part and the wall-clock [`CampaignTiming`]), or the problems
//! ([`MergeOutcome`]).

use super::{CampaignIdentity, Failure};
use crate::explore::CampaignSummary;

/// The campaign's verdict: the same bytes however it was sharded, as long
/// as `timing` (wall-clock) is left out.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Verdict {
    /// The campaign's id.
    pub campaign: String,
    /// The campaign.
    pub identity: CampaignIdentity,
    /// No seed failed.
    pub ok: bool,
    /// Seeds run (all of the campaign's), failed, run twice for determinism,
    /// events, virtual time, failures by invariant, coverage.
    pub totals: CampaignSummary,
    /// The "sometimes" properties no seed exercised.
    pub never_exercised: Vec<String>,
    /// The failures with the smallest seeds, at most
    /// [`MAX_FAILURES_LISTED`](super::MAX_FAILURES_LISTED), in seed order.
    pub failures: Vec<Failure>,
    /// Failures not listed.
    pub failures_omitted: u64,
    /// Wall-clock figures: left out when asked, to compare verdicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<CampaignTiming>,
}

/// How fast the campaign ran, from the shards' wall-clock times. A thread
/// is a core when each shard had as many cores as `--jobs`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CampaignTiming {
    /// Shards merged.
    pub shards: u64,
    /// The shards' wall-clock times added up, s.
    pub shard_wall_s: f64,
    /// The slowest shard's wall-clock time, s.
    pub slowest_shard_s: f64,
    /// Each shard's wall-clock time times its worker threads, added up, s.
    pub thread_s: f64,
    /// Seeds per second of one shard process, on average.
    pub seeds_per_s_per_shard: Option<f64>,
    /// Seeds per second per worker thread.
    pub seeds_per_s_per_thread: Option<f64>,
    /// Virtual seconds simulated per wall-clock second of one shard process.
    pub acceleration_per_shard: Option<f64>,
    /// Virtual seconds simulated per wall-clock second of one thread.
    pub acceleration_per_thread: Option<f64>,
}

/// What a merge found: a verdict, or the problems that prevent one.
#[derive(Clone, Debug)]
pub struct MergeOutcome {
    /// The verdict, when the input held exactly one complete campaign.
    pub verdict: Option<Verdict>,
    /// What is wrong with the input, at most [`MAX_PROBLEMS_LISTED`](super::MAX_PROBLEMS_LISTED).
    pub problems: Vec<String>,
    /// How many problems in all.
    pub problems_total: u64,
    /// Remarks that do not prevent a verdict.
    pub notes: Vec<String>,
    /// Failing seeds found in the summaries read (also without a verdict).
    pub failed_seen: u64,
}
