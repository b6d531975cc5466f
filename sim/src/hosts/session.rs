//! One connection of a node's process to a server, as the crate's
//! production client keeps it: a sans-IO model of `fenced::postgres`'s
//! `Connection` (`src/postgres/connection.rs`) under the tokio driver's
//! bounds (`src/tokio/elector.rs`, `src/tokio/release.rs`,
//! `src/tokio/heartbeat.rs`). Every time here is the process's monotonic
//! clock (tokio's timers).
//!
//! What it mirrors, line by line:
//!
//! * **Opened on first use** (`Connection::session`): a call that finds no
//!   open session opens one while the calls after it wait (the session's
//!   `tokio::sync::Mutex`, first come first served). Opening costs
//!   [`OPEN_STEPS`] round trips with the server, in three phases, each with
//!   its own bound: the TCP handshake and PostgreSQL's startup (two round
//!   trips, `Connection::open`: `timeout(connect_timeout, connect)`), the
//!   session's settings (one, `timeout(query_timeout, setup)`), the prepared
//!   statements (two `try_join!` batches of four `prepare`s, pipelined: two
//!   round trips, `timeout(query_timeout, Self::prepare(..))`). A phase past
//!   its bound fails the open: the call that opened fails, and the next
//!   waiting call opens anew.
//! * **Calls on an open session** go out at once (one client pipelines
//!   them) and are bounded by the query bound (`query_timeout + grace`,
//!   `Connection::run`'s `timeout(self.query_timeout, call(..))`). A call
//!   past it fails and **retires** the session (`forget`): no later call
//!   uses it and the next one opens a new session; calls already on the
//!   retired one go on to their answers (they hold an `Arc<Session>`).
//! * **The caller's own bound** ([`CallBounds`]): the tokio driver tells
//!   the elector a lease call failed at the TTL (`timeout(ttl, ..)`) and a
//!   release at the retry interval, then awaits the call one bound more
//!   (`late_calls`; `release_lease`); the heartbeat task gives a beat up at
//!   its interval (`timeout(self.interval, ..)`), dropping it. A call
//!   dropped while it opens the session abandons the open (its future held
//!   the connect).
//! * **A server restart resets** the connection (the proxy's or the
//!   server's RST): the calls on it fail at once, and the next call opens a
//!   new session (`client.is_closed()`). The server tags each session with
//!   its epoch; a call sent on a session of an earlier epoch is not handled.
//!
//! * **A connect to a server that is down is refused** (the machine's
//!   kernel answers the SYN with a reset; `fenced-lab`'s proxy accepts and
//!   resets at once): the open fails one round trip after it began, not at
//!   its bound ([`Session::refused`]), and the call that opened it fails
//!   with it.
//!
//! Left out: `is_closed()` noticed without a call. (TCP's retransmissions
//! and the holding of a session's segments by a down link are the
//! network's: `engine/streams.rs`.)

use std::time::Duration;

use std::num::NonZeroU32;

use fenced::Instant;
use smallvec::SmallVec;

pub(crate) use crate::observation::{CallFailure, SessionEnd};

/// The round trips that open a session: the TCP handshake and
/// PostgreSQL's startup (steps 1–2), the session's settings (3), two
/// batches of prepared statements (4–5).
pub(crate) const OPEN_STEPS: u8 = 5;

/// The client's bounds (`[client]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SessionTimings {
    /// Steps 1–2 together, from the open's start.
    pub(crate) connect: Duration,
    /// Step 3, steps 4–5 together, and every call on the open session:
    /// `query_timeout + query_grace`.
    pub(crate) query: Duration,
}

/// What a run's processes connect with: `[client]` and `[work]
/// write_retries`, shared by every process (one copy, in the
/// `WorkerTable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClientSettings {
    /// Whether processes keep sessions (else every message stands alone).
    pub(crate) sessions: bool,
    /// The client's bounds.
    pub(crate) timings: SessionTimings,
    /// How many times a write that never reached the downstream is sent
    /// again.
    pub(crate) write_retries: u32,
}

impl ClientSettings {
    /// The settings `scenario` gives.
    pub(crate) fn of(scenario: &crate::scenario::Scenario) -> Self {
        let client = &scenario.client;
        ClientSettings {
            sessions: client.sessions(),
            timings: SessionTimings {
                connect: client.connect_timeout,
                query: client.query_bound(),
            },
            write_retries: scenario.work.write_retries,
        }
    }
}

/// How long a caller waits for one call, and how long the call lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallBounds {
    /// The caller is told the call failed this long after it began, unless
    /// answered (`None`: only the session's own bounds end it).
    pub(crate) caller: Option<Duration>,
    /// The call is dropped this long after it began (`None`: never).
    pub(crate) abandon: Option<Duration>,
}

