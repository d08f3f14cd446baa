//! Result records: what a run measured, in the shape the store keeps and the reports read.
//!
//! Plain data only. Nothing here measures, times, reads files or renders: the runner fills these
//! records from what it measured, the store persists them, and `report` turns them into a model.
//! Units: times in µs, sizes in bytes, rates per second. `None` means "could not be computed"
//! (for example a per-op value over zero ops), never zero.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub mod floors;
pub mod metrics;
pub mod pairs;

pub use metrics::{Metric, Values};
pub use pairs::InstructionPairs;

/// The machine a run executed on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HostInfo {
    pub cpu_model: String,
    pub cores: u32,
    pub memory_bytes: u64,
    pub kernel: String,
    /// CPUs the host had online, as a CPU list (`0-3`); empty when unknown.
    #[serde(default)]
    pub online_cpus: String,
    /// Online CPUs dbdelta was allowed to run on (its affinity mask at the start of the run).
    #[serde(default)]
    pub usable_cpus: String,
    /// Per online CPU: its core, package and SMT siblings (`/sys/devices/system/cpu`).
    #[serde(default)]
    pub cpu_topology: Vec<CpuTopology>,
}

/// Where one CPU sits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CpuTopology {
    pub cpu: u32,
    /// `core_id`: CPUs with the same core and package are SMT siblings.
    pub core: i64,
    /// `physical_package_id` (the socket).
    pub package: i64,
    /// CPUs sharing this CPU's core, itself included (`thread_siblings_list`).
    pub siblings: String,
}

/// One execution of a lab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RunInfo {
    pub id: String,
    /// The lab's `name`.
    pub lab: String,
    /// The lab file's full text (the built-in demo's text for `dbdelta run` without a lab).
    pub lab_text: String,
    /// RFC 3339.
    pub started: String,
    /// RFC 3339; `None` while running or when the run was interrupted.
    pub finished: Option<String>,
    /// False until every planned step ran (or failed and was recorded).
    pub complete: bool,
    pub host: HostInfo,
    pub dbdelta_version: String,
    /// Whether `--quick` scaled the run down.
    pub quick: bool,
    /// The lab's `min_effect` (verdicts call nothing smaller a change); `None` for runs stored
    /// before it was recorded (reports then use the default).
    #[serde(default)]
    pub min_effect: Option<f64>,
    /// How many times a `repeats = "auto"` run could look at its steps (its rounds beyond the
    /// first plus 1); `None` for fixed repeats and runs stored before dbdelta recorded it.
    pub looks: Option<u32>,
    /// A profiled run's `perf` settings and status; `None` when profiles were not asked for.
    #[serde(default)]
    pub profiling: Option<Profiling>,
    /// Each `dbdelta run` that worked on the run: the first, then every `--resume`, in order
    /// (empty for runs stored before schema v11 was read back).
    #[serde(default)]
    pub invocations: Vec<Invocation>,
}

/// One `dbdelta run` (or `run --resume`) working on a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Invocation {
    /// 1 for the run that started it, 2 for its first `--resume`, …
    pub number: u32,
    /// RFC 3339.
    pub started: String,
    /// RFC 3339; `None` while running or when this invocation was cut off.
    pub finished: Option<String>,
}

/// How a target's binaries were compiled by `dbdelta build` (absent for fetched, Debian's and
/// user-given builds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct BuildInfo {
    /// The recipe's name: `postgres`, `sqlite`, `mariadb` or `mysql`.
    pub engine: String,
    /// Where the source came from: a Debian source package (`postgresql-15`), a directory or a
    /// tarball.
    pub source: String,
    /// The source's version (Debian's package version, or what the tree says of itself).
    pub source_version: String,
    /// `o2`, `o3`, `os`, `lto`, `pgo`, `pgo+lto` or `custom`.
    pub variant: String,
    pub cflags: String,
    pub ldflags: String,
    /// The configure options the recipe passed beside the flags (CMake's `-D…` for MySQL and
    /// MariaDB); empty for recipes whose flags say it all, and in records made before them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// The compiler's own first line of `--version`.
    pub compiler: String,
    /// Wall-clock seconds of configure + compile + install (all stages of a PGO build, the
    /// training run included).
    pub build_secs: f64,
    /// Size of the `.text` section of the main binary (`postgres`, `libsqlite3.so`, `mariadbd`).
    pub text_bytes: Option<u64>,
    /// PGO only: what the profile was trained on (suite and scale) and where the training run's
    /// lab, results and profile are kept.
    pub training: Option<String>,
    /// The cache key (covers engine, source, variant, flags, compiler and training).
    pub key: String,
    /// The directory the build was installed into.
    pub dir: String,
}

