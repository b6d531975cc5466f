//! Redlock: N independent Redis instances, a lock held while a majority of
//! them hold a key with the client's random value, trusted for a *validity*
//! measured on the client's own clock.
//!
//! # What it mirrors
//!
//! * The algorithm as specified on redis.io, "Distributed Locks with Redis",
//!   section "The Redlock algorithm" (get the time, try every instance in turn
//!   with a short timeout, succeed when a majority locked and the elapsed time
//!   is below the TTL, validity = TTL − elapsed − drift, unlock all on
//!   failure, retry after a random delay).
//! * The reference client **redlock-rb** (leandromoreira/redlock-rb,
//!   `lib/redlock/client.rb` at f176e57), chosen over go-redsync because it is
//!   the one that implements the page literally: instances are tried **in
//!   turn** (`lock_instances`: `@servers.count { |s| s.lock(...) }`, while
//!   redsync asks all at once), and the drift is `(ttl * CLOCK_DRIFT_FACTOR).to_i
//!   + 2` ms (`drift`; redsync has no `+ 2`).
//!   * `try_lock_instances`: `retry_count + 1` tries, each `lock_instances`
//!     with a **fresh** `SecureRandom.uuid` value, a sleep of
//!     `retry_delay + rand(retry_jitter)` ms between tries
//!     (`attempt_retry_delay`).
//!   * `lock_instances`: `timed` over all instances (integer milliseconds of a
//!     monotonic clock), `validity = ttl - time_elapsed - drift(ttl)`, success
//!     iff `locked >= quorum && validity >= 0` with `quorum = N/2 + 1`;
//!     otherwise `unlock` on every instance (errors swallowed).
//!   * The instance side is `Scripts::LOCK_SCRIPT` (set `value PX ttl` if the
//!     key is absent and new locks are allowed, or if it already holds
//!     `value`) and `UNLOCK_SCRIPT` (compare-and-delete).
//!   * Extending is redlock-rb's `lock(resource, ttl, extend: lock_info)`: one
//!     try (`tries = options[:extend] ? 1 : ...`) with the **same** value; by
//!     default (`extend_only_if_locked: false`) it also re-creates the key on
//!     instances where it expired. A failed extend goes through the same
//!     failure path, so it **unlocks** the value everywhere before returning
//!     false. This is the chosen renewal; redsync's `Extend` (PEXPIRE only if
//!     the value matches) corresponds to `extend_only_if_locked: true`.
//!   * The per-instance timeout is `redis_timeout` (0.1 s): a `RedisClient`
//!     that times out closes its connection (redis-client's
//!     `ensure_connected` rescues the `ReadTimeoutError`, a
//!     `ConnectionError`, with `close`), so a late reply is never read and
//!     the next call to that instance connects anew.
//! * **Connections** (redis-rb/redis-client 0.30.0, 9298077, which
//!   redlock-rb's `RedisInstance` builds with `RedisClient.config(url:,
//!   timeout:)`): each instance's client keeps one TCP connection, opened
//!   by the first call that needs it (`raw_connection`, `connect`) with the
//!   prelude `HELLO 3` and two `CLIENT SETINFO`, pipelined — one round trip
//!   ([`RedisRequest::Hello`], the connection's first packet, after the
//!   handshake the simulator adds) — then the command. The model bounds the
//!   handshake and the prelude together by one `redis_timeout` and the
//!   command by another (redis-client bounds the connect, each read and
//!   each write by `timeout` alike; at the scenarios' latencies the two
//!   readings never differ). Requests and replies name their connection
//!   ([`Protocol::request_connection`]), so a simulator carries each as TCP
//!   does: in order, held while its link is down (a command sent into a
//!   cut reaches the instance after it; a timed-out client's `Close`, its
//!   FIN, follows it), and a new connection needs its handshake answered — under a one-way cut
//!   from the instances none completes, so neither an extend nor the
//!   failure path's `unlock` reaches them after the first timeout. When an
//!   instance's process dies its kernel resets every connection
//!   ([`LockServer::went_down`](crate::LockServer::went_down):
//!   [`RedisResponse::Closed`]); a connect while it is down is refused
//!   ([`Protocol::refused`]); a command on a connection from before its
//!   restart meets a reset and never runs. The client learns of a reset
//!   when it next uses the socket (`connected?` is `!@io.closed?`, true of
//!   a socket the peer reset): that call reads EOF and fails at once, with
//!   no retry — redis-client's default `reconnect_attempts: false`
//!   (`Config#initialize`; `ensure_connected` closes and raises) — and
//!   counts as an error in `lock_instances`; the next call connects anew.
//!   Measured with redlock-rb and redis-client themselves against a real
//!   Redis 7.0 (`zoo/upstream/redlock_restart.rb`): after a SIGKILL and a
//!   start over the append-only file, the first extend raised
//!   `LockAcquisitionError` (`ConnectionError: EOFError`) in 2.4 ms and the
//!   second succeeded; while down, the reset socket failed with EOF and the
//!   next connect was refused, each in under a millisecond.
//! * **The script cache** (`RedisInstance#recover_from_script_flush` and
//!   `load_scripts`): every call is an `EVALSHA` of one of three Lua
//!   scripts ([`RedisScript`]). An instance's cache starts empty and is
//!   emptied by every restart — Redis 7 persists no scripts (measured with
//!   Redis 7.0.15: after a SIGKILL and a start over the append-only file
//!   the key was back and `EVALSHA` answered `NOSCRIPT`; and redlock-rb
//!   itself watched through `MONITOR`, `zoo/upstream/redlock_noscript.rb`) —
//!   so the first
//!   call to a fresh or restarted instance meets `NOSCRIPT`
//!   ([`RedisResponse::NoScript`]; the command did not run), sends
//!   `SCRIPT LOAD` of the unlock, lock and pttl scripts in turn
//!   ([`RedisRequest::ScriptLoad`]) and the `EVALSHA` again: four round
//!   trips more, each bounded by `redis_timeout`, on the same connection.
//!   The cache is the instance's, so one client's reload serves the
//!   others. It retries once (`retry_on_noscript = false`): a second
//!   `NOSCRIPT` is raised, a `CommandError` that `lock_instances` counts
//!   as an error and that, unlike a timeout, leaves the connection open.
//! * redlock-rb's queries `get_remaining_ttl_for_resource`,
//!   `get_remaining_ttl_for_lock`, `locked?` and `valid_lock?`
//!   (`try_get_remaining_ttl` over `Scripts::PTTL_SCRIPT`) are the pure
//!   functions of [`query`], fed by [`RedisInstance::pttl`].
//! * The Redis instance: a key with an absolute expiry on **the instance's
//!   own clock** (`SET ... PX`), expired when `now > expiry` (Redis's
//!   `keyIsExpired`), lost on a restart without persistence.
//!
//! # The application loop (the model's own, documented choice)
//!
//! redlock-rb is a mutex; to run it as a leader elector the model calls
//! `lock` in a loop: leader from a successful `lock` until the validity
//! elapses on the client's clock or an extend fails; while leading it
//! extends every [`RedlockSettings::extend_interval`] (default TTL / 2);
//! after a `lock` that returned false it calls `lock` again after
//! [`RedlockSettings::reacquire_interval`].
//!
//! # Defaults
//!
//! redlock-rb's: `retry_count` 3, `retry_delay` 200 ms, `retry_jitter` 50 ms,
//! `redis_timeout` 0.1 s, `CLOCK_DRIFT_FACTOR` 0.01. The page's: N = 5
//! instances. The model's: TTL 10 s (redlock-rb has no default, the caller
//! passes it; 10 s is the page's example), extend every 5 s, re-lock after 1 s.
//!
//! # Left out
//!
//! Redis replication/failover (each instance is a single node), errors
//! other than a timeout, a connection's or `NOSCRIPT` (other
//! `CommandError`s; the `LockAcquisitionError` a quorum of errors raises
//! is what [`RedlockClient::last_lock`] reports as [`LockReturn::Raised`],
//! and the app loop calls `lock` again either way), `retry_delay` as a
//! proc, the block forms `lock { }` / `lock!` (Ruby control flow around
//! `lock` and `unlock`), `SCRIPT FLUSH` by another client. Redis
//! persistence is the
//! `durable` flag of a restart (AOF with `fsync always`); the delayed-restart
//! mitigation of the page is not modelled.
//!
//! # Known failure modes
//!
//! No token: a client paused past its validity still writes. An instance that
//! restarts without persistence forgets the key, and a second client can then
//! hold a majority while the first still does. One that restarts *with*
//! persistence keeps the key, but resets its clients' connections: a holder
//! that needs it for its majority fails its next extend on the reset socket,
//! unlocks everywhere and steps down — safe, but a failover
//! (`scenarios/redlock-restart-durable`).

