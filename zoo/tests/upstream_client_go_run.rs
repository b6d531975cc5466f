//! client-go's own unit tests of `tools/leaderelection` (kubernetes/client-go
//! at 32ce75a) that release the lease or drive `Run`, ported as contract tests
//! of the client-go model; the fake clientset is `upstream_client_go_fake.rs`.
//! What is not expressible is listed in `upstream_client_go.rs`.
//!
//! Upstream calls `release` directly on an elector built with an observed
//! state. The model releases only as `Run` does, when its context is
//! cancelled while it leads (`ReleaseOnCancel`), so these cases first let the
//! elector lead through one `tryAcquireOrRenew` and then cancel it at once,
//! before the renew loop's first request leaves; that request is asserted
//! and not sent.

#[path = "upstream_client_go_fake.rs"]
mod fake;

use std::time::Duration;

use fake::{echo, record, AtLeader, Driver, Fake, Reply, Told, T0};
use fenced_zoo::client_go::{
    ApiFailure, ApiRequest, ApiResult, ClientGo, ClientGoSettings, LeaseRecord,
};
use fenced_zoo::{ClientId, LockClient, Protocol};

/// `LeaseDuration: 10 * time.Second`, ReleaseOnCancel (the model's way to
/// call `release`), the rest from the model's defaults.
fn release_settings() -> ClientGoSettings {
    ClientGoSettings {
        release_on_cancel: true,
        ..ClientGoSettings::with_timings(Duration::from_secs(10), Duration::from_secs(5))
    }
}

/// The timings of `testReleaseOnCancellation` and `TestFastPathLeaderElection`:
/// LeaseDuration 15 s, RenewDeadline 2 s, RetryPeriod 1 s.
fn run_settings(release_on_cancel: bool) -> ClientGoSettings {
    ClientGoSettings {
        retry_period: Duration::from_secs(1),
        release_on_cancel,
        ..ClientGoSettings::with_timings(Duration::from_secs(15), Duration::from_secs(2))
    }
}

fn told(driver: &Driver) -> Vec<Told> {
    driver.told.iter().map(|(_, told)| told.clone()).collect()
}

/// The renew loop's first request, queued when the elector became leader
/// and never sent: a fast-path `Update`.
fn assert_renew_discarded(driver: &Driver, case: &str) {
    assert!(
        matches!(driver.discarded.as_slice(), [ApiRequest::Update { .. }]),
        "{case}: the unsent renewal {:?}",
        driver.discarded
    );
}

/// client-go tools/leaderelection/leaderelection_test.go,
/// TestReleaseLeaseLeases (testReleaseLease, "leases"), "release acquired
/// lock from no object": a try takes the lease the "get" reactor shows held
/// by "baz" itself, then `release` writes holder "" and succeeds; four API
/// calls (upstream's four reactors, of which the "create" and the second
/// "get" are never reached: the first "get" reactor handles every get).
#[test]
fn release_lease_leases() {
    let case = "release acquired lock from no object";
    let client = ClientGo::new_client(&release_settings(), ClientId(1), "baz", 7)
        .with_observed(record("", 0), fenced_zoo::Instant::ZERO);
    let mut driver = Driver::with_client(client);
    driver.at_leader = AtLeader::Stop;
    let mut reactor = |fake: &mut Fake, request: &ApiRequest| match request {
        ApiRequest::Get { .. } => Reply::Answer(ApiResult::Lease {
            record: record("baz", 0),
            resource_version: 1,
        }),
        ApiRequest::Update { .. } => echo(fake, request),
        ApiRequest::Create { .. } => panic!("{case}: unreachable create"),
    };
    driver.start(&mut reactor);
    driver.run(&mut reactor, Duration::from_secs(30));
    assert_eq!(
        driver.fake.ops,
        ["get", "update", "get", "update"],
        "{case}"
    );
    assert_renew_discarded(&driver, case);
    let observed = driver.client.observed_record().expect("observed");
    assert_eq!(observed.holder_identity, "", "{case}: outHolder");
    assert_eq!(observed.lease_transitions, 0, "{case}: no transition");
    let released = driver.fake.stored_record().expect("stored");
    assert_eq!(
        (
            released.holder_identity.as_str(),
            released.lease_duration_seconds
        ),
        ("", 1),
        "{case}: the release's record"
    );
    assert_eq!(
        told(&driver),
        [Told::Became(0), Told::Lost("stopped")],
        "{case}"
    );
    assert_eq!(driver.client.next_timeout(), None, "{case}: Run returned");
}

