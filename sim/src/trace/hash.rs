//! The trace hash, folded straight from each observation: a tag, the true
//! time, the host's code, then the record's numeric fields in a fixed order.
//! No record and no name is built on this path (it runs for every
//! observation of every run); the text trace maps observations to records
//! (`observe.rs`) only when a writer is attached.

use super::*;
use crate::observation::{NodeRef, ProcessRef};

/// The endpoint of the first node; the lease store is 0, the downstream 1.
const FIRST_NODE_CODE: u64 = 2;

/// A host's stable code: 0 lease-store, 1 downstream, `2 + index` a node as
/// an endpoint; a process is its node's code with the incarnation in the
/// high bits (so two lives of one node hash differently).
#[inline]
fn code(host: HostRef<'_>) -> u64 {
    match host {
        HostRef::LeaseStore => 0,
        HostRef::Downstream => 1,
        HostRef::Node(node) => node_code(node),
        HostRef::Process(p) => process_code(p),
        // Another protocol's servers: the top bit keeps them apart from
        // every node and process code.
        HostRef::Server { endpoint, .. } => (1 << 63) | u64::from(endpoint),
    }
}

#[inline]
fn node_code(node: NodeRef<'_>) -> u64 {
    FIRST_NODE_CODE + u64::from(node.index)
}

#[inline]
fn process_code(p: ProcessRef<'_>) -> u64 {
    node_code(p.node) | (u64::from(p.incarnation) << 32)
}

const LEASE_STORE_CODE: u64 = 0;
const DOWNSTREAM_CODE: u64 = 1;

impl Tracer {
    #[inline]
    fn word(&mut self, w: u64) {
        self.hash = (self.hash.rotate_left(5) ^ w).wrapping_mul(HASH_MULTIPLIER);
    }

