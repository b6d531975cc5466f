//! Judging real runs: the histories that processes recorded with
//! [`fenced::history`], merged into one observation stream and judged by the
//! same [`Checker`], into the same [`Report`] and [`Timeline`] as a
//! simulated run (`fenced-sim check-history`).
//!
//! 1. **Read** each file ([`read`]): bounded ([`MAX_FILE_BYTES`],
//!    [`MAX_LINE_BYTES`], [`MAX_FILES`]); the header must be valid; a
//!    damaged line is a problem, never a panic: a cut-short *last* line is a
//!    warning (a process killed mid-write), any other malformed line an
//!    error — listed in the report and failing the run (`expect.met` false,
//!    exit 1), since the verdict could not see it.
//! 2. **Identify** the processes: every `node` file is one process; they are
//!    numbered in order of (node id, incarnation, file order), nodes in
//!    order of id — so the same files give the same numbering in any order.
//! 3. **Settle the settings**: every header that has settings must agree
//!    field by field (else bad input naming the field and both files); with
//!    a scenario, the headers must also agree with its election and fencing.
//! 4. **Merge** every event line by its `at_ns` (the history clock, shared
//!    by all processes of the machine); ties keep file order, then line
//!    order. The report's time 0 is the earliest event.
//! 5. **Feed** the checker and the timeline: each event becomes the
//!    observation the simulator would emit. A process whose history ends
//!    without `process-stopped` (or a lab's `process-killed`) is judged
//!    crashed at its last line. Lease expiries are on the store's clock:
//!    each grant or renewal tells the checker the store's clock at its
//!    decision, so `lease-exclusive` compares the store's own instants.
//!    Membership reports are deduplicated (several processes may report one
//!    change). A `write-handled` without a unit takes its writer's oldest
//!    unit sent with that token. Downstream decisions that carry the
//!    downstream's own number (`decision`) are judged in number order, and
//!    grants, renewals and dated releases in the order of the store's clock
//!    (`store_now_ns`), not in the order their answers were recorded
//!    (`history/order.rs`): a starved writer's late record cannot make a
//!    split-brain the downstream never allowed, nor a release answered
//!    behind a renewal a lease overlap the store never made.
//! 6. **Report** through the same path as a simulated run; `seed` is 0,
//!    `virtual_ms` the real span, `events` the event lines merged,
//!    `trace_hash` the FNV-1a hash of the merged history as `--trace`
//!    writes it, and `history` says which files were read and what was
//!    wrong with them.
//!
//! What a real run cannot say is not made up: a lease decision is dated on
//! the history clock no later than its answer's arrival (the latest time the
//! store's order allows), an undated answer (a refusal, a release from a
//! store that does not date it) at its arrival, and nothing is known of
//! messages lost on the way, so the `renewal_lost` coverage counts only
//! answers the elector could not use.

mod feed;
mod order;
pub mod read;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use fenced::history::{Event, Kind, Settings};
use fenced::{NodeId, OwnerId};

use crate::checker::{assemble, Checker, CheckerSettings};
use crate::observation::SimTime;
use crate::report::{Figures, HistoryFileReport, HistoryReport, Report, MAX_PROBLEMS_LISTED};
use crate::scenario::{Election, Membership, NodeSpec, Scenario, Work};
use crate::timeline::{Belief, Timeline};

pub use read::{MAX_FILES, MAX_FILE_BYTES, MAX_LINE_BYTES};

use feed::{Feed, Ident, Origin};
use read::File;

/// The longest one-way latency assumed of a real run (it only widens
/// "recently accepted" for `leader_at_end` and `liveness`).
pub const ASSUMED_LATENCY_MAX: Duration = Duration::from_millis(100);

