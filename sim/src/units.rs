//! Reading, converting and printing the simulator's spans and instants: true
//! time is `u64` nanoseconds; reports use milliseconds; people read seconds;
//! people write spans in humantime syntax (`30s`, `1m 30s`, `250ms`).
//!
//! [`parse_duration`] is the crate's one duration parser: scenario files
//! ([`crate::file`]) read every span through it and word its errors in their
//! own way (with the key, line and column); its own [`DurationError`] wording is
//! the command line's.

use std::fmt;
use std::time::Duration;

use crate::time::Nanos;

/// Why a text is not a duration (see [`parse_duration`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DurationError {
    /// It starts with `-`: a span is never negative.
    Negative {
        /// The text, trimmed.
        text: String,
    },
    /// It is not a duration in humantime syntax.
    Invalid {
        /// The text, trimmed.
        text: String,
        /// What the humantime parser said (`unknown time unit "parsecs", …`).
        reason: String,
    },
}

/// One sentence for a command-line flag: what is wrong and an example.
impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Negative { text } => {
                write!(
                    f,
                    "`{text}` is negative; use a duration such as 30s or 1m30s"
                )
            }
            DurationError::Invalid { text, reason } => write!(
                f,
                "`{text}` is not a duration ({reason}); use e.g. 30s, 1m30s or 250ms"
            ),
        }
    }
}

impl std::error::Error for DurationError {}

/// Parses a span in humantime syntax (`30s`, `1m 30s`, `250ms`, `2h`),
/// ignoring whitespace around it.
///
/// For command-line flags and scenario keys alike: the error keeps the
/// trimmed text and the parser's reason, so each caller can word it.
///
/// # Errors
/// [`DurationError::Negative`] for a text starting with `-` (spans are zero
/// or more; a signed clock offset is read by the scenario loader, which strips
/// the sign first), [`DurationError::Invalid`] for anything else humantime
/// refuses (an unknown unit, a missing number, an overflow).
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(DurationError::Negative {
            text: text.to_string(),
        });
    }
    humantime::parse_duration(text).map_err(|e| DurationError::Invalid {
        text: text.to_string(),
        reason: e.to_string(),
    })
}

/// Parses a signed span: an optional `-` (negative) or `+`, then a duration
/// (spaces allowed after the sign), ignoring whitespace around it. Returns
/// whether it is negative, and its size.
///
/// # Errors
/// What humantime said of the text after the sign (a second sign included:
/// `--2s` is not a duration).
pub(crate) fn parse_signed_duration(
    text: &str,
) -> Result<(bool, Duration), humantime::DurationError> {
    let text = text.trim();
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest.trim()),
        None => (false, text.strip_prefix('+').unwrap_or(text).trim()),
    };
    let size = humantime::parse_duration(rest)?;
    Ok((negative, size))
}

/// Whole milliseconds of an instant or a span (rounded down): the unit of
/// the JSON report.
pub(crate) fn ms(t: impl Nanos) -> u64 {
    t.nanos() / 1_000_000
}

/// `d` in humantime syntax (`1m 30s`), as scenario files write it.
///
/// From a day up it counts whole days (`400days 12h`), never months or
/// years: humantime's month is 30.44 days, so `400d` would read back as
/// `1year 1month 4days 7h 26m 24s` — confusing in a message about `400d`.
pub(crate) fn human(d: Duration) -> String {
    const DAY: u64 = 86_400;
    let days = d.as_secs() / DAY;
    if days == 0 {
        return humantime::format_duration(d).to_string();
    }
    let rest = d - Duration::from_secs(days * DAY);
    if rest.is_zero() {
        format!("{days}days")
    } else {
        format!("{days}days {}", humantime::format_duration(rest))
    }
}

/// An instant or a span as seconds with milliseconds: `52.050s`.
pub(crate) fn secs(t: impl Nanos) -> String {
    secs_of_ms(ms(t))
}

/// A millisecond count as seconds with milliseconds: `52.050s`.
pub(crate) fn secs_of_ms(ms: u64) -> String {
    format!("{}.{:03}s", ms / 1000, ms % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_durations_print_in_days_and_read_back() {
        // Proves a limit message about `400d` says `400days`, not humantime's months and
        // years, and that every printed duration parses back to itself.
        let day = Duration::from_secs(86_400);
        assert_eq!(human(day * 400), "400days");
        assert_eq!(
            human(day * 365 + Duration::from_secs(3_723)),
            "365days 1h 2m 3s"
        );
        assert_eq!(human(Duration::from_millis(1_500)), "1s 500ms");
        for d in [
            day * 400,
            day * 365 + Duration::from_millis(7),
            Duration::from_secs(59),
        ] {
            assert_eq!(parse_duration(&human(d)), Ok(d));
        }
    }

    #[test]
    fn durations_parse_in_humantime_syntax_around_whitespace() {
        assert_eq!(parse_duration(" 1m 30s "), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn a_negative_or_malformed_duration_is_refused_with_the_command_line_wording() {
        let negative = parse_duration(" -1s").unwrap_err();
        assert_eq!(
            negative,
            DurationError::Negative {
                text: "-1s".to_string()
            }
        );
        assert_eq!(
            negative.to_string(),
            "`-1s` is negative; use a duration such as 30s or 1m30s"
        );
        let invalid = parse_duration("3 parsecs").unwrap_err();
        assert_eq!(
            invalid.to_string(),
            "`3 parsecs` is not a duration (unknown time unit \"parsecs\", supported units: \
             ns, us/µs, ms, sec, min, hours, days, weeks, months, years (and few variations)); \
             use e.g. 30s, 1m30s or 250ms"
        );
    }

    #[test]
    fn a_signed_duration_keeps_its_sign_and_refuses_a_second_one() {
        let second = Duration::from_secs(1);
        assert_eq!(parse_signed_duration("-1s"), Ok((true, second)));
        assert_eq!(parse_signed_duration(" - 1s "), Ok((true, second)));
        assert_eq!(parse_signed_duration("+1s"), Ok((false, second)));
        assert_eq!(parse_signed_duration("1s"), Ok((false, second)));
        assert!(parse_signed_duration("--1s").is_err());
        assert!(parse_signed_duration("1 parsec").is_err());
    }
}
