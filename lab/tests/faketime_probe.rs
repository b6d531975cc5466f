//! What libfaketime fakes for a tokio process, measured on this machine: a
//! child runs a tokio sleep under it, and its clocks are compared with ours.

mod support;

use std::io::Write;

use fenced_lab::faketime::{find_library, measure, probe, FaketimeSupport};

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
