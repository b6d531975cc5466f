//! One contender electing through PostgreSQL: run it in several terminals
//! (or on several machines) against one database, and stop one with
//! `kill -STOP` to watch another take over and the fenced table reject the
//! stalled one's late write when it resumes (`kill -CONT`).
//!
//! ```text
//! export FENCED_POSTGRES_URL=postgres://user@localhost/db
//! cargo run --example pg_elector --features postgres -- --owner node-a
//! cargo run --example pg_elector --features postgres -- --owner node-b
//! ```
//!
//! Each unit of work checks leadership, works for `--work-ms`, then writes
//! to the fenced table with its token — whether or not the term ended in
//! between, as a real write already under way would. Every line on stdout
//! is one event, `[owner] EVENT key=value ...`, for people and for the test
//! that runs two of these (`tests/postgres_takeover.rs`). The process stops
//! (and releases its lease) when its standard input closes or after
//! `--run-ms`.
//!
//! Options: `--url` (default: `$FENCED_POSTGRES_URL`), `--schema` (default
//! `fenced`), `--owner` (default `pg-elector-<pid>`), `--role` (`reports`),
//! `--resource` (`daily-report`), `--ttl-ms` (1500), `--renew-ms` (500),
//! `--retry-ms` (250), `--work-ms` (600), `--run-ms` (unbounded).

use std::error::Error;
use std::io::Read;
use std::time::Duration;

use fenced::postgres::{Namespace, PostgresFencedTable, PostgresOptions, PostgresStore};
use fenced::tokio::{CancellationToken, ElectorOptions, LeadershipHandle, LeaseLeaderElector};
use fenced::{ElectorTimings, FencingToken, OwnerId, ResourceId, Role, WriteOutcome};

/// The command line, parsed.
struct Args {
    url: String,
    schema: String,
    owner: String,
    role: String,
    resource: String,
    ttl: Duration,
    renew: Duration,
    retry: Duration,
    work: Duration,
    run: Option<Duration>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        url: std::env::var("FENCED_POSTGRES_URL").unwrap_or_default(),
        schema: "fenced".to_owned(),
        owner: format!("pg-elector-{}", std::process::id()),
        role: "reports".to_owned(),
        resource: "daily-report".to_owned(),
        ttl: Duration::from_millis(1_500),
        renew: Duration::from_millis(500),
        retry: Duration::from_millis(250),
        work: Duration::from_millis(600),
        run: None,
    };
    let mut words = std::env::args().skip(1);
    while let Some(flag) = words.next() {
        let value = words
            .next()
            .ok_or_else(|| format!("{flag} needs a value"))?;
        let millis = || {
            value
                .parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|_| format!("{flag} takes milliseconds, not {value:?}"))
        };
        match flag.as_str() {
            "--url" => args.url = value.clone(),
            "--schema" => args.schema = value.clone(),
            "--owner" => args.owner = value.clone(),
            "--role" => args.role = value.clone(),
            "--resource" => args.resource = value.clone(),
            "--ttl-ms" => args.ttl = millis()?,
            "--renew-ms" => args.renew = millis()?,
            "--retry-ms" => args.retry = millis()?,
            "--work-ms" => args.work = millis()?,
            "--run-ms" => args.run = Some(millis()?),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if args.url.is_empty() {
        return Err("no database: pass --url or set FENCED_POSTGRES_URL".to_owned());
    }
    Ok(args)
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(problem) => {
            eprintln!("pg_elector: {problem}");
            std::process::exit(2);
        }
    };
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("pg_elector: no runtime: {error}");
            std::process::exit(1);
        }
    };
    if let Err(error) = runtime.block_on(run(args)) {
        eprintln!("pg_elector: {error}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> Result<(), Box<dyn Error>> {
    let owner = OwnerId::new(&args.owner)?;
    let role = Role::new(&args.role)?;
    let resource = ResourceId::new(&args.resource)?;
    let options = PostgresOptions::default().with_namespace(Namespace::new(&args.schema, "")?);
    let store = PostgresStore::new(&args.url, options)?;
    store.migrate().await?;
    let say = {
        let owner = owner.clone();
        move |event: String| println!("[{owner}] {event}")
    };
    say(format!("READY role={role} schema={}", args.schema));

    let timings = ElectorTimings {
        lease_ttl: args.ttl,
        renew_interval: args.renew,
        retry_interval: args.retry,
        ..ElectorTimings::default()
    };
    let elector = LeaseLeaderElector::new(
        store.clone(),
        ElectorOptions::new(owner.clone()).with_timings(timings),
    );
    tokio::spawn(narrate(elector.handle(), say.clone()));

    // Stop when stdin closes (or after --run-ms): then the elector stops the
    // work and releases the lease.
    let shutdown = CancellationToken::new();
    let on_eof = shutdown.clone();
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        on_eof.cancel();
    });
    if let Some(run_for) = args.run {
        let on_time = shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(run_for).await;
            on_time.cancel();
        });
    }

    let table = store.fenced_table();
    let work_for = args.work;
    let work = move |token: FencingToken, cancel: CancellationToken| {
        let unit = Unit {
            table: table.clone(),
            resource: resource.clone(),
            owner: owner.clone(),
            token,
            work_for,
            say: say.clone(),
        };
        unit.repeat(cancel)
    };
    elector.run(role, work, shutdown.cancelled_owned()).await?;
    println!("[{}] EXITED", args.owner);
    Ok(())
}

