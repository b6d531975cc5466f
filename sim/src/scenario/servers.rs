//! How a scenario's servers and clocks are declared: the clock the lease
//! store expires leases by (`[store] clock`), what a server's restart keeps
//! (`durable`), and a signed clock offset.

use std::fmt;
use std::time::Duration;

use super::{DOWNSTREAM, LEASE_STORE};
use crate::units::human;

/// `[store] clock`: which of its host's clocks the fenced protocol's lease
/// store expires leases (and the registry heartbeats) by.
///
/// The default is `"wall"`: the PostgreSQL backend (`fenced::postgres`)
/// stamps and expires leases with the database server's `clock_timestamp()`,
/// a wall clock, so an NTP step of that server moves every expiry — a real
/// hazard the simulator keeps. `"monotonic"` is the in-process
/// `fenced::LeaseStore` driven by a runtime's monotonic clock (the tokio
/// driver's `tokio::time::Instant`): no step moves it. Nodes always time by
/// their monotonic clock (the elector is driven by `tokio::time::Instant`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StoreClock {
    /// The wall clock: stepped by a `clock-jump` of the store.
    #[default]
    Wall,
    /// The monotonic clock: never stepped.
    Monotonic,
}

impl StoreClock {
    /// The scenario file's spelling.
    pub fn name(self) -> &'static str {
        match self {
            StoreClock::Wall => "wall",
            StoreClock::Monotonic => "monotonic",
        }
    }
}

/// Declared durability of the fenced protocol's servers: what a `restart`
/// fault keeps. `None` is undeclared: a restart keeps the state (the store
/// is assumed durable), and exploration draws no restarts of that server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Durability {
    /// `[store] durable`: the lease store keeps its leases and token
    /// counters (a durable database) or loses them (an in-memory store).
    pub store: Option<bool>,
    /// `[downstream] durable`: the downstream keeps the highest token it
    /// accepted, or forgets it (and fencing with it).
    pub downstream: Option<bool>,
}

impl Durability {
    /// Whether `host`'s state survives a restart that does not say: the
    /// declaration, else durable.
    pub fn of(&self, host: &str) -> bool {
        match host {
            LEASE_STORE => self.store.unwrap_or(true),
            DOWNSTREAM => self.downstream.unwrap_or(true),
            _ => true,
        }
    }
}

/// A signed clock offset in nanoseconds (positive: the clock is ahead).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockOffset(pub i64);

impl ClockOffset {
    /// A clock `d` ahead of true time.
    pub fn ahead(d: Duration) -> Self {
        ClockOffset(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }
    /// A clock `d` behind true time.
    pub fn behind(d: Duration) -> Self {
        ClockOffset(-i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }
}

impl fmt::Display for ClockOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = Duration::from_nanos(self.0.unsigned_abs());
        if self.0 < 0 {
            write!(f, "-{}", human(d))
        } else {
            write!(f, "{}", human(d))
        }
    }
}
