//! The Redlock node (`fenced-lab node --redlock`): leader election by
//! redlock-rb's `lock` against N real `redis-server`s — the zoo's
//! `fenced_zoo::redlock` model, for real, one decision for one decision.
//!
//! # What it follows, and where each timing comes from
//!
//! redlock-rb (`lib/redlock/client.rb` at f176e57, as the model's module
//! docs cite it) and the model's application loop
//! (`zoo/src/redlock/mod.rs`, "The application loop"):
//!
//! * **`lock`** (`try_lock_instances`): `retry_count + 1` tries, each with a
//!   **fresh random value** (redlock-rb's `SecureRandom.uuid`: here a UUID v4
//!   from a ChaCha generator seeded from the kernel's `/dev/urandom`), a
//!   sleep of `retry_delay + rand(retry_jitter)` whole milliseconds between
//!   tries (`attempt_retry_delay`).
//! * **One try** (`lock_instances`): the instances asked **in turn**, each
//!   with `LOCK_SCRIPT` (`lib/redlock/scripts.rb`: set `value PX ttl` if the
//!   key is absent and new locks are allowed, or if it already holds
//!   `value`), each call bounded by `redis_timeout` — connection included,
//!   as redis-client's `timeout` bounds connect, write and read; a call that
//!   times out or fails drops its connection (a late reply is never read)
//!   and counts as not locked. `timed` in whole milliseconds of a monotonic
//!   clock (tokio's, `CLOCK_MONOTONIC`, as redlock-rb's
//!   `Process.clock_gettime(Process::CLOCK_MONOTONIC)`), `validity = ttl −
//!   elapsed − drift` with `drift = ttl/100 + 2` ms; success iff at least
//!   `N/2 + 1` locked and `validity ≥ 0`. A failed try runs `UNLOCK_SCRIPT`
//!   (compare-and-delete) on every instance in turn, errors swallowed.
//! * **Leading** from a successful `lock` until the validity elapses on
//!   this clock or an extend fails. Every `extend_interval` the leader
//!   extends: `lock(…, extend: lock_info)`, one try with the **same** value,
//!   `allow_new_lock = "yes"` unless `extend_only_if_locked`; a successful
//!   extend moves the validity (and, if it had elapsed, begins a new term,
//!   as the model's client tells `BecameLeader` again); a failed one unlocks
//!   everywhere, then leadership ends and `lock` is called again after
//!   `reacquire_interval`, as after a `lock` that returned false.
//! * **Stop** (SIGTERM): leadership ends (`stopped`), then `unlock` of the
//!   value in hand (held, or the try in progress) on every instance in turn,
//!   within the node's stop bound.
//!
//! A unit of work checks leadership when it starts: this client's belief
//! **and** its validity against the monotonic clock (the model's
//! `leadership` is `told_leader && now < valid_until`), so a process resumed
//! past its validity starts no unit even before the validity timer runs.
//!
//! # Terms, without a token
//!
//! Redlock has no token. The simulator numbers a tokenless design's terms
//! in the order they begin (`sim/src/zoo/process.rs`). Here no server sees
//! every grant (each instance is independent), so the number is drawn when
//! leadership begins, from the run's sequence ([`crate::schema::LOCK_TERMS`])
//! on the downstream's PostgreSQL: terms are numbered in the order their
//! beginnings reached PostgreSQL, a millisecond after the majority was won.
//! The number only tells terms apart for the checker; the downstream is the
//! plain table (validation refuses `fencing = true` for a tokenless design).
//! If no number can be drawn (the downstream unreachable within its
//! bounds), the node says so and leads with no term and no work until its
//! next beginning.

use std::future::Future;
use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use fenced::history::Event;
use fenced::tokio::CancellationToken;
use fenced::{FencingToken, StepDownReason};
use fenced_zoo::redlock::RedlockSettings;
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use redis::Script;
use tokio::sync::watch;
use tokio::time::{sleep_until, timeout, Instant};

use super::errors::{bad, infra, NodeError};
use super::{say, WorkContext};

