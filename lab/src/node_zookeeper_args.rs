//! The ZooKeeper node's command line: `[election.zookeeper]`'s keys as
//! flags of `fenced-lab node --zookeeper`, with the latch path and the
//! token's zxid base the runner gives, read back into a checked
//! [`ZooKeeperNode`], and written by the runner.

use std::time::Duration;

use clap::Args;
use fenced_zoo::zookeeper::{ErrorPolicy, ZooKeeper, ZooKeeperSettings};
use fenced_zoo::Protocol;

use super::super::errors::{bad, NodeError};

/// What a ZooKeeper node is told: the model's settings (scaled), the
/// latch path, and the server's last zxid before the nodes started (the
/// token's base, `lab/src/node_zookeeper.rs`, "The token").
#[derive(Clone, Debug, PartialEq)]
pub struct ZooKeeperNode {
    /// The model's settings.
    pub settings: ZooKeeperSettings,
    /// `latchPath`.
    pub latch_path: String,
    /// The server's last zxid when the runner made the latch path.
    pub zxid_base: u64,
}

fn duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("{text:?}: {e}"))
}

/// The flags of `fenced-lab node --zookeeper`.
#[derive(Args, Debug, Clone)]
pub struct ZooKeeperArgs {
    /// Follow Curator's `LeaderLatch` on ZooKeeper (`fenced_zoo::zookeeper`,
    /// driven by `lab/src/node_zookeeper.rs`) against the server at
    /// `--lease-url` (`host:port`, the node's proxy) instead of the fenced
    /// elector; every `--zk-*` flag but `--zk-no-client-expiry` is then
    /// required.
    #[arg(long, requires_all = [
        "zk_session_timeout", "zk_tick_time", "zk_reconnect_spin", "zk_reconnect_sleep",
        "zk_max_send_ping_interval", "zk_error_policy",
        "zk_simulated_expiration_percent", "zk_latch_path", "zk_zxid_base",
    ])]
    zookeeper: bool,
    /// The session timeout asked for (`session_timeout`).
    #[arg(long, value_parser = duration)]
    zk_session_timeout: Option<Duration>,
    /// The server's `tickTime` (`tick_time`).
    #[arg(long, value_parser = duration)]
    zk_tick_time: Option<Duration>,
    /// `hostProvider.next(1000)`'s pause (`reconnect_spin`).
    #[arg(long, value_parser = duration)]
    zk_reconnect_spin: Option<Duration>,
    /// The bound of `startConnect`'s random sleep (`reconnect_sleep`).
    #[arg(long, value_parser = duration)]
    zk_reconnect_sleep: Option<Duration>,
    /// `MAX_SEND_PING_INTERVAL` (`max_send_ping_interval`).
    #[arg(long, value_parser = duration)]
    zk_max_send_ping_interval: Option<Duration>,
    /// `standard` or `session` (`error_policy`).
    #[arg(long)]
    zk_error_policy: Option<String>,
    /// `simulated_session_expiration_percent`.
    #[arg(long)]
    zk_simulated_expiration_percent: Option<u32>,
    /// Without ZOOKEEPER-4508's client-side expiry
    /// (`client_session_expiry = false`).
    #[arg(long)]
    zk_no_client_expiry: bool,
    /// The latch path.
    #[arg(long)]
    zk_latch_path: Option<String>,
    /// The server's last zxid before the nodes started.
    #[arg(long)]
    zk_zxid_base: Option<u64>,
}

