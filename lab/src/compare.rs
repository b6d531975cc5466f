//! The real run next to the simulator's prediction of it.
//!
//! Both reports come from the same checker (the real one over the run's
//! histories, the simulated one over the simulation's observations), so the
//! same figures are compared: the terms (owner, token), how many, the
//! highest token, the failover gaps, the writes accepted and rejected,
//! split-brain, and the violations.
//!
//! # What must agree, and what may differ
//!
//! A real run is not the simulation: its processes start after `fork`,
//! `exec` and a PostgreSQL connection; its timers fire late by scheduling
//! jitter; the lease store decides on the database's clock; each proxy adds
//! its latency to every round trip. So:
//!
//! * **must agree** (a disagreement is flagged): every `[expect]` key the
//!   scenario checks — met in both runs or unmet in both, since that is what
//!   the scenario is about ([`ExpectationAgreement`]) — the violations (by
//!   invariant), split-brain yes/no, the number of terms, the highest token
//!   (unless the design's tokens count every client's writes — ZooKeeper's
//!   zxid, etcd's revision — and the real one is a number of the burst of
//!   concurrent writes the simulated one raced, [`Report::max_token_race`]:
//!   the server numbers those writes in the order its network and scheduler
//!   give it, which the simulator's draws do not decide), the number of
//!   failovers (unless the terms and tokens are the same, or the highest
//!   raced so, and only their holders differ: then whether a failover
//!   happened follows from who won the race for the lease, and may
//!   differ), and each failover gap within [`gap_tolerance`] of the
//!   simulated one;
//! * **may differ** (listed, with the likely reason, not flagged): who won a
//!   race between followers, a raced token's number, and the number of
//!   writes (their ticks run on
//!   each process's own timer from its own start);
//! * **not compared** under random loss or duplication (`[network] loss` or
//!   `duplicate` above 0): the number of terms, the highest token, the
//!   failovers and their gaps ([`SAMPLED_FIGURES`]). Each message's fate is a
//!   fresh draw, and the real run draws at other moments than the simulation
//!   (other chunks, other timings), so these counts are two samples of a
//!   distribution, not a prediction and its outcome; what such a scenario
//!   is about is in its `[expect]` (at least so many spurious failovers, no
//!   split-brain), and that is compared. They are listed as differences,
//!   never flagged, and `--runs` leaves them out of its counts.
//!
//! The failover gap tolerance is `max(20 % of the simulated gap, 2 ×
//! retry_interval) + write_interval`: a follower notices a free lease on its
//! retry tick (one retry interval of phase, plus a late one), and a gap is
//! measured between accepted writes, which land on each leader's
//! `write_interval` grid. The retry interval is the design's: the fenced
//! elector's `[election] retry_interval`, or the connection lock's own
//! (`crate::design::follower_retry`).

use std::fmt;
use std::time::Duration;

use fenced_sim::{Report, Scenario, TokenRace};
use serde_json::{json, Value};

/// The figures a scenario with random loss or duplication does not compare
/// (see the module docs), as [`Difference::what`] and `--runs` name them.
pub const SAMPLED_FIGURES: [&str; 4] = ["terms", "highest token", "failovers", "failover gaps"];

/// The figures of one run that are compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Each term's owner and token, in start order.
    pub terms: Vec<(String, u64)>,
    /// The highest token granted.
    pub max_token: u64,
    /// The tokens the highest could have been in another order of the
    /// concurrent writes it raced (the simulation's
    /// [`Report::max_token_race`]; a real run's report has none).
    pub max_token_race: Option<TokenRace>,
    /// Each failover's gap, ms, in order.
    pub gaps_ms: Vec<u64>,
    /// Writes accepted.
    pub accepted: u64,
    /// Writes rejected (stale or wrong writer).
    pub rejected: u64,
    /// Split-brain.
    pub split_brain: bool,
    /// The invariants violated, sorted, each once.
    pub violations: Vec<String>,
}

