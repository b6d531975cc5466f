//! Event-anchored faults: a fault that begins when the system does
//! something — a unit of work begins, a term begins or ends, a renewal goes
//! out — so that a scenario's story does not hang on a coincidence of one
//! schedule (issue 24).

mod common;

use std::time::Duration;

use common::{
    assert_exit, assert_refused, fenced_sim, lines, ms, run_seed, run_traced, secs, shipped_text,
    stdout, time_of, trio, write_file,
};
use fenced_sim::{Anchor, AnchorEvent, FaultSpec, Scenario, Simulation};

/// node-a pauses for `length` when it begins a unit of work at or after
/// `after`.
fn pause_a_in_work(after: Duration, length: Duration) -> FaultSpec {
    FaultSpec::Pause {
        host: "node-a".into(),
        at: after,
        duration: length,
    }
    .anchored(Anchor::on(AnchorEvent::WorkStarted).of_node("node-a"))
}

/// The fenced GC-pause story with the pause anchored in a unit of work.
fn gc_pause(fencing: bool) -> Scenario {
    let mut s = trio("anchored-gc-pause", secs(120));
    s.fencing = fencing;
    s.faults.push(pause_a_in_work(secs(12), secs(40)));
    s
}

/// The pause begins in the same instant as the unit, right after it — the
/// first unit at or after 12 s — and before its write: the trace shows the
/// unit start and then the pause, and the report says when.
#[test]
fn an_anchored_pause_begins_right_after_its_event() {
    let (report, trace) = run_traced(&gc_pause(true), 7);
    let started = lines(&trace, "node-a#1", "started under token 1");
    let first_after_12 = started
        .iter()
        .position(|l| time_of(l) >= 12.0)
        .expect("node-a works after 12 s");
    let unit = started[first_after_12];
    let all: Vec<&str> = trace.lines().collect();
    let at = all
        .iter()
        .position(|l| *l == unit)
        .expect("the line is in the trace");
    assert!(
        all[at + 1].contains("node-a#1") && all[at + 1].contains("paused"),
        "{}",
        all[at + 1]
    );
    assert_eq!(time_of(all[at + 1]), time_of(unit));
    let anchor = &report.anchors[0];
    assert_eq!(anchor.fault, 0);
    assert_eq!(anchor.kind, "pause");
    assert_eq!(anchor.anchor, "work-started of node-a");
    let fired = anchor.fired_at_ms.expect("it fired");
    assert_eq!(anchor.began_at_ms, Some(fired));
    assert!(
        (fired / 1000.0 - time_of(unit)).abs() < 1e-6,
        "{fired} vs {unit}"
    );
    // The story: the unit's write, held over the TTL, is fenced off; without
    // fencing it is a split-brain.
    assert!(report.expect.met, "{:?}", report.expect);
    assert!(report.writes.rejected_stale >= 1);
    let unfenced = run_seed(&gc_pause(false), 7);
    assert!(unfenced.split_brain);
}

/// Whatever the seed (latencies, jitter), the anchored pause lands inside a
/// unit of work, so the story holds on every seed.
#[test]
fn the_anchored_story_holds_on_every_seed() {
    for seed in 0..40 {
        let fenced = run_seed(&gc_pause(true), seed);
        assert!(
            fenced.writes.rejected_stale >= 1,
            "seed {seed}: {:?}",
            fenced.writes
        );
        assert!(!fenced.split_brain, "seed {seed}");
        let unfenced = run_seed(&gc_pause(false), seed);
        assert!(unfenced.split_brain, "seed {seed}");
    }
}

/// A delay moves the start after the event by exactly that much.
#[test]
fn a_delay_starts_the_fault_that_long_after_its_event() {
    let mut s = trio("anchored-delay", secs(60));
    let when = Anchor::on(AnchorEvent::TermStarted)
        .of_node("node-a")
        .with_delay(ms(250));
    s.faults.push(
        FaultSpec::Isolate {
            host: "node-a".into(),
            at: Duration::ZERO,
            duration: secs(5),
        }
        .anchored(when),
    );
    let report = run_seed(&s, 3);
    let a = &report.anchors[0];
    let (fired, began) = (a.fired_at_ms.unwrap(), a.began_at_ms.unwrap());
    assert!((began - fired - 250.0).abs() < 1e-6, "{fired} → {began}");
    assert_eq!(a.anchor, "term-started of node-a + 250ms");
}

