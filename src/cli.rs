//! The command line (clap derive) and what each command does, as a table of contents:
//! parse → plan → run → report.
//!
//! Owns flag definitions, reading the lab file or choosing the demo, terminal decisions
//! (colour, progress mode), what a terminating signal does and exit codes. Must not: measure, render or
//! touch SQL itself; it calls `plan`, `runner`, `store` and `report`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::engine::EngineKind;
use crate::error::{EXIT_FAILED, EXIT_INTERRUPTED, InputError};
use crate::plan::{self, RunOptions};
use crate::progress::{Mode, Progress};
use crate::provision::Product;
use crate::range;
use crate::report::{self, Format};
use crate::store::Store;

/// Find the performance delta between database versions, builds and configurations.
#[derive(Debug, Parser)]
#[command(name = "dbdelta", version, about, propagate_version = true)]
pub struct Cli {
    /// Results store of the commands that read or write one (run, report, compare, history,
    /// list runs and targets, profile, store push); also accepted after the command.
    #[arg(long, value_name = "PATH|URL")]
    pub store: Option<PathBuf>,
    /// Print no progress, only results and errors (run, fetch, build; also accepted after the
    /// command).
    #[arg(short, long)]
    pub quiet: bool,
    /// Print more detail while running (run, fetch, build; also accepted after the command).
    #[arg(short, long, conflicts_with = "quiet")]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// `--store`, on the commands that read or write a results store.
#[derive(Debug, Clone, Args)]
pub struct StoreArg {
    /// Results store: an SQLite file (created by `run` when missing; default dbdelta.db), or a
    /// PostgreSQL database shared by several runs or machines, e.g.
    /// postgres://user@host:5432/dbdelta.
    #[arg(long, value_name = "PATH|URL")]
    pub store: Option<PathBuf>,
}

/// `-q`/`-v`, on the commands that print progress.
#[derive(Debug, Clone, Args)]
pub struct Verbosity {
    /// Print no progress, only results and errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print more detail while running.
    #[arg(short, long, conflicts_with = "quiet")]
    pub verbose: bool,
}

/// The store when neither `--store` names one.
const DEFAULT_STORE: &str = "dbdelta.db";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a lab (without LAB: a built-in demo on embedded SQLite), then print its report.
    Run(RunArgs),
    /// Print what a run of the lab would do (as `run --dry-run`), or with `--emit k8s` write it
    /// as Kubernetes Jobs, one per target × clients × repeat.
    Plan(PlanArgs),
    /// Print the report of a stored run (default: the latest).
    Report(ReportArgs),
    /// Compare the same steps across two stored runs: RUN_B relative to RUN_A.
    Compare(CompareArgs),
    /// Every stored run of a lab over time, per target × step, with the change points found
    /// in each series, e.g. `dbdelta history --lab nightly --metric cpu`.
    History(HistoryArgs),
    /// List what the store holds, or the step catalog.
    List(ListArgs),
    /// Download, verify and cache a server build, e.g. `dbdelta fetch mysql@8.0`.
    Fetch(FetchArgs),
    /// Compile an engine from source with a variant's flags into the cache and print the path a
    /// lab's `bin` (servers) or `library` (SQLite) takes, e.g.
    /// `dbdelta build postgres --source postgresql-15 --variant lto`.
    Build(BuildArgs),
    /// Find the first of the lab's targets (in lab order) whose step or group left the first
    /// target's level, measuring O(log n) of them into one run, e.g. `dbdelta bisect lab.toml
    /// --step point-query`.
    Bisect(BisectArgs),
    /// Split a stored run's counted change of a target into code and configuration, and find
    /// the settings behind it with twins of the target counted by instructions, e.g.
    /// `dbdelta explain latest --target my97 --step hot-points`.
    Explain(crate::explain::ExplainArgs),
    /// Write a profiled step's flame graphs and folded profiles (per target, and each compared
    /// target against its base) into a directory, e.g. `dbdelta profile latest hot-points`.
    Profile(ProfileArgs),
    /// Write a commented lab file to start from (default lab.toml; an existing file is never
    /// overwritten), e.g. `dbdelta init --engine postgres pg.toml`.
    Init(InitArgs),
    /// Remove the data directories interrupted runs left in the work directory (only run
    /// directories dbdelta marked as its own, of runs no dbdelta works on any more).
    Clean(CleanArgs),
    /// Serve a local web page over the store (runs, reports, flame graphs, history charts),
    /// read-only and on loopback only, until Ctrl-C, e.g. `dbdelta serve --port 7480`.
    Serve(ServeArgs),
    /// Copy runs between results stores, e.g. `dbdelta store push latest --to
    /// postgres://user@host/dbdelta`.
    Store(StoreArgs),
    /// The side of a remote target (`host = "ssh://…"`) that runs on its host: started there
    /// by dbdelta over SSH, it answers JSON requests on stdin. Not for people.
    #[command(hide = true)]
    Agent,
    /// The client of an instruction-counting pass, run by `dbdelta run` under valgrind: it
    /// answers JSON requests on stdin. Not for people.
    #[command(hide = true)]
    CountClient,
}

/// The metric `bisect` decides by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BisectMetric {
    /// Instructions/op of a counting pass under callgrind: deterministic, a verdict from one
    /// repeat (as `instructions = true`).
    Instructions,
    /// Server CPU/op, judged over paired repeats (repeats >= 2).
    Cpu,
    /// QPS, judged over paired repeats (repeats >= 2).
    Qps,
}

#[derive(Debug, Args)]
pub struct BisectArgs {
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub verbosity: Verbosity,
    /// Lab file (TOML) whose targets, in lab order, are the sequence bisected (at least two;
    /// the sequence is assumed to change at most once, for good).
    #[arg(required_unless_present = "show")]
    pub lab: Option<PathBuf>,
    /// The step(s) judged, as --only takes them (a label or glob), e.g. point-query.
    #[arg(long, value_name = "STEP_GLOB", required_unless_present_any = ["group", "show"], conflicts_with = "group")]
    pub step: Option<String>,
    /// The report group whose steps are judged (e.g. reads), instead of --step.
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,
    /// What decides: instructions (default when the lab has `instructions = true`), cpu
    /// (server CPU/op; the default otherwise) or qps.
    #[arg(long, value_enum, value_name = "METRIC")]
    pub metric: Option<BisectMetric>,
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Where data directories are created.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_WORKDIR)]
    pub workdir: PathBuf,
    /// Keep data directories after the run.
    #[arg(long)]
    pub keep: bool,
    /// Name the run (unique in the store).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Tag the run (repeatable).
    #[arg(long, value_name = "TAG")]
    pub tag: Vec<String>,
    /// Print the answer of a stored bisection (a run id, name, `latest` or `previous`) and
    /// run nothing.
    #[arg(long, value_name = "RUN", conflicts_with_all = ["lab", "step", "group", "metric"])]
    pub show: Option<String>,
}

#[derive(Debug, Args)]
pub struct StoreArgs {
    #[command(subcommand)]
    pub command: StoreCommand,
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Copy one run of --store (every row of it, in one transaction) into the store --to;
    /// a run that is already there is refused.
    Push(PushArgs),
}

#[derive(Debug, Args)]
pub struct PushArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Run id, name (`run --name`), `latest` or `previous`.
    pub run: String,
    /// The store the run is copied into: a postgres:// URL or an SQLite file (created and
    /// migrated when missing).
    #[arg(long, value_name = "PATH|URL")]
    pub to: PathBuf,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The port to listen on (0: any free one; the URL printed says which).
    #[arg(long, default_value_t = crate::serve::DEFAULT_PORT)]
    pub port: u16,
    /// The address to listen on: a loopback address only (127.0.0.1, ::1 or localhost).
    #[arg(long, default_value = "127.0.0.1")]
    pub addr: String,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The lab file to write.
    #[arg(value_name = "FILE", default_value = "lab.toml")]
    pub file: PathBuf,
    /// The targets' engine: sqlite (default: runs anywhere, nothing to install), postgres,
    /// mysql or mariadb (Debian's packages unless you add `version` or `bin`).
    #[arg(long, value_enum, default_value_t = crate::plan::template::Engine::Sqlite)]
    pub engine: crate::plan::template::Engine,
}

#[derive(Debug, Args)]
pub struct CleanArgs {
    /// The work directory to clean.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_WORKDIR)]
    pub workdir: PathBuf,
    /// Only list what would be removed.
    #[arg(long)]
    pub dry_run: bool,
    /// Also stop a server an interrupted run left running there (else such a directory is
    /// kept and named).
    #[arg(long)]
    pub stop: bool,
    /// Also remove the saved loads of `reuse_load` in DIR (default: `<workdir>/snapshots`):
    /// only dbdelta's snapshots and its own unfinished saves; DIR and anything else in it are
    /// kept.
    #[arg(long, value_name = "DIR", num_args = 0..=1)]
    pub snapshots: Option<Option<PathBuf>>,
}

#[derive(Debug, Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Run id, name (`run --name`), `latest` or `previous`.
    pub run: String,
    /// A profiled step's label, e.g. hot-points.
    pub step: String,
    /// Only this target (and its differential against its base).
    #[arg(long, value_name = "TARGET")]
    pub target: Option<String>,
    /// Target the others are compared against (default: the run's first target).
    #[arg(long, value_name = "TARGET")]
    pub base: Option<String>,
    /// Directory the files go to (created when missing).
    #[arg(short, long, value_name = "DIR", default_value = "profiles")]
    pub output: PathBuf,
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub verbosity: Verbosity,
    /// postgres, sqlite or mariadb.
    pub engine: String,
    /// A Debian source package (postgresql-15, sqlite3, mariadb; `name=VERSION` for one
    /// version), a source directory or a tarball. Default for sqlite: Debian's sqlite3.
    #[arg(long, value_name = "SOURCE")]
    pub source: Option<String>,
    /// o2, o3, os, lto, pgo, pgo+lto or custom (only --cflags/--ldflags).
    #[arg(long, default_value = "o2")]
    pub variant: String,
    /// Compiler flags added after the variant's.
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub cflags: Option<String>,
    /// Linker flags added after the variant's.
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub ldflags: Option<String>,
    /// PGO: the suite the profile is trained on (sysbench, insert or linkbench).
    #[arg(long, value_name = "SUITE", default_value = "sysbench")]
    pub train: String,
    /// PGO: the training run's scale (quick or small).
    #[arg(long, value_name = "SCALE", default_value = "small")]
    pub train_scale: String,
}

