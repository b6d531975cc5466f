//! ZooKeeper with Curator's `LeaderLatch` for real: its settings scaled as
//! the run's, the server's `tickTime` for the run, the latch's path, and
//! the faults the lab cannot make real for it.
//!
//! # Scaling the settings
//!
//! `[election.zookeeper]`'s durations — `session_timeout`, `tick_time`,
//! and the client's three constants `reconnect_spin` (`hostProvider.next(1000)`),
//! `reconnect_sleep` (the bound of `startConnect`'s random sleep) and
//! `max_send_ping_interval` (`MAX_SEND_PING_INTERVAL`), which the node's
//! model reads on the node's real clock as the simulation reads them on its
//! virtual one — are scaled by the time scale to whole milliseconds (ZooKeeper speaks
//! milliseconds: `ConnectRequest.timeOut` and `tickTime` are `int`s of
//! ms); `error_policy`, `simulated_session_expiration_percent` and
//! `client_session_expiry` are not durations and are kept. The server the
//! run starts (`lab/src/runner_zookeeper.rs`) is given the **scaled
//! `tickTime`** and no `minSessionTimeout`/`maxSessionTimeout`, so its own
//! bounds are the model's: `ZooKeeperServer.processConnectRequest` clamps a
//! requested timeout to `[minSessionTimeout, maxSessionTimeout]`, by
//! default `[2, 20] × tickTime` (`ServerConfig`/`QuorumPeerConfig`:
//! `minSessionTimeout = tickTime * 2`, `maxSessionTimeout = tickTime *
//! 20`), and the model's server clamps to `[2, 20] × tick_time`. Scaling
//! both by the same factor keeps every clamp where it was: the session
//! timeout the real server grants is the one the simulation beside the run
//! grants ([`crate::design::scale_protocol`] gives it the same values).
//! Sessions expire on tick boundaries (`ExpiryQueue.roundToNextInterval`)
//! in both.
//!
//! # Refused
//!
//! * A step, slew or strobe of ZooKeeper's clock: the server times sessions
//!   by `Time.currentElapsedTime()` = `System.nanoTime()`
//!   (`SessionTrackerImpl.run`, `ExpiryQueue`), which no step of the wall
//!   clock moves (the simulator records it as `moved: false`): nothing to
//!   make real.
//! * A change of a node's clock: the node drives the model's client on its
//!   monotonic clock, and the one wall-clock reading the model has
//!   (Curator's simulated expiration, `ConnectionStateManager.
//!   checkSessionExpiration`) would need the node to tell the model each
//!   step of its own wall clock (`LockClient::wall_clock_stepped`), which
//!   the node does not do yet.
//!
//! # Made real
//!
//! * A durable restart of ZooKeeper: a SIGKILL of the JVM at its start and
//!   a start over its data directory at its end
//!   (`lab/src/runner_zookeeper.rs`, `down` and `up`), as for etcd. The
//!   run's server is a one-member quorum, which begins a new zxid epoch at
//!   each restart as the model's server does (`lab/src/servers/zookeeper.rs`),
//!   and the node numbers a later epoch's `czxid` as it is
//!   (`lab/src/node_zookeeper.rs`, "The token"). The kernel closes the dead
//!   JVM's sockets at once, and the simulator's clients hear the same at the
//!   same instant (`LockServer::went_down`); a connect refused meanwhile is
//!   tried again after `reconnect_spin` and a random sleep below
//!   `reconnect_sleep` (1 s each, scaled), as `ClientCnxn` does (the model's
//!   client).
//!   The start takes a JVM's start and a leader election of real time
//!   (0.6–0.7 s measured) after the planned end, which the plan cannot
//!   shorten; and the simulator holds a SYN to the down server until it is
//!   back where its kernel would refuse it, so the simulated clients
//!   reconnect up to a second sooner.

use std::time::Duration;

use fenced_sim::{FaultAction, HostId, ProtocolSpec, Resolution, ServerId};
use fenced_zoo::zookeeper::ZooKeeperSettings;

use crate::plan::{Action, Server};
use crate::time_scale::TimeScale;

/// `d` scaled by `scale` to whole milliseconds, at least one.
fn whole_millis(d: Duration, scale: TimeScale) -> Duration {
    let scaled = scale.scale(d);
    Duration::from_millis((scaled.as_secs_f64() * 1000.0).round().max(1.0) as u64)
}

/// ZooKeeper's settings scaled by `scale` (see the module docs).
pub fn scale_settings(s: &ZooKeeperSettings, scale: TimeScale) -> ZooKeeperSettings {
    ZooKeeperSettings {
        session_timeout: whole_millis(s.session_timeout, scale),
        tick_time: whole_millis(s.tick_time, scale),
        reconnect_spin: whole_millis(s.reconnect_spin, scale),
        // A bound of random draws: zero (no sleep) stays zero, and no floor
        // applies (`client_timings` leaves it out).
        reconnect_sleep: if s.reconnect_sleep.is_zero() {
            Duration::ZERO
        } else {
            whole_millis(s.reconnect_sleep, scale)
        },
        max_send_ping_interval: whole_millis(s.max_send_ping_interval, scale),
        ..s.clone()
    }
}

