//! Evaluating a scenario's `[expect]` block against a report.

use crate::units::human;
use std::time::Duration;

use crate::report::{ExpectOutcome, Report};
use crate::scenario::Expectations;

/// Checks every expectation; an absent `split_brain` means "must not happen"
/// and an absent `violations` means "none other than expected split-brain".
pub(crate) fn evaluate(
    expect: &Expectations,
    report: &Report,
    split_brain_violations: u64,
    max_failover: Duration,
    overlap: Duration,
    leader_at_end: bool,
) -> ExpectOutcome {
    let mut unmet = Vec::new();
    let want_split = expect.split_brain.unwrap_or(false);
    if want_split && !report.split_brain {
        unmet.push("split_brain: expected a split-brain write, but none happened".to_string());
    }
    if !want_split && report.split_brain {
        unmet.push(format!(
            "split_brain: expected none, but {split_brain_violations} split-brain write(s) happened"
        ));
    }
    let other = report.violations_total - split_brain_violations;
    let want_violations = expect.violations.unwrap_or(0);
    if other != want_violations {
        unmet.push(format!(
            "violations: expected {want_violations} (besides split-brain writes), got {other}"
        ));
    }
    if let Some(min) = expect.min_leader_changes {
        if report.leader_changes < min {
            unmet.push(format!(
                "min_leader_changes: expected at least {min}, got {}",
                report.leader_changes
            ));
        }
    }
    if let Some(max) = expect.max_leader_changes {
        if report.leader_changes > max {
            unmet.push(format!(
                "max_leader_changes: expected at most {max}, got {}",
                report.leader_changes
            ));
        }
    }
    if let Some(max) = expect.max_failover {
        let worst = max_failover;
        if worst > max {
            unmet.push(format!(
                "max_failover: expected every failover within {}, the longest took {}",
                human(max),
                human(Duration::from_millis(worst.as_millis() as u64))
            ));
        }
    }
    if let Some(max) = expect.max_spurious_failovers {
        if report.spurious_failovers > max {
            unmet.push(format!(
                "max_spurious_failovers: expected at most {max}, got {}",
                report.spurious_failovers
            ));
        }
    }
    if let Some(min) = expect.min_spurious_failovers {
        if report.spurious_failovers < min {
            unmet.push(format!(
                "min_spurious_failovers: expected at least {min}, got {}",
                report.spurious_failovers
            ));
        }
    }
    if let Some(min) = expect.min_rejected_writes {
        let rejected = report.writes.rejected_stale + report.writes.rejected_wrong_writer;
        if rejected < min {
            unmet.push(format!(
                "min_rejected_writes: expected at least {min}, got {rejected}"
            ));
        }
    }
    if let Some(max) = expect.max_overlap {
        if overlap > max {
            unmet.push(format!(
                "max_overlap: expected at most {}, got {}",
                human(max),
                human(Duration::from_millis(report.overlap_ms))
            ));
        }
    }
    if let Some(min) = expect.min_overlap {
        if overlap < min {
            unmet.push(format!(
                "min_overlap: expected at least {}, got {}",
                human(min),
                human(Duration::from_millis(report.overlap_ms))
            ));
        }
    }
    if let Some(max) = expect.max_token {
        if report.max_token > max {
            unmet.push(format!(
                "max_token: expected at most {max}, got {}",
                report.max_token
            ));
        }
    }
    if let Some(min) = expect.min_membership_flaps {
        if report.membership.flaps < min {
            unmet.push(format!(
                "min_membership_flaps: expected at least {min}, got {}",
                report.membership.flaps
            ));
        }
    }
    if let Some(want) = expect.leader_at_end {
        if want != leader_at_end {
            unmet.push(if want {
                "leader_at_end: expected one leader with accepted writes at the end, found none"
                    .to_string()
            } else {
                "leader_at_end: expected no leader at the end, found one".to_string()
            });
        }
    }
    ExpectOutcome {
        met: unmet.is_empty(),
        unmet,
    }
}
