//! Per-second line charts of one step at one client count: each shown target's throughput
//! (first repeat) and, for a query step, the background inserters' rows per second.
//!
//! Must not: compute report numbers (the model's series and measurements hold them) or do I/O.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axis::nice_ceil;
use super::style::{DrawResult, Key, draw_path, frame, line_key, mesh_look, px};
use crate::report::model::ReportModel;

/// Data of one throughput chart.
pub(super) struct Lines {
    pub(super) title: String,
    /// Per target with a series: its key (compared targets after the second dashed) and
    /// `(second, ops)` points.
    pub(super) series: Vec<(Key, Vec<(u32, f64)>)>,
    pub(super) seconds: u32,
    pub(super) y_max: f64,
    /// The y axis' unit, e.g. `queries/s`.
    pub(super) unit: &'static str,
}

pub(super) fn lines(model: &ReportModel, step: &str, clients: u32) -> Option<Lines> {
    let mut series = Vec::new();
    for (i, t) in model.shown_targets().into_iter().enumerate() {
        let first = model
            .series
            .iter()
            .filter(|s| s.target == t && s.step == step && s.clients == clients)
            .min_by_key(|s| s.repeat);
        let Some(s) = first else { continue };
        let points: Vec<(u32, f64)> = s
            .ops_per_sec
            .iter()
            .copied()
            .filter(|p| p.1.is_finite())
            .collect();
        if points.is_empty() {
            continue;
        }
        let key = line_key(i, t);
        series.push((key, points));
    }
    Lines::new(format!("{step}, clients = {clients}"), series, "queries/s")
}

impl Lines {
    /// A per-second chart of `series`; its x axis spans the longest series, its y axis the
    /// highest point. `None` without a series.
    fn new(
        title: String,
        series: Vec<(Key, Vec<(u32, f64)>)>,
        unit: &'static str,
    ) -> Option<Lines> {
        if series.is_empty() {
            return None;
        }
        let seconds = (series.iter())
            .flat_map(|s| s.1.iter().map(|p| p.0 + 1))
            .max()
            .unwrap_or(1);
        let top = (series.iter())
            .flat_map(|s| s.1.iter().map(|p| p.1))
            .fold(0.0f64, f64::max);
        Some(Lines {
            title,
            series,
            seconds,
            y_max: nice_ceil(top * 1.05),
            unit,
        })
    }
}

/// The per-second rows inserted by a query step's background inserters, per target (first
/// non-failed repeat).
pub(super) fn background_lines(model: &ReportModel, step: &str, clients: u32) -> Option<Lines> {
    let mut series = Vec::new();
    for (i, t) in model.shown_targets().into_iter().enumerate() {
        let first = (model.measurements.iter())
            .filter(|m| m.target == t && m.step == step && m.clients == clients && !m.failed)
            .min_by_key(|m| m.repeat);
        let Some(inserter) = first.and_then(|m| m.operations.iter().find(|o| o.role == "inserter"))
        else {
            continue;
        };
        let points: Vec<(u32, f64)> = (inserter.series.iter().enumerate())
            .map(|(s, v)| (s as u32, *v as f64))
            .collect();
        if !points.is_empty() {
            series.push((line_key(i, t), points));
        }
    }
    Lines::new(
        format!("{step}: background rows inserted per second, clients = {clients}"),
        series,
        "rows/s",
    )
}

pub(super) fn draw_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    l: &Lines,
    k: f64,
) -> DrawResult<DB::ErrorType> {
    let plot_area = frame(root, &l.title, l.series.iter().map(|s| &s.0), 50.0, k)?;
    let mut chart = ChartBuilder::on(&plot_area)
        .margin_left(px(6.0, k))
        .margin_right(px(14.0, k))
        .margin_top(px(4.0, k))
        .x_label_area_size(px(34.0, k))
        .y_label_area_size(px(62.0, k))
        .build_cartesian_2d(0f64..l.seconds as f64, 0f64..l.y_max)?;
    let whole = |v: &f64| crate::report::doc::thousands(*v);
    let secs = |v: &f64| format!("{v:.0}");
    let mut mesh = chart.configure_mesh();
    mesh.x_labels(l.seconds.clamp(2, 10) as usize)
        .y_labels(6)
        .x_label_formatter(&secs)
        .y_label_formatter(&whole)
        .x_desc("second of the measured period")
        .y_desc(l.unit);
    mesh_look(&mut mesh, 10.0, k).draw()?;
    let width = px(2.0, k).max(1) as u32;
    for (key, points) in &l.series {
        // Each second's ops are drawn at the middle of that second.
        let xy: Vec<(f64, f64)> = points.iter().map(|(s, v)| (*s as f64 + 0.5, *v)).collect();
        if xy.len() == 1 && !key.dashed {
            chart.draw_series(std::iter::once(Circle::new(
                xy[0],
                px(3.0, k),
                key.colour.filled(),
            )))?;
        } else {
            draw_path(&mut chart, xy, key, width, k)?;
        }
    }
    Ok(())
}
