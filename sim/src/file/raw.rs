//! The scenario file as serde reads it: every key optional where it has a
//! default, values kept with their spans, unknown keys refused.

use serde::Deserialize;
use toml::Spanned;

/// A seed: a TOML integer, or a string of decimal digits for the seeds
/// above `i64::MAX` that TOML integers cannot hold (see `values::seed_value`).
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawSeed {
    Integer(i64),
    Text(String),
}

/// One duration or a `[low, high]` range.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawSpan {
    One(String),
    Range(Vec<String>),
}

/// The whole file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) name: Spanned<String>,
    pub(super) description: Option<String>,
    pub(super) seed: Option<Spanned<RawSeed>>,
    pub(super) duration: Spanned<String>,
    pub(super) heal_at: Option<Spanned<String>>,
    pub(super) election: Option<RawElection>,
    pub(super) membership: Option<RawMembership>,
    pub(super) work: Option<RawWork>,
    pub(super) network: Option<RawNetwork>,
    pub(super) client: Option<RawClient>,
    pub(super) downstream: Option<RawDownstream>,
    pub(super) store: Option<RawStore>,
    #[serde(default)]
    pub(super) node: Vec<Spanned<RawNode>>,
    #[serde(default)]
    pub(super) fault: Vec<Spanned<RawFault>>,
    pub(super) expect: Option<RawExpect>,
}

/// `[election]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawElection {
    pub(super) role: Option<Spanned<String>>,
    pub(super) lease_ttl: Option<Spanned<String>>,
    pub(super) renew_interval: Option<Spanned<String>>,
    pub(super) retry_interval: Option<Spanned<String>>,
    pub(super) safety_margin: Option<Spanned<String>>,
    pub(super) rejoin_delay: Option<Spanned<String>>,
    pub(super) release_on_deadline: Option<bool>,
    pub(super) jitter: Option<Spanned<f64>>,
    /// The lock design (`fenced` by default) and each design's settings.
    pub(super) protocol: Option<Spanned<String>>,
    #[serde(rename = "connection-lock")]
    pub(super) connection_lock: Option<Spanned<toml::Table>>,
    #[serde(rename = "client-go")]
    pub(super) client_go: Option<Spanned<toml::Table>>,
    pub(super) etcd: Option<Spanned<toml::Table>>,
    pub(super) redlock: Option<Spanned<toml::Table>>,
    pub(super) zookeeper: Option<Spanned<toml::Table>>,
    pub(super) dynamodb: Option<Spanned<toml::Table>>,
}

/// `[membership]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMembership {
    pub(super) heartbeat_interval: Option<Spanned<String>>,
    pub(super) liveness_ttl: Option<Spanned<String>>,
}

/// `[work]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWork {
    pub(super) write_interval: Option<Spanned<String>>,
    pub(super) work_duration: Option<Spanned<String>>,
    pub(super) resource: Option<Spanned<String>>,
    pub(super) write_retries: Option<Spanned<i64>>,
}

/// `[client]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClient {
    pub(super) transport: Option<RawTransport>,
    pub(super) connect_timeout: Option<Spanned<String>>,
    pub(super) query_timeout: Option<Spanned<String>>,
    pub(super) query_grace: Option<Spanned<String>>,
}

/// `[client] transport`.
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(super) enum RawTransport {
    Sessions,
    Datagrams,
}

/// `[network]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNetwork {
    pub(super) latency: Option<Spanned<RawSpan>>,
    pub(super) loss: Option<Spanned<f64>>,
    pub(super) duplicate: Option<Spanned<f64>>,
    pub(super) retransmit_timeout: Option<Spanned<String>>,
    pub(super) script: Option<RawScript>,
}

/// `[network.script]`: a schedule `fenced-sim verify` found.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScript {
    pub(super) latency: Spanned<String>,
    pub(super) choices: Option<Vec<RawChoice>>,
    pub(super) reorder: Option<Vec<u64>>,
}

/// One entry of `[network.script] choices`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawChoice {
    pub(super) draw: u64,
    pub(super) latency: Option<Spanned<String>>,
    pub(super) lost: Option<bool>,
    pub(super) duplicate: Option<Spanned<String>>,
}