/// `token` picks the event that carries it: the pause waits for the term
/// of token 2, whoever holds it.
#[test]
fn a_token_filters_the_event() {
    let mut s = trio("anchored-token", secs(120));
    // node-a crashes at 5 s; whoever takes over gets token 2; a pause then
    // hits the new leader the moment its term begins.
    s.faults.push(FaultSpec::Crash {
        node: "node-a".into(),
        at: secs(5),
        restart_after: None,
    });
    s.faults.push(
        FaultSpec::Pause {
            host: "node-b".into(),
            at: Duration::ZERO,
            duration: secs(1),
        }
        .anchored(Anchor::on(AnchorEvent::TermStarted).with_token(2)),
    );
    let (report, trace) = run_traced(&s, 1);
    let term2 = report
        .terms
        .iter()
        .find(|t| t.token == 2)
        .expect("a second term");
    let fired = report.anchors[0].fired_at_ms.unwrap();
    assert_eq!(fired as u64, term2.start_ms, "{trace}");
}

/// `renewal-sent` is a lease request of a process that believes it leads;
/// `request-sent` is any, the first one at the run's start.
#[test]
fn renewal_sent_waits_for_a_request_inside_a_term() {
    let mut s = trio("anchored-renewal", secs(60));
    for (event, node) in [
        (AnchorEvent::RenewalSent, "node-a"),
        (AnchorEvent::RequestSent, "node-b"),
    ] {
        s.faults.push(
            FaultSpec::Pause {
                host: node.into(),
                at: Duration::ZERO,
                duration: ms(1),
            }
            .anchored(Anchor::on(event).of_node(node)),
        );
    }
    let (report, trace) = run_traced(&s, 2);
    let renewal = report.anchors[0].fired_at_ms.unwrap() / 1000.0;
    // node-a's first renewal is one renew_interval (10 s) into its term.
    assert!((renewal - 10.0).abs() < 0.1, "{renewal}\n{trace}");
    let request = report.anchors[1].fired_at_ms.unwrap() / 1000.0;
    assert!(
        (request - 1.0).abs() < 0.01,
        "node-b asks as it starts: {request}"
    );
}

/// An anchor that never happens is reported, and the expectations are
/// unmet: what they were written for did not happen.
#[test]
fn an_anchor_that_never_fires_fails_the_expectations() {
    let mut s = trio("anchored-never", secs(30));
    s.faults.push(
        FaultSpec::Pause {
            host: "node-b".into(),
            at: secs(1),
            duration: secs(1),
        }
        .anchored(Anchor::on(AnchorEvent::TermStarted).with_token(9)),
    );
    let report = run_seed(&s, 1);
    assert_eq!(report.anchors[0].fired_at_ms, None);
    assert_eq!(report.anchors[0].began_at_ms, None);
    assert!(!report.expect.met);
    let why = report
        .expect
        .unmet_because("anchors")
        .expect("the anchor's sentence");
    assert!(
        why.contains("fault[0]") && why.contains("never happened"),
        "{why}"
    );
    // No other expectation is touched: no violation, no split-brain.
    assert!(report.violations.is_empty());
}

/// After the heal no fault begins, anchored or not: an event then is noted
/// as fired, the fault as never begun.
#[test]
fn no_anchored_fault_begins_after_the_heal() {
    let mut s = trio("anchored-after-heal", secs(60));
    s.heal_at = Some(secs(20));
    s.faults.push(
        FaultSpec::Pause {
            host: "node-a".into(),
            at: secs(30),
            duration: secs(5),
        }
        .anchored(Anchor::on(AnchorEvent::WorkStarted)),
    );
    let report = run_seed(&s, 1);
    assert!(report.anchors[0].fired_at_ms.is_some());
    assert_eq!(report.anchors[0].began_at_ms, None);
    assert!(!report.expect.met);
}

/// The same seed fires the same anchors at the same instants; another seed
/// differs.
#[test]
fn anchored_runs_are_deterministic() {
    let s = gc_pause(true);
    let (a, b) = (run_seed(&s, 11), run_seed(&s, 11));
    assert_eq!(a, b);
    let other = run_seed(&s, 12);
    assert_ne!(a.trace_hash, other.trace_hash);
    assert_ne!(a.anchors[0].fired_at_ms, other.anchors[0].fired_at_ms);
}

