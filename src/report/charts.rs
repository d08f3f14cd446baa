//! Charts of a report, drawn with `plotters`: relative QPS bars per group, per-second
//! throughput lines per step and, with a client sweep, group QPS against clients (log2 axis),
//! as SVG text (inlined by the HTML report) or PNG bytes (written by the CLI for `--png DIR`).
//!
//! Owns what each chart draws (which numbers, axes, the truncated-axis rule), the
//! colour-blind-safe palette and the embedded font (DejaVu Sans, `assets/fonts/`, registered
//! with plotters' `ab_glyph` support so PNGs render on a machine without fonts). It must not
//! compute report numbers (they come from the model) or do I/O: no files, no system fonts, no
//! clock; bytes out only.

use std::sync::OnceLock;

use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::doc::ChartRef;
use super::model::ReportModel;

mod version;

/// DejaVu Sans (Bitstream Vera licence, `assets/fonts/LICENSE-DejaVu.txt`).
static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Every chart's text is in this family: SVG viewers map it to any sans-serif font, and the
/// PNG rasterizer finds the embedded font registered under the same name.
const FAMILY: &str = "sans-serif";

/// The base's colour in throughput charts.
const BASE_COLOUR: RGBColor = RGBColor(0, 0, 0);

/// Okabe–Ito colours (Okabe & Ito, "Color Universal Design", 2008), distinguishable with
/// every common colour-vision deficiency; compared targets take them in this order (blue and
/// orange first: bluish green and vermillion also mean better/worse in the HTML tables).
const TARGET_COLOURS: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(204, 121, 167),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
];

/// Size of a chart in SVG pixels; PNGs are drawn at [`PNG_SCALE`] times this.
/// Largest bar chart; narrower when there are few bars (see [`Bars::width`]).
const BAR_SIZE: (u32, u32) = (960, 460);
const LINE_SIZE: (u32, u32) = (470, 270);
const SCALING_SIZE: (u32, u32) = (600, 340);
const PNG_SCALE: f64 = 1.5;

/// Text of the truncated-axis mark.
pub const TRUNCATED: &str = "axis truncated";
/// Label of the reference line at 1.0.
pub const REFERENCE: &str = "1.00 = base";

/// Colour of a compared target (its position in `model.compared`).
pub fn target_colour(position: usize) -> RGBColor {
    TARGET_COLOURS[position % TARGET_COLOURS.len()]
}

/// Registers the embedded font once per process (plotters keeps a global font table).
fn register_font() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            plotters::style::register_font(FAMILY, FontStyle::Normal, FONT)
                .map_err(|_| "the embedded DejaVu Sans font does not parse".to_string())
        })
        .clone()
}

/// A y range; linear unless `log`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct YAxis {
    lo: f64,
    hi: f64,
    log: bool,
}

impl YAxis {
    /// A linear axis that leaves out the part below its lower end.
    fn truncated(&self) -> bool {
        !self.log && self.lo > 0.0
    }

    /// Where bars start: 1.0 on a log axis (up is faster, down slower), else the bottom.
    fn bar_origin(&self) -> f64 {
        if self.log { 1.0 } else { self.lo }
    }
}

/// Values spanning more than this factor get a logarithmic axis (on a linear one a 200×
/// bar flattens every bar near 1).
const LOG_SPAN: f64 = 20.0;

