//! The tracer as an observer: each observation of the stream is folded into
//! the hash (`hash.rs`) and, when a writer is attached, becomes its record
//! and text line (or none, for the trace-silent ones).

use super::*;

impl Observer for Tracer {
    /// Folds the observation into the hash (and writes its line) when it is
    /// a trace record; trace-silent observations and pauses nested inside
    /// another pause leave the trace as it is.
    #[inline(always)]
    fn observe(&mut self, at: SimTime, observation: &Observation<'_>) {
        let t = at.as_nanos();
        if self.fold(t, observation) && self.out.is_some() {
            self.write_observation(t, observation);
        }
    }
}

impl Tracer {
    /// Writes the text line of `observation`, a trace record.
    #[cold]
    #[inline(never)]
    fn write_observation(&mut self, t: u64, observation: &Observation<'_>) {
        // `fold` and `record_of` each list the trace-silent observations
        // (both matches are exhaustive, so a new observation must be placed
        // in each): a record the hash counts must have its line.
        let record = record_of(observation);
        debug_assert!(
            record.is_some(),
            "the trace hash folded {observation:?} but the text has no line for it"
        );
        if let Some((on, record)) = record {
            self.write_line(t, on, &record);
        }
    }
}

/// The record of `observation` and the host it happened on; `None` for
/// trace-silent observations and nested pauses.
fn record_of<'a>(observation: &Observation<'a>) -> Option<(TraceHost<'a>, Record<'a>)> {
    let host = TraceHost::of;
    let (on, record) = match *observation {
        Observation::ProcessStarted(p) => (host(HostRef::Process(p)), Record::ProcessStarted),
        Observation::ProcessCrashed(p) => (host(HostRef::Process(p)), Record::ProcessCrashed),
        Observation::ProcessStopped(p) => (host(HostRef::Process(p)), Record::ProcessStopped),
        Observation::WorkFailed { process, led } => {
            (host(HostRef::Process(process)), Record::WorkFailed { led })
        }
        Observation::Skipped { node, what } => (host(HostRef::Node(node)), Record::Skipped(what)),
        Observation::Healed => (host(HostRef::LeaseStore), Record::Healed),
        Observation::Paused { host: h, depth } => {
            if depth != 1 {
                return None;
            }
            (host(h), Record::Paused)
        }
        Observation::Resumed {
            host: h,
            depth,
            deferred,
        } => {
            if depth != 0 {
                return None;
            }
            (host(h), Record::Resumed { deferred })
        }
        Observation::Isolated { host: h, start } => (host(h), Record::Isolated { start }),
        Observation::Cut { from, to, start } => (
            host(from),
            Record::Cut {
                to: host(to),
                start,
            },
        ),
        Observation::Partitioned { start, groups, .. } => (
            host(HostRef::LeaseStore),
            Record::Partitioned { start, groups },
        ),
        Observation::Dropped {
            from,
            to,
            kind,
            reason,
            ..
        } => (
            host(from),
            Record::Dropped {
                to: host(to),
                kind,
                reason,
            },
        ),
        Observation::LeaseHandled {
            from,
            request,
            result,
        } => (
            host(HostRef::LeaseStore),
            Record::LeaseHandled {
                from: host(HostRef::Process(from)),
                request,
                result,
            },
        ),
        Observation::LeaseRejected {
            from,
            request,
            error,
        } => (
            host(HostRef::LeaseStore),
            Record::LeaseRejected {
                from: host(HostRef::Process(from)),
                request,
                error,
            },
        ),
        Observation::ReleaseHandled {
            from,
            token,
            released,
        } => (
            host(HostRef::LeaseStore),
            Record::ReleaseHandled {
                from: host(HostRef::Process(from)),
                token,
                released,
            },
        ),
        Observation::HeartbeatHandled { from, joined } => (
            host(HostRef::LeaseStore),
            Record::HeartbeatHandled {
                from: host(HostRef::Process(from)),
                joined,
            },
        ),
        Observation::MemberLeft(node) => (
            host(HostRef::LeaseStore),
            Record::MemberLeft {
                node: host(HostRef::Node(node)),
            },
        ),
        Observation::ResponseHandled {
            process,
            request,
            disposition,
            acquired,
            ..
        } => (
            host(HostRef::Process(process)),
            Record::ResponseHandled {
                request,
                disposition,
                acquired,
            },
        ),
        Observation::RequestFailed { process, request } => (
            host(HostRef::Process(process)),
            Record::RequestFailed { request },
        ),
        Observation::TermStarted { process, token } => (
            host(HostRef::Process(process)),
            Record::TermStarted { token },
        ),
        Observation::TermEnded {
            process,
            token,
            reason,
            why,
            ..
        } => (
            host(HostRef::Process(process)),
            Record::TermEnded { token, reason, why },
        ),
        Observation::ClockJumped {
            host: on,
            by_nanos,
            moved,
        } => (host(on), Record::ClockJumped { by_nanos, moved }),
        Observation::ClockSlewed {
            host: on,
            by_nanos,
            over_nanos,
        } => (
            host(on),
            Record::ClockSlewed {
                by_nanos,
                over_nanos,
            },
        ),
        Observation::Restarted { host: on, durable } => (host(on), Record::Restarted { durable }),
        Observation::Holder {
            server,
            holder,
            token,
        } => (
            host(server.unwrap_or(HostRef::LeaseStore)),
            Record::Holder {
                truth: server.is_none(),
                holder: holder.map(|p| p.owner),
                token,
            },
        ),
        Observation::WorkStarted {
            process,
            token,
            unit,
            ..
        } => (
            host(HostRef::Process(process)),
            Record::WorkStarted { token, unit },
        ),
        Observation::WriteSent {
            process,
            token,
            unit,
        } => (
            host(HostRef::Process(process)),
            Record::WriteSent { token, unit },
        ),
        Observation::WorkCancelled {
            process,
            token,
            unit,
        } => (
            host(HostRef::Process(process)),
            Record::WorkCancelled { token, unit },
        ),
        Observation::WriteHandled {
            from,
            token,
            unit,
            outcome,
        } => (
            host(HostRef::Downstream),
            Record::WriteHandled {
                from: host(HostRef::Process(from)),
                token,
                unit,
                outcome,
            },
        ),
        Observation::SessionOpened { process, session } => (
            host(HostRef::Process(process)),
            Record::SessionOpened { session },
        ),
        Observation::SessionClosed {
            process,
            session,
            why,
        } => (
            host(HostRef::Process(process)),
            Record::SessionClosed { session, why },
        ),
        Observation::CallFailed { process, call, why } => (
            host(HostRef::Process(process)),
            Record::CallFailed { call, why },
        ),
        Observation::RequestSent { .. }
        | Observation::MemberJoined(_)
        | Observation::LiveMembers(_)
        | Observation::RegistryAnswered { .. }
        | Observation::TokenAnswered { .. }
        | Observation::FaultBegan { .. }
        | Observation::FaultEnded { .. } => return None,
    };
    Some((on, record))
}