/// Why histories could not be judged at all (bad input: exit 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HistoryError {
    /// No file was given.
    NoFiles,
    /// More than [`MAX_FILES`] files.
    TooManyFiles(usize),
    /// A file could not be read.
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        error: String,
    },
    /// Not a regular file.
    NotAFile {
        /// The path.
        path: String,
    },
    /// Over [`MAX_FILE_BYTES`].
    TooLarge {
        /// The file.
        path: String,
        /// Its size.
        bytes: u64,
    },
    /// The first line is not a valid header of this format version.
    NoHeader {
        /// The file.
        path: String,
        /// What is wrong.
        detail: String,
    },
    /// No header carries the run's settings, and no scenario was given.
    NoSettings,
    /// Two files disagree on a setting (or a file disagrees with the
    /// scenario).
    Disagree {
        /// The setting.
        field: &'static str,
        /// The first file (or `--scenario`) and its value.
        first: (String, String),
        /// The other file and its value.
        other: (String, String),
    },
    /// Two node files claim the same process (node and incarnation).
    DuplicateProcess {
        /// The owner id.
        owner: String,
        /// The two files.
        paths: (String, String),
    },
    /// No event line in any file.
    NoEvents,
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HistoryError::NoFiles => f.write_str("no history file given"),
            HistoryError::TooManyFiles(n) => {
                write!(f, "{n} history files: at most {MAX_FILES} are read at once")
            }
            HistoryError::Unreadable { path, error } => write!(f, "{path}: cannot read: {error}"),
            HistoryError::NotAFile { path } => write!(f, "{path}: not a regular file"),
            HistoryError::TooLarge { path, bytes } => write!(
                f,
                "{path}: {bytes} bytes; history files are read up to {MAX_FILE_BYTES} bytes"
            ),
            HistoryError::NoHeader { path, detail } => {
                write!(f, "{path}: not a fenced history: {detail}")
            }
            HistoryError::NoSettings => f.write_str(
                "no history header carries the run's settings (lease_ttl, ...): record them in \
                 some header, or give --scenario",
            ),
            HistoryError::Disagree {
                field,
                first,
                other,
            } => write!(
                f,
                "the histories disagree on `{field}`: {} says {}, {} says {}",
                first.0, first.1, other.0, other.1
            ),
            HistoryError::DuplicateProcess { owner, paths } => write!(
                f,
                "{} and {} both record process {owner} (same node and incarnation)",
                paths.0, paths.1
            ),
            HistoryError::NoEvents => f.write_str("the histories hold no event line"),
        }
    }
}

impl std::error::Error for HistoryError {}

/// How to judge.
#[derive(Clone, Copy, Debug, Default)]
pub struct CheckOptions<'a> {
    /// The scenario the run played: its name, description, `[expect]`,
    /// `heal_at`, and settings the headers must agree with.
    pub scenario: Option<&'a Scenario>,
    /// Whether to build the timeline (for a picture).
    pub timeline: bool,
    /// The run's end on the history clock, if the caller knows it (a lab
    /// that ran the processes and killed them after it): lines stamped
    /// later are not judged, the report ends there, and a process whose
    /// history has neither `process-stopped` nor a lab's `process-killed`
    /// was running when the run ended — as a simulated run's processes are
    /// — rather than crashed at its last line.
    pub until_ns: Option<u64>,
}

/// The verdict on some histories.
#[derive(Clone, Debug)]
pub struct Judged {
    /// The scenario the summary and the picture describe: the one given, or
    /// one made from the headers; its `duration` is the histories' span.
    pub scenario: Scenario,
    /// The report, as `run --json` prints it (plus `history`).
    pub report: Report,
    /// The timeline, if asked for.
    pub timeline: Option<Timeline>,
    /// The merged history, one line per event: `<seconds> <who> <event>`.
    pub trace: String,
}

/// Reads the history files at `paths` and judges them.
///
/// # Errors
/// [`HistoryError`] when there is no verdict to give (bad input).
pub fn check_paths(paths: &[PathBuf], options: CheckOptions<'_>) -> Result<Judged, HistoryError> {
    check_count(paths.len())?;
    let files = paths
        .iter()
        .map(|p| read::read_path(p))
        .collect::<Result<Vec<_>, _>>()?;
    judge(files, options)
}

