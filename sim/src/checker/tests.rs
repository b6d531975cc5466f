//! The whole checker, fed hand-written observation lists: for every
//! invariant, a list that breaks it and one that almost does but does not.
//! Each part's own tests (the part alone, without the checker) sit at the
//! bottom of its file; the helpers here serve both.

use std::time::Duration;

use fenced::{FencingToken, Instant, Lease, LeaseResult, NodeId, OwnerId, WriteOutcome};

use super::*;
use crate::observation::{NodeRef, ProcessId, ProcessRef, RegistryAnswer};

pub(super) const S: u64 = 1_000_000_000;

pub(super) fn token(n: u64) -> FencingToken {
    FencingToken::new(n).expect("non-zero")
}

/// Two nodes, `a` and `b`, with one process each (`a#1`, `b#1`) and a
/// second life of `a` (`a#2`) for zombie and unique-owner cases.
pub(super) struct Cast {
    nodes: [NodeId; 2],
    owners: [OwnerId; 3],
}

impl Cast {
    pub(super) fn new() -> Self {
        Cast {
            nodes: [NodeId::new("a").unwrap(), NodeId::new("b").unwrap()],
            owners: [
                OwnerId::new("a#1").unwrap(),
                OwnerId::new("b#1").unwrap(),
                OwnerId::new("a#2").unwrap(),
            ],
        }
    }
    pub(super) fn a(&self) -> ProcessRef<'_> {
        self.process(0, 0, 1, 0)
    }
    pub(super) fn b(&self) -> ProcessRef<'_> {
        self.process(1, 1, 1, 1)
    }
    /// `a`'s second life, in a slot of its own.
    pub(super) fn a2(&self) -> ProcessRef<'_> {
        self.process(2, 0, 2, 2)
    }
    pub(super) fn process(
        &self,
        pid: u32,
        node: usize,
        incarnation: u32,
        owner: usize,
    ) -> ProcessRef<'_> {
        ProcessRef {
            id: ProcessId(pid),
            node: NodeRef {
                index: node as u32,
                id: &self.nodes[node],
            },
            incarnation,
            owner: &self.owners[owner],
        }
    }
}

pub(super) fn settings() -> CheckerSettings {
    CheckerSettings::new(true, Duration::from_secs(30), Duration::from_secs(27))
}

pub(super) fn at(seconds: f64) -> SimTime {
    SimTime::from_nanos((seconds * S as f64) as u64)
}

pub(super) fn granted(n: u64, expires_s: u64) -> LeaseResult {
    LeaseResult::Granted {
        token: token(n),
        expires_at: Instant::from_nanos(expires_s * S),
    }
}

pub(super) fn renewed(n: u64, expires_s: u64) -> LeaseResult {
    LeaseResult::Renewed {
        token: token(n),
        expires_at: Instant::from_nanos(expires_s * S),
    }
}

fn invariants(verdict: &Verdict) -> Vec<&str> {
    verdict
        .violations
        .iter()
        .map(|v| v.invariant.as_str())
        .collect()
}

/// The invariants a part wrote into `sink`, in order.
pub(super) fn invariants_of(sink: &findings::Findings) -> Vec<&str> {
    sink.violations()
        .iter()
        .map(|v| v.invariant.as_str())
        .collect()
}

/// Starts both processes at 0 s.
fn started(checker: &mut Checker, cast: &Cast) {
    checker.observe(at(0.0), &Observation::ProcessStarted(cast.a()));
    checker.observe(at(0.0), &Observation::ProcessStarted(cast.b()));
}

fn lease(checker: &mut Checker, seconds: f64, from: ProcessRef<'_>, result: &LeaseResult) {
    checker.observe(
        at(seconds),
        &Observation::LeaseHandled {
            from,
            request: 1,
            result,
        },
    );
}

fn write(
    checker: &mut Checker,
    seconds: f64,
    from: ProcessRef<'_>,
    n: u64,
    outcome: &WriteOutcome,
) {
    checker.observe(
        at(seconds),
        &Observation::WriteHandled {
            from,
            token: token(n),
            unit: 1,
            outcome,
        },
    );
}

