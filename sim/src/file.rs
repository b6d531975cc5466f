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

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::scenario::{
    ClockOffset, DurationRange, Election, Expectations, FaultSpec, Membership, Network, NodeSpec,
    RecurringKind, Scenario, Work,
};

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
    let text = read_scenario_text(path).map_err(|message| LoadError {
        file: path.to_path_buf(),
        line: None,
        column: None,
        key: None,
        message,
    })?;
    parse(&text, path)
}

/// The largest scenario file [`load`] reads: 1 MiB. The biggest shipped
/// scenario is a few kilobytes, and a fleet of thousands of nodes takes one
/// `[[node]]` with `count`; a bigger file is a mistake (or `/dev/zero`), not
/// a scenario.
pub const MAX_SCENARIO_FILE_BYTES: u64 = 1024 * 1024;

/// Reads the text of the scenario file at `path`: a regular file (after
/// symbolic links) of at most [`MAX_SCENARIO_FILE_BYTES`], in UTF-8.
///
/// Devices, FIFOs, sockets and directories are refused *before* they are
/// opened (opening a FIFO for reading blocks until a writer comes), and the
/// read stops one byte past the cap, so neither `/dev/zero` nor a file that
/// grows while it is read can exhaust memory.
///
/// # Errors
/// One sentence saying why the file cannot be used.
fn read_scenario_text(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let cannot_read = |err: std::io::Error| match err.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        _ => format!("cannot read the file: {err}"),
    };
    let kind = std::fs::metadata(path).map_err(cannot_read)?.file_type();
    if !kind.is_file() {
        return Err(format!(
            "not a regular file ({}); a scenario is a TOML file",
            file_kind(&kind)
        ));
    }
    let file = std::fs::File::open(path).map_err(cannot_read)?;
    // The path may have been swapped between the check and the open: check
    // what was opened too.
    let opened = file.metadata().map_err(cannot_read)?;
    if !opened.is_file() {
        return Err(format!(
            "not a regular file ({}); a scenario is a TOML file",
            file_kind(&opened.file_type())
        ));
    }
    let too_big = || {
        format!(
            "the file is larger than {} KiB, the most a scenario file may be; \
             use `count` on a [[node]] for large fleets and recurring faults (`every`) \
             for long schedules",
            MAX_SCENARIO_FILE_BYTES / 1024
        )
    };
    if opened.len() > MAX_SCENARIO_FILE_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(MAX_SCENARIO_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot_read)?;
    if bytes.len() as u64 > MAX_SCENARIO_FILE_BYTES {
        return Err(too_big());
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "the file is not UTF-8 text (invalid byte at offset {}); save it as UTF-8",
            e.utf8_error().valid_up_to()
        )
    })
}