/// The settings' durations, by their `[election.zookeeper]` keys: the
/// lab's floors apply to them.
pub fn client_timings(s: &ZooKeeperSettings) -> [(&'static str, Duration); 4] {
    [
        ("session_timeout", s.session_timeout),
        ("tick_time", s.tick_time),
        ("reconnect_spin", s.reconnect_spin),
        ("max_send_ping_interval", s.max_send_ping_interval),
    ]
}

/// The latch path for `role` in the run whose schema is `schema`
/// (`new LeaderLatch(client, latchPath, id)`): the runner creates it before
/// the nodes start, the nodes' ephemeral sequential nodes go under it.
pub fn latch_path(schema: &str, role: &str) -> String {
    format!("/fenced-lab/{schema}/{role}")
}

const ZOOKEEPER: HostId = HostId::Server(ServerId::Lock(0));

/// How the lab makes plan action `action` real for ZooKeeper where it
/// differs from every design's ([`crate::realise::realise`]): the server's
/// pause is a SIGSTOP of the JVM, the run's own process.
pub fn realise(protocol: &ProtocolSpec, action: &FaultAction) -> Option<Action> {
    if !matches!(protocol, ProtocolSpec::ZooKeeper(_)) {
        return None;
    }
    let server = Server::LeaseStore;
    match action {
        FaultAction::Pause { host } if *host == ZOOKEEPER => Some(Action::ServerPause { server }),
        FaultAction::Resume { host } if *host == ZOOKEEPER => Some(Action::ServerResume { server }),
        _ => None,
    }
}

/// Why the lab cannot make fault `resolution` real for ZooKeeper, if it
/// cannot (see the module docs).
///
/// Link faults are real: a node's one TCP connection to ZooKeeper runs
/// through its proxy, and the session's liveness is the client's own
/// pings on it, not a kernel's probe — a stalled link stops them and the
/// server expires the session on its own clock; the client's read timeout
/// and ZOOKEEPER-4508's expiry run in the node on what it hears.
pub fn refusal(resolution: &Resolution) -> Option<String> {
    let (Resolution::Scheduled(fault) | Resolution::Anchored { fault, .. }) = resolution else {
        return None;
    };
    match &fault.start {
        FaultAction::ClockJump { host, .. }
        | FaultAction::ClockSlew { host, .. }
        | FaultAction::ClockStrobe { host, .. }
            if *host == ZOOKEEPER =>
        {
            Some(
                "a change of ZooKeeper's clock moves nothing it decides: the server times \
                 sessions by System.nanoTime() (SessionTrackerImpl.run, ExpiryQueue: \
                 Time.currentElapsedTime()), which no step of the wall clock moves (the \
                 simulator records it as `moved: false`)"
                    .to_string(),
            )
        }
        FaultAction::ClockJump { .. }
        | FaultAction::ClockSlew { .. }
        | FaultAction::ClockStrobe { .. } => Some(
            "a change of a ZooKeeper node's clock is not made real yet: the node drives the \
             model's client on its monotonic clock and does not tell it the steps of its wall \
             clock, which Curator's simulated expiration reads \
             (ConnectionStateManager.checkSessionExpiration)"
                .to_string(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_scale_to_whole_milliseconds_and_the_clamp_stays_where_it_was() {
        // Proves the module docs' rounding: Curator's 60 s and the server's
        // 3 s tick at 0.1 are 6 s and 300 ms, so the granted timeout stays
        // at the 20-tick bound exactly as in the model; the rest is kept.
        let scale = TimeScale::new(0.1).expect("valid");
        let scaled = scale_settings(&ZooKeeperSettings::default(), scale);
        assert_eq!(scaled.session_timeout, Duration::from_secs(6));
        assert_eq!(scaled.tick_time, Duration::from_millis(300));
        assert_eq!(scaled.session_timeout, scaled.tick_time * 20);
        assert_eq!(scaled.simulated_session_expiration_percent, 100);
        // The client's constants scale with the rest: the node's model reads
        // them on its real clock.
        assert_eq!(scaled.reconnect_spin, Duration::from_millis(100));
        assert_eq!(scaled.reconnect_sleep, Duration::from_millis(100));
        assert_eq!(scaled.max_send_ping_interval, Duration::from_secs(1));
        let tiny = TimeScale::new(0.0001).expect("valid");
        let scaled = scale_settings(&ZooKeeperSettings::default(), tiny);
        assert_eq!(scaled.tick_time, Duration::from_millis(1));
        assert_eq!(scaled.session_timeout, Duration::from_millis(6));
        // No sleep stays no sleep.
        let none = ZooKeeperSettings {
            reconnect_sleep: Duration::ZERO,
            ..ZooKeeperSettings::default()
        };
        assert_eq!(scale_settings(&none, scale).reconnect_sleep, Duration::ZERO);
    }
}
