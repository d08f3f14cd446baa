//! The JSON report: the model serialized as the versioned contract of docs/reports.md, described by
//! `schema/report-v4.schema.json`.
//!
//! Owns only serialization. It must not compute numbers (that is `build`'s job) or do I/O.

use super::super::ReportModel;

/// Pretty-printed JSON with a trailing newline.
pub fn render(model: &ReportModel) -> String {
    let mut out = serde_json::to_string_pretty(model).expect("the report model always serializes");
    out.push('\n');
    out
}
