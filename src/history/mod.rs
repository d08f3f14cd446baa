//! `dbdelta history`: every stored run of a lab over time, one series per lab × target × step ×
//! clients, with the change points [`crate::changepoint`] finds in each.
//!
//! Owns choosing the runs (by lab name; complete runs only), the value of a run (the report's
//! aggregate: the mean over the non-failed repeats, as `report::build` computes it, so a point
//! is the number that run's report prints), its interval and the series' change points. The
//! renderers (`render`) are pure: a [`History`] in, text out. It must not time or write
//! anything, and must not compute verdicts between runs (`compare` does).
//!
//! The API (`dbdelta serve` draws its charts from it):
//! - [`history`]`(store, query) -> History`: [`Query`] says which lab, target, step and metric.
//! - [`History`]: the metric, the detection settings, the [`Series`] and the partial runs left
//!   out.
//! - [`Series`] `{ lab, target, step, clients, points, changes, too_few }`: points in run start
//!   order.
//! - [`Point`] `{ run_id, run_name, started, value, interval, clipped, repeats }`: `interval`
//!   is the 95% t-interval of the mean over the repeats (`None` with one repeat), its lower end
//!   raised to 0 when it reached below (`clipped`: no rate, cost or size is negative).
//! - [`Query::relative`]: each series' values (and intervals) over its value in one run (the
//!   first, or one named), so 1.0 is that run and series of different scales share an axis.
//! - [`Change`] `{ index, run_id, run_name, before_mean, after_mean, ratio, p_value, worse }`:
//!   `index` is the first point after the change (`points[index]`).
//!
//! Partial runs (`complete = 0`: interrupted, failed or still running) are left out of the
//! series and listed in [`History::partial`]: a run cut short may lack repeats or steps, and a
//! run still running would move a change point from one call to the next.

pub mod render;

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::changepoint::{self, Config};
use crate::results::{Measurement, Metric, RunData};
use crate::stats;
use crate::store::{RunSummary, Store};

/// The value a series follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistMetric {
    Qps,
    Tps,
    /// A row of the metric table (`server_cpu_us_per_op`, …).
    Table(Metric),
}

impl HistMetric {
    /// `qps`, `tps`, `cpu` (server CPU µs/op), `instructions` (server instructions/op) or a
    /// metric id of the table; `None` for anything else.
    pub fn parse(s: &str) -> Option<HistMetric> {
        match s {
            "qps" => Some(HistMetric::Qps),
            "tps" => Some(HistMetric::Tps),
            "cpu" => Some(HistMetric::Table(Metric::ServerCpu)),
            "instructions" => Some(HistMetric::Table(Metric::ServerInstr)),
            _ => Metric::by_id(s)
                .filter(|m| m.def().over_repeats.is_some())
                .map(HistMetric::Table),
        }
    }

    /// The id printed and written to JSON (`qps`, `server_cpu_us_per_op`, …).
    pub fn id(self) -> &'static str {
        match self {
            HistMetric::Qps => "qps",
            HistMetric::Tps => "tps",
            HistMetric::Table(m) => m.id(),
        }
    }

    /// Rates are better higher; costs, peaks and sizes lower.
    pub fn higher_is_better(self) -> bool {
        match self {
            HistMetric::Qps | HistMetric::Tps => true,
            HistMetric::Table(m) => m == Metric::ScanKrows,
        }
    }

    fn of(self, m: &Measurement) -> Option<f64> {
        match self {
            HistMetric::Qps => m.qps,
            HistMetric::Tps => m.tps,
            HistMetric::Table(metric) => m.values.get(metric),
        }
    }
}

/// What `history` reads.
#[derive(Debug, Clone)]
pub struct Query {
    /// The runs' lab name; `None`: every lab in the store.
    pub lab: Option<String>,
    pub target: Option<String>,
    pub step: Option<String>,
    pub metric: HistMetric,
    pub config: Config,
    /// Each value over the series' value in this run: `first`, or a run id or name; `None`:
    /// absolute values.
    pub relative: Option<String>,
}

/// [`Query::relative`]'s word for each series' first run.
pub const FIRST: &str = "first";

impl Query {
    /// Every lab, target and step, QPS, the default detection settings.
    pub fn all() -> Query {
        Query {
            lab: None,
            target: None,
            step: None,
            metric: HistMetric::Qps,
            config: Config::default(),
            relative: None,
        }
    }
}

