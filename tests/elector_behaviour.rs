//! The elector's behaviour, driven against a real [`LeaseStore`](fenced::LeaseStore) through the
//! deterministic harness of `elector_support`: election, renewal, the local
//! deadline, late, stale and slow answers, terms, jitter. Stopping, releasing,
//! abdicating and going quiet are in `elector_handover.rs`.

mod elector_support;
use elector_support::*;

#[test]
fn an_elector_becomes_leader_with_token_one() {
    // Proves that a lone elector's first request wins the lease and starts work with token 1, anchored at the send time.
    let mut h = Harness::new();
    let a = h.add("node-a", ElectorTimings::default(), LATENCY);
    h.start(a);
    h.run_until(secs(1));
    let node = &h.nodes[a];
    assert_eq!(
        node.log,
        vec![
            (
                secs(0),
                ElectorOutput::SendLeaseRequest {
                    id: RequestId(1),
                    ttl: Duration::from_secs(30)
                }
            ),
            (ms(1), ElectorOutput::StartWork { token: token(1) }),
            (
                ms(1),
                ElectorOutput::LeaderObserved {
                    leader: Some(ObservedLeader {
                        owner: owner("node-a"),
                        token: token(1)
                    })
                }
            ),
        ]
    );
    assert_eq!(
        node.elector.phase(),
        Phase::Leader {
            token: token(1),
            anchored_at: secs(0),
            valid_until: secs(27),
        }
    );
    assert!(node.elector.is_leader());
    assert_eq!(node.elector.token(), Some(token(1)));
    assert_eq!(node.elector.next_timeout(), Some(secs(10)));
}

#[test]
fn a_leader_renews_every_renew_interval_and_keeps_its_token() {
    // Proves that a healthy leader sends a renewal every 10 s from the send time of the last success and never changes term.
    let mut h = Harness::new();
    let a = h.add("node-a", ElectorTimings::default(), LATENCY);
    h.start(a);
    h.run_until(ms(100_500));
    let node = &h.nodes[a];
    let expected: Vec<Instant> = (0..=10).map(|k| secs(10 * k)).collect();
    assert_eq!(node.sends(), expected);
    assert_eq!(node.terms(), vec![(token(1), ms(1), None)]);
    assert!(node
        .dispositions
        .iter()
        .all(|(_, _, d)| *d == ResponseDisposition::Applied));
    assert_eq!(
        node.elector.phase(),
        Phase::Leader {
            token: token(1),
            anchored_at: secs(100),
            valid_until: secs(127),
        }
    );
    assert_eq!(h.store.highest_token(&h.role), Some(token(1)));
    assert_eq!(
        h.store.holder(&h.role, secs(100)).map(|l| l.expires_at),
        Some(secs(130))
    );
}

