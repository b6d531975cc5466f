//! [`Merger`]: reads the lines of any number of shards, one at a time,
//! keeping per campaign its totals, its first failures and, per shard, the
//! runs of seeds seen; then checks every shard against its plan and gives
//! the [`Verdict`], or the problems.

use std::collections::BTreeMap;

use super::seeds::{describe_run, thousands, Insert, SeedRuns};
use super::{
    CampaignIdentity, Failure, SeedLines, ShardSummary, FORMAT, MAX_FAILURES_LISTED, SUMMARY_KEY,
};
use crate::explore::CampaignSummary;

pub use super::verdict::{CampaignTiming, MergeOutcome, Verdict};

/// The most problems a merge lists (it counts them all).
pub const MAX_PROBLEMS_LISTED: usize = 20;
/// The most runs of missing seeds named per shard.
const MAX_GAPS_LISTED: usize = 3;
/// The most shards that wrote nothing named one by one.
const MAX_SHARDS_LISTED: usize = 8;
/// The most campaigns named when several are mixed.
const MAX_CAMPAIGNS_LISTED: usize = 4;

/// Where a line came from: the input's index and the line number (from 1).
#[derive(Clone, Copy, Debug)]
struct Loc {
    input: usize,
    line: u64,
}

/// The fields merge reads of a line; the others are ignored.
#[derive(serde::Deserialize)]
struct RawLine {
    seed: Option<u64>,
    ok: Option<bool>,
    campaign: Option<String>,
    shard: Option<u64>,
    shards: Option<u64>,
    events: Option<u64>,
    virtual_ms: Option<u64>,
    determinism_checked: Option<bool>,
    shard_summary: Option<Box<ShardSummary>>,
}

/// Totals over a shard's seed lines, to check them against its summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LineTotals {
    passed: u64,
    failed: u64,
    events: u64,
    virtual_ms: u64,
    determinism_checked: u64,
}

/// What a summary said, kept to check the seed lines against it.
#[derive(Clone, Copy, Debug)]
struct SummaryFacts {
    at: Loc,
    seed_lines: SeedLines,
    failed: u64,
    events: u64,
    virtual_ms: u64,
    determinism_checked: u64,
}

/// One shard of one campaign, as seen so far.
#[derive(Debug)]
struct Shard {
    summary: Option<SummaryFacts>,
    seen: SeedRuns,
    lines: LineTotals,
    repeats: u64,
    first_repeat: Option<(u64, Loc)>,
    off_step: u64,
    first_off_step: Option<(u64, Loc)>,
}

impl Shard {
    fn new(shards: u64) -> Self {
        Shard {
            summary: None,
            seen: SeedRuns::new(shards),
            lines: LineTotals::default(),
            repeats: 0,
            first_repeat: None,
            off_step: 0,
            first_off_step: None,
        }
    }
}

/// One campaign, as seen so far.
#[derive(Debug)]
struct Campaign {
    first_at: Loc,
    identity: Option<CampaignIdentity>,
    /// Shard count → shard index → shard.
    shardings: BTreeMap<u64, (Loc, BTreeMap<u64, Shard>)>,
    totals: CampaignSummary,
    failures: BTreeMap<u64, Failure>,
    seed_lines: u64,
    wall_ms: u128,
    slowest_ms: u64,
    thread_ms: u128,
}

/// Joins the lines of a campaign's shards into one [`Verdict`].
///
/// Feed it inputs ([`begin_input`](Self::begin_input)) and their lines
/// ([`line`](Self::line)) in any order, then [`finish`](Self::finish).
/// Memory holds per campaign its totals and first failures, and per shard a
/// few counters and the runs of seeds seen (one run for a shard read in
/// order): not the seeds, nor the lines.
#[derive(Debug, Default)]
pub struct Merger {
    inputs: Vec<String>,
    line: u64,
    campaigns: BTreeMap<String, Campaign>,
    problems: Vec<String>,
    problems_total: u64,
    skipped: u64,
    first_skipped: Option<Loc>,
    plain: u64,
    first_plain: Option<Loc>,
}

