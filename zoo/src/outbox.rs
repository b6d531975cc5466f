//! The part every zoo client shares: its output queue, its clock guard and
//! its request-id counter.

use std::collections::VecDeque;

use fenced::LatestNow;

use crate::Instant;

/// What a client model hands its driver, plus the two pieces of bookkeeping
/// every client keeps beside it.
///
/// * The **output queue**: inputs [`push`](Outbox::push) outputs in order,
///   the client's `poll_output` [`pop`](Outbox::pop)s them first in, first
///   out.
/// * The **clock guard**: the latest `now` the client has been told, so its
///   time never runs backwards even if the driver's clock jumps back (an
///   earlier `now` counts as the latest seen). Real libraries read a
///   monotonic clock; a jump back of the wall clock does not move it.
/// * The **request ids**: `1, 2, 3, …` for the client's life, never reused,
///   so a late answer to an abandoned request is recognised and dropped.
#[derive(Clone, Debug)]
pub(crate) struct Outbox<O> {
    outputs: VecDeque<O>,
    latest_now: LatestNow,
    last_request_id: u64,
}

impl<O> Outbox<O> {
    /// An empty queue, no time seen, no request sent.
    pub(crate) fn new() -> Self {
        Outbox {
            outputs: VecDeque::new(),
            latest_now: LatestNow::default(),
            last_request_id: 0,
        }
    }

    /// Queues `output` behind those not yet polled.
    #[inline]
    pub(crate) fn push(&mut self, output: O) {
        self.outputs.push_back(output);
    }

    /// The oldest output not yet polled, or `None` when drained: the body of
    /// the client's `poll_output`.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<O> {
        self.outputs.pop_front()
    }

    /// Records `now` and returns the client's time: `now`, or the latest seen
    /// if `now` is earlier. Every input calls it first.
    #[inline]
    pub(crate) fn observe(&mut self, now: Instant) -> Instant {
        self.latest_now.observe(now)
    }

    /// The client's time at `now` without recording it (for `&self` getters).
    #[inline]
    pub(crate) fn at(&self, now: Instant) -> Instant {
        self.latest_now.at(now)
    }

    /// A fresh request id: one more than the last, starting at 1.
    #[inline]
    pub(crate) fn next_request_id(&mut self) -> u64 {
        self.last_request_id += 1;
        self.last_request_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_come_out_in_order_and_time_and_ids_only_go_forward() {
        let mut outbox = Outbox::new();
        outbox.push(1);
        outbox.push(2);
        assert_eq!(
            (outbox.pop(), outbox.pop(), outbox.pop()),
            (Some(1), Some(2), None)
        );
        assert_eq!(outbox.observe(Instant::from_secs(5)), Instant::from_secs(5));
        assert_eq!(outbox.observe(Instant::from_secs(3)), Instant::from_secs(5));
        assert_eq!(outbox.at(Instant::from_secs(9)), Instant::from_secs(9));
        assert_eq!(outbox.observe(Instant::from_secs(4)), Instant::from_secs(5));
        assert_eq!([outbox.next_request_id(), outbox.next_request_id()], [1, 2]);
    }
}
