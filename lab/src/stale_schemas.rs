//! Schemas left behind by runners that are gone — a runner killed with
//! SIGKILL cannot drop its schema — and their removal.
//!
//! Each run marks its schema with a comment naming the runner:
//! `fenced-lab runner host=<hostname> boot=<boot id> pid=<pid> start=<start
//! time>` ([`RunnerId::marker`]), the start time being the process's start
//! in clock ticks since boot (`/proc/<pid>/stat`, field 22) so a reused pid
//! is told apart. A schema is **stale** — and [`remove_stale`] drops it —
//! only when all of these hold:
//!
//! * its name has the runs' pattern, `fenced_lab_<digits>_<digits>`;
//! * it carries the marker, written by a runner on **this** host and this
//!   boot (a schema of another machine sharing the database is never
//!   judged: its pids mean nothing here);
//! * that runner is not alive: no process with its pid, or one that started
//!   at another time.
//!
//! Everything else is kept and counted: live runs, other hosts' runs, and
//! unmarked schemas with the pattern (a user's, or a run of an older
//! version), which are never touched. `fenced-lab run` removes stale
//! schemas before it creates its own; `fenced-lab clean --postgres URL`
//! does only that.

use std::fmt;

use fenced::postgres::tokio_postgres::Client;

use crate::schema::{connect, SchemaError, STATEMENT_TIMEOUT};

/// The marker's first words.
const MARKER_PREFIX: &str = "fenced-lab runner";

/// A runner process: the host and boot it ran on, its pid and when it
/// started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunnerId {
    /// `/proc/sys/kernel/hostname`.
    pub host: String,
    /// `/proc/sys/kernel/random/boot_id`.
    pub boot: String,
    /// The process id.
    pub pid: u32,
    /// Its start time, in clock ticks since boot.
    pub start: u64,
}

impl RunnerId {
    /// This process.
    ///
    /// # Errors
    /// `/proc` cannot be read (not Linux).
    pub fn this_process() -> Result<RunnerId, String> {
        let pid = std::process::id();
        Ok(RunnerId {
            host: read_proc("sys/kernel/hostname")?,
            boot: read_proc("sys/kernel/random/boot_id")?,
            pid,
            start: start_time(pid).ok_or_else(|| format!("no start time for pid {pid}"))?,
        })
    }

    /// The schema comment that names this runner.
    pub fn marker(&self) -> String {
        format!(
            "{MARKER_PREFIX} host={} boot={} pid={} start={}",
            self.host, self.boot, self.pid, self.start
        )
    }

    /// The runner a schema comment names, if it is a marker.
    pub fn from_marker(comment: &str) -> Option<RunnerId> {
        let rest = comment.strip_prefix(MARKER_PREFIX)?;
        let field = |key: &str| {
            rest.split_whitespace()
                .find_map(|part| part.strip_prefix(key)?.strip_prefix('='))
        };
        Some(RunnerId {
            host: field("host")?.to_string(),
            boot: field("boot")?.to_string(),
            pid: field("pid")?.parse().ok()?,
            start: field("start")?.parse().ok()?,
        })
    }
}

fn read_proc(path: &str) -> Result<String, String> {
    std::fs::read_to_string(format!("/proc/{path}"))
        .map(|text| text.trim().to_string())
        .map_err(|e| format!("cannot read /proc/{path}: {e}"))
}

/// The start time of process `pid` (clock ticks since boot), if it exists.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces:
    // fields are counted after its closing parenthesis, which is field 3's
    // start; the start time is field 22.
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Whether `name` has the pattern of a run's schema.
pub fn is_run_schema_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("fenced_lab_") else {
        return false;
    };
    let Some((pid, n)) = rest.split_once('_') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(pid) && digits(n)
}

/// What [`judge`] decides about one schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Its runner, on this host, is gone: drop it.
    Stale,
    /// Its runner is alive.
    Live,
    /// Marked by a runner of another host or boot: not ours to judge.
    OtherHost,
    /// The pattern without the marker: never touched.
    Unmarked,
}

/// What to do with a schema whose comment is `comment`, judged by runner
/// `me` (its host and boot) with `alive(pid, start)` telling whether that
/// process still runs.
pub fn judge(comment: Option<&str>, me: &RunnerId, alive: impl Fn(u32, u64) -> bool) -> Verdict {
    let Some(owner) = comment.and_then(RunnerId::from_marker) else {
        return Verdict::Unmarked;
    };
    if owner.host != me.host || owner.boot != me.boot {
        Verdict::OtherHost
    } else if alive(owner.pid, owner.start) {
        Verdict::Live
    } else {
        Verdict::Stale
    }
}

/// Whether process `pid`, started at `start`, is alive on this host.
pub fn process_alive(pid: u32, start: u64) -> bool {
    start_time(pid) == Some(start)
}

/// What [`remove_stale`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cleaned {
    /// The stale schemas dropped.
    pub dropped: Vec<String>,
    /// Schemas of runners still alive.
    pub live: Vec<String>,
    /// Schemas of runners on another host or boot.
    pub other_host: Vec<String>,
    /// Schemas with the pattern and no marker.
    pub unmarked: Vec<String>,
}

