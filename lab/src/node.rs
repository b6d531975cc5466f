//! The node program, `fenced-lab node`: one life of one scenario node.
//!
//! It runs what the simulator's node process models, on real time and a real
//! PostgreSQL, each part through its logical host's proxy:
//!
//! * the tokio [`LeaseLeaderElector`] over the PostgreSQL lease store
//!   (`--lease-url`), as owner `node#incarnation`;
//! * the [`HeartbeatTask`] over the PostgreSQL registry (`--registry-url`);
//! * the worker: while leading, every `write_interval` it starts a unit of
//!   work, which checks leadership when it starts, takes `work_duration`, and
//!   then writes its result stamped with the token — to the fenced table
//!   (`--fencing`), or to a plain table that accepts everything
//!   (`--unfenced`), through `--downstream-url`. As in the simulator, a unit
//!   does not look at leadership again before writing: a pause inside it
//!   makes the stalled leader's late write, which only the fence can stop.
//!
//! With `--connection-lock` the node follows the zoo's connection lock
//! instead (`lab/src/node_lock.rs`): a PostgreSQL advisory lock held for its
//! session's life through `--lease-url`, no elector and no heartbeats; the
//! worker, the downstream and the history are the same. With `--etcd` it
//! follows etcd's `concurrency.Election` against the etcd at `--lease-url`
//! (`lab/src/node_etcd.rs`), likewise.
//!
//! Signals: SIGTERM stops gracefully (the elector stops the work, releases
//! the lease, and the process exits 0); SIGUSR1 makes the leader's work fail
//! (the work returns, and the elector abdicates, as a `abdicate` fault).
//!
//! What happens is printed on standard output, one line per event
//! (`node-a#1 write unit=3 token=1 outcome=accepted`) for people and tests;
//! the elector's own logs go to standard error.
//!
//! With `--history FILE` (set by the runner: `<run dir>/<owner>.jsonl`) the
//! process records its history ([`fenced::history`]) for the checker: the
//! elector, the heartbeat task and the PostgreSQL stores record through
//! clones of one [`Recorder`], and the worker records its own units
//! (`work-started` with the elector's clock, `write-sent`,
//! `work-cancelled`), and `process-stopped` at a graceful exit.
//!
//! The connection URLs travel in environment variables
//! (`FENCED_LAB_LEASE_URL`, ...), so a password never shows in `ps`.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use fenced::history::{Event, Header, Recorder, Settings};
use fenced::postgres::{Namespace, PostgresFencedTable, PostgresOptions, PostgresStore};
use fenced::tokio::{
    CancellationToken, Clock, ElectorOptions, HeartbeatTask, LeadershipHandle, LeaseLeaderElector,
};
use fenced::{
    ElectorTimings, FencingToken, Jitter, NodeId, OwnerId, ResourceId, Role, WriteOutcome,
};
use fenced_zoo::connection_lock::{ConnectionLock, PgSettings};
use fenced_zoo::etcd::{Etcd, EtcdSettings};
use fenced_zoo::Protocol;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{watch, Mutex, Notify};

use crate::schema::PLAIN_TABLE;

#[path = "node_config.rs"]
mod config;
#[path = "node_driver.rs"]
mod driver;
#[path = "node_errors.rs"]
mod errors;
#[path = "node_etcd.rs"]
mod etcd;
#[path = "node_lock.rs"]
mod lock;
#[path = "node_plain.rs"]
mod plain;
#[path = "node_redlock.rs"]
mod redlock;
#[path = "node_zookeeper.rs"]
mod zookeeper;
pub use config::*;
pub use errors::NodeError;
use errors::{bad, infra, DurationFlagError};
use plain::PlainTable;
pub use redlock::{RedlockArgs, RedlockNode};
pub use zookeeper::args::{ZooKeeperArgs, ZooKeeperNode};

