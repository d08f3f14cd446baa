//! The verdicts' records: the method's parameters ([`Method`]), a paired test over repeats
//! ([`MetricTest`]), a one-repeat test against a metric's own spread ([`SpreadTest`]), and a
//! step's cost tests by metric ([`CostTests`], written as `<short>_test` keys).
//!
//! Must not compute a test (`report::verdict` and `stats` do) or import the rest of the model:
//! it reads only the metric table.

use std::collections::BTreeMap;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::results::Metric;
use crate::results::metrics::METRICS;

/// Whether a verdict is a decision: `regression`, `improvement` or `unchanged`. `within
/// noise` (could not be decided) and `unmeasurable` (the passes disagree by more than half)
/// are not.
pub fn is_decided(verdict: &str) -> bool {
    matches!(verdict, "regression" | "improvement" | "unchanged")
}

/// The parameters the verdicts, flags and `~` cells of this report were computed with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Method {
    /// Benjamini–Hochberg false discovery rate within each family (compared target × clients ×
    /// metric, over all its steps).
    pub fdr_q: f64,
    /// Minimum effect: a change smaller than a factor of `1 + min_effect` either way is within
    /// noise, as is a step whose within-step precision (± of the per-second mean) is wider.
    pub min_effect: f64,
    /// Where `min_effect` came from: `lab` (stored with the run), `--min-effect`, or `default`
    /// (runs stored before dbdelta recorded it).
    pub min_effect_source: String,
    /// Fewest whole seconds of a step's per-second series before it is not "too short".
    pub min_step_seconds: u32,
    /// A counter total (per repeat) below this many units of its resolution is too coarse for
    /// a ratio (`~`).
    pub resolution_units: f64,
    /// The resolution of CPU times: one clock tick, µs.
    pub clock_tick_us: f64,
    /// `moderated` (each step's variance pooled with its report group's) or `student` (each alone).
    pub test: String,
    /// How many times the run could look at the steps (`repeats = "auto"`); 1 for fixed
    /// repeats. P-values are multiplied by it before Benjamini–Hochberg.
    pub looks: u32,
    /// The power at which [`MetricTest::detectable`] is stated.
    pub power: f64,
}

impl Method {
    /// The rule of a family of this report's verdicts.
    pub fn rule(&self, higher_is_better: bool) -> crate::stats::FamilyRule {
        crate::stats::FamilyRule {
            q: self.fdr_q,
            min_effect: self.min_effect,
            higher_is_better,
            pooled: self.test == "moderated",
            looks: self.looks,
        }
    }
}

/// One metric's verdict for one step, judged within its family (see [`Method`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricTest {
    /// `qps` or `server_cpu_us_per_op`.
    pub metric: String,
    /// QPS: higher is better; server CPU/op: lower is better.
    pub higher_is_better: bool,
    pub paired_repeats: u32,
    /// Geometric mean of the per-repeat ratios target / base.
    pub geo_mean: f64,
    /// Two-sided p-value of the t test of the log ratios against 0 (`Method::test`).
    pub p: f64,
    /// Degrees of freedom of that test: n − 1, or moderated: the prior's plus the step's.
    pub df: f64,
    /// The smallest change (relative, either way) this step would have been called with
    /// `Method::power` probability, at the noise measured in the run.
    pub detectable: f64,
    /// Benjamini–Hochberg adjusted p-value within the family.
    pub q: f64,
    /// Benjamini–Hochberg selected the step (`q ≤ fdr_q`).
    pub selected: bool,
    /// Steps tested in the family, and how many were selected.
    pub family_size: u32,
    pub family_selected: u32,
    /// False-coverage-rate adjusted interval of the geometric mean (Benjamini–Yekutieli), at
    /// `ci_level`; it excludes 1 exactly when the step is selected.
    pub ci: [f64; 2],
    pub ci_level: f64,
    /// The unadjusted 95% interval: this step alone, not corrected for the family's tests.
    pub ci95: [f64; 2],
    /// `regression`, `improvement` or `within noise`.
    pub verdict: String,
    /// Selected (the change is not nothing), but the adjusted interval reaches inside a factor of
    /// `1 + min_effect` of 1: the change may be smaller than the minimum effect.
    pub may_be_below_min_effect: bool,
    /// The repeats disagree more than the effect.
    pub unstable: bool,
    /// In some repeat, the CPU of other processes differed between the two sides by more than
    /// a quarter of a core: the step was judged on its own variance, not its group's.
    pub uneven_load: bool,
}

