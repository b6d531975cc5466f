//! `fenced-lab`: runs a `fenced-sim` scenario **for real**.
//!
//! The simulator predicts what a scenario does to virtual hosts; the lab
//! runs the same scenario's nodes as real OS processes — the tokio elector,
//! the heartbeat task and a worker writing to PostgreSQL — against a real
//! PostgreSQL that holds the leases, the registry and the downstream, and
//! applies the scenario's faults at real times:
//!
//! * [`plan`]: the scenario (scaled by `--time-scale`) as timed actions, and
//!   the refusal, up front, of every fault the lab cannot apply for real;
//! * [`design`]: which lock design the nodes follow (the fenced protocol,
//!   or the zoo's connection lock, Redlock, etcd or ZooKeeper), its settings
//!   scaled, its refusals ([`design_etcd`]: etcd's; [`design_zookeeper`]:
//!   ZooKeeper's);
//! * [`realise`]: each primitive action of the simulator's fault plan
//!   ([`fenced_sim::ValidScenario::fault_plan`]) as the lab's real actions;
//! * [`proxy`]: the fault-injecting TCP proxy of each (node, logical server)
//!   link — latency, loss as TCP sees it, one-way blackholes, resets;
//! * [`supervisor`]: node processes in their own process groups, signalled
//!   (SIGSTOP/SIGCONT/SIGKILL/SIGTERM/SIGUSR1) and always cleaned up;
//! * [`schema`]: the run's own PostgreSQL schema, created and dropped by it;
//! * [`stale_schemas`]: schemas of runners that are gone (SIGKILL), removed;
//! * [`faketime`]: node clock offsets, drifts and steps with libfaketime,
//!   verified;
//! * [`store_clock`]: the clock the lease store's SQL reads, stepped and
//!   slewed for real;
//! * [`node`]: the node program (`fenced-lab node`);
//! * [`lab_history`]: the lab's own history file (faults, kills);
//! * [`judge`]: the run's histories judged by the simulator's checker, and
//!   the simulator's prediction of the same scaled scenario;
//! * [`compare`]: the two side by side, with what must agree;
//! * [`output`]: what `run` prints (text, JSON, SVG) and its exit code;
//! * [`runner`]: `fenced-lab run`, which ties them together;
//! * [`campaign`]: `run --runs N`, the same scenario for real N times, and
//!   how often each figure agreed with the simulation;
//! * [`servers`]: the lock zoo's real servers (etcd, Redis, ZooKeeper) on
//!   loopback, started, paused, killed, restarted and always cleaned up.
#![warn(missing_docs)]

pub mod anchor_watch;
pub mod campaign;
pub mod compare;
pub mod design;
pub mod design_etcd;
pub mod design_redlock;
pub mod design_zookeeper;
pub mod faketime;
pub mod judge;
pub mod lab_history;
pub mod matrix;
pub mod membership_watch;
pub mod node;
pub mod output;
pub mod plan;
pub mod proxy;
pub mod realise;
pub mod report;
pub mod runner;
pub mod schema;
pub mod servers;
pub mod stale_schemas;
pub mod store_clock;
pub mod supervisor;
pub mod time_scale;
