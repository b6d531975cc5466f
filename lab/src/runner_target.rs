//! Where the run's PostgreSQL is, and how a node reaches it through its
//! proxy.

use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

use fenced::postgres::tokio_postgres::config::Host;
use fenced::postgres::tokio_postgres::Config;

use super::{infra, RunError};

/// Where PostgreSQL is, and how to reach it through a proxy.
pub(super) struct Target {
    pub(super) address: SocketAddr,
    config: Config,
}

impl Target {
    pub(super) async fn resolve(url: &str) -> Result<Target, RunError> {
        let config = Config::from_str(url)
            .map_err(|e| RunError::BadInput(format!("--postgres: invalid URL: {e}")))?;
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(host)) => host.clone(),
            Some(Host::Unix(path)) => {
                return Err(RunError::BadInput(format!(
                    "--postgres: a Unix socket ({}) cannot be proxied; give a TCP host",
                    path.display()
                )))
            }
            None => "localhost".to_string(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let lookup = tokio::net::lookup_host((host.as_str(), port));
        let address = tokio::time::timeout(Duration::from_secs(5), lookup)
            .await
            .map_err(|_| infra(format!("resolving {host}: timed out")))?
            .map_err(|e| infra(format!("resolving {host}: {e}")))?
            .next()
            .ok_or_else(|| infra(format!("{host} resolves to no address")))?;
        Ok(Target { address, config })
    }

    /// A key=value connection string for a proxy at `proxy`.
    pub(super) fn through(&self, proxy: SocketAddr) -> String {
        let quote = |v: &str| format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"));
        let mut parts = vec![
            format!("host={}", proxy.ip()),
            format!("port={}", proxy.port()),
        ];
        if let Some(user) = self.config.get_user() {
            parts.push(format!("user={}", quote(user)));
        }
        if let Some(password) = self.config.get_password() {
            parts.push(format!(
                "password={}",
                quote(&String::from_utf8_lossy(password))
            ));
        }
        if let Some(dbname) = self.config.get_dbname() {
            parts.push(format!("dbname={}", quote(dbname)));
        }
        parts.join(" ")
    }
}
