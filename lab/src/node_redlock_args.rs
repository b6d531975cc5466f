//! The Redlock node's command line: `[election.redlock]`'s keys as flags
//! of `fenced-lab node --redlock`, read back into a checked
//! [`RedlockNode`], and written by the runner.

use std::time::Duration;

use clap::Args;
use fenced_zoo::redlock::{Redlock, RedlockSettings};
use fenced_zoo::Protocol;

use super::super::errors::{bad, NodeError};

/// What a Redlock node is told: the model's settings (scaled) and where
/// each instance is (its proxy), in the instances' order.
#[derive(Clone, Debug, PartialEq)]
pub struct RedlockNode {
    /// The model's settings; `instances` is the number of URLs.
    pub settings: RedlockSettings,
    /// `redis://127.0.0.1:PORT/`, one per instance.
    pub instances: Vec<String>,
}

fn duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("{text:?}: {e}"))
}

/// The flags of `fenced-lab node --redlock` (`[election.redlock]`'s keys).
#[derive(Args, Debug, Clone)]
pub struct RedlockArgs {
    /// Follow Redlock (`fenced_zoo::redlock`) against the `--redis-url`
    /// instances instead of the fenced elector; every `--redlock-*` flag is
    /// then required.
    #[arg(long, requires_all = [
        "redis_url", "redlock_ttl", "redlock_retry_count", "redlock_retry_delay",
        "redlock_retry_jitter", "redlock_redis_timeout", "redlock_extend_interval",
        "redlock_reacquire_interval",
    ])]
    redlock: bool,
    /// One Redis instance (repeat: one per instance, in order).
    #[arg(long, value_name = "URL")]
    redis_url: Vec<String>,
    /// The key's TTL (whole milliseconds).
    #[arg(long, value_parser = duration)]
    redlock_ttl: Option<Duration>,
    /// Extra tries after the first.
    #[arg(long)]
    redlock_retry_count: Option<u32>,
    /// Base sleep between tries (whole milliseconds).
    #[arg(long, value_parser = duration)]
    redlock_retry_delay: Option<Duration>,
    /// Random extra sleep between tries (whole milliseconds).
    #[arg(long, value_parser = duration)]
    redlock_retry_jitter: Option<Duration>,
    /// Per-instance call timeout.
    #[arg(long, value_parser = duration)]
    redlock_redis_timeout: Option<Duration>,
    /// How often the leader extends.
    #[arg(long, value_parser = duration)]
    redlock_extend_interval: Option<Duration>,
    /// Extend only where the key still holds the value.
    #[arg(long)]
    redlock_extend_only_if_locked: bool,
    /// Before calling `lock` again after it returned false.
    #[arg(long, value_parser = duration)]
    redlock_reacquire_interval: Option<Duration>,
}

/// The Redlock settings of `args`, when `--redlock`: validated as the
/// model validates them; TTL and retry sleeps in whole milliseconds.
pub(in crate::node) fn settings(args: &RedlockArgs) -> Result<Option<RedlockNode>, NodeError> {
    if !args.redlock {
        return Ok(None);
    }
    let need = |flag: &str, value: Option<Duration>| {
        value.ok_or_else(|| bad(format!("--redlock needs --{flag}")))
    };
    let instances =
        u16::try_from(args.redis_url.len()).map_err(|_| bad("--redis-url: too many instances"))?;
    let settings = RedlockSettings {
        instances,
        ttl: need("redlock-ttl", args.redlock_ttl)?,
        retry_count: args
            .redlock_retry_count
            .ok_or_else(|| bad("--redlock needs --redlock-retry-count"))?,
        retry_delay: need("redlock-retry-delay", args.redlock_retry_delay)?,
        retry_jitter: need("redlock-retry-jitter", args.redlock_retry_jitter)?,
        redis_timeout: need("redlock-redis-timeout", args.redlock_redis_timeout)?,
        extend_interval: need("redlock-extend-interval", args.redlock_extend_interval)?,
        extend_only_if_locked: args.redlock_extend_only_if_locked,
        reacquire_interval: need(
            "redlock-reacquire-interval",
            args.redlock_reacquire_interval,
        )?,
    };
    <Redlock as Protocol>::validate(&settings).map_err(|e| bad(format!("--redlock: {e}")))?;
    for (flag, value) in [
        ("--redlock-ttl", settings.ttl),
        ("--redlock-retry-delay", settings.retry_delay),
        ("--redlock-retry-jitter", settings.retry_jitter),
    ] {
        if value.subsec_nanos() % 1_000_000 != 0 {
            return Err(bad(format!(
                "{flag} {value:?}: redlock-rb and Redis take whole milliseconds"
            )));
        }
    }
    for url in &args.redis_url {
        redis::Client::open(url.as_str()).map_err(|e| bad(format!("--redis-url {url}: {e}")))?;
    }
    Ok(Some(RedlockNode {
        settings,
        instances: args.redis_url.clone(),
    }))
}