#[path = "node_redlock_args.rs"]
mod args;
#[path = "node_redlock_io.rs"]
mod io;
pub(in crate::node) use args::{settings, to_args};
pub use args::{RedlockArgs, RedlockNode};
pub(super) use io::TermSource;
use io::{Call, Instances, LOCK_SCRIPT, PTTL_SCRIPT, UNLOCK_SCRIPT};

/// What the belief watch carries: the term and its validity's end.
pub(super) type Belief = Option<(FencingToken, Instant)>;

/// The application's side: whether it was told it leads, the term it
/// records, and the validity it checks.
struct Leader {
    context: Arc<WorkContext>,
    believed: watch::Sender<Belief>,
    terms: TermSource,
    /// The model's `told_leader`.
    told: bool,
    /// The lock in hand's validity deadline.
    valid_until: Option<Instant>,
    /// The recorded term: its number and what cancels its work.
    term: Option<(FencingToken, CancellationToken)>,
}

impl Leader {
    /// When the told leadership's validity elapses, if it is told.
    fn expiry(&self) -> Option<Instant> {
        self.valid_until.filter(|_| self.told)
    }

    /// A lock (or extend) succeeded with this validity: a term begins if
    /// none is told and the validity is ahead.
    async fn acquired(&mut self, valid_until: Instant) {
        self.valid_until = Some(valid_until);
        if self.told {
            if let Some((token, _)) = &self.term {
                let _ = self.believed.send(Some((*token, valid_until)));
            }
            return;
        }
        if Instant::now() >= valid_until {
            return;
        }
        self.told = true;
        let owner = &self.context.owner;
        let token = match self.terms.next().await {
            Ok(number) => FencingToken::new(number),
            Err(error) => {
                say(
                    owner,
                    format_args!("redlock term-number-failed error={error:?}"),
                );
                None
            }
        };
        let Some(token) = token else {
            return;
        };
        let work = CancellationToken::new();
        self.context
            .recorder
            .record(|| Event::TermStarted { token });
        let _ = self.believed.send(Some((token, valid_until)));
        let context = Arc::clone(&self.context);
        tokio::spawn(super::work(token, work.clone(), context));
        self.term = Some((token, work));
    }

    /// The told leadership ends for `why` (the model's `lose`).
    fn lose(&mut self, why: &str) {
        if !self.told {
            return;
        }
        self.told = false;
        let _ = self.believed.send(None);
        let Some((token, work)) = self.term.take() else {
            return;
        };
        work.cancel();
        let reason = if why == "stopped" {
            StepDownReason::Stopped
        } else {
            StepDownReason::LocalDeadline
        };
        self.context
            .recorder
            .record(|| Event::term_ended(token, &reason));
        say(
            &self.context.owner,
            format_args!("redlock lost token={token} why={why:?}"),
        );
    }
}