impl Outcome {
    /// The figures of `report`.
    pub fn of(report: &Report) -> Outcome {
        let mut violations: Vec<String> = report
            .violations
            .iter()
            .map(|v| v.invariant.clone())
            .collect();
        violations.sort();
        violations.dedup();
        Outcome {
            terms: report
                .terms
                .iter()
                .map(|t| (t.owner.clone(), t.token))
                .collect(),
            max_token: report.max_token,
            max_token_race: report.max_token_race,
            gaps_ms: report.failovers.iter().map(|f| f.gap_ms).collect(),
            accepted: report.writes.accepted,
            rejected: report.writes.rejected_stale + report.writes.rejected_wrong_writer,
            split_brain: report.split_brain,
            violations,
        }
    }

    /// The longest failover gap, ms.
    pub fn max_gap_ms(&self) -> Option<u64> {
        self.gaps_ms.iter().copied().max()
    }

    fn to_json(&self) -> Value {
        json!({
            "terms": self.terms.iter().map(|(owner, token)| json!({"owner": owner, "token": token})).collect::<Vec<_>>(),
            "term_count": self.terms.len(),
            "max_token": self.max_token,
            "max_token_race": self.max_token_race,
            "failover_gaps_ms": self.gaps_ms,
            "failover_gap_max_ms": self.max_gap_ms(),
            "writes_accepted": self.accepted,
            "writes_rejected": self.rejected,
            "split_brain": self.split_brain,
            "violations": self.violations,
        })
    }
}

/// The failover gap tolerance for a simulated gap of `simulated_ms` (see the
/// module docs), in ms.
pub fn gap_tolerance(simulated_ms: u64, retry_interval: Duration, write_interval: Duration) -> u64 {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    (simulated_ms / 5)
        .max(ms(retry_interval).saturating_mul(2))
        .saturating_add(ms(write_interval))
}

/// One figure on which the runs differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The figure.
    pub what: String,
    /// Its real value.
    pub real: String,
    /// Its simulated value.
    pub simulated: String,
    /// The likely reason.
    pub reason: String,
    /// Whether the figure must agree (a disagreement), or may differ.
    pub disagreement: bool,
}

/// One `[expect]` key of the scenario, judged on both runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectationAgreement {
    /// The key (`min_rejected_writes`, ...).
    pub key: &'static str,
    /// Why the real run does not meet it, or `None` when it does.
    pub real_unmet: Option<String>,
    /// Why the simulation does not meet it, or `None` when it does.
    pub simulated_unmet: Option<String>,
}

impl ExpectationAgreement {
    /// Whether both runs meet it, or both miss it.
    pub fn agrees(&self) -> bool {
        self.real_unmet.is_some() == self.simulated_unmet.is_some()
    }
}

/// The real run next to the simulated one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comparison {
    /// The real run's figures.
    pub real: Outcome,
    /// The simulation's.
    pub simulated: Outcome,
    /// Every difference, disagreements first.
    pub differences: Vec<Difference>,
    /// The tolerance of each simulated failover gap, ms.
    pub gap_tolerances_ms: Vec<u64>,
    /// Every expectation the scenario checks, on both runs: what the
    /// scenario is about. One met in one run and not in the other is a
    /// disagreement.
    pub expectations: Vec<ExpectationAgreement>,
    /// The figures not compared: [`SAMPLED_FIGURES`] under random loss or
    /// duplication, else none.
    pub not_compared: Vec<&'static str>,
}

const JITTER: &str = "real scheduling jitter: a timer fired late, or a retry landed on the other \
                      side of an expiry";
const RACE: &str = "a race between followers: whose retry reached PostgreSQL first is real \
                    scheduling, not the simulator's seeded draw";
const TOKEN_RACE: &str = "concurrent writes numbered in another order: the real highest token is \
                          one of the burst of writes it raced in the simulation (max_token_race), \
                          whose order a real server takes from its network and scheduler, not \
                          from the simulator's draws";
const TICKS: &str = "each real process starts its write ticks from its own start (fork, exec, \
                     connection set-up), and the database clock decides expiry";
const GAPS: &str = "connection set-up through the proxy after the fault, proxy latency on each \
                    round trip, the database clock, and scheduling jitter";
const EXPECTATION: &str = "what the scenario is about holds in one run and not in the other: \
                           a story that depends on a coincidence of the simulator's schedule, or \
                           a real difference — read the real run's histories (--keep DIR) next \
                           to `fenced-sim run --trace`";
