//! The lease store's contract, one test per behaviour.
//!
//! Every instant here is on the store's clock. The TTL is 30 s unless a test
//! says otherwise, so `expires_at` of a lease granted at `t` is `t + 30 s`.

use std::time::Duration;

use fenced::{
    FencingToken, IdError, Lease, LeaseError, LeaseResult, LeaseStore, LeaseStoreConfig, OwnerId,
    ReleaseResult, Role,
};

const TTL: Duration = Duration::from_secs(30);

fn role(name: &str) -> Role {
    Role::new(name).unwrap()
}

fn owner(name: &str) -> OwnerId {
    OwnerId::new(name).unwrap()
}

fn token(n: u64) -> FencingToken {
    FencingToken::new(n).unwrap()
}

fn secs(s: u64) -> fenced::Instant {
    fenced::Instant::from_secs(s)
}

/// Grants `role` to `owner` at `now` and returns the token, failing the test
/// if the call was anything but a grant.
fn grant(store: &mut LeaseStore, role: &Role, owner: &OwnerId, now: fenced::Instant) -> u64 {
    match store.try_acquire_or_renew(role, owner, TTL, now).unwrap() {
        LeaseResult::Granted { token, expires_at } => {
            assert_eq!(expires_at, now + TTL, "a grant lasts exactly one TTL");
            token.get()
        }
        other => panic!("expected a grant at {now}, got {other:?}"),
    }
}

#[test]
fn the_first_holder_of_a_role_gets_token_one() {
    // Proves that tokens start at 1 and the first grant expires one TTL later.
    let mut store = LeaseStore::default();
    let result = store
        .try_acquire_or_renew(&role("reports"), &owner("a"), TTL, secs(5))
        .unwrap();
    assert_eq!(
        result,
        LeaseResult::Granted {
            token: FencingToken::FIRST,
            expires_at: secs(35),
        }
    );
    assert_eq!(result.acquired_token(), Some(token(1)));
    assert_eq!(store.highest_token(&role("reports")), Some(token(1)));
    assert_eq!(
        store.holder(&role("reports"), secs(5)),
        Some(&Lease {
            owner: owner("a"),
            token: token(1),
            expires_at: secs(35),
        })
    );
}

#[test]
fn a_same_holder_renewal_keeps_the_token_and_extends_expiry_to_now_plus_ttl() {
    // Proves that a live holder renewing gets `Renewed` with its token unchanged and `expires_at = now + ttl`.
    let mut store = LeaseStore::default();
    let (r, a) = (role("reports"), owner("a"));
    assert_eq!(grant(&mut store, &r, &a, secs(0)), 1);
    for (now, ttl) in [(10, 30), (29, 5), (33, 60)] {
        let ttl = Duration::from_secs(ttl);
        let result = store.try_acquire_or_renew(&r, &a, ttl, secs(now)).unwrap();
        assert_eq!(
            result,
            LeaseResult::Renewed {
                token: token(1),
                expires_at: secs(now) + ttl,
            },
            "renewal at {now}s"
        );
    }
    assert_eq!(store.holder(&r, secs(92)).map(|l| l.token), Some(token(1)));
    assert_eq!(store.highest_token(&r), Some(token(1)));
}

#[test]
fn a_second_owner_is_refused_while_the_lease_is_live_and_told_who_holds_it() {
    // Proves that a live lease refuses another owner with `Held` naming holder, token and expiry, and changes nothing.
    let mut store = LeaseStore::default();
    let r = role("reports");
    grant(&mut store, &r, &owner("a"), secs(0));
    let result = store
        .try_acquire_or_renew(&r, &owner("b"), TTL, secs(29))
        .unwrap();
    let expected = Lease {
        owner: owner("a"),
        token: token(1),
        expires_at: secs(30),
    };
    assert_eq!(
        result,
        LeaseResult::Held {
            holder: expected.clone()
        }
    );
    assert_eq!(result.acquired_token(), None);
    // The refusal did not extend or transfer the lease.
    assert_eq!(store.holder(&r, secs(29)), Some(&expected));
    assert_eq!(store.highest_token(&r), Some(token(1)));
}

#[test]
fn after_the_ttl_another_owner_takes_over_with_a_strictly_higher_token() {
    // Proves that once the lease has expired a different owner is granted a new term with a higher token.
    let mut store = LeaseStore::default();
    let r = role("reports");
    let first = grant(&mut store, &r, &owner("a"), secs(0));
    let second = grant(&mut store, &r, &owner("b"), secs(30));
    assert!(second > first, "{second} must be above {first}");
    assert_eq!(second, 2);
    assert_eq!(
        store.holder(&r, secs(30)).map(|l| l.owner.clone()),
        Some(owner("b"))
    );
}

