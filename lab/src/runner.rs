//! `fenced-lab run`: a scenario for real, from plan to clean-up.
//!
//! 1. Load and plan the scenario ([`crate::plan`]); probe libfaketime first
//!    if a node has a clock setting. A refusal is bad input (exit 2), before
//!    anything is started.
//! 2. Create the run's schema ([`crate::schema`]), start one proxy per
//!    (node, logical server) link ([`crate::proxy`]), and a
//!    [`Supervisor`] for the node processes.
//! 3. Apply each planned step at its real time (from the run's start), and
//!    say what it did: which process got which signal, which link stalled.
//! 4. At the end — or on Ctrl-C / SIGTERM, a failure, or a panic — kill
//!    every process, stop the proxies, drop the schema.
//! 5. Judge the run's histories (each process's and the lab's own, in the
//!    run's directory) with the simulator's checker, cut at the run's end
//!    ([`crate::judge`]), and run the simulator on the same scaled scenario
//!    and seed ([`crate::compare`]); the directory is removed unless
//!    `--keep DIR`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use fenced::postgres::{PostgresOptions, PostgresStore};
use fenced_sim::{mix64, AnchoredFault};
use tokio::signal::unix::{signal, Signal as SignalStream, SignalKind};
use tokio::time::{sleep_until, Instant};

use crate::anchor_watch::HistoryTails;
use crate::design::Design;
use crate::faketime::{self, FaketimeSupport};
use crate::lab_history::LabHistory;
use crate::node::NodeConfig;
use crate::plan::{
    self, Action, Cause, ClockTarget, Direction, LabPlan, Link, PlanOptions, Server, TimeScale,
};
use crate::proxy::{DirectionRules, Proxy};
use crate::report::{Applied, RunReport};
use crate::schema::{RunSchema, PLAIN_TABLE};
use crate::store_clock::{search_path_option, StoreClock};
use crate::supervisor::{Launch, ProcessIndex, Signal, Supervisor};

#[path = "runner_clocks.rs"]
mod clocks;
#[path = "runner_drive.rs"]
mod drive;
#[path = "runner_etcd.rs"]
mod etcd;
#[path = "runner_redlock.rs"]
mod redlock;
#[path = "runner_spawn.rs"]
mod spawn;
#[path = "runner_target.rs"]
mod target;
#[path = "runner_zookeeper.rs"]
mod zookeeper;

use clocks::wall_clock_file;
use target::Target;

/// The flags of `fenced-lab run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The PostgreSQL that holds the leases, the registry and the downstream
    /// (a URL or key=value string; TCP, no TLS). The run creates a schema of
    /// its own there and drops it at the end.
    #[arg(long)]
    pub postgres: String,
    /// Multiply every duration of the scenario by this (0.1: ten times
    /// faster). Above 0, at most 1000.
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Override the scenario's seed (proxy latency and loss draws, elector
    /// jitter).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print one JSON object instead of the text report.
    #[arg(long)]
    pub json: bool,
    /// Keep the run's directory — each process's history (`<owner>.jsonl`),
    /// the lab's (`lab.jsonl`) and logs, and, when the run completes, the
    /// data directories of its ZooKeeper or etcd (their transaction logs
    /// say in which order the server took the clients' writes) — here
    /// (created if missing).
    #[arg(long)]
    pub keep: Option<PathBuf>,
    /// Write the real run's timeline (SVG), as `fenced-sim check-history
    /// --svg` draws it.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Run the scenario this many times for real (seeds from the
    /// scenario's, or `--seed`, up), each beside its simulation, and report
    /// how often each compared figure agreed. 1 to 1000; not with `--svg`
    /// or `--keep`.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::campaign::MAX_RUNS)), conflicts_with_all = ["svg", "keep"])]
    pub runs: Option<u32>,
    /// Plant this deliberate bug in every node's elector — a negative
    /// control: the checker must catch it in the real histories. Never a
    /// production setting. Names: those of `fenced::PlantedBug`.
    #[cfg(feature = "planted-bugs")]
    #[arg(long, value_name = "BUG")]
    pub plant: Option<String>,
}

