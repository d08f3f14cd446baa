//! The sysbench microbenchmark suite as a plug-in: its `[suite.sysbench]` section, `--quick`
//! scaling, step choice, `--dry-run` description, disk estimate and `list steps` listing.
//!
//! Owns what the lab, the plan and the listing need of sysbench; its step vocabulary and
//! executor are [`catalog`], its catalog and load [`steps`], its SQL [`sql`]. Must not: time
//! anything.

pub mod catalog;
mod list;
mod section;
pub mod sql;
pub mod steps;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::EngineKind;
use crate::error::InputError;
use crate::suites::{
    ScaleFlags, Section, Selectable, Selection, SuiteConfig, SuiteKind, SuiteSettings,
};
use crate::workload::{Scale, SuitePlan};
use catalog::{Group, StepDef};
use steps as sysbench;

pub use section::{StepLength, SysbenchConfig};

/// The registry's entry for `[suite.sysbench]` (the suite a lab without suites runs).
pub struct SysbenchSuite;

impl SuiteKind for SysbenchSuite {
    fn name(&self) -> &'static str {
        "sysbench"
    }

    fn pgo_training(&self) -> Option<&'static str> {
        Some(
            "[suite.sysbench]\ntables = 1\nrows = 100_000\nread_secs = 2\nwrite_secs = 2\nwarmup_secs = 0.5\npostwrite_secs = 2\n",
        )
    }

    fn by_default(&self) -> bool {
        true
    }

    fn groups(&self) -> Vec<(&'static str, &'static str)> {
        (Group::REPORT_ORDER.iter())
            .map(|g| (g.id(), g.title()))
            .collect()
    }

    fn parse(&self, section: &Section<'_>) -> Result<Box<dyn SuiteConfig>, InputError> {
        Ok(Box::new(section::sysbench(section, section.parse()?)?))
    }

    fn list_steps(&self) -> String {
        list::steps()
    }

    fn list_sql(&self, engine: EngineKind) -> String {
        list::sql(engine)
    }
}

impl SuiteConfig for SysbenchConfig {
    fn name(&self) -> &'static str {
        "sysbench"
    }

    /// `--rows`/`--tables` set the scale, `--time` the read and write steps' length (an
    /// adaptive step's longest when its `max_secs` is not set).
    fn scaled(&self, quick: bool, flags: &ScaleFlags) -> Result<Arc<dyn SuiteSettings>, String> {
        let mut settings = settings(self, quick);
        if let Some(rows) = flags.rows {
            settings.scale.rows = rows;
        }
        if let Some(tables) = flags.tables {
            settings.scale.tables = tables;
        }
        if let Some(t) = flags.time {
            settings.read = Duration::from_secs_f64(t);
            settings.write = Duration::from_secs_f64(t);
        }
        Ok(Arc::new(Scaled {
            settings,
            postwrite_secs: self.postwrite_secs,
            prepared: self.prepared,
        }))
    }

    crate::suites::plug_in_glue!(config);
}

/// The sysbench suite after `--quick` scaling, with the lab keys its plan needs.
#[derive(Clone)]
pub struct Scaled {
    pub settings: sysbench::Settings,
    /// Overrides the postwrite budget (docs/workloads.md, The postwrite cleanup).
    pub postwrite_secs: Option<f64>,
    pub prepared: bool,
}

/// The sysbench settings of a lab after `--quick` scaling (tiny tables, sub-second steps).
fn settings(sb: &SysbenchConfig, quick: bool) -> sysbench::Settings {
    let secs = Duration::from_secs_f64;
    let (scale, warmup, read, write) = if quick {
        (
            Scale {
                tables: 1,
                rows: sb.rows.min(10_000),
            },
            secs(sb.warmup_secs.min(0.1)),
            secs(sb.read_secs.min(0.3)),
            secs(sb.write_secs.min(0.3)),
        )
    } else {
        (
            Scale {
                tables: sb.tables,
                rows: sb.rows,
            },
            secs(sb.warmup_secs),
            secs(sb.read_secs),
            secs(sb.write_secs),
        )
    };
    let adaptive = match sb.length {
        StepLength::Fixed => None,
        // --quick: at most 3 s to 5 s, so a try-out stays short but still has the 3 whole
        // seconds a precision needs.
        StepLength::Adaptive {
            precision,
            min_secs,
            max_secs,
        } => Some(sysbench::Adaptive {
            precision,
            min: secs(if quick { min_secs.min(3.0) } else { min_secs }),
            max: match (max_secs, quick) {
                (Some(m), false) => Some(secs(m)),
                (Some(m), true) => Some(secs(m.min(5.0))),
                (None, false) => None,
                (None, true) => Some(secs(5.0)),
            },
        }),
    };
    sysbench::Settings {
        scale,
        warmup,
        read,
        write,
        adaptive,
        pre: sb.pre,
        quick,
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
        "sysbench"
    }

    fn catalog(&self) -> Vec<Selectable> {
        (sysbench::CATALOG.iter())
            .map(|s| Selectable {
                label: s.label.to_string(),
                kind: s.kind,
            })
            .collect()
    }

    fn pre(&self) -> bool {
        self.settings.pre
    }

    /// The sysbench suite with the steps `selection` chooses; `None` when it chooses none.
    fn plan(&self, selection: &Selection) -> Result<Option<SuitePlan>, InputError> {
        let settings = &self.settings;
        let steps: Vec<&'static StepDef> = sysbench::CATALOG
            .iter()
            .filter(|s| selection.chosen(s.label, s.kind, settings.pre))
            .collect();
        if !steps.iter().any(|s| s.reported()) {
            return Ok(None);
        }
        let total_rows = settings.scale.rows * u64::from(settings.scale.tables);
        let postwrite_budget = match (self.postwrite_secs, settings.quick) {
            (Some(s), quick) => Duration::from_secs_f64(if quick { s.min(1.0) } else { s }),
            (None, true) => Duration::from_secs(1),
            (None, false) => Duration::from_secs((60 + total_rows / 1_000_000).min(1200)),
        };
        let suite = sysbench::Sysbench {
            settings: settings.clone(),
        };
        Ok(Some(SuitePlan {
            steps: suite.plan(&steps),
            postwrite_after_load: settings.postwrite_after_load(&steps),
            postwrite_budget,
            prepared: self.prepared,
            suite: Arc::new(suite),
        }))
    }

    /// The scale and step lengths.
    fn describe(&self) -> String {
        let sb = &self.settings;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "scale: {} table(s) × {} rows; warm-up {}, reads {}, writes {}{}",
            sb.scale.tables,
            sb.scale.rows,
            crate::progress::duration(sb.warmup),
            crate::progress::duration(sb.read),
            crate::progress::duration(sb.write),
            if sb.quick { " (--quick)" } else { "" }
        );
        if let Some(a) = sb.adaptive {
            let _ = writeln!(
                s,
                "adaptive steps: each reported step stops once its per-second QPS is known within ±{:.1}% (95%), after at least {} and at most {}",
                a.precision * 100.0,
                crate::progress::duration(a.min),
                match a.max {
                    Some(m) => crate::progress::duration(m),
                    None => "its fixed length".into(),
                }
            );
        }
        s
    }

    fn steps_note(&self) -> &'static str {
        if self.settings.pre {
            ", pre = true"
        } else {
            ""
        }
    }

    /// 500k rows in PostgreSQL 15 took 139 MB (≈ 279 B/row with the `k` index).
    fn disk_rows(&self) -> (u64, u64) {
        let scale = &self.settings.scale;
        (u64::from(scale.tables) * scale.rows, 280)
    }

    crate::suites::plug_in_glue!(settings);
}
