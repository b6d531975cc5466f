//! Validated settings of an [`Elector`](crate::Elector).

use std::fmt;
use std::time::Duration;

use crate::id::{OwnerId, Role};

/// The timing knobs of an elector, before validation. Every field has a
/// default (`ElectorTimings::default()`), so callers name only what they change.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ElectorTimings {
    /// How long each granted or renewed lease lasts on the store. Default 30 s.
    pub lease_ttl: Duration,
    /// How often a leader renews, counted from the send time of its last
    /// successful renewal. Default 10 s.
    pub renew_interval: Duration,
    /// How often a follower asks for the lease, and how long a request may
    /// stay unanswered before it is re-sent (the first stays outstanding: its
    /// late answer still counts while its validity lies ahead). Default 2 s.
    pub retry_interval: Duration,
    /// How much earlier than `lease_ttl` a leader gives up on its own, to
    /// absorb clock drift between it and the store. `None` means
    /// `lease_ttl / 10`.
    pub safety_margin: Option<Duration>,
    /// After stepping down on its own local deadline, or after hearing no
    /// answer at all for `lease_ttl - safety_margin`, how long the node stays
    /// quiet (sends nothing) before contending again. `None` means
    /// `lease_ttl + 2 × retry_interval`. See [`ElectorConfig::rejoin_delay`]
    /// for the trade-off.
    pub rejoin_delay: Option<Duration>,
    /// Whether a leader that steps down on its local deadline releases the
    /// lease (with its token). Default true. See
    /// [`ElectorConfig::release_on_deadline`].
    pub release_on_deadline: bool,
    /// Random shortening of each interval, to keep followers from asking in
    /// lock-step. `None`: no jitter.
    pub jitter: Option<Jitter>,
}

impl Default for ElectorTimings {
    fn default() -> Self {
        ElectorTimings {
            lease_ttl: Duration::from_secs(30),
            renew_interval: Duration::from_secs(10),
            retry_interval: Duration::from_secs(2),
            safety_margin: None,
            rejoin_delay: None,
            release_on_deadline: true,
            jitter: None,
        }
    }
}

impl ElectorTimings {
    /// The safety margin in effect: the one given, or `lease_ttl / 10`. The
    /// only place this default is written.
    pub fn effective_safety_margin(&self) -> Duration {
        self.safety_margin.unwrap_or(self.lease_ttl / 10)
    }

    /// The rejoin delay in effect: the one given, or `lease_ttl + 2 ×
    /// retry_interval` (saturating). The only place this default is written.
    pub fn effective_rejoin_delay(&self) -> Duration {
        self.rejoin_delay.unwrap_or_else(|| {
            self.lease_ttl
                .saturating_add(self.retry_interval.saturating_mul(2))
        })
    }
}

/// Jitter drawn from an RNG the caller seeds; the elector has no other source of
/// randomness.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Jitter {
    /// Each interval is shortened by a uniform fraction in `[0, fraction)` of
    /// itself. Must be in `[0, 1)`. Shortening (never lengthening) keeps a
    /// jittered renewal inside the lease.
    pub fraction: f64,
    /// Seed of the elector's `rand_chacha` RNG.
    pub seed: u64,
}