#[derive(Debug, Args)]
pub struct FetchArgs {
    #[command(flatten)]
    pub verbosity: Verbosity,
    /// What to fetch: postgres@VERSION (17, 17.10 or an exact build like 17.10.0-beta.17),
    /// mysql@VERSION (Oracle MySQL: 5.6, 5.7, 8.0 or exact, e.g. 8.0.31) or mariadb@VERSION
    /// (10.2, 10.11, 11.4 or exact); `dbdelta list versions` shows them.
    pub what: String,
}

/// The flags that shape a plan, shared by `run` and `plan`.
#[derive(Debug, Clone, Args)]
pub struct ShapeArgs {
    /// Tiny scale and sub-second steps (at most 0.1 s warm-up + 0.3 s; Insert Benchmark and
    /// LinkBench steps of about 1 s), for demos and tests.
    #[arg(long)]
    pub quick: bool,
    /// Run only steps matching these globs (comma-separated and/or repeated), e.g.
    /// --only 'point-*,hot-points'.
    #[arg(long, value_name = "STEP_GLOB")]
    pub only: Vec<String>,
    /// Skip steps matching these globs (comma-separated and/or repeated).
    #[arg(long, value_name = "STEP_GLOB")]
    pub skip: Vec<String>,
    /// Client counts to sweep, each from 1 to 10000, e.g. 1,4,16 (overrides the lab; each
    /// client is one connection on its own thread, sysbench's --threads).
    #[arg(long, value_name = "LIST", visible_alias = "threads")]
    pub clients: Option<String>,
    /// Repeats per target, from 1 to 1000 (overrides the lab; ≥ 2 enables verdicts); a plan
    /// has at most 10000 cells (targets × client counts × repeats).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(range::REPEATS.min..=range::REPEATS.max))]
    pub repeats: Option<u32>,
    /// Rows per table of the sysbench suite, from 200 (overrides the lab and --quick).
    #[arg(long, value_name = "N")]
    pub rows: Option<u64>,
    /// Tables of the sysbench suite, from 1 to 1000 (overrides the lab and --quick).
    #[arg(long, value_name = "N")]
    pub tables: Option<u32>,
    /// Measured seconds of every step with a set length: sysbench's read and write steps, the
    /// Insert Benchmark's query steps, LinkBench's request steps (overrides the lab and
    /// --quick; warm-ups and loads keep theirs).
    #[arg(long, value_name = "SECS")]
    pub time: Option<f64>,
}

/// Where `run` creates data directories unless `--workdir` says otherwise.
const DEFAULT_WORKDIR: &str = "dbdelta-work";

impl ShapeArgs {
    /// The same flags as `dbdelta run` arguments (what every emitted Job passes on).
    fn to_flags(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.quick {
            out.push("--quick".to_string());
        }
        let lists = [("--only", &self.only), ("--skip", &self.skip)];
        for (flag, values) in lists {
            for v in values {
                out.extend([flag.to_string(), v.clone()]);
            }
        }
        if let Some(c) = &self.clients {
            out.extend(["--clients".to_string(), c.clone()]);
        }
        let numbers = [
            ("--repeats", self.repeats.map(|v| v.to_string())),
            ("--rows", self.rows.map(|v| v.to_string())),
            ("--tables", self.tables.map(|v| v.to_string())),
            ("--time", self.time.map(|v| v.to_string())),
        ];
        for (flag, value) in numbers {
            if let Some(v) = value {
                out.extend([flag.to_string(), v]);
            }
        }
        out
    }

    /// The plan options these flags give, with `run`'s default work directory (where the
    /// disk estimate is checked).
    pub fn options(&self) -> RunOptions {
        RunOptions {
            workdir: PathBuf::from(DEFAULT_WORKDIR),
            quick: self.quick,
            only: self.only.clone(),
            skip: self.skip.clone(),
            clients: self.clients.clone(),
            repeats: self.repeats,
            rows: self.rows,
            tables: self.tables,
            time: self.time,
            ..RunOptions::default()
        }
    }
}

/// The flags of `run` beyond the shape that change its plan (what it measures, its time or
/// its disk estimate), shared with `plan` so that it plans what `run` would run.
#[derive(Debug, Clone, Args)]
pub struct HowArgs {
    /// Run only this cell of the plan, TARGET:CLIENTS:REPEAT (e.g. pg17:4:2): what one
    /// Kubernetes Job of `dbdelta plan --emit k8s` runs.
    #[arg(long, value_name = "TARGET:CLIENTS:REPEAT")]
    pub cell: Option<String>,
    /// Keep data directories after the run.
    #[arg(long)]
    pub keep: bool,
    /// Record a CPU profile (perf, cpu-clock) of every measured step, e.g. with --only
    /// hot-points; the report then shows where each target spends its CPU per operation.
    #[arg(long)]
    pub profile: bool,
    /// Count every step's instructions per operation in a counting pass under valgrind's
    /// callgrind after the timed steps (as the lab's `instructions = true`): a cost host noise
    /// cannot move, with verdicts from one repeat.
    #[arg(long)]
    pub instructions: bool,
    /// Where data directories are created.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_WORKDIR)]
    pub workdir: PathBuf,
    /// Start each cell from a saved copy of its load (the lab's `reuse_load = true`): a
    /// matching snapshot is copied instead of loading; without one, the load is saved.
    #[arg(long)]
    pub reuse_load: bool,
    /// Where `--reuse-load` keeps its snapshots (default: `<workdir>/snapshots`).
    #[arg(long, value_name = "DIR")]
    pub snapshots: Option<PathBuf>,
}

impl HowArgs {
    /// The plan options of these flags and the shape's (the fuzz target `cli_parse` plans
    /// with them).
    pub fn options(&self, shape: &ShapeArgs) -> RunOptions {
        RunOptions {
            keep: self.keep,
            workdir: self.workdir.clone(),
            profile: self.profile,
            instructions: self.instructions,
            cell: self.cell.clone(),
            reuse_load: self.reuse_load,
            snapshots: self.snapshots.clone(),
            ..shape.options()
        }
    }

    /// The flags every emitted Job passes on to `dbdelta run` (where data directories go is
    /// the node's business).
    fn to_flags(&self) -> Vec<String> {
        let set = [
            ("--profile", self.profile),
            ("--instructions", self.instructions),
            ("--reuse-load", self.reuse_load),
        ];
        (set.iter())
            .filter(|(_, on)| *on)
            .map(|(f, _)| f.to_string())
            .collect()
    }
}

impl RunArgs {
    /// The plan options of a `run` command line (the fuzz target `cli_parse` plans with them).
    pub fn options(&self) -> RunOptions {
        self.how.options(&self.shape)
    }
}

/// What `plan --emit` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// Kubernetes: a ConfigMap with the lab and one Job per target × clients × repeat.
    K8s,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Lab file (TOML). Without it, the built-in demo lab.
    pub lab: Option<PathBuf>,
    /// The results store whose earlier cells on this host calibrate the time estimate
    /// (read only; default dbdelta.db when it exists).
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub how: HowArgs,
    /// Write the plan as manifests instead of describing it: `k8s` writes a ConfigMap holding
    /// the lab and one Kubernetes Job per cell (each runs `dbdelta run --cell`).
    #[arg(long, value_enum, value_name = "KIND", conflicts_with = "cell")]
    pub emit: Option<Emit>,
    /// With --emit k8s: the container image with dbdelta and the lab's engines (required).
    #[arg(long, value_name = "IMAGE", requires = "emit")]
    pub image: Option<String>,
    /// With --emit k8s: the label of the nodes benchmarks may run on (also tolerated as a
    /// NoSchedule taint key).
    #[arg(long, value_name = "KEY=VALUE", requires = "emit")]
    pub node_label: Option<String>,
    /// With --emit k8s: the Secret whose key `url` holds the shared results store (`--store`).
    #[arg(
        long,
        value_name = "NAME",
        default_value = "dbdelta-store",
        requires = "emit"
    )]
    pub store_secret: String,
    /// With --emit k8s: memory each pod requests and is limited to (a Kubernetes quantity).
    #[arg(
        long,
        value_name = "QUANTITY",
        default_value = "4Gi",
        requires = "emit"
    )]
    pub memory: String,
    /// Write to FILE instead of standard output (whole or not at all).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub verbosity: Verbosity,
    /// Lab file (TOML). Without it, the built-in demo lab runs (about two minutes).
    pub lab: Option<PathBuf>,
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub how: HowArgs,
    /// Name the run (unique in the store; `report NAME`, `compare NAME_A NAME_B`); a name
    /// a stored run has is refused before the run starts.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Tag the run (repeatable; many runs may share a tag: `report --tag TAG` is the latest
    /// with it), e.g. --tag baseline.
    #[arg(long, value_name = "TAG")]
    pub tag: Vec<String>,
    /// Print the plan and start nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print a line every SECS seconds (1-3600) on stderr while each step runs: elapsed
    /// time, QPS and errors of the interval (sysbench's --report-interval).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub report_interval: Option<u32>,
    /// Target the report compares against (default: the lab's first target).
    #[arg(long, value_name = "TARGET")]
    pub base: Option<String>,
    #[command(flatten)]
    pub out: ReportOut,
    /// Continue an interrupted run (default: the latest incomplete one) from its first cell
    /// that did not finish, with its stored lab and options; finished cells are kept.
    #[arg(
        long,
        value_name = "RUN",
        num_args = 0..=1,
        conflicts_with_all = [
            "quick", "only", "skip", "clients", "repeats", "profile", "dry_run", "workdir",
            "cell", "reuse_load", "snapshots", "rows", "tables", "time", "name", "tag"
        ]
    )]
    pub resume: Option<Option<String>>,
}

