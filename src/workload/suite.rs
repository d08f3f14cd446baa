//! Suites as data: what the runner needs of a suite (its scale, its tables, its load) and a
//! suite with its planned steps ([`SuitePlan`]).
//!
//! Owns the [`Suite`] trait. The runner knows suites only through it and through
//! [`StepPlan`]s: adding a suite is adding an implementation, not editing the runner. (What
//! reports need of a suite, its groups and pre/post pairs, still lives in `report/`.)
//! Must not: time anything or execute SQL itself (implementations run it through a session).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::{Scale, StepPlan};
use crate::engine::{Dialect, Session, TableDdl};

/// A suite as the runner runs it on one fresh data directory.
pub trait Suite: Send + Sync {
    /// `sysbench`, `insert`.
    fn id(&self) -> &'static str;
    /// Tables × rows per table at `clients` clients, recorded with every measurement (compare
    /// refuses to pair steps measured at different scales).
    fn scale(&self, clients: u32) -> Scale;
    /// The suite's tables at `clients` clients (what the postwrite cleanup visits).
    fn tables(&self, clients: u32) -> Vec<String>;
    /// Create the tables and fill them: the load, timed by the runner.
    fn fill(
        &self,
        session: &mut dyn Session,
        dialect: Dialect,
        ddl: &TableDdl,
        clients: u32,
    ) -> anyhow::Result<()>;
    /// Build the indexes the load builds (timed by the runner as the index build). By
    /// default none: a suite whose indexes a measured step builds (the Insert Benchmark's
    /// `l.x`, `linkbench.index`) or that has none.
    fn index(
        &self,
        _session: &mut dyn Session,
        _dialect: Dialect,
        _ddl: &TableDdl,
        _clients: u32,
    ) -> anyhow::Result<()> {
        Ok(())
    }
    /// Whether the load is a measured phase of its own (sysbench), or only creates the tables
    /// (by default: the Insert Benchmark, whose first step is its load).
    fn records_load(&self) -> bool {
        false
    }
    /// Rows loaded over all tables at `clients` clients (the load's rows/s); 0 by default,
    /// where the load is not recorded.
    fn rows_loaded(&self, _clients: u32) -> u64 {
        0
    }
    /// What shapes the loaded data at `clients` clients, as one line naming every setting
    /// (e.g. `sysbench tables=1 rows=10000`): a saved load is reused only under the same line.
    /// `None`: the suite's load cannot be reused (its first step is its load).
    fn load_key(&self, _clients: u32) -> Option<String> {
        None
    }
}

/// A suite with its planned steps.
#[derive(Clone)]
pub struct SuitePlan {
    pub suite: Arc<dyn Suite>,
    /// In run order.
    pub steps: Vec<StepPlan>,
    /// The postwrite cleanup runs right after the load.
    pub postwrite_after_load: bool,
    /// Time a postwrite cleanup may take.
    pub postwrite_budget: Duration,
    /// Server-side prepared statements.
    pub prepared: bool,
}

impl fmt::Debug for SuitePlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SuitePlan")
            .field("suite", &self.suite.id())
            .field("steps", &self.steps)
            .field("postwrite_after_load", &self.postwrite_after_load)
            .field("postwrite_budget", &self.postwrite_budget)
            .field("prepared", &self.prepared)
            .finish()
    }
}

impl SuitePlan {
    pub fn id(&self) -> &'static str {
        self.suite.id()
    }
}
