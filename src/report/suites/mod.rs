//! The suites' own report sections (the Insert Benchmark's summary tables, LinkBench's), behind
//! one trait and one list, so that the model builder and the layout call no suite by name.
//!
//! A suite's section lives here, not in its folder under `suites/`: a section reads the report
//! model and writes report blocks, and `suites/` sits below `report` in the layers. Adding a
//! suite with its own tables is a file here, its schema fragment beside it (`NAME.schema.json`,
//! copied under `suites` in the JSON schema; a test checks the copy), one line in [`SECTIONS`]
//! and its arm of [`SuiteTables`]. The model keeps each suite's tables under its suite id
//! ([`ReportModel::suites`]). Must not: read the store or files, or format for one output (the
//! renderers do).

mod insert;
mod linkbench;

pub(super) use insert::summaries_of as insert_summaries;
#[cfg(test)]
pub(super) use linkbench::summaries_of as linkbench_summaries;

use super::doc::Block;
use super::model::{ReportModel, SuiteTables};

/// A suite's part of a report.
pub(super) trait SuiteSection: Sync {
    /// The suite id its measurements are stored with, and its key in [`ReportModel::suites`].
    fn suite(&self) -> &'static str;
    /// The JSON schema of its value under `suites` (a JSON text: `NAME.schema.json`), which
    /// the schema file must list (a test checks it).
    #[cfg(test)]
    fn schema(&self) -> &'static str;
    /// The suite's tables from the model's aggregates and measurement rows (before the
    /// verdicts); `None` when the run has none of its steps.
    fn summarize(&self, model: &ReportModel) -> Option<SuiteTables>;
    /// Warnings about the suite's own rules (after the model's general warnings).
    fn warnings(&self, _model: &ReportModel) -> Vec<String> {
        Vec::new()
    }
    /// Its tables in the human-readable report, after the load section.
    fn blocks(&self, model: &ReportModel, doc: &mut Vec<Block>);
    /// What the load section says when no load phase was recorded and the run has the suite's
    /// tables (a suite that loads in a step of its own says so).
    fn no_load_note(&self) -> Option<&'static str> {
        None
    }
}

/// The load section's sentence when no load phase was recorded: a note of a suite the run
/// measured, else the plain one.
pub(super) fn no_load_text(model: &ReportModel) -> &'static str {
    (SECTIONS.iter())
        .filter(|s| model.suites.contains_key(s.suite()))
        .find_map(|s| s.no_load_note())
        .unwrap_or("No load phase was recorded.")
}

/// Every suite section, in report order.
pub(super) static SECTIONS: &[&dyn SuiteSection] = &[&insert::Section, &linkbench::Section];