/// The "get" reactor of TestReleaseMethodCallsGet and
/// TestReleaseRetriesOnConflict: the lease held by "baz", 10 s.
fn held_by_baz(fake: &mut Fake) -> Reply {
    fake.lock_obj.get_or_insert((record("baz", 10), 1));
    Reply::Answer(fake.stored())
}

/// client-go tools/leaderelection/leaderelection_test.go,
/// TestReleaseMethodCallsGet: `release` reads the lease with `Get` before it
/// writes — here even though the elector holds the object its own renewal
/// returned.
#[test]
fn release_method_calls_get() {
    let client = ClientGo::new_client(&release_settings(), ClientId(1), "baz", 7)
        .with_observed(record("baz", 0), T0);
    let mut driver = Driver::with_client(client);
    driver.at_leader = AtLeader::Stop;
    let mut release_ops = Vec::new();
    let mut reactor = |fake: &mut Fake, request: &ApiRequest| {
        if fake.stopped {
            release_ops.push(fake::verb(request));
        }
        match request {
            ApiRequest::Get { .. } => held_by_baz(fake),
            _ => echo(fake, request),
        }
    };
    driver.start(&mut reactor);
    driver.run(&mut reactor, Duration::from_secs(30));
    assert_renew_discarded(&driver, "TestReleaseMethodCallsGet");
    assert_eq!(
        release_ops,
        ["get", "update"],
        "TestReleaseMethodCallsGet: release method calls Get"
    );
}

/// client-go tools/leaderelection/leaderelection_test.go,
/// TestReleaseRetriesOnConflict: the release's first `Update` is refused
/// with a Conflict (an in-flight renewal moved the resourceVersion);
/// `tryRelease` gets the lease again, updates again and succeeds. Upstream's
/// reactor refuses the first update of the test, which here is the
/// release's first one (the try that made the elector lead comes before).
#[test]
fn release_retries_on_conflict() {
    let case = "TestReleaseRetriesOnConflict";
    let client = ClientGo::new_client(&release_settings(), ClientId(1), "baz", 7)
        .with_observed(record("baz", 0), T0);
    let mut driver = Driver::with_client(client);
    driver.at_leader = AtLeader::Stop;
    let mut conflicted = false;
    let mut release_ops = Vec::new();
    let mut reactor = |fake: &mut Fake, request: &ApiRequest| {
        if fake.stopped {
            release_ops.push(fake::verb(request));
        }
        match request {
            ApiRequest::Get { .. } => held_by_baz(fake),
            ApiRequest::Update { .. } if fake.stopped && !conflicted => {
                conflicted = true;
                Reply::Answer(ApiResult::Conflict)
            }
            _ => echo(fake, request),
        }
    };
    driver.start(&mut reactor);
    driver.run(&mut reactor, Duration::from_secs(30));
    assert!(conflicted, "{case}: expected conflict to have occurred");
    assert_eq!(release_ops, ["get", "update", "get", "update"], "{case}");
    assert_eq!(
        driver
            .fake
            .stored_record()
            .map(|r| r.holder_identity.as_str()),
        Some(""),
        "{case}: release should have succeeded after retrying on conflict"
    );
    assert_eq!(
        driver
            .client
            .observed_record()
            .map(|r| r.holder_identity.as_str()),
        Some(""),
        "{case}: the released record is observed"
    );
}

/// One row of `testReleaseOnCancellation`: its reactors, the calls they see
/// and whether the lease ends released.
struct CancelRow {
    name: &'static str,
    /// The "get" reactor's own cancel point: the `gets` count that blocks
    /// and cancels (its later gets fail), or `None`.
    get_cancels_at: Option<u32>,
    /// The "update" reactor's: the `updates` count that blocks and cancels.
    update_cancels_at: Option<u32>,
    /// Which updates fail with `context.Canceled` at once (`updates` →
    /// bool).
    update_fails: fn(u32) -> bool,
    ops: &'static [&'static str],
    released: bool,
}

