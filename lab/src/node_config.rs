//! The node program's command line and its configuration: the flags of
//! `fenced-lab node` ([`NodeArgs`]), read into a checked [`NodeConfig`], and
//! written back as the command line and environment the runner starts a
//! node with. Apart from the node's run (`lab/src/node.rs`) so that what a
//! node is told and what it does are read separately.

use super::*;

/// The environment variable of `--lease-url`.
pub const LEASE_URL_VAR: &str = "FENCED_LAB_LEASE_URL";
/// The environment variable of `--registry-url`.
pub const REGISTRY_URL_VAR: &str = "FENCED_LAB_REGISTRY_URL";
/// The environment variable of `--downstream-url`.
pub const DOWNSTREAM_URL_VAR: &str = "FENCED_LAB_DOWNSTREAM_URL";

/// The advisory-lock key a connection-lock node of the run with schema
/// `schema` uses for `role` (see `lab/src/node_lock.rs`, "The key"): for
/// tests and people looking at `pg_locks`.
pub fn connection_lock_key(schema: &str, role: &str) -> i64 {
    lock::key_of(&format!("{schema}/{role}"))
}

/// Reads a `--plant` value: `None` stays `None`; an unknown name is an error
/// naming the flag and the known bugs.
///
/// # Errors
/// The name is no [`fenced::PlantedBug`].
#[cfg(feature = "planted-bugs")]
pub fn parse_plant(name: Option<&str>) -> Result<Option<fenced::PlantedBug>, PlantFlagError> {
    name.map(|name| name.parse::<fenced::PlantedBug>().map_err(PlantFlagError))
        .transpose()
}

/// A `--plant` value that names no planted bug.
#[cfg(feature = "planted-bugs")]
#[derive(Debug)]
pub struct PlantFlagError(pub fenced::UnknownPlantedBug);

#[cfg(feature = "planted-bugs")]
impl std::fmt::Display for PlantFlagError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--plant: {}", self.0)
    }
}

#[cfg(feature = "planted-bugs")]
impl std::error::Error for PlantFlagError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

fn duration(text: &str) -> Result<Duration, DurationFlagError> {
    humantime::parse_duration(text).map_err(|source| DurationFlagError {
        text: text.to_string(),
        source,
    })
}

