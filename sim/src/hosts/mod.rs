//! The fenced protocol's hosts, as sans-IO machines the engine drives: the
//! `lease-store` ([`LeaseStoreHost`]), the `downstream` ([`DownstreamHost`])
//! and every node's processes ([`NodeProcess`]). Each reacts to one input
//! (a message, a timer) through an [`Outbox`]; none can reach the engine.

mod downstream;
mod lease_store;
pub(crate) mod messages;
mod node;
pub(crate) mod session;
mod sim_hosts;
pub(crate) mod workers;

use fenced::{Elector, ElectorConfig, ElectorTimings, OwnerId, Role};

pub(crate) use downstream::DownstreamHost;
pub(crate) use lease_store::LeaseStoreHost;
pub(crate) use node::{NodeProcess, WorkTimings};
pub(crate) use sim_hosts::{worker_resets, SimHosts};

use crate::engine::network::STORE_ENDPOINT;
use crate::engine::{Address, Hosts, Outbox};
use crate::observation::Observer;
use crate::rng::SeedDeriver;
use crate::scenario::with_jitter_seed;
use messages::{Message, Timer};
use session::ConnectionEvent;
use workers::{ProcessTable, WorkTimer};

#[cfg(feature = "planted-bugs")]
use fenced::PlantedBug;

/// What every new process is built from.
#[derive(Debug)]
pub(crate) struct ProcessSettings {
    pub(crate) role: Role,
    /// The validated elector timings (jitter seeded per process).
    pub(crate) elector: ElectorTimings,
    pub(crate) timings: WorkTimings,
    /// Each process's jitter seed is derived from these, its node and its
    /// incarnation.
    pub(crate) seeds: SeedDeriver,
    #[cfg(feature = "planted-bugs")]
    pub(crate) planted_bug: Option<PlantedBug>,
}

/// Which cache lines of a `NodeProcess` (nine: 576 bytes, its elector 520)
/// the engine prefetches for an upcoming event of it: what a follower's
/// inputs read — its header and the elector's clock, schedule, phase and
/// outstanding requests (lines 0 to 2), the timings a request reads (4),
/// the outputs' counts and first place (5), and the observed leader an
/// answer compares (8); not the config's cold front (3) nor the outputs'
/// further places (6, 7). Measured with cachegrind on the 10 000-node
/// fleet: every line a follower's timeout or answer misses is in the list.
/// (A hint: a layout that moves fields costs misses, never an outcome.)
const PREFETCH_LINES: [usize; 6] = [0, 1, 2, 4, 5, 8];

/// The hosts of one run of the fenced protocol.
#[derive(Debug)]
pub(crate) struct FencedHosts {
    pub(crate) store: LeaseStoreHost,
    pub(crate) downstream: DownstreamHost,
    /// The node processes and their workers.
    pub(crate) procs: ProcessTable<NodeProcess>,
    pub(crate) settings: ProcessSettings,
}

impl Hosts for FencedHosts {
    type Message = Message;
    type Timer = Timer;

    fn is_stale(&self, to: Address, timer: &Timer) -> bool {
        match (to, *timer) {
            (Address::Process { pid, .. }, Timer::Elector { generation }) => {
                let process = self.procs.get(pid);
                process.is_some_and(|p| p.timer_generation != generation)
            }
            (Address::Process { pid, .. }, Timer::Work(WorkTimer::Unit { generation })) => {
                self.procs.workers().is_stale(pid, generation)
            }
            (_, Timer::Registry { generation }) => self.store.registry_generation != generation,
            (
                Address::Process { pid, .. },
                Timer::Session {
                    session,
                    generation,
                },
            ) => {
                let process = self.procs.get(pid);
                process.is_some_and(|p| p.is_session_stale(session, generation))
            }
            (Address::Process { pid, .. }, Timer::Work(WorkTimer::Session { generation })) => {
                self.procs.workers().is_session_stale(pid, generation)
            }
            _ => false,
        }
    }

    /// The process's [`PREFETCH_LINES`]: what a follower's inputs read
    /// (`NodeProcess` and `Elector` are laid out for it).
    #[inline(always)]
    fn prefetch(&self, pid: u32) {
        self.procs.prefetch(pid, &PREFETCH_LINES);
    }

    /// A session's first open segment to the lease store, or a worker's to
    /// the downstream, is refused while its server is down.
    fn refusal(msg: &Message) -> Option<Timer> {
        match msg {
            Message::Store(messages::ToStore::Open {
                session,
                conn,
                step: 1,
                ..
            }) => Some(Timer::SessionRefused {
                session: *session,
                conn: *conn,
            }),
            Message::Downstream(write) => workers::worker_refusal(write).map(Timer::Work),
            _ => None,
        }
    }

