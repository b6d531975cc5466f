//! The DynamoDB lock client: `acquireLock`'s loop, the heartbeat thread, and
//! the application that re-acquires whenever it holds nothing.

use std::time::Duration;

use rand_core::Rng;

use super::{
    Condition, DynamoDb, DynamoDbError, DynamoDbRequest, DynamoDbResponse, DynamoDbSettings,
    LockItem, Rvn,
};
use crate::outbox::Outbox;
use crate::util::earliest_of;
use crate::{ClientId, ClientOutput, Instant, Leadership, LockClient, ServerIndex};

/// `lockTryingToBeAcquired`: an RVN and when this client first read it.
#[derive(Clone, Copy, Debug)]
struct Watched {
    rvn: Rvn,
    lookup: Instant,
    lease_duration: Duration,
}

/// Where one iteration of `acquireLock`'s loop is.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// `GetItem` in flight.
    Read { id: u64, deadline: Instant },
    /// A conditional `PutItem` in flight, sent at `sent_at`.
    Write {
        id: u64,
        deadline: Instant,
        rvn: Rvn,
        sent_at: Instant,
    },
    /// `Thread.sleep(refreshPeriod)`.
    Sleep { until: Instant },
}

/// One `acquireLock` call.
#[derive(Clone, Copy, Debug)]
struct Acquire {
    /// `currentTimeMillis` at the call's start.
    started: Instant,
    /// `millisecondsToWait`: `additionalTimeToWaitForLock` (+ the lease once).
    wait: Duration,
    extended: bool,
    watched: Option<Watched>,
    step: Step,
}

/// The lock in `locks`: its RVN and `lookupTime`.
#[derive(Clone, Copy, Debug)]
struct Held {
    rvn: Rvn,
    lookup: Instant,
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    Idle,
    Acquiring(Acquire),
    Holding(Held),
}

/// A heartbeat `UpdateItem` in flight.
#[derive(Clone, Copy, Debug)]
struct Beat {
    id: u64,
    expected: Rvn,
    rvn: Rvn,
    sent_at: Instant,
    deadline: Instant,
}

/// A DynamoDB lock client and its application. See the [module docs](super).
#[derive(Clone, Debug)]
pub struct DynamoDbClient {
    settings: DynamoDbSettings,
    id: ClientId,
    rng: Box<fenced::SeededRng>,
    phase: Phase,
    /// A lock the application gave up on when it expired locally, still in
    /// `locks`: the heartbeat thread keeps heartbeating it until a round
    /// finds it expired (`sendHeartbeat`'s `isExpired()` check) or its
    /// condition fails, and a heartbeat sent before the expiry and answered
    /// after it revives it (`updateRecordVersionNumber` sets `lookupTime` to
    /// the send). The application, already back in a (non-reentrant)
    /// `acquireLock`, never takes it back.
    stale: Option<Held>,
    /// The heartbeat thread's next round, and the call it blocks on.
    next_beat: Option<Instant>,
    beat: Option<Beat>,
    /// Outputs not yet polled, the clock guard and the request ids.
    outbox: Outbox<ClientOutput<DynamoDb>>,
}

impl DynamoDbClient {
    /// An idle client.
    pub fn new(settings: DynamoDbSettings, id: ClientId, seed: u64) -> Self {
        DynamoDbClient {
            settings,
            id,
            rng: Box::new(fenced::SeededRng::seed_from_u64(seed)),
            phase: Phase::Idle,
            stale: None,
            next_beat: None,
            beat: None,
            outbox: Outbox::new(),
        }
    }

    /// The process identity.
    pub fn id(&self) -> ClientId {
        self.id
    }

    /// The RVN of the lock this client holds (in `locks`), if any.
    pub fn held_rvn(&self) -> Option<Rvn> {
        match self.phase {
            Phase::Holding(held) => Some(held.rvn),
            _ => None,
        }
    }

    /// The RVN an `acquireLock` call is waiting out, and since when (local).
    pub fn waiting_on(&self) -> Option<(Rvn, Instant)> {
        match self.phase {
            Phase::Acquiring(Acquire {
                watched: Some(watched),
                ..
            }) => Some((watched.rvn, watched.lookup)),
            _ => None,
        }
    }