/// The y axis of a relative-QPS chart; it always shows 1.0. Values spanning more than
/// [`LOG_SPAN`] get a log axis over whole decades. Otherwise it is linear from 0, unless every
/// bar is so close to the others that a zero-based axis would hide the differences (all
/// values above 0.6 of the largest): then it starts just below the smallest and says so.
fn relative_axis(values: &[f64]) -> YAxis {
    let positive = values.iter().copied().filter(|v| *v > 0.0);
    let lo_v = positive.clone().fold(1.0f64, f64::min);
    let hi_v = positive.fold(1.0f64, f64::max);
    if hi_v / lo_v > LOG_SPAN {
        return YAxis {
            // A hair under the decade, so float rounding cannot drop its tick.
            lo: 10f64.powf((lo_v * 0.95).log10().floor()) * 0.999,
            hi: 10f64.powf((hi_v * 1.05).log10().ceil()),
            log: true,
        };
    }
    let lo_v = values.iter().copied().fold(lo_v, f64::min);
    let hi = nice_ceil(hi_v * 1.08);
    let pad = ((hi_v - lo_v) * 0.15).max(0.03);
    let lo = ((lo_v - pad) / 0.05).floor() * 0.05;
    if lo_v <= 0.6 * hi_v || lo < 0.3 {
        YAxis {
            lo: 0.0,
            hi,
            log: false,
        }
    } else {
        YAxis { lo, hi, log: false }
    }
}

