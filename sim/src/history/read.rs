//! Reading history files: bounded, and tolerant of damaged lines.
//!
//! A file is read whole (at most [`MAX_FILE_BYTES`]) and split at `\n`. Its
//! first line must be a valid [`Header`] of this format version, or the file
//! is bad input. Every other line is a [`Line`] or a problem:
//! * the **last** line of a file, if it does not parse and is not ended by
//!   `\n`, is a *warning* (a process killed mid-write cuts its last line);
//! * any other line that does not parse (bad JSON, an unknown event, an
//!   invalid value, a line over [`MAX_LINE_BYTES`], not UTF-8, empty) is an
//!   *error*: reported with its file and number, skipped by the verdict.

use std::fmt;
use std::path::Path;

use fenced::history::{Header, Kind, Line, FORMAT, VERSION};

use super::HistoryError;
use crate::report::HistoryProblem;

/// The largest history file read.
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;
/// The longest line read (a longer one is a malformed line).
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// The most files one check reads.
pub const MAX_FILES: usize = 4096;

/// One file, read.
#[derive(Clone, Debug)]
pub(crate) struct File {
    /// The path as given.
    pub(crate) path: String,
    pub(crate) header: Header,
    /// Each event line with its 1-based line number.
    pub(crate) lines: Vec<(u64, Line)>,
    pub(crate) problems: Vec<HistoryProblem>,
    /// Malformed lines other than a cut-short last line.
    pub(crate) errors: u64,
}

/// Reads the file at `path` (see the module documentation).
pub(crate) fn read_path(path: &Path) -> Result<File, HistoryError> {
    let name = path.display().to_string();
    let cannot = |error: std::io::Error| HistoryError::Unreadable {
        path: name.clone(),
        error: error.to_string(),
    };
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if !meta.is_file() {
        return Err(HistoryError::NotAFile { path: name });
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(HistoryError::TooLarge {
            path: name,
            bytes: meta.len(),
        });
    }
    let bytes = std::fs::read(path).map_err(cannot)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(HistoryError::TooLarge {
            path: name,
            bytes: bytes.len() as u64,
        });
    }
    parse(name, &bytes)
}

/// Parses the bytes of the file named `path`.
pub(crate) fn parse(path: String, bytes: &[u8]) -> Result<File, HistoryError> {
    let mut rest = bytes;
    let mut number = 0_u64;
    let mut header = None;
    let mut file = File {
        path,
        header: Header::of_kind(Kind::Lab),
        lines: Vec::new(),
        problems: Vec::new(),
        errors: 0,
    };
    while !rest.is_empty() {
        number += 1;
        let (text, ended) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => {
                let text = &rest[..i];
                rest = &rest[i + 1..];
                (text, true)
            }
            None => {
                let text = rest;
                rest = &[];
                (text, false)
            }
        };
        if header.is_none() {
            header = Some(parse_header(&file.path, text, ended)?);
            continue;
        }
        match parse_line(text) {
            Ok(line) => file.lines.push((number, line)),
            Err(detail) if !ended => file.problems.push(HistoryProblem {
                path: file.path.clone(),
                line: number,
                severity: "warning".to_string(),
                detail: format!(
                    "the last line is cut short (a process killed mid-write?): {detail}"
                ),
            }),
            Err(detail) => {
                file.errors += 1;
                file.problems.push(HistoryProblem {
                    path: file.path.clone(),
                    line: number,
                    severity: "error".to_string(),
                    detail: detail.to_string(),
                });
            }
        }
    }
    file.header = header.ok_or_else(|| HistoryError::NoHeader {
        path: file.path.clone(),
        detail: "the file is empty".to_string(),
    })?;
    Ok(file)
}

