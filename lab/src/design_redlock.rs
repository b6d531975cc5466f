//! Redlock for real: its settings scaled as the run's, its servers (N
//! `redis-server`s the run starts, one proxy per node and instance), what
//! each instance must be started with, and the faults the lab cannot make
//! real for it.
//!
//! # Scaling, and what Redis and redlock-rb round
//!
//! Every duration of `[election.redlock]` is scaled by the time scale, as
//! every other duration of the scenario is, then:
//!
//! * **`ttl` is rounded to whole milliseconds** (at least 1): it travels as
//!   `SET … PX <ms>` (Redis takes an integer count of milliseconds, redis.io
//!   `SET`), and redlock-rb's `drift` and `validity` are integer
//!   milliseconds (`lib/redlock/client.rb` at f176e57, `drift`:
//!   `(ttl * CLOCK_DRIFT_FACTOR).to_i + 2`, and `lock_instances`). The
//!   drift is computed from the scaled TTL, so its `+ 2` ms is not scaled:
//!   the same in the real client and in the model, which is given the same
//!   scaled settings ([`crate::design::scale_protocol`]).
//! * **`retry_delay` and `retry_jitter` are rounded to whole
//!   milliseconds**: redlock-rb takes both in milliseconds and sleeps
//!   `(retry_delay + rand(retry_jitter)).to_f / 1000` (`attempt_retry_delay`),
//!   `rand` of an integer being an integer.
//! * `redis_timeout`, `extend_interval` and `reacquire_interval` are scaled
//!   exactly (a Float of seconds in redis-client; the others are the
//!   model's application loop).
//!
//! The lab's floor ([`crate::plan::MIN_RETRY_INTERVAL`], 20 ms) applies to
//! `redis_timeout`, `retry_delay`, `extend_interval` and
//! `reacquire_interval`: at `--time-scale 0.1` redlock-rb's 0.1 s
//! `redis_timeout` would be 10 ms, less than a loaded machine's scheduling
//! jitter, and is refused by name — run Redlock's scenarios at 0.2 or above
//! (the tests do).

use std::time::Duration;

use fenced_sim::{FaultAction, FaultPlan, HostId, ProtocolSpec, Resolution, ServerId};
use fenced_zoo::redlock::RedlockSettings;

use crate::plan::Server;
use crate::time_scale::TimeScale;

/// `s` scaled by `scale`, rounded as the module docs say.
pub fn scale(s: &RedlockSettings, scale: TimeScale) -> RedlockSettings {
    RedlockSettings {
        ttl: whole_ms(scale.scale(s.ttl)).max(Duration::from_millis(1)),
        retry_delay: whole_ms(scale.scale(s.retry_delay)),
        retry_jitter: whole_ms(scale.scale(s.retry_jitter)),
        redis_timeout: scale.scale(s.redis_timeout),
        extend_interval: scale.scale(s.extend_interval),
        reacquire_interval: scale.scale(s.reacquire_interval),
        ..s.clone()
    }
}

/// `d` rounded to the nearest whole millisecond.
fn whole_ms(d: Duration) -> Duration {
    Duration::from_millis((d.as_secs_f64() * 1e3).round() as u64)
}

/// The scaled settings the lab's floor applies to, by key.
pub fn floored(s: &RedlockSettings) -> [(&'static str, Duration); 4] {
    [
        ("redis_timeout", s.redis_timeout),
        ("retry_delay", s.retry_delay),
        ("extend_interval", s.extend_interval),
        ("reacquire_interval", s.reacquire_interval),
    ]
}

/// Redlock's logical servers: each instance (`redis-1` … `redis-N`, lock
/// servers `0..N` of the simulation), then the downstream.
pub fn servers(s: &RedlockSettings) -> Vec<Server> {
    (0..s.instances)
        .map(Server::Redis)
        .chain([Server::Downstream])
        .collect()
}

/// How the run starts each instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instances {
    /// Per instance: with AOF, `appendfsync always` — when a fault restarts
    /// it durably (a restart that loses its data starts it empty either
    /// way).
    pub append_only: Vec<bool>,
    /// Per instance: its wall clock steppable (a fault steps it).
    pub stepped_clock: Vec<bool>,
}