#[test]
fn token_monotonic_a_repeated_grant_breaks_it_a_higher_one_does_not() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    started(&mut checker, &cast);
    lease(&mut checker, 1.0, cast.a(), &granted(1, 31));
    // Almost: after a lapse, a higher token to another owner.
    lease(&mut checker, 40.0, cast.b(), &granted(2, 70));
    assert!(invariants(&checker.verdict(at(41.0))).is_empty());
    // Broken: a grant that does not exceed the highest token.
    lease(&mut checker, 80.0, cast.a(), &granted(2, 110));
    assert_eq!(invariants(&checker.verdict(at(81.0))), ["token-monotonic"]);
}

#[test]
fn token_monotonic_a_renewal_of_a_lapsed_lease_breaks_it() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    started(&mut checker, &cast);
    lease(&mut checker, 1.0, cast.a(), &granted(1, 31));
    // Almost: renewed a moment before it lapses.
    lease(&mut checker, 30.9, cast.a(), &renewed(1, 60));
    assert!(invariants(&checker.verdict(at(31.0))).is_empty());
    // Broken: renewed at its expiry (a lapsed lease needs a new token).
    lease(&mut checker, 60.0, cast.a(), &renewed(1, 90));
    assert_eq!(invariants(&checker.verdict(at(61.0))), ["token-monotonic"]);
}

#[test]
fn lease_exclusive_a_grant_over_a_live_lease_breaks_it_one_at_expiry_does_not() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    started(&mut checker, &cast);
    lease(&mut checker, 1.0, cast.a(), &granted(1, 31));
    // Almost: granted to b exactly at a's expiry (`now >= expires_at` is expired).
    lease(&mut checker, 31.0, cast.b(), &granted(2, 61));
    assert!(invariants(&checker.verdict(at(32.0))).is_empty());
    // Broken: granted to a while b's lease is live.
    lease(&mut checker, 60.9, cast.a(), &granted(3, 91));
    assert_eq!(invariants(&checker.verdict(at(61.0))), ["lease-exclusive"]);
}

#[test]
fn single_writer_and_split_brain_an_older_token_accepted_breaks_both_rejected_breaks_none() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    started(&mut checker, &cast);
    write(&mut checker, 1.0, cast.a(), 1, &WriteOutcome::Accepted);
    write(&mut checker, 2.0, cast.b(), 2, &WriteOutcome::Accepted);
    // Almost: the stale write is rejected.
    let stale = WriteOutcome::RejectedStale {
        stale: token(1),
        highest: token(2),
    };
    write(&mut checker, 3.0, cast.a(), 1, &stale);
    let verdict = checker.verdict(at(4.0));
    assert!(invariants(&verdict).is_empty());
    assert_eq!(verdict.writes.rejected_stale, 1);
    assert_eq!(verdict.failovers.len(), 1);
    // Broken: the stale write accepted.
    write(&mut checker, 5.0, cast.a(), 1, &WriteOutcome::Accepted);
    assert_eq!(
        invariants(&checker.verdict(at(6.0))),
        ["single-writer", "split-brain"]
    );
}

#[test]
fn split_brain_is_judged_without_fencing_and_single_writer_is_not() {
    let cast = Cast::new();
    let mut unfenced = settings();
    unfenced.fencing = false;
    let mut checker = Checker::new(unfenced);
    started(&mut checker, &cast);
    write(&mut checker, 1.0, cast.a(), 1, &WriteOutcome::Accepted);
    write(&mut checker, 2.0, cast.b(), 2, &WriteOutcome::Accepted);
    // Almost: the same token twice from its own writer.
    write(&mut checker, 2.5, cast.b(), 2, &WriteOutcome::Accepted);
    assert!(invariants(&checker.verdict(at(3.0))).is_empty());
    write(&mut checker, 3.0, cast.a(), 1, &WriteOutcome::Accepted);
    let verdict = checker.verdict(at(4.0));
    assert_eq!(invariants(&verdict), ["split-brain"]);
    assert_eq!(verdict.split_brain_total, 1);
}

#[test]
fn single_writer_one_token_from_two_writers_breaks_it() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    started(&mut checker, &cast);
    write(&mut checker, 1.0, cast.a(), 1, &WriteOutcome::Accepted);
    // Almost: the downstream refuses the second writer.
    let refused = WriteOutcome::RejectedWrongWriter {
        token: token(1),
        bound_to: cast.owners[0].clone(),
    };
    write(&mut checker, 2.0, cast.b(), 1, &refused);
    assert_eq!(invariants(&checker.verdict(at(3.0))), ["single-writer"]);
}