/// Judges histories given as `(name, bytes)` (for tests and tools that hold
/// them in memory).
///
/// # Errors
/// As [`check_paths`].
pub fn check_bytes(
    files: &[(String, Vec<u8>)],
    options: CheckOptions<'_>,
) -> Result<Judged, HistoryError> {
    check_count(files.len())?;
    let files = files
        .iter()
        .map(|(name, bytes)| read::parse(name.clone(), bytes))
        .collect::<Result<Vec<_>, _>>()?;
    judge(files, options)
}

fn check_count(n: usize) -> Result<(), HistoryError> {
    match n {
        0 => Err(HistoryError::NoFiles),
        n if n > MAX_FILES => Err(HistoryError::TooManyFiles(n)),
        _ => Ok(()),
    }
}

/// Who is in the histories: the processes, the nodes, and each file's process.
struct Cast {
    /// The processes of the node files, in (node, incarnation, file) order.
    idents: Vec<Ident>,
    /// The node ids, sorted.
    nodes: Vec<NodeId>,
    /// `of_file[f]`: file `f`'s process, if it is a node's.
    of_file: Vec<Option<usize>>,
}

/// The processes and nodes of `files` (see [`Cast`]).
fn identify(files: &[File]) -> Result<Cast, HistoryError> {
    let mut nodes: Vec<NodeId> = Vec::new();
    let mut procs: Vec<(NodeId, u32, usize, OwnerId)> = Vec::new();
    for (f, file) in files.iter().enumerate() {
        let h = &file.header;
        if let (Kind::Node, Some(node), Some(incarnation), Some(owner)) =
            (h.kind, &h.node, h.incarnation, &h.owner)
        {
            procs.push((node.clone(), incarnation, f, owner.clone()));
            nodes.push(node.clone());
        }
        for (_, line) in &file.lines {
            if let Event::MemberJoined { node } | Event::MemberLeft { node } = &line.event {
                nodes.push(node.clone());
            }
        }
    }
    nodes.sort();
    nodes.dedup();
    procs.sort_by(|a, b| (&a.0, a.1, a.2).cmp(&(&b.0, b.1, b.2)));
    for pair in procs.windows(2) {
        if pair[0].0 == pair[1].0 && pair[0].1 == pair[1].1 {
            return Err(HistoryError::DuplicateProcess {
                owner: pair[1].3.to_string(),
                paths: (files[pair[0].2].path.clone(), files[pair[1].2].path.clone()),
            });
        }
    }
    let mut of_file = vec![None; files.len()];
    let idents = procs
        .into_iter()
        .enumerate()
        .map(|(pid, (node, incarnation, f, owner))| {
            of_file[f] = Some(pid);
            let node_index = nodes.binary_search(&node).unwrap_or(0) as u32;
            Ident {
                node,
                node_index,
                owner,
                incarnation,
                path: files[f].path.clone(),
            }
        })
        .collect();
    Ok(Cast {
        idents,
        nodes,
        of_file,
    })
}

/// The settings every header that has them agrees on, and the run's name.
fn settle(files: &[File]) -> Result<(Option<Settings>, Option<String>), HistoryError> {
    let mut settled: Option<(usize, Settings)> = None;
    let mut run: Option<(usize, String)> = None;
    for (f, file) in files.iter().enumerate() {
        if let Some(name) = &file.header.run {
            match &run {
                Some((g, first)) if first != name => {
                    return Err(disagree("run", files, *g, first, f, name));
                }
                Some(_) => {}
                None => run = Some((f, name.clone())),
            }
        }
        let Some(settings) = &file.header.settings else {
            continue;
        };
        let Some((g, first)) = &mut settled else {
            settled = Some((f, settings.clone()));
            continue;
        };
        for (field, a, b) in fields(first, settings) {
            match (a, b) {
                (Some(a), Some(b)) if a != b => {
                    return Err(disagree(field, files, *g, &a, f, &b));
                }
                _ => {}
            }
        }
        // Optional settings one header knows and another does not: keep.
        first.liveness_ttl_ns = first.liveness_ttl_ns.or(settings.liveness_ttl_ns);
        first.write_interval_ns = first.write_interval_ns.or(settings.write_interval_ns);
        first.work_duration_ns = first.work_duration_ns.or(settings.work_duration_ns);
    }
    Ok((settled.map(|(_, s)| s), run.map(|(_, r)| r)))
}

