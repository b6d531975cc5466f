//! The leader elector: contends for a role's lease, renews it while leading,
//! and steps down on its own when it can no longer be sure it holds it.
//!
//! # The drive loop
//!
//! The elector is sans-IO. A driver (the simulator, the tokio driver, your own)
//! moves inputs in and outputs out:
//!
//! 1. Call an input method with the local clock's `now`:
//!    [`start`](Elector::start), [`handle_timeout`](Elector::handle_timeout),
//!    [`handle_response`](Elector::handle_response),
//!    [`handle_request_failed`](Elector::handle_request_failed),
//!    [`stop`](Elector::stop).
//! 2. Drain [`poll_output`](Elector::poll_output) until `None`, acting on each
//!    [`ElectorOutput`] in order (send the request, start or stop the work,
//!    send the release).
//! 3. Sleep until [`next_timeout`](Elector::next_timeout) (or until a response
//!    arrives) and go to 1. A spurious or early `handle_timeout` is harmless.
//!
//! # The rules
//!
//! * A follower asks every `retry_interval`; a leader renews every
//!   `renew_interval`, counted from the send time of its last successful
//!   renewal, and retries every `retry_interval` when a renewal goes
//!   unanswered.
//! * **A slow answer still counts.** A request unanswered after
//!   `retry_interval` is re-sent, but it stays *outstanding*: its answer, if
//!   it comes while the validity it would give (`send time + lease_ttl -
//!   safety_margin`) is still ahead, is applied like any other. Otherwise a
//!   store whose round trip is longer than `retry_interval` would keep
//!   renewing a lease whose holder never learns it has it, and no node would
//!   ever lead. The elector remembers the last [`MAX_OUTSTANDING`] requests;
//!   answers are applied in request order, so an answer to a request older
//!   than one already answered is stale (it carries older news), and so is
//!   an answer whose token is below the highest token this elector has
//!   already seen: it never leads on a token older than one it knows of.
//! * **Validity is anchored at the send time** of the request that succeeded:
//!   the store granted or renewed the lease no earlier than that, so the lease
//!   lasts at least until `send time + lease_ttl` on the store's clock. The
//!   leader stops at `send time + lease_ttl - safety_margin` on its own clock,
//!   whatever else happens; the margin absorbs drift between the two clocks.
//! * Responses are matched by request id. A stale response (older than one
//!   already applied, forgotten, or unknown) is ignored entirely: it can
//!   neither extend nor end leadership.
//! * A response carrying a token other than the one in hand ends the old term
//!   ([`ElectorOutput::StopWork`] with the old token) before the new one starts:
//!   there is never a moment with two live terms.
//! * After losing leadership the elector keeps contending. After stepping down
//!   on its own deadline it first releases the lease (unless
//!   [`release_on_deadline`](ElectorConfig::release_on_deadline) is off) and
//!   stays quiet for [`rejoin_delay`](ElectorConfig::rejoin_delay). A follower
//!   that hears no answer at all for `lease_ttl - safety_margin` goes quiet for
//!   as long: it may hold a lease it was never told about.
//! * An elector never leads on a token it has released: a release can be
//!   overtaken by a later request, and the store would then renew a lease the
//!   release is about to free. Such an answer re-sends the release instead.
//! * [`stop`](Elector::stop) ends the work, then releases the lease.

mod config;
mod outputs;

use std::fmt;
use std::time::Duration;

use rand_core::Rng;

pub use config::{ConfigError, ElectorConfig, ElectorTimings, Jitter};

use crate::id::{FencingToken, OwnerId};
use crate::lease::LeaseResult;
use crate::planted::{BugSlot, PlantedBug};
use crate::seeded_rng::SeededRng;
use crate::time::{earliest, Instant, LatestNow};
use outputs::Outputs;
use smallvec::SmallVec;

/// The unanswered requests, inline up to two (one or two almost always):
/// a separate buffer would be a cold cache line per request in a large
/// simulated fleet (see [`outputs`] for the measurement).
type Outstanding = SmallVec<[InFlight; 2]>;

/// Removes the first `n` requests of `requests` (all of them if fewer).
#[inline]
fn remove_front(requests: &mut Outstanding, n: usize) {
    if n >= requests.len() {
        requests.clear();
    } else if n > 0 {
        requests.copy_within(n.., 0);
        requests.truncate(requests.len() - n);
    }
}