/// The command line of `fenced-lab node` (the runner writes it).
#[derive(Args, Debug, Clone)]
pub struct NodeArgs {
    /// The scenario node's id.
    #[arg(long)]
    node_id: String,
    /// Which life of the node this process is (1, 2, ...).
    #[arg(long)]
    incarnation: u32,
    /// PostgreSQL URL of the lease store (the node's proxy to it).
    #[arg(long, env = LEASE_URL_VAR, hide_env_values = true)]
    lease_url: String,
    /// PostgreSQL URL of the node registry.
    #[arg(long, env = REGISTRY_URL_VAR, hide_env_values = true)]
    registry_url: String,
    /// PostgreSQL URL of the downstream.
    #[arg(long, env = DOWNSTREAM_URL_VAR, hide_env_values = true)]
    downstream_url: String,
    /// The run's schema.
    #[arg(long)]
    schema: String,
    /// The role contended for.
    #[arg(long)]
    role: String,
    /// The downstream resource written.
    #[arg(long)]
    resource: String,
    /// Lease TTL.
    #[arg(long, value_parser = duration)]
    ttl: Duration,
    /// Renew interval.
    #[arg(long, value_parser = duration)]
    renew_interval: Duration,
    /// Retry interval.
    #[arg(long, value_parser = duration)]
    retry_interval: Duration,
    /// Safety margin (default: TTL / 10).
    #[arg(long, value_parser = duration)]
    safety_margin: Option<Duration>,
    /// Rejoin delay (default: TTL + 2 × retry interval).
    #[arg(long, value_parser = duration)]
    rejoin_delay: Option<Duration>,
    /// Keep the lease on a deadline step-down (default: release it).
    #[arg(long)]
    keep_lease_on_deadline: bool,
    /// Jitter fraction in [0, 1).
    #[arg(long, default_value_t = 0.0)]
    jitter: f64,
    /// Seed of the elector's jitter.
    #[arg(long, default_value_t = 0)]
    jitter_seed: u64,
    /// Heartbeat interval.
    #[arg(long, value_parser = duration)]
    heartbeat_interval: Duration,
    /// Registry liveness TTL.
    #[arg(long, value_parser = duration)]
    liveness_ttl: Duration,
    /// How often the leader starts a unit of work.
    #[arg(long, value_parser = duration)]
    write_interval: Duration,
    /// How long a unit takes from its leadership check to its write.
    #[arg(long, value_parser = duration)]
    work_ms: Duration,
    /// How long one PostgreSQL statement may take (the server's
    /// `statement_timeout`; the scenario's `[client] query_timeout`).
    #[arg(long, value_parser = duration)]
    query_timeout: Duration,
    /// How much longer the client waits for the server's cancellation
    /// (`[client] query_grace`).
    #[arg(long, value_parser = duration, default_value = "1s")]
    query_grace: Duration,
    /// How long opening a connection may take (`[client] connect_timeout`).
    #[arg(long, value_parser = duration)]
    connect_timeout: Option<Duration>,
    /// How many times a write whose connection was lost is sent again
    /// (`[work] write_retries`).
    #[arg(long, default_value_t = 1)]
    write_retries: u32,
    /// Follow the connection lock (`fenced_zoo::connection_lock`) through
    /// `--lease-url` instead of the fenced elector; every `--lock-*` and
    /// `--keepalives-*` flag is then required.
    #[arg(long, requires_all = [
        "keepalives_idle", "keepalives_interval", "keepalives_count",
        "lock_query_timeout", "lock_connect_timeout", "lock_retry_interval",
        "lock_check_interval",
    ])]
    connection_lock: bool,
    /// The server's `tcp_keepalives_idle` for the lock's session (whole
    /// seconds).
    #[arg(long, value_parser = duration)]
    keepalives_idle: Option<Duration>,
    /// The server's `tcp_keepalives_interval` (whole seconds).
    #[arg(long, value_parser = duration)]
    keepalives_interval: Option<Duration>,
    /// The server's `tcp_keepalives_count`.
    #[arg(long)]
    keepalives_count: Option<u32>,
    /// How long a lock query may go unanswered.
    #[arg(long, value_parser = duration)]
    lock_query_timeout: Option<Duration>,
    /// How long opening the lock's connection may take.
    #[arg(long, value_parser = duration)]
    lock_connect_timeout: Option<Duration>,
    /// Between lock attempts, and before reconnecting.
    #[arg(long, value_parser = duration)]
    lock_retry_interval: Option<Duration>,
    /// Between health queries while holding.
    #[arg(long, value_parser = duration)]
    lock_check_interval: Option<Duration>,
    /// Redlock's flags (`lab/src/node_redlock.rs`).
    #[command(flatten)]
    redlock: RedlockArgs,
    /// Follow etcd's `concurrency.Election` (`fenced_zoo::etcd`, driven by
    /// `lab/src/node_etcd.rs`) against the etcd at `--lease-url`
    /// (`http://host:port`, the node's proxy) instead of the fenced
    /// elector; every `--etcd-*` flag is then required.
    #[arg(long, conflicts_with = "connection_lock", requires_all = [
        "etcd_session_ttl", "etcd_first_keepalive_timeout", "etcd_keepalive_retry",
        "etcd_request_timeout", "etcd_restart_delay",
    ])]
    etcd: bool,
    /// The session lease's TTL, whole seconds (`session_ttl_secs`).
    #[arg(long)]
    etcd_session_ttl: Option<u64>,
    /// How long the first keep-alive may take.
    #[arg(long, value_parser = duration)]
    etcd_first_keepalive_timeout: Option<Duration>,
    /// Re-send period of an unanswered keep-alive.
    #[arg(long, value_parser = duration)]
    etcd_keepalive_retry: Option<Duration>,
    /// Unary request timeout and watch re-send period.
    #[arg(long, value_parser = duration)]
    etcd_request_timeout: Option<Duration>,
    /// Before a new session after the last one ended.
    #[arg(long, value_parser = duration)]
    etcd_restart_delay: Option<Duration>,
    /// ZooKeeper's flags (`lab/src/node_zookeeper_args.rs`).
    #[command(flatten)]
    zookeeper: super::ZooKeeperArgs,
    /// Write to the fenced table (the default).
    #[arg(long, conflicts_with = "unfenced")]
    fencing: bool,
    /// Write to the plain table, which accepts every write.
    #[arg(long)]
    unfenced: bool,
    /// Record this process's history (JSON lines) in this file.
    #[arg(long, value_name = "FILE")]
    history: Option<PathBuf>,
    /// The run's name, written in the history's header.
    #[arg(long)]
    run_name: Option<String>,
    /// Plant this deliberate bug in the elector (negative controls only).
    #[cfg(feature = "planted-bugs")]
    #[arg(long, value_name = "BUG", hide = true)]
    plant: Option<String>,
}