impl Merger {
    /// A merger that has read nothing.
    pub fn new() -> Self {
        Merger::default()
    }

    /// The next lines come from `name` (a file name, `-` for standard input).
    pub fn begin_input(&mut self, name: &str) {
        let again = self.inputs.iter().filter(|n| n.as_str() == name).count();
        self.inputs.push(if again == 0 {
            name.to_string()
        } else {
            // The same file read again: name the reading.
            format!("{name}#{}", again + 1)
        });
        self.line = 0;
    }

    fn here(&self) -> Loc {
        Loc {
            input: self.inputs.len().saturating_sub(1),
            line: self.line,
        }
    }

    fn at(&self, loc: Loc) -> String {
        let name = self.inputs.get(loc.input).map_or("-", String::as_str);
        format!("{name}:{}", loc.line)
    }

    fn problem(&mut self, message: String) {
        self.problems_total += 1;
        if self.problems.len() < MAX_PROBLEMS_LISTED {
            self.problems.push(message);
        }
    }

    fn problem_here(&mut self, message: impl std::fmt::Display) {
        let at = self.at(self.here());
        self.problem(format!("{at}: {message}"));
    }

    /// The current line could not be read (`reason`: not UTF-8, too long).
    pub fn unreadable_line(&mut self, reason: &str) {
        self.line += 1;
        self.problem_here(reason);
    }

    /// Reads one line (without its newline).
    pub fn line(&mut self, text: &str) {
        self.line += 1;
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        if !text.starts_with('{') {
            self.skipped += 1;
            self.first_skipped.get_or_insert(self.here());
            return;
        }
        let raw: RawLine = match serde_json::from_str(text) {
            Ok(raw) => raw,
            Err(e) => {
                return self.problem_here(if e.is_eof() {
                    format!("not a complete JSON line (truncated?): {e}")
                } else {
                    format!("not a line of `explore --json --summary`: {e}")
                });
            }
        };
        match (raw.seed, raw.shard_summary.is_some()) {
            (Some(_), true) => {
                self.problem_here(format!("a line with both `seed` and `{SUMMARY_KEY}`"))
            }
            (Some(seed), false) => self.seed_line(seed, raw),
            (None, true) => {
                if let Some(summary) = raw.shard_summary {
                    self.summary_line(*summary);
                }
            }
            (None, false) => self.problem_here(format!(
                "neither a seed line nor a summary line (`{SUMMARY_KEY}`) of \
                 `fenced-sim explore --json --summary`"
            )),
        }
    }

    fn campaign(&mut self, id: &str) -> &mut Campaign {
        let here = self.here();
        self.campaigns
            .entry(id.to_string())
            .or_insert_with(|| Campaign {
                first_at: here,
                identity: None,
                shardings: BTreeMap::new(),
                totals: CampaignSummary::default(),
                failures: BTreeMap::new(),
                seed_lines: 0,
                wall_ms: 0,
                slowest_ms: 0,
                thread_ms: 0,
            })
    }

