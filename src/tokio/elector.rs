//! The leader elector on tokio: [`LeaseLeaderElector`] drives one
//! [`Elector`] on real time against a [`LeaseBackend`].

use std::collections::BTreeMap;
use std::fmt;
use std::future::{pending, Future};
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::time::Duration;

use ::tokio::sync::watch;
use ::tokio::task::{Id as TaskId, JoinError, JoinSet};
use ::tokio::time::{error::Elapsed, sleep_until, timeout, Instant as TokioInstant};
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::Instrument;

use super::options::ElectorOptions;
use super::release::record_release;
use super::release::{release_lease, LateCall, ReleaseLanded};
use super::{BackendError, Clock, LeaseBackend};
use crate::elector::{
    ConfigError, Elector, ElectorConfig, ElectorOutput, ObservedLeader, Phase, RequestId,
    ResponseDisposition, StepDownReason,
};
use crate::history::{Event, Recorder};
use crate::id::{FencingToken, Role};
use crate::lease::LeaseResult;
use crate::time::Instant;

/// Why [`LeaseLeaderElector::run`] did not run.
#[derive(Clone, Debug, PartialEq)]
pub enum RunError {
    /// The timings are inconsistent (see [`ConfigError`]); nothing was sent
    /// and no work started.
    Config(ConfigError),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Config(error) => write!(f, "invalid elector configuration: {error}"),
        }
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RunError::Config(error) => Some(error),
        }
    }
}

/// Why waiting on a [`LeadershipHandle`] ended without the state asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DriverStopped {
    /// The elector's driver is gone: `run` returned (or its future was
    /// dropped), or the elector was dropped without running. The state will
    /// never change again.
    Gone,
}

impl fmt::Display for DriverStopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverStopped::Gone => f.write_str("the elector's driver has stopped"),
        }
    }
}

impl std::error::Error for DriverStopped {}

/// A snapshot of one elector's state, as of the driver's last input.
///
/// It holds a copy of the [`Elector`] itself, so every answer here is the
/// state machine's own (the driver decides nothing): in particular
/// [`token_at`](Leadership::token_at) is [`Elector::token_at`].
#[derive(Clone, Debug)]
pub struct Leadership {
    /// `None` until `run` has built the elector.
    elector: Option<Elector>,
    last_step_down: Option<(FencingToken, StepDownReason)>,
}

impl Leadership {
    /// Where the elector stands ([`Phase::Leader`] carries the token and the
    /// local deadline `valid_until`, on the elector's [`Clock`]);
    /// [`Phase::Idle`] before `run` starts and after it returns.
    pub fn phase(&self) -> Phase {
        self.elector.as_ref().map_or(Phase::Idle, Elector::phase)
    }

    /// The token of the term in hand as of the driver's last input, ignoring
    /// the deadline ([`Elector::token`]). Use [`token_at`](Self::token_at) to
    /// act on it.
    pub fn token(&self) -> Option<FencingToken> {
        self.elector.as_ref()?.token()
    }

    /// The token one may act with at `now` (the elector's clock), by
    /// [`Elector::token_at`]: `None` at or past the local deadline even if the
    /// driver has not woken up for it yet (a stalled process).
    pub fn token_at(&self, now: Instant) -> Option<FencingToken> {
        self.elector.as_ref()?.token_at(now)
    }

    /// The leader as last learned from the store (the elector itself while it
    /// leads), or `None` if unknown.
    pub fn observed_leader(&self) -> Option<&ObservedLeader> {
        self.elector.as_ref()?.observed_leader()
    }

    /// The most recent end of a term of this elector: its token and why it
    /// ended (`None` before the first one).
    pub fn last_step_down(&self) -> Option<&(FencingToken, StepDownReason)> {
        self.last_step_down.as_ref()
    }
}

impl PartialEq for Leadership {
    /// Equal when everything readable is: phase, observed leader, last step-down.
    fn eq(&self, other: &Self) -> bool {
        self.phase() == other.phase()
            && self.observed_leader() == other.observed_leader()
            && self.last_step_down == other.last_step_down
    }
}

