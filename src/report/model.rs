//! The report model: everything any report format shows, computed once from a run's records.
//!
//! Owns the model's shape (plain `Serialize` records whose JSON form is the JSON report).
//! Computing it lives in `build`; drawing it lives in the format modules. Nothing here reads
//! files, the terminal, the clock or the environment.

use std::collections::BTreeMap;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::results::metrics::{METRICS, Picked, pick};
use crate::results::{ErrorCounts, HostInfo, Latency, Metric, OpMeasurement, Settling, Values};

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
    pub functions: Option<super::why_model::FunctionDiffs>,
}

/// The report's answer, what every format opens with.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Summary {
    /// One per target, lab order.
    pub targets: Vec<Provenance>,
    /// The decided steps that changed: regressions first, then improvements (report order).
    pub changed: Vec<ChangedStep>,
    /// Compared steps (target × step × clients) in all, unchanged, and undecided (within noise,
    /// unmeasurable or without a verdict).
    pub steps: u32,
    pub unchanged: u32,
    pub undecided: u32,
    /// What would decide the undecided steps, measured for this run (empty: nothing undecided).
    pub to_decide: Vec<String>,
}

/// Where a target's server came from.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Provenance {
    pub target: String,
    /// The target it is compared with (`None`: a base).
    pub base: Option<String>,
    pub engine: String,
    /// The server's own version string, whole.
    pub server_version: Option<String>,
    /// The compiler, where the build, the binary's `.comment` or the version string says it.
    pub compiler: Option<String>,
    /// The first line the server program prints for `--version` (SQLite: the library's version
    /// and source id), where it was read.
    pub version_line: Option<String>,
    /// Compiler flags, where dbdelta built it.
    pub cflags: Option<String>,
    /// Where the build came from: fetched by `version`, a `bin` directory, Debian's install,
    /// built by dbdelta, a running server, the bundled library.
    pub source: String,
}

/// A decided step that changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangedStep {
    pub target: String,
    pub base: String,
    pub step: String,
    pub clients: u32,
    #[serde(flatten)]
    pub deciding: Deciding,
}

/// One compared target's decided steps at one client count, over every group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetDecided {
    pub target: String,
    /// The target it is relative to.
    pub base: String,
    pub clients: u32,
    #[serde(flatten)]
    pub counts: Decided,
}

/// How many of some steps were decided, by their step verdict ([`Relative::step_verdict`]):
/// `decided` = `regressions` + `improvements` + `unchanged`; the rest of `steps` are `within
/// noise`, `unmeasurable` or have no verdict at all (a failed side).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Decided {
    /// Compared steps (relative rows).
    pub steps: u32,
    pub decided: u32,
    pub regressions: u32,
    pub improvements: u32,
    pub unchanged: u32,
    pub within_noise: u32,
    pub unmeasurable: u32,
}

impl Decided {
    /// The counts of `rows`' step verdicts.
    pub fn of<'a>(rows: impl IntoIterator<Item = &'a Relative>) -> Decided {
        let mut d = Decided::default();
        for r in rows {
            d.steps += 1;
            let verdict = r.step_verdict();
            d.decided += u32::from(verdict.is_some_and(is_decided));
            match verdict {
                Some("regression") => d.regressions += 1,
                Some("improvement") => d.improvements += 1,
                Some("unchanged") => d.unchanged += 1,
                Some("within noise") => d.within_noise += 1,
                Some("unmeasurable") => d.unmeasurable += 1,
                _ => {}
            }
        }
        d
    }
}

/// Whether a verdict is a decision: `regression`, `improvement` or `unchanged`. `within
/// noise` (could not be decided) and `unmeasurable` (the passes disagree by more than half)
/// are not.
pub fn is_decided(verdict: &str) -> bool {
    matches!(verdict, "regression" | "improvement" | "unchanged")
}

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

/// One suite's own tables in [`ReportModel::suites`]; its JSON form is the value alone (the
/// suite id is the key), as its section's schema fragment describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SuiteTables {
    /// The Insert Benchmark's summary tables per client count (docs/workloads.md, The Insert
    /// Benchmark).
    Insert(Vec<InsertSummary>),
    /// LinkBench's tables per client count (docs/workloads.md, LinkBench).
    Linkbench(Vec<LinkbenchSummary>),
}