/// Where and how a report goes: `run`, `report` and `compare`.
#[derive(Debug, Clone, Args)]
pub struct ReportOut {
    /// Format of the report (`markdown` is `md`; charts as PNG files: --png DIR).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the report (`run --dry-run`: the plan) to FILE, whole or not at all, instead of
    /// standard output; progress stays on standard error.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the report's charts as PNG files into DIR (created when missing).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
}

impl ReportOut {
    /// `--png` and `-o` checked before anything is written.
    fn check(&self) -> Result<()> {
        if let Some(dir) = &self.png {
            check_png_dir(dir)?;
        }
        if let Some(file) = &self.output {
            check_output_file(file)?;
        }
        Ok(())
    }
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Run id, name (`run --name`), `latest` or `previous` (default: the latest run).
    pub run: Option<String>,
    /// The latest run with this tag (`run --tag`), instead of RUN.
    #[arg(long, value_name = "TAG", conflicts_with = "run")]
    pub tag: Option<String>,
    /// Target to compare against (default: the run's first target).
    #[arg(long, value_name = "TARGET")]
    pub base: Option<String>,
    /// Smallest change a verdict calls a regression or improvement, as a fraction (0.02 = 2%;
    /// default: the lab's `min_effect`, stored with the run).
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true)]
    pub min_effect: Option<f64>,
    /// Evidence only: judge each step alone with Student's t instead of the moderated test.
    #[arg(long, hide = true)]
    pub student: bool,
    /// Evidence only: judge as a `repeats = "auto"` run with this many looks.
    #[arg(long, hide = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub looks: Option<u32>,
    /// Evidence only: report only repeats 1..=N, as if the run had stopped there.
    #[arg(long, hide = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub first_repeats: Option<u32>,
    #[command(flatten)]
    pub out: ReportOut,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The run compared against (its targets are the bases): a run id, name, `latest` or
    /// `previous`.
    pub run_a: String,
    /// The run whose targets are reported relative to RUN_A's targets of the same name.
    pub run_b: String,
    /// Smallest change a verdict calls a regression or improvement, as a fraction (0.02 = 2%;
    /// default: run B's stored `min_effect`).
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true)]
    pub min_effect: Option<f64>,
    #[command(flatten)]
    pub out: ReportOut,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Only runs of this lab (the lab's `name`; default: every lab in the store).
    #[arg(long, value_name = "NAME")]
    pub lab: Option<String>,
    /// Only this target.
    #[arg(long, value_name = "TARGET")]
    pub target: Option<String>,
    /// Only this step (a catalog label, e.g. point-query.pre).
    #[arg(long, value_name = "STEP")]
    pub step: Option<String>,
    /// The value followed: qps, tps, cpu (server CPU µs/op), instructions (server
    /// instructions/op) or a metric id of the JSON report (e.g. cs_per_op).
    #[arg(long, value_name = "METRIC", default_value = "qps")]
    pub metric: String,
    /// Each series' values relative to its value in one run: `first` (its first run) or a
    /// run id or name (1 = that run), so series of different scales read alike.
    #[arg(long, value_name = "RUN|first")]
    pub relative: Option<String>,
    /// Largest p-value (Student's t-test of the two sides) of a change point.
    #[arg(long, value_name = "P", default_value_t = crate::changepoint::MAX_P)]
    pub max_p: f64,
    /// Smallest move of a change point, as a fraction (0.02 = 2%).
    #[arg(long, value_name = "FRACTION", default_value_t = crate::stats::MIN_EFFECT)]
    pub min_effect: f64,
    #[arg(long, value_enum, default_value_t = crate::history::render::HistFormat::Text)]
    pub format: crate::history::render::HistFormat,
    /// Write the history to FILE, whole or not at all, instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreArg,
    #[arg(value_enum)]
    pub what: ListWhat,
    /// With `steps`: print each step's SQL as the engine receives it (for table 1).
    #[arg(long)]
    pub sql: bool,
    /// With `steps --sql`: the engine whose dialect to print: sqlite (default), postgres or mysql.
    #[arg(long, value_name = "ENGINE", requires = "sql")]
    pub engine: Option<String>,
    /// With `versions`: only this product (postgres, mysql or mariadb).
    #[arg(value_name = "PRODUCT")]
    pub product: Option<String>,
    /// Write the listing to FILE (whole or not at all) instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListWhat {
    /// Runs in the store.
    Runs,
    /// The step catalog, in run order.
    Steps,
    /// Targets of every stored run.
    Targets,
    /// Server builds `fetch` and `version =` can get (from the registries' metadata), and which
    /// are cached.
    Versions,
}

/// Parse this process's command line. A usage error is one line (`error: …`, what clap says
/// before its usage block, with a pointer to `--help`) and exit code 2; `--help` and
/// `--version` print and exit 0.
pub fn parse() -> std::result::Result<Cli, ExitCode> {
    parse_from(std::env::args_os()).map_err(|e| {
        if !e.use_stderr() {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        eprintln!("error: {}", usage_error(&e));
        ExitCode::from(crate::error::EXIT_INPUT)
    })
}

/// Parse a command line (`argv[0]` first); a usage error is clap's, for [`usage_error`].
pub fn parse_from<I, T>(argv: I) -> std::result::Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Cli::try_parse_from(argv)
}

/// clap's message for a usage error as one line: its text before the first blank line (a
/// list of missing flags joined in), then where the flags are listed.
pub fn usage_error(e: &clap::Error) -> String {
    if let Some(line) = png_format(e) {
        return format!("{line} (dbdelta help [COMMAND] lists the flags)");
    }
    let text = e.to_string();
    let first: Vec<&str> = (text.lines())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let msg = first.join(" ");
    let msg = msg.strip_prefix("error: ").unwrap_or(&msg);
    format!("{msg} (dbdelta help [COMMAND] lists the flags)")
}

/// `--format png` (charts are files, not a report format): the flag that writes them.
fn png_format(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    if e.kind() != clap::error::ErrorKind::InvalidValue {
        return None;
    }
    let arg = match e.get(ContextKind::InvalidArg)? {
        ContextValue::String(a) => a,
        _ => return None,
    };
    let value = match e.get(ContextKind::InvalidValue)? {
        ContextValue::String(v) => v,
        _ => return None,
    };
    (arg.starts_with("--format") && value.eq_ignore_ascii_case("png")).then(|| {
        "--format png: PNG is not a report format; add --png DIR to write the charts as PNG files (beside --format text, md, json, csv or html)".to_string()
    })
}

/// Run a parsed command line. Returns the process exit code.
pub fn execute(cli: Cli) -> Result<ExitCode> {
    let top = Shared::of(&cli)?;
    match cli.command {
        Command::Run(args) => {
            let progress = top.progress(&args.verbosity);
            run(&top.store(&args.store), args, &progress)
        }
        Command::Plan(args) => plan_cmd(&top.store(&args.store), args),
        Command::Report(args) => report_cmd(&top.store(&args.store), args),
        Command::Compare(args) => compare_cmd(&top.store(&args.store), args),
        Command::History(args) => history_cmd(&top.store(&args.store), &args),
        Command::List(args) => list(&top.store(&args.store), args),
        Command::Fetch(args) => fetch_cmd(&args.what, &top.progress(&args.verbosity)),
        Command::Build(args) => build_cmd(&args, &top.progress(&args.verbosity)),
        Command::Profile(args) => profile_cmd(&top.store(&args.store), args),
        Command::Bisect(args) => {
            let progress = top.progress(&args.verbosity);
            bisect_cmd(&top.store(&args.store), args, &progress)
        }
        Command::Explain(args) => {
            crate::explain::command(args, top.store.as_deref(), (top.quiet, top.verbose))
        }
        Command::Store(StoreArgs {
            command: StoreCommand::Push(args),
        }) => push_cmd(&top.store(&args.store), &args),
        Command::Clean(args) => clean_cmd(&args),
        Command::Serve(args) => serve_cmd(&top.store(&args.store), &args),
        Command::Init(args) => init_cmd(&args),
        Command::Agent => crate::remote::agent::serve().map(|()| ExitCode::SUCCESS),
        Command::CountClient => crate::runner::count::client_main().map(|()| ExitCode::SUCCESS),
    }
}

/// The flags given before the command (`dbdelta --store S run`), for the commands that use them.
struct Shared {
    store: Option<PathBuf>,
    quiet: bool,
    verbose: bool,
}

impl Shared {
    /// Refuses `--store`, `-q` or `-v` before a command that would ignore it.
    fn of(cli: &Cli) -> Result<Shared> {
        let (stores, talks) = match &cli.command {
            Command::Run(_) | Command::Bisect(_) | Command::Explain(_) => (true, true),
            Command::Plan(_) => (true, false),
            Command::Report(_) | Command::Compare(_) | Command::List(_) => (true, false),
            Command::History(_) => (true, false),
            Command::Profile(_) | Command::Store(_) | Command::Serve(_) => (true, false),
            Command::Fetch(_) | Command::Build(_) => (false, true),
            _ => (false, false),
        };
        let name = command_name(&cli.command);
        if cli.store.is_some() && !stores {
            return crate::error::input(format!(
                "--store: `dbdelta {name}` uses no results store; drop --store"
            ));
        }
        if (cli.quiet || cli.verbose) && !talks {
            return crate::error::input(format!(
                "-q/-v: `dbdelta {name}` prints no progress; drop the flag"
            ));
        }
        Ok(Shared {
            store: cli.store.clone(),
            quiet: cli.quiet,
            verbose: cli.verbose,
        })
    }

