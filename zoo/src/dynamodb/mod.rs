//! The DynamoDB lock client: awslabs/amazon-dynamodb-lock-client on one lock
//! item.
//!
//! # What it mirrors
//!
//! awslabs/amazon-dynamodb-lock-client at 601eab1,
//! `src/main/java/com/amazonaws/services/dynamodbv2/`:
//!
//! * `AmazonDynamoDBLockClient.acquireLock`: a loop of a consistent
//!   `GetItem` (`getLockFromDynamoDB`); no item → `PutItem` if
//!   `attribute_not_exists` (`upsertAndMonitorNewLock`); a released item →
//!   `PutItem` if `isReleased` (`upsertAndMonitorReleasedLock`,
//!   `acquireReleasedLocksConsistently` off); a held item, first seen →
//!   remembered as `lockTryingToBeAcquired` and the call's budget grows by the
//!   **item's** `leaseDuration` (once); seen again with the same record
//!   version number (RVN) and `isExpired()` — more than `leaseDuration` since
//!   its `lookupTime`, **the contender's own clock** — → `PutItem` if the RVN
//!   is unchanged (`upsertAndMonitorExpiredLock`); a changed RVN restarts the
//!   wait. Between reads it sleeps `refreshPeriod`; once more than
//!   `additionalTimeToWaitForLock` (+ the lease) has passed since the call
//!   began it throws `LockNotGrantedException`. A failed conditional write
//!   also counts as not granted. Every write carries a new RVN
//!   (`generateRecordVersionNumber`: a random UUID).
//! * `sendHeartbeat` and `run()` (the background thread): every
//!   `heartbeatPeriod` (less the time the work took) each held lock is
//!   checked — locally expired → dropped — then `UpdateItem SET
//!   leaseDuration, recordVersionNumber = <new>` if owner and RVN are
//!   unchanged; success sets `lookupTime` to the time **before** the call;
//!   `ConditionalCheckFailedException` drops the lock.
//! * `LockItem.isExpired()` / `hasLock`: the holder believes while no more
//!   than `leaseDuration` has passed since its last successful write began.
//! * `releaseLock`: `DeleteItem` (`deleteLockOnRelease`, the default) or
//!   `UpdateItem SET isReleased`, if owner and RVN are unchanged; `close()`
//!   releases every held lock.
//! * The table: one item per key with conditional writes; DynamoDB has no
//!   lease semantics of its own (TTL deletion is not used by the library).
//!
//! No token: the RVN is random, and nothing the client exposes is monotonic
//! (`HAS_TOKEN` is false).
//!
//! # Defaults and the application loop
//!
//! `AmazonDynamoDBLockClientOptions`: `leaseDuration` 20 s,
//! `heartbeatPeriod` 5 s, heartbeat thread on. `AcquireLockOptions`:
//! `refreshPeriod` and `additionalTimeToWaitForLock` 1 s (`DEFAULT_BUFFER_MS`),
//! `deleteLockOnRelease` on. The model's application calls `acquireLock`
//! again at once whenever it throws, and leads while `hasLock`; a request
//! unanswered after [`DynamoDbSettings::request_timeout`] (model: 5 s) fails
//! like an SDK client exception (the acquire loop goes on; the heartbeat
//! thread skips to its next period).
//!
//! # Clocks
//!
//! Every timing decision of the library reads
//! `LockClientUtils.INSTANCE.millisecondTime()`, which is `System.nanoTime() /
//! 1_000_000` — monotonic, "only useful for elapsed time"
//! (`util/LockClientUtils.java`) — or sleeps a duration (`Thread.sleep`). The
//! model times all of them on the host's monotonic clock
//! ([`Protocol::CLIENT_CLOCK`]); the table decides no time:
//!
//! * the call's budget: `acquireLock` takes `currentTimeMillis =
//!   millisecondTime()` at its start (the name notwithstanding) and throws
//!   once `millisecondTime() - currentTimeMillis > millisecondsToWait`;
//! * when a contender saw an RVN: `createLockItem` sets `lookupTime =
//!   millisecondTime()` after `GetItem` returns ("err on the side of not
//!   expiring the lock");
//! * expiry: `LockItem.isExpired()`, `millisecondTime() - lookupTime >
//!   leaseDuration` (strict), for a contender's remembered RVN and for
//!   `hasLock` alike;
//! * a holder's lease start: `putLockItemAndStartSessionMonitor` and
//!   `sendHeartbeat` read `millisecondTime()` **before** the write; with
//!   `holdLockOnServiceUnavailable`, `updateLookUpTime(millisecondTime())`
//!   after the failed heartbeat;
//! * `Thread.sleep(refreshPeriodInMilliseconds)` between reads;
//! * the heartbeat thread: `run()` measures `timeWorkBegins =
//!   millisecondTime()` and sleeps `max(heartbeatPeriod - timeElapsed, 0)`;
//! * the request timeout is the model's own (the SDK's socket and call
//!   timeouts are not modelled), on the same clock.
//!
//! # Left out
//!
//! Sort keys, lock data and additional attributes, `SessionMonitor`,
//! `shouldSkipBlockingWait` and the `notMyLocks` cache,
//! `acquireOnlyIfLockAlreadyExists`, `acquireReleasedLocksConsistently`,
//! `updateExistingLockRecord`, `ensure`, reentrancy, `bestEffort` release,
//! SDK retries and throttling (a driver may answer
//! [`DynamoDbResponse::Failed`]; the table never does), DynamoDB's own
//! replication (a consistent read of one item is linearizable).
//!
//! Kept on purpose, and where it can matter:
//!
//! * Granularity: upstream truncates `nanoTime` to milliseconds and compares
//!   whole milliseconds; the model compares nanoseconds. A decision (expiry,
//!   the budget, the heartbeat's sleep) can move by less than 1 ms, never
//!   more, and never changes which way it goes otherwise.
//! * Local expiry: the model's application treats `isExpired()` turning
//!   true as the end of its lock — it is told to stop (`LostLeadership`) and
//!   calls `acquireLock` again, non-reentrant, without closing the old
//!   `LockItem`. The lock stays in `locks` as upstream keeps it: the
//!   heartbeat thread's next round removes it if it is still expired
//!   (`sendHeartbeat`'s `isExpired()` check), a heartbeat sent before the
//!   expiry and answered after it revives it (`updateRecordVersionNumber`
//!   sets `lookupTime` to the send), and `close()` (`releaseAllLocks`)
//!   releases it. The application never takes a revived lock back — see
//!   the second failure mode below.
//!
//! # Known failure modes
//!
//! Expiry is judged on each contender's clock from when *it* first saw the
//! RVN: a contender with a fast clock takes over a silent (paused or cut off)
//! holder before the holder's own `leaseDuration` has passed on its clock —
//! two holders, and no token to tell them apart. A slow contender clock
//! waits longer in real time.
//!
//! A heartbeat whose round trip spans the holder's local expiry locks
//! everyone out: the application has given the lock up and is back in
//! `acquireLock`, the answer revives the abandoned `LockItem` in the
//! heartbeat thread, and the thread heartbeats it every `heartbeatPeriod`
//! from then on — a new RVN each time, so no `acquireLock` (the holder's
//! own or anyone's) ever sees it unchanged for a `leaseDuration`. Nobody
//! leads until the holder's client is closed (`releaseAllLocks`) or a
//! heartbeat fails. An application avoids it by closing an expired
//! `LockItem` before acquiring again (`releaseLock` waits for the heartbeat
//! in flight — both hold the item's monitor — and then releases with the
//! RVN it left), or with a reentrant `acquireLock`, which returns the
//! revived lock. (`zoo/tests/dynamodb.rs`,
//! `a_heartbeat_answered_after_the_local_expiry_revives_...`; `explore
//! --protocol dynamodb` finds it as a liveness failure, about 1 seed in 60.)