/// Identifies one lease request of one elector, so its response can be matched.
/// Ids increase by one per request and are never reused by an elector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
pub struct RequestId(pub u64);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Why a term ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum StepDownReason {
    /// The local clock reached `last successful send + lease_ttl - safety_margin`
    /// without a newer successful renewal.
    LocalDeadline,
    /// A renewal was refused: the store says someone else holds the lease.
    Superseded {
        /// The new holder.
        holder: OwnerId,
        /// The new holder's token.
        token: FencingToken,
    },
    /// The store answered with a different token than the one in hand: the
    /// old lease lapsed at the store and this is a new term.
    NewTerm {
        /// The new term's token.
        token: FencingToken,
    },
    /// [`Elector::stop`] was called.
    Stopped,
    /// [`Elector::abdicate`] was called: the work gave up (it failed or
    /// finished) while the lease was still good.
    Abdicated,
}

impl fmt::Display for StepDownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepDownReason::LocalDeadline => f.write_str("local deadline"),
            StepDownReason::Superseded { holder, token } => {
                write!(f, "superseded by {holder} (token {token})")
            }
            StepDownReason::NewTerm { token } => write!(f, "new term (token {token})"),
            StepDownReason::Stopped => f.write_str("stopped"),
            StepDownReason::Abdicated => f.write_str("abdicated"),
        }
    }
}

/// The leader as this elector last learned it from the store.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ObservedLeader {
    /// The holder of the lease.
    pub owner: OwnerId,
    /// Its token.
    pub token: FencingToken,
}

/// What the driver must do, in order. Drain with [`Elector::poll_output`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ElectorOutput {
    /// Call `try_acquire_or_renew(role, owner, ttl)` on the lease store and
    /// feed the answer back with this `id` (or report the failure).
    SendLeaseRequest {
        /// The request's id, to quote in the response.
        id: RequestId,
        /// The TTL to ask for.
        ttl: Duration,
    },
    /// Leadership began: start the singleton work, stamping `token` on every
    /// write it makes.
    StartWork {
        /// The term's fencing token.
        token: FencingToken,
    },
    /// Leadership ended: stop the work of the term with `token` now.
    StopWork {
        /// The ending term's token.
        token: FencingToken,
        /// Why it ended.
        reason: StepDownReason,
    },
    /// Call `release(role, owner, token)` on the lease store. Fire and forget:
    /// the store ignores it unless the lease is still ours with this token.
    Release {
        /// The token of the term being released.
        token: FencingToken,
    },
    /// The leader this elector knows of changed (`None`: unknown).
    LeaderObserved {
        /// The new observation.
        leader: Option<ObservedLeader>,
    },
}

/// How the elector stands, as [`Elector::phase`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Phase {
    /// Not started, or stopped: sends nothing.
    Idle,
    /// Contending for the lease.
    Follower,
    /// Leading with `token` until `valid_until` on the local clock.
    Leader {
        /// The term's token.
        token: FencingToken,
        /// The send time of the request that last succeeded (local clock).
        anchored_at: Instant,
        /// `anchored_at + lease_ttl - safety_margin`: the local deadline.
        valid_until: Instant,
    },
}

/// How many unanswered requests an elector remembers. An answer to an older
/// one is stale. With the default timings (validity 27 s, a request every 2 s)
/// at most 14 requests can still give a usable validity, so 32 covers round
/// trips up to `min(lease_ttl - safety_margin, 32 × retry_interval)`.
pub const MAX_OUTSTANDING: usize = 32;

/// A request sent and not yet answered.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    id: RequestId,
    sent_at: Instant,
}

/// What [`Elector::handle_response`] made of a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ResponseDisposition {
    /// It answered an outstanding request and was applied.
    Applied,
    /// It answered a request that is no longer outstanding (an answer to it
    /// or to a later request was already applied, it was forgotten as one of
    /// more than [`MAX_OUTSTANDING`], it failed, or the elector stepped down
    /// or went quiet since it was sent), an unknown request, or the elector is
    /// idle: ignored entirely.
    Stale,
    /// It granted or renewed the lease, but arrived after the validity it
    /// would have given had already passed: not acted on.
    TooLate,
    /// It granted or renewed a term this elector will not lead on — it had
    /// released that term (the release was overtaken by the request), or it
    /// is stopped: not acted on, and a release is sent so the lease does not
    /// sit unused until it expires.
    AlreadyReleased,
}

