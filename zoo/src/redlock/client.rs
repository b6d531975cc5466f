//! The Redlock client: redlock-rb's `lock` / `lock(extend:)` / `unlock`,
//! driven by a small leader loop.

use std::time::Duration;

use rand_core::Rng;

use super::{ttl_ms, RedisRequest, RedisResponse, RedisScript, Redlock, RedlockSettings};
use crate::outbox::Outbox;
use crate::util::{below, earliest_of};
use crate::{ClientId, ClientOutput, Instant, Leadership, LockClient, ServerIndex};

/// Why a sequence of per-instance calls is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RoundKind {
    /// `lock_instances` of try `attempt` (0-based) of a `lock` call.
    Acquire { attempt: u32 },
    /// `lock_instances` of `lock(extend: lock_info)`.
    Extend,
    /// `unlock` on every instance after a failed round, then `then`.
    Unlock { then: AfterUnlock },
}

/// What follows an unlock sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AfterUnlock {
    /// Sleep `retry_delay + rand(retry_jitter)`, then try `attempt`.
    Retry { attempt: u32 },
    /// `lock` returned false: wait `reacquire_interval`, call `lock` again.
    Reacquire,
    /// The extend failed: step down, then as `Reacquire`.
    StepDown,
    /// `stop` asked for it: go idle.
    Stop,
}

/// One call to each instance in turn (redlock-rb is sequential).
#[derive(Clone, Copy, Debug)]
struct Round {
    kind: RoundKind,
    value: u128,
    /// `timed`'s start, local clock.
    started_at: Instant,
    /// The instance being asked; the call waits on its socket
    /// (`sockets[instance]`: the prelude while `Opening`, the command's
    /// answer while `Open`).
    instance: u16,
    /// Where the call to `instance` is (its command, or the script
    /// reload a `NOSCRIPT` began).
    step: Step,
    /// The id of the request the step waits on, and when it times out.
    request_id: u64,
    deadline: Instant,
    /// How many instances said yes so far.
    locked: u16,
    /// How many instances failed to answer (redis-client's timeout errors,
    /// which `lock_instances` rescues into `errors` and counts as not locked).
    errors: u16,
}

/// Where a call to one instance is: redlock-rb's
/// `recover_from_script_flush` around the call's `EVALSHA`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// The `EVALSHA` (or the prelude before it): `retried` once a
    /// `NOSCRIPT` made it reload the scripts (`retry_on_noscript = false`:
    /// a second `NOSCRIPT` raises).
    Command { retried: bool },
    /// `load_scripts`: `SCRIPT LOAD` of `RedisScript::LOAD_ORDER[.0]` is
    /// out; the three go in turn, then the `EVALSHA` again.
    Load(u8),
}

/// The client's TCP connection to one instance: redlock-rb keeps one
/// `RedisClient` per instance, and redis-client one socket, opened by the
/// first call that needs it (`ensure_connected`, `raw_connection`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Socket {
    /// None: the next call connects first.
    Closed,
    /// Connecting: the prelude (`Hello`) of connection `.0` is out.
    Opening(u64),
    /// Open and ready.
    Open(u64),
    /// Reset under the client by the instance's kernel (it died) while no
    /// call waited on it: redis-client's `connected?` is `!@io.closed?`,
    /// true of a socket the peer reset, so the next call writes on it,
    /// reads EOF and fails at once.
    Reset,
}

/// What the client does between rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Round,
    /// Sleeping until `until`, then `next`.
    Waiting {
        until: Instant,
        next: Next,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Acquire { attempt: u32 },
    Extend,
}

/// The lock as `lock` returned it (`lock_info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    value: u128,
    /// End of the successful round + validity, local clock.
    valid_until: Instant,
}

/// What the last `lock` call (or `lock(extend:)`) returned to its caller, as
/// redlock-rb's `lock` returns it (`lib/redlock/client.rb`,
/// `try_lock_instances` and `lock_instances`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockReturn {
    /// `lock_info`: `{ validity:, resource:, value: }`.
    Locked {
        /// The value the instances hold (`SecureRandom.uuid`, or the
        /// extended lock's value).
        value: u128,
        /// `ttl - time_elapsed - drift(ttl)`, whole milliseconds.
        validity_ms: u64,
    },
    /// `false`: no majority, or no validity left, in every try.
    False,
    /// `raise last_error`: some try ended with at least a quorum of instance
    /// errors (`LockAcquisitionError`, rescued by `try_lock_instances` and
    /// raised after the last try). `errors` is that try's error count
    /// (`error.errors.size`).
    Raised {
        /// How many instances errored in the last try that raised.
        errors: u16,
    },
}

