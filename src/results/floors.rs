//! A step's floor: how far its instructions/op moved between two identical servers of one
//! build (`dbdelta calibrate`: the base counted against itself on separate starts), which a
//! verdict's change must pass as well as `min_effect`. Keyed by the build
//! ([`build_key`]: engine, the server's version and dbdelta's build key), suite, step and
//! client count, so that every run of the same build reuses it.
//!
//! Plain data only: nothing here counts, stores or judges.

use serde::{Deserialize, Serialize};

use super::TargetInfo;

/// One step's floor for a target of a run, as the store found it for the target's build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StepFloor {
    /// The run's target whose build it is the floor of.
    pub target: String,
    pub suite: String,
    pub step: String,
    pub clients: u32,
    /// The largest relative move of the A/A's instructions/op ratio (its range's farthest end
    /// from 1), e.g. 0.004 for ±0.4%.
    pub floor: f64,
    /// The calibration run that measured it.
    pub run_id: String,
}

/// What a floor is kept for: the engine, the version its server reported and, for a build
/// dbdelta compiled, its build key; `None` when the server never reported a version (it did
/// not start).
pub fn build_key(t: &TargetInfo) -> Option<String> {
    let version = t.server_version.as_deref()?;
    let build = t.build.as_ref().map_or("", |b| b.key.as_str());
    let engine = &t.engine;
    Some(format!("{engine} {version} {build}").trim_end().to_string())
}