impl Eq for Leadership {}

/// A cheap, cloneable view of one elector's leadership, readable at any time
/// from any task. Get one with [`LeaseLeaderElector::handle`].
#[derive(Clone, Debug)]
pub struct LeadershipHandle {
    state: watch::Receiver<Leadership>,
    clock: Clock,
}

impl LeadershipHandle {
    /// The latest snapshot.
    pub fn snapshot(&self) -> Leadership {
        self.state.borrow().clone()
    }

    /// The token this node may act with right now, checked against the local
    /// deadline at the moment of the call; `None` when not leading.
    pub fn token(&self) -> Option<FencingToken> {
        self.state.borrow().token_at(self.clock.now())
    }

    /// Whether this node leads right now (see [`token`](Self::token)).
    pub fn is_leader(&self) -> bool {
        self.token().is_some()
    }

    /// The leader as this elector last learned it from the store (itself
    /// while it leads), or `None` if unknown.
    pub fn observed_leader(&self) -> Option<ObservedLeader> {
        self.state.borrow().observed_leader().cloned()
    }

    /// Waits until a snapshot satisfies `predicate` (checked on the current
    /// one first) and returns it.
    ///
    /// # Errors
    /// [`DriverStopped::Gone`] when the driver stops first.
    pub async fn wait_for(
        &mut self,
        predicate: impl FnMut(&Leadership) -> bool,
    ) -> Result<Leadership, DriverStopped> {
        match self.state.wait_for(predicate).await {
            Ok(state) => Ok(state.clone()),
            Err(_) => Err(DriverStopped::Gone),
        }
    }

    /// A receiver of every snapshot change, for `tokio::select!` loops.
    pub fn subscribe(&self) -> watch::Receiver<Leadership> {
        self.state.clone()
    }
}

/// Runs an [`Elector`] for one role on tokio: the driver of the crate's
/// elector state machine, mirroring `RunAsync` of the lease-election
/// article this crate grew from.
///
/// What it does, and nothing more (every decision is the elector's):
///
/// 1. maps `tokio::time::Instant` onto [`Instant`] with its [`Clock`];
/// 2. sends each lease request to the backend as its own task, bounded by the
///    lease TTL, so a slow store never delays a timer; feeds every answer back
///    with its request id, including late answers to re-sent requests
///    (the elector applies those while their validity lies ahead, so a store
///    slower than `retry_interval` still elects a leader);
/// 3. sleeps until [`Elector::next_timeout`] or until an answer arrives;
/// 4. on [`ElectorOutput::StartWork`] runs your work as a task with the token
///    and a fresh [`CancellationToken`]; on [`ElectorOutput::StopWork`]
///    cancels that token (local deadline, refusal, new term, shutdown);
/// 5. sends [`ElectorOutput::Release`]s to the backend;
/// 6. publishes the state to [`LeadershipHandle`]s and logs with `tracing`
///    (span `lease_elector{role, owner}`; `info` term started, leader
///    observed; `warn` stepped down with its reason; `debug` renewed, refused
///    with the holder).
#[derive(Debug)]
pub struct LeaseLeaderElector<B> {
    backend: Arc<B>,
    options: ElectorOptions,
    clock: Clock,
    state: watch::Sender<Leadership>,
}

impl<B: LeaseBackend> LeaseLeaderElector<B> {
    /// An elector that will contend through `backend`. Captures its clock now
    /// unless `options` carries one. Call [`handle`](Self::handle) before
    /// [`run`](Self::run) to watch it.
    pub fn new(backend: B, options: ElectorOptions) -> Self {
        let clock = options.clock.unwrap_or_default();
        #[cfg(feature = "planted-bugs")]
        let clock = match options.planted {
            Some(crate::PlantedBug::DriverReadsWallClock) => clock.reading_wall_clock(),
            _ => clock,
        };
        let (state, _) = watch::channel(Leadership {
            elector: None,
            last_step_down: None,
        });
        LeaseLeaderElector {
            backend: Arc::new(backend),
            options,
            clock,
            state,
        }
    }

