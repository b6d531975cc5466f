//! `local-deadline` through the whole checker: units, step-downs, renewal
//! timing and jitter, `token_at` answers.

use super::*;

#[test]
fn local_deadline_a_unit_at_the_deadline_breaks_it_one_just_before_does_not() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    started(&mut checker, &cast);
    let local = |s: u64| Instant::from_nanos(s * S);
    checker.observe(
        at(0.0),
        &Observation::RequestSent {
            process: cast.a(),
            request: 1,
            local: local(10),
        },
    );
    checker.observe(
        at(0.1),
        &Observation::ResponseHandled {
            process: cast.a(),
            request: 1,
            disposition: fenced::ResponseDisposition::Applied,
            acquired: Some(token(1)),
            renewal: false,
        },
    );
    checker.observe(
        at(0.1),
        &Observation::TermStarted {
            process: cast.a(),
            token: token(1),
        },
    );
    let unit = |checker: &mut Checker, l: Instant| {
        checker.observe(
            at(1.0),
            &Observation::WorkStarted {
                process: cast.a(),
                token: token(1),
                unit: 1,
                local: l,
            },
        )
    };
    // Almost: one nanosecond before 10 s + 27 s on a's clock.
    unit(&mut checker, Instant::from_nanos(37 * S - 1));
    assert!(invariants(&checker.verdict(at(2.0))).is_empty());
    unit(&mut checker, local(37));
    assert_eq!(invariants(&checker.verdict(at(2.0))), ["local-deadline"]);
}

/// `a` sends request 1 at 10 s on its clock, is granted token 1 and leads.
fn a_leads_from_a_request_at_10s(checker: &mut Checker, cast: &Cast) {
    started(checker, cast);
    checker.observe(
        at(0.0),
        &Observation::RequestSent {
            process: cast.a(),
            request: 1,
            local: Instant::from_nanos(10 * S),
        },
    );
    checker.observe(
        at(0.1),
        &Observation::ResponseHandled {
            process: cast.a(),
            request: 1,
            disposition: fenced::ResponseDisposition::Applied,
            acquired: Some(token(1)),
            renewal: false,
        },
    );
    checker.observe(
        at(0.1),
        &Observation::TermStarted {
            process: cast.a(),
            token: token(1),
        },
    );
}

fn step_down_on_deadline(checker: &mut Checker, cast: &Cast, seconds: f64, local: Instant) {
    checker.observe(
        at(seconds),
        &Observation::TermEnded {
            process: cast.a(),
            token: token(1),
            reason: &fenced::StepDownReason::LocalDeadline,
            why: None,
            local: Some(local),
        },
    );
}

#[test]
fn local_deadline_a_step_down_after_the_deadline_breaks_it_one_at_the_deadline_does_not() {
    let cast = Cast::new();
    // Almost: at 10 s + 27 s on a's clock exactly.
    let mut checker = Checker::new(settings());
    a_leads_from_a_request_at_10s(&mut checker, &cast);
    step_down_on_deadline(&mut checker, &cast, 27.0, Instant::from_nanos(37 * S));
    assert!(invariants(&checker.verdict(at(30.0))).is_empty());
    // A retry interval late, while it could act: the deadline timer was
    // missed.
    let mut checker = Checker::new(settings());
    a_leads_from_a_request_at_10s(&mut checker, &cast);
    step_down_on_deadline(&mut checker, &cast, 28.0, Instant::from_nanos(38 * S));
    assert_eq!(invariants(&checker.verdict(at(30.0))), ["local-deadline"]);
    // Early: it gave up a lease it could still act on.
    let mut checker = Checker::new(settings());
    a_leads_from_a_request_at_10s(&mut checker, &cast);
    step_down_on_deadline(&mut checker, &cast, 26.0, Instant::from_nanos(36 * S));
    assert_eq!(invariants(&checker.verdict(at(30.0))), ["local-deadline"]);
}

#[test]
fn local_deadline_a_late_step_down_is_right_at_a_resume_but_not_after_it() {
    let cast = Cast::new();
    let pause = |checker: &mut Checker, seconds: f64, start: bool| {
        let host = HostRef::Process(cast.a());
        let o = if start {
            Observation::Paused { host, depth: 1 }
        } else {
            Observation::Resumed {
                host,
                depth: 0,
                deferred: 1,
            }
        };
        checker.observe(at(seconds), &o);
    };
    let mut checker = Checker::new(settings());
    a_leads_from_a_request_at_10s(&mut checker, &cast);
    pause(&mut checker, 20.0, true);
    pause(&mut checker, 40.0, false);
    step_down_on_deadline(&mut checker, &cast, 40.0, Instant::from_nanos(50 * S));
    assert!(invariants(&checker.verdict(at(41.0))).is_empty());
    let mut checker = Checker::new(settings());
    a_leads_from_a_request_at_10s(&mut checker, &cast);
    pause(&mut checker, 20.0, true);
    pause(&mut checker, 40.0, false);
    step_down_on_deadline(&mut checker, &cast, 41.0, Instant::from_nanos(51 * S));
    assert_eq!(invariants(&checker.verdict(at(42.0))), ["local-deadline"]);
}

