//! Sessions' TCP streams in the network: each arrives in order, and what a
//! cut or an isolation holds back waits for the link instead of being lost.
//!
//! A message a host marks as travelling on a session
//! ([`Envelope::stream`](super::Envelope::stream)) crosses the network as
//! a TCP segment would: a loss is a retransmission delay
//! ([`Network::stream_transit`](super::network::Network::stream_transit)),
//! it never overtakes the previous segment of its connection (head-of-line
//! blocking), and a link that is down holds it until the link is up again
//! — as `fenced-lab`'s proxy stalls a blocked direction and delivers, late
//! and in order, on heal. A datagram (no stream) is dropped by a down link
//! and may be lost, duplicated or overtaken, as before.

use super::limits::MAX_DEFERRED_MESSAGES;
use crate::time::SimTime;

/// A stream: a process slot, which of its sessions (0–3), which connection
/// of that session, and which way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StreamKey {
    process: u32,
    /// `session * 2 + up`.
    lane: u8,
    conn: u32,
}

/// The key of connection `conn` of `process`'s session number `session`
/// (0–3), towards the server (`up`) or back.
pub(crate) fn stream_key(process: u32, session: u8, conn: u32, up: bool) -> StreamKey {
    StreamKey {
        process,
        lane: (session & 3) * 2 + u8::from(up),
        conn,
    }
}

/// One way of one session of a process: its latest connection and when
/// that connection's last segment arrives.
#[derive(Clone, Copy, Debug, Default)]
struct Lane {
    conn: u32,
    last: SimTime,
}

/// The lanes of one process slot, in one cache line.
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(64))]
struct Lanes([Lane; 4]);

/// The streams of a run: when each one's last segment arrives, and what
/// down links hold back.
#[derive(Debug)]
pub(crate) struct Streams<E> {
    /// By process slot: the ways of its sessions (the lease store's two and
    /// the worker's each way take six lanes; two lines a slot).
    lanes: Vec<[Lanes; 2]>,
    /// Held back, in the order they were held.
    held: Vec<(StreamKey, E)>,
}

impl<E> Streams<E> {
    pub(crate) fn new() -> Self {
        Streams {
            lanes: Vec::new(),
            held: Vec::new(),
        }
    }

    /// When a segment of `stream` that the network would deliver at `at`
    /// arrives: not before its connection's previous one (equal times keep
    /// their order: the queue breaks ties by insertion). Only a session's
    /// latest connection is ordered: a segment of a connection the session
    /// has since replaced (a straggler of a retired one) goes at its own
    /// time — a new connection never waits behind an old one's
    /// retransmissions.
    pub(crate) fn in_order(&mut self, stream: StreamKey, at: SimTime) -> SimTime {
        let slot = stream.process as usize;
        if self.lanes.len() <= slot {
            self.lanes.resize(slot + 1, Default::default());
        }
        let lanes = &mut self.lanes[slot][usize::from(stream.lane / 4)].0;
        let lane = &mut lanes[usize::from(stream.lane % 4)];
        if stream.conn == lane.conn {
            let at = at.max(lane.last);
            lane.last = at;
            at
        } else if stream.conn > lane.conn || lane.conn == 0 {
            *lane = Lane {
                conn: stream.conn,
                last: at,
            };
            at
        } else {
            at
        }
    }

    /// Prefetches process `pid`'s lanes (a hint: none before its first
    /// session message, so nothing in a run of datagrams).
    #[inline(always)]
    pub(crate) fn prefetch(&self, pid: u32) {
        if let Some(lanes) = self.lanes.get(pid as usize) {
            super::prefetch_lines(lanes, 2);
        }
    }

    /// Holds `event` of `stream` back until its link is up; hands it back
    /// when [`MAX_DEFERRED_MESSAGES`] are held already (a full buffer: the
    /// caller drops it).
    pub(crate) fn hold(&mut self, stream: StreamKey, event: E) -> Option<E> {
        if self.held.len() >= MAX_DEFERRED_MESSAGES {
            return Some(event);
        }
        self.held.push((stream, event));
        None
    }

    /// Whether anything is held back.
    #[inline(always)]
    pub(crate) fn holds_any(&self) -> bool {
        !self.held.is_empty()
    }

    /// Everything held back, in order, for the caller to release or hold
    /// again.
    pub(crate) fn take_held(&mut self) -> Vec<(StreamKey, E)> {
        std::mem::take(&mut self.held)
    }

    /// What is held back, for reports.
    pub(crate) fn held(&self) -> impl Iterator<Item = &E> {
        self.held.iter().map(|(_, e)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_delivers_in_order_and_streams_are_apart() {
        let mut s: Streams<()> = Streams::new();
        let (a, b) = (stream_key(1, 0, 1, true), stream_key(1, 0, 1, false));
        assert_ne!(a, b);
        assert_ne!(a, stream_key(2, 0, 1, true));
        assert_ne!(a, stream_key(1, 1, 1, true));
        let t = SimTime::from_nanos;
        assert_eq!(s.in_order(a, t(50)), t(50));
        // Drawn earlier than the one before it: waits behind it.
        assert_eq!(s.in_order(a, t(30)), t(50));
        assert_eq!(s.in_order(a, t(70)), t(70));
        // Another stream is not held behind it.
        assert_eq!(s.in_order(b, t(10)), t(10));
        assert_eq!(s.in_order(stream_key(1, 1, 1, true), t(10)), t(10));
        assert_eq!(s.in_order(stream_key(1, 2, 1, true), t(10)), t(10));
        // A new connection is a new stream: it never waits behind the old
        // one, and the old one's stragglers go at their own time.
        let (new, old) = (stream_key(1, 0, 2, true), stream_key(1, 0, 1, true));
        assert_eq!(s.in_order(new, t(20)), t(20));
        assert_eq!(s.in_order(new, t(15)), t(20));
        assert_eq!(s.in_order(old, t(5)), t(5));
        assert_eq!(s.in_order(new, t(21)), t(21));
    }
}