/// Prints one event line on standard output.
fn say(owner: &OwnerId, event: fmt::Arguments<'_>) {
    println!("{owner} {event}");
}

/// Where units write.
enum Downstream {
    Fenced(PostgresFencedTable),
    Plain(Box<PlainTable>),
}

/// Where a unit's leadership check reads the node's belief.
enum Believed {
    /// The elector's leadership, against its local deadline: a process
    /// resumed past it starts no unit even before its elector wakes up.
    Elector(LeadershipHandle),
    /// The connection lock's client: the term its session holds, as far as
    /// it knows — the model's `PgClient::leadership` looks at no clock.
    Lock(watch::Receiver<Option<FencingToken>>),
    /// Redlock's client: the term it was told, while its validity lasts on
    /// the monotonic clock (the model's `leadership`).
    Until(watch::Receiver<redlock::Belief>),
    /// etcd's election client: its term, while the model's client says it
    /// leads at this instant (`lab/src/node_etcd.rs`).
    Etcd(etcd::Belief),
    /// Curator's latch: its term, while the model's client says it leads
    /// at this instant (`lab/src/node_zookeeper.rs`).
    ZooKeeper(zookeeper::Belief),
}

impl Believed {
    /// The token a unit starting now may write with, if any.
    fn token(&self) -> Option<FencingToken> {
        match self {
            Believed::Elector(handle) => handle.token(),
            Believed::Lock(term) => *term.borrow(),
            Believed::Until(term) => match *term.borrow() {
                Some((token, until)) if tokio::time::Instant::now() < until => Some(token),
                _ => None,
            },
            Believed::Etcd(belief) => belief.token(),
            Believed::ZooKeeper(belief) => belief.token(),
        }
    }
}

/// What the work of every term shares.
struct WorkContext {
    owner: OwnerId,
    resource: ResourceId,
    write_interval: Duration,
    work_duration: Duration,
    downstream: Downstream,
    /// How many times a write whose connection was lost is sent again.
    write_retries: u32,
    abdicate: Notify,
    units: AtomicU64,
    /// The history, or off.
    recorder: Recorder,
    /// The elector's clock (the `local_ns` of `work-started`).
    clock: Clock,
    /// The node's belief that it leads, checked when a unit starts.
    leadership: Believed,
    /// Units started and not yet sent: `(token, unit)`.
    in_flight: std::sync::Mutex<std::collections::BTreeSet<(FencingToken, u64)>>,
    /// A starved writer, for the lab's own tests: each answer is recorded
    /// this long after it came ([`HOLD_WRITE_RECORDS_VAR`]).
    #[cfg(feature = "planted-bugs")]
    hold_write_records: Option<Duration>,
}

/// `node-a=300ms`: node `node-a` records each downstream answer 300 ms
/// after it came, as a starved writer would — the failure mode that
/// numbered decisions exist to defuse (lab tests only, `planted-bugs`
/// builds only; other nodes ignore it).
#[cfg(feature = "planted-bugs")]
pub const HOLD_WRITE_RECORDS_VAR: &str = "FENCED_LAB_HOLD_WRITE_RECORDS";

/// The hold [`HOLD_WRITE_RECORDS_VAR`] sets for `node`.
#[cfg(feature = "planted-bugs")]
fn hold_write_records(node: &NodeId) -> Result<Option<Duration>, NodeError> {
    let Ok(value) = std::env::var(HOLD_WRITE_RECORDS_VAR) else {
        return Ok(None);
    };
    let bad = || {
        bad(format!(
            "{HOLD_WRITE_RECORDS_VAR}={value:?}: expected NODE=DURATION"
        ))
    };
    let (who, hold) = value.split_once('=').ok_or_else(bad)?;
    let hold = humantime::parse_duration(hold).map_err(|_| bad())?;
    Ok((who == node.as_str()).then_some(hold))
}