    #[inline]
    fn deliver<O: Observer>(&mut self, to: Address, msg: Message, out: &mut Outbox<'_, Self, O>) {
        // Matched on the message alone (not a tuple with the address), so
        // the message is not copied once more on the way to its host.
        match msg {
            Message::Store(msg) => self.store.receive(msg, out),
            Message::Downstream(msg) => self.downstream.receive(msg, out),
            Message::Process(msg) => match to {
                Address::Process { pid, .. } => {
                    let (process, workers) = self.procs.life(pid);
                    process.receive(msg, workers, out)
                }
                Address::Server(_) => unreachable!("process messages are addressed to processes"),
            },
            Message::Worker(msg) => match to {
                Address::Process { pid, .. } => self.procs.workers_mut().receive(pid, msg, out),
                Address::Server(_) => unreachable!("worker messages are addressed to processes"),
            },
        }
    }

    #[inline]
    fn fire<O: Observer>(&mut self, to: Address, timer: Timer, out: &mut Outbox<'_, Self, O>) {
        let pid = match (to, timer) {
            (Address::Server(_), Timer::Registry { .. }) => return self.store.registry_due(out),
            (Address::Process { pid, .. }, _) => pid,
            (Address::Server(_), _) => unreachable!("{timer:?} is never set for {to:?}"),
        };
        let (process, workers) = self.procs.life(pid);
        match timer {
            Timer::Elector { .. } => process.elector_due(workers, out),
            Timer::Heartbeat => {
                process.heartbeat(self.settings.timings.heartbeat_interval, workers, out)
            }
            Timer::Work(WorkTimer::Unit { .. }) => process.work_tick(workers, out),
            Timer::Work(WorkTimer::Done { token, unit }) => {
                workers.work_done(pid, token, unit, out)
            }
            Timer::Work(WorkTimer::Session { .. }) => workers.session_due(pid, out),
            Timer::Work(WorkTimer::SessionReset { epoch }) => {
                workers.session_event(pid, ConnectionEvent::Reset { epoch }, out)
            }
            Timer::Work(WorkTimer::SessionRefused { conn }) => {
                workers.session_event(pid, ConnectionEvent::Refused { conn }, out)
            }
            Timer::Session { session, .. } => process.session_due(session, workers, out),
            Timer::SessionReset { session, epoch } => {
                process.session_event(session, ConnectionEvent::Reset { epoch }, workers, out)
            }
            Timer::SessionRefused { session, conn } => {
                process.session_event(session, ConnectionEvent::Refused { conn }, workers, out)
            }
            Timer::Stop => process.stop(workers, out),
            Timer::WorkFails => process.work_fails(workers, out),
            Timer::Registry { .. } => unreachable!("{timer:?} is never set for {to:?}"),
        }
    }

    fn start_process<O: Observer>(
        &mut self,
        pid: u32,
        node: u32,
        incarnation: u32,
        owner: &OwnerId,
        out: &mut Outbox<'_, Self, O>,
    ) {
        let s = &self.settings;
        let jitter_seed = s
            .seeds
            .str("elector")
            .str(out.names.node_id(node).as_str())
            .num(u64::from(incarnation))
            .seed();
        let config = ElectorConfig::new(
            owner.clone(),
            s.role.clone(),
            with_jitter_seed(s.elector, jitter_seed),
        )
        .expect("election settings were validated (ValidScenario)");
        #[allow(unused_mut)]
        let mut elector = Elector::new(config);
        #[cfg(feature = "planted-bugs")]
        if let Some(bug) = s.planted_bug {
            elector.plant(bug);
        }
        let heartbeat_interval = s.timings.heartbeat_interval;
        let process = NodeProcess::new(pid, node, incarnation, elector);
        let (process, workers) = self.procs.start(pid, incarnation, process);
        process.start(heartbeat_interval, workers, out);
    }

    /// The fenced protocol's servers learn nothing from a closed
    /// connection (a lease outlives its holder's session): nothing is sent.
    fn crash_process<O: Observer>(&mut self, pid: u32, _out: &mut Outbox<'_, Self, O>) {
        self.procs.crash(pid);
    }

    fn clock_changed<O: Observer>(&mut self, to: Address, out: &mut Outbox<'_, Self, O>) {
        match to {
            Address::Server(STORE_ENDPOINT) => self.store.clock_changed(out),
            Address::Server(_) => {}
            // The nodes time by their monotonic clock (`HostClocks` in
            // `Core::fenced`): no step reaches them, a slew does.
            Address::Process { pid, .. } => self.procs.life(pid).0.clock_changed(out),
        }
    }

    fn restart_server<O: Observer>(
        &mut self,
        endpoint: u16,
        durable: bool,
        out: &mut Outbox<'_, Self, O>,
    ) {
        if endpoint == STORE_ENDPOINT {
            self.store.restart(durable, out);
        } else {
            self.downstream.restart(durable);
        }
    }
}