impl CallBounds {
    /// A call only the session's bounds end (a unit's write).
    pub(crate) const UNBOUNDED: CallBounds = CallBounds {
        caller: None,
        abandon: None,
    };

    /// The caller gives up at `bound` and the call lives one bound more
    /// (the tokio driver's lease calls and releases).
    pub(crate) fn awaited_late(bound: Duration) -> Self {
        CallBounds {
            caller: Some(bound),
            abandon: Some(bound.saturating_mul(2)),
        }
    }

    /// The caller gives up at `bound` and drops the call (a heartbeat).
    pub(crate) fn dropped_at(bound: Duration) -> Self {
        CallBounds {
            caller: Some(bound),
            abandon: Some(bound),
        }
    }
}

/// What a call on the wire carries, and its answer echoes: the session's
/// epoch at the server, its connection (each a TCP stream of its own) and
/// the call's number in the session. `epoch` 0 is no session (datagrams).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CallTag {
    pub(crate) epoch: u32,
    pub(crate) conn: u32,
    pub(crate) call: u32,
}

impl CallTag {
    /// A datagram's tag: no session.
    pub(crate) const NONE: CallTag = CallTag {
        epoch: 0,
        conn: 0,
        call: 0,
    };

    /// Whether the message travels on a session (and so is answered).
    #[inline(always)]
    pub(crate) fn on_session(self) -> bool {
        self.epoch != 0
    }

    /// Whether it travels on a session of an epoch other than the server's
    /// `epoch` now: a restart reset that connection, and the server never
    /// reads what was sent on it.
    #[inline(always)]
    pub(crate) fn reset_by(self, epoch: u32) -> bool {
        self.on_session() && self.epoch != epoch
    }
}

/// What a lease answer names, in one word: on a session, its connection and
/// call (the top bit set); without one (datagrams), the elector's request
/// id. One word keeps the answer — and so every event of the queue — within
/// a cache line (an event is 64 bytes; a second tag made it 80, and its
/// slot two lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reply(u64);

impl Reply {
    const SESSION: u64 = 1 << 63;

    /// The answer to a request sent with `tag`, whose elector id is `id`.
    pub(crate) fn answering(tag: CallTag, id: fenced::RequestId) -> Self {
        if tag.on_session() {
            Reply(Self::SESSION | (u64::from(tag.conn & 0x7FFF_FFFF) << 32) | u64::from(tag.call))
        } else {
            debug_assert!(id.0 < Self::SESSION, "request ids count from 1");
            Reply(id.0)
        }
    }

    /// Whether it answers a call on a session.
    #[inline(always)]
    pub(crate) fn on_session(self) -> bool {
        self.0 & Self::SESSION != 0
    }

    /// The call answered (on a session).
    pub(crate) fn call(self) -> u32 {
        self.0 as u32
    }

    /// The connection it travels on (on a session).
    pub(crate) fn conn(self) -> u32 {
        ((self.0 >> 32) as u32) & 0x7FFF_FFFF
    }

    /// The elector's request id (without a session).
    pub(crate) fn request(self) -> fenced::RequestId {
        fenced::RequestId(self.0)
    }
}

/// What the session asks its host to do, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SessionOutput<C> {
    /// Send open step `step` of connection `conn` to the server.
    SendOpen { conn: u32, step: u8 },
    /// Send the call `payload`, tagged.
    Send { payload: C, tag: CallTag },
    /// Tell the caller the call failed.
    Failed { payload: C, why: CallFailure },
    /// The session opened (for observers).
    Opened,
    /// The session ended (for observers).
    Closed { why: SessionEnd },
}

/// What the network tells a session of its connection, apart from the
/// server's answers: the server's restart reset it, or its connect was
/// refused (the server was down).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnectionEvent {
    /// [`Session::reset`]: the server restarted while at `epoch`.
    Reset { epoch: u32 },
    /// [`Session::refused`]: the connect of connection `conn` was refused.
    Refused { conn: u32 },
}

/// What an answer meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answered<C> {
    /// The caller waits for it: hand it over.
    ToCaller(C),
    /// The caller gave up on it already: the answer is dropped.
    Late,
    /// No call of this session waits for it (reset or timed out since).
    Unknown,
}

/// The outputs of one input.
pub(crate) type Outputs<C> = SmallVec<[SessionOutput<C>; 4]>;

#[derive(Clone, Copy, Debug)]
struct Sent {
    /// Connections count from 1 (a niche keeps `Option<Sent>` small).
    conn: NonZeroU32,
    epoch: u32,
    at: Instant,
}