/// A Redlock client. See the [module docs](super).
#[derive(Clone, Debug)]
pub struct RedlockClient {
    settings: RedlockSettings,
    id: ClientId,
    phase: Phase,
    round: Option<Round>,
    held: Option<Held>,
    /// Whether the application was told `BecameLeader` and not yet
    /// `LostLeadership`.
    told_leader: bool,
    /// Outputs not yet polled, the clock guard and the request ids (which
    /// number the connections too).
    outbox: Outbox<ClientOutput<Redlock>>,
    /// The connection to each instance, by instance index.
    sockets: Vec<Socket>,
    rng: Box<fenced::SeededRng>,
    /// `try_lock_instances`' `last_error` during a `lock` call: the error
    /// count of the last try that raised.
    last_error: Option<u16>,
    /// What the last finished `lock` call returned.
    last_lock: Option<LockReturn>,
}

impl RedlockClient {
    /// An idle client.
    pub fn new(settings: RedlockSettings, id: ClientId, seed: u64) -> Self {
        let sockets = vec![Socket::Closed; usize::from(settings.instances)];
        RedlockClient {
            settings,
            id,
            phase: Phase::Idle,
            round: None,
            held: None,
            told_leader: false,
            outbox: Outbox::new(),
            sockets,
            rng: Box::new(fenced::SeededRng::seed_from_u64(seed)),
            last_error: None,
            last_lock: None,
        }
    }

    /// What the last finished `lock` call — the application's, or an
    /// extend's — returned; `None` before the first one returns.
    pub fn last_lock(&self) -> Option<LockReturn> {
        self.last_lock
    }

    /// Starts with `lock(resource, ttl, extend: { value: value })` instead of
    /// a fresh lock: one try with the given value (redlock-rb lets a caller
    /// pass any `lock_info`, for one it got earlier or from elsewhere). With
    /// [`RedlockSettings::extend_only_if_locked`] it succeeds only where an
    /// instance already holds `value`; without it, it also sets `value` where
    /// the key is absent. Success makes the client leader and the loop goes
    /// on extending; failure unlocks `value` everywhere and the loop calls
    /// `lock` afresh after `reacquire_interval`. No-op unless idle.
    pub fn start_extending(&mut self, value: u128, now: Instant) {
        let now = self.outbox.observe(now);
        if self.phase == Phase::Idle {
            self.last_error = None;
            self.begin_round(RoundKind::Extend, value, now);
        }
    }

    /// The process identity.
    pub fn id(&self) -> ClientId {
        self.id
    }

    /// The validity deadline of the lock in hand (local clock), if any.
    pub fn valid_until(&self) -> Option<Instant> {
        self.held.map(|held| held.valid_until)
    }

    fn begin_round(&mut self, kind: RoundKind, value: u128, now: Instant) {
        self.phase = Phase::Round;
        self.round = Some(Round {
            kind,
            value,
            started_at: now,
            instance: 0,
            step: Step::Command { retried: false },
            request_id: 0,
            deadline: now,
            locked: 0,
            errors: 0,
        });
        self.send_current(now);
    }

    /// Makes the current round's call to its current instance: on the open
    /// connection, or after opening one (redis-client connects inside the
    /// call that needs it), or — on a connection the instance's kernel
    /// reset — failing at once.
    fn send_current(&mut self, now: Instant) {
        let Some(round) = self.round else {
            return;
        };
        let index = usize::from(round.instance);
        match self.sockets[index] {
            Socket::Open(conn) => self.send_command(conn, now),
            // A prelude still out (its round abandoned by `stop`).
            Socket::Opening(_) => self.await_prelude(now),
            Socket::Closed => {
                let conn = self.outbox.next_request_id();
                self.sockets[index] = Socket::Opening(conn);
                self.await_prelude(now);
                self.outbox.push(ClientOutput::Send {
                    to: round.instance,
                    request: RedisRequest::Hello { conn },
                });
            }
            Socket::Reset => {
                // The write goes out on a reset socket and the read meets
                // EOF: `ConnectionError`, which `ensure_connected` answers
                // by closing the socket and, with redis-client's default
                // `reconnect_attempts: false`, raising — no retry; the next
                // call connects anew. `lock_instances` counts the error.
                self.sockets[index] = Socket::Closed;
                self.advance(false, true, now);
            }
        }
    }

