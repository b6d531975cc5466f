//! Each planted bug, at the machine itself: the planted machine breaks its
//! contract on one small input, the same machine without the bug keeps it.
//!
//! The simulator's negative controls (`sim/tests/negative_controls.rs`,
//! `sim/tests/planted_subtle.rs`) show the *checker* catches each bug in a
//! run; these show each bug is what its documentation says, and keep the
//! `plant` switches and the bugs' arithmetic under the core package's own
//! tests — where a mutation of them is judged (`scripts/mutants.sh suite`).
#![cfg(feature = "planted-bugs")]

mod elector_support;
use elector_support::*;

use fenced::{FencedStore, Fencing, PlantedBug, ReleaseResult, ResourceId, WriteOutcome};

const TTL: Duration = Duration::from_secs(30);

fn role() -> Role {
    Role::new(ROLE).unwrap()
}

/// A lease store, with `bug` planted if given.
fn store(bug: Option<PlantedBug>) -> LeaseStore {
    let mut store = LeaseStore::default();
    if let Some(bug) = bug {
        store.plant(bug);
    }
    store
}

fn ask(store: &mut LeaseStore, who: &str, now: Instant) -> LeaseResult {
    store
        .try_acquire_or_renew(&role(), &owner(who), TTL, now)
        .unwrap()
}

/// An elector with the default timings (TTL 30 s, renew 10 s, retry 2 s,
/// margin 3 s: 27 s of validity), `bug` planted if given.
fn planted_elector(bug: Option<PlantedBug>) -> Elector {
    let config = ElectorConfig::new(owner("a"), role(), ElectorTimings::default()).unwrap();
    let mut e = Elector::new(config);
    if let Some(bug) = bug {
        e.plant(bug);
    }
    e
}

/// An elector started at `start` with a retry out at `start + 2 s`: two
/// requests outstanding, their ids.
fn two_outstanding(e: &mut Elector, start: Instant) -> (RequestId, RequestId) {
    e.start(start);
    let first = sent_ids(e);
    e.handle_timeout(start + Duration::from_secs(2));
    let second = sent_ids(e);
    assert_eq!((first.len(), second.len()), (1, 1), "one request each");
    (first[0], second[0])
}

/// The last instant `e` may act with `token`, found from `token_at` (ms
/// resolution, searched from `from`).
fn last_valid_ms(e: &Elector, from: Instant) -> u64 {
    let mut m = from.as_millis();
    while e.token_at(ms(m + 1)).is_some() {
        m += 1;
    }
    m
}

#[test]
fn store_skips_token_bump_reuses_the_token_on_takeover() {
    for (bug, expected) in [(None, 2), (Some(PlantedBug::StoreSkipsTokenBump), 1)] {
        let mut s = store(bug);
        ask(&mut s, "a", secs(0));
        assert_eq!(ask(&mut s, "b", secs(30)), granted(expected, secs(60)));
    }
}

#[test]
fn store_bumps_token_on_renewal_changes_the_token_of_a_renewal() {
    for (bug, expected) in [(None, 1), (Some(PlantedBug::StoreBumpsTokenOnRenewal), 2)] {
        let mut s = store(bug);
        ask(&mut s, "a", secs(0));
        assert_eq!(
            ask(&mut s, "a", secs(10)),
            LeaseResult::Renewed {
                token: token(expected),
                expires_at: secs(40)
            }
        );
    }
}

#[test]
fn store_lets_second_owner_renew_hands_a_live_lease_to_another_owner() {
    let mut clean = store(None);
    ask(&mut clean, "a", secs(0));
    assert!(matches!(
        ask(&mut clean, "b", secs(10)),
        LeaseResult::Held { .. }
    ));
    assert_eq!(clean.holder(&role(), secs(10)).unwrap().owner, owner("a"));

    let mut planted = store(Some(PlantedBug::StoreLetsSecondOwnerRenew));
    ask(&mut planted, "a", secs(0));
    assert_eq!(
        ask(&mut planted, "b", secs(10)),
        LeaseResult::Renewed {
            token: token(1),
            expires_at: secs(40)
        }
    );
    assert_eq!(planted.holder(&role(), secs(10)).unwrap().owner, owner("b"));
}

#[test]
fn store_release_deletes_unconditionally_frees_another_owners_lease() {
    for (bug, expected) in [
        (None, ReleaseResult::NotHeld),
        (
            Some(PlantedBug::StoreReleaseDeletesUnconditionally),
            ReleaseResult::Released,
        ),
    ] {
        let mut s = store(bug);
        ask(&mut s, "a", secs(0));
        assert_eq!(s.release(&role(), &owner("b"), token(7), secs(1)), expected);
    }
}