/// The leader's work, one unit after another.
struct Unit<S> {
    table: PostgresFencedTable,
    resource: ResourceId,
    owner: OwnerId,
    token: FencingToken,
    work_for: Duration,
    say: S,
}

impl<S: Fn(String)> Unit<S> {
    async fn repeat(self, cancel: CancellationToken) {
        let token = self.token;
        (self.say)(format!("LEADING token={token}"));
        let mut unit = 0u64;
        while !cancel.is_cancelled() {
            unit += 1;
            (self.say)(format!("CHECKED token={token} unit={unit}"));
            // The work itself. A stall here (SIGSTOP, a GC pause) is the
            // dangerous one: leadership was checked, the write is coming.
            tokio::time::sleep(self.work_for).await;
            let payload = format!("unit {unit} by {} with token {token}", self.owner);
            let outcome = self
                .table
                .write(&self.resource, token, &self.owner, payload.as_bytes())
                .await;
            match outcome {
                Ok(WriteOutcome::Accepted) => {
                    (self.say)(format!("WROTE token={token} unit={unit} accepted"));
                }
                Ok(WriteOutcome::RejectedStale { stale, highest }) => (self.say)(format!(
                    "REJECTED token={stale} unit={unit} stale highest={highest}"
                )),
                Ok(WriteOutcome::RejectedWrongWriter { token, bound_to }) => (self.say)(format!(
                    "REJECTED token={token} unit={unit} wrong-writer bound_to={bound_to}"
                )),
                Err(error) => (self.say)(format!("WRITE_FAILED token={token} error={error}")),
            }
        }
        (self.say)(format!("STOPPED token={token}"));
    }
}

/// Prints leadership changes: step-downs with their reason, and the leader
/// observed while following.
async fn narrate(handle: LeadershipHandle, say: impl Fn(String)) {
    let mut changes = handle.subscribe();
    let (mut step_down, mut leader) = (None, None);
    loop {
        let state = changes.borrow_and_update().clone();
        if state.last_step_down() != step_down.as_ref() {
            if let Some((token, reason)) = state.last_step_down() {
                say(format!("STEPPED_DOWN token={token} reason={reason:?}"));
            }
            step_down = state.last_step_down().cloned();
        }
        let observed = state
            .observed_leader()
            .map(|seen| (seen.owner.clone(), seen.token));
        if observed != leader {
            if let Some((owner, token)) = &observed {
                say(format!("OBSERVED leader={owner} token={token}"));
            }
            leader = observed;
        }
        if changes.changed().await.is_err() {
            break;
        }
    }
}