/// LinkBench at one client count (the lab's; LinkBench's own connections are its loaders and
/// requesters): the load per target, each request step per target and its operation types.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkbenchSummary {
    pub clients: u32,
    pub load: Vec<LinkbenchLoad>,
    /// Per request step (in suite order) × target.
    pub requests: Vec<LinkbenchRequest>,
    /// Per request step × target × operation type.
    pub operations: Vec<LinkbenchOp>,
}

/// One target's `linkbench.load` and `linkbench.index`, means over non-failed repeats (sizes:
/// the largest).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkbenchLoad {
    pub target: String,
    pub nodes_per_sec: Option<f64>,
    pub links_per_sec: Option<f64>,
    pub counts_per_sec: Option<f64>,
    /// Nodes + links + counts per second (the load step's QPS).
    pub rows_per_sec: Option<f64>,
    /// `rows_per_sec` ÷ the base's.
    pub relative: Option<f64>,
    pub load_secs: Option<f64>,
    pub server_cpu_us_per_row: Option<f64>,
    /// The `id1_type` build.
    pub index_secs: Option<f64>,
    pub size_after_load: Option<u64>,
    pub size_after_index: Option<u64>,
}

/// One target's request step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkbenchRequest {
    pub step: String,
    pub target: String,
    pub requests_per_sec: Option<f64>,
    /// `requests_per_sec` ÷ the base's.
    pub relative: Option<f64>,
    pub server_cpu_us_per_request: Option<f64>,
    pub cs_per_request: Option<f64>,
    pub write_kb_per_request: Option<f64>,
    pub size_after: Option<u64>,
    /// Service-time p99 per operation type, in `workload::linkbench::OPS` order, µs.
    pub p99_us: Vec<Option<f64>>,
}

/// One operation type of one target's request step, means over non-failed repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkbenchOp {
    pub step: String,
    pub target: String,
    pub op: String,
    pub ops_per_sec: Option<f64>,
    /// Share of the step's requests, percent.
    pub share_percent: Option<f64>,
    pub p50_us: Option<f64>,
    pub p95_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
    pub mean_us: Option<f64>,
    /// Rows returned or changed per operation (getlinklist: rows returned, RANGE_SIZE).
    pub rows_per_op: Option<f64>,
}

/// The Insert Benchmark at one client count: a row per target, a cell per step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InsertSummary {
    pub clients: u32,
    /// Steps measured by any target, in suite order.
    pub steps: Vec<String>,
    /// Every target with insert measurements, in lab order.
    pub rows: Vec<InsertRow>,
    /// Per step × target × role × operation type: rates, latencies and costs, means over the
    /// non-failed repeats.
    pub operations: Vec<InsertOp>,
}

/// One operation type of one role in one step of one target, over its non-failed repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InsertOp {
    pub step: String,
    pub target: String,
    pub role: String,
    pub op: String,
    pub repeats: u32,
    /// Operations and units (rows or queries) per second.
    pub ops_per_sec: Option<f64>,
    pub units_per_sec: Option<f64>,
    /// Service time p99 and maximum, µs.
    pub service_p99_us: Option<f64>,
    pub service_max_us: Option<f64>,
    /// Paced roles: response time from the intended start, p99 and maximum, µs.
    pub response_p99_us: Option<f64>,
    pub response_max_us: Option<f64>,
    /// The step's server CPU µs per unit of this operation type (per row inserted or deleted,
    /// per query).
    pub step_server_cpu_us_per_unit: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InsertRow {
    pub target: String,
    /// One per step of [`InsertSummary::steps`].
    pub cells: Vec<InsertCell>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InsertCell {
    pub step: String,
    /// Rows inserted per second (`l.i*`), indexed rows per second (`l.x`) or queries per
    /// second (`qr*`/`qp*`): mean over non-failed repeats.
    pub rate: Option<f64>,
    /// `rate` ÷ the base's.
    pub relative: Option<f64>,
    /// The reference's colouring of the absolute table: `bottom` (bottom quartile), `sla` (a
    /// query step that missed its background rate) or `top` (top quartile); `None`: plain.
    pub quartile: Option<String>,
    /// Query steps: the background inserter's rate against its target.
    pub background: Option<Background>,
}

/// The background insert rate of a query step, over all clients.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Background {
    /// Rows per second the schedule asked for.
    pub target_rows_per_sec: Option<f64>,
    /// Rows per second inserted: mean over non-failed repeats.
    pub achieved_rows_per_sec: f64,
    /// Achieved ÷ target, of the worst repeat.
    pub worst_share: Option<f64>,
    /// Every repeat reached 95% of the target (the reference's SLA).
    pub sla_met: bool,
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

/// The parameters the verdicts, flags and `~` cells of this report were computed with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Method {
    /// Benjamini–Hochberg false discovery rate within each family (compared target × clients ×
    /// metric, over all its steps).
    pub fdr_q: f64,
    /// Minimum effect: a change smaller than a factor of `1 + min_effect` either way is within
    /// noise, as is a step whose within-step precision (± of the per-second mean) is wider.
    pub min_effect: f64,
    /// Where `min_effect` came from: `lab` (stored with the run), `--min-effect`, or `default`
    /// (runs stored before dbdelta recorded it).
    pub min_effect_source: String,
    /// Fewest whole seconds of a step's per-second series before it is not "too short".
    pub min_step_seconds: u32,
    /// A counter total (per repeat) below this many units of its resolution is too coarse for
    /// a ratio (`~`).
    pub resolution_units: f64,
    /// The resolution of CPU times: one clock tick, µs.
    pub clock_tick_us: f64,
    /// `moderated` (each step's variance pooled with its report group's) or `student` (each alone).
    pub test: String,
    /// How many times the run could look at the steps (`repeats = "auto"`); 1 for fixed
    /// repeats. P-values are multiplied by it before Benjamini–Hochberg.
    pub looks: u32,
    /// The power at which [`MetricTest::detectable`] is stated.
    pub power: f64,
}

