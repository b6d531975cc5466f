//! Kubernetes leader election: client-go's `LeaderElector` on a
//! `coordination.k8s.io/v1` `Lease`, against the API server's object store.
//!
//! # What it mirrors
//!
//! kubernetes/client-go at 32ce75a (`git show HEAD:...` of the snapshot):
//!
//! * `tools/leaderelection/leaderelection.go`
//!   * `NewLeaderElector`'s checks: `LeaseDuration > RenewDeadline`,
//!     `RenewDeadline > JitterFactor × RetryPeriod`, all three > 0
//!     ([`ClientGo::validate`]).
//!   * `Run`: `acquire`, then `OnStartedLeading`, then `renew`; when `renew`
//!     returns, `OnStoppedLeading` — so with `ReleaseOnCancel` the application
//!     still leads while the release after a failed renewal is in flight.
//!   * `acquire`: `wait.JitterUntilWithContext(.., RetryPeriod, JitterFactor
//!     = 1.2, sliding = true)`: a try, then a sleep of `RetryPeriod × (1 + 1.2
//!     × rand)` after it returns (`wait.Jitter`).
//!   * `renew`: `wait.UntilWithContext(.., RetryPeriod)` around
//!     `wait.PollUntilContextTimeout(ctx, RetryPeriod, RenewDeadline,
//!     immediate = true, tryAcquireOrRenew)`: a poll tries at once and then on
//!     a non-sliding `RetryPeriod` ticker, and fails when its `RenewDeadline`
//!     context expires (cancelling the request in flight); a successful poll
//!     is followed by the next one `RetryPeriod` later.
//!   * `tryAcquireOrRenew`: (1) the leader's fast path, an `Update` on the
//!     cached object while `isLeaseValid`; (2) `Get`, `Create` on NotFound;
//!     (3) if the raw record differs from `observedRawRecord`,
//!     `setObservedRecord` (observedTime = **now on the local clock**); a
//!     held, unexpired lease of another is left alone; (4) `Update` with
//!     `LeaderTransitions + 1` unless already the holder.
//!   * `isLeaseValid`: `observedTime + record.LeaseDurationSeconds > now`. The
//!     expiry is judged only by the local clock since the record was last
//!     seen to change; the record's timestamps are never compared to a clock.
//!   * `release`/`tryRelease`: with a `RenewDeadline` timeout, `Get`; if the
//!     elector still believes it leads (its *observed* record — the `Get` does
//!     not refresh it), `Update` to holder `""`, `LeaseDurationSeconds` 1,
//!     transitions kept; retried on Conflict.
//!   * Kubernetes PR #114872 (merge 6e69fba, commit b4217e1 "fix the wait
//!     time for trying to acquire the leader lease"): step (3) used the
//!     candidate's own `le.config.LeaseDuration` instead of the record's
//!     `LeaseDurationSeconds`. [`ClientGoSettings::pre_114872_own_lease_duration`]
//!     restores that.
//! * `tools/leaderelection/resourcelock/leaselock.go`: `Get`/`Create`/`Update`
//!   of the `Lease`; `Update` sends the object last returned by the server
//!   (`ll.lease`), so its `resourceVersion` makes it a compare-and-swap; the
//!   record's `LeaseDurationSeconds` is `int(LeaseDuration / time.Second)`.
//! * `resourcelock/interface.go` `NewFromKubeconfig`: the client's request
//!   timeout is `max(1 s, RenewDeadline / 2)` ([`ClientGoSettings::request_timeout`]).
//! * `healthzadaptor.go` / `LeaderElector.Check`: [`ClientGoClient::check`]
//!   (the adaptor itself, an HTTP handler, is left out).
//! * The API server: one object, `resourceVersion` from a global counter
//!   (etcd's revision), `Update` with a stale `resourceVersion` → 409
//!   Conflict, `Create` of an existing object → 409 AlreadyExists, `Get` of
//!   a missing one → 404. The server never judges expiry.
//!
//! # Defaults
//!
//! LeaseDuration 15 s, RenewDeadline 10 s, RetryPeriod 2 s ("core clients
//! default"), JitterFactor 1.2, ReleaseOnCancel false (the Go zero value),
//! request timeout 5 s.
//!
//! # Left out
//!
//! `Coordinated` leader election (alpha), `PreferredHolder`/`Strategy`,
//! `OnNewLeader`, the healthz `WatchDog` adaptor, metrics and events,
//! the other lock types (ConfigMap/Endpoints/multi-lock). After `Run`
//! returns the process usually exits; the model goes idle unless
//! [`ClientGoSettings::run_again`] is set.
//!
//! # Known failure mode
//!
//! Expiry on the candidate's clock: a leader paused (or partitioned) past
//! `LeaseDuration` without reaching its `RenewDeadline` check keeps acting
//! while a candidate takes over; `leaseTransitions` is a usable fencing
//! token, but nothing in client-go checks it downstream.