#[test]
fn two_electors_on_one_store_never_run_work_at_the_same_time() {
    // Proves that terms of two electors sharing a store never overlap, across a deadline step-down and a stop-and-release handover.
    let mut h = Harness::new();
    let a = h.add("node-a", ElectorTimings::default(), LATENCY);
    let b = h.add(
        "node-b",
        ElectorTimings::default(),
        Duration::from_millis(3),
    );
    // `a` loses every answer to requests sent in [40 s, 120 s): it must step down and `b` take over.
    h.nodes[a].lose_responses.push((secs(40), secs(120)));
    h.start(a);
    h.run_until(secs(1));
    h.start(b);
    h.run_until(secs(200));
    // `b` stops cleanly and releases; `a` takes over again.
    h.stop(b);
    h.run_until(secs(300));

    let terms_a = h.nodes[a].terms();
    let terms_b = h.nodes[b].terms();
    assert!(terms_a.len() >= 2, "{terms_a:?}");
    assert_eq!(terms_b.len(), 1, "{terms_b:?}");
    let end = |t: Option<Instant>| t.unwrap_or(Instant::MAX);
    for &(ta, sa, ea) in &terms_a {
        for &(tb, sb, eb) in &terms_b {
            assert!(
                end(ea) <= sb || end(eb) <= sa,
                "term {ta} of a [{sa}, {ea:?}) overlaps term {tb} of b [{sb}, {eb:?})"
            );
            assert_ne!(ta, tb, "two electors with one token");
        }
    }
    // Tokens across both nodes, in start order, strictly increase.
    let mut all: Vec<(Instant, FencingToken)> = terms_a
        .iter()
        .chain(&terms_b)
        .map(|&(token, start, _)| (start, token))
        .collect();
    all.sort();
    assert!(all.windows(2).all(|w| w[0].1 < w[1].1), "{all:?}");
    assert_eq!(
        all.iter().map(|(_, t)| t.get()).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(h.nodes[a].elector.token_at(secs(300)), Some(token(3)));
}

#[test]
fn a_leader_whose_answers_are_lost_steps_down_exactly_at_its_local_deadline() {
    // Proves that with every answer lost the leader stops at last successful send + ttl - margin, releases, and then stays quiet for the rejoin delay.
    let mut h = Harness::new();
    let a = h.add("node-a", ElectorTimings::default(), LATENCY);
    // Answers to requests sent at 0 s and 10 s arrive; from 15 s on, none does.
    h.nodes[a].lose_responses.push((secs(15), Instant::MAX));
    h.start(a);
    h.run_until(secs(37) - Duration::from_nanos(1));
    assert_eq!(
        h.nodes[a]
            .elector
            .token_at(secs(37) - Duration::from_nanos(1)),
        Some(token(1))
    );
    assert!(
        h.nodes[a].terms()[0].2.is_none(),
        "still leading just before"
    );
    h.run_until(secs(100));

    let node = &h.nodes[a];
    // The last successful request was sent at 10 s: deadline 10 + 30 - 3 = 37 s.
    assert_eq!(
        node.outputs_from(secs(37)),
        vec![
            (
                secs(37),
                ElectorOutput::StopWork {
                    token: token(1),
                    reason: StepDownReason::LocalDeadline
                }
            ),
            (secs(37), ElectorOutput::Release { token: token(1) }),
            (secs(37), ElectorOutput::LeaderObserved { leader: None }),
            // Quiet for the rejoin delay (TTL + 2 retries = 34 s), then contending again.
            (
                secs(71),
                ElectorOutput::SendLeaseRequest {
                    id: RequestId(12),
                    ttl: Duration::from_secs(30)
                }
            ),
            (
                secs(73),
                ElectorOutput::SendLeaseRequest {
                    id: RequestId(13),
                    ttl: Duration::from_secs(30)
                }
            ),
        ]
        .into_iter()
        // Still no answer 27 s (one validity) after the first unanswered
        // request at 71 s: a deaf follower goes quiet again at 98 s.
        .chain((75..=97).step_by(2).enumerate().map(|(i, s)| {
            (
                secs(s),
                ElectorOutput::SendLeaseRequest {
                    id: RequestId(14 + i as u64),
                    ttl: Duration::from_secs(30),
                },
            )
        }))
        .collect::<Vec<_>>()
    );
    // Renewal at 20 s, then a retry every 2 s until the deadline.
    let before: Vec<Instant> = node.sends().into_iter().filter(|t| *t < secs(37)).collect();
    let mut expected = vec![secs(0), secs(10)];
    expected.extend((20..=36).step_by(2).map(secs));
    assert_eq!(before, expected);
    assert_eq!(node.elector.token_at(secs(37)), None);
    // The store heard the release, so the request at 67 s started a new term
    // (token 2) at the store, whose answer was lost like the others.
    assert_eq!(h.store.highest_token(&h.role), Some(token(2)));
}

#[test]
fn a_stale_answer_is_ignored_and_never_extends_leadership() {
    // Proves that an answer older than one already applied, or to an unknown id, is `Stale`: no outputs, no new term, no later deadline.
    // A follower: requests 1 and 2 are outstanding; 2's answer is applied, so 1's is older news.
    let mut e = elector("node-a");
    e.start(secs(0));
    let first = sent_id(&drain(&mut e));
    e.handle_timeout(secs(2));
    let second = sent_id(&drain(&mut e));
    assert_ne!(first, second);
    assert_eq!(
        e.handle_response(second, granted(1, secs(32)), secs(3)),
        ResponseDisposition::Applied
    );
    drain(&mut e);
    assert_eq!(
        e.handle_response(first, granted(2, secs(30)), secs(3)),
        ResponseDisposition::Stale
    );
    assert!(drain(&mut e).is_empty());
    assert_eq!(e.token(), Some(token(1)));

    // A leader: the renewal sent at 10 s and its retry at 12 s; the retry's answer lands first,
    // so the renewal's later answer cannot move the deadline back (or anywhere).
    let mut e = leader_at_zero("node-a");
    e.handle_timeout(secs(10));
    let renewal = sent_id(&drain(&mut e));
    e.handle_timeout(secs(12));
    let retry = sent_id(&drain(&mut e));
    assert_eq!(
        e.handle_response(retry, renewed(1, secs(42)), secs(13)),
        ResponseDisposition::Applied
    );
    assert_eq!(
        e.handle_response(renewal, renewed(1, secs(40)), secs(13)),
        ResponseDisposition::Stale
    );
    assert_eq!(
        e.handle_response(RequestId(999), renewed(1, secs(43)), secs(13)),
        ResponseDisposition::Stale
    );
    assert!(drain(&mut e).is_empty());
    assert_eq!(
        e.phase(),
        Phase::Leader {
            token: token(1),
            anchored_at: secs(12),
            valid_until: secs(39),
        }
    );
    // An idle elector acts on no answer: a refusal is stale, and a grant —
    // a lease it does not want — is released, never led on.
    let mut idle = elector("node-b");
    let holder = Lease {
        owner: owner("node-c"),
        token: token(4),
        expires_at: secs(30),
    };
    assert_eq!(
        idle.handle_response(RequestId(1), LeaseResult::Held { holder }, secs(0)),
        ResponseDisposition::Stale
    );
    assert!(drain(&mut idle).is_empty());
    assert_eq!(
        idle.handle_response(RequestId(2), granted(1, secs(30)), secs(0)),
        ResponseDisposition::AlreadyReleased
    );
    assert_eq!(
        drain(&mut idle),
        vec![ElectorOutput::Release { token: token(1) }]
    );
    assert_eq!(idle.token_at(secs(0)), None);
}

#[test]
fn an_answer_slower_than_retry_interval_still_elects_and_renews() {
    // Proves the slow-store rule: a request re-sent after `retry_interval` stays outstanding, and its
    // late answer is applied, anchored at its own send time (issue: a round trip longer than
    // `retry_interval` used to leave the cluster leaderless forever).
    let mut e = elector("node-a");
    e.start(secs(0));
    let first = sent_id(&drain(&mut e));
    e.handle_timeout(secs(2));
    let second = sent_id(&drain(&mut e));
    // Request 1's answer takes 2.2 s.
    assert_eq!(
        e.handle_response(first, granted(1, secs(30)), ms(2_200)),
        ResponseDisposition::Applied
    );
    let outputs = drain(&mut e);
    assert!(outputs.contains(&ElectorOutput::StartWork { token: token(1) }));
    assert_eq!(
        e.phase(),
        Phase::Leader {
            token: token(1),
            anchored_at: secs(0),
            valid_until: secs(27),
        }
    );
    // Request 2 is still outstanding: its renewal (sent at 2 s) moves the anchor forward.
    assert_eq!(
        e.handle_response(second, renewed(1, secs(32)), ms(4_200)),
        ResponseDisposition::Applied
    );
    assert_eq!(e.token_at(ms(28_999)), Some(token(1)));
    assert_eq!(e.token_at(secs(29)), None);
    // A leader whose every renewal takes 2.2 s keeps leading: renew at 12 s, retry at 14 s,
    // the renewal's answer at 14.2 s anchors at 12 s.
    e.handle_timeout(secs(12));
    let renewal = sent_id(&drain(&mut e));
    e.handle_timeout(secs(14));
    let _retry = sent_id(&drain(&mut e));
    assert_eq!(
        e.handle_response(renewal, renewed(1, secs(42)), ms(14_200)),
        ResponseDisposition::Applied
    );
    assert_eq!(e.token_at(ms(38_999)), Some(token(1)));
}

#[test]
fn a_slow_answer_past_its_own_validity_is_still_too_late() {
    // Proves that the slow-store rule keeps the deadline rule: an outstanding request's answer that
    // arrives once `send + lease_ttl - safety_margin` has passed starts no term.
    let mut e = elector("node-a");
    e.start(secs(0));
    let first = sent_id(&drain(&mut e));
    e.handle_timeout(secs(2));
    drain(&mut e);
    assert_eq!(
        e.handle_response(first, granted(1, secs(30)), secs(27)),
        ResponseDisposition::TooLate
    );
    assert_eq!(e.token(), None);
}

#[test]
fn outstanding_requests_are_bounded() {
    // Proves that an elector remembers at most MAX_OUTSTANDING requests: the answer to a request
    // more than that many sends ago is stale, however fresh its validity would be.
    let timings = ElectorTimings {
        lease_ttl: Duration::from_secs(3600),
        renew_interval: Duration::from_secs(10),
        retry_interval: Duration::from_millis(10),
        ..ElectorTimings::default()
    };
    let mut e = Elector::new(config("node-a", timings));
    e.start(secs(0));
    let first = sent_id(&drain(&mut e));
    let mut ids = vec![first];
    for i in 1..=fenced::MAX_OUTSTANDING as u64 {
        e.handle_timeout(ms(10 * i));
        ids.push(sent_id(&drain(&mut e)));
    }
    assert_eq!(
        e.handle_response(first, granted(1, secs(3600)), secs(1)),
        ResponseDisposition::Stale
    );
    assert_eq!(
        e.handle_response(ids[1], granted(1, secs(3600)), secs(1)),
        ResponseDisposition::Applied
    );
}

#[test]
fn an_answer_arriving_after_its_validity_is_too_late() {
    // Proves that a grant which would only be valid until before it arrived is `TooLate` and starts no term, on both sides of the boundary.
    // The driver was stalled: no timeout was delivered while the answer was travelling.
    let mut e = elector("node-a");
    e.start(secs(0));
    let id = sent_id(&drain(&mut e));
    // Valid until 0 + 27 s: arriving at 27 s is too late.
    assert_eq!(
        e.handle_response(id, granted(1, secs(30)), secs(27)),
        ResponseDisposition::TooLate
    );
    let outputs = drain(&mut e);
    assert!(
        !outputs
            .iter()
            .any(|o| matches!(o, ElectorOutput::StartWork { .. })),
        "{outputs:?}"
    );
    assert_eq!(e.phase(), Phase::Follower);
    assert_eq!(e.token_at(secs(27)), None);
    // The overdue next request goes out at once.
    assert_eq!(sent_id(&outputs), RequestId(2));

    // One nanosecond earlier it is still good, for the 1 ns it has left.
    let mut e = elector("node-a");
    e.start(secs(0));
    let id = sent_id(&drain(&mut e));
    let just_before = secs(27) - Duration::from_nanos(1);
    assert_eq!(
        e.handle_response(id, granted(1, secs(30)), just_before),
        ResponseDisposition::Applied
    );
    assert_eq!(e.token_at(just_before), Some(token(1)));
    assert_eq!(e.token_at(secs(27)), None);
    // The renewal due at 10 s is overdue and goes out at once; the deadline is the next timer.
    let outputs = drain(&mut e);
    assert_eq!(sent_id(&outputs), RequestId(2));
    assert_eq!(outputs[0], ElectorOutput::StartWork { token: token(1) });
    assert_eq!(e.next_timeout(), Some(secs(27)));
}

#[test]
fn an_answer_with_another_token_ends_the_old_term_before_the_new_one_starts() {
    // Proves that a leader told of a different token emits StopWork(old, NewTerm) before StartWork(new), so two terms are never live.
    let mut e = leader_at_zero("node-a");
    e.handle_timeout(secs(10));
    let id = sent_id(&drain(&mut e));
    assert_eq!(
        e.handle_response(id, granted(2, secs(40)), ms(10_001)),
        ResponseDisposition::Applied
    );
    assert_eq!(
        drain(&mut e),
        vec![
            ElectorOutput::StopWork {
                token: token(1),
                reason: StepDownReason::NewTerm { token: token(2) }
            },
            ElectorOutput::StartWork { token: token(2) },
            ElectorOutput::LeaderObserved {
                leader: Some(ObservedLeader {
                    owner: owner("node-a"),
                    token: token(2)
                })
            },
        ]
    );
    assert_eq!(
        e.phase(),
        Phase::Leader {
            token: token(2),
            anchored_at: secs(10),
            valid_until: secs(37),
        }
    );
}

#[test]
fn a_leader_refused_by_the_store_steps_down_as_superseded() {
    // Proves that a renewal answered with `Held` ends the term with the new holder named, and the elector follows it.
    let mut e = leader_at_zero("node-a");
    e.handle_timeout(secs(10));
    let id = sent_id(&drain(&mut e));
    let holder = Lease {
        owner: owner("node-b"),
        token: token(2),
        expires_at: secs(40),
    };
    assert_eq!(
        e.handle_response(id, LeaseResult::Held { holder }, ms(10_001)),
        ResponseDisposition::Applied
    );
    assert_eq!(
        drain(&mut e),
        vec![
            ElectorOutput::StopWork {
                token: token(1),
                reason: StepDownReason::Superseded {
                    holder: owner("node-b"),
                    token: token(2)
                }
            },
            ElectorOutput::LeaderObserved {
                leader: Some(ObservedLeader {
                    owner: owner("node-b"),
                    token: token(2)
                })
            },
        ]
    );
    assert_eq!(e.phase(), Phase::Follower);
    // No release: the lease is not ours. The next attempt is a normal retry.
    assert_eq!(e.next_timeout(), Some(secs(12)));
}

#[test]
fn after_losing_leadership_an_elector_keeps_contending_and_leads_again() {
    // Proves that a deposed leader is not one-shot: it keeps asking and wins a later term with a higher token.
    let mut h = Harness::new();
    let a = h.add("node-a", ElectorTimings::default(), LATENCY);
    let b = h.add("node-b", ElectorTimings::default(), LATENCY);
    h.nodes[a].lose_responses.push((secs(15), secs(60)));
    h.start(a);
    h.run_until(secs(1));
    h.start(b);
    // `a` steps down at 37 s and `b` takes over; then `b` is cut off for good.
    h.run_until(secs(50));
    assert_eq!(h.nodes[b].elector.token_at(secs(50)), Some(token(2)));
    h.nodes[b].lose_responses.push((secs(50), Instant::MAX));
    h.run_until(secs(200));
    let terms: Vec<(u64, Option<StepDownReason>)> = h.nodes[a]
        .log
        .iter()
        .filter_map(|(_, o)| match o {
            ElectorOutput::StartWork { token } => Some((token.get(), None)),
            ElectorOutput::StopWork { token, reason } => Some((token.get(), Some(reason.clone()))),
            _ => None,
        })
        .collect();
    assert_eq!(
        terms,
        vec![
            (1, None),
            (1, Some(StepDownReason::LocalDeadline)),
            (3, None)
        ]
    );
    assert_eq!(h.nodes[a].elector.token_at(secs(200)), Some(token(3)));
    assert_eq!(h.nodes[b].elector.token_at(secs(200)), None);
}

#[test]
fn followers_observe_the_leader_named_by_the_store() {
    // Proves that a follower refused by the store emits LeaderObserved with the holder once, not on every retry.
    let mut h = Harness::new();
    let a = h.add("node-a", ElectorTimings::default(), LATENCY);
    let b = h.add("node-b", ElectorTimings::default(), LATENCY);
    h.start(a);
    h.run_until(secs(1));
    h.start(b);
    h.run_until(secs(30));
    let observed: Vec<(Instant, ElectorOutput)> = h.nodes[b]
        .log
        .iter()
        .filter(|(_, o)| matches!(o, ElectorOutput::LeaderObserved { .. }))
        .cloned()
        .collect();
    assert_eq!(
        observed,
        vec![(
            ms(1_001),
            ElectorOutput::LeaderObserved {
                leader: Some(ObservedLeader {
                    owner: owner("node-a"),
                    token: token(1)
                })
            }
        )]
    );
    assert_eq!(
        h.nodes[b].elector.observed_leader(),
        Some(&ObservedLeader {
            owner: owner("node-a"),
            token: token(1)
        })
    );
    assert_eq!(h.nodes[b].elector.phase(), Phase::Follower);
    // A follower retries every 2 s.
    let expected: Vec<Instant> = (1..30).step_by(2).map(secs).collect();
    assert_eq!(h.nodes[b].sends(), expected);
}

fn jittered_sends(seed: u64) -> (Vec<Instant>, Vec<Instant>) {
    let timings = ElectorTimings {
        jitter: Some(Jitter {
            fraction: 0.5,
            seed,
        }),
        ..ElectorTimings::default()
    };
    let mut h = Harness::new();
    let a = h.add("node-a", timings, LATENCY);
    let b = h.add(
        "node-b",
        ElectorTimings {
            jitter: Some(Jitter {
                fraction: 0.5,
                seed: seed.wrapping_add(1),
            }),
            ..timings
        },
        LATENCY,
    );
    h.start(a);
    h.start(b);
    h.run_until(secs(300));
    (h.nodes[a].sends(), h.nodes[b].sends())
}

#[test]
fn jitter_with_one_seed_repeats_and_with_another_differs() {
    // Proves that jitter comes only from the caller's seed: the same seed gives the same request schedule, another seed a different one.
    let (leader_1, follower_1) = jittered_sends(7);
    let (leader_2, follower_2) = jittered_sends(7);
    assert_eq!(leader_1, leader_2);
    assert_eq!(follower_1, follower_2);
    let (leader_3, follower_3) = jittered_sends(8);
    assert_ne!(leader_1, leader_3);
    assert_ne!(follower_1, follower_3);
    // Jitter only shortens: a leader renews within (5 s, 10 s], a follower within (1 s, 2 s].
    for window in leader_1.windows(2) {
        let gap = window[1] - window[0];
        assert!(
            gap > Duration::from_secs(5) && gap <= Duration::from_secs(10),
            "{gap:?}"
        );
    }
    for window in follower_1.windows(2) {
        let gap = window[1] - window[0];
        assert!(
            gap > Duration::from_secs(1) && gap <= Duration::from_secs(2),
            "{gap:?}"
        );
    }
    assert!(leader_1.len() >= 30 && follower_1.len() >= 150);
}

#[test]
fn time_passed_backwards_counts_as_the_latest_seen() {
    // Proves that an input dated before one already seen is handled at the latest time, so it can neither revive a term nor replay a timer.
    let mut e = elector("node-a");
    e.start(secs(10));
    let id = sent_id(&drain(&mut e));
    // An answer dated 0 s, before the request was sent, is applied at 10 s and anchored at the send time.
    assert_eq!(
        e.handle_response(id, granted(1, secs(40)), secs(0)),
        ResponseDisposition::Applied
    );
    drain(&mut e);
    assert_eq!(
        e.phase(),
        Phase::Leader {
            token: token(1),
            anchored_at: secs(10),
            valid_until: secs(37),
        }
    );
    // A timeout dated in the past sends nothing: the renewal is due at 20 s.
    e.handle_timeout(secs(5));
    assert!(drain(&mut e).is_empty());
    // The renewal goes out at 20 s; the node then sees 40 s and steps down.
    e.handle_timeout(secs(20));
    let renewal = sent_id(&drain(&mut e));
    e.handle_timeout(secs(40));
    assert!(matches!(
        drain(&mut e).first(),
        Some(ElectorOutput::StopWork {
            reason: StepDownReason::LocalDeadline,
            ..
        })
    ));
    // The renewal's answer, dated 21 s (inside the old validity), is judged at 40 s: it cannot revive the term.
    assert_eq!(
        e.handle_response(renewal, renewed(1, secs(51)), secs(21)),
        ResponseDisposition::Stale
    );
    assert_eq!(e.phase(), Phase::Follower);
    // Nor can a timeout dated back inside the old term make it send early: the rejoin delay counts from 40 s.
    e.handle_timeout(secs(21));
    assert!(drain(&mut e).is_empty());
    assert_eq!(e.next_timeout(), Some(secs(74)));
}
