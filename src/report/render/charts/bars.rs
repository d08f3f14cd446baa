//! The relative-QPS bar chart of a report group at one client count: a bar per compared target
//! and step, the reference line at 1.0, step labels, and a truncated or logarithmic y axis said
//! on the chart (with a break mark on a truncated one).
//!
//! Must not: compute report numbers (the model's relative rows hold them) or do I/O.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::{LOG_SPAN, YAxis, relative_axis, tick};
use super::style::{BAR_SIZE, DrawResult, Key, font, frame, px, target_colour, y_mesh};
use crate::report::model::ReportModel;

/// Text of the truncated-axis mark.
pub const TRUNCATED: &str = "axis truncated";
/// Label of the reference line at 1.0.
pub const REFERENCE: &str = "1.00 = base";

/// Data of one relative-QPS bar chart.
pub(super) struct Bars {
    pub(super) title: String,
    pub(super) steps: Vec<String>,
    /// Per compared target: its key and its value per step (`None`: no bar).
    pub(super) series: Vec<(Key, Vec<Option<f64>>)>,
    pub(super) axis: YAxis,
}

impl Bars {
    /// Wide enough for the title and about 34 px per bar, at most [`BAR_SIZE`]'s width, so
    /// one or two bars do not turn into slabs.
    pub(super) fn width(&self) -> u32 {
        let per_step = self.series.len() as u32 * 34 + 26;
        (180 + self.steps.len() as u32 * per_step).clamp(560, BAR_SIZE.0)
    }
}

pub(super) fn bars(model: &ReportModel, group: &str, clients: u32) -> Option<Bars> {
    let g = model.step_groups.iter().find(|g| g.id == group)?;
    let steps: Vec<String> = g
        .steps
        .iter()
        .filter(|s| {
            model
                .compared
                .iter()
                .any(|t| model.relative_of(t, s, clients).is_some())
        })
        .cloned()
        .collect();
    if steps.is_empty() {
        return None;
    }
    let series: Vec<(Key, Vec<Option<f64>>)> = model
        .compared
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let values = steps
                .iter()
                .map(|s| {
                    model
                        .relative_of(t, s, clients)
                        .and_then(|r| r.qps)
                        .filter(|v| v.is_finite() && *v >= 0.0)
                })
                .collect();
            let key = Key {
                name: t.clone(),
                colour: target_colour(i),
                dashed: false,
                line: false,
            };
            (key, values)
        })
        .collect();
    let values: Vec<f64> = series
        .iter()
        .flat_map(|s| s.1.iter().flatten())
        .copied()
        .collect();
    Some(Bars {
        title: format!(
            "Relative QPS, {} (vs {}), clients = {clients}",
            g.title, model.base
        ),
        steps,
        series,
        axis: relative_axis(&values),
    })
}

pub(super) fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    b: &Bars,
    k: f64,
) -> DrawResult<DB::ErrorType> {
    let reference = Key {
        name: REFERENCE.into(),
        colour: BLACK,
        dashed: false,
        line: true,
    };
    let keys = b.series.iter().map(|s| &s.0);
    let plot_area = frame(root, &b.title, keys.chain([&reference]), 68.0, k)?;
    let YAxis { lo, hi, log } = b.axis;
    let note = if log {
        Some(format!(
            "logarithmic y axis (values span more than {LOG_SPAN:.0}×): bars grow from 1.00, up is faster, down slower"
        ))
    } else if b.axis.truncated() {
        Some(format!(
            "y {TRUNCATED}: it starts at {lo:.2}, not 0 (break mark on the axis)"
        ))
    } else {
        None
    };
    if let Some(note) = note {
        // Said above the plot, under the legend, where no bar can cover it.
        root.draw(&Text::new(
            note,
            (px(8.0, k), px(50.0, k)),
            font(11.0, k).color(&RGBColor(90, 90, 90)),
        ))?;
    }

    let longest = b
        .steps
        .iter()
        .filter_map(|s| plot_area.estimate_text_size(s, &font(11.0, k)).ok())
        .map(|(w, _)| w as i32)
        .max()
        .unwrap_or(60);
    let n = b.steps.len() as f64;
    let mut builder = ChartBuilder::on(&plot_area);
    builder
        .margin_left(px(8.0, k))
        .margin_right(px(16.0, k))
        .margin_top(px(6.0, k))
        .x_label_area_size(longest + px(14.0, k))
        .y_label_area_size(px(64.0, k));
    if log {
        let chart = builder.build_cartesian_2d(0f64..n, (lo..hi).log_scale())?;
        bars_plot(root, chart, b, k)
    } else {
        let chart = builder.build_cartesian_2d(0f64..n, lo..hi)?;
        bars_plot(root, chart, b, k)
    }
}

/// The plot of a bar chart on either kind of y axis: mesh, bars, the reference line, step
/// labels and, on a truncated axis, the break mark.
fn bars_plot<DB: DrawingBackend, Y>(
    root: &DrawingArea<DB, Shift>,
    mut chart: ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
    b: &Bars,
    k: f64,
) -> DrawResult<DB::ErrorType>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let YAxis { lo, hi, .. } = b.axis;
    let n = b.steps.len() as f64;
    let label_style = font(11.0, k).color(&BLACK);
    let ticks = |v: &f64| tick(*v);
    let y_desc = "relative QPS (target / base; > 1 is faster)";
    y_mesh(&mut chart, 8, &ticks, y_desc, 11.0, k)?;

    let targets = b.series.len().max(1) as f64;
    let width = 0.8 / targets;
    let origin = b.axis.bar_origin();
    for (j, (key, values)) in b.series.iter().enumerate() {
        let colour = key.colour;
        chart.draw_series(values.iter().enumerate().filter_map(|(i, v)| {
            let v = (*v)?.clamp(lo, hi);
            let x0 = i as f64 + 0.1 + j as f64 * width;
            Some(Rectangle::new(
                [(x0, origin), (x0 + width * 0.92, v)],
                colour.filled(),
            ))
        }))?;
    }

    // The reference line at 1.0 (named in the legend, so no label covers a bar).
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(0.0, 1.0), (n, 1.0)],
        BLACK.stroke_width(px(2.0, k).max(1) as u32),
    )))?;

    // Step labels under the bars, reading upwards, ending at the axis.
    for (i, step) in b.steps.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, lo));
        root.draw(&Text::new(
            step.clone(),
            (x, y + px(6.0, k)),
            label_style
                .clone()
                .transform(FontTransform::Rotate270)
                .pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }

    if b.axis.truncated() {
        // A break mark across the y axis just above its lower end.
        let (ax, ay) = chart.backend_coord(&(0.0, lo));
        let gap = px(4.0, k);
        let half = px(7.0, k);
        for dy in [-px(10.0, k), -px(10.0, k) - gap] {
            root.draw(&PathElement::new(
                vec![
                    (ax - half, ay + dy + half / 2),
                    (ax + half, ay + dy - half / 2),
                ],
                BLACK.stroke_width(px(1.0, k).max(1) as u32),
            ))?;
        }
    }
    Ok(())
}
