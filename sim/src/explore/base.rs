//! What a base must allow for generated schedules to be valid, and how long
//! the liveness phase after the heal lasts.

use std::time::Duration;

use crate::scenario::{Client, FaultSpec, ProtocolSpec, Scenario};

/// Why a base scenario cannot host generated schedules, though it is valid
/// on its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseError {
    /// The key of the base to change (`duration`, `work.work_duration`, ...).
    pub key: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl std::fmt::Display for BaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.key, self.message)
    }
}

impl std::error::Error for BaseError {}

/// The most negative clock drift [`generate`](super::generate) can give a node of `base`
/// (or the base's own, if slower).
fn slowest_generated_drift(base: &Scenario) -> f64 {
    let e = &base.election;
    let ratio = e.effective_safety_margin().as_secs_f64() / e.lease_ttl.as_secs_f64();
    // Drawn drifts are up to 1.5 × the margin's ratio, or up to 0.2.
    let drawn = -(ratio * 1.5).clamp(0.2, crate::MAX_CLOCK_DRIFT);
    base.nodes
        .iter()
        .map(|n| n.clock_drift)
        .fold(drawn, f64::min)
}

/// Checks, before any seed runs, that every schedule [`generate`](super::generate) can draw
/// on `base` is a valid scenario — that is, that the longest generated run
/// (the base's `duration` as the fault phase, then the liveness phase of
/// [`liveness_bound`] at the slowest clock a seed can draw) is a valid
/// scenario. `base` must itself be valid.
///
/// # Errors
/// A [`BaseError`] naming the base's key to change: the largest term of an
/// overlong run (its `duration`, or the liveness phase's largest part).
pub fn check_base(base: &Scenario) -> Result<(), BaseError> {
    let mut worst = base.clone();
    let slowest = slowest_generated_drift(base);
    for node in worst.nodes.iter_mut() {
        node.clock_drift = slowest;
    }
    // The slowest network a seed may draw (the `slow-network` mix).
    let slow = base
        .election
        .retry_interval
        .mul_f64(1.5)
        .min(Duration::from_secs(3600));
    worst.network.latency.1 = worst.network.latency.1.max(slow);
    worst.client = client_for_latency(&worst.client, worst.network.latency.1);
    worst.heal_at = Some(base.duration);
    let liveness = liveness_bound_checked(&worst);
    let total = liveness.and_then(|l| base.duration.checked_add(l));
    let problem = match total {
        None => "a run that long cannot be counted".to_string(),
        Some(total) => {
            worst.duration = total;
            match worst.validate() {
                Ok(()) => return Ok(()),
                Err(e) if e.key == "duration" => format!(
                    "{} in all, but a run's `duration` {}",
                    rounded(total),
                    e.message
                ),
                // Another key: the generated schedule would be refused for a
                // reason the base does not show (a generator bug, reported as
                // such by the seeds).
                Err(_) => return Ok(()),
            }
        }
    };
    let (key, value) = largest_term(base);
    Err(BaseError {
        key: key.to_string(),
        message: format!(
            "this base cannot host generated schedules: each seed runs the base's `duration` \
             ({}) as its fault phase, then a liveness phase of up to {} (max(lease_ttl, \
             rejoin_delay) + retry_interval + work_duration + write_interval + 8 x the highest \
             latency, scaled up for the slowest clock a seed may draw): {problem}; shorten \
             `{key}` ({}), the largest of these",
            rounded(base.duration),
            liveness.map_or_else(|| "more than can be counted".to_string(), rounded),
            rounded(value)
        ),
    })
}

/// `d` for a message: to the second from a minute up, else to the
/// millisecond (a liveness bound scaled by a drift has nanosecond noise).
fn rounded(d: Duration) -> String {
    let d = if d >= Duration::from_secs(60) {
        Duration::from_secs(d.as_secs())
    } else {
        Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    };
    crate::units::human(d)
}

/// The largest of the spans a generated run's length adds up from, with the
/// key that sets it.
fn largest_term(base: &Scenario) -> (&'static str, Duration) {
    let e = &base.election;
    let terms = [
        ("duration", base.duration),
        ("election.lease_ttl", e.lease_ttl),
        (
            "election.rejoin_delay",
            e.rejoin_delay.unwrap_or(Duration::ZERO),
        ),
        ("election.retry_interval", e.retry_interval),
        ("work.work_duration", base.work.work_duration),
        ("work.write_interval", base.work.write_interval),
        ("network.latency", base.network.latency.1.saturating_mul(8)),
    ];
    terms
        .into_iter()
        .fold(("duration", Duration::ZERO), |best, term| {
            if term.1 > best.1 {
                term
            } else {
                best
            }
        })
}

