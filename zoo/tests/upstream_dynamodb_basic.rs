//! Upstream's `BasicLockClientTests` that run against DynamoDB Local
//! (awslabs/amazon-dynamodb-lock-client at 601eab1,
//! `src/test/java/com/amazonaws/services/dynamodbv2/BasicLockClientTests.java`,
//! on `InMemoryLockClientTester`'s clients), ported onto the model's table
//! through the shared harness (1 ms one-way latency).
//!
//! Upstream's clients built `withCreateHeartbeatBackgroundThread(false)`
//! never renew; the model's client always runs its heartbeat thread, so such
//! a holder is crashed after acquiring (nothing renews or releases its item)
//! or has its heartbeats dropped. A second `acquireLock` by the same client
//! is played by a second client: the model's application never calls
//! `acquireLock` while it holds the lock.
//!
//! # Not expressible
//!
//! * `testAcquireBasicLockWithSortKey`, `testBackgroundThreadWithSortKey`,
//!   `testNoBackgroundThreadWithSortKey`, `testReleasingLockWithSortKey`,
//!   `testSendHeatbeatWithRangeKey`, `testRangeKey`: sort keys are left out
//!   (`testRangeKeyAcquiredAfterTimeout`'s timing, with one key, is ported).
//! * `testLockTableExists_*`, `testAssertLockTableExists_*`: no
//!   `DescribeTable`.
//! * Every `testAcquireLockLeaveData*`, `testAcquireLockLeaveOrReplaceData*`,
//!   `testSendHeartbeat{Leave,Change,Remove}Data`,
//!   `testReleaseLockLeaveItemAndChangeData`, `testEmptyData`,
//!   `testAdditionalAttributes`, `testInvalidAttributes*`,
//!   `testAcquireLock*UpdateExistingLock*`, `testLockItemToString`: lock data,
//!   additional attributes and `updateExistingLockRecord` are left out.
//! * `testAcquireLockMustExist*`: `acquireOnlyIfLockAlreadyExists` is left out.
//! * `testAcquireLockMultipleTimesNotReentrant`,
//!   `testAcquireLockMultipleTimesReentrant`: the model's application never
//!   calls `acquireLock` while it holds the lock; reentrancy is left out.
//! * `testReleaseLockBestEffort`, `testReleaseLockNotBestEffort`: the
//!   model's release is fire and forget; `bestEffort` decides only whether
//!   `releaseLock` rethrows to its caller.
//! * `canReleaseExpiredLock`: the model's application releases only a lock
//!   it still holds (`hasLock`); upstream's `close()` deletes an expired one.
//! * `cannotReleaseLockYouDontOwn`, `cannotHeartbeatLockYouDontOwn`,
//!   `testNullLock`, `testGetLock`: `getLock` of another owner's lock — the
//!   model's client only holds what it acquired.
//! * `testReleaseAllLocks`: one lock item only.
//! * `testEnsureLock`: `ensure` (`leaseDurationToEnsure`) is left out.
//! * `testLockItemHasSessionMonitor`, `testLockItemDoesNotHaveSessionMonitor`,
//!   `testSafeTime*`, `testTimeUnitNotSetInAcquireLockOptionsWithSessionMonitor`,
//!   `testFiringCallbackWithoutSessionMonitor`,
//!   `testAboutToExpireWithoutSessionMonitor`,
//!   `testSessionMonitorCallbackFiredOnNonHeartbeatingLock`,
//!   `testShortLeaseNoHeartbeatCallbackFired`,
//!   `testLongLeaseHeartbeatCallbackFired`, `testHeartbeatAfterSafetyTimeout`,
//!   `testCallbackNotCalledOnClosingClient`: `SessionMonitor` is left out.
//! * `testSetRequestLevelMetricCollector`: SDK request plumbing.
//!
//! The mock-driven cases of this class (`testAcquireLockOnClientException`,
//! `testHeartbeatAllLocks`, `testSetupTooSmallHearbeatCheck`,
//! `cannotHeartbeatExpiredLock`) are in `upstream_dynamodb.rs`.

mod common;

use std::time::Duration;

