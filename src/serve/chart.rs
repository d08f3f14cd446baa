//! The history charts of `dbdelta serve` as inline SVG: one series' value per run in run
//! order, its interval as a whisker, a line through the points, and each change point as a
//! dashed vertical line between the two runs it falls between, linking to both runs' reports;
//! and [`overlay`]: several series (the targets of a step, or of a group) on one axis, one
//! colour each, with a legend.
//!
//! Owns the chart's geometry and its axis labels. Must not: read the store, find change points
//! (`crate::history` does) or load anything (no script, no font, no stylesheet from outside).

use std::fmt::Write;

use super::url::enc;
use crate::report::escape;

/// One run's point.
#[derive(Debug, Clone, PartialEq)]
pub struct Dot {
    pub run_id: String,
    /// What the axis says under it (the run's name, else the day it started).
    pub label: String,
    pub value: f64,
    /// The value's interval (`None`: one repeat).
    pub interval: Option<(f64, f64)>,
}

/// A series to draw; `changes` are indexes of the first dot after each change.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub unit: String,
    pub dots: Vec<Dot>,
    pub changes: Vec<usize>,
}

const W: f64 = 960.0;
const H: f64 = 300.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 70.0;

/// The chart as an `<svg>` element (an empty series: a note instead).
pub fn svg(c: &Chart) -> String {
    if c.dots.is_empty() {
        return "<p class=\"muted\">No run has a value for this series.</p>".into();
    }
    let (lo, hi) = range(&c.dots);
    let n = c.dots.len();
    let x = |i: usize| LEFT + (W - LEFT - RIGHT) * (i as f64 + 0.5) / n as f64;
    let y = |v: f64| TOP + (H - TOP - BOTTOM) * (hi - v) / (hi - lo);
    let mut s = open_svg(&c.title);
    axes(&mut s, lo, hi, &c.unit, &y);
    for &i in c.changes.iter().filter(|&&i| i > 0 && i < n) {
        change_mark(&mut s, c, i, (x(i - 1) + x(i)) / 2.0);
    }
    let line: Vec<String> = (c.dots.iter().enumerate())
        .map(|(i, d)| format!("{:.1},{:.1}", x(i), y(d.value)))
        .collect();
    let _ = writeln!(
        s,
        "<polyline fill=\"none\" stroke=\"#0b57d0\" stroke-width=\"1.5\" points=\"{}\"/>",
        line.join(" ")
    );
    for (i, d) in c.dots.iter().enumerate() {
        dot(&mut s, d, x(i), lo, &y);
    }
    let every = n.div_ceil(16);
    for (i, d) in c.dots.iter().enumerate().filter(|(i, _)| i % every == 0) {
        let _ = writeln!(
            s,
            "<text x=\"{0:.1}\" y=\"{1:.1}\" text-anchor=\"end\" transform=\"rotate(-35 {0:.1} {1:.1})\">{2}</text>",
            x(i),
            H - BOTTOM + 14.0,
            escape(&d.label)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// A chart's `<svg>` start tag, titled for screen readers.
fn open_svg(title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"history\" viewBox=\"0 0 {W} {H}\" \
         width=\"{W}\" height=\"{H}\" role=\"img\" aria-label=\"{}\" font-family=\"sans-serif\" font-size=\"11\">\n",
        escape(title)
    )
}

/// The value axis: from the lowest to the highest value or interval end, widened to whole
/// steps of [`step`], from 0 when the values are all positive and the lowest is near 0 (a
/// value that cannot be negative is never drawn below 0).
fn range(dots: &[Dot]) -> (f64, f64) {
    let ends = dots.iter().flat_map(|d| {
        let (a, b) = d.interval.unwrap_or((d.value, d.value));
        [d.value, a, b]
    });
    let (mut lo, hi) = ends
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(v), h.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let positive = dots.iter().all(|d| d.value >= 0.0);
    if positive && (lo < 0.0 || lo < hi * 0.3) {
        lo = 0.0;
    }
    let step = step(lo, hi);
    let (lo, hi) = ((lo / step).floor() * step, (hi / step).ceil() * step);
    if hi > lo {
        (lo, hi)
    } else {
        (lo - step, hi + step)
    }
}

/// A round grid step (1, 2 or 5 times a power of ten) giving about four steps over lo..hi.
fn step(lo: f64, hi: f64) -> f64 {
    let raw = ((hi - lo) / 4.0).max(hi.abs() * 1e-3).max(1e-9);
    let power = 10f64.powf(raw.log10().floor());
    let m = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|m| m * power >= raw)
        .unwrap_or(10.0);
    m * power
}

/// Grid lines at every step, labelled, and the unit.
fn axes(s: &mut String, lo: f64, hi: f64, unit: &str, y: &impl Fn(f64) -> f64) {
    let step = step(lo, hi);
    let lines = ((hi - lo) / step).round() as usize;
    for k in 0..=lines {
        let v = lo + step * k as f64;
        let (at, right, label_x) = (y(v), W - RIGHT, LEFT - 6.0);
        let _ = writeln!(
            s,
            "<line x1=\"{LEFT}\" x2=\"{right}\" y1=\"{at:.1}\" y2=\"{at:.1}\" stroke=\"#e3e3e3\"/>\
             <text x=\"{label_x}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            at + 4.0,
            number(v)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"14\" y=\"{0:.1}\" transform=\"rotate(-90 14 {0:.1})\" text-anchor=\"middle\">{1}</text>",
        (H - BOTTOM + TOP) / 2.0,
        escape(unit)
    );
}

/// A change point between dots `i - 1` and `i`: a dashed red line, linking to the report of
/// the run after the change; its title names both runs.
fn change_mark(s: &mut String, c: &Chart, i: usize, at: f64) {
    let (before, after) = (&c.dots[i - 1], &c.dots[i]);
    let _ = writeln!(
        s,
        "<a class=\"change\" href=\"/run/{}\"><title>change point: between {} and {} (report of {})</title>\
         <line x1=\"{at:.1}\" x2=\"{at:.1}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"#c5221f\" stroke-width=\"2\" stroke-dasharray=\"6 4\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" fill=\"#c5221f\" font-weight=\"bold\">change</text></a>",
        enc(&after.run_id),
        escape(&before.label),
        escape(&after.label),
        escape(&after.label),
        H - BOTTOM,
        at + 4.0,
        TOP + 12.0,
    );
}

/// A dot with its interval whisker (cut at the axis' bottom `lo`), linking to its run's report.
fn dot(s: &mut String, d: &Dot, x: f64, lo: f64, y: &impl Fn(f64) -> f64) {
    let _ = write!(
        s,
        "<a href=\"/run/{}\"><title>{}: {}</title>",
        enc(&d.run_id),
        escape(&d.label),
        number(d.value)
    );
    if let Some((a, b)) = d.interval.map(|(a, b)| (a.max(lo), b)) {
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#6b8fd6\" stroke-width=\"1.5\"/>",
            y(a),
            y(b)
        );
    }
    let _ = writeln!(
        s,
        "<circle cx=\"{x:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"#0b57d0\"/></a>",
        y(d.value)
    );
}

/// One line of an [`Overlay`]: a name and its value at each of the chart's runs (`None`: the
/// run has none), with intervals.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub name: String,
    pub values: Vec<Option<f64>>,
    pub intervals: Vec<Option<(f64, f64)>>,
}