impl Method {
    /// The rule of a family of this report's verdicts.
    pub fn rule(&self, higher_is_better: bool) -> crate::stats::FamilyRule {
        crate::stats::FamilyRule {
            q: self.fdr_q,
            min_effect: self.min_effect,
            higher_is_better,
            pooled: self.test == "moderated",
            looks: self.looks,
        }
    }
}

/// One metric's verdict for one step, judged within its family (see [`Method`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricTest {
    /// `qps` or `server_cpu_us_per_op`.
    pub metric: String,
    /// QPS: higher is better; server CPU/op: lower is better.
    pub higher_is_better: bool,
    pub paired_repeats: u32,
    /// Geometric mean of the per-repeat ratios target / base.
    pub geo_mean: f64,
    /// Two-sided p-value of the t test of the log ratios against 0 (`Method::test`).
    pub p: f64,
    /// Degrees of freedom of that test: n − 1, or moderated: the prior's plus the step's.
    pub df: f64,
    /// The smallest change (relative, either way) this step would have been called with
    /// `Method::power` probability, at the noise measured in the run.
    pub detectable: f64,
    /// Benjamini–Hochberg adjusted p-value within the family.
    pub q: f64,
    /// Benjamini–Hochberg selected the step (`q ≤ fdr_q`).
    pub selected: bool,
    /// Steps tested in the family, and how many were selected.
    pub family_size: u32,
    pub family_selected: u32,
    /// False-coverage-rate adjusted interval of the geometric mean (Benjamini–Yekutieli), at
    /// `ci_level`; it excludes 1 exactly when the step is selected.
    pub ci: [f64; 2],
    pub ci_level: f64,
    /// The unadjusted 95% interval: this step alone, not corrected for the family's tests.
    pub ci95: [f64; 2],
    /// `regression`, `improvement` or `within noise`.
    pub verdict: String,
    /// Selected (the change is not nothing), but the adjusted interval reaches inside a factor of
    /// `1 + min_effect` of 1: the change may be smaller than the minimum effect.
    pub may_be_below_min_effect: bool,
    /// The repeats disagree more than the effect.
    pub unstable: bool,
    /// In some repeat, the CPU of other processes differed between the two sides by more than
    /// a quarter of a core: the step was judged on its own variance, not its group's.
    pub uneven_load: bool,
}

/// The noise inside a step: its per-second QPS series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WithinStep {
    /// Whole seconds of the series (over repeats: the fewest).
    pub seconds: u32,
    /// Coefficient of variation of the per-second QPS (over repeats: the median).
    pub cv: Option<f64>,
    /// Relative half-width of the 95% interval of the mean per-second QPS, corrected for
    /// autocorrelation (over repeats: the median); `None` with fewer than 3 seconds or fewer
    /// than 2 effectively independent ones.
    pub precision: Option<f64>,
    /// Fewer whole seconds than `method.min_step_seconds`.
    pub too_short: bool,
    /// Enough seconds, but the precision is wider than `method.min_effect` (or unknown).
    pub too_noisy: bool,
}