#[test]
fn local_deadline_a_unit_at_the_deadline_breaks_it_one_just_before_does_not() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    started(&mut checker, &cast);
    let local = |s: u64| Instant::from_nanos(s * S);
    checker.observe(
        at(0.0),
        &Observation::RequestSent {
            process: cast.a(),
            request: 1,
            local: local(10),
        },
    );
    checker.observe(
        at(0.1),
        &Observation::ResponseHandled {
            process: cast.a(),
            request: 1,
            disposition: fenced::ResponseDisposition::Applied,
            acquired: Some(token(1)),
            renewal: false,
        },
    );
    checker.observe(
        at(0.1),
        &Observation::TermStarted {
            process: cast.a(),
            token: token(1),
        },
    );
    let unit = |checker: &mut Checker, l: Instant| {
        checker.observe(
            at(1.0),
            &Observation::WorkStarted {
                process: cast.a(),
                token: token(1),
                unit: 1,
                local: l,
            },
        )
    };
    // Almost: one nanosecond before 10 s + 27 s on a's clock.
    unit(&mut checker, Instant::from_nanos(37 * S - 1));
    assert!(invariants(&checker.verdict(at(2.0))).is_empty());
    unit(&mut checker, local(37));
    assert_eq!(invariants(&checker.verdict(at(2.0))), ["local-deadline"]);
}

#[test]
fn unique_owner_two_live_processes_with_one_id_break_it_a_restart_does_not() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    checker.observe(at(0.0), &Observation::ProcessStarted(cast.a()));
    checker.observe(at(1.0), &Observation::ProcessCrashed(cast.a()));
    // Almost: the same id in the same slot after the first died.
    checker.observe(at(2.0), &Observation::ProcessStarted(cast.a()));
    assert!(invariants(&checker.verdict(at(3.0))).is_empty());
    // Broken: a second live process (another slot) with a live process's id.
    let twin = cast.process(5, 1, 1, 0);
    checker.observe(at(4.0), &Observation::ProcessStarted(twin));
    assert_eq!(invariants(&checker.verdict(at(5.0))), ["unique-owner"]);
}

/// `b` leads from 20 s and its write is accepted at 59 s, in a run healed
/// at 10 s that ends at `end_s`.
fn b_writes_until_59s(cast: &Cast, end_s: u64) -> Checker {
    let mut s = settings();
    s.heal_at = Some(Duration::from_secs(10));
    s.end = Duration::from_secs(end_s);
    let mut checker = Checker::new(s);
    started(&mut checker, cast);
    checker.observe(
        at(20.0),
        &Observation::TermStarted {
            process: cast.b(),
            token: token(2),
        },
    );
    write(&mut checker, 59.0, cast.b(), 2, &WriteOutcome::Accepted);
    checker
}

#[test]
fn liveness_no_leader_with_recent_writes_at_the_end_breaks_it() {
    let cast = Cast::new();
    let checker = b_writes_until_59s(&cast, 60);
    // Almost: one leader whose write was accepted a second before the end.
    let verdict = checker.verdict(at(60.0));
    assert!(verdict.leader_at_end);
    assert!(invariants(&verdict).is_empty());
    // Broken: its last accepted write is too old by the end (writes stopped).
    let verdict = checker.verdict(at(59.0 + 2.1 + 0.06));
    assert!(!verdict.leader_at_end);
    assert_eq!(invariants(&verdict), ["liveness"]);
    // And before the run's end nothing is judged yet.
    let early = b_writes_until_59s(&cast, 100);
    assert!(invariants(&early.verdict(at(70.0))).is_empty());
}

#[test]
fn a_paused_holder_taken_over_and_a_fenced_zombie_are_counted() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    started(&mut checker, &cast);
    lease(&mut checker, 1.0, cast.a(), &granted(1, 31));
    checker.observe(
        at(5.0),
        &Observation::Paused {
            host: crate::observation::HostRef::Process(cast.a()),
            depth: 1,
        },
    );
    lease(&mut checker, 31.0, cast.b(), &granted(2, 61));
    // a's second life starts; a#1's late write is a zombie's.
    checker.observe(at(32.0), &Observation::ProcessStarted(cast.a2()));
    let stale = WriteOutcome::RejectedStale {
        stale: token(1),
        highest: token(2),
    };
    write(&mut checker, 33.0, cast.b(), 2, &WriteOutcome::Accepted);
    write(&mut checker, 34.0, cast.a(), 1, &stale);
    let verdict = checker.verdict(at(35.0));
    assert_eq!(verdict.coverage.takeover_during_pause, 1);
    assert_eq!(verdict.coverage.zombie_fenced, 1);
    assert!(invariants(&verdict).is_empty());
}

