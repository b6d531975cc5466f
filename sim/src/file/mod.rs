//! Scenario files: TOML in, a validated [`Scenario`] out, or an error that
//! names the file, the key, the line and column, what is wrong and what is
//! allowed.
//!
//! The format is the design's (see `scenarios/README.md` for every key and its
//! default). Unknown keys are errors, so a typo never silently falls back to a
//! default. Durations use humantime syntax (`"30s"`, `"1m 30s"`, `"250ms"`);
//! only `clock_offset` may be negative (`"-2s"`).
//!
//! Two extensions over the design's example, both additive:
//! * `[[node]]` may carry `count = N`, which expands to `N` nodes named
//!   `{id}-1` … `{id}-N` (zero-padded to the width of `N`), for fleets;
//! * fault kind `replace` (a new incarnation of a node while the old one lives
//!   on: the zombie case).
//!
//! The reader in steps: `read.rs` fetches the text within its limits; the
//! syntax is parsed into a spanned tree (`place.rs` maps spans to keys, lines
//! and columns); serde reads it into the types of `raw.rs` (its errors
//! reworded by `explain.rs`); `convert.rs` (with `values.rs` and `fault.rs`)
//! builds the [`Scenario`]; [`Scenario::validate`] checks it, and its error is
//! placed by the key it names.

mod anchor;
mod convert;
mod explain;
mod fault;
mod place;
mod protocol;

pub(crate) use protocol::{settings_diff, settings_toml};
mod raw;
mod read;
mod values;

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::de::DeTable;

use crate::scenario::Scenario;

pub use read::MAX_SCENARIO_FILE_BYTES;

use convert::convert;
use explain::explain_toml_error;
use place::{line_column, path_covering, Spans};
use raw::RawScenario;
use read::read_scenario_text;

/// Why a scenario file could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// The file (or the origin given to [`parse`]).
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// The key at fault (`election.lease_ttl`, `fault[1].node`), when known.
    pub key: Option<String>,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        f.write_str(": ")?;
        if let Some(key) = &self.key {
            write!(f, "`{key}`: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for LoadError {}

/// Reads and validates the scenario at `path`.
///
/// # Errors
/// A [`LoadError`] if the file cannot be read, is not TOML, or is not a valid
/// scenario.
pub fn load(path: &Path) -> Result<Scenario, LoadError> {
    let text = read_scenario_text(path).map_err(|e| LoadError {
        file: path.to_path_buf(),
        line: None,
        column: None,
        key: None,
        message: e.to_string(),
    })?;
    parse(&text, path)
}

/// Parses and validates scenario text; `origin` names it in errors.
///
/// # Errors
/// A [`LoadError`] naming the key, line and column of the first problem.
pub fn parse(text: &str, origin: &Path) -> Result<Scenario, LoadError> {
    let locate = |span: Option<Range<usize>>| -> (Option<usize>, Option<usize>) {
        match span {
            Some(span) => {
                let (line, column) = line_column(text, span.start);
                (Some(line), Some(column))
            }
            None => (None, None),
        }
    };
    let fail = |key: Option<String>, span: Option<Range<usize>>, message: String| {
        let (line, column) = locate(span);
        LoadError {
            file: origin.to_path_buf(),
            line,
            column,
            key,
            message,
        }
    };
    if text.trim().is_empty() {
        return Err(fail(
            None,
            None,
            "the file is empty; a scenario needs at least `name`, `duration` and one [[node]]"
                .to_string(),
        ));
    }
    // Parse the syntax first: its spanned tree names the key behind a later
    // deserialisation error (`election.lease_tll`, `fault[1].kind`).
    let (doc, syntax_errors) = DeTable::parse_recoverable(text);
    if let Some(e) = syntax_errors.first() {
        let mut message = e.message().trim().to_string();
        if let Some(span) = e.span().filter(|s| !s.is_empty()) {
            if message == "duplicate key" {
                message = format!(
                    "duplicate key `{}`; a key may appear only once in a table",
                    text.get(span).unwrap_or("?").trim()
                );
            }
        }
        return Err(fail(None, e.span(), format!("not valid TOML: {message}")));
    }
    if doc.get_ref().is_empty() {
        return Err(fail(
            None,
            None,
            "the file has nothing but comments; a scenario needs at least `name`, `duration` \
             and one [[node]]"
                .to_string(),
        ));
    }
    let raw: RawScenario = toml::from_str(text).map_err(|err| {
        let path = err
            .span()
            .and_then(|span| path_covering(doc.get_ref(), &span));
        let (key, message) = explain_toml_error(err.message().trim(), path);
        // An empty span (a missing top-level key) points at no place.
        fail(key, err.span().filter(|s| !s.is_empty()), message)
    })?;
    let mut spans = Spans::default();
    let scenario = convert(raw, &mut spans).map_err(|e| fail(Some(e.key), e.span, e.message))?;
    scenario.validate().map_err(|e| {
        let span = spans.find(&e.key);
        fail(Some(e.key), span, e.message)
    })?;
    Ok(scenario)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::scenario::FaultSpec;

    fn parse_str(text: &str) -> Result<Scenario, LoadError> {
        parse(text, Path::new("t.toml"))
    }

    #[test]
    fn the_design_example_parses() {
        let s = parse_str(
            r#"
name = "gc-pause-fenced"
seed = 7
duration = "2m"
[election]
role = "reports"
lease_ttl = "30s"
renew_interval = "10s"
retry_interval = "2s"
safety_margin = "3s"
[membership]
heartbeat_interval = "5s"
liveness_ttl = "30s"
[work]
write_interval = "1s"
work_duration = "50ms"
[network]
latency = ["1ms", "5ms"]
loss = 0.0
duplicate = 0
[downstream]
fencing = true
[[node]]
id = "node-a"
clock_offset = "0s"
clock_drift = 0.0
start_at = "0s"
[[node]]
id = "node-b"
[[fault]]
kind = "pause"
node = "node-a"
at = "12s"
duration = "40s"
[[fault]]
kind = "pause"
node = "*"
every = "10m"
duration = ["0s", "60s"]
[expect]
split_brain = false
violations = 0
min_leader_changes = 1
max_failover = "45s"
"#,
        )
        .unwrap();
        assert_eq!(s.seed, 7);
        assert_eq!(s.election.role, "reports");
        assert_eq!(s.nodes.len(), 2);
        assert_eq!(s.faults.len(), 2);
        assert!(matches!(
            s.faults[1],
            FaultSpec::Recurring { node: None, .. }
        ));
        assert_eq!(s.expect.max_failover, Some(Duration::from_secs(45)));
    }

    #[test]
    fn errors_carry_line_column_and_key() {
        let e = parse_str("name = \"x\"\nduration = \"1m\"\n[[node]]\nid = \"a\"\n[election]\nlease_ttl = \"30x\"\n")
            .unwrap_err();
        assert_eq!(e.line, Some(6));
        assert_eq!(e.key.as_deref(), Some("election.lease_ttl"));
        assert!(
            e.to_string()
                .starts_with("t.toml:6:13: `election.lease_ttl`: `30x` is not a duration"),
            "{e}"
        );
    }

    #[test]
    fn node_count_expands_with_padding() {
        let s = parse_str("name = \"x\"\nduration = \"1m\"\n[[node]]\nid = \"n\"\ncount = 12\n")
            .unwrap();
        assert_eq!(s.nodes.len(), 12);
        assert_eq!(s.nodes[0].id, "n-01");
        assert_eq!(s.nodes[11].id, "n-12");
    }
}