    fn seed_line(&mut self, seed: u64, raw: RawLine) {
        let Some(id) = raw.campaign else {
            self.plain += 1;
            self.first_plain.get_or_insert(self.here());
            return;
        };
        let (Some(shard), Some(shards), Some(ok), Some(events), Some(virtual_ms), Some(checked)) = (
            raw.shard,
            raw.shards,
            raw.ok,
            raw.events,
            raw.virtual_ms,
            raw.determinism_checked,
        ) else {
            return self.problem_here(format!(
                "seed {seed}: a seed line needs `shard`, `shards`, `ok`, `events`, \
                 `virtual_ms` and `determinism_checked`"
            ));
        };
        if shards == 0 || shard >= shards {
            return self.problem_here(format!(
                "seed {seed}: shard {shard}/{shards} does not exist (I must be in 0..N)"
            ));
        }
        let here = self.here();
        let campaign = self.campaign(&id);
        campaign.seed_lines += 1;
        let (_, shard_map) = campaign
            .shardings
            .entry(shards)
            .or_insert_with(|| (here, BTreeMap::new()));
        let s = shard_map.entry(shard).or_insert_with(|| Shard::new(shards));
        match s.seen.insert(seed) {
            Insert::New => {
                let t = &mut s.lines;
                if ok {
                    t.passed += 1;
                } else {
                    t.failed += 1;
                }
                t.events = t.events.saturating_add(events);
                t.virtual_ms = t.virtual_ms.saturating_add(virtual_ms);
                t.determinism_checked += u64::from(checked);
            }
            Insert::Repeat => {
                s.repeats += 1;
                s.first_repeat.get_or_insert((seed, here));
            }
            Insert::OffStep => {
                s.off_step += 1;
                s.first_off_step.get_or_insert((seed, here));
            }
        }
    }

    fn summary_line(&mut self, s: ShardSummary) {
        if s.format != FORMAT {
            return self.problem_here(format!(
                "a summary of format {} (this fenced-sim reads format {FORMAT}: merge with the \
                 fenced-sim that wrote it)",
                s.format
            ));
        }
        if s.campaign != s.identity.id() {
            return self.problem_here(format!(
                "the summary's campaign id {} is not that of its settings ({}): edited or \
                 corrupted",
                s.campaign,
                s.identity.id()
            ));
        }
        let (shard, shards) = (s.shard, s.shards);
        let plan = s.identity.plan(shard, shards);
        if let Err(e) = plan.check() {
            return self.problem_here(format!("a summary of an impossible shard: {e}"));
        }
        if plan.is_empty() {
            return self.problem_here(format!(
                "shard {shard}/{shards} of a campaign of {} seeds has no seeds",
                s.identity.seeds
            ));
        }
        if s.totals.seeds != plan.len() {
            return self.problem_here(format!(
                "shard {shard}/{shards}: the summary counts {} seeds, the shard has {}",
                thousands(s.totals.seeds),
                thousands(plan.len())
            ));
        }
        if s.failures.len() as u64 > s.totals.failed || s.failures.len() > MAX_FAILURES_LISTED {
            return self.problem_here(format!(
                "shard {shard}/{shards}: the summary lists {} failures but counts {}",
                s.failures.len(),
                s.totals.failed
            ));
        }
        if let Some(f) = s.failures.iter().find(|f| !plan.contains(f.seed)) {
            return self.problem_here(format!(
                "shard {shard}/{shards}: the summary lists seed {}, which is not one of its seeds",
                f.seed
            ));
        }
        let here = self.here();
        let known = self.campaigns.get(&s.campaign);
        if let Some(identity) = known.and_then(|c| c.identity.as_ref()) {
            if *identity != s.identity {
                let differ = identity.differences(&s.identity).join(", ");
                return self.problem_here(format!(
                    "two campaigns with the same id {}: {differ}",
                    s.campaign
                ));
            }
        }
        let first = known
            .and_then(|c| c.shardings.get(&shards))
            .and_then(|(_, m)| m.get(&shard))
            .and_then(|sh| sh.summary);
        if let Some(first) = first {
            let first = self.at(first.at);
            return self.problem_here(format!(
                "a second summary of shard {shard}/{shards} (the first is at {first}): the \
                 same shard given twice?"
            ));
        }
        let Some(totals) = add_totals(
            &known.map(|c| c.totals.clone()).unwrap_or_default(),
            &s.totals,
        ) else {
            return self.problem_here("the totals overflow 64 bits");
        };
        let campaign = self.campaign(&s.campaign);
        campaign.identity.get_or_insert_with(|| s.identity.clone());
        campaign.totals = totals;
        let (_, shard_map) = campaign
            .shardings
            .entry(shards)
            .or_insert_with(|| (here, BTreeMap::new()));
        let entry = shard_map.entry(shard).or_insert_with(|| Shard::new(shards));
        entry.summary = Some(SummaryFacts {
            at: here,
            seed_lines: s.seed_lines,
            failed: s.totals.failed,
            events: s.totals.events,
            virtual_ms: s.totals.virtual_ms,
            determinism_checked: s.totals.determinism_checked,
        });
        for f in s.failures {
            campaign.failures.insert(f.seed, f);
            if campaign.failures.len() > MAX_FAILURES_LISTED {
                campaign.failures.pop_last();
            }
        }
        let jobs = u128::from(s.timing.jobs.max(1));
        campaign.wall_ms += u128::from(s.timing.wall_ms);
        campaign.thread_ms += u128::from(s.timing.wall_ms) * jobs;
        campaign.slowest_ms = campaign.slowest_ms.max(s.timing.wall_ms);
    }