    /// The round waits for its socket's prelude, within one
    /// `redis_timeout` for the handshake and the prelude together.
    fn await_prelude(&mut self, now: Instant) {
        if let Some(round) = self.round.as_mut() {
            round.deadline = now + self.settings.redis_timeout;
        }
    }

    /// Sends the current round's command on the open connection `conn`.
    fn send_command(&mut self, conn: u64, now: Instant) {
        let id = self.outbox.next_request_id();
        let Some(round) = self.round.as_mut() else {
            return;
        };
        round.request_id = id;
        round.deadline = now + self.settings.redis_timeout;
        let request = match round.kind {
            RoundKind::Acquire { .. } => RedisRequest::Lock {
                conn,
                id,
                value: round.value,
                ttl_ms: ttl_ms(self.settings.ttl),
                allow_new: true,
            },
            RoundKind::Extend => RedisRequest::Lock {
                conn,
                id,
                value: round.value,
                ttl_ms: ttl_ms(self.settings.ttl),
                allow_new: !self.settings.extend_only_if_locked,
            },
            RoundKind::Unlock { .. } => RedisRequest::Unlock {
                conn,
                id,
                value: round.value,
            },
        };
        self.outbox.push(ClientOutput::Send {
            to: round.instance,
            request,
        });
    }

    /// Sends `load_scripts`' `k`-th `SCRIPT LOAD` on `conn`, bounded by
    /// `redis_timeout` as every command of redis-client is.
    fn send_load(&mut self, conn: u64, k: u8, now: Instant) {
        let id = self.outbox.next_request_id();
        let Some(round) = self.round.as_mut() else {
            return;
        };
        round.step = Step::Load(k);
        round.request_id = id;
        round.deadline = now + self.settings.redis_timeout;
        self.outbox.push(ClientOutput::Send {
            to: round.instance,
            request: RedisRequest::ScriptLoad {
                conn,
                id,
                script: RedisScript::LOAD_ORDER[usize::from(k)],
            },
        });
    }

    /// Whether `(conn, id)` answers the request the round waits on at
    /// instance `from`: a reply to anything else belongs to a connection
    /// redis-client has already dropped, never read.
    fn is_current(&self, from: ServerIndex, conn: u64, id: u64) -> bool {
        self.sockets.get(usize::from(from)) == Some(&Socket::Open(conn))
            && self
                .round
                .is_some_and(|round| round.instance == from && round.request_id == id)
    }

    /// Whether the round in progress waits on instance `from`'s socket.
    fn waits_on(&self, from: ServerIndex) -> bool {
        self.round.is_some_and(|round| round.instance == from)
    }

    /// The current instance answered (`yes`), or the call failed
    /// (`errored`: a timeout or a connection error): move on.
    fn advance(&mut self, yes: bool, errored: bool, now: Instant) {
        let Some(round) = self.round.as_mut() else {
            return;
        };
        if yes {
            round.locked += 1;
        }
        if errored {
            round.errors += 1;
        }
        round.instance += 1;
        round.step = Step::Command { retried: false };
        if round.instance < self.settings.instances {
            self.send_current(now);
            return;
        }
        let round = *round;
        self.round = None;
        self.finish_round(round, now);
    }

    fn finish_round(&mut self, round: Round, now: Instant) {
        // `lock_instances` raises `LockAcquisitionError` after its unlock
        // sweep when `errors.size >= @quorum`; `try_lock_instances` rescues
        // it into `last_error` and goes on.
        let failed = matches!(round.kind, RoundKind::Acquire { .. } | RoundKind::Extend)
            && self.validity(&round, now).is_none();
        if failed && round.errors >= self.settings.quorum() {
            self.last_error = Some(round.errors);
        }
        match round.kind {
            RoundKind::Acquire { attempt } => match self.validity(&round, now) {
                Some((valid_until, validity_ms)) => {
                    self.acquired(round.value, valid_until, validity_ms, now)
                }
                None => {
                    let then = if attempt < self.settings.retry_count {
                        AfterUnlock::Retry {
                            attempt: attempt + 1,
                        }
                    } else {
                        AfterUnlock::Reacquire
                    };
                    self.begin_round(RoundKind::Unlock { then }, round.value, now);
                }
            },
            RoundKind::Extend => match self.validity(&round, now) {
                Some((valid_until, validity_ms)) => {
                    self.acquired(round.value, valid_until, validity_ms, now)
                }
                None => {
                    let then = AfterUnlock::StepDown;
                    self.begin_round(RoundKind::Unlock { then }, round.value, now);
                }
            },
            RoundKind::Unlock { then } => self.after_unlock(then, now),
        }
    }

