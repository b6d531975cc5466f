//! A fault-injecting TCP proxy: the network between one node and one
//! logical server.
//!
//! The lab starts one [`Proxy`] per (node, logical server) pair, listening on
//! `127.0.0.1:0` and forwarding to PostgreSQL. The lease store and the
//! downstream are separate logical hosts even though one PostgreSQL serves
//! both, so a fault on one link never touches another. Each direction of a
//! proxy has its own rules, changeable while connections are open:
//!
//! * **latency**: every chunk read is forwarded no earlier than its arrival
//!   plus a one-way delay drawn uniformly from the model's range, by a
//!   `rand_chacha` RNG seeded from the run's seed and the link — and never
//!   before the chunk ahead of it (a TCP stream stays in order).
//! * **loss**: TCP never loses a byte the application can see; a lost
//!   segment is *retransmitted* after a retransmission timeout, and everything
//!   behind it waits (head-of-line blocking). A retransmission crosses the same
//!   lossy link, so it is lost with the same probability, and each further
//!   timeout is twice the last (RFC 6298 §5.5, "back off the timer"; Linux's
//!   `tcp_retransmit_timer`: `icsk_rto = min(icsk_rto << 1, TCP_RTO_MAX)`,
//!   from `TCP_RTO_MIN` = 200 ms, `TCP_RTO_MAX` = 120 s in
//!   `include/net/tcp.h`). So a chunk lost `k` times in a row (each with the
//!   model's probability) is held back `rto · (2^k − 1)` on top of its
//!   latency, each doubling capped at [`RTO_MAX_FACTOR`] × `rto`, at most
//!   [`MAX_RETRANSMISSIONS`] times (Linux's `tcp_retries2`), `rto` being the
//!   model's `retransmit_timeout` (200 ms, scaled). The application sees a
//!   late answer — possibly later than its own timeout, which then gives the
//!   request up — never a missing one. (Until this doubling, one loss cost one
//!   timeout whatever followed: a 30 % loss never delayed an answer by more
//!   than two timeouts, where real TCP delays one in eleven by three or more.)
//! * **blocked** (a cut, an isolation, a partition, a paused server): that
//!   direction stops forwarding. What was read waits in a bounded buffer
//!   ([`BUFFER_CHUNKS`] chunks of at most [`CHUNK_BYTES`]); when it is full
//!   the proxy stops reading and the kernel's buffers, then the sender,
//!   block — as a real partition makes TCP retransmit until the link heals.
//!   On heal, what waited is delivered, late and in order. The other direction
//!   flows on (a one-way cut).
//! * **reset** ([`Proxy::reset_all`]): every open connection is closed with a
//!   TCP RST (`SO_LINGER` 0) on both sides.
//! * **refusing** ([`Proxy::set_refusing`], a server restart): new
//!   connections are accepted and reset at once.
//!
//! A proxy is stopped (its listener and every connection closed) when it is
//! dropped.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::{sleep_until, timeout, Instant};

use crate::plan::Direction;

/// The most bytes one read forwards.
pub const CHUNK_BYTES: usize = 16 * 1024;
/// How many chunks a direction buffers while it is blocked or delayed.
pub const BUFFER_CHUNKS: usize = 64;
/// The most connections a proxy holds open at once; more are reset.
pub const MAX_CONNECTIONS: usize = 64;
/// How long connecting to the target may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

pub use fenced_sim::tcp::{MAX_RETRANSMISSIONS, RTO_MAX_FACTOR};

/// What one direction does to the bytes it forwards.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DirectionRules {
    /// One-way latency, uniform in `[min, max]`.
    pub latency: (Duration, Duration),
    /// Probability that a chunk (and each of its retransmissions) is
    /// lost: held back one more, doubled, retransmission timeout.
    pub loss: f64,
    /// The first retransmission timeout.
    pub retransmit_timeout: Duration,
    /// Whether the direction forwards nothing.
    pub blocked: bool,
}

impl DirectionRules {
    /// Forward at once, always.
    pub const PASS: DirectionRules = DirectionRules {
        latency: (Duration::ZERO, Duration::ZERO),
        loss: 0.0,
        retransmit_timeout: Duration::ZERO,
        blocked: false,
    };
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Rules {
    to_server: DirectionRules,
    to_node: DirectionRules,
    refusing: bool,
    /// Bumped by every reset; a connection opened under an older value
    /// closes.
    reset_generation: u64,
}

impl Rules {
    fn direction(&self, direction: Direction) -> &DirectionRules {
        match direction {
            Direction::ToServer => &self.to_server,
            Direction::ToNode => &self.to_node,
        }
    }
}

/// One link's proxy. Dropping it stops it.
#[derive(Debug)]
pub struct Proxy {
    address: SocketAddr,
    rules: watch::Sender<Rules>,
    accept: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // Connections watch the rules: a closed channel ends them too.
        self.accept.abort();
    }
}