/// A run that completed: what was done, the checker's verdict on its
/// histories, and the simulator's prediction next to it.
#[derive(Debug)]
pub struct RunOutcome {
    /// What the lab did.
    pub lab: RunReport,
    /// The scenario as run (scaled, with the run's seed).
    pub scenario: fenced_sim::Scenario,
    /// The checker's verdict on the real histories.
    pub judged: fenced_sim::history::Judged,
    /// The simulator's run of the same scaled scenario and seed, or why
    /// there is none.
    pub simulated: Result<fenced_sim::Report, crate::judge::SimulateError>,
    /// The two side by side, when there is a simulation.
    pub comparison: Option<crate::compare::Comparison>,
}

/// Why a run did not complete.
#[derive(Debug)]
pub enum RunError {
    /// Bad input or a refused scenario (exit 2).
    BadInput(String),
    /// The machine or the database failed (exit 1).
    Infrastructure(String),
    /// Ctrl-C or SIGTERM; everything was cleaned up (exit 1).
    Interrupted,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::BadInput(what) => f.write_str(what),
            RunError::Infrastructure(what) => write!(f, "lab failure: {what}"),
            RunError::Interrupted => {
                f.write_str("interrupted: every process, proxy and the run's schema were removed")
            }
        }
    }
}

impl std::error::Error for RunError {}

impl RunError {
    /// The process exit code.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::BadInput(_) => 2,
            RunError::Infrastructure(_) | RunError::Interrupted => 1,
        }
    }
}

fn infra(what: impl fmt::Display) -> RunError {
    RunError::Infrastructure(what.to_string())
}

/// Ctrl-C and SIGTERM, registered before anything is started.
struct Interrupts {
    interrupt: SignalStream,
    terminate: SignalStream,
}

