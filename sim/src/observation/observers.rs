//! The fan-out of the stream: every observation goes to the tracer, the
//! checker, when a picture is asked for, the timeline recorder, when the
//! scenario has anchored faults, their watcher, and, when a coverage
//! measure asks for them, the abstract states, in that order. Nothing else
//! feeds them.
//!
//! The three consumers are type parameters so that the stream layer does not
//! import what it feeds (the tracer, the checker and the recorder import the
//! stream); the simulation names them (`simulation::RunObservers`), and the
//! code is the same as with the types written in.

use super::{AbstractStates, Observation, Observer, SimTime};

/// The consumers of the observation stream: a tracer `T` (always), a checker
/// `C` (always), a timeline recorder `R` (when asked for) and an anchor
/// watcher `A` (when a fault waits for an event).
#[derive(Debug)]
pub(crate) struct Observers<T, C, R, A> {
    pub(crate) tracer: T,
    pub(crate) checker: C,
    pub(crate) timeline: Option<Box<R>>,
    pub(crate) anchors: Option<Box<A>>,
    /// The abstract states visited, when a coverage measure asks for them.
    pub(crate) abstract_states: Option<Box<AbstractStates>>,
}

impl<T: Observer, C: Observer, R: Observer, A: Observer> Observer for Observers<T, C, R, A> {
    #[inline(always)]
    fn observe(&mut self, at: SimTime, observation: &Observation<'_>) {
        self.tracer.observe(at, observation);
        self.checker.observe(at, observation);
        if let Some(t) = self.timeline.as_mut() {
            t.observe(at, observation);
        }
        if let Some(a) = self.anchors.as_mut() {
            a.observe(at, observation);
        }
        if let Some(s) = self.abstract_states.as_mut() {
            s.observe(at, observation);
        }
    }

    #[inline(always)]
    fn prefetch(&self, pid: u32) {
        self.checker.prefetch(pid);
    }

    #[inline(always)]
    fn prefetch_near(&self, pid: u32) {
        self.checker.prefetch_near(pid);
    }

    fn wants_pictures(&self) -> bool {
        self.timeline.is_some()
    }

    #[inline(always)]
    fn wants_attention(&self) -> bool {
        self.anchors.as_ref().is_some_and(|a| a.wants_attention())
    }
}