mod client;
pub mod query;
mod server;

use std::time::Duration;

pub use client::{LockReturn, RedlockClient};
pub use server::RedisInstance;

use crate::util::nonzero;
use crate::{Boundaries, ClientId, ClockKind, Protocol, ServerIndex, SettingsError};

/// The Redlock protocol.
#[derive(Clone, Copy, Debug)]
pub enum Redlock {}

/// Redlock's settings; `Default` is redlock-rb's defaults plus N = 5.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedlockSettings {
    /// How many independent Redis instances (the page's N; default 5).
    pub instances: u16,
    /// The key's TTL (`ttl` of `lock`; model default 10 s). Whole
    /// milliseconds: redlock-rb and Redis work in ms.
    pub ttl: Duration,
    /// Extra tries after the first (`retry_count`, default 3).
    pub retry_count: u32,
    /// Base sleep between tries (`retry_delay`, default 200 ms).
    pub retry_delay: Duration,
    /// Random extra sleep, `rand(retry_jitter)` ms (`retry_jitter`, default 50 ms).
    pub retry_jitter: Duration,
    /// Per-instance request timeout (`redis_timeout`, default 0.1 s).
    pub redis_timeout: Duration,
    /// How often the leader extends (model's choice, default TTL / 2).
    pub extend_interval: Duration,
    /// `extend_only_if_locked` (default false: an extend may re-create an
    /// expired key).
    pub extend_only_if_locked: bool,
    /// How long the application waits before calling `lock` again after it
    /// returned false (model's choice, default 1 s).
    pub reacquire_interval: Duration,
}