fn disagree(
    field: &'static str,
    files: &[File],
    first: usize,
    a: &str,
    other: usize,
    b: &str,
) -> HistoryError {
    HistoryError::Disagree {
        field,
        first: (files[first].path.clone(), a.to_string()),
        other: (files[other].path.clone(), b.to_string()),
    }
}

/// Each setting of `a` and `b` by name, as text (`None`: not known).
fn fields(a: &Settings, b: &Settings) -> Vec<(&'static str, Option<String>, Option<String>)> {
    let text = |v: u64| Some(v.to_string());
    let opt = |v: Option<u64>| v.map(|v| v.to_string());
    vec![
        ("role", Some(a.role.clone()), Some(b.role.clone())),
        ("lease_ttl_ns", text(a.lease_ttl_ns), text(b.lease_ttl_ns)),
        (
            "renew_interval_ns",
            text(a.renew_interval_ns),
            text(b.renew_interval_ns),
        ),
        (
            "retry_interval_ns",
            text(a.retry_interval_ns),
            text(b.retry_interval_ns),
        ),
        (
            "safety_margin_ns",
            text(a.safety_margin_ns),
            text(b.safety_margin_ns),
        ),
        (
            "fencing",
            Some(a.fencing.to_string()),
            Some(b.fencing.to_string()),
        ),
        (
            "liveness_ttl_ns",
            opt(a.liveness_ttl_ns),
            opt(b.liveness_ttl_ns),
        ),
        (
            "write_interval_ns",
            opt(a.write_interval_ns),
            opt(b.write_interval_ns),
        ),
        (
            "work_duration_ns",
            opt(a.work_duration_ns),
            opt(b.work_duration_ns),
        ),
    ]
}

/// The settings of `scenario` as a history header would record them.
fn settings_of(scenario: &Scenario) -> Settings {
    let e = &scenario.election;
    let nanos = crate::time::span_nanos;
    Settings {
        role: e.role.clone(),
        lease_ttl_ns: nanos(e.lease_ttl),
        renew_interval_ns: nanos(e.renew_interval),
        retry_interval_ns: nanos(e.retry_interval),
        safety_margin_ns: nanos(e.effective_safety_margin()),
        fencing: scenario.fencing,
        liveness_ttl_ns: Some(nanos(scenario.membership.liveness_ttl)),
        write_interval_ns: Some(nanos(scenario.work.write_interval)),
        work_duration_ns: Some(nanos(scenario.work.work_duration)),
    }
}

/// The scenario a history's summary describes, made from its settings.
fn scenario_of(
    settings: &Settings,
    run: Option<String>,
    nodes: &[NodeId],
    files: usize,
    processes: usize,
) -> Scenario {
    let ns = Duration::from_nanos;
    let work = Work::default();
    Scenario {
        name: run.unwrap_or_else(|| "history".to_string()),
        description: Some(format!(
            "A real run's history: {processes} processes of {} nodes, {files} files.",
            nodes.len()
        )),
        seed: 0,
        duration: Duration::ZERO,
        election: Election {
            role: settings.role.clone(),
            lease_ttl: ns(settings.lease_ttl_ns),
            renew_interval: ns(settings.renew_interval_ns),
            retry_interval: ns(settings.retry_interval_ns),
            safety_margin: Some(ns(settings.safety_margin_ns)),
            ..Election::default()
        },
        membership: Membership {
            liveness_ttl: settings
                .liveness_ttl_ns
                .map_or(Membership::default().liveness_ttl, ns),
            ..Membership::default()
        },
        work: Work {
            write_interval: settings.write_interval_ns.map_or(work.write_interval, ns),
            work_duration: settings.work_duration_ns.map_or(work.work_duration, ns),
            ..Work::default()
        },
        network: crate::scenario::Network::default(),
        client: Default::default(),
        fencing: settings.fencing,
        durability: Default::default(),
        store_clock: Default::default(),
        nodes: nodes.iter().map(|n| NodeSpec::new(n.as_str())).collect(),
        faults: Vec::new(),
        expect: Default::default(),
        heal_at: None,
    }
}

