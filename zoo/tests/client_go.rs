//! Contract tests of the client-go Lease leader-election model.

mod common;

use std::time::Duration;

use common::{millis, secs, Clock, Sim};
use fenced_zoo::client_go::{
    ApiRequest, ApiResponse, ApiResult, ClientGo, ClientGoSettings, LeaseRecord,
};
use fenced_zoo::{ClientId, Instant, LockServer, Protocol, ServerOutput, SettingsError};

fn sim() -> Sim<ClientGo> {
    Sim::new(ClientGoSettings::default())
}

/// A candidate takes over only after LeaseDuration on ITS OWN clock since it
/// last observed the record change: on a clock running at half speed it
/// waits twice as long in real time.
#[test]
fn expiry_is_judged_on_the_candidates_clock() {
    for (clock, factor) in [(Clock::default(), 1), (Clock::rate(1, 2), 2)] {
        let mut sim = sim();
        let a = sim.add_client(1, Clock::default());
        sim.run_for(Duration::from_secs(1));
        let b = sim.add_client(2, clock);
        sim.run_for(Duration::from_secs(10));
        sim.crash(a);
        // B sees A's last renewal within one jittered retry (≤ 4.4 s).
        sim.run_for(Duration::from_secs(5));
        let observed_local = sim.client(b).observed_time();
        let took_over = {
            assert!(
                sim.run_until_cond(Duration::from_secs(120), |sim| !sim.leader_ids().is_empty())
            );
            sim.now
        };
        assert_eq!(sim.leader_ids(), vec![b]);
        let earliest = (observed_local.as_nanos() + secs(15)) * factor;
        assert!(took_over >= earliest, "{took_over} < {earliest}");
        assert!(took_over < earliest + secs(5) * factor);
    }
}

/// Two candidates on an empty store: both Get NotFound, both Create, the
/// store's AlreadyExists makes exactly one win; token = leaseTransitions 0.
#[test]
fn create_race_has_one_winner() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(30));
    assert_eq!(sim.leader_ids(), vec![a]);
    assert_eq!(sim.became_leader_at(b), None);
    assert_eq!(
        sim.leaders()[0].1.token,
        Some(0),
        "the creator's transitions start at 0"
    );
    assert_eq!(sim.holder(0), Some((Some(a), Some(0))));
}

/// An Update with a stale resourceVersion is refused: the compare-and-swap
/// that makes a takeover race have one winner.
#[test]
fn update_with_stale_resource_version_conflicts() {
    let mut server = ClientGo::new_server(&ClientGoSettings::default(), 0);
    let record = |holder: &str, transitions| LeaseRecord {
        holder_identity: holder.to_owned(),
        lease_duration_seconds: 15,
        acquire_time: Instant::ZERO,
        renew_time: Instant::ZERO,
        lease_transitions: transitions,
    };
    let now = Instant::ZERO;
    server.handle_request(
        ClientId(1),
        ApiRequest::Create {
            id: 1,
            record: record("a", 0),
        },
        now,
    );
    let (_, version) = server.lease().expect("created");
    server.handle_request(
        ClientId(2),
        ApiRequest::Update {
            id: 2,
            record: record("b", 1),
            resource_version: version,
        },
        now,
    );
    server.handle_request(
        ClientId(3),
        ApiRequest::Update {
            id: 3,
            record: record("c", 1),
            resource_version: version,
        },
        now,
    );
    let replies: Vec<ApiResponse> = std::iter::from_fn(|| server.poll_output())
        .filter_map(|output| match output {
            ServerOutput::Reply { response, .. } => Some(response),
            ServerOutput::Holder { .. } => None,
        })
        .collect();
    assert!(
        matches!(replies[1].result, ApiResult::Lease { resource_version, .. } if resource_version > version)
    );
    assert_eq!(replies[2].result, ApiResult::Conflict);
    assert_eq!(server.lease().expect("stored").0.holder_identity, "b");
}

