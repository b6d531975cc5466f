//! The bounds on a scenario's values and on a run: the longest span, the
//! most work in progress, the event budget and the pending and deferred
//! bounds the engine enforces while running ([`Halt`]). Their public face,
//! with the event estimate checked before a run starts
//! (`scenario/budget.rs`), is [`crate::limits`].

use std::fmt;
use std::time::Duration;

use crate::units::{human, secs};

/// The longest any duration of a scenario may be: one year.
pub const MAX_SPAN: Duration = Duration::from_secs(365 * 24 * 3600);

/// The most units of work one leader may have in progress at once
/// (`work_duration / write_interval`): each is a pending event.
pub const MAX_UNITS_IN_PROGRESS: u128 = 10_000;

/// The most times a unit's write may be retried (`[work] write_retries`):
/// each retry opens a session, so the bound keeps a unit's cost bounded.
pub const MAX_WRITE_RETRIES: u32 = 10;

/// The most events the engine holds at once (messages in flight, timers,
/// units of work, faults). A 500-node fleet holds about two thousand; a
/// scenario that needs millions is halted with [`Halt::TooManyPending`].
pub const MAX_PENDING_EVENTS: usize = 1 << 22;

/// The most messages a paused host queues; later ones are dropped (traced as
/// `receiver paused with a full queue`), as a frozen process's full socket
/// buffer would. Timers are not capped: a paused host has at most a few.
pub const MAX_DEFERRED_MESSAGES: usize = 1 << 16;

/// The event budget of a run unless `--max-events` says otherwise: about a
/// minute of simulation on one core, and thirty times a 500-node fleet's
/// virtual hour.
pub const DEFAULT_MAX_EVENTS: u64 = 250_000_000;

/// The largest event budget that may be asked for. Process incarnations are
/// counted in `u32`, and every start is an event.
pub const MAX_EVENTS_LIMIT: u64 = u32::MAX as u64;

/// Why the engine stopped a run before its end. The run's report up to that
/// point is still available, but its verdict covers only the time simulated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Halt {
    /// The run handled its whole event budget.
    EventBudget {
        /// The budget.
        max_events: u64,
        /// The virtual time reached.
        at: Duration,
        /// The run's planned duration.
        duration: Duration,
    },
    /// More than [`MAX_PENDING_EVENTS`] events were pending at once.
    TooManyPending {
        /// How many.
        pending: usize,
        /// The virtual time reached.
        at: Duration,
    },
}

impl fmt::Display for Halt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Halt::EventBudget {
                max_events,
                at,
                duration,
            } => write!(
                f,
                "the run used its whole budget of {max_events} events at {} of {}; \
                 raise it with --max-events (at most {MAX_EVENTS_LIMIT}), shorten `duration`, \
                 or lengthen the busiest interval (membership.heartbeat_interval, \
                 work.write_interval, election.retry_interval, a recurring fault's `every`)",
                secs(nanos_of(*at)),
                human(*duration)
            ),
            Halt::TooManyPending { pending, at } => write!(
                f,
                "more than {MAX_PENDING_EVENTS} events were pending at once ({pending} at {}): \
                 the scenario keeps too much in flight; shorten network.latency or \
                 work.work_duration, lengthen work.write_interval, \
                 membership.heartbeat_interval or election.retry_interval, or use fewer nodes",
                secs(nanos_of(*at))
            ),
        }
    }
}

fn nanos_of(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
