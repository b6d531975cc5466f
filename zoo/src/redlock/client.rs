//! The Redlock client: redlock-rb's `lock` / `lock(extend:)` / `unlock`,
//! driven by a small leader loop.

use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use super::{ttl_ms, RedisRequest, RedisResponse, Redlock, RedlockSettings};
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
    /// The instance being asked.
    instance: u16,
    /// Its request's id and when it times out.
    request_id: u64,
    deadline: Instant,
    /// How many instances said yes so far.
    locked: u16,
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
    /// Outputs not yet polled, the clock guard and the request ids.
    outbox: Outbox<ClientOutput<Redlock>>,
    rng: Box<ChaCha8Rng>,
}

impl RedlockClient {
    /// An idle client.
    pub fn new(settings: RedlockSettings, id: ClientId, seed: u64) -> Self {
        RedlockClient {
            settings,
            id,
            phase: Phase::Idle,
            round: None,
            held: None,
            told_leader: false,
            outbox: Outbox::new(),
            rng: Box::new(ChaCha8Rng::seed_from_u64(seed)),
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
            request_id: 0,
            deadline: now,
            locked: 0,
        });
        self.send_current(now);
    }

    /// Sends the current round's request to its current instance.
    fn send_current(&mut self, now: Instant) {
        let id = self.outbox.next_request_id();
        let Some(round) = self.round.as_mut() else {
            return;
        };
        round.request_id = id;
        round.deadline = now + self.settings.redis_timeout;
        let request = match round.kind {
            RoundKind::Acquire { .. } => RedisRequest::Lock {
                id,
                value: round.value,
                ttl_ms: ttl_ms(self.settings.ttl),
                allow_new: true,
            },
            RoundKind::Extend => RedisRequest::Lock {
                id,
                value: round.value,
                ttl_ms: ttl_ms(self.settings.ttl),
                allow_new: !self.settings.extend_only_if_locked,
            },
            RoundKind::Unlock { .. } => RedisRequest::Unlock {
                id,
                value: round.value,
            },
        };
        self.outbox.push(ClientOutput::Send {
            to: round.instance,
            request,
        });
    }

    /// The current instance answered (`yes`) or timed out (`false`): move on.
    fn advance(&mut self, yes: bool, now: Instant) {
        let Some(round) = self.round.as_mut() else {
            return;
        };
        if yes {
            round.locked += 1;
        }
        round.instance += 1;
        if round.instance < self.settings.instances {
            self.send_current(now);
            return;
        }
        let round = *round;
        self.round = None;
        self.finish_round(round, now);
    }

    fn finish_round(&mut self, round: Round, now: Instant) {
        match round.kind {
            RoundKind::Acquire { attempt } => match self.validity(&round, now) {
                Some(valid_until) => self.acquired(round.value, valid_until, now),
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
                Some(valid_until) => self.acquired(round.value, valid_until, now),
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
    /// and `validity >= 0`. Returns the local deadline `now + validity`.
    fn validity(&self, round: &Round, now: Instant) -> Option<Instant> {
        let elapsed_ms = now.as_millis() - round.started_at.as_millis();
        let validity_ms = i128::from(ttl_ms(self.settings.ttl))
            - i128::from(elapsed_ms)
            - i128::from(self.settings.drift_ms());
        if round.locked >= self.settings.quorum() && validity_ms >= 0 {
            let validity_ms = u64::try_from(validity_ms).expect("checked non-negative above");
            Some(now + Duration::from_millis(validity_ms))
        } else {
            None
        }
    }

    fn acquired(&mut self, value: u128, valid_until: Instant, now: Instant) {
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
        self.begin_round(RoundKind::Acquire { attempt: 0 }, value, now);
    }

    fn handle_response(&mut self, from: ServerIndex, response: RedisResponse, now: Instant) {
        let now = self.outbox.observe(now);
        let Some(round) = self.round else {
            return;
        };
        let (id, yes) = match response {
            RedisResponse::Lock { id, ok } => (id, ok),
            RedisResponse::Unlock { id, deleted } => (id, deleted),
        };
        // A reply to anything but the call in progress belongs to a
        // connection redis-client has already dropped: never read.
        if id != round.request_id || from != round.instance {
            return;
        }
        self.advance(yes, now);
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
                self.advance(false, now);
            }
        }
        if let Phase::Waiting { until, next } = self.phase {
            if now >= until {
                match next {
                    Next::Acquire { attempt } => {
                        let value = self.new_value();
                        self.begin_round(RoundKind::Acquire { attempt }, value, now);
                    }
                    Next::Extend => {
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
