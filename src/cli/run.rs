//! `dbdelta run` and `dbdelta plan`: their flags (the lab's shape and how to run it), loading
//! the lab or the demo, running or resuming a plan, the exit code of an interrupted or failed
//! run. Must not: measure, render or touch SQL itself (`runner`, `report` and `store` do).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};

use super::reports::{ReportOut, write_report};
use super::write::write_text;
use super::{StoreArg, Verbosity};
use crate::console::errln;
use crate::error::{EXIT_FAILED, EXIT_INTERRUPTED, InputError};
use crate::plan::{self, RunOptions};
use crate::progress::Progress;
use crate::range;
use crate::report;
use crate::store::Store;

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
    /// Rows per table of the sysbench suite, from 200 (overrides the lab and --quick;
    /// sysbench's --table-size).
    #[arg(long, value_name = "N", visible_alias = "table-size")]
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
pub(super) const DEFAULT_WORKDIR: &str = "dbdelta-work";

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

/// The lab file, or the built-in demo without one.
pub(super) fn load_lab(path: Option<&Path>) -> Result<crate::plan::lab::Lab> {
    Ok(match path {
        Some(path) => crate::plan::lab::load(path)?,
        None => crate::plan::lab::parse(plan::demo_lab(), "<built-in demo>", Path::new("."))?,
    })
}

/// `dbdelta plan [LAB]`: the plan in words (what `run --dry-run` prints), or with `--emit k8s`
/// its Kubernetes manifests; on standard output or, whole, in `-o FILE`.
pub(super) fn plan_cmd(store_path: &Path, args: PlanArgs) -> Result<ExitCode> {
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
/// `plan` print), with no password or secret in it; a version that does not exist is refused,
/// as by `run`.
fn plan_text(plan: &plan::RunPlan, store: &Path) -> Result<String> {
    let free = crate::plan::preflight::free_bytes(&plan.workdir).ok();
    let free = free.as_ref().map(|(p, b)| (p.as_path(), *b));
    let need = crate::plan::preflight::disk_need(plan);
    // The fetches beside the targets, before the order and the time.
    let mut text = plan.describe();
    let at = text.find("\norder: ").map_or(text.len(), |i| i + 1);
    text.insert_str(at, &plan::describe_fetches(plan)?);
    let estimate = crate::plan::estimate::estimate(plan, &calibration(store));
    let text = format!(
        "{text}{}\n{}\n",
        estimate.describe(plan),
        crate::plan::preflight::describe(&need, free)
    );
    // A setting may hold a password (`primary_conninfo = '… password=…'`).
    Ok(crate::engine::connect::redact_secrets(&text).into_owned())
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

pub(super) fn run(store_path: &Path, args: RunArgs, progress: &Progress) -> Result<ExitCode> {
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

/// Refuse to resume a run whose targets are not its lab's: the twins `dbdelta explain` counts
/// (`T-again`, `T-twin1`, …) in a run of their own, stored incomplete when explain stopped;
/// resumed, their lab's targets would be run into it. Explain counts its twins again from its
/// start. A run no target was stored in yet is one of those (a lab's run stores its targets
/// when it begins).
fn refuse_twins(run_id: &str, data: &crate::results::RunData, plan: &plan::RunPlan) -> Result<()> {
    let lab: Vec<&str> = plan.targets.iter().map(|t| t.name.as_str()).collect();
    let stored: Vec<&str> = data.targets.iter().map(|t| t.name.as_str()).collect();
    if !stored.is_empty() && stored.iter().all(|n| lab.contains(n)) {
        return Ok(());
    }
    let held = match stored.is_empty() {
        true => "no target yet".to_string(),
        false => format!("targets ({}) that its lab has not", stored.join(", ")),
    };
    crate::error::input(format!(
        "--resume {run_id}: the run holds {held}: it is `dbdelta explain`'s twins' run, which \
         explain counts again from its start; run `dbdelta explain` again on the run it explains"
    ))
}

/// `run --resume [RUN]`: the run's plan rebuilt from what it stored (refused when the lab
/// file changed it), then every cell that did not finish.
pub(super) fn resume(
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
        (args.how.keep, crate::plan::lab::GoneConfig::Fail),
    )?;
    check_report_args(&plan, args)?;
    refuse_twins(&run_id, &data, &plan)?;
    let settings: Vec<(&str, &str)> = (data.targets.iter())
        .map(|t| (t.name.as_str(), t.config_text.as_str()))
        .collect();
    let lab = args.lab.as_deref().or(stored.lab_path.as_deref());
    crate::plan::resume::refuse_changed_settings(&run_id, &plan, &settings, lab)?;
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
pub(super) fn run_label(name: Option<&String>, tag: &[String]) -> Result<crate::store::RunLabel> {
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
        ..crate::store::RunLabel::default()
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

/// What a terminating signal stops: a run (resumable) or a bisection (started again).
#[derive(Clone, Copy)]
pub(super) enum Interrupted {
    Run,
    Bisection,
}

/// Set on the first terminating signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT: the step and any
/// wait end at once, the server is stopped, a run stays resumable); a second one kills every
/// server and tool dbdelta started and ends the process at once, exit 128 + its number. A
/// closed pipe on standard output or error is a first SIGPIPE (exit 141), noticed within
/// [`crate::signals::POLL`] even while nothing is written.
pub(super) fn interrupt_flag(what: Interrupted) -> Result<Arc<AtomicBool>> {
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
    // A run's output is read to its end: a reader gone stops it even while nothing is written.
    crate::signals::watch_pipes().context("watching standard output and error")?;
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
pub(super) fn interrupted_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(EXIT_INTERRUPTED)
}

/// After the report: say what was interrupted or failed, and the exit code that goes with it.
fn exit_status(outcome: &crate::runner::Outcome, store: &Store) -> ExitCode {
    if outcome.interrupted {
        errln!(
            "interrupted: run {} is stored as incomplete in {}",
            outcome.run_id,
            store.path().display()
        );
        let code = crate::signals::first().map_or(EXIT_INTERRUPTED, interrupted_code);
        return ExitCode::from(code);
    }
    if !outcome.failures.is_empty() {
        errln!(
            "{} failure(s) in run {}:",
            outcome.failures.len(),
            outcome.run_id
        );
        for f in &outcome.failures {
            errln!("  {f}");
        }
        return ExitCode::from(EXIT_FAILED);
    }
    ExitCode::SUCCESS
}
