//! What the checker needs to know of the run it judges.

use std::time::Duration;

/// What the checker needs to know of the run it judges.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckerSettings {
    /// Whether the downstream enforces fencing (`single-writer` is judged
    /// only then).
    pub fencing: bool,
    /// The lease TTL: a term lost within one TTL of no fault is spurious.
    pub lease_ttl: Duration,
    /// `lease_ttl - safety_margin`: how long one successful request lets a
    /// holder act, on its own clock (`local-deadline`).
    pub validity: Duration,
    /// How often a leader writes, how long a unit takes, and the longest
    /// one-way latency: "recently accepted" for a leader at the end is within
    /// two write intervals, one unit and two latencies.
    pub write_interval: Duration,
    /// See [`write_interval`](Self::write_interval).
    pub work_duration: Duration,
    /// See [`write_interval`](Self::write_interval).
    pub latency_max: Duration,
    /// When the liveness phase began, if the run has one.
    pub heal_at: Option<Duration>,
    /// When the run ends: `liveness` is judged only at the end.
    pub end: Duration,
    /// The node registry's liveness TTL: `membership` is judged when set.
    pub liveness_ttl: Option<Duration>,
    /// The fenced elector's renew interval: when set, `local-deadline` also
    /// judges that a holder renews no later than this after its anchor.
    pub renew_interval: Option<Duration>,
    /// The fenced elector's jitter fraction (0: none), with
    /// [`renew_interval`](Self::renew_interval): a renewal comes no earlier
    /// than `renew_interval × (1 − jitter)` after its anchor, and — when
    /// the jitter can shorten an interval by a millisecond or more — the
    /// first eight renewals on schedule are not all unshortened (the chance
    /// that a working jitter leaves them so is below 10⁻²⁴).
    pub jitter: f64,
}

impl CheckerSettings {
    /// Settings with the default work loop (a write every second, units of
    /// 50 ms, 5 ms latency) and no liveness phase; adjust fields as needed.
    pub fn new(fencing: bool, lease_ttl: Duration, validity: Duration) -> Self {
        CheckerSettings {
            fencing,
            lease_ttl,
            validity,
            write_interval: Duration::from_secs(1),
            work_duration: Duration::from_millis(50),
            latency_max: Duration::from_millis(5),
            heal_at: None,
            end: Duration::MAX,
            liveness_ttl: None,
            renew_interval: None,
            jitter: 0.0,
        }
    }

    /// The settings of a scenario's run.
    pub fn of(scenario: &crate::Scenario) -> Self {
        CheckerSettings {
            fencing: scenario.fencing,
            lease_ttl: scenario.election.lease_ttl,
            validity: scenario
                .election
                .lease_ttl
                .saturating_sub(scenario.election.effective_safety_margin()),
            write_interval: scenario.work.write_interval,
            work_duration: scenario.work.work_duration,
            latency_max: scenario.network.latency.1,
            heal_at: scenario.heal_at,
            end: scenario.duration,
            liveness_ttl: Some(scenario.membership.liveness_ttl),
            renew_interval: (scenario.election.protocol == crate::scenario::ProtocolSpec::Fenced)
                .then_some(scenario.election.renew_interval),
            jitter: scenario.election.jitter,
        }
    }
}
