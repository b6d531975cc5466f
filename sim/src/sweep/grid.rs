//! The settings a sweep varies: the election grid ([`ElectionGrid`], one
//! [`ElectionCell`] per setting) and the membership grid
//! ([`MembershipGrid`]).

use std::time::Duration;

use super::GridError;
use crate::scenario::Scenario;

/// The election settings swept.
#[derive(Clone, Debug, PartialEq)]
pub struct ElectionGrid {
    /// Lease TTLs (the columns).
    pub ttls: Vec<Duration>,
    /// `renew_interval / lease_ttl` (the rows).
    pub renew_ratios: Vec<f64>,
    /// `safety_margin / lease_ttl` (one chart row of panels each).
    pub margin_ratios: Vec<f64>,
    /// `retry_interval / lease_ttl`, for every cell.
    pub retry_ratio: f64,
}

impl Default for ElectionGrid {
    /// TTLs 2 s, 5 s, 10 s, 30 s, 60 s × renew ratios 0.2, 0.4, 0.6, 0.8;
    /// the default margin (TTL / 10); retry every TTL / 10.
    fn default() -> Self {
        ElectionGrid {
            ttls: [2, 5, 10, 30, 60].map(Duration::from_secs).to_vec(),
            renew_ratios: vec![0.2, 0.4, 0.6, 0.8],
            margin_ratios: vec![0.1],
            retry_ratio: 0.1,
        }
    }
}

/// One election setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ElectionCell {
    /// The lease TTL.
    pub lease_ttl: Duration,
    /// `renew_interval / lease_ttl`.
    pub renew_ratio: f64,
    /// `safety_margin / lease_ttl`.
    pub margin_ratio: f64,
    /// `retry_interval / lease_ttl`.
    pub retry_ratio: f64,
}

impl ElectionCell {
    /// `scenario` with this cell's election settings.
    pub fn apply(&self, scenario: &mut Scenario) {
        let e = &mut scenario.election;
        e.lease_ttl = self.lease_ttl;
        e.renew_interval = self.lease_ttl.mul_f64(self.renew_ratio);
        e.safety_margin = Some(self.lease_ttl.mul_f64(self.margin_ratio));
        e.retry_interval = self
            .lease_ttl
            .mul_f64(self.retry_ratio)
            .max(Duration::from_millis(10));
    }
}

impl ElectionGrid {
    /// Checks the grid.
    ///
    /// # Errors
    /// One sentence naming the flag.
    pub fn validate(&self) -> Result<(), GridError> {
        if self.ttls.is_empty() || self.renew_ratios.is_empty() || self.margin_ratios.is_empty() {
            return Err(GridError::NoElectionSetting);
        }
        if self
            .ttls
            .len()
            .saturating_mul(self.renew_ratios.len())
            .saturating_mul(self.margin_ratios.len())
            > 400
        {
            return Err(GridError::TooManyCells);
        }
        for ttl in &self.ttls {
            if *ttl < Duration::from_millis(100) || *ttl > Duration::from_secs(3600) {
                return Err(GridError::Ttl(*ttl));
            }
        }
        for (flag, values) in [
            ("--renew-ratios", &self.renew_ratios),
            ("--margin-ratios", &self.margin_ratios),
            ("--retry-ratio", &vec![self.retry_ratio]),
        ] {
            if let Some(bad) = values.iter().find(|r| !(**r > 0.0 && **r < 1.0)) {
                return Err(GridError::Ratio { flag, value: *bad });
            }
        }
        Ok(())
    }

    /// Every cell, margin-major, then TTL, then renew ratio.
    pub fn cells(&self) -> Vec<ElectionCell> {
        let mut cells = Vec::new();
        for &margin_ratio in &self.margin_ratios {
            for &lease_ttl in &self.ttls {
                for &renew_ratio in &self.renew_ratios {
                    cells.push(ElectionCell {
                        lease_ttl,
                        renew_ratio,
                        margin_ratio,
                        retry_ratio: self.retry_ratio,
                    });
                }
            }
        }
        cells
    }
}

/// The membership settings swept.
#[derive(Clone, Debug, PartialEq)]
pub struct MembershipGrid {
    /// Liveness TTLs (the columns).
    pub liveness_ttls: Vec<Duration>,
    /// Heartbeat intervals (the rows). Cells whose heartbeat is not below
    /// the liveness TTL are skipped: every node would flap.
    pub heartbeats: Vec<Duration>,
}

impl Default for MembershipGrid {
    /// Liveness TTLs 2 s, 5 s, 10 s, 30 s × heartbeats 500 ms, 1 s, 2 s, 5 s.
    fn default() -> Self {
        MembershipGrid {
            liveness_ttls: [2, 5, 10, 30].map(Duration::from_secs).to_vec(),
            heartbeats: [500, 1000, 2000, 5000].map(Duration::from_millis).to_vec(),
        }
    }
}

impl MembershipGrid {
    /// Checks the grid.
    ///
    /// # Errors
    /// One sentence naming the flag.
    pub fn validate(&self) -> Result<(), GridError> {
        if self.liveness_ttls.is_empty() || self.heartbeats.is_empty() {
            return Err(GridError::NoMembershipSetting);
        }
        if self
            .liveness_ttls
            .len()
            .saturating_mul(self.heartbeats.len())
            > 400
        {
            return Err(GridError::TooManyCells);
        }
        for d in self.liveness_ttls.iter().chain(&self.heartbeats) {
            if *d < Duration::from_millis(10) || *d > Duration::from_secs(3600) {
                return Err(GridError::Membership(*d));
            }
        }
        if self.cells().is_empty() {
            return Err(GridError::NoMembershipCell);
        }
        Ok(())
    }

    /// The cells `(liveness_ttl, heartbeat)` with the heartbeat below the TTL,
    /// TTL-major.
    pub fn cells(&self) -> Vec<(Duration, Duration)> {
        let mut cells = Vec::new();
        for &ttl in &self.liveness_ttls {
            for &hb in &self.heartbeats {
                if hb < ttl {
                    cells.push((ttl, hb));
                }
            }
        }
        cells
    }
}
