//! Campaigns split over many processes or machines, joined again: the lines
//! `explore --json --summary` writes for each shard, and [`Merger`], which
//! reads any number of shards' lines (from files, or interleaved in one
//! stream) and gives one [`Verdict`] — or names what is wrong with them.
//!
//! **A campaign** is fixed by its [`CampaignIdentity`]: the fenced-sim
//! version, the base scenario (as named on the command line, and a hash of
//! its content), the run flags (`--plant`, `--max-events`), the first seed
//! and the number of seeds. Its id ([`CampaignIdentity::id`]) is a hash of
//! those, and does not depend on how the campaign was sharded: shards `0/1`
//! and `0/4, 1/4, 2/4, 3/4` of the same campaign merge to the same verdict,
//! byte for byte (wall-clock timing aside, which is kept apart).
//!
//! **A shard** `I/N` runs the seeds `start + I + k·N` below `start + seeds`
//! ([`SeedRange`](crate::explore::SeedRange)); merge computes each shard's
//! seeds from that plan, never by listing them, so a shard of 10⁹ seeds
//! costs nothing to check.
//!
//! **The lines** of one shard, in order:
//! - one per seed (or per failing seed, with `--failures-only`): the seed
//!   line of `explore --json`, plus `campaign` (the id), `shard`, `shards`
//!   and `virtual_ms` (virtual time simulated), and `shrink` when it failed;
//! - last, `{"shard_summary": {…}}` ([`ShardSummary`]): the campaign's
//!   identity, the shard, its totals, its first [`MAX_FAILURES_LISTED`]
//!   failures, and its wall-clock time.
//!
//! Every line carries the campaign id and the shard, so the lines of many
//! shards may come interleaved in one stream (line by line); lines that do
//! not start with `{` (a log's other output) are skipped and counted.

mod merger;
mod seeds;
mod verdict;

pub use merger::{CampaignTiming, MergeOutcome, Merger, Verdict, MAX_PROBLEMS_LISTED};

use crate::explore::CampaignSummary;
use crate::scenario::Scenario;

/// The version of the summary line's format; merge refuses others.
pub const FORMAT: u32 = 1;

/// The most failures a summary (and a merged verdict) lists: the ones with
/// the smallest seeds. The counts cover them all.
pub const MAX_FAILURES_LISTED: usize = 100;

/// The key of a summary line: `{"shard_summary": {…}}`.
pub const SUMMARY_KEY: &str = "shard_summary";

/// What gives a campaign's seeds their meaning: the same seed of two
/// campaigns with equal identities is the same run.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CampaignIdentity {
    /// The version of fenced-sim that ran it.
    pub fenced_sim: String,
    /// The base scenario as named on the command line; `default` for the
    /// default fleet.
    pub base: String,
    /// FNV-1a (64 bits, hex) of the base scenario written back as TOML.
    pub base_hash: String,
    /// The run flags every replay repeats (`--max-events N`, `--plant BUG`);
    /// empty without any.
    pub flags: String,
    /// The first seed.
    pub start: u64,
    /// How many seeds, over all shards.
    pub seeds: u64,
}

impl CampaignIdentity {
    /// The identity of a campaign of `seeds` seeds from `start` on `base`
    /// (named `base_name` on the command line, `None` for the default
    /// fleet), run with `flags`.
    pub fn new(
        base_name: Option<&str>,
        base: &Scenario,
        flags: &str,
        start: u64,
        seeds: u64,
    ) -> Self {
        CampaignIdentity {
            fenced_sim: env!("CARGO_PKG_VERSION").to_string(),
            base: base_name.unwrap_or("default").to_string(),
            base_hash: hex(fnv1a(crate::to_toml::to_toml(base).as_bytes())),
            flags: flags.trim().to_string(),
            start,
            seeds,
        }
    }

    /// The campaign's id: FNV-1a (64 bits, 16 hex digits) of the identity's
    /// JSON. Equal identities, equal ids; the shard count is not part of it.
    pub fn id(&self) -> String {
        let text = serde_json::to_string(self).unwrap_or_default();
        hex(fnv1a(text.as_bytes()))
    }

    /// The campaign in a few words, for messages and reports.
    pub fn describe(&self) -> String {
        let last = self.start.saturating_add(self.seeds.saturating_sub(1));
        let flags = if self.flags.is_empty() {
            String::new()
        } else {
            format!(", {}", self.flags)
        };
        format!(
            "fenced-sim {}, base {} ({}){flags}, seeds {}..={last}",
            self.fenced_sim, self.base, self.base_hash, self.start
        )
    }

