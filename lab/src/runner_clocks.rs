//! The runner's clock faults: a node's wall clock through its libfaketime
//! file ([`crate::faketime`]), the lease store's through its clock table
//! ([`crate::store_clock`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fenced_sim::LEASE_STORE;

use super::{infra, Lab, RunError};
use crate::faketime;
use crate::plan::{ClockTarget, LabPlan};
use crate::schema::RunSchema;
use crate::store_clock::StoreClock;

/// The file a stepped node's processes read their wall clock's offset from.
pub(super) fn wall_clock_file(run_dir: &Path, node: &str) -> PathBuf {
    run_dir.join(format!("{node}.faketime"))
}

/// Before the first node starts: the store's clock installed and connected
/// when a fault moves it, and each stepped node's clock file written with
/// its starting offset (the node's `clock_offset`).
///
/// # Errors
/// The clock cannot be installed or a file written.
pub(super) async fn prepare(
    plan: &LabPlan,
    schema: &RunSchema,
    url: &str,
    log_dir: &Path,
) -> Result<(Option<StoreClock>, BTreeMap<usize, i64>), String> {
    let store_clock = if plan.store_clock {
        schema
            .install_store_clock()
            .await
            .map_err(|e| e.to_string())?;
        let clock = StoreClock::connect(url, schema.name()).await;
        Some(clock.map_err(|e| e.to_string())?)
    } else {
        None
    };
    let mut wall_offsets = BTreeMap::new();
    for (node, lab_node) in plan.nodes.iter().enumerate() {
        if lab_node.wall_steps {
            let offset = lab_node.clock.map_or(0, |clock| clock.offset_nanos);
            let file = wall_clock_file(log_dir, lab_node.id.as_str());
            faketime::set_wall_offset(&file, offset)
                .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
            wall_offsets.insert(node, offset);
        }
    }
    Ok((store_clock, wall_offsets))
}

impl Lab<'_> {
    /// Steps `target`'s clock: a node's through its libfaketime file, the
    /// lease store's through its clock table.
    pub(super) async fn step_clock(
        &mut self,
        target: ClockTarget,
        by_nanos: i64,
    ) -> Result<String, RunError> {
        match target {
            ClockTarget::Redis(index) => self.redis.step_clock(index, by_nanos),
            ClockTarget::LeaseStore => {
                let Some(clock) = &self.store_clock else {
                    return Err(infra("the lease store's clock was not installed"));
                };
                let change = clock.step(by_nanos).await.map_err(infra)?;
                Ok(format!(
                    "{LEASE_STORE}'s clock_timestamp() stepped {} (offset now {:+.3} s; UPDATE \
                     took {:.1} ms)",
                    signed_secs(by_nanos),
                    change.offset_secs,
                    change.took.as_secs_f64() * 1e3
                ))
            }
            ClockTarget::Node(node) => {
                let name = self.node_name(node);
                let Some(offset) = self.wall_offsets.get_mut(&node) else {
                    return Err(infra(format!(
                        "{name}'s wall clock is not stepped by a file"
                    )));
                };
                *offset = offset.saturating_add(by_nanos);
                let offset = *offset;
                let file = wall_clock_file(&self.run_dir, &name);
                faketime::set_wall_offset(&file, offset)
                    .map_err(|e| infra(format!("cannot write {}: {e}", file.display())))?;
                Ok(format!(
                    "{name}'s wall clock stepped {} (now {} from the machine's; its monotonic \
                     clock untouched)",
                    signed_secs(by_nanos),
                    faketime::offset_spec(offset)
                ))
            }
        }
    }

    /// Begins a slew of `target`'s clock (the lease store's: a node's slew
    /// is refused when planning).
    pub(super) async fn slew_clock(
        &mut self,
        target: ClockTarget,
        by_nanos: i64,
        over: Duration,
    ) -> Result<String, RunError> {
        let (ClockTarget::LeaseStore, Some(clock)) = (target, &self.store_clock) else {
            return Err(infra(format!("no clock to slew for {target}")));
        };
        let change = clock.slew(by_nanos, over).await.map_err(infra)?;
        Ok(format!(
            "{LEASE_STORE}'s clock slewing {} over {over:?} (offset now {:+.3} s; UPDATE took \
             {:.1} ms)",
            signed_secs(by_nanos),
            change.offset_secs,
            change.took.as_secs_f64() * 1e3
        ))
    }
}

/// A signed clock amount in seconds: `+40.000s`.
fn signed_secs(nanos: i64) -> String {
    format!("{:+.3}s", nanos as f64 / 1e9)
}
