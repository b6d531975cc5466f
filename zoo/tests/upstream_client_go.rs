//! client-go's own unit tests of `tools/leaderelection` (kubernetes/client-go
//! at 32ce75a), ported as contract tests of the client-go model: one
//! `tryAcquireOrRenew` from an observed state, the Lease lock's store, the
//! elector's settings checks and its health check. The tests that drive
//! `Run` (release, release on cancel, the fast path, the fast path's timeout)
//! are in `upstream_client_go_run.rs`.
//!
//! Upstream's fake clientset and its reactors become the fake driver of
//! `upstream_client_go_fake.rs`; its `LeaderElector{observedRecord: ..,
//! observedTime: ..}` literals become [`ClientGoClient::with_observed`].
//!
//! # Not expressible
//!
//! * `leaderelection_test.go`, `TestTryCoordinatedRenew` ("don't acquire
//!   from led, acked object", "renew already acquired object"):
//!   `tryCoordinatedRenew` is the alpha Coordinated Leader Election, which
//!   the model leaves out (no `LeaseCandidate`, no `PreferredHolder`).
//! * `leaderelection_test.go`, `testTryAcquireOrRenew`'s reported-leader
//!   check (`OnNewLeader`, `maybeReportTransition`) and its
//!   `expectedEvents`: the model has no `OnNewLeader` callback and no event
//!   recorder. The observed holder it would report is asserted instead.
//! * `leaderelection_test.go`, `TestCheckMethodRace`: a data-race test of
//!   `Check` against `Run` on two goroutines; the model is one sequential
//!   state machine.
//! * `healthzadaptor_test.go`, `TestLeaderElectionHealthChecker`, "call check
//!   before leader elector initialized": the `HealthzAdaptor` (an HTTP
//!   handler holding a nil-able elector pointer) is left out; its four other
//!   rows run against [`ClientGoClient::check`].
//! * `resourcelock/leaselock_test.go`, `TestLeaseConversion`: the model has
//!   no separate `LeaseSpec` type to convert to and from (its
//!   [`LeaseRecord`] is both), and no `PreferredHolder`/`Strategy` fields;
//!   `TestLeaseSpecToLeaderElectionRecordRoundTrip` is ported as the store's
//!   round trip.
//! * `resourcelock/leaselock_test.go`, `TestRecordEventSuccess`,
//!   `TestRecordEventNilRecorder`, `TestDescribe`,
//!   `TestUpdateWithNilLabelsOnLease`, `TestUpdateWithNilLabelsOnLeaseLock`,
//!   `TestLabelUpdate`: events, the lock's name and the object's labels are
//!   not modelled.
//! * `leasecandidate_test.go`: `LeaseCandidate` belongs to Coordinated
//!   Leader Election.
//! * `TestLeaderElectionConfigValidation`'s other `NewLeaderElector` checks
//!   (nil `OnStartedLeading`/`OnStoppedLeading` callback, nil `Lock`): the
//!   model has no callbacks or lock object to leave out. The timing checks,
//!   which upstream's test does not exercise, are ported from the code
//!   (`new_leader_elector_timing_checks`).

#[path = "upstream_client_go_fake.rs"]
mod fake;

use std::time::Duration;

use fake::{echo, record, verb, written, AtLeader, Driver, Reply, Told, T0, THOUSAND_HOURS};
use fenced_zoo::client_go::{
    ApiRequest, ApiResult, ClientGo, ClientGoClient, ClientGoSettings, LeaseRecord,
};
use fenced_zoo::{
    ClientId, Instant, LockClient, LockServer, Protocol, ServerOutput, SettingsError,
};

/// `testTryAcquireOrRenew`'s `LeaderElectionConfig`: LeaseDuration 10 s.
/// Upstream leaves RenewDeadline and RetryPeriod zero because it calls
/// `tryAcquireOrRenew` alone; the model's `acquire` loop needs them, and a
/// 3 s RetryPeriod makes its next try come no sooner than the row's
/// `retryAfter` sleep of 3 s.
fn try_settings() -> ClientGoSettings {
    ClientGoSettings {
        retry_period: Duration::from_secs(3),
        ..ClientGoSettings::with_timings(Duration::from_secs(10), Duration::from_secs(5))
    }
}

