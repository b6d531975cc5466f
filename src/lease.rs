//! The lease store: renewable, expiring leases with monotonic fencing tokens.
//!
//! # The contract
//!
//! [`LeaseStore::try_acquire_or_renew`] on `(role, owner, ttl, now)`:
//!
//! | the role's lease is...                  | result                                   | token            |
//! |-----------------------------------------|------------------------------------------|------------------|
//! | free, released, or expired              | [`LeaseResult::Granted`] to `owner`      | highest + 1      |
//! | live and held by `owner`                | [`LeaseResult::Renewed`]: `expires_at = now + ttl` | unchanged |
//! | live and held by someone else           | [`LeaseResult::Held`], naming the holder | unchanged        |
//!
//! * **Expired** means `now >= expires_at`: a lease is live on `[granted, expires_at)`.
//! * Every grant that is not a live same-holder renewal starts a new term and
//!   bumps the token, *including the same owner re-acquiring after its own lease
//!   lapsed*: in between, someone else may have held (and written with) a term,
//!   so the old token must not come back.
//! * Tokens are per role, start at 1, never repeat, never decrease, and survive
//!   release and expiry: a role's highest token is never forgotten.
//! * [`LeaseStore::release`] frees the lease only when the caller is the live
//!   holder *with that token*; a late or retried release of an older term is a
//!   no-op (etcd issue 22082 is what happens otherwise).
//! * The store's time never runs backwards: a `now` earlier than one already
//!   seen is treated as the latest seen, so a confused caller cannot resurrect
//!   an expired lease.
//!
//! All instants are on the store's clock, which is the arbiter of expiry.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::id::{FencingToken, OwnerId, Role};
use crate::planted::{BugSlot, PlantedBug};
use crate::time::{Instant, LatestNow};

/// Why a lease-store call was refused as bad input. Operating outcomes (the
/// lease is held by another) are [`LeaseResult`] values, not errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseError {
    /// The TTL is zero: such a lease would be expired the moment it is granted.
    ZeroTtl,
    /// The TTL exceeds the store's configured maximum.
    TtlAboveMaximum {
        /// The TTL asked for.
        ttl: Duration,
        /// The store's maximum ([`LeaseStoreConfig::max_ttl`]).
        max: Duration,
    },
    /// `now + ttl` does not fit in an [`Instant`].
    TimeOverflow,
    /// The role has used every token up to `u64::MAX`.
    TokensExhausted,
}

impl fmt::Display for LeaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseError::ZeroTtl => f.write_str("lease TTL must be greater than zero"),
            LeaseError::TtlAboveMaximum { ttl, max } => write!(
                f,
                "lease TTL {ttl:?} is above the store's maximum of {max:?}"
            ),
            LeaseError::TimeOverflow => f.write_str("now + TTL overflows the clock"),
            LeaseError::TokensExhausted => f.write_str("the role has used every fencing token"),
        }
    }
}

impl std::error::Error for LeaseError {}

/// Settings of a [`LeaseStore`], validated on construction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseStoreConfig {
    max_ttl: Duration,
}

impl LeaseStoreConfig {
    /// The default maximum TTL: one day. A longer lease means a dead leader is
    /// not replaced for longer than that, which no deployment wants.
    pub const DEFAULT_MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);

    /// A store that accepts TTLs up to `max_ttl`.
    ///
    /// # Errors
    /// [`LeaseError::ZeroTtl`] if `max_ttl` is zero: no lease could be granted.
    pub fn new(max_ttl: Duration) -> Result<Self, LeaseError> {
        if max_ttl.is_zero() {
            return Err(LeaseError::ZeroTtl);
        }
        Ok(LeaseStoreConfig { max_ttl })
    }

    /// The longest TTL a caller may ask for.
    pub fn max_ttl(&self) -> Duration {
        self.max_ttl
    }
}

impl Default for LeaseStoreConfig {
    fn default() -> Self {
        LeaseStoreConfig {
            max_ttl: Self::DEFAULT_MAX_TTL,
        }
    }
}

/// A live lease: who holds it, with which token, until when (store clock).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Lease {
    /// The holder.
    pub owner: OwnerId,
    /// The holder's fencing token.
    pub token: FencingToken,
    /// The first instant (store clock) at which the lease is expired.
    pub expires_at: Instant,
}

/// The outcome of [`LeaseStore::try_acquire_or_renew`].
///
/// `Granted` and `Renewed` are answers to the caller about its own lease, so
/// they do not repeat the caller's identity.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum LeaseResult {
    /// A new term for the caller, with a token higher than any before.
    Granted {
        /// The new term's token.
        token: FencingToken,
        /// When the lease expires unless renewed (store clock).
        expires_at: Instant,
    },
    /// The caller's live lease, extended; the token is unchanged.
    Renewed {
        /// The unchanged token of the caller's term.
        token: FencingToken,
        /// The new expiry (store clock).
        expires_at: Instant,
    },
    /// Refused: someone else holds a live lease.
    Held {
        /// The current holder, so followers can observe the leader.
        holder: Lease,
    },
}