    /// The seeds of shard `shard` of `shards`.
    pub fn plan(&self, shard: u64, shards: u64) -> crate::explore::SeedRange {
        crate::explore::SeedRange {
            start: self.start,
            count: self.seeds,
            shard,
            shards,
        }
    }

    /// What differs between two identities, field by field (`fenced_sim
    /// 0.1.0 vs 0.2.0`).
    pub fn differences(&self, other: &CampaignIdentity) -> Vec<String> {
        let mut out = Vec::new();
        let mut field = |name: &str, a: String, b: String| {
            if a != b {
                out.push(format!("{name} {a} vs {b}"));
            }
        };
        field(
            "fenced_sim",
            self.fenced_sim.clone(),
            other.fenced_sim.clone(),
        );
        field("base", self.base.clone(), other.base.clone());
        field("base_hash", self.base_hash.clone(), other.base_hash.clone());
        field(
            "flags",
            format!("`{}`", self.flags),
            format!("`{}`", other.flags),
        );
        field("start", self.start.to_string(), other.start.to_string());
        field("seeds", self.seeds.to_string(), other.seeds.to_string());
        out
    }
}

/// One failing seed, with the commands that replay and shrink it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// The first violation's invariant.
    pub invariant: String,
    /// When it happened, ms.
    pub at_ms: Option<u64>,
    /// The violation in one sentence.
    pub detail: String,
    /// The fault kinds the seed switched on.
    pub mix: Vec<String>,
    /// The command that replays the seed.
    pub replay: String,
    /// The command that shrinks it to a standalone scenario.
    pub shrink: String,
}

/// Which seeds a shard wrote a line for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SeedLines {
    /// Every seed.
    All,
    /// Only the failing seeds (`--failures-only`).
    Failures,
}

/// A shard's wall-clock time: the only part of a summary that differs from
/// one run of the same shard to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShardTiming {
    /// Wall-clock time from the first seed started to the last one written, ms.
    pub wall_ms: u64,
    /// Worker threads that ran the seeds.
    pub jobs: u64,
}

/// The last line of a shard: `{"shard_summary": ShardSummary}`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ShardSummary {
    /// [`FORMAT`].
    pub format: u32,
    /// The campaign's id ([`CampaignIdentity::id`] of `identity`).
    pub campaign: String,
    /// The campaign.
    pub identity: CampaignIdentity,
    /// This shard's index, `0..shards`.
    pub shard: u64,
    /// How many shards the campaign was split into.
    pub shards: u64,
    /// Which seeds have a line of their own before this one.
    pub seed_lines: SeedLines,
    /// The shard's totals (seeds run, failures, determinism checks, events,
    /// virtual time, coverage).
    pub totals: CampaignSummary,
    /// The shard's first [`MAX_FAILURES_LISTED`] failures, in seed order.
    pub failures: Vec<Failure>,
    /// Wall-clock time.
    pub timing: ShardTiming,
}

impl ShardSummary {
    /// The summary as its line (without the newline).
    pub fn to_line(&self) -> String {
        let mut map = serde_json::Map::new();
        map.insert(
            SUMMARY_KEY.to_string(),
            serde_json::to_value(self).unwrap_or_default(),
        );
        serde_json::Value::Object(map).to_string()
    }
}

/// FNV-1a, 64 bits: a stable hash, the same on every machine.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn hex(h: u64) -> String {
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_stable_and_changes_with_every_field() {
        let base = crate::explore::default_base();
        let a = CampaignIdentity::new(None, &base, "", 0, 1000);
        assert_eq!(a.id(), a.clone().id());
        assert_eq!(a.id().len(), 16);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        let mut changed = Vec::new();
        for edit in [
            |i: &mut CampaignIdentity| i.fenced_sim.push('x'),
            |i: &mut CampaignIdentity| i.base.push('x'),
            |i: &mut CampaignIdentity| i.base_hash.push('x'),
            |i: &mut CampaignIdentity| i.flags.push('x'),
            |i: &mut CampaignIdentity| i.start += 1,
            |i: &mut CampaignIdentity| i.seeds += 1,
        ] {
            let mut b = a.clone();
            edit(&mut b);
            assert_ne!(a.id(), b.id());
            assert_eq!(a.differences(&b).len(), 1);
            changed.push(b.id());
        }
        let mut other_base = base.clone();
        other_base.duration += std::time::Duration::from_secs(1);
        let c = CampaignIdentity::new(None, &other_base, "", 0, 1000);
        assert_ne!(a.base_hash, c.base_hash);
    }
}
