//! `fenced-lab run --runs N`: agreement as a number.
//!
//! One real run agreeing with its prediction says little — real timing
//! varies from run to run. So the same scenario runs for real `N` times,
//! one after another, with seeds `S, S+1, …` (`S` the scenario's seed or
//! `--seed`; each seed draws the proxies' latencies and loss and the
//! electors' jitter, and seeds the simulation it is compared with), and the
//! lab counts how often each compared figure agreed ([`crate::compare`]):
//! the violations, split-brain, the number of terms, the highest token, the
//! number of failovers, the failover gaps, and each `[expect]` key.
//!
//! Memory does not grow with the runs beyond one line per run (at most
//! [`MAX_RUNS`]); each run's directory is removed as it ends. The exit code
//! is a single run's, over all: 0 when every real run met its expectations,
//! 1 otherwise; 2 for bad input before the first run.

use std::fmt;

use serde_json::{json, Value};

use crate::compare::Comparison;
use crate::output::{EXIT_FAIL, EXIT_PASS};
use crate::runner::{self, RunArgs, RunError};

/// The most runs one campaign makes.
pub const MAX_RUNS: u32 = 1000;

/// The figures every comparison judges, in print order; each `[expect]` key
/// of the scenario follows them.
const FIGURES: [&str; 6] = [
    "violations",
    "split-brain",
    "terms",
    "highest token",
    "failovers",
    "failover gaps",
];

/// One run of the campaign, in a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunLine {
    /// Its seed.
    pub seed: u64,
    /// Whether the real run met the scenario's expectations.
    pub passed: bool,
    /// Whether it agreed with its simulation (`None`: no simulation).
    pub agrees: Option<bool>,
    /// The figures that disagreed.
    pub disagreements: Vec<String>,
}

/// What a campaign found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    /// The scenario's name.
    pub scenario: String,
    /// The time scale.
    pub time_scale: f64,
    /// Each run, in order.
    pub runs: Vec<RunLine>,
    /// Per compared figure, in print order: in how many runs it agreed, of
    /// how many compared.
    pub figures: Vec<(String, u32, u32)>,
}

/// The figure a disagreement is about: its `what`, with the per-gap names
/// (`failover 2 gap (tolerance ±700 ms)`) folded into one.
fn figure_of(what: &str) -> String {
    if what.starts_with("failover ") && what.contains(" gap") {
        "failover gaps".to_string()
    } else {
        what.to_string()
    }
}

impl Tally {
    /// Counts one run.
    pub fn add(&mut self, seed: u64, passed: bool, comparison: Option<&Comparison>) {
        let Some(comparison) = comparison else {
            self.runs.push(RunLine {
                seed,
                passed,
                agrees: None,
                disagreements: Vec::new(),
            });
            return;
        };
        let mut disagreements: Vec<String> = Vec::new();
        for difference in comparison.differences.iter().filter(|d| d.disagreement) {
            let figure = figure_of(&difference.what);
            if !disagreements.contains(&figure) {
                disagreements.push(figure);
            }
        }
        let figures = FIGURES.iter().map(|f| f.to_string()).chain(
            comparison
                .expectations
                .iter()
                .map(|e| format!("[expect] {}", e.key)),
        );
        for figure in figures.filter(|f| !comparison.not_compared.contains(&f.as_str())) {
            let agreed = u32::from(!disagreements.contains(&figure));
            match self.figures.iter_mut().find(|(name, ..)| *name == figure) {
                Some((_, count, of)) => {
                    *count += agreed;
                    *of += 1;
                }
                None => self.figures.push((figure, agreed, 1)),
            }
        }
        self.runs.push(RunLine {
            seed,
            passed,
            agrees: Some(comparison.agrees()),
            disagreements,
        });
    }

    /// How many runs agreed on every figure, of how many were compared.
    pub fn agreed(&self) -> (usize, usize) {
        let compared = self.runs.iter().filter(|r| r.agrees.is_some()).count();
        let agreed = self.runs.iter().filter(|r| r.agrees == Some(true)).count();
        (agreed, compared)
    }

    /// How many real runs met their expectations.
    pub fn passed(&self) -> usize {
        self.runs.iter().filter(|r| r.passed).count()
    }

    /// The campaign as JSON.
    pub fn to_json(&self) -> Value {
        let (agreed, compared) = self.agreed();
        json!({
            "scenario": self.scenario,
            "time_scale": self.time_scale,
            "runs": self.runs.len(),
            "passed": self.passed(),
            "compared": compared,
            "agreed": agreed,
            "figures": self.figures.iter().map(|(figure, agreed, of)| {
                json!({"figure": figure, "agreed": agreed, "compared": of})
            }).collect::<Vec<_>>(),
            "per_run": self.runs.iter().map(|r| json!({
                "seed": r.seed,
                "passed": r.passed,
                "agrees": r.agrees,
                "disagreements": r.disagreements,
            })).collect::<Vec<_>>(),
        })
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (agreed, compared) = self.agreed();
        writeln!(
            f,
            "{}: {} real runs at --time-scale {}: {} met their expectations, {agreed} of \
             {compared} agreed with the simulation on every figure",
            self.scenario,
            self.runs.len(),
            self.time_scale,
            self.passed()
        )?;
        writeln!(f, "agreement per figure:")?;
        for (figure, agreed, of) in &self.figures {
            writeln!(f, "  {figure:<32} {agreed}/{of}")?;
        }
        Ok(())
    }
}

