//! client-go's `LeaderElector` with a `LeaseLock`, one blocking request at a
//! time, as a state machine.

use std::time::Duration;

use super::JITTER_FACTOR;
use super::{
    ApiRequest, ApiResponse, ApiResult, ClientGo, ClientGoSettings, LeaseRecord, RenewalOverdue,
};
use crate::outbox::Outbox;
use crate::util::{earliest_of, unit_fraction};
use crate::{ClientId, ClientOutput, Instant, Leadership, LockClient, ServerIndex};

/// Where `tryAcquireOrRenew` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// (1) the leader's optimistic `Update` of the cached object.
    FastUpdate,
    /// (2) `Get`.
    Get,
    /// (2) `Create` after NotFound.
    Create,
    /// (4) `Update` after the checks of (3).
    Update,
}

/// One run of `tryAcquireOrRenew`.
#[derive(Clone, Debug)]
struct Try {
    /// `now` captured at its start: the record's times, and the instant
    /// `isLeaseValid` is judged at.
    started_at: Instant,
    desired: LeaseRecord,
    step: Step,
}

/// Where `tryRelease` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReleaseStep {
    Get,
    Update,
}

/// The request in flight and when it is abandoned (its own timeout, or the
/// context's deadline if sooner).
#[derive(Clone, Copy, Debug)]
struct Rpc {
    id: u64,
    deadline: Instant,
}

/// One `PollUntilContextTimeout` of the renew loop.
#[derive(Clone, Copy, Debug)]
struct Poll {
    deadline: Instant,
    /// The non-sliding ticker's next tick.
    next_tick: Instant,
}

/// Where `Run` is.
#[derive(Clone, Copy, Debug)]
enum Phase {
    Idle,
    /// `acquire`: trying, or sleeping until `next_try_at`.
    Acquiring {
        next_try_at: Option<Instant>,
    },
    /// `renew`: in a poll, or sleeping until `next_poll_at`.
    Leading {
        token: u64,
        poll: Option<Poll>,
        next_poll_at: Instant,
    },
    /// `release` (bounded by `deadline`); `lost` is the reason
    /// `OnStoppedLeading` will give when it returns, if the application
    /// still leads.
    Releasing {
        token: u64,
        deadline: Instant,
        lost: Option<&'static str>,
        rerun: bool,
    },
}

/// A client-go leader elector. See the [module docs](super).
#[derive(Clone, Debug)]
pub struct ClientGoClient {
    settings: ClientGoSettings,
    id: ClientId,
    name: String,
    phase: Phase,
    attempt: Option<Try>,
    release_step: Option<ReleaseStep>,
    rpc: Option<Rpc>,
    /// `observedRecord`, `observedRawRecord`, `observedTime`.
    observed_record: Option<LeaseRecord>,
    observed_raw: Option<LeaseRecord>,
    observed_time: Instant,
    /// `ll.lease`: the object last returned by the server.
    cached: Option<(LeaseRecord, u64)>,
    /// Outputs not yet polled, the clock guard and the request ids.
    outbox: Outbox<ClientOutput<ClientGo>>,
    rng: Box<fenced::SeededRng>,
}

impl ClientGoClient {
    /// An idle elector with identity `name`.
    pub fn new(settings: ClientGoSettings, id: ClientId, name: &str, seed: u64) -> Self {
        ClientGoClient {
            settings,
            id,
            name: name.to_owned(),
            phase: Phase::Idle,
            attempt: None,
            release_step: None,
            rpc: None,
            observed_record: None,
            observed_raw: None,
            observed_time: Instant::ZERO,
            cached: None,
            outbox: Outbox::new(),
            rng: Box::new(fenced::SeededRng::seed_from_u64(seed)),
        }
    }