impl LeaseResult {
    /// The caller's token if it now holds the lease (granted or renewed).
    pub fn acquired_token(&self) -> Option<FencingToken> {
        match self {
            LeaseResult::Granted { token, .. } | LeaseResult::Renewed { token, .. } => Some(*token),
            LeaseResult::Held { .. } => None,
        }
    }
}

/// The outcome of [`LeaseStore::release`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ReleaseResult {
    /// The caller held the lease with that token; it is free now.
    Released,
    /// Nothing changed: the lease is free, expired, held by someone else, or
    /// held by the caller under a different token.
    NotHeld,
}

#[derive(Clone, Debug, Default)]
struct RoleState {
    /// The highest token this role ever had; `None` until the first grant.
    highest: Option<FencingToken>,
    /// The current (possibly expired) holder; `None` when free or released.
    holder: Option<Lease>,
}

/// Leases for any number of roles, with per-role fencing tokens.
///
/// A pure state machine: it owns no clock, and each call says what time it is
/// (on the store's clock). Memory grows with the number of distinct roles ever
/// seen, because a role's highest token must never be forgotten.
#[derive(Clone, Debug)]
pub struct LeaseStore {
    config: LeaseStoreConfig,
    roles: BTreeMap<Role, RoleState>,
    latest_now: LatestNow,
    planted: BugSlot,
}

impl Default for LeaseStore {
    fn default() -> Self {
        LeaseStore::new(LeaseStoreConfig::default())
    }
}

impl LeaseStore {
    /// An empty store.
    pub fn new(config: LeaseStoreConfig) -> Self {
        LeaseStore {
            config,
            roles: BTreeMap::new(),
            latest_now: LatestNow::default(),
            planted: BugSlot::default(),
        }
    }

    /// The store's settings.
    pub fn config(&self) -> &LeaseStoreConfig {
        &self.config
    }

    /// Plants a deliberate bug (negative controls only). Bugs that are not the
    /// lease store's have no effect here.
    #[cfg(feature = "planted-bugs")]
    pub fn plant(&mut self, bug: PlantedBug) {
        self.planted.set(bug);
    }

    /// The latest instant the store has seen (its notion of "now").
    pub fn now(&self) -> Instant {
        self.latest_now.get()
    }

    /// Grants, renews, or refuses the lease of `role` to `owner` for `ttl`.
    /// See the [module documentation](self) for the contract.
    ///
    /// # Errors
    /// Bad input only: [`LeaseError::ZeroTtl`], [`LeaseError::TtlAboveMaximum`],
    /// [`LeaseError::TimeOverflow`], [`LeaseError::TokensExhausted`]. A refused
    /// error changes nothing (not even the store's latest time).
    pub fn try_acquire_or_renew(
        &mut self,
        role: &Role,
        owner: &OwnerId,
        ttl: Duration,
        now: Instant,
    ) -> Result<LeaseResult, LeaseError> {
        if ttl.is_zero() {
            return Err(LeaseError::ZeroTtl);
        }
        if ttl > self.config.max_ttl {
            return Err(LeaseError::TtlAboveMaximum {
                ttl,
                max: self.config.max_ttl,
            });
        }
        let now = self.latest_now.at(now);
        let expires_at = now.checked_add(ttl).ok_or(LeaseError::TimeOverflow)?;
        let skip_bump = self.planted.is(PlantedBug::StoreSkipsTokenBump);
        let bump_on_renewal = self.planted.is(PlantedBug::StoreBumpsTokenOnRenewal);
        let second_owner_renews = self.planted.is(PlantedBug::StoreLetsSecondOwnerRenew);

        // Look up before inserting so that the common path (an existing role)
        // never clones the role name.
        let state = match self.roles.get_mut(role.as_str()) {
            Some(state) => state,
            None => self.roles.entry(role.clone()).or_default(),
        };
        let lapsed_renews = self.planted.is(PlantedBug::StoreRenewsLapsedLease);
        let truncates = self.planted.is(PlantedBug::StoreTruncatesExpiryToSeconds);
        if let Some(holder) = state.holder.as_mut().filter(|h| {
            let expires_at = if truncates {
                Instant::from_secs(h.expires_at.as_nanos() / 1_000_000_000)
            } else {
                h.expires_at
            };
            now < expires_at || (lapsed_renews && h.owner == *owner)
        }) {
            let same_host = |a: &OwnerId, b: &OwnerId| {
                a.as_str().split('#').next() == b.as_str().split('#').next()
            };
            if holder.owner == *owner
                || second_owner_renews
                || (self.planted.is(PlantedBug::StoreKeysLeaseByHost)
                    && same_host(&holder.owner, owner))
            {
                if bump_on_renewal {
                    let token = holder.token.next().ok_or(LeaseError::TokensExhausted)?;
                    holder.token = token;
                    state.highest = Some(token);
                }
                if holder.owner != *owner {
                    holder.owner = owner.clone();
                }
                holder.expires_at = expires_at;
                let token = holder.token;
                self.latest_now.observe(now);
                return Ok(LeaseResult::Renewed { token, expires_at });
            }
            let holder = holder.clone();
            self.latest_now.observe(now);
            return Ok(LeaseResult::Held { holder });
        }

        let token = match state.highest {
            None => FencingToken::FIRST,
            Some(highest) if skip_bump => highest,
            Some(_)
                if self.planted.is(PlantedBug::StoreForgetsTokenOnRelease)
                    && state.holder.is_none() =>
            {
                FencingToken::FIRST
            }
            Some(highest) => highest.next().ok_or(LeaseError::TokensExhausted)?,
        };
        debug_assert!(
            skip_bump
                || self.planted.is(PlantedBug::StoreForgetsTokenOnRelease)
                || state.highest.is_none_or(|h| token > h),
            "a grant must carry a token above every earlier one"
        );
        state.highest = Some(token);
        state.holder = Some(Lease {
            owner: owner.clone(),
            token,
            expires_at,
        });
        self.latest_now.observe(now);
        Ok(LeaseResult::Granted { token, expires_at })
    }