#[test]
fn local_deadline_a_renewal_later_than_renew_interval_breaks_it_one_on_time_does_not() {
    let cast = Cast::new();
    let settings = || CheckerSettings {
        renew_interval: Some(Duration::from_secs(10)),
        ..settings()
    };
    let renew_at = |local_s: u64| {
        let mut checker = Checker::new(settings());
        a_leads_from_a_request_at_10s(&mut checker, &cast);
        checker.observe(
            at(local_s as f64 - 10.0),
            &Observation::RequestSent {
                process: cast.a(),
                request: 2,
                local: Instant::from_nanos(local_s * S),
            },
        );
        invariants(&checker.verdict(at(30.0)))
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // Anchored at 10 s: due by 20 s on a's clock.
    assert!(renew_at(20).is_empty());
    assert_eq!(renew_at(21), ["local-deadline"]);
    // Without a renew interval in the settings (another protocol, a real
    // run's history), renewals are not judged.
    let mut checker = Checker::new(super::CheckerSettings::new(
        true,
        Duration::from_secs(30),
        Duration::from_secs(27),
    ));
    a_leads_from_a_request_at_10s(&mut checker, &cast);
    checker.observe(
        at(20.0),
        &Observation::RequestSent {
            process: cast.a(),
            request: 2,
            local: Instant::from_nanos(30 * S),
        },
    );
    assert!(invariants(&checker.verdict(at(30.0))).is_empty());
}

/// `a` leads from a request at 10 s on its clock (true time 0), then renews
/// `gaps_ms.len()` times, each renewal `gap` after the previous anchor and
/// applied at once; the verdict's invariants.
fn renewals(settings: CheckerSettings, gaps_ms: &[u64]) -> Vec<String> {
    let cast = Cast::new();
    let mut checker = Checker::new(settings);
    a_leads_from_a_request_at_10s(&mut checker, &cast);
    let mut local_ms = 10_000;
    for (i, gap) in gaps_ms.iter().enumerate() {
        local_ms += gap;
        let request = i as u64 + 2;
        let true_s = (local_ms - 10_000) as f64 / 1000.0;
        checker.observe(
            at(true_s),
            &Observation::RequestSent {
                process: cast.a(),
                request,
                local: Instant::from_nanos(local_ms * 1_000_000),
            },
        );
        checker.observe(
            at(true_s + 0.001),
            &Observation::ResponseHandled {
                process: cast.a(),
                request,
                disposition: fenced::ResponseDisposition::Applied,
                acquired: Some(token(1)),
                renewal: true,
            },
        );
    }
    invariants(&checker.verdict(at(200.0)))
        .into_iter()
        .map(str::to_string)
        .collect()
}

#[test]
fn local_deadline_a_renewal_earlier_than_its_jitter_allows_breaks_it_one_inside_does_not() {
    let settings = |jitter: f64| CheckerSettings {
        renew_interval: Some(Duration::from_secs(10)),
        jitter,
        ..settings()
    };
    // Without jitter a renewal comes exactly renew_interval after its anchor.
    assert!(renewals(settings(0.0), &[10_000]).is_empty());
    assert_eq!(renewals(settings(0.0), &[9_999]), ["local-deadline"]);
    // Jitter 0.2 shortens 10 s to no less than 8 s.
    assert!(renewals(settings(0.2), &[8_000]).is_empty());
    assert_eq!(renewals(settings(0.2), &[7_999]), ["local-deadline"]);
}

#[test]
fn local_deadline_a_configured_jitter_that_never_shortens_breaks_it_one_that_does_not() {
    let settings = |jitter: f64| CheckerSettings {
        renew_interval: Some(Duration::from_secs(10)),
        jitter,
        ..settings()
    };
    // Eight renewals exactly on the nominal interval although jitter 0.1 is
    // configured: the jitter is not applied.
    assert_eq!(renewals(settings(0.1), &[10_000; 8]), ["local-deadline"]);
    // Almost: one of the eight shortened by a millisecond.
    let mut gaps = [10_000; 8];
    gaps[5] = 9_999;
    assert!(renewals(settings(0.1), &gaps).is_empty());
    // Seven are not enough evidence; no jitter, nothing to spread; a jitter
    // that can shorten 10 s by under 1 ms is not judged.
    assert!(renewals(settings(0.1), &[10_000; 7]).is_empty());
    assert!(renewals(settings(0.0), &[10_000; 8]).is_empty());
    assert!(renewals(settings(0.000_05), &[10_000; 8]).is_empty());
}

#[test]
fn local_deadline_a_token_answered_at_the_deadline_breaks_it_one_just_before_or_none_does_not() {
    let cast = Cast::new();
    let answered = |local: Instant, answer: Option<FencingToken>| {
        let mut checker = Checker::new(settings());
        a_leads_from_a_request_at_10s(&mut checker, &cast);
        checker.observe(
            at(30.0),
            &Observation::TokenAnswered {
                process: cast.a(),
                local,
                token: answer,
            },
        );
        invariants(&checker.verdict(at(31.0)))
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // Anchored at 10 s with a validity of 27 s: the deadline is 37 s.
    let deadline = Instant::from_nanos(37 * S);
    assert_eq!(answered(deadline, Some(token(1))), ["local-deadline"]);
    assert!(answered(deadline - Duration::from_nanos(1), Some(token(1))).is_empty());
    assert!(answered(deadline, None).is_empty());
}