/// The connection lock's settings of `args`, when `--connection-lock`:
/// validated as the model validates them (no zero), keepalives in whole
/// seconds (PostgreSQL's settings are).
fn lock_settings(args: &NodeArgs) -> Result<Option<PgSettings>, NodeError> {
    if !args.connection_lock {
        return Ok(None);
    }
    let need = |flag: &str, value: Option<Duration>| {
        value.ok_or_else(|| bad(format!("--connection-lock needs --{flag}")))
    };
    let settings = PgSettings {
        tcp_keepalives_idle: need("keepalives-idle", args.keepalives_idle)?,
        tcp_keepalives_interval: need("keepalives-interval", args.keepalives_interval)?,
        tcp_keepalives_count: args
            .keepalives_count
            .ok_or_else(|| bad("--connection-lock needs --keepalives-count"))?,
        query_timeout: need("lock-query-timeout", args.lock_query_timeout)?,
        connect_timeout: need("lock-connect-timeout", args.lock_connect_timeout)?,
        retry_interval: need("lock-retry-interval", args.lock_retry_interval)?,
        check_interval: need("lock-check-interval", args.lock_check_interval)?,
    };
    <ConnectionLock as Protocol>::validate(&settings).map_err(bad)?;
    for (flag, value) in [
        ("--keepalives-idle", settings.tcp_keepalives_idle),
        ("--keepalives-interval", settings.tcp_keepalives_interval),
    ] {
        if value.subsec_nanos() != 0 {
            return Err(bad(format!(
                "{flag} {value:?}: PostgreSQL takes whole seconds"
            )));
        }
    }
    Ok(Some(settings))
}

/// etcd's settings of `args`, when `--etcd`: validated as the model
/// validates them.
fn etcd_settings(args: &NodeArgs) -> Result<Option<EtcdSettings>, NodeError> {
    if !args.etcd {
        return Ok(None);
    }
    let need = |flag: &str, value: Option<Duration>| {
        value.ok_or_else(|| bad(format!("--etcd needs --{flag}")))
    };
    let settings = EtcdSettings {
        session_ttl_secs: args
            .etcd_session_ttl
            .ok_or_else(|| bad("--etcd needs --etcd-session-ttl"))?,
        first_keepalive_timeout: need(
            "etcd-first-keepalive-timeout",
            args.etcd_first_keepalive_timeout,
        )?,
        keepalive_retry: need("etcd-keepalive-retry", args.etcd_keepalive_retry)?,
        request_timeout: need("etcd-request-timeout", args.etcd_request_timeout)?,
        restart_delay: need("etcd-restart-delay", args.etcd_restart_delay)?,
    };
    <Etcd as Protocol>::validate(&settings).map_err(|e| bad(format!("--etcd: {e}")))?;
    Ok(Some(settings))
}

