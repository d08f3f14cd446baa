//! The report model: everything any report format shows, computed once from a run's records.
//!
//! Owns the model's shape (plain `Serialize` records whose JSON form is the JSON report): here
//! the whole ([`ReportModel`]), its look-ups and the contract's version; the records of each
//! part live in a file of their own (`run`, `summary`, `rows`, `verdicts`, `sweeps`,
//! `profiles`, `suite_tables`) and are re-exported here, so callers name `model::X`. Computing
//! it lives in `build`; drawing it lives in the format modules. Nothing here reads files, the
//! terminal, the clock or the environment, and no file below imports this one: each names the
//! sibling that defines what it uses.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::results::Metric;

mod profiles;
mod rows;
mod run;
mod suite_tables;
mod summary;
mod sweeps;
mod verdicts;
pub(super) mod why_model;

pub use profiles::{
    FunctionChange, FunctionCost, ProfileDiff, ProfileReport, StepProfiles, TargetProfile,
};
pub use rows::{
    Aggregate, Deciding, LoadSummary, MeasurementRow, PrePost, Relative, SeriesSummary, WithinStep,
};
pub use run::{CompareRuns, Difference, InvocationSummary, RunSummary, StepGroup, TargetSummary};
pub use suite_tables::{
    Background, InsertCell, InsertOp, InsertRow, InsertSummary, LinkbenchLoad, LinkbenchOp,
    LinkbenchRequest, LinkbenchSummary, SuiteTables,
};
pub use summary::{
    ChangedStep, Decided, Disagreement, GroupSummary, Provenance, StepValue, Summary, TargetDecided,
};
pub use sweeps::{Crossover, CrossoverPoint, FirstChange, GroupQps, VersionSeries, VersionSweep};
pub use verdicts::{CostTests, Method, MetricTest, OpSpreadTest, SpreadTest, is_decided};

/// Version of the JSON contract (`schema/report-v4.schema.json`). v2 kept every v1 field and
/// its meaning, and added `measurements[].operations` and `insert`; v3 keeps every v2 field
/// and adds `profiles` (`by_version` and `targets[].sweep` were added later within v3: the
/// contract lets fields be added); v4 moves `insert` and `linkbench` into `suites`, keyed by
/// suite id.
pub const SCHEMA_VERSION: u32 = 4;

/// Everything a report shows. Its JSON form is the JSON report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportModel {
    pub schema_version: u32,
    /// The first screen's facts: what was compared, the decided steps by name, the rest
    /// counted, and what would decide it (docs/reports.md, The first screen).
    pub summary: Summary,
    pub run: RunSummary,
    /// The target every other target is compared with (in a compare report: the first target of
    /// run A; each run-B target is compared with its own run-A twin, see
    /// [`TargetSummary::relative_to`]).
    pub base: String,
    /// Every target of the run, in lab order.
    pub targets: Vec<TargetSummary>,
    /// One row per stored measurement (each repeat separately), in execution order.
    pub measurements: Vec<MeasurementRow>,
    /// Per non-base target × step × clients.
    pub relative: Vec<Relative>,
    /// Per non-base target × group × clients.
    pub groups: Vec<GroupSummary>,
    /// One generated sentence per non-base target × group × clients.
    pub tldr: Vec<String>,
    pub warnings: Vec<String>,
    /// Method notes (the report footer).
    pub notes: Vec<String>,
    /// Load phase per target × suite × clients (means over repeats).
    pub loads: Vec<LoadSummary>,
    /// Client counts that were measured, ascending.
    pub clients: Vec<u32>,
    /// Non-base targets with at least one measurement: the columns of relative tables.
    pub compared: Vec<String>,
    /// Report groups in display order (first appearance in step order), with their steps.
    pub step_groups: Vec<StepGroup>,
    /// Most non-failed repeats of any target × step × clients.
    pub max_repeats: u32,
    /// Means over non-failed repeats per target × step × clients.
    pub aggregates: Vec<Aggregate>,
    /// Per-second throughput summary per target × step × clients × repeat.
    pub series: Vec<SeriesSummary>,
    /// With `pre = true`: per target × clients × paired step, post QPS / pre QPS.
    pub pre_post: Vec<PrePost>,
    /// `dbdelta compare`: the two runs; `None` in the report of one run.
    pub compare: Option<CompareRuns>,
    /// The statistical method's parameters (docs/verdicts.md).
    pub method: Method,
    /// With a client sweep (2 or more client counts): per shown target × group × clients, the
    /// group's QPS (geometric mean of its steps' QPS). Empty with one client count.
    pub group_qps: Vec<GroupQps>,
    /// With a client sweep: per compared target × group, whether and from which client count
    /// it overtakes (or falls behind) its base. Empty with one client count.
    pub crossovers: Vec<Crossover>,
    /// Each suite's own tables, keyed by suite id (a section of `report/suites/`); a suite
    /// without a section, or without measurements in the run, has no key.
    pub suites: BTreeMap<String, SuiteTables>,
    /// CPU profiles of a profiled run (`None`: profiles were not asked for).
    pub profiles: Option<ProfileReport>,
    /// Per version sweep (`versions` in the lab) × clients: the "by version" view. Empty
    /// without a sweep of 2 or more releases, and in a compare.
    pub by_version: Vec<VersionSweep>,
    /// Per compared target × clients: how many of its steps were decided ([`Relative::step_verdict`]).
    /// Empty when no step of the report has a verdict (1 repeat without counting).
    pub decided: Vec<TargetDecided>,
    /// The counting pass's per-function changes: per compared step and per group (`null`, left
    /// out, when no compared step has function tables on both sides).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub functions: Option<crate::report::why_model::FunctionDiffs>,
}