impl Default for RedlockSettings {
    fn default() -> Self {
        RedlockSettings {
            instances: 5,
            ttl: Duration::from_secs(10),
            retry_count: 3,
            retry_delay: Duration::from_millis(200),
            retry_jitter: Duration::from_millis(50),
            redis_timeout: Duration::from_millis(100),
            extend_interval: Duration::from_secs(5),
            extend_only_if_locked: false,
            reacquire_interval: Duration::from_secs(1),
        }
    }
}

impl RedlockSettings {
    /// `N/2 + 1`, as redlock-rb computes `@quorum`.
    pub fn quorum(&self) -> u16 {
        self.instances / 2 + 1
    }

    /// redlock-rb's `drift(ttl)`: `(ttl * 0.01).to_i + 2` milliseconds.
    pub fn drift_ms(&self) -> u64 {
        ttl_ms(self.ttl) / 100 + 2
    }
}

/// Whole milliseconds of a duration, saturating.
pub(crate) fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)
}

/// redlock-rb's three Lua scripts (`lib/redlock/scripts.rb`), as its
/// `load_scripts` sends them: `UNLOCK_SCRIPT`, `LOCK_SCRIPT`,
/// `PTTL_SCRIPT`, in that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedisScript {
    /// `UNLOCK_SCRIPT`: compare-and-delete.
    Unlock,
    /// `LOCK_SCRIPT`: set with `PX` if absent (and allowed) or ours.
    Lock,
    /// `PTTL_SCRIPT`: `{ GET key, PTTL key }`.
    Pttl,
}

impl RedisScript {
    /// `load_scripts`' order.
    pub const LOAD_ORDER: [RedisScript; 3] =
        [RedisScript::Unlock, RedisScript::Lock, RedisScript::Pttl];

    /// Its bit in an instance's script cache.
    pub(crate) fn bit(self) -> u8 {
        match self {
            RedisScript::Unlock => 1,
            RedisScript::Lock => 2,
            RedisScript::Pttl => 4,
        }
    }
}