#[test]
fn leaderless_time_counts_from_the_first_process_start() {
    let cast = Cast::new();
    let mut checker = Checker::new(settings());
    checker.observe(at(1.0), &Observation::ProcessStarted(cast.a()));
    assert_eq!(
        checker.verdict(at(11.0)).leaderless,
        Duration::from_secs(10)
    );
    checker.observe(
        at(11.0),
        &Observation::TermStarted {
            process: cast.a(),
            token: token(1),
        },
    );
    let verdict = checker.verdict(at(20.0));
    assert_eq!(verdict.leaderless, Duration::from_secs(10));
    assert_eq!(verdict.terms.len(), 1);
    assert_eq!(verdict.terms[0].end, at(20.0));
    // A refused request counts as coverage, never as a violation.
    let held = LeaseResult::Held {
        holder: Lease {
            owner: cast.owners[0].clone(),
            token: token(1),
            expires_at: Instant::from_nanos(40 * S),
        },
    };
    lease(&mut checker, 12.0, cast.b(), &held);
    assert_eq!(checker.verdict(at(13.0)).coverage.refused, 1);
}

/// `a` sends request 1 at 10 s on its clock, is granted token 1 and leads.
fn a_leads_from_a_request_at_10s(checker: &mut Checker, cast: &Cast) {
    started(checker, cast);
    checker.observe(
        at(0.0),
        &Observation::RequestSent {
            process: cast.a(),
            request: 1,
            local: Instant::from_nanos(10 * S),
        },
    );
    checker.observe(
        at(0.1),
        &Observation::ResponseHandled {
            process: cast.a(),
            request: 1,
            disposition: fenced::ResponseDisposition::Applied,
            acquired: Some(token(1)),
            renewal: false,
        },
    );
    checker.observe(
        at(0.1),
        &Observation::TermStarted {
            process: cast.a(),
            token: token(1),
        },
    );
}

fn step_down_on_deadline(checker: &mut Checker, cast: &Cast, seconds: f64, local: Instant) {
    checker.observe(
        at(seconds),
        &Observation::TermEnded {
            process: cast.a(),
            token: token(1),
            reason: &fenced::StepDownReason::LocalDeadline,
            why: None,
            local: Some(local),
        },
    );
}

#[test]
fn local_deadline_a_step_down_after_the_deadline_breaks_it_one_at_the_deadline_does_not() {
    let cast = Cast::new();
    // Almost: at 10 s + 27 s on a's clock exactly.
    let mut checker = Checker::new(settings());
    a_leads_from_a_request_at_10s(&mut checker, &cast);
    step_down_on_deadline(&mut checker, &cast, 27.0, Instant::from_nanos(37 * S));
    assert!(invariants(&checker.verdict(at(30.0))).is_empty());
    // A retry interval late, while it could act: the deadline timer was
    // missed.
    let mut checker = Checker::new(settings());
    a_leads_from_a_request_at_10s(&mut checker, &cast);
    step_down_on_deadline(&mut checker, &cast, 28.0, Instant::from_nanos(38 * S));
    assert_eq!(invariants(&checker.verdict(at(30.0))), ["local-deadline"]);
    // Early: it gave up a lease it could still act on.
    let mut checker = Checker::new(settings());
    a_leads_from_a_request_at_10s(&mut checker, &cast);
    step_down_on_deadline(&mut checker, &cast, 26.0, Instant::from_nanos(36 * S));
    assert_eq!(invariants(&checker.verdict(at(30.0))), ["local-deadline"]);
}

