//! What a simulation's `Core` needs of a protocol's hosts beyond the
//! engine's [`Hosts`]: the inputs faults deliver to processes, and the few
//! figures of the report that only the hosts know.
//!
//! The fenced protocol ([`FencedHosts`]) and every modelled lock protocol of
//! the zoo ([`ZooHosts`](crate::zoo::ZooHosts)) implement it; the engine, the
//! faults and the checker stay the same for all of them.

use fenced::FencingToken;

use super::messages::{StoreSession, Timer};
use super::workers::{CarriesWork, WorkTimer, WorkerTable};
use super::FencedHosts;
use crate::engine::network::STORE_ENDPOINT;
use crate::engine::Hosts;

/// A protocol's hosts, as a simulation runs them.
pub(crate) trait SimHosts:
    Hosts<Message: Send, Timer: Send> + CarriesWork + std::fmt::Debug + Send + 'static
{
    /// The input a `stop` fault delivers to a node's processes: a graceful
    /// stop (release if the protocol does, then exit).
    fn stop_signal() -> Self::Timer;

    /// The input an `abdicate` fault delivers (the leader's work fails and it
    /// gives the role up), for a protocol that has such a call; validation
    /// refuses `abdicate` for the others.
    fn work_fails_signal() -> Option<Self::Timer>;

    /// The highest token the protocol's servers ever handed out (0: none, or
    /// a protocol without tokens): the report's `max_token`.
    fn max_token(&self) -> u64;

    /// The tokens `max_token` could have been had the server ordered the
    /// concurrent writes it raced otherwise (the first and last of their
    /// burst: `zoo::bursts`), for a protocol whose tokens count every
    /// client's writes; `None` when it raced no one, or the token counts
    /// only the lock's own changes (the fenced store's).
    fn max_token_race(&self) -> Option<(u64, u64)> {
        None
    }

    /// Nodes in the membership when the first server's clock reads
    /// `store_now`, for protocols with a registry (the report's
    /// `membership.live_at_end`); 0 otherwise.
    fn live_members(&self, store_now: fenced::Instant) -> u64;

    /// Every process's worker: the report asks it for the writes on their
    /// way (`WorkerTable::pending_write`).
    fn workers(&self) -> &WorkerTable;

    /// Server `endpoint` goes down for a restart: its sessions' epoch moves
    /// on, and every process with a session open (or opening, or a call on
    /// the wire) to it is to be told its connection was reset — returned as
    /// (process slot, the input that tells it), which the simulation
    /// delivers like any input (a paused process handles it on resume).
    fn server_went_down(&mut self, endpoint: u16) -> Vec<(u32, Self::Timer)>;
}

impl SimHosts for FencedHosts {
    fn stop_signal() -> Timer {
        Timer::Stop
    }

    fn work_fails_signal() -> Option<Timer> {
        Some(Timer::WorkFails)
    }

    fn max_token(&self) -> u64 {
        self.store
            .leases
            .highest_token(&self.store.role)
            .map_or(0, FencingToken::get)
    }

    fn live_members(&self, store_now: fenced::Instant) -> u64 {
        self.store.registry.live_count(store_now) as u64
    }

    fn workers(&self) -> &WorkerTable {
        self.procs.workers()
    }

    fn server_went_down(&mut self, endpoint: u16) -> Vec<(u32, Timer)> {
        if endpoint != STORE_ENDPOINT {
            let epoch = self.downstream.went_down();
            return worker_resets(self.procs.workers(), epoch);
        }
        let epoch = self.store.went_down();
        let mut resets = Vec::new();
        for (pid, process) in self.procs.iter() {
            for session in [StoreSession::Lease, StoreSession::Registry] {
                if process.resettable(session) {
                    resets.push((pid, Timer::SessionReset { session, epoch }));
                }
            }
        }
        resets
    }
}

/// The resets a restart of the downstream at `epoch` sends the workers of
/// `workers` (every protocol's).
pub(crate) fn worker_resets<T: super::workers::Carries<WorkTimer>>(
    workers: &WorkerTable,
    epoch: u32,
) -> Vec<(u32, T)> {
    workers
        .connected()
        .map(|pid| (pid, T::wrap(WorkTimer::SessionReset { epoch })))
        .collect()
}
