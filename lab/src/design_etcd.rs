//! etcd's `concurrency.Election` for real: its settings scaled as the
//! run's, and the faults the lab cannot make real for it.
//!
//! # Scaling the settings
//!
//! Every duration of `[election.etcd]` (`first_keepalive_timeout`,
//! `keepalive_retry`, `request_timeout`, `restart_delay`) is scaled by the
//! time scale exactly: they are the client's own timers, which the node
//! (`lab/src/node_etcd.rs`) runs on tokio's clock. `session_ttl_secs` is
//! the lease's TTL, which the **server** grants, in whole seconds
//! (`LeaseGrantRequest.TTL` is an `int64` of seconds, `api/etcdserverpb/
//! rpc.proto`), and never below its minimum: etcd 3.4's
//! `server/etcdserver/server.go` (`NewServer`) sets `minTTL :=
//! time.Duration((3*cfg.ElectionTicks)/2) * heartbeat` and gives the lessor
//! `MinLeaseTTL: int64(math.Ceil(minTTL.Seconds()))`, and
//! `server/lease/lessor.go` (`Grant`) raises any smaller TTL to it (`if
//! l.ttl < le.minLeaseTTL { l.ttl = le.minLeaseTTL }`). With the defaults
//! the lab runs etcd with (`--heartbeat-interval 100`, `--election-timeout
//! 1000`: 10 ticks), that is 15 × 100 ms = 1.5 s, rounded up: **2 s**
//! ([`MIN_GRANTED_TTL_SECS`], measured for real by
//! `lab/tests/zoo_etcd.rs`). So the scaled TTL is rounded to the nearest
//! whole second and raised to 2 s, and the simulation beside the run is
//! given the same value ([`crate::design::scale_protocol`]), so both
//! decide on the TTL the server really grants.
//!
//! The model's fixed timings are not settings and are not scaled, in the
//! simulation as in the real run: the lessor's revoke loop looks every
//! 500 ms and a restarted server's `Promote` adds the election timeout
//! (1 s) — the real server's own constants — and the client's
//! `deadlineLoop` looks once a second, which the node takes from the model.

use std::time::Duration;

use fenced_sim::{FaultAction, HostId, ProtocolSpec, Resolution, ServerId};
use fenced_zoo::etcd::EtcdSettings;

use crate::plan::{Action, Server};
use crate::time_scale::TimeScale;

/// The smallest TTL the lab's etcd grants, whole seconds (see the module
/// docs).
pub const MIN_GRANTED_TTL_SECS: u64 = 2;

/// etcd's settings scaled by `scale` (the TTL rounded as the module docs
/// say).
pub fn scale_settings(s: &EtcdSettings, scale: TimeScale) -> EtcdSettings {
    let ttl = scale.scale(Duration::from_secs(s.session_ttl_secs));
    EtcdSettings {
        session_ttl_secs: (ttl.as_secs_f64().round() as u64).max(MIN_GRANTED_TTL_SECS),
        first_keepalive_timeout: scale.scale(s.first_keepalive_timeout),
        keepalive_retry: scale.scale(s.keepalive_retry),
        request_timeout: scale.scale(s.request_timeout),
        restart_delay: scale.scale(s.restart_delay),
    }
}

/// The election's prefix for `role` in the run whose schema is `schema`
/// (`concurrency.NewElection(session, prefix)`; the keys are
/// `prefix/<lease in hex>`): the nodes campaign under it, and the runner
/// reads the election's holders from it (`lab/src/runner_etcd.rs`).
pub fn election_prefix(schema: &str, role: &str) -> String {
    format!("/fenced-lab/{schema}/{role}")
}