/// The instances a Redlock `scenario` needs, from its resolved faults;
/// `None` for another design.
pub fn instances(scenario: &fenced_sim::Scenario, plan: &FaultPlan) -> Option<Instances> {
    let ProtocolSpec::Redlock(settings) = &scenario.election.protocol else {
        return None;
    };
    let count = usize::from(settings.instances);
    let mut instances = Instances {
        append_only: vec![false; count],
        stepped_clock: vec![false; count],
    };
    let index = |host: HostId| match host {
        HostId::Server(ServerId::Lock(i)) if usize::from(i) < count => Some(usize::from(i)),
        _ => None,
    };
    for fault in plan.faults() {
        let (Resolution::Scheduled(fault) | Resolution::Anchored { fault, .. }) = fault else {
            continue;
        };
        match fault.start {
            FaultAction::ServerDown {
                server,
                durable: true,
            } => {
                if let Some(i) = index(HostId::Server(server)) {
                    instances.append_only[i] = true;
                }
            }
            FaultAction::ClockJump { host, .. }
            | FaultAction::ClockStrobe { host, .. }
            | FaultAction::ClockSlew { host, .. } => {
                if let Some(i) = index(host) {
                    instances.stepped_clock[i] = true;
                }
            }
            _ => {}
        }
    }
    Some(instances)
}

/// Why the lab cannot make fault `resolution` real for Redlock, if it
/// cannot: a slew of an instance's clock. The wall-clock shim
/// ([`crate::servers::wall_clock`]) adds an offset the runner steps; a
/// slew changes the clock's rate, which the shim cannot do (and Linux slews
/// CLOCK_MONOTONIC with CLOCK_REALTIME, which the shim leaves alone).
pub fn refusal(resolution: &Resolution) -> Option<String> {
    let (Resolution::Scheduled(fault) | Resolution::Anchored { fault, .. }) = resolution else {
        return None;
    };
    match fault.start {
        FaultAction::ClockSlew {
            host: HostId::Server(ServerId::Lock(index)),
            ..
        } => Some(format!(
            "a slew of {}'s clock: the wall-clock shim the lab loads into redis-server steps an \
             offset, it cannot change the clock's rate (nor CLOCK_MONOTONIC, which a real slew \
             moves too)",
            Server::Redis(index).name()
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ttl_and_the_retry_sleeps_scale_to_whole_milliseconds() {
        // Proves the rounding the module docs promise: redlock-rb's defaults
        // at 0.2 give a 2 s TTL, 40 ms + rand(10 ms) between tries, a 20 ms
        // redis_timeout; at 0.0033 the TTL of 10 s is 33 ms (not 33.0 ms and
        // a fraction), the jitter 0.165 ms rounds to 0.
        let scaled = scale(
            &RedlockSettings::default(),
            TimeScale::new(0.2).expect("valid"),
        );
        assert_eq!(scaled.ttl, Duration::from_millis(2000));
        assert_eq!(scaled.retry_delay, Duration::from_millis(40));
        assert_eq!(scaled.retry_jitter, Duration::from_millis(10));
        assert_eq!(scaled.redis_timeout, Duration::from_millis(20));
        assert_eq!(scaled.extend_interval, Duration::from_secs(1));
        assert_eq!(scaled.reacquire_interval, Duration::from_millis(200));
        assert_eq!(scaled.drift_ms(), 22);
        let odd = RedlockSettings {
            ttl: Duration::from_secs(10),
            ..RedlockSettings::default()
        };
        let scaled = scale(&odd, TimeScale::new(0.0033).expect("valid"));
        assert_eq!(scaled.ttl, Duration::from_millis(33));
        assert_eq!(scaled.retry_jitter, Duration::ZERO);
        assert_eq!(scaled.instances, 5);
    }

    #[test]
    fn servers_are_the_instances_then_the_downstream() {
        let servers = servers(&RedlockSettings::default());
        assert_eq!(servers.len(), 6);
        assert_eq!(servers[0].name(), "redis-1");
        assert_eq!(servers[4].name(), "redis-5");
        assert_eq!(servers[5], Server::Downstream);
    }
}
