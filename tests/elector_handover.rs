//! How the elector lets go: a stop ends the work then releases, a release
//! overtaken by a request is sent again, a grant reaching a stopped elector
//! is released, abdicating and a deaf follower go quiet, and a deadline
//! step-down releases unless told not to.

mod elector_support;
use elector_support::*;

#[test]
fn stop_ends_the_work_then_releases_the_lease() {
    // Proves that `stop` on a leader emits StopWork(Stopped) then Release with the term's token, goes idle, and never acts on answers still in flight (a late grant is released again).
    let mut h = Harness::new();
    let a = h.add("node-a", ElectorTimings::default(), LATENCY);
    h.start(a);
    h.run_until(secs(10));
    // The renewal sent at 10 s is in flight when the node stops.
    h.stop(a);
    assert_eq!(
        h.nodes[a].outputs_from(secs(10)),
        vec![
            (
                secs(10),
                ElectorOutput::SendLeaseRequest {
                    id: RequestId(2),
                    ttl: Duration::from_secs(30)
                }
            ),
            (
                secs(10),
                ElectorOutput::StopWork {
                    token: token(1),
                    reason: StepDownReason::Stopped
                }
            ),
            (secs(10), ElectorOutput::Release { token: token(1) }),
            (secs(10), ElectorOutput::LeaderObserved { leader: None }),
        ]
    );
    assert_eq!(h.nodes[a].elector.phase(), Phase::Idle);
    assert_eq!(h.nodes[a].elector.next_timeout(), None);
    assert_eq!(h.store.holder(&h.role, secs(10)), None);
    h.run_until(secs(60));
    // The in-flight renewal's answer (a grant the stopped elector will never
    // use) was not acted on; the elector released it once more, and nothing
    // else happened.
    assert_eq!(
        h.nodes[a].dispositions.last(),
        Some(&(
            ms(10_001),
            RequestId(2),
            ResponseDisposition::AlreadyReleased
        ))
    );
    assert_eq!(
        h.nodes[a].outputs_from(ms(10_001)),
        vec![(ms(10_001), ElectorOutput::Release { token: token(1) })]
    );
    assert_eq!(h.nodes[a].log.len(), 8);
    // Stopping an idle elector does nothing.
    h.stop(a);
    assert_eq!(h.nodes[a].log.len(), 8);
}

#[test]
fn an_answer_renewing_a_released_term_is_not_led_on_and_the_release_is_resent() {
    // Proves that when a release is overtaken by a later request (so the store renews the term the release is about to free), the elector does not lead on that token and sends the release again.
    let mut e = leader_at_zero("node-a");
    e.stop(secs(5));
    assert!(drain(&mut e).contains(&ElectorOutput::Release { token: token(1) }));
    e.start(secs(5));
    let id = sent_id(&drain(&mut e));
    // The new request reached the store before the release did: renewed, token 1.
    assert_eq!(
        e.handle_response(id, renewed(1, secs(35)), ms(5_002)),
        ResponseDisposition::AlreadyReleased
    );
    assert_eq!(
        drain(&mut e),
        vec![ElectorOutput::Release { token: token(1) }]
    );
    assert_eq!(e.token_at(ms(5_002)), None);
    assert_eq!(e.phase(), Phase::Follower);
    // Once the release has landed, the store grants a new term, which is led on.
    e.handle_timeout(secs(7));
    let id = sent_id(&drain(&mut e));
    assert_eq!(
        e.handle_response(id, granted(2, secs(37)), ms(7_001)),
        ResponseDisposition::Applied
    );
    assert_eq!(e.token_at(ms(7_001)), Some(token(2)));
}

#[test]
fn a_follower_that_hears_nothing_for_a_validity_goes_quiet() {
    // Proves that a follower whose answers are all lost (it may hold a lease it was never told about) stops asking for rejoin_delay after one validity without any answer, so that lease can lapse.
    let mut e = elector("node-a");
    e.start(secs(0));
    drain(&mut e);
    let mut sends = Vec::new();
    while let Some(at) = e.next_timeout().filter(|t| *t < secs(80)) {
        e.handle_timeout(at);
        for output in drain(&mut e) {
            if let ElectorOutput::SendLeaseRequest { .. } = output {
                sends.push(at);
            }
        }
    }
    // Requests at 2, 4, ... 26 s (the first, at 0 s, went out on start);
    // quiet from 27 s (0 + 27 s of validity) for 34 s; asking again from 61 s.
    let expected: Vec<Instant> = (2..=26)
        .step_by(2)
        .chain((61..=79).step_by(2))
        .map(secs)
        .collect();
    assert_eq!(sends, expected);
}