use common::{millis, Clock, Sim};
use fenced_zoo::dynamodb::{Condition, DynamoDb, DynamoDbRequest, DynamoDbSettings};
use fenced_zoo::ClientId;

/// `lockClient1Options`: lease 3 s, heartbeat 1 s.
fn basic() -> DynamoDbSettings {
    DynamoDbSettings {
        lease_duration: Duration::from_secs(3),
        heartbeat_period: Duration::from_secs(1),
        ..DynamoDbSettings::default()
    }
}

/// The acquire writes `client` sent, as (global ns, condition).
fn acquire_puts(sim: &Sim<DynamoDb>, client: ClientId) -> Vec<(u64, Condition)> {
    sim.requests
        .iter()
        .filter_map(|(at, from, _, request)| match request {
            DynamoDbRequest::Put { condition, .. }
                if *from == client && !matches!(condition, Condition::OwnerAndRvn(_)) =>
            {
                Some((*at, *condition))
            }
            _ => None,
        })
        .collect()
}

/// The first `acquireLock` call of `client` ended without the lock: a new
/// call began, and the client never led.
fn gave_up(sim: &Sim<DynamoDb>, client: ClientId, first_started: u64) -> bool {
    let started = sim
        .client(client)
        .acquire_call()
        .map(|(at, _)| at.as_nanos());
    started.is_some_and(|at| at > first_started) && sim.became_leader_at(client).is_none()
}

/// A free lock is acquired with a put conditioned on the item's absence;
/// the item names the client as its owner.
#[test]
fn acquire_basic_lock() {
    // BasicLockClientTests, testAcquireBasicLock.
    let mut sim = Sim::<DynamoDb>::new(basic());
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(10));
    assert_eq!(acquire_puts(&sim, a), [(millis(3), Condition::Absent)]);
    assert_eq!(sim.became_leader_at(a), Some(millis(4)));
    assert_eq!(sim.server(0).item().map(|item| item.owner), Some(a));
    assert_eq!(sim.leader_ids(), vec![a]);
}

/// With its heartbeat thread a holder keeps the lock past its lease (3 s):
/// every heartbeat changes the RVN, so a contender's `acquireLock` (budget
/// 1 s + the 3 s lease) gives up without it, and after 5 s the holder
/// still holds.
#[test]
fn background_thread_keeps_the_lock() {
    // BasicLockClientTests, testBackgroundThread.
    let mut sim = Sim::<DynamoDb>::new(basic());
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(10));
    let b = sim.add_client(2, Clock::default());
    let b_started = sim.now;
    sim.run_for(Duration::from_millis(4_500));
    assert!(gave_up(&sim, b, b_started), "tryAcquireLock returned empty");
    sim.run_for(Duration::from_millis(500));
    assert_eq!(sim.leader_ids(), vec![a]);
    assert_eq!(sim.server(0).item().map(|item| item.owner), Some(a));
}

/// Without heartbeats (they are dropped) the lock expires after its 60 ms
/// lease, and the holder's next `acquireLock` takes over its own stale item
/// once it has seen the RVN unchanged for more than the lease.
#[test]
fn no_background_thread_the_lock_expires() {
    // BasicLockClientTests, testNoBackgroundThread (shortLeaseLockClient:
    // lease 60 ms, heartbeat 10 ms).
    let settings = DynamoDbSettings {
        lease_duration: Duration::from_millis(60),
        heartbeat_period: Duration::from_millis(10),
        ..DynamoDbSettings::default()
    };
    let mut sim = Sim::<DynamoDb>::new(settings);
    sim.drop_request = Some(Box::new(|_, request| {
        matches!(
            request,
            DynamoDbRequest::Put {
                condition: Condition::OwnerAndRvn(_),
                ..
            }
        )
    }));
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(20));
    let stale = sim.server(0).item().expect("acquired").rvn;
    sim.run_for(Duration::from_millis(5_000));
    let (lost_at, reason) = sim.lost_leadership(a).expect("the lease ran out");
    assert_eq!(reason, "lease expired");
    assert_eq!(
        lost_at,
        millis(62) + 1,
        "60 ms after the put was sent at 2 ms"
    );
    let takeover = acquire_puts(&sim, a)
        .into_iter()
        .find(|(_, condition)| *condition == Condition::Rvn(stale))
        .expect("tryAcquireLock took over the stale item");
    assert!(takeover.0 > lost_at + millis(60), "{takeover:?}");
    let became: Vec<u64> = sim
        .events_of(a)
        .into_iter()
        .filter(|(_, event)| matches!(event, common::Event::BecameLeader { .. }))
        .map(|(at, _)| at)
        .collect();
    assert_eq!(became.get(1), Some(&(takeover.0 + millis(1))), "{became:?}");
}

