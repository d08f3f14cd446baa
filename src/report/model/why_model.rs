//! The data of the report's "Why" view as the model holds it: per compared step the functions
//! ranked by their change in instructions/op, per group the functions behind its change, and
//! `dbdelta explain`'s configuration part. Must not: compute or lay out (`why` does).

use serde::Serialize;

use crate::results::StepExplanation;

/// The function view of a report: per compared step and per group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDiffs {
    pub steps: Vec<StepFunctionDiff>,
    pub groups: Vec<GroupFunctionDiff>,
    /// `dbdelta explain`'s configuration part of each explained step (against the same base).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub configuration: Vec<StepConfiguration>,
}

/// One explained step: its change split into code and configuration (`dbdelta explain`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepConfiguration {
    pub target: String,
    pub step: String,
    pub clients: u32,
    #[serde(flatten)]
    pub explanation: StepExplanation,
}

/// One compared step's function changes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepFunctionDiff {
    pub target: String,
    pub base: String,
    pub step: String,
    pub group: String,
    pub clients: u32,
    /// The step's foreground instructions/op as its function table sums them, each side.
    pub base_total: f64,
    pub target_total: f64,
    /// `target_total - base_total`.
    pub change: f64,
    /// The foreground's functions by their change, largest first (by size), `(other)` apart.
    pub functions: Vec<FunctionDiff>,
    /// The change of the `(other)` rows: the functions below the share on both sides.
    pub other_change: f64,
    /// The server's background work during the passes, alike (empty for an in-process engine).
    pub background: Vec<FunctionDiff>,
    /// Both sides' instruction call trees, what the differential flame graphs draw; `None`
    /// when a side has no calls stored. Not in the JSON (its functions are).
    #[serde(skip)]
    pub trees: Option<CallTrees>,
}

/// The foreground call trees of a step's base and target as folded stacks (`call_tree`),
/// instructions per operation, each cut at the function both pass through.
#[derive(Debug, Clone, PartialEq)]
pub struct CallTrees {
    pub base: Vec<(String, f64)>,
    pub target: Vec<(String, f64)>,
    /// The function both were cut at (`call_tree::anchor`), if any.
    pub anchor: Option<String>,
}

/// One function's change on a step (instructions per operation).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDiff {
    pub name: String,
    /// Its own instructions/op (callgrind's self cost), base and target.
    pub base: f64,
    pub target: f64,
    /// `target - base`.
    pub change: f64,
    /// `change` over the step's change (`null` when the step did not change).
    pub share: Option<f64>,
    /// The change of its inclusive cost (its callees' with it); `null` when a side lacks it.
    pub inclusive_change: Option<f64>,
    /// `base` or `target`: below the table's share there, counted 0 (its cost is in `(other)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub below_share_in: Option<&'static str>,
}

/// One group's function changes: each function's change relative to its step's base total,
/// averaged over the group's steps with tables on both sides. They add up to the group's mean
/// relative change (`change`, the mean of the steps' ratios minus 1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupFunctionDiff {
    pub target: String,
    pub base: String,
    pub group: String,
    pub clients: u32,
    pub steps: u32,
    pub change: f64,
    /// By contribution, largest first (by size), `(other)` included.
    pub functions: Vec<GroupFunction>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupFunction {
    pub name: String,
    /// Its part of the group's mean relative change.
    pub contribution: f64,
    /// `contribution` over the group's change (`null` when the group did not change).
    pub share: Option<f64>,
}