/// The two runs of a compare report. Targets are named `<target>@A` (run A, the bases) and
/// `<target>@B` (run B); relative numbers are B / A for the same target, step and clients.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareRuns {
    pub a: RunSummary,
    pub b: RunSummary,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub id: String,
    pub lab: String,
    pub started: String,
    pub finished: Option<String>,
    pub complete: bool,
    pub quick: bool,
    pub host: HostInfo,
    pub dbdelta_version: String,
    /// Each `dbdelta run` that worked on the run (the first, then every `--resume`) and the
    /// cells it ran; empty for a compare's merged run and for runs stored before schema v11.
    pub invocations: Vec<InvocationSummary>,
}

/// One invocation of `dbdelta run` on a run, and which cells' measurements it made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InvocationSummary {
    /// 1: the run's first invocation; more: a `--resume`.
    pub number: u32,
    pub started: String,
    /// `None`: still running, or cut off (kill -9, power loss).
    pub finished: Option<String>,
    /// Its cells as `target c=CLIENTS r=REPEAT`, in execution order.
    pub cells: Vec<String>,
}

/// A key whose value differs between the base and a target (`None`: not set on that side).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    pub key: String,
    pub base: Option<String>,
    pub target: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct TargetSummary {
    pub name: String,
    pub engine: String,
    pub server_version: Option<String>,
    pub config_name: Option<String>,
    pub failed: bool,
    pub error: Option<String>,
    pub log_path: Option<String>,
    /// Some target is compared with this one.
    pub is_base: bool,
    /// The target this one's relative numbers are against (`None` for a base).
    pub relative_to: Option<String>,
    /// The run this target's numbers come from (differs between targets only in a compare).
    pub run_id: String,
    pub env: BTreeMap<String, String>,
    /// Config lines only in this target (`+ line`) or only in its base (`- line`).
    pub config_diff: Vec<String>,
    /// Effective settings that differ from the base (empty when either side has none
    /// recorded, or the engines differ).
    pub settings_diff: Vec<Difference>,
    pub env_diff: Vec<Difference>,
    /// CPU placement: `os`, `shared`, `split` or `custom`.
    pub placement: String,
    /// CPUs the server process tree was pinned to; `None`: not pinned or no server (SQLite).
    pub server_cpus: Option<String>,
    /// CPUs every client thread was pinned to; `None`: not pinned.
    pub client_cpus: Option<String>,
    /// A running server dbdelta connected to (`connect`): its URL without the password.
    pub connect: Option<String>,
    /// Why its server CPU, context switches, process IO and memory are n/a (its processes are
    /// not on this host).
    pub unobserved: Option<String>,
    /// How dbdelta compiled the target, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build: Option<crate::results::BuildInfo>,
    /// The version sweep this target is one release of (absent: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<String>,
    /// What its build says of itself, read when its server first started (absent: not read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<crate::results::BinaryProvenance>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepGroup {
    /// Group id as stored (`point`, `range-noagg`, ...).
    pub id: String,
    /// Display name (the id itself for unknown ids).
    pub title: String,
    /// Step labels in step order.
    pub steps: Vec<String>,
}

