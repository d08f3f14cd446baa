//! Reports: turn one run's records ([`RunData`](crate::results::RunData)), or two runs' for
//! `dbdelta compare`, into text, Markdown, CSV, JSON or HTML, and charts into PNG bytes, every
//! format drawn from the same [`ReportModel`].
//!
//! Owns the public report API ([`build`], [`render`], [`Format`], [`ReportError`]). Everything
//! here is pure: data in, bytes out. It must not read or write files, look at the terminal,
//! the clock or the environment; callers decide colour and where the bytes go, and hand it the
//! suites it knows ([`build_for`], [`compare_for`]; the shorter entry points hand it every
//! suite compiled in, [`crate::suites::all`], so that a stored run reads the same whatever the
//! environment).

// The stages, in the order a report is made.
/// The model from a run's records, or from two runs' (`compare`).
mod build;
/// Format-independent blocks every human-readable format draws.
mod layout;
/// What a report says: every number, verdict and note a format shows.
pub mod model;
/// The formats: text, Markdown, CSV, JSON, HTML, charts and flame graphs.
pub mod render;
/// Sections computed from the model and laid out: the answer, the first screen, by version,
/// the crossover, instructions, why, profiles.
pub mod sections;
/// The suites' own report sections.
mod suites;
/// The tests, ranges and floors applied to the model's relative rows.
mod verdicts;

// Each file by its name, as the stages' files name each other.
use build::compare;
use model::why_model;
use render::{charts, doc, flame, html, json, markdown, text};
pub use render::{csv, fmt};
pub use sections::profile;
use sections::{
    answer, by_version, call_tree, crossover, first_screen, instructions, settings, why,
};
use verdicts::resolution;

pub use why::{
    FlameListing, flame_files as instruction_flame_files,
    flame_listing as instruction_flame_listing,
};

#[cfg(test)]
mod fixture;
#[cfg(test)]
mod tests;

pub use build::engine_label;
pub use compare::CompareError;
pub use html::escape;
pub use model::ReportModel;
pub use settings::is_place;
pub use why::explanation_line;

use crate::suites::SuiteKind;

/// Output format of `dbdelta report --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Terminal tables.
    #[value(name = "text")]
    Text,
    /// Blog-ready GitHub Markdown.
    #[value(name = "md", alias = "markdown")]
    Markdown,
    /// The versioned JSON contract (`schema/report-v4.schema.json`).
    #[value(name = "json")]
    Json,
    /// Long form: one row per target × clients × step, for pandas, SQLite or a spreadsheet.
    #[value(name = "csv")]
    Csv,
    /// One self-contained HTML page with SVG charts.
    #[value(name = "html")]
    Html,
}

/// Why a report could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    #[error(
        "--base {base}: run {run} has no such target (targets: {}); pick one of them",
        known.join(", ")
    )]
    UnknownBase {
        base: String,
        run: String,
        known: Vec<String>,
    },
    #[error("chart {chart}: {reason}")]
    Chart { chart: String, reason: String },
}

/// What a report is computed with, besides the run's records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    /// The target every other one is relative to (default: the run's first target; not used
    /// by a compare).
    pub base: Option<String>,
    /// Overrides the minimum effect stored with the run (`--min-effect`).
    pub min_effect: Option<f64>,
    /// Judge each step alone (Student's t), not moderated with its family (evidence only).
    pub student: bool,
    /// Overrides the looks stored with the run (evidence only: what a `repeats = "auto"` run
    /// would have said).
    pub looks: Option<u32>,
    /// Only repeats 1..=N (evidence only: what fewer repeats would have said).
    pub first_repeats: Option<u32>,
    /// The sides ran in separate runs, not interleaved (`compare`): their repeats are not
    /// pairs, so there is no verdict from repeats (method `test` = `none`).
    pub separate_runs: bool,
}

/// Builds the report model of a run, relative to `base` (default: the run's first target).
pub fn build(
    data: &crate::results::RunData,
    base: Option<&str>,
) -> Result<ReportModel, ReportError> {
    build_with_options(
        data,
        &Options {
            base: base.map(String::from),
            ..Options::default()
        },
    )
}