/// What a target's build says of itself, read at run time (`engine::provenance`): the
/// compilers its ELF `.comment` names and the version line the program prints. Empty fields:
/// not readable (the reason is in `unread`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct BinaryProvenance {
    /// The file read: the server program, the SQLite `library`, or `dbdelta` for the SQLite
    /// compiled into it.
    #[serde(default)]
    pub file: Option<String>,
    /// The compilers the `.comment` section names, distinct, in order (`gcc (Debian 12.2.0-14)
    /// 12.2.0`); the C and C++ compilers when it names one, so dbdelta's own `rustc` is left
    /// out of its bundled SQLite's.
    #[serde(default)]
    pub compilers: Vec<String>,
    /// The first line of the program's `--version` (`mariadbd  Ver 10.11.6-MariaDB …`); SQLite:
    /// the library's version and source id.
    #[serde(default)]
    pub version_line: Option<String>,
    /// What could not be read, one line each (`no .comment section`, `--version failed: …`).
    #[serde(default)]
    pub unread: Vec<String>,
    /// The C compiler flags the running server says it was built with (PostgreSQL's
    /// `pg_config` view, `CFLAGS`); `None` where the server does not say (MySQL, MariaDB).
    #[serde(default)]
    pub build_flags: Option<String>,
}

impl BinaryProvenance {
    /// The compilers as one phrase (`None`: none read).
    pub fn compiler(&self) -> Option<String> {
        (!self.compilers.is_empty()).then(|| self.compilers.join(" + "))
    }
}

/// One target (DBMS under test) of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TargetInfo {
    pub name: String,
    /// `sqlite`, `postgres` or `mysql`.
    pub engine: String,
    /// The server's own version string (SQLite: `sqlite_version()`).
    pub server_version: Option<String>,
    /// The config file name given in the lab, if any.
    pub config_name: Option<String>,
    /// The engine settings that were applied, one per line, as given.
    pub config_text: String,
    /// Environment variables set for the target.
    pub env: BTreeMap<String, String>,
    /// Effective settings read back from the engine after start.
    pub settings: BTreeMap<String, String>,
    pub failed: bool,
    /// What failed, one line.
    pub error: Option<String>,
    /// Where the failing server's log is.
    pub log_path: Option<String>,
    /// CPU placement: `os`, `shared`, `split` or `custom` (explicit lists only).
    pub placement: String,
    /// CPUs the server process tree was pinned to (a CPU list); `None`: not pinned, or no
    /// server process (SQLite).
    pub server_cpus: Option<String>,
    /// CPUs every client thread was pinned to; `None`: not pinned.
    pub client_cpus: Option<String>,
    /// How dbdelta compiled the target's binaries, when it did (`build = {…}` in the lab).
    #[serde(default)]
    pub build: Option<BuildInfo>,
    /// A running server dbdelta connected to (`connect`), its URL without the password.
    #[serde(default)]
    pub connect: Option<String>,
    /// Why the server's processes were not measured (a `connect` server not found on this
    /// host); `None` when they were.
    #[serde(default)]
    pub unobserved: Option<String>,
    /// The sweep (`versions` in the lab) this target is one release of; a sweep's targets
    /// stand in release order. `None`: no sweep.
    #[serde(default)]
    pub sweep: Option<String>,
    /// What the target's build says of itself, read when its server first started (`None`:
    /// a run stored before, a running server, another host's).
    #[serde(default)]
    pub provenance: Option<BinaryProvenance>,
    /// What a reader needs to know of the target's engine, from its family: filled when the
    /// record is read from the store or made for a run (`engine::facts`), never by a report.
    #[serde(skip)]
    pub facts: EngineFacts,
}