/// One contender for one role. See the [module documentation](self).
///
/// Laid out in this order (`repr(C)`) for a simulated fleet of 10 000
/// electors, where each input finds its elector cold and every cache line it
/// touches is a miss: what a follower's timeout and the answer to its
/// request read is packed into as few lines as its sizes allow — the clock
/// and the request schedule; the phase, how long it has gone unanswered,
/// the highest token seen and the jitter's generator; the outstanding
/// requests; the config, whose timings a request reads are its last line;
/// the outputs' counts and first place. Inside a host row that starts 32
/// bytes into a cache line (the simulator's `NodeProcess`) those groups
/// fall into five lines: a follower's timeout read seven before (measured
/// with cachegrind on a 10 000-node fleet: six misses per request sent, five
/// now). The observed leader (an answer reads it) and the rest follow.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Elector {
    latest_now: LatestNow,
    /// When the next request is due (local clock); `None` while idle.
    next_request_at: Option<Instant>,
    last_request_id: u64,
    phase: Phase,
    /// Send time of the first request since the last answer, if unanswered.
    unanswered_since: Option<Instant>,
    /// The highest token any applied answer carried (granted, renewed, or
    /// held by another): an answer with a lower one is older news.
    highest_token_seen: Option<FencingToken>,
    /// Boxed: a ChaCha state is ~300 bytes, and most electors have no jitter;
    /// keeping the elector small keeps simulated fleets in cache.
    rng: Option<Box<SeededRng>>,
    /// Unanswered requests, oldest first (ids strictly increasing), at most
    /// [`MAX_OUTSTANDING`]. Not a `VecDeque`: it holds one or two requests
    /// almost always, and retiring a prefix is a short copy.
    outstanding: Outstanding,
    config: ElectorConfig,
    outputs: Outputs,
    observed: Option<ObservedLeader>,
    /// The highest token of a term this elector released.
    released: Option<FencingToken>,
    planted: BugSlot,
}

impl Elector {
    /// An idle elector; call [`start`](Elector::start) to contend.
    pub fn new(config: ElectorConfig) -> Self {
        let rng = config
            .jitter()
            .map(|jitter| Box::new(SeededRng::seed_from_u64(jitter.seed)));
        Elector {
            config,
            phase: Phase::Idle,
            outstanding: Outstanding::new(),
            next_request_at: None,
            last_request_id: 0,
            unanswered_since: None,
            released: None,
            observed: None,
            highest_token_seen: None,
            outputs: Outputs::default(),
            latest_now: LatestNow::default(),
            rng,
            planted: BugSlot::default(),
        }
    }

    /// Plants a deliberate bug (negative controls only). Bugs that are not the
    /// elector's have no effect here.
    #[cfg(feature = "planted-bugs")]
    pub fn plant(&mut self, bug: PlantedBug) {
        self.planted.set(bug);
    }

    /// The elector's settings.
    pub fn config(&self) -> &ElectorConfig {
        &self.config
    }

    /// Where the elector stands, as of its last input.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Whether it led as of its last input. Prefer
    /// [`token_at`](Elector::token_at), which also honours the deadline
    /// between inputs.
    pub fn is_leader(&self) -> bool {
        matches!(self.phase, Phase::Leader { .. })
    }

    /// The token in hand, if leading as of the last input.
    pub fn token(&self) -> Option<FencingToken> {
        match self.phase {
            Phase::Leader { token, .. } => Some(token),
            _ => None,
        }
    }

    /// The token the holder may act with at `now` (local clock): `None` if not
    /// leading or if `now` is at or past the local deadline, even when
    /// [`handle_timeout`](Elector::handle_timeout) has not been called yet.
    /// Work should check this right before acting.
    pub fn token_at(&self, now: Instant) -> Option<FencingToken> {
        match self.phase {
            Phase::Leader {
                token, valid_until, ..
            } if now < valid_until || self.planted.is(PlantedBug::ElectorIgnoresDeadline) => {
                Some(token)
            }
            _ => None,
        }
    }

    /// The leader as last learned from the store (this elector itself while it
    /// leads), or `None` if unknown.
    pub fn observed_leader(&self) -> Option<&ObservedLeader> {
        self.observed.as_ref()
    }

    /// The next output, or `None` when drained. Drain after every input.
    pub fn poll_output(&mut self) -> Option<ElectorOutput> {
        self.outputs.pop_front()
    }

