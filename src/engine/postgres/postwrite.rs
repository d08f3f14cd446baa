//! The postwrite cleanup after a load or a write-heavy step: `VACUUM (ANALYZE)` per table with
//! the options the server's version takes, `CHECKPOINT`, then the budget waited out. Must not:
//! change a setting or run past its budget.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::diagnostics::server_version_num;
use crate::engine::common::pgwire::PgConn;

/// The postwrite's `VACUUM` options for a server of `server_version_num` `version`:
/// INDEX_CLEANUP is PostgreSQL 12's; 10 and 11 know no such option (and clean up anyway).
pub(super) fn vacuum_options(version: Option<u32>) -> &'static str {
    match version {
        Some(v) if v < 120_000 => "ANALYZE",
        _ => "ANALYZE, INDEX_CLEANUP ON",
    }
}

/// `VACUUM (ANALYZE)` each table, `CHECKPOINT` (an error only when `checkpoint_required`: a
/// `connect` user may lack the right), then wait out the budget so background writers settle,
/// as the reference does.
pub(in crate::engine) fn postwrite(
    admin: &mut PgConn,
    tables: &[String],
    budget: Duration,
    checkpoint_required: bool,
) -> Result<()> {
    let deadline = Instant::now() + budget;
    let options = vacuum_options(server_version_num(admin));
    for t in tables {
        admin
            .simple(&format!("VACUUM ({options}) {t}"))
            .with_context(|| format!("VACUUM (ANALYZE) {t}"))?;
    }
    let checkpoint = admin.simple("CHECKPOINT");
    if checkpoint_required {
        checkpoint.context("CHECKPOINT")?;
    }
    // Cut short by a terminating signal: the run is ending, nothing is measured after this.
    crate::signals::sleep(deadline.saturating_duration_since(Instant::now()));
    Ok(())
}