/// The scenario to describe the run with, and the settings to judge it by.
fn setting(
    files: &[File],
    nodes: &[NodeId],
    processes: usize,
    given: Option<&Scenario>,
) -> Result<(Scenario, Settings), HistoryError> {
    let (settled, run) = settle(files)?;
    match (given, settled) {
        (Some(scenario), settled) => {
            let ours = settings_of(scenario);
            if let Some(theirs) = &settled {
                for (field, a, b) in fields(&ours, theirs) {
                    if let (Some(a), Some(b)) = (a, b) {
                        if a != b {
                            let path = files
                                .iter()
                                .find(|f| f.header.settings.is_some())
                                .map_or_else(String::new, |f| f.path.clone());
                            return Err(HistoryError::Disagree {
                                field,
                                first: ("--scenario".to_string(), a),
                                other: (path, b),
                            });
                        }
                    }
                }
            }
            Ok((scenario.clone(), ours))
        }
        (None, Some(settings)) => Ok((
            scenario_of(&settings, run, nodes, files.len(), processes),
            settings,
        )),
        (None, None) => Err(HistoryError::NoSettings),
    }
}

/// One merged line: its time, file and line number, and event (`None`: the
/// end of a node file whose process never said it ended).
struct Merged<'f> {
    at_ns: u64,
    file: usize,
    line: u64,
    event: Option<&'f Event>,
}