    /// A handle to read the leadership state while `run` runs.
    pub fn handle(&self) -> LeadershipHandle {
        LeadershipHandle {
            state: self.state.subscribe(),
            clock: self.clock,
        }
    }

    /// The elector's local clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Contends for `role` until `shutdown` completes; while leading, runs
    /// `work(token, cancel)` as a task.
    ///
    /// The work must stamp `token` on every write to fenced resources and
    /// should return soon after `cancel` is cancelled, which happens the moment
    /// leadership is lost or shutdown begins. Each term calls `work` once. If
    /// the work returns (or panics) while the term lasts, the lease is kept
    /// until the term ends: leadership is the elector's decision, not the
    /// work's (a panic is logged at `error`).
    ///
    /// When `shutdown` completes: the elector is stopped (the work's token is
    /// cancelled), lease requests in flight are awaited (up to the retry
    /// interval) so none can renew the lease after it is freed, the work is
    /// awaited (up to the stop timeout, then aborted), the lease is released
    /// (awaited, up to the retry interval), and `run` returns. A follower then
    /// takes over at its next retry instead of after the TTL.
    ///
    /// Dropping the future instead cancels the work's token and aborts its
    /// task, but does not release: the lease lapses at its expiry, as after a
    /// crash.
    ///
    /// Poll it inside a tokio runtime (it spawns the requests and the work as
    /// tasks); `tokio::spawn(elector.run(..))` is the usual way.
    ///
    /// # Errors
    /// [`RunError::Config`] at once, before any request, if the timings in the
    /// options are inconsistent.
    pub async fn run<W, Fut, S>(self, role: Role, work: W, shutdown: S) -> Result<(), RunError>
    where
        W: FnMut(FencingToken, CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
        S: Future<Output = ()>,
    {
        let LeaseLeaderElector {
            backend,
            options,
            clock,
            state,
        } = self;
        let config =
            ElectorConfig::new(options.owner, role, options.timings).map_err(RunError::Config)?;
        let span =
            tracing::info_span!("lease_elector", role = %config.role(), owner = %config.owner());
        #[cfg_attr(not(feature = "planted-bugs"), allow(unused_mut))]
        let mut elector = Elector::new(config);
        #[cfg(feature = "planted-bugs")]
        if let Some(bug) = options.planted {
            elector.plant(bug);
        }
        let driver = Driver {
            backend,
            elector,
            clock,
            state,
            work,
            stop_timeout: options.stop_timeout,
            requests: JoinSet::new(),
            late_calls: JoinSet::new(),
            request_ids: BTreeMap::new(),
            releases: JoinSet::new(),
            work_tasks: JoinSet::new(),
            work_terms: BTreeMap::new(),
            term: None,
            last_step_down: None,
            recorder: options.recorder,
            input_at: Instant::ZERO,
        };
        driver.drive(shutdown).instrument(span).await;
        Ok(())
    }
}

/// A request's fate: the backend's answer or error, or the TTL bound elapsed.
type RequestOutcome = Result<Result<LeaseResult, BackendError>, Elapsed>;
/// A request task's output: its id, its fate, and (a history on, the TTL
/// elapsed) the call still running, whose answer the history still wants.
type RequestLanded = (RequestId, RequestOutcome, Option<LateCall<LeaseResult>>);
type RequestDone = Result<(TaskId, RequestLanded), JoinError>;

type TaskDone = Result<(TaskId, ()), JoinError>;
type ReleaseDone = Result<(TaskId, ReleaseLanded), JoinError>;

/// The live term's work: dropping it cancels the work's token.
struct Term {
    token: FencingToken,
    _cancel_on_drop: DropGuard,
}

/// What woke the driver up.
enum Wake {
    Shutdown,
    Request(RequestDone),
    Work(TaskDone),
    Release(ReleaseDone),
    Timer,
}

/// The running state of [`LeaseLeaderElector::run`].
struct Driver<B, W> {
    backend: Arc<B>,
    elector: Elector,
    clock: Clock,
    state: watch::Sender<Leadership>,
    work: W,
    stop_timeout: Duration,
    /// Lease requests in flight, re-sent ones included. Each is bounded
    /// by the TTL, so there are at most `lease_ttl / retry_interval + 1`.
    requests: JoinSet<RequestLanded>,
    /// Calls whose request the TTL bound ended, awaited (one more TTL at
    /// most): to record their answers (the store decided them, and a history
    /// that missed a renewal would judge the next one a renewal of a lapsed
    /// lease), and so that the backend's own bounds end them — a driver
    /// behaves the same whether a history is on or off (the simulator's
    /// sessions model exactly this, `sim/src/hosts/session.rs`). Reaped as
    /// new ones come.
    late_calls: JoinSet<()>,
    /// The request id of each request task, to fail it if the task panics.
    request_ids: BTreeMap<TaskId, RequestId>,
    /// Releases in flight (each bounded by the retry interval).
    releases: JoinSet<ReleaseLanded>,
    /// The work of the live term and of ended terms still finishing.
    work_tasks: JoinSet<()>,
    work_terms: BTreeMap<TaskId, FencingToken>,
    term: Option<Term>,
    last_step_down: Option<(FencingToken, StepDownReason)>,
    /// Where the history goes (off: one branch per call site).
    recorder: Recorder,
    /// The local time of the elector's latest input: the send time it
    /// anchors its deadline on for the requests that input produced.
    input_at: Instant,
}

impl<B, W, Fut> Driver<B, W>
where
    B: LeaseBackend,
    W: FnMut(FencingToken, CancellationToken) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    async fn drive(mut self, shutdown: impl Future<Output = ()>) {
        let mut shutdown = pin!(shutdown);
        let now = self.now();
        self.elector.start(now);
        loop {
            self.apply_outputs(false);
            match self.next_wake(shutdown.as_mut()).await {
                Wake::Shutdown => break,
                Wake::Request(done) => self.on_request_done(done),
                Wake::Work(done) => self.on_work_done(done),
                Wake::Release(done) => self.on_release_done(done),
                Wake::Timer => {
                    let now = self.now();
                    self.elector.handle_timeout(now);
                }
            }
        }
        self.shut_down().await;
    }

