//! `[election] protocol` and the chosen design's own table
//! (`[election.client-go]`, `[election.redlock]`, ...): each key one setting
//! of the modelled library, unknown keys refused, durations in humantime
//! syntax. The same table of keys writes a scenario back ([`settings_toml`]).

use std::fmt;
use std::time::Duration;

use fenced_zoo::client_go::ClientGoSettings;
use fenced_zoo::connection_lock::PgSettings;
use fenced_zoo::dynamodb::DynamoDbSettings;
use fenced_zoo::etcd::EtcdSettings;
use fenced_zoo::redlock::RedlockSettings;
use fenced_zoo::zookeeper::{ErrorPolicy, ZooKeeperSettings};
use toml::{Spanned, Value};

use super::convert::{err, ConvertError};
use super::place::Spans;
use super::raw::RawElection;
use crate::scenario::ProtocolSpec;
use crate::units::{human, parse_duration, DurationError};

/// One key of a design's table: how to read it into the settings and how
/// to print it.
struct Key<S> {
    name: &'static str,
    set: fn(&mut S, &Value) -> Result<(), ValueError>,
    get: fn(&S) -> String,
}

/// Why a value of a design's table is refused; the loader places it at the
/// key.
#[derive(Debug)]
enum ValueError {
    /// Not a string.
    NotADurationString,
    /// A string, but not a span.
    Duration(DurationError),
    /// Not a boolean.
    NotAFlag,
    /// Not an integer.
    NotAWholeNumber,
    /// An integer the setting's type cannot hold.
    OutOfRange(i64),
    /// `error_policy` is neither name.
    NotAnErrorPolicy,
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::NotADurationString => {
                f.write_str("must be a duration string such as \"15s\"")
            }
            ValueError::Duration(e) => e.fmt(f),
            ValueError::NotAFlag => f.write_str("must be true or false"),
            ValueError::NotAWholeNumber => f.write_str("must be a whole number"),
            ValueError::OutOfRange(n) => write!(f, "{n} is out of range"),
            ValueError::NotAnErrorPolicy => f.write_str("must be \"standard\" or \"session\""),
        }
    }
}

impl std::error::Error for ValueError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ValueError::Duration(e) => Some(e),
            _ => None,
        }
    }
}

fn duration(v: &Value) -> Result<Duration, ValueError> {
    let text = v.as_str().ok_or(ValueError::NotADurationString)?;
    parse_duration(text).map_err(ValueError::Duration)
}

fn flag(v: &Value) -> Result<bool, ValueError> {
    v.as_bool().ok_or(ValueError::NotAFlag)
}

fn count<T: TryFrom<i64>>(v: &Value) -> Result<T, ValueError> {
    let n = v.as_integer().ok_or(ValueError::NotAWholeNumber)?;
    T::try_from(n).map_err(|_| ValueError::OutOfRange(n))
}

fn error_policy(v: &Value) -> Result<ErrorPolicy, ValueError> {
    v.as_str()
        .and_then(ErrorPolicy::from_name)
        .ok_or(ValueError::NotAnErrorPolicy)
}

fn quoted(d: Duration) -> String {
    format!("\"{}\"", human(d))
}

macro_rules! keys {
    ($settings:ty { $($name:ident: $kind:ident),* $(,)? }) => {
        &[$(Key::<$settings> {
            name: stringify!($name),
            set: |s, v| { s.$name = keys!(@read $kind, v)?; Ok(()) },
            get: |s| keys!(@write $kind, s.$name),
        }),*]
    };
    (@read duration, $v:expr) => { duration($v) };
    (@read flag, $v:expr) => { flag($v) };
    (@read count, $v:expr) => { count($v) };
    (@read error_policy, $v:expr) => { error_policy($v) };
    (@write duration, $x:expr) => { quoted($x) };
    (@write error_policy, $x:expr) => { format!("\"{}\"", $x.name()) };
    (@write flag, $x:expr) => { $x.to_string() };
    (@write count, $x:expr) => { $x.to_string() };
}

const PG: &[Key<PgSettings>] = keys!(PgSettings {
    tcp_keepalives_idle: duration,
    tcp_keepalives_interval: duration,
    tcp_keepalives_count: count,
    query_timeout: duration,
    connect_timeout: duration,
    retry_interval: duration,
    check_interval: duration,
});