/// Runs `args`' scenario `runs` times for real (seeds from `base_seed` up)
/// and returns the tally and the exit code.
///
/// # Errors
/// A run that could not be made ([`RunError`]): the campaign stops there.
pub async fn run_many(args: &RunArgs, runs: u32, base_seed: u64) -> Result<(Tally, u8), RunError> {
    let mut tally = Tally {
        scenario: String::new(),
        time_scale: args.time_scale,
        ..Tally::default()
    };
    for i in 0..runs {
        let seed = base_seed.wrapping_add(u64::from(i));
        let one = RunArgs {
            seed: Some(seed),
            json: true,
            ..args.clone()
        };
        let outcome = runner::run(&one).await?;
        tally.scenario = outcome.lab.scenario.clone();
        let passed = outcome.judged.report.expect.met;
        tally.add(seed, passed, outcome.comparison.as_ref());
        if let Some(line) = tally.runs.last() {
            eprintln!(
                "run {}/{runs} seed {seed}: {}, {}",
                i + 1,
                if line.passed { "PASS" } else { "FAIL" },
                match line.agrees {
                    Some(true) => "agrees".to_string(),
                    Some(false) => format!("DISAGREES on {}", line.disagreements.join(", ")),
                    None => "no simulation".to_string(),
                }
            );
        }
    }
    let code = if tally.passed() == tally.runs.len() {
        EXIT_PASS
    } else {
        EXIT_FAIL
    };
    Ok((tally, code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_fold_into_one_figure_and_others_keep_their_names() {
        assert_eq!(
            figure_of("failover 2 gap (tolerance ±700 ms)"),
            "failover gaps"
        );
        assert_eq!(figure_of("failovers"), "failovers");
        assert_eq!(
            figure_of("[expect] min_rejected_writes"),
            "[expect] min_rejected_writes"
        );
    }

    fn comparison(disagreeing: &[&str]) -> Comparison {
        let outcome = crate::compare::Outcome {
            terms: Vec::new(),
            max_token: 1,
            max_token_race: None,
            gaps_ms: Vec::new(),
            accepted: 0,
            rejected: 0,
            split_brain: false,
            violations: Vec::new(),
        };
        Comparison {
            real: outcome.clone(),
            simulated: outcome,
            differences: disagreeing
                .iter()
                .map(|what| crate::compare::Difference {
                    what: what.to_string(),
                    real: "1".to_string(),
                    simulated: "2".to_string(),
                    reason: String::new(),
                    disagreement: true,
                })
                .collect(),
            gap_tolerances_ms: Vec::new(),
            expectations: vec![crate::compare::ExpectationAgreement {
                key: "min_rejected_writes",
                real_unmet: None,
                simulated_unmet: None,
            }],
            not_compared: Vec::new(),
        }
    }

    #[test]
    fn each_figure_counts_the_runs_it_agreed_in_whatever_else_disagreed() {
        // Three runs: clean; two gaps and a term count off (the gaps fold
        // into one figure, counted once); the expectation off.
        let mut tally = Tally::default();
        tally.add(1, true, Some(&comparison(&[])));
        tally.add(
            2,
            true,
            Some(&comparison(&[
                "failover 1 gap (tolerance ±500 ms)",
                "terms",
                "failover 2 gap (tolerance ±500 ms)",
            ])),
        );
        tally.add(
            3,
            false,
            Some(&comparison(&["[expect] min_rejected_writes"])),
        );
        tally.add(4, true, None);
        let count = |tally: &Tally, name: &str| {
            let (_, agreed, of) = tally
                .figures
                .iter()
                .find(|(figure, ..)| figure == name)
                .unwrap_or_else(|| panic!("{name} counted"));
            (*agreed, *of)
        };
        assert_eq!(count(&tally, "failover gaps"), (2, 3));
        assert_eq!(count(&tally, "terms"), (2, 3));
        assert_eq!(count(&tally, "violations"), (3, 3));
        assert_eq!(count(&tally, "[expect] min_rejected_writes"), (2, 3));
        assert_eq!(tally.figures.len(), FIGURES.len() + 1);
        assert_eq!(tally.runs[1].disagreements, ["failover gaps", "terms"]);
        assert_eq!(tally.agreed(), (1, 3));
        assert_eq!(tally.passed(), 3);
        // A run under random loss compares no counts: they are not counted.
        let mut sampled = comparison(&[]);
        sampled.not_compared = crate::compare::SAMPLED_FIGURES.to_vec();
        tally.add(5, true, Some(&sampled));
        assert_eq!(count(&tally, "terms"), (2, 3));
        assert_eq!(count(&tally, "violations"), (4, 4));
    }
}