/// The instructions/op verdict of one operation type of a step counted on its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpSpreadTest {
    pub role: String,
    pub op: String,
    /// Instructions per unit on each side.
    pub base: f64,
    pub value: f64,
    pub test: SpreadTest,
}

/// The verdicts on the costs of one relative row, by metric (those of the table with a verdict):
/// from paired repeats, or from one repeat against the metric's own spread.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CostTests {
    paired: BTreeMap<Metric, MetricTest>,
    spread: BTreeMap<Metric, SpreadTest>,
}

impl CostTests {
    pub fn get(&self, metric: Metric) -> Option<&MetricTest> {
        self.paired.get(&metric)
    }

    pub fn set(&mut self, metric: Metric, test: Option<MetricTest>) {
        match test {
            Some(t) => self.paired.insert(metric, t),
            None => self.paired.remove(&metric),
        };
    }

    /// The verdict of a metric judged against its spread ([`MetricDef::spread`]).
    ///
    /// [`MetricDef::spread`]: crate::results::metrics::MetricDef::spread
    pub fn spread(&self, metric: Metric) -> Option<&SpreadTest> {
        self.spread.get(&metric)
    }

    pub fn set_spread(&mut self, metric: Metric, test: Option<SpreadTest>) {
        match test {
            Some(t) => self.spread.insert(metric, t),
            None => self.spread.remove(&metric),
        };
    }
}

/// `<short>_test` for every metric with a verdict, in table order (`null` without one).
impl Serialize for CostTests {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for d in METRICS {
            if let Some(short) = d.verdict {
                let key = format!("{short}_test");
                match d.spread {
                    Some(_) => map.serialize_entry(&key, &self.spread(d.metric))?,
                    None => map.serialize_entry(&key, &self.get(d.metric))?,
                }
            }
        }
        map.end()
    }
}

/// A verdict from one repeat: the ratio of a metric whose own spread is known (instructions/op:
/// the counting passes'), called a change when the spreads cannot explain it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpreadTest {
    /// `server_instructions_per_op`.
    pub metric: String,
    /// target / base.
    pub ratio: f64,
    /// The ratios the two sides allow, each side moved by its whole range (twice its
    /// half-range) against the change: the verdict needs 1 outside it.
    pub range: [f64; 2],
    /// Each side's half-range relative to its value.
    pub base_spread: f64,
    pub target_spread: f64,
    /// Pairs of passes matched by their seed (the k-th of each side ran the same rows): the
    /// range is then the lowest and highest of their ratios. 0: no pairs on one side (an older
    /// store), the range is the sides' spreads'.
    pub paired: u32,
    /// Pairs of passes counted on each side (base, target) when the range is a 95% interval
    /// over them (Welch's, on the log of the ratio of their means): where no seed-matched
    /// pairing explains the sides' variation and a side counted 5 pairs or more (the counting
    /// pass counts 7 where its first 3 disagree by more than ±1%). `None`: the range is the
    /// paired one, or the sides' ranges moved by their whole width.
    pub interval: Option<[u32; 2]>,
    /// Where the pairs were counted on two or more server starts and the starts' mean ratios
    /// disagree more than the pairs within a start: half the range of those means over their
    /// mean (`between starts ±x%`). The range then holds the mean ratio moved by the starts'
    /// whole range either way. `None`: one start, or the starts agree within their pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between_starts: Option<f64>,
    /// The step's floor (`dbdelta calibrate`: how far its instructions/op moved between two
    /// identical servers of the build; the larger of base's and target's): a change's range
    /// must clear it either way as well as the minimum effect. `None`: neither build was
    /// calibrated, and no floor is assumed.
    pub floor: Option<f64>,
    /// `regression` / `improvement` (1 outside the range and the ratio beyond the minimum
    /// effect), `unchanged` (the whole range within ± the minimum effect), `unmeasurable` (the
    /// range reaches zero: the passes disagree by more than half) or `within noise` (none of
    /// these: undecided).
    pub verdict: String,
    /// The server CPU/op ratio of the same step (the timed repeats'), when known.
    pub cpu_ratio: Option<f64>,
    /// Instructions/op and CPU/op disagree by more than a factor of 1.25: the step's CPU goes
    /// to what instructions do not show (waits, contention, cache misses, IO, the kernel).
    pub cpu_disagrees: bool,
}
