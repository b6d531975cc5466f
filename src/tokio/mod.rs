//! A tokio runtime driver for the state machines (cargo feature `tokio`).
//!
//! The state machines of this crate never read a clock or do I/O; this module
//! is the thin layer that does both, on tokio. It makes **no decision of its
//! own**: every question of who leads, when to renew and when to give up is
//! answered by [`Elector`](crate::Elector); the driver only moves inputs in and
//! outputs out.
//!
//! * [`LeaseLeaderElector`]: owns an elector for one role, sends its lease
//!   requests to a [`LeaseBackend`], sleeps until the elector's next timeout,
//!   and runs your work while leading, with the fencing token and a
//!   [`CancellationToken`] cancelled the moment leadership is lost.
//! * [`LeaseBackend`]: where leases live. [`InProcessLeaseBackend`] shares one
//!   [`LeaseStore`](crate::LeaseStore) between the electors of one process
//!   (tests, single-node use); a durable backend (a database) implements the
//!   same trait and decides `now` with its own clock.
//! * [`HeartbeatTask`] over a [`RegistryBackend`] ([`InProcessRegistry`]):
//!   cluster membership.
//! * [`SharedFencedStore`]: an in-process [`FencedStore`](crate::FencedStore)
//!   handle, so examples and tests can write with tokens.
//! * [`Clock`]: the mapping of `tokio::time::Instant` onto the crate's
//!   [`Instant`](crate::Instant).
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use fenced::tokio::{Clock, ElectorOptions, InProcessLeaseBackend, LeaseLeaderElector};
//! use fenced::{ElectorTimings, LeaseStore, OwnerId, Role};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let clock = Clock::new();
//! let backend = InProcessLeaseBackend::new(LeaseStore::default(), clock);
//! let options = ElectorOptions::new(OwnerId::new("node-a#1")?)
//!     .with_timings(ElectorTimings {
//!         lease_ttl: Duration::from_secs(15),
//!         renew_interval: Duration::from_secs(5),
//!         retry_interval: Duration::from_secs(1),
//!         ..ElectorTimings::default()
//!     })
//!     .with_clock(clock);
//! let elector = LeaseLeaderElector::new(backend.clone(), options);
//! let mut leadership = elector.handle();
//! let shutdown = fenced::tokio::CancellationToken::new();
//! let run = tokio::spawn(elector.run(
//!     Role::new("reports")?,
//!     |token, cancel| async move {
//!         // Stamp `token` on every write; return soon after `cancel` fires.
//!         cancel.cancelled().await;
//!         let _ = token;
//!     },
//!     shutdown.clone().cancelled_owned(),
//! ));
//! let state = leadership.wait_for(|state| state.token().is_some()).await?;
//! assert_eq!(state.token().map(|t| t.get()), Some(1));
//! assert!(leadership.is_leader());
//! shutdown.cancel();
//! run.await??; // the work has stopped and the lease is released
//! assert_eq!(backend.holder(&Role::new("reports")?)?, None);
//! # Ok(())
//! # }
//! ```

mod backend;
mod clock;
mod elector;
mod heartbeat;
mod options;
mod release;
mod store;

use std::fmt;
use std::sync::{Mutex, MutexGuard};

pub use backend::{BackendError, InProcessLeaseBackend, LeaseBackend};
pub use clock::Clock;
pub use elector::{DriverStopped, Leadership, LeadershipHandle, LeaseLeaderElector, RunError};
pub use heartbeat::{HeartbeatError, HeartbeatTask, InProcessRegistry, RegistryBackend};
pub use options::ElectorOptions;
pub use store::SharedFencedStore;
/// Re-exported from `tokio-util`: the token handed to the work, cancelled when
/// its term ends.
pub use tokio_util::sync::CancellationToken;

/// Why an in-process shared state machine could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SharedStateError {
    /// A thread panicked while it held the lock of this state machine, so its
    /// state may be half-updated. Only a bug (a failed assertion inside the
    /// state machine) can cause this; the handle refuses to go on rather than
    /// act on possibly broken state.
    Poisoned {
        /// Which state machine: `"lease store"`, `"node registry"`,
        /// `"fenced store"`.
        what: &'static str,
    },
}

impl fmt::Display for SharedStateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SharedStateError::Poisoned { what } => write!(
                f,
                "the in-process {what} is unusable: a thread panicked while updating it"
            ),
        }
    }
}

impl std::error::Error for SharedStateError {}

/// Locks `mutex`, turning poisoning into a [`SharedStateError`]. Every caller
/// holds the lock for one synchronous state-machine call and never across an
/// `.await`.
fn lock<'a, T>(
    mutex: &'a Mutex<T>,
    what: &'static str,
) -> Result<MutexGuard<'a, T>, SharedStateError> {
    mutex
        .lock()
        .map_err(|_| SharedStateError::Poisoned { what })
}