#[test]
fn local_deadline_a_late_step_down_is_right_at_a_resume_but_not_after_it() {
    let cast = Cast::new();
    let pause = |checker: &mut Checker, seconds: f64, start: bool| {
        let host = HostRef::Process(cast.a());
        let o = if start {
            Observation::Paused { host, depth: 1 }
        } else {
            Observation::Resumed {
                host,
                depth: 0,
                deferred: 1,
            }
        };
        checker.observe(at(seconds), &o);
    };
    let mut checker = Checker::new(settings());
    a_leads_from_a_request_at_10s(&mut checker, &cast);
    pause(&mut checker, 20.0, true);
    pause(&mut checker, 40.0, false);
    step_down_on_deadline(&mut checker, &cast, 40.0, Instant::from_nanos(50 * S));
    assert!(invariants(&checker.verdict(at(41.0))).is_empty());
    let mut checker = Checker::new(settings());
    a_leads_from_a_request_at_10s(&mut checker, &cast);
    pause(&mut checker, 20.0, true);
    pause(&mut checker, 40.0, false);
    step_down_on_deadline(&mut checker, &cast, 41.0, Instant::from_nanos(51 * S));
    assert_eq!(invariants(&checker.verdict(at(42.0))), ["local-deadline"]);
}

fn membership_settings() -> CheckerSettings {
    CheckerSettings {
        liveness_ttl: Some(Duration::from_secs(10)),
        ..settings()
    }
}

fn registry(checker: &mut Checker, seconds: f64, answer: RegistryAnswer<'_>) {
    checker.observe(
        at(seconds),
        &Observation::RegistryAnswered {
            local: Instant::from_nanos((seconds * S as f64) as u64),
            answer,
        },
    );
}

fn counts(live: u64) -> RegistryAnswer<'static> {
    RegistryAnswer::Counts {
        live,
        listed: Some(live),
        entries: live,
        empty: live == 0,
    }
}