#[test]
fn without_release_on_deadline_a_deadline_step_down_sends_no_release() {
    // Proves that the release_on_deadline knob switches off the release that normally follows a deadline step-down (and that stop still releases).
    let timings = ElectorTimings {
        release_on_deadline: false,
        rejoin_delay: Some(Duration::ZERO),
        ..ElectorTimings::default()
    };
    let mut e = Elector::new(config("node-a", timings));
    e.start(secs(0));
    let id = sent_id(&drain(&mut e));
    e.handle_response(id, granted(1, secs(30)), ms(1));
    drain(&mut e);
    e.handle_timeout(secs(27));
    let outputs = drain(&mut e);
    assert!(outputs.contains(&ElectorOutput::StopWork {
        token: token(1),
        reason: StepDownReason::LocalDeadline
    }));
    assert!(!outputs
        .iter()
        .any(|o| matches!(o, ElectorOutput::Release { .. })));
    // A zero rejoin delay asks again at once.
    assert!(outputs
        .iter()
        .any(|o| matches!(o, ElectorOutput::SendLeaseRequest { .. })));
}

#[test]
fn a_grant_answering_a_request_in_flight_at_stop_is_released() {
    // Proves that a follower stopped while its acquire request is in flight releases the lease that request is granted, instead of leaving it unused until the TTL.
    let mut e = elector("node-a");
    e.start(secs(0));
    let id = sent_id(&drain(&mut e));
    e.stop(ms(1));
    drain(&mut e);
    assert_eq!(
        e.handle_response(id, granted(1, secs(30)), ms(2)),
        ResponseDisposition::AlreadyReleased
    );
    assert_eq!(
        drain(&mut e),
        vec![ElectorOutput::Release { token: token(1) }]
    );
    assert_eq!(e.token_at(ms(2)), None);
    // A refusal answering it changes nothing.
    e.start(secs(1));
    let id = sent_id(&drain(&mut e));
    e.stop(secs(1));
    drain(&mut e);
    let holder = Lease {
        owner: owner("node-b"),
        token: token(2),
        expires_at: secs(40),
    };
    assert_eq!(
        e.handle_response(id, LeaseResult::Held { holder }, secs(2)),
        ResponseDisposition::Stale
    );
    assert!(drain(&mut e).is_empty());
}

#[test]
fn abdicating_ends_the_term_releases_and_stays_quiet() {
    // Proves that a leader whose work gave up can abdicate: StopWork(Abdicated), Release, then silence for rejoin_delay before contending again.
    let mut e = leader_at_zero("node-a");
    e.abdicate(secs(5));
    assert_eq!(
        drain(&mut e),
        vec![
            ElectorOutput::StopWork {
                token: token(1),
                reason: StepDownReason::Abdicated
            },
            ElectorOutput::Release { token: token(1) },
            ElectorOutput::LeaderObserved { leader: None },
        ]
    );
    assert_eq!(e.phase(), Phase::Follower);
    assert_eq!(e.next_timeout(), Some(secs(5 + 34)));
    // Abdicating when not leading does nothing.
    e.abdicate(secs(6));
    assert!(drain(&mut e).is_empty());
}

#[test]
fn a_grant_answering_a_retired_request_after_stop_is_released_too() {
    // Proves that a grant reaching a stopped elector is released whichever request it answers: the
    // renewal at 10 s is retired by its retry's answer, is handled by the store after the stop's
    // release (a new term, token 2), and would otherwise hold the role unused for a TTL.
    let mut e = leader_at_zero("node-a");
    e.handle_timeout(secs(10));
    let renewal = sent_ids(&mut e)[0];
    e.handle_timeout(secs(12));
    let retry = sent_ids(&mut e)[0];
    assert_eq!(
        e.handle_response(retry, renewed(1, secs(42)), secs(13)),
        ResponseDisposition::Applied
    );
    e.stop(secs(14));
    assert!(drain(&mut e).contains(&ElectorOutput::Release { token: token(1) }));
    assert_eq!(
        e.handle_response(renewal, granted(2, secs(45)), secs(15)),
        ResponseDisposition::AlreadyReleased
    );
    assert_eq!(
        drain(&mut e),
        vec![ElectorOutput::Release { token: token(2) }]
    );
}

#[test]
fn a_stale_grant_released_while_stopped_does_not_hide_a_newer_release() {
    // Proves (a property-test find) that after a stop, a grant of a new term (token 2) released on
    // arrival, then a stale copy of an old grant (token 1) released too, the restarted elector still
    // refuses to lead on a renewal of token 2 — its release may be on its way to the store.
    let mut e = leader_at_zero("node-a");
    e.handle_timeout(secs(10));
    let in_flight = sent_id(&drain(&mut e));
    e.stop(secs(11));
    drain(&mut e);
    assert_eq!(
        e.handle_response(in_flight, granted(2, secs(42)), secs(12)),
        ResponseDisposition::AlreadyReleased
    );
    assert_eq!(
        e.handle_response(RequestId(1), granted(1, secs(30)), secs(12)),
        ResponseDisposition::AlreadyReleased
    );
    drain(&mut e);
    e.start(secs(13));
    let id = sent_id(&drain(&mut e));
    assert_eq!(
        e.handle_response(id, renewed(2, secs(43)), secs(13)),
        ResponseDisposition::AlreadyReleased
    );
    assert_eq!(e.token_at(secs(13)), None);
    assert_eq!(
        drain(&mut e),
        vec![ElectorOutput::Release { token: token(2) }]
    );
}
