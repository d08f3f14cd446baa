//! Views across client counts and releases: each group's QPS per client count, where a compared
//! target overtakes its base or falls behind ([`Crossover`]), and a version sweep's relative
//! numbers by release ([`VersionSweep`]).
//!
//! Plain `Serialize` records of the JSON contract; must not compute them (`crossover` and
//! `by_version` do).

use serde::Serialize;

use super::summary::Decided;
use super::verdicts::MetricTest;

/// A version sweep at one client count: per group and per step, the relative numbers in
/// release order and the first release that moved beyond the noise.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionSweep {
    /// The sweep's name (the `[[target]]` name that had `versions`).
    pub sweep: String,
    pub clients: u32,
    /// What the relative numbers are against: the report's base (the sweep's first release
    /// unless `--base` names another target).
    pub base: String,
    /// The sweep's targets in release order.
    pub releases: Vec<String>,
    /// Per group (report order): the group's row, then one per step of it.
    pub series: Vec<VersionSeries>,
    /// Per release: how many of its steps were decided against the base, over every group
    /// (as [`ReportModel::decided`]); `None` at the base and when the report has no verdicts.
    ///
    /// [`ReportModel::decided`]: super::ReportModel::decided
    pub decided: Vec<Option<Decided>>,
}

/// One group's or step's numbers along a sweep; every vector has one entry per release.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionSeries {
    pub group: String,
    /// `None`: the group's row (medians over its steps, as the group summary's).
    pub step: Option<String>,
    /// Relative QPS against the base (1 at the base itself).
    pub qps: Vec<Option<f64>>,
    /// Relative server CPU per operation against the base (1 at the base).
    pub server_cpu: Vec<Option<f64>>,
    /// The QPS verdict against the base (a group's: the verdict more than half of its steps
    /// share, else `within noise`); `None` without verdicts (1 repeat) and at the base.
    pub qps_verdicts: Vec<Option<String>>,
    /// The server CPU/op verdict, likewise.
    pub server_cpu_verdicts: Vec<Option<String>>,
    /// The first release whose QPS verdict is a change (`regression` or `improvement`).
    pub first_qps_change: Option<FirstChange>,
    /// The first release whose server CPU/op verdict is a change.
    pub first_server_cpu_change: Option<FirstChange>,
}

/// Where a series first moved beyond the noise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FirstChange {
    pub release: String,
    /// `regression` or `improvement`.
    pub verdict: String,
}

/// One target's QPS of one group at one client count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupQps {
    pub target: String,
    pub group: String,
    pub clients: u32,
    /// Geometric mean of the QPS (means over repeats) of the group's steps measured at this
    /// client count; `None` when one of them has no QPS for this target (`missing_steps`).
    pub qps: Option<f64>,
    /// Steps in the geometric mean.
    pub steps: u32,
    /// The group's steps measured at this client count (by any shown target) that have no QPS
    /// for this target: failed or not run.
    pub missing_steps: Vec<String>,
}

/// How a compared target's group QPS relates to its base's across the client counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Crossover {
    pub target: String,
    /// The target it is relative to.
    pub base: String,
    pub group: String,
    pub title: String,
    /// `overtakes` (behind at a smaller count, ahead from `clients` on), `falls_behind` (the
    /// reverse), `faster_throughout`, `slower_throughout`, `no_lasting_lead` (level at the
    /// largest count) or `too_few_counts` (a ratio at fewer than 2 client counts).
    pub kind: String,
    /// `overtakes`/`falls_behind`: the smallest client count from which the ratio stays on the
    /// new side of 1 at every larger count with a ratio.
    pub clients: Option<u32>,
    /// How the verdicts at the client counts around it judge it: `confirmed` (beyond noise on
    /// both sides of the crossover, or at every count for `*_throughout`), `bracketed` (beyond
    /// noise only at counts further apart: `confirmed_between`), `within_noise`, or
    /// `unconfirmed` (fewer than 2 paired repeats); `None` for `no_lasting_lead` and
    /// `too_few_counts`.
    pub noise: Option<String>,
    /// `[a, b]`: beyond noise on the old side at `a` and on the new side at `b`, so the
    /// crossover lies in (a, b].
    pub confirmed_between: Option<[u32; 2]>,
    /// One point per client count of the report.
    pub points: Vec<CrossoverPoint>,
    /// The tl;dr sentence.
    pub sentence: String,
}

/// The group QPS of a compared target and its base at one client count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrossoverPoint {
    pub clients: u32,
    pub target_qps: Option<f64>,
    pub base_qps: Option<f64>,
    /// `target_qps / base_qps`; > 1 is faster.
    pub ratio: Option<f64>,
    /// Repeats in which both sides measured every step of the group (paired by number).
    pub paired_repeats: u32,
    /// The verdict on the per-repeat ratios of group QPS, judged within the family of this
    /// target × group over the client counts; `None` with fewer than 2 paired repeats.
    pub qps_test: Option<MetricTest>,
}
