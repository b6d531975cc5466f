//! The session's contract, input by input (what `hosts/session.rs`'s module
//! docs promise of `fenced::postgres`'s connection).

use super::*;

const T: SessionTimings = SessionTimings {
    connect: Duration::from_secs(5),
    query: Duration::from_secs(6),
};

fn at(ms: u64) -> Instant {
    Instant::from_nanos(ms * 1_000_000)
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// Runs `f` on a fresh output buffer and returns what it asked for.
fn run(f: impl FnOnce(&mut Outputs<u32>)) -> Vec<SessionOutput<u32>> {
    let mut out = Outputs::new();
    f(&mut out);
    out.into_vec()
}

/// Answers every open step of connection `conn` at `now`, from epoch 1.
fn open(s: &mut Session<u32>, conn: u32, now: Instant) -> Vec<SessionOutput<u32>> {
    let mut all = Vec::new();
    for step in 1..=OPEN_STEPS {
        all.extend(run(|o| s.opened(conn, step, 1, now, o)));
    }
    all
}

fn sends(outputs: &[SessionOutput<u32>]) -> Vec<(u32, u32)> {
    outputs
        .iter()
        .filter_map(|o| match *o {
            SessionOutput::Send { payload, tag } => Some((payload, tag.call)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_first_call_opens_in_five_round_trips_and_the_waiting_calls_go_out_in_order() {
    let mut s = Session::new();
    let first = run(|o| s.call(10, CallBounds::UNBOUNDED, at(0), o));
    assert_eq!(first, vec![SessionOutput::SendOpen { conn: 1, step: 1 }]);
    // A second call waits for the same open: nothing goes out.
    assert!(run(|o| s.call(11, CallBounds::UNBOUNDED, at(1), o)).is_empty());
    let mut steps = Vec::new();
    for step in 1..OPEN_STEPS {
        steps.extend(run(|o| s.opened(1, step, 1, at(2), o)));
    }
    let asked: Vec<u8> = steps
        .iter()
        .filter_map(|o| match *o {
            SessionOutput::SendOpen { step, .. } => Some(step),
            _ => None,
        })
        .collect();
    assert_eq!(asked, vec![2, 3, 4, 5]);
    let last = run(|o| s.opened(1, OPEN_STEPS, 7, at(3), o));
    assert_eq!(last[0], SessionOutput::Opened);
    assert_eq!(sends(&last), vec![(10, 1), (11, 2)]);
    // Tagged with the server's epoch.
    assert!(last
        .iter()
        .all(|o| !matches!(o, SessionOutput::Send { tag, .. } if tag.epoch != 7)));
    // Later calls go out at once.
    let later = run(|o| s.call(12, CallBounds::UNBOUNDED, at(4), o));
    assert_eq!(sends(&later), vec![(12, 3)]);
}

#[test]
fn answers_to_other_steps_or_connections_are_ignored() {
    let mut s = Session::new();
    run(|o| s.call(1, CallBounds::UNBOUNDED, at(0), o));
    assert!(
        run(|o| s.opened(1, 2, 1, at(1), o)).is_empty(),
        "step 1 first"
    );
    assert!(
        run(|o| s.opened(9, 1, 1, at(1), o)).is_empty(),
        "another conn"
    );
    assert_eq!(
        run(|o| s.opened(1, 1, 1, at(1), o)),
        vec![SessionOutput::SendOpen { conn: 1, step: 2 }]
    );
}

#[test]
fn a_connect_past_its_bound_fails_the_opener_and_the_next_call_opens_anew() {
    let mut s = Session::new();
    run(|o| s.call(1, CallBounds::UNBOUNDED, at(0), o));
    run(|o| s.call(2, CallBounds::UNBOUNDED, at(100), o));
    // Step 1 answered; step 2 never is: the connect phase (5 s) runs out.
    run(|o| s.opened(1, 1, 1, at(50), o));
    assert_eq!(s.next_timeout(&T), Some(at(5_000)));
    assert!(run(|o| s.handle_timeout(at(4_999), &T, o)).is_empty());
    let out = run(|o| s.handle_timeout(at(5_000), &T, o));
    assert_eq!(
        out,
        vec![
            SessionOutput::Closed {
                why: SessionEnd::OpenTimedOut
            },
            SessionOutput::Failed {
                payload: 1,
                why: CallFailure::OpenTimeout
            },
            SessionOutput::SendOpen { conn: 2, step: 1 },
        ]
    );
}

/// What a refused connect outputs: the session closes, and the call
/// `payload` that opened it fails, retryably.
fn refused_opener(payload: u32) -> Vec<SessionOutput<u32>> {
    vec![
        SessionOutput::Closed {
            why: SessionEnd::Refused,
        },
        SessionOutput::Failed {
            payload,
            why: CallFailure::Refused,
        },
    ]
}

#[test]
fn a_refused_connect_fails_the_opener_at_once_and_the_next_call_opens_anew() {
    let mut s = Session::new();
    run(|o| s.call(1, CallBounds::UNBOUNDED, at(0), o));
    run(|o| s.call(2, CallBounds::UNBOUNDED, at(1), o));
    // The SYN's reset is back after a round trip: no waiting for the 5 s
    // connect bound. A refusal of another connection changes nothing.
    assert!(run(|o| s.refused(7, at(4), o)).is_empty());
    let out = run(|o| s.refused(1, at(4), o));
    let mut refused_then_reopened = refused_opener(1);
    refused_then_reopened.push(SessionOutput::SendOpen { conn: 2, step: 1 });
    assert_eq!(out, refused_then_reopened);
    assert!(CallFailure::Refused.retryable());
    // The second connection is refused too: its call fails, and nothing is
    // left to open (the bounds are the waiting calls' own, none here).
    let out = run(|o| s.refused(2, at(8), o));
    assert_eq!(out, refused_opener(2));
    assert_eq!(s.next_timeout(&T), None);
    // Once open, a late refusal of a connection given up is ignored.
    run(|o| s.call(3, CallBounds::UNBOUNDED, at(10), o));
    open(&mut s, 3, at(12));
    assert!(run(|o| s.refused(2, at(13), o)).is_empty());
    assert!(s.is_connected());
}

#[test]
fn setup_and_prepare_are_bounded_by_the_query_bound_from_their_own_start() {
    let mut s = Session::new();
    run(|o| s.call(1, CallBounds::UNBOUNDED, at(0), o));
    run(|o| s.opened(1, 1, 1, at(1_000), o));
    run(|o| s.opened(1, 2, 1, at(4_000), o));
    // Step 3 began at 4 s: its bound is the query bound from then.
    assert_eq!(s.next_timeout(&T), Some(at(10_000)));
    run(|o| s.opened(1, 3, 1, at(9_000), o));
    // Steps 4-5 share one bound from step 4's start.
    run(|o| s.opened(1, 4, 1, at(12_000), o));
    assert_eq!(s.next_timeout(&T), Some(at(15_000)));
    let out = run(|o| s.handle_timeout(at(15_000), &T, o));
    assert!(out.contains(&SessionOutput::Failed {
        payload: 1,
        why: CallFailure::OpenTimeout
    }));
}

#[test]
fn a_call_past_the_query_bound_fails_and_retires_the_session_but_others_on_it_go_on() {
    let mut s = Session::new();
    run(|o| s.call(1, CallBounds::UNBOUNDED, at(0), o));
    open(&mut s, 1, at(10));
    run(|o| s.call(2, CallBounds::UNBOUNDED, at(3_000), o));
    // Call 1 (sent at 10 ms) times out at 6.01 s and retires the session.
    let out = run(|o| s.handle_timeout(at(6_010), &T, o));
    assert_eq!(
        out,
        vec![
            SessionOutput::Failed {
                payload: 1,
                why: CallFailure::QueryTimeout
            },
            SessionOutput::Closed {
                why: SessionEnd::Retired
            },
        ]
    );
    // Call 2, on the retired session, is still answered.
    assert_eq!(s.answered(2), Answered::ToCaller(2));
    // A new call opens a new session.
    let next = run(|o| s.call(3, CallBounds::UNBOUNDED, at(7_000), o));
    assert_eq!(next, vec![SessionOutput::SendOpen { conn: 2, step: 1 }]);
}

#[test]
fn a_late_answer_after_the_callers_bound_is_dropped() {
    let mut s = Session::new();
    run(|o| s.call(1, CallBounds::awaited_late(ms(2_000)), at(0), o));
    open(&mut s, 1, at(10));
    let out = run(|o| s.handle_timeout(at(2_000), &T, o));
    assert_eq!(
        out,
        vec![SessionOutput::Failed {
            payload: 1,
            why: CallFailure::CallerBound
        }]
    );
    // Awaited one bound more: the answer comes, and is dropped.
    assert_eq!(s.answered(1), Answered::Late);
    assert_eq!(s.answered(1), Answered::Unknown);
}

#[test]
fn a_call_dropped_while_it_opens_abandons_the_open() {
    let mut s = Session::new();
    run(|o| s.call(1, CallBounds::dropped_at(ms(1_000)), at(0), o));
    run(|o| s.call(2, CallBounds::UNBOUNDED, at(500), o));
    let out = run(|o| s.handle_timeout(at(1_000), &T, o));
    assert_eq!(
        out,
        vec![
            SessionOutput::Failed {
                payload: 1,
                why: CallFailure::CallerBound
            },
            SessionOutput::Closed {
                why: SessionEnd::Abandoned
            },
            SessionOutput::SendOpen { conn: 2, step: 1 },
        ]
    );
}

#[test]
fn a_reset_fails_the_calls_on_the_wire_and_an_open_under_way() {
    let mut s = Session::new();
    run(|o| s.call(1, CallBounds::UNBOUNDED, at(0), o));
    open(&mut s, 1, at(10));
    assert!(s.resettable());
    let out = run(|o| s.reset(1, at(20), o));
    assert_eq!(
        out,
        vec![
            SessionOutput::Closed {
                why: SessionEnd::Reset
            },
            SessionOutput::Failed {
                payload: 1,
                why: CallFailure::Reset
            },
        ]
    );
    assert!(!s.resettable());
    // Reset while opening: the opener fails, the next waiter reopens.
    run(|o| s.call(2, CallBounds::UNBOUNDED, at(30), o));
    run(|o| s.call(3, CallBounds::UNBOUNDED, at(31), o));
    let out = run(|o| s.reset(1, at(40), o));
    assert_eq!(
        out,
        vec![
            SessionOutput::Closed {
                why: SessionEnd::Reset
            },
            SessionOutput::Failed {
                payload: 2,
                why: CallFailure::Reset
            },
            SessionOutput::SendOpen { conn: 3, step: 1 },
        ]
    );
}

#[test]
fn a_reset_spares_a_session_of_a_later_epoch() {
    let mut s = Session::new();
    run(|o| s.call(1, CallBounds::UNBOUNDED, at(0), o));
    for step in 1..=OPEN_STEPS {
        run(|o| s.opened(1, step, 2, at(10), o));
    }
    assert!(run(|o| s.reset(1, at(20), o)).is_empty());
    assert_eq!(s.answered(1), Answered::ToCaller(1));
}

#[test]
fn the_next_timeout_is_the_earliest_bound_and_none_when_idle() {
    let mut s: Session<u32> = Session::new();
    assert_eq!(s.next_timeout(&T), None);
    run(|o| s.call(1, CallBounds::awaited_late(ms(3_000)), at(0), o));
    // Opening: the connect bound (5 s) is later than the caller's (3 s).
    assert_eq!(s.next_timeout(&T), Some(at(3_000)));
    open(&mut s, 1, at(100));
    run(|o| s.handle_timeout(at(3_000), &T, o));
    // Told at 3 s; the query bound (6.1 s) comes before the abandon (6 s)?
    // No: abandoned at 2 x 3 s = 6 s.
    assert_eq!(s.next_timeout(&T), Some(at(6_000)));
    assert_eq!(s.answered(1), Answered::Late);
    assert_eq!(s.next_timeout(&T), None);
}

#[test]
fn a_fenced_event_still_fits_one_cache_line() {
    // The queue's slots are one line (64 bytes) each: a message that
    // outgrew it (sessions first tagged every answer twice) made every slot
    // two lines and a 10 000-node fleet's hour twice as slow. The answers
    // carry one `Reply` word, the writes name their writer by slot and life.
    use crate::hosts::messages::{Message, Timer};
    assert!(std::mem::size_of::<crate::engine::Event<Message, Timer>>() <= 64);
    assert!(std::mem::size_of::<Session<crate::hosts::node::LeaseCall>>() <= 128);
}

/// `next_timeout` is a plain loop (for speed); it must give what the
/// iterator it replaced gave — the minimum over the open's phase bound and
/// each call's caller (while it waits), abandon and query bounds — through
/// random inputs of every kind.
#[test]
fn the_next_timeout_loop_equals_the_iterator_it_replaced() {
    use crate::rng::{uniform_inclusive, SeedDeriver};
    fn reference(s: &Session<u32>, t: &SessionTimings) -> Option<Instant> {
        let get = |d: Deadline| (d != Deadline::NEVER).then(|| Instant::from_nanos(d.0));
        let calls = s.calls.iter().flat_map(|c| {
            let caller = get(c.caller_at).filter(|_| c.caller_waits);
            [caller, get(c.abandon_at), c.sent.map(|s| s.at + t.query)]
        });
        let open = match s.state {
            State::Opening {
                step, phase_began, ..
            } => Some(phase_began + phase_bound(step, t)),
            _ => None,
        };
        calls.chain([open]).flatten().min()
    }
    let mut rng = SeedDeriver::new(7, "session-next-timeout").rng();
    let mut s = Session::new();
    let mut now = 0;
    let mut out = Outputs::new();
    for _ in 0..50_000 {
        now += uniform_inclusive(&mut rng, 0, 3_000);
        let bound = |rng: &mut _| ms(uniform_inclusive(rng, 1, 8_000));
        match uniform_inclusive(&mut rng, 0, 5) {
            0 => {
                let bounds = match uniform_inclusive(&mut rng, 0, 2) {
                    0 => CallBounds::UNBOUNDED,
                    1 => CallBounds::awaited_late(bound(&mut rng)),
                    _ => CallBounds::dropped_at(bound(&mut rng)),
                };
                s.call(7, bounds, at(now), &mut out);
            }
            1 => {
                let step = uniform_inclusive(&mut rng, 1, u64::from(OPEN_STEPS)) as u8;
                let conn = s.next_conn.saturating_sub(1);
                s.opened(conn, step, 1, at(now), &mut out);
            }
            2 => {
                let call = s
                    .next_call
                    .saturating_sub(uniform_inclusive(&mut rng, 1, 3) as u32);
                s.answered(call);
            }
            3 if uniform_inclusive(&mut rng, 0, 20) == 0 => s.reset(1, at(now), &mut out),
            _ => s.handle_timeout(at(now), &T, &mut out),
        }
        out.clear();
        assert_eq!(s.next_timeout(&T), reference(&s, &T));
    }
}