    /// The elector with its bookkeeping seeded, as upstream's unit tests
    /// build a `LeaderElector` literal: `observedRecord` = `record`,
    /// `observedRawRecord` = its encoding, `observedTime` = `observed_time`
    /// (on this client's clock; it may lie in the past or the future of the
    /// next `now`). The lock's cached object (`ll.lease`) stays empty, so the
    /// first try begins with a `Get` even where the fast path applies
    /// (`LeaseLock.Update`: "lease not initialized, call get or create
    /// first"). For a fresh elector only: it panics once the elector ran.
    pub fn with_observed(mut self, record: LeaseRecord, observed_time: Instant) -> Self {
        assert!(
            matches!(self.phase, Phase::Idle) && self.cached.is_none() && self.rpc.is_none(),
            "with_observed seeds a fresh elector"
        );
        self.observed_raw = Some(record.clone());
        self.observed_record = Some(record);
        self.observed_time = observed_time;
        self
    }

    /// The process identity.
    pub fn id(&self) -> ClientId {
        self.id
    }

    /// `observedTime`: when (local clock) the record was last seen to change.
    pub fn observed_time(&self) -> Instant {
        self.observed_time
    }

    /// `observedRecord`: the record as this elector last saw or wrote it,
    /// `None` before it saw any.
    pub fn observed_record(&self) -> Option<&LeaseRecord> {
        self.observed_record.as_ref()
    }

    /// `LeaderElector.Check`, what the healthz adaptor reports: an error if
    /// the observed record names this elector and it last observed the record
    /// more than `LeaseDuration` (its own setting, not the record's) plus
    /// `max_tolerable_expired_lease` before `now` — it should have stepped
    /// down by then, and a watchdog may kill it. A candidate is always
    /// healthy.
    pub fn check(
        &self,
        now: Instant,
        max_tolerable_expired_lease: Duration,
    ) -> Result<(), RenewalOverdue> {
        if !self.is_leader() {
            return Ok(());
        }
        let since_observed = self
            .outbox
            .at(now)
            .saturating_duration_since(self.observed_time);
        let limit = self.settings.lease_duration + max_tolerable_expired_lease;
        if since_observed > limit {
            return Err(RenewalOverdue {
                since_observed,
                limit,
            });
        }
        Ok(())
    }

    /// `IsLeader`: the observed record names this elector.
    pub fn is_leader(&self) -> bool {
        self.observed_record
            .as_ref()
            .is_some_and(|record| record.holder_identity == self.name)
    }

    /// `isLeaseValid(now)`: `observedTime + record.LeaseDurationSeconds > now`.
    fn lease_valid(&self, now: Instant, duration_override: Option<Duration>) -> bool {
        let Some(record) = &self.observed_record else {
            return false;
        };
        let duration =
            duration_override.unwrap_or(Duration::from_secs(record.lease_duration_seconds));
        self.observed_time + duration > now
    }

    fn set_observed_record(&mut self, record: LeaseRecord, now: Instant) {
        self.observed_record = Some(record);
        self.observed_time = now;
    }

    /// The deadline of the context the current request runs under.
    fn context_deadline(&self) -> Option<Instant> {
        match self.phase {
            Phase::Leading {
                poll: Some(poll), ..
            } => Some(poll.deadline),
            Phase::Releasing { deadline, .. } => Some(deadline),
            _ => None,
        }
    }

    fn send(&mut self, request: impl FnOnce(u64) -> ApiRequest, now: Instant) {
        let id = self.outbox.next_request_id();
        let timeout = now + self.settings.request_timeout;
        let deadline = self.context_deadline().map_or(timeout, |d| d.min(timeout));
        self.rpc = Some(Rpc { id, deadline });
        self.outbox.push(ClientOutput::Send {
            to: 0,
            request: request(id),
        });
    }

    // ---- tryAcquireOrRenew -------------------------------------------------

    fn begin_try(&mut self, now: Instant) {
        let desired = LeaseRecord {
            holder_identity: self.name.clone(),
            lease_duration_seconds: self.settings.lease_duration.as_secs(),
            acquire_time: now,
            renew_time: now,
            lease_transitions: 0,
        };
        let mut attempt = Try {
            started_at: now,
            desired,
            step: Step::Get,
        };
        match (&self.cached, &self.observed_record) {
            (Some((_, resource_version)), Some(observed))
                if self.is_leader() && self.lease_valid(now, None) =>
            {
                attempt.desired.acquire_time = observed.acquire_time;
                attempt.desired.lease_transitions = observed.lease_transitions;
                attempt.step = Step::FastUpdate;
                let (record, resource_version) = (attempt.desired.clone(), *resource_version);
                self.send(
                    |id| ApiRequest::Update {
                        id,
                        record,
                        resource_version,
                    },
                    now,
                );
            }
            _ => self.send(|id| ApiRequest::Get { id }, now),
        }
        self.attempt = Some(attempt);
    }

