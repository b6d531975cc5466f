//! Sessions' TCP streams in the network: each arrives in order, and what a
//! cut or an isolation holds back waits for the link instead of being lost.
//!
//! A message a host marks as travelling on a session
//! ([`Envelope::stream`](super::Envelope::stream)) crosses the network as
//! a TCP segment would: a loss is a retransmission delay
//! ([`Network::stream_transit`](super::network::Network::stream_transit)),
//! it never overtakes the stream's previous segment (head-of-line
//! blocking), and a link that is down holds it until the link is up again
//! — as `fenced-lab`'s proxy stalls a blocked direction and delivers, late
//! and in order, on heal. A datagram (no stream) is dropped by a down link
//! and may be lost, duplicated or overtaken, as before.

use rustc_hash::FxHashMap;

use super::limits::MAX_DEFERRED_MESSAGES;
use crate::time::SimTime;

/// A stream's key: the process slot, which of its sessions, which of that
/// session's connections (each a TCP stream of its own), which way.
pub(crate) type StreamKey = u64;

/// The streams of a run: when each one's last segment arrives, and what
/// down links hold back.
#[derive(Debug)]
pub(crate) struct Streams<E> {
    /// Looked up by key, never iterated: the order of a hash map reaches no
    /// output.
    last: FxHashMap<StreamKey, SimTime>,
    /// Held back, in the order they were held.
    held: Vec<(StreamKey, E)>,
}

impl<E> Streams<E> {
    pub(crate) fn new() -> Self {
        Streams {
            last: FxHashMap::default(),
            held: Vec::new(),
        }
    }

    /// When a segment of `stream` that the network would deliver at `at`
    /// arrives: not before the stream's previous one (equal times keep
    /// their order: the queue breaks ties by insertion).
    pub(crate) fn in_order(&mut self, stream: StreamKey, at: SimTime) -> SimTime {
        let last = self.last.entry(stream).or_insert(SimTime::ZERO);
        let at = at.max(*last);
        *last = at;
        at
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

/// The key of connection `conn` of `process`'s session number `session`
/// (0–3), towards the server (`up`) or back. Connections are told apart by
/// their low 24 bits (a session opens 16 million before one repeats).
pub(crate) fn stream_key(process: u32, session: u8, conn: u32, up: bool) -> StreamKey {
    (u64::from(process) << 32)
        | (u64::from(conn & 0xFF_FFFF) << 8)
        | (u64::from(session & 3) << 1)
        | u64::from(up)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_delivers_in_order_and_streams_are_apart() {
        let mut s: Streams<()> = Streams::new();
        let (a, b) = (stream_key(1, 0, 1, true), stream_key(1, 0, 1, false));
        assert_ne!(a, b);
        assert_ne!(a, stream_key(2, 0, 1, true));
        assert_ne!(a, stream_key(1, 1, 1, true));
        // A new connection is a new stream.
        assert_ne!(a, stream_key(1, 0, 2, true));
        let t = SimTime::from_nanos;
        assert_eq!(s.in_order(a, t(50)), t(50));
        // Drawn earlier than the one before it: waits behind it.
        assert_eq!(s.in_order(a, t(30)), t(50));
        assert_eq!(s.in_order(a, t(70)), t(70));
        // Another stream is not held behind it.
        assert_eq!(s.in_order(b, t(10)), t(10));
    }
}