/// One stored measurement, as the JSON contract names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasurementRow {
    pub target: String,
    pub suite: String,
    pub step: String,
    pub step_index: u32,
    pub group: String,
    pub clients: u32,
    pub repeat: u32,
    pub tables: u32,
    pub rows_per_table: u64,
    pub statements_per_event: u32,
    pub seconds: f64,
    pub ops: u64,
    pub events: u64,
    /// Total errors of all kinds.
    pub errors: u64,
    pub errors_by_kind: ErrorCounts,
    pub qps: Option<f64>,
    pub tps: Option<f64>,
    pub latency_us: Option<Latency>,
    /// Every metric of the table ([`crate::results::metrics::METRICS`]), under its id.
    #[serde(flatten)]
    pub values: Values,
    /// Metrics whose counters could not cover the step (a CPU window that missed part of its
    /// operations or was too short for the clock tick): `null` above, never a number. Absent
    /// when every value was measured.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub below_resolution: Vec<String>,
    pub client_bound: bool,
    pub failed: bool,
    pub error: Option<String>,
    /// The per-second series of this repeat; `None` for a failed step.
    pub within_step: Option<WithinStep>,
    /// CPUs the server's threads were seen on / allowed on during the step (CPU lists).
    pub server_cpus_seen: Option<String>,
    pub server_cpus_allowed: Option<String>,
    /// CPUs dbdelta's client threads were seen on / allowed on.
    pub client_cpus_seen: Option<String>,
    pub client_cpus_allowed: Option<String>,
    /// Client and server spent most of each query asleep waiting for each other across CPUs.
    pub wakeup_bound: bool,
    /// `fixed` or `adaptive`.
    pub duration_rule: String,
    /// Adaptive: target relative half-width of the 95% CI of the per-second mean QPS.
    pub precision_target: Option<f64>,
    /// Relative half-width achieved, from the stored per-second series.
    pub precision_achieved: Option<f64>,
    /// `deadline` (fixed), `quota` (every role with a quota met it), `precision` (adaptive,
    /// target reached) or `max` (adaptive, ran to its maximum).
    pub stop_reason: Option<String>,
    /// Every role × operation type of the step (v2): rates, latencies, per-unit costs.
    pub operations: Vec<OpMeasurement>,
    /// The invocation of `dbdelta run` that measured it (1: the first; more: a `--resume`; 0:
    /// not known).
    pub invocation: u32,
    /// The settling guard's idle probe before the cell's first step (absent: no probe, as for
    /// SQLite); `settling.settling` says the step was measured while the server settled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settling: Option<Settling>,
    /// What counted `server_instructions_per_op` (`callgrind`, `perf stat -e instructions:u`);
    /// absent without a count, or when it was stored before dbdelta recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions_counter: Option<String>,
}

/// Target × step × clients over its non-failed repeats: means of every value (latency: mean
/// of each percentile), except peak RSS and size (the largest).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Aggregate {
    pub target: String,
    pub step: String,
    pub group: String,
    pub clients: u32,
    /// Non-failed repeats that went into the numbers.
    pub repeats: u32,
    pub qps: Option<f64>,
    pub tps: Option<f64>,
    pub latency_us: Option<Latency>,
    /// The aggregated metrics of the table (each over its repeats as its row says: the mean, or
    /// the largest for peaks and sizes); the engine's own IO is listed after `errors`.
    #[serde(flatten)]
    pub values: Picked<{ pick::AGGREGATE }>,
    /// Any repeat was flagged client-bound.
    pub client_bound: bool,
    /// Errors summed over the non-failed repeats.
    pub errors: u64,
    /// The engine's own IO (`/proc/PID/io`), KB per op: the same values, listed here.
    #[serde(flatten)]
    pub own_io: Picked<{ pick::AGGREGATE_OWN_IO }>,
    /// The engine's own KB read (written) per op is within a factor of 2 of the device's: the
    /// device IO is the engine's. `None` when either is unknown.
    pub device_reads_confirmed: Option<bool>,
    pub device_writes_confirmed: Option<bool>,
    /// Within-step noise over the non-failed repeats; `None` without any.
    pub within_step: Option<WithinStep>,
    /// CPUs the server's / the client's threads were seen on, over the non-failed repeats.
    pub server_cpus_seen: Option<String>,
    pub client_cpus_seen: Option<String>,
    /// Any repeat was flagged wake-up-bound.
    pub wakeup_bound: bool,
    /// Mean measured seconds of the non-failed repeats.
    pub seconds: Option<f64>,
    /// `adaptive` when any repeat ran adaptively, else `fixed`.
    pub duration_rule: String,
    /// Adaptive repeats that ran to their maximum without reaching the target.
    pub ran_to_max: u32,
    /// Any repeat was measured while the server was still settling (present only when true).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub settling: bool,
}

