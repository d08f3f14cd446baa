//! T's settings as the explained run used them. Planning the run again from its stored lab
//! text reads T's `config =` file from disk as it is now (or finds it gone); when its lines
//! differ from the ones the run stored (`plan::stored_settings`), T (and so every twin, which
//! starts from T's spec) takes the stored ones, and one line on standard error names the file.
//!
//! Owns that choice. Must not: read the store or a lab file (the caller hands it the run's
//! record and the plan), or start anything.

use std::path::Path;

use crate::console::errln;
use crate::engine::connect::holds_redacted;
use crate::error::InputError;
use crate::plan::TargetPlan;
use crate::plan::stored_settings::{difference, stored_lines};

/// Give `target` (planned again from run `run_id`'s stored lab) the settings lines the run
/// stored for it (`config_text`) when its lines now differ, saying so on standard error;
/// `lab` is the lab file, whose folder a relative `config =` path starts at. Bad input when
/// they differ and the stored lines hold a password the store does not keep.
pub fn use_stored(
    target: &mut TargetPlan,
    config_text: &str,
    run_id: &str,
    lab: Option<&Path>,
) -> Result<(), InputError> {
    let Some(diff) = difference(target, config_text, lab) else {
        return Ok(());
    };
    let differs = diff.sentence(&target.name, run_id);
    if holds_redacted(config_text) {
        return Err(InputError::new(format!(
            "{differs}, and the run's stored lines hold a password the store does not keep: \
             restore the file to explain run {run_id}"
        )));
    }
    errln!(
        "explain: {differs}: {} is counted with the run's lines",
        target.name
    );
    target.settings = (stored_lines(config_text).iter())
        .map(|l| l.to_string())
        .collect();
    Ok(())
}