impl WorkContext {
    fn set_in_flight(&self, token: FencingToken, unit: u64, on: bool) {
        if let Ok(mut units) = self.in_flight.lock() {
            if on {
                units.insert((token, unit));
            } else {
                units.remove(&(token, unit));
            }
        }
    }

    /// At a graceful exit: every unit still working is cancelled with the
    /// process, and says so in the history.
    fn cancel_in_flight(&self) {
        let units = match self.in_flight.lock() {
            Ok(mut units) => std::mem::take(&mut *units),
            Err(_) => return,
        };
        for (token, unit) in units {
            self.recorder
                .record(|| Event::WorkCancelled { token, unit });
        }
    }
}

/// Opens the history file `config` names (off without one).
fn open_recorder(config: &NodeConfig, owner: &OwnerId) -> Result<Recorder, NodeError> {
    let Some(path) = &config.history else {
        return Ok(Recorder::off());
    };
    let settings = Settings::new(config.role.as_str(), &config.timings, config.fencing)
        .with_liveness_ttl(config.liveness_ttl)
        .with_work(config.write_interval, config.work_duration);
    let mut header = Header::node(
        config.node.clone(),
        config.incarnation,
        owner.clone(),
        settings,
    );
    if let Some(name) = &config.run_name {
        header = header.with_run(name.clone());
    }
    Recorder::to_file(path, header).map_err(infra)
}

/// The downstream `config` writes to: the fenced table (whose answers the
/// unit records itself, with the unit it knows and the table's decision
/// number: `run_unit`), or the plain table.
fn downstream(config: &NodeConfig, options: &PostgresOptions) -> Result<Downstream, NodeError> {
    Ok(if config.fencing {
        let options = options.clone().with_recorder(Recorder::off());
        let store = PostgresStore::new(&config.downstream_url, options).map_err(infra)?;
        Downstream::Fenced(store.fenced_table())
    } else {
        Downstream::Plain(Box::new(PlainTable {
            url: config.downstream_url.clone(),
            insert: format!(
                "INSERT INTO \"{}\".{PLAIN_TABLE} (resource, token, writer, payload) \
                 VALUES ($1, $2, $3, $4) RETURNING id",
                config.namespace.schema()
            ),
            connect_timeout: config.connect_timeout,
            query_timeout: config.query_timeout,
            query_bound: config.query_timeout.saturating_add(config.query_grace),
            session: Mutex::new(None),
        }))
    })
}

/// What every term's work of this process shares.
fn work_context(
    config: &NodeConfig,
    owner: &OwnerId,
    downstream: Downstream,
    recorder: &Recorder,
    clock: Clock,
    leadership: Believed,
) -> Result<Arc<WorkContext>, NodeError> {
    Ok(Arc::new(WorkContext {
        owner: owner.clone(),
        resource: config.resource.clone(),
        write_interval: config.write_interval,
        work_duration: config.work_duration,
        downstream,
        write_retries: config.write_retries,
        abdicate: Notify::new(),
        units: AtomicU64::new(0),
        recorder: recorder.clone(),
        clock,
        leadership,
        in_flight: std::sync::Mutex::new(std::collections::BTreeSet::new()),
        #[cfg(feature = "planted-bugs")]
        hold_write_records: hold_write_records(&config.node)?,
    }))
}

/// SIGTERM cancels `shutdown`; SIGUSR1 makes the current term's work fail.
fn watch_signals(
    shutdown: CancellationToken,
    context: Arc<WorkContext>,
) -> Result<tokio::task::JoinHandle<()>, NodeError> {
    let mut terminate = signal(SignalKind::terminate()).map_err(infra)?;
    let mut user1 = signal(SignalKind::user_defined1()).map_err(infra)?;
    Ok(tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = terminate.recv() => {
                    say(&context.owner, format_args!("sigterm"));
                    shutdown.cancel();
                    return;
                }
                _ = user1.recv() => {
                    say(&context.owner, format_args!("sigusr1"));
                    context.abdicate.notify_waiters();
                }
            }
        }
    }))
}