    /// The local time now, remembered as the time of the next input.
    fn now(&mut self) -> Instant {
        self.input_at = self.clock.now();
        self.input_at
    }

    async fn next_wake<S: Future<Output = ()>>(&mut self, shutdown: Pin<&mut S>) -> Wake {
        let wake_at = self
            .elector
            .next_timeout()
            .and_then(|at| self.clock.to_tokio(at));
        ::tokio::select! {
            biased;
            () = shutdown => Wake::Shutdown,
            Some(done) = self.requests.join_next_with_id() => Wake::Request(done),
            Some(done) = self.work_tasks.join_next_with_id() => Wake::Work(done),
            Some(done) = self.releases.join_next_with_id() => Wake::Release(done),
            () = sleep_until_or_never(wake_at) => Wake::Timer,
        }
    }

    /// Acts on every pending output, in order, then publishes the state.
    /// With `defer_releases`, releases are returned instead of sent.
    fn apply_outputs(&mut self, defer_releases: bool) -> Vec<FencingToken> {
        let mut deferred = Vec::new();
        while let Some(output) = self.elector.poll_output() {
            match output {
                ElectorOutput::SendLeaseRequest { id, ttl } => self.send_request(id, ttl),
                ElectorOutput::StartWork { token } => self.start_work(token),
                ElectorOutput::StopWork { token, reason } => self.stop_work(token, reason),
                ElectorOutput::Release { token } if defer_releases => deferred.push(token),
                ElectorOutput::Release { token } => self.send_release(token),
                ElectorOutput::LeaderObserved { leader } => match leader {
                    Some(leader) => {
                        tracing::info!(leader = %leader.owner, token = leader.token.get(), "leader observed");
                    }
                    None => tracing::info!("leader unknown"),
                },
            }
        }
        self.publish();
        deferred
    }

