//! Processes under the supervisor: signals do what they say, and nothing
//! outlives it.

use std::path::Path;

use super::*;

/// A child that appends a line every 20 ms.
fn ticker(node: &str, incarnation: u32) -> Launch {
    Launch {
        node: node.to_string(),
        incarnation,
        args: vec![
            "-c".into(),
            "while :; do echo tick; sleep 0.02; done".into(),
        ],
        env: Vec::new(),
    }
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

async fn progress(path: &Path, over: Duration) -> u64 {
    let before = size(path);
    tokio::time::sleep(over).await;
    size(path).saturating_sub(before)
}

#[tokio::test]
async fn a_stopped_child_makes_no_progress_and_continues_when_resumed() {
    // SIGSTOP freezes the process (a GC pause); SIGCONT lets it go on.
    let logs = tempfile::tempdir().expect("tempdir");
    let mut supervisor = Supervisor::new(Path::new("/bin/sh"), logs.path());
    let index = supervisor.spawn(ticker("node-a", 1)).expect("spawn");
    let out = supervisor.processes()[index].logs.0.clone();
    assert!(progress(&out, Duration::from_millis(200)).await > 0);
    supervisor.signal(index, Signal::Stop).expect("stop");
    tokio::time::sleep(Duration::from_millis(50)).await; // an in-flight echo
    assert_eq!(progress(&out, Duration::from_millis(300)).await, 0);
    assert!(
        supervisor.processes()[index].is_live(),
        "stopped is not dead"
    );
    supervisor
        .signal(index, Signal::Continue)
        .expect("continue");
    assert!(progress(&out, Duration::from_millis(300)).await > 0);
    supervisor.shutdown().await;
    assert!(!process_running(supervisor.processes()[index].pid));
}

#[tokio::test]
async fn a_killed_node_restarts_as_a_new_incarnation() {
    // SIGKILL ends the life (even a stopped one); the restart is a new
    // process with the next incarnation, and its own logs.
    let logs = tempfile::tempdir().expect("tempdir");
    let mut supervisor = Supervisor::new(Path::new("/bin/sh"), logs.path());
    let first = supervisor.spawn(ticker("node-a", 1)).expect("spawn");
    supervisor.signal(first, Signal::Stop).expect("stop");
    supervisor.signal(first, Signal::Kill).expect("kill");
    let deadline = Instant::now() + Duration::from_secs(2);
    while supervisor.live("node-a").contains(&first) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ended = supervisor.processes()[first].ended.clone();
    assert_eq!(
        ended.map(|(_, e)| e),
        Some(Ending::Signalled(libc::SIGKILL))
    );
    let second = supervisor.spawn(ticker("node-a", 2)).expect("restart");
    assert_eq!(supervisor.live("node-a"), [second]);
    let process = &supervisor.processes()[second];
    assert_eq!(process.incarnation, 2);
    assert!(process.logs.0.ends_with("node-a#2.stdout"));
    assert!(progress(&process.logs.0.clone(), Duration::from_millis(200)).await > 0);
    // Signals to an ended life are a no-op, not an error.
    supervisor.signal(first, Signal::Continue).expect("no-op");
    supervisor.shutdown().await;
    assert!(supervisor.live("node-a").is_empty());
}

#[test]
fn a_panic_leaves_no_child_behind() {
    // The Drop guard kills every process group when the run panics, also
    // stopped ones and their children.
    let logs = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let pids = std::sync::Mutex::new(Vec::new());
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(async {
            let mut supervisor = Supervisor::new(Path::new("/bin/sh"), logs.path());
            for (node, incarnation) in [("node-a", 1), ("node-a", 2), ("node-b", 1)] {
                let index = supervisor.spawn(ticker(node, incarnation)).expect("spawn");
                pids.lock()
                    .expect("pids")
                    .push(supervisor.processes()[index].pid);
            }
            supervisor.signal(0, Signal::Stop).expect("stop");
            tokio::time::sleep(Duration::from_millis(50)).await;
            panic!("a simulated failure in the middle of a run");
        })
    }));
    assert!(outcome.is_err());
    let pids = pids.into_inner().expect("pids");
    assert_eq!(pids.len(), 3);
    for pid in pids {
        assert!(!process_running(pid), "process {pid} survived the panic");
    }
}
