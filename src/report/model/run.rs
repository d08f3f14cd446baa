//! What was run: the run's own record ([`RunSummary`], its invocations, a compare's two runs),
//! each target's summary with how it differs from its base, and the report groups' steps.
//!
//! Plain `Serialize` records of the JSON contract (field order is the JSON's); must not compute
//! them (`build` fills them) or import the rest of the model.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::results::HostInfo;

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
    /// The engine's family title (`SQLite`), from the record.
    #[serde(skip)]
    pub engine_title: String,
    /// The engine runs inside dbdelta's own process (from the record).
    #[serde(skip)]
    pub in_process: bool,
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