    fn publish(&self) {
        self.state.send_if_modified(|current| {
            let unchanged = current.phase() == self.elector.phase()
                && current.observed_leader() == self.elector.observed_leader()
                && current.last_step_down == self.last_step_down;
            if !unchanged {
                // Drained, the elector clones without allocating (but for a
                // jitter RNG); this happens only when something changed.
                *current = Leadership {
                    elector: Some(self.elector.clone()),
                    last_step_down: self.last_step_down.clone(),
                };
            }
            !unchanged
        });
    }

    fn send_request(&mut self, id: RequestId, ttl: Duration) {
        let backend = Arc::clone(&self.backend);
        let role = self.elector.config().role().clone();
        let owner = self.elector.config().owner().clone();
        let request = async move {
            // An answer later than the TTL could only be too late to lead on;
            // but the call runs as its own task, so that at the bound it goes
            // on to its answer (see `late_calls`) — whether or not a history
            // records it: the backend's own bounds then end it (a PostgreSQL
            // connection whose query outlives its timeout is retired), the
            // same with a recorder on or off.
            let call = ::tokio::spawn(
                async move { backend.acquire_or_renew(&role, &owner, ttl).await }.in_current_span(),
            );
            let mut call = LateCall(call);
            match timeout(ttl, &mut call.0).await {
                Ok(Ok(answer)) => (id, Ok(answer), None),
                Ok(Err(failed)) => (id, Ok(Err(BackendError::unavailable(failed))), None),
                Err(elapsed) => (id, Err(elapsed), Some(call)),
            }
        };
        let task = self.requests.spawn(request.in_current_span());
        self.request_ids.insert(task.id(), id);
        let local_ns = self.input_at.as_nanos();
        self.recorder.record(|| Event::RequestSent {
            request: id.0,
            local_ns,
        });
        tracing::trace!(request = %id, "lease request sent");
    }

    fn on_request_done(&mut self, done: RequestDone) {
        let now = self.now();
        let (id, outcome) = match done {
            Ok((task, (id, outcome, late))) => {
                self.request_ids.remove(&task);
                if let Some(late) = late {
                    self.await_late_answer(id, late);
                }
                (id, outcome)
            }
            Err(error) => {
                if let Some(id) = self.request_ids.remove(&error.id()) {
                    tracing::error!(request = %id, %error, "lease request task failed");
                    self.record_failure(id, false, || error.to_string());
                    self.elector.handle_request_failed(id, now);
                }
                return;
            }
        };
        match outcome {
            Ok(Ok(result)) => self.on_answer(id, result, now),
            Ok(Err(error)) => {
                tracing::warn!(request = %id, %error, "lease request failed");
                let rejected = matches!(error, BackendError::Rejected(_));
                self.record_failure(id, rejected, || error.to_string());
                self.elector.handle_request_failed(id, now);
            }
            Err(_) => {
                tracing::warn!(request = %id, "lease request unanswered within the TTL");
                self.record_failure(id, false, || "unanswered within the TTL".to_string());
                self.elector.handle_request_failed(id, now);
            }
        }
    }

    /// Awaits `call`, whose request the TTL bound ended, for one more TTL,
    /// and records its answer (`lease-handled`, without `response-handled`:
    /// the elector never sees it, as in the simulator, where the store's
    /// decision is observed whether or not its answer is used).
    fn await_late_answer(&mut self, id: RequestId, call: LateCall<LeaseResult>) {
        while self.late_calls.try_join_next().is_some() {}
        let ttl = self.elector.config().lease_ttl();
        let recorder = self.recorder.clone();
        let late = async move {
            let mut call = call;
            if let Ok(Ok(Ok(result))) = timeout(ttl, &mut call.0).await {
                recorder.record(|| Event::lease_handled(id.0, &result, ttl));
                tracing::debug!(request = %id, "late answer recorded");
            }
        };
        self.late_calls.spawn(late.in_current_span());
    }

