//! Places in the text: the key path behind a byte span, the line and column of
//! a byte offset, and the span of each key converted (to place validation
//! errors, which name only a key).

use std::collections::BTreeMap;
use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// The path (`election.lease_ttl`, `fault[1]`, `network.latency`) of the
/// deepest key or value of `table` whose span covers `target`. A table
/// opened by a header spans only its header, so every table is searched.
pub(super) fn path_covering(table: &DeTable<'_>, target: &Range<usize>) -> Option<String> {
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
pub(super) fn line_column(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Where each key was found, to place validation errors.
#[derive(Default)]
pub(super) struct Spans(BTreeMap<String, Range<usize>>);

impl Spans {
    /// Notes that `key` is at the span of `value`.
    pub(super) fn note<T>(&mut self, key: &str, value: &Spanned<T>) {
        self.0.insert(key.to_string(), value.span());
    }

    /// Notes that `key` is at `span` (a key the file does not spell out: a
    /// node expanded from a `count`).
    pub(super) fn note_span(&mut self, key: String, span: Range<usize>) {
        self.0.insert(key, span);
    }

    /// The span of `key`, or of the closest enclosing key that has one.
    pub(super) fn find(&self, key: &str) -> Option<Range<usize>> {
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
