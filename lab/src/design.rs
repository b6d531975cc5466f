//! Which lock design a run's nodes follow (`[election] protocol`), with its
//! settings scaled as the run's, and what of that design the lab cannot
//! make real.
//!
//! Five designs run for real: the fenced protocol (this crate's tokio
//! elector over the PostgreSQL lease store), **`connection-lock`**, the
//! zoo's PostgreSQL advisory lock held for a session's life
//! (`fenced_zoo::connection_lock`; the node's client is
//! `lab/src/node_lock.rs`), **`redlock`** on N real `redis-server`s the run
//! starts (`fenced_zoo::redlock`; the node's client is
//! `lab/src/node_redlock.rs`, the design's scaling, servers and refusals
//! `lab/src/design_redlock.rs`), and **`etcd`**, `concurrency.Election` on
//! a session lease against a real single-member etcd the run starts
//! (`fenced_zoo::etcd`; the node is `lab/src/node_etcd.rs`, the settings'
//! scaling and refusals are [`crate::design_etcd`]'s), and **`zookeeper`**,
//! Curator's `LeaderLatch` on a real ZooKeeper (a quorum of one) the run starts
//! (`fenced_zoo::zookeeper`; the node is `lab/src/node_zookeeper.rs`, the
//! scaling, the server's `tickTime` and refusals
//! [`crate::design_zookeeper`]'s). The others are refused by name
//! ([`unplanned`]).
//!
//! # Scaling the connection lock's settings
//!
//! Every duration of `[election.connection-lock]` is scaled by the time
//! scale, as every other duration of the scenario is. The server's
//! keepalive settings are then **rounded to whole seconds, at least one**:
//! PostgreSQL's `tcp_keepalives_idle` and `tcp_keepalives_interval` are
//! integer settings in seconds (PostgreSQL docs, "Connection Settings"),
//! which it hands to Linux's `TCP_KEEPIDLE` and `TCP_KEEPINTVL`, themselves
//! in seconds (tcp(7)). The simulation beside the run is given the same
//! rounded values ([`scale_protocol`], used by
//! [`crate::judge::scaled_scenario`]), so both decide on the timers the
//! kernel really runs. `tcp_keepalives_count` is a count and is kept.

use std::time::Duration;

use fenced_sim::{FaultAction, HostId, ProtocolSpec, Resolution, Scenario, ServerId};
use fenced_zoo::connection_lock::PgSettings;
use fenced_zoo::etcd::EtcdSettings;
use fenced_zoo::redlock::RedlockSettings;
use fenced_zoo::zookeeper::ZooKeeperSettings;

use crate::plan::Server;
use crate::time_scale::TimeScale;

/// The design one node runs, with its settings scaled.
#[derive(Clone, Debug, PartialEq)]
pub enum Design {
    /// The fenced protocol: the elector's timings are the plan's
    /// [`NodeSettings`](crate::plan::NodeSettings).
    Fenced,
    /// The advisory lock held for a session's life, with these settings.
    ConnectionLock(PgSettings),
    /// Redlock on the run's Redis instances, with these settings.
    Redlock(RedlockSettings),
    /// etcd's `concurrency.Election`, with these settings.
    Etcd(EtcdSettings),
    /// Curator's `LeaderLatch` on ZooKeeper, with these settings.
    ZooKeeper(ZooKeeperSettings),
}

/// `spec` with every duration scaled by `scale` (the connection lock's
/// keepalives rounded as the module docs say, etcd's TTL as
/// [`crate::design_etcd`]'s); other designs unchanged
/// (the lab refuses them before anything is scaled).
pub fn scale_protocol(spec: &ProtocolSpec, scale: TimeScale) -> ProtocolSpec {
    match spec {
        ProtocolSpec::ConnectionLock(s) => {
            ProtocolSpec::ConnectionLock(scale_connection_lock(s, scale))
        }
        ProtocolSpec::Redlock(s) => ProtocolSpec::Redlock(crate::design_redlock::scale(s, scale)),
        ProtocolSpec::Etcd(s) => ProtocolSpec::Etcd(crate::design_etcd::scale_settings(s, scale)),
        ProtocolSpec::ZooKeeper(s) => {
            ProtocolSpec::ZooKeeper(crate::design_zookeeper::scale_settings(s, scale))
        }
        other => other.clone(),
    }
}