/// A non-base target relative to its base for one step and client count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Relative {
    pub target: String,
    /// The target it is relative to.
    pub base: String,
    pub step: String,
    pub group: String,
    pub clients: u32,
    /// QPS(target) / QPS(base); > 1 is faster.
    pub qps: Option<f64>,
    /// Cost ratios: target / base; < 1 is cheaper (the table's metrics with a ratio).
    #[serde(flatten)]
    pub ratios: Picked<{ pick::RELATIVE }>,
    /// Repeats present (and usable) in both target and base, paired by repeat number.
    pub paired_repeats: u32,
    /// Geometric mean of the per-repeat QPS ratios (with ≥ 2 paired repeats).
    pub geo_mean: Option<f64>,
    /// The unadjusted 95% interval of `geo_mean` (`qps_test.ci` is the one verdicts agree with).
    pub ci95: Option<[f64; 2]>,
    /// The QPS verdict (`qps_test.verdict`): `regression`, `improvement`, `within noise`;
    /// `None` with fewer than 2 paired repeats.
    pub verdict: Option<String>,
    /// The repeats' QPS ratios disagree by more than the effect (`qps_test.unstable`).
    pub unstable: bool,
    /// Either side was flagged client-bound.
    pub client_bound: bool,
    /// Either side had a repeat measured while its server was still settling (present only
    /// when true; the warnings name the target, repeat and evidence).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub settling: bool,
    /// The QPS verdict in full.
    pub qps_test: Option<MetricTest>,
    /// The verdicts on costs (lower is better), `<short>_test` for each metric of the table with
    /// a verdict (`server_cpu_test`); `None` also when the cost is too coarse for a ratio
    /// (`below_resolution`).
    #[serde(flatten)]
    pub tests: CostTests,
    /// Cost ratios left out (`null` above, `~` in tables) because both sides' totals are below
    /// the resolution of their counters: field names such as `cs_per_op`.
    pub below_resolution: Vec<String>,
    /// Both sides' device reads (writes) are confirmed as the engine's own IO; otherwise the
    /// device ratios describe the device, not the engine.
    pub device_reads_confirmed: bool,
    pub device_writes_confirmed: bool,
    /// The instructions verdicts of the step's operation types counted on their own (another
    /// role, one type of a mix), in the step's operation order; empty without them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counted_ops: Vec<OpSpreadTest>,
    /// Why the timed ratios are unmeasurable (a repeat on either side completed no event): then
    /// `qps` and the paired tests are `null` and the step's verdict is `unmeasurable`, unless
    /// instructions were counted. Absent when they were measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unmeasurable: Option<String>,
}

/// The instructions/op verdict of one operation type of a step counted on its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpSpreadTest {
    pub role: String,
    pub op: String,
    /// Instructions per unit on each side.
    pub base: f64,
    pub value: f64,
    pub test: SpreadTest,
}

/// Relative-QPS statistics of one group's steps for one non-base target and client count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSummary {
    pub target: String,
    /// The target it is relative to.
    pub base: String,
    pub group: String,
    pub title: String,
    pub clients: u32,
    /// Steps with a known relative QPS.
    pub steps: u32,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub avg: Option<f64>,
    pub median: Option<f64>,
    /// Median relative server CPU/op over the group's steps.
    pub server_cpu_us_per_op_median: Option<f64>,
    /// Step whose relative QPS is furthest from 1 (in log terms).
    pub largest_change: Option<StepValue>,
    /// QPS verdicts.
    pub regressions: u32,
    pub improvements: u32,
    /// Server CPU/op verdicts.
    pub server_cpu_regressions: u32,
    pub server_cpu_improvements: u32,
    /// How many of the group's steps were decided, by their step verdict; `None` when no step
    /// of the report has a verdict (as [`ReportModel::decided`]).
    pub decided: Option<Decided>,
}

