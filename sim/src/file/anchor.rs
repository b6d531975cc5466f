//! A fault's `at`: a duration (`at = "12s"`), or an anchor's inline table
//! (`at = { event = "work-started", node = "node-a", after = "12s" }`, see
//! [`Anchor`]). Every key of the table is checked here; that the node is a
//! node and the event one the protocol makes is validation's.

use std::ops::Range;
use std::time::Duration;

use toml::{Spanned, Value};

use super::convert::{err, ConvertError};
use super::place::Spans;
use super::values::duration;
use crate::scenario::{Anchor, AnchorEvent};

/// The keys an anchor's table takes.
const ANCHOR_KEYS: &str = "event, node, token, after, delay";

/// What `at = ...` at `key` says: the instant (an anchor's `after`, 0 when
/// not given) and the anchor, if it is a table.
pub(super) fn at_or_anchor(
    key: &str,
    at: &Spanned<Value>,
    spans: &mut Spans,
) -> Result<(Duration, Option<Anchor>), ConvertError> {
    spans.note(key, at);
    let span = at.span();
    match at.get_ref() {
        Value::String(text) => {
            let text = Spanned::new(span, text.clone());
            Ok((duration(key, &text, spans)?, None))
        }
        Value::Table(table) => anchor(key, table, span, spans),
        other => err(
            key,
            span,
            format!(
                "`at` is a duration (\"12s\") or an anchor's table ({{ event = \"work-started\", \
                 node = \"node-a\", after = \"12s\" }}), not a {}",
                other.type_str()
            ),
        ),
    }
}

/// The anchor a table at `key` describes.
fn anchor(
    key: &str,
    table: &toml::Table,
    span: Range<usize>,
    spans: &mut Spans,
) -> Result<(Duration, Option<Anchor>), ConvertError> {
    let events = || {
        AnchorEvent::ALL
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(unknown) = table
        .keys()
        .find(|k| !ANCHOR_KEYS.split(", ").any(|known| known == k.as_str()))
    {
        return err(
            &format!("{key}.{unknown}"),
            span,
            format!("an anchor does not take `{unknown}`; its keys are {ANCHOR_KEYS}"),
        );
    }
    let text = |field: &str| -> Result<Option<Spanned<String>>, ConvertError> {
        match table.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(Spanned::new(span.clone(), s.clone()))),
            Some(other) => err(
                &format!("{key}.{field}"),
                span.clone(),
                format!("`{field}` is a string, not a {}", other.type_str()),
            ),
        }
    };
    let event = match text("event")? {
        Some(name) => match AnchorEvent::from_name(name.get_ref()) {
            Some(event) => event,
            None => {
                return err(
                    &format!("{key}.event"),
                    span,
                    format!(
                        "unknown anchor event `{}`; known events: {}",
                        name.get_ref(),
                        events()
                    ),
                )
            }
        },
        None => {
            return err(
                &format!("{key}.event"),
                span,
                format!("an anchor needs `event`, one of {}", events()),
            )
        }
    };
    let node = text("node")?.map(|n| n.into_inner());
    let token = match table.get("token") {
        None => None,
        Some(Value::Integer(t)) => match u64::try_from(*t) {
            Ok(t) => Some(t),
            Err(_) => {
                return err(
                    &format!("{key}.token"),
                    span,
                    format!("a fencing token is 1 or more, not {t}"),
                )
            }
        },
        Some(other) => {
            return err(
                &format!("{key}.token"),
                span,
                format!("`token` is an integer, not a {}", other.type_str()),
            )
        }
    };
    let after = match text("after")? {
        Some(after) => duration(&format!("{key}.after"), &after, spans)?,
        None => Duration::ZERO,
    };
    let delay = match text("delay")? {
        Some(delay) => duration(&format!("{key}.delay"), &delay, spans)?,
        None => Duration::ZERO,
    };
    let anchor = Anchor {
        event,
        node,
        token,
        delay,
    };
    Ok((after, Some(anchor)))
}