    /// Checks every shard of what was read against its plan; gives the
    /// verdict (with wall-clock timing if `timing`) or the problems.
    pub fn finish(mut self, timing: bool) -> MergeOutcome {
        let mut notes = Vec::new();
        if let Some(first) = self.first_skipped {
            notes.push(format!(
                "skipped {} lines that are not JSON (the first at {}): a log's other output",
                thousands(self.skipped),
                self.at(first)
            ));
        }
        if let Some(first) = self.first_plain {
            let at = self.at(first);
            self.problem(format!(
                "{at}: {} seed lines without `campaign` (the first here): written by \
                 `explore --json` without `--summary`; merge needs `explore --json --summary`",
                thousands(self.plain)
            ));
        }
        let campaigns = std::mem::take(&mut self.campaigns);
        if campaigns.is_empty() && self.problems_total == 0 {
            self.problem(
                "no campaign in the input: no seed or summary line of \
                 `fenced-sim explore --json --summary`"
                    .to_string(),
            );
        }
        if campaigns.len() > 1 {
            self.mixed(&campaigns);
        }
        let several = campaigns.len() > 1;
        let mut failed_seen = 0;
        let mut verdict = None;
        for (id, campaign) in campaigns {
            failed_seen += campaign.totals.failed;
            let prefix = if several {
                format!("campaign {id}: ")
            } else {
                String::new()
            };
            let before = self.problems_total;
            self.check(&prefix, &campaign);
            if !several && self.problems_total == before {
                verdict = self.verdict(id, campaign, timing);
            }
        }
        if self.problems_total > 0 {
            verdict = None;
        }
        MergeOutcome {
            verdict,
            problems: self.problems,
            problems_total: self.problems_total,
            notes,
            failed_seen,
        }
    }

    /// The problem of an input that mixes campaigns, naming them and how
    /// the first two differ.
    fn mixed(&mut self, campaigns: &BTreeMap<String, Campaign>) {
        let mut named: Vec<(&String, &Campaign)> = campaigns.iter().collect();
        named.sort_by_key(|(_, c)| (c.first_at.input, c.first_at.line));
        let listed: Vec<String> = named
            .iter()
            .take(MAX_CAMPAIGNS_LISTED)
            .map(|(id, c)| {
                let what = c.identity.as_ref().map_or_else(
                    || format!("campaign {id} (no summary line read)"),
                    |i| format!("campaign {id} ({})", i.describe()),
                );
                format!("{what}, first at {}", self.at(c.first_at))
            })
            .collect();
        let more = campaigns.len().saturating_sub(MAX_CAMPAIGNS_LISTED);
        let differ = match (named[0].1.identity.as_ref(), named[1].1.identity.as_ref()) {
            (Some(a), Some(b)) => {
                format!("; the first two differ in {}", a.differences(b).join(", "))
            }
            _ => String::new(),
        };
        self.problem(format!(
            "the input mixes {} campaigns: {}{}{differ}; merge each campaign's shards apart",
            campaigns.len(),
            listed.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        ));
    }