    /// Applies an answer to the try in progress; `Some(success)` when it ends.
    fn continue_try(&mut self, result: ApiResult, now: Instant) -> Option<bool> {
        let mut attempt = self.attempt.take().expect("an answer to a try needs a try");
        match (attempt.step, result) {
            (
                Step::FastUpdate | Step::Create | Step::Update,
                ApiResult::Lease {
                    record,
                    resource_version,
                },
            ) => {
                debug_assert_eq!(record, attempt.desired);
                self.cached = Some((record, resource_version));
                self.set_observed_record(attempt.desired, now);
                Some(true)
            }
            (Step::FastUpdate, _) => {
                // "Failed to update lease optimistically, falling back to slow path".
                attempt.step = Step::Get;
                self.attempt = Some(attempt);
                self.send(|id| ApiRequest::Get { id }, now);
                None
            }
            (Step::Get, ApiResult::NotFound) => {
                attempt.step = Step::Create;
                let record = attempt.desired.clone();
                self.attempt = Some(attempt);
                self.send(|id| ApiRequest::Create { id, record }, now);
                None
            }
            (
                Step::Get,
                ApiResult::Lease {
                    record,
                    resource_version,
                },
            ) => {
                self.cached = Some((record.clone(), resource_version));
                if self.observed_raw.as_ref() != Some(&record) {
                    self.set_observed_record(record.clone(), now);
                    self.observed_raw = Some(record.clone());
                }
                let own_duration = self
                    .settings
                    .pre_114872_own_lease_duration
                    .then_some(self.settings.lease_duration);
                if !record.holder_identity.is_empty()
                    && self.lease_valid(attempt.started_at, own_duration)
                    && !self.is_leader()
                {
                    return Some(false);
                }
                if self.is_leader() {
                    attempt.desired.acquire_time = record.acquire_time;
                    attempt.desired.lease_transitions = record.lease_transitions;
                } else {
                    attempt.desired.lease_transitions = record.lease_transitions + 1;
                }
                attempt.step = Step::Update;
                let desired = attempt.desired.clone();
                self.attempt = Some(attempt);
                self.send(
                    |id| ApiRequest::Update {
                        id,
                        record: desired,
                        resource_version,
                    },
                    now,
                );
                None
            }
            // Get failed otherwise, or Create/Update was refused.
            _ => Some(false),
        }
    }

    /// A try ended: the loop it belongs to moves on.
    fn try_done(&mut self, success: bool, now: Instant) {
        self.attempt = None;
        self.rpc = None;
        match self.phase {
            Phase::Acquiring { .. } if success => {
                let token = self
                    .observed_record
                    .as_ref()
                    .expect("a successful try observed its own record")
                    .lease_transitions;
                self.outbox
                    .push(ClientOutput::BecameLeader { token: Some(token) });
                // `renew` starts at once, its first poll tries immediately.
                self.phase = Phase::Leading {
                    token,
                    poll: None,
                    next_poll_at: now,
                };
            }
            Phase::Acquiring { .. } => {
                let retry = self.settings.retry_period;
                let extra_nanos =
                    retry.as_nanos() as f64 * JITTER_FACTOR * unit_fraction(&mut self.rng);
                let delay = retry + Duration::from_nanos(extra_nanos as u64);
                self.phase = Phase::Acquiring {
                    next_try_at: Some(now + delay),
                };
            }
            Phase::Leading { token, .. } if success => {
                self.phase = Phase::Leading {
                    token,
                    poll: None,
                    next_poll_at: now + self.settings.retry_period,
                };
            }
            // A failed try within a poll: the ticker decides when to retry.
            Phase::Leading { .. } | Phase::Idle | Phase::Releasing { .. } => {}
        }
    }