#[test]
fn membership_a_node_leaving_at_its_ttl_keeps_it_early_or_late_breaks_it() {
    let cast = Cast::new();
    let a = cast.a().node;
    let heartbeat = |joined| RegistryAnswer::Heartbeat {
        node: a,
        joined,
        live: true,
    };
    let left = RegistryAnswer::Left {
        node: a,
        live: false,
    };
    let run = |leave_at: f64| {
        let mut checker = Checker::new(membership_settings());
        registry(&mut checker, 1.0, heartbeat(true));
        registry(&mut checker, 1.0, counts(1));
        registry(&mut checker, 5.0, heartbeat(false));
        registry(&mut checker, leave_at, left);
        registry(&mut checker, leave_at, counts(0));
        invariants(&checker.verdict(at(30.0)))
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(run(15.0).is_empty(), "{:?}", run(15.0));
    assert_eq!(run(14.9), ["membership"]);
    assert_eq!(run(16.0), ["membership"]);
}

#[test]
fn membership_wrong_answers_break_it() {
    let cast = Cast::new();
    let a = cast.a().node;
    // Said "refreshed" for a node it never saw.
    let mut checker = Checker::new(membership_settings());
    registry(
        &mut checker,
        1.0,
        RegistryAnswer::Heartbeat {
            node: a,
            joined: false,
            live: true,
        },
    );
    assert_eq!(invariants(&checker.verdict(at(2.0))), ["membership"]);
    // Not live right after its heartbeat.
    let mut checker = Checker::new(membership_settings());
    registry(
        &mut checker,
        1.0,
        RegistryAnswer::Heartbeat {
            node: a,
            joined: true,
            live: false,
        },
    );
    assert_eq!(invariants(&checker.verdict(at(2.0))), ["membership"]);
    // Counts that disagree with one member.
    let mut checker = Checker::new(membership_settings());
    registry(
        &mut checker,
        1.0,
        RegistryAnswer::Heartbeat {
            node: a,
            joined: true,
            live: true,
        },
    );
    registry(&mut checker, 1.0, counts(1));
    // A change whose listing was not counted (a large fleet's) is judged
    // on the counts it has.
    let unlisted = RegistryAnswer::Counts {
        live: 1,
        listed: None,
        entries: 1,
        empty: false,
    };
    registry(&mut checker, 1.0, unlisted);
    assert!(invariants(&checker.verdict(at(2.0))).is_empty());
    registry(&mut checker, 2.0, counts(0));
    assert_eq!(invariants(&checker.verdict(at(3.0))), ["membership"]);
    // A listing that disagrees, alone, breaks it.
    let mut checker = Checker::new(membership_settings());
    registry(
        &mut checker,
        1.0,
        RegistryAnswer::Heartbeat {
            node: a,
            joined: true,
            live: true,
        },
    );
    let short_listing = RegistryAnswer::Counts {
        live: 1,
        listed: Some(0),
        entries: 1,
        empty: false,
    };
    registry(&mut checker, 1.0, short_listing);
    assert_eq!(invariants(&checker.verdict(at(2.0))), ["membership"]);
    // Kept past its TTL: a later heartbeat finds it still a member.
    let mut checker = Checker::new(membership_settings());
    registry(
        &mut checker,
        1.0,
        RegistryAnswer::Heartbeat {
            node: a,
            joined: true,
            live: true,
        },
    );
    registry(
        &mut checker,
        12.0,
        RegistryAnswer::Heartbeat {
            node: a,
            joined: false,
            live: true,
        },
    );
    assert_eq!(invariants(&checker.verdict(at(13.0))), ["membership"]);
    // Without a liveness TTL in the settings, membership is not judged.
    let mut checker = Checker::new(settings());
    registry(&mut checker, 2.0, counts(7));
    assert!(invariants(&checker.verdict(at(3.0))).is_empty());
}

#[test]
fn membership_counts_with_a_member_past_its_ttl_break_it_a_refreshed_one_does_not() {
    // Proves that the counts after a change are judged against every
    // member's expiry, whichever order the members heartbeated in: the
    // oldest heartbeat decides, and a refresh makes a member the newest.
    let cast = Cast::new();
    let (a, b) = (cast.a().node, cast.b().node);
    let heartbeat = |checker: &mut Checker, seconds: f64, node, joined| {
        let answer = RegistryAnswer::Heartbeat {
            node,
            joined,
            live: true,
        };
        registry(checker, seconds, answer);
    };
    let two_members = |a_refreshes_at: Option<f64>| {
        let mut checker = Checker::new(membership_settings());
        heartbeat(&mut checker, 1.0, a, true);
        heartbeat(&mut checker, 5.0, b, true);
        if let Some(at) = a_refreshes_at {
            heartbeat(&mut checker, at, a, false);
        }
        heartbeat(&mut checker, 9.0, b, false);
        registry(&mut checker, 12.0, counts(2));
        checker.verdict(at(13.0))
    };
    // a's heartbeat at 1 s ran out at 11 s: still counted at 12 s.
    let verdict = two_members(None);
    assert_eq!(invariants(&verdict), ["membership"]);
    assert!(
        verdict.violations[0]
            .detail
            .contains("node #0 is still a member"),
        "{}",
        verdict.violations[0].detail
    );
    // Refreshed at 8 s, a is live until 18 s, b until 19 s.
    assert!(invariants(&two_members(Some(8.0))).is_empty());
    // After a leaves on time, the counts of the one member left are right.
    let mut checker = Checker::new(membership_settings());
    heartbeat(&mut checker, 1.0, a, true);
    heartbeat(&mut checker, 5.0, b, true);
    let left = RegistryAnswer::Left {
        node: a,
        live: false,
    };
    registry(&mut checker, 11.0, left);
    registry(&mut checker, 11.0, counts(1));
    assert!(invariants(&checker.verdict(at(12.0))).is_empty());
}

#[test]
fn local_deadline_a_renewal_later_than_renew_interval_breaks_it_one_on_time_does_not() {
    let cast = Cast::new();
    let settings = || CheckerSettings {
        renew_interval: Some(Duration::from_secs(10)),
        ..settings()
    };
    let renew_at = |local_s: u64| {
        let mut checker = Checker::new(settings());
        a_leads_from_a_request_at_10s(&mut checker, &cast);
        checker.observe(
            at(local_s as f64 - 10.0),
            &Observation::RequestSent {
                process: cast.a(),
                request: 2,
                local: Instant::from_nanos(local_s * S),
            },
        );
        invariants(&checker.verdict(at(30.0)))
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // Anchored at 10 s: due by 20 s on a's clock.
    assert!(renew_at(20).is_empty());
    assert_eq!(renew_at(21), ["local-deadline"]);
    // Without a renew interval in the settings (another protocol, a real
    // run's history), renewals are not judged.
    let mut checker = Checker::new(super::CheckerSettings::new(
        true,
        Duration::from_secs(30),
        Duration::from_secs(27),
    ));
    a_leads_from_a_request_at_10s(&mut checker, &cast);
    checker.observe(
        at(20.0),
        &Observation::RequestSent {
            process: cast.a(),
            request: 2,
            local: Instant::from_nanos(30 * S),
        },
    );
    assert!(invariants(&checker.verdict(at(30.0))).is_empty());
}

/// `a` leads from a request at 10 s on its clock (true time 0), then renews
/// `gaps_ms.len()` times, each renewal `gap` after the previous anchor and
/// applied at once; the verdict's invariants.
fn renewals(settings: CheckerSettings, gaps_ms: &[u64]) -> Vec<String> {
    let cast = Cast::new();
    let mut checker = Checker::new(settings);
    a_leads_from_a_request_at_10s(&mut checker, &cast);
    let mut local_ms = 10_000;
    for (i, gap) in gaps_ms.iter().enumerate() {
        local_ms += gap;
        let request = i as u64 + 2;
        let true_s = (local_ms - 10_000) as f64 / 1000.0;
        checker.observe(
            at(true_s),
            &Observation::RequestSent {
                process: cast.a(),
                request,
                local: Instant::from_nanos(local_ms * 1_000_000),
            },
        );
        checker.observe(
            at(true_s + 0.001),
            &Observation::ResponseHandled {
                process: cast.a(),
                request,
                disposition: fenced::ResponseDisposition::Applied,
                acquired: Some(token(1)),
                renewal: true,
            },
        );
    }
    invariants(&checker.verdict(at(200.0)))
        .into_iter()
        .map(str::to_string)
        .collect()
}

#[test]
fn local_deadline_a_renewal_earlier_than_its_jitter_allows_breaks_it_one_inside_does_not() {
    let settings = |jitter: f64| CheckerSettings {
        renew_interval: Some(Duration::from_secs(10)),
        jitter,
        ..settings()
    };
    // Without jitter a renewal comes exactly renew_interval after its anchor.
    assert!(renewals(settings(0.0), &[10_000]).is_empty());
    assert_eq!(renewals(settings(0.0), &[9_999]), ["local-deadline"]);
    // Jitter 0.2 shortens 10 s to no less than 8 s.
    assert!(renewals(settings(0.2), &[8_000]).is_empty());
    assert_eq!(renewals(settings(0.2), &[7_999]), ["local-deadline"]);
}

#[test]
fn local_deadline_a_configured_jitter_that_never_shortens_breaks_it_one_that_does_not() {
    let settings = |jitter: f64| CheckerSettings {
        renew_interval: Some(Duration::from_secs(10)),
        jitter,
        ..settings()
    };
    // Eight renewals exactly on the nominal interval although jitter 0.1 is
    // configured: the jitter is not applied.
    assert_eq!(renewals(settings(0.1), &[10_000; 8]), ["local-deadline"]);
    // Almost: one of the eight shortened by a millisecond.
    let mut gaps = [10_000; 8];
    gaps[5] = 9_999;
    assert!(renewals(settings(0.1), &gaps).is_empty());
    // Seven are not enough evidence; no jitter, nothing to spread; a jitter
    // that can shorten 10 s by under 1 ms is not judged.
    assert!(renewals(settings(0.1), &[10_000; 7]).is_empty());
    assert!(renewals(settings(0.0), &[10_000; 8]).is_empty());
    assert!(renewals(settings(0.000_05), &[10_000; 8]).is_empty());
}

#[test]
fn local_deadline_a_token_answered_at_the_deadline_breaks_it_one_just_before_or_none_does_not() {
    let cast = Cast::new();
    let answered = |local: Instant, answer: Option<FencingToken>| {
        let mut checker = Checker::new(settings());
        a_leads_from_a_request_at_10s(&mut checker, &cast);
        checker.observe(
            at(30.0),
            &Observation::TokenAnswered {
                process: cast.a(),
                local,
                token: answer,
            },
        );
        invariants(&checker.verdict(at(31.0)))
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // Anchored at 10 s with a validity of 27 s: the deadline is 37 s.
    let deadline = Instant::from_nanos(37 * S);
    assert_eq!(answered(deadline, Some(token(1))), ["local-deadline"]);
    assert!(answered(deadline - Duration::from_nanos(1), Some(token(1))).is_empty());
    assert!(answered(deadline, None).is_empty());
}