fn judge(files: Vec<File>, options: CheckOptions<'_>) -> Result<Judged, HistoryError> {
    let Cast {
        idents,
        nodes,
        of_file,
    } = identify(&files)?;
    let (mut scenario, settings) = setting(&files, &nodes, idents.len(), options.scenario)?;
    let mut merged = merge(&files, &of_file, &idents);
    let repeated = order::in_decision_order(&mut merged).err().map(|r| {
        let m = &merged[r.index];
        let origin = (files[m.file].path.clone(), m.line);
        (origin, r.number)
    });
    order::in_store_order(&mut merged);
    let merged = until(merged, options.until_ns);
    let (Some(first), Some(last)) = (merged.first(), merged.last()) else {
        return Err(HistoryError::NoEvents);
    };
    let start_ns = first.at_ns;
    let end_ns = options.until_ns.unwrap_or(last.at_ns).max(start_ns);
    let span = Duration::from_nanos(end_ns - start_ns);
    scenario.duration = span;
    let ns = Duration::from_nanos;
    let mut checker_settings = CheckerSettings::new(
        settings.fencing,
        ns(settings.lease_ttl_ns),
        ns(settings
            .lease_ttl_ns
            .saturating_sub(settings.safety_margin_ns)),
    );
    checker_settings.write_interval = scenario.work.write_interval;
    checker_settings.work_duration = scenario.work.work_duration;
    checker_settings.latency_max = ASSUMED_LATENCY_MAX;
    checker_settings.heal_at = options.scenario.and_then(|s| s.heal_at);
    checker_settings.end = span;
    let timeline = options
        .timeline
        .then(|| crate::timeline::Recorder::new(nodes.iter().map(|n| n.to_string()).collect()));
    let mut feed = Feed::new(
        &idents,
        &nodes,
        Checker::new(checker_settings),
        timeline,
        settings.lease_ttl_ns,
    );
    if let Some(((path, line), number)) = repeated {
        let origin = Origin { path: &path, line };
        let detail = format!(
            "decision number {number} repeats (histories of more than one downstream?): \
             downstream decisions are judged in the order they were recorded"
        );
        feed.problem(&origin, false, detail);
    }
    let unanswered = unanswered_releases(&merged);
    let deferred = order::unanswered_release_points(&merged, &unanswered);
    let mut trace = String::new();
    let mut events = 0_u64;
    for (index, m) in merged.iter().enumerate() {
        let at = SimTime::from_nanos(m.at_ns - start_ns);
        let file = &files[m.file];
        let own = of_file[m.file];
        let Some(event) = m.event else {
            if let Some(pid) = own {
                feed.end(at, pid, false);
            }
            continue;
        };
        events += 1;
        trace_line(&mut trace, at, file, event);
        let origin = Origin {
            path: &file.path,
            line: m.line,
        };
        feed.line(at, own, event, &origin);
        if let (Event::ReleaseSent { token }, Some(pid)) = (event, own) {
            if unanswered.contains(&index) && !deferred.releases.contains(&index) {
                feed.unanswered_release(at, pid, *token);
            }
        }
        for &release in deferred.after.get(&index).into_iter().flatten() {
            let r = &merged[release];
            if let (Some(Event::ReleaseSent { token }), Some(pid)) = (r.event, of_file[r.file]) {
                feed.unanswered_release(at, pid, *token);
            }
        }
    }
    let end = SimTime::from_nanos(end_ns - start_ns);
    let highest = feed.checker.highest_granted();
    let unjudged_writes = feed.finish(highest);
    let verdict = feed.checker.verdict(end);
    let history = history_report(&files, &merged, &idents, &mut feed, start_ns);
    let figures = Figures {
        scenario: scenario.name.clone(),
        seed: 0,
        virtual_ms: crate::units::ms(end),
        events,
        trace_hash: format!("{:016x}", fnv1a(trace.as_bytes())),
        fencing: settings.fencing,
        max_token: highest,
        live_at_end: feed.live_members(),
        unjudged_writes,
        planted_bug: None,
        history: Some(history),
    };
    let timeline = feed.timeline.as_ref().map(|recorder| {
        let mut timeline = recorder.snapshot(end.as_nanos());
        timeline.beliefs = verdict.terms.iter().map(Belief::from).collect();
        timeline.overlap_ns = crate::time::span_nanos(verdict.overlap);
        timeline
    });
    let mut report = assemble(figures, verdict, &scenario.expect);
    if let Some(h) = &report.history {
        if h.errors > 0 {
            report.expect.met = false;
            report.expect.unmet.push(format!(
                "history: {} malformed line{} the verdict could not see",
                h.errors,
                if h.errors == 1 { "" } else { "s" }
            ));
        }
    }
    Ok(Judged {
        scenario,
        report,
        timeline,
        trace,
    })
}

/// Every event line of every file, by (time, file, line), with the end of
/// each node file whose process never said it ended.
fn merge<'f>(files: &'f [File], of_file: &[Option<usize>], idents: &[Ident]) -> Vec<Merged<'f>> {
    let killed: Vec<&OwnerId> = files
        .iter()
        .flat_map(|f| &f.lines)
        .filter_map(|(_, l)| match &l.event {
            Event::ProcessKilled { owner } => Some(owner),
            _ => None,
        })
        .collect();
    let mut merged = Vec::new();
    for (f, file) in files.iter().enumerate() {
        for (number, line) in &file.lines {
            merged.push(Merged {
                at_ns: line.at_ns,
                file: f,
                line: *number,
                event: Some(&line.event),
            });
        }
        let stopped = file
            .lines
            .iter()
            .any(|(_, l)| l.event == Event::ProcessStopped);
        if let (Some(pid), Some((number, last))) = (of_file[f], file.lines.last()) {
            if !stopped && !killed.contains(&&idents[pid].owner) {
                merged.push(Merged {
                    at_ns: last.at_ns,
                    file: f,
                    line: number + 1,
                    event: None,
                });
            }
        }
    }
    merged.sort_by_key(|m| (m.at_ns, m.file, m.line));
    merged
}