    /// The `acquireLock` call under way, if any: when it began (this
    /// client's clock, `currentTimeMillis` in upstream's code) and its
    /// budget `millisecondsToWait` — `additionalTimeToWaitForLock`, plus the
    /// held item's `leaseDuration` once it has been seen.
    pub fn acquire_call(&self) -> Option<(Instant, Duration)> {
        match self.phase {
            Phase::Acquiring(acquire) => Some((acquire.started, acquire.wait)),
            _ => None,
        }
    }

    fn send(&mut self, request: DynamoDbRequest) {
        self.outbox.push(ClientOutput::Send { to: 0, request });
    }

    /// `LockItem.isExpired()` of a held lock.
    fn expires_at(&self, held: Held) -> Instant {
        held.lookup + self.settings.lease_duration
    }

    /// A new `acquireLock` call.
    fn begin_acquire(&mut self, now: Instant) {
        let acquire = Acquire {
            started: now,
            wait: self.settings.additional_time_to_wait,
            extended: false,
            watched: None,
            step: Step::Sleep { until: now },
        };
        self.read(acquire, now);
    }

    fn read(&mut self, mut acquire: Acquire, now: Instant) {
        let id = self.outbox.next_request_id();
        acquire.step = Step::Read {
            id,
            deadline: now + self.settings.request_timeout,
        };
        self.phase = Phase::Acquiring(acquire);
        self.send(DynamoDbRequest::Get { id });
    }

    fn write(&mut self, mut acquire: Acquire, condition: Condition, now: Instant) {
        let id = self.outbox.next_request_id();
        let rvn = Rvn(self.rng.next_u64());
        acquire.step = Step::Write {
            id,
            deadline: now + self.settings.request_timeout,
            rvn,
            sent_at: now,
        };
        self.phase = Phase::Acquiring(acquire);
        let lease_duration = self.settings.lease_duration;
        self.send(DynamoDbRequest::Put {
            id,
            condition,
            rvn,
            lease_duration,
        });
    }

    /// The end of a loop iteration without the lock: give up the call
    /// (`LockNotGrantedException`, and the application calls again) or sleep.
    fn end_iteration(&mut self, mut acquire: Acquire, now: Instant) {
        if now.saturating_duration_since(acquire.started) > acquire.wait {
            return self.begin_acquire(now);
        }
        acquire.step = Step::Sleep {
            until: now + self.settings.refresh_period,
        };
        self.phase = Phase::Acquiring(acquire);
    }

    fn on_read(&mut self, mut acquire: Acquire, item: Option<LockItem>, now: Instant) {
        let Some(item) = item else {
            return self.write(acquire, Condition::Absent, now);
        };
        if item.released {
            return self.write(acquire, Condition::Released, now);
        }
        match acquire.watched {
            Some(watched) if watched.rvn == item.rvn => {
                if now.saturating_duration_since(watched.lookup) > watched.lease_duration {
                    return self.write(acquire, Condition::Rvn(item.rvn), now);
                }
            }
            _ => {
                if !acquire.extended {
                    acquire.extended = true;
                    acquire.wait += item.lease_duration;
                }
                acquire.watched = Some(Watched {
                    rvn: item.rvn,
                    lookup: now,
                    lease_duration: item.lease_duration,
                });
            }
        }
        self.end_iteration(acquire, now);
    }

    fn lose(&mut self, reason: &'static str, now: Instant) {
        self.outbox.push(ClientOutput::LostLeadership { reason });
        self.begin_acquire(now);
    }

    /// `isExpired()` turned true while holding, between heartbeat rounds:
    /// the application stops and calls `acquireLock` again; the lock stays
    /// in `locks` (stale) until the heartbeat thread's next round.
    fn expire(&mut self, held: Held, now: Instant) {
        self.stale = Some(held);
        self.lose("lease expired", now);
    }