/// The connection lock's settings scaled by `scale`.
pub fn scale_connection_lock(s: &PgSettings, scale: TimeScale) -> PgSettings {
    PgSettings {
        tcp_keepalives_idle: whole_seconds(scale.scale(s.tcp_keepalives_idle)),
        tcp_keepalives_interval: whole_seconds(scale.scale(s.tcp_keepalives_interval)),
        tcp_keepalives_count: s.tcp_keepalives_count,
        query_timeout: scale.scale(s.query_timeout),
        connect_timeout: scale.scale(s.connect_timeout),
        retry_interval: scale.scale(s.retry_interval),
        check_interval: scale.scale(s.check_interval),
    }
}

/// The connection lock's client timings, by their `[election.
/// connection-lock]` keys: the lab's floors apply to them.
pub fn connection_lock_timings(s: &PgSettings) -> [(&'static str, Duration); 4] {
    [
        ("retry_interval", s.retry_interval),
        ("check_interval", s.check_interval),
        ("query_timeout", s.query_timeout),
        ("connect_timeout", s.connect_timeout),
    ]
}

/// `d` rounded to the nearest whole second, at least one: what
/// PostgreSQL's keepalive settings (and Linux's socket options) can hold.
fn whole_seconds(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs_f64().round().max(1.0) as u64)
}

/// The design node `node` of `scenario` runs: its own
/// `[node.<protocol>]` settings if it has them, else the election's.
/// `None` for a design the lab does not run ([`unplanned`] says why).
pub fn of_node(scenario: &Scenario, node: usize) -> Option<Design> {
    let spec = scenario.nodes[node]
        .protocol
        .as_ref()
        .unwrap_or(&scenario.election.protocol);
    match spec {
        ProtocolSpec::Fenced => Some(Design::Fenced),
        ProtocolSpec::ConnectionLock(s) => Some(Design::ConnectionLock(s.clone())),
        ProtocolSpec::Redlock(s) => Some(Design::Redlock(s.clone())),
        ProtocolSpec::Etcd(s) => Some(Design::Etcd(s.clone())),
        ProtocolSpec::ZooKeeper(s) => Some(Design::ZooKeeper(s.clone())),
        _ => None,
    }
}

/// The logical servers every node of a `spec` run links to, one proxy
/// each: Redlock's instances and the downstream, or the lease store and the
/// downstream.
pub fn servers(spec: &ProtocolSpec) -> Vec<Server> {
    match spec {
        ProtocolSpec::Redlock(s) => crate::design_redlock::servers(s),
        _ => Server::ALL.to_vec(),
    }
}

/// Why the lab cannot run `spec` for real, if it cannot.
pub fn unplanned(spec: &ProtocolSpec) -> Option<String> {
    match spec {
        ProtocolSpec::Fenced
        | ProtocolSpec::ConnectionLock(_)
        | ProtocolSpec::Redlock(_)
        | ProtocolSpec::Etcd(_)
        | ProtocolSpec::ZooKeeper(_) => None,
        ProtocolSpec::ClientGo(_) | ProtocolSpec::DynamoDb(_) => Some(format!(
            "`{}` needs a Kubernetes API server or DynamoDB, which this machine does not have; \
             it stays simulated only (no mock server stands in for it)",
            spec.name()
        )),
    }
}

/// How long a follower of `scenario`'s design waits between attempts: the
/// phase a failover gap may lose to its tick (the fenced elector's
/// `retry_interval`, the connection lock's own).
pub fn follower_retry(scenario: &Scenario) -> Duration {
    match &scenario.election.protocol {
        ProtocolSpec::Fenced => scenario.election.retry_interval,
        other => other
            .timescale()
            .map_or(scenario.election.retry_interval, |(_, retry)| retry),
    }
}