/// [`build`] with every option.
pub fn build_with_options(
    data: &crate::results::RunData,
    opts: &Options,
) -> Result<ReportModel, ReportError> {
    build_for(data, opts, &crate::suites::all())
}

/// [`build_with_options`] knowing only `suites` (their report groups' order and titles; a
/// group no suite lists is shown under its id, after theirs).
pub fn build_for(
    data: &crate::results::RunData,
    opts: &Options,
    suites: &[&dyn SuiteKind],
) -> Result<ReportModel, ReportError> {
    build::build(data, opts, suites)
}

/// The steps (by client count and label) that a `repeats = "auto"` run has not decided after
/// repeats `1..=done`: some compared target's step has neither a QPS nor a server CPU/op verdict
/// and its QPS could still hide a change of more than twice the minimum effect (its
/// `detectable` is larger than `(1 + min_effect)² − 1`). A step without a test (a failed or
/// missing side) counts as decided: more repeats would not give it one.
pub fn undecided(
    data: &crate::results::RunData,
    done: u32,
) -> Result<std::collections::BTreeSet<(u32, String)>, ReportError> {
    let opts = Options {
        first_repeats: Some(done),
        ..Options::default()
    };
    let model = build::build(data, &opts, &crate::suites::all())?;
    let enough = (1.0 + model.method.min_effect).powi(2) - 1.0;
    let called = |t: Option<&model::MetricTest>| t.is_some_and(|t| model::is_decided(&t.verdict));
    Ok((model.relative.iter())
        .filter(|r| {
            let Some(qps) = &r.qps_test else { return false };
            let cpu = r.tests.get(crate::results::Metric::ServerCpu);
            !(called(Some(qps)) || called(cpu) || qps.detectable <= enough)
        })
        .map(|r| (r.clients, r.step.clone()))
        .collect())
}

/// The report of run `b` relative to run `a` (`dbdelta compare A B`): targets paired by name,
/// steps by (target, step, clients); refuses runs of different scale or client counts.
pub fn compare(
    a: &crate::results::RunData,
    b: &crate::results::RunData,
) -> Result<ReportModel, CompareError> {
    compare_for(a, b, &Options::default(), &crate::suites::all())
}

/// [`compare`] with every option (`opts.base` is not used: each run-B target is relative to
/// its run-A twin). Without `opts.min_effect`, run B's stored minimum effect applies, else run
/// A's.
pub fn compare_with_options(
    a: &crate::results::RunData,
    b: &crate::results::RunData,
    opts: &Options,
) -> Result<ReportModel, CompareError> {
    compare_for(a, b, opts, &crate::suites::all())
}

/// [`compare_with_options`] knowing only `suites`, as [`build_for`].
pub fn compare_for(
    a: &crate::results::RunData,
    b: &crate::results::RunData,
    opts: &Options,
    suites: &[&dyn SuiteKind],
) -> Result<ReportModel, CompareError> {
    compare::compare_runs(a, b, opts, suites)
}

/// Renders a model. `color` only affects [`Format::Text`] (ANSI colours on relative cells).
pub fn render(model: &ReportModel, format: Format, color: bool) -> String {
    match format {
        Format::Text => text::render(&layout::document(model), color),
        Format::Markdown => markdown::render(&layout::document(model)),
        Format::Json => json::render(model),
        Format::Csv => csv::render(model),
        Format::Html => html::render(model),
    }
}

/// Every chart of the report as a PNG file: `(file name, bytes)`, in report order (per client
/// count: one relative-QPS chart per group, then one throughput chart per step). The caller
/// writes them.
pub fn png_charts(model: &ReportModel) -> Result<Vec<(String, Vec<u8>)>, ReportError> {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for block in layout::document(model) {
        let doc::Block::Figures { charts: refs, .. } = block else {
            continue;
        };
        for chart in refs {
            let stem = charts::file_stem(&chart);
            let bytes = charts::png(model, &chart).map_err(|reason| ReportError::Chart {
                chart: stem.clone(),
                reason,
            })?;
            let Some(bytes) = bytes else { continue };
            let mut name = format!("{stem}.png");
            let mut n = 1;
            while files.iter().any(|(f, _)| *f == name) {
                n += 1;
                name = format!("{stem}-{n}.png");
            }
            files.push((name, bytes));
        }
    }
    Ok(files)
}
