//! Loopback ports for the lab's servers.
//!
//! A port is chosen *below* the kernel's ephemeral range
//! (`net.ipv4.ip_local_port_range`, 32768–60999 by default), never from it
//! (`bind(0)` would): an instance keeps its port across a restart, and while
//! it is down a port of the ephemeral range can become the local port of
//! some outgoing connection, which would make the restart fail. Ports are
//! tried from a place that depends on the process id and a counter, so
//! concurrent tests and runs start far apart; each is checked free by
//! binding it on 127.0.0.1. Between that check and the server's own bind
//! another process may take it: the servers' starts retry on other ports
//! when that happens ([`super::ServerError::is_port_clash`]).

use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicU32, Ordering};

/// The lowest port the lab picks.
pub const LOWEST: u16 = 20_000;
/// Used when the ephemeral range cannot be read.
const DEFAULT_EPHEMERAL_START: u16 = 32_768;
/// How many candidates are tried before giving up.
const TRIES: u32 = 500;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A port on 127.0.0.1 that is free now, below the ephemeral range, and not
/// handed out before by this process (until the range wraps around).
///
/// # Errors
/// No candidate was free (`AddrInUse`), or the range is empty.
pub fn free_port() -> std::io::Result<u16> {
    let highest = ephemeral_start().max(LOWEST + 1);
    let span = u32::from(highest - LOWEST);
    // A stride coprime with most spans spreads consecutive picks.
    let origin = std::process::id().wrapping_mul(7_919);
    for _ in 0..TRIES {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let offset = origin.wrapping_add(n.wrapping_mul(1_009)) % span;
        let Ok(port) = u16::try_from(u32::from(LOWEST) + offset) else {
            continue;
        };
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            return Ok(port);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AddrInUse,
        format!("none of {TRIES} ports tried in {LOWEST}..{highest} was free"),
    ))
}

/// The first port of the kernel's ephemeral range.
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(DEFAULT_EPHEMERAL_START)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_free_distinct_and_below_the_ephemeral_range() {
        let ports: Vec<u16> = (0..20).map(|_| free_port().expect("a port")).collect();
        let mut sorted = ports.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ports.len(), "{ports:?}");
        for port in ports {
            assert!((LOWEST..ephemeral_start().max(LOWEST + 1)).contains(&port));
            TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("still free");
        }
    }
}