#[test]
fn store_renews_lapsed_lease_renews_instead_of_granting_a_new_term() {
    let mut clean = store(None);
    ask(&mut clean, "a", secs(0));
    assert_eq!(ask(&mut clean, "a", secs(31)), granted(2, secs(61)));

    let mut planted = store(Some(PlantedBug::StoreRenewsLapsedLease));
    ask(&mut planted, "a", secs(0));
    assert_eq!(
        ask(&mut planted, "a", secs(31)),
        LeaseResult::Renewed {
            token: token(1),
            expires_at: secs(61)
        }
    );
    // Another owner still gets a new term.
    let mut planted = store(Some(PlantedBug::StoreRenewsLapsedLease));
    ask(&mut planted, "a", secs(0));
    assert_eq!(ask(&mut planted, "b", secs(31)), granted(2, secs(61)));
}

#[test]
fn store_truncates_expiry_to_seconds_ends_a_lease_up_to_a_second_early() {
    // Granted at 0.5 s: expires at 30.5 s; at 30.2 s it is live.
    let mut clean = store(None);
    ask(&mut clean, "a", ms(500));
    assert!(matches!(
        ask(&mut clean, "b", ms(30_200)),
        LeaseResult::Held { .. }
    ));

    let mut planted = store(Some(PlantedBug::StoreTruncatesExpiryToSeconds));
    ask(&mut planted, "a", ms(500));
    assert_eq!(ask(&mut planted, "b", ms(30_200)), granted(2, ms(60_200)));
}

#[test]
fn store_keys_lease_by_host_lets_a_new_life_of_the_host_renew() {
    let mut clean = store(None);
    ask(&mut clean, "node-1#1", secs(0));
    assert!(matches!(
        ask(&mut clean, "node-1#2", secs(5)),
        LeaseResult::Held { .. }
    ));

    let mut planted = store(Some(PlantedBug::StoreKeysLeaseByHost));
    ask(&mut planted, "node-1#1", secs(0));
    assert_eq!(
        ask(&mut planted, "node-1#2", secs(5)),
        LeaseResult::Renewed {
            token: token(1),
            expires_at: secs(35)
        }
    );
    // Another host is still refused.
    assert!(matches!(
        ask(&mut planted, "node-2#1", secs(6)),
        LeaseResult::Held { .. }
    ));
}

#[test]
fn store_forgets_token_on_release_starts_again_at_one() {
    for (bug, expected) in [(None, 2), (Some(PlantedBug::StoreForgetsTokenOnRelease), 1)] {
        let mut s = store(bug);
        ask(&mut s, "a", secs(0));
        assert_eq!(
            s.release(&role(), &owner("a"), token(1), secs(1)),
            ReleaseResult::Released
        );
        assert_eq!(ask(&mut s, "b", secs(2)), granted(expected, secs(32)));
    }
}

#[test]
fn elector_ignores_deadline_keeps_leading_past_it() {
    for (bug, leads_at_27s) in [
        (None, false),
        (Some(PlantedBug::ElectorIgnoresDeadline), true),
    ] {
        let mut e = planted_elector(bug);
        e.start(secs(0));
        let id = sent_ids(&mut e)[0];
        e.handle_response(id, granted(1, secs(30)), ms(1));
        sent_ids(&mut e);
        // The renewals go unanswered.
        e.handle_timeout(secs(27));
        assert_eq!(e.token_at(secs(27)).is_some(), leads_at_27s);
        assert_eq!(e.token().is_some(), leads_at_27s);
    }
}

#[test]
fn elector_drops_slow_answers_ignores_an_answer_to_a_re_sent_request() {
    for (bug, first) in [
        (None, ResponseDisposition::Applied),
        (
            Some(PlantedBug::ElectorDropsSlowAnswers),
            ResponseDisposition::Stale,
        ),
    ] {
        let mut e = planted_elector(bug);
        let (old, _) = two_outstanding(&mut e, secs(0));
        assert_eq!(
            e.handle_response(old, granted(1, secs(30)), ms(2500)),
            first
        );
    }
    // The answer to the newest request is applied, planted or not.
    let mut e = planted_elector(Some(PlantedBug::ElectorDropsSlowAnswers));
    let (_, new) = two_outstanding(&mut e, secs(0));
    assert_eq!(
        e.handle_response(new, granted(1, secs(32)), ms(2500)),
        ResponseDisposition::Applied
    );
}