impl Interrupts {
    fn new() -> Result<Interrupts, RunError> {
        Ok(Interrupts {
            interrupt: signal(SignalKind::interrupt()).map_err(infra)?,
            terminate: signal(SignalKind::terminate()).map_err(infra)?,
        })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}

/// How often the runner looks for ended processes.
const REAP_INTERVAL: Duration = Duration::from_millis(20);

/// The seed of one proxy's or one node's draws: `seed` and the `parts` that
/// name the consumer, folded through the simulator's mixer.
fn child_seed(seed: u64, parts: &[u64]) -> u64 {
    parts
        .iter()
        .fold(mix64(seed), |acc, part| mix64(acc ^ mix64(*part)))
}

/// Runs `args`' scenario for real and reports what was done.
///
/// # Errors
/// [`RunError`]; everything started is gone when it returns.
pub async fn run(args: &RunArgs) -> Result<RunOutcome, RunError> {
    let mut interrupts = Interrupts::new()?;
    let program = std::env::current_exe().map_err(|e| infra(format!("current_exe: {e}")))?;
    #[cfg(feature = "planted-bugs")]
    let planted = crate::node::parse_plant(args.plant.as_deref())
        .map_err(|e| RunError::BadInput(e.to_string()))?;
    let scenario = plan::load(&args.scenario).map_err(|e| RunError::BadInput(e.to_string()))?;
    let time_scale =
        TimeScale::new(args.time_scale).map_err(|e| RunError::BadInput(e.to_string()))?;
    let fault_plan = scenario.fault_plan();
    let servers = crate::design::servers(&scenario.election.protocol);
    let steps_a_node = fault_plan.faults().iter().any(|fault| {
        matches!(fault, fenced_sim::Resolution::Scheduled(fault)
            | fenced_sim::Resolution::Anchored { fault, .. }
            if matches!(crate::realise::clock_target(&fault.start, &servers),
                Some(ClockTarget::Node(_))))
    });
    let needs_clock = steps_a_node
        || scenario
            .nodes
            .iter()
            .any(|n| n.clock_offset.0 != 0 || n.clock_drift != 0.0);
    let faketime = if needs_clock {
        faketime::probe(&program).await
    } else {
        FaketimeSupport::NotProbed
    };
    let options = PlanOptions {
        time_scale,
        seed: args.seed,
        faketime,
    };
    let plan = LabPlan::new(&scenario, &options).map_err(|e| RunError::BadInput(e.to_string()))?;
    let target = Target::resolve(&args.postgres).await?;
    let (log_dir, _temporary) = match &args.keep {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| infra(format!("cannot create {}: {e}", dir.display())))?;
            (dir.clone(), None)
        }
        None => {
            let dir = tempfile::Builder::new()
                .prefix("fenced-lab-")
                .tempdir()
                .map_err(|e| infra(format!("cannot create a log directory: {e}")))?;
            (dir.path().to_path_buf(), Some(dir))
        }
    };
    // Redlock's instances start before the run's clock does (the lab's
    // history's first line), so their start-up is no part of the run.
    let redis = match &plan.redis {
        Some(instances) => redlock::Fleet::start(instances, &log_dir).await?,
        None => redlock::Fleet::default(),
    };
    // Before anything that must be cleaned up: dropped on every early return.
    let etcd = etcd::start(&plan, &log_dir).await?;
    let zookeeper_server = zookeeper::start(&plan, &log_dir).await?;
    let scaled = crate::judge::scaled_scenario(&scenario, time_scale, plan.seed);
    let history =
        LabHistory::create(&log_dir.join("lab.jsonl"), &plan.scenario, &scaled).map_err(infra)?;
    // A runner killed with SIGKILL could not drop its schema: drop those of
    // runners on this host that are gone, before making ours.
    let cleaned = crate::stale_schemas::remove_stale(&args.postgres)
        .await
        .map_err(infra)?;
    if !cleaned.dropped.is_empty() && !args.json {
        eprintln!("fenced-lab: {cleaned}");
    }
    let schema = RunSchema::create(&args.postgres).await.map_err(infra)?;
    let zookeeper = match zookeeper_server {
        Some(server) => {
            let latch =
                crate::design_zookeeper::latch_path(schema.name(), plan.settings.role.as_str());
            Some(zookeeper::prepare(server, &latch).await?)
        }
        None => None,
    };
    let (store_clock, wall_offsets) = clocks::prepare(&plan, &schema, &args.postgres, &log_dir)
        .await
        .map_err(infra)?;
    let mut lab = Lab {
        etcd,
        zookeeper,
        store_clock,
        wall_offsets,
        plan: &plan,
        options: &options,
        target,
        schema_name: schema.name().to_string(),
        proxies: BTreeMap::new(),
        redis,
        supervisor: Supervisor::new(&program, &log_dir),
        incarnations: BTreeMap::new(),
        paused: BTreeMap::new(),
        stopped: BTreeMap::new(),
        blocked: BTreeMap::new(),
        down: BTreeMap::new(),
        killed_by: BTreeSet::new(),
        applied: Vec::new(),
        verbose: !args.json,
        run_dir: log_dir.clone(),
        history,
        ended_ns: None,
        #[cfg(feature = "planted-bugs")]
        planted,
        tails: HistoryTails::default(),
        anchors: plan
            .anchored
            .iter()
            .map(|a| (a.fault, AnchoredFault::waiting(a.fault, &a.kind, &a.text)))
            .collect(),
    };
    // The live set as the registry has it (crate::membership_watch), read
    // straight from PostgreSQL — on the store's clock when the run moves it.
    let mut watch_url = lab.target.through(lab.target.address);
    if plan.store_clock {
        watch_url.push_str(&format!(" options='{}'", search_path_option(schema.name())));
    }
    let watch = crate::membership_watch::MembershipWatch::start(
        &watch_url,
        schema.namespace().clone(),
        scaled.membership.liveness_ttl,
        crate::membership_watch::poll_interval(scaled.membership.heartbeat_interval),
        lab.history.recorder(),
    )
    .map_err(|e| infra(format!("cannot watch the registry's live set: {e}")))?;
    let outcome = lab.drive(&mut interrupts).await;
    watch.stop().await;
    // Tear down in every case: processes, proxies, then the schema.
    lab.supervisor.shutdown().await;
    lab.proxies.clear();
    lab.redis.stop().await;
    // A kept run that completed keeps its servers' data too: their logs
    // say in which order they took the clients' writes. An interrupted
    // run leaves nothing of its servers.
    let keep_data = args.keep.is_some() && outcome.is_ok();
    let etcd_holder = lab
        .stop_etcd(outcome.is_ok(), schema.name(), keep_data)
        .await;
    let had_zookeeper = lab.zookeeper.is_some();
    if let Some(mut run) = lab.zookeeper.take() {
        if keep_data {
            run.server.keep_data();
        }
        run.server.stop().await;
    }
    let downstream = match &outcome {
        Ok(()) => downstream_summary(&args.postgres, &plan, &schema).await,
        Err(_) => None,
    };
    let dropped = schema.drop_schema().await;
    outcome?;
    dropped.map_err(infra)?;
    if lab.history.write_errors() > 0 {
        return Err(infra(format!(
            "{} lines of the lab's history could not be written",
            lab.history.write_errors()
        )));
    }
    let mut judged =
        crate::judge::judge_histories(&log_dir, &scaled, lab.ended_ns, args.svg.is_some())
            .map_err(infra)?;
    // What the anchored faults did, judged as the simulator's are.
    let anchors = std::mem::take(&mut lab.anchors).into_values().collect();
    judged.report.record_anchors(anchors, &scaled.expect);
    etcd::record_holder(&mut judged.report, etcd_holder)?;
    if had_zookeeper {
        zookeeper::record_max_token(&mut judged.report);
    }
    let simulated = crate::judge::simulate(&scaled);
    let comparison = simulated
        .as_ref()
        .ok()
        .map(|sim| crate::compare::Comparison::new(&scaled, &judged.report, sim));
    let report = RunReport::new(
        &plan,
        &options.faketime,
        lab.schema_name,
        lab.applied,
        lab.supervisor.processes(),
        downstream,
        args.keep.clone(),
    );
    Ok(RunOutcome {
        lab: report,
        scenario: scaled,
        judged,
        simulated,
        comparison,
    })
}