/// etcd's client timings, by their `[election.etcd]` keys: the lab's
/// floors apply to them.
pub fn client_timings(s: &EtcdSettings) -> [(&'static str, Duration); 4] {
    [
        ("first_keepalive_timeout", s.first_keepalive_timeout),
        ("keepalive_retry", s.keepalive_retry),
        ("request_timeout", s.request_timeout),
        ("restart_delay", s.restart_delay),
    ]
}

/// How the lab makes plan action `action` real for design `protocol`, where
/// etcd's differs from every design's ([`crate::realise::realise`]): the
/// pause of the etcd server is a SIGSTOP of its process (the fenced
/// protocol's PostgreSQL serves more than the run, so its pause is a stall
/// of its links; etcd is the run's own).
pub fn realise(protocol: &ProtocolSpec, action: &FaultAction) -> Option<Action> {
    const ETCD: HostId = HostId::Server(ServerId::Lock(0));
    if !matches!(protocol, ProtocolSpec::Etcd(_)) {
        return None;
    }
    let server = Server::LeaseStore;
    match action {
        FaultAction::Pause { host } if *host == ETCD => Some(Action::ServerPause { server }),
        FaultAction::Resume { host } if *host == ETCD => Some(Action::ServerResume { server }),
        _ => None,
    }
}

/// Why the lab cannot make fault `resolution` real for etcd, if it cannot.
///
/// Link faults are real: the node's gRPC connection to etcd runs through
/// its proxy, and etcd's lease keep-alive is a message on that connection
/// (`LeaseKeepAlive` stream), not a kernel's probe — a stalled link stops
/// it, and the server expires the lease on its own clock. A node's pause
/// and crash are signals, as for every design; the server's pause is a
/// SIGSTOP of etcd and its (durable) restart a SIGKILL and a start over its
/// data directory (`lab/src/runner_etcd.rs`). Refused: a step, slew or
/// strobe of etcd's clock.
pub fn refusal(resolution: &Resolution) -> Option<String> {
    let (Resolution::Scheduled(fault) | Resolution::Anchored { fault, .. }) = resolution else {
        return None;
    };
    const ETCD: HostId = HostId::Server(ServerId::Lock(0));
    match &fault.start {
        FaultAction::ClockJump { host, .. }
        | FaultAction::ClockSlew { host, .. }
        | FaultAction::ClockStrobe { host, .. }
            if *host == ETCD =>
        {
            Some(
                "a change of etcd's clock cannot be made real, and would move nothing: etcd's \
                 lessor times leases by Go's monotonic clock reading (server/lease/lessor.go, \
                 Lease.refresh and Remaining: time.Now().Add, time.Until), which no step of the \
                 wall clock moves (the simulator records it as `moved: false`); and etcd is a \
                 Go program, which reads the clock through the vDSO and never through libc, so \
                 libfaketime cannot reach it"
                    .to_string(),
            )
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ttl_is_whole_seconds_at_least_the_servers_minimum_and_the_rest_scales_exactly() {
        // Proves the rounding the module docs promise: 60 s at 0.1 is 6 s;
        // 15 s at 0.1 (1.5 s) rounds to 2 s; 5 s at 0.1 (0.5 s) is raised
        // to the server's 2 s; the client's timers scale exactly.
        let scale = TimeScale::new(0.1).expect("valid");
        let scaled = scale_settings(&EtcdSettings::default(), scale);
        assert_eq!(scaled.session_ttl_secs, 6);
        assert_eq!(scaled.first_keepalive_timeout, Duration::from_millis(500));
        assert_eq!(scaled.keepalive_retry, Duration::from_millis(50));
        assert_eq!(scaled.request_timeout, Duration::from_millis(500));
        assert_eq!(scaled.restart_delay, Duration::from_millis(100));
        for (ttl, expected) in [(15, 2), (5, 2), (25, 3), (1000, 100)] {
            let s = EtcdSettings {
                session_ttl_secs: ttl,
                ..EtcdSettings::default()
            };
            assert_eq!(
                scale_settings(&s, scale).session_ttl_secs,
                expected,
                "{ttl}"
            );
        }
    }
}
