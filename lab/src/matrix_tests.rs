//! Tests of `fenced-lab matrix`'s names and its tables (the real runs are
//! `lab/tests/matrix_cli.rs`'s).

use super::*;

fn args(scenarios: &[&str], protocols: &[&str]) -> MatrixArgs {
    MatrixArgs {
        postgres: String::new(),
        time_scale: 0.1,
        runs: 1,
        seed: 1,
        scenarios: scenarios.iter().map(|s| s.to_string()).collect(),
        protocols: protocols.iter().map(|s| s.to_string()).collect(),
        fenced: false,
        max_run: Duration::from_secs(180),
        keep: None,
        json: false,
        markdown: false,
    }
}

#[test]
fn names_resolve_in_the_order_given_and_unknown_ones_are_named() {
    let (rows, columns) =
        resolve(&args(&["leader-crash", "short-stall"], &["etcd", "fenced"])).expect("resolves");
    assert_eq!(
        rows.iter().map(|r| r.name).collect::<Vec<_>>(),
        ["leader-crash", "short-stall"]
    );
    assert_eq!(
        columns.iter().map(ProtocolSpec::name).collect::<Vec<_>>(),
        ["etcd", "fenced"]
    );
    let (rows, columns) = resolve(&args(&[], &[])).expect("resolves");
    assert_eq!(rows.len(), builtin().len());
    assert_eq!(columns.len(), ProtocolSpec::NAMES.len());
    let error = resolve(&args(&["no-such"], &[])).expect_err("unknown scenario");
    assert!(error.to_string().contains("`no-such`"), "{error}");
    assert!(error.to_string().contains("stalled-leader"), "{error}");
    let error = resolve(&args(&[], &["raft"])).expect_err("unknown protocol");
    assert!(error.to_string().contains("`raft`"), "{error}");
    let mut zero = args(&[], &[]);
    zero.time_scale = 0.0;
    assert!(matches!(resolve(&zero), Err(MatrixError::BadScale(_))));
}

fn counts(runs: u32, split_brain: u32, due: u32, stuck: u32) -> Counts {
    Counts {
        runs,
        split_brain,
        due,
        stuck,
    }
}

fn matrix() -> Matrix {
    let cell = |protocol, status, real, simulated, agreed| Cell {
        scenario: "stalled-leader",
        protocol,
        status,
        real,
        simulated,
        agreed,
        disagreements: Vec::new(),
    };
    Matrix {
        scenarios: vec!["stalled-leader"],
        protocols: vec!["fenced", "redlock", "client-go", "dynamodb"],
        cells: vec![
            cell(
                "fenced",
                Status::Ran,
                counts(2, 2, 2, 0),
                counts(2, 2, 2, 0),
                2,
            ),
            cell(
                "redlock",
                Status::Ran,
                counts(2, 1, 2, 1),
                counts(2, 2, 2, 0),
                1,
            ),
            cell(
                "client-go",
                Status::Refused("no Kubernetes API server".into()),
                Counts::default(),
                counts(2, 2, 2, 0),
                0,
            ),
            cell(
                "dynamodb",
                Status::Refused("no Kubernetes API server".into()),
                Counts::default(),
                counts(2, 0, 0, 0),
                0,
            ),
        ],
        time_scale: 0.1,
        runs: 2,
        seed: 1,
        fenced: false,
        max_run: Duration::from_secs(180),
    }
}

#[test]
fn a_cell_shows_real_beside_simulated_and_marks_a_difference() {
    let m = matrix();
    assert_eq!(m.disagreements(), 1);
    let text = m.to_text();
    assert!(
        text.contains("fenced     SB 2/2 = 2/2 · stuck 0/2 = 0/2 · agreed 2/2"),
        "{text}"
    );
    assert!(
        text.contains("redlock    SB 1/2 ≠ 2/2 · stuck 1/2 ≠ 0/2 · agreed 1/2"),
        "{text}"
    );
    // One reason, one note, shared by both refused cells.
    assert!(
        text.contains("client-go  sim SB 2/2 · stuck 0/2 (1)"),
        "{text}"
    );
    assert!(text.contains("dynamodb   sim SB 0/2 (1)"), "{text}");
    assert!(
        text.contains("(1) refused: no Kubernetes API server"),
        "{text}"
    );
    assert!(!text.contains("(2)"), "{text}");
    assert!(
        text.contains("2 of 4 cells ran for real; 1 disagree"),
        "{text}"
    );
    let md = m.to_markdown();
    assert!(
        md.starts_with(
            "| scenario | fenced | redlock | client-go | dynamodb |\n|---|---|---|---|---|\n"
        ),
        "{md}"
    );
    assert!(
        md.contains("| stalled-leader | SB 2/2 = 2/2 · stuck 0/2 = 0/2 | SB 1/2 ≠ 2/2"),
        "{md}"
    );
    let json = m.to_json();
    assert_eq!(json["cells"][0]["real"]["split_brain"], 2);
    assert_eq!(json["cells"][2]["status"], "refused");
    assert_eq!(json["cells"][2]["real"], Value::Null);
    assert_eq!(json["cells"][3]["simulated"]["runs"], 2);
}

/// A disagreeing run names what differed, those that must agree first,
/// the rest marked as figures that may differ.
#[test]
fn a_disagreement_names_its_figures_those_that_must_agree_first() {
    use crate::compare::{Difference, Outcome};
    let outcome = Outcome {
        terms: vec![("node-a#1".into(), 1)],
        max_token: 1,
        max_token_race: None,
        gaps_ms: vec![],
        accepted: 3,
        rejected: 0,
        split_brain: false,
        violations: vec![],
    };
    let difference = |what: &str, disagreement| Difference {
        what: what.into(),
        real: "2".into(),
        simulated: "1".into(),
        reason: String::new(),
        disagreement,
    };
    let comparison = Comparison {
        real: outcome.clone(),
        simulated: outcome,
        differences: vec![difference("terms", true), difference("writes", false)],
        gap_tolerances_ms: vec![],
        expectations: vec![],
        not_compared: vec![],
    };
    let figures: Vec<String> = disagreeing_figures(&comparison).collect();
    assert_eq!(
        figures,
        [
            "terms real 2, simulated 1",
            "writes real 2, simulated 1 (may differ)"
        ]
    );
}