/// What a report needs to know of a target's engine, which only its family can say: how it is
/// named, and whether it runs inside dbdelta's own process.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EngineFacts {
    /// The family's title (`SQLite`, `PostgreSQL`).
    pub title: String,
    /// The engine runs inside dbdelta's own process (its CPU is dbdelta's).
    pub embedded: bool,
    /// The product as a reader names it (`mariadb`, `mariadb (myrocks)`, `postgres`).
    pub product: String,
}

/// The load phase of one target × clients × repeat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadResult {
    pub target: String,
    pub suite: String,
    pub clients: u32,
    pub repeat: u32,
    pub tables: u32,
    pub rows_per_table: u64,
    /// Seconds spent inserting all rows of all tables.
    pub load_secs: f64,
    /// All rows / `load_secs`.
    pub rows_per_sec: Option<f64>,
    /// Seconds spent building the secondary indexes.
    pub index_secs: f64,
    /// Logical database size after the load and index build.
    pub db_size_bytes: Option<u64>,
    /// The load was copied from a saved one (`reuse_load`): its name and when it was saved;
    /// `load_secs` is then the copy's seconds, and no rows/s or index time is claimed.
    #[serde(default)]
    pub reused: Option<String>,
}

/// Latency distribution of one step's events, in µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Latency {
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

/// Errors with one engine code (e.g. `SQLSTATE 23505`, `MySQL error 1062 (23000)`,
/// `SQLite code 5`) in one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCodeCount {
    pub code: String,
    pub count: u64,
}

/// Errors of one step, by kind (a driver classifies each error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ErrorCounts {
    pub retryable: u64,
    pub reconnect: u64,
    pub fatal: u64,
}

impl ErrorCounts {
    /// Saturating: a stored count is data and may be anything (the `store_read` fuzzer's).
    pub fn total(&self) -> u64 {
        (self.retryable)
            .saturating_add(self.reconnect)
            .saturating_add(self.fatal)
    }
}

/// `dbdelta explain`'s answer for one counted step of a target against its base, from
/// instructions/op: `ratio` (target / base) = `code` (the twin, the target with the base's
/// settings, / base) × `config` (target / twin), and the settings the bisection found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StepExplanation {
    pub base: String,
    /// Target / base instructions/op, as the run counted them.
    pub ratio: f64,
    /// Twin / base: what the code explains.
    pub code: f64,
    /// Target / twin: what the settings explain.
    pub config: f64,
    /// The settings that explain `config`, largest first (empty: it stayed under
    /// `min_effect`, so there was nothing to bisect).
    pub settings: Vec<SettingEffect>,
    /// The twins counted for the whole explanation (each a target of `twin_run`).
    pub twins: u32,
    /// The stored run holding the twins' counts.
    pub twin_run: String,
    /// Settings that differ but could not be carried over, each with the reason.
    pub left_out: Vec<String>,
}

impl StepExplanation {
    /// [`StepExplanation::left_out`] (each `key (reason)`) grouped by reason, `(reason, keys)`,
    /// in the order the reasons first appear.
    pub fn left_out_by_reason(&self) -> Vec<(String, Vec<String>)> {
        let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
        for entry in &self.left_out {
            let (key, why) = (entry.strip_suffix(')'))
                .and_then(|e| e.split_once(" ("))
                .unwrap_or((entry, "no reason given"));
            match reasons.iter_mut().find(|(w, _)| *w == why) {
                Some((_, keys)) => keys.push(key),
                None => reasons.push((why, vec![key])),
            }
        }
        (reasons.into_iter())
            .map(|(why, keys)| {
                (
                    why.to_string(),
                    keys.into_iter().map(String::from).collect(),
                )
            })
            .collect()
    }
}

/// The name of a twin of target `target` in `dbdelta explain`'s twins' run: `T-again` (T
/// counted again, nothing changed; `number` none) or `T-twinN`. A twin runs T's build, so what
/// is said of T's build is said of it ([`twin_of`]).
pub fn twin_name(target: &str, number: Option<usize>) -> String {
    match number {
        None => format!("{target}-again"),
        Some(n) => format!("{target}-twin{n}"),
    }
}