/// Why a set of [`ElectorTimings`] was rejected.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigError {
    /// `lease_ttl` is zero.
    ZeroLeaseTtl,
    /// `renew_interval` is zero.
    ZeroRenewInterval,
    /// `retry_interval` is zero.
    ZeroRetryInterval,
    /// The safety margin leaves no time to lead: it is not below `lease_ttl`.
    SafetyMarginTooLarge {
        /// The margin asked for.
        safety_margin: Duration,
        /// The lease TTL.
        lease_ttl: Duration,
    },
    /// A leader would reach its local deadline before its first renewal:
    /// `renew_interval` must be below `lease_ttl - safety_margin`.
    RenewIntervalTooLong {
        /// The renew interval asked for.
        renew_interval: Duration,
        /// The lease TTL.
        lease_ttl: Duration,
        /// The safety margin (given or defaulted).
        safety_margin: Duration,
    },
    /// The jitter fraction is not in `[0, 1)`.
    JitterOutOfRange {
        /// The fraction asked for.
        fraction: f64,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::ZeroLeaseTtl => f.write_str("lease_ttl must be greater than zero"),
            ConfigError::ZeroRenewInterval => {
                f.write_str("renew_interval must be greater than zero")
            }
            ConfigError::ZeroRetryInterval => {
                f.write_str("retry_interval must be greater than zero")
            }
            ConfigError::SafetyMarginTooLarge {
                safety_margin,
                lease_ttl,
            } => write!(
                f,
                "safety_margin ({safety_margin:?}) must be less than lease_ttl ({lease_ttl:?})"
            ),
            ConfigError::RenewIntervalTooLong {
                renew_interval,
                lease_ttl,
                safety_margin,
            } => write!(
                f,
                "renew_interval ({renew_interval:?}) must be less than lease_ttl - safety_margin \
                 ({lease_ttl:?} - {safety_margin:?} = {:?}), or the leader steps down before it renews",
                lease_ttl.saturating_sub(*safety_margin)
            ),
            ConfigError::JitterOutOfRange { fraction } => {
                write!(f, "jitter fraction {fraction} must be in [0, 1)")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// The validated settings of one elector: who it is, which role it contends
/// for, and its timings. A value of this type is always consistent.
///
/// Laid out in this order (`repr(C)`): the timings every request and every
/// timeout of a follower reads come last, in one cache line of their own
/// when the config ends on a line boundary (as it does inside an
/// [`Elector`](super::Elector) in the simulator's host row); the rest,
/// which a follower never reads, before them.
#[derive(Clone, Debug, PartialEq)]
#[repr(C)]
pub struct ElectorConfig {
    renew_interval: Duration,
    jitter: Option<Jitter>,
    release_on_deadline: bool,
    owner: OwnerId,
    role: Role,
    lease_ttl: Duration,
    safety_margin: Duration,
    retry_interval: Duration,
    rejoin_delay: Duration,
}

impl ElectorConfig {
    /// Validates `timings` for `owner` contending for `role`.
    ///
    /// # Errors
    /// A [`ConfigError`] naming the first rule broken: zero intervals, a margin
    /// not below the TTL, `renew_interval >= lease_ttl - safety_margin`, or a
    /// jitter fraction outside `[0, 1)`.
    pub fn new(owner: OwnerId, role: Role, timings: ElectorTimings) -> Result<Self, ConfigError> {
        let ElectorTimings {
            lease_ttl,
            renew_interval,
            retry_interval,
            release_on_deadline,
            jitter,
            ..
        } = timings;
        if lease_ttl.is_zero() {
            return Err(ConfigError::ZeroLeaseTtl);
        }
        if renew_interval.is_zero() {
            return Err(ConfigError::ZeroRenewInterval);
        }
        if retry_interval.is_zero() {
            return Err(ConfigError::ZeroRetryInterval);
        }
        let safety_margin = timings.effective_safety_margin();
        if safety_margin >= lease_ttl {
            return Err(ConfigError::SafetyMarginTooLarge {
                safety_margin,
                lease_ttl,
            });
        }
        if renew_interval >= lease_ttl - safety_margin {
            return Err(ConfigError::RenewIntervalTooLong {
                renew_interval,
                lease_ttl,
                safety_margin,
            });
        }
        if let Some(jitter) = jitter {
            if !(0.0..1.0).contains(&jitter.fraction) {
                return Err(ConfigError::JitterOutOfRange {
                    fraction: jitter.fraction,
                });
            }
        }
        Ok(ElectorConfig {
            owner,
            role,
            lease_ttl,
            renew_interval,
            retry_interval,
            safety_margin,
            rejoin_delay: timings.effective_rejoin_delay(),
            release_on_deadline,
            jitter,
        })
    }

    /// Who this elector is.
    pub fn owner(&self) -> &OwnerId {
        &self.owner
    }
    /// The role it contends for.
    pub fn role(&self) -> &Role {
        &self.role
    }
    /// The TTL it asks the store for.
    pub fn lease_ttl(&self) -> Duration {
        self.lease_ttl
    }
    /// A leader's renewal period.
    pub fn renew_interval(&self) -> Duration {
        self.renew_interval
    }
    /// A follower's retry period, and the timeout of any unanswered request.
    pub fn retry_interval(&self) -> Duration {
        self.retry_interval
    }
    /// How much earlier than the TTL a leader steps down on its own.
    pub fn safety_margin(&self) -> Duration {
        self.safety_margin
    }
    /// How long the elector stays silent after stepping down on its own
    /// deadline, or after hearing no answer at all for a whole validity
    /// (`lease_ttl - safety_margin`) as a follower.
    ///
    /// Why this exists: a node whose requests reach the store but whose
    /// answers are lost (an asymmetric partition) holds a lease it cannot use.
    /// As a leader it steps down on its deadline; but if it kept asking, each
    /// request would renew the lease again at the store (same owner, live), and
    /// nobody could ever take over. The same trap catches a deaf *follower*
    /// that happened to be granted the lease without hearing it. So the
    /// elector goes quiet for `rejoin_delay`: long enough (by default
    /// `lease_ttl + 2 × retry_interval`) for any lease it holds to lapse and
    /// for a healthy follower, asking every `retry_interval`, to win it.
    ///
    /// The trade-off: a node that went quiet for a passing reason waits this
    /// long before contending again. With other healthy nodes that costs
    /// nothing (they take over); a single-node deployment is leaderless for up
    /// to `rejoin_delay` longer. Zero restores the eager behaviour and its trap.
    pub fn rejoin_delay(&self) -> Duration {
        self.rejoin_delay
    }
    /// Whether a deadline step-down also releases the lease. Releasing lets a
    /// successor take over at once instead of after the lease lapses, when the
    /// store can still hear the old leader (the asymmetric case). It is always
    /// safe: the store frees the lease only for this owner with this token.
    pub fn release_on_deadline(&self) -> bool {
        self.release_on_deadline
    }
    /// The jitter, if any.
    pub fn jitter(&self) -> Option<Jitter> {
        self.jitter
    }
    /// How long a leader may act on one successful renewal:
    /// `lease_ttl - safety_margin`, counted from that request's send time.
    pub fn validity(&self) -> Duration {
        self.lease_ttl - self.safety_margin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(timings: ElectorTimings) -> Result<ElectorConfig, ConfigError> {
        ElectorConfig::new(OwnerId::new("a").unwrap(), Role::new("r").unwrap(), timings)
    }

    #[test]
    fn defaults_are_those_of_the_design() {
        let c = config(ElectorTimings::default()).unwrap();
        assert_eq!(c.lease_ttl(), Duration::from_secs(30));
        assert_eq!(c.renew_interval(), Duration::from_secs(10));
        assert_eq!(c.retry_interval(), Duration::from_secs(2));
        assert_eq!(c.safety_margin(), Duration::from_secs(3));
        assert_eq!(c.rejoin_delay(), Duration::from_secs(34));
        assert!(c.release_on_deadline());
        assert_eq!(c.validity(), Duration::from_secs(27));
        assert_eq!(c.jitter(), None);
    }

    #[test]
    fn the_settings_given_are_the_settings_kept() {
        let jitter = Jitter {
            fraction: 0.25,
            seed: 9,
        };
        let c = config(ElectorTimings {
            safety_margin: Some(Duration::from_secs(5)),
            rejoin_delay: Some(Duration::from_secs(7)),
            release_on_deadline: false,
            jitter: Some(jitter),
            ..ElectorTimings::default()
        })
        .unwrap();
        assert_eq!(c.safety_margin(), Duration::from_secs(5));
        assert_eq!(c.validity(), Duration::from_secs(25));
        assert_eq!(c.rejoin_delay(), Duration::from_secs(7));
        assert!(!c.release_on_deadline());
        assert_eq!(c.jitter(), Some(jitter));
    }

    #[test]
    fn zero_intervals_are_rejected() {
        let zero = Duration::ZERO;
        let t = ElectorTimings::default();
        assert_eq!(
            config(ElectorTimings {
                lease_ttl: zero,
                ..t
            }),
            Err(ConfigError::ZeroLeaseTtl)
        );
        assert_eq!(
            config(ElectorTimings {
                renew_interval: zero,
                ..t
            }),
            Err(ConfigError::ZeroRenewInterval)
        );
        assert_eq!(
            config(ElectorTimings {
                retry_interval: zero,
                ..t
            }),
            Err(ConfigError::ZeroRetryInterval)
        );
    }

    #[test]
    fn renew_interval_must_leave_room_inside_the_validity() {
        let t = ElectorTimings::default();
        // 27 s of validity: 27 s is too long, 26.999 s is fine.
        let err = config(ElectorTimings {
            renew_interval: Duration::from_secs(27),
            ..t
        })
        .unwrap_err();
        assert!(matches!(err, ConfigError::RenewIntervalTooLong { .. }));
        assert!(err
            .to_string()
            .contains("must be less than lease_ttl - safety_margin"));
        assert!(config(ElectorTimings {
            renew_interval: Duration::from_millis(26_999),
            ..t
        })
        .is_ok());
        // renew_interval >= lease_ttl is the plainest case.
        assert!(config(ElectorTimings {
            renew_interval: Duration::from_secs(30),
            ..t
        })
        .is_err());
    }

    #[test]
    fn a_margin_as_large_as_the_ttl_is_rejected() {
        let err = config(ElectorTimings {
            safety_margin: Some(Duration::from_secs(30)),
            ..ElectorTimings::default()
        })
        .unwrap_err();
        assert!(matches!(err, ConfigError::SafetyMarginTooLarge { .. }));
    }

    #[test]
    fn jitter_must_be_a_fraction_below_one() {
        for fraction in [1.0, -0.1, f64::NAN] {
            let err = config(ElectorTimings {
                jitter: Some(Jitter { fraction, seed: 1 }),
                ..ElectorTimings::default()
            })
            .unwrap_err();
            assert!(
                matches!(err, ConfigError::JitterOutOfRange { .. }),
                "{fraction}"
            );
        }
        assert!(config(ElectorTimings {
            jitter: Some(Jitter {
                fraction: 0.5,
                seed: 1
            }),
            ..ElectorTimings::default()
        })
        .is_ok());
    }
}
