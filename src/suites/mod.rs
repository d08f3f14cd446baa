//! Suites as plug-ins: the [`SuiteKind`] trait every benchmark suite implements, and the
//! registry ([`registry`]) that lists them.
//!
//! A suite is its `[suite.NAME]` lab section and its defaults ([`SuiteKind::parse`] →
//! [`SuiteConfig`]), its `--quick` scaling ([`SuiteConfig::scaled`] → [`SuiteSettings`]), its
//! steps and roles and which of them `--only`/`--skip` chose ([`SuiteSettings::plan`] → a
//! [`SuitePlan`] the runner runs), its `--dry-run` description and disk estimate, and its
//! `dbdelta list steps [--sql]` listing. Lab parsing, planning, preflight, resume and the
//! listing reach suites only through these traits, so adding a suite is a folder here and one
//! line in [`SUITES`] (or [`TEST_SUITES`]). What the runner needs of a suite while it runs is
//! [`crate::workload::Suite`]; the steps themselves are [`crate::workload::StepPlan`]s.
//! Must not: look at the machine, start anything, or time anything; the plan and the runner do.

pub mod insert;
pub mod known_keys;
pub mod linkbench;
mod probe;
pub mod section;
pub mod select;
pub mod sysbench;

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::EngineKind;
use crate::error::InputError;
use crate::workload::SuitePlan;

pub use section::{LabText, Section};
pub use select::{Selectable, Selection};

/// A suite as the registry knows it: a name and what to do with its lab section.
pub trait SuiteKind: Sync {
    /// `NAME` of `[suite.NAME]`, and the suite id stored with every measurement.
    fn name(&self) -> &'static str;
    /// Whether the suite runs when the lab names no suite at all (sysbench).
    fn by_default(&self) -> bool {
        false
    }
    /// Check the lab's `[suite.NAME]` table (absent only for a default suite): unknown keys,
    /// wrong types and bad values are bad input naming their line.
    fn parse(&self, section: &Section<'_>) -> Result<Box<dyn SuiteConfig>, InputError>;
    /// `dbdelta list steps`: the suite's steps with their roles (empty: not listed).
    fn list_steps(&self) -> String {
        String::new()
    }
    /// `dbdelta list steps --sql`: every statement as `engine` receives it (empty: none).
    fn list_sql(&self, _engine: EngineKind) -> String {
        String::new()
    }
    /// The `[suite.NAME]` table a PGO build's `small` training run uses, sized to finish in a
    /// few minutes on two CPUs (the `quick` scale is the bare table run with `--quick`);
    /// `None`: the suite does not train PGO builds.
    fn pgo_training(&self) -> Option<&'static str> {
        None
    }
    /// The report groups of its steps, in the order reports show them: (id as stored with each
    /// measurement, display title). Groups a suite does not list follow, in step order, under
    /// their ids.
    fn groups(&self) -> Vec<(&'static str, &'static str)> {
        Vec::new()
    }
}

/// A suite's lab section, checked: what the lab says, before the command line's `--quick`.
pub trait SuiteConfig: fmt::Debug + Send + Sync {
    fn name(&self) -> &'static str;
    /// The suite as it runs: scaled down to tiny tables and sub-second steps with `--quick`,
    /// then the command line's `--rows`/`--tables`/`--time` (they win over `--quick`); a flag
    /// the suite has no scale for is an error naming it and the lab key to set instead.
    fn scaled(&self, quick: bool, flags: &ScaleFlags) -> Result<Arc<dyn SuiteSettings>, String>;
    fn clone_box(&self) -> Box<dyn SuiteConfig>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl Clone for Box<dyn SuiteConfig> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// The plug-in glue every suite repeats, written once: `plug_in_glue!(config)` inside an
/// `impl SuiteConfig` gives `clone_box`, `as_any` and `as_any_mut`; `plug_in_glue!(settings)`
/// inside an `impl SuiteSettings` gives `as_any`. A macro, not a blanket impl over `T: Any`:
/// such an impl would also cover `Box<dyn SuiteConfig>`, and `as_any` called on the box would
/// hand out the box itself, so every downcast to the suite's own type would fail. Here `self`
/// is always the suite's concrete type.
macro_rules! plug_in_glue {
    (config) => {
        fn clone_box(&self) -> Box<dyn $crate::suites::SuiteConfig> {
            Box::new(self.clone())
        }

        fn as_any(&self) -> &dyn std::any::Any {
            self
        }

        fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
            self
        }
    };
    (settings) => {
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    };
}
pub(crate) use plug_in_glue;

/// `run --rows N --tables N --time SECS`: the scale the command line sets over the lab's
/// (already checked against `crate::range`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ScaleFlags {
    pub rows: Option<u64>,
    pub tables: Option<u32>,
    /// The measured length of every step that has a set length (not the loads).
    pub time: Option<f64>,
}

impl ScaleFlags {
    /// Refuse `--rows` and `--tables` for a suite without such a scale: `instead` names the
    /// lab keys that size it.
    pub fn no_rows_or_tables(&self, suite: &str, instead: &str) -> Result<(), String> {
        let flag = match (self.rows, self.tables) {
            (Some(_), _) => "--rows",
            (None, Some(_)) => "--tables",
            (None, None) => return Ok(()),
        };
        Err(format!(
            "{flag}: sizes the sysbench suite only; the lab's {suite} suite is sized by {instead} in [suite.{suite}] (or drop {flag})"
        ))
    }
}