#[test]
fn the_same_owner_reacquiring_after_its_own_lapse_gets_a_new_token() {
    // Proves that a lapsed lease is a new term even for its old holder: the token is bumped, not reused.
    let mut store = LeaseStore::default();
    let (r, a) = (role("reports"), owner("a"));
    assert_eq!(grant(&mut store, &r, &a, secs(0)), 1);
    assert_eq!(grant(&mut store, &r, &a, secs(31)), 2);
    // And again after a release.
    let released = store.release(&r, &a, token(2), secs(32));
    assert_eq!(released, ReleaseResult::Released);
    assert_eq!(grant(&mut store, &r, &a, secs(33)), 3);
}

#[test]
fn the_expiry_boundary_is_now_at_or_past_expires_at() {
    // Proves both sides of `expired <=> now >= expires_at`: one nanosecond before it the lease is held, at it the lease is free.
    let r = role("reports");
    let expires_at = secs(30);
    let just_before = fenced::Instant::from_nanos(expires_at.as_nanos() - 1);

    let mut store = LeaseStore::default();
    grant(&mut store, &r, &owner("a"), secs(0));
    assert!(store.holder(&r, just_before).is_some());
    assert!(store.holder(&r, expires_at).is_none());
    // Live one nanosecond before: another owner is refused and the holder renews.
    let refused = store
        .try_acquire_or_renew(&r, &owner("b"), TTL, just_before)
        .unwrap();
    assert!(matches!(refused, LeaseResult::Held { .. }), "{refused:?}");
    let renewed = store
        .try_acquire_or_renew(&r, &owner("a"), TTL, just_before)
        .unwrap();
    assert_eq!(
        renewed,
        LeaseResult::Renewed {
            token: token(1),
            expires_at: just_before + TTL,
        }
    );

    // Expired exactly at `expires_at`: another owner takes over.
    let mut store = LeaseStore::default();
    grant(&mut store, &r, &owner("a"), secs(0));
    assert_eq!(grant(&mut store, &r, &owner("b"), expires_at), 2);

    // Expired exactly at `expires_at`: the old holder starts a new term.
    let mut store = LeaseStore::default();
    grant(&mut store, &r, &owner("a"), secs(0));
    assert_eq!(grant(&mut store, &r, &owner("a"), expires_at), 2);

    // Release follows the same boundary.
    let mut store = LeaseStore::default();
    grant(&mut store, &r, &owner("a"), secs(0));
    assert_eq!(
        store.release(&r, &owner("a"), token(1), expires_at),
        ReleaseResult::NotHeld
    );
    let mut store = LeaseStore::default();
    grant(&mut store, &r, &owner("a"), secs(0));
    assert_eq!(
        store.release(&r, &owner("a"), token(1), just_before),
        ReleaseResult::Released
    );
}

#[test]
fn release_frees_the_lease_only_for_its_live_owner_with_its_token() {
    // Proves that release needs the right owner, the right token and a live lease; anything else is a no-op.
    let mut store = LeaseStore::default();
    let (r, a, b) = (role("reports"), owner("a"), owner("b"));
    grant(&mut store, &r, &a, secs(0));
    // Wrong owner, wrong token, unknown role: nothing happens.
    assert_eq!(
        store.release(&r, &b, token(1), secs(1)),
        ReleaseResult::NotHeld
    );
    assert_eq!(
        store.release(&r, &a, token(2), secs(1)),
        ReleaseResult::NotHeld
    );
    assert_eq!(
        store.release(&role("other"), &a, token(1), secs(1)),
        ReleaseResult::NotHeld
    );
    assert_eq!(store.holder(&r, secs(1)).map(|l| l.token), Some(token(1)));
    // The holder with its token frees it, and a second owner gets the next token at once.
    assert_eq!(
        store.release(&r, &a, token(1), secs(2)),
        ReleaseResult::Released
    );
    assert_eq!(store.holder(&r, secs(2)), None);
    assert_eq!(grant(&mut store, &r, &b, secs(2)), 2);
}