mod client;
mod server;

use std::time::Duration;

pub use client::DynamoDbClient;
pub use server::DynamoDbServer;

use crate::util::nonzero;
use crate::{Boundaries, ClientId, ClockKind, Protocol, ServerIndex, SettingsError};

/// The DynamoDB lock client protocol.
#[derive(Clone, Copy, Debug)]
pub enum DynamoDb {}

/// A record version number (upstream: a random UUID string).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rvn(pub u64);

/// Settings; `Default` = the library's defaults plus the model's timeout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynamoDbSettings {
    /// `leaseDuration` (20 s), written into the item.
    pub lease_duration: Duration,
    /// `heartbeatPeriod` (5 s).
    pub heartbeat_period: Duration,
    /// `AcquireLockOptions.refreshPeriod` (1 s).
    pub refresh_period: Duration,
    /// `AcquireLockOptions.additionalTimeToWaitForLock` (1 s).
    pub additional_time_to_wait: Duration,
    /// `deleteLockOnRelease` (on): release deletes the item, else marks it
    /// released.
    pub delete_lock_on_release: bool,
    /// A request unanswered this long fails (model: 5 s).
    pub request_timeout: Duration,
    /// `holdLockOnServiceUnavailable` (off): a heartbeat answered
    /// [`DynamoDbError::ServiceUnavailable`] restarts the lease at the
    /// failure (`lockItem.updateLookUpTime(millisecondTime())` in
    /// `sendHeartbeat`) instead of leaving it to run out.
    pub hold_lock_on_service_unavailable: bool,
}