/// A leader that cannot reach the API server steps down when its renew
/// poll's RenewDeadline passes — before any candidate may take over.
#[test]
fn renew_deadline_steps_down_before_takeover() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(10));
    let cut_at = sim.now;
    sim.cut(a);
    sim.run_for(Duration::from_secs(40));
    let (lost_at, reason) = sim.lost_leadership(a).expect("stepped down");
    assert_eq!(reason, "renew deadline passed");
    assert!(lost_at > cut_at + secs(8) && lost_at <= cut_at + secs(12));
    let took_over = sim.became_leader_at(b).expect("B took over");
    assert!(took_over > lost_at);
    assert_eq!(sim.leader_ids(), vec![b]);
    assert_eq!(sim.holder(0), Some((Some(b), Some(1))));
}

/// ReleaseOnCancel: a stopped leader empties the holder, and a candidate
/// takes over at its next try instead of after LeaseDuration.
#[test]
fn release_on_cancel_hands_over_fast() {
    for release_on_cancel in [true, false] {
        let settings = ClientGoSettings {
            release_on_cancel,
            ..ClientGoSettings::default()
        };
        let mut sim = Sim::<ClientGo>::new(settings);
        let a = sim.add_client(1, Clock::default());
        sim.run_for(Duration::from_secs(1));
        let b = sim.add_client(2, Clock::default());
        sim.run_for(Duration::from_secs(10));
        let stopped_at = sim.now;
        sim.stop(a);
        assert_eq!(sim.lost_leadership(a).map(|(_, r)| r), Some("stopped"));
        sim.run_for(Duration::from_secs(30));
        let took_over = sim.became_leader_at(b).expect("B took over");
        if release_on_cancel {
            assert!(took_over < stopped_at + millis(4_500));
        } else {
            assert!(took_over >= stopped_at + secs(13));
        }
    }
}

/// A leader paused past LeaseDuration resumes as leader and keeps leading
/// until its renew poll's deadline, while the candidate that took over also
/// leads: two leaders, told apart only by the token (leaseTransitions).
#[test]
fn paused_leader_overlaps_with_successor() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_millis(3_500));
    sim.pause(a, Duration::from_secs(25));
    sim.run_for(Duration::from_secs(25) + Duration::from_millis(10));
    let leaders = sim.leaders();
    assert_eq!(leaders.len(), 2, "{leaders:?}");
    assert_eq!(leaders[0].1.token, Some(0));
    assert_eq!(leaders[1].1.token, Some(1));
    sim.run_for(Duration::from_secs(12));
    assert_eq!(sim.leader_ids(), vec![b]);
    assert_eq!(
        sim.lost_leadership(a).map(|(_, r)| r),
        Some("renew deadline passed")
    );
}

/// PR #114872: a candidate configured with a shorter LeaseDuration judged
/// the leader's lease by its own duration. The leader (60 s lease, 40 s renew
/// deadline) is cut off for 30 s and keeps leading; the pre-fix candidate
/// (15 s) takes over meanwhile — two leaders — and the fixed one waits for
/// the record's 60 s, by when the leader has stepped down.
#[test]
fn pr_114872_mixed_durations() {
    for pre_fix in [true, false] {
        let long = ClientGoSettings::with_timings(Duration::from_secs(60), Duration::from_secs(40));
        let short = ClientGoSettings {
            pre_114872_own_lease_duration: pre_fix,
            ..ClientGoSettings::default()
        };
        let mut sim = Sim::<ClientGo>::new(long.clone());
        let a = sim.add_client_with(1, Clock::default(), &long);
        sim.run_for(Duration::from_secs(1));
        let b = sim.add_client_with(2, Clock::default(), &short);
        sim.run_for(Duration::from_secs(5));
        sim.cut(a);
        let mut both = false;
        for _ in 0..300 {
            sim.run_for(Duration::from_millis(100));
            both |= sim.leader_ids().len() == 2;
        }
        sim.heal(a);
        for _ in 0..600 {
            sim.run_for(Duration::from_millis(100));
            both |= sim.leader_ids().len() == 2;
        }
        if pre_fix {
            assert!(both, "the pre-fix candidate overlapped the leader");
            assert!(sim.became_leader_at(b).expect("took over") < secs(25));
        } else {
            // A's request sent while cut off waits out its 20 s timeout
            // (RenewDeadline / 2), so A never renews in time and steps down;
            // B takes over only once the record's 60 s have passed.
            assert!(!both, "never two leaders");
            assert!(sim.became_leader_at(b).expect("took over") > secs(65));
        }
        assert_eq!(sim.leader_ids(), vec![b]);
    }
}