mod client;
mod server;

use std::time::Duration;

pub use client::ClientGoClient;
pub use server::ApiServer;

use crate::util::nonzero;
use crate::{Boundaries, ClientId, ClockKind, Instant, Protocol, ServerIndex, SettingsError};

/// client-go's `JitterFactor`, applied to `RetryPeriod` in `acquire`.
pub const JITTER_FACTOR: f64 = 1.2;

/// The client-go Lease protocol.
#[derive(Clone, Copy, Debug)]
pub enum ClientGo {}

/// `LeaderElectionConfig`'s timings and switches; `Default` = core clients'.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientGoSettings {
    /// How long a candidate waits, on its own clock, since it last saw the
    /// record change before it may take over (15 s).
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a renewal before giving up (10 s).
    pub renew_deadline: Duration,
    /// Between tries (2 s; jittered × (1 + 1.2 rand) while acquiring).
    pub retry_period: Duration,
    /// Release the lease when the context is cancelled or renewal fails.
    pub release_on_cancel: bool,
    /// Per-request timeout of the REST client (`max(1 s, RenewDeadline/2)`).
    pub request_timeout: Duration,
    /// Judge another's lease by this client's own `lease_duration` instead
    /// of the record's `leaseDurationSeconds` (client-go before PR #114872).
    pub pre_114872_own_lease_duration: bool,
    /// Call `Run` again after it returns (the model's switch; a process
    /// usually exits instead).
    pub run_again: bool,
}

impl Default for ClientGoSettings {
    fn default() -> Self {
        ClientGoSettings {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: false,
            request_timeout: Duration::from_secs(5),
            pre_114872_own_lease_duration: false,
            run_again: false,
        }
    }
}

impl ClientGoSettings {
    /// Default settings with another lease duration and renew deadline, the
    /// request timeout derived as `NewFromKubeconfig` does.
    pub fn with_timings(lease_duration: Duration, renew_deadline: Duration) -> Self {
        ClientGoSettings {
            lease_duration,
            renew_deadline,
            request_timeout: (renew_deadline / 2).max(Duration::from_secs(1)),
            ..ClientGoSettings::default()
        }
    }
}

/// `LeaderElectionRecord` as stored in the `Lease` spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseRecord {
    /// `holderIdentity`; empty when released.
    pub holder_identity: String,
    /// `leaseDurationSeconds` (whole seconds of the writer's `LeaseDuration`).
    pub lease_duration_seconds: u64,
    /// `acquireTime`, on the writer's clock (only ever compared for equality).
    pub acquire_time: Instant,
    /// `renewTime`, on the writer's clock (only ever compared for equality).
    pub renew_time: Instant,
    /// `leaseTransitions`: +1 on every change of holder.
    pub lease_transitions: u64,
}

/// A request to the API server about the one `Lease` object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiRequest {
    /// `GET`.
    Get {
        /// Matches the answer.
        id: u64,
    },
    /// `POST` (create).
    Create {
        /// Matches the answer.
        id: u64,
        /// The spec.
        record: LeaseRecord,
    },
    /// `PUT` of an object last seen at `resource_version`.
    Update {
        /// Matches the answer.
        id: u64,
        /// The new spec.
        record: LeaseRecord,
        /// The precondition.
        resource_version: u64,
    },
}

/// The API server's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiResponse {
    /// The request's id.
    pub id: u64,
    /// What happened.
    pub result: ApiResult,
}

/// The outcome of an API request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiResult {
    /// The object as stored (the answer to a `GET` or a successful write).
    Lease {
        /// Its spec.
        record: LeaseRecord,
        /// Its `metadata.resourceVersion`.
        resource_version: u64,
    },
    /// 404.
    NotFound,
    /// 409 on `Update`: the `resourceVersion` is stale.
    Conflict,
    /// 409 on `Create`: the object exists.
    AlreadyExists,
    /// Any other error the call returns. The model's [`ApiServer`] never
    /// answers this; a test or a fault-injecting driver does, to say how a
    /// request failed rather than leaving it unanswered until its timeout.
    /// `tryAcquireOrRenew` and `tryRelease` treat it as every error that is
    /// neither NotFound nor Conflict: the fast path falls back to `Get`, any
    /// other step ends the try (or the release) unsuccessfully.
    Failed(ApiFailure),
}

