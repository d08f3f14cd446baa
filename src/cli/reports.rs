//! The commands that read stored runs and write what they find: `report`, `compare`, `history`
//! and `profile`, their flags and where their output goes (`-o`, `--png`). Must not: build or
//! render a report itself (`report` does), or write to the store.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use super::write::{write_named, write_text};
use super::{StoreArg, color_wanted};
use crate::console::{errln, outln};
use crate::report::{self, Format};
use crate::store::Store;

#[derive(Debug, Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Run id, name (`run --name`), `latest` or `previous`.
    pub run: String,
    /// A profiled or counted step's label, e.g. hot-points.
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
    pub(super) fn check(&self) -> Result<()> {
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

pub(super) fn report_cmd(store_path: &Path, args: ReportArgs) -> Result<ExitCode> {
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

/// `dbdelta profile RUN STEP`: the step's flame graphs and folded profiles as files (a
/// profiled run's CPU graphs, a counted run's instruction graphs, the one that shows the larger
/// change first), each written whole (a temporary file renamed into place) and named on standard
/// output, with what each instruction graph shows on standard error.
pub(super) fn profile_cmd(store_path: &Path, args: ProfileArgs) -> Result<ExitCode> {
    let store = Store::open_existing(store_path)?;
    let run_id = store.resolve_run(Some(&args.run))?;
    let opts = report::Options {
        base: args.base.clone(),
        ..report::Options::default()
    };
    let data = store.load_run(&run_id)?;
    let model = report::build_with_options(&data, &opts)
        .map_err(|e| crate::error::InputError::new(e.to_string()))?;
    known_step_and_target(&data, &args)?;
    let counted = report::instruction_flame_files(&model, &args.step, args.target.as_deref())
        .map_err(crate::error::InputError::new)?;
    let files = match report::profile::files(&model, &args.step, args.target.as_deref()) {
        Ok(files) => files.into_iter().chain(counted).collect(),
        Err(_) if !counted.is_empty() => counted,
        Err(e) if let Some(base) = counted_base(&model, &args) => {
            let compared: Vec<&str> = (model.relative.iter())
                .filter(|r| r.base == base && r.step == args.step)
                .map(|r| r.target.as_str())
                .collect();
            let why = format!(
                "{e}; its instruction flame graphs are drawn per target compared with its base, \
                 and --target {base} is the base: name one of {} (or leave --target out)",
                dedup(compared).join(", ")
            );
            return Err(crate::error::InputError::new(why).into());
        }
        Err(e) => {
            let why = format!(
                "{e}; nor has {} call trees counted by callgrind (run it with --instructions)",
                args.step
            );
            return Err(crate::error::InputError::new(why).into());
        }
    };
    let dir = &args.output;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("-o {}: cannot create the directory", dir.display()))?;
    let listing = report::instruction_flame_listing(&model, &args.step, args.target.as_deref());
    for (name, bytes) in files {
        let path = dir.join(&name);
        write_named("-o", &path, &bytes, &name)?;
        outln!("{}", path.display());
        // What an instruction graph shows, on standard error: standard output stays a list of
        // paths, the larger change's graph first.
        if let Some(l) = listing.iter().find(|l| l.file == name) {
            errln!("  {}: {}", l.title, l.shows);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `profile`'s step and `--target` checked against the run: a step it did not run, or a
/// target it does not have, is named with the run's own (the near ones first).
fn known_step_and_target(data: &crate::results::RunData, args: &ProfileArgs) -> Result<()> {
    let run = &data.run.id;
    let steps = dedup((data.measurements.iter().filter(|m| !m.warm)).map(|m| m.step.as_str()));
    if !steps.contains(&args.step.as_str()) {
        return crate::error::input(format!(
            "step {}: run {run} has no such step{}; its steps: {}",
            args.step,
            crate::suggest::did_you_mean(&args.step, steps.iter().copied()),
            steps.join(", ")
        ));
    }
    let targets: Vec<&str> = data.targets.iter().map(|t| t.name.as_str()).collect();
    match &args.target {
        Some(want) if !targets.contains(&want.as_str()) => crate::error::input(format!(
            "--target {want}: run {run} has no such target; its targets: {}",
            targets.join(", ")
        )),
        _ => Ok(()),
    }
}

/// `--target` when it names the base of the step's instruction comparisons (and no target is
/// compared with it there): its graphs are its compared targets'.
fn counted_base(model: &report::ReportModel, args: &ProfileArgs) -> Option<String> {
    let want = args.target.as_deref()?;
    let on_step = || model.relative.iter().filter(|r| r.step == args.step);
    let is_base = on_step().any(|r| r.base == want) && !on_step().any(|r| r.target == want);
    let counted = (model.functions.iter()).any(|f| f.steps.iter().any(|s| s.step == args.step));
    (is_base && counted).then(|| want.to_string())
}

/// The names in first-seen order, each once.
fn dedup<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for n in names {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// `dbdelta history`: the flags checked, the series read and their change points found, then
/// rendered.
pub(super) fn history_cmd(store_path: &Path, args: &HistoryArgs) -> Result<ExitCode> {
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
pub(super) fn compare_cmd(store_path: &Path, args: CompareArgs) -> Result<ExitCode> {
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
pub(super) fn write_report(model: &report::ReportModel, out: &ReportOut) -> Result<()> {
    let format = out.format;
    match out.output.as_deref() {
        Some(path) => {
            let text = report::render(model, format, false);
            write_named("-o", path, text.as_bytes(), "the report")?;
        }
        None => {
            let text = report::render(model, format, color_wanted());
            crate::console::write_out(text.as_bytes())?;
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
        errln!(
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
    errln!("wrote {} PNG chart(s) to {}:", files.len(), dir.display());
    for (name, bytes) in &files {
        errln!("  {name} ({:.0} KB)", bytes.len() as f64 / 1e3);
    }
    Ok(())
}
