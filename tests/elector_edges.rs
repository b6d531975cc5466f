//! The elector's smaller contracts and edge cases: what its queries answer,
//! how a failed request is forgotten, and the zero rejoin delay. The main
//! behaviours are in `elector_behaviour.rs`.

use std::time::Duration;

use fenced::{
    Elector, ElectorConfig, ElectorOutput, ElectorTimings, FencingToken, Instant, LeaseResult,
    OwnerId, RequestId, ResponseDisposition, Role,
};

fn secs(s: u64) -> Instant {
    Instant::from_secs(s)
}

fn ms(m: u64) -> Instant {
    Instant::from_millis(m)
}

fn token(n: u64) -> FencingToken {
    FencingToken::new(n).unwrap()
}

fn granted(n: u64, expires_at: Instant) -> LeaseResult {
    LeaseResult::Granted {
        token: FencingToken::new(n).unwrap(),
        expires_at,
    }
}

/// An elector with `timings` (TTL 30 s, renew 10 s, retry 2 s, margin 3 s
/// by default: 27 s of validity).
fn elector(timings: ElectorTimings) -> Elector {
    let config = ElectorConfig::new(
        OwnerId::new("a").unwrap(),
        Role::new("reports").unwrap(),
        timings,
    )
    .unwrap();
    Elector::new(config)
}

/// The ids of the requests among the pending outputs, drained.
fn sent(e: &mut Elector) -> Vec<RequestId> {
    std::iter::from_fn(|| e.poll_output())
        .filter_map(|o| match o {
            ElectorOutput::SendLeaseRequest { id, .. } => Some(id),
            _ => None,
        })
        .collect()
}

#[test]
fn request_ids_display_as_a_number_sign_and_the_number() {
    assert_eq!(RequestId(42).to_string(), "#42");
}

#[test]
fn is_leader_says_whether_the_last_input_left_it_leading() {
    let mut e = elector(ElectorTimings::default());
    assert!(!e.is_leader(), "idle");
    e.start(secs(0));
    let id = sent(&mut e)[0];
    assert!(!e.is_leader(), "asking");
    e.handle_response(id, granted(1, secs(30)), ms(5));
    assert!(e.is_leader());
    e.stop(secs(1));
    assert!(!e.is_leader(), "stopped");
}

#[test]
fn a_failed_request_is_forgotten_alone() {
    // Two requests out (0 s and the retry at 2 s); the retry fails; the
    // answer to the first still counts.
    let mut e = elector(ElectorTimings::default());
    e.start(secs(0));
    let first = sent(&mut e)[0];
    e.handle_timeout(secs(2));
    let retry = sent(&mut e)[0];
    e.handle_request_failed(retry, ms(2_100));
    assert_eq!(
        e.handle_response(first, granted(1, secs(30)), ms(2_200)),
        ResponseDisposition::Applied
    );
    assert!(e.is_leader());
    // An answer to the failed request, should one still come, is stale.
    assert_eq!(
        e.handle_response(retry, granted(1, secs(32)), ms(2_300)),
        ResponseDisposition::Stale
    );
}

#[test]
fn with_a_zero_rejoin_delay_a_follower_unheard_for_a_validity_keeps_its_requests() {
    // Nothing is heard for 27 s (one validity); without a rejoin delay the
    // follower does not go quiet, so the answer to its latest request,
    // arriving just after, is applied.
    let mut e = elector(ElectorTimings {
        rejoin_delay: Some(Duration::ZERO),
        ..ElectorTimings::default()
    });
    e.start(secs(0));
    sent(&mut e);
    let mut at_26s = None;
    for s in (2..=26).step_by(2) {
        e.handle_timeout(secs(s));
        at_26s = sent(&mut e).last().copied().or(at_26s);
    }
    let at_26s = at_26s.expect("the follower kept asking");
    e.handle_timeout(secs(28));
    assert_eq!(sent(&mut e).len(), 1, "still asking at 28 s");
    assert_eq!(
        e.handle_response(at_26s, granted(1, secs(56)), ms(28_100)),
        ResponseDisposition::Applied
    );
    // With the default rejoin delay it went quiet at 27 s and forgot them.
    let mut e = elector(ElectorTimings::default());
    e.start(secs(0));
    let mut ids = sent(&mut e);
    for s in (2..=26).step_by(2) {
        e.handle_timeout(secs(s));
        ids.extend(sent(&mut e));
    }
    e.handle_timeout(secs(27));
    assert!(sent(&mut e).is_empty(), "quiet from 27 s");
    assert_eq!(
        e.handle_response(*ids.last().unwrap(), granted(1, secs(56)), ms(27_100)),
        ResponseDisposition::Stale
    );
}

#[test]
fn a_grant_answering_a_retired_request_after_stop_is_released_too() {
    // Proves that a grant reaching a stopped elector is released whichever request it answers: the
    // renewal at 10 s is retired by its retry's answer, is handled by the store after the stop's
    // release (a new term, token 2), and would otherwise hold the role unused for a TTL.
    let mut e = elector(ElectorTimings::default());
    e.start(secs(0));
    let first = sent(&mut e)[0];
    e.handle_response(first, granted(1, secs(30)), ms(1));
    sent(&mut e);
    e.handle_timeout(secs(10));
    let renewal = sent(&mut e)[0];
    e.handle_timeout(secs(12));
    let retry = sent(&mut e)[0];
    assert_eq!(
        e.handle_response(
            retry,
            LeaseResult::Renewed {
                token: token(1),
                expires_at: secs(42)
            },
            secs(13)
        ),
        ResponseDisposition::Applied
    );
    e.stop(secs(14));
    let at_stop: Vec<ElectorOutput> = std::iter::from_fn(|| e.poll_output()).collect();
    assert!(at_stop.contains(&ElectorOutput::Release { token: token(1) }));
    assert_eq!(
        e.handle_response(renewal, granted(2, secs(45)), secs(15)),
        ResponseDisposition::AlreadyReleased
    );
    assert_eq!(
        e.poll_output(),
        Some(ElectorOutput::Release { token: token(2) })
    );
    assert_eq!(e.poll_output(), None);
}
