//! The fan-out of the stream: every observation goes to the tracer, the
//! checker and, when a picture is asked for, the timeline recorder, in that
//! order. Nothing else feeds them.
//!
//! The three consumers are type parameters so that the stream layer does not
//! import what it feeds (the tracer, the checker and the recorder import the
//! stream); the simulation names them (`simulation::RunObservers`), and the
//! code is the same as with the types written in.

use super::{Observation, Observer, SimTime};

/// The consumers of the observation stream: a tracer `T` (always), a checker
/// `C` (always) and a timeline recorder `R` (when asked for).
#[derive(Debug)]
pub(crate) struct Observers<T, C, R> {
    pub(crate) tracer: T,
    pub(crate) checker: C,
    pub(crate) timeline: Option<Box<R>>,
}

impl<T: Observer, C: Observer, R: Observer> Observer for Observers<T, C, R> {
    #[inline(always)]
    fn observe(&mut self, at: SimTime, observation: &Observation<'_>) {
        self.tracer.observe(at, observation);
        self.checker.observe(at, observation);
        if let Some(t) = self.timeline.as_mut() {
            t.observe(at, observation);
        }
    }

    fn wants_pictures(&self) -> bool {
        self.timeline.is_some()
    }
}