    /// Checks one campaign's shards against their plans.
    fn check(&mut self, prefix: &str, c: &Campaign) {
        let Some(identity) = &c.identity else {
            let shards: Vec<String> = c.shardings.keys().map(|n| n.to_string()).collect();
            self.problem(format!(
                "{prefix}no shard finished: {} seed lines (of shard count {}) but no summary \
                 line, so which seeds the campaign has is unknown: did every pod fail?",
                thousands(c.seed_lines),
                shards.join(", ")
            ));
            return;
        };
        if c.shardings.len() > 1 {
            let counts: Vec<String> = c
                .shardings
                .iter()
                .map(|(n, (at, _))| format!("{n} (first at {})", self.at(*at)))
                .collect();
            self.problem(format!(
                "{prefix}shards of different shard counts mixed: {}: merge shards of one \
                 split of the campaign",
                counts.join(" and ")
            ));
            return;
        }
        let Some((&n, (_, shards))) = c.shardings.iter().next() else {
            return;
        };
        let with_seeds = n.min(identity.seeds);
        let mut unaccounted: u128 = 0;
        for (&i, shard) in shards {
            let name = format!("{prefix}shard {i}/{n}");
            if i >= with_seeds {
                self.problem(format!(
                    "{name}: has no seeds in a campaign of {} seeds",
                    identity.seeds
                ));
                continue;
            }
            let plan = identity.plan(i, n);
            let runs = |gaps: &[(u64, u64)], total: u64| {
                let listed: u64 = gaps.iter().map(|(a, b)| (b - a) / n + 1).sum();
                let mut text: Vec<String> =
                    gaps.iter().map(|&(a, b)| describe_run(a, b, n)).collect();
                if listed < total {
                    text.push("…".to_string());
                }
                text.join("; ")
            };
            if let Some((first, seed_at)) = shard.first_off_step {
                let at = self.at(seed_at);
                self.problem(format!(
                    "{name}: {} seed lines are not {n} seeds apart from the others (the first: \
                     seed {first} at {at}): lines of another split?",
                    shard.off_step
                ));
            }
            if let Some((lo, hi)) = shard.seen.bounds() {
                if !plan.contains(lo) || !plan.contains(hi) {
                    self.problem(format!(
                        "{name}: seed lines for seeds that are not its own (seen {lo} to {hi}; \
                         its seeds are {})",
                        plan_text(&plan)
                    ));
                    continue;
                }
            }
            if let Some((seed, at)) = shard.first_repeat {
                let at = self.at(at);
                self.problem(format!(
                    "{name}: {} seed lines repeat seeds already seen (the first: seed {seed} at \
                     {at}): the same shard given twice, or a failed attempt's log with its \
                     retry's? Give each shard once",
                    thousands(shard.repeats)
                ));
            }
            let seen = shard.seen.count();
            match shard.summary {
                None => {
                    let (gaps, total) = shard.seen.missing(&plan, MAX_GAPS_LISTED);
                    unaccounted += u128::from(total);
                    self.problem(format!(
                        "{name} did not finish (no summary line: its pod failed, or its log \
                         was cut): {} of its {} seeds accounted for; missing: {}",
                        thousands(seen),
                        thousands(plan.len()),
                        runs(&gaps, total)
                    ));
                }
                Some(f) if seen > 0 => match f.seed_lines {
                    SeedLines::All if seen != plan.len() => {
                        let (gaps, total) = shard.seen.missing(&plan, MAX_GAPS_LISTED);
                        self.problem(format!(
                            "{name}: its summary is here but {} of its {} seed lines are \
                             missing ({}): the log was cut; collect it again, or merge only its \
                             summary line",
                            thousands(total),
                            thousands(plan.len()),
                            runs(&gaps, total)
                        ));
                    }
                    SeedLines::All => {
                        let l = shard.lines;
                        let mut differ = Vec::new();
                        for (what, lines, summary) in [
                            ("failed", l.failed, f.failed),
                            ("events", l.events, f.events),
                            ("virtual_ms", l.virtual_ms, f.virtual_ms),
                            (
                                "determinism_checked",
                                l.determinism_checked,
                                f.determinism_checked,
                            ),
                        ] {
                            if lines != summary {
                                differ.push(format!("{what} {lines} vs {summary}"));
                            }
                        }
                        if !differ.is_empty() {
                            self.problem(format!(
                                "{name}: its seed lines and its summary ({}) disagree: {} \
                                 (lines vs summary)",
                                self.at(f.at),
                                differ.join(", ")
                            ));
                        }
                    }
                    SeedLines::Failures => {
                        if seen != f.failed || shard.lines.passed > 0 {
                            self.problem(format!(
                                "{name}: written with --failures-only, its summary counts {} \
                                 failing seeds, but {} seed lines are here ({} of passing seeds)",
                                f.failed, seen, shard.lines.passed
                            ));
                        }
                    }
                },
                Some(_) => {}
            }
        }
        // Shards that wrote nothing at all: the gaps between those seen.
        let mut absent: Vec<(u64, u64)> = Vec::new();
        let mut next = 0u64;
        for &i in shards.keys().take_while(|&&i| i < with_seeds) {
            if i > next {
                absent.push((next, i - 1));
            }
            next = i + 1;
        }
        if next < with_seeds {
            absent.push((next, with_seeds - 1));
        }
        let mut named = 0;
        let (mut rest_shards, mut rest_seeds, mut rest_first) = (0u128, 0u128, None);
        for &(a, b) in &absent {
            let seeds = seeds_in_shards(identity.seeds, n, a, b);
            unaccounted += seeds;
            let mut i = a;
            while i <= b && named < MAX_SHARDS_LISTED {
                let plan = identity.plan(i, n);
                self.problem(format!(
                    "{prefix}shard {i}/{n} wrote nothing (its pod never ran, or its log was not \
                     collected): seeds {}",
                    plan_text(&plan)
                ));
                named += 1;
                i += 1;
            }
            if i <= b {
                rest_first.get_or_insert(i);
                rest_shards += u128::from(b - i) + 1;
                rest_seeds += seeds_in_shards(identity.seeds, n, i, b);
            }
        }
        if let Some(first) = rest_first {
            self.problem(format!(
                "{prefix}and {} more shards wrote nothing (from shard {first}/{n} on), with {} \
                 seeds",
                thousands(rest_shards),
                thousands(rest_seeds)
            ));
        }
        if unaccounted > 0 {
            self.problem(format!(
                "{prefix}{} of the campaign's {} seeds are unaccounted for ({})",
                thousands(unaccounted),
                thousands(identity.seeds),
                identity.describe()
            ));
        }
    }