/// NewLeaderElector's checks, named.
#[test]
fn settings_validation() {
    let check = |lease, renew, retry| {
        ClientGo::validate(&ClientGoSettings {
            lease_duration: Duration::from_secs(lease),
            renew_deadline: Duration::from_secs(renew),
            retry_period: Duration::from_secs(retry),
            ..ClientGoSettings::default()
        })
    };
    assert!(matches!(
        check(10, 10, 2),
        Err(SettingsError::NotGreater {
            setting: "lease_duration",
            than: "renew_deadline",
            ..
        })
    ));
    assert!(matches!(
        check(15, 2, 2),
        Err(SettingsError::NotGreater {
            setting: "renew_deadline",
            ..
        })
    ));
    assert_eq!(
        check(15, 10, 0),
        Err(SettingsError::Zero {
            setting: "retry_period"
        })
    );
    assert_eq!(check(15, 10, 2), Ok(()));
    assert_eq!(
        check(10, 10, 2).unwrap_err().to_string(),
        "lease_duration (10s) must be greater than renew_deadline (10s)"
    );
    assert_eq!(
        ClientGoSettings::default().request_timeout,
        Duration::from_secs(5)
    );
}

/// The leader's fast-path `Update` that times out falls back to `Get` in
/// the same try, as `tryAcquireOrRenew` does for any error of the optimistic
/// update (`leaderelection.go`: "Failed to update lease optimistically,
/// falling back to slow path") — not a new fast `Update` on the next tick.
#[test]
fn a_timed_out_fast_update_falls_back_to_get_in_the_same_try() {
    use fenced_zoo::client_go::{ApiRequest, ApiResponse, ApiResult};
    use fenced_zoo::{ClientId, ClientOutput, Instant, LockClient};
    let settings = ClientGoSettings::default();
    let mut client = ClientGo::new_client(&settings, ClientId(1), "a#1", 1);
    let sent = |client: &mut <ClientGo as Protocol>::Client| {
        let mut requests = Vec::new();
        while let Some(output) = client.poll_output() {
            if let ClientOutput::Send { request, .. } = output {
                requests.push(request);
            }
        }
        requests
    };
    let answer = |client: &mut <ClientGo as Protocol>::Client, id, result, now| {
        client.handle_response(0, ApiResponse { id, result }, now);
    };
    let mut now = Instant::from_nanos(1_000_000_000);
    client.start(now);
    // Acquire: Get → NotFound → Create → the lease.
    let Some(ApiRequest::Get { id }) = sent(&mut client).pop() else {
        panic!("a Get first");
    };
    answer(&mut client, id, ApiResult::NotFound, now);
    let Some(ApiRequest::Create { id, record }) = sent(&mut client).pop() else {
        panic!("a Create after NotFound");
    };
    answer(
        &mut client,
        id,
        ApiResult::Lease {
            record,
            resource_version: 1,
        },
        now,
    );
    assert!(client.leadership(now).is_some(), "leads");
    // Renew polls run until one sends the fast-path Update.
    let fast = loop {
        let requests = sent(&mut client);
        if let Some(update @ ApiRequest::Update { .. }) = requests.into_iter().next() {
            break update;
        }
        now = client.next_timeout().expect("the renew loop's timer");
        client.handle_timeout(now);
    };
    let ApiRequest::Update { record, .. } = fast else {
        unreachable!()
    };
    assert_eq!(record.holder_identity, "a#1");
    // No answer: at the request timeout the same try sends a Get at once.
    let timeout = client.next_timeout().expect("the request's deadline");
    assert_eq!(timeout, now + settings.request_timeout);
    client.handle_timeout(timeout);
    let after = sent(&mut client);
    assert!(
        matches!(after.as_slice(), [ApiRequest::Get { .. }]),
        "the slow path's Get at once: {after:?}"
    );
}
