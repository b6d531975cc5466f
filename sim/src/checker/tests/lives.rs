//! Processes and their terms through the whole checker: `unique-owner`,
//! leaderless time, `liveness`.

use super::*;

#[test]
fn unique_owner_two_live_processes_with_one_id_break_it_a_restart_does_not() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    checker.observe(at(0.0), &Observation::ProcessStarted(cast.a()));
    checker.observe(at(1.0), &Observation::ProcessCrashed(cast.a()));
    // Almost: the same id in the same slot after the first died.
    checker.observe(at(2.0), &Observation::ProcessStarted(cast.a()));
    assert!(invariants(&checker.verdict(at(3.0))).is_empty());
    // Broken: a second live process (another slot) with a live process's id.
    let twin = cast.process(5, 1, 1, 0);
    checker.observe(at(4.0), &Observation::ProcessStarted(twin));
    assert_eq!(invariants(&checker.verdict(at(5.0))), ["unique-owner"]);
}

/// `b` leads from 20 s and its write is accepted at 59 s, in a run healed
/// at 10 s that ends at `end_s`.
fn b_writes_until_59s(cast: &Cast, end_s: u64) -> Checker {
    let mut s = settings();
    s.heal_at = Some(Duration::from_secs(10));
    s.end = Duration::from_secs(end_s);
    let mut checker = Checker::new(s);
    started(&mut checker, cast);
    checker.observe(
        at(20.0),
        &Observation::TermStarted {
            process: cast.b(),
            token: token(2),
        },
    );
    write(&mut checker, 59.0, cast.b(), 2, &WriteOutcome::Accepted);
    checker
}

#[test]
fn liveness_no_leader_with_recent_writes_at_the_end_breaks_it() {
    let cast = Cast::new();
    let checker = b_writes_until_59s(&cast, 60);
    // Almost: one leader whose write was accepted a second before the end.
    let verdict = checker.verdict(at(60.0));
    assert!(verdict.leader_at_end);
    assert!(invariants(&verdict).is_empty());
    // Broken: its last accepted write is too old by the end (writes stopped).
    let verdict = checker.verdict(at(59.0 + 2.1 + 0.06));
    assert!(!verdict.leader_at_end);
    assert_eq!(invariants(&verdict), ["liveness"]);
    // And before the run's end nothing is judged yet.
    let early = b_writes_until_59s(&cast, 100);
    assert!(invariants(&early.verdict(at(70.0))).is_empty());
}

#[test]
fn leaderless_time_counts_from_the_first_process_start() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    checker.observe(at(1.0), &Observation::ProcessStarted(cast.a()));
    assert_eq!(
        checker.verdict(at(11.0)).leaderless,
        Duration::from_secs(10)
    );
    checker.observe(
        at(11.0),
        &Observation::TermStarted {
            process: cast.a(),
            token: token(1),
        },
    );
    let verdict = checker.verdict(at(20.0));
    assert_eq!(verdict.leaderless, Duration::from_secs(10));
    assert_eq!(verdict.terms.len(), 1);
    assert_eq!(verdict.terms[0].end, at(20.0));
    // A refused request counts as coverage, never as a violation.
    let held = LeaseResult::Held {
        holder: Lease {
            owner: cast.owners[0].clone(),
            token: token(1),
            expires_at: Instant::from_nanos(40 * S),
        },
    };
    lease(&mut checker, 12.0, cast.b(), &held);
    assert_eq!(checker.verdict(at(13.0)).coverage.refused, 1);
}