/// What the downstream holds at the end, in words.
async fn downstream_summary(url: &str, plan: &LabPlan, schema: &RunSchema) -> Option<String> {
    let resource = &plan.settings.resource;
    if plan.settings.fencing {
        let options = PostgresOptions::default().with_namespace(schema.namespace().clone());
        let table = PostgresStore::new(url, options).ok()?.fenced_table();
        let record = table.read(resource).await;
        Some(match record {
            Ok(Some(record)) => format!(
                "fenced table, resource {resource}: {} writes accepted, highest token {} by {}",
                record.accepted, record.highest, record.writer
            ),
            Ok(None) => format!("fenced table, resource {resource}: no write accepted"),
            Err(error) => format!("fenced table unreadable: {error}"),
        })
    } else {
        let client = crate::schema::connect(url).await.ok()?;
        let sql = format!(
            "SELECT count(*), count(DISTINCT token) FROM \"{}\".{PLAIN_TABLE} WHERE resource = $1",
            schema.name()
        );
        let row = client.query_one(&sql, &[&resource.as_str()]).await.ok()?;
        let (writes, tokens): (i64, i64) = (row.get(0), row.get(1));
        Some(format!(
            "plain table, resource {resource}: {writes} writes accepted, from {tokens} terms"
        ))
    }
}

