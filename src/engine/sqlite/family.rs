//! SQLite as an engine family of the registry (`crate::engine::families`): embedded, its
//! build the bundled library or the target's `library`. Must not: hold the engine itself
//! (this folder's `mod.rs` does).

use std::path::{Path, PathBuf};

use crate::engine::{Dialect, Family, Server, TargetSpec};

/// The registry's entry for `engine = "sqlite"`.
pub struct SqliteFamily;

impl Family for SqliteFamily {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn title(&self) -> &'static str {
        "SQLite"
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    /// Compact records: 90% of PostgreSQL's bytes per row.
    fn disk_percent(&self, _tables: &crate::engine::TableDdl) -> u64 {
        90
    }

    fn build_file(&self, target: &TargetSpec) -> anyhow::Result<Option<PathBuf>> {
        Ok(target.library.clone())
    }

    fn start(
        &self,
        target: &TargetSpec,
        data_dir: &Path,
        _log: &Path,
    ) -> anyhow::Result<Box<dyn Server>> {
        Ok(Box::new(super::SqliteServer::start(target, data_dir)?))
    }
}