/// client-go tools/leaderelection/leaderelection_test.go,
/// TestReleaseOnCancellation_Leases (testReleaseOnCancellation, "leases"),
/// both rows: the elector leads, its fast-path renewals fail with
/// `context.Canceled` and fall back to `Get` + `Update`; the run context is
/// cancelled while a renewal's call blocks, and with ReleaseOnCancel the
/// elector releases. Upstream's events "became leader" and "stopped
/// leading" are the model's BecameLeader and LostLeadership. In "on
/// cancellation of get" the reactor's `onRelease` fires at the second
/// renewal's `Update` (#4), and the release's own `Get` (#5) fails with
/// `context.Canceled`, so the lease ends NOT released — upstream's test
/// passes the same way, it waits only for `onRelease`.
#[test]
fn release_on_cancellation_leases() {
    let rows = [
        CancelRow {
            name: "release acquired lock on cancellation of update",
            get_cancels_at: None,
            update_cancels_at: Some(4),
            update_fails: |updates| updates % 2 == 1 && updates < 5,
            ops: &[
                "get", "create", "update", "get", "update", "update", "get", "update", "get",
                "update",
            ],
            released: true,
        },
        CancelRow {
            name: "release acquired lock on cancellation of get",
            get_cancels_at: Some(4),
            update_cancels_at: None,
            update_fails: |updates| updates % 2 == 1,
            ops: &[
                "get", "create", "update", "get", "update", "update", "get", "update", "update",
                "get", "get",
            ],
            released: false,
        },
    ];
    for row in rows {
        let name = row.name;
        let mut driver = Driver::new(&run_settings(true), "baz");
        let (mut gets, mut updates) = (0, 0);
        let mut reactor = |fake: &mut Fake, request: &ApiRequest| match request {
            ApiRequest::Get { .. } => {
                gets += 1;
                match (fake.lock_obj.is_some(), row.get_cancels_at) {
                    (true, Some(at)) if gets == at => {
                        fake.cancel = true;
                        Reply::Hang
                    }
                    (true, Some(at)) if gets > at => {
                        Reply::Answer(ApiResult::Failed(ApiFailure::Canceled))
                    }
                    _ => Reply::Answer(fake.stored()),
                }
            }
            ApiRequest::Create { .. } => echo(fake, request),
            ApiRequest::Update { .. } => {
                updates += 1;
                if (row.update_fails)(updates) {
                    Reply::Answer(ApiResult::Failed(ApiFailure::Canceled))
                } else if row.update_cancels_at == Some(updates) {
                    fake.cancel = true;
                    Reply::Hang
                } else {
                    echo(fake, request)
                }
            }
        };
        driver.start(&mut reactor);
        driver.run(&mut reactor, Duration::from_secs(60));
        assert_eq!(driver.fake.ops, row.ops, "{name}: the calls");
        assert_eq!(
            told(&driver),
            [Told::Became(0), Told::Lost("stopped")],
            "{name}: became leader, stopped leading"
        );
        let stored = driver.fake.stored_record().expect("stored");
        let expected_holder = if row.released { "" } else { "baz" };
        assert_eq!(stored.holder_identity, expected_holder, "{name}: released");
        assert_eq!(driver.client.next_timeout(), None, "{name}: Run returned");
    }
}

