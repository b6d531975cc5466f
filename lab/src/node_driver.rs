//! Driving a zoo client model for real: the loop an etcd or ZooKeeper node
//! runs (`node_etcd.rs`, `node_zookeeper.rs`) around the design's own sans-IO
//! client (`fenced_zoo::LockClient`), fed the process's monotonic clock,
//! its requests carried over the design's real wire by a [`Carry`], and its
//! leadership turned into the node's terms of work — one copy for both.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fenced::history::Event;
use fenced::tokio::CancellationToken;
use fenced::{FencingToken, StepDownReason};
use fenced_zoo::{ClientOutput, LockClient, Protocol};
use tokio::sync::{mpsc, watch};
use tokio::time::{sleep_until, timeout, Instant};

use super::{say, DesignTerm, WorkContext};

/// The model's clock: nanoseconds of the process's monotonic clock since
/// the node started (what `Protocol::CLIENT_CLOCK` reads for both designs:
/// etcd's `clientv3` and ZooKeeper's `ClientCnxn` time by monotonic time).
#[derive(Clone, Copy, Debug)]
pub(super) struct ModelClock {
    origin: Instant,
}

impl ModelClock {
    /// A clock reading 0 now.
    pub(super) fn starting_now() -> Self {
        ModelClock {
            origin: Instant::now(),
        }
    }

    /// The model's instant now.
    pub(super) fn now(self) -> fenced::Instant {
        fenced::Instant::from_nanos(
            u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX),
        )
    }

    /// The process's instant of model instant `instant`.
    pub(super) fn at(self, instant: fenced::Instant) -> Instant {
        self.origin + Duration::from_nanos(instant.as_nanos())
    }
}

/// Carries one of a design's requests over its real wire; answers go back
/// to the driver on the channel the carrier was made with.
pub(super) trait Carry<R>: Clone + Send + 'static {
    /// Carries `request`, delivering its answer (if any) to the driver.
    fn carry(self, request: R) -> impl Future<Output = ()> + Send + 'static;
}

/// The driver of one node's model.
pub(super) struct Driver<P: Protocol, C> {
    /// The design's name, for the node's output.
    pub(super) design: &'static str,
    pub(super) model: Arc<Mutex<P::Client>>,
    pub(super) clock: ModelClock,
    pub(super) io: C,
    pub(super) answers: mpsc::UnboundedReceiver<P::Response>,
    pub(super) context: Arc<WorkContext>,
    pub(super) believed: watch::Sender<Option<FencingToken>>,
    /// The downstream token of the model's token (a revision, a zxid).
    pub(super) token_of: fn(u64) -> Option<FencingToken>,
    /// How long the stop's requests (resign, revoke, delete, close) may
    /// take before the process exits.
    pub(super) stop_bound: Duration,
    pub(super) term: Option<DesignTerm>,
}

impl<P, C> Driver<P, C>
where
    P: Protocol,
    C: Carry<P::Request>,
{
    /// Calls the model with the current instant and acts on what it says;
    /// returns the requests it sent.
    fn step(&mut self, call: impl FnOnce(&mut P::Client, fenced::Instant)) -> Vec<P::Request> {
        let mut outputs = Vec::new();
        if let Ok(mut model) = self.model.lock() {
            call(&mut model, self.clock.now());
            while let Some(output) = model.poll_output() {
                outputs.push(output);
            }
        }
        let mut sent = Vec::new();
        for output in outputs {
            match output {
                ClientOutput::Send { request, .. } => sent.push(request),
                ClientOutput::BecameLeader { token } => {
                    self.end_term("new term");
                    match token.and_then(self.token_of) {
                        Some(token) => self.begin_term(token),
                        None => say(
                            &self.context.owner,
                            format_args!("{} leads without a token", self.design),
                        ),
                    }
                }
                ClientOutput::LostLeadership { reason } => self.end_term(reason),
            }
        }
        sent
    }

    /// Carries each of `requests` on its own task: the driver never waits
    /// on the network.
    fn dispatch(&self, requests: Vec<P::Request>) {
        for request in requests {
            tokio::spawn(self.io.clone().carry(request));
        }
    }

    fn next_timer(&self) -> Option<Instant> {
        let next = self.model.lock().ok()?.next_timeout()?;
        Some(self.clock.at(next))
    }

    /// Runs the model until `shutdown`, then stops it and carries its last
    /// requests (a resign and a revoke; a delete and a closeSession) in
    /// order, within the stop bound.
    pub(super) async fn run(mut self, shutdown: CancellationToken) {
        let sent = self.step(|model, now| model.start(now));
        self.dispatch(sent);
        loop {
            let timer = self.next_timer();
            let sent = tokio::select! {
                _ = shutdown.cancelled() => break,
                Some(answer) = self.answers.recv() => {
                    self.step(|model, now| model.handle_response(0, answer, now))
                }
                _ = sleep_until_or_never(timer) => {
                    self.step(|model, now| model.handle_timeout(now))
                }
            };
            self.dispatch(sent);
        }
        let sent = self.step(|model, now| model.stop(now));
        let io = self.io.clone();
        let _ = timeout(self.stop_bound, async move {
            for request in sent {
                io.clone().carry(request).await;
            }
        })
        .await;
    }

    fn begin_term(&mut self, token: FencingToken) {
        self.term = Some(DesignTerm::begin(&self.context, &self.believed, token));
    }

    /// The term, if any, ends for the model's `why` (`stopped` is a graceful
    /// stop; anything else the design's own step-down, as the simulator
    /// records it).
    fn end_term(&mut self, why: &str) {
        let Some(term) = self.term.take() else {
            return;
        };
        let _ = self.believed.send(None);
        term.work.cancel();
        let reason = if why == "stopped" {
            StepDownReason::Stopped
        } else {
            StepDownReason::LocalDeadline
        };
        let token = term.token;
        self.context
            .recorder
            .record(|| Event::term_ended(token, &reason));
        say(
            &self.context.owner,
            format_args!("{} lost token={token} why={why:?}", self.design),
        );
    }
}

async fn sleep_until_or_never(at: Option<Instant>) {
    match at {
        Some(at) => sleep_until(at).await,
        None => std::future::pending().await,
    }
}