    /// When to call [`handle_timeout`](Elector::handle_timeout) next (local
    /// clock), or `None` while idle.
    pub fn next_timeout(&self) -> Option<Instant> {
        let deadline = match self.phase {
            Phase::Leader { valid_until, .. }
                if !self.planted.is(PlantedBug::ElectorIgnoresDeadline) =>
            {
                Some(valid_until)
            }
            _ => None,
        };
        let deafness = match self.unanswered_since {
            Some(since)
                if self.phase == Phase::Follower && !self.config.rejoin_delay().is_zero() =>
            {
                Some(since + self.config.validity())
            }
            _ => None,
        };
        earliest(earliest(self.next_request_at, deadline), deafness)
    }

    /// Begins contending: the first request goes out at once. Otherwise a
    /// no-op unless idle — except that, like every input, it honours the
    /// local deadline: a leader past it steps down (a `start` handled late,
    /// after a pause, must not leave a leader believing past its deadline
    /// until the next timeout).
    pub fn start(&mut self, now: Instant) {
        let now = self.latest_now.observe(now);
        if self.phase != Phase::Idle {
            self.check_deadline(now);
            return;
        }
        self.phase = Phase::Follower;
        self.next_request_at = Some(now);
        self.send_due_request(now);
    }

    /// Stops contending: ends the work if leading, then releases the lease.
    /// Any response still in flight becomes stale, except that a grant that
    /// reaches the stopped elector is released when it arrives — whichever
    /// request it answers: a stopped elector wants no lease, and a grant for
    /// a request it had already retired (the store handled it late, after
    /// the stop's release) would otherwise sit unused until it expires.
    /// No-op when idle.
    pub fn stop(&mut self, now: Instant) {
        let _ = self.latest_now.observe(now);
        if let Phase::Leader { token, .. } = self.phase {
            self.end_term(token, StepDownReason::Stopped);
            self.release(token);
        }
        self.outstanding.clear();
        self.phase = Phase::Idle;
        self.next_request_at = None;
        self.unanswered_since = None;
        self.observe_leader(None);
    }

    /// Gives up leadership voluntarily — for work that failed or finished
    /// while the lease is still good, so that a node that is alive but not
    /// working does not keep the role. Ends the work
    /// ([`StepDownReason::Abdicated`]), releases the lease, and stays quiet for
    /// [`rejoin_delay`](ElectorConfig::rejoin_delay) before contending again,
    /// so another node takes over. No-op unless leading.
    pub fn abdicate(&mut self, now: Instant) {
        let now = self.latest_now.observe(now);
        let Phase::Leader { token, .. } = self.phase else {
            return;
        };
        self.end_term(token, StepDownReason::Abdicated);
        self.release(token);
        self.phase = Phase::Follower;
        self.go_quiet(now);
        self.observe_leader(None);
    }