/// What a non-regular file is, in words.
fn file_kind(kind: &std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "not a plain file"
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

/// Turns a serde/TOML error into the key at fault and a message that says
/// what is wrong and what is allowed; `path` is the key or table the error's
/// span points at.
fn explain_toml_error(message: &str, path: Option<String>) -> (Option<String>, String) {
    if let Some(rest) = message.strip_prefix("missing field ") {
        let field = rest.trim_matches('`');
        let needs = match path.as_deref() {
            None => format!("every scenario needs `{field}`"),
            Some(p) if p.starts_with("node[") => format!("every [[node]] needs `{field}`"),
            Some(p) if p.starts_with("fault[") && field == "kind" => {
                format!("every [[fault]] needs `kind`, one of: {FAULT_KINDS}")
            }
            Some(p) if p.starts_with("fault[") => format!("every [[fault]] needs `{field}`"),
            Some(p) => format!("`{p}` needs `{field}`"),
        };
        let key = match path {
            Some(p) => format!("{p}.{field}"),
            None => field.to_string(),
        };
        return (Some(key), format!("missing key `{field}`: {needs}"));
    }
    if let Some(rest) = message.strip_prefix("unknown field ") {
        return match rest.split_once(", expected ") {
            Some((field, allowed)) => (
                path,
                format!(
                    "unknown key {field}; the keys allowed here are {}",
                    allowed.trim_start_matches("one of ")
                ),
            ),
            None => (path, format!("unknown key {rest}")),
        };
    }
    if let Some(rest) = message.strip_prefix("invalid type: ") {
        if let Some((found, expected)) = rest.split_once(", expected ") {
            let expected = match expected {
                "i64" | "u64" => "an integer",
                "f64" => "a number",
                "a sequence" => "an array",
                "a boolean" => "a boolean (true or false)",
                other => other,
            };
            let found = match found {
                "map" => "a table",
                "sequence" => "an array",
                other => other,
            };
            let mut message = format!("expected {expected}, found {found}");
            if path.as_deref().is_some_and(is_duration_key) {
                message = format!("{message}; {DURATION_HELP}");
            }
            return (path, message);
        }
    }
    if message.contains("untagged enum RawSeed") {
        return (
            path,
            format!("expected an integer (or, for a large seed, a string of digits); {SEED_HELP}"),
        );
    }
    if message.contains("untagged enum RawSpan") {
        return (
            path,
            "expected one duration or a [min, max] range, such as \"30s\" or [\"1ms\", \"5ms\"]"
                .to_string(),
        );
    }
    (path, message.to_string())
}

/// Whether the key at `path` takes a duration (its value is a string).
fn is_duration_key(path: &str) -> bool {
    let last = path.rsplit('.').next().unwrap_or(path);
    matches!(
        last,
        "duration"
            | "lease_ttl"
            | "renew_interval"
            | "retry_interval"
            | "safety_margin"
            | "rejoin_delay"
            | "heartbeat_interval"
            | "liveness_ttl"
            | "write_interval"
            | "work_duration"
            | "clock_offset"
            | "start_at"
            | "at"
            | "every"
            | "restart_after"
            | "max_failover"
            | "max_overlap"
            | "min_overlap"
    )
}

/// The path (`election.lease_ttl`, `fault[1]`, `network.latency`) of the
/// deepest key or value of `table` whose span covers `target`. A table
/// opened by a header spans only its header, so every table is searched.
fn path_covering(table: &DeTable<'_>, target: &Range<usize>) -> Option<String> {
    fn covers(span: &Range<usize>, target: &Range<usize>) -> bool {
        span.start <= target.start && target.end <= span.end
    }
    fn in_table(table: &DeTable<'_>, prefix: &str, target: &Range<usize>) -> Option<String> {
        table.iter().find_map(|(key, value)| {
            let path = if prefix.is_empty() {
                key.get_ref().to_string()
            } else {
                format!("{prefix}.{}", key.get_ref())
            };
            in_value(value.get_ref(), &path, target).or_else(|| {
                (covers(&key.span(), target) || covers(&value.span(), target)).then_some(path)
            })
        })
    }
    fn in_value(value: &DeValue<'_>, path: &str, target: &Range<usize>) -> Option<String> {
        match value {
            DeValue::Table(table) => in_table(table, path, target),
            DeValue::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
                let path = format!("{path}[{i}]");
                in_value(item.get_ref(), &path, target)
                    .or_else(|| covers(&item.span(), target).then_some(path))
            }),
            _ => None,
        }
    }
    if target.is_empty() {
        return None;
    }
    in_table(table, "", target)
}

/// 1-based line and column (in characters) of byte offset `at`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Where each key was found, to place validation errors.
#[derive(Default)]
struct Spans(BTreeMap<String, Range<usize>>);

impl Spans {
    fn note<T>(&mut self, key: &str, value: &Spanned<T>) {
        self.0.insert(key.to_string(), value.span());
    }

    /// The span of `key`, or of the closest enclosing key that has one.
    fn find(&self, key: &str) -> Option<Range<usize>> {
        let mut key = key.to_string();
        loop {
            if let Some(span) = self.0.get(&key) {
                return Some(span.clone());
            }
            match key.rfind(['.', '[']) {
                Some(i) => key.truncate(i),
                None => return None,
            }
        }
    }
}

struct ConvertError {
    key: String,
    span: Option<Range<usize>>,
    message: String,
}

fn err<T>(key: &str, span: Range<usize>, message: impl Into<String>) -> Result<T, ConvertError> {
    Err(ConvertError {
        key: key.to_string(),
        span: Some(span),
        message: message.into(),
    })
}

const DURATION_HELP: &str = "use a duration such as \"30s\", \"1m 30s\" or \"250ms\"";