/// The running lab: everything a step may touch.
struct Lab<'a> {
    /// The run's etcd, when its nodes follow etcd's election.
    etcd: Option<crate::servers::etcd::EtcdCluster>,
    /// The run's ZooKeeper, when its nodes follow Curator's latch.
    zookeeper: Option<zookeeper::RunServer>,
    /// The lease store's clock, when a fault moves it.
    store_clock: Option<StoreClock>,
    /// Each stepped node's wall-clock offset now (its file's content).
    wall_offsets: BTreeMap<usize, i64>,
    plan: &'a LabPlan,
    options: &'a PlanOptions,
    target: Target,
    schema_name: String,
    proxies: BTreeMap<Link, Proxy>,
    /// Redlock's instances (none for another design).
    redis: redlock::Fleet,
    supervisor: Supervisor,
    incarnations: BTreeMap<usize, u32>,
    /// Per node, the faults pausing it.
    paused: BTreeMap<usize, BTreeSet<usize>>,
    /// Per node, the processes its pauses stopped (a process started during
    /// a pause of its node — a `replace` — runs).
    stopped: BTreeMap<usize, BTreeSet<ProcessIndex>>,
    /// Per link direction, the faults blocking it.
    blocked: BTreeMap<(Link, Direction), BTreeSet<usize>>,
    /// Per server, the faults keeping it down.
    down: BTreeMap<Server, BTreeSet<usize>>,
    /// Faults whose kill or stop found a live process.
    killed_by: BTreeSet<usize>,
    applied: Vec<Applied>,
    verbose: bool,
    /// The run's directory: logs and histories.
    run_dir: PathBuf,
    /// The lab's own history (faults, kills).
    history: LabHistory,
    /// The history clock when the run ended (its planned end).
    ended_ns: Option<u64>,
    /// The bug every node's elector is given (`--plant`).
    #[cfg(feature = "planted-bugs")]
    planted: Option<fenced::PlantedBug>,
    /// Every process's history, read as it grows while an anchor is armed.
    tails: HistoryTails,
    /// What each anchored fault did, by scenario fault index.
    anchors: BTreeMap<usize, AnchoredFault>,
}

