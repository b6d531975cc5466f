//! Where leases live: the [`LeaseBackend`] trait and its in-process
//! implementation.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{lock, Clock, SharedStateError};
use crate::id::{FencingToken, OwnerId, Role};
use crate::lease::{Lease, LeaseError, LeaseResult, LeaseStore, ReleaseResult};
use crate::time::Instant;

/// Why a backend call produced no answer.
///
/// Either way the driver reports the request as failed to the elector
/// ([`Elector::handle_request_failed`](crate::Elector::handle_request_failed)),
/// which retries on its own schedule; a failure never ends a term by itself
/// (only the elector's local deadline does).
#[derive(Debug)]
pub enum BackendError {
    /// The store refused the request as bad input (for example a TTL above its
    /// maximum). Retrying will not help; fix the configuration.
    Rejected(LeaseError),
    /// The store could not be reached or failed (connection refused, query
    /// error, a poisoned in-process lock). The request may or may not have
    /// taken effect.
    Unavailable(Box<dyn Error + Send + Sync>),
}

impl BackendError {
    /// Wraps any error as [`BackendError::Unavailable`]; for backend
    /// implementations.
    pub fn unavailable(error: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        BackendError::Unavailable(error.into())
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::Rejected(error) => write!(f, "the store rejected the request: {error}"),
            BackendError::Unavailable(error) => write!(f, "the store is unavailable: {error}"),
        }
    }
}

impl Error for BackendError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            BackendError::Rejected(error) => Some(error),
            BackendError::Unavailable(error) => Some(&**error),
        }
    }
}

impl From<SharedStateError> for BackendError {
    fn from(error: SharedStateError) -> Self {
        BackendError::unavailable(error)
    }
}

/// A lease store the driver can reach: the I/O half of
/// [`LeaseStore::try_acquire_or_renew`] and [`LeaseStore::release`].
///
/// **The store decides `now`.** Neither method takes a time: an in-process
/// backend reads its [`Clock`], a database uses its own clock
/// (`clock_timestamp()`, read after the row lock; not `now()`, which is the
/// transaction's start). The elector only ever uses its *local* clock, for its own deadline,
/// which it anchors at the moment it sent the request; the safety margin
/// absorbs the drift between the two clocks.
///
/// The futures must be `Send`, because the driver runs each request as its own
/// task: a slow store never delays the elector's timers. The driver bounds
/// each request by the lease TTL (an answer later than that cannot be used),
/// and each release by the retry interval. Dropping a future must be safe.
pub trait LeaseBackend: Send + Sync + 'static {
    /// Grants, renews or refuses `role`'s lease to `owner` for `ttl`, with the
    /// contract of [`LeaseStore::try_acquire_or_renew`]: a new term gets a
    /// token above every earlier one; a live same-owner lease is renewed with
    /// its token; a live foreign lease is reported with its holder.
    ///
    /// # Errors
    /// [`BackendError::Rejected`] for bad input; [`BackendError::Unavailable`]
    /// when no answer could be had.
    fn acquire_or_renew(
        &self,
        role: &Role,
        owner: &OwnerId,
        ttl: Duration,
    ) -> impl Future<Output = Result<LeaseResult, BackendError>> + Send;

    /// Frees `role`'s lease if `owner` holds it live with `token`; otherwise
    /// changes nothing ([`ReleaseResult::NotHeld`]). Must never free a lease of
    /// another term, so a late release cannot end a successor's term.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when no answer could be had (the lease
    /// then lapses at its expiry).
    fn release(
        &self,
        role: &Role,
        owner: &OwnerId,
        token: FencingToken,
    ) -> impl Future<Output = Result<ReleaseResult, BackendError>> + Send;

    /// [`release`](Self::release), and the store's clock when it decided, if
    /// the store says. Why: a grant or renewal answer dates its decision on
    /// the store's clock (`expires_at − ttl`), a release answer does not, and
    /// a history that cannot date a release judges it when its answer
    /// arrives — after a successor's grant, if the answer was held up behind
    /// a slow renewal on the same connection. With the date, `fenced-sim
    /// check-history` puts the release among grants and renewals in the
    /// store's own order.
    ///
    /// The default calls [`release`](Self::release) and knows no date; the
    /// crate's backends override it. The date must be on the clock that
    /// dates the store's grants and renewals.
    ///
    /// # Errors
    /// As [`release`](Self::release).
    fn release_dated(
        &self,
        role: &Role,
        owner: &OwnerId,
        token: FencingToken,
    ) -> impl Future<Output = Result<(ReleaseResult, Option<Instant>), BackendError>> + Send {
        async move { Ok((self.release(role, owner, token).await?, None)) }
    }
}

/// A [`LeaseBackend`] over one [`LeaseStore`] shared by every elector of the
/// process (`Arc<Mutex<..>>`): for tests, examples, and single-node use.
///
/// Its time is its [`Clock`]; give the electors the same clock
/// ([`ElectorOptions::with_clock`](super::ElectorOptions::with_clock)) so the
/// whole process reads one time. Cloning is cheap and shares the store.
#[derive(Clone, Debug)]
pub struct InProcessLeaseBackend {
    store: Arc<Mutex<LeaseStore>>,
    clock: Clock,
}

const LEASE_STORE: &str = "lease store";

impl InProcessLeaseBackend {
    /// Shares `store`, reading time from `clock`.
    pub fn new(store: LeaseStore, clock: Clock) -> Self {
        InProcessLeaseBackend {
            store: Arc::new(Mutex::new(store)),
            clock,
        }
    }

    /// The clock the store reads.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The live holder of `role` now, if any (for tests and dashboards).
    ///
    /// # Errors
    /// [`SharedStateError::Poisoned`] if a thread panicked inside the store.
    pub fn holder(&self, role: &Role) -> Result<Option<Lease>, SharedStateError> {
        let now = self.clock.now();
        Ok(lock(&self.store, LEASE_STORE)?.holder(role, now).cloned())
    }

    /// The highest token `role` has ever been granted.
    ///
    /// # Errors
    /// [`SharedStateError::Poisoned`] if a thread panicked inside the store.
    pub fn highest_token(&self, role: &Role) -> Result<Option<FencingToken>, SharedStateError> {
        Ok(lock(&self.store, LEASE_STORE)?.highest_token(role))
    }
}

impl LeaseBackend for InProcessLeaseBackend {
    async fn acquire_or_renew(
        &self,
        role: &Role,
        owner: &OwnerId,
        ttl: Duration,
    ) -> Result<LeaseResult, BackendError> {
        let now = self.clock.now();
        lock(&self.store, LEASE_STORE)?
            .try_acquire_or_renew(role, owner, ttl, now)
            .map_err(BackendError::Rejected)
    }

    async fn release(
        &self,
        role: &Role,
        owner: &OwnerId,
        token: FencingToken,
    ) -> Result<ReleaseResult, BackendError> {
        Ok(self.release_dated(role, owner, token).await?.0)
    }

    async fn release_dated(
        &self,
        role: &Role,
        owner: &OwnerId,
        token: FencingToken,
    ) -> Result<(ReleaseResult, Option<Instant>), BackendError> {
        let now = self.clock.now();
        let mut store = lock(&self.store, LEASE_STORE)?;
        let result = store.release(role, owner, token, now);
        // The store's own time of the decision: `now`, unless it had seen a
        // later one (its time never runs backwards).
        Ok((result, Some(store.now())))
    }
}
