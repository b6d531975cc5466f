//! The fenced downstream store's contract, one test per behaviour.

use fenced::{FencedStore, Fencing, FencingToken, Instant, OwnerId, ResourceId, WriteOutcome};

fn token(n: u64) -> FencingToken {
    FencingToken::new(n).unwrap()
}

fn owner(name: &str) -> OwnerId {
    OwnerId::new(name).unwrap()
}

fn resource(name: &str) -> ResourceId {
    ResourceId::new(name).unwrap()
}

fn secs(s: u64) -> Instant {
    Instant::from_secs(s)
}

#[test]
fn writes_with_a_token_at_or_above_the_highest_are_accepted() {
    // Proves that the first write, a repeat of the highest token by its writer, and a higher token are all accepted in turn.
    let mut store = FencedStore::new(Fencing::Enforced);
    let (r, a, b) = (resource("report.csv"), owner("a"), owner("b"));
    assert_eq!(store.fencing(), Fencing::Enforced);
    assert_eq!(
        store.write(&r, token(3), &a, "a1", secs(1)),
        WriteOutcome::Accepted
    );
    assert_eq!(
        store.write(&r, token(3), &a, "a2", secs(2)),
        WriteOutcome::Accepted
    );
    assert_eq!(
        store.write(&r, token(5), &b, "b1", secs(3)),
        WriteOutcome::Accepted
    );
    assert_eq!(store.highest_token(&r), Some(token(5)));
    assert_eq!(store.accepted_count(&r), 3);
    assert_eq!(store.last_write_at(&r), Some(secs(3)));
}

#[test]
fn a_write_below_the_highest_token_is_rejected_with_stale_and_highest() {
    // Proves that a superseded leader's late write is refused, naming its stale token and the highest accepted, and changes nothing.
    let mut store = FencedStore::new(Fencing::Enforced);
    let (r, a, b) = (resource("report.csv"), owner("a"), owner("b"));
    store.write(&r, token(1), &a, "a1", secs(1));
    store.write(&r, token(2), &b, "b1", secs(2));
    assert_eq!(
        store.write(&r, token(1), &a, "late", secs(3)),
        WriteOutcome::RejectedStale {
            stale: token(1),
            highest: token(2)
        }
    );
    assert_eq!(store.value(&r), Some(&"b1"));
    assert_eq!(store.accepted_count(&r), 2);
    assert_eq!(store.last_write_at(&r), Some(secs(2)));
}

#[test]
fn the_same_token_from_another_writer_is_rejected_as_the_wrong_writer() {
    // Proves that a token is bound to the first writer that used it: another writer presenting it is rejected and the owner reported.
    let mut store = FencedStore::new(Fencing::Enforced);
    let (r, a, b) = (resource("report.csv"), owner("a"), owner("b"));
    store.write(&r, token(4), &a, "a1", secs(1));
    assert_eq!(
        store.write(&r, token(4), &b, "b1", secs(2)),
        WriteOutcome::RejectedWrongWriter {
            token: token(4),
            bound_to: a.clone()
        }
    );
    assert_eq!(store.value(&r), Some(&"a1"));
    // The binding follows the highest token: once `b` writes with 5, `a` cannot use 5.
    assert_eq!(
        store.write(&r, token(5), &b, "b2", secs(3)),
        WriteOutcome::Accepted
    );
    assert_eq!(
        store.write(&r, token(5), &a, "a2", secs(4)),
        WriteOutcome::RejectedWrongWriter {
            token: token(5),
            bound_to: b
        }
    );
}

#[test]
fn an_unfenced_store_accepts_everything() {
    // Proves that `Fencing::Disabled` behaves like a plain store: stale tokens and foreign writers are accepted, which is how split-brain is reproduced.
    let mut store = FencedStore::new(Fencing::Disabled);
    let (r, a, b) = (resource("report.csv"), owner("a"), owner("b"));
    assert_eq!(store.fencing(), Fencing::Disabled);
    assert_eq!(
        store.write(&r, token(2), &b, "b1", secs(1)),
        WriteOutcome::Accepted
    );
    assert_eq!(
        store.write(&r, token(1), &a, "late", secs(2)),
        WriteOutcome::Accepted
    );
    assert_eq!(
        store.write(&r, token(2), &a, "foreign", secs(3)),
        WriteOutcome::Accepted
    );
    assert_eq!(store.value(&r), Some(&"foreign"));
    assert_eq!(store.accepted_count(&r), 3);
    // It still records the highest token it saw.
    assert_eq!(store.highest_token(&r), Some(token(2)));
}

#[test]
fn resources_are_fenced_independently() {
    // Proves that a high token on one resource does not fence writes to another.
    let mut store = FencedStore::new(Fencing::Enforced);
    let (x, y, a, b) = (resource("x"), resource("y"), owner("a"), owner("b"));
    store.write(&x, token(9), &b, 9, secs(1));
    assert_eq!(
        store.write(&y, token(1), &a, 1, secs(2)),
        WriteOutcome::Accepted
    );
    assert_eq!(
        store.write(&y, token(1), &a, 2, secs(3)),
        WriteOutcome::Accepted
    );
    assert_eq!(
        store.write(&x, token(1), &a, 1, secs(4)),
        WriteOutcome::RejectedStale {
            stale: token(1),
            highest: token(9)
        }
    );
    assert_eq!(store.highest_token(&x), Some(token(9)));
    assert_eq!(store.highest_token(&y), Some(token(1)));
    assert_eq!(store.value(&x), Some(&9));
    assert_eq!(store.value(&y), Some(&2));
    assert_eq!(store.highest_token(&resource("z")), None);
    assert_eq!(store.accepted_count(&resource("z")), 0);
    assert_eq!(store.last_write_at(&resource("z")), None);
}

#[test]
fn value_holds_the_last_accepted_payload() {
    // Proves that value() is the payload of the last accepted write, never of a rejected one.
    let mut store: FencedStore<String> = FencedStore::new(Fencing::Enforced);
    let (r, a, b) = (resource("r"), owner("a"), owner("b"));
    assert_eq!(store.value(&r), None);
    store.write(&r, token(1), &a, "one".to_string(), secs(1));
    assert_eq!(store.value(&r).map(String::as_str), Some("one"));
    store.write(&r, token(2), &b, "two".to_string(), secs(2));
    store.write(&r, token(1), &a, "stale".to_string(), secs(3));
    store.write(&r, token(2), &a, "foreign".to_string(), secs(4));
    assert_eq!(store.value(&r).map(String::as_str), Some("two"));
    store.write(&r, token(2), &b, "three".to_string(), secs(5));
    assert_eq!(store.value(&r).map(String::as_str), Some("three"));
}