/// Runs the node until SIGTERM.
///
/// # Errors
/// [`NodeError`] when a store cannot be set up.
pub async fn run(config: NodeConfig) -> Result<(), NodeError> {
    let owner = config.owner()?;
    let recorder = open_recorder(&config, &owner)?;
    let options = PostgresOptions::default()
        .with_namespace(config.namespace.clone())
        .with_query_timeout(config.query_timeout)
        .with_query_timeout_grace(config.query_grace)
        .with_connect_timeout(config.connect_timeout)
        .with_recorder(recorder.clone());
    let downstream = downstream(&config, &options)?;
    if let Some(settings) = config.lock.clone() {
        return run_lock(&config, settings, &owner, &recorder, downstream).await;
    }
    if let Some(node) = config.redlock.clone() {
        return redlock::run_node(&config, node, &owner, &recorder, downstream).await;
    }
    if let Some(settings) = config.etcd.clone() {
        return etcd::run_node(&config, settings, &owner, &recorder, downstream).await;
    }
    if let Some(node) = config.zookeeper.clone() {
        return zookeeper::run_node(&config, node, &owner, &recorder, downstream).await;
    }
    let lease = PostgresStore::new(&config.lease_url, options.clone()).map_err(infra)?;
    let registry = PostgresStore::new(&config.registry_url, options.clone())
        .map_err(infra)?
        .registry(config.liveness_ttl)
        .map_err(infra)?;
    let options = ElectorOptions::new(owner.clone())
        .with_timings(config.timings)
        .with_clock(Clock::new())
        .with_stop_timeout(config.write_interval + config.work_duration)
        .with_recorder(recorder.clone());
    #[cfg(feature = "planted-bugs")]
    let options = match config.planted {
        Some(bug) => {
            say(&owner, format_args!("planted bug {}", bug.name()));
            options.with_planted_bug(bug)
        }
        None => options,
    };
    let elector = LeaseLeaderElector::new(lease, options);
    let leadership = Believed::Elector(elector.handle());
    let context = work_context(
        &config,
        &owner,
        downstream,
        &recorder,
        elector.clock(),
        leadership,
    )?;
    let shutdown = CancellationToken::new();
    let signals = watch_signals(shutdown.clone(), context.clone())?;
    let heartbeat = HeartbeatTask::new(registry, config.node.clone(), config.heartbeat_interval)
        .map_err(infra)?
        .with_recorder(recorder.clone());
    let heartbeat = tokio::spawn(heartbeat.run(shutdown.clone().cancelled_owned()));
    say(&owner, format_args!("start pid={}", std::process::id()));
    let worker = context.clone();
    let work = move |token, cancel| work(token, cancel, worker.clone());
    let ran = elector
        .run(
            config.role.clone(),
            work,
            shutdown.clone().cancelled_owned(),
        )
        .await;
    shutdown.cancel();
    let _ = heartbeat.await;
    signals.abort();
    ran.map_err(infra)?;
    context.cancel_in_flight();
    recorder.process_stopped();
    say(&owner, format_args!("exit"));
    Ok(())
}

/// Runs a connection-lock node (`lab/src/node_lock.rs`) until SIGTERM: no
/// elector and no heartbeats — the design has neither — and the same work
/// and history as a fenced node's.
async fn run_lock(
    config: &NodeConfig,
    settings: PgSettings,
    owner: &OwnerId,
    recorder: &Recorder,
    downstream: Downstream,
) -> Result<(), NodeError> {
    let stop_bound = config.write_interval + config.work_duration;
    let client = lock::LockClient::new(
        &config.lease_url,
        config.namespace.schema(),
        config.role.as_str(),
        settings,
        stop_bound,
    )?;
    let (believed, watching) = watch::channel(None);
    let context = work_context(
        config,
        owner,
        downstream,
        recorder,
        Clock::new(),
        Believed::Lock(watching),
    )?;
    let shutdown = CancellationToken::new();
    let signals = watch_signals(shutdown.clone(), context.clone())?;
    say(owner, format_args!("start pid={}", std::process::id()));
    lock::run(client, context.clone(), believed, shutdown).await;
    signals.abort();
    context.cancel_in_flight();
    recorder.process_stopped();
    say(owner, format_args!("exit"));
    Ok(())
}

