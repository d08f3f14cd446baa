//! The per-step numbers: each stored measurement as the JSON contract names it, the means over
//! repeats ([`Aggregate`]), each compared step against its base ([`Relative`], and which of its
//! tests decides the step), read steps before and after the writes, load phases and per-second
//! series.
//!
//! Plain `Serialize` records (field order and attributes are the JSON's); must not run a test
//! (the tests' records are `verdicts`', filled by `report::verdict`) or aggregate repeats
//! (`build` does).

use serde::Serialize;

use super::verdicts::{CostTests, MetricTest, OpSpreadTest, SpreadTest, is_decided};
use crate::results::metrics::{Picked, pick};
use crate::results::{ErrorCounts, Latency, Metric, OpMeasurement, Settling, Values};

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
            Decider::Paired(cost, t) => paired(cost, t),
        })
    }

    /// The QPS test of a counted step as [`Deciding`] when it tells another story than the
    /// instructions the step's verdict follows: one of the two is a change (`regression`,
    /// `improvement`) and the other is not the same change. `None` for a step not counted or
    /// without a QPS test.
    pub fn qps_disagrees(&self) -> Option<Deciding> {
        let counted = self.tests.spread(Metric::ServerInstr)?;
        let qps = self.qps_test.as_ref()?;
        let change = |v: &str| matches!(v, "regression" | "improvement");
        let differ = counted.verdict != qps.verdict;
        (differ && (change(&counted.verdict) || change(&qps.verdict))).then(|| paired("QPS", qps))
    }

    /// A metric's `verdict` as a table colours it: `None` where it is a change the step's
    /// verdict (the one the Answer follows) is not, so no table colours what the Answer says
    /// otherwise.
    pub fn shown_verdict<'a>(&self, verdict: Option<&'a str>) -> Option<&'a str> {
        verdict.filter(|v| !self.contradicts(v))
    }

    /// Whether `verdict` (a metric's) is a change the step's verdict is not.
    pub fn contradicts(&self, verdict: &str) -> bool {
        matches!(verdict, "regression" | "improvement") && self.step_verdict() != Some(verdict)
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

/// A paired test of `cost` as [`Deciding`].
fn paired(cost: &str, t: &MetricTest) -> Deciding {
    Deciding {
        cost: cost.into(),
        verdict: t.verdict.clone(),
        ratio: t.geo_mean,
        interval: t.ci,
        interval_kind: "interval".into(),
    }
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
