//! What a real run did: the steps applied with their planned and real times,
//! each process's life, and what the downstream holds at the end — as text
//! or as one JSON object (`--json`).
//!
//! It reports what was *done*. Whether the run broke an invariant is the
//! checker's verdict over the run's histories ([`crate::judge`]), printed
//! after it with the simulator's prediction ([`crate::compare`]).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::faketime::{FaketimeSupport, StepSupport};
use crate::plan::{Cause, LabPlan};
use crate::supervisor::{Ending, Process};

/// One planned step as it was applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// When the plan said.
    pub planned: Duration,
    /// When it happened, from the run's start.
    pub real: Duration,
    /// Why.
    pub cause: Cause,
    /// What the plan said.
    pub action: String,
    /// What the lab did.
    pub effect: String,
    /// For an anchored fault's action: how late it came after it was due
    /// (its event's history-clock time plus the anchor's delay and the
    /// action's offset) — the runner's reaction, measured.
    pub reaction: Option<Duration>,
}

fn cause_text(cause: Cause) -> String {
    match cause {
        Cause::Start => "start".to_string(),
        Cause::Fault(index) => format!("fault[{index}]"),
        Cause::Heal => "heal_at".to_string(),
    }
}

impl fmt::Display for Applied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>9.3}s (planned {:.3}s) {}: {}",
            self.real.as_secs_f64(),
            self.planned.as_secs_f64(),
            cause_text(self.cause),
            self.effect
        )?;
        if let Some(reaction) = self.reaction {
            write!(
                f,
                " ({:.1} ms after it was due)",
                reaction.as_secs_f64() * 1e3
            )?;
        }
        Ok(())
    }
}

/// One process's life.
#[derive(Clone, Debug, PartialEq)]
pub struct Life {
    /// `node#incarnation`.
    pub owner: String,
    /// Its pid.
    pub pid: i32,
    /// When it started.
    pub started: Duration,
    /// When it ended.
    pub ended: Option<Duration>,
    /// How.
    pub ending: String,
}

/// The report of one real run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunReport {
    /// The scenario's name.
    pub scenario: String,
    /// The seed used.
    pub seed: u64,
    /// The time scale.
    pub time_scale: f64,
    /// The run's planned length.
    pub duration: Duration,
    /// The schema the run created and dropped.
    pub schema: String,
    /// What libfaketime did, if it was needed.
    pub faketime: Option<String>,
    /// The steps, as applied.
    pub applied: Vec<Applied>,
    /// Every process.
    pub lives: Vec<Life>,
    /// What the downstream held at the end.
    pub downstream: Option<String>,
    /// Faults on links nothing travels over.
    pub notes: Vec<String>,
    /// Where the logs were kept, if they were.
    pub logs: Option<PathBuf>,
}

impl RunReport {
    /// Assembles the report.
    pub fn new(
        plan: &LabPlan,
        faketime: &FaketimeSupport,
        schema: String,
        applied: Vec<Applied>,
        processes: &[Process],
        downstream: Option<String>,
        logs: Option<PathBuf>,
    ) -> RunReport {
        let lives = processes
            .iter()
            .map(|p| Life {
                owner: format!("{}#{}", p.node, p.incarnation),
                pid: p.pid,
                started: p.started,
                ended: p.ended.as_ref().map(|(at, _)| *at),
                ending: p
                    .ended
                    .as_ref()
                    .map_or_else(|| "running".to_string(), |(_, e)| ending_text(e)),
            })
            .collect();
        RunReport {
            scenario: plan.scenario.clone(),
            seed: plan.seed,
            time_scale: plan.time_scale.factor(),
            duration: plan.end,
            schema,
            faketime: match faketime {
                FaketimeSupport::Verified {
                    library,
                    measured,
                    steps,
                } => Some(match steps {
                    StepSupport::Verified(steps) => {
                        format!("{} ({measured}; {steps})", library.display())
                    }
                    StepSupport::Unavailable { why } => format!(
                        "{} ({measured}; no runtime steps: {why})",
                        library.display()
                    ),
                }),
                _ => None,
            },
            applied,
            lives,
            downstream,
            notes: plan.notes.clone(),
            logs,
        }
    }

    /// The report as one JSON object.
    pub fn to_json(&self) -> Value {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        json!({
            "scenario": self.scenario,
            "seed": self.seed,
            "time_scale": self.time_scale,
            "duration_ms": ms(self.duration),
            "schema": self.schema,
            "faketime": self.faketime,
            "applied": self.applied.iter().map(|a| json!({
                "planned_ms": ms(a.planned),
                "real_ms": ms(a.real),
                "cause": cause_text(a.cause),
                "action": a.action,
                "effect": a.effect,
                "reaction_us": a.reaction.map(|r| u64::try_from(r.as_micros()).unwrap_or(u64::MAX)),
            })).collect::<Vec<_>>(),
            "processes": self.lives.iter().map(|l| json!({
                "owner": l.owner,
                "pid": l.pid,
                "start_ms": ms(l.started),
                "end_ms": l.ended.map(ms),
                "ending": l.ending,
            })).collect::<Vec<_>>(),
            "downstream": self.downstream,
            "notes": self.notes,
            "logs": self.logs.as_ref().map(|p| p.display().to_string()),
            "judged": true,
        })
    }
}

fn ending_text(ending: &Ending) -> String {
    match ending {
        Ending::Signalled(signal) if *signal == libc::SIGKILL => "killed (SIGKILL)".to_string(),
        other => other.to_string(),
    }
}

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: ran for real, seed {}, time scale {} ({:.3} s), schema {} (dropped)",
            self.scenario,
            self.seed,
            self.time_scale,
            self.duration.as_secs_f64(),
            self.schema
        )?;
        if let Some(faketime) = &self.faketime {
            writeln!(f, "clocks: libfaketime {faketime}")?;
        }
        writeln!(f, "steps applied:")?;
        for applied in &self.applied {
            writeln!(f, "  {applied}")?;
        }
        for note in &self.notes {
            writeln!(f, "  note: {note}")?;
        }
        writeln!(f, "processes:")?;
        for life in &self.lives {
            let end = life
                .ended
                .map_or_else(|| "-".to_string(), |d| format!("{:.3}s", d.as_secs_f64()));
            writeln!(
                f,
                "  {} pid {}: {:.3}s - {end}, {}",
                life.owner,
                life.pid,
                life.started.as_secs_f64(),
                life.ending
            )?;
        }
        if let Some(downstream) = &self.downstream {
            writeln!(f, "downstream: {downstream}")?;
        }
        match &self.logs {
            Some(dir) => write!(f, "histories and logs: {}", dir.display()),
            None => write!(f, "histories and logs: removed (--keep DIR keeps them)"),
        }
    }
}