/// A call's deadline on the process's clock, or never: a `u64` of
/// nanoseconds (`u64::MAX`: never), half an `Option<Instant>`, so that a
/// call fits in less than a cache line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Deadline(u64);

impl Deadline {
    const NEVER: Deadline = Deadline(u64::MAX);

    /// `bound` after `from`, if there is a bound.
    fn after(from: Instant, bound: Option<Duration>) -> Self {
        bound.map_or(Self::NEVER, |b| Deadline((from + b).as_nanos()))
    }

    fn reached(self, now: Instant) -> bool {
        self.0 <= now.as_nanos()
    }
}

#[derive(Clone, Copy, Debug)]
struct Call<C> {
    payload: C,
    id: u32,
    /// Whether the caller still waits for it.
    caller_waits: bool,
    /// When the caller gives up on it ([`CallBounds::caller`]).
    caller_at: Deadline,
    /// When it is dropped ([`CallBounds::abandon`]).
    abandon_at: Deadline,
    /// On the wire (else it waits for an open).
    sent: Option<Sent>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Closed,
    Opening {
        conn: u32,
        step: u8,
        /// When the step's phase began.
        phase_began: Instant,
        /// The call whose `session()` holds the open.
        opener: u32,
    },
    Open {
        conn: u32,
        epoch: u32,
    },
}

/// One session of a process to one server. See the [module docs](self).
#[derive(Clone, Debug)]
pub(crate) struct Session<C> {
    state: State,
    next_conn: u32,
    next_call: u32,
    /// Every live call, in the order they began: those waiting for an open
    /// and those on the wire (of this connection or a retired one). One
    /// inline: a session almost always has one call at most in flight (a
    /// slow store's queue of waiting calls spills to the heap).
    calls: SmallVec<[Call<C>; 1]>,
    /// The host's timer for [`next_timeout`](Self::next_timeout): its
    /// generation (a re-armed one is stale) and its time.
    pub(crate) timer_generation: u32,
    pub(crate) timer_at: Option<Instant>,
}

impl<C: Copy> Default for Session<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: Copy> Session<C> {
    /// A session not yet opened.
    pub(crate) fn new() -> Self {
        Session {
            state: State::Closed,
            next_conn: 1,
            next_call: 1,
            calls: SmallVec::new(),
            timer_generation: 0,
            timer_at: None,
        }
    }

    /// Whether it is open or opening (a server restart resets it).
    pub(crate) fn is_connected(&self) -> bool {
        !matches!(self.state, State::Closed)
    }

    /// Whether any call is on the wire (a server restart fails it).
    fn has_sent(&self) -> bool {
        self.calls.iter().any(|c| c.sent.is_some())
    }

    /// Whether a restart of its server has anything to reset.
    pub(crate) fn resettable(&self) -> bool {
        self.is_connected() || self.has_sent()
    }

    /// A call begins at `now`: it goes out at once on an open session, else
    /// waits for the open (which it starts, if none is under way).
    pub(crate) fn call(
        &mut self,
        payload: C,
        bounds: CallBounds,
        now: Instant,
        out: &mut Outputs<C>,
    ) {
        let id = self.next_call;
        self.next_call = self.next_call.wrapping_add(1).max(1);
        self.calls.push(Call {
            payload,
            id,
            caller_waits: true,
            caller_at: Deadline::after(now, bounds.caller),
            abandon_at: Deadline::after(now, bounds.abandon),
            sent: None,
        });
        self.pump(now, out);
    }

    /// Step `step` of connection `conn`'s open was answered by a server at
    /// `epoch`.
    pub(crate) fn opened(
        &mut self,
        conn: u32,
        step: u8,
        epoch: u32,
        now: Instant,
        out: &mut Outputs<C>,
    ) {
        let State::Opening {
            conn: c,
            step: s,
            opener,
            ..
        } = self.state
        else {
            return;
        };
        if c != conn || s != step {
            return;
        }
        if step >= OPEN_STEPS {
            self.state = State::Open { conn, epoch };
            out.push(SessionOutput::Opened);
            self.pump(now, out);
            return;
        }
        let next = step + 1;
        let phase_began = match self.state {
            // Steps 3 and 4 begin a phase with a bound of its own.
            State::Opening { phase_began, .. } if next != 3 && next != 4 => phase_began,
            _ => now,
        };
        self.state = State::Opening {
            conn,
            step: next,
            phase_began,
            opener,
        };
        out.push(SessionOutput::SendOpen { conn, step: next });
    }

