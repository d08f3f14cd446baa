//! LinkBench as a plug-in: its `[suite.linkbench]` section, `--quick` scaling, step choice
//! (and what a step depends on), `--dry-run` description, disk estimate and `list steps`
//! listing.
//!
//! Owns what the lab, the plan and the listing need of LinkBench; its steps, executors and
//! SQL are [`steps`] and [`sql`]. Must not: run
//! statements or time anything.

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

pub use section::LinkbenchConfig;

/// The registry's entry for `[suite.linkbench]`.
pub struct LinkbenchSuite;

impl SuiteKind for LinkbenchSuite {
    fn name(&self) -> &'static str {
        "linkbench"
    }

    fn pgo_training(&self) -> Option<&'static str> {
        Some(
            "[suite.linkbench]\nmaxid1 = 50_000\nrequest_secs = 30\nwarmup_secs = 5\npostwrite_secs = 5\n",
        )
    }

    fn parse(&self, section: &Section<'_>) -> Result<Box<dyn SuiteConfig>, InputError> {
        let raw = section
            .parse()?
            .expect("parsed only when the lab has the section");
        Ok(Box::new(section::linkbench(section, raw)?))
    }

    fn list_steps(&self) -> String {
        steps()
    }

    fn list_sql(&self, engine: EngineKind) -> String {
        sql(engine.dialect())
    }
}

