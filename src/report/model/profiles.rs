//! CPU profiles in the report: per profiled step, each target's functions by CPU per operation
//! and each compared target's changed functions against its base's.
//!
//! Plain `Serialize` records (the folded stacks stay out of the JSON); must not record, read or
//! fold a profile (`report::profile` scales what the store holds).

use serde::Serialize;

/// Where each target spends its CPU per operation, per profiled step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileReport {
    /// `perf record -e cpu-clock -F 99 --call-graph dwarf (perf version 6.1.187)`.
    pub method: String,
    /// Why the run has no profiles (no perf, no permission); `None` when it has them.
    pub unavailable: Option<String>,
    /// Per clients × step (run order) with at least one profiled target.
    pub steps: Vec<StepProfiles>,
}

/// One step's profiles at one client count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepProfiles {
    pub clients: u32,
    pub step: String,
    /// In target order.
    pub targets: Vec<TargetProfile>,
    /// Per compared target with a profiled base: the functions whose CPU per operation
    /// changed most.
    pub diffs: Vec<ProfileDiff>,
}

/// One target's profile of a step: samples scaled so that they add up to the step's measured
/// engine CPU per operation (mean over the profiled repeats).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetProfile {
    pub target: String,
    /// Repeats with a profile.
    pub repeats: u32,
    /// Samples over those repeats.
    pub samples: u64,
    /// The measured engine CPU per operation the samples are scaled to (mean over them).
    pub cpu_us_per_op: Option<f64>,
    /// The step's server instructions/op from a counting pass, which the profile's shares
    /// are also scaled to (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions_per_op: Option<f64>,
    /// Share of samples whose leaf frame has no symbol, and their modules.
    pub unresolved_share: f64,
    pub unresolved_modules: Vec<String>,
    /// The functions with most self CPU per operation, most first.
    pub top: Vec<FunctionCost>,
    /// Why repeats have no profile (recording or folding failed), one per failed repeat.
    pub errors: Vec<String>,
    /// Folded stacks with µs of CPU per operation (what the flame graphs draw; not in JSON).
    #[serde(skip)]
    pub stacks: Vec<(String, f64)>,
}

/// A function's CPU per operation: where it is the leaf (self) and on the stack (total).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionCost {
    pub function: String,
    pub self_us_per_op: f64,
    pub total_us_per_op: f64,
    /// Its share of the CPU scaled to the step's instructions/op (with a counting pass).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_instructions_per_op: Option<f64>,
}

/// A compared target's profile against its base's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileDiff {
    pub target: String,
    pub base: String,
    /// The functions whose self CPU per operation changed most (by absolute change).
    pub changed: Vec<FunctionChange>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionChange {
    pub function: String,
    pub base_self_us_per_op: f64,
    pub self_us_per_op: f64,
    /// Target minus base.
    pub delta_us_per_op: f64,
    /// The change in instructions/op: each side's share of its CPU scaled to its step's
    /// instructions/op (with counting passes on both sides).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_instructions_per_op: Option<f64>,
}
