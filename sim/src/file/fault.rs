//! Converting one `[[fault]]`: which keys each kind needs and which it does
//! not take.

use std::time::Duration;

use toml::Spanned;

use super::convert::{err, ConvertError};
use super::explain::FAULT_KINDS;
use super::place::Spans;
use super::raw::RawFault;
use super::values::{duration, duration_range, opt_duration, signed_offset};
use crate::engine::slew::DEFAULT_SLEW_RATE;
use crate::scenario::{FaultSpec, RecurringKind};

/// The `index`-th `[[fault]]`.
pub(super) fn convert_fault(
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
    // Refuses the first of `fields` (in the order given) that the fault has,
    // then a clock fault's own key (`rate`, `period`) on another kind.
    let forbid = |fields: &[&str]| -> Result<(), ConvertError> {
        let own = [("rate", "clock-slew"), ("period", "clock-strobe")];
        let foreign = own
            .iter()
            .filter(|(_, owner)| *owner != kind)
            .map(|(field, _)| field);
        match fields.iter().chain(foreign).find(|field| raw.has(field)) {
            Some(field) => err(
                &k(field),
                fault.span(),
                format!("a `{kind}` fault does not take `{field}`"),
            ),
            None => Ok(()),
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
        forbid(&[
            "at",
            "from",
            "to",
            "groups",
            "restart_after",
            "durable",
            "by",
        ])?;
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
    let (at, anchor) = match &raw.at {
        Some(at) => super::anchor::at_or_anchor(&k("at"), at, spans)?,
        None if matches!(
            kind,
            "pause"
                | "isolate"
                | "cut"
                | "partition"
                | "crash"
                | "replace"
                | "stop"
                | "abdicate"
                | "restart"
                | "clock-jump"
                | "clock-slew"
                | "clock-strobe"
        ) =>
        {
            return err(
                &k("at"),
                fault.span(),
                format!("a `{kind}` fault needs `at` (or `every`, for a recurring one)"),
            )
        }
        None => (Duration::ZERO, None),
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
    // Every arm returns the fault or its error; an anchor then wraps it.
    let mut scheduled = || -> Result<FaultSpec, ConvertError> {
        match kind {
            "pause" | "isolate" => {
                forbid(&["from", "to", "groups", "restart_after", "durable", "by"])?;
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
                forbid(&["node", "groups", "restart_after", "durable", "by"])?;
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
                forbid(&["node", "from", "to", "restart_after", "durable", "by"])?;
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
            "crash" | "stop" => {
                forbid(&["from", "to", "groups", "duration", "durable", "by"])?;
                let node = need_str("node", &raw.node, spans)?;
                let restart_after = opt_duration(&k("restart_after"), &raw.restart_after, spans)?;
                Ok(if kind == "crash" {
                    FaultSpec::Crash {
                        node,
                        at,
                        restart_after,
                    }
                } else {
                    FaultSpec::Stop {
                        node,
                        at,
                        restart_after,
                    }
                })
            }
            "replace" | "abdicate" => {
                forbid(&[
                    "from",
                    "to",
                    "groups",
                    "duration",
                    "restart_after",
                    "durable",
                    "by",
                ])?;
                let node = need_str("node", &raw.node, spans)?;
                Ok(if kind == "replace" {
                    FaultSpec::Replace { node, at }
                } else {
                    FaultSpec::Abdicate { node, at }
                })
            }
            "restart" => {
                forbid(&["from", "to", "groups", "restart_after", "by"])?;
                let host = need_str("node", &raw.node, spans)?;
                let duration = fixed_duration(spans)?;
                let durable = raw.durable.as_ref().map(|d| {
                    spans.note(&k("durable"), d);
                    *d.get_ref()
                });
                Ok(FaultSpec::Restart {
                    host,
                    at,
                    duration,
                    durable,
                })
            }
            "clock-jump" | "clock-slew" | "clock-strobe" => {
                if kind == "clock-strobe" {
                    forbid(&["from", "to", "groups", "restart_after", "durable"])?;
                } else {
                    forbid(&[
                        "from",
                        "to",
                        "groups",
                        "duration",
                        "restart_after",
                        "durable",
                    ])?;
                }
                let host = need_str("node", &raw.node, spans)?;
                let example = match kind {
                    "clock-jump" => "e.g. \"30s\" (ahead) or \"-5s\" (back)",
                    "clock-slew" => "the correction, e.g. \"2s\" or \"-500ms\"",
                    _ => "the flip, e.g. \"5s\"",
                };
                let by = match &raw.by {
                    Some(by) => signed_offset(&k("by"), by, spans)?,
                    None => {
                        return err(
                            &k("by"),
                            fault.span(),
                            format!("a `{kind}` fault needs `by`, {example}"),
                        )
                    }
                };
                if kind == "clock-jump" {
                    return Ok(FaultSpec::ClockJump { host, at, by });
                }
                if kind == "clock-slew" {
                    let rate = match &raw.rate {
                        Some(rate) => {
                            spans.note(&k("rate"), rate);
                            *rate.get_ref()
                        }
                        None => DEFAULT_SLEW_RATE,
                    };
                    return Ok(FaultSpec::ClockSlew { host, at, by, rate });
                }
                let period = match &raw.period {
                    Some(period) => duration(&k("period"), period, spans)?,
                    None => return err(
                        &k("period"),
                        fault.span(),
                        "a `clock-strobe` fault needs `period`, the time between flips, e.g. \"100ms\"",
                    ),
                };
                let duration = match &raw.duration {
                    Some(_) => fixed_duration(spans)?,
                    None => {
                        return err(
                            &k("duration"),
                            fault.span(),
                            "a `clock-strobe` fault needs `duration`, how long it strobes",
                        )
                    }
                };
                Ok(FaultSpec::ClockStrobe {
                    host,
                    at,
                    by,
                    period,
                    duration,
                })
            }
            other => err(
                &k("kind"),
                raw.kind.span(),
                format!("unknown fault kind `{other}`; known kinds: {FAULT_KINDS}"),
            ),
        }
    };
    let fault = scheduled()?;
    Ok(match anchor {
        Some(when) => fault.anchored(when),
        None => fault,
    })
}
