//! The QPS-against-clients chart of a report group (with a client sweep): a line per shown
//! target over the client counts on a log2 x axis labelled with the counts, a gap at an n/a
//! count.
//!
//! Must not: compute report numbers (the model's group QPS holds them) or do I/O.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::{log2_range, log2_x, nice_ceil};
use super::style::{DrawResult, Key, LinearChart, draw_path, font, frame, line_key, px, y_mesh};
use crate::report::model::ReportModel;

/// Data of one QPS-against-clients chart.
pub(super) struct Scaling {
    pub(super) title: String,
    /// The report's client counts, ascending (all positive).
    pub(super) clients: Vec<u32>,
    /// Per shown target with a group QPS: its key (coloured as in the throughput charts) and
    /// its group QPS per client count (`None`: n/a, a gap in the line).
    pub(super) series: Vec<(Key, Vec<Option<f64>>)>,
    pub(super) y_max: f64,
}

pub(super) fn scaling(model: &ReportModel, group: &str) -> Option<Scaling> {
    let g = model.step_groups.iter().find(|g| g.id == group)?;
    let clients: Vec<u32> = model.clients.iter().copied().filter(|c| *c > 0).collect();
    let mut series = Vec::new();
    for (i, t) in model.shown_targets().into_iter().enumerate() {
        let values: Vec<Option<f64>> = clients
            .iter()
            .map(|&c| {
                model
                    .group_qps_of(t, group, c)
                    .and_then(|q| q.qps)
                    .filter(|v| v.is_finite() && *v >= 0.0)
            })
            .collect();
        if values.iter().all(Option::is_none) {
            continue;
        }
        let key = line_key(i, t);
        series.push((key, values));
    }
    if series.is_empty() {
        return None;
    }
    let top = series
        .iter()
        .flat_map(|s| s.1.iter().flatten())
        .fold(0.0f64, |a, b| a.max(*b));
    Some(Scaling {
        title: format!("QPS against clients, {}", g.title),
        clients,
        series,
        y_max: nice_ceil(top * 1.08),
    })
}

pub(super) fn draw_scaling<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &Scaling,
    k: f64,
) -> DrawResult<DB::ErrorType> {
    let plot_area = frame(root, &c.title, c.series.iter().map(|s| &s.0), 50.0, k)?;
    let (x_lo, x_hi) = log2_range(&c.clients);
    let mut chart = ChartBuilder::on(&plot_area)
        .margin_left(px(6.0, k))
        .margin_right(px(16.0, k))
        .margin_top(px(4.0, k))
        .x_label_area_size(px(40.0, k))
        .y_label_area_size(px(66.0, k))
        .build_cartesian_2d(x_lo..x_hi, 0f64..c.y_max)?;
    let whole = |v: &f64| crate::report::doc::thousands(*v);
    let y_desc = "group QPS (geometric mean of its steps)";
    y_mesh(&mut chart, 6, &whole, y_desc, 10.0, k)?;

    clients_axis(root, &mut chart, c, k)?;

    let width = px(2.0, k).max(1) as u32;
    for (key, values) in &c.series {
        // Consecutive known points form a line; an n/a count breaks it.
        let mut run: Vec<(f64, f64)> = Vec::new();
        let points = c.clients.iter().zip(values);
        for (n, v) in points
            .map(|(n, v)| (log2_x(*n), *v))
            .chain([(f64::NAN, None)])
        {
            match v {
                Some(v) => run.push((n, v)),
                None if run.len() > 1 => {
                    draw_path(&mut chart, std::mem::take(&mut run), key, width, k)?
                }
                None => run.clear(),
            }
        }
        let dots = c
            .clients
            .iter()
            .zip(values)
            .filter_map(|(n, v)| v.map(|v| (log2_x(*n), v)));
        chart.draw_series(dots.map(|xy| Circle::new(xy, px(3.5, k), key.colour.filled())))?;
    }
    Ok(())
}

/// The x axis of a QPS-against-clients chart: a grid line and a label at every measured
/// client count (the axis is log2, so the labels are the counts themselves, not plotters'
/// ticks), and the axis description under them.
fn clients_axis<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &mut LinearChart<'_, DB>,
    c: &Scaling,
    k: f64,
) -> DrawResult<DB::ErrorType> {
    let (x_lo, x_hi) = log2_range(&c.clients);
    let grid = RGBColor(220, 220, 220);
    let label = font(10.0, k).color(&BLACK);
    for &n in &c.clients {
        let x = log2_x(n);
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x, 0.0), (x, c.y_max)],
            grid.stroke_width(1),
        )))?;
        let (bx, by) = chart.backend_coord(&(x, 0.0));
        root.draw(&Text::new(
            n.to_string(),
            (bx, by + px(5.0, k)),
            label.clone().pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    let (mid, _) = chart.backend_coord(&((x_lo + x_hi) / 2.0, 0.0));
    let (_, bottom) = chart.backend_coord(&(x_lo, 0.0));
    root.draw(&Text::new(
        "clients (log2 scale)",
        (mid, bottom + px(20.0, k)),
        font(11.0, k)
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    Ok(())
}