fn duration(
    key: &str,
    value: &Spanned<String>,
    spans: &mut Spans,
) -> Result<Duration, ConvertError> {
    spans.note(key, value);
    let text = value.get_ref().trim();
    if text.starts_with('-') {
        return err(
            key,
            value.span(),
            format!("`{text}` is negative; durations must be zero or more ({DURATION_HELP})"),
        );
    }
    humantime::parse_duration(text).or_else(|e| {
        err(
            key,
            value.span(),
            format!("`{text}` is not a duration ({e}); {DURATION_HELP}"),
        )
    })
}

fn opt_duration(
    key: &str,
    value: &Option<Spanned<String>>,
    spans: &mut Spans,
) -> Result<Option<Duration>, ConvertError> {
    value.as_ref().map(|v| duration(key, v, spans)).transpose()
}

fn signed_offset(
    key: &str,
    value: &Spanned<String>,
    spans: &mut Spans,
) -> Result<ClockOffset, ConvertError> {
    spans.note(key, value);
    let text = value.get_ref().trim();
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest.trim()),
        None => (false, text.strip_prefix('+').unwrap_or(text).trim()),
    };
    let d = humantime::parse_duration(rest).or_else(|e| {
        err(
            key,
            value.span(),
            format!("`{text}` is not a clock offset ({e}); use e.g. \"2s\" or \"-500ms\""),
        )
    })?;
    Ok(if negative {
        ClockOffset::behind(d)
    } else {
        ClockOffset::ahead(d)
    })
}

/// A seed: a TOML integer, or a string of decimal digits for the seeds
/// above `i64::MAX` that TOML integers cannot hold (see [`seed_value`]).
#[derive(Deserialize)]
#[serde(untagged)]
enum RawSeed {
    Integer(i64),
    Text(String),
}

/// What a seed may be, for error messages.
const SEED_HELP: &str = "a seed is a whole number from 0 to 18446744073709551615; \
     above 9223372036854775807 (TOML's largest integer) write it as a string, \
     e.g. seed = \"18446744073709551615\"";

/// The `u64` a seed stands for: every `u64` round-trips, as an integer up to
/// `i64::MAX` and as a quoted decimal string above it (how
/// [`crate::to_toml::to_toml`] writes them).
fn seed_value(raw: &Spanned<RawSeed>, spans: &mut Spans) -> Result<u64, ConvertError> {
    spans.note("seed", raw);
    match raw.get_ref() {
        RawSeed::Integer(n) => u64::try_from(*n).or_else(|_| {
            err(
                "seed",
                raw.span(),
                format!("the seed must be 0 or more, not {n}; {SEED_HELP}"),
            )
        }),
        RawSeed::Text(text) => {
            let digits = text.trim();
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return err(
                    "seed",
                    raw.span(),
                    format!(
                        "expected an integer, found string {}; {SEED_HELP}",
                        toml::Value::String(text.clone())
                    ),
                );
            }
            digits.parse::<u64>().or_else(|_| {
                err(
                    "seed",
                    raw.span(),
                    format!("`{text}` is above the largest seed; {SEED_HELP}"),
                )
            })
        }
    }
}

/// One duration or a `[low, high]` range.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawSpan {
    One(String),
    Range(Vec<String>),
}

