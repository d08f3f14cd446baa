//! Charts of a report, drawn with `plotters`: relative QPS bars per group, per-second
//! throughput lines per step and, with a client sweep, group QPS against clients (log2 axis),
//! as SVG text (inlined by the HTML report) or PNG bytes (written by the CLI for `--png DIR`).
//!
//! Owns which drawing a chart reference asks for, its file name, and turning it into SVG text
//! or PNG bytes. Each chart kind is a file of its own (`bars`, `lines`, `scaling`, `version`:
//! which numbers, axes, the truncated-axis rule), sharing `style` (the colour-blind-safe
//! palette, the embedded font, sizes, frame and legend) and `axis` (ranges and ticks); none of
//! them imports this file. It must not compute report numbers (they come from the model) or do
//! I/O: no files, no system fonts, no clock; bytes out only.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::super::doc::ChartRef;
use super::super::model::ReportModel;

mod axis;
mod bars;
mod lines;
mod scaling;
mod style;
mod version;

use bars::{Bars, bars, draw_bars};
use lines::{Lines, background_lines, draw_lines, lines};
use scaling::{Scaling, draw_scaling, scaling};
use style::{BAR_SIZE, LINE_SIZE, PNG_SCALE, SCALING_SIZE, register_font};

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
        ChartRef::CallTreeDiff {
            step,
            clients,
            target,
            base_widths,
        } => format!(
            "instructions-diff-c{clients}-{step}-{target}{}",
            if *base_widths { "-base-widths" } else { "" }
        ),
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
            ChartRef::ProfileDiff { .. } | ChartRef::CallTreeDiff { .. } => None,
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

#[cfg(test)]
mod tests {
    use super::super::super::fixture::run_two_clients;
    use super::bars::{REFERENCE, TRUNCATED};
    use super::style::{BASE_COLOUR, target_colour};
    use super::*;

    /// The two-clients fixture with every relative QPS at 1 client replaced by `values`, in
    /// turn.
    fn model_with(values: &[f64]) -> ReportModel {
        let mut m = super::super::super::build(&run_two_clients(), None).unwrap();
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
    fn log_chart_says_so() {
        let m = model_with(&[0.05, 30.0]);
        let svg = svg(&m, &point_chart()).unwrap().unwrap();
        assert!(svg.contains("logarithmic y axis"), "{svg}");
        assert!(svg.contains(REFERENCE));
        assert!(!svg.contains(TRUNCATED));
    }

    #[test]
    fn clients_chart_has_a_line_per_target_on_a_log2_axis() {
        use super::super::super::fixture::{SWEEP_CLIENTS, run_sweep};
        let m = super::super::super::build(&run_sweep(), None).unwrap();
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
        let one =
            super::super::super::build(&super::super::super::fixture::run_three_repeats(), None)
                .unwrap();
        assert!(scaling(&one, "point").is_none());
        assert_eq!(file_stem(&chart), "qps-by-clients-point");
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