impl Default for DynamoDbSettings {
    fn default() -> Self {
        DynamoDbSettings {
            lease_duration: Duration::from_secs(20),
            heartbeat_period: Duration::from_secs(5),
            refresh_period: Duration::from_secs(1),
            additional_time_to_wait: Duration::from_secs(1),
            delete_lock_on_release: true,
            request_timeout: Duration::from_secs(5),
            hold_lock_on_service_unavailable: false,
        }
    }
}

/// The lock item as a read returns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockItem {
    /// `ownerName`.
    pub owner: ClientId,
    /// `recordVersionNumber`.
    pub rvn: Rvn,
    /// `leaseDuration` as the writer set it.
    pub lease_duration: Duration,
    /// `isReleased`.
    pub released: bool,
}

/// The write's condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    /// `attribute_not_exists(key)`.
    Absent,
    /// `attribute_exists(key) AND isReleased = 1`.
    Released,
    /// `attribute_exists(key) AND recordVersionNumber = rvn`.
    Rvn(Rvn),
    /// `... AND recordVersionNumber = rvn AND ownerName = me`.
    OwnerAndRvn(Rvn),
}

/// A client's request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DynamoDbRequest {
    /// Consistent `GetItem`.
    Get {
        /// Matches the answer.
        id: u64,
    },
    /// `PutItem` (acquire) or `UpdateItem` (heartbeat): the item becomes
    /// ours with `rvn`, if `condition` holds.
    Put {
        /// Matches the answer.
        id: u64,
        /// The condition.
        condition: Condition,
        /// The new RVN.
        rvn: Rvn,
        /// The lease duration written.
        lease_duration: Duration,
    },
    /// `releaseLock`: delete, or mark released, if owner and RVN hold.
    Release {
        /// Matches the answer.
        id: u64,
        /// The RVN we hold.
        rvn: Rvn,
        /// Delete the item (`deleteLockOnRelease`).
        delete: bool,
    },
}

