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
#![forbid(unsafe_code)]

pub mod checker;
mod clock;
pub mod compare;
mod engine;
mod expect;
pub mod explore;
pub mod file;
pub mod history;
mod hosts;
pub mod limits;
pub mod merge;
mod network;
pub mod observation;
mod parallel;
mod queue;
pub mod report;
mod rng;
pub mod scenario;
pub mod shrink;
mod sim;
pub mod summary;
pub mod svg;
pub mod sweep;
pub mod time;
pub mod timeline;
pub mod to_toml;
mod trace;
pub mod units;
mod zoo;

pub use checker::{Checker, CheckerSettings, Verdict};
pub use clock::{MAX_CLOCK_DRIFT, MAX_CLOCK_OFFSET_NANOS};
pub use limits::Halt;
pub use observation::{
    HostRef, NodeRef, Observation, Observer, ProcessId, ProcessRef, RegistryAnswer, SimTime,
};
pub use report::Report;
pub use scenario::MAX_NODE_ID_LEN;
pub use scenario::{
    ClockOffset, Durability, DurationRange, Election, Expectations, FaultSpec, Membership, Network,
    NodeSpec, ProtocolSpec, RecurringKind, Scenario, ScenarioError, ValidScenario, Work,
    DOWNSTREAM, LEASE_STORE,
};
pub use scenario::{
    FaultAction, FaultPlan, FollowUp, HostId, HostNames, Partition, PlanStep, RecurringFault,
    Resolution, ResolveError, ResolvedFault, ServerId, StepCause,
};
pub use sim::{RunOptions, Simulation};