/// A seeded RNG per direction, shared by that direction's connections.
type SharedRng = Arc<Mutex<ChaCha8Rng>>;

impl Proxy {
    /// Listens on `127.0.0.1:0` and forwards to `target`; `seed` seeds the
    /// latency and loss draws of both directions.
    ///
    /// # Errors
    /// The listener cannot be bound.
    pub async fn start(
        target: SocketAddr,
        rules: [DirectionRules; 2],
        seed: u64,
    ) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let (sender, receiver) = watch::channel(Rules {
            to_server: rules[0],
            to_node: rules[1],
            refusing: false,
            reset_generation: 0,
        });
        let rngs = [
            Arc::new(Mutex::new(ChaCha8Rng::seed_from_u64(seed))),
            Arc::new(Mutex::new(ChaCha8Rng::seed_from_u64(!seed))),
        ];
        let accept = tokio::spawn(accept_loop(listener, target, receiver, rngs));
        Ok(Proxy {
            address,
            rules: sender,
            accept,
        })
    }

    /// Where nodes connect.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Blocks or unblocks `direction`.
    pub fn set_blocked(&self, direction: Direction, blocked: bool) {
        self.rules.send_modify(|rules| match direction {
            Direction::ToServer => rules.to_server.blocked = blocked,
            Direction::ToNode => rules.to_node.blocked = blocked,
        });
    }

    /// Sets the loss probability of both directions.
    pub fn set_loss(&self, loss: f64) {
        self.rules.send_modify(|rules| {
            rules.to_server.loss = loss;
            rules.to_node.loss = loss;
        });
    }

    /// Closes every open connection with a reset.
    pub fn reset_all(&self) {
        self.rules
            .send_modify(|rules| rules.reset_generation = rules.reset_generation.wrapping_add(1));
    }

    /// While `refusing`, new connections are reset at once (a restarting
    /// server); turning it on also resets every open connection.
    pub fn set_refusing(&self, refusing: bool) {
        self.rules.send_modify(|rules| {
            rules.refusing = refusing;
            if refusing {
                rules.reset_generation = rules.reset_generation.wrapping_add(1);
            }
        });
    }
}

async fn accept_loop(
    listener: TcpListener,
    target: SocketAddr,
    rules: watch::Receiver<Rules>,
    rngs: [SharedRng; 2],
) {
    let open = Arc::new(());
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let refusing = rules.borrow().refusing;
        // Each connection holds a clone of `open`: the count is the live ones.
        if refusing || Arc::strong_count(&open) > MAX_CONNECTIONS {
            reset(&client);
            continue;
        }
        let (rules, rngs, guard) = (rules.clone(), rngs.clone(), open.clone());
        tokio::spawn(async move {
            let _guard = guard;
            connection(client, target, rules, rngs).await;
        });
    }
}

/// Makes dropping `stream` send a RST instead of a FIN.
fn reset(stream: &TcpStream) {
    let _ = stream.set_zero_linger();
}

async fn connection(
    mut client: TcpStream,
    target: SocketAddr,
    mut rules: watch::Receiver<Rules>,
    rngs: [SharedRng; 2],
) {
    let generation = rules.borrow().reset_generation;
    let _ = client.set_nodelay(true);
    // The client's TCP handshake ended at the proxy, on loopback, at once;
    // over the modelled link it costs a round trip (SYN, SYN-ACK), which
    // the simulator's sessions count as the first of their five
    // (`sim/src/hosts/session.rs`). The client's first bytes wait for it in
    // the socket.
    if handshake(&mut rules, &rngs).await.is_err() {
        return reset(&client);
    }
    let mut upstream = match timeout(CONNECT_TIMEOUT, TcpStream::connect(target)).await {
        Ok(Ok(upstream)) => upstream,
        _ => return reset(&client),
    };
    let _ = upstream.set_nodelay(true);
    let (client_read, client_write) = client.split();
    let (upstream_read, upstream_write) = upstream.split();
    let [rng_up, rng_down] = rngs;
    let up = pump(
        client_read,
        upstream_write,
        Direction::ToServer,
        rules.clone(),
        rng_up,
    );
    let down = pump(
        upstream_read,
        client_write,
        Direction::ToNode,
        rules.clone(),
        rng_down,
    );
    let reset_seen = rules.wait_for(|r| r.reset_generation != generation);
    let clean = tokio::select! {
        _ = async { tokio::join!(up, down) } => true,
        _ = reset_seen => false,
    };
    if !clean {
        // A reset (or the proxy stopping): both sides get a RST, not a FIN.
        reset(&client);
        reset(&upstream);
    }
}