/// Everything one node process needs, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeConfig {
    /// The node.
    pub node: NodeId,
    /// Its life number.
    pub incarnation: u32,
    /// Lease store URL.
    pub lease_url: String,
    /// Registry URL.
    pub registry_url: String,
    /// Downstream URL.
    pub downstream_url: String,
    /// The run's schema.
    pub namespace: Namespace,
    /// The role.
    pub role: Role,
    /// The resource written.
    pub resource: ResourceId,
    /// Elector timings (with this process's jitter seed).
    pub timings: ElectorTimings,
    /// Heartbeat interval.
    pub heartbeat_interval: Duration,
    /// Registry liveness TTL.
    pub liveness_ttl: Duration,
    /// How often the leader starts a unit.
    pub write_interval: Duration,
    /// How long a unit takes.
    pub work_duration: Duration,
    /// The statement timeout.
    pub query_timeout: Duration,
    /// How much longer the client waits for the server's cancellation.
    pub query_grace: Duration,
    /// The bound on opening a connection.
    pub connect_timeout: Duration,
    /// How many times a write whose connection was lost is sent again.
    pub write_retries: u32,
    /// Fenced table or plain table.
    pub fencing: bool,
    /// The connection lock's settings (scaled), when the node follows that
    /// design instead of the fenced elector.
    pub lock: Option<PgSettings>,
    /// Redlock's settings (scaled) and instances, when the node follows
    /// that design.
    pub redlock: Option<RedlockNode>,
    /// etcd's settings (scaled), when the node follows etcd's election
    /// through `lease_url` (an `http://` endpoint) instead.
    pub etcd: Option<EtcdSettings>,
    /// ZooKeeper's settings (scaled), latch path and zxid base, when the
    /// node follows Curator's `LeaderLatch` through `lease_url` (`host:port`).
    pub zookeeper: Option<super::ZooKeeperNode>,
    /// Where to record the history, if anywhere.
    pub history: Option<PathBuf>,
    /// The run's name, for the history's header.
    pub run_name: Option<String>,
    /// A deliberate bug planted in the elector (negative controls only).
    #[cfg(feature = "planted-bugs")]
    pub planted: Option<fenced::PlantedBug>,
}

impl NodeConfig {
    /// Validates the command line.
    ///
    /// # Errors
    /// [`NodeError::BadInput`] naming the flag.
    pub fn from_args(args: NodeArgs) -> Result<NodeConfig, NodeError> {
        let jitter = (args.jitter > 0.0).then_some(Jitter {
            fraction: args.jitter,
            seed: args.jitter_seed,
        });
        let lock = lock_settings(&args)?;
        let redlock = redlock::settings(&args.redlock)?;
        let etcd = etcd_settings(&args)?;
        let zookeeper = super::zookeeper::args::settings(&args.zookeeper)?;
        let config = NodeConfig {
            node: NodeId::new(&args.node_id).map_err(|e| bad(format!("--node-id: {e}")))?,
            incarnation: args.incarnation,
            lease_url: args.lease_url,
            registry_url: args.registry_url,
            downstream_url: args.downstream_url,
            namespace: Namespace::new(&args.schema, "")
                .map_err(|e| bad(format!("--schema: {e}")))?,
            role: Role::new(&args.role).map_err(|e| bad(format!("--role: {e}")))?,
            resource: ResourceId::new(&args.resource)
                .map_err(|e| bad(format!("--resource: {e}")))?,
            timings: ElectorTimings {
                lease_ttl: args.ttl,
                renew_interval: args.renew_interval,
                retry_interval: args.retry_interval,
                safety_margin: args.safety_margin,
                rejoin_delay: args.rejoin_delay,
                release_on_deadline: !args.keep_lease_on_deadline,
                jitter,
            },
            heartbeat_interval: args.heartbeat_interval,
            liveness_ttl: args.liveness_ttl,
            write_interval: args.write_interval,
            work_duration: args.work_ms,
            query_timeout: args.query_timeout,
            query_grace: args.query_grace,
            connect_timeout: args.connect_timeout.unwrap_or(args.query_timeout),
            write_retries: args.write_retries,
            fencing: !args.unfenced,
            lock,
            redlock,
            etcd,
            zookeeper,
            history: args.history,
            run_name: args.run_name,
            #[cfg(feature = "planted-bugs")]
            planted: parse_plant(args.plant.as_deref()).map_err(bad)?,
        };
        config.owner()?;
        for (flag, value) in [
            ("--heartbeat-interval", config.heartbeat_interval),
            ("--liveness-ttl", config.liveness_ttl),
            ("--write-interval", config.write_interval),
            ("--query-timeout", config.query_timeout),
            ("--connect-timeout", config.connect_timeout),
        ] {
            if value.is_zero() {
                return Err(bad(format!("{flag} must be above zero")));
            }
        }
        Ok(config)
    }

    /// This life's owner id, `node#incarnation`.
    ///
    /// # Errors
    /// The id would be too long.
    pub fn owner(&self) -> Result<OwnerId, NodeError> {
        OwnerId::new(format!("{}#{}", self.node, self.incarnation))
            .map_err(|e| bad(format!("owner id: {e}")))
    }

