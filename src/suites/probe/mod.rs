//! A test-only suite that checks the plug-in seam: `[suite.probe]` runs one step,
//! `probe.select`, reading the one row of table `probe1` as fast as each client can.
//!
//! Owns all of the probe: its section (`secs`, the step's length), its scaling, its plan, its
//! table and its executor. It is registered in [`crate::suites::TEST_SUITES`] only, so it exists
//! for a lab only when `DBDELTA_TEST_SUITES` is set (`tests/suites.rs`). Must not: be needed by
//! anything else; adding it touched this folder and the registry's lines only.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::engine::{DbError, Dialect, Session, StmtId, TableDdl};
use crate::error::InputError;
use crate::suites::{Section, Selectable, Selection, SuiteConfig, SuiteKind, SuiteSettings};
use crate::workload::{
    Counted, Done, Executor, ExecutorFactory, Opening, Pacer, Role, Scale, StepKind, StepPlan,
    Suite, SuitePlan,
};

const NAME: &str = "probe";
const STEP: &str = "probe.select";
const TABLE: &str = "probe1";

/// The registry's entry for `[suite.probe]`.
pub struct ProbeSuite;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProbe {
    #[serde(default)]
    secs: Option<f64>,
}

/// `[suite.probe]`: how long `probe.select` runs (default 1 s).
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeConfig {
    pub secs: f64,
}

impl SuiteKind for ProbeSuite {
    fn name(&self) -> &'static str {
        NAME
    }

    fn parse(&self, section: &Section<'_>) -> Result<Box<dyn SuiteConfig>, InputError> {
        let raw = section.parse::<RawProbe>()?;
        let secs = raw.as_ref().and_then(|r| r.get_ref().secs).unwrap_or(1.0);
        crate::range::STEP_SECS
            .check("secs", secs)
            .map_err(|e| section.key_error("secs", e))?;
        Ok(Box::new(ProbeConfig { secs }))
    }
}

impl SuiteConfig for ProbeConfig {
    fn name(&self) -> &'static str {
        NAME
    }

    /// `--quick`: at most 0.3 s; `--time` sets the length.
    fn scaled(
        &self,
        quick: bool,
        flags: &super::ScaleFlags,
    ) -> Result<Arc<dyn SuiteSettings>, String> {
        flags.no_rows_or_tables(NAME, "secs")?;
        let secs = if quick { self.secs.min(0.3) } else { self.secs };
        Ok(Arc::new(Probe {
            length: Duration::from_secs_f64(flags.time.unwrap_or(secs)),
        }))
    }

    crate::suites::plug_in_glue!(config);
}

/// The probe as it runs: one step of `length`.
#[derive(Debug, Clone)]
pub struct Probe {
    pub length: Duration,
}

impl SuiteSettings for Probe {
    fn name(&self) -> &'static str {
        NAME
    }

    fn catalog(&self) -> Vec<Selectable> {
        vec![Selectable {
            label: STEP.into(),
            kind: StepKind::Main,
        }]
    }

    fn plan(&self, selection: &Selection) -> Result<Option<SuitePlan>, InputError> {
        if !selection.chosen(STEP, StepKind::Main, false) {
            return Ok(None);
        }
        Ok(Some(SuitePlan {
            suite: Arc::new(self.clone()),
            steps: vec![self.step()],
            postwrite_after_load: false,
            postwrite_budget: Duration::from_secs(1),
            prepared: true,
        }))
    }

    fn describe(&self) -> String {
        format!(
            "probe: one-row reads for {:.1} s\n",
            self.length.as_secs_f64()
        )
    }

    fn disk_rows(&self) -> (u64, u64) {
        (1, 100)
    }

    crate::suites::plug_in_glue!(settings);
}

impl Probe {
    fn step(&self) -> StepPlan {
        StepPlan {
            suite: NAME,
            label: STEP.into(),
            index: 0,
            group: NAME.into(),
            warm: false,
            clients: None,
            roles: vec![Role {
                name: "client",
                pacer: Pacer::Closed,
                quota: None,
                ops: vec!["select"],
                executor: Arc::new(SelectFactory),
            }],
            counted: Counted { role: 0, op: None },
            rate_unit: "queries/s",
            statements_per_event: 1,
            event_shape: vec![1],
            scan_rows: None,
            warmup: Duration::ZERO,
            measure: Some(self.length),
            expected: self.length,
            stop_rule: None,
            postwrite_after: false,
        }
    }
}

impl Suite for Probe {
    fn id(&self) -> &'static str {
        NAME
    }

    fn scale(&self, _clients: u32) -> Scale {
        Scale { tables: 1, rows: 1 }
    }

    fn tables(&self, _clients: u32) -> Vec<String> {
        vec![TABLE.into()]
    }

    fn fill(
        &self,
        session: &mut dyn Session,
        _dialect: Dialect,
        _ddl: &TableDdl,
        _clients: u32,
    ) -> anyhow::Result<()> {
        session.execute_sql(&format!(
            "CREATE TABLE {TABLE} (id INTEGER PRIMARY KEY, v INTEGER)"
        ))?;
        session.execute_sql(&format!("INSERT INTO {TABLE} (id, v) VALUES (1, 42)"))?;
        Ok(())
    }
}

struct SelectFactory;

impl ExecutorFactory for SelectFactory {
    fn open(&self, session: &mut dyn Session, _at: &Opening) -> Result<Box<dyn Executor>, DbError> {
        let stmt = session.prepare(&format!("SELECT v FROM {TABLE} WHERE id = 1"))?;
        Ok(Box::new(Select { stmt, rows: [0] }))
    }
}

/// Reads the row; counts the rows it returned.
struct Select {
    stmt: StmtId,
    rows: [u64; 1],
}

impl Executor for Select {
    fn run(&mut self, session: &mut dyn Session) -> Result<Done, DbError> {
        let rows = session.execute(self.stmt, &[])?;
        self.rows[0] += rows;
        Ok(Done {
            op: 0,
            units: 1,
            rows,
        })
    }

    fn rows_touched(&self) -> &[u64] {
        &self.rows
    }
}
