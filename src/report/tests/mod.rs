//! Report tests over the fixtures: snapshots of every format, the JSON schema, and model
//! properties (base selection, aggregation, verdicts), one file per report section or topic;
//! this file holds only the schema they validate against.
//!
//! Owns only tests; it reads nothing but the schema compiled in with `include_str!`.

use serde_json::Value;

use super::*;

mod consistency;
mod formats;
mod groups;
mod instructions;
mod json_schema;
mod profiles;
mod suite_tables;
mod sweeps;
mod verdicts;
mod warnings;

const SCHEMA: &str = include_str!("../../../schema/report-v4.schema.json");

fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(SCHEMA).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

fn schema_errors(instance: &Value) -> Vec<String> {
    validator()
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}