/// One round trip of the link: a segment each way, each after its drawn
/// latency (and loss penalty), each waiting while its direction is blocked.
/// An error when the proxy stops meanwhile.
async fn handshake(
    rules: &mut watch::Receiver<Rules>,
    rngs: &[SharedRng; 2],
) -> Result<(), watch::error::RecvError> {
    for (direction, rng) in [Direction::ToServer, Direction::ToNode]
        .into_iter()
        .zip(rngs)
    {
        let delay = draw_delay(rules.borrow().direction(direction), rng);
        tokio::time::sleep(delay).await;
        rules.wait_for(|r| !r.direction(direction).blocked).await?;
    }
    Ok(())
}

/// A chunk read, with the instant it may be forwarded.
enum Chunk {
    Data(Vec<u8>, Instant),
    End,
}

/// Forwards `reader` to `writer` under `direction`'s rules until the reader
/// ends (then shuts the writer down) or either side fails.
async fn pump<R, W>(
    mut reader: R,
    mut writer: W,
    direction: Direction,
    rules: watch::Receiver<Rules>,
    rng: SharedRng,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (sender, mut receiver) = mpsc::channel::<Chunk>(BUFFER_CHUNKS);
    let read_rules = rules.clone();
    let read = async move {
        let mut last_ready = Instant::now();
        loop {
            let mut buffer = vec![0u8; CHUNK_BYTES];
            let read = reader.read(&mut buffer).await;
            let n = match read {
                Ok(0) | Err(_) => {
                    let _ = sender.send(Chunk::End).await;
                    return;
                }
                Ok(n) => n,
            };
            buffer.truncate(n);
            let now = Instant::now();
            let delay = draw_delay(read_rules.borrow().direction(direction), &rng);
            last_ready = last_ready.max(now + delay);
            if sender.send(Chunk::Data(buffer, last_ready)).await.is_err() {
                return;
            }
        }
    };
    let write = async move {
        let mut rules = rules;
        while let Some(chunk) = receiver.recv().await {
            match chunk {
                Chunk::Data(bytes, ready) => {
                    sleep_until(ready).await;
                    if rules
                        .wait_for(|r| !r.direction(direction).blocked)
                        .await
                        .is_err()
                    {
                        return;
                    }
                    if writer.write_all(&bytes).await.is_err() {
                        return;
                    }
                }
                Chunk::End => {
                    let _ = writer.shutdown().await;
                    return;
                }
            }
        }
    };
    tokio::join!(read, write);
}

/// The latency (and loss penalty) of one chunk.
fn draw_delay(rules: &DirectionRules, rng: &SharedRng) -> Duration {
    let Ok(mut rng) = rng.lock() else {
        // A panic while drawing cannot happen; forward without delay anyway.
        return rules.latency.0;
    };
    let (low, high) = rules.latency;
    let span = high.saturating_sub(low).as_nanos();
    let latency = if span == 0 {
        low
    } else {
        let extra = u128::from(rng.next_u64()) % (span + 1);
        low + Duration::from_nanos(u64::try_from(extra).unwrap_or(u64::MAX))
    };
    let penalty = loss_penalty(rules, || rules.loss > 0.0 && unit(&mut rng) < rules.loss);
    latency + penalty
}

/// How long a chunk waits for its retransmissions: while `lost()` says the
/// last transmission was lost, one more timeout, doubled each time (see the
/// module's **loss**) — the simulator's own rule for its sessions
/// ([`fenced_sim::tcp::retransmission_penalty`]), so a lossy link means the
/// same in both.
fn loss_penalty(rules: &DirectionRules, lost: impl FnMut() -> bool) -> Duration {
    fenced_sim::tcp::retransmission_penalty(rules.retransmit_timeout, lost)
}

/// A uniform float in `[0, 1)`.
fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