    /// A round of the heartbeat thread (`run()`, `sendHeartbeat`) over the
    /// lock in `locks`: the one held, or a stale one.
    fn heartbeat(&mut self, now: Instant) {
        self.next_beat = Some(now + self.settings.heartbeat_period);
        let held = match (self.phase, self.stale) {
            (Phase::Holding(held), _) => {
                if now > self.expires_at(held) {
                    // `isExpired()`: `locks.remove`, and the application
                    // calls `acquireLock` again.
                    return self.lose("lease expired", now);
                }
                held
            }
            (_, Some(stale)) => {
                if now > self.expires_at(stale) {
                    // `isExpired()`: `locks.remove`, no heartbeat.
                    self.stale = None;
                    return;
                }
                stale
            }
            _ => return,
        };
        let id = self.outbox.next_request_id();
        let rvn = Rvn(self.rng.next_u64());
        self.beat = Some(Beat {
            id,
            expected: held.rvn,
            rvn,
            sent_at: now,
            deadline: now + self.settings.request_timeout,
        });
        let lease_duration = self.settings.lease_duration;
        self.send(DynamoDbRequest::Put {
            id,
            condition: Condition::OwnerAndRvn(held.rvn),
            rvn,
            lease_duration,
        });
    }

    /// The blocking heartbeat call returned (or failed): the thread sleeps
    /// what is left of the period.
    fn beat_done(&mut self, now: Instant) {
        self.beat = None;
        self.next_beat = self.next_beat.map(|at| at.max(now));
    }

    /// `sendHeartbeat`'s `catch (AwsServiceException)`: with
    /// `holdLockOnServiceUnavailable` and a 503, `updateLookUpTime(now)`;
    /// any other failure is logged by `run()` and the lock is kept as it is.
    fn on_beat_failed(&mut self, beat: Beat, error: DynamoDbError, now: Instant) {
        self.beat_done(now);
        let hold = error == DynamoDbError::ServiceUnavailable
            && self.settings.hold_lock_on_service_unavailable;
        match (self.phase, self.stale) {
            (Phase::Holding(held), _) if held.rvn == beat.expected && hold => {
                self.phase = Phase::Holding(Held {
                    lookup: now,
                    ..held
                });
            }
            (_, Some(stale)) if stale.rvn == beat.expected && hold => {
                self.stale = Some(Held {
                    lookup: now,
                    ..stale
                });
            }
            _ => {}
        }
    }

    /// A failed `GetItem` or `PutItem` of `acquireLock`.
    fn on_acquire_failed(&mut self, acquire: Acquire, error: DynamoDbError, now: Instant) {
        match error {
            // `catch (ProvisionedThroughputExceededException)` throws
            // `LockNotGrantedException`, caught by the loop like a failed
            // condition; `catch (SdkClientException)` logs and goes on.
            DynamoDbError::ProvisionedThroughputExceeded | DynamoDbError::SdkClient => {
                self.end_iteration(acquire, now);
            }
            // Not caught: the call throws, the application calls again.
            DynamoDbError::ServiceUnavailable => self.begin_acquire(now),
        }
    }

    fn on_beat_answer(&mut self, beat: Beat, applied: bool, now: Instant) {
        self.beat_done(now);
        if self.stale.is_some_and(|stale| stale.rvn == beat.expected) {
            // Revived (`lookupTime` = the send) or gone (`locks.remove`).
            self.stale = applied.then_some(Held {
                rvn: beat.rvn,
                lookup: beat.sent_at,
            });
            return;
        }
        let Phase::Holding(held) = self.phase else {
            return;
        };
        if held.rvn != beat.expected {
            return;
        }
        if applied {
            self.phase = Phase::Holding(Held {
                rvn: beat.rvn,
                lookup: beat.sent_at,
            });
        } else {
            self.lose("heartbeat rejected", now);
        }
    }
}

impl LockClient<DynamoDb> for DynamoDbClient {
    /// Builds the client (its heartbeat thread starts) and calls `acquireLock`.
    fn start(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        if matches!(self.phase, Phase::Idle) {
            self.next_beat = Some(now + self.settings.heartbeat_period);
            self.begin_acquire(now);
        }
    }