impl Lab<'_> {
    /// Waits for `deadline`, noting process endings as they happen (so a
    /// life's end is timed within [`REAP_INTERVAL`]).
    async fn wait_until(
        &mut self,
        deadline: Instant,
        interrupts: &mut Interrupts,
    ) -> Result<(), RunError> {
        let mut reaping = tokio::time::interval(REAP_INTERVAL);
        loop {
            tokio::select! {
                _ = sleep_until(deadline) => return Ok(()),
                _ = interrupts.recv() => return Err(RunError::Interrupted),
                _ = reaping.tick() => {
                    for index in self.supervisor.reap() {
                        let process = &self.supervisor.processes()[index];
                        if let (true, Some((at, ending))) = (self.verbose, &process.ended) {
                            eprintln!(
                                "{:>9.3}s {}#{} (pid {}) {ending}",
                                at.as_secs_f64(),
                                process.node,
                                process.incarnation,
                                process.pid
                            );
                        }
                    }
                }
            }
        }
    }

    async fn start_proxies(&mut self) -> Result<(), RunError> {
        let network = self.plan.network;
        let rules = DirectionRules {
            latency: network.latency,
            loss: network.loss,
            retransmit_timeout: network.retransmit_timeout,
            blocked: false,
        };
        let etcd = (self.etcd.as_ref().and_then(etcd::address))
            .or_else(|| self.zookeeper.as_ref().map(zookeeper::address));
        for node in 0..self.plan.nodes.len() {
            for &server in &self.plan.servers {
                let (target, part) = match (server, etcd) {
                    (Server::Redis(index), _) => (self.redis.address(index)?, 2 + u64::from(index)),
                    (Server::LeaseStore, Some(etcd)) => (etcd, 0),
                    (Server::LeaseStore, None) => (self.target.address, 0),
                    (Server::Downstream, _) => (self.target.address, 1),
                };
                let seed = child_seed(self.plan.seed, &[node as u64, part]);
                let proxy = Proxy::start(target, [rules; 2], seed)
                    .await
                    .map_err(|e| infra(format!("cannot start a proxy: {e}")))?;
                self.proxies.insert(Link { node, server }, proxy);
            }
        }
        Ok(())
    }

    fn node_name(&self, node: usize) -> String {
        self.plan.nodes[node].id.to_string()
    }

    /// Sends `signal` to every live process of `node`; says to whom.
    fn signal_node(&mut self, node: usize, signal: Signal) -> Result<String, RunError> {
        let live = self.supervisor.live(&self.node_name(node));
        if signal == Signal::Stop {
            self.stopped
                .entry(node)
                .or_default()
                .extend(live.iter().copied());
        }
        self.signal_processes(node, live, signal)
    }

    /// Sends SIGCONT to the processes `node`'s pauses stopped.
    fn resume_node(&mut self, node: usize) -> Result<String, RunError> {
        let stopped = self.stopped.remove(&node).unwrap_or_default();
        let live = self.supervisor.live(&self.node_name(node));
        let resumed = live.into_iter().filter(|i| stopped.contains(i)).collect();
        self.signal_processes(node, resumed, Signal::Continue)
    }

    fn signal_processes(
        &mut self,
        node: usize,
        processes: Vec<ProcessIndex>,
        signal: Signal,
    ) -> Result<String, RunError> {
        let name = self.node_name(node);
        let mut whom = Vec::new();
        for index in processes {
            self.supervisor.signal(index, signal).map_err(infra)?;
            let process = &self.supervisor.processes()[index];
            whom.push(format!(
                "{}#{} (pid {})",
                name, process.incarnation, process.pid
            ));
        }
        Ok(if whom.is_empty() {
            format!("{}: {name} has no live process", signal.name())
        } else {
            format!("{} {}", signal.name(), whom.join(", "))
        })
    }

    fn set_block(&mut self, link: Link, direction: Direction, fault: usize, on: bool) -> String {
        let faults = self.blocked.entry((link, direction)).or_default();
        if on {
            faults.insert(fault);
        } else {
            faults.remove(&fault);
        }
        let blocked = !faults.is_empty();
        self.proxies[&link].set_blocked(direction, blocked);
        let state = if blocked { "stalled" } else { "flowing" };
        format!(
            "{} -> {}: {state}",
            self.describe(link, direction).0,
            self.describe(link, direction).1
        )
    }

    fn describe(&self, link: Link, direction: Direction) -> (String, String) {
        let (node, server) = (self.node_name(link.node), link.server.name().to_string());
        match direction {
            Direction::ToServer => (node, server),
            Direction::ToNode => (server, node),
        }
    }

    fn set_down(&mut self, server: Server, fault: usize, down: bool) -> String {
        let faults = self.down.entry(server).or_default();
        if down {
            faults.insert(fault);
        } else {
            faults.remove(&fault);
        }
        let refusing = !faults.is_empty();
        for (link, proxy) in &self.proxies {
            if link.server == server {
                proxy.set_refusing(refusing);
            }
        }
        if refusing {
            format!("{}: connections reset and refused", server.name())
        } else {
            format!("{}: accepting connections", server.name())
        }
    }

    async fn apply(&mut self, cause: Cause, action: &Action) -> Result<String, RunError> {
        let fault = match cause {
            Cause::Fault(index) => index,
            Cause::Start | Cause::Heal => usize::MAX,
        };
        Ok(match *action {
            Action::Spawn { node } | Action::Replace { node } => {
                let name = self.node_name(node);
                if matches!(action, Action::Spawn { .. }) && !self.supervisor.live(&name).is_empty()
                {
                    format!("{name} already has a live process")
                } else {
                    self.spawn(node)?
                }
            }
            Action::Pause { node } => {
                self.paused.entry(node).or_default().insert(fault);
                for owner in self.live_owners(node) {
                    self.history.paused(fault, owner.as_str());
                }
                self.signal_node(node, Signal::Stop)?
            }
            Action::Resume { node } => {
                self.history.ended(fault);
                let faults = self.paused.entry(node).or_default();
                faults.remove(&fault);
                if faults.is_empty() {
                    self.resume_node(node)?
                } else {
                    "still paused by another fault".to_string()
                }
            }
            Action::Kill { node } | Action::Terminate { node } => {
                let name = self.node_name(node);
                if !self.supervisor.live(&name).is_empty() {
                    self.killed_by.insert(fault);
                }
                let signal = match action {
                    Action::Kill { .. } => Signal::Kill,
                    _ => Signal::Terminate,
                };
                let owners = self.live_owners(node);
                let said = self.signal_node(node, signal)?;
                if signal == Signal::Kill {
                    for owner in &owners {
                        self.history.killed(owner);
                    }
                }
                said
            }
            Action::Restart { node, after } => {
                let name = self.node_name(node);
                if !self.killed_by.contains(&after) {
                    format!("no restart: fault[{after}] found no live process")
                } else if !self.supervisor.live(&name).is_empty() {
                    format!("no restart: {name} has a live process")
                } else {
                    self.spawn(node)?
                }
            }
            Action::Abdicate { node } => self.signal_node(node, Signal::User1)?,
            Action::Block { link, direction } => {
                self.history.link_fault(fault, &self.node_name(link.node));
                self.set_block(link, direction, fault, true)
            }
            Action::Unblock { link, direction } => {
                self.history.ended(fault);
                self.set_block(link, direction, fault, false)
            }
            Action::ServerPause {
                server: Server::Redis(_),
            }
            | Action::ServerResume {
                server: Server::Redis(_),
            }
            | Action::ServerKill { .. }
            | Action::ServerRestart { .. } => self.apply_instance(action, fault).await?,
            Action::ServerDown { .. }
            | Action::ServerUp { .. }
            | Action::ServerPause { .. }
            | Action::ServerResume { .. } => self.server_fault(fault, action).await?,
            Action::Heal => self.heal().await?,
            Action::ClockStep { target, by_nanos } => self.step_clock(target, by_nanos).await?,
            Action::ClockSlew {
                target,
                by_nanos,
                over,
            } => self.slew_clock(target, by_nanos, over).await?,
        })
    }

    /// The owner ids of `node`'s live processes.
    fn live_owners(&mut self, node: usize) -> Vec<fenced::OwnerId> {
        let name = self.node_name(node);
        self.supervisor
            .live(&name)
            .into_iter()
            .filter_map(|index| {
                let incarnation = self.supervisor.processes()[index].incarnation;
                fenced::OwnerId::new(format!("{name}#{incarnation}")).ok()
            })
            .collect()
    }

    async fn heal(&mut self) -> Result<String, RunError> {
        self.history.heal();
        let mut said = self.redis.heal().await?;
        self.paused.clear();
        let stopped: Vec<usize> = self.stopped.keys().copied().collect();
        for node in stopped {
            said.push(self.resume_node(node)?);
        }
        self.blocked.clear();
        self.down.clear();
        for proxy in self.proxies.values() {
            proxy.set_blocked(Direction::ToServer, false);
            proxy.set_blocked(Direction::ToNode, false);
            proxy.set_refusing(false);
            proxy.set_loss(0.0);
        }
        said.push("every link flowing, loss off".to_string());
        if let Some(etcd) = self.etcd.as_mut() {
            said.push(etcd::heal(etcd).await?);
        }
        if let Some(run) = self.zookeeper.as_mut() {
            said.push(zookeeper::pause(run, false)?);
        }
        let started: Vec<usize> = self.incarnations.keys().copied().collect();
        for node in started {
            if self.supervisor.live(&self.node_name(node)).is_empty() {
                said.push(self.spawn(node)?);
            }
        }
        Ok(said.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::child_seed;

    #[test]
    fn child_seeds_keep_the_values_of_the_lab_s_former_copy_of_the_mixer() {
        // Values of the splitmix64 fold the lab carried before it used the
        // simulator's `mix64`: a proxy's and a node's seed must not move.
        assert_eq!(child_seed(7, &[1, 2]), 0x0fab_8811_f387_664f);
        assert_eq!(child_seed(42, &[u64::MAX, 3, 1]), 0x9c6f_daaa_7d72_b67f);
    }
}
