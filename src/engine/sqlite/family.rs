//! SQLite as an engine family of the registry (`crate::engine::families`): embedded, its
//! build the bundled library or the target's `library`. Must not: hold the engine itself
//! (this folder's `mod.rs` does).

use std::path::{Path, PathBuf};

use crate::engine::common::recipe::Recipe;
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

    fn recipes(&self) -> &'static [&'static dyn Recipe] {
        &[&super::recipe::SqliteRecipe]
    }

    /// The library's own version and source id, and the compilers of its file: the
    /// target's `library`, or dbdelta's own program for the bundled one.
    fn provenance(&self, target: &TargetSpec) -> crate::results::BinaryProvenance {
        use crate::engine::common::provenance::of_file;
        let (api, mut p) = match &target.library {
            Some(lib) => (
                super::api::Api::load(lib),
                of_file(lib, lib.display().to_string()),
            ),
            None => (
                Ok(super::api::Api::bundled()),
                of_file(Path::new("/proc/self/exe"), "dbdelta (bundled)".into()),
            ),
        };
        match api {
            Ok(api) => {
                p.version_line = Some(format!("SQLite {} {}", api.version(), api.source_id()))
            }
            Err(e) => p.unread.push(format!("{e:#}")),
        }
        p
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