/// A y tick label: no more decimals than the value needs (0.1, 0.25, 1, 2.5, 300).
fn tick(v: f64) -> String {
    let s = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Rounds up to the coarsest round number (a multiple of 1, 0.5, 0.25, 0.2 or 0.1 times a
/// power of ten) that adds less than 25%, so axis ends are round numbers.
fn nice_ceil(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(v.log10().floor());
    for step in [1.0, 0.5, 0.25, 0.2, 0.1] {
        let unit = magnitude * step;
        let c = (v / unit).ceil() * unit;
        if c / v < 1.25 {
            return c;
        }
    }
    (v / magnitude).ceil() * magnitude
}

/// How a series looks in the chart and its legend.
struct Key {
    name: String,
    colour: RGBColor,
    /// Drawn dashed (lines only), so lines differ by more than colour.
    dashed: bool,
    /// A line (its legend swatch is a line sample), else a bar (a square).
    line: bool,
}

/// Data of one relative-QPS bar chart.
struct Bars {
    title: String,
    steps: Vec<String>,
    /// Per compared target: its key and its value per step (`None`: no bar).
    series: Vec<(Key, Vec<Option<f64>>)>,
    axis: YAxis,
}

/// Data of one throughput chart.
struct Lines {
    title: String,
    /// Per target with a series: its key (compared targets after the second dashed) and
    /// `(second, ops)` points.
    series: Vec<(Key, Vec<(u32, f64)>)>,
    seconds: u32,
    y_max: f64,
    /// The y axis' unit, e.g. `queries/s`.
    unit: &'static str,
}

impl Bars {
    /// Wide enough for the title and about 34 px per bar, at most [`BAR_SIZE`]'s width, so
    /// one or two bars do not turn into slabs.
    fn width(&self) -> u32 {
        let per_step = self.series.len() as u32 * 34 + 26;
        (180 + self.steps.len() as u32 * per_step).clamp(560, BAR_SIZE.0)
    }
}

fn bars(model: &ReportModel, group: &str, clients: u32) -> Option<Bars> {
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

/// The line of the `position`-th shown target: the base black, compared targets in their
/// colours, dashed from the third on so lines differ by more than colour.
fn line_key(position: usize, name: &str) -> Key {
    let (colour, dashed) = if position == 0 {
        (BASE_COLOUR, false)
    } else {
        (target_colour(position - 1), position > 2)
    };
    Key {
        name: name.to_string(),
        colour,
        dashed,
        line: true,
    }
}

fn lines(model: &ReportModel, step: &str, clients: u32) -> Option<Lines> {
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
fn background_lines(model: &ReportModel, step: &str, clients: u32) -> Option<Lines> {
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

/// Data of one QPS-against-clients chart.
struct Scaling {
    title: String,
    /// The report's client counts, ascending (all positive).
    clients: Vec<u32>,
    /// Per shown target with a group QPS: its key (coloured as in the throughput charts) and
    /// its group QPS per client count (`None`: n/a, a gap in the line).
    series: Vec<(Key, Vec<Option<f64>>)>,
    y_max: f64,
}

fn scaling(model: &ReportModel, group: &str) -> Option<Scaling> {
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

/// A file name stem for a chart: only letters, digits, `.`, `_` and `-`.
pub fn file_stem(chart: &ChartRef) -> String {
    let raw = match chart {
        ChartRef::RelativeQps { group, clients } => format!("relative-qps-c{clients}-{group}"),
        ChartRef::Throughput { step, clients } => format!("throughput-c{clients}-{step}"),
        ChartRef::ClientsQps { group } => format!("qps-by-clients-{group}"),
        ChartRef::BackgroundInserts { step, clients } => {
            format!("background-inserts-c{clients}-{step}")
        }
        ChartRef::ByVersion {
            sweep,
            group,
            clients,
        } => format!("by-version-c{clients}-{sweep}-{group}"),
        ChartRef::ProfileDiff {
            step,
            clients,
            target,
        } => format!("profile-diff-c{clients}-{step}-{target}"),
    };
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// What a chart needs drawn, or `None` when the model has nothing for it.
enum Drawing {
    Bars(Bars),
    Lines(Lines),
    Scaling(Scaling),
    Versions(version::Versions),
}

impl Drawing {
    fn of(model: &ReportModel, chart: &ChartRef) -> Option<Drawing> {
        match chart {
            ChartRef::RelativeQps { group, clients } => {
                bars(model, group, *clients).map(Drawing::Bars)
            }
            ChartRef::Throughput { step, clients } => {
                lines(model, step, *clients).map(Drawing::Lines)
            }
            ChartRef::ClientsQps { group } => scaling(model, group).map(Drawing::Scaling),
            ChartRef::BackgroundInserts { step, clients } => {
                background_lines(model, step, *clients).map(Drawing::Lines)
            }
            ChartRef::ByVersion {
                sweep,
                group,
                clients,
            } => version::Versions::of(model, sweep, group, *clients).map(Drawing::Versions),
            // Flame graphs are inferno's SVG (`report::profile`), not plotters drawings.
            ChartRef::ProfileDiff { .. } => None,
        }
    }

    fn size(&self) -> (u32, u32) {
        match self {
            Drawing::Bars(b) => (b.width(), BAR_SIZE.1),
            Drawing::Lines(_) => LINE_SIZE,
            Drawing::Scaling(_) => SCALING_SIZE,
            Drawing::Versions(v) => v.size(),
        }
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        k: f64,
    ) -> Result<(), String> {
        match self {
            Drawing::Bars(b) => draw_bars(root, b, k),
            Drawing::Lines(l) => draw_lines(root, l, k),
            Drawing::Scaling(c) => draw_scaling(root, c, k),
            Drawing::Versions(v) => version::draw(root, v, k),
        }
        .map_err(|e| format!("drawing the chart failed: {e}"))?;
        root.present()
            .map_err(|e| format!("drawing the chart failed: {e}"))
    }
}

/// The chart as an SVG document; `Ok(None)` when the model has no data for it.
pub fn svg(model: &ReportModel, chart: &ChartRef) -> Result<Option<String>, String> {
    let Some(d) = Drawing::of(model, chart) else {
        return Ok(None);
    };
    register_font()?;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, d.size()).into_drawing_area();
        d.draw(&root, 1.0)?;
    }
    Ok(Some(out))
}

/// The chart as PNG bytes; `Ok(None)` when the model has no data for it.
pub fn png(model: &ReportModel, chart: &ChartRef) -> Result<Option<Vec<u8>>, String> {
    let Some(d) = Drawing::of(model, chart) else {
        return Ok(None);
    };
    register_font()?;
    let (w, h) = d.size();
    let (w, h) = ((w as f64 * PNG_SCALE) as u32, (h as f64 * PNG_SCALE) as u32);
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        d.draw(&root, PNG_SCALE)?;
    }
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder
        .write_header()
        .map_err(|e| format!("encoding the PNG failed: {e}"))?;
    writer
        .write_image_data(&rgb)
        .map_err(|e| format!("encoding the PNG failed: {e}"))?;
    writer
        .finish()
        .map_err(|e| format!("encoding the PNG failed: {e}"))?;
    Ok(Some(bytes))
}

type DrawResult<E> = Result<(), DrawingAreaErrorKind<E>>;

fn px(v: f64, k: f64) -> i32 {
    (v * k).round() as i32
}

fn font(size: f64, k: f64) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size * k).into_font())
}

/// Title on the left, then one legend entry per key (a swatch and the name) in a strip at the
/// top of `area`: a square for bars, a line sample (dashed when the line is) for lines.
fn title_and_legend<'a, DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    keys: impl Iterator<Item = &'a Key>,
    k: f64,
) -> DrawResult<DB::ErrorType> {
    area.draw(&Text::new(
        title.to_string(),
        (px(8.0, k), px(6.0, k)),
        font(15.0, k).color(&BLACK),
    ))?;
    let mut x = px(8.0, k);
    let y = px(30.0, k);
    let size = px(12.0, k);
    let label = font(12.0, k).color(&BLACK);
    for key in keys {
        let fill = key.colour.filled();
        let swatch_w = if key.line { size * 2 } else { size };
        if !key.line {
            area.draw(&Rectangle::new([(x, y), (x + size, y + size)], fill))?;
        } else {
            let (top, bottom) = (y + size / 2 - px(1.5, k), y + size / 2 + px(1.5, k));
            let pieces = if key.dashed { 3 } else { 1 };
            let piece = swatch_w / (2 * pieces - 1);
            for i in 0..pieces {
                let x0 = x + 2 * i * piece;
                let x1 = if key.dashed { x0 + piece } else { x + swatch_w };
                area.draw(&Rectangle::new([(x0, top), (x1, bottom)], fill))?;
            }
        }
        area.draw(&Text::new(
            key.name.clone(),
            (x + swatch_w + px(5.0, k), y),
            label.clone(),
        ))?;
        let (w, _) = area
            .estimate_text_size(&key.name, &label)
            .unwrap_or((key.name.len() as u32 * 7, 12));
        x += swatch_w + px(5.0, k) + w as i32 + px(16.0, k);
    }
    Ok(())
}