    /// The arguments (after `node`) and environment that make a process with
    /// this configuration.
    pub fn to_command(&self) -> (Vec<OsString>, Vec<(OsString, OsString)>) {
        let human = |d: Duration| humantime::format_duration(d).to_string();
        let mut args: Vec<String> = vec![
            "node".into(),
            "--node-id".into(),
            self.node.to_string(),
            "--incarnation".into(),
            self.incarnation.to_string(),
            "--schema".into(),
            self.namespace.schema().to_string(),
            "--role".into(),
            self.role.to_string(),
            "--resource".into(),
            self.resource.to_string(),
            "--ttl".into(),
            human(self.timings.lease_ttl),
            "--renew-interval".into(),
            human(self.timings.renew_interval),
            "--retry-interval".into(),
            human(self.timings.retry_interval),
            "--heartbeat-interval".into(),
            human(self.heartbeat_interval),
            "--liveness-ttl".into(),
            human(self.liveness_ttl),
            "--write-interval".into(),
            human(self.write_interval),
            "--work-ms".into(),
            human(self.work_duration),
            "--query-timeout".into(),
            human(self.query_timeout),
            "--query-grace".into(),
            human(self.query_grace),
            "--connect-timeout".into(),
            human(self.connect_timeout),
            "--write-retries".into(),
            self.write_retries.to_string(),
            if self.fencing {
                "--fencing"
            } else {
                "--unfenced"
            }
            .into(),
        ];
        if let Some(margin) = self.timings.safety_margin {
            args.extend(["--safety-margin".into(), human(margin)]);
        }
        if let Some(delay) = self.timings.rejoin_delay {
            args.extend(["--rejoin-delay".into(), human(delay)]);
        }
        if let Some(path) = &self.history {
            args.extend(["--history".into(), path.display().to_string()]);
        }
        if let Some(name) = &self.run_name {
            args.extend(["--run-name".into(), name.clone()]);
        }
        if !self.timings.release_on_deadline {
            args.push("--keep-lease-on-deadline".into());
        }
        #[cfg(feature = "planted-bugs")]
        if let Some(bug) = self.planted {
            args.extend(["--plant".into(), bug.name().to_string()]);
        }
        if let Some(lock) = &self.lock {
            args.extend([
                "--connection-lock".into(),
                "--keepalives-idle".into(),
                human(lock.tcp_keepalives_idle),
                "--keepalives-interval".into(),
                human(lock.tcp_keepalives_interval),
                "--keepalives-count".into(),
                lock.tcp_keepalives_count.to_string(),
                "--lock-query-timeout".into(),
                human(lock.query_timeout),
                "--lock-connect-timeout".into(),
                human(lock.connect_timeout),
                "--lock-retry-interval".into(),
                human(lock.retry_interval),
                "--lock-check-interval".into(),
                human(lock.check_interval),
            ]);
        }
        if let Some(node) = &self.redlock {
            args.extend(redlock::to_args(node));
        }
        if let Some(etcd) = &self.etcd {
            args.extend([
                "--etcd".into(),
                "--etcd-session-ttl".into(),
                etcd.session_ttl_secs.to_string(),
                "--etcd-first-keepalive-timeout".into(),
                human(etcd.first_keepalive_timeout),
                "--etcd-keepalive-retry".into(),
                human(etcd.keepalive_retry),
                "--etcd-request-timeout".into(),
                human(etcd.request_timeout),
                "--etcd-restart-delay".into(),
                human(etcd.restart_delay),
            ]);
        }
        if let Some(node) = &self.zookeeper {
            args.extend(super::zookeeper::args::to_args(node, human));
        }
        if let Some(jitter) = self.timings.jitter {
            args.extend([
                "--jitter".into(),
                jitter.fraction.to_string(),
                "--jitter-seed".into(),
                jitter.seed.to_string(),
            ]);
        }
        let env = [
            (LEASE_URL_VAR, &self.lease_url),
            (REGISTRY_URL_VAR, &self.registry_url),
            (DOWNSTREAM_URL_VAR, &self.downstream_url),
        ]
        .into_iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
        (args.into_iter().map(OsString::from).collect(), env)
    }
}