/// An anchored fault reads back from the TOML it writes, and runs the same.
#[test]
fn an_anchored_fault_round_trips_through_toml() {
    let mut s = gc_pause(true);
    s.faults.push(
        FaultSpec::ClockJump {
            host: "node-b".into(),
            at: secs(3),
            by: fenced_sim::ClockOffset(2_000_000_000),
        }
        .anchored(
            Anchor::on(AnchorEvent::TermEnded)
                .of_node("node-a")
                .with_token(1)
                .with_delay(ms(5)),
        ),
    );
    let text = fenced_sim::to_toml::to_toml(&s);
    assert!(
        text.contains(
            "at = { event = \"term-ended\", node = \"node-a\", token = 1, after = \"3s\", delay = \"5ms\" }"
        ),
        "{text}"
    );
    let back =
        fenced_sim::file::parse(&text, std::path::Path::new("anchored.toml")).expect("reads back");
    assert_eq!(back.faults, s.faults);
    let run = |s: &Scenario| {
        let mut sim = Simulation::from_scenario(s, Default::default()).unwrap();
        sim.run_to_end();
        sim.report()
    };
    assert_eq!(run(&back), run(&s));
}

/// Bad anchors are exit 2 naming the key.
#[test]
fn bad_anchors_are_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let head = "name = \"x\"\nduration = \"1m\"\n[[node]]\nid = \"node-a\"\n[[node]]\nid = \"node-b\"\n[[fault]]\nkind = \"pause\"\nnode = \"node-a\"\nduration = \"1s\"\n";
    assert_refused(
        dir.path(),
        head,
        &[
            (
                "no-event",
                "at = { node = \"node-a\" }\n",
                &["fault[0].at.event", "needs `event`", "work-started"],
            ),
            (
                "unknown-event",
                "at = { event = \"lunch\" }\n",
                &["fault[0].at.event", "unknown anchor event `lunch`"],
            ),
            (
                "unknown-key",
                "at = { event = \"work-started\", when = \"1s\" }\n",
                &["fault[0].at.when", "does not take `when`"],
            ),
            (
                "bad-after",
                "at = { event = \"work-started\", after = \"soon\" }\n",
                &["fault[0].at.after", "not a duration"],
            ),
            (
                "bad-delay",
                "at = { event = \"work-started\", delay = \"-1s\" }\n",
                &["fault[0].at.delay", "negative"],
            ),
            (
                "server",
                "at = { event = \"work-started\", node = \"lease-store\" }\n",
                &["fault[0].at.node", "not a node"],
            ),
            (
                "unknown-node",
                "at = { event = \"work-started\", node = \"node-z\" }\n",
                &["fault[0].at.node", "unknown host `node-z`"],
            ),
            (
                "token-on-request",
                "at = { event = \"request-sent\", token = 2 }\n",
                &["fault[0].at.token", "carries no token"],
            ),
            (
                "token-zero",
                "at = { event = \"term-started\", token = 0 }\n",
                &["fault[0].at.token", "start at 1"],
            ),
            (
                "token-negative",
                "at = { event = \"term-started\", token = -3 }\n",
                &["fault[0].at.token", "1 or more"],
            ),
            (
                "at-number",
                "at = 12\n",
                &["fault[0].at", "a duration (\"12s\") or an anchor's table"],
            ),
            (
                "after-past-end",
                "at = { event = \"work-started\", after = \"2m\" }\n",
                &["fault[0].at", "not inside the run's duration"],
            ),
        ],
    );
    // A recurring fault takes no `at` at all, anchored or not.
    let recurring = "name = \"x\"\nduration = \"1m\"\n[[node]]\nid = \"node-a\"\n[[fault]]\nkind = \"pause\"\nnode = \"*\"\nevery = \"10s\"\nduration = \"1s\"\nat = { event = \"work-started\" }\n";
    let path = write_file(dir.path(), "recurring.toml", recurring);
    let out = fenced_sim(["run".as_ref(), path.as_os_str()]);
    assert_exit(&out, 2);
    // Another design's clients send no fenced lease requests.
    let zoo = "name = \"x\"\nduration = \"1m\"\n[election]\nprotocol = \"etcd\"\n[[node]]\nid = \"node-a\"\n[[fault]]\nkind = \"pause\"\nnode = \"node-a\"\nduration = \"1s\"\nat = { event = \"renewal-sent\" }\n";
    let path = write_file(dir.path(), "zoo.toml", zoo);
    let out = fenced_sim(["check".as_ref(), path.as_os_str()]);
    assert_exit(&out, 2);
    assert!(
        common::stderr(&out).contains("fault[0].at.event"),
        "{}",
        common::stderr(&out)
    );
}