/// How a request failed, for [`ApiResult::Failed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiFailure {
    /// An HTTP status other than 404 and 409 (500, 503, 429 ...).
    Status(u16),
    /// The call returned before an answer was read: `context.Canceled` or
    /// `DeadlineExceeded` from the caller's context, or a broken connection.
    Canceled,
}

impl ClientGo {
    /// `NewLeaderElector`'s check of the lock's identity (the elector's
    /// `name` here): an empty one is rejected, with upstream's message — an
    /// elector named `""` would take a released lease for its own.
    pub fn validate_identity(name: &str) -> Result<(), SettingsError> {
        if name.is_empty() {
            return Err(SettingsError::Invalid {
                setting: "identity",
                reason: "Lock identity is empty",
            });
        }
        Ok(())
    }
}

/// [`ClientGoClient::check`]'s failure: the elector's observed record names
/// it, but it last saw the record change more than `LeaseDuration` plus the
/// tolerance ago (`LeaderElector.Check`: "failed election to renew
/// leadership on lease").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenewalOverdue {
    /// How long ago, on the elector's clock, it last observed the record.
    pub since_observed: Duration,
    /// `LeaseDuration` plus the tolerance that was exceeded.
    pub limit: Duration,
}

impl std::fmt::Display for RenewalOverdue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "failed election to renew leadership on lease (last observed {:?} ago, limit {:?})",
            self.since_observed, self.limit
        )
    }
}

impl std::error::Error for RenewalOverdue {}

impl Protocol for ClientGo {
    const NAME: &'static str = "client-go";
    type Settings = ClientGoSettings;
    type Request = ApiRequest;
    type Response = ApiResponse;
    type Client = ClientGoClient;
    type Server = ApiServer;
    const HAS_TOKEN: bool = true;
    /// client-go times the lease by Go's monotonic reading: `observedTime`
    /// is a `time.Now()` (`tools/leaderelection/leaderelection.go`,
    /// `setObservedRecord`), and expiry is `observedTime.Add(LeaseDuration).After(now)`
    /// — `After` compares the monotonic readings; the renew deadline is a
    /// `context.WithTimeout` (`renew`). A wall step changes neither.
    const CLIENT_CLOCK: ClockKind = ClockKind::Monotonic;
    /// The API server decides no time here: it stores the lease object the
    /// clients write (its `renewTime` is data, compared by no one).
    const SERVER_CLOCK: ClockKind = ClockKind::Monotonic;

    /// `NewLeaderElector`'s checks, in its order, plus a positive request
    /// timeout.
    fn validate(settings: &ClientGoSettings) -> Result<(), SettingsError> {
        if settings.lease_duration <= settings.renew_deadline {
            return Err(SettingsError::NotGreater {
                setting: "lease_duration",
                than: "renew_deadline",
                value: settings.lease_duration,
                bound: settings.renew_deadline,
            });
        }
        // `time.Duration(JitterFactor*float64(lec.RetryPeriod))`: the
        // nanoseconds as a float64, times 1.2, truncated toward zero (Go's
        // float-to-integer conversion) — `mul_f64` would round instead.
        let jittered =
            Duration::from_nanos((settings.retry_period.as_nanos() as f64 * JITTER_FACTOR) as u64);
        if settings.renew_deadline <= jittered {
            return Err(SettingsError::NotGreater {
                setting: "renew_deadline",
                than: "retry_period × JitterFactor (1.2)",
                value: settings.renew_deadline,
                bound: jittered,
            });
        }
        nonzero("lease_duration", settings.lease_duration)?;
        nonzero("renew_deadline", settings.renew_deadline)?;
        nonzero("retry_period", settings.retry_period)?;
        nonzero("request_timeout", settings.request_timeout)?;
        Ok(())
    }

    fn servers(_settings: &ClientGoSettings) -> u16 {
        1
    }

    /// The apiserver expires nothing: a candidate judges the record on its
    /// own clock, `lease_duration` after it last saw the record change, at
    /// its retry ticks (`client.rs`), so the timers are the instants that
    /// matter and `expiries` is empty. Lengths: the lease duration, the
    /// renew deadline and the retry period (`LeaderElectionConfig`).
    fn boundaries(settings: &ClientGoSettings) -> Boundaries {
        Boundaries {
            expiries: Vec::new(),
            expiry_tick: None,
            lengths: vec![
                settings.lease_duration,
                settings.renew_deadline,
                settings.retry_period,
            ],
        }
    }

    fn new_server(_settings: &ClientGoSettings, _index: ServerIndex) -> ApiServer {
        ApiServer::new()
    }

    fn new_client(
        settings: &ClientGoSettings,
        id: ClientId,
        name: &str,
        seed: u64,
    ) -> ClientGoClient {
        ClientGoClient::new(settings.clone(), id, name, seed)
    }
}
