//! `token-monotonic` and `lease-exclusive` through the whole checker, and
//! the coverage of takeovers during a pause.

use super::*;

#[test]
fn token_monotonic_a_repeated_grant_breaks_it_a_higher_one_does_not() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    started(&mut checker, &cast);
    lease(&mut checker, 1.0, cast.a(), &granted(1, 31));
    // Almost: after a lapse, a higher token to another owner.
    lease(&mut checker, 40.0, cast.b(), &granted(2, 70));
    assert!(invariants(&checker.verdict(at(41.0))).is_empty());
    // Broken: a grant that does not exceed the highest token.
    lease(&mut checker, 80.0, cast.a(), &granted(2, 110));
    assert_eq!(invariants(&checker.verdict(at(81.0))), ["token-monotonic"]);
}

#[test]
fn token_monotonic_a_renewal_of_a_lapsed_lease_breaks_it() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    started(&mut checker, &cast);
    lease(&mut checker, 1.0, cast.a(), &granted(1, 31));
    // Almost: renewed a moment before it lapses.
    lease(&mut checker, 30.9, cast.a(), &renewed(1, 60));
    assert!(invariants(&checker.verdict(at(31.0))).is_empty());
    // Broken: renewed at its expiry (a lapsed lease needs a new token).
    lease(&mut checker, 60.0, cast.a(), &renewed(1, 90));
    assert_eq!(invariants(&checker.verdict(at(61.0))), ["token-monotonic"]);
}

#[test]
fn lease_exclusive_a_grant_over_a_live_lease_breaks_it_one_at_expiry_does_not() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    started(&mut checker, &cast);
    lease(&mut checker, 1.0, cast.a(), &granted(1, 31));
    // Almost: granted to b exactly at a's expiry (`now >= expires_at` is expired).
    lease(&mut checker, 31.0, cast.b(), &granted(2, 61));
    assert!(invariants(&checker.verdict(at(32.0))).is_empty());
    // Broken: granted to a while b's lease is live.
    lease(&mut checker, 60.9, cast.a(), &granted(3, 91));
    assert_eq!(invariants(&checker.verdict(at(61.0))), ["lease-exclusive"]);
}

#[test]
fn a_paused_holder_taken_over_and_a_fenced_zombie_are_counted() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    started(&mut checker, &cast);
    lease(&mut checker, 1.0, cast.a(), &granted(1, 31));
    checker.observe(
        at(5.0),
        &Observation::Paused {
            host: crate::observation::HostRef::Process(cast.a()),
            depth: 1,
        },
    );
    lease(&mut checker, 31.0, cast.b(), &granted(2, 61));
    // a's second life starts; a#1's late write is a zombie's.
    checker.observe(at(32.0), &Observation::ProcessStarted(cast.a2()));
    let stale = WriteOutcome::RejectedStale {
        stale: token(1),
        highest: token(2),
    };
    write(&mut checker, 33.0, cast.b(), 2, &WriteOutcome::Accepted);
    write(&mut checker, 34.0, cast.a(), 1, &stale);
    let verdict = checker.verdict(at(35.0));
    assert_eq!(verdict.coverage.takeover_during_pause, 1);
    assert_eq!(verdict.coverage.zombie_fenced, 1);
    assert!(invariants(&verdict).is_empty());
}