/// Why the lab cannot make fault `resolution` real for the connection lock
/// in a scenario of `nodes` nodes, if it cannot.
///
/// The lab stalls a link in its TCP proxy, in user space: the proxy's own
/// socket to PostgreSQL stays open, and the kernel that holds it answers
/// the server's keepalive probes whatever the proxy forwards. So a cut,
/// an isolation, a partition or a pause touching PostgreSQL's links can
/// never end in the server's keepalive verdict — the very thing the model
/// says such a fault leads to (`fenced_zoo::connection_lock`, "the backend
/// only learns its client is gone when the kernel gives up on the
/// connection"). Making them real needs packets dropped below TCP (a
/// packet filter on loopback), which this machine does not have. A step of
/// PostgreSQL's wall clock moves nothing the design decides (its timers
/// are the kernel's, on the monotonic clock; the simulator records the
/// step as `moved: false`): there is nothing to make real.
pub fn connection_lock_refusal(resolution: &Resolution, nodes: usize) -> Option<String> {
    let (Resolution::Scheduled(fault) | Resolution::Anchored { fault, .. }) = resolution else {
        return None;
    };
    const LOCK: HostId = HostId::Server(ServerId::Lock(0));
    let is_node = |host: HostId| matches!(host, HostId::Node(_));
    let touches_lock = match &fault.start {
        FaultAction::Pause { host } => *host == LOCK,
        FaultAction::Isolate { host } => *host == LOCK || is_node(*host),
        FaultAction::Cut { from, to } => *from == LOCK || *to == LOCK,
        FaultAction::Partition(partition) => {
            (0..nodes).any(|node| partition.separates(HostId::Node(node as u32), LOCK))
        }
        FaultAction::ClockJump { host, .. }
        | FaultAction::ClockSlew { host, .. }
        | FaultAction::ClockStrobe { host, .. }
            if *host == LOCK =>
        {
            return Some(
                "a step of PostgreSQL's wall clock moves nothing the connection lock decides \
                 (its keepalive and retransmission timers are the kernel's, on the monotonic \
                 clock; the simulator records it as `moved: false`): nothing to make real"
                    .to_string(),
            );
        }
        _ => false,
    };
    touches_lock.then(|| {
        "it stalls PostgreSQL's link in the lab's TCP proxy, whose own socket stays open: its \
         kernel answers the server's keepalive probes whatever the proxy forwards, so the \
         server's keepalive verdict, which the model's link fault leads to, can never come for \
         real (that needs packets dropped below TCP, by a packet filter this machine does not \
         have)"
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keepalives_scale_to_whole_seconds_and_the_rest_scales_exactly() {
        // Proves the rounding the module docs promise: Linux's defaults at
        // 0.1 give 720 s and 8 s (7.5 rounded), a count kept, at least one
        // second however small, and the client's timings scaled exactly.
        let scale = TimeScale::new(0.1).expect("valid");
        let scaled = scale_connection_lock(&PgSettings::default(), scale);
        assert_eq!(scaled.tcp_keepalives_idle, Duration::from_secs(720));
        assert_eq!(scaled.tcp_keepalives_interval, Duration::from_secs(8));
        assert_eq!(scaled.tcp_keepalives_count, 9);
        assert_eq!(scaled.retry_interval, Duration::from_millis(500));
        assert_eq!(scaled.check_interval, Duration::from_secs(1));
        assert_eq!(scaled.query_timeout, Duration::from_millis(92_460));
        let tiny = TimeScale::new(0.001).expect("valid");
        let scaled = scale_connection_lock(&PgSettings::default(), tiny);
        assert_eq!(scaled.tcp_keepalives_interval, Duration::from_secs(1));
    }

    #[test]
    fn only_fenced_connection_lock_redlock_etcd_and_zookeeper_are_planned() {
        // Proves the refusal names each other design and why.
        for name in ProtocolSpec::NAMES {
            let spec = ProtocolSpec::by_name(name).expect("a known name");
            let refused = unplanned(&spec);
            match name {
                "fenced" | "connection-lock" | "redlock" | "etcd" | "zookeeper" => {
                    assert_eq!(refused, None, "{name}")
                }
                _ => assert!(refused.is_some_and(|why| why.contains(name)), "{name}"),
            }
        }
    }
}