const CLIENT_GO: &[Key<ClientGoSettings>] = keys!(ClientGoSettings {
    lease_duration: duration,
    renew_deadline: duration,
    retry_period: duration,
    release_on_cancel: flag,
    request_timeout: duration,
    pre_114872_own_lease_duration: flag,
    run_again: flag,
});

const ETCD: &[Key<EtcdSettings>] = keys!(EtcdSettings {
    session_ttl_secs: count,
    first_keepalive_timeout: duration,
    keepalive_retry: duration,
    request_timeout: duration,
    restart_delay: duration,
});

const REDLOCK: &[Key<RedlockSettings>] = keys!(RedlockSettings {
    instances: count,
    ttl: duration,
    retry_count: count,
    retry_delay: duration,
    retry_jitter: duration,
    redis_timeout: duration,
    extend_interval: duration,
    extend_only_if_locked: flag,
    reacquire_interval: duration,
});

const DYNAMODB: &[Key<DynamoDbSettings>] = keys!(DynamoDbSettings {
    lease_duration: duration,
    heartbeat_period: duration,
    refresh_period: duration,
    additional_time_to_wait: duration,
    delete_lock_on_release: flag,
    request_timeout: duration,
});

const ZOOKEEPER: &[Key<ZooKeeperSettings>] = keys!(ZooKeeperSettings {
    session_timeout: duration,
    error_policy: error_policy,
    simulated_session_expiration_percent: count,
    client_session_expiry: flag,
    tick_time: duration,
    reconnect_spin: duration,
    reconnect_sleep: duration,
    max_send_ping_interval: duration,
});

/// Reads `table` (the design's `[election.<name>]`) into `settings`.
fn read<S>(
    section: &str,
    table: &Spanned<toml::Table>,
    keys: &[Key<S>],
    settings: &mut S,
    spans: &mut Spans,
) -> Result<(), ConvertError> {
    spans.note(section, table);
    let name = section.rsplit('.').next().unwrap_or(section);
    for (key, value) in table.get_ref() {
        let at = format!("{section}.{key}");
        let Some(k) = keys.iter().find(|k| k.name == key) else {
            let known: Vec<&str> = keys.iter().map(|k| k.name).collect();
            return err(
                &at,
                table.span(),
                format!("unknown key `{key}`; {name} takes {}", known.join(", ")),
            );
        };
        (k.set)(settings, value).or_else(|why| err(&at, table.span(), why.to_string()))?;
    }
    Ok(())
}

/// The protocol `[election]` names, with its table's settings over the
/// library's defaults. A table for another design than the one named is
/// refused: it would silently do nothing.
pub(super) fn protocol(e: &RawElection, spans: &mut Spans) -> Result<ProtocolSpec, ConvertError> {
    let mut spec = match &e.protocol {
        None => ProtocolSpec::Fenced,
        Some(name) => {
            spans.note("election.protocol", name);
            ProtocolSpec::by_name(name.get_ref()).map_or_else(
                || {
                    err(
                        "election.protocol",
                        name.span(),
                        format!(
                            "unknown protocol `{}`; known: {}",
                            name.get_ref(),
                            ProtocolSpec::NAMES.join(", ")
                        ),
                    )
                },
                Ok,
            )?
        }
    };
    let tables = DesignTables {
        connection_lock: &e.connection_lock,
        client_go: &e.client_go,
        etcd: &e.etcd,
        redlock: &e.redlock,
        zookeeper: &e.zookeeper,
        dynamodb: &e.dynamodb,
    };
    apply_tables("election", &tables, &mut spec, spans)?;
    Ok(spec)
}

/// The designs' tables of one place (`[election]` or a `[[node]]`).
pub(super) struct DesignTables<'a> {
    pub(super) connection_lock: &'a Option<Spanned<toml::Table>>,
    pub(super) client_go: &'a Option<Spanned<toml::Table>>,
    pub(super) etcd: &'a Option<Spanned<toml::Table>>,
    pub(super) redlock: &'a Option<Spanned<toml::Table>>,
    pub(super) zookeeper: &'a Option<Spanned<toml::Table>>,
    pub(super) dynamodb: &'a Option<Spanned<toml::Table>>,
}

