//! What libfaketime fakes for a tokio process, measured on this machine: a
//! child runs a tokio sleep under it, and its clocks are compared with ours.

mod support;

use std::io::Write;

use fenced_lab::faketime::{
    find_library, measure, measure_steps, probe, FaketimeSupport, StepSupport, STEP_PROBE_OFFSET,
};

/// Set to `1` to make a missing libfaketime fail instead of skip.
const REQUIRE_VAR: &str = "FENCED_REQUIRE_FAKETIME";

fn library(test: &str) -> Option<std::path::PathBuf> {
    let found = find_library();
    if found.is_none() {
        let required = std::env::var(REQUIRE_VAR).is_ok_and(|v| v.trim() == "1");
        assert!(
            !required,
            "{REQUIRE_VAR}=1 but libfaketime is not installed"
        );
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: {test}: libfaketime is not installed (apt-get install faketime)"
        );
    }
    found
}

#[tokio::test(flavor = "current_thread")]
async fn libfaketime_moves_systemtime_instant_and_tokio_timers() {
    // The probe's verdict: +100 s on the wall clock, and the monotonic clock
    // (tokio's timers) running twice as fast.
    if library("libfaketime_moves_systemtime_instant_and_tokio_timers").is_none() {
        return;
    }
    match probe(&support::program()).await {
        FaketimeSupport::Verified { measured, .. } => {
            assert!(
                (measured.realtime_offset_secs - 100.0).abs() < 5.0,
                "{measured}"
            );
            assert!((measured.monotonic_rate - 2.0).abs() < 0.5, "{measured}");
        }
        other => panic!("libfaketime is installed but not verified: {other:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_slow_clock_behind_the_machine_is_faked_too() {
    // A negative offset and a rate below 1 (slow-clock scenarios' drift
    // -0.25): the tokio sleep takes longer in real time, not shorter.
    let Some(library) = library("a_slow_clock_behind_the_machine_is_faked_too") else {
        return;
    };
    let measured = measure(&support::program(), &library, "-50 x0.75")
        .await
        .expect("the probe runs");
    assert!(
        (measured.realtime_offset_secs + 50.0).abs() < 5.0,
        "{measured}"
    );
    assert!((measured.monotonic_rate - 0.75).abs() < 0.15, "{measured}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_running_process_s_wall_clock_steps_and_its_monotonic_clock_does_not() {
    // What a node's clock-jump and clock-strobe need: the wall clock read
    // from a file the runner rewrites mid-run (+0, then +100 s), with
    // FAKETIME_DONT_FAKE_MONOTONIC=1 — the tokio sleep and `Instant` run
    // true. (Python's `time.sleep` fails with EINVAL under that variable on
    // libfaketime 0.9.10: it sleeps with `clock_nanosleep`; tokio sleeps in
    // `epoll_wait`, which is unaffected.)
    let Some(library) =
        library("a_running_process_s_wall_clock_steps_and_its_monotonic_clock_does_not")
    else {
        return;
    };
    let measured = measure_steps(&support::program(), &library)
        .await
        .expect("the probe runs");
    assert!(measured.before_secs.abs() < 5.0, "{measured}");
    assert!(
        (measured.after_secs - STEP_PROBE_OFFSET.as_secs_f64()).abs() < 5.0,
        "{measured}"
    );
    assert!((measured.monotonic_rate - 1.0).abs() < 0.25, "{measured}");
    match probe(&support::program()).await {
        FaketimeSupport::Verified {
            steps: StepSupport::Verified(_),
            ..
        } => {}
        other => panic!("runtime steps are not verified: {other:?}"),
    }
}