/// A contender that waits with no additional time gives up after the lease
/// (3 s) while the holder heartbeats; once the holder releases (the item is
/// deleted), the contender's next read finds no item and it acquires.
#[test]
fn releasing_lock() {
    // BasicLockClientTests, testReleasingLock (ACQUIRE_LOCK_OPTIONS_WITH_NO_WAIT:
    // additional wait 0, refresh 0 — the model's refresh period must be
    // positive: 1 ms).
    let mut sim = Sim::<DynamoDb>::new(basic());
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(10));
    let no_wait = DynamoDbSettings {
        additional_time_to_wait: Duration::ZERO,
        refresh_period: Duration::from_millis(1),
        ..basic()
    };
    let b = sim.add_client_with(2, Clock::default(), &no_wait);
    let b_started = sim.now;
    sim.run_for(Duration::from_millis(3_500));
    assert!(gave_up(&sim, b, b_started), "tryAcquireLock returned empty");
    sim.stop(a);
    let released = sim.now;
    sim.run_for(Duration::from_millis(10));
    assert_eq!(sim.server(0).item().map(|item| item.owner), Some(b));
    let (at, condition) = *acquire_puts(&sim, b).last().expect("B wrote");
    assert_eq!(condition, Condition::Absent);
    // The release's trip (1 ms), then at most a refresh (1 ms) and two
    // round trips (read, put) of B's loop.
    assert!(at - released <= millis(6), "{at} {released}");
    assert_eq!(sim.leader_ids(), vec![b]);
}

/// Release with `deleteLockOnRelease` off marks the item released (it stays
/// in the table, owned by no one); with it on the item is deleted. The next
/// acquire writes on `isReleased` or on the item's absence.
#[test]
fn release_lock_leave_or_remove_item() {
    for (row, delete, condition) in [
        ("testReleaseLockLeaveItem", false, Condition::Released),
        ("testReleaseLockRemoveItem", true, Condition::Absent),
    ] {
        // BasicLockClientTests, `row`.
        let settings = DynamoDbSettings {
            delete_lock_on_release: delete,
            ..basic()
        };
        let mut sim = Sim::<DynamoDb>::new(settings);
        let a = sim.add_client(1, Clock::default());
        sim.run_for(Duration::from_millis(10));
        sim.stop(a);
        sim.run_for(Duration::from_millis(10));
        let item = sim.server(0).item();
        assert_eq!(item.is_some(), !delete, "{row}");
        assert_eq!(
            item.map(|item| item.released),
            (!delete).then_some(true),
            "{row}"
        );
        assert_eq!(sim.holder(0), Some((None, None)), "{row}: no owner");
        let b = sim.add_client(2, Clock::default());
        sim.run_for(Duration::from_millis(10));
        assert_eq!(
            acquire_puts(&sim, b).first().map(|p| p.1),
            Some(condition),
            "{row}"
        );
        assert_eq!(sim.leader_ids(), vec![b], "{row}");
    }
}

