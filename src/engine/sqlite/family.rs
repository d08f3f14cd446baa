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

    fn starters(&self) -> &'static [crate::engine::Starter] {
        super::labs::STARTERS
    }

    fn demo_lab(&self) -> Option<&'static str> {
        Some(super::labs::DEMO_LAB)
    }

    fn built_in(&self) -> String {
        format!("bundled SQLite {}", rusqlite::version())
    }

    /// SQLite's loads and steps from the demo there (a release build's from the demo at load
    /// 10: 55,000–154,000 rows/s with the index, 146 s in all, where the debug build's
    /// defaults said 189 s: SQLite runs in this process, so its load is as fast as the
    /// build) and its counting from one `--quick` step.
    fn pace(&self, release: bool) -> crate::engine::Pace {
        crate::engine::Pace {
            server_secs: 0.05,
            load_rows_per_sec: if release { 60_000.0 } else { 15_000.0 },
            postwrite_extra_secs: 0.0,
            step_extra_secs: if release { 0.1 } else { 0.25 },
            count_server_secs: 0.5,
            count_load_factor: 3.0,
            count_pair_secs: 20.0,
        }
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