#[test]
fn elector_matches_newest_request_anchors_an_old_answer_at_the_newest_send() {
    // The answer to the request sent at 0 s arrives at 2.5 s, after the
    // retry at 2 s: valid until 27 s, or 29 s when anchored at the retry.
    for (bug, last_ms) in [
        (None, 26_999),
        (Some(PlantedBug::ElectorMatchesNewestRequest), 28_999),
    ] {
        let mut e = planted_elector(bug);
        let (old, _) = two_outstanding(&mut e, secs(0));
        assert_eq!(
            e.handle_response(old, granted(1, secs(30)), ms(2500)),
            ResponseDisposition::Applied
        );
        assert_eq!(last_valid_ms(&e, ms(2500)), last_ms);
    }
}

#[test]
fn elector_anchors_at_arrival_starts_the_validity_when_the_answer_arrives() {
    for (bug, last_ms) in [
        (None, 26_999),
        (Some(PlantedBug::ElectorAnchorsAtArrival), 27_999),
    ] {
        let mut e = planted_elector(bug);
        e.start(secs(0));
        let id = sent_ids(&mut e)[0];
        e.handle_response(id, granted(1, secs(30)), secs(1));
        assert_eq!(last_valid_ms(&e, secs(1)), last_ms);
    }
}

#[test]
fn elector_deadline_without_margin_leads_for_the_whole_ttl() {
    // Sent at 10 s, answered at 15 s: the anchor moves on by the margin
    // (3 s) but not past the arrival — valid until 13 s + 27 s = 40 s, not
    // 10 s + 27 s = 37 s.
    for (bug, last_ms) in [
        (None, 36_999),
        (Some(PlantedBug::ElectorDeadlineWithoutMargin), 39_999),
    ] {
        let mut e = planted_elector(bug);
        e.start(secs(10));
        let id = sent_ids(&mut e)[0];
        e.handle_response(id, granted(1, secs(40)), secs(15));
        assert_eq!(last_valid_ms(&e, secs(15)), last_ms);
    }
    // Answered at once, the anchor stops at the arrival: 11 s + 27 s.
    let mut e = planted_elector(Some(PlantedBug::ElectorDeadlineWithoutMargin));
    e.start(secs(10));
    let id = sent_ids(&mut e)[0];
    e.handle_response(id, granted(1, secs(40)), secs(11));
    assert_eq!(last_valid_ms(&e, secs(11)), 37_999);
}

#[test]
fn elector_applies_stale_answer_applies_an_answer_it_does_not_wait_for() {
    for (bug, disposition) in [
        (None, ResponseDisposition::Stale),
        (
            Some(PlantedBug::ElectorAppliesStaleAnswer),
            ResponseDisposition::Applied,
        ),
    ] {
        let mut e = planted_elector(bug);
        e.start(secs(0));
        let first = sent_ids(&mut e)[0];
        // The first answer is lost; a retry is out at 2 s; a duplicate
        // answer to a request id never sent arrives.
        e.handle_timeout(secs(2));
        sent_ids(&mut e);
        let unknown = RequestId(first.0 + 100);
        assert_eq!(
            e.handle_response(unknown, granted(1, secs(32)), ms(2500)),
            disposition
        );
    }
}

#[test]
fn downstream_accepts_lower_token_lets_a_superseded_writer_through() {
    let r = ResourceId::new("report.csv").unwrap();
    for (bug, outcome_is_accepted) in [
        (None, false),
        (Some(PlantedBug::DownstreamAcceptsLowerToken), true),
    ] {
        let mut s = FencedStore::new(Fencing::Enforced);
        if let Some(bug) = bug {
            s.plant(bug);
        }
        s.write(&r, token(2), &owner("b"), "b", secs(1));
        let outcome = s.write(&r, token(1), &owner("a"), "a", secs(2));
        assert_eq!(outcome == WriteOutcome::Accepted, outcome_is_accepted);
    }
}

#[test]
fn downstream_trusts_same_host_lets_a_zombie_of_the_same_host_through() {
    let r = ResourceId::new("report.csv").unwrap();
    for (bug, zombie_accepted) in [
        (None, false),
        (Some(PlantedBug::DownstreamTrustsSameHost), true),
    ] {
        let mut s = FencedStore::new(Fencing::Enforced);
        if let Some(bug) = bug {
            s.plant(bug);
        }
        s.write(&r, token(2), &owner("node-1#2"), "new", secs(1));
        let zombie = s.write(&r, token(1), &owner("node-1#1"), "old", secs(2));
        assert_eq!(zombie == WriteOutcome::Accepted, zombie_accepted);
        // Another host's lower token is refused either way.
        let other = s.write(&r, token(1), &owner("node-2#1"), "other", secs(3));
        assert!(matches!(other, WriteOutcome::RejectedStale { .. }));
    }
}