/// client-go tools/leaderelection/leaderelection_test.go,
/// TestFastPathLeaderElection, both rows: after acquiring, the leader renews
/// with a bare `Update` of the object it holds; a refused one (Conflict)
/// falls back to `Get` + `Update` in the same try, and the next renewal is
/// fast again. The reactor cancels the run context inside the last update,
/// which still succeeds; `Run` returns with no release.
#[test]
fn fast_path_leader_election() {
    // The "update" reactor: for the n-th update, (Conflict, cancelFunc()).
    type UpdateReactor = fn(u32) -> (bool, bool);
    let rows: [(&str, UpdateReactor, &[&str]); 2] = [
        (
            "Exercise fast path after lock acquired",
            |updates| (false, updates == 2),
            &["get", "create", "update", "update"],
        ),
        (
            "Fallback to slow path after fast path fails",
            |updates| (updates == 2, updates == 4),
            &[
                "get", "create", "update", "update", "get", "update", "update",
            ],
        ),
    ];
    for (name, update_conflicts_or_cancels, expected_ops) in rows {
        let mut driver = Driver::new(&run_settings(false), "baz");
        let mut updates = 0;
        let mut reactor = |fake: &mut Fake, request: &ApiRequest| {
            if let ApiRequest::Update { .. } = request {
                updates += 1;
                let (conflict, cancel) = update_conflicts_or_cancels(updates);
                if conflict {
                    return Reply::Answer(ApiResult::Conflict);
                }
                fake.cancel |= cancel;
            }
            echo(fake, request)
        };
        driver.start(&mut reactor);
        driver.run(&mut reactor, Duration::from_secs(60));
        assert_eq!(driver.fake.ops, expected_ops, "{name}: Expected lock ops");
        assert_eq!(
            told(&driver),
            [Told::Became(0), Told::Lost("stopped")],
            "{name}"
        );
        assert_eq!(driver.client.next_timeout(), None, "{name}: Run returned");
    }
}

/// The fallback after a fast-path `Update` that timed out writes the record
/// the try built at its start: same renewTime (and acquireTime, holder,
/// transitions) — `tryAcquireOrRenew` builds `leaderElectionRecord` once,
/// from one `now` (leaderelection.go: "now := metav1.NewTime(le.clock.Now())"
/// ... "RenewTime: now"), and steps 1 and 4 change only its AcquireTime and
/// LeaderTransitions. When the lost `Update` did land, the fallback writes
/// an identical spec, so a candidate that saw the first write sees no
/// change and keeps its observedTime.
#[test]
fn timed_out_fast_update_falls_back_with_the_same_renew_time() {
    let settings = ClientGoSettings::default();
    let mut driver = Driver::new(&settings, "baz");
    let mut updates = 0;
    let mut reactor = |fake: &mut Fake, request: &ApiRequest| {
        if let ApiRequest::Update { .. } = request {
            updates += 1;
            if updates == 1 {
                // The fast path's write lands; its answer never comes back.
                echo(fake, request);
                return Reply::Hang;
            }
        }
        echo(fake, request)
    };
    driver.start(&mut reactor);
    // The first renewal's fast `Update`, then at its 5 s timeout `Get` and
    // `Update` in the same try.
    while driver.fake.ops.len() < 5 {
        assert!(driver.wake(&mut reactor, T0 + Duration::from_secs(30)));
    }
    assert_eq!(
        driver.fake.ops,
        ["get", "create", "update", "get", "update"]
    );
    let writes: Vec<&LeaseRecord> = driver
        .fake
        .requests
        .iter()
        .filter_map(fake::written)
        .collect();
    let (fast, slow) = (writes[1], writes[2]);
    assert_eq!(slow, fast, "the fallback writes the try's record unchanged");
    assert!(fast.renew_time > writes[0].renew_time, "a renewal");
    assert!(
        driver.now >= fast.renew_time + settings.request_timeout,
        "the fallback's Update left after the fast one's timeout, with the earlier renewTime"
    );
    // A candidate that saw the fast write sees no change in the fallback's.
    let seen_at = T0 + Duration::from_secs(1);
    let candidate = ClientGo::new_client(&settings, ClientId(2), "bing", 9)
        .with_observed(fast.clone(), seen_at);
    let stored = driver.fake.stored();
    let mut candidate = Driver::with_client(candidate);
    candidate.now = driver.now;
    let mut answer = |_: &mut Fake, _: &ApiRequest| Reply::Answer(stored.clone());
    candidate.start(&mut answer);
    assert_eq!(candidate.fake.ops, ["get"], "the candidate leaves it alone");
    assert_eq!(
        candidate.client.observed_time(),
        seen_at,
        "no change of the record: observedTime kept"
    );
    assert!(candidate.client.leadership(candidate.now).is_none());
}