/// A suite after `--quick` scaling: what its steps are planned from.
pub trait SuiteSettings: fmt::Debug + Send + Sync {
    fn name(&self) -> &'static str;
    /// Its steps as `--only`/`--skip` see them (warm ones too, so that a pattern that matches
    /// only them can say so).
    fn catalog(&self) -> Vec<Selectable>;
    /// Whether its `.pre` steps run, and so are selectable (sysbench's `pre = true`).
    fn pre(&self) -> bool {
        false
    }
    /// The suite with the steps `selection` chooses; `None` when it chooses none; bad input
    /// when a chosen step lacks a step it depends on.
    fn plan(&self, selection: &Selection) -> Result<Option<SuitePlan>, InputError>;
    /// `--dry-run`'s lines on the suite's scale and lengths (each ending in a newline).
    fn describe(&self) -> String;
    /// Added to `--dry-run`'s step count, e.g. `, pre = true`.
    fn steps_note(&self) -> &'static str {
        ""
    }
    /// For the disk preflight: the most rows the suite holds at once, and the bytes a row
    /// takes with its indexes in PostgreSQL (heap + B-trees; other engines scale it).
    fn disk_rows(&self) -> (u64, u64);
    fn as_any(&self) -> &dyn Any;
}

/// Every suite, in the order a lab's suites run and are listed.
pub static SUITES: &[&dyn SuiteKind] = &[
    &sysbench::SysbenchSuite,
    &insert::InsertSuite,
    &linkbench::LinkbenchSuite,
];

/// Suites that exist to test the plug-in seam (a suite is a folder plus one line here). They
/// are hidden unless [`TEST_SUITES_ENV`] is set, so a user's lab cannot name them and
/// `dbdelta list steps` does not show them; the integration tests set it.
pub static TEST_SUITES: &[&dyn SuiteKind] = &[&probe::ProbeSuite];

/// Set (to anything) to make [`TEST_SUITES`] available.
pub const TEST_SUITES_ENV: &str = crate::engine::families::TEST_ENV;

/// The suites a lab may name and `dbdelta list` shows: [`SUITES`], then [`TEST_SUITES`] when
/// enabled.
pub fn registry() -> Vec<&'static dyn SuiteKind> {
    let tests = std::env::var_os(TEST_SUITES_ENV).is_some();
    (SUITES.iter().copied())
        .chain(TEST_SUITES.iter().copied().filter(|_| tests))
        .collect()
}

/// Every suite compiled in, [`SUITES`] then [`TEST_SUITES`], whatever the environment: what a
/// report of stored measurements is handed (the switch decides what a lab may run, not how a
/// stored run reads).
pub fn all() -> Vec<&'static dyn SuiteKind> {
    (SUITES.iter().chain(TEST_SUITES)).copied().collect()
}

/// The lab table of `suite`'s PGO training run at `scale` (`small`: the suite's own; `quick`:
/// the bare table, run with `--quick`); an unknown or untrained suite is an error naming those
/// that train.
pub fn pgo_training(suite: &str, scale: &str) -> Result<String, String> {
    let trains: Vec<&dyn SuiteKind> = (SUITES.iter().copied())
        .filter(|s| s.pgo_training().is_some())
        .collect();
    match trains.iter().find(|s| s.name() == suite) {
        Some(s) if scale == "small" => Ok(s.pgo_training().unwrap_or_default().to_string()),
        Some(_) => Ok(format!("[suite.{suite}]\n")),
        None => {
            let names: Vec<&str> = trains.iter().map(|s| s.name()).collect();
            let (last, rest) = names.split_last().unwrap_or((&"no suite", &[]));
            let listed = match rest {
                [] => last.to_string(),
                _ => format!("{} or {last}", rest.join(", ")),
            };
            Err(format!("\"{suite}\": PGO trains on {listed}"))
        }
    }
}

/// A suite's postwrite budget: the lab's `postwrite_secs`, else `default`; at most 1 s with
/// `--quick`.
pub fn postwrite_budget(secs: Option<f64>, quick: bool, default: Duration) -> Duration {
    let budget = secs.map_or(default, Duration::from_secs_f64);
    if quick {
        budget.min(Duration::from_secs(1))
    } else {
        budget
    }
}

/// Serde's default for switches that are on unless the lab says otherwise (`prepared`).
pub fn yes() -> bool {
    true
}

/// One line per step: label, group and roles with their operation types and pacing.
pub fn role_lines(steps: &[crate::workload::StepPlan]) -> String {
    use crate::workload::Pacer;
    let mut out = String::new();
    let label = steps.iter().map(|s| s.label.len()).max().unwrap_or(0);
    let group = steps.iter().map(|s| s.group.len()).max().unwrap_or(0);
    for step in steps {
        let roles: Vec<String> = (step.roles.iter())
            .map(|r| {
                let pace = match r.pacer {
                    Pacer::Closed => "as fast as it can".to_string(),
                    Pacer::Rate { per_sec } => format!("{per_sec} statements/s"),
                    Pacer::Follow { bound, .. } => format!("follows within {bound}"),
                };
                format!("{} ({}, {pace})", r.name, r.ops.join("/"))
            })
            .collect();
        out.push_str(&format!(
            "{:<label$} {:<group$} {}\n",
            step.label,
            step.group,
            roles.join(" + ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn pgo_training_is_each_suites_own_table() {
        let small = super::pgo_training("insert", "small").unwrap();
        assert!(small.starts_with("[suite.insert]\n") && small.contains("rows = 200_000"));
        assert_eq!(
            super::pgo_training("linkbench", "quick").unwrap(),
            "[suite.linkbench]\n"
        );
        assert_eq!(
            super::pgo_training("tpcc", "small").unwrap_err(),
            "\"tpcc\": PGO trains on sysbench, insert or linkbench"
        );
    }
}