/// The series of a query.
#[derive(Debug, Clone, Serialize)]
pub struct History {
    /// `HistMetric::id`.
    pub metric: String,
    pub higher_is_better: bool,
    /// The largest p-value and the smallest move of a change point.
    pub max_p: f64,
    pub min_magnitude: f64,
    /// The run the values are relative to ([`Query::relative`]); `None`: absolute values.
    pub relative_to: Option<String>,
    /// In lab, target (first seen), step (suite order) and clients order.
    pub series: Vec<Series>,
    /// Matching runs left out because they are not complete.
    pub partial: Vec<RunRef>,
}

/// A stored run, as messages name it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRef {
    pub run_id: String,
    pub run_name: Option<String>,
    pub started: String,
}

/// One lab × target × step × clients over the runs.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub lab: String,
    pub target: String,
    pub step: String,
    /// The step's report group (`SuiteKind::groups`), for the lab's overview.
    pub group: String,
    pub clients: u32,
    /// In run start order; runs without the value (no non-failed repeat has it) are left out.
    pub points: Vec<Point>,
    pub changes: Vec<Change>,
    /// Why no change points were looked for (too few points), else `None`.
    pub too_few: Option<String>,
}

/// One run's value.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub run_id: String,
    pub run_name: Option<String>,
    pub started: String,
    /// The mean over the run's non-failed repeats that have the value (the report's aggregate).
    pub value: f64,
    /// 95% t-interval of that mean over the repeats; `None` with one repeat. Its lower end is
    /// at least 0 (see `clipped`).
    pub interval: Option<(f64, f64)>,
    /// The t-interval reached below 0 and was cut there: too few or too spread repeats for
    /// an interval that means something (no value here can be negative).
    pub clipped: bool,
    pub repeats: u32,
}

/// A change point: the level moved between `points[index - 1]` and `points[index]`.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The first point after the change.
    pub index: usize,
    pub run_id: String,
    pub run_name: Option<String>,
    /// Means of the points from the previous change (or the first point) to `index`, and from
    /// `index` to the next change (or the last point).
    pub before_mean: f64,
    pub after_mean: f64,
    /// `after_mean / before_mean`; `None` when `before_mean` is 0.
    pub ratio: Option<f64>,
    /// Student's two-sided p-value (pooled variance) of the two segments.
    pub p_value: f64,
    /// The metric got worse (lower rate, higher cost).
    pub worse: bool,
}

/// The series of `query` from `store`, with their change points.
pub fn history(store: &Store, query: &Query) -> Result<History> {
    let runs = store.list_runs()?;
    let matching: Vec<&RunSummary> = (runs.iter())
        .filter(|r| query.lab.as_ref().is_none_or(|l| &r.lab == l))
        .collect();
    let mut loaded = Vec::new();
    let mut partial = Vec::new();
    for r in matching {
        if r.complete {
            let data = store
                .load_run(&r.id)
                .with_context(|| format!("history: reading run {}", r.id))?;
            loaded.push((r, data));
        } else {
            partial.push(run_ref(r));
        }
    }
    Ok(build(&loaded, partial, query))
}

/// The history of runs already read (complete ones, in start order) and the partial ones left
/// out.
pub fn build(runs: &[(&RunSummary, RunData)], partial: Vec<RunRef>, query: &Query) -> History {
    let mut series = collect(runs, query);
    for s in &mut series {
        if let Some(base) = &query.relative {
            relative(s, base);
        }
        if s.too_few.is_none() {
            detect(s, query);
        }
    }
    History {
        metric: query.metric.id().to_string(),
        higher_is_better: query.metric.higher_is_better(),
        max_p: query.config.max_p,
        min_magnitude: query.config.min_magnitude,
        relative_to: query.relative.clone(),
        series,
        partial,
    }
}

fn run_ref(r: &RunSummary) -> RunRef {
    RunRef {
        run_id: r.id.clone(),
        run_name: r.name.clone(),
        started: r.started.clone(),
    }
}

/// Series key: lab, target, step, clients (and the step's group); ordered by lab, then
/// first-seen target, then step index, then clients.
type Key = (String, usize, u32, String, String, u32, String);