#[test]
fn a_late_release_of_an_older_token_does_nothing() {
    // Proves the etcd #22082 fix: a retried or delayed release of a superseded term cannot free the current term, even the same owner's.
    let mut store = LeaseStore::default();
    let (r, a, b) = (role("reports"), owner("a"), owner("b"));
    grant(&mut store, &r, &a, secs(0));
    assert_eq!(
        store.release(&r, &a, token(1), secs(1)),
        ReleaseResult::Released
    );
    // The same owner starts a new term; the retried release of term 1 arrives late.
    assert_eq!(grant(&mut store, &r, &a, secs(2)), 2);
    assert_eq!(
        store.release(&r, &a, token(1), secs(3)),
        ReleaseResult::NotHeld
    );
    assert_eq!(store.holder(&r, secs(3)).map(|l| l.token), Some(token(2)));
    // Another owner's term is equally safe from a stale release.
    grant(&mut store, &r, &b, secs(40));
    assert_eq!(
        store.release(&r, &a, token(2), secs(41)),
        ReleaseResult::NotHeld
    );
    assert_eq!(
        store
            .holder(&r, secs(41))
            .map(|l| (l.owner.clone(), l.token)),
        Some((b, token(3)))
    );
}

#[test]
fn tokens_survive_release_and_expiry() {
    // Proves that a role's highest token is never forgotten, so the next term after a release or an expiry is still higher.
    let mut store = LeaseStore::default();
    let (r, a, b) = (role("reports"), owner("a"), owner("b"));
    assert_eq!(grant(&mut store, &r, &a, secs(0)), 1);
    assert_eq!(
        store.release(&r, &a, token(1), secs(1)),
        ReleaseResult::Released
    );
    assert_eq!(store.highest_token(&r), Some(token(1)));
    assert_eq!(store.holder(&r, secs(1)), None);
    assert_eq!(grant(&mut store, &r, &b, secs(2)), 2);
    // Let it expire, with a long silence in between.
    assert_eq!(store.holder(&r, secs(1_000)), None);
    assert_eq!(store.highest_token(&r), Some(token(2)));
    assert_eq!(grant(&mut store, &r, &a, secs(1_000)), 3);
    assert_eq!(store.role_count(), 1);
}

#[test]
fn tokens_are_counted_per_role() {
    // Proves that each role has its own token sequence starting at 1, and one role's terms do not bump another's.
    let mut store = LeaseStore::default();
    let (reports, billing, a) = (role("reports"), role("billing"), owner("a"));
    assert_eq!(grant(&mut store, &reports, &a, secs(0)), 1);
    assert_eq!(grant(&mut store, &reports, &a, secs(30)), 2);
    assert_eq!(grant(&mut store, &reports, &a, secs(60)), 3);
    assert_eq!(grant(&mut store, &billing, &a, secs(61)), 1);
    assert_eq!(store.highest_token(&reports), Some(token(3)));
    assert_eq!(store.highest_token(&billing), Some(token(1)));
    assert_eq!(store.highest_token(&role("never-used")), None);
    assert_eq!(store.role_count(), 2);
}

#[test]
fn the_store_time_never_runs_backwards() {
    // Proves that an earlier `now` counts as the latest seen, so a confused caller cannot resurrect an expired lease.
    let mut store = LeaseStore::default();
    let (r, a, b) = (role("reports"), owner("a"), owner("b"));
    grant(&mut store, &r, &a, secs(0));
    // The store sees 40 s through a call on another role: the lease of `r` expired at 30 s.
    grant(&mut store, &role("other"), &b, secs(40));
    assert_eq!(store.now(), secs(40));
    // Asking about 10 s is asking about 40 s.
    assert_eq!(store.holder(&r, secs(10)), None);
    // A "renewal" dated 10 s is a new term at 40 s, not a renewal of term 1.
    let result = store.try_acquire_or_renew(&r, &a, TTL, secs(10)).unwrap();
    assert_eq!(
        result,
        LeaseResult::Granted {
            token: token(2),
            expires_at: secs(70),
        }
    );
    // A release dated in the past is judged at the latest time, too.
    assert_eq!(
        store.release(&r, &a, token(2), secs(5)),
        ReleaseResult::Released
    );
    assert_eq!(store.now(), secs(40));
    // Refusals clamp the same way: `b` asking at 0 s is refused with the lease as of 40 s.
    grant(&mut store, &r, &a, secs(41));
    let refused = store.try_acquire_or_renew(&r, &b, TTL, secs(0)).unwrap();
    assert_eq!(
        refused,
        LeaseResult::Held {
            holder: Lease {
                owner: a,
                token: token(3),
                expires_at: secs(71),
            }
        }
    );
}