/// The target a twin's name ([`twin_name`]) copies, when the name is one.
pub fn twin_of(name: &str) -> Option<&str> {
    if let Some(t) = name.strip_suffix("-again") {
        return Some(t);
    }
    let (t, n) = name.rsplit_once("-twin")?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(t)
}

/// One setting and how much of a step's change it explains (target / twin with only it set
/// to the base's value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SettingEffect {
    pub key: String,
    pub base: Option<String>,
    pub target: Option<String>,
    pub explains: f64,
}

/// A counted step's per-function instructions per operation, from the same pairs of passes as
/// its instructions/op (callgrind's function costs of the long pass minus the short one's,
/// divided by the operations between them): the pass's own statements (`foreground`) and the
/// server's background work during the passes (`background`, per operation of the long pass,
/// as its total is; empty for an in-process engine). Each list holds every function whose self
/// cost is at least [`StepFunctions::SHARE`] of the step's instructions or whose inclusive cost
/// is at least [`StepFunctions::INCLUSIVE_SHARE`], largest self cost first, and one row
/// `(other)` with the rest of the self costs summed. `calls` are the foreground's calls between
/// functions whose inclusive cost per operation is at least [`StepFunctions::SHARE`] of the
/// step's instructions (a report draws its call tree from them); a run counted before dbdelta
/// kept them has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StepFunctions {
    pub foreground: Vec<FunctionCost>,
    pub background: Vec<FunctionCost>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallCost>,
}

/// The calls from one function to another during a step: their inclusive instructions per
/// operation (the callee's and everything it called), means over the pass pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallCost {
    pub caller: String,
    pub callee: String,
    pub inclusive: f64,
}

impl StepFunctions {
    /// The least share of a step's instructions a function's self cost needs for a row of its
    /// own: small, so that a function that changed is rarely under it on one side only.
    pub const SHARE: f64 = 0.001;
    /// The least share of a step's instructions its inclusive cost can keep a function by.
    pub const INCLUSIVE_SHARE: f64 = 0.005;
    /// The name of the row that sums the functions below [`StepFunctions::SHARE`].
    pub const OTHER: &'static str = "(other)";
}

/// One function's instructions per operation of a step: its own (callgrind's self cost) and
/// with its callees' (`inclusive`; `None` for the `(other)` row), means over the pass pairs,
/// and half the range of its own over the pairs (`spread`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCost {
    pub name: String,
    #[serde(rename = "self")]
    pub own: f64,
    pub spread: f64,
    pub inclusive: Option<f64>,
}

/// Instructions per unit of one operation type counted on its own in the counting pass: a
/// role other than the step's counted one (the Insert Benchmark's deleter, its query steps'
/// inserter), or one type of a request mix (LinkBench's). The step's own count is the
/// measurement's `server_instructions_per_op`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpInstructions {
    /// The server's foreground instructions per unit (mean over the pairs of passes) and half
    /// their range.
    pub server: f64,
    pub spread: f64,
    /// The server's background work per unit during the passes and half its range (`None`:
    /// an in-process engine).
    pub background: Option<f64>,
    pub background_spread: Option<f64>,
    /// The client's instructions per unit (`None`: in-process, counted with the engine).
    pub client: Option<f64>,
    /// Each pair's foreground value, seeded alike on every target.
    pub pairs: InstructionPairs,
}