impl fmt::Display for Cleaned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |names: &[String]| {
            if names.is_empty() {
                String::new()
            } else {
                format!(" ({})", names.join(", "))
            }
        };
        write!(
            f,
            "dropped {} schema(s) of runners that are gone{}; kept {} of live runs{}; {} of \
             another host{}; {} without a runner's mark{}",
            self.dropped.len(),
            list(&self.dropped),
            self.live.len(),
            list(&self.live),
            self.other_host.len(),
            list(&self.other_host),
            self.unmarked.len(),
            list(&self.unmarked)
        )
    }
}

/// Drops the stale schemas in the database at `url` (see the module docs
/// for what is stale) and says what it found.
///
/// # Errors
/// Connection and statement errors; `/proc` unreadable.
pub async fn remove_stale(url: &str) -> Result<Cleaned, SchemaError> {
    let me = RunnerId::this_process().map_err(SchemaError::Connect)?;
    let client = connect(url).await?;
    let rows = bounded(
        &client,
        "SELECT n.nspname, obj_description(n.oid, 'pg_namespace') FROM pg_namespace n \
         WHERE starts_with(n.nspname, 'fenced_lab_') ORDER BY 1",
    )
    .await?;
    let mut cleaned = Cleaned::default();
    for (name, comment) in rows {
        if !is_run_schema_name(&name) {
            continue;
        }
        match judge(comment.as_deref(), &me, process_alive) {
            Verdict::Stale => {
                let sql = format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE");
                execute(&client, &sql).await?;
                cleaned.dropped.push(name);
            }
            Verdict::Live => cleaned.live.push(name),
            Verdict::OtherHost => cleaned.other_host.push(name),
            Verdict::Unmarked => cleaned.unmarked.push(name),
        }
    }
    Ok(cleaned)
}

async fn bounded(client: &Client, sql: &str) -> Result<Vec<(String, Option<String>)>, SchemaError> {
    let statement = |error: String| SchemaError::Statement {
        what: "list the runs' schemas".to_string(),
        error,
    };
    let rows = tokio::time::timeout(STATEMENT_TIMEOUT, client.query(sql, &[]))
        .await
        .map_err(|_| statement(format!("no answer within {STATEMENT_TIMEOUT:?}")))?
        .map_err(|e| statement(e.to_string()))?;
    Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
}

async fn execute(client: &Client, sql: &str) -> Result<(), SchemaError> {
    let statement = |error: String| SchemaError::Statement {
        what: "drop a stale schema".to_string(),
        error,
    };
    tokio::time::timeout(STATEMENT_TIMEOUT, client.batch_execute(sql))
        .await
        .map_err(|_| statement(format!("no answer within {STATEMENT_TIMEOUT:?}")))?
        .map_err(|e| statement(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> RunnerId {
        RunnerId {
            host: "lab-host".to_string(),
            boot: "b00t".to_string(),
            pid: 10,
            start: 500,
        }
    }

    #[test]
    fn markers_round_trip_and_other_comments_are_not_markers() {
        let id = me();
        assert_eq!(RunnerId::from_marker(&id.marker()), Some(id));
        assert_eq!(RunnerId::from_marker("my schema, hands off"), None);
        assert_eq!(RunnerId::from_marker("fenced-lab runner host=h"), None);
    }

    #[test]
    fn only_a_gone_runner_of_this_host_and_boot_makes_a_schema_stale() {
        let owner = RunnerId {
            pid: 42,
            start: 7,
            ..me()
        };
        let marker = owner.marker();
        let dead = |_: u32, _: u64| false;
        let alive = |pid: u32, start: u64| (pid, start) == (42, 7);
        assert_eq!(judge(Some(&marker), &me(), dead), Verdict::Stale);
        assert_eq!(judge(Some(&marker), &me(), alive), Verdict::Live);
        // The pid now belongs to a process started later: the runner is gone.
        let reused = |pid: u32, start: u64| (pid, start) == (42, 8);
        assert_eq!(judge(Some(&marker), &me(), reused), Verdict::Stale);
        let elsewhere = RunnerId {
            host: "other".to_string(),
            ..owner.clone()
        };
        assert_eq!(
            judge(Some(&elsewhere.marker()), &me(), dead),
            Verdict::OtherHost
        );
        let rebooted = RunnerId {
            boot: "b00t2".to_string(),
            ..owner
        };
        assert_eq!(
            judge(Some(&rebooted.marker()), &me(), dead),
            Verdict::OtherHost
        );
        assert_eq!(judge(None, &me(), dead), Verdict::Unmarked);
        assert_eq!(judge(Some("a user's"), &me(), dead), Verdict::Unmarked);
    }

    #[test]
    fn only_the_runs_name_pattern_is_considered() {
        assert!(is_run_schema_name("fenced_lab_123_0"));
        assert!(!is_run_schema_name("fenced_lab_123"));
        assert!(!is_run_schema_name("fenced_lab_x_0"));
        assert!(!is_run_schema_name("fenced_lab_1_0_extra"));
        assert!(!is_run_schema_name("fenced"));
    }

    #[test]
    fn this_process_is_alive_and_a_made_up_start_time_is_not() {
        let id = RunnerId::this_process().expect("Linux /proc");
        assert!(process_alive(id.pid, id.start));
        assert!(!process_alive(id.pid, id.start + 1));
    }
}