/// An exception the SDK throws for a request, other than the conditional
/// check (which is [`DynamoDbResponse::Written`] with `applied: false`). The
/// table model never answers with one; a driver or a test may, to stand for
/// the service's own failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DynamoDbError {
    /// `ProvisionedThroughputExceededException`: `acquireLock` turns it into
    /// `LockNotGrantedException` (it waits and reads again, like a failed
    /// condition); the heartbeat thread logs it and keeps the lock.
    ProvisionedThroughputExceeded,
    /// An `AwsServiceException` with HTTP 503: `acquireLock` does not catch
    /// it, so the call throws (the application calls again at once); the
    /// heartbeat thread keeps the lock, and with
    /// [`DynamoDbSettings::hold_lock_on_service_unavailable`] restarts its
    /// lease.
    ServiceUnavailable,
    /// `SdkClientException` (the request never made it: a socket timeout, a
    /// refused connection): `acquireLock` logs it and retries after
    /// `refreshPeriod` within its budget, as after the model's request
    /// timeout; the heartbeat thread keeps the lock.
    SdkClient,
}

/// The table's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DynamoDbResponse {
    /// The item, if any.
    Item {
        /// The request.
        id: u64,
        /// The item.
        item: Option<LockItem>,
    },
    /// A conditional write: applied, or `ConditionalCheckFailedException`.
    Written {
        /// The request.
        id: u64,
        /// Whether the condition held.
        applied: bool,
    },
    /// The request failed with `error` (see [`DynamoDbError`]).
    Failed {
        /// The request.
        id: u64,
        /// The exception.
        error: DynamoDbError,
    },
}

impl Protocol for DynamoDb {
    const NAME: &'static str = "dynamodb";
    type Settings = DynamoDbSettings;
    type Request = DynamoDbRequest;
    type Response = DynamoDbResponse;
    type Client = DynamoDbClient;
    type Server = DynamoDbServer;
    const HAS_TOKEN: bool = false;
    /// The lock client times lease durations by
    /// `LockClientUtils.millisecondTime()`, which is `System.nanoTime() / 1e6`
    /// — monotonic, "only useful for elapsed time"
    /// (`src/main/java/.../dynamodbv2/util/LockClientUtils.java`).
    const CLIENT_CLOCK: ClockKind = ClockKind::Monotonic;
    /// The table decides no time: expiry is the clients' judgement of an
    /// unchanged record version over a lease duration.
    const SERVER_CLOCK: ClockKind = ClockKind::Monotonic;

    /// Upstream's constructor rejects `leaseDuration < 2 × heartbeatPeriod`
    /// ("Heartbeat period must be no more than half the length of the Lease
    /// Duration"); the model also rejects zero durations.
    fn validate(settings: &DynamoDbSettings) -> Result<(), SettingsError> {
        nonzero("lease_duration", settings.lease_duration)?;
        nonzero("heartbeat_period", settings.heartbeat_period)?;
        nonzero("refresh_period", settings.refresh_period)?;
        nonzero("request_timeout", settings.request_timeout)?;
        if settings.lease_duration < settings.heartbeat_period * 2 {
            return Err(SettingsError::Invalid {
                setting: "heartbeat_period",
                reason: "must be no more than half of lease_duration",
            });
        }
        Ok(())
    }

    fn servers(_settings: &DynamoDbSettings) -> u16 {
        1
    }

    /// DynamoDB expires nothing: a waiting client judges an item expired
    /// when its record version has not changed for `lease_duration` since
    /// it looked (`client.rs`: `now − lookup > lease_duration`), at its
    /// refresh ticks, so `expiries` is empty. Lengths: the lease duration,
    /// the heartbeat period and the refresh period.
    fn boundaries(settings: &DynamoDbSettings) -> Boundaries {
        Boundaries {
            expiries: Vec::new(),
            expiry_tick: None,
            lengths: vec![
                settings.lease_duration,
                settings.heartbeat_period,
                settings.refresh_period,
            ],
        }
    }

    fn new_server(_settings: &DynamoDbSettings, _index: ServerIndex) -> DynamoDbServer {
        DynamoDbServer::default()
    }

    fn new_client(
        settings: &DynamoDbSettings,
        id: ClientId,
        _name: &str,
        seed: u64,
    ) -> DynamoDbClient {
        DynamoDbClient::new(settings.clone(), id, seed)
    }
}
