//! The human summary of a run: what a person reads in ten seconds.

use crate::units::{human, secs_of_ms};
use std::fmt::Write as _;
use std::time::Duration;

use crate::report::Report;
use crate::scenario::Scenario;

/// How many terms and failovers the summary lists before eliding the rest.
const MAX_ROWS: usize = 12;

/// `1 term`, `2 terms`.
fn count(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// Renders the summary of `report` for `scenario`; `replay` is the command
/// that reproduces this exact run.
pub fn render(scenario: &Scenario, report: &Report, replay: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", report.scenario);
    if let Some(description) = &scenario.description {
        if let Some(first) = description.lines().map(str::trim).find(|l| !l.is_empty()) {
            let _ = writeln!(s, "  {first}");
        }
    }
    if let Some(history) = &report.history {
        history_line(&mut s, scenario, report, history);
    } else {
        let _ = writeln!(
            s,
            "  seed {} · {} virtual · {} · {} events · trace {} · fencing {}",
            report.seed,
            human(Duration::from_millis(report.virtual_ms)),
            count(scenario.nodes.len() as u64, "node"),
            report.events,
            report.trace_hash,
            if report.fencing { "on" } else { "OFF" }
        );
    }
    if let Some(halt) = &report.halted {
        let _ = writeln!(
            s,
            "  HALTED at {} of {}: {halt}",
            human(Duration::from_millis(halt.at_ms)),
            human(scenario.duration)
        );
    }
    let e = &scenario.election;
    if e.protocol == crate::scenario::ProtocolSpec::Fenced {
        let _ = writeln!(
            s,
            "  lease_ttl {} (margin {}), renew every {}, retry every {}",
            human(e.lease_ttl),
            human(e.effective_safety_margin()),
            human(e.renew_interval),
            human(e.retry_interval)
        );
    } else {
        let changed = crate::file::settings_toml(&e.protocol);
        let settings = if changed.is_empty() {
            "the library's defaults".to_string()
        } else {
            changed.join(", ")
        };
        let _ = writeln!(s, "  protocol {} ({settings})", e.protocol);
    }
    if let Some(history) = &report.history {
        history_problems(&mut s, history);
    }
    if let Some(bug) = &report.planted_bug {
        let _ = writeln!(s, "  PLANTED BUG: {bug}");
    }

    let _ = writeln!(s);
    if report.terms.is_empty() {
        let _ = writeln!(s, "Leadership: nobody led");
    } else {
        let _ = writeln!(
            s,
            "Leadership ({}, {})",
            count(report.terms.len() as u64, "term"),
            count(report.leader_changes, "leader change")
        );
        for term in report.terms.iter().take(MAX_ROWS) {
            let end = if term.end_reason == crate::report::RUN_ENDED {
                "end of run".to_string()
            } else {
                format!("{} ({})", secs_of_ms(term.end_ms), term.end_reason)
            };
            let _ = writeln!(
                s,
                "  {:<12} token {:<4} {:>10} → {}",
                term.owner,
                term.token,
                secs_of_ms(term.start_ms),
                end
            );
        }
        if report.terms.len() > MAX_ROWS {
            let _ = writeln!(
                s,
                "  … {} more terms (see --json)",
                report.terms.len() - MAX_ROWS
            );
        }
    }
    if !report.failovers.is_empty() {
        let _ = writeln!(
            s,
            "Failovers (last write of the old term → first write of the new)"
        );
        for f in report.failovers.iter().take(MAX_ROWS) {
            let _ = writeln!(
                s,
                "  {} → {}  gap {}  (token {} → {}, at {})",
                f.from_owner,
                f.to_owner,
                secs_of_ms(f.gap_ms),
                f.from_token,
                f.to_token,
                secs_of_ms(f.at_ms)
            );
        }
        if report.failovers.len() > MAX_ROWS {
            let _ = writeln!(
                s,
                "  … {} more failovers",
                report.failovers.len() - MAX_ROWS
            );
        }
    }
    let w = &report.writes;
    let _ = writeln!(
        s,
        "Writes: {} accepted, {} rejected as stale, {} rejected (token of another writer), {} cancelled",
        w.accepted, w.rejected_stale, w.rejected_wrong_writer, w.cancelled
    );
    let _ = writeln!(
        s,
        "Belief overlap: {} · leaderless: {} · spurious failovers: {} · membership flaps: {}",
        secs_of_ms(report.overlap_ms),
        secs_of_ms(report.leaderless_ms),
        report.spurious_failovers,
        report.membership.flaps
    );

    let unjudged = &report.unjudged_writes;
    if unjudged.older_term > 0 {
        let _ = writeln!(
            s,
            "Unjudged: the run ended with {} write{} not yet judged by the downstream, {} from an \
             older term than the newest (token {}): a violation may still be on its way",
            unjudged.total,
            if unjudged.total == 1 { "" } else { "s" },
            unjudged.older_term,
            report.max_token
        );
    } else if unjudged.total > 0 {
        let _ = writeln!(
            s,
            "Unjudged: {} write{} of the newest term still on {} way at the end",
            unjudged.total,
            if unjudged.total == 1 { "" } else { "s" },
            if unjudged.total == 1 { "its" } else { "their" }
        );
    }
    for w in unjudged.writes.iter().take(MAX_ROWS) {
        let _ = writeln!(
            s,
            "  {} token {} unit {}: {}",
            w.owner, w.token, w.unit, w.state
        );
    }
    if unjudged.total as usize > MAX_ROWS {
        let _ = writeln!(
            s,
            "  … {} more (see --json)",
            unjudged.total as usize - MAX_ROWS.min(unjudged.writes.len())
        );
    }

    if !report.anchors.is_empty() {
        let _ = writeln!(s, "Anchored faults");
        for a in &report.anchors {
            let when = |at: Option<f64>| match at {
                Some(ms) => format!("{:.3}s", ms / 1000.0),
                None => "never".to_string(),
            };
            let _ = writeln!(
                s,
                "  fault[{}] {:<12} on {}: event at {}, began {}",
                a.fault,
                a.kind,
                a.anchor,
                when(a.fired_at_ms),
                when(a.began_at_ms)
            );
        }
    }
    if report.violations_total == 0 {
        let _ = writeln!(s, "Violations: none");
    } else {
        let _ = writeln!(s, "Violations: {}", report.violations_total);
        for v in report.violations.iter().take(MAX_ROWS) {
            let _ = writeln!(
                s,
                "  at {} [{}] {}",
                secs_of_ms(v.at_ms),
                v.invariant,
                v.detail
            );
        }
        if report.violations_total as usize > MAX_ROWS {
            let _ = writeln!(
                s,
                "  … {} more (see --json)",
                report.violations_total as usize - MAX_ROWS.min(report.violations.len())
            );
        }
    }
    if report.expect.met {
        let _ = writeln!(s, "Expectations: met");
    } else {
        let _ = writeln!(s, "Expectations: NOT met");
        for u in &report.expect.unmet {
            let _ = writeln!(s, "  {u}");
        }
    }
    let _ = writeln!(s, "{}", if report.expect.met { "PASS" } else { "FAIL" });
    let _ = writeln!(s);
    let _ = writeln!(s, "Replay: {replay}");
    s
}

/// The second line of a real run's summary: its files, span and hash.
fn history_line(
    s: &mut String,
    scenario: &Scenario,
    report: &Report,
    history: &crate::report::HistoryReport,
) {
    let _ = writeln!(
        s,
        "  history of {} · {} real · {} · {} events · hash {} · fencing {}",
        count(history.files.len() as u64, "file"),
        human(Duration::from_millis(report.virtual_ms)),
        count(scenario.nodes.len() as u64, "node"),
        report.events,
        report.trace_hash,
        if report.fencing { "on" } else { "OFF" }
    );
}

/// What was wrong with a history's files.
fn history_problems(s: &mut String, history: &crate::report::HistoryReport) {
    if history.problems_total > 0 {
        let _ = writeln!(
            s,
            "  {} in the histories ({} malformed, the rest warnings):",
            count(history.problems_total, "problem"),
            history.errors
        );
        for p in history.problems.iter().take(MAX_ROWS) {
            let _ = writeln!(s, "    {}:{}: {}: {}", p.path, p.line, p.severity, p.detail);
        }
        if history.problems_total as usize > MAX_ROWS {
            let _ = writeln!(
                s,
                "    … {} more (see --json)",
                history.problems_total as usize - MAX_ROWS
            );
        }
    }
    if !history.unterminated.is_empty() {
        let _ = writeln!(
            s,
            "  ended without process-stopped (judged crashed at their last line): {}",
            history.unterminated.join(", ")
        );
    }
}

/// The first sentence of a description (up to the first ". "), with its
/// whitespace folded: for one-line listings and picture titles.
pub fn first_sentence(description: &str) -> String {
    let text = description.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.find(". ") {
        Some(i) => text[..=i].to_string(),
        None => text,
    }
}

/// [`first_sentence`], at most `max` characters: cut at a word, with an
/// ellipsis.
pub fn first_sentence_within(description: &str, max: usize) -> String {
    let sentence = first_sentence(description);
    if sentence.chars().count() <= max {
        return sentence;
    }
    let mut cut = String::new();
    for word in sentence.split(' ') {
        if cut.chars().count() + word.chars().count() + 1 > max.saturating_sub(1) {
            break;
        }
        if !cut.is_empty() {
            cut.push(' ');
        }
        cut.push_str(word);
    }
    cut.push('…');
    cut
}
