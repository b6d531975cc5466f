//! Writing node histories line by line for the `check-history` tests, and
//! judging them.
#![allow(dead_code)] // Each test file uses a different part of it.

use fenced_sim::history::{check_bytes, CheckOptions, Judged};

/// Times in the helpers are milliseconds on the history clock, from an
/// arbitrary machine uptime.
pub const BOOT_MS: u64 = 50_000;

pub fn settings(fencing: bool) -> String {
    format!(
        r#"{{"role":"reports","lease_ttl_ns":3000000000,"renew_interval_ns":1000000000,"retry_interval_ns":500000000,"safety_margin_ns":300000000,"fencing":{fencing}}}"#
    )
}

/// A node process's history under construction.
pub struct History {
    owner: String,
    text: String,
}

impl History {
    pub fn node(node: &str, incarnation: u32, fencing: bool) -> History {
        History::with_owner(node, incarnation, &format!("{node}#{incarnation}"), fencing)
    }

    pub fn with_owner(node: &str, incarnation: u32, owner: &str, fencing: bool) -> History {
        let header = format!(
            r#"{{"history":"fenced","version":1,"kind":"node","node":"{node}","incarnation":{incarnation},"owner":"{owner}","pid":7,"clock":"linux-monotonic-raw-syscall","settings":{}}}"#,
            settings(fencing)
        );
        History {
            owner: owner.to_string(),
            text: header + "\n",
        }
    }

    /// One event line at `at_ms`; `rest` is the JSON after `at_ns`.
    pub fn at(mut self, at_ms: u64, rest: &str) -> History {
        let at_ns = (BOOT_MS + at_ms) * 1_000_000;
        self.text
            .push_str(&format!("{{\"at_ns\":{at_ns},{rest}}}\n"));
        self
    }

    pub fn started(self, at_ms: u64) -> History {
        self.at(at_ms, r#""event":"process-started""#)
    }

    /// Request `request` sent at local time `local_ms`, granted (or renewed)
    /// `token` by a store whose clock reads the history clock's milliseconds
    /// at `at_ms + 1`, then applied and (for a grant) a term started.
    pub fn leads(self, at_ms: u64, request: u64, token: u64, grant: bool) -> History {
        let store_now = (at_ms + 1) * 1_000_000;
        let expires = store_now + 3_000_000_000;
        let answer = if grant { "granted" } else { "renewed" };
        let h = self
            .at(
                at_ms,
                &format!(r#""event":"request-sent","request":{request},"local_ns":{}"#, at_ms * 1_000_000),
            )
            .at(
                at_ms + 1,
                &format!(
                    r#""event":"lease-handled","request":{request},"answer":"{answer}","token":{token},"expires_at_ns":{expires},"store_now_ns":{store_now}"#
                ),
            )
            .at(
                at_ms + 1,
                &format!(
                    r#""event":"response-handled","request":{request},"disposition":"applied","acquired":{token},"renewal":{}"#,
                    !grant
                ),
            );
        if grant {
            h.at(
                at_ms + 1,
                &format!(r#""event":"term-started","token":{token}"#),
            )
        } else {
            h
        }
    }

    /// Unit `unit` with `token`: started at local `at_ms`, sent at
    /// `at_ms + 50`, judged `outcome` at `at_ms + 60`.
    pub fn writes(self, at_ms: u64, token: u64, unit: u64, outcome: &str) -> History {
        self.stalled_write(at_ms, at_ms + 50, token, unit, outcome)
    }

    /// Unit `unit` with `token`: started at local `at_ms`, sent at `sent_ms`
    /// (a process stalled mid-unit sends late), judged 10 ms later.
    pub fn stalled_write(
        self,
        at_ms: u64,
        sent_ms: u64,
        token: u64,
        unit: u64,
        outcome: &str,
    ) -> History {
        let owner = self.owner.clone();
        let extra = match outcome {
            "rejected-stale" => format!(r#","highest":{}"#, token + 1),
            _ => String::new(),
        };
        self.at(
            at_ms,
            &format!(
                r#""event":"work-started","token":{token},"unit":{unit},"local_ns":{}"#,
                at_ms * 1_000_000
            ),
        )
        .at(sent_ms, &format!(r#""event":"write-sent","token":{token},"unit":{unit}"#))
        .at(
            sent_ms + 10,
            &format!(
                r#""event":"write-handled","writer":"{owner}","token":{token},"outcome":"{outcome}"{extra}"#
            ),
        )
    }

    pub fn ends(self, at_ms: u64, token: u64, reason: &str) -> History {
        self.at(
            at_ms,
            &format!(r#""event":"term-ended","token":{token},"reason":"{reason}""#),
        )
    }

    pub fn stopped(self, at_ms: u64) -> History {
        self.at(at_ms, r#""event":"process-stopped""#)
    }

    pub fn file(self, name: &str) -> (String, Vec<u8>) {
        (name.to_string(), self.text.into_bytes())
    }
}

pub fn judge(files: &[(String, Vec<u8>)]) -> Judged {
    check_bytes(files, CheckOptions::default()).expect("the histories are valid")
}

/// `judged` broke no invariant and warned of a problem whose detail
/// contains `warning` (what `check-history` inferred).
pub fn assert_clean_with_warning(judged: &Judged, warning: &str) {
    assert_eq!(
        invariants(judged),
        Vec::<&str>::new(),
        "{:?}",
        judged.report.violations
    );
    let history = judged.report.history.as_ref().expect("a history summary");
    assert!(
        history
            .problems
            .iter()
            .any(|p| p.severity == "warning" && p.detail.contains(warning)),
        "{:?}",
        history.problems
    );
}

pub fn invariants(judged: &Judged) -> Vec<&str> {
    judged
        .report
        .violations
        .iter()
        .map(|v| v.invariant.as_str())
        .collect()
}
