//! # fenced-sim
//!
//! A deterministic discrete-event simulator for the `fenced` state machines,
//! with an online invariant checker.
//!
//! * **Engine**: a priority queue of `(time, sequence number, event)`; time
//!   jumps from one event to the next. One root seed; each consumer of
//!   randomness gets a `rand_chacha` stream derived from the seed and its name.
//!   No wall clock, no threads, no hash-map iteration order in any output.
//! * **Hosts**: `lease-store` (the arbiter of expiry), `downstream` (the
//!   fenced store), and nodes, each running the elector, a heartbeat loop and
//!   a worker, on its own clock (`true time × (1 + drift) + offset`).
//! * **Faults**: pauses, isolation, one-way cuts, partitions, crashes and
//!   restarts, zombie replacements, clock offset and drift, random loss and
//!   duplication, and recurring faults drawn from the seed.
//! * **Checker**: token monotonicity, lease exclusivity, fenced single writer
//!   and split-brain writes, plus measures (terms, failovers, overlap,
//!   spurious failovers, membership flaps).
//!
//! The same scenario and seed give byte-identical traces and the same
//! [`Report::trace_hash`] on any machine.
#![warn(missing_docs)]
// One exception, a cache prefetch hint: `engine/prefetch.rs`.
#![deny(unsafe_code)]

mod batch;
pub mod checker;
pub mod compare;
mod engine;
pub mod explore;
pub mod file;
pub mod history;
mod hosts;
pub mod merge;
pub mod observation;
mod parallel;
pub mod report;
mod rng;
pub mod scenario;
pub mod shrink;
mod simulation;
pub mod svg;
pub mod sweep;
pub mod time;
pub mod timeline;
pub mod to_toml;
mod trace;
pub mod units;
pub mod verify;
mod zoo;

/// What a lost segment costs a TCP stream: the retransmission model the
/// simulator's sessions and `fenced-lab`'s proxy share, so that a lossy link
/// means the same in both (`engine/network.rs`).
pub mod tcp {
    pub use crate::engine::network::{retransmission_penalty, MAX_RETRANSMISSIONS, RTO_MAX_FACTOR};
}

// The public face of the bounds of two layers: the engine's (`engine/limits.rs`)
// and the event estimate checked against the budget (`scenario/budget.rs`).
pub mod limits {
    //! Every bound the simulator puts on its input and on a run, in one place.
    //!
    //! A scenario is user input: whatever it says, a run must end in bounded
    //! time and memory with a result or a clear error, never a panic, an
    //! overflow or an allocation failure. Three kinds of bound keep that promise:
    //!
    //! 1. **Each duration** is at most [`MAX_SPAN`] (one year), so sums of a few
    //!    of them never overflow nanoseconds in `u64` (a year is 2^55 ns).
    //! 2. **Products** of durations that set how much is in flight at once are
    //!    refused up front when they are absurd ([`MAX_UNITS_IN_PROGRESS`]), and
    //!    the run's work is estimated against the event budget before it starts
    //!    ([`estimated_events`]).
    //! 3. **The engine** stops a run cleanly ([`Halt`]) when it would exceed the
    //!    event budget or hold more than [`MAX_PENDING_EVENTS`] events at once,
    //!    and a paused host keeps at most [`MAX_DEFERRED_MESSAGES`] messages
    //!    (more are dropped, like a full socket buffer).

    pub use crate::engine::limits::*;
    pub use crate::scenario::{check_budget, estimated_events};
}

pub use checker::{Checker, CheckerSettings, Verdict};
pub use engine::clock::{MAX_CLOCK_DRIFT, MAX_CLOCK_OFFSET_NANOS};
pub use limits::Halt;
pub use observation::{
    HostRef, NodeRef, Observation, Observer, ProcessId, ProcessRef, RegistryAnswer, SimTime,
};
pub use report::{summary, AnchoredFault, HaltReason, Halted, Report, TokenRace};
pub use rng::mix64;
pub use scenario::MAX_NODE_ID_LEN;
pub use scenario::{
    Anchor, AnchorEvent, Client, ClockOffset, Durability, DurationRange, Election, Expectations,
    FaultSpec, LatencyChoice, LatencyScript, Membership, Network, NodeSpec, ProtocolSpec,
    RecurringKind, Scenario, ScenarioError, StoreClock, Transport, ValidScenario, Work, DOWNSTREAM,
    LEASE_STORE,
};
pub use scenario::{
    FaultAction, FaultPlan, FollowUp, HostId, HostNames, Partition, PlanStep, RecurringFault,
    Resolution, ResolveError, ResolvedAnchor, ResolvedFault, ServerId, StepCause, WallStep,
};
pub use simulation::symmetry;
pub use simulation::{
    Finished, NotedInstants, Recording, RunOptions, Simulation, StateFingerprint,
};