/// One measured step of one target × clients × repeat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Measurement {
    pub target: String,
    /// `sysbench` for now.
    pub suite: String,
    /// Catalog label, e.g. `point-query`, `read-only_range=10`.
    pub step: String,
    /// Position of the step in the suite's order (0-based), for stable ordering in reports.
    pub step_index: u32,
    /// Report group id: `point`, `range-noagg`, `range-agg`, `writes`.
    pub group: String,
    /// Statements per event (the QPS counting rule: BEGIN and COMMIT count).
    pub statements_per_event: u32,
    pub clients: u32,
    pub repeat: u32,
    /// Scale the step ran at (compare refuses to mix scales).
    pub tables: u32,
    pub rows_per_table: u64,
    /// Measured seconds (warm-up excluded), as timed by the runner.
    pub seconds: f64,
    /// Statements completed in the measured period (ops = events × statements_per_event).
    pub ops: u64,
    /// Events (transactions) completed in the measured period.
    pub events: u64,
    pub errors: ErrorCounts,
    /// ops / seconds.
    pub qps: Option<f64>,
    /// events / seconds.
    pub tps: Option<f64>,
    /// Event latency; `None` when no event completed.
    pub latency_us: Option<Latency>,
    /// Costs per operation, peaks, size, rows per event and scan rate: one value per row of the
    /// metric table ([`metrics::METRICS`]), under its id.
    #[serde(flatten)]
    pub values: Values,
    /// Ids of the metrics whose counters could not cover the step (`sampler::CpuWindow`: a CPU
    /// window that missed part of the operations or was too short for the clock tick): below
    /// resolution, `None` in `values`, never a number.
    #[serde(default)]
    pub below_resolution: Vec<String>,
    /// A warm-up step (`point-query.warm`, `scan.warm`, ...): stored so the executed order is
    /// visible, never reported.
    pub warm: bool,
    /// Rows returned or changed per execution of each statement of the event, in event order
    /// (known under the same condition as the `rows_per_event` metric).
    pub rows_per_statement: Option<Vec<f64>>,
    /// The counting pass's foreground instructions/op of each pair of passes (on the row that
    /// holds `server_instructions_per_op`).
    pub instruction_pairs: Option<InstructionPairs>,
    /// The counting pass's per-function instructions/op (on the same row as
    /// `instruction_pairs`; `None` where the step was not counted, or before they were stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub functions: Option<StepFunctions>,
    /// `dbdelta explain`'s split of this step's change against the base into code and
    /// configuration (on the same row as `functions`; `None` until explained).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<StepExplanation>,
    /// The client may have been the bottleneck: the number measures dbdelta as much as the DBMS.
    pub client_bound: bool,
    /// CPUs the server's threads were seen running on (`/proc/PID/task/TID/stat` field
    /// `processor`, sampled at the measured period's boundaries and every second), as a CPU
    /// list; `None` for SQLite (no server process).
    pub server_cpus_seen: Option<String>,
    /// Union of the affinity masks of the server's threads over the same samples.
    pub server_cpus_allowed: Option<String>,
    /// CPUs dbdelta's client threads were seen running on (for SQLite: where the engine ran).
    pub client_cpus_seen: Option<String>,
    /// Union of the client threads' affinity masks.
    pub client_cpus_allowed: Option<String>,
    /// Low concurrency whose client and server spent most of each query asleep waiting for
    /// each other across CPUs (`cpus::wakeup_bound`): the number measures wake-ups.
    pub wakeup_bound: bool,
    /// How the step's length was decided: `fixed` or `adaptive`.
    pub duration_rule: String,
    /// Adaptive steps: the target relative half-width of the 95% CI of the per-second mean QPS.
    pub precision_target: Option<f64>,
    /// That half-width as achieved, computed from the stored per-second series with
    /// `stats::series_precision` (fixed steps too); `None` with fewer than 3 whole seconds or
    /// fewer than 2 effectively independent ones.
    pub precision_achieved: Option<f64>,
    /// How the measured period ended: `deadline` (fixed length), `quota` (every role with a
    /// quota met it), `precision` (adaptive, target reached) or `max` (adaptive, ran to its
    /// maximum).
    pub stop_reason: Option<String>,
    /// The step did not complete; `error` says why.
    pub failed: bool,
    pub error: Option<String>,
    /// Every operation type of every role (schema v2). A sysbench step has one, its event;
    /// an Insert Benchmark query step has the querier's, the inserter's and the deleter's.
    #[serde(default)]
    pub operations: Vec<OpMeasurement>,
    /// The measured period's CPU profile, in a profiled run (`None`: the step was not
    /// profiled).
    #[serde(default)]
    pub profile: Option<StepProfile>,
    /// Which invocation of `dbdelta run` measured it (1: the first; more: a `--resume`; 0:
    /// not known).
    #[serde(default)]
    pub invocation: u32,
    /// The idle probe before the cell's first step (the settling guard): what the server did
    /// with no client work after the load's postwrite. The same for every step of the cell;
    /// `None` when no probe ran (SQLite, a counting pass, a store before schema v14).
    #[serde(default)]
    pub settling: Option<Settling>,
}