    /// redlock-rb's verdict: `validity = ttl - time_elapsed - drift(ttl)` in
    /// whole milliseconds of the client's clock; success iff a quorum locked
    /// and `validity >= 0`. Returns the local deadline `now + validity` and
    /// the validity in milliseconds.
    fn validity(&self, round: &Round, now: Instant) -> Option<(Instant, u64)> {
        let elapsed_ms = now.as_millis() - round.started_at.as_millis();
        let validity_ms = i128::from(ttl_ms(self.settings.ttl))
            - i128::from(elapsed_ms)
            - i128::from(self.settings.drift_ms());
        if round.locked >= self.settings.quorum() && validity_ms >= 0 {
            let validity_ms = u64::try_from(validity_ms).expect("checked non-negative above");
            Some((now + Duration::from_millis(validity_ms), validity_ms))
        } else {
            None
        }
    }

    fn acquired(&mut self, value: u128, valid_until: Instant, validity_ms: u64, now: Instant) {
        self.last_lock = Some(LockReturn::Locked { value, validity_ms });
        self.held = Some(Held { value, valid_until });
        if !self.told_leader && now < valid_until {
            self.told_leader = true;
            self.outbox.push(ClientOutput::BecameLeader { token: None });
        }
        self.phase = Phase::Waiting {
            until: now + self.settings.extend_interval,
            next: Next::Extend,
        };
    }

    fn after_unlock(&mut self, then: AfterUnlock, now: Instant) {
        match then {
            AfterUnlock::Retry { attempt } => {
                let jitter_ms = below(&mut self.rng, ttl_ms(self.settings.retry_jitter));
                let delay = self.settings.retry_delay + Duration::from_millis(jitter_ms);
                self.phase = Phase::Waiting {
                    until: now + delay,
                    next: Next::Acquire { attempt },
                };
            }
            AfterUnlock::Reacquire | AfterUnlock::StepDown => {
                // `lock` returns: `raise last_error if last_error`, else false.
                self.last_lock = Some(match self.last_error.take() {
                    Some(errors) => LockReturn::Raised { errors },
                    None => LockReturn::False,
                });
                self.lose("extend failed");
                self.held = None;
                self.phase = Phase::Waiting {
                    until: now + self.settings.reacquire_interval,
                    next: Next::Acquire { attempt: 0 },
                };
            }
            AfterUnlock::Stop => {
                self.phase = Phase::Idle;
            }
        }
    }

    fn lose(&mut self, reason: &'static str) {
        if self.told_leader {
            self.told_leader = false;
            self.outbox.push(ClientOutput::LostLeadership { reason });
        }
    }

    fn new_value(&mut self) -> u128 {
        (u128::from(self.rng.next_u64()) << 64) | u128::from(self.rng.next_u64())
    }
}

impl LockClient<Redlock> for RedlockClient {
    fn start(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        if self.phase != Phase::Idle {
            return;
        }
        let value = self.new_value();
        self.last_error = None;
        self.begin_round(RoundKind::Acquire { attempt: 0 }, value, now);
    }