    /// An answer to call `call` arrived.
    pub(crate) fn answered(&mut self, call: u32) -> Answered<C> {
        let Some(i) = self
            .calls
            .iter()
            .position(|c| c.id == call && c.sent.is_some())
        else {
            return Answered::Unknown;
        };
        let call = self.calls.remove(i);
        if call.caller_waits {
            Answered::ToCaller(call.payload)
        } else {
            Answered::Late
        }
    }

    /// The server restarted while at most at `epoch` (its epoch before the
    /// restart): the connection is reset — an open under way fails, and
    /// every call on the wire of a session of that epoch or earlier fails
    /// at once. The next waiting call opens anew.
    pub(crate) fn reset(&mut self, epoch: u32, now: Instant, out: &mut Outputs<C>) {
        // Told first that the session ended, then which calls it took along
        // (so an observer reads the cause before its effects).
        let opener = match self.state {
            State::Open { epoch: e, .. } if e <= epoch => {
                self.state = State::Closed;
                out.push(SessionOutput::Closed {
                    why: SessionEnd::Reset,
                });
                None
            }
            State::Opening { opener, .. } => {
                self.state = State::Closed;
                out.push(SessionOutput::Closed {
                    why: SessionEnd::Reset,
                });
                Some(opener)
            }
            _ => None,
        };
        let mut i = 0;
        while i < self.calls.len() {
            let call = self.calls[i];
            if call.sent.is_some_and(|s| s.epoch <= epoch) {
                self.calls.remove(i);
                if call.caller_waits {
                    out.push(SessionOutput::Failed {
                        payload: call.payload,
                        why: CallFailure::Reset,
                    });
                }
            } else {
                i += 1;
            }
        }
        if let Some(opener) = opener {
            self.fail_opener(opener, CallFailure::Reset, out);
        }
        self.pump(now, out);
    }

    /// Acts on `event` ([`reset`](Self::reset) or
    /// [`refused`](Self::refused)).
    pub(crate) fn connection_event(
        &mut self,
        event: ConnectionEvent,
        now: Instant,
        out: &mut Outputs<C>,
    ) {
        match event {
            ConnectionEvent::Reset { epoch } => self.reset(epoch, now, out),
            ConnectionEvent::Refused { conn } => self.refused(conn, now, out),
        }
    }

    /// The first segment of connection `conn`'s open was refused: its
    /// server is down, and the machine's kernel (or `fenced-lab`'s proxy in
    /// front of a restarting server) reset it. The open fails at once, as
    /// `Connection::open`'s `connect` returns its error without waiting for
    /// `connect_timeout`: the call that opened fails, and the next waiting
    /// call opens anew — refused in turn while the server stays down, as
    /// the next waiter on the session's mutex would be. A refusal of a
    /// connection the session has since given up (its open timed out or
    /// was abandoned) changes nothing.
    pub(crate) fn refused(&mut self, conn: u32, now: Instant, out: &mut Outputs<C>) {
        let State::Opening {
            conn: opening,
            opener,
            ..
        } = self.state
        else {
            return;
        };
        if opening != conn {
            return;
        }
        self.state = State::Closed;
        out.push(SessionOutput::Closed {
            why: SessionEnd::Refused,
        });
        self.fail_opener(opener, CallFailure::Refused, out);
        self.pump(now, out);
    }

    /// Acts on every bound due at `now`.
    pub(crate) fn handle_timeout(
        &mut self,
        now: Instant,
        t: &SessionTimings,
        out: &mut Outputs<C>,
    ) {
        let mut i = 0;
        while i < self.calls.len() {
            let mut call = self.calls[i];
            if call.caller_waits && call.caller_at.reached(now) {
                call.caller_waits = false;
                self.calls[i].caller_waits = false;
                out.push(SessionOutput::Failed {
                    payload: call.payload,
                    why: CallFailure::CallerBound,
                });
            }
            if call.abandon_at.reached(now) {
                self.calls.remove(i);
                if let State::Opening { opener, .. } = self.state {
                    if opener == call.id {
                        self.state = State::Closed;
                        out.push(SessionOutput::Closed {
                            why: SessionEnd::Abandoned,
                        });
                    }
                }
                continue;
            }
            if let Some(sent) = call.sent.filter(|s| s.at + t.query <= now) {
                self.calls.remove(i);
                if call.caller_waits {
                    out.push(SessionOutput::Failed {
                        payload: call.payload,
                        why: CallFailure::QueryTimeout,
                    });
                }
                if matches!(self.state, State::Open { conn, .. } if conn == sent.conn.get()) {
                    self.state = State::Closed;
                    out.push(SessionOutput::Closed {
                        why: SessionEnd::Retired,
                    });
                }
                continue;
            }
            i += 1;
        }
        if let State::Opening {
            step,
            phase_began,
            opener,
            ..
        } = self.state
        {
            if phase_began + phase_bound(step, t) <= now {
                self.state = State::Closed;
                out.push(SessionOutput::Closed {
                    why: SessionEnd::OpenTimedOut,
                });
                self.fail_opener(opener, CallFailure::OpenTimeout, out);
            }
        }
        self.pump(now, out);
    }