/// A term of a design whose client is not the fenced elector (the
/// connection lock, etcd): its token, and how to cancel its work.
struct DesignTerm {
    token: FencingToken,
    work: CancellationToken,
}

impl DesignTerm {
    /// Term `token` begins: recorded in the history, told to `believed`,
    /// and its work started under `context`.
    fn begin(
        context: &Arc<WorkContext>,
        believed: &watch::Sender<Option<FencingToken>>,
        token: FencingToken,
    ) -> DesignTerm {
        let cancel = CancellationToken::new();
        context.recorder.record(|| Event::TermStarted { token });
        let _ = believed.send(Some(token));
        tokio::spawn(work(token, cancel.clone(), Arc::clone(context)));
        DesignTerm {
            token,
            work: cancel,
        }
    }
}

/// One term's work: a unit every `write_interval` until the term ends, or
/// until SIGUSR1 makes it fail.
async fn work(token: FencingToken, cancel: CancellationToken, context: Arc<WorkContext>) {
    let owner = &context.owner;
    say(owner, format_args!("leading token={token}"));
    let mut ticks = tokio::time::interval(context.write_interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = context.abdicate.notified() => {
                say(owner, format_args!("work-failed token={token}"));
                return;
            }
            _ = ticks.tick() => {
                // The unit's leadership check (`Believed::token`).
                if context.leadership.token() != Some(token) {
                    continue;
                }
                let unit = context.units.fetch_add(1, Ordering::Relaxed) + 1;
                let local_ns = context.clock.now().as_nanos();
                context.set_in_flight(token, unit, true);
                context
                    .recorder
                    .record(|| Event::WorkStarted { token, unit, local_ns });
                // Detached: a unit's write goes out even after the term ends,
                // exactly as the simulator's stalled leader's does.
                tokio::spawn(run_unit(unit, token, context.clone()));
            }
        }
    }
    say(owner, format_args!("stopped-leading token={token}"));
}

async fn run_unit(unit: u64, token: FencingToken, context: Arc<WorkContext>) {
    tokio::time::sleep(context.work_duration).await;
    let owner = &context.owner;
    context.set_in_flight(token, unit, false);
    context.recorder.record(|| Event::WriteSent { token, unit });
    let payload = format!("{owner} unit {unit}");
    let mut attempt = 0;
    let (outcome, decision) = loop {
        // (connection lost, error)
        let answer = match &context.downstream {
            Downstream::Fenced(table) => table
                .write_decided(&context.resource, token, owner, payload.as_bytes())
                .await
                .map(|decided| (decided.outcome, decided.number))
                .map_err(|e| (e.connection_lost(), e.to_string())),
            // The plain table judges nothing: every write it stores is
            // accepted, and this process is the only one that knows.
            Downstream::Plain(table) => table
                .write(&context.resource, token, owner, payload.as_bytes())
                .await
                .map(|id| (WriteOutcome::Accepted, id))
                .map_err(|e| (e.connection_lost(), e.to_string())),
        };
        match answer {
            Ok(answer) => break answer,
            // A write whose connection was lost goes out again on a new one
            // (`[work] write_retries`), as the simulator's worker sends it
            // again: what an application does with a connection error.
            Err((true, error)) if attempt < context.write_retries => {
                attempt += 1;
                say(
                    owner,
                    format_args!("write unit={unit} token={token} outcome=retried error={error:?}"),
                );
                context.recorder.record(|| Event::WriteSent { token, unit });
            }
            Err((_, error)) => {
                say(
                    owner,
                    format_args!("write unit={unit} token={token} outcome=failed error={error:?}"),
                );
                return;
            }
        }
    };
    #[cfg(feature = "planted-bugs")]
    if let Some(hold) = context.hold_write_records {
        tokio::time::sleep(hold).await;
    }
    context.recorder.record(|| {
        Event::write_handled(owner, token, Some(unit), &outcome).with_decision(decision)
    });
    let outcome = match outcome {
        WriteOutcome::Accepted => "outcome=accepted".to_string(),
        WriteOutcome::RejectedStale { highest, .. } => {
            format!("outcome=rejected-stale highest={highest}")
        }
        WriteOutcome::RejectedWrongWriter { bound_to, .. } => {
            format!("outcome=rejected-wrong-writer bound_to={bound_to}")
        }
    };
    say(
        owner,
        format_args!("write unit={unit} token={token} {outcome} decision={decision}"),
    );
}