/// Fills `root` white, draws the title and legend in a strip `strip` px tall at its top, and
/// returns the area below the strip, for the plot.
fn frame<'a, DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    keys: impl Iterator<Item = &'a Key>,
    strip: f64,
    k: f64,
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (top, plot_area) = root.split_vertically(px(strip, k));
    title_and_legend(&top, title, keys, k)?;
    Ok(plot_area)
}

/// The look every chart's mesh shares: tick labels at `size` pt, axis descriptions 1 pt
/// larger, and faint grid lines with at most one light line between bold ones.
fn mesh_look<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
    size: f64,
    k: f64,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB> {
    mesh.label_style(font(size, k))
        .axis_desc_style(font(size + 1.0, k))
        .max_light_lines(1)
        .light_line_style(RGBColor(242, 242, 242))
        .bold_line_style(RGBColor(220, 220, 220))
}

/// Draws the mesh of a chart whose x axis is labelled by hand (no x labels, no vertical grid
/// lines): `y_labels` y ticks written by `ticks`, the y axis described as `y_desc`, text at
/// `size` pt as [`mesh_look`] says.
fn y_mesh<DB: DrawingBackend, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
    y_labels: usize,
    ticks: &dyn Fn(&f64) -> String,
    y_desc: &str,
    size: f64,
    k: f64,
) -> DrawResult<DB::ErrorType>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut mesh = chart.configure_mesh();
    mesh.disable_x_mesh()
        .x_labels(0)
        .y_labels(y_labels)
        .y_label_formatter(ticks)
        .y_desc(y_desc);
    mesh_look(&mut mesh, size, k).draw()
}

