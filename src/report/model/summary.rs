//! The report's answer: the first screen's facts ([`Summary`]: each target's provenance, the
//! changed steps, what was decided) and each group's relative-QPS statistics.
//!
//! Plain `Serialize` records of the JSON contract, plus the count of decided steps
//! ([`Decided::of`]). Must not judge a step (its verdict is [`Relative::step_verdict`], in
//! `rows`) or compute the numbers (`build` and `answer` do).

use serde::Serialize;

use super::rows::{Deciding, Relative};
use super::verdicts::is_decided;

/// The report's answer, what every format opens with.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Summary {
    /// One per target, lab order.
    pub targets: Vec<Provenance>,
    /// The decided steps that changed: regressions first, then improvements (report order).
    pub changed: Vec<ChangedStep>,
    /// Compared steps (target × step × clients) in all, unchanged, and undecided (within noise,
    /// unmeasurable or without a verdict).
    pub steps: u32,
    pub unchanged: u32,
    pub undecided: u32,
    /// What would decide the undecided steps, measured for this run (empty: nothing undecided).
    pub to_decide: Vec<String>,
    /// Counted steps whose QPS verdict tells another story than their instructions/op, which
    /// their verdict follows (absent when none does).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disagree: Vec<Disagreement>,
}

/// A counted step whose QPS test and instruction count disagree: one is a change, the other
/// not the same change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Disagreement {
    pub target: String,
    pub base: String,
    pub step: String,
    pub clients: u32,
    /// What the step's verdict (and the Answer) follows: instructions/op.
    pub followed: Deciding,
    /// The QPS test that says otherwise.
    pub other: Deciding,
}

/// Where a target's server came from.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Provenance {
    pub target: String,
    /// The target it is compared with (`None`: a base).
    pub base: Option<String>,
    pub engine: String,
    /// The server's own version string, whole.
    pub server_version: Option<String>,
    /// The compiler, where the build, the binary's `.comment` or the version string says it.
    pub compiler: Option<String>,
    /// The first line the server program prints for `--version` (SQLite: the library's version
    /// and source id), where it was read.
    pub version_line: Option<String>,
    /// Compiler flags, where dbdelta built it or the server says them (PostgreSQL's
    /// `pg_config` view).
    pub cflags: Option<String>,
    /// Where the build came from: fetched by `version`, a `bin` directory, Debian's install,
    /// built by dbdelta, a running server, the bundled library.
    pub source: String,
}

/// A decided step that changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangedStep {
    pub target: String,
    pub base: String,
    pub step: String,
    pub clients: u32,
    #[serde(flatten)]
    pub deciding: Deciding,
}

/// One compared target's decided steps at one client count, over every group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetDecided {
    pub target: String,
    /// The target it is relative to.
    pub base: String,
    pub clients: u32,
    #[serde(flatten)]
    pub counts: Decided,
}

/// How many of some steps were decided, by their step verdict ([`Relative::step_verdict`]):
/// `decided` = `regressions` + `improvements` + `unchanged`; the rest of `steps` are `within
/// noise`, `unmeasurable` or have no verdict at all (a failed side).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Decided {
    /// Compared steps (relative rows).
    pub steps: u32,
    pub decided: u32,
    pub regressions: u32,
    pub improvements: u32,
    pub unchanged: u32,
    pub within_noise: u32,
    pub unmeasurable: u32,
}

impl Decided {
    /// The counts of `rows`' step verdicts.
    pub fn of<'a>(rows: impl IntoIterator<Item = &'a Relative>) -> Decided {
        let mut d = Decided::default();
        for r in rows {
            d.steps += 1;
            let verdict = r.step_verdict();
            d.decided += u32::from(verdict.is_some_and(is_decided));
            match verdict {
                Some("regression") => d.regressions += 1,
                Some("improvement") => d.improvements += 1,
                Some("unchanged") => d.unchanged += 1,
                Some("within noise") => d.within_noise += 1,
                Some("unmeasurable") => d.unmeasurable += 1,
                _ => {}
            }
        }
        d
    }
}

/// Relative-QPS statistics of one group's steps for one non-base target and client count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSummary {
    pub target: String,
    /// The target it is relative to.
    pub base: String,
    pub group: String,
    pub title: String,
    pub clients: u32,
    /// Steps with a known relative QPS.
    pub steps: u32,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub avg: Option<f64>,
    pub median: Option<f64>,
    /// Median relative server CPU/op over the group's steps.
    pub server_cpu_us_per_op_median: Option<f64>,
    /// Step whose relative QPS is furthest from 1 (in log terms).
    pub largest_change: Option<StepValue>,
    /// QPS verdicts.
    pub regressions: u32,
    pub improvements: u32,
    /// Server CPU/op verdicts.
    pub server_cpu_regressions: u32,
    pub server_cpu_improvements: u32,
    /// How many of the group's steps were decided, by their step verdict; `None` when no step
    /// of the report has a verdict (as [`ReportModel::decided`]).
    ///
    /// [`ReportModel::decided`]: super::ReportModel::decided
    pub decided: Option<Decided>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepValue {
    pub step: String,
    pub value: f64,
}