/// `fenced-sim run` prints the anchored faults and fails on one that never
/// began.
#[test]
fn the_summary_says_what_each_anchor_did() {
    let dir = tempfile::tempdir().unwrap();
    let file = "name = \"x\"\nduration = \"30s\"\n[[node]]\nid = \"node-a\"\n[[fault]]\nkind = \"pause\"\nnode = \"node-a\"\nduration = \"1s\"\nat = { event = \"term-ended\" }\n";
    let path = write_file(dir.path(), "never.toml", file);
    let out = fenced_sim(["run".as_ref(), path.as_os_str()]);
    assert_exit(&out, 1);
    let text = stdout(&out);
    assert!(text.contains("Anchored faults"), "{text}");
    assert!(
        text.contains(
            "fault[0] pause        on term-ended of any node: event at never, began never"
        ),
        "{text}"
    );
    assert!(text.contains("anchors: fault[0]"), "{text}");
}

/// Shrinking keeps an anchor: the smallest split-brain of the unfenced
/// story is the anchored pause alone, still anchored, and the file it
/// writes breaks the same invariant.
#[test]
fn shrinking_keeps_the_anchor() {
    let mut s = gc_pause(false);
    // Noise the shrinker should drop: a short cut and a clock step on node-c.
    s.faults.push(FaultSpec::Cut {
        from: "node-c".into(),
        to: "lease-store".into(),
        at: secs(70),
        duration: secs(1),
    });
    s.faults.push(FaultSpec::ClockJump {
        host: "node-c".into(),
        at: secs(80),
        by: fenced_sim::ClockOffset(1_000_000_000),
    });
    let shrunk = fenced_sim::shrink::shrink(&s, &Default::default(), 200).expect("it fails");
    assert_eq!(shrunk.invariant, "split-brain");
    assert_eq!(
        shrunk.scenario.faults.len(),
        1,
        "{:?}",
        shrunk.scenario.faults
    );
    let anchor = shrunk.scenario.faults[0].anchor().expect("still anchored");
    assert_eq!(anchor.event, AnchorEvent::WorkStarted);
    let text = fenced_sim::to_toml::to_toml(&shrunk.scenario);
    assert!(text.contains("event = \"work-started\""), "{text}");
}

/// Shrinking turns an instant into an anchor: the unfenced GC-pause story
/// as it was shipped before anchors — the pause at 12.05 s, where seed 7's
/// schedule happens to put a unit of work — shrinks to a pause anchored on
/// node-a's own event, and that story holds when the cluster starts later,
/// where the instant misses the unit.
#[test]
fn shrinking_turns_an_instant_into_an_anchor_that_holds_on_later_starts() {
    let text = shipped_text("gc-pause-unfenced");
    let mut s = fenced_sim::file::parse(&text, std::path::Path::new("gc-pause-unfenced.toml"))
        .expect("the shipped scenario");
    s.faults = vec![FaultSpec::Pause {
        host: "node-a".into(),
        at: ms(12_050),
        duration: secs(40),
    }];
    let shrunk = fenced_sim::shrink::shrink(&s, &Default::default(), 500).expect("it fails");
    assert_eq!(shrunk.invariant, "split-brain");
    assert_eq!(
        shrunk.scenario.faults.len(),
        1,
        "{:?}",
        shrunk.scenario.faults
    );
    let anchor = shrunk.scenario.faults[0]
        .anchor()
        .expect("the instant became an anchor");
    assert_eq!(anchor.node.as_deref(), Some("node-a"));
    let text = fenced_sim::to_toml::to_toml(&shrunk.scenario);
    assert!(text.contains("node = \"node-a\""), "{text}");
    // The same runs, the instant's pause against the anchored one, with
    // the whole cluster started later by 0, 100, ..., 900 ms — the start-up
    // jitter of a real run. (Seeds alone move a unit by microseconds of
    // latency: the instant holds on all of them.)
    let mut anchored = s.clone();
    anchored.faults = shrunk.scenario.faults.clone();
    let splits = |scenario: &Scenario| {
        (0..10)
            .filter(|&k| {
                let mut shifted = scenario.clone();
                for node in &mut shifted.nodes {
                    node.start_at += ms(100 * k);
                }
                run_seed(&shifted, 7).split_brain
            })
            .count()
    };
    let (at_instant, at_anchor) = (splits(&s), splits(&anchored));
    eprintln!(
        "split-brain on {at_instant}/10 starts at the instant, {at_anchor}/10 anchored: {text}"
    );
    assert_eq!(at_anchor, 10, "the anchored story holds on every start");
    assert!(
        at_instant < 5,
        "the instant misses the unit on most starts: {at_instant}/10"
    );
}

