//! `fenced-sim merge`: joins the shard outputs of `explore --json
//! --summary` (files, or standard input) into one campaign verdict, or says
//! what is malformed, mixed, repeated or missing.

use std::io::{BufRead, Read as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use fenced_sim::merge::{MergeOutcome, Merger, Verdict};

use super::common::{bad_input, Outcome, EXIT_BAD_INPUT, EXIT_FAIL};

/// The longest line merge reads (a seed line is under 2 KiB).
const MAX_LINE: usize = 1 << 20;

#[derive(clap::Args, Debug)]
pub(super) struct MergeArgs {
    /// Shard outputs of `fenced-sim explore --json --summary`, one file per
    /// shard or several shards' lines in one (in any order); `-` reads
    /// standard input.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Print the verdict as one JSON object.
    #[arg(long)]
    json: bool,
    /// Leave out the wall-clock figures (seeds/s, time acceleration): what
    /// remains is the same bytes however the campaign was sharded.
    #[arg(long)]
    no_timing: bool,
}

pub(super) fn merge(args: &MergeArgs) -> Outcome {
    let mut merger = Merger::new();
    let mut stdin_read = false;
    for path in &args.files {
        let name = path.display().to_string();
        if name == "-" {
            if stdin_read {
                return Err(bad_input("`-` (standard input) is given twice"));
            }
            stdin_read = true;
            merger.begin_input("-");
            read_lines(std::io::stdin().lock(), &mut merger)
                .map_err(|e| bad_input(format!("cannot read standard input: {e}")))?;
        } else {
            let file = std::fs::File::open(path)
                .map_err(|e| bad_input(format!("cannot read {name}: {e}")))?;
            merger.begin_input(&name);
            read_lines(std::io::BufReader::new(file), &mut merger)
                .map_err(|e| bad_input(format!("cannot read {name}: {e}")))?;
        }
    }
    let outcome = merger.finish(!args.no_timing);
    for note in &outcome.notes {
        eprintln!("note: {note}");
    }
    let Some(verdict) = outcome.verdict.as_ref() else {
        report_problems(&outcome);
        return Err(ExitCode::from(EXIT_BAD_INPUT));
    };
    let text = if args.json {
        serde_json::to_string(verdict).map_err(bad_input)? + "\n"
    } else {
        verdict_text(verdict)
    };
    let mut out = std::io::stdout().lock();
    // A closed reader (`| head`) is no error of the campaign's.
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    Ok(if verdict.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAIL)
    })
}

/// Feeds the lines of `reader` to `merger`: at most [`MAX_LINE`] bytes
/// each (a longer one is reported and skipped), UTF-8, `\n` or `\r\n`.
fn read_lines(mut reader: impl BufRead, merger: &mut Merger) -> std::io::Result<()> {
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        if buf.len() > MAX_LINE && buf.last() != Some(&b'\n') {
            merger.unreadable_line("a line longer than 1 MiB: not a line of `explore --json`");
            // Skip the rest of it.
            loop {
                buf.clear();
                let n = (&mut reader)
                    .take(MAX_LINE as u64)
                    .read_until(b'\n', &mut buf)?;
                if n == 0 || buf.last() == Some(&b'\n') {
                    break;
                }
            }
            continue;
        }
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        match std::str::from_utf8(&buf) {
            Ok(text) => merger.line(text),
            Err(_) => merger.unreadable_line("not UTF-8 text"),
        }
    }
}

/// The problems on standard error, and the failures already seen.
fn report_problems(outcome: &MergeOutcome) {
    for p in &outcome.problems {
        eprintln!("error: {p}");
    }
    let more = outcome.problems_total - outcome.problems.len() as u64;
    if more > 0 {
        eprintln!("error: and {more} more problems");
    }
    if outcome.failed_seen > 0 {
        eprintln!(
            "note: the summaries read count {} failing seeds; fix the input to see the verdict",
            outcome.failed_seen
        );
    }
    eprintln!("no verdict: the shards given are not one complete campaign");
}

/// The verdict as text: the campaign, counts, coverage, failures (with
/// their replay and shrink commands), then timing unless left out.
fn verdict_text(v: &Verdict) -> String {
    use std::fmt::Write as _;
    let t = &v.totals;
    let mut s = String::new();
    let _ = writeln!(s, "campaign {}: {}", v.campaign, v.identity.describe());
    let by_invariant = if t.failures_by_invariant.is_empty() {
        String::new()
    } else {
        let parts: Vec<String> = t
            .failures_by_invariant
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        format!(" ({})", parts.join(", "))
    };
    let nondeterministic = t
        .failures_by_invariant
        .get("non-determinism")
        .copied()
        .unwrap_or(0);
    let _ = writeln!(
        s,
        "{} seeds: {} failed{by_invariant}; {} run twice for determinism, {}",
        t.seeds,
        t.failed,
        t.determinism_checked,
        if nondeterministic == 0 {
            "all deterministic".to_string()
        } else {
            format!("{nondeterministic} NOT deterministic")
        }
    );
    let _ = writeln!(
        s,
        "{} events, {} of virtual time",
        t.events,
        virtual_time(t.virtual_ms)
    );
    let counts: Vec<String> = t
        .sometimes()
        .iter()
        .map(|(name, count)| format!("{name} {count}"))
        .collect();
    let _ = writeln!(
        s,
        "coverage (seeds where it happened): {}",
        counts.join(", ")
    );
    if !v.never_exercised.is_empty() && t.seeds >= 100 {
        let _ = writeln!(
            s,
            "warning: never exercised: {}",
            v.never_exercised.join(", ")
        );
    }
    if !v.failures.is_empty() {
        let _ = writeln!(
            s,
            "failures ({} of {}, smallest seeds first):",
            v.failures.len(),
            t.failed
        );
    }
    for f in &v.failures {
        let at = f
            .at_ms
            .map(|ms| format!(" at {}.{:03}s", ms / 1000, ms % 1000))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "seed {}: {}{at}: {}\n  mix: {}\n  replay: {}\n  shrink: {}",
            f.seed,
            f.invariant,
            f.detail,
            f.mix.join(", "),
            f.replay,
            f.shrink
        );
    }
    if let Some(timing) = &v.timing {
        let rate = |x: Option<f64>| x.map_or_else(|| "n/a".to_string(), |x| format!("{x:.0}"));
        let _ = writeln!(
            s,
            "timing: {} shards, {:.2} s of shard time (slowest {:.2} s), {:.2} thread-s: {} \
             seeds/s per shard, {} per thread; time acceleration {}× per thread ({}× per \
             shard): virtual seconds per wall-clock second",
            timing.shards,
            timing.shard_wall_s,
            timing.slowest_shard_s,
            timing.thread_s,
            rate(timing.seeds_per_s_per_shard),
            rate(timing.seeds_per_s_per_thread),
            rate(timing.acceleration_per_thread),
            rate(timing.acceleration_per_shard),
        );
    }
    s
}

/// Virtual time in the largest unit that keeps it readable.
fn virtual_time(ms: u64) -> String {
    let s = ms as f64 / 1000.0;
    if s >= 2.0 * 86_400.0 {
        format!("{:.1} days", s / 86_400.0)
    } else if s >= 2.0 * 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{s:.1} s")
    }
}
