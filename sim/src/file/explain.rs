//! Rewording the TOML deserialiser's errors: the key at fault and a sentence
//! saying what is wrong and what is allowed; the help texts the whole reader
//! shares.

/// What a duration may look like, for error messages.
pub(super) const DURATION_HELP: &str = "use a duration such as \"30s\", \"1m 30s\" or \"250ms\"";

/// What a slew's rate may look like, for error messages.
pub(super) const SLEW_RATE_HELP: &str = "a slew's rate is a fraction of true time, e.g. 0.0005 \
     (500 ppm, ntpd's and the kernel's maximum) or 0.083 (chrony's maxslewrate of 83 333 ppm), \
     above 0 and at most 0.5";

/// What a seed may be, for error messages.
pub(super) const SEED_HELP: &str = "a seed is a whole number from 0 to 18446744073709551615; \
     above 9223372036854775807 (TOML's largest integer) write it as a string, \
     e.g. seed = \"18446744073709551615\"";

/// The fault kinds a `[[fault]]` may have, for error messages.
pub(super) const FAULT_KINDS: &str =
    "pause, isolate, cut, partition, crash, replace, stop, abdicate, restart, clock-jump, \
     clock-slew, clock-strobe";

/// Turns a serde/TOML error into the key at fault and a message that says
/// what is wrong and what is allowed; `path` is the key or table the error's
/// span points at.
pub(super) fn explain_toml_error(message: &str, path: Option<String>) -> (Option<String>, String) {
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
            } else if path.as_deref().is_some_and(|p| p.ends_with(".rate")) {
                message = format!("{message}; {SLEW_RATE_HELP}");
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
pub(super) fn is_duration_key(path: &str) -> bool {
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
            | "period"
            | "max_failover"
            | "max_overlap"
            | "min_overlap"
    )
}
