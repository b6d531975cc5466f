//! # fenced
//!
//! Fenced leadership and cluster membership as **pure state machines**:
//!
//! * [`LeaseStore`]: renewable, expiring leases per role, each term stamped with
//!   a monotonic [`FencingToken`];
//! * [`Elector`]: one contender for one role; renews while leading and steps
//!   down *on its own* when it can no longer be sure it holds the lease;
//! * [`NodeRegistry`]: membership from heartbeats, with joins and departures;
//! * [`FencedStore`]: a downstream store that rejects writes carrying stale
//!   tokens, which closes the split-brain window leases alone leave open.
//!
//! Nothing in this crate reads a clock, sleeps, spawns, does I/O, or draws a
//! random number it was not handed a seed for. Every input takes `now` (an
//! [`Instant`] on the caller's clock); outputs are polled; timers are exposed as
//! `next_timeout()`. The same code therefore runs under the deterministic
//! simulator (`fenced-sim`), in a real runtime, and in your tests.
//!
//! With the cargo feature **`tokio`** (off by default), the module `tokio`
//! drives these machines on a tokio runtime: a leader elector that runs your
//! work while leading, lease and registry backends, a heartbeat task and an
//! in-process fenced store. Without it the crate pulls in no runtime.
//!
//! With the cargo feature **`history`** (off by default; implied by `tokio`),
//! the module `history` records what one process did — terms, lease answers,
//! work, writes — as JSON lines on a clock faked clocks cannot distort, for
//! `fenced-sim check-history` to judge with the simulator's checker.
//!
//! With the cargo feature **`postgres`** (off by default; implies `tokio`),
//! the module `postgres` keeps leases, node heartbeats and a fenced table in
//! PostgreSQL, so electors in many processes share one store, on the
//! database's clock.
//!
//! ## Driving an elector
//!
//! 1. Build a validated [`ElectorConfig`] and an [`Elector`] from it.
//! 2. Call [`Elector::start`] with the local time.
//! 3. Drain [`Elector::poll_output`]: send each
//!    [`ElectorOutput::SendLeaseRequest`] to the lease store, start or stop
//!    your work on [`ElectorOutput::StartWork`] / [`ElectorOutput::StopWork`],
//!    and forward [`ElectorOutput::Release`].
//! 4. Feed each answer back with [`Elector::handle_response`] (or
//!    [`Elector::handle_request_failed`]), quoting the request id.
//! 5. Sleep until [`Elector::next_timeout`], call [`Elector::handle_timeout`],
//!    and go back to 3. Before each unit of work, check
//!    [`Elector::token_at`], and stamp the token on every write.
//!
//! ```
//! use std::time::Duration;
//! use fenced::{
//!     Elector, ElectorConfig, ElectorOutput, ElectorTimings, Instant, LeaseStore,
//!     OwnerId, Role,
//! };
//!
//! let role = Role::new("reports")?;
//! let owner = OwnerId::new("node-a#1")?;
//! // 1. A validated configuration (30 s TTL, renew every 10 s, retry every 2 s).
//! let config = ElectorConfig::new(owner.clone(), role.clone(), ElectorTimings::default())?;
//! let mut elector = Elector::new(config);
//! let mut store = LeaseStore::default();
//!
//! // 2. Start at t = 0 on the local clock (here the same clock as the store's).
//! let mut now = Instant::ZERO;
//! elector.start(now);
//! let mut started = None;
//! for _ in 0..10 {
//!     // 3. Drain the outputs, acting on each in order.
//!     while let Some(output) = elector.poll_output() {
//!         match output {
//!             ElectorOutput::SendLeaseRequest { id, ttl } => {
//!                 let answer = store.try_acquire_or_renew(&role, &owner, ttl, now)?;
//!                 // 4. Feed the answer back (a real driver does this when it arrives).
//!                 elector.handle_response(id, answer, now);
//!             }
//!             ElectorOutput::StartWork { token } => started = Some(token),
//!             ElectorOutput::StopWork { token, reason } => println!("stop {token}: {reason}"),
//!             ElectorOutput::Release { token } => {
//!                 store.release(&role, &owner, token, now);
//!             }
//!             ElectorOutput::LeaderObserved { .. } => {}
//!         }
//!     }
//!     // 5. Sleep until the next timeout and wake the elector.
//!     now = elector.next_timeout().expect("a started elector always has a timer");
//!     elector.handle_timeout(now);
//! }
//! assert_eq!(started.map(|t| t.get()), Some(1));
//! assert_eq!(elector.token_at(now).map(|t| t.get()), Some(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]
// The history clock (`history::clock`) is the one place that needs `unsafe`:
// a raw system call no LD_PRELOAD library can intercept.
#![cfg_attr(not(feature = "history"), forbid(unsafe_code))]
#![cfg_attr(feature = "history", deny(unsafe_code))]

pub mod elector;
pub mod fenced_store;
pub mod fleet_registry;
#[cfg(feature = "history")]
pub mod history;
mod id;
pub mod lease;
#[cfg(feature = "planted-bugs")]
pub mod planted;
#[cfg(not(feature = "planted-bugs"))]
#[allow(dead_code)]
mod planted;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod registry;
mod seeded_rng;
mod time;
#[cfg(feature = "tokio")]
pub mod tokio;

pub use elector::{
    ConfigError, Elector, ElectorConfig, ElectorOutput, ElectorTimings, Jitter, ObservedLeader,
    Phase, RequestId, ResponseDisposition, StepDownReason, MAX_OUTSTANDING,
};
pub use fenced_store::{FencedStore, Fencing, WriteOutcome};
pub use fleet_registry::FleetRegistry;
pub use id::{FencingToken, IdError, NodeId, OwnerId, ResourceId, Role, MAX_ID_LEN};
pub use lease::{Lease, LeaseError, LeaseResult, LeaseStore, LeaseStoreConfig, ReleaseResult};
#[cfg(feature = "planted-bugs")]
pub use planted::{PlantedBug, UnknownPlantedBug};
pub use registry::{Heartbeat, MembershipChange, NodeRegistry, RegistryError};
pub use seeded_rng::SeededRng;
pub use time::{earliest, Instant, LatestNow};