/// A client's message to one Redis instance, on one of its TCP
/// connections to it (`conn`, numbered by the client).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedisRequest {
    /// A new connection's prelude: redis-client's `connect` sends `HELLO 3`
    /// and two `CLIENT SETINFO` pipelined (`Config#connection_prelude`) and
    /// reads their answers before the call that connected it. The first
    /// packet of a new TCP connection, which follows its handshake.
    Hello {
        /// The connection it opens.
        conn: u64,
    },
    /// `EVALSHA LOCK_SCRIPT 1 key value ttl allow_new_lock`.
    Lock {
        /// The connection it travels on.
        conn: u64,
        /// Matches the reply.
        id: u64,
        /// The client's random value (a UUID in redlock-rb).
        value: u128,
        /// `PX` milliseconds.
        ttl_ms: u64,
        /// `allow_new_lock == "yes"`: set even if the key is absent.
        allow_new: bool,
    },
    /// `EVALSHA UNLOCK_SCRIPT 1 key value`: delete the key iff it holds `value`.
    Unlock {
        /// The connection it travels on.
        conn: u64,
        /// Matches the reply.
        id: u64,
        /// The value to compare.
        value: u128,
    },
    /// `SCRIPT LOAD script`: one of the three `load_scripts` sends, in
    /// order, after an `EVALSHA` met `NOSCRIPT`.
    ScriptLoad {
        /// The connection it travels on.
        conn: u64,
        /// Matches the reply.
        id: u64,
        /// Which script.
        script: RedisScript,
    },
    /// The client closed the connection (redis-client's `close` after a
    /// timeout, or its process's kernel after a kill): the FIN, which
    /// reaches the instance after everything sent on `conn` before it.
    Close {
        /// The connection closed.
        conn: u64,
    },
}

impl RedisRequest {
    /// The connection the request travels on.
    pub fn conn(&self) -> u64 {
        match *self {
            RedisRequest::Hello { conn }
            | RedisRequest::Lock { conn, .. }
            | RedisRequest::Unlock { conn, .. }
            | RedisRequest::ScriptLoad { conn, .. }
            | RedisRequest::Close { conn } => conn,
        }
    }
}

/// An instance's reply, on the connection of the request it answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedisResponse {
    /// The prelude answered: the connection is ready.
    Hello {
        /// The connection.
        conn: u64,
    },
    /// The lock script's answer: `OK` (`true`) or nil.
    Lock {
        /// The connection.
        conn: u64,
        /// The request's id.
        id: u64,
        /// Whether the key now holds the value.
        ok: bool,
    },
    /// The unlock script's answer: whether a key was deleted.
    Unlock {
        /// The connection.
        conn: u64,
        /// The request's id.
        id: u64,
        /// 1 if deleted, 0 otherwise.
        deleted: bool,
    },
    /// `SCRIPT LOAD` answered (the script's SHA1): the script is in the
    /// instance's cache.
    ScriptLoaded {
        /// The connection.
        conn: u64,
        /// The request's id.
        id: u64,
    },
    /// `EVALSHA` of a script the instance's cache lacks: the error reply
    /// `NOSCRIPT No matching script`, a `CommandError` in redis-client. The
    /// command did not run.
    NoScript {
        /// The connection.
        conn: u64,
        /// The request's id.
        id: u64,
    },
    /// The connection was closed under the client by the instance
    /// machine's kernel: the process died (every connection it had open is
    /// reset), a command came on a connection from before its restart, or,
    /// for a connection being opened, nothing listened on the port (the SYN
    /// was refused). redis-client reads EOF or a reset: a `ConnectionError`
    /// for the call waiting on the socket, or for the next call made on it.
    Closed {
        /// The connection.
        conn: u64,
    },
}

impl RedisResponse {
    /// The connection the reply travels on.
    pub fn conn(&self) -> u64 {
        match *self {
            RedisResponse::Hello { conn }
            | RedisResponse::Lock { conn, .. }
            | RedisResponse::Unlock { conn, .. }
            | RedisResponse::ScriptLoaded { conn, .. }
            | RedisResponse::NoScript { conn, .. }
            | RedisResponse::Closed { conn } => conn,
        }
    }
}