/// Several series over the same runs (`runs`: id and axis label, in run order).
#[derive(Debug, Clone, PartialEq)]
pub struct Overlay {
    pub title: String,
    pub unit: String,
    pub runs: Vec<(String, String)>,
    pub lines: Vec<Line>,
}

/// Line colours, told apart also in grey (then the legend's order tells them).
const COLOURS: [&str; 6] = [
    "#0b57d0", "#d93025", "#188038", "#e37400", "#8430ce", "#5f6368",
];

/// The overlay as an `<svg>` element with its legend (no value at all: a note instead).
pub fn overlay(c: &Overlay) -> String {
    let dots: Vec<Dot> = (c.lines.iter())
        .flat_map(|l| l.values.iter().zip(&l.intervals))
        .filter_map(|(v, i)| v.map(|value| (value, *i)))
        .map(|(value, interval)| Dot {
            run_id: String::new(),
            label: String::new(),
            value,
            interval,
        })
        .collect();
    if dots.is_empty() {
        return "<p class=\"muted\">No run has a value for these series.</p>".into();
    }
    let (lo, hi) = range(&dots);
    let n = c.runs.len().max(1);
    let x = |i: usize| LEFT + (W - LEFT - RIGHT) * (i as f64 + 0.5) / n as f64;
    // The legend's rows above the plot.
    let top = TOP + 14.0 * c.lines.len().div_ceil(5) as f64 + 6.0;
    let y = |v: f64| top + (H - top - BOTTOM) * (hi - v) / (hi - lo);
    let mut s = open_svg(&c.title);
    axes(&mut s, lo, hi, &c.unit, &y);
    for (k, l) in c.lines.iter().enumerate() {
        overlay_line(&mut s, c, l, COLOURS[k % COLOURS.len()], (&x, &y, lo));
        let _ = writeln!(
            s,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            LEFT + 8.0 + 150.0 * (k % 5) as f64,
            TOP - 10.0 + 14.0 * (k / 5) as f64,
            COLOURS[k % COLOURS.len()],
            LEFT + 22.0 + 150.0 * (k % 5) as f64,
            TOP - 1.0 + 14.0 * (k / 5) as f64,
            escape(&l.name)
        );
    }
    let every = n.div_ceil(16);
    for (i, (_, label)) in c.runs.iter().enumerate().filter(|(i, _)| i % every == 0) {
        let _ = writeln!(
            s,
            "<text x=\"{0:.1}\" y=\"{1:.1}\" text-anchor=\"end\" transform=\"rotate(-35 {0:.1} {1:.1})\">{2}</text>",
            x(i),
            H - BOTTOM + 14.0,
            escape(label)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// One overlay line in `colour`: its polyline (broken where a run has no value), whiskers and
/// dots, each dot linking to its run's report.
fn overlay_line(
    s: &mut String,
    c: &Overlay,
    l: &Line,
    colour: &str,
    (x, y, lo): (&impl Fn(usize) -> f64, &impl Fn(f64) -> f64, f64),
) {
    let mut runs: Vec<Vec<String>> = vec![Vec::new()];
    for (i, v) in l.values.iter().enumerate() {
        match v {
            Some(v) => {
                (runs.last_mut().expect("one run")).push(format!("{:.1},{:.1}", x(i), y(*v)))
            }
            None => runs.push(Vec::new()),
        }
    }
    for points in runs.iter().filter(|p| p.len() > 1) {
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" points=\"{}\"/>",
            points.join(" ")
        );
    }
    for (i, v) in l.values.iter().enumerate() {
        let (Some(v), Some((id, label))) = (v, c.runs.get(i)) else {
            continue;
        };
        let _ = write!(
            s,
            "<a href=\"/run/{}\"><title>{} · {}: {}</title>",
            enc(id),
            escape(&l.name),
            escape(label),
            number(*v)
        );
        if let Some((a, b)) = l.intervals.get(i).copied().flatten() {
            let _ = write!(
                s,
                "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\" stroke=\"{colour}\" stroke-opacity=\"0.5\" stroke-width=\"1.5\"/>",
                x(i),
                y(a.max(lo)),
                y(b)
            );
        }
        let _ = writeln!(
            s,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{colour}\"/></a>",
            x(i),
            y(*v)
        );
    }
}

/// A value as the axis prints it: thousands separated from 1,000 up, 3 significant digits
/// below.
pub fn number(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1000.0 {
        crate::progress::thousands(v)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(values: &[f64], changes: &[usize]) -> Chart {
        Chart {
            title: "t".into(),
            unit: "QPS".into(),
            dots: (values.iter().enumerate())
                .map(|(i, &v)| Dot {
                    run_id: format!("r{i}"),
                    label: format!("run {i}"),
                    value: v,
                    interval: Some((v * 0.9, v * 1.1)),
                })
                .collect(),
            changes: changes.to_vec(),
        }
    }

    #[test]
    fn a_change_point_is_drawn_between_its_two_runs_and_links_the_later() {
        let svg = svg(&chart(&[100.0, 101.0, 99.0, 200.0, 201.0], &[3]));
        assert_eq!(svg.matches("<circle").count(), 5);
        assert_eq!(svg.matches("class=\"change\"").count(), 1);
        let mark = &svg[svg.find("class=\"change\"").unwrap()..];
        assert!(mark.contains("href=\"/run/r3\""), "{mark}");
        assert!(mark.contains("between run 2 and run 3"), "{mark}");
        // The mark's x is halfway between dots 2 and 3 (n = 5 over 860 px from x = 80).
        let x = |i: f64| LEFT + (W - LEFT - RIGHT) * (i + 0.5) / 5.0;
        assert!(
            mark.contains(&format!("x1=\"{:.1}\"", (x(2.0) + x(3.0)) / 2.0)),
            "{mark}"
        );
        assert_eq!(svg.matches("stroke=\"#6b8fd6\"").count(), 5, "whiskers");
    }

    #[test]
    fn a_series_without_changes_has_no_mark_and_an_empty_one_says_so() {
        let svg = svg(&chart(&[5.0, 5.0], &[]));
        assert!(!svg.contains("class=\"change\""));
        assert!(svg.starts_with("<svg"));
        assert!(super::svg(&chart(&[], &[])).contains("No run has a value"));
    }

    #[test]
    fn higher_values_are_drawn_higher() {
        let svg = svg(&chart(&[10.0, 20.0], &[]));
        let cy: Vec<f64> = (svg.split("cy=\"").skip(1))
            .map(|s| s[..s.find('"').unwrap()].parse().unwrap())
            .collect();
        assert!(cy[1] < cy[0], "{cy:?}");
    }

    #[test]
    fn the_axis_has_round_steps_and_a_positive_series_stays_above_0() {
        assert_eq!(step(0.0, 300_000.0), 100_000.0);
        assert_eq!(step(0.0, 70_000.0), 20_000.0);
        assert_eq!(step(90.0, 110.0), 5.0);
        let wide = vec![Dot {
            run_id: "r".into(),
            label: "r".into(),
            value: 200.0,
            interval: Some((-4000.0, 4400.0)),
        }];
        assert_eq!(range(&wide), (0.0, 6000.0), "steps of 2,000 from 0");
        let (lo, hi) = range(&chart(&[100.0, 101.0], &[]).dots);
        assert!(lo > 0.0 && lo <= 90.0 && hi >= 111.1, "{lo}..{hi}");
    }

    #[test]
    fn axis_numbers_are_readable() {
        assert_eq!(number(12345.6), "12,346");
        assert_eq!(number(-1234.0), "-1,234");
        assert_eq!(number(123.4), "123");
        assert_eq!(number(12.34), "12.3");
        assert_eq!(number(0.1234), "0.12");
        assert_eq!(number(0.0), "0");
    }
}
