//! The options of a [`LeaseLeaderElector`](super::LeaseLeaderElector): who
//! it is, its timings, its clock, how long shutdown waits for the work, and
//! where its history goes.

use std::time::Duration;

use super::Clock;
use crate::elector::ElectorTimings;
use crate::history::Recorder;
use crate::id::OwnerId;

/// Who an elector is and how it times itself; the role comes with
/// [`LeaseLeaderElector::run`](super::LeaseLeaderElector::run).
#[derive(Clone, Debug)]
pub struct ElectorOptions {
    pub(super) owner: OwnerId,
    pub(super) timings: ElectorTimings,
    pub(super) clock: Option<Clock>,
    pub(super) stop_timeout: Duration,
    pub(super) recorder: Recorder,
    #[cfg(feature = "planted-bugs")]
    pub(super) planted: Option<crate::planted::PlantedBug>,
}

impl ElectorOptions {
    /// How long shutdown waits, by default, for the work to return after its
    /// token is cancelled.
    pub const DEFAULT_STOP_TIMEOUT: Duration = Duration::from_secs(10);

    /// Options for `owner` with the default [`ElectorTimings`] (30 s TTL, renew
    /// every 10 s, retry every 2 s), a clock of its own, and
    /// [`DEFAULT_STOP_TIMEOUT`](Self::DEFAULT_STOP_TIMEOUT).
    ///
    /// `owner` names one *life* of the process: append an incarnation (a
    /// start time, a UUID) to the host name, so a restarted node is a new owner.
    pub fn new(owner: OwnerId) -> Self {
        ElectorOptions {
            owner,
            timings: ElectorTimings::default(),
            clock: None,
            stop_timeout: Self::DEFAULT_STOP_TIMEOUT,
            recorder: Recorder::off(),
            #[cfg(feature = "planted-bugs")]
            planted: None,
        }
    }

    /// Replaces the timings. They are validated by
    /// [`run`](super::LeaseLeaderElector::run), which fails with
    /// [`RunError::Config`](super::RunError::Config) before doing anything if they are inconsistent.
    pub fn with_timings(mut self, timings: ElectorTimings) -> Self {
        self.timings = timings;
        self
    }

    /// Uses `clock` as the elector's local clock instead of one captured by
    /// [`LeaseLeaderElector::new`](super::LeaseLeaderElector::new). Share one clock between the electors and
    /// in-process stores of a process so their instants read in one frame.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// How long shutdown waits for the work to return after cancelling its
    /// token, before aborting the work's task and releasing the lease anyway.
    /// Abort takes effect at the work's next `.await`; a thread blocked inside
    /// the work stays blocked (the fencing token is what protects writes then).
    pub fn with_stop_timeout(mut self, stop_timeout: Duration) -> Self {
        self.stop_timeout = stop_timeout;
        self
    }

    /// Records the elector's history into `recorder` (see
    /// [`crate::history`]): requests sent with their local time, the store's
    /// answers and what the elector made of them, failed requests, terms
    /// started and ended, releases. Off by default.
    pub fn with_recorder(mut self, recorder: Recorder) -> Self {
        self.recorder = recorder;
        self
    }

    /// Plants `bug` in the elector [`run`](super::LeaseLeaderElector::run) drives (see
    /// [`Elector::plant`](crate::Elector::plant)).
    ///
    /// For negative controls only — a test that shows a checker catches the
    /// bug in a real history. Never use it in production: every planted bug
    /// breaks the elector's safety or liveness on purpose.
    #[cfg(feature = "planted-bugs")]
    pub fn with_planted_bug(mut self, bug: crate::planted::PlantedBug) -> Self {
        self.planted = Some(bug);
        self
    }

    /// Where the history goes ([`Recorder::off`] unless set).
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Who the elector is.
    pub fn owner(&self) -> &OwnerId {
        &self.owner
    }

    /// The timings, as given (validated by `run`).
    pub fn timings(&self) -> &ElectorTimings {
        &self.timings
    }

    /// See [`with_stop_timeout`](Self::with_stop_timeout).
    pub fn stop_timeout(&self) -> Duration {
        self.stop_timeout
    }
}
