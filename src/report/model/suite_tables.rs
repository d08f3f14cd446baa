//! The suites' own tables in the model's `suites` map: the Insert Benchmark's and LinkBench's,
//! per client count, keyed by suite id.
//!
//! Plain `Serialize` records as each section's schema fragment describes them; must not compute
//! them (the sections in `report/suites/` do) or import the rest of the model.

use serde::Serialize;

/// One suite's own tables in [`ReportModel::suites`]; its JSON form is the value alone (the
/// suite id is the key), as its section's schema fragment describes it.
///
/// [`ReportModel::suites`]: super::ReportModel::suites
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
