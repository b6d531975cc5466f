//! Anchored faults for real: the runner watches every node process's
//! history file as it grows and fires an anchored fault when the event it
//! waits for appears — the same events the simulator's anchor watcher sees
//! in its observation stream (`fenced_sim::AnchorEvent`).
//!
//! Why the history files and not standard output: each event is already
//! one line there, written by one `write` when it happens, stamped with the
//! history clock (`CLOCK_MONOTONIC` by raw system call, the same in every
//! process and untouched by libfaketime), so the runner knows exactly when
//! the event happened and can say how late its reaction was
//! (`Applied::reaction`). The runner reads the files every
//! [`POLL_INTERVAL`] while an anchor is armed; nothing is read otherwise.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use fenced::history::{Event, Line};
use fenced_sim::{AnchorEvent, ResolvedAnchor};

/// How often the runner reads the growing history files while an anchor
/// is armed: the bound of its reaction delay, besides the fault's own
/// making.
pub const POLL_INTERVAL: Duration = Duration::from_millis(1);

/// One process's history file, read so far.
#[derive(Debug)]
struct Tail {
    node: u32,
    owner: String,
    path: PathBuf,
    /// Open once the file exists; each read goes on from where the last
    /// stopped (the process appends, one `write` per line).
    file: Option<File>,
    /// A line begun and not yet ended.
    partial: Vec<u8>,
}

/// An anchor event seen in a history: of which node, carrying which token,
/// at what history-clock time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The event.
    pub event: AnchorEvent,
    /// The node (scenario index).
    pub node: u32,
    /// The token it carries, if any.
    pub token: Option<u64>,
    /// The history clock when it happened.
    pub at_ns: u64,
}

/// Every process's history, tailed.
#[derive(Debug, Default)]
pub struct HistoryTails {
    tails: Vec<Tail>,
    /// Owners believing they lead, for `renewal-sent`.
    leading: BTreeSet<String>,
}

impl HistoryTails {
    /// Starts following `path`, the history of `owner`, a process of node
    /// `node`.
    pub fn follow(&mut self, node: u32, owner: String, path: PathBuf) {
        self.tails.push(Tail {
            node,
            owner,
            path,
            file: None,
            partial: Vec::new(),
        });
    }

    /// The anchor events written since the last call, file by file in the
    /// order followed, each file's in its order. A file not yet created, or
    /// unreadable for now, is read next time.
    pub fn poll(&mut self) -> Vec<Seen> {
        let mut seen = Vec::new();
        for tail in &mut self.tails {
            if tail.file.is_none() {
                tail.file = File::open(&tail.path).ok();
            }
            let Some(file) = tail.file.as_mut() else {
                continue;
            };
            // What was read before an error stays in `partial`; the next
            // poll reads on from there.
            let _ = file.read_to_end(&mut tail.partial);
            while let Some(end) = tail.partial.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = tail.partial.drain(..=end).collect();
                let Ok(line) = serde_json::from_slice::<Line>(&line) else {
                    // The header, or a line this runner does not read.
                    continue;
                };
                let mut push = |event, token| {
                    seen.push(Seen {
                        event,
                        node: tail.node,
                        token,
                        at_ns: line.at_ns,
                    })
                };
                match line.event {
                    Event::TermStarted { token } => {
                        self.leading.insert(tail.owner.clone());
                        push(AnchorEvent::TermStarted, Some(token.get()));
                    }
                    Event::TermEnded { token, .. } => {
                        self.leading.remove(&tail.owner);
                        push(AnchorEvent::TermEnded, Some(token.get()));
                    }
                    Event::WorkStarted { token, .. } => {
                        push(AnchorEvent::WorkStarted, Some(token.get()))
                    }
                    Event::WriteSent { token, .. } => {
                        push(AnchorEvent::WriteSent, Some(token.get()))
                    }
                    Event::RequestSent { .. } => {
                        push(AnchorEvent::RequestSent, None);
                        if self.leading.contains(&tail.owner) {
                            push(AnchorEvent::RenewalSent, None);
                        }
                    }
                    Event::ProcessStopped => {
                        self.leading.remove(&tail.owner);
                    }
                    _ => {}
                }
            }
        }
        seen
    }
}

/// Whether `seen`, `since_start` into the run, fires `anchor`.
pub fn fires(anchor: &ResolvedAnchor, seen: &Seen, since_start: Duration) -> bool {
    anchor.matches(seen.event, seen.node, seen.token, since_start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn line(at_ns: u64, event: Event) -> String {
        let mut text = serde_json::to_string(&Line { at_ns, event }).unwrap();
        text.push('\n');
        text
    }

    /// Lines are read as they are written, a half-written one when it is
    /// ended; a renewal is a request inside a term.
    #[test]
    fn tails_read_events_as_they_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("node-a#1.jsonl");
        let mut tails = HistoryTails::default();
        tails.follow(0, "node-a#1".into(), path.clone());
        assert!(tails.poll().is_empty(), "no file yet");
        let mut file = File::create(&path).unwrap();
        file.write_all(b"{\"format\":\"header\"}\n").unwrap();
        let token = fenced::FencingToken::FIRST;
        let request = line(
            5,
            Event::RequestSent {
                request: 1,
                local_ns: 0,
            },
        );
        file.write_all(request.as_bytes()).unwrap();
        let started = line(7, Event::TermStarted { token });
        let (head, rest) = started.split_at(10);
        file.write_all(head.as_bytes()).unwrap();
        let seen = tails.poll();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].event, AnchorEvent::RequestSent);
        file.write_all(rest.as_bytes()).unwrap();
        file.write_all(
            line(
                9,
                Event::RequestSent {
                    request: 2,
                    local_ns: 0,
                },
            )
            .as_bytes(),
        )
        .unwrap();
        let seen = tails.poll();
        let events: Vec<_> = seen.iter().map(|s| (s.event, s.token, s.at_ns)).collect();
        assert_eq!(
            events,
            [
                (AnchorEvent::TermStarted, Some(1), 7),
                (AnchorEvent::RequestSent, None, 9),
                (AnchorEvent::RenewalSent, None, 9),
            ]
        );
    }
}
