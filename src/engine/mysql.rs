//! MySQL and MariaDB (one engine). Placeholder until the engine lands: starting fails clearly.

use std::path::Path;

use crate::plan::TargetPlan;

/// A MySQL/MariaDB server (not available yet).
pub enum MysqlServer {}

impl MysqlServer {
    pub fn start(
        target: &TargetPlan,
        _data_dir: &Path,
        _log: &Path,
    ) -> anyhow::Result<Box<dyn super::Server>> {
        anyhow::bail!(
            "target {}: the mysql engine is not available in this build yet",
            target.name
        )
    }
}