/// `fenced-lab node`: validates, sets up logging and a runtime, runs.
///
/// # Errors
/// [`NodeError`] (bad input: exit 2; anything else: exit 1).
pub fn main(args: NodeArgs) -> Result<(), NodeError> {
    let config = NodeConfig::from_args(args)?;
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(infra)?;
    runtime.block_on(run(config))
}

/// The node arguments of command line `line` (from the `node` subcommand
/// on), parsed as `fenced-lab node` parses them — for the tests of the
/// node's flags.
#[cfg(test)]
pub(crate) fn parse_node_line<T: Into<OsString> + Clone>(
    line: impl IntoIterator<Item = T>,
) -> Result<NodeArgs, clap::Error> {
    #[derive(clap::Parser)]
    struct Wrapper {
        #[command(subcommand)]
        command: Command,
    }
    #[derive(clap::Subcommand)]
    enum Command {
        Node(NodeArgs),
    }
    let line =
        std::iter::once(OsString::from("fenced-lab")).chain(line.into_iter().map(Into::into));
    let Command::Node(args) = <Wrapper as clap::Parser>::try_parse_from(line)?.command;
    Ok(args)
}

/// `config` through the runner's command line and back: its flags, with
/// the URLs (which the runner passes in the environment) given as flags, so
/// that no other test's variables can race with the caller's.
#[cfg(test)]
pub(crate) fn reparsed(config: &NodeConfig) -> Result<NodeConfig, NodeError> {
    let (args, env) = config.to_command();
    let urls = ["--lease-url", "--registry-url", "--downstream-url"]
        .into_iter()
        .zip(env)
        .flat_map(|(flag, (_, value))| [flag.into(), value]);
    let args = parse_node_line(args.into_iter().chain(urls)).expect("the runner's line parses");
    NodeConfig::from_args(args)
}

