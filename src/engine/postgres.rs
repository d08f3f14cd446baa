//! PostgreSQL. Placeholder while the engine is written.

use std::path::Path;

use crate::plan::TargetPlan;

pub enum PgServer {}

impl PgServer {
    pub fn start(
        target: &TargetPlan,
        _data_dir: &Path,
        _log: &Path,
    ) -> anyhow::Result<Box<dyn super::Server>> {
        anyhow::bail!(
            "target {}: the postgres engine is not available in this build yet",
            target.name
        )
    }
}