    /// Folds a text into the hash: its length, then 8 bytes at a time. Only
    /// other designs' records carry text: kept out of line so the fenced
    /// protocol's hot path stays lean.
    #[cold]
    #[inline(never)]
    fn bytes(&mut self, text: &[u8]) {
        self.word(text.len() as u64);
        for chunk in text.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.word(u64::from_le_bytes(word));
        }
    }

    /// Begins a record at true time `t` on the host coded `on`, tagged `tag`.
    #[inline]
    fn begin(&mut self, t: u64, on: u64, tag: u64) {
        self.records += 1;
        self.word(t);
        self.word(on);
        self.word(tag);
    }

    fn token_word(token: Option<FencingToken>) -> u64 {
        token.map_or(0, FencingToken::get)
    }

    /// Folds `observation` at true time `t` into the hash; returns whether
    /// it is a trace record (`false`: trace-silent, or a pause nested inside
    /// another pause, which leaves the trace as it is).
    #[inline(always)]
    pub(super) fn fold(&mut self, t: u64, observation: &Observation<'_>) -> bool {
        match *observation {
            Observation::ProcessStarted(p) => self.begin(t, process_code(p), 1),
            Observation::ProcessCrashed(p) => self.begin(t, process_code(p), 2),
            Observation::ProcessStopped(p) => self.begin(t, process_code(p), 25),
            Observation::WorkFailed { process, led } => {
                self.begin(t, process_code(process), 26);
                self.word(u64::from(led));
            }
            Observation::Skipped { node, what } => {
                self.begin(t, node_code(node), 24);
                self.word(what as u64);
            }
            Observation::Healed => self.begin(t, LEASE_STORE_CODE, 23),
            Observation::Paused { host, depth } => {
                if depth != 1 {
                    return false;
                }
                self.begin(t, code(host), 3);
            }
            Observation::Resumed {
                host,
                depth,
                deferred,
            } => {
                if depth != 0 {
                    return false;
                }
                self.begin(t, code(host), 4);
                self.word(deferred);
            }
            Observation::Isolated { host, start } => {
                self.begin(t, code(host), 5);
                self.word(u64::from(start));
            }
            Observation::Cut { from, to, start } => {
                self.begin(t, code(from), 6);
                self.word(code(to));
                self.word(u64::from(start));
            }
            Observation::Partitioned { start, .. } => {
                self.begin(t, LEASE_STORE_CODE, 7);
                self.word(u64::from(start));
            }
            Observation::Dropped {
                from,
                to,
                kind,
                reason,
                ..
            } => {
                self.begin(t, code(from), 8);
                self.word(code(to));
                self.word(kind as u64);
                self.word(reason.code());
            }
            Observation::LeaseHandled {
                from,
                request,
                result,
            } => {
                self.begin(t, LEASE_STORE_CODE, 9);
                self.word(process_code(from));
                self.word(request);
                let (kind, token, expires_at) = match result {
                    LeaseResult::Granted { token, expires_at } => (1, token, expires_at),
                    LeaseResult::Renewed { token, expires_at } => (2, token, expires_at),
                    LeaseResult::Held { holder } => (3, &holder.token, &holder.expires_at),
                };
                self.word(kind);
                self.word(token.get());
                self.word(expires_at.as_nanos());
            }
            Observation::LeaseRejected { from, request, .. } => {
                self.begin(t, LEASE_STORE_CODE, 10);
                self.word(process_code(from));
                self.word(request);
            }
            Observation::ReleaseHandled {
                from,
                token,
                released,
            } => {
                self.begin(t, LEASE_STORE_CODE, 11);
                self.word(process_code(from));
                self.word(token.get());
                self.word(u64::from(released));
            }
            Observation::HeartbeatHandled { from, joined } => {
                self.begin(t, LEASE_STORE_CODE, 12);
                self.word(process_code(from));
                self.word(u64::from(joined));
            }
            Observation::MemberLeft(node) => {
                self.begin(t, LEASE_STORE_CODE, 13);
                self.word(node_code(node));
            }
            Observation::ResponseHandled {
                process,
                request,
                disposition,
                acquired,
                ..
            } => {
                self.begin(t, process_code(process), 14);
                self.word(request);
                // Fixed codes: part of the hash's stable encoding.
                self.word(match disposition {
                    ResponseDisposition::Applied => 0,
                    ResponseDisposition::Stale => 1,
                    ResponseDisposition::TooLate => 2,
                    ResponseDisposition::AlreadyReleased => 3,
                });
                self.word(Self::token_word(acquired));
            }
            Observation::RequestFailed { process, request } => {
                self.begin(t, process_code(process), 15);
                self.word(request);
            }
            Observation::TermStarted { process, token } => {
                self.begin(t, process_code(process), 16);
                self.word(token.get());
            }
            Observation::TermEnded {
                process,
                token,
                reason,
                why,
                ..
            } => {
                self.begin(t, process_code(process), 17);
                self.word(token.get());
                self.word(match reason {
                    StepDownReason::LocalDeadline => 1,
                    StepDownReason::Superseded { token, .. } => 2 | (token.get() << 8),
                    StepDownReason::NewTerm { token } => 3 | (token.get() << 8),
                    StepDownReason::Stopped => 4,
                    StepDownReason::Abdicated => 5,
                });
                if let Some(why) = why {
                    self.bytes(why.as_bytes());
                }
            }
            Observation::ClockJumped {
                host,
                by_nanos,
                moved,
            } => {
                // A step that moves the host's timing hashes as it always
                // did; one its monotonic clock ignores is told apart.
                self.begin(t, code(host), 41 | u64::from(!moved) << 8);
                self.word(by_nanos as u64);
            }
            Observation::ClockSlewed {
                host,
                by_nanos,
                over_nanos,
            } => {
                self.begin(t, code(host), 41 | 2 << 8);
                self.word(by_nanos as u64);
                self.word(over_nanos);
            }
            Observation::Restarted { host, durable } => {
                self.begin(t, code(host), 42 | u64::from(durable) << 8);
            }
            Observation::Holder {
                server,
                holder,
                token,
            } => {
                let on = server.map_or(LEASE_STORE_CODE, code);
                self.begin(t, on, 40 | u64::from(server.is_none()) << 8);
                if let Some(p) = holder {
                    self.bytes(p.owner.as_str().as_bytes());
                }
                self.word(token.map_or(0, |t| t.wrapping_add(1)));
            }
            Observation::WorkStarted {
                process,
                token,
                unit,
                ..
            } => {
                self.begin(t, process_code(process), 18);
                self.word(token.get());
                self.word(unit);
            }
            Observation::WriteSent {
                process,
                token,
                unit,
            } => {
                self.begin(t, process_code(process), 19);
                self.word(token.get());
                self.word(unit);
            }
            Observation::WorkCancelled {
                process,
                token,
                unit,
            } => {
                self.begin(t, process_code(process), 20);
                self.word(token.get());
                self.word(unit);
            }
            Observation::WriteHandled {
                from,
                token,
                unit,
                outcome,
            } => {
                self.begin(t, DOWNSTREAM_CODE, 21);
                self.word(process_code(from));
                self.word(token.get());
                self.word(unit);
                self.word(match outcome {
                    WriteOutcome::Accepted => 1,
                    WriteOutcome::RejectedStale { highest, .. } => 2 | (highest.get() << 8),
                    WriteOutcome::RejectedWrongWriter { .. } => 3,
                });
            }
            Observation::SessionOpened { process, session } => {
                self.begin(t, process_code(process), 27);
                self.word(session as u64);
            }
            Observation::SessionClosed {
                process,
                session,
                why,
            } => {
                self.begin(t, process_code(process), 28);
                self.word(session as u64 | (why as u64) << 8);
            }
            Observation::CallFailed { process, call, why } => {
                self.begin(t, process_code(process), 29);
                self.word(why as u64);
                match call {
                    FailedCall::Release { token } => {
                        self.word(1);
                        self.word(token.get());
                    }
                    FailedCall::Heartbeat => self.word(2),
                    FailedCall::Write {
                        token,
                        unit,
                        retried,
                    } => {
                        self.word(3 | u64::from(retried) << 8);
                        self.word(token.get());
                        self.word(unit);
                    }
                }
            }
            Observation::RequestSent { .. }
            | Observation::MemberJoined(_)
            | Observation::LiveMembers(_)
            | Observation::RegistryAnswered { .. }
            | Observation::TokenAnswered { .. }
            | Observation::FaultBegan { .. }
            | Observation::FaultEnded { .. } => return false,
        }
        true
    }
}