/// The configuration a node reads from a command line of the shared flags
/// (node-a, incarnation `incarnation`, the lease store at `lease_url`,
/// fenced or not) followed by a design's own flags `design` — for the
/// designs' tests of their flags.
#[cfg(test)]
pub(crate) fn test_node_config(
    incarnation: &str,
    lease_url: &str,
    fencing: bool,
    design: &[&str],
) -> Result<NodeConfig, NodeError> {
    let shared = [
        "node",
        "--node-id",
        "node-a",
        "--incarnation",
        incarnation,
        "--lease-url",
        lease_url,
        "--registry-url",
        "u",
        "--downstream-url",
        "u",
        "--schema",
        "fenced_lab_1_0",
        "--role",
        "reports",
        "--resource",
        "r",
        "--ttl",
        "3s",
        "--renew-interval",
        "1s",
        "--retry-interval",
        "200ms",
        "--heartbeat-interval",
        "500ms",
        "--liveness-ttl",
        "3s",
        "--write-interval",
        "100ms",
        "--work-ms",
        "20ms",
        "--query-timeout",
        "1s",
        if fencing { "--fencing" } else { "--unfenced" },
    ];
    let line = shared.iter().chain(design).copied();
    NodeConfig::from_args(parse_node_line(line).expect("parses"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runner_command_line_reads_back_as_the_same_config() {
        // What the runner writes is exactly what the node reads.
        let config = NodeConfig {
            node: NodeId::new("node-a").expect("id"),
            incarnation: 3,
            lease_url: "host=127.0.0.1 port=1".to_string(),
            registry_url: "host=127.0.0.1 port=1".to_string(),
            downstream_url: "host=127.0.0.1 port=2".to_string(),
            namespace: Namespace::new("fenced_lab_1_0", "").expect("namespace"),
            role: Role::new("reports").expect("role"),
            resource: ResourceId::new("daily").expect("resource"),
            timings: ElectorTimings {
                lease_ttl: Duration::from_millis(3000),
                renew_interval: Duration::from_millis(1000),
                retry_interval: Duration::from_millis(200),
                safety_margin: Some(Duration::from_micros(300_500)),
                rejoin_delay: None,
                release_on_deadline: false,
                jitter: Some(Jitter {
                    fraction: 0.1,
                    seed: 42,
                }),
            },
            heartbeat_interval: Duration::from_millis(500),
            liveness_ttl: Duration::from_secs(3),
            write_interval: Duration::from_millis(100),
            work_duration: Duration::from_nanos(5_000_001),
            query_timeout: Duration::from_millis(750),
            query_grace: Duration::from_millis(120),
            connect_timeout: Duration::from_millis(600),
            write_retries: 2,
            fencing: false,
            etcd: None,
            zookeeper: None,
            lock: Some(PgSettings {
                tcp_keepalives_idle: Duration::from_secs(2),
                tcp_keepalives_interval: Duration::from_secs(1),
                tcp_keepalives_count: 3,
                query_timeout: Duration::from_millis(92_460),
                connect_timeout: Duration::from_micros(12_700_001),
                retry_interval: Duration::from_millis(500),
                check_interval: Duration::from_secs(1),
            }),
            redlock: None,
            history: Some(PathBuf::from("/tmp/run 1/node-a#3.jsonl")),
            run_name: Some("gc-pause-fenced".to_string()),
            #[cfg(feature = "planted-bugs")]
            planted: Some(fenced::PlantedBug::ElectorIgnoresDeadline),
        };
        let (args, env) = config.to_command();
        for (key, value) in &env {
            // Only this test reads these variables.
            std::env::set_var(key, value);
        }
        let args = parse_node_line(args).expect("the runner's command line parses");
        assert_eq!(NodeConfig::from_args(args).expect("valid"), config);
    }

    #[test]
    fn a_connection_lock_node_refuses_keepalives_postgresql_cannot_hold() {
        // Proves the node's own check (bad input, never a silent rounding):
        // a keepalive of 1.5 s is refused naming the flag; a zero count too.
        let command = |idle: &str, count: &str| {
            super::test_node_config(
                "1",
                "u",
                false,
                &[
                    "--connection-lock",
                    "--keepalives-idle",
                    idle,
                    "--keepalives-interval",
                    "1s",
                    "--keepalives-count",
                    count,
                    "--lock-query-timeout",
                    "9s",
                    "--lock-connect-timeout",
                    "9s",
                    "--lock-retry-interval",
                    "500ms",
                    "--lock-check-interval",
                    "1s",
                ],
            )
        };
        assert!(command("2s", "3").is_ok_and(|c| c.lock.is_some()));
        let error = command("1500ms", "3").expect_err("not whole seconds");
        assert!(error.to_string().contains("--keepalives-idle"), "{error}");
        let error = command("2s", "0").expect_err("zero count");
        assert!(
            error.to_string().contains("tcp_keepalives_count"),
            "{error}"
        );
    }
}