#[test]
fn a_zero_ttl_is_an_error_that_changes_nothing() {
    // Proves that a zero TTL is rejected as bad input without touching the lease or the store's time.
    let mut store = LeaseStore::default();
    let (r, a) = (role("reports"), owner("a"));
    grant(&mut store, &r, &a, secs(0));
    let err = store
        .try_acquire_or_renew(&r, &a, Duration::ZERO, secs(10))
        .unwrap_err();
    assert_eq!(err, LeaseError::ZeroTtl);
    assert_eq!(err.to_string(), "lease TTL must be greater than zero");
    assert_eq!(store.now(), secs(0));
    assert_eq!(
        store.holder(&r, secs(0)).map(|l| l.expires_at),
        Some(secs(30))
    );
}

#[test]
fn a_ttl_above_the_configured_maximum_is_an_error() {
    // Proves that `LeaseStoreConfig::new(max)` caps the TTL: `max` itself is accepted, one nanosecond more is an error naming both.
    let max = Duration::from_secs(60);
    let config = LeaseStoreConfig::new(max).unwrap();
    assert_eq!(config.max_ttl(), max);
    let mut store = LeaseStore::new(config);
    assert_eq!(store.config().max_ttl(), max);
    let (r, a) = (role("reports"), owner("a"));
    let over = max + Duration::from_nanos(1);
    let err = store
        .try_acquire_or_renew(&r, &a, over, secs(0))
        .unwrap_err();
    assert_eq!(err, LeaseError::TtlAboveMaximum { ttl: over, max });
    assert!(
        err.to_string().contains("above the store's maximum"),
        "{err}"
    );
    assert_eq!(store.role_count(), 0, "a refused call remembers nothing");
    assert_eq!(
        store.try_acquire_or_renew(&r, &a, max, secs(0)).unwrap(),
        LeaseResult::Granted {
            token: token(1),
            expires_at: secs(60),
        }
    );
    // The default maximum is one day.
    let mut store = LeaseStore::default();
    assert_eq!(
        store.try_acquire_or_renew(&r, &a, Duration::from_secs(86_401), secs(0)),
        Err(LeaseError::TtlAboveMaximum {
            ttl: Duration::from_secs(86_401),
            max: LeaseStoreConfig::DEFAULT_MAX_TTL,
        })
    );
}

#[test]
fn a_zero_maximum_ttl_is_an_error() {
    // Proves that a store configuration which could never grant a lease is rejected when it is built.
    assert_eq!(
        LeaseStoreConfig::new(Duration::ZERO),
        Err(LeaseError::ZeroTtl)
    );
    assert!(LeaseStoreConfig::new(Duration::from_nanos(1)).is_ok());
}

#[test]
fn an_empty_role_or_owner_is_rejected_before_it_reaches_the_store() {
    // Proves that empty identities cannot be built, so the store can never be asked about one.
    assert_eq!(Role::new(""), Err(IdError::Empty { kind: "role" }));
    assert_eq!(OwnerId::new(""), Err(IdError::Empty { kind: "owner" }));
    assert_eq!("".parse::<Role>(), Err(IdError::Empty { kind: "role" }));
    assert_eq!(
        OwnerId::try_from(String::new()),
        Err(IdError::Empty { kind: "owner" })
    );
    assert_eq!(
        OwnerId::new("").unwrap_err().to_string(),
        "owner must not be empty"
    );
}

#[test]
fn an_expiry_past_the_end_of_time_is_an_error_not_a_panic() {
    // Proves that `now + ttl` overflowing the clock is `TimeOverflow`, also when the overflow comes from the store's latest time.
    let mut store = LeaseStore::default();
    let (r, a) = (role("reports"), owner("a"));
    let near_end = fenced::Instant::MAX - Duration::from_secs(10);
    assert_eq!(
        store.try_acquire_or_renew(&r, &a, TTL, near_end),
        Err(LeaseError::TimeOverflow)
    );
    assert_eq!(
        store.try_acquire_or_renew(&r, &a, TTL, fenced::Instant::MAX),
        Err(LeaseError::TimeOverflow)
    );
    assert_eq!(store.role_count(), 0);
    // A TTL that still fits is granted right up to the last instant.
    let fits = store
        .try_acquire_or_renew(&r, &a, Duration::from_secs(10), near_end)
        .unwrap();
    assert_eq!(fits.acquired_token(), Some(token(1)));
    // Now the store's time is near the end; an old `now` is clamped to it and overflows.
    assert_eq!(
        store.try_acquire_or_renew(&role("other"), &a, TTL, secs(0)),
        Err(LeaseError::TimeOverflow)
    );
    assert_eq!(
        LeaseError::TimeOverflow.to_string(),
        "now + TTL overflows the clock"
    );
}