    /// The verdict of a campaign that passed [`check`](Self::check).
    fn verdict(&self, id: String, c: Campaign, timing: bool) -> Option<Verdict> {
        let identity = c.identity?;
        let n = c.shardings.keys().next().copied().unwrap_or(1);
        let listed = c.failures.len() as u64;
        let timing = timing.then(|| {
            let seconds = |ms: u128| ms as f64 / 1000.0;
            let per = |x: f64, s: f64| (s > 0.0).then(|| (x / s * 10.0).round() / 10.0);
            let (wall, thread) = (seconds(c.wall_ms), seconds(c.thread_ms));
            let seeds = c.totals.seeds as f64;
            let virtual_s = c.totals.virtual_ms as f64 / 1000.0;
            CampaignTiming {
                shards: n.min(identity.seeds),
                shard_wall_s: wall,
                slowest_shard_s: seconds(u128::from(c.slowest_ms)),
                thread_s: thread,
                seeds_per_s_per_shard: per(seeds, wall),
                seeds_per_s_per_thread: per(seeds, thread),
                acceleration_per_shard: per(virtual_s, wall),
                acceleration_per_thread: per(virtual_s, thread),
            }
        });
        Some(Verdict {
            campaign: id,
            identity,
            ok: c.totals.failed == 0,
            never_exercised: c
                .totals
                .never_exercised()
                .into_iter()
                .map(str::to_string)
                .collect(),
            failures_omitted: c.totals.failed.saturating_sub(listed),
            failures: c.failures.into_values().collect(),
            totals: c.totals,
            timing,
        })
    }
}