impl Protocol for Redlock {
    const NAME: &'static str = "redlock";
    type Settings = RedlockSettings;
    type Request = RedisRequest;
    type Response = RedisResponse;
    type Client = RedlockClient;
    type Server = RedisInstance;
    const HAS_TOKEN: bool = false;
    /// redlock-rb measures the time a lock attempt took, and so the lock's
    /// validity, with `Process.clock_gettime(Process::CLOCK_MONOTONIC)`
    /// (`lib/redlock/client.rb`).
    const CLIENT_CLOCK: ClockKind = ClockKind::Monotonic;
    /// Redis expires keys by its wall clock: `mstime()` is `gettimeofday`
    /// (`src/server.c` and `src/db.c`, `keyIsExpired`) — Kleppmann's
    /// counterexample steps exactly this clock.
    const SERVER_CLOCK: ClockKind = ClockKind::Wall;

    fn validate(settings: &RedlockSettings) -> Result<(), SettingsError> {
        if settings.instances == 0 {
            return Err(SettingsError::Invalid {
                setting: "instances",
                reason: "a majority of zero instances is impossible",
            });
        }
        if ttl_ms(settings.ttl) == 0 {
            return Err(SettingsError::Zero { setting: "ttl" });
        }
        if ttl_ms(settings.ttl) <= settings.drift_ms() {
            return Err(SettingsError::Invalid {
                setting: "ttl",
                reason: "the TTL does not exceed the drift (TTL/100 + 2 ms): no validity is ever positive",
            });
        }
        nonzero("redis_timeout", settings.redis_timeout)?;
        nonzero("extend_interval", settings.extend_interval)?;
        nonzero("reacquire_interval", settings.reacquire_interval)?;
        if settings.extend_interval >= settings.ttl {
            return Err(SettingsError::NotGreater {
                setting: "ttl",
                than: "extend_interval",
                value: settings.ttl,
                bound: settings.extend_interval,
            });
        }
        Ok(())
    }

    fn servers(settings: &RedlockSettings) -> u16 {
        settings.instances
    }

    /// Each instance expires its key `ttl` (whole ms) after the `SET ... PX`
    /// or extension that set it (`server.rs`: `expires_at: now + ttl_ms`;
    /// gone at the first instant past it, Redis's `now > expire`). Lengths:
    /// the TTL; the validity a client counts from its round's end, `ttl −
    /// drift(ttl)` (`client.rs`, `validity`: redlock-rb's
    /// `ttl - time_elapsed - drift`, here with no time elapsed); and the
    /// leader's extension period (`client.rs`, `acquired`).
    fn boundaries(settings: &RedlockSettings) -> Boundaries {
        let ttl = Duration::from_millis(ttl_ms(settings.ttl));
        let drift = Duration::from_millis(settings.drift_ms());
        Boundaries {
            expiries: vec![ttl],
            expiry_tick: None,
            lengths: vec![ttl, ttl.saturating_sub(drift), settings.extend_interval],
        }
    }

    /// Each `RedisClient` (one per instance in redlock-rb) keeps one TCP
    /// connection, numbered by the client: a driver carries it as a stream
    /// (in order, held while its link is down, as the kernel retransmits,
    /// and opened by a handshake), as `fenced-lab`'s proxy carries it.
    fn request_connection(request: &RedisRequest) -> Option<u64> {
        Some(request.conn())
    }

    /// The prelude is a new connection's first packet.
    fn opens_connection(request: &RedisRequest) -> bool {
        matches!(request, RedisRequest::Hello { .. })
    }

    fn response_connection(response: &RedisResponse) -> Option<u64> {
        Some(response.conn())
    }

    /// A connect to an instance that is down is refused by its machine's
    /// kernel: redis-client raises `CannotConnectError` (a
    /// `ConnectionError`) at once, which `lock_instances` counts as an
    /// error, without waiting out `redis_timeout`.
    fn refused(connection: u64) -> Option<RedisResponse> {
        Some(RedisResponse::Closed { conn: connection })
    }

    fn new_server(_settings: &RedlockSettings, index: ServerIndex) -> RedisInstance {
        RedisInstance::new(index)
    }

    fn new_client(
        settings: &RedlockSettings,
        id: ClientId,
        _name: &str,
        seed: u64,
    ) -> RedlockClient {
        RedlockClient::new(settings.clone(), id, seed)
    }
}