/// A lock nobody renews (its holder crashed) is taken over by a contender
/// allowed 5 s beyond the lease: it reads every second and writes at the
/// first read more than the lease (3 s) after its first read of the RVN.
#[test]
fn acquire_lock_after_timeout() {
    for row in [
        "testAcquireLockAfterTimeout",
        "testSucceedToAcquireLockAfterTimeout",
    ] {
        // BasicLockClientTests, `row` (ACQUIRE_LOCK_OPTIONS_5_SECONDS:
        // additional wait 5 s, refresh 1 s).
        let mut sim = Sim::<DynamoDb>::new(basic());
        let a = sim.add_client(1, Clock::default());
        sim.run_for(Duration::from_millis(10));
        let stale = sim.server(0).item().expect("acquired").rvn;
        sim.crash(a);
        let five = DynamoDbSettings {
            additional_time_to_wait: Duration::from_secs(5),
            ..basic()
        };
        let b = sim.add_client_with(2, Clock::default(), &five);
        let started = sim.now;
        sim.run_for(Duration::from_secs(10));
        // First read answered at +2 ms; reads every 1 s + 2 ms round trip;
        // the fourth answer (+3.008 s) is 3.006 s after the first: expired.
        let expected = started + millis(3_008);
        assert_eq!(
            acquire_puts(&sim, b),
            [(expected + millis(1), Condition::Rvn(stale))],
            "{row}"
        );
        assert_eq!(sim.became_leader_at(b), Some(expected + millis(2)), "{row}");
    }
}

/// `refreshPeriod` 3 s and additional wait 1 s against a 5 s lease: the
/// reads at +0 s and +3 s see the RVN unexpired, the one at +6 s takes it.
#[test]
fn range_key_acquired_after_timeout() {
    // BasicLockClientTests, testRangeKeyAcquiredAfterTimeout (lease 5 s,
    // heartbeat 1 s, no heartbeat thread; one key — the sort key is moot).
    let settings = DynamoDbSettings {
        lease_duration: Duration::from_secs(5),
        ..basic()
    };
    let mut sim = Sim::<DynamoDb>::new(settings.clone());
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(10));
    let stale = sim.server(0).item().expect("acquired").rvn;
    sim.crash(a);
    let slow_poll = DynamoDbSettings {
        refresh_period: Duration::from_secs(3),
        additional_time_to_wait: Duration::from_secs(1),
        delete_lock_on_release: false,
        ..settings
    };
    let b = sim.add_client_with(2, Clock::default(), &slow_poll);
    let started = sim.now;
    sim.run_for(Duration::from_millis(3_100));
    assert!(sim.became_leader_at(b).is_none());
    sim.run_for(Duration::from_secs(5));
    // Reads answered at +2 ms, +3.004 s and +6.006 s (3 s sleeps, 2 ms
    // round trips); the put arrives 1 ms after the last.
    assert_eq!(
        acquire_puts(&sim, b),
        [(started + millis(6_007), Condition::Rvn(stale))]
    );
    assert_eq!(sim.leader_ids(), vec![b], "the lock is valid (not expired)");
}

/// A contender takes a lock its holder stopped renewing; the old holder's
/// release, conditioned on the RVN it held, then fails and the item stays
/// the new owner's. (The old holder's clock runs at half speed so that it
/// still holds the lock on its clock when it releases; upstream's
/// `releaseLock` does not look at expiry.)
#[test]
fn acquiring_someone_elses_lock() {
    // BasicLockClientTests, testAcquiringSomeoneElsesLock.
    let mut sim = Sim::<DynamoDb>::new(basic());
    sim.drop_request = Some(Box::new(|client, request| {
        client == ClientId(1)
            && matches!(
                request,
                DynamoDbRequest::Put {
                    condition: Condition::OwnerAndRvn(_),
                    ..
                }
            )
    }));
    let a = sim.add_client(1, Clock::rate(1, 2));
    sim.run_for(Duration::from_millis(10));
    let held = sim.server(0).item().expect("lockItem1").rvn;
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(5));
    assert_eq!(
        acquire_puts(&sim, b).last().map(|p| p.1),
        Some(Condition::Rvn(held)),
        "lockItem2: stolen"
    );
    assert_eq!(sim.leader_ids(), vec![a, b]);
    sim.stop(a);
    sim.run_for(Duration::from_millis(10));
    let release = sim
        .requests
        .iter()
        .find_map(|(_, from, _, request)| match request {
            DynamoDbRequest::Release { rvn, .. } if *from == a => Some(*rvn),
            _ => None,
        });
    assert_eq!(release, Some(held), "releaseLock(lockItem1) was sent");
    assert_eq!(sim.server(0).item().map(|item| item.owner), Some(b));
    assert_eq!(sim.holder(0), Some((Some(b), None)));
}