/// A shard's seeds in a few words.
fn plan_text(plan: &crate::explore::SeedRange) -> String {
    match (plan.nth(0), plan.last()) {
        (Some(first), Some(last)) => describe_run(first, last, plan.shards),
        _ => "none".to_string(),
    }
}

/// How many seeds shards `a..=b` of `n` have in a campaign of `seeds`:
/// each has `seeds / n`, and the first `seeds % n` one more.
fn seeds_in_shards(seeds: u64, n: u64, a: u64, b: u64) -> u128 {
    let (q, r) = (u128::from(seeds / n), seeds % n);
    let shards = u128::from(b - a) + 1;
    let extra = if a < r {
        u128::from(b.min(r - 1) - a) + 1
    } else {
        0
    };
    shards * q + extra
}

/// `a + b`, field by field, or `None` if a count overflows.
fn add_totals(a: &CampaignSummary, b: &CampaignSummary) -> Option<CampaignSummary> {
    let mut by_invariant = a.failures_by_invariant.clone();
    for (k, v) in &b.failures_by_invariant {
        let slot = by_invariant.entry(k.clone()).or_insert(0);
        *slot = slot.checked_add(*v)?;
    }
    let cov = |x: &crate::report::Coverage, y: &crate::report::Coverage| {
        Some(crate::report::Coverage {
            stale_write_rejected: x.stale_write_rejected.checked_add(y.stale_write_rejected)?,
            takeover_during_pause: x
                .takeover_during_pause
                .checked_add(y.takeover_during_pause)?,
            step_down_on_deadline: x
                .step_down_on_deadline
                .checked_add(y.step_down_on_deadline)?,
            renewal_lost: x.renewal_lost.checked_add(y.renewal_lost)?,
            zombie_fenced: x.zombie_fenced.checked_add(y.zombie_fenced)?,
            refused: x.refused.checked_add(y.refused)?,
            leader_stopped: x.leader_stopped.checked_add(y.leader_stopped)?,
            leader_abdicated: x.leader_abdicated.checked_add(y.leader_abdicated)?,
        })
    };
    Some(CampaignSummary {
        seeds: a.seeds.checked_add(b.seeds)?,
        failed: a.failed.checked_add(b.failed)?,
        determinism_checked: a.determinism_checked.checked_add(b.determinism_checked)?,
        events: a.events.checked_add(b.events)?,
        failures_by_invariant: by_invariant,
        coverage: cov(&a.coverage, &b.coverage)?,
        seeds_covering: cov(&a.seeds_covering, &b.seeds_covering)?,
        virtual_ms: a.virtual_ms.checked_add(b.virtual_ms)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_seed_counts_are_arithmetic() {
        // 10 seeds in 4 shards: 3, 3, 2, 2.
        assert_eq!(seeds_in_shards(10, 4, 0, 0), 3);
        assert_eq!(seeds_in_shards(10, 4, 1, 2), 5);
        assert_eq!(seeds_in_shards(10, 4, 2, 3), 4);
        assert_eq!(seeds_in_shards(10, 4, 0, 3), 10);
        assert_eq!(
            seeds_in_shards(u64::MAX, u64::MAX, 0, u64::MAX - 1),
            u128::from(u64::MAX)
        );
        assert_eq!(seeds_in_shards(10_000_000, 7, 0, 6), 10_000_000);
    }
}