/// A read step measured before the writes (`.pre`) and after them, for one target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrePost {
    pub target: String,
    pub clients: u32,
    /// The step after the writes, e.g. `point-query`.
    pub step: String,
    /// Its twin before the writes, e.g. `point-query.pre`.
    pub pre_step: String,
    pub pre_qps: Option<f64>,
    pub post_qps: Option<f64>,
    /// post QPS / pre QPS: < 1 means the writes left the database slower to read.
    pub ratio: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepValue {
    pub step: String,
    pub value: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadSummary {
    pub target: String,
    pub suite: String,
    pub clients: u32,
    pub repeats: u32,
    pub tables: u32,
    pub rows_per_table: u64,
    pub load_secs: f64,
    pub rows_per_sec: Option<f64>,
    pub index_secs: f64,
    pub db_size_bytes: Option<u64>,
    /// Copied from a saved load (`reuse_load`): the snapshot and when it was saved (the first
    /// repeat's); `load_secs` is then the copy's mean seconds.
    pub reused: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesSummary {
    pub target: String,
    pub step: String,
    pub clients: u32,
    pub repeat: u32,
    pub seconds: u32,
    pub ops_per_sec_min: f64,
    pub ops_per_sec_median: f64,
    pub ops_per_sec_max: f64,
    /// Worst per-second p99 latency, µs.
    pub p99_us_max: Option<f64>,
    /// Ops in each second of the measured period, `(second, ops)` by second: what the
    /// per-second throughput charts draw. Left out of the JSON contract (the store's `series`
    /// table holds the same numbers).
    #[serde(skip)]
    pub ops_per_sec: Vec<(u32, f64)>,
}

impl Aggregate {
    /// The aggregate of `metric` (`None` for metrics the table does not aggregate).
    pub fn get(&self, metric: Metric) -> Option<f64> {
        self.values.0.get(metric)
    }

    /// The aggregate of a whole-number metric (bytes).
    pub fn whole(&self, metric: Metric) -> Option<u64> {
        self.values.0.whole(metric)
    }
}

impl Relative {
    /// The ratio target / base of `metric`.
    pub fn ratio(&self, metric: Metric) -> Option<f64> {
        self.ratios.0.get(metric)
    }

    /// The QPS verdict (`None`: fewer than 2 paired repeats).
    pub fn qps_verdict(&self) -> Option<&str> {
        self.qps_test.as_ref().map(|t| t.verdict.as_str())
    }

    /// The step's verdict, the one "decided" counts: instructions/op's (from one repeat, against
    /// its own spread) when the step was counted; else the timed tests', QPS's when it is a
    /// decision, else server CPU/op's when that is, else QPS's (`within noise`); `None` without
    /// any test (1 repeat without counting, or a failed side).
    pub fn step_verdict(&self) -> Option<&str> {
        match self.decider() {
            Some(Decider::Spread(t)) => Some(&t.verdict),
            Some(Decider::Paired(_, t)) => Some(&t.verdict),
            None => self.unmeasurable.as_ref().map(|_| "unmeasurable"),
        }
    }

    /// The test the step's verdict comes from (the one place: [`Relative::step_verdict`], the
    /// first screen and the decided counts all read it).
    fn decider(&self) -> Option<Decider<'_>> {
        if let Some(t) = self.tests.spread(Metric::ServerInstr) {
            return Some(Decider::Spread(t));
        }
        let qps = self.qps_test.as_ref().map(|t| Decider::Paired("QPS", t));
        let cpu = (self.tests.get(Metric::ServerCpu)).map(|t| Decider::Paired("CPU/op", t));
        let decided = |d: &Decider| matches!(d, Decider::Paired(_, t) if is_decided(&t.verdict));
        (qps.filter(decided))
            .or(cpu.filter(decided))
            .or(qps)
            .or(cpu)
    }

    /// The step's verdict with the cost that decided it, its ratio and its interval (or the
    /// counting passes' range); `None` without any test.
    pub fn deciding(&self) -> Option<Deciding> {
        Some(match self.decider()? {
            Decider::Spread(t) => Deciding {
                cost: "instructions/op".into(),
                verdict: t.verdict.clone(),
                ratio: t.ratio,
                interval: t.range,
                interval_kind: "range".into(),
            },
            Decider::Paired(cost, t) => Deciding {
                cost: cost.into(),
                verdict: t.verdict.clone(),
                ratio: t.geo_mean,
                interval: t.ci,
                interval_kind: "interval".into(),
            },
        })
    }

    /// The verdict on a cost metric: from its spread when it is judged so, else from the
    /// paired repeats; `None` for a metric without a verdict or a step that got none.
    pub fn cost_verdict(&self, metric: Metric) -> Option<&str> {
        let d = metric.def();
        d.verdict?;
        match d.spread {
            Some(_) => self.tests.spread(metric).map(|t| t.verdict.as_str()),
            None => self.tests.get(metric).map(|t| t.verdict.as_str()),
        }
    }
}

/// Where a step's verdict comes from: instructions/op's spread test, or a paired test (QPS or
/// CPU/op).
#[derive(Clone, Copy)]
enum Decider<'a> {
    Spread(&'a SpreadTest),
    Paired(&'static str, &'a MetricTest),
}

/// A step's verdict and what decided it ([`Relative::deciding`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Deciding {
    /// `instructions/op`, `QPS` or `CPU/op`.
    pub cost: String,
    pub verdict: String,
    /// target / base of that cost (QPS: > 1 is faster; a cost: < 1 is cheaper).
    pub ratio: f64,
    /// The adjusted interval of a paired test, or the counting passes' range.
    pub interval: [f64; 2],
    /// `interval` or `range`.
    pub interval_kind: String,
}