impl DesignTables<'_> {
    fn each(&self) -> [(&'static str, &Option<Spanned<toml::Table>>); 6] {
        [
            ("connection-lock", self.connection_lock),
            ("client-go", self.client_go),
            ("etcd", self.etcd),
            ("redlock", self.redlock),
            ("zookeeper", self.zookeeper),
            ("dynamodb", self.dynamodb),
        ]
    }

    /// Whether any design's table is there.
    pub(super) fn any(&self) -> bool {
        self.each().iter().any(|(_, t)| t.is_some())
    }
}

/// Applies the tables under `place` (`election`, `node[2]`) to `spec`: only
/// the table of `spec`'s own design is allowed.
pub(super) fn apply_tables(
    place: &str,
    tables: &DesignTables<'_>,
    spec: &mut ProtocolSpec,
    spans: &mut Spans,
) -> Result<(), ConvertError> {
    for (name, table) in tables.each() {
        let Some(table) = table else { continue };
        let section = format!("{place}.{name}");
        match (&mut *spec, name) {
            (ProtocolSpec::ConnectionLock(s), "connection-lock") => {
                read(&section, table, PG, s, spans)?
            }
            (ProtocolSpec::ClientGo(s), "client-go") => {
                read(&section, table, CLIENT_GO, s, spans)?;
                // `resourcelock.NewFromKubeconfig` (`resourcelock/interface.go`)
                // sets the REST client's timeout to `max(1 s, renewDeadline / 2)`:
                // a table that sets `renew_deadline` and not `request_timeout`
                // gets that, not the default's 5 s.
                let keys = table.get_ref();
                if keys.contains_key("renew_deadline") && !keys.contains_key("request_timeout") {
                    s.request_timeout = (s.renew_deadline / 2).max(Duration::from_secs(1));
                }
            }
            (ProtocolSpec::Etcd(s), "etcd") => read(&section, table, ETCD, s, spans)?,
            (ProtocolSpec::Redlock(s), "redlock") => read(&section, table, REDLOCK, s, spans)?,
            (ProtocolSpec::ZooKeeper(s), "zookeeper") => {
                read(&section, table, ZOOKEEPER, s, spans)?
            }
            (ProtocolSpec::DynamoDb(s), "dynamodb") => read(&section, table, DYNAMODB, s, spans)?,
            _ => {
                return err(
                    &section,
                    table.span(),
                    format!(
                        "[{section}] configures {name}, but the scenario runs protocol `{}`; set \
                         `protocol = \"{name}\"` in [election] or remove the table",
                        spec.name()
                    ),
                )
            }
        }
    }
    Ok(())
}

/// The lines of `spec`'s table that differ from the library's defaults, as
/// `key = value` (empty for the fenced protocol or all-default settings).
pub(crate) fn settings_toml(spec: &ProtocolSpec) -> Vec<String> {
    let default = ProtocolSpec::by_name(spec.name()).unwrap_or_default();
    settings_diff(spec, &default)
}

/// The lines of `spec`'s table that differ from `base`'s (the same design),
/// as `key = value`.
pub(crate) fn settings_diff(spec: &ProtocolSpec, base: &ProtocolSpec) -> Vec<String> {
    fn diff<S>(s: &S, base: &S, keys: &[Key<S>]) -> Vec<String> {
        keys.iter()
            .filter(|k| (k.get)(s) != (k.get)(base))
            .map(|k| format!("{} = {}", k.name, (k.get)(s)))
            .collect()
    }
    use ProtocolSpec as P;
    match (spec, base) {
        (P::ConnectionLock(s), P::ConnectionLock(b)) => diff(s, b, PG),
        (P::ClientGo(s), P::ClientGo(b)) => diff(s, b, CLIENT_GO),
        (P::Etcd(s), P::Etcd(b)) => diff(s, b, ETCD),
        (P::Redlock(s), P::Redlock(b)) => diff(s, b, REDLOCK),
        (P::ZooKeeper(s), P::ZooKeeper(b)) => diff(s, b, ZOOKEEPER),
        (P::DynamoDb(s), P::DynamoDb(b)) => diff(s, b, DYNAMODB),
        _ => Vec::new(),
    }
}