fn duration_range(
    key: &str,
    value: &Spanned<RawSpan>,
    spans: &mut Spans,
) -> Result<DurationRange, ConvertError> {
    spans.note(key, value);
    let span = value.span();
    let parse = |text: &String| {
        duration(
            key,
            &Spanned::new(span.clone(), text.clone()),
            &mut Spans::default(),
        )
    };
    match value.get_ref() {
        RawSpan::One(text) => Ok(DurationRange::fixed(parse(text)?)),
        RawSpan::Range(items) if items.len() == 2 => {
            let (low, high) = (parse(&items[0])?, parse(&items[1])?);
            if low > high {
                return err(
                    key,
                    span,
                    format!(
                        "the range is inverted: minimum {} is above maximum {}; write [min, max]",
                        humantime::format_duration(low),
                        humantime::format_duration(high)
                    ),
                );
            }
            Ok(DurationRange { low, high })
        }
        RawSpan::Range(items) => err(
            key,
            span,
            format!(
                "a range needs exactly two durations, [min, max]; got {}",
                items.len()
            ),
        ),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Spanned<String>,
    description: Option<String>,
    seed: Option<Spanned<RawSeed>>,
    duration: Spanned<String>,
    heal_at: Option<Spanned<String>>,
    election: Option<RawElection>,
    membership: Option<RawMembership>,
    work: Option<RawWork>,
    network: Option<RawNetwork>,
    downstream: Option<RawDownstream>,
    #[serde(default)]
    node: Vec<Spanned<RawNode>>,
    #[serde(default)]
    fault: Vec<Spanned<RawFault>>,
    expect: Option<RawExpect>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawElection {
    role: Option<Spanned<String>>,
    lease_ttl: Option<Spanned<String>>,
    renew_interval: Option<Spanned<String>>,
    retry_interval: Option<Spanned<String>>,
    safety_margin: Option<Spanned<String>>,
    rejoin_delay: Option<Spanned<String>>,
    release_on_deadline: Option<bool>,
    jitter: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMembership {
    heartbeat_interval: Option<Spanned<String>>,
    liveness_ttl: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWork {
    write_interval: Option<Spanned<String>>,
    work_duration: Option<Spanned<String>>,
    resource: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNetwork {
    latency: Option<Spanned<RawSpan>>,
    loss: Option<Spanned<f64>>,
    duplicate: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDownstream {
    fencing: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    id: Spanned<String>,
    count: Option<Spanned<i64>>,
    clock_offset: Option<Spanned<String>>,
    clock_drift: Option<Spanned<f64>>,
    start_at: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    kind: Spanned<String>,
    node: Option<Spanned<String>>,
    from: Option<Spanned<String>>,
    to: Option<Spanned<String>>,
    groups: Option<Spanned<Vec<Vec<String>>>>,
    at: Option<Spanned<String>>,
    duration: Option<Spanned<RawSpan>>,
    every: Option<Spanned<String>>,
    restart_after: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    split_brain: Option<bool>,
    violations: Option<Spanned<i64>>,
    min_leader_changes: Option<Spanned<i64>>,
    max_leader_changes: Option<Spanned<i64>>,
    max_failover: Option<Spanned<String>>,
    max_spurious_failovers: Option<Spanned<i64>>,
    min_spurious_failovers: Option<Spanned<i64>>,
    min_rejected_writes: Option<Spanned<i64>>,
    max_overlap: Option<Spanned<String>>,
    min_overlap: Option<Spanned<String>>,
    max_token: Option<Spanned<i64>>,
    min_membership_flaps: Option<Spanned<i64>>,
    leader_at_end: Option<bool>,
}

fn count(
    key: &str,
    value: &Option<Spanned<i64>>,
    spans: &mut Spans,
) -> Result<Option<u64>, ConvertError> {
    match value {
        None => Ok(None),
        Some(v) => {
            spans.note(key, v);
            u64::try_from(*v.get_ref()).map(Some).or_else(|_| {
                err(
                    key,
                    v.span(),
                    format!("{} is negative; it must be 0 or more", v.get_ref()),
                )
            })
        }
    }
}

fn probability(
    key: &str,
    value: &Option<Spanned<f64>>,
    spans: &mut Spans,
) -> Result<f64, ConvertError> {
    match value {
        None => Ok(0.0),
        Some(v) => {
            spans.note(key, v);
            let p = *v.get_ref();
            if !(0.0..=1.0).contains(&p) {
                return err(
                    key,
                    v.span(),
                    format!("{p} is not a probability; it must be in [0, 1]"),
                );
            }
            Ok(p)
        }
    }
}

fn convert(raw: RawScenario, spans: &mut Spans) -> Result<Scenario, ConvertError> {
    spans.note("name", &raw.name);
    let duration_value = duration("duration", &raw.duration, spans)?;
    let mut scenario = Scenario::new(raw.name.get_ref().clone(), duration_value);
    scenario.description = raw.description;
    scenario.heal_at = opt_duration("heal_at", &raw.heal_at, spans)?;
    if let Some(seed) = &raw.seed {
        scenario.seed = seed_value(seed, spans)?;
    }
    if let Some(e) = &raw.election {
        scenario.election = convert_election(e, spans)?;
    }
    if let Some(m) = &raw.membership {
        let d = Membership::default();
        scenario.membership = Membership {
            heartbeat_interval: opt_duration(
                "membership.heartbeat_interval",
                &m.heartbeat_interval,
                spans,
            )?
            .unwrap_or(d.heartbeat_interval),
            liveness_ttl: opt_duration("membership.liveness_ttl", &m.liveness_ttl, spans)?
                .unwrap_or(d.liveness_ttl),
        };
    }
    if let Some(w) = &raw.work {
        let d = Work::default();
        if let Some(r) = &w.resource {
            spans.note("work.resource", r);
        }
        scenario.work = Work {
            write_interval: opt_duration("work.write_interval", &w.write_interval, spans)?
                .unwrap_or(d.write_interval),
            work_duration: opt_duration("work.work_duration", &w.work_duration, spans)?
                .unwrap_or(d.work_duration),
            resource: w.resource.as_ref().map(|r| r.get_ref().clone()),
        };
    }
    if let Some(n) = &raw.network {
        let d = Network::default();
        let latency = match &n.latency {
            Some(l) => {
                let range = duration_range("network.latency", l, spans)?;
                (range.low, range.high)
            }
            None => d.latency,
        };
        scenario.network = Network {
            latency,
            loss: probability("network.loss", &n.loss, spans)?,
            duplicate: probability("network.duplicate", &n.duplicate, spans)?,
        };
    }
    if let Some(ds) = &raw.downstream {
        scenario.fencing = ds.fencing.unwrap_or(true);
    }
    for (i, node) in raw.node.iter().enumerate() {
        convert_node(i, node, &mut scenario, spans)?;
    }
    for (i, fault) in raw.fault.iter().enumerate() {
        let spec = convert_fault(i, fault, spans)?;
        scenario.faults.push(spec);
    }
    if let Some(x) = &raw.expect {
        scenario.expect = convert_expect(x, spans)?;
    }
    Ok(scenario)
}

fn convert_election(e: &RawElection, spans: &mut Spans) -> Result<Election, ConvertError> {
    let d = Election::default();
    if let Some(role) = &e.role {
        spans.note("election.role", role);
    }
    let jitter = match &e.jitter {
        Some(j) => {
            spans.note("election.jitter", j);
            let f = *j.get_ref();
            if !(0.0..1.0).contains(&f) {
                return err(
                    "election.jitter",
                    j.span(),
                    format!("{f} is outside [0, 1)"),
                );
            }
            f
        }
        None => 0.0,
    };
    Ok(Election {
        role: e.role.as_ref().map_or(d.role, |r| r.get_ref().clone()),
        lease_ttl: opt_duration("election.lease_ttl", &e.lease_ttl, spans)?.unwrap_or(d.lease_ttl),
        renew_interval: opt_duration("election.renew_interval", &e.renew_interval, spans)?
            .unwrap_or(d.renew_interval),
        retry_interval: opt_duration("election.retry_interval", &e.retry_interval, spans)?
            .unwrap_or(d.retry_interval),
        safety_margin: opt_duration("election.safety_margin", &e.safety_margin, spans)?,
        rejoin_delay: opt_duration("election.rejoin_delay", &e.rejoin_delay, spans)?,
        release_on_deadline: e.release_on_deadline.unwrap_or(true),
        jitter,
    })
}

fn convert_node(
    index: usize,
    node: &Spanned<RawNode>,
    scenario: &mut Scenario,
    spans: &mut Spans,
) -> Result<(), ConvertError> {
    let raw = node.get_ref();
    // Validation errors speak of the expanded index; note both.
    let first = scenario.nodes.len();
    let key = format!("node[{index}]");
    spans.note(&key, node);
    let mut spec = NodeSpec::new(raw.id.get_ref().clone());
    if let Some(offset) = &raw.clock_offset {
        spec.clock_offset = signed_offset(&format!("{key}.clock_offset"), offset, spans)?;
    }
    if let Some(drift) = &raw.clock_drift {
        spans.note(&format!("{key}.clock_drift"), drift);
        spec.clock_drift = *drift.get_ref();
    }
    if let Some(start) = &raw.start_at {
        spec.start_at = duration(&format!("{key}.start_at"), start, spans)?;
    }
    let copies = match &raw.count {
        None => None,
        Some(c) => {
            let n = *c.get_ref();
            if !(1..=10_000).contains(&n) {
                return err(
                    &format!("{key}.count"),
                    c.span(),
                    format!("{n} is outside 1..=10000"),
                );
            }
            Some(n as usize)
        }
    };
    match copies {
        None => {
            spans.0.insert(format!("node[{first}].id"), raw.id.span());
            spans.0.insert(format!("node[{first}]"), node.span());
            scenario.nodes.push(spec);
        }
        Some(n) => {
            let width = n.to_string().len();
            for i in 1..=n {
                let mut copy = spec.clone();
                copy.id = format!("{}-{i:0width$}", raw.id.get_ref());
                spans
                    .0
                    .insert(format!("node[{}].id", scenario.nodes.len()), raw.id.span());
                spans
                    .0
                    .insert(format!("node[{}]", scenario.nodes.len()), node.span());
                scenario.nodes.push(copy);
            }
        }
    }
    Ok(())
}

const FAULT_KINDS: &str = "pause, isolate, cut, partition, crash, replace, stop, abdicate";

fn convert_fault(
    index: usize,
    fault: &Spanned<RawFault>,
    spans: &mut Spans,
) -> Result<FaultSpec, ConvertError> {
    let raw = fault.get_ref();
    let key = format!("fault[{index}]");
    spans.note(&key, fault);
    let kind = raw.kind.get_ref().as_str();
    spans.note(&format!("{key}.kind"), &raw.kind);
    let k = |field: &str| format!("{key}.{field}");
    let need_str = |field: &str,
                    v: &Option<Spanned<String>>,
                    spans: &mut Spans|
     -> Result<String, ConvertError> {
        match v {
            Some(v) => {
                spans.note(&k(field), v);
                Ok(v.get_ref().clone())
            }
            None => err(
                &k(field),
                fault.span(),
                format!("a `{kind}` fault needs `{field}`"),
            ),
        }
    };
    let forbid = |field: &str, present: bool| -> Result<(), ConvertError> {
        if present {
            err(
                &k(field),
                fault.span(),
                format!("a `{kind}` fault does not take `{field}`"),
            )
        } else {
            Ok(())
        }
    };
    if let Some(every) = &raw.every {
        let recurring_kind = match kind {
            "pause" => RecurringKind::Pause,
            "isolate" => RecurringKind::Isolate,
            "crash" => RecurringKind::Crash,
            other => {
                return err(
                    &k("every"),
                    every.span(),
                    format!(
                    "`{other}` faults cannot recur; `every` works with pause, isolate and crash"
                ),
                )
            }
        };
        forbid("at", raw.at.is_some())?;
        forbid("from", raw.from.is_some())?;
        forbid("to", raw.to.is_some())?;
        forbid("groups", raw.groups.is_some())?;
        forbid("restart_after", raw.restart_after.is_some())?;
        let every = duration(&k("every"), every, spans)?;
        let node = need_str("node", &raw.node, spans)?;
        let duration = match &raw.duration {
            Some(d) => duration_range(&k("duration"), d, spans)?,
            None => {
                return err(
                    &k("duration"),
                    fault.span(),
                    format!(
                        "a recurring `{kind}` fault needs `duration` (one duration or [min, max])"
                    ),
                )
            }
        };
        return Ok(FaultSpec::Recurring {
            kind: recurring_kind,
            node: (node != "*").then_some(node),
            every,
            duration,
        });
    }
    let at = match &raw.at {
        Some(at) => duration(&k("at"), at, spans)?,
        None if matches!(
            kind,
            "pause" | "isolate" | "cut" | "partition" | "crash" | "replace" | "stop" | "abdicate"
        ) =>
        {
            return err(
                &k("at"),
                fault.span(),
                format!("a `{kind}` fault needs `at` (or `every`, for a recurring one)"),
            )
        }
        None => Duration::ZERO,
    };
    let fixed_duration = |spans: &mut Spans| -> Result<Duration, ConvertError> {
        match &raw.duration {
            Some(d) => {
                let range = duration_range(&k("duration"), d, spans)?;
                if range.low != range.high {
                    return err(&k("duration"), d.span(), "a scheduled fault takes one duration; ranges are for recurring faults (with `every`)");
                }
                Ok(range.low)
            }
            None => err(
                &k("duration"),
                fault.span(),
                format!("a `{kind}` fault needs `duration`"),
            ),
        }
    };
    match kind {
        "pause" | "isolate" => {
            forbid("from", raw.from.is_some())?;
            forbid("to", raw.to.is_some())?;
            forbid("groups", raw.groups.is_some())?;
            forbid("restart_after", raw.restart_after.is_some())?;
            let host = need_str("node", &raw.node, spans)?;
            if host == "*" {
                return err(
                    &k("node"),
                    fault.span(),
                    "`*` is for recurring faults (with `every`); name one host",
                );
            }
            let duration = fixed_duration(spans)?;
            Ok(if kind == "pause" {
                FaultSpec::Pause { host, at, duration }
            } else {
                FaultSpec::Isolate { host, at, duration }
            })
        }
        "cut" => {
            forbid("node", raw.node.is_some())?;
            forbid("groups", raw.groups.is_some())?;
            forbid("restart_after", raw.restart_after.is_some())?;
            let from = need_str("from", &raw.from, spans)?;
            let to = need_str("to", &raw.to, spans)?;
            let duration = fixed_duration(spans)?;
            Ok(FaultSpec::Cut {
                from,
                to,
                at,
                duration,
            })
        }
        "partition" => {
            forbid("node", raw.node.is_some())?;
            forbid("from", raw.from.is_some())?;
            forbid("to", raw.to.is_some())?;
            forbid("restart_after", raw.restart_after.is_some())?;
            let groups = match &raw.groups {
                Some(g) => {
                    spans.note(&k("groups"), g);
                    g.get_ref().clone()
                }
                None => return err(&k("groups"), fault.span(), "a `partition` fault needs `groups`, e.g. [[\"node-a\", \"downstream\"], [\"node-b\", \"lease-store\"]]"),
            };
            let duration = fixed_duration(spans)?;
            Ok(FaultSpec::Partition {
                groups,
                at,
                duration,
            })
        }
        "crash" => {
            forbid("from", raw.from.is_some())?;
            forbid("to", raw.to.is_some())?;
            forbid("groups", raw.groups.is_some())?;
            forbid("duration", raw.duration.is_some())?;
            let node = need_str("node", &raw.node, spans)?;
            let restart_after = opt_duration(&k("restart_after"), &raw.restart_after, spans)?;
            Ok(FaultSpec::Crash {
                node,
                at,
                restart_after,
            })
        }
        "replace" | "abdicate" => {
            forbid("from", raw.from.is_some())?;
            forbid("to", raw.to.is_some())?;
            forbid("groups", raw.groups.is_some())?;
            forbid("duration", raw.duration.is_some())?;
            forbid("restart_after", raw.restart_after.is_some())?;
            let node = need_str("node", &raw.node, spans)?;
            Ok(if kind == "replace" {
                FaultSpec::Replace { node, at }
            } else {
                FaultSpec::Abdicate { node, at }
            })
        }
        "stop" => {
            forbid("from", raw.from.is_some())?;
            forbid("to", raw.to.is_some())?;
            forbid("groups", raw.groups.is_some())?;
            forbid("duration", raw.duration.is_some())?;
            let node = need_str("node", &raw.node, spans)?;
            let restart_after = opt_duration(&k("restart_after"), &raw.restart_after, spans)?;
            Ok(FaultSpec::Stop {
                node,
                at,
                restart_after,
            })
        }
        other => err(
            &k("kind"),
            raw.kind.span(),
            format!("unknown fault kind `{other}`; known kinds: {FAULT_KINDS}"),
        ),
    }
}

fn convert_expect(x: &RawExpect, spans: &mut Spans) -> Result<Expectations, ConvertError> {
    Ok(Expectations {
        split_brain: x.split_brain,
        violations: count("expect.violations", &x.violations, spans)?,
        min_leader_changes: count("expect.min_leader_changes", &x.min_leader_changes, spans)?,
        max_leader_changes: count("expect.max_leader_changes", &x.max_leader_changes, spans)?,
        max_failover: opt_duration("expect.max_failover", &x.max_failover, spans)?,
        max_spurious_failovers: count(
            "expect.max_spurious_failovers",
            &x.max_spurious_failovers,
            spans,
        )?,
        min_spurious_failovers: count(
            "expect.min_spurious_failovers",
            &x.min_spurious_failovers,
            spans,
        )?,
        min_rejected_writes: count("expect.min_rejected_writes", &x.min_rejected_writes, spans)?,
        max_overlap: opt_duration("expect.max_overlap", &x.max_overlap, spans)?,
        min_overlap: opt_duration("expect.min_overlap", &x.min_overlap, spans)?,
        max_token: count("expect.max_token", &x.max_token, spans)?,
        min_membership_flaps: count(
            "expect.min_membership_flaps",
            &x.min_membership_flaps,
            spans,
        )?,
        leader_at_end: x.leader_at_end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