impl SuiteConfig for LinkbenchConfig {
    fn name(&self) -> &'static str {
        "linkbench"
    }

    /// `--time` sets the request steps' length; `--rows`/`--tables` are refused.
    fn scaled(&self, quick: bool, flags: &ScaleFlags) -> Result<Arc<dyn SuiteSettings>, String> {
        flags.no_rows_or_tables("linkbench", "maxid1")?;
        let mut settings = settings(self, quick);
        if let Some(t) = flags.time {
            settings.request = Duration::from_secs_f64(t);
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

/// LinkBench after `--quick` scaling, with the lab keys its plan needs.
#[derive(Clone)]
pub struct Scaled {
    pub settings: steps::Settings,
    pub postwrite_secs: Option<f64>,
    pub prepared: bool,
    pub quick: bool,
}

/// LinkBench's settings after `--quick` scaling: 2,000 nodes, 1 s request steps, a 0.5 s
/// warm-up.
fn settings(cfg: &LinkbenchConfig, quick: bool) -> steps::Settings {
    let (maxid1, request, warmup) = if quick {
        (
            cfg.maxid1.min(2_000),
            cfg.request_secs.min(1.0),
            cfg.warmup_secs.min(0.5),
        )
    } else {
        (cfg.maxid1, cfg.request_secs, cfg.warmup_secs)
    };
    steps::Settings {
        maxid1,
        loaders: cfg.loaders,
        requesters: cfg.requesters.clone(),
        request: Duration::from_secs_f64(request),
        warmup: Duration::from_secs_f64(warmup),
        mix: steps::Mix(cfg.mix),
        node_bytes: cfg.node_bytes,
        link_bytes: cfg.link_bytes,
        batch: cfg.batch,
        partitions: cfg.partitions,
        request_quota: None,
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
        "linkbench"
    }

    /// The warm-up and the check are not selectable: they run with the request steps.
    fn catalog(&self) -> Vec<Selectable> {
        (self.settings.steps().into_iter())
            .map(|(label, kind)| Selectable {
                label,
                kind: match kind {
                    steps::Kind::Request { warm: true, .. } | steps::Kind::Check => StepKind::Warm,
                    _ => StepKind::Main,
                },
            })
            .collect()
    }

    /// LinkBench with the steps `selection` chooses; `None` when it chooses none; bad input
    /// when a chosen step lacks the load or the index it runs on.
    fn plan(&self, selection: &Selection) -> Result<Option<SuitePlan>, InputError> {
        let settings = &self.settings;
        let suite = steps::LinkBench {
            settings: settings.clone(),
        };
        let steps = suite.plan(|label, warm| {
            let kind = if warm { StepKind::Warm } else { StepKind::Main };
            selection.chosen(label, kind, false)
        });
        if steps.iter().all(|s| s.warm) {
            return Ok(None);
        }
        let chosen: Vec<&str> = steps.iter().map(|s| s.label.as_str()).collect();
        for (i, step) in steps.iter().enumerate() {
            let needs: Vec<&str> = ["linkbench.load", "linkbench.index"]
                .into_iter()
                .filter(|n| *n != step.label && !chosen[..i].contains(n))
                .take(if step.label == "linkbench.index" {
                    1
                } else {
                    2
                })
                .collect();
            if step.label != "linkbench.load" && !needs.is_empty() {
                return Err(InputError::new(format!(
                    "--only/--skip: the LinkBench step {} needs {} (every cell starts from empty tables: linkbench.load fills them, linkbench.index builds id1_type); select {} too",
                    step.label,
                    needs.join(" and "),
                    if needs.len() == 1 { "it" } else { "them" }
                )));
            }
        }
        let postwrite_budget =
            postwrite_budget(self.postwrite_secs, self.quick, Duration::from_secs(60));
        Ok(Some(SuitePlan {
            steps,
            postwrite_after_load: false,
            postwrite_budget,
            prepared: self.prepared,
            suite: Arc::new(suite),
        }))
    }

    /// Sizes and lengths.
    fn describe(&self) -> String {
        let lb = &self.settings;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "linkbench: {} nodes loaded by {} loader{}, requests {} at {} requester(s) after a {} warm-up{}",
            lb.maxid1,
            lb.loaders,
            if lb.loaders == 1 { "" } else { "s" },
            crate::progress::duration(lb.request),
            lb.requesters
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join("/"),
            crate::progress::duration(lb.warmup),
            if self.quick { " (--quick)" } else { "" }
        );
        s
    }

    /// A node brings its counts and, on average, 4.1 links (each a row plus two index
    /// entries): about 950 bytes in PostgreSQL.
    fn disk_rows(&self) -> (u64, u64) {
        (self.settings.maxid1, 950)
    }

    crate::suites::plug_in_glue!(settings);
}

/// LinkBench's steps with requesters = [1, 4], with their roles.
fn steps() -> String {
    use steps::{LinkBench, Settings};
    let suite = LinkBench {
        settings: Settings::with_defaults(1_000, vec![1, 4]),
    };
    let mut out = String::from(
        "\nLinkBench ([suite.linkbench]; shown with requesters = [1, 4]; linkbench.warm is not \
         reported, linkbench.check fails the run on a count mismatch):\n",
    );
    out.push_str(&crate::suites::role_lines(&suite.plan(|_, _| true)));
    out
}

/// Every LinkBench statement as `dialect` receives it.
fn sql(dialect: crate::engine::Dialect) -> String {
    use self::sql::{self as lsql, Stmt};
    let ddl = crate::engine::TableDdl::default();
    let mut out = String::from("\n-- LinkBench ([suite.linkbench])\n");
    let mut put = |what: &str, sql: Vec<String>| {
        out.push_str(&format!("\n-- {what}\n"));
        for s in sql {
            out.push_str(&format!("{s};\n"));
        }
    };
    put("create", lsql::create_tables(dialect, &ddl, 0));
    put(
        "linkbench.load (1024 rows per statement; shown with 2)",
        vec![
            lsql::load_nodes(dialect, 2),
            lsql::load_links(dialect, 2),
            lsql::load_counts(dialect, 2),
        ],
    );
    put("linkbench.index", lsql::create_index(dialect, &ddl));
    put(
        &format!(
            "requests (write operations between {} and COMMIT; getlink shown with 2 ids)",
            lsql::begin(dialect)
        ),
        (Stmt::ALL.iter().map(|s| lsql::text(*s, dialect)))
            .chain([lsql::get_links(dialect, 2)])
            .collect(),
    );
    put(
        "linkbench.check (the first 5 differing keys)",
        vec![lsql::count_mismatches(dialect, 5)],
    );
    out
}