/// One row of `testTryAcquireOrRenew`'s table.
struct TryRow {
    name: &'static str,
    /// `observedRecord` (zero value when upstream leaves it out).
    observed_record: LeaseRecord,
    /// `observedTime` (Go's zero time, far in the past, when left out).
    observed_time: Instant,
    /// `retryAfter`: upstream sleeps this long and tries again if the first
    /// try did not give `expectSuccess`.
    retry_after: Option<Duration>,
    /// What the "get" reactor returns (`None`: NotFound).
    get: Option<LeaseRecord>,
    /// The reactors' verbs, in the order upstream's rows list (and the
    /// elector calls) them.
    reactors: &'static [&'static str],
    expect_success: bool,
    transition_leader: bool,
    out_holder: &'static str,
}

fn try_rows() -> Vec<TryRow> {
    let zero = record("", 0);
    let future = T0 + THOUSAND_HOURS;
    let past = T0.saturating_sub(THOUSAND_HOURS);
    let row = |name, get, reactors| TryRow {
        name,
        observed_record: zero.clone(),
        observed_time: Instant::ZERO,
        retry_after: None,
        get,
        reactors,
        expect_success: true,
        transition_leader: true,
        out_holder: "baz",
    };
    vec![
        TryRow {
            transition_leader: false,
            ..row("acquire from no object", None, &["get", "create"])
        },
        // A Lease with an empty spec reads as the zero record
        // (`LeaseSpecToLeaderElectionRecord`), so in the Lease lock this row
        // and "acquire from unled object" are the same.
        row(
            "acquire from object without annotations",
            Some(zero.clone()),
            &["get", "update"],
        ),
        TryRow {
            retry_after: Some(Duration::from_secs(3)),
            ..row(
                "acquire from led object with the lease duration seconds",
                Some(record("bing", 3)),
                &["get", "get", "update"],
            )
        },
        row(
            "acquire from unled object",
            Some(zero.clone()),
            &["get", "update"],
        ),
        TryRow {
            observed_record: record("bing", 0),
            observed_time: past,
            ..row(
                "acquire from led, unacked object",
                Some(record("bing", 0)),
                &["get", "update"],
            )
        },
        TryRow {
            observed_time: future,
            ..row(
                "acquire from empty led, acked object",
                Some(record("", 0)),
                &["get", "update"],
            )
        },
        TryRow {
            observed_time: future,
            expect_success: false,
            transition_leader: false,
            out_holder: "bing",
            ..row(
                "don't acquire from led, acked object",
                Some(record("bing", 0)),
                &["get"],
            )
        },
        TryRow {
            observed_time: future,
            observed_record: record("baz", 0),
            transition_leader: false,
            ..row(
                "renew already acquired object",
                Some(record("baz", 0)),
                &["get", "update"],
            )
        },
    ]
}