    /// Advances the elector to `now`: steps down on the local deadline, and
    /// sends the request that is due (an unanswered one stays outstanding).
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.latest_now.observe(now);
        if self.phase == Phase::Idle {
            return;
        }
        self.check_deadline(now);
        self.check_deafness(now);
        self.send_due_request(now);
    }

    /// Feeds the store's answer to request `id`.
    ///
    /// The deadline is checked first, so a leader that is already past it
    /// steps down before anything else happens. Only an answer to an
    /// outstanding request is applied, and applying it retires every older
    /// request too; see [`ResponseDisposition`].
    pub fn handle_response(
        &mut self,
        id: RequestId,
        result: LeaseResult,
        now: Instant,
    ) -> ResponseDisposition {
        let now = self.latest_now.observe(now);
        if self.phase == Phase::Idle {
            // Stopped (or never started): any grant is one it does not want.
            if let Some(token) = result.acquired_token() {
                self.release(token);
                return ResponseDisposition::AlreadyReleased;
            }
            return ResponseDisposition::Stale;
        }
        self.check_deadline(now);
        let stale_to_newest = self.planted.is(PlantedBug::ElectorAppliesStaleAnswer);
        let Some(at) = (self.outstanding.iter().position(|r| r.id == id))
            .or_else(|| stale_to_newest.then(|| self.outstanding.len().checked_sub(1))?)
        else {
            return ResponseDisposition::Stale;
        };
        if self.planted.is(PlantedBug::ElectorDropsSlowAnswers) && at + 1 != self.outstanding.len()
        {
            return ResponseDisposition::Stale;
        }
        let request = if self.planted.is(PlantedBug::ElectorMatchesNewestRequest) {
            self.outstanding[self.outstanding.len() - 1]
        } else {
            self.outstanding[at]
        };
        // Older requests carry older news than this answer: retire them.
        remove_front(&mut self.outstanding, at + 1);
        self.unanswered_since = None;
        let answer_token = match &result {
            LeaseResult::Granted { token, .. } | LeaseResult::Renewed { token, .. } => *token,
            LeaseResult::Held { holder } => holder.token,
        };
        if self
            .highest_token_seen
            .is_some_and(|seen| answer_token < seen)
        {
            // The store answered this request before it answered one whose
            // answer was applied already (the network reordered them).
            self.send_due_request(now);
            return ResponseDisposition::Stale;
        }
        self.highest_token_seen = Some(answer_token);
        let disposition = match result {
            LeaseResult::Granted { token, .. } | LeaseResult::Renewed { token, .. } => {
                self.on_acquired(token, request.sent_at, now)
            }
            LeaseResult::Held { holder } => {
                if let Phase::Leader { token, .. } = self.phase {
                    self.end_term(
                        token,
                        StepDownReason::Superseded {
                            holder: holder.owner.clone(),
                            token: holder.token,
                        },
                    );
                    self.phase = Phase::Follower;
                }
                self.observe_leader(Some(ObservedLeader {
                    owner: holder.owner,
                    token: holder.token,
                }));
                ResponseDisposition::Applied
            }
        };
        self.send_due_request(now);
        self.debug_check();
        disposition
    }

    /// Reports that request `id` failed without an answer (connection refused,
    /// store error). The next attempt goes out `retry_interval` after the
    /// failed one was sent. Stale ids are ignored.
    pub fn handle_request_failed(&mut self, id: RequestId, now: Instant) {
        let now = self.latest_now.observe(now);
        self.outstanding.retain(|r| r.id != id);
        if self.phase != Phase::Idle {
            self.check_deadline(now);
            self.check_deafness(now);
            self.send_due_request(now);
        }
    }

    fn release(&mut self, token: FencingToken) {
        // The highest token released is the one a late renewal could bring
        // back: tokens only grow, so a release of an older term (a stale
        // grant reaching a stopped elector) must not make it forget a newer
        // one whose release may still be on its way.
        self.released = self.released.max(Some(token));
        self.outputs.push_back(ElectorOutput::Release { token });
    }

    /// A follower that has heard nothing for a whole validity may hold a lease
    /// it was never told about (its answers are lost); it goes quiet so that
    /// lease lapses. See [`ElectorConfig::rejoin_delay`].
    fn check_deafness(&mut self, now: Instant) {
        let Some(since) = self.unanswered_since else {
            return;
        };
        if self.phase != Phase::Follower
            || self.config.rejoin_delay().is_zero()
            || now < since + self.config.validity()
        {
            return;
        }
        self.go_quiet(now);
    }

    fn go_quiet(&mut self, now: Instant) {
        self.outstanding.clear();
        self.unanswered_since = None;
        self.next_request_at = Some(now + self.config.rejoin_delay());
    }

    /// Shortens `interval` by the configured jitter, if any. Inlined: every
    /// request and renewal asks, and most electors have no jitter.
    #[inline]
    fn jittered(&mut self, interval: Duration) -> Duration {
        let Some(rng) = self.rng.as_mut() else {
            return interval;
        };
        match self.config.jitter() {
            Some(jitter) if jitter.fraction > 0.0 => {
                // 53 random bits give a uniform float in [0, 1).
                let unit = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                interval.mul_f64(1.0 - jitter.fraction * unit)
            }
            _ => interval,
        }
    }

    /// Steps down if leading and `now` is at or past the local deadline.
    /// Inlined: every input asks, and the answer is almost always no.
    #[inline]
    fn check_deadline(&mut self, now: Instant) {
        let Phase::Leader {
            token, valid_until, ..
        } = self.phase
        else {
            return;
        };
        if now < valid_until || self.planted.is(PlantedBug::ElectorIgnoresDeadline) {
            return;
        }
        self.step_down_on_deadline(token, now);
    }

    /// The local deadline passed while leading with `token`.
    #[inline(never)]
    fn step_down_on_deadline(&mut self, token: FencingToken, now: Instant) {
        self.end_term(token, StepDownReason::LocalDeadline);
        if self.config.release_on_deadline() {
            self.release(token);
        }
        self.phase = Phase::Follower;
        // Whatever is in flight was sent under the old term; its answer would
        // anchor a new term on a request sent before we knew we had lost.
        self.go_quiet(now);
        self.observe_leader(None);
    }

    /// Sends the request that is due at `now`, if one is. Inlined: every
    /// input asks, and the answer is usually not yet.
    #[inline]
    fn send_due_request(&mut self, now: Instant) {
        if self.next_request_at.is_some_and(|due| now >= due) {
            self.send_request(now);
        }
    }

    /// Sends a request now (one is due).
    #[inline(never)]
    fn send_request(&mut self, now: Instant) {
        // Requests whose answer could no longer be acted on are forgotten,
        // and so is the oldest one beyond the bound.
        // Oldest first: the expired ones are at the front.
        let validity = self.config.validity();
        let expired = self
            .outstanding
            .iter()
            .take_while(|r| r.sent_at + validity <= now)
            .count();
        remove_front(&mut self.outstanding, expired);
        if self.outstanding.len() == MAX_OUTSTANDING {
            remove_front(&mut self.outstanding, 1);
        }
        self.last_request_id += 1;
        let id = RequestId(self.last_request_id);
        self.outstanding.push(InFlight { id, sent_at: now });
        if self.unanswered_since.is_none() {
            self.unanswered_since = Some(now);
        }
        let retry = self.jittered(self.config.retry_interval());
        self.next_request_at = Some(now + retry);
        self.outputs.push_back(ElectorOutput::SendLeaseRequest {
            id,
            ttl: self.config.lease_ttl(),
        });
    }

    fn on_acquired(
        &mut self,
        token: FencingToken,
        sent_at: Instant,
        now: Instant,
    ) -> ResponseDisposition {
        let sent_at = if self.planted.is(PlantedBug::ElectorAnchorsAtArrival) {
            now
        } else if self.planted.is(PlantedBug::ElectorDeadlineWithoutMargin) {
            // The whole TTL from the send; the anchor never passes `now`.
            (sent_at + (self.config.lease_ttl() - self.config.validity())).min(now)
        } else {
            sent_at
        };
        let valid_until = sent_at + self.config.validity();
        if valid_until <= now {
            // The validity this answer would give is already over. Acting on
            // it would mean leading past the deadline; the next request (due
            // now, since it took longer than retry_interval) gets a fresh one.
            return ResponseDisposition::TooLate;
        }
        if self.released == Some(token) {
            // Our release of this very term is still on its way (or was
            // lost): leading on it could outlive the release. Release again;
            // the next grant will carry a fresh token.
            self.outputs.push_back(ElectorOutput::Release { token });
            return ResponseDisposition::AlreadyReleased;
        }
        if let Phase::Leader { token: held, .. } = self.phase {
            if held != token {
                self.end_term(held, StepDownReason::NewTerm { token });
                self.outputs.push_back(ElectorOutput::StartWork { token });
            }
        } else {
            self.outputs.push_back(ElectorOutput::StartWork { token });
        }
        self.phase = Phase::Leader {
            token,
            anchored_at: sent_at,
            valid_until,
        };
        let renew = self.jittered(self.config.renew_interval());
        self.next_request_at = Some(sent_at + renew);
        self.observe_leader(Some(ObservedLeader {
            owner: self.config.owner().clone(),
            token,
        }));
        ResponseDisposition::Applied
    }

    fn end_term(&mut self, token: FencingToken, reason: StepDownReason) {
        debug_assert_eq!(self.token(), Some(token), "only the live term can end");
        self.outputs
            .push_back(ElectorOutput::StopWork { token, reason });
    }

    fn observe_leader(&mut self, leader: Option<ObservedLeader>) {
        if self.observed != leader {
            self.observed = leader.clone();
            self.outputs
                .push_back(ElectorOutput::LeaderObserved { leader });
        }
    }

    /// Cheap internal invariants, checked in debug builds after each response.
    fn debug_check(&self) {
        if let Phase::Leader {
            anchored_at,
            valid_until,
            ..
        } = self.phase
        {
            debug_assert_eq!(valid_until, anchored_at + self.config.validity());
            debug_assert!(anchored_at <= self.latest_now.get());
        }
        debug_assert!(self.outstanding.len() <= MAX_OUTSTANDING);
        debug_assert!(self
            .outstanding
            .iter()
            .zip(self.outstanding.iter().skip(1))
            .all(|(a, b)| a.id < b.id && a.sent_at <= b.sent_at));
        debug_assert!(self
            .outstanding
            .last()
            .is_none_or(|r| r.id.0 <= self.last_request_id));
    }
}