/// Awaits `future` unless a shutdown comes first (`None`), ending the told
/// leadership when its validity elapses meanwhile — the model checks the
/// validity at every event, whatever the client is doing.
async fn guarded<F: Future>(
    leader: &mut Leader,
    shutdown: &CancellationToken,
    future: F,
) -> Option<F::Output> {
    tokio::pin!(future);
    loop {
        let expiry = leader.expiry();
        tokio::select! {
            biased;
            _ = shutdown.cancelled() => return None,
            _ = sleep_until_opt(expiry) => leader.lose("validity elapsed"),
            out = &mut future => return Some(out),
        }
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// A shutdown came.
struct Stopped;

struct Driver {
    settings: RedlockSettings,
    instances: Instances,
    leader: Leader,
    shutdown: CancellationToken,
    rng: ChaCha8Rng,
    /// The zero of `timed`'s whole milliseconds.
    epoch: Instant,
    /// The value of the try in progress or of the lock in hand.
    value: Option<String>,
    stop_bound: Duration,
}

/// Runs the client until `shutdown`, telling `believed` (and the history)
/// when a term begins and ends, and running `context`'s work while it does.
///
/// # Errors
/// The kernel's randomness cannot be read.
pub(super) async fn run(
    node: RedlockNode,
    role: &str,
    terms: TermSource,
    context: Arc<WorkContext>,
    believed: watch::Sender<Belief>,
    shutdown: CancellationToken,
    stop_bound: Duration,
) -> Result<(), NodeError> {
    let mut seed = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut seed))
        .map_err(|e| infra(format!("/dev/urandom: {e}")))?;
    let clients = node
        .instances
        .iter()
        .map(|url| {
            // No `CLIENT SETINFO` round trip when connecting: the crate's
            // announcement of itself is no part of redlock-rb's calls.
            let info = redis::IntoConnectionInfo::into_connection_info(url.as_str())?;
            let settings = info.redis_settings().clone().set_skip_set_lib_name();
            redis::Client::open(info.set_redis_settings(settings))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("--redis-url: {e}")))?;
    let settings = node.settings;
    let driver = Driver {
        instances: Instances {
            connections: vec![None; clients.len()],
            clients,
            lock: Script::new(LOCK_SCRIPT),
            unlock: Script::new(UNLOCK_SCRIPT),
            pttl: Script::new(PTTL_SCRIPT),
            key: format!("fenced-lab:{role}"),
            ttl_ms: u64::try_from(settings.ttl.as_millis()).unwrap_or(u64::MAX),
            redis_timeout: settings.redis_timeout,
        },
        settings,
        leader: Leader {
            context,
            believed,
            terms,
            told: false,
            valid_until: None,
            term: None,
        },
        shutdown,
        rng: ChaCha8Rng::from_seed(seed),
        epoch: Instant::now(),
        value: None,
        stop_bound,
    };
    driver.run().await;
    Ok(())
}

impl Driver {
    async fn run(mut self) {
        let warm_up = self.instances.warm_up();
        let warmed = tokio::select! {
            _ = self.shutdown.cancelled() => None,
            warmed = warm_up => Some(warmed),
        };
        let Some(connected) = warmed else {
            return;
        };
        say(
            &self.leader.context.owner,
            format_args!("redlock warmed-up connected={connected}"),
        );
        if self.drive().await.is_err() {
            self.stop().await;
        }
    }

    /// The application loop, until a shutdown.
    async fn drive(&mut self) -> Result<(), Stopped> {
        loop {
            if !self.lock().await? {
                self.value = None;
                self.pause(self.settings.reacquire_interval).await?;
                continue;
            }
            // Leading: extend every extend_interval with the same value.
            loop {
                self.pause(self.settings.extend_interval).await?;
                let Some(value) = self.value.clone() else {
                    break;
                };
                let allow_new = !self.settings.extend_only_if_locked;
                match self.lock_instances(&value, allow_new).await? {
                    Some(valid_until) => self.leader.acquired(valid_until).await,
                    None => {
                        self.leader.lose("extend failed");
                        self.leader.valid_until = None;
                        self.value = None;
                        self.pause(self.settings.reacquire_interval).await?;
                        break;
                    }
                }
            }
        }
    }

    /// redlock-rb's `lock` (`try_lock_instances`): whether it returned a
    /// lock (then `self.value` is its value and the leadership is told).
    async fn lock(&mut self) -> Result<bool, Stopped> {
        for attempt in 0..=self.settings.retry_count {
            let value = self.new_value();
            self.value = Some(value.clone());
            if let Some(valid_until) = self.lock_instances(&value, true).await? {
                self.leader.acquired(valid_until).await;
                return Ok(true);
            }
            if attempt < self.settings.retry_count {
                let jitter_ms = ms(self.settings.retry_jitter);
                let jitter = if jitter_ms == 0 {
                    0
                } else {
                    self.rng.next_u64() % jitter_ms
                };
                let delay = self.settings.retry_delay + Duration::from_millis(jitter);
                self.pause(delay).await?;
            }
        }
        Ok(false)
    }