/// client-go tools/leaderelection/leaderelection_test.go,
/// TestTryAcquireOrRenewLeases (testTryAcquireOrRenew, "leases"), every row:
/// one `tryAcquireOrRenew` from the row's observed state against the row's
/// reactors gives upstream's success, holder, transitions and number of API
/// calls; the record written carries the try's start as renewTime.
#[test]
fn try_acquire_or_renew_leases() {
    for row in try_rows() {
        let name = row.name;
        let client = ClientGo::new_client(&try_settings(), ClientId(1), "baz", 7)
            .with_observed(row.observed_record.clone(), row.observed_time);
        let mut driver = Driver::with_client(client);
        driver.at_leader = AtLeader::Pause;
        let allowed = row.reactors;
        let get = row.get.clone();
        let mut reactor = move |fake: &mut fake::Fake, request: &ApiRequest| {
            // The catch-all reactor: "unreachable action. testclient called
            // too many times".
            assert!(
                allowed.contains(&verb(request)),
                "{name}: unreachable action {request:?}"
            );
            match (request, &get) {
                (ApiRequest::Get { .. }, None) => Reply::Answer(ApiResult::NotFound),
                (ApiRequest::Get { .. }, Some(record)) => Reply::Answer(ApiResult::Lease {
                    record: record.clone(),
                    resource_version: 1,
                }),
                _ => echo(fake, request),
            }
        };
        let mut tries = vec![driver.now];
        driver.start(&mut reactor);
        let mut succeeded = driver.client.leadership(driver.now).is_some();
        if succeeded != row.expect_success {
            if let Some(retry_after) = row.retry_after {
                let first_ended = driver.now;
                let next = driver.client.next_timeout().expect("acquire retries");
                assert!(
                    next >= first_ended + retry_after,
                    "{name}: retried too soon"
                );
                tries.push(next);
                driver.wake(&mut reactor, next);
                succeeded = driver.client.leadership(driver.now).is_some();
            }
        }
        assert_eq!(
            succeeded, row.expect_success,
            "{name}: tryAcquireOrRenew's result"
        );
        let observed = driver.client.observed_record().expect("observed a record");
        assert_eq!(observed.holder_identity, row.out_holder, "{name}: holder");
        assert_eq!(
            observed.lease_transitions,
            u64::from(row.transition_leader),
            "{name}: leaderTransitions"
        );
        assert_eq!(driver.fake.ops, row.reactors, "{name}: API interactions");
        let expected_told: Vec<Told> = if row.expect_success {
            vec![Told::Became(u64::from(row.transition_leader))]
        } else {
            Vec::new()
        };
        let told: Vec<Told> = driver.told.iter().map(|(_, t)| t.clone()).collect();
        assert_eq!(told, expected_told, "{name}: OnStartedLeading");
        // What the last try wrote: `leaderElectionRecord` as built at its
        // start, AcquireTime kept only when renewing.
        if let Some(last) = driver.fake.requests.iter().rev().find_map(written) {
            let started = *tries.last().expect("a try");
            let renewing = row.observed_record.holder_identity == "baz";
            assert_eq!(
                *last,
                LeaseRecord {
                    holder_identity: "baz".to_owned(),
                    lease_duration_seconds: 10,
                    acquire_time: if renewing { Instant::ZERO } else { started },
                    renew_time: started,
                    lease_transitions: u64::from(row.transition_leader),
                },
                "{name}: the record written"
            );
        }
    }
}

/// A lone `ApiServer` and the replies it gives, in order.
fn server_replies(requests: Vec<ApiRequest>) -> Vec<ApiResult> {
    let mut server = ClientGo::new_server(&ClientGoSettings::default(), 0);
    let mut replies = Vec::new();
    for request in requests {
        server.handle_request(ClientId(1), request, T0);
        while let Some(output) = server.poll_output() {
            if let ServerOutput::Reply { response, .. } = output {
                replies.push(response.result);
            }
        }
    }
    replies
}

/// leaselock_test.go's `testRecord` (without PreferredHolder and Strategy,
/// which the model does not have).
fn test_record() -> LeaseRecord {
    LeaseRecord {
        holder_identity: "test-identity".to_owned(),
        lease_duration_seconds: 15,
        acquire_time: T0,
        renew_time: T0,
        lease_transitions: 1,
    }
}

/// client-go tools/leaderelection/resourcelock/leaselock_test.go,
/// TestGetError: a `Get` of a Lease that does not exist is NotFound.
#[test]
fn lease_lock_get_error() {
    assert_eq!(
        server_replies(vec![ApiRequest::Get { id: 1 }]),
        vec![ApiResult::NotFound]
    );
}

/// client-go tools/leaderelection/resourcelock/leaselock_test.go, TestGet:
/// after a `Create`, a `Get` returns the created record.
#[test]
fn lease_lock_get() {
    let replies = server_replies(vec![
        ApiRequest::Create {
            id: 1,
            record: test_record(),
        },
        ApiRequest::Get { id: 2 },
    ]);
    let ApiResult::Lease { record, .. } = &replies[1] else {
        panic!("TestGet: the Get finds the lease: {replies:?}");
    };
    assert_eq!(record.holder_identity, "test-identity", "HolderIdentity");
    assert_eq!(record.lease_duration_seconds, 15, "LeaseDurationSeconds");
    assert_eq!(record.lease_transitions, 1, "LeaderTransitions");
}