/// The points of every matching lab × target × step × clients, runs in start order.
fn collect(runs: &[(&RunSummary, RunData)], q: &Query) -> Vec<Series> {
    let mut target_order: Vec<String> = Vec::new();
    let mut by_key: BTreeMap<Key, Vec<Point>> = BTreeMap::new();
    for (summary, data) in runs {
        let mut cells: BTreeMap<Key, Vec<&Measurement>> = BTreeMap::new();
        for m in &data.measurements {
            if m.failed
                || q.target.as_ref().is_some_and(|t| &m.target != t)
                || q.step.as_ref().is_some_and(|s| &m.step != s)
            {
                continue;
            }
            let t = match target_order.iter().position(|t| t == &m.target) {
                Some(i) => i,
                None => {
                    target_order.push(m.target.clone());
                    target_order.len() - 1
                }
            };
            let key = (
                summary.lab.clone(),
                t,
                m.step_index,
                m.target.clone(),
                m.step.clone(),
                m.clients,
                m.group.clone(),
            );
            cells.entry(key).or_default().push(m);
        }
        for (key, ms) in cells {
            if let Some(p) = point(summary, &ms, q.metric) {
                by_key.entry(key).or_default().push(p);
            }
        }
    }
    by_key
        .into_iter()
        .map(
            |((lab, _, _, target, step, clients, group), points)| Series {
                lab,
                target,
                step,
                group,
                clients,
                points,
                changes: Vec::new(),
                too_few: None,
            },
        )
        .collect()
}

/// One run's point of a cell: the mean over its repeats that have the value.
fn point(r: &RunSummary, ms: &[&Measurement], metric: HistMetric) -> Option<Point> {
    let xs: Vec<f64> = ms.iter().filter_map(|m| metric.of(m)).collect();
    let value = stats::mean_known(xs.iter().map(|x| Some(*x)))?;
    let interval = interval(&xs);
    Some(Point {
        run_id: r.id.clone(),
        run_name: r.name.clone(),
        started: r.started.clone(),
        value,
        clipped: interval.is_some_and(|(lo, _)| lo < 0.0),
        interval: interval.map(|(lo, hi)| (lo.max(0.0), hi)),
        repeats: xs.len() as u32,
    })
}

/// `s`'s values and intervals over its value in run `base` ([`FIRST`]: its first point; else
/// a run id or name). A series without that run (or whose value there is 0) keeps no points
/// and says why in `too_few`.
fn relative(s: &mut Series, base: &str) {
    let at = match base {
        FIRST => s.points.first(),
        _ => (s.points.iter()).find(|p| p.run_id == base || p.run_name.as_deref() == Some(base)),
    };
    let Some(b) = at.map(|p| p.value).filter(|v| *v > 0.0) else {
        s.points.clear();
        s.too_few = Some(format!(
            "run {base} has no value of this series to be relative to"
        ));
        return;
    };
    for p in &mut s.points {
        p.value /= b;
        p.interval = p.interval.map(|(lo, hi)| (lo / b, hi / b));
    }
}

/// The 95% t-interval of the mean of `xs`; `None` under two values.
pub fn interval(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let half = stats::t95(xs.len() - 1) * stats::sample_variance(xs).sqrt() / n.sqrt();
    Some((m - half, m + half))
}