    /// The command's `--store`, else the one before it, else `dbdelta.db`.
    fn store(&self, own: &StoreArg) -> PathBuf {
        (own.store.clone().or_else(|| self.store.clone()))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_STORE))
    }

    fn progress(&self, own: &Verbosity) -> Progress {
        Progress {
            mode: Mode::detect(own.quiet || self.quiet),
            verbose: own.verbose || self.verbose,
            interval: None,
        }
    }
}

/// The command's name as typed, for messages.
fn command_name(c: &Command) -> &'static str {
    match c {
        Command::Run(_) => "run",
        Command::Plan(_) => "plan",
        Command::Report(_) => "report",
        Command::Compare(_) => "compare",
        Command::History(_) => "history",
        Command::List(_) => "list",
        Command::Fetch(_) => "fetch",
        Command::Build(_) => "build",
        Command::Profile(_) => "profile",
        Command::Bisect(_) => "bisect",
        Command::Explain(_) => "explain",
        Command::Clean(_) => "clean",
        Command::Serve(_) => "serve",
        Command::Store(_) => "store",
        Command::Init(_) => "init",
        Command::Agent => "agent",
        Command::CountClient => "count-client",
    }
}

fn color_wanted() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// The lab file, or the built-in demo without one.
fn load_lab(path: Option<&Path>) -> Result<crate::plan::lab::Lab> {
    Ok(match path {
        Some(path) => crate::plan::lab::load(path)?,
        None => crate::plan::lab::parse(plan::DEMO_LAB, "<built-in demo>", Path::new("."))?,
    })
}

/// `dbdelta plan [LAB]`: the plan in words (what `run --dry-run` prints), or with `--emit k8s`
/// its Kubernetes manifests; on standard output or, whole, in `-o FILE`.
fn plan_cmd(store_path: &Path, args: PlanArgs) -> Result<ExitCode> {
    let lab = load_lab(args.lab.as_deref())?;
    let opts = args.how.options(&args.shape);
    let text = match args.emit {
        None => {
            let plan = plan::plan(lab, &opts)?;
            // What `run` would refuse before its first cell, `plan` refuses too.
            crate::plan::preflight::tools(&plan)?;
            crate::plan::preflight::servers(&plan)?;
            plan_text(&plan, store_path)?
        }
        Some(Emit::K8s) => {
            // Before planning: CPU lists would otherwise be checked against this host.
            crate::plan::k8s::check_lab(&lab)?;
            let plan = plan::plan(lab, &opts)?;
            crate::plan::k8s::emit(&plan, &k8s_options(&args)?)?
        }
    };
    write_text(args.output.as_deref(), &text, "the plan")?;
    Ok(ExitCode::SUCCESS)
}

/// The plan in words, its time estimate (calibrated by what `store` measured on this host)
/// and its disk estimate against the work directory's free space (what `run --dry-run` and
/// `plan` print); a version that does not exist is refused, as by `run`.
fn plan_text(plan: &plan::RunPlan, store: &Path) -> Result<String> {
    let free = crate::plan::preflight::free_bytes(&plan.workdir).ok();
    let free = free.as_ref().map(|(p, b)| (p.as_path(), *b));
    let need = crate::plan::preflight::disk_need(plan);
    // The fetches beside the targets, before the order and the time.
    let mut text = plan.describe();
    let at = text.find("\norder: ").map_or(text.len(), |i| i + 1);
    text.insert_str(at, &plan::describe_fetches(plan)?);
    let estimate = crate::plan::estimate::estimate(plan, &calibration(store));
    Ok(format!(
        "{text}{}\n{}\n",
        estimate.describe(plan),
        crate::plan::preflight::describe(&need, free)
    ))
}

/// What the store at `location` measured on this host, for the time estimate: nothing when
/// there is no store yet or it cannot be read (the estimate then says it uses the defaults).
pub fn calibration(location: &Path) -> crate::plan::estimate::Calibration {
    use crate::plan::estimate;
    let is_url = crate::store::is_url(&location.to_string_lossy());
    if !is_url && !location.is_file() {
        return Default::default();
    }
    let stored = Store::open_reader(location)
        .and_then(|s| s.cell_phases(&crate::host::describe(), estimate::CALIBRATION_CELLS));
    estimate::Calibration::from_stored(&stored.unwrap_or_default())
}

/// The emitter's options from `plan`'s flags: `--image` is required.
fn k8s_options(args: &PlanArgs) -> Result<crate::plan::k8s::Options> {
    let defaults = crate::plan::k8s::Options::default();
    let Some(image) = args.image.clone() else {
        return crate::error::input(
            "--emit k8s needs --image IMAGE: the container image with dbdelta and the lab's engines, e.g. --image registry.example.com/dbdelta:1.0",
        );
    };
    let node_label = match &args.node_label {
        None => defaults.node_label,
        Some(text) => match text.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => {
                return crate::error::input(format!(
                    "--node-label {text}: expected KEY=VALUE, e.g. dbdelta.io/benchmark-node=true"
                ));
            }
        },
    };
    Ok(crate::plan::k8s::Options {
        image,
        node_label,
        store_secret: args.store_secret.clone(),
        memory: args.memory.clone(),
        run_flags: [args.shape.to_flags(), args.how.to_flags()].concat(),
    })
}

/// `text` into `output` (whole or not at all), or on standard output without one; `what` names
/// it in the error.
fn write_text(output: Option<&Path>, text: &str, what: &str) -> Result<()> {
    match output {
        Some(path) => write_named("-o", path, text.as_bytes(), what),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            Ok(out.flush()?)
        }
    }
}

/// Write `bytes` to the file `flag` named, by `output`'s rule (a regular file whole, a device in
/// place, a directory refused); `what` names the bytes in the error.
fn write_named(flag: &str, path: &Path, bytes: &[u8], what: &str) -> Result<()> {
    crate::output::write(path, bytes).map_err(|e| output_error(flag, e, what))
}

/// An `output` failure as one line naming the flag and the file: bad input (exit 2) when
/// another name fixes it, a failure (exit 1) otherwise.
fn output_error(flag: &str, e: crate::output::OutputError, what: &str) -> anyhow::Error {
    let path = e.path().display().to_string();
    match e.is_input() {
        true => crate::error::InputError::new(format!("{flag} {path}: {e}")).into(),
        false => anyhow::anyhow!("{flag} {path}: cannot write {what}: {e}"),
    }
}

