//! The suites' own report sections (the Insert Benchmark's summary tables, LinkBench's), behind
//! one trait and one list, so that the model builder and the layout call no suite by name.
//!
//! A suite's section lives here, not in its folder under `suites/`: a section reads the report
//! model and writes report blocks, and `suites/` sits below `report` in the layers. Adding a
//! suite with its own tables is a file here and one line in [`SECTIONS`] (plus, for the JSON
//! contract, its field in the model). Must not: read the store or files, or format for one
//! output (the renderers do).

mod insert;
mod linkbench;

use super::doc::Block;
use super::model::ReportModel;

/// A suite's part of a report.
pub(super) trait SuiteSection: Sync {
    /// Fills the suite's part of the model from its aggregates and measurement rows (before the
    /// verdicts; nothing when the run has none of its steps).
    fn summarize(&self, model: &mut ReportModel);
    /// Warnings about the suite's own rules (after the model's general warnings).
    fn warnings(&self, _model: &ReportModel) -> Vec<String> {
        Vec::new()
    }
    /// Its tables in the human-readable report, after the load section.
    fn blocks(&self, model: &ReportModel, doc: &mut Vec<Block>);
}

/// Every suite section, in report order.
pub(super) static SECTIONS: &[&dyn SuiteSection] = &[&insert::Section, &linkbench::Section];
