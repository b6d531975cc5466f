//! Histories of real runs (cargo feature `history`, implied by `tokio`):
//! what one process did, as JSON lines, for `fenced-sim check-history` to
//! merge with the other processes' and judge with the simulator's checker.
//!
//! # The format (version 1)
//!
//! One file per process (one [`Recorder`]), UTF-8, one JSON object per line,
//! each line ended by `\n`:
//!
//! 1. The first line is the [`Header`]: `"history": "fenced"`, the format
//!    `version`, what the process is (`kind`: `node`, `downstream` or `lab`),
//!    for a node its `node` id, `incarnation` and `owner` id, the OS `pid`,
//!    the `clock` the timestamps are on, and the run's [`Settings`] (the
//!    elector's timings, fencing, the liveness TTL).
//! 2. Every other line is one [`Line`]: `at_ns` (the history clock, see
//!    below) and an [`Event`], tagged by `event`:
//!
//! ```text
//! {"history":"fenced","version":1,"kind":"node","node":"node-a","incarnation":1,"owner":"node-a#1","pid":4242,"clock":"linux-monotonic-raw-syscall","settings":{"role":"reports","lease_ttl_ns":3000000000,"renew_interval_ns":1000000000,"retry_interval_ns":500000000,"safety_margin_ns":300000000,"fencing":true}}
//! {"at_ns":81234000000,"event":"process-started"}
//! {"at_ns":81234050000,"event":"request-sent","request":1,"local_ns":0}
//! {"at_ns":81235110000,"event":"lease-handled","request":1,"answer":"granted","token":1,"expires_at_ns":3001060000,"store_now_ns":1060000}
//! {"at_ns":81235120000,"event":"response-handled","request":1,"disposition":"applied","acquired":1,"renewal":false}
//! {"at_ns":81235130000,"event":"term-started","token":1}
//! {"at_ns":81235140000,"event":"work-started","token":1,"unit":1,"local_ns":1090000}
//! {"at_ns":81235200000,"event":"write-sent","token":1,"unit":1}
//! {"at_ns":81235900000,"event":"write-handled","writer":"node-a#1","token":1,"unit":1,"outcome":"accepted"}
//! {"at_ns":81240000000,"event":"term-ended","token":1,"reason":"stopped"}
//! {"at_ns":81240010000,"event":"release-handled","token":1,"released":true}
//! {"at_ns":81240020000,"event":"process-stopped"}
//! ```
//!
//! Three clocks appear, each named by its field:
//! * `at_ns`: the **history clock** ([`clock::now_ns`]): `CLOCK_MONOTONIC`
//!   read by a raw system call, shared by every process of the machine, not
//!   distorted by libfaketime nor by pausing the process. Lines of one file
//!   are in `at_ns` order (the stamp is taken under the file's lock).
//! * `local_ns`: the process's **own clock** (its elector's
//!   [`Clock`](crate::tokio::Clock)), the one the elector times its deadline
//!   on — faked clocks show here, and the `local-deadline` invariant is
//!   judged on it.
//! * `expires_at_ns`, `store_now_ns`: the **lease store's clock** (the
//!   database's, for PostgreSQL); `store_now_ns` is the store's now when it
//!   decided (`expires_at − ttl`, to within the store's rounding of the TTL,
//!   1 µs for PostgreSQL). Lease exclusivity is judged on this clock.
//!
//! Readers must ignore fields they do not know; a new event or a changed
//! meaning bumps [`VERSION`].
//!
//! # Guarantees
//!
//! * **Off by default, no cost when off**: a [`Recorder::off`] is `None`
//!   inside; every instrumented call site is one branch, and events are built
//!   only when recording ([`Recorder::record`] takes a closure).
//! * **A line per write**: each line is encoded whole and handed to the
//!   kernel with one `write` on a file opened for appending, so after a
//!   `SIGKILL` the file holds every line recorded before it, and at most the
//!   last one cut short — which `check-history` reports as a warning.
//! * **Never in the way**: a failed write is counted
//!   ([`Recorder::write_errors`]), never an error of the instrumented call.
//!
//! # Who records what
//!
//! * [`LeaseLeaderElector`](crate::tokio::LeaseLeaderElector)
//!   ([`ElectorOptions::with_recorder`](crate::tokio::ElectorOptions::with_recorder)):
//!   requests sent, the store's answers as received (`lease-handled`, for any
//!   backend), what the elector made of them, failures, terms started and
//!   ended, releases.
//! * [`HeartbeatTask`](crate::tokio::HeartbeatTask): heartbeats;
//!   [`InProcessRegistry`](crate::tokio::InProcessRegistry) and the
//!   PostgreSQL registry: members joining and leaving as the registry
//!   reports them.
//! * [`SharedFencedStore`](crate::tokio::SharedFencedStore) and the
//!   PostgreSQL fenced table: each write's outcome (`write-handled`).
//! * The node program: `work-started` (with the local time of its leadership
//!   check), `write-sent`, `work-cancelled` ([`Recorder::record`]) and
//!   `process-stopped` at a graceful exit ([`Recorder::process_stopped`]).
//! * A lab runner (`kind: lab`): `fault` spans and `process-killed`.

pub mod clock;
mod event;
mod recorder;

pub use event::{
    Disposition, EndReason, Event, Header, Kind, LeaseAnswer, Line, Settings, WriteVerdict, FORMAT,
    VERSION,
};
pub use recorder::{HistoryError, Recorder, ENV_VAR};