impl ReportModel {
    /// How many of `rows` were decided ([`Decided::of`]); `None` when no step of the report
    /// has a verdict at all (1 repeat without counting: nothing could be decided).
    pub fn decided_among<'a>(
        &self,
        rows: impl IntoIterator<Item = &'a Relative>,
    ) -> Option<Decided> {
        let any = self.relative.iter().any(|r| r.step_verdict().is_some());
        any.then(|| Decided::of(rows))
    }

    pub fn decided_of(&self, target: &str, clients: u32) -> Option<&TargetDecided> {
        self.decided
            .iter()
            .find(|d| d.target == target && d.clients == clients)
    }

    /// A suite's measurement rows, its client counts (ascending) and the targets that have
    /// rows of it (lab order; a compare: A's, then B's twins).
    pub fn suite_scope(&self, suite: &str) -> (Vec<&MeasurementRow>, Vec<u32>, Vec<&str>) {
        let rows: Vec<&MeasurementRow> = (self.measurements.iter())
            .filter(|r| r.suite == suite)
            .collect();
        let mut clients: Vec<u32> = rows.iter().map(|r| r.clients).collect();
        clients.sort_unstable();
        clients.dedup();
        let targets: Vec<&str> = (self.targets.iter())
            .map(|t| t.name.as_str())
            .filter(|t| rows.iter().any(|r| r.target == *t))
            .collect();
        (rows, clients, targets)
    }

    /// Whether `metric` of a target × step × clients has no value because its non-failed
    /// repeats were below resolution when measured (their samples could not cover the step).
    pub fn unresolved(&self, target: &str, step: &str, clients: u32, metric: Metric) -> bool {
        let id = metric.id();
        let rows = || {
            (self.measurements.iter())
                .filter(|r| r.target == target && r.step == step && r.clients == clients)
                .filter(|r| !r.failed)
        };
        rows().any(|r| r.below_resolution.iter().any(|b| b == id))
            && rows().all(|r| r.values.get(metric).is_none())
    }

    pub fn aggregate(&self, target: &str, step: &str, clients: u32) -> Option<&Aggregate> {
        self.aggregates
            .iter()
            .find(|a| a.target == target && a.step == step && a.clients == clients)
    }

    /// The ratio of the means (target / base) of a paired test's cost, `QPS` or `CPU/op`: what
    /// the absolute tables' means give, beside the geometric mean of the paired ratios the test
    /// judges (the two differ when repeats swing).
    pub fn ratio_of_means(&self, r: &Relative, cost: &str) -> Option<f64> {
        let of = |t: &str| {
            let a = self.aggregate(t, &r.step, r.clients)?;
            match cost {
                "QPS" => a.qps,
                "CPU/op" => a.get(crate::results::Metric::ServerCpu),
                _ => None,
            }
        };
        let (t, b) = (of(&r.target)?, of(&r.base)?);
        (b > 0.0).then(|| t / b)
    }

    pub fn relative_of(&self, target: &str, step: &str, clients: u32) -> Option<&Relative> {
        self.relative
            .iter()
            .find(|r| r.target == target && r.step == step && r.clients == clients)
    }

    pub fn pre_post_of(&self, target: &str, step: &str, clients: u32) -> Option<&PrePost> {
        self.pre_post
            .iter()
            .find(|p| p.target == target && p.step == step && p.clients == clients)
    }

    pub fn group_qps_of(&self, target: &str, group: &str, clients: u32) -> Option<&GroupQps> {
        self.group_qps
            .iter()
            .find(|g| g.target == target && g.group == group && g.clients == clients)
    }

    pub fn crossover_of(&self, target: &str, group: &str) -> Option<&Crossover> {
        self.crossovers
            .iter()
            .find(|c| c.target == target && c.group == group)
    }

    pub fn group_of(&self, target: &str, group: &str, clients: u32) -> Option<&GroupSummary> {
        self.groups
            .iter()
            .find(|g| g.target == target && g.group == group && g.clients == clients)
    }

    /// The target `target`'s relative numbers are against: its own base in a compare, else
    /// the report's base.
    pub fn base_of(&self, target: &str) -> &str {
        self.targets
            .iter()
            .find(|t| t.name == target)
            .and_then(|t| t.relative_to.as_deref())
            .unwrap_or(&self.base)
    }

    /// Whether some target is compared with `target`.
    pub fn is_base(&self, target: &str) -> bool {
        target == self.base || self.targets.iter().any(|t| t.name == target && t.is_base)
    }

    /// What relative numbers are against, for headings: the base's name, or in a compare
    /// "run A" (each target against its own run-A twin).
    pub fn base_label(&self) -> String {
        match &self.compare {
            Some(c) => format!("run A = {}", c.a.id),
            None => self.base.clone(),
        }
    }

    /// Each compared target after its base (the report's base first): the columns of absolute
    /// tables.
    pub fn shown_targets(&self) -> Vec<&str> {
        let mut out = vec![self.base.as_str()];
        for t in &self.compared {
            let base = self.base_of(t);
            if !out.contains(&base) {
                out.push(base);
            }
            out.push(t);
        }
        out
    }
}
