#![cfg(feature = "planted-bugs")]
//! A starved writer records its answers late; the downstream's decision
//! numbers keep the verdict in the database's order.
//!
//! The failure mode this guards against was seen once in CI: a writer
//! whose accepted old-token write was recorded after the new term's made
//! `check-history` report a split-brain PostgreSQL never allowed. Here it is
//! reproduced on purpose — node-a records each answer 250 ms after it came
//! (`FENCED_LAB_HOLD_WRITE_RECORDS`, a `planted-bugs` instrument), so the
//! records of its last token-1 writes are still pending when the anchored
//! SIGSTOP freezes it, and come out after its successor's token-2 writes.

mod support;

use std::path::{Path, PathBuf};

use fenced::history::{Event, Line};
use fenced_sim::history::{check_paths, CheckOptions};
use serde_json::Value;

/// The run's history files (`*.jsonl`), as the lab judges them.
fn histories(dir: &Path) -> Vec<PathBuf> {
    fenced_lab::judge::history_files(dir).expect("the kept directory lists")
}

/// Every event line of the histories in `dir` (headers skipped, and a
/// killed process's cut-short last line).
fn events(dir: &Path) -> Vec<Line> {
    histories(dir)
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).expect("a history");
            text.lines()
                .skip(1)
                .filter_map(|line| serde_json::from_str::<Line>(line).ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The histories of `from`, copied to `to` without any `decision` field.
fn strip_decisions(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("creates");
    for path in histories(from) {
        let text = std::fs::read_to_string(&path).expect("reads");
        let mut out = String::new();
        for (n, line) in text.lines().enumerate() {
            let mut value: Value = serde_json::from_str(line).expect("JSON lines");
            if n > 0 {
                if let Some(object) = value.as_object_mut() {
                    object.remove("decision");
                }
            }
            out.push_str(&value.to_string());
            out.push('\n');
        }
        let name = path.file_name().expect("a file name");
        std::fs::write(to.join(name), out).expect("writes");
    }
}

/// Whether `check-history` (no scenario: the headers' settings) finds
/// split-brain in the histories of `dir`.
fn split_brain(dir: &Path) -> bool {
    let judged = check_paths(&histories(dir), CheckOptions::default()).expect("a verdict");
    judged.report.split_brain
}

#[tokio::test(flavor = "current_thread")]
async fn a_starved_writers_late_records_are_judged_in_the_databases_order() {
    let Some(url) = support::database_url("starved_writer_decision_order") else {
        return;
    };
    let kept = tempfile::tempdir().expect("a temporary directory");
    let dir = kept.path().join("run");
    let dir_text = dir.to_string_lossy().into_owned();
    let (code, report) = support::run_json(
        &url,
        &support::scenario("gc-pause-fenced"),
        "0.1",
        &["--keep", &dir_text],
        &[("FENCED_LAB_HOLD_WRITE_RECORDS", "node-a=250ms")],
    )
    .await;

    // The failure mode is there: some token-1 acceptance of node-a is
    // recorded after the first token-2 acceptance of its successor (node-b
    // or node-c: whichever follower won the race)...
    let lines = events(&dir);
    let accepted = |token: u64| {
        lines
            .iter()
            .filter_map(|line| match &line.event {
                Event::WriteHandled {
                    writer: w,
                    token: t,
                    outcome,
                    decision,
                    ..
                } if t.get() == token
                    && w.as_str().starts_with("node-a") == (token == 1)
                    && *outcome == fenced::history::WriteVerdict::Accepted =>
                {
                    Some((
                        line.at_ns,
                        decision.expect("the fenced table numbers decisions"),
                    ))
                }
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let (old, new) = (accepted(1), accepted(2));
    let first_new = new
        .iter()
        .min()
        .copied()
        .expect("a successor wrote with token 2");
    let late: Vec<_> = old.iter().filter(|(at, _)| *at > first_new.0).collect();
    assert!(
        !late.is_empty(),
        "no token-1 acceptance was recorded after token 2's first ({first_new:?}): {old:?}"
    );
    // ...though the database decided each of them first.
    assert!(
        late.iter().all(|(_, decision)| *decision < first_new.1),
        "{late:?} vs {first_new:?}"
    );

    // Judged in the database's order: no split-brain, the scenario's
    // expectations met.
    assert_eq!(report["split_brain"], false, "{:#}", report["violations"]);
    assert_eq!(report["violations_total"], 0, "{:#}", report["violations"]);
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert!(!split_brain(&dir), "check-history agrees");

    // The negative control: the same histories without the numbers are
    // judged in recording order, and the false split-brain is back.
    let stripped = kept.path().join("stripped");
    strip_decisions(&dir, &stripped);
    assert!(
        split_brain(&stripped),
        "without decision numbers the late records read as split-brain"
    );
}