/// The verdicts on the costs of one relative row, by metric (those of the table with a verdict):
/// from paired repeats, or from one repeat against the metric's own spread.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CostTests {
    paired: BTreeMap<Metric, MetricTest>,
    spread: BTreeMap<Metric, SpreadTest>,
}

impl CostTests {
    pub fn get(&self, metric: Metric) -> Option<&MetricTest> {
        self.paired.get(&metric)
    }

    pub fn set(&mut self, metric: Metric, test: Option<MetricTest>) {
        match test {
            Some(t) => self.paired.insert(metric, t),
            None => self.paired.remove(&metric),
        };
    }

    /// The verdict of a metric judged against its spread ([`MetricDef::spread`]).
    ///
    /// [`MetricDef::spread`]: crate::results::metrics::MetricDef::spread
    pub fn spread(&self, metric: Metric) -> Option<&SpreadTest> {
        self.spread.get(&metric)
    }

    pub fn set_spread(&mut self, metric: Metric, test: Option<SpreadTest>) {
        match test {
            Some(t) => self.spread.insert(metric, t),
            None => self.spread.remove(&metric),
        };
    }
}

/// `<short>_test` for every metric with a verdict, in table order (`null` without one).
impl Serialize for CostTests {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for d in METRICS {
            if let Some(short) = d.verdict {
                let key = format!("{short}_test");
                match d.spread {
                    Some(_) => map.serialize_entry(&key, &self.spread(d.metric))?,
                    None => map.serialize_entry(&key, &self.get(d.metric))?,
                }
            }
        }
        map.end()
    }
}

/// A verdict from one repeat: the ratio of a metric whose own spread is known (instructions/op:
/// the counting passes'), called a change when the spreads cannot explain it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpreadTest {
    /// `server_instructions_per_op`.
    pub metric: String,
    /// target / base.
    pub ratio: f64,
    /// The ratios the two sides allow, each side moved by its whole range (twice its
    /// half-range) against the change: the verdict needs 1 outside it.
    pub range: [f64; 2],
    /// Each side's half-range relative to its value.
    pub base_spread: f64,
    pub target_spread: f64,
    /// Pairs of passes matched by their seed (the k-th of each side ran the same rows): the
    /// range is then the lowest and highest of their ratios. 0: no pairs on one side (an older
    /// store), the range is the sides' spreads'.
    pub paired: u32,
    /// Pairs of passes counted on each side (base, target) when the range is a 95% interval
    /// over them (Welch's, on the log of the ratio of their means): where no seed-matched
    /// pairing explains the sides' variation and a side counted 5 pairs or more (the counting
    /// pass counts 7 where its first 3 disagree by more than ±1%). `None`: the range is the
    /// paired one, or the sides' ranges moved by their whole width.
    pub interval: Option<[u32; 2]>,
    /// `regression` / `improvement` (1 outside the range and the ratio beyond the minimum
    /// effect), `unchanged` (the whole range within ± the minimum effect), `unmeasurable` (the
    /// range reaches zero: the passes disagree by more than half) or `within noise` (none of
    /// these: undecided).
    pub verdict: String,
    /// The server CPU/op ratio of the same step (the timed repeats'), when known.
    pub cpu_ratio: Option<f64>,
    /// Instructions/op and CPU/op disagree by more than a factor of 1.25: the step's CPU goes
    /// to what instructions do not show (waits, contention, cache misses, IO, the kernel).
    pub cpu_disagrees: bool,
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

/// Whether a stored engine (its family's name) runs inside dbdelta's own process, as its family
/// says ([`crate::engine::Family::embedded`]); an engine this binary does not know is a server.
pub fn in_process(engine: &str) -> bool {
    crate::engine::EngineKind::stored(engine).is_some_and(|k| k.embedded())
}
