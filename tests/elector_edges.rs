//! The elector's smaller contracts and edge cases: what its queries answer,
//! how a failed request is forgotten, and the zero rejoin delay. The main
//! behaviours are in `elector_behaviour.rs` and `elector_handover.rs`.

mod elector_support;
use elector_support::*;

/// An elector of owner `a` with `timings`.
fn with(timings: ElectorTimings) -> Elector {
    Elector::new(config("a", timings))
}

#[test]
fn request_ids_display_as_a_number_sign_and_the_number() {
    assert_eq!(RequestId(42).to_string(), "#42");
}

#[test]
fn is_leader_says_whether_the_last_input_left_it_leading() {
    let mut e = with(ElectorTimings::default());
    assert!(!e.is_leader(), "idle");
    e.start(secs(0));
    let id = sent_ids(&mut e)[0];
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
    let mut e = with(ElectorTimings::default());
    e.start(secs(0));
    let first = sent_ids(&mut e)[0];
    e.handle_timeout(secs(2));
    let retry = sent_ids(&mut e)[0];
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
    let mut e = with(ElectorTimings {
        rejoin_delay: Some(Duration::ZERO),
        ..ElectorTimings::default()
    });
    e.start(secs(0));
    sent_ids(&mut e);
    let mut at_26s = None;
    for s in (2..=26).step_by(2) {
        e.handle_timeout(secs(s));
        at_26s = sent_ids(&mut e).last().copied().or(at_26s);
    }
    let at_26s = at_26s.expect("the follower kept asking");
    e.handle_timeout(secs(28));
    assert_eq!(sent_ids(&mut e).len(), 1, "still asking at 28 s");
    assert_eq!(
        e.handle_response(at_26s, granted(1, secs(56)), ms(28_100)),
        ResponseDisposition::Applied
    );
    // With the default rejoin delay it went quiet at 27 s and forgot them.
    let mut e = with(ElectorTimings::default());
    e.start(secs(0));
    let mut ids = sent_ids(&mut e);
    for s in (2..=26).step_by(2) {
        e.handle_timeout(secs(s));
        ids.extend(sent_ids(&mut e));
    }
    e.handle_timeout(secs(27));
    assert!(sent_ids(&mut e).is_empty(), "quiet from 27 s");
    assert_eq!(
        e.handle_response(*ids.last().unwrap(), granted(1, secs(56)), ms(27_100)),
        ResponseDisposition::Stale
    );
}