/// The idle probe of a server after the load's postwrite and before the first measured step:
/// its own background work with no client connected, and the verdict of the settling rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Settling {
    /// The rule found the server still settling: its steps were measured while it worked.
    pub settling: bool,
    /// Why, one clause per piece of evidence over its threshold (empty when settled).
    pub reasons: Vec<String>,
    /// The server's process name (`mysqld`, `postgres`), for messages.
    pub process: String,
    /// Length of the probe, seconds.
    pub probe_secs: f64,
    /// The postwrite budget that preceded the probe, seconds.
    pub postwrite_secs: f64,
    /// The server's own CPU time over the probe, as a share of one core.
    pub cpu_share: Option<f64>,
    /// The server's own bytes written (`/proc/PID/io` `write_bytes`) per second of the probe.
    pub write_bytes_per_sec: Option<f64>,
    /// InnoDB: `Innodb_buffer_pool_pages_dirty` at the probe's start and end.
    pub dirty_pages_start: Option<u64>,
    pub dirty_pages_end: Option<u64>,
    /// InnoDB: the undo history list length (purge backlog) at the probe's end.
    pub history_length: Option<u64>,
    /// PostgreSQL: autovacuum workers running at the probe's end.
    pub autovacuum_workers: Option<u64>,
    /// PostgreSQL: buffers the checkpointer and background writer wrote during the probe.
    pub buffers_written: Option<u64>,
    /// Seconds until the dirty pages are gone at the drain rate seen, when they were draining;
    /// `None`: no estimate can be made (the report then names the postwrite budget instead).
    pub wait_secs: Option<f64>,
}

impl Settling {
    /// Dirty pages written out per second during the probe (> 0: draining).
    pub fn drain_per_sec(&self) -> Option<f64> {
        let (a, b) = (self.dirty_pages_start?, self.dirty_pages_end?);
        (self.probe_secs > 0.0).then(|| (a as f64 - b as f64) / self.probe_secs)
    }
}

/// Where a finished cell's wall time went (stored with the cell as `phases_json`): what
/// `dbdelta plan` calibrates its estimate from on the same host. Seconds of wall time;
/// a phase the cell did not have is 0. Stored from schema v21 on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct CellPhases {
    /// The whole cell: data directory to data directory removed.
    pub secs: f64,
    /// A counting cell (repeat 0 of a run with `--instructions`): only `secs`, `steps` and
    /// `passes` are filled.
    pub counting: bool,
    /// Starting and stopping the server.
    pub server_secs: f64,
    /// The load and its index build (or copying a saved load).
    pub load_secs: f64,
    /// Rows the load wrote.
    pub rows: u64,
    /// Every postwrite cleanup and the wait for the server to settle after it.
    pub postwrite_secs: f64,
    /// How many postwrites, and the budget each waited out.
    pub postwrites: u32,
    pub postwrite_budget_secs: f64,
    /// The idle probe before the first measured step.
    pub probe_secs: f64,
    /// Every step, wall time (warm-up, measured period, sampling and storing).
    pub steps_secs: f64,
    /// Steps run, and the warm-up and measured seconds the plan gave them.
    pub steps: u32,
    pub planned_steps_secs: f64,
    /// A counting cell's pass pairs per step (`instruction_passes`) and cells at once.
    pub passes: u32,
    pub jobs: u32,
    /// A counting cell's server starts (`instruction_starts`, at most `passes`); 0: stored
    /// before starts were spread, one.
    pub starts: u32,
}

/// A stored cell's phases with its target's engine (`EngineKind::name`) and its suite.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredPhases {
    pub engine: String,
    pub suite: String,
    pub phases: CellPhases,
}

/// What a profiled run asked of `perf`, and whether it could be used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Profiling {
    /// Samples per second of CPU time of each profiled thread.
    pub hz: u32,
    /// `dwarf` or `fp`.
    pub call_graph: String,
    /// `perf version ...` when it could record.
    pub perf: Option<String>,
    /// Recorded every CPU and kept the engine's samples (else attached to its tasks).
    #[serde(default)]
    pub system_wide: bool,
    /// Why there are no profiles (no `perf` on PATH, no permission); `None` when it could
    /// record.
    pub unavailable: Option<String>,
}

