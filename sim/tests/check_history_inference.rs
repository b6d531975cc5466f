//! What `check-history` infers a store did on a request whose answer was
//! lost: here a renewal (the grant's twin is in `check_history.rs`).

mod history_builder;

use fenced_sim::history::Judged;
use history_builder::{assert_clean_with_warning, invariants, judge, History};

/// node-a leads with token 1 from 10 ms (its lease until 3.011 s on the
/// store's clock, a 3 s TTL). With `unanswered_at`, its renewal request 2
/// leaves then and fails unanswered 600 ms later. Its request 3 leaves at
/// `renew_at` and is answered "renewed, token 1" 1 ms later. With
/// `b_grant_at`, node-b is granted token 2 then (after node-a's lapse).
fn renewal_after_an_unanswered_one(
    unanswered_at: Option<u64>,
    renew_at: u64,
    b_grant_at: Option<u64>,
) -> Judged {
    let mut a = History::node("node-a", 1, true)
        .started(0)
        .leads(10, 1, 1, true);
    if let Some(sent) = unanswered_at {
        a = a
            .at(
                sent,
                &format!(
                    r#""event":"request-sent","request":2,"local_ns":{}"#,
                    sent * 1_000_000
                ),
            )
            .at(
                sent + 600,
                r#""event":"lease-failed","request":2,"rejected":false,"error":"the store is unavailable: PostgreSQL statement unanswered within 600ms""#,
            );
    }
    let a = a.leads(renew_at, 3, 1, false).stopped(renew_at + 100);
    let mut b = History::node("node-b", 1, true).started(0);
    if let Some(at) = b_grant_at {
        b = b.leads(at, 1, 2, true);
    }
    let b = b.stopped(renew_at + 100);
    judge(&[a.file("a"), b.file("b")])
}

#[test]
fn a_renewal_whose_answer_was_lost_is_inferred_from_the_renewal_that_follows() {
    // Seen for real (fenced-lab, two cuts from the lease store to node-a):
    // PostgreSQL applied node-a's renewals, their answers were lost, and
    // its next answered request was "renewed, token 1" after the lease's
    // first expiry. A renewal sent before the lapse may have been applied
    // just before it: judged so, with a warning, the run is clean.
    let judged = renewal_after_an_unanswered_one(Some(1_000), 3_500, None);
    assert_clean_with_warning(&judged, "so the store renewed on one of them");
}

#[test]
fn an_inferred_renewal_never_excuses_what_it_cannot_explain() {
    // Negative controls, each still `token-monotonic` (a lapsed lease
    // renewed): no request went unanswered; the unanswered one left after
    // the lapse (3.011 s), so no store could have applied it before; the
    // renewal comes after even the inferred lease (renewed at 3.011 s for
    // 3 s) ran out.
    for (unanswered_at, renew_at) in [(None, 3_500), (Some(3_100), 3_900), (Some(1_000), 6_100)] {
        let judged = renewal_after_an_unanswered_one(unanswered_at, renew_at, None);
        assert_eq!(
            invariants(&judged),
            vec!["token-monotonic"],
            "unanswered at {unanswered_at:?}, renewed at {renew_at}"
        );
    }
    // A grant to node-b after the lapse: had the store renewed node-a's
    // lease before it, that grant broke exclusivity; had it not, node-a's
    // renewal renewed a lapsed lease. Either way a violation.
    let judged = renewal_after_an_unanswered_one(Some(1_000), 3_500, Some(3_200));
    assert!(
        !invariants(&judged).is_empty(),
        "{:?}",
        judged.report.violations
    );
}