fn draw_bars<DB: DrawingBackend>(
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

fn draw_lines<DB: DrawingBackend>(
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
    let whole = |v: &f64| super::doc::thousands(*v);
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

type LinearChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A line through `xy` in the key's colour, dashed when the key is.
fn draw_path<DB: DrawingBackend>(
    chart: &mut LinearChart<'_, DB>,
    xy: Vec<(f64, f64)>,
    key: &Key,
    width: u32,
    k: f64,
) -> DrawResult<DB::ErrorType> {
    let style = key.colour.stroke_width(width);
    if key.dashed {
        chart.draw_series(DashedLineSeries::new(xy, px(6.0, k), px(4.0, k), style))?;
    } else {
        chart.draw_series(LineSeries::new(xy, style))?;
    }
    Ok(())
}

/// Where a client count sits on the x axis: log2, so doubling the clients is one step.
fn log2_x(clients: u32) -> f64 {
    f64::from(clients).log2()
}

/// The x range around the client counts' log2 positions, with a margin each side.
fn log2_range(clients: &[u32]) -> (f64, f64) {
    let lo = clients.first().map_or(0.0, |c| log2_x(*c));
    let hi = clients.last().map_or(1.0, |c| log2_x(*c));
    let pad = ((hi - lo) * 0.06).max(0.25);
    (lo - pad, hi + pad)
}

fn draw_scaling<DB: DrawingBackend>(
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
    let whole = |v: &f64| super::doc::thousands(*v);
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

#[cfg(test)]
mod tests {
    use super::super::fixture::run_two_clients;
    use super::*;

    /// The two-clients fixture with every relative QPS at 1 client replaced by `values`, in
    /// turn.
    fn model_with(values: &[f64]) -> ReportModel {
        let mut m = super::super::build(&run_two_clients(), None).unwrap();
        let mut it = values.iter().cycle();
        for r in m.relative.iter_mut().filter(|r| r.clients == 1) {
            r.qps = Some(*it.next().unwrap());
        }
        m
    }

    fn point_chart() -> ChartRef {
        ChartRef::RelativeQps {
            group: "point".into(),
            clients: 1,
        }
    }

    #[test]
    fn bar_chart_has_reference_line_at_one() {
        let m = model_with(&[0.2, 1.9]);
        let svg = svg(&m, &point_chart())
            .unwrap()
            .expect("point group has bars");
        assert!(svg.contains(REFERENCE), "{svg}");
        // The reference line is the only 2-pixel black line, and horizontal.
        let line = svg
            .lines()
            .find(|l| {
                l.contains("<polyline")
                    && l.contains("stroke=\"#000000\"")
                    && l.contains("stroke-width=\"2\"")
            })
            .expect("reference line");
        let points = line
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let ys: Vec<&str> = points
            .split_whitespace()
            .map(|p| p.split(',').nth(1).unwrap())
            .collect();
        assert_eq!(ys.len(), 2, "{line}");
        assert_eq!(ys[0], ys[1], "horizontal: {line}");
        // 1.0 on a 0-based axis: the line's y is between the top and bottom of the plot.
        let y: f64 = ys[0].parse().unwrap();
        assert!(y > 60.0 && y < BAR_SIZE.1 as f64 - 60.0, "{y}");
        assert!(
            !svg.contains(TRUNCATED),
            "0.2 is on the chart: the axis starts at 0"
        );
    }

    #[test]
    fn close_bars_get_a_truncated_axis_that_says_so() {
        let m = model_with(&[0.93, 1.04, 0.98]);
        let svg = svg(&m, &point_chart()).unwrap().unwrap();
        assert!(svg.contains(TRUNCATED), "{svg}");
        assert!(svg.contains("starts at 0.90, not 0"), "{svg}");
    }

    #[test]
    fn bars_one_per_step_per_compared_target() {
        let m = model_with(&[1.1]);
        let b = bars(&m, "point", 1).unwrap();
        assert_eq!(b.series.len(), m.compared.len());
        assert!(b.series.iter().all(|s| s.0.name != m.base), "base excluded");
        assert!(b.series.iter().all(|s| s.1.len() == b.steps.len()));
        assert_ne!(
            b.series[0].0.colour, b.series[1].0.colour,
            "targets differ in colour"
        );
    }

    #[test]
    fn throughput_chart_draws_each_target_with_a_series() {
        let m = model_with(&[1.0]);
        let l = lines(&m, "point-query", 1).expect("the fixture has pg16's series");
        assert_eq!(l.series.len(), 1);
        assert_eq!(l.series[0].1.len(), 5);
        assert_eq!(l.seconds, 5);
        assert!(lines(&m, "scan", 1).is_none());
        let svg = svg(
            &m,
            &ChartRef::Throughput {
                step: "point-query".into(),
                clients: 1,
            },
        )
        .unwrap()
        .unwrap();
        assert!(svg.contains("queries/s"));
    }

    #[test]
    fn pngs_decode_and_carry_text_drawn_with_the_embedded_font() {
        let m = model_with(&[0.5, 1.5]);
        let bytes = png(&m, &point_chart()).unwrap().unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        let mut reader = png::Decoder::new(std::io::Cursor::new(&bytes))
            .read_info()
            .unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(
            (info.width, info.height),
            (
                (bars(&m, "point", 1).unwrap().width() as f64 * PNG_SCALE) as u32,
                (BAR_SIZE.1 as f64 * PNG_SCALE) as u32
            )
        );
        // The title strip (top 30 px, left 300 px) holds dark glyph pixels: text was
        // rasterized from the embedded font, not skipped.
        let row = info.width as usize * 3;
        let dark = (0..30)
            .flat_map(|y| (0..300).map(move |x| y * row + x * 3))
            .filter(|&i| buf[i] < 100 && buf[i + 1] < 100 && buf[i + 2] < 100)
            .count();
        assert!(dark > 50, "only {dark} dark pixels in the title strip");
    }

    #[test]
    fn zero_based_axis_unless_bars_are_close() {
        let a = relative_axis(&[0.2, 1.4]);
        assert_eq!(a.lo, 0.0);
        assert!(!a.truncated());
        assert!(a.hi >= 1.4 * 1.08 - 1e-9);
        let a = relative_axis(&[0.92, 1.07, 1.01]);
        assert!(a.truncated(), "{a:?}");
        assert!(a.lo < 0.92 && a.lo > 0.6, "{a:?}");
        assert!(a.hi > 1.07, "{a:?}");
        // 1.0 is always on the axis, even when every bar is above it.
        let a = relative_axis(&[1.6, 1.7]);
        assert!(a.lo <= 1.0 && a.hi >= 1.7, "{a:?}");
    }

    #[test]
    fn wide_spans_get_a_log_axis_over_whole_decades() {
        let a = relative_axis(&[0.14, 2.5, 209.0]);
        assert!(a.log && !a.truncated(), "{a:?}");
        assert!((a.lo - 0.1).abs() < 0.001 && a.lo <= 0.1, "{a:?}");
        assert_eq!(a.hi, 1000.0);
        assert_eq!(a.bar_origin(), 1.0);
        let a = relative_axis(&[0.5, 9.0]);
        assert!(!a.log, "an 18× span stays linear: {a:?}");
        assert_eq!(a.bar_origin(), 0.0);
    }

    #[test]
    fn log_chart_says_so() {
        let m = model_with(&[0.05, 30.0]);
        let svg = svg(&m, &point_chart()).unwrap().unwrap();
        assert!(svg.contains("logarithmic y axis"), "{svg}");
        assert!(svg.contains(REFERENCE));
        assert!(!svg.contains(TRUNCATED));
    }

    #[test]
    fn clients_chart_has_a_line_per_target_on_a_log2_axis() {
        use super::super::fixture::{SWEEP_CLIENTS, run_sweep};
        let m = super::super::build(&run_sweep(), None).unwrap();
        let c = scaling(&m, "point").expect("the sweep has group QPS");
        assert_eq!(c.clients, SWEEP_CLIENTS);
        let names: Vec<&str> = c.series.iter().map(|s| s.0.name.as_str()).collect();
        assert_eq!(names, ["mysql56", "mysql80", "mariadb114"]);
        assert_eq!(c.series[0].0.colour, BASE_COLOUR);
        assert_eq!(c.series[1].0.colour, target_colour(0));
        assert_eq!(c.series[2].0.colour, target_colour(1));
        // mariadb114's writes have no group QPS at 4 clients: a gap, not a zero.
        let w = scaling(&m, "writes").unwrap();
        assert_eq!(w.series[2].1[2], None);
        assert!(w.series[2].1[3].is_some());

        let chart = ChartRef::ClientsQps {
            group: "point".into(),
        };
        let svg = svg(&m, &chart).unwrap().unwrap();
        assert!(svg.contains("clients (log2 scale)"), "{svg}");
        // Equal spacing per doubling: the labels 1, 2, 4, 8 sit at equal x steps.
        // plotters writes `<text x=".." ...>` and the text on the next line.
        let lines: Vec<&str> = svg.lines().collect();
        let label_x = |n: &str| -> f64 {
            let i = lines
                .windows(2)
                .position(|w| {
                    w[0].starts_with("<text") && w[0].contains("middle") && w[1].trim() == n
                })
                .unwrap_or_else(|| panic!("no label {n}: {svg}"));
            let x = lines[i]
                .split("x=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            x.parse().unwrap()
        };
        let xs: Vec<f64> = ["1", "2", "4", "8"].iter().map(|n| label_x(n)).collect();
        let steps: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(steps[0] > 50.0, "{xs:?}");
        assert!(
            steps.iter().all(|s| (s - steps[0]).abs() <= 1.0),
            "log2 spacing: {xs:?}"
        );
        // One line per target: the base's black polyline and two coloured ones.
        let lines = svg.lines().filter(|l| l.contains("<polyline")).count();
        assert!(lines >= 3, "{svg}");
        let hex = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
        for colour in [BASE_COLOUR, target_colour(0), target_colour(1)] {
            assert!(
                svg.lines()
                    .any(|l| l.contains("<polyline") && l.contains(&hex(colour))),
                "no line in {}",
                hex(colour)
            );
        }
        let bytes = png(&m, &chart).unwrap().unwrap();
        let reader = png::Decoder::new(std::io::Cursor::new(&bytes))
            .read_info()
            .unwrap();
        assert_eq!(
            (reader.info().width, reader.info().height),
            (
                (SCALING_SIZE.0 as f64 * PNG_SCALE) as u32,
                (SCALING_SIZE.1 as f64 * PNG_SCALE) as u32
            )
        );
        // No chart without a sweep.
        let one = super::super::build(&super::super::fixture::run_three_repeats(), None).unwrap();
        assert!(scaling(&one, "point").is_none());
        assert_eq!(file_stem(&chart), "qps-by-clients-point");
    }

    #[test]
    fn tick_labels_drop_needless_zeros() {
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(1.0), "1");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(300.0), "300");
        assert_eq!(tick(0.1), "0.1");
    }

    #[test]
    fn nice_ends() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b;
        assert!(close(nice_ceil(1.17), 1.25), "{}", nice_ceil(1.17));
        assert!(close(nice_ceil(3.1), 3.5), "{}", nice_ceil(3.1));
        assert!(close(nice_ceil(9.3), 10.0), "{}", nice_ceil(9.3));
        assert!(
            close(nice_ceil(48_000.0), 50_000.0),
            "{}",
            nice_ceil(48_000.0)
        );
        assert_eq!(nice_ceil(0.0), 1.0);
    }

    #[test]
    fn file_stems_are_safe() {
        assert_eq!(
            file_stem(&ChartRef::Throughput {
                step: "random-points_range=10".into(),
                clients: 4
            }),
            "throughput-c4-random-points_range_10"
        );
        assert_eq!(
            file_stem(&ChartRef::RelativeQps {
                group: "../x y".into(),
                clients: 1
            }),
            "relative-qps-c1-.._x_y"
        );
    }
}
