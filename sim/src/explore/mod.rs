//! Swarm exploration: each seed draws its own fault schedule on top of a base
//! scenario, runs a fault phase, heals everything, and checks that the cluster
//! converges (the liveness phase).
//!
//! *Swarm testing* (Groce et al., 2012): every fault kind is switched on or off
//! per seed, so campaigns cover varied mixes instead of one fixed blend that
//! dilutes each fault. Fault lengths are biased toward the lease's boundaries —
//! just under, at and just over `lease_ttl - safety_margin`, `lease_ttl`,
//! `renew_interval` and `rejoin_delay` — and clock drifts toward the safety
//! margin's ratio, because that is where off-by-one bugs live and uniform
//! draws almost never land.
//!
//! A generated schedule is *materialized*: [`generate`] returns an ordinary
//! [`Scenario`](crate::Scenario) whose faults are all scheduled explicitly, so a failing seed
//! can be replayed, shrunk and saved as a standalone scenario file.
//!
//! `generate.rs` draws a seed's schedule (and its [`Mix`]); `base.rs` checks
//! that a base can host every schedule and bounds the liveness phase;
//! `campaign.rs` runs seeds ([`run_seed`]) over a [`SeedRange`] and totals them
//! ([`CampaignSummary`]).

mod base;
mod campaign;
mod generate;

pub use base::{check_base, client_for_latency, for_protocol, liveness_bound, BaseError};
pub use campaign::{
    run_campaign, run_seed, stream_campaign, CampaignSummary, SeedOutcome, SeedRange,
    SeedRangeError, DETERMINISM_SAMPLE,
};
pub use generate::{default_base, fleet_like_pauses, generate, Mix};

pub use crate::parallel::{SpawnError, StreamError, MAX_JOBS, WINDOW_PER_JOB};