const SAMPLED: &str = "random loss or duplication: each message's fate is a fresh draw, made at \
                       other moments for real than in the simulation, so this count is a sample, \
                       not a prediction (not compared; the scenario's [expect] is)";
const VERDICT: &str = "a real difference in behaviour: read the real run's histories \
                       (--keep DIR) next to `fenced-sim run --trace`";

impl Comparison {
    /// Compares `real` with `simulated`, both of `scenario` (scaled).
    pub fn new(scenario: &Scenario, real: &Report, simulated: &Report) -> Comparison {
        // Anchored faults that must begin are judged under `anchors` (the
        // sentence the simulator and the runner both write for one that
        // never began).
        let anchored = scenario.faults.iter().any(|f| f.anchor().is_some())
            && scenario.expect.anchors_begin != Some(false);
        let expectations: Vec<ExpectationAgreement> = scenario
            .expect
            .checked_keys()
            .into_iter()
            .chain(anchored.then_some("anchors"))
            .map(|key| ExpectationAgreement {
                key,
                real_unmet: real.expect.unmet_because(key).map(str::to_string),
                simulated_unmet: simulated.expect.unmet_because(key).map(str::to_string),
            })
            .collect();
        let (real, simulated) = (Outcome::of(real), Outcome::of(simulated));
        let sampled = scenario.network.loss > 0.0 || scenario.network.duplicate > 0.0;
        let (counts_reason, gaps_reason) = if sampled {
            (SAMPLED, SAMPLED)
        } else {
            (JITTER, GAPS)
        };
        let gap_tolerances_ms: Vec<u64> = simulated
            .gaps_ms
            .iter()
            .map(|&gap| {
                gap_tolerance(
                    gap,
                    crate::design::follower_retry(scenario),
                    scenario.work.write_interval,
                )
            })
            .collect();
        let mut gaps = Vec::new();
        for (index, ((r, s), tolerance)) in real
            .gaps_ms
            .iter()
            .zip(&simulated.gaps_ms)
            .zip(&gap_tolerances_ms)
            .enumerate()
        {
            if r != s {
                gaps.push(Difference {
                    what: format!("failover {} gap (tolerance ±{tolerance} ms)", index + 1),
                    real: format!("{r} ms"),
                    simulated: format!("{s} ms"),
                    reason: gaps_reason.to_string(),
                    disagreement: !sampled && r.abs_diff(*s) > *tolerance,
                });
            }
        }
        let mut differences = Vec::new();
        let mut differ = |what: &str, r: String, s: String, reason: &str, disagreement: bool| {
            if r != s {
                differences.push(Difference {
                    what: what.to_string(),
                    real: r,
                    simulated: s,
                    reason: reason.to_string(),
                    disagreement,
                });
            }
        };
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        differ(
            "violations",
            list(&real.violations),
            list(&simulated.violations),
            VERDICT,
            true,
        );
        differ(
            "split-brain",
            real.split_brain.to_string(),
            simulated.split_brain.to_string(),
            VERDICT,
            true,
        );
        differ(
            "terms",
            real.terms.len().to_string(),
            simulated.terms.len().to_string(),
            counts_reason,
            !sampled,
        );
        // A token that counts every client's writes (ZooKeeper's zxid,
        // etcd's revision) taken in a burst of concurrent writes is the
        // same outcome at any number of that burst.
        let token_raced = real.max_token != simulated.max_token
            && simulated
                .max_token_race
                .is_some_and(|race| race.contains(real.max_token));
        differ(
            "highest token",
            real.max_token.to_string(),
            simulated.max_token.to_string(),
            if token_raced {
                TOKEN_RACE
            } else {
                counts_reason
            },
            !sampled && !token_raced,
        );
        let owners = |o: &Outcome| {
            o.terms
                .iter()
                .map(|(owner, token)| format!("{owner}:{token}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        // The same terms with the same tokens (or the highest one of its
        // raced burst), held by other nodes: a race
        // for the lease decided otherwise, and whether a failover happened
        // follows from who won it — the old leader taking its lease back
        // after the servers stalled is no failover, a follower winning is
        // one (`servers-stalled`: PostgreSQL's backends, woken together by
        // SIGCONT, take the row lock in the scheduler's order; the
        // simulated store answers its queued requests in arrival order).
        let race_decides = real.terms.len() == simulated.terms.len()
            && (real.max_token == simulated.max_token || token_raced)
            && owners(&real) != owners(&simulated);
        differ(
            "failovers",
            real.gaps_ms.len().to_string(),
            simulated.gaps_ms.len().to_string(),
            if race_decides { RACE } else { counts_reason },
            !sampled && !race_decides,
        );
        differ(
            "term owners",
            owners(&real),
            owners(&simulated),
            RACE,
            false,
        );
        differ(
            "writes accepted",
            real.accepted.to_string(),
            simulated.accepted.to_string(),
            TICKS,
            false,
        );
        differ(
            "writes rejected",
            real.rejected.to_string(),
            simulated.rejected.to_string(),
            TICKS,
            false,
        );
        differences.extend(gaps);
        let verdict = |unmet: &Option<String>| match unmet {
            None => "met".to_string(),
            Some(why) => format!("unmet ({why})"),
        };
        for expectation in expectations.iter().filter(|e| !e.agrees()) {
            differences.push(Difference {
                what: format!("[expect] {}", expectation.key),
                real: verdict(&expectation.real_unmet),
                simulated: verdict(&expectation.simulated_unmet),
                reason: EXPECTATION.to_string(),
                disagreement: true,
            });
        }
        differences.sort_by_key(|d| !d.disagreement);
        Comparison {
            real,
            simulated,
            differences,
            gap_tolerances_ms,
            expectations,
            not_compared: if sampled {
                SAMPLED_FIGURES.to_vec()
            } else {
                Vec::new()
            },
        }
    }

    /// Whether every figure that must agree does.
    pub fn agrees(&self) -> bool {
        !self.differences.iter().any(|d| d.disagreement)
    }

    /// The comparison as JSON (the `comparison` key of `run --json`).
    pub fn to_json(&self) -> Value {
        json!({
            "agrees": self.agrees(),
            "real": self.real.to_json(),
            "simulated": self.simulated.to_json(),
            "failover_gap_tolerances_ms": self.gap_tolerances_ms,
            "expectations": self.expectations.iter().map(|e| json!({
                "key": e.key,
                "real_met": e.real_unmet.is_none(),
                "simulated_met": e.simulated_unmet.is_none(),
                "real_unmet": e.real_unmet,
                "simulated_unmet": e.simulated_unmet,
                "agrees": e.agrees(),
            })).collect::<Vec<_>>(),
            "tolerance": "max(20% of the simulated gap, 2 x retry_interval) + write_interval",
            "not_compared": self.not_compared,
            "differences": self.differences.iter().map(|d| json!({
                "what": d.what,
                "real": d.real,
                "simulated": d.simulated,
                "reason": d.reason,
                "disagreement": d.disagreement,
            })).collect::<Vec<_>>(),
        })
    }
}

fn gaps_text(gaps: &[u64]) -> String {
    if gaps.is_empty() {
        return "none".to_string();
    }
    let max = gaps.iter().copied().max().unwrap_or(0);
    let each: Vec<String> = gaps.iter().map(|g| format!("{g}")).collect();
    format!("max {max} ms ({} ms)", each.join(", "))
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (r, s) = (&self.real, &self.simulated);
        let terms = |o: &Outcome| {
            let shown: Vec<String> = o
                .terms
                .iter()
                .take(6)
                .map(|(owner, token)| format!("{owner}:{token}"))
                .collect();
            let more = o.terms.len().saturating_sub(6);
            if more > 0 {
                format!("{} +{more}", shown.join(" "))
            } else if shown.is_empty() {
                "none".to_string()
            } else {
                shown.join(" ")
            }
        };
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        let rows = [
            ("terms (owner:token)", terms(r), terms(s)),
            (
                "number of terms",
                r.terms.len().to_string(),
                s.terms.len().to_string(),
            ),
            (
                "highest token",
                r.max_token.to_string(),
                s.max_token.to_string(),
            ),
            (
                "failover gaps",
                gaps_text(&r.gaps_ms),
                gaps_text(&s.gaps_ms),
            ),
            (
                "writes accepted",
                r.accepted.to_string(),
                s.accepted.to_string(),
            ),
            (
                "writes rejected",
                r.rejected.to_string(),
                s.rejected.to_string(),
            ),
            (
                "split-brain writes",
                if r.split_brain { "yes" } else { "no" }.to_string(),
                if s.split_brain { "yes" } else { "no" }.to_string(),
            ),
            ("violations", list(&r.violations), list(&s.violations)),
        ];
        let width = rows
            .iter()
            .map(|(_, real, _)| real.chars().count())
            .max()
            .unwrap_or(0)
            .max(4);
        writeln!(f, "real run vs simulation (same scenario, scale and seed):")?;
        writeln!(f, "  {:<20} {:<width$}  simulated", "", "real")?;
        for (what, real, simulated) in &rows {
            writeln!(f, "  {what:<20} {real:<width$}  {simulated}")?;
        }
        if self.differences.is_empty() {
            return write!(f, "agreement: every figure is the same");
        }
        writeln!(f, "differences:")?;
        for d in &self.differences {
            let tag = if d.disagreement {
                "DISAGREES"
            } else {
                "may differ"
            };
            writeln!(
                f,
                "  [{tag}] {}: real {}, simulated {} — likely {}",
                d.what, d.real, d.simulated, d.reason
            )?;
        }
        if self.agrees() {
            write!(
                f,
                "agreement: violations, split-brain, terms, tokens and failover gaps agree"
            )
        } else {
            write!(
                f,
                "DISAGREEMENT: the real run and the simulation differ on a figure that must agree"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fenced_sim::report::{Failover, Term};

    /// leader-crash, with a 200 ms retry interval and 100 ms writes.
    fn scenario() -> Scenario {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/leader-crash.toml");
        let mut scenario: Scenario = fenced_sim::file::load(&path).expect("a shipped scenario");
        scenario.election.retry_interval = Duration::from_millis(200);
        scenario.work.write_interval = Duration::from_millis(100);
        scenario
    }

    fn report(terms: &[(&str, u64)], gaps: &[u64], split_brain: bool) -> Report {
        let mut short = scenario();
        short.duration = Duration::from_secs(2);
        short.faults.clear();
        let mut report =
            fenced_sim::Simulation::from_scenario(&short, fenced_sim::RunOptions::with_seed(None))
                .expect("the scenario runs")
                .report();
        report.terms = terms
            .iter()
            .map(|(owner, token)| Term {
                node: owner.to_string(),
                owner: owner.to_string(),
                token: *token,
                start_ms: 0,
                end_ms: 0,
                end_reason: "run-ended".to_string(),
            })
            .collect();
        report.max_token = terms.iter().map(|t| t.1).max().unwrap_or(0);
        report.failovers = gaps
            .iter()
            .map(|&gap_ms| Failover {
                from: "a".to_string(),
                to: "b".to_string(),
                gap_ms,
                from_token: 1,
                to_token: 2,
                at_ms: 0,
                from_owner: "a#1".to_string(),
                to_owner: "b#1".to_string(),
            })
            .collect();
        report.split_brain = split_brain;
        report
    }

    #[test]
    fn an_anchored_fault_that_began_in_one_run_only_is_a_disagreement() {
        // The real run's anchor never fired: its `anchors` sentence against
        // the simulation's none is an expectation met in one run only.
        let mut scenario = scenario();
        let crash = scenario.faults.remove(0);
        let when = fenced_sim::Anchor::on(fenced_sim::AnchorEvent::TermStarted);
        scenario.faults.push(crash.anchored(when));
        let sim = report(&[("a#1", 1)], &[], false);
        let mut real = sim.clone();
        real.expect.met = false;
        real.expect
            .unmet
            .push("anchors: fault[0] (crash, at term-started of any node) never began".into());
        let comparison = Comparison::new(&scenario, &real, &sim);
        assert!(!comparison.agrees(), "{comparison}");
        assert!(comparison.expectations.iter().any(|e| e.key == "anchors"));
        // Explore's drawn anchors need not begin: no such key.
        scenario.expect.anchors_begin = Some(false);
        let comparison = Comparison::new(&scenario, &real, &sim);
        assert!(comparison.expectations.iter().all(|e| e.key != "anchors"));
    }

    #[test]
    fn the_gap_tolerance_is_the_larger_of_a_fifth_and_two_retries_plus_a_write_interval() {
        let (retry, write) = (Duration::from_millis(200), Duration::from_millis(100));
        assert_eq!(gap_tolerance(3000, retry, write), 700);
        assert_eq!(gap_tolerance(1000, retry, write), 500);
    }

    #[test]
    fn another_follower_winning_may_differ_but_a_gap_out_of_tolerance_or_split_brain_disagrees() {
        // Proves which differences are flagged: owners and write counts are
        // informational; gaps beyond the tolerance and verdicts are not.
        let scenario = scenario();
        let sim = report(&[("a#1", 1), ("c#1", 2)], &[3000], false);
        let near = report(&[("a#1", 1), ("b#1", 2)], &[3500], false);
        let comparison = Comparison::new(&scenario, &near, &sim);
        assert!(comparison.agrees(), "{comparison}");
        assert!(comparison
            .differences
            .iter()
            .any(|d| d.what == "term owners"));
        let far = report(&[("a#1", 1), ("b#1", 2)], &[9000], true);
        let comparison = Comparison::new(&scenario, &far, &sim);
        assert!(!comparison.agrees());
        let flagged: Vec<&str> = comparison
            .differences
            .iter()
            .filter(|d| d.disagreement)
            .map(|d| d.what.as_str())
            .collect();
        assert!(flagged.contains(&"split-brain"), "{flagged:?}");
        assert!(
            flagged.iter().any(|w| w.starts_with("failover 1 gap")),
            "{flagged:?}"
        );
    }

    #[test]
    fn a_failover_that_only_another_winner_of_the_race_makes_may_differ() {
        // servers-stalled for real: node-a took its lease back (token 2, no
        // failover); simulated, node-b won the race for it (a failover).
        let scenario = scenario();
        let sim = report(&[("a#1", 1), ("b#1", 2)], &[3000], false);
        let real = report(&[("a#1", 1), ("a#1", 2)], &[], false);
        let comparison = Comparison::new(&scenario, &real, &sim);
        assert!(comparison.agrees(), "{comparison}");
        let failovers = comparison
            .differences
            .iter()
            .find(|d| d.what == "failovers")
            .expect("listed");
        assert!(!failovers.disagreement);
        // Other tokens, or another number of terms, are no race: flagged.
        let real = report(&[("a#1", 1), ("a#1", 3)], &[], false);
        assert!(!Comparison::new(&scenario, &real, &sim).agrees());
        let real = report(&[("a#1", 1)], &[], false);
        assert!(!Comparison::new(&scenario, &real, &sim).agrees());
    }

    #[test]
    fn a_zxid_numbered_in_another_order_of_its_burst_may_differ_and_one_outside_it_disagrees() {
        // servers-stalled on ZooKeeper: at SIGCONT the three sessions expire
        // and three clients reconnect at once; their creates, errors and
        // sessions are numbered in the scheduler's order. Simulated: node-c
        // won with zxid 10 of the burst 3..=14 (a failover); for real node-a
        // took it back with 8 (none).
        let scenario = scenario();
        let mut sim = report(&[("a#1", 1), ("c#1", 10)], &[3000], false);
        sim.max_token_race = Some(TokenRace { low: 3, high: 14 });
        let real = report(&[("a#1", 1), ("a#1", 8)], &[], false);
        let comparison = Comparison::new(&scenario, &real, &sim);
        assert!(comparison.agrees(), "{comparison}");
        for what in ["highest token", "failovers"] {
            let difference = comparison
                .differences
                .iter()
                .find(|d| d.what == what)
                .expect("listed");
            assert!(!difference.disagreement, "{what}");
        }
        assert!(comparison
            .differences
            .iter()
            .any(|d| d.what == "highest token" && d.reason.starts_with("concurrent writes")));
        assert_eq!(
            comparison.to_json()["simulated"]["max_token_race"]["high"],
            14
        );
        // Outside the burst, or with no burst (a token that raced no one):
        // a disagreement, as before.
        let real = report(&[("a#1", 1), ("a#1", 15)], &[], false);
        assert!(!Comparison::new(&scenario, &real, &sim).agrees());
        sim.max_token_race = None;
        let real = report(&[("a#1", 1), ("a#1", 8)], &[], false);
        assert!(!Comparison::new(&scenario, &real, &sim).agrees());
    }

    #[test]
    fn under_random_loss_counts_are_samples_and_only_verdicts_and_expectations_disagree() {
        // A term count off by three and a gap far out of tolerance disagree
        // on a reliable network; under random loss they are two samples,
        // listed but not flagged, and named as not compared — while a
        // split-brain in one run only still disagrees.
        let mut scenario = scenario();
        let sim = report(&[("a#1", 1), ("b#1", 2)], &[3000], false);
        let real = report(
            &[("a#1", 1), ("b#1", 2), ("c#1", 3), ("a#1", 4), ("b#1", 5)],
            &[9000, 1000, 1000, 1000],
            false,
        );
        let reliable = Comparison::new(&scenario, &real, &sim);
        assert!(!reliable.agrees(), "{reliable}");
        assert!(reliable.not_compared.is_empty());
        scenario.network.loss = 0.3;
        let lossy = Comparison::new(&scenario, &real, &sim);
        assert!(lossy.agrees(), "{lossy}");
        assert_eq!(lossy.not_compared, SAMPLED_FIGURES);
        assert!(lossy
            .differences
            .iter()
            .any(|d| d.what == "terms" && d.reason.starts_with("random loss")));
        assert_eq!(lossy.to_json()["not_compared"][0], "terms");
        let split = report(&[("a#1", 1), ("b#1", 2)], &[3000], true);
        assert!(!Comparison::new(&scenario, &split, &sim).agrees());
    }

    #[test]
    fn an_expectation_met_in_one_run_and_not_the_other_is_a_disagreement() {
        // What the scenario is about: the shipped GC pause's real run once
        // rejected no stale write while the simulation rejected one, and
        // the comparison called it "may differ". Every `[expect]` key is
        // judged on both runs; a split verdict disagrees, naming the key.
        let mut scenario = scenario();
        scenario.expect.min_rejected_writes = Some(1);
        let mut sim = report(&[("a#1", 1), ("b#1", 2)], &[3000], false);
        sim.expect = fenced_sim::report::ExpectOutcome {
            met: true,
            unmet: Vec::new(),
        };
        let mut real = sim.clone();
        real.expect = fenced_sim::report::ExpectOutcome {
            met: false,
            unmet: vec!["min_rejected_writes: expected at least 1, got 0".to_string()],
        };
        let comparison = Comparison::new(&scenario, &real, &sim);
        assert!(!comparison.agrees(), "{comparison}");
        let flagged: Vec<&Difference> = comparison
            .differences
            .iter()
            .filter(|d| d.disagreement)
            .collect();
        assert_eq!(flagged.len(), 1, "{flagged:?}");
        assert_eq!(flagged[0].what, "[expect] min_rejected_writes");
        assert!(flagged[0].real.contains("got 0"), "{flagged:?}");
        assert_eq!(flagged[0].simulated, "met");
        let keys: Vec<&str> = comparison.expectations.iter().map(|e| e.key).collect();
        // leader-crash's own keys, and the one added here.
        assert_eq!(
            keys,
            [
                "split_brain",
                "violations",
                "min_leader_changes",
                "max_leader_changes",
                "max_failover",
                "min_rejected_writes",
                "leader_at_end"
            ]
        );
        let json = comparison.to_json();
        assert_eq!(json["expectations"][5]["key"], "min_rejected_writes");
        assert_eq!(json["expectations"][5]["real_met"], false);
        assert_eq!(json["expectations"][5]["agrees"], false);
        // Unmet in both: they agree.
        let comparison = Comparison::new(&scenario, &real, &real);
        assert!(comparison.agrees(), "{comparison}");
    }
}
