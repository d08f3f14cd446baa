//! What `dbdelta explain` keeps with a run (table `explanations`): per explained step of a
//! target, its split into code and configuration (`results::StepExplanation`), beside the
//! measurements row that holds the step's instructions/op, so `report` and `serve` show it.
//!
//! Owns that table's writes (reads are `read::attach_explanations`'s). Must not: count or
//! judge anything (`explain` does).

use anyhow::Result;

use super::{CellKey, Store};
use crate::results::StepExplanation;

impl Store {
    /// Keep `explanation` for `step` of run `run_id` at `key`'s target × suite × clients, on
    /// the row of its first repeat (the counted one), replacing one stored before; false when
    /// the run has no such step.
    pub fn set_explanation(
        &mut self,
        key: &CellKey,
        run_id: &str,
        step: &str,
        explanation: &StepExplanation,
    ) -> Result<bool> {
        let json = serde_json::to_string(explanation)?;
        self.set_step_json(
            ("explanations", "explanation_json"),
            key,
            run_id,
            step,
            json,
        )
    }
}
