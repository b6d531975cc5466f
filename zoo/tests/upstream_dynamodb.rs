//! Upstream's own unit tests of the DynamoDB lock client, ported as contract
//! tests of the model: awslabs/amazon-dynamodb-lock-client at 601eab1,
//! `src/test/java/com/amazonaws/services/dynamodbv2/`.
//!
//! This file ports the Mockito tests (`AmazonDynamoDBLockClientTest`,
//! `LockItemTest`, and the mock-driven cases of `BasicLockClientTests`): one
//! client is driven directly, with no network, and every request is answered
//! by a scripted [`Mock`] the way `when(dynamodb.getItem(..)).thenReturn(..)`
//! answers upstream's. The cases that run against DynamoDB Local are in
//! `upstream_dynamodb_basic.rs`.
//!
//! Upstream's `acquireLock` throwing `LockNotGrantedException` is, in the
//! model, its application calling `acquireLock` again at once: the tests
//! assert that a new call began ([`DynamoDbClient::acquire_call`]) at the
//! instant upstream throws, without the lock. A mock's `null` answer to
//! `putItem`/`updateItem` (Mockito's default) is a successful write.
//!
//! # Not expressible
//!
//! * `AmazonDynamoDBLockClientTest`:
//!   - `releaseLock_whenRemoveKillSessionMonitorJoinInterrupted_...`,
//!     and every `SessionMonitor` case: the model leaves `SessionMonitor` out.
//!   - `lockTableExists_*`, `assertLockTableExists_*`: the model has no
//!     `DescribeTable`.
//!   - `acquireLock_whenLockAlreadyExists_throwIllegalArgumentException`:
//!     additional attributes and sort keys are left out.
//!   - `acquireLock_whenLockDoesNotExist_andWhenAcquireOnlyIfLockAlreadyExistsTrue_...`:
//!     `acquireOnlyIfLockAlreadyExists` is left out (its other two cases
//!     find an item, where the option changes nothing, and are ported).
//!   - `acquireLock_withReentrant_doesNotFailIfHoldingLock`,
//!     `acquireLock_withReentrantFalse_failsIfHoldingLock`: the model's
//!     application never calls `acquireLock` while it holds the lock, and
//!     reentrancy is left out.
//!   - `acquireLock_withConsistentLockDataTrue_*`,
//!     `acquireLock_with{Not,}UpdateRecordAndConsistentLockDataTrue_*`:
//!     `acquireReleasedLocksConsistently` is left out (always off).
//!   - `acquireLock_*_andSkipBlockingWait_*` with a held item, and
//!     `acquireLock_whenExpiredCached*`, `acquireLock_whenRecordVersionChanges*`:
//!     `shouldSkipBlockingWait` and the `notMyLocks` cache are left out (the
//!     two skip-blocking cases whose item is absent or released take the
//!     ordinary path and are ported).
//!   - `sendHeartbeat_whenDeleteDataTrueAndDataNotNull_*`,
//!     `sendHeartbeat_*_updatesData`: lock data is left out.
//!   - `sendHeartbeat_whenNotExpiredAndDifferentOwner_*`,
//!     `sendHeartbeat_whenNotExpired_andSameOwner_releasedTrue_*`: the model's
//!     client only ever holds a lock it acquired itself, unreleased.
//! * `LockItemTest`: `hashCode_*`, `equals_*`, `uniqueIdentifier_*` (no
//!   `LockItem` object), `ensure_*`, `millisecondsUntilDangerZoneEntered_*`,
//!   `amIAboutToExpire_*`, `hasCallback_*` (`ensure` and `SessionMonitor` are
//!   left out). `updateLookUpTime_*` is what
//!   `sendHeartbeat_whenServiceUnavailable_andHoldLockOnServiceUnavailableTrue`
//!   checks through the client, ported below.
//! * `BasicLockClientTests.testHeartbeatAllLocks`, the rows of `lock1` and
//!   `lock3`: upstream mocks `sendHeartbeat` itself to throw, which skips its
//!   `isExpired()` check, so the thread calls it forever; in the model a lock
//!   whose every heartbeat fails expires after `leaseDuration` (300 ms) and
//!   the thread stops heartbeating it. The `lock2` row is ported.
//! * `AcquireLockOptionsTest`, `AmazonDynamoDBLockClientOptionsTest`,
//!   `GetLockOptionsTest`, `ReleaseLockOptionsTest`,
//!   `CreateDynamoDBTableOptionsTest`, `LockItemPaginated*Test`,
//!   `GetAllLocksTests`, `GetLocksByPartitionKeyTest`, `ExceptionTests`,
//!   `LockClientUtilsTests`, `SessionMonitorTest`,
//!   `ConsistentLockDataStressTest`: builders, scans, queries, exceptions'
//!   text, lock data and session monitors — none of it is in the model.

