//! Property tests of the lease store: random operations against a
//! [`LeaseStore`], checked call by call against a small reference model of
//! the contract. (The electors' property test, on a hostile network, is
//! `elector_properties.rs`.)

use std::time::Duration;

use fenced::{FencingToken, Instant, Lease, LeaseResult, LeaseStore, OwnerId, ReleaseResult, Role};
use proptest::prelude::*;

const ROLES: usize = 3;
const OWNERS: usize = 4;

#[derive(Clone, Debug)]
enum ReleaseToken {
    /// The token of the role's current (possibly expired) lease.
    Current,
    /// Any token from 1 to 8, most of them stale or unknown.
    Number(u64),
}

#[derive(Clone, Debug)]
enum StoreOp {
    /// `try_acquire_or_renew`, dated `back_ms` before the test's clock.
    Acquire {
        role: usize,
        owner: usize,
        ttl_ms: u64,
        back_ms: u64,
    },
    /// `release`, dated `back_ms` before the test's clock.
    Release {
        role: usize,
        owner: usize,
        token: ReleaseToken,
        back_ms: u64,
    },
    /// Moves the test's clock forward.
    Advance { ms: u64 },
}

fn back_ms() -> impl Strategy<Value = u64> {
    // Mostly on time; sometimes dated in the past, to exercise the clamp.
    prop_oneof![4 => Just(0u64), 1 => 1..3_000u64]
}

fn store_op() -> impl Strategy<Value = StoreOp> {
    prop_oneof![
        5 => (0..ROLES, 0..OWNERS, 1..5_000u64, back_ms()).prop_map(
            |(role, owner, ttl_ms, back_ms)| StoreOp::Acquire { role, owner, ttl_ms, back_ms }
        ),
        2 => (
            0..ROLES,
            0..OWNERS,
            prop_oneof![Just(ReleaseToken::Current), (1..=8u64).prop_map(ReleaseToken::Number)],
            back_ms(),
        )
            .prop_map(|(role, owner, token, back_ms)| StoreOp::Release { role, owner, token, back_ms }),
        3 => (0..4_000u64).prop_map(|ms| StoreOp::Advance { ms }),
    ]
}

/// What the contract says one role's state is.
#[derive(Clone, Debug, Default)]
struct ModelRole {
    highest: u64,
    /// The current (possibly expired) lease: owner index, token, expiry.
    lease: Option<(usize, u64, Instant)>,
    /// Every token ever granted, in grant order.
    grants: Vec<u64>,
}

impl ModelRole {
    fn live(&self, now: Instant) -> Option<(usize, u64, Instant)> {
        self.lease.filter(|&(_, _, expires_at)| now < expires_at)
    }
}

struct StoreCase {
    store: LeaseStore,
    roles: Vec<Role>,
    owners: Vec<OwnerId>,
    model: Vec<ModelRole>,
    model_now: Instant,
    clock: Instant,
}

type Snapshot = Vec<(Option<Lease>, Option<FencingToken>)>;

impl StoreCase {
    fn new() -> Self {
        StoreCase {
            store: LeaseStore::default(),
            roles: (0..ROLES)
                .map(|i| Role::new(format!("role-{i}")).unwrap())
                .collect(),
            owners: (0..OWNERS)
                .map(|i| OwnerId::new(format!("owner-{i}")).unwrap())
                .collect(),
            model: vec![ModelRole::default(); ROLES],
            model_now: Instant::ZERO,
            clock: Instant::ZERO,
        }
    }

    fn snapshot(&self, now: Instant) -> Snapshot {
        self.roles
            .iter()
            .map(|r| {
                (
                    self.store.holder(r, now).cloned(),
                    self.store.highest_token(r),
                )
            })
            .collect()
    }

    fn lease(&self, (owner, token, expires_at): (usize, u64, Instant)) -> Lease {
        Lease {
            owner: self.owners[owner].clone(),
            token: FencingToken::new(token).unwrap(),
            expires_at,
        }
    }

    fn apply(&mut self, op: &StoreOp) -> Result<(), TestCaseError> {
        match *op {
            StoreOp::Advance { ms } => {
                self.clock = self.clock + Duration::from_millis(ms);
            }
            StoreOp::Acquire {
                role,
                owner,
                ttl_ms,
                back_ms,
            } => self.acquire(role, owner, ttl_ms, back_ms)?,
            StoreOp::Release {
                role,
                owner,
                ref token,
                back_ms,
            } => self.release(role, owner, token, back_ms)?,
        }
        self.check_against_model()
    }