/// `[downstream]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDownstream {
    pub(super) fencing: Option<bool>,
    pub(super) durable: Option<bool>,
}

/// `[store]`: the lease store.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStore {
    pub(super) durable: Option<bool>,
    pub(super) clock: Option<RawStoreClock>,
}

/// `[store] clock`.
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(super) enum RawStoreClock {
    Wall,
    Monotonic,
}

/// One `[[node]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNode {
    pub(super) id: Spanned<String>,
    pub(super) count: Option<Spanned<i64>>,
    pub(super) clock_offset: Option<Spanned<String>>,
    pub(super) clock_drift: Option<Spanned<f64>>,
    pub(super) start_at: Option<Spanned<String>>,
    /// This node's own settings of the scenario's design (`[node.client-go]`).
    #[serde(rename = "connection-lock")]
    pub(super) connection_lock: Option<Spanned<toml::Table>>,
    #[serde(rename = "client-go")]
    pub(super) client_go: Option<Spanned<toml::Table>>,
    pub(super) etcd: Option<Spanned<toml::Table>>,
    pub(super) redlock: Option<Spanned<toml::Table>>,
    pub(super) zookeeper: Option<Spanned<toml::Table>>,
    pub(super) dynamodb: Option<Spanned<toml::Table>>,
}

/// One `[[fault]]`: every key any kind takes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFault {
    pub(super) kind: Spanned<String>,
    pub(super) node: Option<Spanned<String>>,
    pub(super) from: Option<Spanned<String>>,
    pub(super) to: Option<Spanned<String>>,
    pub(super) groups: Option<Spanned<Vec<Vec<String>>>>,
    /// A duration, or an anchor's table (`{ event = "work-started", ... }`).
    pub(super) at: Option<Spanned<toml::Value>>,
    pub(super) duration: Option<Spanned<RawSpan>>,
    pub(super) every: Option<Spanned<String>>,
    pub(super) restart_after: Option<Spanned<String>>,
    /// `restart`: whether the server's state survives.
    pub(super) durable: Option<Spanned<bool>>,
    /// `clock-jump`, `clock-slew`, `clock-strobe`: the step, signed.
    pub(super) by: Option<Spanned<String>>,
    /// `clock-slew`: the slew rate, a fraction.
    pub(super) rate: Option<Spanned<f64>>,
    /// `clock-strobe`: the time between flips.
    pub(super) period: Option<Spanned<String>>,
}

impl RawFault {
    /// Whether the fault gives the key `field` (any key but `kind`).
    pub(super) fn has(&self, field: &str) -> bool {
        match field {
            "node" => self.node.is_some(),
            "from" => self.from.is_some(),
            "to" => self.to.is_some(),
            "groups" => self.groups.is_some(),
            "at" => self.at.is_some(),
            "duration" => self.duration.is_some(),
            "every" => self.every.is_some(),
            "restart_after" => self.restart_after.is_some(),
            "durable" => self.durable.is_some(),
            "by" => self.by.is_some(),
            "rate" => self.rate.is_some(),
            "period" => self.period.is_some(),
            other => unreachable!("`{other}` is not a key of [[fault]]"),
        }
    }
}

/// `[expect]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExpect {
    pub(super) split_brain: Option<bool>,
    pub(super) violations: Option<Spanned<i64>>,
    pub(super) min_leader_changes: Option<Spanned<i64>>,
    pub(super) max_leader_changes: Option<Spanned<i64>>,
    pub(super) max_failover: Option<Spanned<String>>,
    pub(super) max_spurious_failovers: Option<Spanned<i64>>,
    pub(super) min_spurious_failovers: Option<Spanned<i64>>,
    pub(super) min_rejected_writes: Option<Spanned<i64>>,
    pub(super) max_overlap: Option<Spanned<String>>,
    pub(super) min_overlap: Option<Spanned<String>>,
    pub(super) max_token: Option<Spanned<i64>>,
    pub(super) min_membership_flaps: Option<Spanned<i64>>,
    pub(super) leader_at_end: Option<bool>,
    pub(super) anchors_begin: Option<bool>,
}