/// client-go tools/leaderelection/resourcelock/leaselock_test.go,
/// TestCreateError: creating the same Lease twice is AlreadyExists.
#[test]
fn lease_lock_create_error() {
    let create = |id| ApiRequest::Create {
        id,
        record: test_record(),
    };
    let replies = server_replies(vec![create(1), create(2)]);
    assert!(matches!(replies[0], ApiResult::Lease { .. }), "{replies:?}");
    assert_eq!(replies[1], ApiResult::AlreadyExists);
}

/// client-go tools/leaderelection/resourcelock/leaselock_test.go,
/// TestUpdateError: `Update` before any `Get` or `Create` fails without a
/// call ("lease not initialized"). In the model that is the elector whose
/// observed record names it but which holds no object: it sends a `Get`,
/// never an `Update` of nothing.
#[test]
fn lease_lock_update_error() {
    let settings = ClientGoSettings::default();
    let mut client = ClientGo::new_client(&settings, ClientId(1), "test-identity", 7)
        .with_observed(test_record(), T0 + THOUSAND_HOURS);
    client.start(T0);
    let first = client.poll_output();
    assert!(
        matches!(
            first,
            Some(fenced_zoo::ClientOutput::Send {
                request: ApiRequest::Get { .. },
                ..
            })
        ),
        "TestUpdateError: no Update without an object: {first:?}"
    );
}

/// client-go tools/leaderelection/leaderelection_test.go,
/// TestLeaseSpecToLeaderElectionRecordRoundTrip: a record survives the trip
/// to the store and back unchanged, field for field — what makes the raw
/// record of an unchanged lease compare equal. The model keeps the record as
/// the spec, so the trip is `Create`, `Get`, `Update`, `Get`.
#[test]
fn lease_spec_round_trip() {
    let old = LeaseRecord {
        holder_identity: "foo".to_owned(),
        lease_duration_seconds: 10,
        acquire_time: T0,
        renew_time: T0 + Duration::from_millis(3),
        lease_transitions: 1,
    };
    let replies = server_replies(vec![
        ApiRequest::Create {
            id: 1,
            record: old.clone(),
        },
        ApiRequest::Get { id: 2 },
        ApiRequest::Update {
            id: 3,
            record: old.clone(),
            resource_version: 1,
        },
        ApiRequest::Get { id: 4 },
    ]);
    for (step, reply) in replies.iter().enumerate() {
        let ApiResult::Lease { record, .. } = reply else {
            panic!("step {step}: {reply:?}");
        };
        assert_eq!(*record, old, "step {step}: the record round-trips");
    }
}

/// client-go tools/leaderelection/leaderelection_test.go,
/// TestLeaderElectionConfigValidation: the test's config (15 s, 2 s, 1 s,
/// ReleaseOnCancel, identity "baz") is accepted; with an empty identity it
/// is "Lock identity is empty".
#[test]
fn leader_election_config_validation() {
    let settings = ClientGoSettings {
        retry_period: Duration::from_secs(1),
        release_on_cancel: true,
        ..ClientGoSettings::with_timings(Duration::from_secs(15), Duration::from_secs(2))
    };
    assert_eq!(ClientGo::validate(&settings), Ok(()), "the valid config");
    assert_eq!(
        ClientGo::validate_identity("baz"),
        Ok(()),
        "the valid config"
    );
    let empty = ClientGo::validate_identity("").expect_err("invalid lock identity");
    assert_eq!(
        empty,
        SettingsError::Invalid {
            setting: "identity",
            reason: "Lock identity is empty"
        }
    );
    assert_eq!(empty.to_string(), "identity: Lock identity is empty");
}

