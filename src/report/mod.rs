//! Temporary stub; replaced by the report layer (model + renderers).
use crate::results::RunData;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    #[value(name = "md")]
    Markdown,
    Json,
}

#[derive(Debug, serde::Serialize)]
pub struct ReportModel {
    pub data: RunData,
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("--base {base}: run {run} has no such target (targets: {}); pick one of them", known.join(", "))]
    UnknownBase {
        base: String,
        run: String,
        known: Vec<String>,
    },
}

pub fn build(data: &RunData, _base: Option<&str>) -> Result<ReportModel, ReportError> {
    Ok(ReportModel { data: data.clone() })
}

pub fn render(model: &ReportModel, _format: Format, _color: bool) -> String {
    serde_json::to_string_pretty(&model.data).unwrap_or_default()
}
