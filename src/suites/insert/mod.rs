//! The Insert Benchmark as a plug-in: its `[suite.insert]` section, `--quick` scaling, step
//! choice (and what a step depends on), `--dry-run` description, disk estimate and `list steps`
//! listing.
//!
//! Owns what the lab, the plan and the listing need of the Insert Benchmark; its steps,
//! executors and SQL are [`steps`] and [`sql`].
//! Must not: run statements or time anything.

mod section;
pub mod sql;
pub mod steps;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::EngineKind;
use crate::error::InputError;
use crate::suites::{
    ScaleFlags, Section, Selectable, Selection, SuiteConfig, SuiteKind, SuiteSettings,
    postwrite_budget,
};
use crate::workload::{StepKind, SuitePlan};

pub use section::InsertConfig;

/// The registry's entry for `[suite.insert]`.
pub struct InsertSuite;

impl SuiteKind for InsertSuite {
    fn name(&self) -> &'static str {
        "insert"
    }

    fn pgo_training(&self) -> Option<&'static str> {
        Some("[suite.insert]\nrows = 200_000\nquery_secs = 20\npostwrite_secs = 5\n")
    }

    fn parse(&self, section: &Section<'_>) -> Result<Box<dyn SuiteConfig>, InputError> {
        let raw = section
            .parse()?
            .expect("parsed only when the lab has the section");
        Ok(Box::new(section::insert(section, raw)?))
    }

    fn list_steps(&self) -> String {
        steps()
    }

    fn list_sql(&self, engine: EngineKind) -> String {
        sql(engine.dialect())
    }
}

impl SuiteConfig for InsertConfig {
    fn name(&self) -> &'static str {
        "insert"
    }

    /// `--time` sets the query steps' length; `--rows`/`--tables` are refused.
    fn scaled(&self, quick: bool, flags: &ScaleFlags) -> Result<Arc<dyn SuiteSettings>, String> {
        flags.no_rows_or_tables("insert", "rows and write_rows")?;
        let mut settings = settings(self, quick);
        if let Some(t) = flags.time {
            settings.query = Duration::from_secs_f64(t);
        }
        Ok(Arc::new(Scaled {
            settings,
            postwrite_secs: self.postwrite_secs,
            prepared: self.prepared,
            quick,
        }))
    }

    crate::suites::plug_in_glue!(config);
}

/// The Insert Benchmark after `--quick` scaling, with the lab keys its plan needs.
#[derive(Clone)]
pub struct Scaled {
    pub settings: steps::Settings,
    pub postwrite_secs: Option<f64>,
    pub prepared: bool,
    pub quick: bool,
}

/// The Insert Benchmark's settings after `--quick` scaling: 2,000 rows per table, 1,000 written
/// by l.i1 and l.i2, query steps of 1 s.
fn settings(cfg: &InsertConfig, quick: bool) -> steps::Settings {
    let (rows, write_rows, query) = if quick {
        (
            cfg.rows.min(2_000),
            cfg.write_rows.min(1_000),
            cfg.query_secs.min(1.0),
        )
    } else {
        (cfg.rows, cfg.write_rows, cfg.query_secs)
    };
    steps::Settings {
        rows,
        write_rows,
        query: Duration::from_secs_f64(query),
        rates: cfg.rates.clone(),
        commit: cfg.rows_per_commit,
        deletes: cfg.deletes,
    }
}

/// Its settings alone (what `--resume` compares and names).
impl std::fmt::Debug for Scaled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.settings.fmt(f)
    }
}

