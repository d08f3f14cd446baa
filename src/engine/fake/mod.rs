//! A test-only engine family that checks the plug-in seam: `engine = "fake"` keeps nothing and
//! answers every statement at once (one row each), in dbdelta's own process.
//!
//! Owns all of the fake: its registry entry, its server, driver and sessions, its starter lab
//! (`dbdelta init --engine fake`) and its build from source (`dbdelta build fake`: one C file,
//! `fake.c`, compiled into `install/bin/fake`). It speaks SQLite's dialect, so the suites' SQL
//! serves it as it is. It is registered in
//! [`crate::engine::families::TEST_FAMILIES`] only, so it exists for a lab only when
//! `DBDELTA_TEST_SUITES` is set (`tests/suites.rs`). Must not: be needed by anything else;
//! adding it touched this folder and the registry's lines only.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::engine::common::recipe::{BuildInputs, BuildStep, Recipe};
use crate::engine::{
    DbError, Dialect, Driver, Family, Observed, RowSink, RowSource, Server, Session, Started,
    StmtId, TargetSpec,
};

/// The fake's build from source: `fake.c` compiled with the variant's flags into
/// `install/bin/fake`; the tree's version is its `VERSION` file.
struct FakeRecipe;

impl Recipe for FakeRecipe {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn steps(&self, inputs: &BuildInputs) -> Vec<BuildStep> {
        let (bin, _) = self.installed(inputs.entry);
        vec![
            BuildStep::new("compile fake.c", inputs.compiler)
                .say("  compile fake.c")
                .make_dir(bin.clone())
                .args(inputs.cflags.split_whitespace())
                .arg("fake.c")
                .arg("-o")
                .arg(bin.join("fake"))
                .args(inputs.ldflags.split_whitespace()),
        ]
    }

    fn installed(&self, entry: &Path) -> (PathBuf, Option<PathBuf>) {
        (entry.join("install").join("bin"), None)
    }

    fn main_binary(&self, entry: &Path) -> PathBuf {
        self.installed(entry).0.join("fake")
    }

    fn tree_version(&self, dir: &Path) -> Option<String> {
        let v = std::fs::read_to_string(dir.join("VERSION")).ok()?;
        Some(v.trim().to_string())
    }

    fn default_stage_secs(&self) -> f64 {
        1.0
    }
}

/// The registry's entry for `engine = "fake"`.
pub struct FakeFamily;

impl Family for FakeFamily {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn title(&self) -> &'static str {
        "the fake engine"
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn build_file(&self, _target: &TargetSpec) -> anyhow::Result<Option<PathBuf>> {
        Ok(None)
    }

    fn starters(&self) -> &'static [crate::engine::Starter] {
        &[crate::engine::Starter {
            engine: "fake",
            title: "fake: mode a vs b",
            source: "# the test-only fake engine: nothing to install\n",
            setting: ["mode = a", "mode = b"],
        }]
    }

    fn recipes(&self) -> &'static [&'static dyn Recipe] {
        &[&FakeRecipe]
    }

    fn start(
        &self,
        target: &TargetSpec,
        data_dir: &Path,
        _log: &Path,
    ) -> anyhow::Result<Box<dyn Server>> {
        let settings = (target.settings.iter())
            .map(|s| match s.split_once('=') {
                Some((k, v)) => (k.trim().to_string(), v.trim().to_string()),
                None => (s.trim().to_string(), String::new()),
            })
            .collect();
        Ok(Box::new(FakeServer {
            started: Started {
                version: "fake 1".into(),
                settings,
                data_dir: data_dir.to_path_buf(),
            },
        }))
    }
}

/// A "server" that is its settings and an empty data directory.
struct FakeServer {
    started: Started,
}

impl Server for FakeServer {
    fn driver(&self) -> Arc<dyn Driver> {
        Arc::new(FakeDriver)
    }

    fn started(&self) -> &Started {
        &self.started
    }

    fn observed(&self) -> Observed {
        Observed::SelfProcess
    }

    fn db_size(&self) -> Option<u64> {
        None
    }

    fn postwrite(&self, _tables: &[String], _budget: std::time::Duration) -> anyhow::Result<()> {
        Ok(())
    }

    fn stop(self: Box<Self>) -> anyhow::Result<()> {
        Ok(())
    }
}

struct FakeDriver;

impl Driver for FakeDriver {
    fn connect(&self) -> Result<Box<dyn Session>, DbError> {
        Ok(Box::new(FakeSession { prepared: 0 }))
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }
}

/// Counts what it prepared; every statement returns or changes one row.
struct FakeSession {
    prepared: StmtId,
}

/// Takes a bulk load's columns and drops them.
struct Discard;

impl RowSink for Discard {
    fn int(&mut self, _value: i64) {}
    fn text(&mut self, _value: &str) {}
}

impl Session for FakeSession {
    fn prepare(&mut self, _sql: &str) -> Result<StmtId, DbError> {
        self.prepared += 1;
        Ok(self.prepared - 1)
    }

    fn execute(
        &mut self,
        _stmt: StmtId,
        _params: &[crate::engine::Param<'_>],
    ) -> Result<u64, DbError> {
        Ok(1)
    }

    fn execute_sql(&mut self, _sql: &str) -> Result<u64, DbError> {
        Ok(1)
    }

    fn query_strings(&mut self, _sql: &str) -> Result<Vec<String>, DbError> {
        Ok(Vec::new())
    }

    fn bulk_load(&mut self, _table: &str, source: &mut dyn RowSource) -> Result<u64, DbError> {
        for i in 0..source.rows() {
            source.write_row(i, &mut Discard);
        }
        Ok(source.rows())
    }
}