/// The indices in `merged` of the `release-sent` lines that no
/// `release-handled` of the same token follows in the same file (within the
/// judged window). Each counts as made when sent, or later
/// ([`order::unanswered_release_points`]).
fn unanswered_releases(merged: &[Merged<'_>]) -> BTreeSet<usize> {
    let mut pending: BTreeMap<(usize, u64), usize> = BTreeMap::new();
    let mut unanswered = BTreeSet::new();
    for (index, m) in merged.iter().enumerate() {
        match m.event {
            Some(Event::ReleaseSent { token }) => {
                if let Some(earlier) = pending.insert((m.file, token.get()), index) {
                    // Sent again before any answer: the first is unanswered.
                    unanswered.insert(earlier);
                }
            }
            Some(Event::ReleaseHandled { token, .. }) => {
                pending.remove(&(m.file, token.get()));
            }
            _ => {}
        }
    }
    unanswered.extend(pending.into_values());
    unanswered
}

/// `merged` without what happened after `until_ns`: later lines, and the
/// end markers of unterminated files — the caller that knows the run's end
/// vouches that a process neither stopped nor killed was running then.
fn until(mut merged: Vec<Merged<'_>>, until_ns: Option<u64>) -> Vec<Merged<'_>> {
    let Some(until_ns) = until_ns else {
        return merged;
    };
    merged.retain(|m| m.at_ns <= until_ns && m.event.is_some());
    merged
}

fn history_report(
    files: &[File],
    merged: &[Merged<'_>],
    idents: &[Ident],
    feed: &mut Feed<'_>,
    start_ns: u64,
) -> HistoryReport {
    let mut problems: Vec<_> = files.iter().flat_map(|f| f.problems.clone()).collect();
    problems.append(&mut feed.problems);
    let errors = files.iter().map(|f| f.errors).sum::<u64>() + feed.errors;
    let total = problems.len() as u64;
    problems.truncate(MAX_PROBLEMS_LISTED);
    let unterminated = merged
        .iter()
        .filter(|m| m.event.is_none())
        .filter_map(|m| idents.iter().find(|i| i.path == files[m.file].path))
        .map(|i| i.owner.to_string())
        .collect();
    HistoryReport {
        files: files
            .iter()
            .map(|f| HistoryFileReport {
                path: f.path.clone(),
                kind: match f.header.kind {
                    Kind::Node => "node",
                    Kind::Downstream => "downstream",
                    Kind::Lab => "lab",
                }
                .to_string(),
                owner: f.header.owner.as_ref().map(|o| o.to_string()),
                events: f.lines.len() as u64,
            })
            .collect(),
        start_ns,
        problems,
        problems_total: total,
        errors,
        unterminated,
    }
}

/// One line of the merged history: seconds since time 0, who recorded it
/// (a node's owner id, or the file's kind), and the event as JSON.
fn trace_line(trace: &mut String, at: SimTime, file: &File, event: &Event) {
    use std::fmt::Write as _;
    let who = match &file.header.owner {
        Some(owner) => owner.to_string(),
        None => match file.header.kind {
            Kind::Node => "node",
            Kind::Downstream => "downstream",
            Kind::Lab => "lab",
        }
        .to_string(),
    };
    let json = serde_json::to_string(event).unwrap_or_default();
    let nanos = at.as_nanos();
    let _ = writeln!(
        trace,
        "{}.{:09} {who} {json}",
        nanos / 1_000_000_000,
        nanos % 1_000_000_000
    );
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}
