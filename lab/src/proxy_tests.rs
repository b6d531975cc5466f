//! The proxy against a local echo server: each rule does what its docs say.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{timeout, Instant};

use super::*;

/// An echo server that greets every connection with `hello` first.
async fn greeting_echo_server() -> SocketAddr {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                if stream.write_all(b"hello").await.is_err() {
                    return;
                }
                let mut buffer = [0u8; 1024];
                while let Ok(n) = stream.read(&mut buffer).await {
                    if n == 0 || stream.write_all(&buffer[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    address
}

async fn connect(proxy: &Proxy) -> TcpStream {
    let mut stream = TcpStream::connect(proxy.address()).await.expect("connect");
    let mut greeting = [0u8; 5];
    timeout(Duration::from_secs(2), stream.read_exact(&mut greeting))
        .await
        .expect("the greeting arrives in time")
        .expect("the greeting is read");
    assert_eq!(&greeting, b"hello");
    stream
}

/// Sends `bytes` and waits up to `within` for their echo.
async fn echo(stream: &mut TcpStream, bytes: &[u8], within: Duration) -> Option<Vec<u8>> {
    stream.write_all(bytes).await.ok()?;
    let mut answer = vec![0u8; bytes.len()];
    match timeout(within, stream.read_exact(&mut answer)).await {
        Ok(Ok(_)) => Some(answer),
        _ => None,
    }
}

fn rules(latency_ms: u64, loss: f64, retransmit_ms: u64) -> DirectionRules {
    DirectionRules {
        latency: (
            Duration::from_millis(latency_ms),
            Duration::from_millis(latency_ms),
        ),
        loss,
        retransmit_timeout: Duration::from_millis(retransmit_ms),
        blocked: false,
    }
}

#[tokio::test]
async fn latency_delays_each_direction() {
    // A 40 ms one-way latency makes every round trip take at least 80 ms.
    let server = greeting_echo_server().await;
    let proxy = Proxy::start(server, [rules(40, 0.0, 0); 2], 1)
        .await
        .expect("proxy");
    let mut stream = connect(&proxy).await;
    let start = Instant::now();
    let answer = echo(&mut stream, b"ping", Duration::from_secs(2)).await;
    assert_eq!(answer.as_deref(), Some(&b"ping"[..]));
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(80),
        "round trip took {took:?}"
    );
    assert!(took < Duration::from_secs(1), "round trip took {took:?}");
}

#[test]
fn a_chunk_lost_k_times_waits_k_doubling_timeouts() {
    // Each retransmission is lost again with the link's probability and
    // waits twice as long (RFC 6298 5.5): k losses in a row cost
    // rto * (2^k - 1); the doubling stops at 600 rto, the retransmissions
    // at 15.
    let rules = rules(0, 0.5, 200);
    let ms = Duration::from_millis;
    for (losses, expected) in [(0_u32, 0), (1, 200), (2, 600), (3, 1_400), (4, 3_000)] {
        let mut left = losses;
        let penalty = loss_penalty(&rules, || {
            let lost = left > 0;
            left = left.saturating_sub(1);
            lost
        });
        assert_eq!(penalty, ms(expected), "{losses} losses");
    }
    // Always lost: ten doublings (200 ms .. 102.4 s), then five at the cap
    // of 120 s, then the proxy delivers.
    let capped = loss_penalty(&rules, || true);
    assert_eq!(capped, ms(200 * 1023) + ms(120_000) * 5);
}

#[tokio::test]
async fn a_lost_chunk_arrives_late_after_its_retransmissions() {
    // Loss over TCP is delay, never a missing byte: with loss 1 every chunk
    // waits out all its retransmissions (0.1 ms doubling to the 60 ms cap:
    // 402.3 ms) on top of its latency, and still arrives.
    let server = greeting_echo_server().await;
    let proxy = Proxy::start(server, [DirectionRules::PASS; 2], 2)
        .await
        .expect("proxy");
    let mut stream = connect(&proxy).await;
    proxy.set_loss(1.0);
    proxy.rules.send_modify(|r| {
        r.to_server.retransmit_timeout = Duration::from_micros(100);
        r.to_node.retransmit_timeout = Duration::from_micros(100);
    });
    let start = Instant::now();
    let answer = echo(&mut stream, b"data", Duration::from_secs(3)).await;
    assert_eq!(answer.as_deref(), Some(&b"data"[..]));
    assert!(start.elapsed() >= Duration::from_micros(2 * 402_300));
}

#[tokio::test]
async fn a_one_way_block_stalls_one_direction_while_the_other_flows() {
    // Node → server blocked on an open connection: the client's bytes
    // wait, and arrive (in order) once the block heals.
    let server = greeting_echo_server().await;
    let proxy = Proxy::start(server, [DirectionRules::PASS; 2], 3)
        .await
        .expect("proxy");
    let mut stream = connect(&proxy).await;
    proxy.set_blocked(Direction::ToServer, true);
    let stalled = echo(&mut stream, b"abc", Duration::from_millis(300)).await;
    assert_eq!(stalled, None, "bytes crossed a blocked direction");
    proxy.set_blocked(Direction::ToServer, false);
    let mut late = [0u8; 3];
    timeout(Duration::from_secs(2), stream.read_exact(&mut late))
        .await
        .expect("the stalled bytes arrive after the heal")
        .expect("read");
    assert_eq!(&late, b"abc");
    let after = echo(&mut stream, b"def", Duration::from_secs(2)).await;
    assert_eq!(after.as_deref(), Some(&b"def"[..]));
}

#[tokio::test]
async fn a_connection_opens_only_through_a_link_that_carries_both_ways() {
    // The proxy plays TCP's handshake over the modelled link: a round trip
    // (SYN, SYN-ACK). While either direction is blocked no connection is
    // established — nothing reaches the server and no greeting comes back;
    // on heal it opens. With latency it costs a round trip before the
    // first byte.
    let server = greeting_echo_server().await;
    for blocked in [Direction::ToServer, Direction::ToNode] {
        let proxy = Proxy::start(server, [DirectionRules::PASS; 2], 5)
            .await
            .expect("proxy");
        proxy.set_blocked(blocked, true);
        let mut stream = TcpStream::connect(proxy.address()).await.expect("connect");
        let mut greeting = [0u8; 5];
        let early = timeout(Duration::from_millis(300), stream.read_exact(&mut greeting)).await;
        assert!(early.is_err(), "{blocked:?} blocked, yet the greeting came");
        proxy.set_blocked(blocked, false);
        timeout(Duration::from_secs(2), stream.read_exact(&mut greeting))
            .await
            .expect("the greeting comes after the heal")
            .expect("read");
        assert_eq!(&greeting, b"hello");
    }
    let proxy = Proxy::start(server, [rules(40, 0.0, 0); 2], 6)
        .await
        .expect("proxy");
    let start = Instant::now();
    let _stream = connect(&proxy).await;
    // The handshake's round trip, then the greeting's way back.
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(120),
        "greeting after {took:?}"
    );
}

#[tokio::test]
async fn a_block_towards_the_node_stalls_answers_only() {
    // Server → node blocked: requests reach the server, answers wait.
    let server = greeting_echo_server().await;
    let proxy = Proxy::start(server, [DirectionRules::PASS; 2], 4)
        .await
        .expect("proxy");
    let mut stream = connect(&proxy).await;
    proxy.set_blocked(Direction::ToNode, true);
    assert_eq!(
        echo(&mut stream, b"q", Duration::from_millis(300)).await,
        None
    );
    proxy.set_blocked(Direction::ToNode, false);
    let mut late = [0u8; 1];
    timeout(Duration::from_secs(2), stream.read_exact(&mut late))
        .await
        .expect("the answer arrives after the heal")
        .expect("read");
    assert_eq!(&late, b"q");
}

#[tokio::test]
async fn reset_closes_open_connections_and_refusing_turns_new_ones_away() {
    // A server restart: open connections die, new ones are refused until
    // it is back; then connections work again.
    let server = greeting_echo_server().await;
    let proxy = Proxy::start(server, [DirectionRules::PASS; 2], 5)
        .await
        .expect("proxy");
    let mut open = connect(&proxy).await;
    proxy.reset_all();
    let mut buffer = [0u8; 8];
    let read = timeout(Duration::from_secs(2), open.read(&mut buffer))
        .await
        .expect("the reset is seen in time");
    assert!(matches!(read, Ok(0) | Err(_)), "still open: {read:?}");

    proxy.set_refusing(true);
    let mut refused = TcpStream::connect(proxy.address()).await.expect("accepted");
    let read = timeout(Duration::from_secs(2), refused.read(&mut buffer))
        .await
        .expect("the refusal is seen in time");
    assert!(matches!(read, Ok(0) | Err(_)), "not refused: {read:?}");

    proxy.set_refusing(false);
    let mut again = connect(&proxy).await;
    let answer = echo(&mut again, b"back", Duration::from_secs(2)).await;
    assert_eq!(answer.as_deref(), Some(&b"back"[..]));
}

#[tokio::test]
async fn dropping_the_proxy_closes_its_connections() {
    // Nothing a proxy started outlives it.
    let server = greeting_echo_server().await;
    let proxy = Proxy::start(server, [DirectionRules::PASS; 2], 6)
        .await
        .expect("proxy");
    let mut open = connect(&proxy).await;
    let address = proxy.address();
    drop(proxy);
    let mut buffer = [0u8; 8];
    let read = timeout(Duration::from_secs(2), open.read(&mut buffer))
        .await
        .expect("the close is seen in time");
    assert!(matches!(read, Ok(0) | Err(_)), "still open: {read:?}");
    // The listener is gone too (the connect is refused or reset).
    if let Ok(mut late) = TcpStream::connect(address).await {
        let read = timeout(Duration::from_secs(2), late.read(&mut buffer)).await;
        assert!(
            matches!(read, Ok(Ok(0)) | Ok(Err(_))),
            "listener alive: {read:?}"
        );
    }
}