    /// The renew poll's context expired: `renew` returns.
    fn renew_failed(&mut self, token: u64, now: Instant) {
        self.attempt = None;
        self.rpc = None;
        let reason = "renew deadline passed";
        if self.settings.release_on_cancel {
            self.begin_release(token, Some(reason), self.settings.run_again, now);
        } else {
            self.outbox.push(ClientOutput::LostLeadership { reason });
            self.run_returned(self.settings.run_again, now);
        }
    }

    fn run_returned(&mut self, rerun: bool, now: Instant) {
        self.phase = Phase::Idle;
        if rerun {
            self.phase = Phase::Acquiring { next_try_at: None };
            self.begin_try(now);
        }
    }

    // ---- release -----------------------------------------------------------

    fn begin_release(&mut self, token: u64, lost: Option<&'static str>, rerun: bool, now: Instant) {
        self.phase = Phase::Releasing {
            token,
            deadline: now + self.settings.renew_deadline,
            lost,
            rerun,
        };
        self.release_step = Some(ReleaseStep::Get);
        self.send(|id| ApiRequest::Get { id }, now);
    }

    fn continue_release(&mut self, result: ApiResult, now: Instant) {
        let step = self
            .release_step
            .take()
            .expect("an answer to a release needs a release");
        match (step, result) {
            (
                ReleaseStep::Get,
                ApiResult::Lease {
                    record,
                    resource_version,
                },
            ) => {
                self.cached = Some((record.clone(), resource_version));
                // IsLeader() reads the observed record, which this Get does
                // not refresh: the release may clear a newer holder's lease.
                if !self.is_leader() {
                    return self.release_done(now);
                }
                let released = LeaseRecord {
                    holder_identity: String::new(),
                    lease_duration_seconds: 1,
                    acquire_time: now,
                    renew_time: now,
                    lease_transitions: record.lease_transitions,
                };
                self.release_step = Some(ReleaseStep::Update);
                self.send(
                    |id| ApiRequest::Update {
                        id,
                        record: released,
                        resource_version,
                    },
                    now,
                );
            }
            (ReleaseStep::Update, ApiResult::Lease { record, .. }) => {
                self.set_observed_record(record, now);
                self.release_done(now);
            }
            (ReleaseStep::Update, ApiResult::Conflict) => {
                // "Conflict when releasing lease, retrying".
                self.release_step = Some(ReleaseStep::Get);
                self.send(|id| ApiRequest::Get { id }, now);
            }
            _ => self.release_done(now),
        }
    }

    fn release_done(&mut self, now: Instant) {
        self.release_step = None;
        self.rpc = None;
        if let Phase::Releasing { lost, rerun, .. } = self.phase {
            if let Some(reason) = lost {
                self.outbox.push(ClientOutput::LostLeadership { reason });
            }
            self.run_returned(rerun, now);
        }
    }
}

impl LockClient<ClientGo> for ClientGoClient {
    fn start(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        if matches!(self.phase, Phase::Idle) {
            self.phase = Phase::Acquiring { next_try_at: None };
            self.begin_try(now);
        }
    }

