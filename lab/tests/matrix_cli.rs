//! `fenced-lab matrix`, end to end: bad names are refused before anything
//! runs (exit 2); a small matrix runs its cell for real against PostgreSQL
//! beside its simulation, and names the cell it cannot make real. (Each
//! zoo design's real runs are the zoo_* tests'.)

mod support;

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

fn program() -> &'static str {
    env!("CARGO_BIN_EXE_fenced-lab")
}

#[test]
fn unknown_names_are_bad_input_before_anything_runs() {
    for (flag, value, named) in [
        ("--scenarios", "no-such-scenario", "`no-such-scenario`"),
        ("--protocols", "raft", "`raft`"),
    ] {
        let output = std::process::Command::new(program())
            .args([
                "matrix",
                "--postgres",
                "postgres://nowhere.invalid/x",
                flag,
                value,
            ])
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(named), "{stderr}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_small_matrix_runs_for_real_beside_its_simulation() {
    let Some(url) = support::database_url("matrix_small") else {
        return;
    };
    let keep = tempfile::tempdir().expect("tempdir");
    let child = tokio::process::Command::new(program())
        .args([
            "matrix",
            "--postgres",
            &url,
            "--time-scale",
            "0.1",
            "--scenarios",
            "stalled-leader-40s",
            "--protocols",
            "fenced,client-go",
            "--json",
            "--keep",
        ])
        .arg(keep.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let output = tokio::time::timeout(Duration::from_secs(180), child.wait_with_output())
        .await
        .expect("the matrix ends within three minutes")
        .expect("output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let json: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let cells = json["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 2, "{json:#}");
    for cell in &cells[..1] {
        // A 40 s pause of an unfenced holder (the matrix leaves the
        // downstream unfenced without --fenced): the fenced protocol's
        // lease moves on and the stalled holder's late write lands — split
        // brain for real as in the simulation, and a failover, not stuck.
        assert_eq!(cell["status"], "ran", "{cell:#}\n{stderr}");
        assert_eq!(cell["real"]["split_brain"], 1, "{cell:#}\n{stderr}");
        assert_eq!(cell["simulated"]["split_brain"], 1, "{cell:#}");
        assert_eq!(
            cell["real"]["failover_due"], cell["simulated"]["failover_due"],
            "{cell:#}"
        );
        assert_eq!(cell["real"]["stuck"], 0, "{cell:#}");
        assert_eq!(cell["simulated"]["stuck"], 0, "{cell:#}");
        // A run that disagreed says on what; one that agreed has nothing to say.
        let disagreements = cell["disagreements"].as_array().expect("a list");
        assert_eq!(disagreements.is_empty(), cell["agreed"] == 1, "{cell:#}");
    }
    // --keep: the scenario as run, and the run's histories beside it.
    let kept = keep.path().join("stalled-leader-40s-fenced-1");
    assert!(kept.with_extension("toml").is_file(), "the scenario kept");
    let histories = std::fs::read_dir(&kept)
        .expect("the run kept")
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .count();
    assert!(
        histories >= 3,
        "{histories} histories in {}",
        kept.display()
    );
    let refused = &cells[1];
    assert_eq!(refused["protocol"], "client-go");
    assert_eq!(refused["status"], "refused", "{refused:#}");
    assert!(
        refused["reason"]
            .as_str()
            .is_some_and(|r| r.contains("client-go")),
        "{refused:#}"
    );
    assert_eq!(refused["real"], Value::Null);
    assert_eq!(refused["simulated"]["runs"], 1);
}