    /// The earliest bound still ahead, on the process's clock: the open's
    /// phase bound and each call's caller, abandon and query bounds.
    ///
    /// A plain loop over `Deadline`'s nanoseconds (`NEVER`, `u64::MAX`, is
    /// no bound) rather than a `flat_map` of three `Option<Instant>`s a
    /// call chained to the open's and `flatten().min()`: asked after every
    /// input of a process (`rearm`), that iterator cost 119 instructions a
    /// call, 6.5 % of a 500-node fleet's (callgrind). The same minimum: an
    /// `Instant` is its nanoseconds, and a bound of `u64::MAX` ns (the
    /// saturated sum) is kept apart from none by `bounded`.
    pub(crate) fn next_timeout(&self, t: &SessionTimings) -> Option<Instant> {
        let mut next = u64::MAX;
        let mut bounded = false;
        let mut take = |at: u64| {
            next = next.min(at);
            bounded = true;
        };
        if let State::Opening {
            step, phase_began, ..
        } = self.state
        {
            take((phase_began + phase_bound(step, t)).as_nanos());
        }
        for c in &self.calls {
            if c.caller_waits && c.caller_at != Deadline::NEVER {
                take(c.caller_at.0);
            }
            if c.abandon_at != Deadline::NEVER {
                take(c.abandon_at.0);
            }
            if let Some(sent) = c.sent {
                take((sent.at + t.query).as_nanos());
            }
        }
        bounded.then(|| Instant::from_nanos(next))
    }

    /// Whether the host must set a timer for the session's next bound, and
    /// with which generation and time: only when none is armed or the next
    /// bound comes before the armed one (which then goes stale). A timer
    /// that fires before anything is due (the call it was set for was
    /// answered) finds nothing, and the session re-arms then: a timer per
    /// bound's length, not one per call — a follower asks every retry
    /// interval, and nearly every call is answered in milliseconds. The
    /// host clears `timer_at` when the timer fires.
    pub(crate) fn rearm(&mut self, t: &SessionTimings) -> Option<(u32, Instant)> {
        let next = self.next_timeout(t)?;
        if self.timer_at.is_some_and(|armed| armed <= next) {
            return None;
        }
        self.timer_generation = self.timer_generation.wrapping_add(1);
        self.timer_at = Some(next);
        Some((self.timer_generation, next))
    }

    /// The opener's `session()` returned an error: its call fails and ends.
    fn fail_opener(&mut self, opener: u32, why: CallFailure, out: &mut Outputs<C>) {
        if let Some(i) = self.calls.iter().position(|c| c.id == opener) {
            let call = self.calls.remove(i);
            if call.caller_waits {
                out.push(SessionOutput::Failed {
                    payload: call.payload,
                    why,
                });
            }
        }
    }

    /// Sends the waiting calls on an open session, or starts an open for
    /// them.
    fn pump(&mut self, now: Instant, out: &mut Outputs<C>) {
        match self.state {
            State::Open { conn, epoch } => {
                let Some(nonzero) = NonZeroU32::new(conn) else {
                    debug_assert!(false, "connections count from 1");
                    return;
                };
                for call in self.calls.iter_mut().filter(|c| c.sent.is_none()) {
                    call.sent = Some(Sent {
                        conn: nonzero,
                        epoch,
                        at: now,
                    });
                    out.push(SessionOutput::Send {
                        payload: call.payload,
                        tag: CallTag {
                            epoch,
                            conn,
                            call: call.id,
                        },
                    });
                }
            }
            State::Closed => {
                let Some(opener) = self.calls.iter().find(|c| c.sent.is_none()) else {
                    return;
                };
                let conn = self.next_conn;
                self.next_conn = self.next_conn.wrapping_add(1).max(1);
                self.state = State::Opening {
                    conn,
                    step: 1,
                    phase_began: now,
                    opener: opener.id,
                };
                out.push(SessionOutput::SendOpen { conn, step: 1 });
            }
            State::Opening { .. } => {}
        }
    }
}

/// The bound of the phase step `step` belongs to.
fn phase_bound(step: u8, t: &SessionTimings) -> Duration {
    if step <= 2 {
        t.connect
    } else {
        t.query
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
