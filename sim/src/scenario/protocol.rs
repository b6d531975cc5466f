//! Which lock design a scenario's nodes run (`[election] protocol`): the
//! fenced protocol of this crate, or one of the zoo's models of the designs
//! people run, with that design's own settings (`[election.<protocol>]`,
//! defaulting to the upstream library's defaults).

use std::fmt;

use fenced_zoo::client_go::{ClientGo, ClientGoSettings};
use fenced_zoo::connection_lock::{ConnectionLock, PgSettings};
use fenced_zoo::dynamodb::{DynamoDb, DynamoDbSettings};
use fenced_zoo::etcd::{Etcd, EtcdSettings};
use fenced_zoo::redlock::{Redlock, RedlockSettings};
use fenced_zoo::zookeeper::{ZooKeeper, ZooKeeperSettings};
use fenced_zoo::{Boundaries, Protocol, SettingsError};

/// A lock design and its settings.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ProtocolSpec {
    /// This crate's renewable lease with fencing tokens and its elector (the
    /// `[election]` keys configure it).
    #[default]
    Fenced,
    /// A PostgreSQL advisory lock held for a connection's life.
    ConnectionLock(PgSettings),
    /// A Kubernetes `Lease` through client-go's `leaderelection`.
    ClientGo(ClientGoSettings),
    /// etcd's `concurrency.Election` on a session lease.
    Etcd(EtcdSettings),
    /// Redlock over N independent Redis instances.
    Redlock(RedlockSettings),
    /// Apache Curator's `LeaderLatch` on ZooKeeper.
    ZooKeeper(ZooKeeperSettings),
    /// The DynamoDB lock client.
    DynamoDb(DynamoDbSettings),
}

impl ProtocolSpec {
    /// Every protocol's name, as `[election] protocol` spells it.
    pub const NAMES: [&'static str; 7] = [
        "fenced",
        ConnectionLock::NAME,
        ClientGo::NAME,
        Etcd::NAME,
        Redlock::NAME,
        ZooKeeper::NAME,
        DynamoDb::NAME,
    ];

    /// The protocol named `name`, with its library's default settings.
    pub fn by_name(name: &str) -> Option<ProtocolSpec> {
        Some(match name {
            "fenced" => ProtocolSpec::Fenced,
            ConnectionLock::NAME => ProtocolSpec::ConnectionLock(Default::default()),
            ClientGo::NAME => ProtocolSpec::ClientGo(Default::default()),
            Etcd::NAME => ProtocolSpec::Etcd(Default::default()),
            Redlock::NAME => ProtocolSpec::Redlock(Default::default()),
            ZooKeeper::NAME => ProtocolSpec::ZooKeeper(Default::default()),
            DynamoDb::NAME => ProtocolSpec::DynamoDb(Default::default()),
            _ => return None,
        })
    }