/// One step's CPU profile: the engine's folded stacks over the measured period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StepProfile {
    /// Samples in `folded`.
    pub samples: u64,
    /// Samples whose leaf frame has no symbol (perf named only its module).
    pub unresolved: u64,
    /// Modules of those frames, most samples first (`postgres`, `libc.so.6`).
    pub unresolved_modules: Vec<String>,
    /// Inferno's folded format: `root;...;leaf count` per line, counts in samples.
    pub folded: String,
    /// Why this step has no profile (the recording or folding failed); `None` otherwise.
    pub error: Option<String>,
}

/// The serialized HDR histograms of one operation type (V2 deflate, as `measurements.histogram`):
/// service time, and for paced roles response time from the intended start (empty otherwise).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OpHistograms {
    pub service: Vec<u8>,
    pub response: Vec<u8>,
}

/// One operation type of one role of a step, merged over its clients (schema v2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct OpMeasurement {
    /// `client` (sysbench), `inserter`, `deleter`, `querier`, `indexer`.
    pub role: String,
    /// The operation type, e.g. `insert`, `range`, or a sysbench step's label.
    pub op: String,
    /// `closed` (as fast as it can), `rate` (an absolute schedule) or `follow` (after another
    /// role's operations).
    pub pacer: String,
    /// Whether the step's QPS, latency, series and per-op costs count these operations.
    pub counted: bool,
    /// Operations completed in the measured period.
    pub operations: u64,
    /// What they count: statements (sysbench), rows inserted or deleted, queries.
    pub units: u64,
    /// Rows they returned or changed.
    pub rows: u64,
    pub errors: ErrorCounts,
    /// The errors by the engine's own code, most frequent first (those without a code, such
    /// as a lost connection, and codes past the first eight seen are not listed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_codes: Vec<ErrorCodeCount>,
    /// Measured operations and units per second.
    pub ops_per_sec: Option<f64>,
    pub units_per_sec: Option<f64>,
    /// `rate` roles: the operations per second the schedule asked for, over all clients.
    pub target_ops_per_sec: Option<f64>,
    /// Service time (start to end) of each operation, µs.
    pub latency_us: Option<Latency>,
    /// `rate` roles: response time from each operation's intended start, µs.
    pub response_us: Option<Latency>,
    /// The whole step's totals divided by this type's units (the reference's per-insert and
    /// per-query costs: all of the step's work charged to each type in turn, not this type's
    /// own share): server CPU µs, context switches, device KB read and written.
    pub step_server_cpu_us_per_unit: Option<f64>,
    pub step_cs_per_unit: Option<f64>,
    #[serde(default)]
    pub step_read_kb_per_unit: Option<f64>,
    #[serde(default)]
    pub step_write_kb_per_unit: Option<f64>,
    /// Units that ended in each whole second of the measured period.
    pub series: Vec<u64>,
    /// This type counted on its own in the counting pass (see [`OpInstructions`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<OpInstructions>,
}

impl OpMeasurement {
    /// The share of its target rate a `rate` role achieved (`None` for unpaced roles).
    pub fn target_share(&self) -> Option<f64> {
        let target = self.target_ops_per_sec.filter(|t| *t > 0.0)?;
        Some(self.ops_per_sec.unwrap_or(0.0) / target)
    }
}

/// One second of a step's measured period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondSample {
    pub target: String,
    pub step: String,
    pub clients: u32,
    pub repeat: u32,
    /// 0-based second of the measured period.
    pub second: u32,
    pub ops: u64,
    /// p99 event latency in that second, µs; `None` when no event completed in it.
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
}

/// Everything the store holds about one run: the input of every report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RunData {
    pub run: RunInfo,
    /// In lab order; the first one is the default base.
    pub targets: Vec<TargetInfo>,
    pub loads: Vec<LoadResult>,
    /// In execution order.
    pub measurements: Vec<Measurement>,
    pub series: Vec<SecondSample>,
    /// The floors the store holds for the builds of the run's targets (`dbdelta calibrate`),
    /// per target and step; empty where none was measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub floors: Vec<floors::StepFloor>,
}