/// The command line of `node` (after the common flags).
pub(in crate::node) fn to_args(node: &RedlockNode) -> Vec<String> {
    let human = |d: Duration| humantime::format_duration(d).to_string();
    let s = &node.settings;
    let mut args = vec!["--redlock".to_string()];
    for url in &node.instances {
        args.extend(["--redis-url".to_string(), url.clone()]);
    }
    args.extend([
        "--redlock-ttl".to_string(),
        human(s.ttl),
        "--redlock-retry-count".to_string(),
        s.retry_count.to_string(),
        "--redlock-retry-delay".to_string(),
        human(s.retry_delay),
        "--redlock-retry-jitter".to_string(),
        human(s.retry_jitter),
        "--redlock-redis-timeout".to_string(),
        human(s.redis_timeout),
        "--redlock-extend-interval".to_string(),
        human(s.extend_interval),
        "--redlock-reacquire-interval".to_string(),
        human(s.reacquire_interval),
    ]);
    if s.extend_only_if_locked {
        args.push("--redlock-extend-only-if-locked".to_string());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_reads_back_and_bad_settings_are_refused() {
        // Proves what the runner writes is what the node reads, and that a
        // TTL Redis cannot take, or no instance, is bad input naming why.
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            redlock: RedlockArgs,
        }
        use clap::Parser;
        let node = RedlockNode {
            settings: RedlockSettings {
                instances: 2,
                ttl: Duration::from_millis(2000),
                retry_delay: Duration::from_millis(40),
                retry_jitter: Duration::from_millis(10),
                redis_timeout: Duration::from_millis(20),
                extend_interval: Duration::from_secs(1),
                reacquire_interval: Duration::from_millis(200),
                extend_only_if_locked: true,
                retry_count: 3,
            },
            instances: vec![
                "redis://127.0.0.1:1/".to_string(),
                "redis://127.0.0.1:2/".to_string(),
            ],
        };
        let line = std::iter::once("x".to_string()).chain(to_args(&node));
        let parsed = Wrapper::try_parse_from(line).expect("parses");
        assert_eq!(
            settings(&parsed.redlock).expect("valid"),
            Some(node.clone())
        );
        let mut line: Vec<String> = std::iter::once("x".to_string())
            .chain(to_args(&node))
            .collect();
        let ttl = line.iter().position(|a| a == "--redlock-ttl").expect("ttl") + 1;
        line[ttl] = "2000500us".to_string();
        let parsed = Wrapper::try_parse_from(line).expect("parses");
        let error = settings(&parsed.redlock).expect_err("not whole ms");
        assert!(error.to_string().contains("--redlock-ttl"), "{error}");
        let line: Vec<String> = std::iter::once("x".to_string())
            .chain(to_args(&node))
            .filter(|a| !a.starts_with("redis://") && a != "--redis-url")
            .collect();
        assert!(Wrapper::try_parse_from(line).is_err(), "no instance");
    }
}