impl SuiteSettings for Scaled {
    fn name(&self) -> &'static str {
        "insert"
    }

    fn catalog(&self) -> Vec<Selectable> {
        (self.settings.steps().into_iter())
            .map(|(label, _)| Selectable {
                label,
                kind: StepKind::Main,
            })
            .collect()
    }

    /// The Insert Benchmark with the steps `selection` chooses; `None` when it chooses none;
    /// bad input when a chosen step lacks a step it depends on.
    fn plan(&self, selection: &Selection) -> Result<Option<SuitePlan>, InputError> {
        let settings = &self.settings;
        let suite = steps::InsertBench {
            settings: settings.clone(),
        };
        let steps = suite.plan(|label| selection.chosen(label, StepKind::Main, false));
        if steps.is_empty() {
            return Ok(None);
        }
        // Every cell starts from empty tables: l.i0 fills them and l.x builds the indexes the
        // queries use, so a later step without them would measure something else.
        let chosen: Vec<&str> = steps.iter().map(|s| s.label.as_str()).collect();
        for (i, (label, _)) in settings.steps().iter().enumerate() {
            let needs: Vec<&str> = ["l.i0", "l.x"]
                .into_iter()
                .take(i.min(2))
                .filter(|n| !chosen.contains(n))
                .collect();
            if chosen.contains(&label.as_str()) && !needs.is_empty() {
                return Err(InputError::new(format!(
                    "--only/--skip: the insert step {label} needs {} (every cell starts from empty tables: l.i0 fills them, l.x builds the indexes); select {} too",
                    needs.join(" and "),
                    if needs.len() == 1 { "it" } else { "them" }
                )));
            }
        }
        let default = Duration::from_secs((60 + settings.rows / 1_000_000).min(1200));
        let postwrite_budget = postwrite_budget(self.postwrite_secs, self.quick, default);
        Ok(Some(SuitePlan {
            steps,
            postwrite_after_load: false,
            postwrite_budget,
            prepared: self.prepared,
            suite: Arc::new(suite),
        }))
    }

    /// Sizes and rates.
    fn describe(&self) -> String {
        let ins = &self.settings;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "insert: {} rows per table (one per client) in l.i0, {} more in l.i1 + l.i2 ({}deletes), query steps {} at {} inserts/s per client{}",
            ins.rows,
            ins.write_rows,
            if ins.deletes { "" } else { "no " },
            crate::progress::duration(ins.query),
            ins.rates
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join("/"),
            if self.quick { " (--quick)" } else { "" }
        );
        s
    }

    /// The row carries three secondary indexes: about 260 bytes in PostgreSQL.
    fn disk_rows(&self) -> (u64, u64) {
        let s = &self.settings;
        let most = (s.steps().into_iter())
            .map(|(_, k)| s.rows_after(k))
            .max()
            .unwrap_or(0)
            .max(s.rows_after(steps::Kind::Load(0)));
        (most, 260)
    }

    crate::suites::plug_in_glue!(settings);
}

/// The Insert Benchmark's steps at the default rates, with their roles.
fn steps() -> String {
    use steps::{InsertBench, Settings};
    let suite = InsertBench {
        settings: Settings {
            rows: 1_000_000,
            write_rows: 1_000_000,
            query: std::time::Duration::from_secs(300),
            rates: vec![100, 500, 1000],
            commit: [100, 50, 5],
            deletes: true,
        },
    };
    let mut out = String::from(
        "\nThe Insert Benchmark ([suite.insert]; one table per client; rates per client at the \
         default rates = [100, 500, 1000]):\n",
    );
    out.push_str(&crate::suites::role_lines(&suite.plan(|_| true)));
    out
}

/// Every Insert Benchmark statement as `dialect` receives it, for table `pi1`.
fn sql(dialect: crate::engine::Dialect) -> String {
    use self::sql as isql;
    let ddl = crate::engine::TableDdl::default();
    let mut out = String::from("\n-- The Insert Benchmark ([suite.insert]), table pi1\n");
    let mut put = |what: &str, sql: Vec<String>| {
        out.push_str(&format!("\n-- {what}\n"));
        for s in sql {
            out.push_str(&format!("{s};\n"));
        }
    };
    put("create", isql::create_table(dialect, 1, &ddl));
    put(
        "l.x: the secondary indexes",
        isql::create_indexes(dialect, 1, &ddl),
    );
    put(
        "insert (l.i1: 50 rows per statement; shown with 2)",
        vec![isql::insert(dialect, 1, 2)],
    );
    put(
        "delete (50 rows per statement)",
        vec![isql::delete(dialect, 1, 50)],
    );
    put(
        "qr*: one of the three range queries per query",
        (0..isql::RANGES.len())
            .map(|i| isql::range_query(dialect, 1, i))
            .collect(),
    );
    put("qp*: the point query", vec![isql::point_query(dialect, 1)]);
    out
}