    /// Its name.
    pub fn name(&self) -> &'static str {
        match self {
            ProtocolSpec::Fenced => "fenced",
            ProtocolSpec::ConnectionLock(_) => ConnectionLock::NAME,
            ProtocolSpec::ClientGo(_) => ClientGo::NAME,
            ProtocolSpec::Etcd(_) => Etcd::NAME,
            ProtocolSpec::Redlock(_) => Redlock::NAME,
            ProtocolSpec::ZooKeeper(_) => ZooKeeper::NAME,
            ProtocolSpec::DynamoDb(_) => DynamoDb::NAME,
        }
    }

    /// Whether its leadership carries a token a downstream can fence with.
    pub fn has_token(&self) -> bool {
        match self {
            ProtocolSpec::Fenced => true,
            ProtocolSpec::ConnectionLock(_) => ConnectionLock::HAS_TOKEN,
            ProtocolSpec::ClientGo(_) => ClientGo::HAS_TOKEN,
            ProtocolSpec::Etcd(_) => Etcd::HAS_TOKEN,
            ProtocolSpec::Redlock(_) => Redlock::HAS_TOKEN,
            ProtocolSpec::ZooKeeper(_) => ZooKeeper::HAS_TOKEN,
            ProtocolSpec::DynamoDb(_) => DynamoDb::HAS_TOKEN,
        }
    }

    /// How long the design takes to give a silent holder's lock to another
    /// (its lease, session or TTL; PostgreSQL's keepalive verdict), and how
    /// often its clients retry: the timescale exploration draws its faults
    /// on. `None` for the fenced protocol (its `[election]` keys say).
    pub fn timescale(&self) -> Option<(std::time::Duration, std::time::Duration)> {
        use std::time::Duration;
        Some(match self {
            ProtocolSpec::Fenced => return None,
            ProtocolSpec::ConnectionLock(s) => (
                s.tcp_keepalives_idle + s.tcp_keepalives_interval * s.tcp_keepalives_count,
                s.retry_interval,
            ),
            ProtocolSpec::ClientGo(s) => (s.lease_duration, s.retry_period),
            ProtocolSpec::Etcd(s) => (Duration::from_secs(s.session_ttl_secs), s.keepalive_retry),
            ProtocolSpec::Redlock(s) => (s.ttl, s.retry_delay),
            ProtocolSpec::ZooKeeper(s) => (s.session_timeout, s.tick_time),
            ProtocolSpec::DynamoDb(s) => (s.lease_duration, s.refresh_period),
        })
    }

    /// The design's timing boundaries (its expiries and the fault lengths
    /// at which its outcome can change: [`Boundaries`], each design citing
    /// its model), where `fenced-sim verify` starts and sizes faults. `None`
    /// for the fenced protocol, whose `[election]` keys give them (the lease
    /// TTL, the validity, the renew interval, the rejoin delay).
    pub fn boundaries(&self) -> Option<Boundaries> {
        Some(match self {
            ProtocolSpec::Fenced => return None,
            ProtocolSpec::ConnectionLock(s) => ConnectionLock::boundaries(s),
            ProtocolSpec::ClientGo(s) => ClientGo::boundaries(s),
            ProtocolSpec::Etcd(s) => Etcd::boundaries(s),
            ProtocolSpec::Redlock(s) => Redlock::boundaries(s),
            ProtocolSpec::ZooKeeper(s) => ZooKeeper::boundaries(s),
            ProtocolSpec::DynamoDb(s) => DynamoDb::boundaries(s),
        })
    }

    /// Checks the settings the way the modelled library does.
    ///
    /// # Errors
    /// The library's own objection, naming the setting.
    pub fn validate(&self) -> Result<(), SettingsError> {
        match self {
            ProtocolSpec::Fenced => Ok(()),
            ProtocolSpec::ConnectionLock(s) => ConnectionLock::validate(s),
            ProtocolSpec::ClientGo(s) => ClientGo::validate(s),
            ProtocolSpec::Etcd(s) => Etcd::validate(s),
            ProtocolSpec::Redlock(s) => Redlock::validate(s),
            ProtocolSpec::ZooKeeper(s) => ZooKeeper::validate(s),
            ProtocolSpec::DynamoDb(s) => DynamoDb::validate(s),
        }
    }

    /// The names of its servers, which faults may target: `lease-store` and
    /// `downstream` for the fenced protocol; for the others their server's
    /// name (or `redis-1` … `redis-N`) — and `lease-store` still names the
    /// first, so protocol-neutral scenarios apply to every design.
    pub fn server_names(&self) -> Vec<String> {
        match self {
            ProtocolSpec::Fenced => Vec::new(),
            ProtocolSpec::ConnectionLock(s) => server_names::<ConnectionLock>(s, "postgres"),
            ProtocolSpec::ClientGo(s) => server_names::<ClientGo>(s, "apiserver"),
            ProtocolSpec::Etcd(s) => server_names::<Etcd>(s, "etcd"),
            ProtocolSpec::Redlock(s) => server_names::<Redlock>(s, "redis"),
            ProtocolSpec::ZooKeeper(s) => server_names::<ZooKeeper>(s, "zookeeper"),
            ProtocolSpec::DynamoDb(s) => server_names::<DynamoDb>(s, "dynamodb"),
        }
    }
}

/// The names of protocol `P`'s servers: its name for a single server
/// (`postgres`, `apiserver`, `etcd`, `zookeeper`, `dynamodb`), `redis-1` …
/// `redis-N` for Redlock's instances. A scenario may also call the first
/// `lease-store`.
fn server_names<P: Protocol>(settings: &P::Settings, single: &str) -> Vec<String> {
    let n = P::servers(settings);
    if n == 1 {
        return vec![single.to_string()];
    }
    (1..=n).map(|i| format!("{single}-{i}")).collect()
}

impl fmt::Display for ProtocolSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