    fn handle_response(&mut self, from: ServerIndex, response: RedisResponse, now: Instant) {
        let now = self.outbox.observe(now);
        let Some(socket) = self.sockets.get(usize::from(from)).copied() else {
            return;
        };
        let index = usize::from(from);
        match response {
            RedisResponse::Hello { conn } => {
                // A prelude of a connection given up is never read.
                if socket != Socket::Opening(conn) {
                    return;
                }
                self.sockets[index] = Socket::Open(conn);
                if self.waits_on(from) {
                    self.send_command(conn, now);
                }
            }
            RedisResponse::Closed { conn } => {
                let open = match socket {
                    Socket::Opening(c) if c == conn => false,
                    Socket::Open(c) if c == conn => true,
                    _ => return,
                };
                if self.waits_on(from) {
                    // The call waiting on the socket reads EOF (or the
                    // connect is refused): a `ConnectionError` at once.
                    self.sockets[index] = Socket::Closed;
                    self.advance(false, true, now);
                } else if open {
                    self.sockets[index] = Socket::Reset;
                } else {
                    self.sockets[index] = Socket::Closed;
                }
            }
            RedisResponse::Lock { conn, id, ok: yes }
            | RedisResponse::Unlock {
                conn,
                id,
                deleted: yes,
            } => {
                if !self.is_current(from, conn, id) {
                    return;
                }
                self.advance(yes, false, now);
            }
            RedisResponse::NoScript { conn, id } => {
                if !self.is_current(from, conn, id) {
                    return;
                }
                match self.round.map(|round| round.step) {
                    // `recover_from_script_flush`: `load_scripts`, then
                    // the call again, once.
                    Some(Step::Command { retried: false }) => self.send_load(conn, 0, now),
                    // A second `NOSCRIPT` is raised: a `CommandError`,
                    // which `lock_instances` counts as an error (and
                    // `unlock` swallows); the connection stays open.
                    _ => self.advance(false, true, now),
                }
            }
            RedisResponse::ScriptLoaded { conn, id } => {
                if !self.is_current(from, conn, id) {
                    return;
                }
                let Some(Step::Load(k)) = self.round.map(|round| round.step) else {
                    return;
                };
                if usize::from(k) + 1 < RedisScript::LOAD_ORDER.len() {
                    self.send_load(conn, k + 1, now);
                } else {
                    // The three are loaded: the `EVALSHA` again, its last try.
                    if let Some(round) = self.round.as_mut() {
                        round.step = Step::Command { retried: true };
                    }
                    self.send_command(conn, now);
                }
            }
        }
        self.handle_timeout(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        if let Some(held) = self.held {
            if now >= held.valid_until {
                self.lose("validity elapsed");
            }
        }
        if let Some(round) = self.round {
            if now >= round.deadline {
                // redis-client's timeout is a `ConnectionError`: it closes
                // the socket (the FIN follows what was sent on it), so a
                // late reply is never read and the next call connects anew.
                let index = usize::from(round.instance);
                if let Socket::Opening(conn) | Socket::Open(conn) = self.sockets[index] {
                    self.outbox.push(ClientOutput::Send {
                        to: round.instance,
                        request: RedisRequest::Close { conn },
                    });
                }
                self.sockets[index] = Socket::Closed;
                self.advance(false, true, now);
            }
        }
        if let Phase::Waiting { until, next } = self.phase {
            if now >= until {
                match next {
                    Next::Acquire { attempt } => {
                        if attempt == 0 {
                            self.last_error = None;
                        }
                        let value = self.new_value();
                        self.begin_round(RoundKind::Acquire { attempt }, value, now);
                    }
                    Next::Extend => {
                        self.last_error = None;
                        let value = self.held.expect("only a holder waits to extend").value;
                        self.begin_round(RoundKind::Extend, value, now);
                    }
                }
            }
        }
    }

    fn next_timeout(&self) -> Option<Instant> {
        let validity = self
            .held
            .filter(|_| self.told_leader)
            .map(|held| held.valid_until);
        let deadline = self.round.map(|round| round.deadline);
        let waiting = match self.phase {
            Phase::Waiting { until, .. } => Some(until),
            _ => None,
        };
        earliest_of([validity, deadline, waiting])
    }

    fn poll_output(&mut self) -> Option<ClientOutput<Redlock>> {
        self.outbox.pop()
    }

    /// `unlock(lock_info)`: the application stops leading at once, then the
    /// value is deleted from every instance in turn. A `lock` in progress is
    /// abandoned and its value unlocked the same way.
    fn stop(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        self.lose("stopped");
        let value = self
            .round
            .map(|round| round.value)
            .or(self.held.map(|held| held.value));
        self.held = None;
        self.round = None;
        match value {
            Some(value) => self.begin_round(
                RoundKind::Unlock {
                    then: AfterUnlock::Stop,
                },
                value,
                now,
            ),
            None => self.phase = Phase::Idle,
        }
    }

    /// The process was killed: its kernel closes its connections, each
    /// instance reading the FIN after what was sent before it.
    fn kernel_closed(&mut self, now: Instant) {
        let _ = self.outbox.observe(now);
        for (index, socket) in (0..).zip(self.sockets.iter_mut()) {
            if let Socket::Opening(conn) | Socket::Open(conn) = *socket {
                self.outbox.push(ClientOutput::Send {
                    to: index,
                    request: RedisRequest::Close { conn },
                });
            }
            *socket = Socket::Closed;
        }
    }

    fn leadership(&self, now: Instant) -> Option<Leadership> {
        let now = self.outbox.at(now);
        match self.held {
            Some(held) if self.told_leader && now < held.valid_until => {
                Some(Leadership { token: None })
            }
            _ => None,
        }
    }
}
