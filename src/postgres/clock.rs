//! Whose clock decides `now`, and the mapping of database timestamps onto the
//! crate's [`Instant`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::PostgresError;
use crate::time::Instant;

/// Which clock decides `now` for a PostgreSQL store.
///
/// In production it is always [`TimeSource::Database`]: every statement reads
/// `clock_timestamp()` on the server, after taking its locks, so one clock —
/// the database's — decides every expiry, whatever the clients' clocks say.
///
/// [`TimeSource::Manual`] exists for tests that compare the store with the
/// pure state machines step by step, which needs both to see the same `now`.
/// The SQL is the same statement either way: each call passes the manual
/// instant as a parameter, and the functions read
/// `coalesce(that parameter, clock_timestamp())`. Nothing else changes, so a
/// test on a manual clock runs the production code path but for where `now`
/// comes from.
#[derive(Clone, Debug, Default)]
pub enum TimeSource {
    /// The database server's `clock_timestamp()` (the default).
    #[default]
    Database,
    /// An instant the caller sets: for tests only.
    Manual(ManualClock),
}

impl TimeSource {
    /// The `p_now` parameter of the SQL functions: `NULL` for the database
    /// clock.
    pub(crate) fn now_parameter(&self) -> Option<SystemTime> {
        match self {
            TimeSource::Database => None,
            TimeSource::Manual(clock) => Some(to_system_time(clock.now())),
        }
    }
}

/// A clock a test moves by hand, shared by every clone. Its instants are on
/// the database clock's frame ([`Instant`] = nanoseconds since the Unix
/// epoch), truncated to the database's microseconds when sent.
#[derive(Clone, Debug)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading `start`.
    pub fn new(start: Instant) -> ManualClock {
        ManualClock {
            nanos: Arc::new(AtomicU64::new(start.as_nanos())),
        }
    }

    /// The instant the clock reads.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(self.nanos.load(Ordering::SeqCst))
    }

    /// Sets the clock, forwards or backwards (the store clamps backward steps
    /// per role, like the pure store).
    pub fn set(&self, now: Instant) {
        self.nanos.store(now.as_nanos(), Ordering::SeqCst);
    }

    /// Moves the clock forward by `by` (saturating).
    pub fn advance(&self, by: Duration) {
        self.set(self.now().saturating_add(by));
    }
}

/// A database timestamp as an [`Instant`]: nanoseconds since the Unix epoch
/// on the database clock. PostgreSQL keeps microseconds, so these instants
/// are always whole microseconds (a multiple of 1 000 ns).
///
/// # Errors
/// [`PostgresError::TimeOutOfRange`] before 1970 or after 2554 (the end of a
/// `u64` of nanoseconds).
pub fn instant_from_database(timestamp: SystemTime) -> Result<Instant, PostgresError> {
    let since_epoch = timestamp
        .duration_since(UNIX_EPOCH)
        .map_err(|_| PostgresError::TimeOutOfRange)?;
    u64::try_from(since_epoch.as_nanos())
        .map(Instant::from_nanos)
        .map_err(|_| PostgresError::TimeOutOfRange)
}

/// The inverse of [`instant_from_database`] (sub-microsecond parts are
/// truncated when the database stores it).
pub(crate) fn to_system_time(instant: Instant) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(instant.as_nanos())
}

/// A span as whole microseconds for the database, rounded **up** so that a
/// non-zero TTL never becomes an empty lease; `None` past `i64::MAX`.
pub(crate) fn micros_rounded_up(span: Duration) -> Option<i64> {
    let micros = span.as_nanos().div_ceil(1_000);
    i64::try_from(micros).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_instants_are_nanoseconds_since_the_unix_epoch() {
        let at = UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456);
        let instant = instant_from_database(at).unwrap();
        assert_eq!(instant.as_nanos(), 1_700_000_000_123_456_000);
        assert_eq!(to_system_time(instant), at);
        assert!(matches!(
            instant_from_database(UNIX_EPOCH - Duration::from_secs(1)),
            Err(PostgresError::TimeOutOfRange)
        ));
    }

    #[test]
    fn spans_round_up_to_whole_microseconds() {
        assert_eq!(micros_rounded_up(Duration::from_nanos(1)), Some(1));
        assert_eq!(micros_rounded_up(Duration::from_nanos(1_000)), Some(1));
        assert_eq!(micros_rounded_up(Duration::from_nanos(1_001)), Some(2));
        assert_eq!(micros_rounded_up(Duration::from_secs(30)), Some(30_000_000));
        assert_eq!(micros_rounded_up(Duration::MAX), None);
    }

    #[test]
    fn a_manual_clock_is_shared_by_its_clones() {
        let clock = ManualClock::new(Instant::from_secs(10));
        let copy = clock.clone();
        copy.advance(Duration::from_millis(1_500));
        assert_eq!(clock.now(), Instant::from_millis(11_500));
        clock.set(Instant::from_secs(3));
        assert_eq!(
            TimeSource::Manual(copy).now_parameter(),
            Some(UNIX_EPOCH + Duration::from_secs(3))
        );
        assert_eq!(TimeSource::Database.now_parameter(), None);
    }
}