    /// Frees `role`'s lease if `owner` holds it live with `token`; otherwise
    /// does nothing. Either way, the role's highest token is kept.
    pub fn release(
        &mut self,
        role: &Role,
        owner: &OwnerId,
        token: FencingToken,
        now: Instant,
    ) -> ReleaseResult {
        let now = self.latest_now.observe(now);
        let Some(state) = self.roles.get_mut(role.as_str()) else {
            return ReleaseResult::NotHeld;
        };
        match &state.holder {
            Some(h)
                if self
                    .planted
                    .is(PlantedBug::StoreReleaseDeletesUnconditionally)
                    || (now < h.expires_at && h.owner == *owner && h.token == token) =>
            {
                state.holder = None;
                ReleaseResult::Released
            }
            _ => ReleaseResult::NotHeld,
        }
    }

    /// The live holder of `role` at `now` (store clock), if any. Does not
    /// advance the store's time.
    pub fn holder(&self, role: &Role, now: Instant) -> Option<&Lease> {
        let now = self.latest_now.at(now);
        self.roles
            .get(role.as_str())?
            .holder
            .as_ref()
            .filter(|h| now < h.expires_at)
    }

    /// The highest token `role` has ever been granted, live or not.
    pub fn highest_token(&self, role: &Role) -> Option<FencingToken> {
        self.roles.get(role.as_str())?.highest
    }

    /// How many distinct roles the store remembers.
    pub fn role_count(&self) -> usize {
        self.roles.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(s: &str) -> Role {
        Role::new(s).unwrap()
    }
    fn owner(s: &str) -> OwnerId {
        OwnerId::new(s).unwrap()
    }
    const TTL: Duration = Duration::from_secs(30);

    #[test]
    fn a_refused_error_changes_nothing() {
        let mut store = LeaseStore::default();
        let (r, a) = (role("reports"), owner("a"));
        let t = Instant::from_secs(100);
        assert_eq!(
            store.try_acquire_or_renew(&r, &a, Duration::ZERO, t),
            Err(LeaseError::ZeroTtl)
        );
        assert_eq!(store.now(), Instant::ZERO);
        assert_eq!(store.role_count(), 0);
    }

    #[test]
    fn overflowing_expiry_is_an_error_not_a_panic() {
        let mut store = LeaseStore::default();
        let err = store
            .try_acquire_or_renew(&role("r"), &owner("a"), TTL, Instant::MAX)
            .unwrap_err();
        assert_eq!(err, LeaseError::TimeOverflow);
    }

    #[test]
    fn the_default_maximum_ttl_is_one_day() {
        let day = Duration::from_secs(86_400);
        assert_eq!(LeaseStoreConfig::DEFAULT_MAX_TTL, day);
        assert_eq!(LeaseStoreConfig::default().max_ttl(), day);
        let mut store = LeaseStore::default();
        assert!(store
            .try_acquire_or_renew(&role("r"), &owner("a"), day, Instant::ZERO)
            .is_ok());
        assert_eq!(
            store.try_acquire_or_renew(
                &role("s"),
                &owner("a"),
                day + Duration::from_nanos(1),
                Instant::ZERO
            ),
            Err(LeaseError::TtlAboveMaximum {
                ttl: day + Duration::from_nanos(1),
                max: day
            })
        );
    }

    #[test]
    fn release_of_unknown_role_is_a_no_op() {
        let mut store = LeaseStore::default();
        let result = store.release(&role("r"), &owner("a"), FencingToken::FIRST, Instant::ZERO);
        assert_eq!(result, ReleaseResult::NotHeld);
    }
}