    fn record_failure(&self, id: RequestId, rejected: bool, error: impl FnOnce() -> String) {
        self.recorder.record(|| Event::LeaseFailed {
            request: id.0,
            rejected,
            error: error(),
        });
    }

    /// Records the store's answer and what the elector made of it.
    fn handle_answer(
        &mut self,
        id: RequestId,
        result: LeaseResult,
        now: Instant,
    ) -> ResponseDisposition {
        let ttl = self.elector.config().lease_ttl();
        self.recorder
            .record(|| Event::lease_handled(id.0, &result, ttl));
        let acquired = result.acquired_token();
        let renewal = matches!(result, LeaseResult::Renewed { .. });
        let disposition = self.elector.handle_response(id, result, now);
        self.recorder.record(|| Event::ResponseHandled {
            request: id.0,
            disposition: disposition.into(),
            acquired,
            renewal,
        });
        disposition
    }

    fn on_answer(&mut self, id: RequestId, result: LeaseResult, now: Instant) {
        let refused_by = match &result {
            LeaseResult::Held { holder } => Some((holder.owner.clone(), holder.token)),
            _ => None,
        };
        let renewed = match result {
            LeaseResult::Renewed { token, expires_at } => Some((token, expires_at)),
            _ => None,
        };
        match self.handle_answer(id, result, now) {
            ResponseDisposition::Applied => {
                if let Some((holder, token)) = refused_by {
                    tracing::debug!(request = %id, %holder, token = token.get(), "lease refused: held by another");
                } else if let Some((token, expires_at)) = renewed {
                    tracing::debug!(request = %id, token = token.get(), store_expires_at = %expires_at, "lease renewed");
                }
            }
            ResponseDisposition::Stale => {
                tracing::debug!(request = %id, "stale answer ignored (an answer to it or to a later request was applied, or it was forgotten)");
            }
            ResponseDisposition::TooLate => {
                tracing::warn!(request = %id, "answer came too late to lead on");
            }
            ResponseDisposition::AlreadyReleased => {
                tracing::debug!(request = %id, "answer renewed a released term; releasing again");
            }
        }
    }

    fn start_work(&mut self, token: FencingToken) {
        debug_assert!(
            self.term.is_none(),
            "the elector ends a term before the next starts"
        );
        let cancel = CancellationToken::new();
        let span = tracing::info_span!("leader_term", token = token.get());
        let work = (self.work)(token, cancel.clone()).instrument(span);
        let task = self.work_tasks.spawn(work);
        self.work_terms.insert(task.id(), token);
        self.term = Some(Term {
            token,
            _cancel_on_drop: cancel.drop_guard(),
        });
        tracing::info!(token = token.get(), "term started: leading");
        self.recorder.record(|| Event::TermStarted { token });
    }

    fn stop_work(&mut self, token: FencingToken, reason: StepDownReason) {
        debug_assert_eq!(
            self.term.as_ref().map(|term| term.token),
            Some(token),
            "the elector only ends the live term"
        );
        // Dropping the term cancels its work's token.
        self.term = None;
        if reason == StepDownReason::Stopped {
            tracing::info!(token = token.get(), %reason, "stepped down");
        } else {
            tracing::warn!(token = token.get(), %reason, "stepped down");
        }
        self.recorder.record(|| Event::term_ended(token, &reason));
        self.last_step_down = Some((token, reason));
    }

    fn send_release(&mut self, token: FencingToken) {
        let backend = Arc::clone(&self.backend);
        let config = self.elector.config();
        let (role, owner) = (config.role().clone(), config.owner().clone());
        let bound = config.retry_interval();
        let recorder = self.recorder.clone();
        let release =
            async move { release_lease(backend, role, owner, token, bound, &recorder).await };
        self.releases.spawn(release.in_current_span());
    }

