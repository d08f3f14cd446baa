//! The "by version" chart: one group of a version sweep against the release order, relative
//! QPS (solid) and relative server CPU/op (dashed) against the base, a reference line at 1 and
//! a vertical mark at the first release whose verdict is a change.
//!
//! Must not: compute numbers (the model's `by_version` holds them) or do I/O.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::tick;
use super::style::{DrawResult, Key, draw_path, font, frame, px, target_colour, y_mesh};
use crate::report::model::{FirstChange, ReportModel};

/// Vermillion: the mark of the first move (a regression or improvement alike).
const MARK: RGBColor = RGBColor(213, 94, 0);

/// Data of one chart.
pub(super) struct Versions {
    title: String,
    /// Release names as the x labels.
    releases: Vec<String>,
    /// QPS, then CPU/op: each its key and value per release.
    series: Vec<(Key, Vec<Option<f64>>)>,
    /// Where the first moves are (QPS, then CPU/op): release index and label.
    marks: Vec<(usize, String)>,
    lo: f64,
    hi: f64,
}

impl Versions {
    pub(super) fn of(
        model: &ReportModel,
        sweep: &str,
        group: &str,
        clients: u32,
    ) -> Option<Versions> {
        let v = (model.by_version.iter()).find(|v| v.sweep == sweep && v.clients == clients)?;
        let s = (v.series.iter()).find(|s| s.group == group && s.step.is_none())?;
        let short = |r: &str| {
            (r.strip_prefix(sweep).and_then(|r| r.strip_prefix('-')))
                .unwrap_or(r)
                .to_string()
        };
        let key = |name: &str, i: usize, dashed: bool| Key {
            name: name.into(),
            colour: target_colour(i),
            dashed,
            line: true,
        };
        let series = vec![
            (key("relative QPS", 0, false), s.qps.clone()),
            (key("relative server CPU/op", 1, true), s.server_cpu.clone()),
        ];
        let index = |f: &FirstChange| v.releases.iter().position(|r| *r == f.release);
        let mut marks = Vec::new();
        for (what, f) in [
            ("QPS", s.first_qps_change.as_ref()),
            ("CPU/op", s.first_server_cpu_change.as_ref()),
        ] {
            if let Some((i, f)) = f.and_then(|f| index(f).map(|i| (i, f))) {
                marks.push((i, format!("{what} {}", f.verdict)));
            }
        }
        let values: Vec<f64> = (series.iter())
            .flat_map(|s| s.1.iter().flatten().copied())
            .filter(|v| v.is_finite())
            .chain([1.0])
            .collect();
        let (min, max) = (
            values.iter().copied().fold(f64::INFINITY, f64::min),
            values.iter().copied().fold(0.0f64, f64::max),
        );
        let pad = ((max - min) * 0.12).max(0.05);
        Some(Versions {
            title: format!(
                "{group} by version ({sweep}, vs {}), clients = {clients}",
                v.base
            ),
            releases: v.releases.iter().map(|r| short(r)).collect(),
            series,
            marks,
            lo: ((min - pad) / 0.05).floor().max(0.0) * 0.05,
            hi: ((max + pad) / 0.05).ceil() * 0.05,
        })
    }

    /// About 46 px per release, within the sizes of the other charts.
    pub(super) fn size(&self) -> (u32, u32) {
        ((160 + self.releases.len() as u32 * 46).clamp(470, 960), 320)
    }
}

pub(super) fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    v: &Versions,
    k: f64,
) -> DrawResult<DB::ErrorType> {
    let plot_area = frame(root, &v.title, v.series.iter().map(|s| &s.0), 50.0, k)?;
    let n = v.releases.len() as f64;
    let mut chart = ChartBuilder::on(&plot_area)
        .margin_left(px(6.0, k))
        .margin_right(px(16.0, k))
        .margin_top(px(14.0, k))
        .x_label_area_size(px(40.0, k))
        .y_label_area_size(px(56.0, k))
        .build_cartesian_2d(-0.5f64..n - 0.5, v.lo..v.hi)?;
    y_mesh(
        &mut chart,
        6,
        &|y: &f64| tick(*y),
        "relative to the base",
        10.0,
        k,
    )?;
    let grid = RGBColor(220, 220, 220);
    let label = font(10.0, k).color(&BLACK);
    for (i, r) in v.releases.iter().enumerate() {
        let x = i as f64;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x, v.lo), (x, v.hi)],
            grid.stroke_width(1),
        )))?;
        let (bx, by) = chart.backend_coord(&(x, v.lo));
        root.draw(&Text::new(
            r.clone(),
            (bx, by + px(5.0, k)),
            label.clone().pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(-0.5, 1.0), (n - 0.5, 1.0)],
        BLACK.stroke_width(1),
    )))?;
    for (row, (i, text)) in v.marks.iter().enumerate() {
        let x = *i as f64;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x, v.lo), (x, v.hi)],
            MARK.stroke_width(px(2.0, k).max(1) as u32),
        )))?;
        let (bx, by) = chart.backend_coord(&(x, v.hi));
        root.draw(&Text::new(
            format!("first moved: {text}"),
            (bx + px(4.0, k), by + px(2.0 + 12.0 * row as f64, k)),
            font(10.0, k).color(&MARK),
        ))?;
    }
    let width = px(2.0, k).max(1) as u32;
    for (key, values) in &v.series {
        let mut run: Vec<(f64, f64)> = Vec::new();
        let points = values.iter().enumerate().map(|(i, v)| (i as f64, *v));
        for (x, y) in points.chain([(f64::NAN, None)]) {
            match y {
                Some(y) => run.push((x, y)),
                None if run.len() > 1 => {
                    draw_path(&mut chart, std::mem::take(&mut run), key, width, k)?
                }
                None => run.clear(),
            }
        }
        let dots = (values.iter().enumerate()).filter_map(|(i, y)| y.map(|y| (i as f64, y)));
        chart.draw_series(dots.map(|xy| Circle::new(xy, px(3.0, k), key.colour.filled())))?;
    }
    Ok(())
}