    /// redlock-rb's `lock_instances`: the validity deadline on success;
    /// on failure every instance is unlocked and `None` returned.
    async fn lock_instances(
        &mut self,
        value: &str,
        allow_new: bool,
    ) -> Result<Option<Instant>, Stopped> {
        let started_ms = self.now_ms();
        let mut locked: u16 = 0;
        for index in 0..self.instances.clients.len() {
            let call = self.instances.call(index, Call::Lock { allow_new }, value);
            if guarded(&mut self.leader, &self.shutdown, call)
                .await
                .ok_or(Stopped)?
            {
                locked += 1;
            }
        }
        let now = Instant::now();
        let elapsed_ms = self.now_ms() - started_ms;
        let validity_ms = i128::from(ms(self.settings.ttl))
            - i128::from(elapsed_ms)
            - i128::from(self.settings.drift_ms());
        if locked >= self.settings.quorum() && validity_ms >= 0 {
            let validity = Duration::from_millis(u64::try_from(validity_ms).unwrap_or(0));
            return Ok(Some(now + validity));
        }
        say(
            &self.leader.context.owner,
            format_args!("redlock no-majority locked={locked} validity_ms={validity_ms}"),
        );
        for index in 0..self.instances.clients.len() {
            let call = self.instances.call(index, Call::Unlock, value);
            guarded(&mut self.leader, &self.shutdown, call)
                .await
                .ok_or(Stopped)?;
        }
        Ok(None)
    }

    /// Sleeps `span`, watching the validity.
    async fn pause(&mut self, span: Duration) -> Result<(), Stopped> {
        let sleep = tokio::time::sleep(span);
        guarded(&mut self.leader, &self.shutdown, sleep)
            .await
            .ok_or(Stopped)
    }

    /// `unlock`: leadership ends, then the value in hand is deleted from
    /// every instance in turn, within the stop bound.
    async fn stop(&mut self) {
        self.leader.lose("stopped");
        let Some(value) = self.value.take() else {
            return;
        };
        let instances = &mut self.instances;
        let sweep = async {
            for index in 0..instances.clients.len() {
                instances.call(index, Call::Unlock, &value).await;
            }
        };
        let _ = timeout(self.stop_bound, sweep).await;
    }

    /// Whole milliseconds of the monotonic clock (`timed`).
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A fresh UUID v4, as `SecureRandom.uuid`.
    fn new_value(&mut self) -> String {
        let mut bytes = [0u8; 16];
        self.rng.fill_bytes(&mut bytes);
        uuid_v4(bytes)
    }
}

/// Runs a Redlock node until SIGTERM: no elector and no heartbeats — the
/// design has neither — and the same work and history as a fenced node's.
pub(super) async fn run_node(
    config: &super::NodeConfig,
    node: RedlockNode,
    owner: &fenced::OwnerId,
    recorder: &fenced::history::Recorder,
    downstream: super::Downstream,
) -> Result<(), NodeError> {
    let stop_bound = config.write_interval + config.work_duration;
    let terms = TermSource::new(
        &config.downstream_url,
        config.namespace.schema(),
        config.connect_timeout,
        config.query_timeout,
    );
    let (believed, watching) = watch::channel(None);
    let context = super::work_context(
        config,
        owner,
        downstream,
        recorder,
        fenced::tokio::Clock::new(),
        super::Believed::Until(watching),
    )?;
    let shutdown = CancellationToken::new();
    let signals = super::watch_signals(shutdown.clone(), context.clone())?;
    say(owner, format_args!("start pid={}", std::process::id()));
    let ran = run(
        node,
        config.role.as_str(),
        terms,
        context.clone(),
        believed,
        shutdown,
        stop_bound,
    )
    .await;
    signals.abort();
    ran?;
    context.cancel_in_flight();
    recorder.process_stopped();
    say(owner, format_args!("exit"));
    Ok(())
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// RFC 4122 version 4 text of `bytes`.
fn uuid_v4(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_version_4_uuids() {
        // Proves the value's shape is redlock-rb's (SecureRandom.uuid).
        let text = uuid_v4([0xff; 16]);
        assert_eq!(text, "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let text = uuid_v4([0; 16]);
        assert_eq!(text, "00000000-0000-4000-8000-000000000000");
    }
}