/// The node's settings of `args`, when `--zookeeper`: validated as the
/// model validates them.
pub(in crate::node) fn settings(args: &ZooKeeperArgs) -> Result<Option<ZooKeeperNode>, NodeError> {
    if !args.zookeeper {
        return Ok(None);
    }
    let need = |flag: &str, value: Option<Duration>| {
        value.ok_or_else(|| bad(format!("--zookeeper needs --{flag}")))
    };
    let named = args.zk_error_policy.as_deref();
    let Some(error_policy) = named.and_then(ErrorPolicy::from_name) else {
        return Err(bad(format!(
            "--zk-error-policy {named:?}: `standard` or `session`"
        )));
    };
    let settings = ZooKeeperSettings {
        session_timeout: need("zk-session-timeout", args.zk_session_timeout)?,
        error_policy,
        simulated_session_expiration_percent: args
            .zk_simulated_expiration_percent
            .ok_or_else(|| bad("--zookeeper needs --zk-simulated-expiration-percent"))?,
        client_session_expiry: !args.zk_no_client_expiry,
        tick_time: need("zk-tick-time", args.zk_tick_time)?,
        reconnect_spin: need("zk-reconnect-spin", args.zk_reconnect_spin)?,
        reconnect_sleep: need("zk-reconnect-sleep", args.zk_reconnect_sleep)?,
        max_send_ping_interval: need("zk-max-send-ping-interval", args.zk_max_send_ping_interval)?,
    };
    <ZooKeeper as Protocol>::validate(&settings).map_err(|e| bad(format!("--zookeeper: {e}")))?;
    let latch_path = args
        .zk_latch_path
        .clone()
        .filter(|p| p.starts_with('/') && !p.ends_with('/'))
        .ok_or_else(|| bad("--zk-latch-path: an absolute path, not ending in /"))?;
    Ok(Some(ZooKeeperNode {
        settings,
        latch_path,
        zxid_base: args
            .zk_zxid_base
            .ok_or_else(|| bad("--zookeeper needs --zk-zxid-base"))?,
    }))
}

/// The flags that give a node `node`.
pub fn to_args(node: &ZooKeeperNode, human: impl Fn(Duration) -> String) -> Vec<String> {
    let s = &node.settings;
    let mut args = vec![
        "--zookeeper".to_string(),
        "--zk-session-timeout".into(),
        human(s.session_timeout),
        "--zk-tick-time".into(),
        human(s.tick_time),
        "--zk-reconnect-spin".into(),
        human(s.reconnect_spin),
        "--zk-reconnect-sleep".into(),
        human(s.reconnect_sleep),
        "--zk-max-send-ping-interval".into(),
        human(s.max_send_ping_interval),
        "--zk-error-policy".into(),
        s.error_policy.name().into(),
        "--zk-simulated-expiration-percent".into(),
        s.simulated_session_expiration_percent.to_string(),
        "--zk-latch-path".into(),
        node.latch_path.clone(),
        "--zk-zxid-base".into(),
        node.zxid_base.to_string(),
    ];
    if !s.client_session_expiry {
        args.push("--zk-no-client-expiry".into());
    }
    args
}

#[cfg(test)]
mod tests {
    use crate::node::{NodeConfig, NodeError};

    fn zookeeper_node(session: &str, policy: &str, latch: &str) -> Result<NodeConfig, NodeError> {
        crate::node::test_node_config(
            "2",
            "127.0.0.1:1",
            false,
            &[
                "--zookeeper",
                "--zk-session-timeout",
                session,
                "--zk-tick-time",
                "300ms",
                "--zk-reconnect-spin",
                "100ms",
                "--zk-reconnect-sleep",
                "100ms",
                "--zk-max-send-ping-interval",
                "1s",
                "--zk-error-policy",
                policy,
                "--zk-simulated-expiration-percent",
                "100",
                "--zk-latch-path",
                latch,
                "--zk-zxid-base",
                "4294967300",
            ],
        )
    }

    #[test]
    fn the_zookeeper_flags_read_back_as_the_same_config_and_bad_ones_are_refused() {
        // Proves what the runner writes for a ZooKeeper node is what the
        // node reads, and that the model's own checks name the setting.
        let config = zookeeper_node("6s", "session", "/fenced-lab/s/reports").expect("valid");
        let node = config.zookeeper.clone().expect("a ZooKeeper node");
        assert_eq!(
            node.settings.session_timeout,
            std::time::Duration::from_secs(6)
        );
        assert_eq!(node.zxid_base, 4_294_967_300);
        assert_eq!(
            node.settings.reconnect_spin,
            std::time::Duration::from_millis(100)
        );
        assert_eq!(
            node.settings.reconnect_sleep,
            std::time::Duration::from_millis(100)
        );
        assert_eq!(
            node.settings.max_send_ping_interval,
            std::time::Duration::from_secs(1)
        );
        assert_eq!(crate::node::reparsed(&config).expect("valid"), config);
        let error = zookeeper_node("0s", "session", "/l").expect_err("a zero session");
        assert!(error.to_string().contains("session_timeout"), "{error}");
        let error = zookeeper_node("6s", "eager", "/l").expect_err("no such policy");
        assert!(error.to_string().contains("--zk-error-policy"), "{error}");
        let error = zookeeper_node("6s", "standard", "l/").expect_err("a relative path");
        assert!(error.to_string().contains("--zk-latch-path"), "{error}");
    }
}
