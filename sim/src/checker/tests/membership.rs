//! `membership` through the whole checker: the registry's answers against
//! heartbeats and the TTL.

use super::*;

fn membership_settings() -> CheckerSettings {
    CheckerSettings {
        liveness_ttl: Some(Duration::from_secs(10)),
        ..settings()
    }
}

fn registry(checker: &mut Checker, seconds: f64, answer: RegistryAnswer<'_>) {
    checker.observe(
        at(seconds),
        &Observation::RegistryAnswered {
            local: Instant::from_nanos((seconds * S as f64) as u64),
            answer,
        },
    );
}

fn counts(live: u64) -> RegistryAnswer<'static> {
    RegistryAnswer::Counts {
        live,
        listed: Some(live),
        entries: live,
        empty: live == 0,
    }
}

#[test]
fn membership_a_node_leaving_at_its_ttl_keeps_it_early_or_late_breaks_it() {
    let cast = Cast::new();
    let a = cast.a().node;
    let heartbeat = |joined| RegistryAnswer::Heartbeat {
        node: a,
        joined,
        live: true,
    };
    let left = RegistryAnswer::Left {
        node: a,
        live: false,
    };
    let run = |leave_at: f64| {
        let mut checker = Checker::new(membership_settings());
        registry(&mut checker, 1.0, heartbeat(true));
        registry(&mut checker, 1.0, counts(1));
        registry(&mut checker, 5.0, heartbeat(false));
        registry(&mut checker, leave_at, left);
        registry(&mut checker, leave_at, counts(0));
        invariants(&checker.verdict(at(30.0)))
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(run(15.0).is_empty(), "{:?}", run(15.0));
    assert_eq!(run(14.9), ["membership"]);
    assert_eq!(run(16.0), ["membership"]);
}

#[test]
fn membership_wrong_answers_break_it() {
    let cast = Cast::new();
    let a = cast.a().node;
    // Said "refreshed" for a node it never saw.
    let mut checker = Checker::new(membership_settings());
    registry(
        &mut checker,
        1.0,
        RegistryAnswer::Heartbeat {
            node: a,
            joined: false,
            live: true,
        },
    );
    assert_eq!(invariants(&checker.verdict(at(2.0))), ["membership"]);
    // Not live right after its heartbeat.
    let mut checker = Checker::new(membership_settings());
    registry(
        &mut checker,
        1.0,
        RegistryAnswer::Heartbeat {
            node: a,
            joined: true,
            live: false,
        },
    );
    assert_eq!(invariants(&checker.verdict(at(2.0))), ["membership"]);
    // Counts that disagree with one member.
    let mut checker = Checker::new(membership_settings());
    registry(
        &mut checker,
        1.0,
        RegistryAnswer::Heartbeat {
            node: a,
            joined: true,
            live: true,
        },
    );
    registry(&mut checker, 1.0, counts(1));
    // A change whose listing was not counted (a large fleet's) is judged
    // on the counts it has.
    let unlisted = RegistryAnswer::Counts {
        live: 1,
        listed: None,
        entries: 1,
        empty: false,
    };
    registry(&mut checker, 1.0, unlisted);
    assert!(invariants(&checker.verdict(at(2.0))).is_empty());
    registry(&mut checker, 2.0, counts(0));
    assert_eq!(invariants(&checker.verdict(at(3.0))), ["membership"]);
    // A listing that disagrees, alone, breaks it.
    let mut checker = Checker::new(membership_settings());
    registry(
        &mut checker,
        1.0,
        RegistryAnswer::Heartbeat {
            node: a,
            joined: true,
            live: true,
        },
    );
    let short_listing = RegistryAnswer::Counts {
        live: 1,
        listed: Some(0),
        entries: 1,
        empty: false,
    };
    registry(&mut checker, 1.0, short_listing);
    assert_eq!(invariants(&checker.verdict(at(2.0))), ["membership"]);
    // Kept past its TTL: a later heartbeat finds it still a member.
    let mut checker = Checker::new(membership_settings());
    registry(
        &mut checker,
        1.0,
        RegistryAnswer::Heartbeat {
            node: a,
            joined: true,
            live: true,
        },
    );
    registry(
        &mut checker,
        12.0,
        RegistryAnswer::Heartbeat {
            node: a,
            joined: false,
            live: true,
        },
    );
    assert_eq!(invariants(&checker.verdict(at(13.0))), ["membership"]);
    // Without a liveness TTL in the settings, membership is not judged.
    let mut checker = Checker::new(settings());
    registry(&mut checker, 2.0, counts(7));
    assert!(invariants(&checker.verdict(at(3.0))).is_empty());
}

#[test]
fn membership_counts_with_a_member_past_its_ttl_break_it_a_refreshed_one_does_not() {
    // Proves that the counts after a change are judged against every
    // member's expiry, whichever order the members heartbeated in: the
    // oldest heartbeat decides, and a refresh makes a member the newest.
    let cast = Cast::new();
    let (a, b) = (cast.a().node, cast.b().node);
    let heartbeat = |checker: &mut Checker, seconds: f64, node, joined| {
        let answer = RegistryAnswer::Heartbeat {
            node,
            joined,
            live: true,
        };
        registry(checker, seconds, answer);
    };
    let two_members = |a_refreshes_at: Option<f64>| {
        let mut checker = Checker::new(membership_settings());
        heartbeat(&mut checker, 1.0, a, true);
        heartbeat(&mut checker, 5.0, b, true);
        if let Some(at) = a_refreshes_at {
            heartbeat(&mut checker, at, a, false);
        }
        heartbeat(&mut checker, 9.0, b, false);
        registry(&mut checker, 12.0, counts(2));
        checker.verdict(at(13.0))
    };
    // a's heartbeat at 1 s ran out at 11 s: still counted at 12 s.
    let verdict = two_members(None);
    assert_eq!(invariants(&verdict), ["membership"]);
    assert!(
        verdict.violations[0]
            .detail
            .contains("node #0 is still a member"),
        "{}",
        verdict.violations[0].detail
    );
    // Refreshed at 8 s, a is live until 18 s, b until 19 s.
    assert!(invariants(&two_members(Some(8.0))).is_empty());
    // After a leaves on time, the counts of the one member left are right.
    let mut checker = Checker::new(membership_settings());
    heartbeat(&mut checker, 1.0, a, true);
    heartbeat(&mut checker, 5.0, b, true);
    let left = RegistryAnswer::Left {
        node: a,
        live: false,
    };
    registry(&mut checker, 11.0, left);
    registry(&mut checker, 11.0, counts(1));
    assert!(invariants(&checker.verdict(at(12.0))).is_empty());
}