/// The change points of one series, or why there are none to look for.
fn detect(s: &mut Series, q: &Query) {
    let xs: Vec<f64> = s.points.iter().map(|p| p.value).collect();
    match changepoint::detect(&xs, &q.config) {
        Err(e) => s.too_few = Some(e.to_string()),
        Ok(cps) => {
            s.changes = cps
                .into_iter()
                .map(|c| {
                    let p = &s.points[c.index];
                    Change {
                        index: c.index,
                        run_id: p.run_id.clone(),
                        run_name: p.run_name.clone(),
                        before_mean: c.before_mean,
                        after_mean: c.after_mean,
                        ratio: c.ratio(),
                        p_value: c.p_value,
                        worse: (c.after_mean < c.before_mean) == q.metric.higher_is_better(),
                    }
                })
                .collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{RunInfo, Values};

    fn summary(i: usize) -> RunSummary {
        RunSummary {
            id: format!("run-{i:02}"),
            lab: "nightly".into(),
            started: format!("2026-11-26T12:{i:02}:00Z"),
            complete: true,
            targets: vec!["t".into()],
            measurements: 0,
            steps: 0,
            name: Some(format!("nightly-{i:02}")),
            tags: Vec::new(),
            kind: None,
            explains: None,
        }
    }

    fn m(step: &str, index: u32, repeat: u32, qps: f64, cpu: f64) -> Measurement {
        Measurement {
            target: "t".into(),
            step: step.into(),
            step_index: index,
            clients: 1,
            repeat,
            qps: Some(qps),
            values: Values::default().with(&[(Metric::ServerCpu, cpu)]),
            ..Measurement::default()
        }
    }

    /// Ten runs of three repeats: `read` flat with ±1% noise, `write` at a quarter of its QPS
    /// (and 4× its CPU/op) from the sixth run on; run 3's write has one failed repeat.
    fn runs() -> Vec<(RunSummary, RunData)> {
        let wiggle = [1.0, 0.99, 1.01, 1.005, 0.995, 1.0, 1.01, 0.99, 1.0, 1.005];
        (1..=10)
            .map(|i| {
                let w = wiggle[i - 1];
                let slow = if i >= 6 { 4.0 } else { 1.0 };
                let mut ms = Vec::new();
                for r in 1..=3 {
                    let e = 1.0 + 0.002 * (r as f64 - 2.0);
                    ms.push(m("read", 0, r, 50_000.0 * w * e, 20.0 / (w * e)));
                    ms.push(m(
                        "write",
                        1,
                        r,
                        8_000.0 * w * e / slow,
                        90.0 * slow / (w * e),
                    ));
                }
                if i == 3 {
                    ms[1].failed = true;
                    ms[1].qps = Some(1.0);
                }
                let data = RunData {
                    run: RunInfo::default(),
                    measurements: ms,
                    ..RunData::default()
                };
                (summary(i), data)
            })
            .collect()
    }

    fn of(runs: &[(RunSummary, RunData)], q: &Query) -> History {
        let refs: Vec<(&RunSummary, RunData)> = runs.iter().map(|(s, d)| (s, d.clone())).collect();
        build(&refs, Vec::new(), q)
    }

    #[test]
    fn the_change_is_found_at_the_sixth_run_on_the_changed_step_only() {
        for metric in [HistMetric::Qps, HistMetric::Table(Metric::ServerCpu)] {
            let h = of(
                &runs(),
                &Query {
                    metric,
                    ..Query::all()
                },
            );
            let names: Vec<(&str, usize)> = h
                .series
                .iter()
                .map(|s| (s.step.as_str(), s.changes.len()))
                .collect();
            assert_eq!(names, vec![("read", 0), ("write", 1)], "{metric:?}");
            let c = &h.series[1].changes[0];
            assert_eq!((c.index, c.run_name.as_deref()), (5, Some("nightly-06")));
            assert!(c.worse, "{c:?}");
            let r = c.ratio.unwrap();
            let want = if metric == HistMetric::Qps { 0.25 } else { 4.0 };
            assert!((r / want - 1.0).abs() < 0.02, "{metric:?}: ratio {r}");
        }
    }

    #[test]
    fn a_point_is_the_mean_of_the_non_failed_repeats_with_its_interval() {
        let h = of(
            &runs(),
            &Query {
                step: Some("write".into()),
                ..Query::all()
            },
        );
        assert_eq!(h.series.len(), 1);
        let p = &h.series[0].points[2];
        assert_eq!(p.repeats, 2, "the failed repeat is left out");
        let want = 8_000.0 * 1.01 * (1.0 + 1.002) / 2.0;
        assert!((p.value - want).abs() < 1e-6, "{p:?}");
        let (lo, hi) = p.interval.unwrap();
        assert!(lo < p.value && p.value < hi, "{p:?}");
        // t95(1) · sd / √2 with sd = 16.16 / √2: 12.706 · 8.08.
        assert!(((hi - lo) / 2.0 - 12.706 * 8.08).abs() < 0.5, "{p:?}");
        assert_eq!(interval(&[5.0]), None);
    }

    #[test]
    fn too_few_runs_say_so_and_filters_apply() {
        let few: Vec<_> = runs().into_iter().take(3).collect();
        let q = Query {
            target: Some("t".into()),
            step: Some("read".into()),
            ..Query::all()
        };
        let h = of(&few, &q);
        assert_eq!(h.series.len(), 1);
        assert!(h.series[0].changes.is_empty());
        assert!(
            h.series[0]
                .too_few
                .as_deref()
                .unwrap()
                .starts_with("3 value(s)"),
            "{h:?}"
        );
        let none = of(
            &few,
            &Query {
                target: Some("other".into()),
                ..Query::all()
            },
        );
        assert!(none.series.is_empty());
    }

    /// A series relative to its first run or to a named one (1 there), and a series
    /// without that run says so instead of showing numbers.
    #[test]
    fn relative_series_divide_by_the_chosen_run() {
        let first = of(
            &runs(),
            &Query {
                relative: Some(FIRST.into()),
                ..Query::all()
            },
        );
        assert_eq!(first.relative_to.as_deref(), Some(FIRST));
        let write = &first.series[1];
        assert_eq!(write.points[0].value, 1.0);
        assert!(
            (write.points[9].value - 0.25 * 1.005).abs() < 0.01,
            "{write:?}"
        );
        let (lo, hi) = write.points[0].interval.unwrap();
        assert!(lo < 1.0 && 1.0 < hi, "the interval is divided too");
        assert_eq!(
            write.changes.len(),
            1,
            "change points on the relative values"
        );
        let named = of(
            &runs(),
            &Query {
                relative: Some("nightly-06".into()),
                ..Query::all()
            },
        );
        assert_eq!(named.series[1].points[5].value, 1.0);
        assert!((named.series[1].points[0].value - 4.0).abs() < 0.1);
        let missing = of(
            &runs(),
            &Query {
                relative: Some("no-such-run".into()),
                ..Query::all()
            },
        );
        assert!(missing.series.iter().all(|s| s.points.is_empty()));
        let why = missing.series[0].too_few.as_deref().unwrap();
        assert!(why.contains("run no-such-run has no value"), "{why}");
    }

    /// An interval that reached below zero is cut at 0, marked and explained.
    #[test]
    fn intervals_below_zero_are_cut_at_zero_and_explained() {
        let mut data = runs();
        for (i, m) in data[0].1.measurements.iter_mut().enumerate() {
            if m.step == "read" {
                m.qps = Some(if i == 0 { 10.0 } else { 1_000.0 });
            }
        }
        let h = of(&data, &Query::all());
        let p = &h.series[0].points[0];
        assert!(p.clipped, "{p:?}");
        assert_eq!(p.interval.unwrap().0, 0.0);
        assert!(!h.series[0].points[1].clipped);
        let text = render::render(&h, render::HistFormat::Text);
        assert!(text.contains("*\n") || text.contains("* "), "{text}");
        assert!(text.contains(render::CLIPPED), "{text}");
        let md = render::render(&h, render::HistFormat::Markdown);
        assert!(md.contains(render::CLIPPED), "{md}");
    }

    #[test]
    fn metric_names() {
        assert_eq!(
            HistMetric::parse("cpu"),
            Some(HistMetric::Table(Metric::ServerCpu))
        );
        assert_eq!(
            HistMetric::parse("cs_per_op").map(HistMetric::id),
            Some("cs_per_op")
        );
        assert_eq!(
            HistMetric::parse("qps").map(HistMetric::higher_is_better),
            Some(true)
        );
        assert_eq!(
            HistMetric::parse("cpu").map(HistMetric::higher_is_better),
            Some(false)
        );
        assert_eq!(HistMetric::parse("speed"), None);
    }

    #[test]
    fn renderers_mark_the_change_on_its_run() {
        use render::{HistFormat, render};
        let h = of(&runs(), &Query::all());
        let text = render(&h, HistFormat::Text);
        let marked: Vec<&str> = text.lines().filter(|l| l.contains("◀ change")).collect();
        assert_eq!(marked.len(), 1, "{text}");
        assert!(
            marked[0]
                .trim_start()
                .starts_with("nightly-06  2026-11-26 12:06:00"),
            "{text}"
        );
        assert!(
            text.contains("change at nightly-06 (point 6 of 10)"),
            "{text}"
        );
        assert!(text.contains("2 series, 1 change point"), "{text}");
        let md = render(&h, HistFormat::Markdown);
        let rows: Vec<&str> = md.lines().filter(|l| l.contains("**")).collect();
        assert_eq!(rows.len(), 1, "{md}");
        assert!(rows[0].starts_with("| nightly-06 |"), "{md}");
        assert!(
            rows[0].contains("**-75%**") && rows[0].contains("worse"),
            "{md}"
        );
        let json: serde_json::Value = serde_json::from_str(&render(&h, HistFormat::Json)).unwrap();
        assert_eq!(json["series"][1]["changes"][0]["run_name"], "nightly-06");
        assert_eq!(json["series"][1]["points"].as_array().unwrap().len(), 10);
    }
}
