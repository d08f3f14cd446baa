//! Verdicts: for each family (one compared target × client count × metric, over all its steps),
//! the per-step tests of paired ratios, Benjamini–Hochberg over the family, the minimum effect
//! and the adjusted intervals, written into the model's `relative` rows.
//!
//! Owns which ratios form a family and how a `stats::Verdict` becomes a [`MetricTest`]. The
//! arithmetic lives in `stats`; this module must not format anything or do I/O.

use std::collections::BTreeMap;

use super::model::{MetricTest, Relative, ReportModel, SpreadTest};
use crate::results::metrics::METRICS;
use crate::results::{Measurement, Metric};
use crate::stats;

/// What a verdict is on: QPS (higher is better) or a metric of the table with a verdict (a cost:
/// lower is better).
#[derive(Clone, Copy)]
enum Tested {
    Qps,
    Cost(Metric),
}

impl Tested {
    /// QPS, then the table's metrics with a verdict from paired repeats, in table order.
    fn all() -> impl Iterator<Item = Tested> {
        let costs = METRICS
            .iter()
            .filter(|d| d.verdict.is_some() && d.spread.is_none());
        std::iter::once(Tested::Qps).chain(costs.map(|d| Tested::Cost(d.metric)))
    }

    /// The field name (`qps`, the metric's id).
    fn name(self) -> &'static str {
        match self {
            Tested::Qps => "qps",
            Tested::Cost(m) => m.id(),
        }
    }

    fn get(self, m: &Measurement) -> Option<f64> {
        match self {
            Tested::Qps => m.qps,
            Tested::Cost(metric) => m.values.get(metric),
        }
    }
}

/// Per-repeat ratios target / base of `get` for one step, paired by repeat number, over the
/// non-failed repeats of both.
fn paired_ratios(ms: &[Measurement], r: &Relative, tested: Tested) -> Vec<f64> {
    let values = |target: &str| -> BTreeMap<u32, f64> {
        ms.iter()
            .filter(|m| m.target == target && m.step == r.step && m.clients == r.clients)
            .filter(|m| !m.failed)
            .filter_map(|m| tested.get(m).map(|v| (m.repeat, v)))
            .collect()
    };
    let base = values(&r.base);
    values(&r.target)
        .into_iter()
        .filter_map(|(repeat, t)| stats::ratio(Some(t), base.get(&repeat).copied()))
        .collect()
}

pub(super) fn metric_test(
    metric: &str,
    higher: bool,
    repeats: usize,
    v: &stats::Verdict,
) -> MetricTest {
    MetricTest {
        metric: metric.to_string(),
        higher_is_better: higher,
        paired_repeats: repeats as u32,
        geo_mean: v.test.geo_mean(),
        p: v.test.p,
        df: v.test.df,
        detectable: v.detectable,
        q: v.q,
        selected: v.selected,
        family_size: v.family_size as u32,
        family_selected: v.family_selected as u32,
        ci: v.ci,
        ci_level: v.ci_level,
        ci95: v.ci95,
        verdict: v.change.as_str().to_string(),
        may_be_below_min_effect: v.may_be_below_min_effect,
        unstable: v.unstable,
    }
}

/// How far instructions/op and CPU/op ratios may differ before the report says so.
const DISAGREEMENT: f64 = 1.25;

/// The verdict on `metric` (judged against its `spread` metric) of one relative row, from the
/// two sides' aggregates: the ratio, and the range the sides' spreads allow.
fn spread_test(
    model: &ReportModel,
    r: &Relative,
    metric: Metric,
    spread: Metric,
) -> Option<SpreadTest> {
    let side = |target: &str| {
        let a = model.aggregate(target, &r.step, r.clients)?;
        Some((a.get(metric)?, a.get(spread).unwrap_or(0.0)))
    };
    let ((b, sb), (t, st)) = (side(&r.base)?, side(&r.target)?);
    if b <= 0.0 || t <= 0.0 {
        return None;
    }
    let ratio = t / b;
    let low = (t - 2.0 * st) / (b + 2.0 * sb);
    let high = match b - 2.0 * sb {
        d if d > 0.0 => (t + 2.0 * st) / d,
        _ => f64::INFINITY,
    };
    let band = model.method.min_effect.ln_1p();
    let verdict = if low > 1.0 && ratio.ln() >= band {
        "regression"
    } else if high < 1.0 && -ratio.ln() >= band {
        "improvement"
    } else {
        "within noise"
    };
    let cpu_ratio = r.ratio(Metric::ServerCpu);
    Some(SpreadTest {
        metric: metric.id().into(),
        ratio,
        range: [low, high],
        base_spread: sb / b,
        target_spread: st / t,
        verdict: verdict.into(),
        cpu_ratio,
        cpu_disagrees: cpu_ratio.is_some_and(|c| (c / ratio).ln().abs() > DISAGREEMENT.ln()),
    })
}

/// Fills the verdicts of metrics judged against their own spread (one repeat suffices).
fn apply_spread(model: &mut ReportModel) {
    for i in 0..model.relative.len() {
        for d in METRICS.iter().filter(|d| d.verdict.is_some()) {
            let Some(spread) = d.spread else { continue };
            let test = spread_test(model, &model.relative[i], d.metric, spread);
            model.relative[i].tests.set_spread(d.metric, test);
        }
    }
}

/// Fills `qps_test`, the cost verdicts (`tests`: `server_cpu_test`) and the QPS summary fields (`paired_repeats`,
/// `geo_mean`, `ci95`, `verdict`, `unstable`) of every relative row. A step whose server CPU
/// is below resolution on both sides is left out of the CPU family.
pub(super) fn apply(model: &mut ReportModel, ms: &[Measurement]) {
    apply_spread(model);
    let mut families: BTreeMap<(String, u32), Vec<usize>> = BTreeMap::new();
    for (i, r) in model.relative.iter().enumerate() {
        families
            .entry((r.target.clone(), r.clients))
            .or_default()
            .push(i);
    }
    for rows in families.values() {
        for tested in Tested::all() {
            let (metric, higher) = (tested.name(), matches!(tested, Tested::Qps));
            let sets: Vec<Vec<f64>> = rows
                .iter()
                .map(|&i| {
                    let r = &model.relative[i];
                    if r.below_resolution.iter().any(|f| f == metric) {
                        Vec::new()
                    } else {
                        paired_ratios(ms, r, tested)
                    }
                })
                .collect();
            let rule = model.method.rule(higher);
            // The noise is pooled within a report group (reads with reads, writes with writes).
            let groups: Vec<&str> = rows
                .iter()
                .map(|&i| model.relative[i].group.as_str())
                .collect();
            let verdicts = stats::family_verdicts(&sets, &groups, rule);
            for ((&i, set), v) in rows.iter().zip(&sets).zip(verdicts) {
                let test = v.map(|v| metric_test(metric, higher, set.len(), &v));
                let r = &mut model.relative[i];
                match tested {
                    Tested::Cost(cost) => r.tests.set(cost, test),
                    Tested::Qps => {
                        r.paired_repeats = set.len() as u32;
                        r.geo_mean = test.as_ref().map(|t| t.geo_mean);
                        r.ci95 = test.as_ref().map(|t| t.ci95);
                        r.verdict = test.as_ref().map(|t| t.verdict.clone());
                        r.unstable = test.as_ref().is_some_and(|t| t.unstable);
                        r.qps_test = test;
                    }
                }
            }
        }
    }
}