    fn acquire(
        &mut self,
        role: usize,
        owner: usize,
        ttl_ms: u64,
        back_ms: u64,
    ) -> Result<(), TestCaseError> {
        let dated = self.clock - Duration::from_millis(back_ms);
        let now = dated.max(self.model_now);
        let ttl = Duration::from_millis(ttl_ms);
        let before = self.snapshot(now);
        let result = self
            .store
            .try_acquire_or_renew(&self.roles[role], &self.owners[owner], ttl, dated)
            .unwrap();
        self.model_now = now;
        prop_assert_eq!(self.store.now(), now, "the store's time is the latest seen");
        let expires_at = now + ttl;
        let state = &mut self.model[role];
        match state.live(now) {
            None => {
                let token = state.highest + 1;
                prop_assert_eq!(
                    &result,
                    &LeaseResult::Granted {
                        token: FencingToken::new(token).unwrap(),
                        expires_at
                    },
                    "a free, released or expired lease is granted with highest + 1"
                );
                prop_assert!(
                    state.grants.last().is_none_or(|&last| token > last),
                    "grants of a role carry strictly increasing tokens"
                );
                state.grants.push(token);
                state.highest = token;
                state.lease = Some((owner, token, expires_at));
            }
            Some((holder, token, _)) if holder == owner => {
                prop_assert_eq!(
                    &result,
                    &LeaseResult::Renewed {
                        token: FencingToken::new(token).unwrap(),
                        expires_at
                    },
                    "a live same-holder renewal keeps the token"
                );
                state.lease = Some((owner, token, expires_at));
            }
            Some(live) => {
                let holder = self.lease(live);
                prop_assert_eq!(&result, &LeaseResult::Held { holder });
                prop_assert_eq!(
                    self.snapshot(now),
                    before,
                    "a refused call changes no role's state"
                );
            }
        }
        Ok(())
    }

    fn release(
        &mut self,
        role: usize,
        owner: usize,
        token: &ReleaseToken,
        back_ms: u64,
    ) -> Result<(), TestCaseError> {
        let dated = self.clock - Duration::from_millis(back_ms);
        let now = dated.max(self.model_now);
        let token = match token {
            ReleaseToken::Current => self.model[role].lease.map_or(1, |(_, t, _)| t),
            ReleaseToken::Number(n) => *n,
        };
        let before = self.snapshot(now);
        let result = self.store.release(
            &self.roles[role],
            &self.owners[owner],
            FencingToken::new(token).unwrap(),
            dated,
        );
        self.model_now = now;
        prop_assert_eq!(self.store.now(), now);
        let state = &mut self.model[role];
        let frees = state
            .live(now)
            .is_some_and(|(holder, live_token, _)| holder == owner && live_token == token);
        if frees {
            prop_assert_eq!(result, ReleaseResult::Released);
            state.lease = None;
            prop_assert_eq!(self.store.holder(&self.roles[role], now), None);
            prop_assert_eq!(
                self.store
                    .highest_token(&self.roles[role])
                    .map(FencingToken::get),
                Some(token),
                "the highest token survives release"
            );
        } else {
            prop_assert_eq!(result, ReleaseResult::NotHeld);
            prop_assert_eq!(
                self.snapshot(now),
                before,
                "a no-op release changes nothing"
            );
        }
        Ok(())
    }

    /// The store's view of every role matches the model: at most one live
    /// holder (the model's), and the highest token the model expects.
    fn check_against_model(&self) -> Result<(), TestCaseError> {
        let now = self.clock.max(self.model_now);
        for (i, role) in self.roles.iter().enumerate() {
            let expected = self.model[i].live(now).map(|l| self.lease(l));
            prop_assert_eq!(self.store.holder(role, self.clock), expected.as_ref());
            let highest = self.store.highest_token(role).map(FencingToken::get);
            prop_assert_eq!(highest.unwrap_or(0), self.model[i].highest);
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_lease_store_keeps_its_contract_under_random_operations(
        ops in proptest::collection::vec(store_op(), 1..200)
    ) {
        // Proves, for random operations over 3 roles and 4 owners, that grants carry strictly increasing tokens, renewals keep the token, at most the model's holder is live, and refusals change nothing.
        let mut case = StoreCase::new();
        for op in &ops {
            case.apply(op)?;
        }
    }
}