    fn handle_response(&mut self, _from: ServerIndex, response: ApiResponse, now: Instant) {
        let now = self.outbox.observe(now);
        // Only the request in flight is being read; an answer to an abandoned
        // one arrives on a cancelled HTTP stream.
        if self.rpc.is_none_or(|rpc| rpc.id != response.id) {
            return;
        }
        self.rpc = None;
        if self.release_step.is_some() {
            self.continue_release(response.result, now);
        } else if self.attempt.is_some() {
            if let Some(success) = self.continue_try(response.result, now) {
                self.try_done(success, now);
            }
        }
        self.handle_timeout(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        // The renew poll's context deadline comes first: it cancels the request.
        if let Phase::Leading {
            token,
            poll: Some(poll),
            ..
        } = self.phase
        {
            if now >= poll.deadline {
                return self.renew_failed(token, now);
            }
        }
        if let Phase::Releasing { deadline, .. } = self.phase {
            if now >= deadline {
                return self.release_done(now);
            }
        }
        if let Some(rpc) = self.rpc {
            if now >= rpc.deadline {
                self.rpc = None;
                if self.release_step.is_some() {
                    self.release_done(now);
                } else if let Some(mut attempt) =
                    self.attempt.take().filter(|a| a.step == Step::FastUpdate)
                {
                    // The fast path's `Update` timed out (the REST client's
                    // timeout; the poll's own deadline was handled above):
                    // `tryAcquireOrRenew` logs "falling back to slow path"
                    // for any error of it and goes on with `Get` in the same
                    // try (`leaderelection.go`, step 1 to step 2).
                    attempt.step = Step::Get;
                    self.attempt = Some(attempt);
                    self.send(|id| ApiRequest::Get { id }, now);
                } else {
                    self.attempt = None;
                    self.try_done(false, now);
                }
            }
        }
        if self.rpc.is_some() {
            return;
        }
        match self.phase {
            Phase::Acquiring {
                next_try_at: Some(at),
            } if now >= at => {
                self.phase = Phase::Acquiring { next_try_at: None };
                self.begin_try(now);
            }
            Phase::Leading {
                token,
                poll: None,
                next_poll_at,
            } if now >= next_poll_at => {
                let poll = Poll {
                    deadline: now + self.settings.renew_deadline,
                    next_tick: now + self.settings.retry_period,
                };
                self.phase = Phase::Leading {
                    token,
                    poll: Some(poll),
                    next_poll_at,
                };
                self.begin_try(now);
            }
            Phase::Leading {
                token,
                poll: Some(poll),
                next_poll_at,
            } if now >= poll.next_tick => {
                let poll = Poll {
                    next_tick: now + self.settings.retry_period,
                    ..poll
                };
                self.phase = Phase::Leading {
                    token,
                    poll: Some(poll),
                    next_poll_at,
                };
                self.begin_try(now);
            }
            _ => {}
        }
    }

    fn next_timeout(&self) -> Option<Instant> {
        let rpc = self.rpc.map(|rpc| rpc.deadline);
        let phase = match self.phase {
            Phase::Idle => None,
            Phase::Acquiring { next_try_at } => next_try_at,
            Phase::Leading {
                poll: None,
                next_poll_at,
                ..
            } => Some(next_poll_at),
            Phase::Leading {
                poll: Some(poll), ..
            } => Some(if self.rpc.is_some() {
                poll.deadline
            } else {
                poll.next_tick.min(poll.deadline)
            }),
            Phase::Releasing { deadline, .. } => Some(deadline),
        };
        earliest_of([rpc, phase])
    }

    fn poll_output(&mut self) -> Option<ClientOutput<ClientGo>> {
        self.outbox.pop()
    }

    /// The run context is cancelled: the application's context (a child of
    /// it) ends at once; `renew` returns and, with `ReleaseOnCancel`, the
    /// lease is released under a fresh `RenewDeadline` timeout.
    fn stop(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        match self.phase {
            Phase::Idle => {}
            Phase::Acquiring { .. } => {
                self.attempt = None;
                self.rpc = None;
                self.phase = Phase::Idle;
            }
            Phase::Leading { token, .. } => {
                self.outbox
                    .push(ClientOutput::LostLeadership { reason: "stopped" });
                self.attempt = None;
                self.rpc = None;
                if self.settings.release_on_cancel {
                    self.begin_release(token, None, false, now);
                } else {
                    self.phase = Phase::Idle;
                }
            }
            Phase::Releasing {
                token,
                deadline,
                lost,
                ..
            } => {
                if lost.is_some() {
                    self.outbox
                        .push(ClientOutput::LostLeadership { reason: "stopped" });
                }
                self.phase = Phase::Releasing {
                    token,
                    deadline,
                    lost: None,
                    rerun: false,
                };
            }
        }
    }

    /// From `OnStartedLeading` until `OnStoppedLeading`: while `renew` runs,
    /// and while the release after a failed renewal is in flight.
    fn leadership(&self, _now: Instant) -> Option<Leadership> {
        match self.phase {
            Phase::Leading { token, .. }
            | Phase::Releasing {
                token,
                lost: Some(_),
                ..
            } => Some(Leadership { token: Some(token) }),
            _ => None,
        }
    }
}