/// `explore` draws pauses anchored to a node's own event in a sixth of its
/// seeds, from a stream of their own (other seeds keep their schedules),
/// and anchors half its zombies (to `work-started`) and its store pauses at a
/// renewal (to `renewal-sent`); the saved schedule reads back and runs the
/// same, and an anchor that does not fire fails nothing (`[expect]
/// anchors_begin = false`).
#[test]
fn explore_draws_anchored_pauses_that_replay_exactly() {
    let base = fenced_sim::explore::default_base();
    let (mut drawn, mut fired) = (0, 0);
    for seed in 0..60 {
        let (scenario, mix) = fenced_sim::explore::generate(&base, seed);
        let anchored = scenario
            .faults
            .iter()
            .filter(|f| f.anchor().is_some())
            .count();
        let draws_anchors = mix.anchored || mix.zombie_anchored || mix.store_pause_at_renewal;
        assert_eq!(draws_anchors, anchored > 0, "seed {seed}");
        if anchored == 0 {
            assert_eq!(scenario.expect.anchors_begin, None, "seed {seed}");
            continue;
        }
        drawn += 1;
        assert_eq!(scenario.expect.anchors_begin, Some(false));
        let text = fenced_sim::to_toml::to_toml(&scenario);
        let back = fenced_sim::file::parse(&text, std::path::Path::new("seed.toml")).unwrap();
        assert_eq!(back, scenario, "seed {seed}");
        let run = |s: &Scenario| {
            let mut sim = Simulation::from_scenario(s, Default::default()).unwrap();
            sim.run_to_end();
            sim.report()
        };
        let (a, b) = (run(&scenario), run(&back));
        assert_eq!(a, b, "seed {seed}");
        assert_eq!(a.anchors.len(), anchored);
        fired += a.anchors.iter().filter(|x| x.began_at_ms.is_some()).count();
        // Unfired anchors leave the expectations alone here.
        assert!(a.expect.unmet_because("anchors").is_none(), "seed {seed}");
    }
    assert!(drawn >= 5, "{drawn} seeds drew anchored pauses");
    assert!(fired >= 2, "{fired} anchored pauses began");
}

/// The one heal rule, as the simulator and the lab both apply it
/// (`ResolvedAnchor::begins`): an event before the heal whose delay runs
/// to or past it begins nothing, as an event after it does not.
#[test]
fn a_delay_that_reaches_the_heal_begins_nothing() {
    let anchor = fenced_sim::ResolvedAnchor {
        event: AnchorEvent::WorkStarted,
        node: None,
        token: None,
        not_before: Duration::ZERO,
        delay: secs(5),
    };
    let heal = Some(secs(20));
    assert_eq!(anchor.begins(secs(10), heal), Some(secs(15)));
    assert_eq!(
        anchor.begins(secs(15), heal),
        None,
        "15 s + 5 s is the heal's instant"
    );
    assert_eq!(anchor.begins(secs(25), heal), None);
    assert_eq!(anchor.begins(secs(25), None), Some(secs(30)));
    // In a run: node-a's first unit after 18 s begins about 18 s; its pause
    // would begin 5 s later, after the heal at 20 s.
    let mut s = trio("anchored-delay-past-heal", secs(60));
    s.heal_at = Some(secs(20));
    s.faults.push(
        FaultSpec::Pause {
            host: "node-a".into(),
            at: secs(18),
            duration: secs(5),
        }
        .anchored(
            Anchor::on(AnchorEvent::WorkStarted)
                .of_node("node-a")
                .with_delay(secs(5)),
        ),
    );
    let report = run_seed(&s, 1);
    let fired = report.anchors[0].fired_at_ms.expect("node-a works at 18 s");
    assert!(fired < 20_000.0, "{fired}");
    assert_eq!(report.anchors[0].began_at_ms, None);
}
