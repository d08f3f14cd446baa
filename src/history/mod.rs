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
//! - [`Point`] `{ run_id, run_name, started, value, interval, repeats }`: `interval` is the 95%
//!   t-interval of the mean over the repeats (`None` with one repeat).
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
}

impl Query {
    /// Every lab, target and step, QPS, the default detection settings.
    pub fn all() -> Query {
        Query {
            lab: None,
            target: None,
            step: None,
            metric: HistMetric::Qps,
            config: Config::default(),
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
    /// 95% t-interval of that mean over the repeats; `None` with one repeat.
    pub interval: Option<(f64, f64)>,
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
    let mut series = collect(&loaded, query);
    for s in &mut series {
        detect(s, query);
    }
    Ok(History {
        metric: query.metric.id().to_string(),
        higher_is_better: query.metric.higher_is_better(),
        max_p: query.config.max_p,
        min_magnitude: query.config.min_magnitude,
        series,
        partial,
    })
}

fn run_ref(r: &RunSummary) -> RunRef {
    RunRef {
        run_id: r.id.clone(),
        run_name: r.name.clone(),
        started: r.started.clone(),
    }
}

/// Series key: lab, target, step, clients; ordered by lab, then first-seen target, then step
/// index, then clients.
type Key = (String, usize, u32, String, String, u32);

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
        .map(|((lab, _, _, target, step, clients), points)| Series {
            lab,
            target,
            step,
            clients,
            points,
            changes: Vec::new(),
            too_few: None,
        })
        .collect()
}

/// One run's point of a cell: the mean over its repeats that have the value.
fn point(r: &RunSummary, ms: &[&Measurement], metric: HistMetric) -> Option<Point> {
    let xs: Vec<f64> = ms.iter().filter_map(|m| metric.of(m)).collect();
    let value = stats::mean_known(xs.iter().map(|x| Some(*x)))?;
    Some(Point {
        run_id: r.id.clone(),
        run_name: r.name.clone(),
        started: r.started.clone(),
        value,
        interval: interval(&xs),
        repeats: xs.len() as u32,
    })
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
