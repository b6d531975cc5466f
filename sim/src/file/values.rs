//! Reading one value of the raw tree: a duration, a clock offset, a seed, a
//! duration range, a count or a probability, each noted in [`Spans`] under its
//! key and refused with a [`ConvertError`] that names the key and its span.

use std::time::Duration;

use toml::Spanned;

use super::convert::{err, ConvertError};
use super::explain::{DURATION_HELP, SEED_HELP};
use super::place::Spans;
use super::raw::{RawSeed, RawSpan};
use crate::scenario::{ClockOffset, DurationRange};
use crate::units::{parse_duration, parse_signed_duration, DurationError};

/// The duration at `key`.
pub(super) fn duration(
    key: &str,
    value: &Spanned<String>,
    spans: &mut Spans,
) -> Result<Duration, ConvertError> {
    spans.note(key, value);
    parse_duration(value.get_ref()).or_else(|e| {
        let message = match e {
            DurationError::Negative { text } => {
                format!("`{text}` is negative; durations must be zero or more ({DURATION_HELP})")
            }
            DurationError::Invalid { text, reason } => {
                format!("`{text}` is not a duration ({reason}); {DURATION_HELP}")
            }
        };
        err(key, value.span(), message)
    })
}

/// The duration at `key`, if the key is there.
pub(super) fn opt_duration(
    key: &str,
    value: &Option<Spanned<String>>,
    spans: &mut Spans,
) -> Result<Option<Duration>, ConvertError> {
    value.as_ref().map(|v| duration(key, v, spans)).transpose()
}

/// The clock offset at `key`: a duration, negative (behind true time) with
/// a leading `-`.
pub(super) fn signed_offset(
    key: &str,
    value: &Spanned<String>,
    spans: &mut Spans,
) -> Result<ClockOffset, ConvertError> {
    spans.note(key, value);
    let (negative, d) = parse_signed_duration(value.get_ref()).or_else(|reason| {
        let text = value.get_ref().trim();
        err(
            key,
            value.span(),
            format!("`{text}` is not a clock offset ({reason}); use e.g. \"2s\" or \"-500ms\""),
        )
    })?;
    Ok(if negative {
        ClockOffset::behind(d)
    } else {
        ClockOffset::ahead(d)
    })
}

/// The `u64` a seed stands for: every `u64` round-trips, as an integer up to
/// `i64::MAX` and as a quoted decimal string above it (how
/// [`crate::to_toml::to_toml`] writes them).
pub(super) fn seed_value(raw: &Spanned<RawSeed>, spans: &mut Spans) -> Result<u64, ConvertError> {
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

/// The duration range at `key`: one duration, or `[min, max]`.
pub(super) fn duration_range(
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

/// The count at `key`, if the key is there: zero or more.
pub(super) fn count(
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

/// The probability at `key`, in `[0, 1]`; 0 when the key is absent.
pub(super) fn probability(
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