    fn handle_response(&mut self, _from: ServerIndex, response: DynamoDbResponse, now: Instant) {
        let now = self.outbox.observe(now);
        match (self.beat, &response) {
            (Some(beat), DynamoDbResponse::Written { id, applied }) if beat.id == *id => {
                return self.on_beat_answer(beat, *applied, now);
            }
            (Some(beat), DynamoDbResponse::Failed { id, error }) if beat.id == *id => {
                return self.on_beat_failed(beat, *error, now);
            }
            _ => {}
        }
        let Phase::Acquiring(acquire) = self.phase else {
            return;
        };
        match (acquire.step, response) {
            (Step::Read { id, .. }, DynamoDbResponse::Item { id: answer, item })
                if id == answer =>
            {
                self.on_read(acquire, item, now);
            }
            (
                Step::Write {
                    id, rvn, sent_at, ..
                },
                DynamoDbResponse::Written {
                    id: answer,
                    applied,
                },
            ) if id == answer => {
                if applied {
                    // `locks.put` replaces a stale entry of the same key.
                    self.stale = None;
                    self.phase = Phase::Holding(Held {
                        rvn,
                        lookup: sent_at,
                    });
                    self.outbox.push(ClientOutput::BecameLeader { token: None });
                } else {
                    self.end_iteration(acquire, now);
                }
            }
            (
                Step::Read { id, .. } | Step::Write { id, .. },
                DynamoDbResponse::Failed { id: answer, error },
            ) if id == answer => self.on_acquire_failed(acquire, error, now),
            _ => {}
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        if self.beat.is_some_and(|beat| now >= beat.deadline) {
            self.beat_done(now);
        }
        if self.beat.is_none() && self.next_beat.is_some_and(|at| now >= at) {
            self.heartbeat(now);
        }
        match self.phase {
            Phase::Holding(held) if now > self.expires_at(held) => self.expire(held, now),
            Phase::Acquiring(acquire) => match acquire.step {
                Step::Sleep { until } if now >= until => self.read(acquire, now),
                Step::Read { deadline, .. } | Step::Write { deadline, .. } if now >= deadline => {
                    self.end_iteration(acquire, now);
                }
                _ => {}
            },
            _ => {}
        }
    }

    fn next_timeout(&self) -> Option<Instant> {
        let phase = match self.phase {
            Phase::Idle => None,
            Phase::Holding(held) => Some(self.expires_at(held) + Duration::from_nanos(1)),
            Phase::Acquiring(acquire) => Some(match acquire.step {
                Step::Sleep { until } => until,
                Step::Read { deadline, .. } | Step::Write { deadline, .. } => deadline,
            }),
        };
        let beat = match self.beat {
            Some(beat) => Some(beat.deadline),
            None => self.next_beat,
        };
        earliest_of([phase, beat])
    }

    fn poll_output(&mut self) -> Option<ClientOutput<DynamoDb>> {
        self.outbox.pop()
    }

    /// `close()`: `releaseAllLocks` — the held lock's or a stale one's
    /// release (fire and forget) — and the heartbeat thread stops.
    fn stop(&mut self, now: Instant) {
        let _ = self.outbox.observe(now);
        if let Phase::Holding(_) = self.phase {
            self.outbox
                .push(ClientOutput::LostLeadership { reason: "stopped" });
        }
        // `releaseAllLocks`: every lock in `locks`, a stale one too.
        let in_locks = match self.phase {
            Phase::Holding(held) => Some(held),
            _ => self.stale,
        };
        if let Some(held) = in_locks {
            let id = self.outbox.next_request_id();
            self.send(DynamoDbRequest::Release {
                id,
                rvn: held.rvn,
                delete: self.settings.delete_lock_on_release,
            });
        }
        self.stale = None;
        self.phase = Phase::Idle;
        self.next_beat = None;
        self.beat = None;
    }

    /// `hasLock`: the lock is in `locks` and not `isExpired()` on this
    /// client's clock (no more than `leaseDuration` since its last successful
    /// write began) — even before a timer ran.
    fn leadership(&self, now: Instant) -> Option<Leadership> {
        let now = self.outbox.at(now);
        match self.phase {
            Phase::Holding(held) if now <= self.expires_at(held) => {
                Some(Leadership { token: None })
            }
            _ => None,
        }
    }
}
