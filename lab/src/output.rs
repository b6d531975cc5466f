//! What `fenced-lab run` prints after a run: what was done, the checker's
//! summary of the real histories (the one `fenced-sim check-history`
//! prints), and the simulator's prediction side by side — or, with
//! `--json`, the checker's report JSON with the lab's fields and the
//! comparison added; and the real run's timeline with `--svg FILE`.

use std::fmt;
use std::io::Write;
use std::path::PathBuf;

use fenced_sim::summary;
use fenced_sim::svg::{render_timeline, Window};
use serde_json::Value;

use crate::runner::{RunArgs, RunOutcome};

/// The exit code of a judged run whose real histories pass.
pub const EXIT_PASS: u8 = 0;
/// The exit code of a violation or an unmet expectation.
pub const EXIT_FAIL: u8 = 1;

/// The command that runs it again.
fn replay(args: &RunArgs, outcome: &RunOutcome) -> String {
    format!(
        "fenced-lab run {} --time-scale {} --seed {}",
        args.scenario.display(),
        outcome.lab.time_scale,
        outcome.lab.seed
    )
}

/// The `--json` object: the checker's report of the real run (every key of
/// `fenced-sim check-history --json`, `seed` being the run's), the lab's
/// keys (`time_scale`, `applied`, `processes`, ...), `simulated` (the
/// simulator's report, or `simulation_error`) and `comparison`.
pub fn to_json(outcome: &RunOutcome) -> Result<Value, OutputError> {
    let mut object =
        serde_json::to_value(&outcome.judged.report).map_err(OutputError::EncodeReport)?;
    let Value::Object(report) = &mut object else {
        return Err(OutputError::NotAnObject);
    };
    if let Value::Object(lab) = outcome.lab.to_json() {
        for (key, value) in lab {
            // `scenario` is the same name; the run's seed replaces the
            // histories' 0 (a real run has one).
            report.insert(key, value);
        }
    }
    match &outcome.simulated {
        Ok(simulated) => {
            let value = serde_json::to_value(simulated).map_err(OutputError::EncodeSimulation)?;
            report.insert("simulated".to_string(), value);
        }
        Err(error) => {
            report.insert(
                "simulation_error".to_string(),
                Value::String(error.to_string()),
            );
        }
    }
    if let Some(comparison) = &outcome.comparison {
        report.insert("comparison".to_string(), comparison.to_json());
    }
    Ok(object)
}

/// Writes the picture, then the text or JSON; returns the exit code: 0 when
/// the real run met its expectations, 1 otherwise.
///
/// # Errors
/// The picture or the output cannot be written.
pub fn publish(args: &RunArgs, outcome: &RunOutcome) -> Result<u8, OutputError> {
    let replay = replay(args, outcome);
    let judged = &outcome.judged;
    if let (Some(path), Some(timeline)) = (&args.svg, &judged.timeline) {
        let svg = render_timeline(
            &judged.scenario,
            &judged.report,
            timeline,
            &replay,
            Window::auto(),
        );
        std::fs::write(path, svg).map_err(|source| OutputError::Picture {
            path: path.clone(),
            source,
        })?;
    }
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        let json = to_json(outcome)?;
        writeln!(out, "{json}")
    } else {
        let mut text = format!("{}\n\n", outcome.lab);
        text.push_str("the real run, judged by the simulator's checker:\n");
        text.push_str(&summary::render(&judged.scenario, &judged.report, &replay));
        text.push('\n');
        match (&outcome.comparison, &outcome.simulated) {
            (Some(comparison), _) => text.push_str(&format!("{comparison}\n")),
            (None, Err(error)) => text.push_str(&format!("no simulation: {error}\n")),
            (None, Ok(_)) => {}
        }
        write!(out, "{text}")
    };
    if let Err(e) = written.and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(OutputError::Report(e));
        }
    }
    Ok(if judged.report.expect.met {
        EXIT_PASS
    } else {
        EXIT_FAIL
    })
}

/// Why `run`'s output could not be made or written.
#[derive(Debug)]
pub enum OutputError {
    /// The checker's report does not encode as JSON.
    EncodeReport(serde_json::Error),
    /// The checker's report encodes as JSON, but not as an object.
    NotAnObject,
    /// The simulator's report does not encode as JSON.
    EncodeSimulation(serde_json::Error),
    /// The `--svg` file cannot be written.
    Picture {
        /// The `--svg` path.
        path: PathBuf,
        /// What writing it said.
        source: std::io::Error,
    },
    /// Standard output cannot be written (other than a closed pipe).
    Report(std::io::Error),
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputError::EncodeReport(e) => write!(f, "cannot encode the report: {e}"),
            OutputError::NotAnObject => f.write_str("the report is not a JSON object"),
            OutputError::EncodeSimulation(e) => write!(f, "cannot encode the simulation: {e}"),
            OutputError::Picture { path, source } => write!(
                f,
                "cannot write the picture to {}: {source}",
                path.display()
            ),
            OutputError::Report(e) => write!(f, "cannot write the report: {e}"),
        }
    }
}

impl std::error::Error for OutputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OutputError::EncodeReport(e) | OutputError::EncodeSimulation(e) => Some(e),
            OutputError::Picture { source, .. } => Some(source),
            OutputError::Report(e) => Some(e),
            OutputError::NotAnObject => None,
        }
    }
}