use std::collections::VecDeque;
use std::time::Duration;

use fenced_zoo::dynamodb::{
    Condition, DynamoDb, DynamoDbClient, DynamoDbError, DynamoDbRequest, DynamoDbResponse,
    DynamoDbSettings, LockItem, Rvn,
};
use fenced_zoo::{ClientId, ClientOutput, Instant, LockClient, Protocol};

/// How the mock answers one kind of write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    /// The write is applied (Mockito's default `null` answer).
    Applied,
    /// `ConditionalCheckFailedException`.
    ConditionFailed,
    /// Another exception.
    Fail(DynamoDbError),
}

/// Upstream's stubbed `DynamoDbClient`: `getItem` answers the next of `gets`
/// (the last one repeats, as Mockito's `thenReturn` chain does) or throws
/// `get_error`; acquire writes answer `put`, heartbeats answer `heartbeat`.
#[derive(Clone, Debug)]
struct Mock {
    gets: Vec<Option<LockItem>>,
    get_calls: usize,
    get_error: Option<DynamoDbError>,
    put: Answer,
    heartbeat: Answer,
}

impl Mock {
    fn returning(gets: Vec<Option<LockItem>>) -> Mock {
        Mock {
            gets,
            get_calls: 0,
            get_error: None,
            put: Answer::Applied,
            heartbeat: Answer::Applied,
        }
    }

    fn answer(&mut self, request: &DynamoDbRequest) -> DynamoDbResponse {
        let written = |id, answer| match answer {
            Answer::Applied => DynamoDbResponse::Written { id, applied: true },
            Answer::ConditionFailed => DynamoDbResponse::Written { id, applied: false },
            Answer::Fail(error) => DynamoDbResponse::Failed { id, error },
        };
        match *request {
            DynamoDbRequest::Get { id } => {
                if let Some(error) = self.get_error {
                    return DynamoDbResponse::Failed { id, error };
                }
                let index = self.get_calls.min(self.gets.len() - 1);
                self.get_calls += 1;
                DynamoDbResponse::Item {
                    id,
                    item: self.gets[index],
                }
            }
            DynamoDbRequest::Put {
                id,
                condition: Condition::OwnerAndRvn(_),
                ..
            } => written(id, self.heartbeat),
            DynamoDbRequest::Put { id, .. } => written(id, self.put),
            DynamoDbRequest::Release { id, .. } => written(id, Answer::Applied),
        }
    }
}

/// What the client did, on its clock.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Note {
    Sent(DynamoDbRequest),
    BecameLeader,
    Lost(&'static str),
}

/// One client and its mock, with no latency: every request is answered at
/// the instant it is sent.
struct Mocked {
    now: Instant,
    client: DynamoDbClient,
    mock: Mock,
    log: Vec<(Instant, Note)>,
}

