//! What `fenced-lab run` prints after a run: what was done, the checker's
//! summary of the real histories (the one `fenced-sim check-history`
//! prints), and the simulator's prediction side by side — or, with
//! `--json`, the checker's report JSON with the lab's fields and the
//! comparison added; and the real run's timeline with `--svg FILE`.

use std::io::Write;

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
pub fn to_json(outcome: &RunOutcome) -> Result<Value, String> {
    let mut object = serde_json::to_value(&outcome.judged.report)
        .map_err(|e| format!("cannot encode the report: {e}"))?;
    let Value::Object(report) = &mut object else {
        return Err("the report is not a JSON object".to_string());
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
            let value = serde_json::to_value(simulated)
                .map_err(|e| format!("cannot encode the simulation: {e}"))?;
            report.insert("simulated".to_string(), value);
        }
        Err(error) => {
            report.insert("simulation_error".to_string(), Value::String(error.clone()));
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
pub fn publish(args: &RunArgs, outcome: &RunOutcome) -> Result<u8, String> {
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
        std::fs::write(path, svg)
            .map_err(|e| format!("cannot write the picture to {}: {e}", path.display()))?;
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
            return Err(format!("cannot write the report: {e}"));
        }
    }
    Ok(if judged.report.expect.met {
        EXIT_PASS
    } else {
        EXIT_FAIL
    })
}