fn parse_header(path: &str, text: &[u8], ended: bool) -> Result<Header, HistoryError> {
    let no_header = |detail: String| HistoryError::NoHeader {
        path: path.to_string(),
        detail,
    };
    if text.len() > MAX_LINE_BYTES {
        return Err(no_header(format!(
            "its first line is over {MAX_LINE_BYTES} bytes"
        )));
    }
    let header: Header = serde_json::from_slice(text).map_err(|e| {
        let cut = if ended { "" } else { " (cut short)" };
        no_header(format!("its first line{cut} is not a history header: {e}"))
    })?;
    if header.history != FORMAT {
        return Err(no_header(format!(
            "its header says history {:?}, not {FORMAT:?}",
            header.history
        )));
    }
    if header.version != VERSION {
        return Err(no_header(format!(
            "it is format version {}; this fenced-sim reads version {VERSION}",
            header.version
        )));
    }
    if header.kind == Kind::Node
        && (header.node.is_none() || header.owner.is_none() || header.incarnation.is_none())
    {
        return Err(no_header(
            "a node's header needs `node`, `incarnation` and `owner`".to_string(),
        ));
    }
    Ok(header)
}

fn parse_line(text: &[u8]) -> Result<Line, LineError> {
    if text.len() > MAX_LINE_BYTES {
        return Err(LineError::TooLong(text.len()));
    }
    if text.iter().all(u8::is_ascii_whitespace) {
        return Err(LineError::Empty);
    }
    serde_json::from_slice(text).map_err(LineError::NotAnEvent)
}

/// Why a line after the header is no [`Line`].
#[derive(Debug)]
enum LineError {
    /// Over [`MAX_LINE_BYTES`]: the line's length.
    TooLong(usize),
    /// Nothing but whitespace.
    Empty,
    /// Not the JSON of an event.
    NotAnEvent(serde_json::Error),
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::TooLong(bytes) => write!(
                f,
                "the line is {bytes} bytes, over the limit of {MAX_LINE_BYTES}"
            ),
            LineError::Empty => f.write_str("the line is empty"),
            LineError::NotAnEvent(e) => write!(f, "not a history event: {e}"),
        }
    }
}

impl std::error::Error for LineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LineError::NotAnEvent(e) => Some(e),
            LineError::TooLong(_) | LineError::Empty => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"history":"fenced","version":1,"kind":"lab","pid":1,"clock":"c"}"#;

    #[test]
    fn a_cut_last_line_is_a_warning_and_a_bad_middle_line_an_error() {
        // Proves the two severities: the same garbage is an error in the
        // middle of a file and a warning as its unterminated last line.
        let text = format!(
            "{HEADER}\n{{\"at_ns\":1,\"event\":\"process-started\"}}\n{{\"at_ns\":2,\"ev\n{{\"at_ns\":3,\"event\":\"process-stopped\"}}\n{{\"at_ns\":4,\"ev"
        );
        let file = parse("f".to_string(), text.as_bytes()).expect("the header is valid");
        assert_eq!(file.lines.len(), 2);
        assert_eq!(file.errors, 1);
        let severities: Vec<(u64, &str)> = file
            .problems
            .iter()
            .map(|p| (p.line, p.severity.as_str()))
            .collect();
        assert_eq!(severities, vec![(3, "error"), (5, "warning")]);
    }

    #[test]
    fn a_missing_or_foreign_header_is_bad_input() {
        // Proves a file that is not a history (empty, other JSON, another
        // version, a node without identity) is refused, naming why.
        for (text, want) in [
            ("", "empty"),
            ("{\"a\":1}\n", "not a history header"),
            (
                "{\"history\":\"fenced\",\"version\":9,\"kind\":\"lab\",\"pid\":1,\"clock\":\"c\"}\n",
                "version 9",
            ),
            (
                "{\"history\":\"fenced\",\"version\":1,\"kind\":\"node\",\"pid\":1,\"clock\":\"c\"}\n",
                "needs `node`",
            ),
        ] {
            let error = parse("f".to_string(), text.as_bytes()).expect_err(text);
            assert!(error.to_string().contains(want), "{error}");
        }
    }
}