/// `client`, with its bounds raised for a network whose one-way latency
/// reaches `latency` (the `slow-network` mix), as a user configures a client
/// for a slow store: a connect (two round trips) and each later phase of an
/// open (up to two) within their bounds with room to spare — each bound at
/// least three of the slowest round trips. Unchanged for a fast network.
pub fn client_for_latency(client: &Client, latency: Duration) -> Client {
    let three_round_trips = latency.saturating_mul(6);
    Client {
        connect_timeout: client.connect_timeout.max(three_round_trips),
        query_timeout: client.query_timeout.max(three_round_trips),
        ..*client
    }
}

/// How long after healing one leader must hold with accepted writes.
///
/// `max(lease_ttl, rejoin_delay)`: a lease held by a process that cannot use
/// it lapses within one TTL, and a node that went quiet (the rejoin policy)
/// asks again within `rejoin_delay`; then `retry_interval` for a follower to
/// ask, a unit of work, and latency for the request, the answer and the write
/// (twice, for slack). Scaled up for the slowest clock: its intervals last
/// longer in true time, and lengthened by every clock fault that can hold a
/// clock back: a backward step or slew by its size, a strobe by its flip
/// (each flip back is a backward step) — a lease store whose clock stands
/// back holds a lease that long past its TTL (the store's time never runs
/// backward), and a node's slowed clock stretches its intervals.
///
/// Saturates at [`Duration::MAX`] instead of overflowing; [`check_base`]
/// refuses the bases where that could happen.
pub fn liveness_bound(s: &Scenario) -> Duration {
    liveness_bound_checked(s).unwrap_or(Duration::MAX)
}

/// [`liveness_bound`], or `None` when it does not fit in a [`Duration`].
fn liveness_bound_checked(s: &Scenario) -> Option<Duration> {
    let e = &s.election;
    // Every duration is validated to at most a year: this cannot saturate.
    let rejoin = e.effective_rejoin_delay();
    let latency = s.network.latency.1;
    let base = e
        .lease_ttl
        .max(rejoin)
        .checked_add(e.retry_interval)?
        .checked_add(s.work.work_duration)?
        .checked_add(s.work.write_interval)?
        .checked_add(latency.checked_mul(8)?)?
        .checked_add(Duration::from_millis(1))?;
    let held_back = s.faults.iter().try_fold(Duration::ZERO, |sum, f| {
        let back = match f.unanchored() {
            FaultSpec::ClockJump { by, .. } | FaultSpec::ClockSlew { by, .. } if by.0 < 0 => {
                by.0.unsigned_abs()
            }
            FaultSpec::ClockStrobe { by, .. } => by.0.unsigned_abs(),
            _ => 0,
        };
        sum.checked_add(Duration::from_nanos(back))
    })?;
    let base = base.checked_add(held_back)?;
    // With sessions, a node may first wait out an open that began before
    // the heal (its longest phase bound), then open again (five round
    // trips) — the lease store's session and the downstream's: twenty
    // one-way latencies more.
    let base = if s.client.sessions() {
        let open = s.client.connect_timeout.max(s.client.query_bound());
        base.checked_add(open)?
            .checked_add(latency.checked_mul(20)?)?
    } else {
        base
    };
    let slowest = s.nodes.iter().map(|n| n.clock_drift).fold(0.0f64, f64::min);
    // `base.mul_f64(1.0 / (1.0 + slowest))`, without its panic on overflow.
    Duration::try_from_secs_f64((1.0 / (1.0 + slowest)) * base.as_secs_f64()).ok()
}

/// `base` running `protocol` instead, for `explore --protocol`: unfenced
/// (the campaign looks for what the design lets happen), client-go's
/// application looping (`run_again`, as a Deployment restarts a pod), and the
/// generator's timescale — the `[election]` lease, renewal and retry the fault
/// lengths and the liveness bound are drawn from — set to the design's own
/// (its expiry, a third of it, its retry).
pub fn for_protocol(base: &Scenario, protocol: &ProtocolSpec) -> Scenario {
    let mut s = base.clone();
    let mut protocol = protocol.clone();
    if let ProtocolSpec::ClientGo(settings) = &mut protocol {
        settings.run_again = true;
    }
    if let Some((expiry, retry)) = protocol.timescale() {
        s.election.lease_ttl = expiry;
        s.election.renew_interval = expiry / 3;
        s.election.retry_interval = retry;
        s.election.safety_margin = None;
        s.election.rejoin_delay = None;
        s.fencing = false;
    }
    s.election.protocol = protocol;
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::default_base;

    #[test]
    fn the_liveness_bound_saturates_instead_of_overflowing() {
        let mut base = default_base();
        base.work.work_duration = Duration::MAX;
        assert_eq!(liveness_bound(&base), Duration::MAX);
        let e = check_base(&base).unwrap_err();
        assert_eq!(e.key, "work.work_duration");
        assert!(check_base(&default_base()).is_ok());
    }
}