/// `NewLeaderElector`'s timing checks (leaderelection.go, in its order):
/// `LeaseDuration <= RenewDeadline` → "leaseDuration must be greater than
/// renewDeadline"; `RenewDeadline <= time.Duration(JitterFactor *
/// float64(RetryPeriod))` → "renewDeadline must be greater than
/// retryPeriod*JitterFactor" (the product truncated to whole nanoseconds);
/// `RetryPeriod < 1` → "retryPeriod must be greater than zero". Ported from
/// the code: upstream's test exercises none of them.
#[test]
fn new_leader_elector_timing_checks() {
    let nanos = Duration::from_nanos;
    let ms = Duration::from_millis;
    // (case, lease, renew, retry, the setting rejected or None).
    let rows: [(&str, Duration, Duration, Duration, Option<&str>); 9] = [
        ("core defaults", ms(15_000), ms(10_000), ms(2_000), None),
        (
            "lease equal to renew",
            ms(10_000),
            ms(10_000),
            ms(2_000),
            Some("lease_duration"),
        ),
        (
            "lease below renew",
            ms(5_000),
            ms(10_000),
            ms(2_000),
            Some("lease_duration"),
        ),
        (
            "zero lease",
            ms(0),
            ms(10_000),
            ms(2_000),
            Some("lease_duration"),
        ),
        (
            "renew equal to 1.2 retry",
            ms(15_000),
            ms(1_200),
            ms(1_000),
            Some("renew_deadline"),
        ),
        (
            "renew 1 ns above 1.2 retry",
            ms(15_000),
            ms(1_200) + nanos(1),
            ms(1_000),
            None,
        ),
        // float64(333333333) × 1.2 = 399999999.59999996, truncated to
        // 399999999 ns: a 400 ms RenewDeadline is greater.
        (
            "Go truncates 1.2 retry",
            ms(15_000),
            ms(400),
            nanos(333_333_333),
            None,
        ),
        (
            "zero renew",
            ms(15_000),
            ms(0),
            ms(0),
            Some("renew_deadline"),
        ),
        (
            "zero retry",
            ms(15_000),
            ms(10_000),
            ms(0),
            Some("retry_period"),
        ),
    ];
    for (case, lease_duration, renew_deadline, retry_period, rejected) in rows {
        let settings = ClientGoSettings {
            lease_duration,
            renew_deadline,
            retry_period,
            ..ClientGoSettings::default()
        };
        let result = ClientGo::validate(&settings);
        let setting = match &result {
            Ok(()) => None,
            Err(SettingsError::NotGreater { setting, .. } | SettingsError::Zero { setting }) => {
                Some(*setting)
            }
            Err(other) => panic!("{case}: unexpected {other}"),
        };
        assert_eq!(setting, rejected, "{case}: {result:?}");
    }
}

/// An elector whose observed record is `holder`'s, observed at `T0`, with a
/// one-minute LeaseDuration — `TestLeaderElectionHealthChecker`'s electors.
fn health_elector(holder: &str) -> ClientGoClient {
    let settings = ClientGoSettings {
        retry_period: Duration::from_secs(1),
        ..ClientGoSettings::with_timings(Duration::from_secs(60), Duration::from_secs(40))
    };
    ClientGo::new_client(&settings, ClientId(1), "healthTest", 7)
        .with_observed(record(holder, 0), T0)
}

/// client-go tools/leaderelection/healthzadaptor_test.go,
/// TestLeaderElectionHealthChecker, four rows: with a 20 s tolerance,
/// `Check` fails only for the elector that leads and last observed its
/// lease more than LeaseDuration + 20 s ago.
#[test]
fn leader_election_health_checker() {
    let tolerance = Duration::from_secs(20);
    let hour = Duration::from_secs(3_600);
    let rows = [
        (
            "call check when the lease is far expired",
            "healthTest",
            T0 + hour,
            true,
        ),
        (
            "call check when the lease is far expired but held by another server",
            "otherServer",
            T0 + hour,
            false,
        ),
        (
            "call check when the lease is not expired",
            "healthTest",
            T0,
            false,
        ),
        (
            "call check when the lease is expired but inside the timeout",
            "healthTest",
            T0 + Duration::from_secs(61),
            false,
        ),
    ];
    for (description, holder, now, fails) in rows {
        let result = health_elector(holder).check(now, tolerance);
        assert_eq!(result.is_err(), fails, "[{description}] {result:?}");
        if let Err(error) = result {
            assert!(
                error
                    .to_string()
                    .starts_with("failed election to renew leadership on lease"),
                "[{description}] {error}"
            );
        }
    }
}
