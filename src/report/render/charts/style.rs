//! The look every chart shares: the colour-blind-safe palette and each target's colour and line,
//! the embedded font (DejaVu Sans, `assets/fonts/`, registered with plotters' `ab_glyph` support
//! so PNGs render on a machine without fonts), the charts' sizes, and the frame (title and
//! legend), mesh and line drawing every chart kind draws with.
//!
//! Must not: decide what a chart shows (each kind's file does), read report numbers, or do I/O:
//! no files, no system fonts; the font is compiled in.

use std::sync::OnceLock;

use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// DejaVu Sans (Bitstream Vera licence, `assets/fonts/LICENSE-DejaVu.txt`).
static FONT: &[u8] = include_bytes!("../../../../assets/fonts/DejaVuSans.ttf");

/// Every chart's text is in this family: SVG viewers map it to any sans-serif font, and the
/// PNG rasterizer finds the embedded font registered under the same name.
const FAMILY: &str = "sans-serif";

/// The base's colour in throughput charts.
pub(super) const BASE_COLOUR: RGBColor = RGBColor(0, 0, 0);

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
///
/// [`Bars::width`]: super::bars::Bars::width
pub(super) const BAR_SIZE: (u32, u32) = (960, 460);
pub(super) const LINE_SIZE: (u32, u32) = (470, 270);
pub(super) const SCALING_SIZE: (u32, u32) = (600, 340);
pub(super) const PNG_SCALE: f64 = 1.5;

/// Colour of a compared target (its position in `model.compared`).
pub fn target_colour(position: usize) -> RGBColor {
    TARGET_COLOURS[position % TARGET_COLOURS.len()]
}

/// Registers the embedded font once per process (plotters keeps a global font table).
pub(super) fn register_font() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            plotters::style::register_font(FAMILY, FontStyle::Normal, FONT)
                .map_err(|_| "the embedded DejaVu Sans font does not parse".to_string())
        })
        .clone()
}

/// How a series looks in the chart and its legend.
pub(super) struct Key {
    pub(super) name: String,
    pub(super) colour: RGBColor,
    /// Drawn dashed (lines only), so lines differ by more than colour.
    pub(super) dashed: bool,
    /// A line (its legend swatch is a line sample), else a bar (a square).
    pub(super) line: bool,
}

/// The line of the `position`-th shown target: the base black, compared targets in their
/// colours, dashed from the third on so lines differ by more than colour.
pub(super) fn line_key(position: usize, name: &str) -> Key {
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

pub(super) type DrawResult<E> = Result<(), DrawingAreaErrorKind<E>>;

pub(super) fn px(v: f64, k: f64) -> i32 {
    (v * k).round() as i32
}

pub(super) fn font(size: f64, k: f64) -> TextStyle<'static> {
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
pub(super) fn frame<'a, DB: DrawingBackend>(
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
pub(super) fn mesh_look<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(
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
pub(super) fn y_mesh<DB: DrawingBackend, Y>(
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

pub(super) type LinearChart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A line through `xy` in the key's colour, dashed when the key is.
pub(super) fn draw_path<DB: DrawingBackend>(
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
