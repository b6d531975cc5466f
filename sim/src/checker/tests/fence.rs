//! `single-writer` and `split-brain` through the whole checker.

use super::*;

#[test]
fn single_writer_and_split_brain_an_older_token_accepted_breaks_both_rejected_breaks_none() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    started(&mut checker, &cast);
    write(&mut checker, 1.0, cast.a(), 1, &WriteOutcome::Accepted);
    write(&mut checker, 2.0, cast.b(), 2, &WriteOutcome::Accepted);
    // Almost: the stale write is rejected.
    let stale = WriteOutcome::RejectedStale {
        stale: token(1),
        highest: token(2),
    };
    write(&mut checker, 3.0, cast.a(), 1, &stale);
    let verdict = checker.verdict(at(4.0));
    assert!(invariants(&verdict).is_empty());
    assert_eq!(verdict.writes.rejected_stale, 1);
    assert_eq!(verdict.failovers.len(), 1);
    // Broken: the stale write accepted.
    write(&mut checker, 5.0, cast.a(), 1, &WriteOutcome::Accepted);
    assert_eq!(
        invariants(&checker.verdict(at(6.0))),
        ["single-writer", "split-brain"]
    );
}

#[test]
fn split_brain_is_judged_without_fencing_and_single_writer_is_not() {
    let cast = Cast::new();
    let mut unfenced = settings();
    unfenced.fencing = false;
    let mut checker = Checker::new(unfenced);
    started(&mut checker, &cast);
    write(&mut checker, 1.0, cast.a(), 1, &WriteOutcome::Accepted);
    write(&mut checker, 2.0, cast.b(), 2, &WriteOutcome::Accepted);
    // Almost: the same token twice from its own writer.
    write(&mut checker, 2.5, cast.b(), 2, &WriteOutcome::Accepted);
    assert!(invariants(&checker.verdict(at(3.0))).is_empty());
    write(&mut checker, 3.0, cast.a(), 1, &WriteOutcome::Accepted);
    let verdict = checker.verdict(at(4.0));
    assert_eq!(invariants(&verdict), ["split-brain"]);
    assert_eq!(verdict.split_brain_total, 1);
}

#[test]
fn single_writer_one_token_from_two_writers_breaks_it() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    started(&mut checker, &cast);
    write(&mut checker, 1.0, cast.a(), 1, &WriteOutcome::Accepted);
    // Almost: the downstream refuses the second writer.
    let refused = WriteOutcome::RejectedWrongWriter {
        token: token(1),
        bound_to: cast.owners[0].clone(),
    };
    write(&mut checker, 2.0, cast.b(), 1, &refused);
    assert_eq!(invariants(&checker.verdict(at(3.0))), ["single-writer"]);
}