    /// A release task ended: one whose bound elapsed goes on to its answer
    /// in `late_calls`.
    fn on_release_done(&mut self, done: ReleaseDone) {
        match done {
            Ok((_, Some((token, call)))) => {
                while self.late_calls.try_join_next().is_some() {}
                let bound = self.elector.config().retry_interval();
                let recorder = self.recorder.clone();
                let late = async move {
                    let mut call = call;
                    if let Ok(Ok(Ok((result, at)))) = timeout(bound, &mut call.0).await {
                        record_release(&recorder, token, result, at);
                        tracing::debug!(token = token.get(), "late release answer recorded");
                    }
                };
                self.late_calls.spawn(late.in_current_span());
            }
            done => log_task_failure("release", done),
        }
    }

    fn on_work_done(&mut self, done: TaskDone) {
        let (task, error) = match done {
            Ok((task, ())) => (task, None),
            Err(error) => (error.id(), Some(error)),
        };
        let Some(token) = self.work_terms.remove(&task) else {
            return;
        };
        let live = self.term.as_ref().is_some_and(|term| term.token == token);
        // Aborted work was stopped by the driver itself; anything else that
        // ends a live term's work (a return or a panic) gives up the role.
        let gave_up = live && error.as_ref().is_none_or(|e| e.is_panic());
        match error {
            Some(error) if error.is_panic() => {
                tracing::error!(token = token.get(), live, %error, "work panicked");
            }
            Some(_) => tracing::debug!(token = token.get(), "work aborted"),
            None if live => tracing::info!(token = token.get(), "work returned while leading"),
            None => tracing::debug!(token = token.get(), "work of an ended term returned"),
        }
        // A leader whose work is gone is alive but not working: the very
        // failure leases exist to catch. Give the role to someone who works.
        if gave_up {
            let now = self.now();
            self.elector.abdicate(now);
        }
    }

    async fn shut_down(mut self) {
        let now = self.now();
        self.elector.stop(now);
        let releases = self.apply_outputs(true);
        let config = self.elector.config();
        let (role, owner) = (config.role().clone(), config.owner().clone());
        let bound = config.retry_interval();

        // 1. Let requests in flight land first: one landing after the release
        //    would renew (or re-grant) the lease it frees.
        //    A grant answering a request outstanding at the stop is
        //    the elector's to judge: it answers with another release.
        let mut releases = releases;
        let settled = timeout(bound, async {
            while let Some(done) = self.requests.join_next().await {
                if let Ok((id, Ok(Ok(result)), _)) = done {
                    let now = self.now();
                    let disposition = self.handle_answer(id, result, now);
                    tracing::debug!(request = %id, ?disposition, "answer after shutdown");
                    releases.extend(self.apply_outputs(true));
                }
            }
        })
        .await;
        releases.dedup();
        if settled.is_err() {
            tracing::warn!("lease requests still unanswered at shutdown; abandoning them");
            self.requests.shutdown().await;
        }

        // 2. Let the work stop before the lease is freed.
        let stopped = timeout(self.stop_timeout, async {
            while let Some(done) = self.work_tasks.join_next_with_id().await {
                self.on_work_done(done);
            }
        })
        .await;
        if stopped.is_err() {
            tracing::warn!(stop_timeout = ?self.stop_timeout, "work did not stop in time; aborting it");
            self.work_tasks.shutdown().await;
        }

        // 3. Release, and let earlier releases finish.
        // (A release still unanswered at its bound is not awaited further:
        // the process is stopping, and its lease lapses at its expiry.)
        for token in releases {
            let backend = Arc::clone(&self.backend);
            let (role, owner) = (role.clone(), owner.clone());
            let _late = release_lease(backend, role, owner, token, bound, &self.recorder).await;
        }
        while let Some(done) = self.releases.join_next_with_id().await {
            log_task_failure("release", done);
        }
        self.publish();
        tracing::info!("elector stopped");
    }
}

fn log_task_failure<T>(what: &'static str, done: Result<(TaskId, T), JoinError>) {
    if let Err(error) = done {
        if error.is_panic() {
            tracing::error!(task = what, %error, "task panicked");
        }
    }
}

async fn sleep_until_or_never(at: Option<TokioInstant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => pending().await,
    }
}
