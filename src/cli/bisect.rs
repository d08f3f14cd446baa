//! `dbdelta bisect`: its flags, the plan of a bisection (the deciding step or group and
//! metric checked against the lab) and showing a stored bisection. Must not: search or decide
//! anything itself (`runner::bisect` does).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};

use super::run::{
    DEFAULT_WORKDIR, Interrupted, ShapeArgs, interrupt_flag, interrupted_code, load_lab, run_label,
};
use super::{StoreArg, Verbosity};
use crate::console::{errln, outln};
use crate::error::EXIT_INTERRUPTED;
use crate::plan::{self, RunOptions};
use crate::progress::Progress;
use crate::store::Store;

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

/// `dbdelta bisect LAB --step STEP`: plan, then measure targets into one run as the search
/// asks; the answer on standard output. `--show RUN`: a stored bisection's answer.
pub(super) fn bisect_cmd(
    store_path: &Path,
    args: BisectArgs,
    progress: &Progress,
) -> Result<ExitCode> {
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
        errln!(
            "interrupted: run {} is stored as incomplete in {}",
            answer.run_id,
            store.path().display()
        );
        let code = crate::signals::first().map_or(EXIT_INTERRUPTED, interrupted_code);
        return Ok(ExitCode::from(code));
    };
    outln!(
        "run {}: decided by {}: {why}\n{text}",
        answer.run_id,
        by.words()
    );
    Ok(ExitCode::SUCCESS)
}

/// The plan of a bisection (only the judged steps), the metric that decides and why; bad
/// input when there is nothing to bisect or no verdict to decide by.
pub(super) fn bisect_plan(
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
    outln!(
        "run {run_id}: bisection by {} on {}\n{answer}",
        b.metric,
        b.steps
    );
    Ok(ExitCode::SUCCESS)
}