fn run(store_path: &Path, args: RunArgs, progress: &Progress) -> Result<ExitCode> {
    let progress = &Progress {
        interval: (args.report_interval).map(|s| std::time::Duration::from_secs(s.into())),
        ..*progress
    };
    if let Some(run) = &args.resume {
        return resume(store_path, run.as_deref(), &args, progress);
    }
    // Parse and plan: every input error surfaces here, before anything is written.
    let lab = load_lab(args.lab.as_deref())?;
    let opts = args.options();
    let stored = crate::plan::resume::StoredOptions::new(&opts, args.lab.as_deref());
    let plan = plan::plan(lab, &opts)?;
    check_report_args(&plan, &args)?;
    let label = run_label(args.name.as_ref(), &args.tag)?;
    crate::plan::preflight::tools(&plan)?;
    crate::plan::preflight::servers(&plan)?;
    if args.dry_run {
        write_text(
            args.out.output.as_deref(),
            &plan_text(&plan, store_path)?,
            "the plan",
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    // A taken name is refused before fetches and builds (a store that cannot be read yet
    // holds no name; opening it below says why).
    if let Some(name) = &label.name
        && let Ok(store) = Store::open_existing(store_path)
    {
        store.refuse_taken_name(name)?;
    }
    let need = crate::plan::preflight::check(&plan)?;
    let plan = plan::prepare(plan, progress)?;
    // Fetched and built servers too, now that they are here.
    crate::plan::preflight::servers(&plan)?;

    // Run: results reach the store after every step.
    let interrupt = interrupt_flag(Interrupted::Run)?;
    let mut store = Store::open(store_path)?;
    if let Some(name) = &label.name {
        store.refuse_taken_name(name)?;
    }
    announce_plan(&plan, progress, &need);
    let outcome = crate::runner::execute(
        &plan,
        &mut store,
        progress,
        &interrupt,
        &stored.to_json(),
        &label,
        crate::remote::start,
    )?;
    report_outcome(&outcome, &store, &args)
}

/// `run --resume [RUN]`: the run's plan rebuilt from what it stored (refused when the lab
/// file changed it), then every cell that did not finish.
fn resume(
    store_path: &Path,
    run: Option<&str>,
    args: &RunArgs,
    progress: &Progress,
) -> Result<ExitCode> {
    let mut store = Store::open_existing(store_path)?;
    let run_id = match run {
        None | Some("latest") => store.latest_incomplete_run()?.ok_or_else(|| {
            InputError::new(format!(
                "--resume: every run in {} is complete; name one (--resume RUN) to rerun its failed cells",
                store_path.display()
            ))
        })?,
        Some(id) => store.resolve_run(Some(id))?,
    };
    if store.bisection(&run_id)?.is_some() {
        return crate::error::input(format!(
            "--resume {run_id}: the run is a bisection, which decides its targets as it goes; run `dbdelta bisect` again"
        ));
    }
    let stored: crate::plan::resume::StoredOptions = match store.run_options(&run_id)? {
        Some(json) => serde_json::from_str(&json).context("the run's stored options")?,
        None => {
            return crate::error::input(format!(
                "--resume {run_id}: the run was stored by a dbdelta without --resume (no stored options); start a new run"
            ));
        }
    };
    let data = store.load_run(&run_id)?;
    let plan = crate::plan::resume::rebuild_plan(
        &run_id,
        &data.run.lab_text,
        &stored,
        args.lab.as_deref(),
        args.how.keep,
    )?;
    check_report_args(&plan, args)?;
    // One owner per run: the work directory's lock on this host, the store's across hosts.
    crate::runner::workdir::refuse_if_owned(&plan.workdir, &run_id)?;
    if !store.hold_run(&run_id)? {
        return crate::error::input(format!(
            "run {run_id} is running: another dbdelta holds it in {} (on another host); wait for it to end, then `dbdelta run --resume {run_id}`",
            store.path().display()
        ));
    }
    let finished = store.finished_cells(&run_id)?;
    let keys = crate::runner::plan_keys(&plan);
    if data.run.complete && keys.iter().all(|k| finished.contains_key(k)) {
        return crate::error::input(format!(
            "--resume {run_id}: the run is complete, every cell finished; nothing to resume"
        ));
    }
    crate::plan::preflight::tools(&plan)?;
    let need = crate::plan::preflight::check(&plan)?;
    let plan = plan::prepare(plan, progress)?;
    crate::plan::preflight::servers(&plan)?;
    let interrupt = interrupt_flag(Interrupted::Run)?;
    announce_plan(&plan, progress, &need);
    let outcome = crate::runner::resume(
        &plan,
        &mut store,
        progress,
        &interrupt,
        &run_id,
        crate::remote::start,
    )?;
    report_outcome(&outcome, &store, args)
}

/// `--name` and `--tag` as words a store can look up (each tag once).
fn run_label(name: Option<&String>, tag: &[String]) -> Result<crate::store::RunLabel> {
    let check = |flag: &str, v: &str| crate::store::check_label(flag, v).map_err(InputError::new);
    if let Some(name) = name {
        check("--name", name)?;
    }
    let mut tags: Vec<String> = Vec::new();
    for t in tag {
        check("--tag", t)?;
        if !tags.contains(t) {
            tags.push(t.clone());
        }
    }
    Ok(crate::store::RunLabel {
        name: name.cloned(),
        tags,
    })
}

/// `--png` and `--base` checked against the plan, before anything is written.
fn check_report_args(plan: &plan::RunPlan, args: &RunArgs) -> Result<()> {
    args.out.check()?;
    if let Some(base) = &args.base
        && !plan.targets.iter().any(|t| &t.name == base)
    {
        return crate::error::input(format!(
            "--base {base}: the lab has no such target (targets: {})",
            plan.targets
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(())
}

/// The plan's size, time and disk estimate, as the run starts.
fn announce_plan(
    plan: &plan::RunPlan,
    progress: &Progress,
    need: &crate::plan::preflight::DiskNeed,
) {
    progress.line(&format!(
        "plan: {} step(s) × {} cell(s)",
        plan.steps().count(),
        plan.cells().len(),
    ));
    progress.line(&crate::plan::preflight::describe(need, None));
}

/// Report what exists, then say what failed.
fn report_outcome(
    outcome: &crate::runner::Outcome,
    store: &Store,
    args: &RunArgs,
) -> Result<ExitCode> {
    let data = store.load_run(&outcome.run_id)?;
    let model = report::build(&data, args.base.as_deref())?;
    write_report(&model, &args.out)?;
    Ok(exit_status(outcome, store))
}

/// `dbdelta bisect LAB --step STEP`: plan, then measure targets into one run as the search
/// asks; the answer on standard output. `--show RUN`: a stored bisection's answer.
fn bisect_cmd(store_path: &Path, args: BisectArgs, progress: &Progress) -> Result<ExitCode> {
    use crate::runner::bisect;
    if let Some(run) = &args.show {
        return show_bisection(store_path, run);
    }
    let (plan, by, why, opts) = bisect_plan(&args)?;
    let label = run_label(args.name.as_ref(), &args.tag)?;
    let stored = crate::plan::resume::StoredOptions::new(&opts, args.lab.as_deref());
    crate::plan::preflight::tools(&plan)?;
    crate::plan::preflight::check(&plan)?;
    let interrupt = interrupt_flag(Interrupted::Bisection)?;
    let mut store = Store::open(store_path)?;
    if let Some(name) = &label.name {
        store.refuse_taken_name(name)?;
    }
    let b = bisect::Bisect {
        by,
        why: why.clone(),
        progress,
        interrupt: &interrupt,
        options: stored.to_json(),
        label,
        start: crate::remote::start,
    };
    let answer = bisect::bisect(&plan, &mut store, &b)?;
    let Some(text) = answer.text else {
        eprintln!(
            "interrupted: run {} is stored as incomplete in {}",
            answer.run_id,
            store.path().display()
        );
        let code = crate::signals::first().map_or(EXIT_INTERRUPTED, interrupted_code);
        return Ok(ExitCode::from(code));
    };
    println!(
        "run {}: decided by {}: {why}\n{text}",
        answer.run_id,
        by.words()
    );
    Ok(ExitCode::SUCCESS)
}

/// The plan of a bisection (only the judged steps), the metric that decides and why; bad
/// input when there is nothing to bisect or no verdict to decide by.
fn bisect_plan(
    args: &BisectArgs,
) -> Result<(
    plan::RunPlan,
    crate::runner::bisect::Decider,
    String,
    RunOptions,
)> {
    use crate::runner::bisect::Decider;
    if !args.shape.only.is_empty() || !args.shape.skip.is_empty() {
        return crate::error::input(
            "bisect: --only/--skip: the steps judged are chosen with --step STEP or --group GROUP",
        );
    }
    let mut opts = RunOptions {
        workdir: args.workdir.clone(),
        keep: args.keep,
        instructions: args.metric == Some(BisectMetric::Instructions),
        ..args.shape.options()
    };
    opts.only = match (&args.step, &args.group) {
        (Some(step), _) => vec![known_step(args.lab.as_deref(), &opts, step)?],
        (None, Some(group)) => group_steps(args.lab.as_deref(), &opts, group)?,
        (None, None) => return crate::error::input("bisect: give --step STEP or --group GROUP"),
    };
    let plan = plan::plan(load_lab(args.lab.as_deref())?, &opts)?;
    if plan.targets.len() < 2 {
        return crate::error::input(
            "bisect: the lab has one target; give it the ordered targets to bisect (at least two)",
        );
    }
    if plan.auto.is_some() {
        return crate::error::input(
            "bisect: repeats = \"auto\" is not supported (each probe runs alone); give --repeats N",
        );
    }
    let repeats = plan.repeats;
    let timed = |by: Decider, how: &str| match repeats {
        0 | 1 => crate::error::input(
            "bisect: one repeat and no instruction count give no verdict: set repeats >= 2 (--repeats 3) or instructions = true (--metric instructions)",
        ),
        r => Ok((by, format!("{how}; verdicts from {r} paired repeats"))),
    };
    let (by, why) = match (args.metric, plan.instructions.is_some()) {
        (Some(BisectMetric::Instructions), _) => (
            Decider::Instructions,
            "--metric instructions: counted under callgrind, deterministic; verdict from the counting passes' spread".to_string(),
        ),
        (None, true) => (
            Decider::Instructions,
            "the lab counts instructions (deterministic); verdict from the counting passes' spread".to_string(),
        ),
        (Some(BisectMetric::Qps), _) => timed(Decider::Qps, "--metric qps")?,
        (Some(BisectMetric::Cpu), _) => timed(Decider::ServerCpu, "--metric cpu")?,
        (None, false) => timed(
            Decider::ServerCpu,
            "the lab counts no instructions, so server CPU/op (--metric qps for QPS)",
        )?,
    };
    Ok((plan, by, why, opts))
}

/// The labels of the steps of report group `group` that the lab runs.
fn group_steps(lab: Option<&Path>, opts: &RunOptions, group: &str) -> Result<Vec<String>> {
    let plan = plan::plan(load_lab(lab)?, opts)?;
    let steps: Vec<String> = (plan.steps())
        .filter(|s| s.group == group)
        .map(|s| s.label.clone())
        .collect();
    if steps.is_empty() {
        let mut groups: Vec<&str> = plan.steps().map(|s| s.group.as_str()).collect();
        groups.sort_unstable();
        groups.dedup();
        return crate::error::input(format!(
            "--group {group}: the lab runs no step of that group (its groups: {})",
            groups.join(", ")
        ));
    }
    Ok(steps)
}

/// `bisect --step STEP`: a step the lab runs, or bad input that names `--step` and the steps.
fn known_step(lab: Option<&Path>, opts: &RunOptions, step: &str) -> Result<String> {
    let plan = plan::plan(load_lab(lab)?, opts)?;
    let mut labels: Vec<&str> = plan.steps().map(|s| s.label.as_str()).collect();
    if labels.contains(&step) {
        return Ok(step.to_string());
    }
    labels.dedup();
    crate::error::input(format!(
        "--step {step}: the lab runs no such step (its steps: {}); `dbdelta list steps` names them",
        labels.join(", ")
    ))
}

/// `bisect --show RUN`: the stored answer of a bisection.
fn show_bisection(store_path: &Path, run: &str) -> Result<ExitCode> {
    let store = Store::open_existing(store_path)?;
    let run_id = store.resolve_run(Some(run))?;
    let Some(b) = store.bisection(&run_id)? else {
        return crate::error::input(format!(
            "bisect --show {run}: run {run_id} is no bisection (`dbdelta list runs` shows the runs)"
        ));
    };
    let answer = (b.answer).unwrap_or_else(|| "did not end (interrupted or failed)".into());
    println!(
        "run {run_id}: bisection by {} on {}\n{answer}",
        b.metric, b.steps
    );
    Ok(ExitCode::SUCCESS)
}

/// `dbdelta init [FILE]`: the commented lab, written only when FILE does not exist yet.
fn init_cmd(args: &InitArgs) -> Result<ExitCode> {
    let path = &args.file;
    let text = crate::plan::template::lab(args.engine, &path.display().to_string());
    crate::output::create_new(path, text.as_bytes()).map_err(|e| match e {
        crate::output::OutputError::Exists { .. } => crate::error::InputError::new(format!(
            "init {}: the file exists and is kept; name another file, e.g. dbdelta init lab2.toml",
            path.display()
        ))
        .into(),
        e => output_error("init", e, "the lab"),
    })?;
    println!(
        "wrote {0}; next: dbdelta plan {0} --quick, then dbdelta run {0} --quick",
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `dbdelta clean`: name and remove the run directories interrupted runs left; a run a live
/// dbdelta works on is named with its PID and left alone.
fn clean_cmd(args: &CleanArgs) -> Result<ExitCode> {
    use crate::runner::workdir;
    if let Some(dir) = &args.snapshots {
        clean_snapshots(
            dir.clone()
                .unwrap_or_else(|| args.workdir.join("snapshots")),
            args,
        )?;
    }
    let (stale, live) = workdir::scan(&args.workdir)?;
    for l in &live {
        eprintln!("kept {}", l.describe());
    }
    if stale.is_empty() {
        println!(
            "{}: nothing left by interrupted runs",
            args.workdir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut code = ExitCode::SUCCESS;
    for s in &stale {
        if args.dry_run {
            println!("would remove {}", s.describe());
            continue;
        }
        match workdir::remove(s, args.stop) {
            Ok(()) => println!("removed {}", s.describe()),
            Err(e) => {
                eprintln!("kept {e:#}");
                code = ExitCode::from(EXIT_FAILED);
            }
        }
    }
    Ok(code)
}

/// `dbdelta clean --snapshots`: remove (or, with --dry-run, name) the saved loads in `dir`:
/// only the entries `snapshot::cleanable` chose (dbdelta's snapshots and unfinished saves),
/// never `dir` itself or anything else in it, which is named as kept.
fn clean_snapshots(dir: PathBuf, args: &CleanArgs) -> Result<()> {
    use crate::runner::snapshot;
    let found = match snapshot::cleanable(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return crate::error::input(format!(
                "--snapshots {} is not a directory; name the directory of saved loads (default <workdir>/snapshots)",
                dir.display()
            ));
        }
        r => r.with_context(|| format!("--snapshots {}: cannot read it", dir.display()))?,
    };
    if !found.kept.is_empty() {
        let n = found.kept.len();
        let mut names = found.kept[..n.min(5)].join(", ");
        if n > 5 {
            names.push_str(&format!(" and {} more", n - 5));
        }
        eprintln!(
            "kept {n} entr{} of {} that dbdelta did not make or still uses: {names}",
            if n == 1 { "y" } else { "ies" },
            dir.display()
        );
    }
    for entry in &found.remove {
        if args.dry_run {
            println!("would remove {entry} in {}", dir.display());
            continue;
        }
        snapshot::remove(&dir, entry).with_context(|| format!("--snapshots {}", dir.display()))?;
        println!("removed {entry} in {}", dir.display());
    }
    if found.remove.is_empty() {
        println!("{}: no snapshots", dir.display());
    }
    Ok(())
}

/// What a terminating signal stops: a run (resumable) or a bisection (started again).
#[derive(Clone, Copy)]
enum Interrupted {
    Run,
    Bisection,
}

/// Set on the first terminating signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT: the step and any
/// wait end at once, the server is stopped, a run stays resumable); a second one kills every
/// server and tool dbdelta started and ends the process at once, exit 128 + its number.
fn interrupt_flag(what: Interrupted) -> Result<Arc<AtomicBool>> {
    let (first, then) = match what {
        Interrupted::Run => (
            crate::signals::RUN_STOPPING,
            "`dbdelta run --resume` continues the run",
        ),
        Interrupted::Bisection => (
            "stopping the bisection (a bisection is not resumable: start it again); send it again to stop at once",
            "a bisection is not resumable: start it again",
        ),
    };
    crate::signals::install_saying(first, move |signal| {
        crate::engine::common::process::kill_started();
        let _ = writeln!(
            std::io::stderr(),
            "dbdelta: {} again: servers killed, exiting at once; {then}",
            crate::signals::name(signal)
        );
        std::process::exit(interrupted_code(signal).into());
    })
    .context("installing the handlers of SIGINT, SIGTERM, SIGHUP and SIGQUIT")
}

/// The exit code of a run a signal ended: 128 + the signal's number (130 for Ctrl-C, 143 for
/// SIGTERM, 129 for SIGHUP, 131 for SIGQUIT), as a shell reports a process the signal killed.
fn interrupted_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(EXIT_INTERRUPTED)
}

/// After the report: say what was interrupted or failed, and the exit code that goes with it.
fn exit_status(outcome: &crate::runner::Outcome, store: &Store) -> ExitCode {
    if outcome.interrupted {
        eprintln!(
            "interrupted: run {} is stored as incomplete in {}",
            outcome.run_id,
            store.path().display()
        );
        let code = crate::signals::first().map_or(EXIT_INTERRUPTED, interrupted_code);
        return ExitCode::from(code);
    }
    if !outcome.failures.is_empty() {
        eprintln!(
            "{} failure(s) in run {}:",
            outcome.failures.len(),
            outcome.run_id
        );
        for f in &outcome.failures {
            eprintln!("  {f}");
        }
        return ExitCode::from(EXIT_FAILED);
    }
    ExitCode::SUCCESS
}

/// `dbdelta build`: compile (or find in the cache) and print where the result is.
fn build_cmd(args: &BuildArgs, progress: &Progress) -> Result<ExitCode> {
    use crate::provision::build::{self, BuildEngine, Flags, Training};
    let engine = BuildEngine::parse(&args.engine).ok_or_else(|| {
        InputError::new(format!(
            "build {}: unknown engine; dbdelta builds postgres, sqlite or mariadb",
            args.engine
        ))
    })?;
    let req = build::BuildRequest::new(
        engine,
        args.source.clone(),
        &args.variant,
        Flags {
            cflags: args.cflags.clone().unwrap_or_default(),
            ldflags: args.ldflags.clone().unwrap_or_default(),
        },
        Training {
            suite: args.train.clone(),
            scale: args.train_scale.clone(),
        },
    )
    .map_err(|e| {
        let flag = match e.key {
            "train" => "--train",
            "train_scale" => "--train-scale",
            "source" => "--source",
            _ => "--variant",
        };
        InputError::new(format!("{flag}: {}", e.message))
    })?;
    let built = build::build(&req, &|line| progress.line(line))?;
    let path = built.library.as_ref().unwrap_or(&built.bin);
    println!("{}", path.display());
    Ok(ExitCode::SUCCESS)
}

fn fetch_cmd(what: &str, progress: &Progress) -> Result<ExitCode> {
    let parsed = what
        .split_once('@')
        .and_then(|(p, v)| Some((Product::parse(p)?, v)))
        .filter(|(_, v)| !v.is_empty());
    let Some((product, version)) = parsed else {
        return crate::error::input(format!(
            "fetch {what}: expected postgres@VERSION, mysql@VERSION or mariadb@VERSION, e.g. dbdelta fetch mysql@8.0"
        ));
    };
    let f = crate::provision::fetch(product, version, &|line| progress.line(line))?;
    let how = match f.downloaded {
        0 => "from the cache, nothing downloaded".to_string(),
        n => format!("downloaded {:.1} MB", n as f64 / 1e6),
    };
    println!(
        "{} {}: {} ({how})",
        product.title(),
        crate::provision::label(product, &f.version),
        f.bin.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `dbdelta list versions [PRODUCT]`: per product, what the registries offer (and where from)
/// and what is cached. Exit 1 when a registry could not be read (what is cached is still shown).
fn list_versions(product: Option<&str>, out: &mut String) -> Result<bool> {
    let products = match product {
        None => Product::ALL.to_vec(),
        Some(p) => match Product::parse(p) {
            Some(p) => vec![p],
            None => {
                return crate::error::input(format!(
                    "list versions {p}: unknown product; use postgres, mysql or mariadb"
                ));
            }
        },
    };
    let mut ok = true;
    for p in products {
        let cached = crate::provision::cached(p);
        let is_cached = |v: &str| cached.iter().any(|c| c.version == v);
        out.push_str(&format!("{} ({}@VERSION):\n", p.title(), p.id()));
        match crate::provision::listing(p) {
            Ok(list) if p == Product::Postgres => {
                // Hundreds of npm builds: one line per major; Debian's, one line each, after.
                let (debian, list): (Vec<_>, Vec<_>) = list.into_iter().partition(|(r, _)| {
                    matches!(r.package, crate::provision::Package::Debian { .. })
                });
                let mut majors: Vec<(String, Vec<&str>)> = Vec::new();
                for (r, _) in &list {
                    let major = r.version.split('.').next().unwrap_or("").to_string();
                    match majors.iter_mut().find(|(m, _)| *m == major) {
                        Some((_, vs)) => vs.push(&r.version),
                        None => majors.push((major, vec![&r.version])),
                    }
                }
                for (major, vs) in &majors {
                    let newest = vs.last().copied().unwrap_or("");
                    out.push_str(&format!(
                        "  {major:<4} newest {} ({} builds){}\n",
                        crate::provision::label(p, newest),
                        vs.len(),
                        if is_cached(newest) { "  cached" } else { "" }
                    ));
                }
                if let Some((r, _)) = list.first() {
                    out.push_str(&format!("  from {}\n", r.package.describe("VERSION")));
                }
                version_rows(&debian, &is_cached, out);
            }
            Ok(list) => version_rows(&list, &is_cached, out),
            Err(e) => {
                ok = false;
                out.push_str(&format!("  registry not reachable: {e:#}\n"));
            }
        }
        for c in &cached {
            out.push_str(&format!(
                "  cached {} ({}): {}\n",
                crate::provision::label(p, &c.version),
                c.source,
                c.bin.display()
            ));
        }
    }
    Ok(ok)
}

/// One line per build: version, source, cached, and whether the registry lists it.
fn version_rows(
    list: &[(crate::provision::Release, Result<bool, String>)],
    is_cached: &dyn Fn(&str) -> bool,
    out: &mut String,
) {
    for (r, listed) in list {
        let state = match listed {
            Ok(true) => "",
            Ok(false) => "  (not listed by the registry)",
            Err(_) => "  (registry not reachable)",
        };
        let cached = if is_cached(&r.version) {
            "  cached"
        } else {
            ""
        };
        let line = format!("  {:<9} {:<58}{cached}{state}", r.version, r.source());
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// `--png DIR` must be a directory or not exist yet; checked before a run starts.
fn check_png_dir(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        return crate::error::input(format!(
            "--png {}: exists and is not a directory; name a directory (it is created when missing)",
            dir.display()
        ));
    }
    Ok(())
}

/// `-o FILE` must be writable: checked before a run starts (its report is written at the end,
/// after hours of measuring), by `output`'s own rule; nothing that exists is changed.
fn check_output_file(file: &Path) -> Result<()> {
    crate::output::check_writable(file).map_err(|e| {
        let path = e.path().display().to_string();
        let msg = match e.is_input() {
            true => format!("-o {path}: {e}"),
            false => format!("-o {path}: cannot be written: {e}; name a writable file"),
        };
        crate::error::InputError::new(msg).into()
    })
}

/// `--min-effect` must be a fraction in [0, 1); checked before the store is opened.
fn min_effect_flag(v: Option<f64>) -> Result<Option<f64>> {
    match v {
        Some(m) if !(0.0..1.0).contains(&m) => crate::error::input(format!(
            "--min-effect {m}: give a fraction from 0 up to 1, e.g. --min-effect 0.02 for 2%"
        )),
        v => Ok(v),
    }
}

fn report_cmd(store_path: &Path, args: ReportArgs) -> Result<ExitCode> {
    args.out.check()?;
    let opts = report::Options {
        base: args.base.clone(),
        min_effect: min_effect_flag(args.min_effect)?,
        student: args.student,
        looks: args.looks,
        first_repeats: args.first_repeats,
        separate_runs: false,
    };
    let store = Store::open_existing(store_path)?;
    let run_id = match &args.tag {
        Some(tag) => store.latest_tagged(tag)?,
        None => store.resolve_run(args.run.as_deref())?,
    };
    let data = store.load_run(&run_id)?;
    let model = report::build_with_options(&data, &opts)
        .map_err(|e| crate::error::InputError::new(e.to_string()))?;
    write_report(&model, &args.out)?;
    Ok(ExitCode::SUCCESS)
}

/// `dbdelta profile RUN STEP`: the step's flame graphs and folded profiles as files, each
/// written whole (a temporary file renamed into place) and named on standard output.
fn profile_cmd(store_path: &Path, args: ProfileArgs) -> Result<ExitCode> {
    let store = Store::open_existing(store_path)?;
    let run_id = store.resolve_run(Some(&args.run))?;
    let opts = report::Options {
        base: args.base.clone(),
        ..report::Options::default()
    };
    let model = report::build_with_options(&store.load_run(&run_id)?, &opts)
        .map_err(|e| crate::error::InputError::new(e.to_string()))?;
    let files = report::profile::files(&model, &args.step, args.target.as_deref())
        .map_err(crate::error::InputError::new)?;
    let dir = &args.output;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("-o {}: cannot create the directory", dir.display()))?;
    for (name, bytes) in files {
        let path = dir.join(&name);
        write_named("-o", &path, &bytes, &name)?;
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `dbdelta serve`: the store as a local, read-only web page until a terminating signal.
fn serve_cmd(store_path: &Path, args: &ServeArgs) -> Result<ExitCode> {
    let opts = crate::serve::Options {
        addr: args.addr.clone(),
        port: args.port,
    };
    crate::serve::serve(store_path, &opts)?;
    Ok(ExitCode::SUCCESS)
}

/// `dbdelta store push RUN --to STORE`: one run copied whole into another store.
fn push_cmd(store_path: &Path, args: &PushArgs) -> Result<ExitCode> {
    let from = Store::open_existing(store_path)?;
    let run_id = from.resolve_run(Some(&args.run))?;
    let to = Store::open_flag(&args.to, "--to")?;
    let rows = from.push_run(&run_id, &to)?;
    println!(
        "pushed run {run_id} ({rows} rows) from {} to {}",
        from.path().display(),
        to.path().display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `dbdelta history`: the flags checked, the series read and their change points found, then
/// rendered.
fn history_cmd(store_path: &Path, args: &HistoryArgs) -> Result<ExitCode> {
    use crate::history::{self, HistMetric};
    let Some(metric) = HistMetric::parse(&args.metric) else {
        return crate::error::input(format!(
            "--metric {}: not a metric; give qps, tps, cpu, instructions or a metric id of the JSON report (e.g. server_cpu_us_per_op)",
            args.metric
        ));
    };
    if !(args.max_p > 0.0 && args.max_p < 1.0) {
        return crate::error::input(format!(
            "--max-p {}: give a p-value between 0 and 1, e.g. --max-p 0.001",
            args.max_p
        ));
    }
    min_effect_flag(Some(args.min_effect))?;
    if let Some(file) = &args.output {
        check_output_file(file)?;
    }
    let store = Store::open_existing(store_path)?;
    let query = history::Query {
        lab: args.lab.clone(),
        target: args.target.clone(),
        step: args.step.clone(),
        metric,
        config: crate::changepoint::Config {
            max_p: args.max_p,
            min_magnitude: args.min_effect,
        },
        relative: args.relative.clone(),
    };
    let h = history::history(&store, &query)?;
    if h.series.is_empty() && h.partial.is_empty() {
        return crate::error::input(history_empty(&store, args)?);
    }
    let text = history::render::render(&h, args.format);
    write_text(args.output.as_deref(), &text, "the history")?;
    Ok(ExitCode::SUCCESS)
}

/// Why `history` found nothing: the labs the store holds, and the filters given.
fn history_empty(store: &Store, args: &HistoryArgs) -> Result<String> {
    let mut labs: Vec<String> = store.list_runs()?.into_iter().map(|r| r.lab).collect();
    labs.sort();
    labs.dedup();
    let filters: Vec<String> = [
        ("--lab", &args.lab),
        ("--target", &args.target),
        ("--step", &args.step),
    ]
    .into_iter()
    .filter_map(|(f, v)| v.as_ref().map(|v| format!("{f} {v:?}")))
    .collect();
    let hint = if args.metric == "instructions" {
        " (runs store instructions/op with `dbdelta run --instructions`)"
    } else {
        ""
    };
    Ok(format!(
        "history: no stored run matches {} with a value of {}{hint} (labs in {}: {}); check the names with `dbdelta list runs` and `dbdelta list targets`",
        if filters.is_empty() {
            "the store".to_string()
        } else {
            filters.join(" ")
        },
        args.metric,
        store.path().display(),
        if labs.is_empty() {
            "none".to_string()
        } else {
            labs.join(", ")
        }
    ))
}

/// `dbdelta compare RUN_A RUN_B`: both runs from the store, one report of B relative to A.
fn compare_cmd(store_path: &Path, args: CompareArgs) -> Result<ExitCode> {
    args.out.check()?;
    let opts = report::Options {
        min_effect: min_effect_flag(args.min_effect)?,
        ..report::Options::default()
    };
    let store = Store::open_existing(store_path)?;
    let a = store.resolve_run(Some(&args.run_a))?;
    let b = store.resolve_run(Some(&args.run_b))?;
    let model = report::compare_with_options(&store.load_run(&a)?, &store.load_run(&b)?, &opts)
        .map_err(|e| crate::error::InputError::new(e.to_string()))?;
    write_report(&model, &args.out)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes a rendered report to `output` (whole or not at all: a temporary file renamed into
/// place), or to standard output, coloured when that is a terminal; then, with `png`, its
/// charts as PNG files there.
fn write_report(model: &report::ReportModel, out: &ReportOut) -> Result<()> {
    let format = out.format;
    match out.output.as_deref() {
        Some(path) => {
            let text = report::render(model, format, false);
            write_named("-o", path, text.as_bytes(), "the report")?;
        }
        None => {
            let text = report::render(model, format, color_wanted());
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    if let Some(dir) = out.png.as_deref() {
        write_pngs(model, dir)?;
    }
    Ok(())
}

/// `--png DIR`: renders every chart, creates DIR and writes one file per chart, then says on
/// stderr what was written (stdout may carry the report).
fn write_pngs(model: &report::ReportModel, dir: &Path) -> Result<()> {
    let files = report::png_charts(model)?;
    if files.is_empty() {
        eprintln!(
            "--png {}: the report has no charts (they need 2 targets, or per-second series); nothing written",
            dir.display()
        );
        return Ok(());
    }
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "--png {}: cannot create the directory; pick a writable path",
            dir.display()
        )
    })?;
    for (name, bytes) in &files {
        write_named("--png", &dir.join(name), bytes, name)?;
    }
    eprintln!("wrote {} PNG chart(s) to {}:", files.len(), dir.display());
    for (name, bytes) in &files {
        eprintln!("  {name} ({:.0} KB)", bytes.len() as f64 / 1e3);
    }
    Ok(())
}

/// `dbdelta list steps [--sql --engine E]`: each suite's listing, in registry order.
fn list_steps(args: &ListArgs) -> Result<String> {
    let suites = crate::suites::registry();
    if !args.sql {
        return Ok(suites.iter().map(|s| s.list_steps()).collect());
    }
    let name = args.engine.as_deref().unwrap_or("sqlite");
    let Some(engine) = EngineKind::parse(name) else {
        return crate::error::input(format!(
            "--engine {name}: unknown engine; use one of {}",
            EngineKind::names().join(", ")
        ));
    };
    Ok(suites.iter().map(|s| s.list_sql(engine)).collect())
}

fn list(store_path: &Path, args: ListArgs) -> Result<ExitCode> {
    if args.sql && args.what != ListWhat::Steps {
        return crate::error::input("--sql only applies to `dbdelta list steps`");
    }
    if let Some(p) = &args.product
        && args.what != ListWhat::Versions
    {
        return crate::error::input(format!(
            "list: unexpected argument {p}; a product only follows `dbdelta list versions`"
        ));
    }
    let mut out = String::new();
    let mut code = ExitCode::SUCCESS;
    match args.what {
        ListWhat::Versions => {
            if !list_versions(args.product.as_deref(), &mut out)? {
                code = ExitCode::from(EXIT_FAILED);
            }
        }
        ListWhat::Steps => out = list_steps(&args)?,
        ListWhat::Runs => {
            let store = Store::open_existing(store_path)?;
            if let Some(warning) = store.exposure() {
                eprintln!("{warning}");
            }
            for r in store.list_runs()? {
                let mut label = r.name.map(|n| format!("  name {n}")).unwrap_or_default();
                if !r.tags.is_empty() {
                    label.push_str(&format!("  tags {}", r.tags.join(",")));
                }
                out.push_str(&format!(
                    "{}  {}  {:<10}  {} step(s), {} measurement(s)  {}  [{}]{label}\n",
                    r.id,
                    r.started,
                    if r.complete { "complete" } else { "INCOMPLETE" },
                    r.steps,
                    r.measurements,
                    r.lab,
                    r.targets.join(", ")
                ));
            }
        }
        ListWhat::Targets => {
            let store = Store::open_existing(store_path)?;
            for r in store.list_runs()? {
                let data = store.load_run(&r.id)?;
                for t in data.targets {
                    out.push_str(&format!(
                        "{}  {:<24} {:<8} {}{}\n",
                        r.id,
                        t.name,
                        report::engine_label(&t),
                        t.server_version.unwrap_or_else(|| "-".into()),
                        if t.failed { "  FAILED" } else { "" }
                    ));
                }
            }
        }
    }
    write_text(args.output.as_deref(), &out, "the listing")?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }

    /// The help states the ranges of `crate::range`, where they are written once.
    #[test]
    fn the_help_states_the_ranges() {
        use clap::CommandFactory;
        let mut cmd = super::Cli::command();
        let help = cmd
            .find_subcommand_mut("run")
            .unwrap()
            .render_long_help()
            .to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for range in [crate::range::REPEATS, crate::range::CLIENTS] {
            assert!(help.contains(&range.words()), "{}: {help}", range.words());
        }
        assert!(help.contains(&format!("at most {} cells", crate::range::MAX_CELLS)));
    }

    /// Every command, walked from the top: `--store` only on the commands that open a store,
    /// `-q`/`-v` only on those that print progress, `-o` on every one that prints a report or
    /// a listing, and no flag global (a global flag shows in every command's help, used or not).
    #[test]
    fn every_flag_is_on_the_commands_that_use_it() {
        use clap::CommandFactory;
        fn walk(cmd: &clap::Command, path: String, out: &mut Vec<(String, Vec<String>)>) {
            for a in cmd.get_arguments() {
                assert!(!a.is_global_set(), "{path}: --{} is global", a.get_id());
            }
            let ids = cmd.get_arguments().map(|a| a.get_id().to_string());
            out.push((path.clone(), ids.collect()));
            for sub in cmd.get_subcommands() {
                walk(sub, format!("{path} {}", sub.get_name()), out);
            }
        }
        let mut all = Vec::new();
        walk(&super::Cli::command(), "dbdelta".into(), &mut all);
        let with = |id: &str| -> Vec<&str> {
            (all.iter())
                .filter(|(p, ids)| p != "dbdelta" && ids.iter().any(|i| i == id))
                .map(|(p, _)| p.trim_start_matches("dbdelta "))
                .collect()
        };
        let stores = [
            "run",
            "plan",
            "report",
            "compare",
            "history",
            "list",
            "bisect",
            "explain",
            "profile",
            "serve",
            "store push",
        ];
        assert_eq!(with("store"), stores);
        let talks = ["run", "fetch", "build", "bisect", "explain"];
        assert_eq!(with("quiet"), talks);
        assert_eq!(with("verbose"), talks);
        let outputs = [
            "run", "plan", "report", "compare", "history", "list", "profile",
        ];
        assert_eq!(with("output"), outputs);
        // Before the command they are refused where they would do nothing.
        for argv in [
            &["dbdelta", "--store", "s.db", "fetch", "postgres@17"][..],
            &["dbdelta", "-q", "report"],
            &["dbdelta", "--store", "s.db", "init"],
        ] {
            let cli = super::parse_from(argv).unwrap();
            let e = super::Shared::of(&cli).err().expect("refused");
            assert!(e.to_string().contains("drop"), "{argv:?}: {e}");
        }
        let cli = super::parse_from(["dbdelta", "--store", "a.db", "report"]).unwrap();
        let super::Command::Report(args) = &cli.command else {
            panic!()
        };
        let top = super::Shared::of(&cli).unwrap();
        assert_eq!(top.store(&args.store), std::path::Path::new("a.db"));
    }

    /// `bisect`'s plan: the metric that decides (and why), and one-line refusals of what has
    /// nothing to bisect or no verdict to decide by.
    #[test]
    fn bisect_decides_by_instructions_when_counted_and_refuses_what_gives_no_verdict() {
        use crate::runner::bisect::Decider;
        let dir = tempfile::tempdir().unwrap();
        let lab = |extra: &str, targets: usize| {
            // One file per lab (a later lab must not overwrite an earlier one still in use).
            let path = dir
                .path()
                .join(format!("lab-{targets}-{}.toml", extra.len()));
            let mut text = format!("[lab]\nname = \"b\"\n{extra}\n");
            for i in 0..targets {
                text.push_str(&format!(
                    "[[target]]\nname = \"t{i}\"\nengine = \"sqlite\"\n"
                ));
            }
            std::fs::write(&path, text).unwrap();
            path.display().to_string()
        };
        let plan = |lab: &str, flags: &[&str]| {
            let mut argv = vec!["dbdelta", "bisect", lab, "--quick"];
            argv.extend(flags);
            let super::Command::Bisect(args) = super::parse_from(argv).unwrap().command else {
                panic!()
            };
            super::bisect_plan(&args).map_err(|e| e.to_string())
        };
        let counted = lab("repeats = 1\ninstructions = true", 3);
        let (p, by, why, _) = plan(&counted, &["--step", "point-query"]).unwrap();
        assert_eq!((by, p.targets.len()), (Decider::Instructions, 3));
        assert!(why.contains("the lab counts instructions"), "{why}");
        let steps: Vec<&str> = p.steps().map(|s| s.label.as_str()).collect();
        assert_eq!(steps, ["point-query"], "only the judged step runs");
        // The group's steps, and nothing else.
        let (p, ..) = plan(&counted, &["--group", "point"]).unwrap();
        assert!(p.steps().count() > 1 && p.steps().all(|s| s.group == "point"));

        let timed = lab("repeats = 1", 3);
        let e = plan(&timed, &["--step", "point-query"]).unwrap_err();
        assert!(
            e.contains("set repeats >= 2") && e.contains("instructions = true"),
            "{e}"
        );
        let (_, by, why, _) = plan(&timed, &["--step", "point-query", "--repeats", "3"]).unwrap();
        assert_eq!(by, Decider::ServerCpu);
        assert!(why.contains("3 paired repeats"), "{why}");
        let (_, by, ..) = plan(
            &timed,
            &["--step", "point-query", "--metric", "instructions"],
        )
        .unwrap();
        assert_eq!(by, Decider::Instructions);

        for (lab, flags, want) in [
            (lab("", 1), &["--step", "point-query"][..], "one target"),
            (
                counted.clone(),
                &["--step", "x", "--only", "x"],
                "--only/--skip",
            ),
            (counted.clone(), &["--group", "nope"], "--group nope"),
            (
                lab("repeats = \"auto\"", 2),
                &["--step", "point-query"],
                "\"auto\"",
            ),
        ] {
            let e = plan(&lab, flags).unwrap_err();
            assert!(e.contains(want) && !e.contains('\n'), "{flags:?}: {e}");
        }
    }

    #[test]
    fn markdown_is_md_and_png_names_the_png_flag() {
        let cli = super::parse_from(["dbdelta", "report", "--format", "markdown"]).unwrap();
        let super::Command::Report(args) = cli.command else {
            panic!()
        };
        assert_eq!(args.out.format, crate::report::Format::Markdown);
        let e = super::parse_from(["dbdelta", "run", "--format", "png"]).unwrap_err();
        let line = super::usage_error(&e);
        assert!(
            line.starts_with("--format png:") && line.contains("--png DIR"),
            "{line}"
        );
    }

    #[test]
    fn usage_errors_are_one_line() {
        use clap::Parser;
        for argv in [
            &["dbdelta", "run", "--repeats", "4294967295"][..],
            &["dbdelta", "run", "--frob"],
            &["dbdelta", "store", "push"],
            &["dbdelta", "run", "--format", "xml"],
            &["dbdelta", "nope"],
        ] {
            let e = super::Cli::try_parse_from(argv).unwrap_err();
            let line = super::usage_error(&e);
            assert!(
                !line.contains('\n') && !line.starts_with("error"),
                "{argv:?}: {line}"
            );
            assert!(
                line.ends_with("(dbdelta help [COMMAND] lists the flags)"),
                "{line}"
            );
        }
        let e = super::Cli::try_parse_from(["dbdelta", "run", "--repeats", "0"]).unwrap_err();
        assert!(super::usage_error(&e).contains("0 is not in 1..=1000"));
    }
}