fn ms(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

impl Mocked {
    /// Builds the client (its heartbeat thread starts) and calls
    /// `acquireLock` at time zero.
    fn start(settings: DynamoDbSettings, mock: Mock) -> Mocked {
        DynamoDb::validate(&settings).expect("valid test settings");
        let mut mocked = Mocked {
            now: Instant::from_nanos(0),
            client: DynamoDbClient::new(settings, ClientId(1), 1),
            mock,
            log: Vec::new(),
        };
        mocked.client.start(mocked.now);
        mocked.pump();
        mocked
    }

    /// Drains the client's outputs, answering each request at once.
    fn pump(&mut self) {
        let mut answers = VecDeque::new();
        for _ in 0..10_000 {
            while let Some(output) = self.client.poll_output() {
                let note = match output {
                    ClientOutput::Send { request, .. } => {
                        answers.push_back(self.mock.answer(&request));
                        Note::Sent(request)
                    }
                    ClientOutput::BecameLeader { .. } => Note::BecameLeader,
                    ClientOutput::LostLeadership { reason } => Note::Lost(reason),
                };
                self.log.push((self.now, note));
            }
            let Some(answer) = answers.pop_front() else {
                return;
            };
            self.client.handle_response(0, answer, self.now);
        }
        panic!("the client and its mock did not settle");
    }

    /// Runs the client's timers up to `until`.
    fn run_until(&mut self, until: Instant) {
        for _ in 0..100_000 {
            match self.client.next_timeout() {
                Some(at) if at <= until => {
                    self.now = self.now.max(at);
                    self.client.handle_timeout(self.now);
                    self.pump();
                }
                _ => {
                    self.now = until;
                    return;
                }
            }
        }
        panic!("the client keeps asking for a timeout in the past");
    }

    /// The process is paused until `until`: no timer runs in between.
    fn pause_until(&mut self, until: Instant) {
        self.now = until;
    }

    fn gets(&self) -> Vec<Instant> {
        self.sent(|request| matches!(request, DynamoDbRequest::Get { .. }))
    }

    fn acquire_puts(&self) -> Vec<(Instant, Condition)> {
        self.log
            .iter()
            .filter_map(|(at, note)| match note {
                Note::Sent(DynamoDbRequest::Put { condition, .. })
                    if !matches!(condition, Condition::OwnerAndRvn(_)) =>
                {
                    Some((*at, *condition))
                }
                _ => None,
            })
            .collect()
    }

    fn heartbeats(&self) -> Vec<Instant> {
        self.sent(|request| {
            matches!(
                request,
                DynamoDbRequest::Put {
                    condition: Condition::OwnerAndRvn(_),
                    ..
                }
            )
        })
    }

    fn sent(&self, filter: impl Fn(&DynamoDbRequest) -> bool) -> Vec<Instant> {
        self.log
            .iter()
            .filter_map(|(at, note)| match note {
                Note::Sent(request) if filter(request) => Some(*at),
                _ => None,
            })
            .collect()
    }

    fn became_leader(&self) -> Vec<Instant> {
        self.notes(|note| *note == Note::BecameLeader)
    }

    fn lost(&self) -> Vec<(Instant, &'static str)> {
        self.log
            .iter()
            .filter_map(|(at, note)| match note {
                Note::Lost(reason) => Some((*at, *reason)),
                _ => None,
            })
            .collect()
    }

    fn notes(&self, filter: impl Fn(&Note) -> bool) -> Vec<Instant> {
        self.log
            .iter()
            .filter(|(_, note)| filter(note))
            .map(|(at, _)| *at)
            .collect()
    }

    fn leads(&self, at: Instant) -> bool {
        self.client.leadership(at).is_some()
    }
}

/// `AmazonDynamoDBLockClientTest.getLockClientBuilder`: heartbeat 3000 ms,
/// lease 10000 ms; `AcquireLockOptions` defaults (refresh and additional wait
/// 1 s).
fn unit_settings() -> DynamoDbSettings {
    DynamoDbSettings {
        lease_duration: Duration::from_millis(10_000),
        heartbeat_period: Duration::from_millis(3_000),
        ..DynamoDbSettings::default()
    }
}

/// An item another owner ("foobar") holds, as upstream's mocks return it.
fn held(rvn: u64, lease_ms: u64) -> Option<LockItem> {
    Some(LockItem {
        owner: ClientId(99),
        rvn: Rvn(rvn),
        lease_duration: Duration::from_millis(lease_ms),
        released: false,
    })
}

fn released(rvn: u64, lease_ms: u64) -> Option<LockItem> {
    held(rvn, lease_ms).map(|item| LockItem {
        released: true,
        ..item
    })
}

/// A held item whose write fails is not granted: upstream's loop reads at
/// 0 s (remembers the RVN, budget 1 s + its 1 ms lease), at 1 s (expired →
/// conditional put → fails, 1000 ms is not > 1001 ms: sleep) and at 2 s
/// (expired → put → fails, 2000 > 1001: throw). Rows: the failure is the
/// failed condition or exceeded throughput.
#[test]
fn acquire_lock_when_lock_already_exists_write_fails_throws_not_granted() {
    // AmazonDynamoDBLockClientTest,
    // acquireLock_whenLockAlreadyExists_throwLockNotGrantedException and
    // acquireLock_whenProvisionedThroughputExceeds_throwLockNotGrantedException.
    for (row, put) in [
        (
            "acquireLock_whenLockAlreadyExists_throwLockNotGrantedException",
            Answer::ConditionFailed,
        ),
        (
            "acquireLock_whenProvisionedThroughputExceeds_throwLockNotGrantedException",
            Answer::Fail(DynamoDbError::ProvisionedThroughputExceeded),
        ),
    ] {
        let mut mock = Mock::returning(vec![held(7, 1)]);
        mock.put = put;
        let mut mocked = Mocked::start(unit_settings(), mock);
        mocked.run_until(ms(1_500));
        assert_eq!(
            mocked.client.acquire_call(),
            Some((ms(0), Duration::from_millis(1_001))),
            "{row}: the budget grew by the item's lease once"
        );
        mocked.run_until(ms(2_000));
        assert_eq!(
            mocked.gets(),
            [ms(0), ms(1_000), ms(2_000), ms(2_000)],
            "{row}"
        );
        assert_eq!(
            mocked.acquire_puts(),
            [
                (ms(1_000), Condition::Rvn(Rvn(7))),
                (ms(2_000), Condition::Rvn(Rvn(7)))
            ],
            "{row}"
        );
        assert_eq!(
            mocked.client.acquire_call().map(|(started, _)| started),
            Some(ms(2_000)),
            "{row}: the call threw at 2 s and the application called again"
        );
        assert!(mocked.became_leader().is_empty(), "{row}");
    }
}

/// A released item is taken at once with a put conditioned on
/// `isReleased`; if that condition fails the loop sleeps and retries within
/// its budget (1 s, not extended: a released item is never the lock being
/// waited out) and throws at the read at 2 s. Rows: the write succeeds or
/// fails. `acquireOnlyIfLockAlreadyExists` changes nothing for an item
/// that exists.
#[test]
fn acquire_lock_on_a_released_item() {
    // AmazonDynamoDBLockClientTest,
    // acquireLock_withAcquireOnlyIfLockAlreadyExists_releasedLockGetsCreated and
    // acquireLock_withAcquireOnlyIfLockAlreadyExistsTrue_releasedLockConditionalCheckFailure.
    let mocked = Mocked::start(unit_settings(), Mock::returning(vec![released(7, 1)]));
    assert_eq!(mocked.acquire_puts(), [(ms(0), Condition::Released)]);
    assert_eq!(mocked.became_leader(), [ms(0)], "releasedLockGetsCreated");
    assert!(mocked.leads(ms(0)));

    let mut mock = Mock::returning(vec![released(7, 1)]);
    mock.put = Answer::ConditionFailed;
    let mut mocked = Mocked::start(unit_settings(), mock);
    mocked.run_until(ms(2_000));
    assert_eq!(
        mocked.acquire_puts(),
        [
            (ms(0), Condition::Released),
            (ms(1_000), Condition::Released),
            (ms(2_000), Condition::Released),
            (ms(2_000), Condition::Released)
        ],
        "releasedLockConditionalCheckFailure: retried within 1 s, thrown at 2 s"
    );
    assert_eq!(
        mocked.client.acquire_call(),
        Some((ms(2_000), Duration::from_millis(1_000)))
    );
    assert!(mocked.became_leader().is_empty());
}

/// A changed RVN restarts the wait but does not add the lease to the budget
/// a second time: reads at 0 (RVN a), 0.8 s (RVN b: restart), 1.6 s (b
/// unchanged for more than its 1 ms lease → put → acquired).
#[test]
fn acquire_lock_when_rvn_changes_skips_adding_lease_duration_again() {
    // AmazonDynamoDBLockClientTest,
    // acquireLock_whenLockAlreadyExistsAndIsNotReleased_andWhenHaveSleptForMinimumLeaseDurationTime_skipsAddingLeaseDuration.
    let settings = DynamoDbSettings {
        refresh_period: Duration::from_millis(800),
        additional_time_to_wait: Duration::from_millis(100_000),
        delete_lock_on_release: false,
        ..unit_settings()
    };
    let mut mocked = Mocked::start(settings, Mock::returning(vec![held(1, 1), held(2, 1)]));
    mocked.run_until(ms(1_000));
    assert_eq!(
        mocked.client.acquire_call(),
        Some((ms(0), Duration::from_millis(100_001)))
    );
    assert_eq!(mocked.client.waiting_on(), Some((Rvn(2), ms(800))));
    mocked.run_until(ms(2_000));
    assert_eq!(mocked.gets(), [ms(0), ms(800), ms(1_600)]);
    assert_eq!(mocked.acquire_puts(), [(ms(1_600), Condition::Rvn(Rvn(2)))]);
    assert_eq!(mocked.became_leader(), [ms(1_600)]);
}

/// `shouldSkipBlockingWait` only acts on an item that is present and not
/// expired; with no item, or a released one (`isExpired()` is true for a
/// released item), the call takes the ordinary path and acquires at once.
#[test]
fn acquire_lock_skip_blocking_wait_on_a_free_lock() {
    for (row, gets, condition) in [
        (
            "acquireLock_whenLockNotExists_andSkipBlockingWaitIsTurnedOn",
            vec![None],
            Condition::Absent,
        ),
        (
            "acquireLock_whenLockExistsAndIsExpired_andSkipBlockingWaitIsTurnedOn",
            vec![released(7, 1), None],
            Condition::Released,
        ),
    ] {
        // AmazonDynamoDBLockClientTest, `row`.
        let settings = DynamoDbSettings {
            delete_lock_on_release: false,
            ..unit_settings()
        };
        let mocked = Mocked::start(settings, Mock::returning(gets));
        assert_eq!(mocked.acquire_puts(), [(ms(0), condition)], "{row}");
        assert_eq!(mocked.became_leader(), [ms(0)], "{row}");
    }
}

/// `LockItem.isExpired()` is true for a released item whatever its lease:
/// a contender reading one does not wait out its lease (10 s here) but
/// writes at once.
#[test]
fn lock_item_is_expired_when_released() {
    // LockItemTest, isExpired_whenIsReleasedTrue_returnTrue.
    let mocked = Mocked::start(unit_settings(), Mock::returning(vec![released(7, 10_000)]));
    assert_eq!(mocked.client.waiting_on(), None);
    assert_eq!(mocked.acquire_puts(), [(ms(0), Condition::Released)]);
}

/// A heartbeat of a lock that has expired on the holder's clock writes
/// nothing: the lock is dropped (`LockNotGrantedException`). The holder is
/// paused past its lease, so the heartbeat thread's first look after it
/// finds the lock expired.
#[test]
fn send_heartbeat_when_expired_throws_not_granted() {
    // AmazonDynamoDBLockClientTest, sendHeartbeat_whenExpired_throwsLockNotGrantedException;
    // BasicLockClientTests, cannotHeartbeatExpiredLock.
    let mut mocked = Mocked::start(unit_settings(), Mock::returning(vec![None]));
    assert_eq!(mocked.became_leader(), [ms(0)]);
    mocked.pause_until(ms(12_000));
    mocked.run_until(ms(12_000));
    assert!(
        mocked.heartbeats().is_empty(),
        "no UpdateItem for an expired lock"
    );
    assert_eq!(mocked.lost(), [(ms(12_000), "lease expired")]);
    assert_eq!(
        mocked.acquire_puts(),
        [(ms(0), Condition::Absent), (ms(12_000), Condition::Absent)],
        "the application's next acquireLock, not a heartbeat"
    );
}

/// A heartbeat of a held, unexpired lock is an `UpdateItem` conditioned on
/// the owner and the RVN held, writing a new RVN and the lease duration; on
/// success the lock's RVN is the new one.
#[test]
fn send_heartbeat_when_not_expired_and_same_owner_updates_the_item() {
    // AmazonDynamoDBLockClientTest,
    // sendHeartbeat_whenNotExpired_andSameOwner_releasedFalse_setsRequestMetricCollector.
    let mut mocked = Mocked::start(unit_settings(), Mock::returning(vec![None]));
    let acquired = mocked.client.held_rvn().expect("acquired at 0");
    mocked.run_until(ms(3_000));
    let beat = mocked
        .log
        .iter()
        .find_map(|(at, note)| match note {
            Note::Sent(DynamoDbRequest::Put {
                condition: Condition::OwnerAndRvn(expected),
                rvn,
                lease_duration,
                ..
            }) => Some((*at, *expected, *rvn, *lease_duration)),
            _ => None,
        })
        .expect("a heartbeat");
    assert_eq!(beat.0, ms(3_000));
    assert_eq!(beat.1, acquired);
    assert_ne!(beat.2, acquired, "a new RVN");
    assert_eq!(beat.3, Duration::from_millis(10_000));
    assert_eq!(mocked.client.held_rvn(), Some(beat.2));
}

/// A heartbeat answered 503: without `holdLockOnServiceUnavailable` the
/// lock keeps its `lookupTime` (it runs out 10 s after the acquire); with
/// it, `updateLookUpTime` restarts the lease at each failure and the RVN is
/// not changed (`updateRecordVersionNumber` is not called).
#[test]
fn send_heartbeat_when_service_unavailable() {
    for (row, hold) in [
        (
            "sendHeartbeat_whenServiceUnavailable_andHoldLockOnServiceUnavailableFalse_thenDoNotUpdateLookupTime",
            false,
        ),
        (
            "sendHeartbeat_whenServiceUnavailable_andHoldLockOnServiceUnavailableTrue_thenUpdateLookupTimeUsingUpdateLookUpTimeMethod",
            true,
        ),
    ] {
        // AmazonDynamoDBLockClientTest, `row`.
        let settings = DynamoDbSettings {
            hold_lock_on_service_unavailable: hold,
            ..unit_settings()
        };
        let mut mock = Mock::returning(vec![None]);
        mock.heartbeat = Answer::Fail(DynamoDbError::ServiceUnavailable);
        let mut mocked = Mocked::start(settings, mock);
        let acquired = mocked.client.held_rvn();
        mocked.run_until(ms(9_500));
        assert_eq!(
            mocked.heartbeats(),
            [ms(3_000), ms(6_000), ms(9_000)],
            "{row}"
        );
        assert_eq!(mocked.client.held_rvn(), acquired, "{row}: RVN unchanged");
        let just_after = Instant::from_nanos(10_000_000_001);
        assert_eq!(mocked.leads(just_after), hold, "{row}");
        mocked.run_until(ms(30_000));
        if hold {
            assert!(mocked.leads(ms(30_000)), "{row}");
            assert!(mocked.lost().is_empty(), "{row}");
        } else {
            assert_eq!(
                mocked.lost().first(),
                Some(&(just_after, "lease expired")),
                "{row}"
            );
        }
    }
}

/// `getItem` throwing `SdkClientException` every time: the loop retries
/// every `refreshPeriod` (200 ms) and throws once more than the additional
/// wait (600 ms) has passed — five reads, at 0, 200, 400, 600 and 800 ms (at
/// least `expectedAttempts + 1` = 4).
#[test]
fn acquire_lock_on_client_exception() {
    // BasicLockClientTests, testAcquireLockOnClientException.
    let settings = DynamoDbSettings {
        lease_duration: Duration::from_millis(300),
        heartbeat_period: Duration::from_millis(100),
        refresh_period: Duration::from_millis(200),
        additional_time_to_wait: Duration::from_millis(600),
        ..DynamoDbSettings::default()
    };
    let mut mock = Mock::returning(vec![None]);
    mock.get_error = Some(DynamoDbError::SdkClient);
    let mut mocked = Mocked::start(settings, mock);
    mocked.run_until(ms(800));
    assert_eq!(
        mocked.gets(),
        [ms(0), ms(200), ms(400), ms(600), ms(800), ms(800)]
    );
    assert_eq!(
        mocked.client.acquire_call().map(|(started, _)| started),
        Some(ms(800)),
        "LockNotGrantedException at 800 ms"
    );
}

/// The heartbeat thread beats every `heartbeatPeriod` (100 ms): at least
/// four heartbeats within 500 ms (`lock2`, whose `sendHeartbeat` succeeds).
#[test]
fn heartbeat_all_locks() {
    // BasicLockClientTests, testHeartbeatAllLocks, the `lock2` row.
    let settings = DynamoDbSettings {
        lease_duration: Duration::from_millis(300),
        heartbeat_period: Duration::from_millis(100),
        ..DynamoDbSettings::default()
    };
    let mut mocked = Mocked::start(settings, Mock::returning(vec![None]));
    mocked.run_until(ms(500));
    let beats = mocked.heartbeats();
    assert!(beats.len() >= 4, "{beats:?}");
    assert_eq!(beats, [ms(100), ms(200), ms(300), ms(400), ms(500)]);
    assert!(mocked.leads(ms(500)));
}

/// The constructor rejects a heartbeat period of more than half the lease
/// (lease 5 s, heartbeat 4 s).
#[test]
fn setup_too_small_heartbeat_check() {
    // BasicLockClientTests, testSetupTooSmallHearbeatCheck.
    let settings = DynamoDbSettings {
        lease_duration: Duration::from_secs(5),
        heartbeat_period: Duration::from_secs(4),
        ..DynamoDbSettings::default()
    };
    assert!(DynamoDb::validate(&settings).is_err());
}

/// Not an upstream test (upstream has none of this branch): `sendHeartbeat`'s
/// `catch (ConditionalCheckFailedException)` — someone else took the lock —
/// removes it from `locks` ("Someone else acquired the lock, so we will stop
/// heartbeating it"); the application is told at once and calls
/// `acquireLock` again.
#[test]
fn heartbeat_rejected_after_takeover_drops_the_lock() {
    let mut mock = Mock::returning(vec![None, held(5, 10_000)]);
    mock.heartbeat = Answer::ConditionFailed;
    let mut mocked = Mocked::start(unit_settings(), mock);
    mocked.run_until(ms(3_000));
    assert_eq!(mocked.heartbeats(), [ms(3_000)]);
    assert_eq!(mocked.lost(), [(ms(3_000), "heartbeat rejected")]);
    assert!(!mocked.leads(ms(3_000)));
    assert_eq!(mocked.gets(), [ms(0), ms(3_000)], "the next acquireLock");
    assert_eq!(mocked.client.waiting_on(), Some((Rvn(5), ms(3_000))));
}
