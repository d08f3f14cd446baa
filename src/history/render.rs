//! `dbdelta history` as text, Markdown or JSON: a [`History`] in, a `String` out.
//!
//! Pure: no I/O, no numbers computed beyond formatting (the series and change points are
//! `history`'s).

use std::fmt::Write;

use super::{Change, History, Point, Series};
use crate::report::fmt;

/// Output format of `dbdelta history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HistFormat {
    Text,
    #[value(alias = "md")]
    Markdown,
    Json,
}

/// `h` in `format`.
pub fn render(h: &History, format: HistFormat) -> String {
    match format {
        HistFormat::Text => text(h),
        HistFormat::Markdown => markdown(h),
        HistFormat::Json => {
            let mut s = serde_json::to_string_pretty(h).expect("history serializes");
            s.push('\n');
            s
        }
    }
}

/// The first lines: metric, method, totals, partial runs.
fn header(h: &History) -> String {
    let better = if h.higher_is_better {
        "higher"
    } else {
        "lower"
    };
    let changes: usize = h.series.iter().map(|s| s.changes.len()).sum();
    let mut out = format!(
        "history of {} ({better} is better): {}, {}\n\
         change points: E-divisive means, kept when Student's t-test p ≤ {} and the level moved ≥ {}\n",
        h.metric,
        series_count(h.series.len()),
        fmt::plural(changes, "change point"),
        h.max_p,
        fmt::percent(h.min_magnitude),
    );
    if let Some(base) = &h.relative_to {
        let _ = writeln!(
            out,
            "values relative to each series' value in run {base} (1 = that run's value)"
        );
    }
    if h.series.iter().flat_map(|s| &s.points).any(|p| p.clipped) {
        let _ = writeln!(out, "{CLIPPED}");
    }
    if !h.partial.is_empty() {
        let names: Vec<String> = h
            .partial
            .iter()
            .map(|r| run_label(&r.run_id, &r.run_name))
            .collect();
        let _ = writeln!(
            out,
            "left out, not complete: {} ({})",
            fmt::plural(names.len(), "run"),
            names.join(", ")
        );
    }
    out
}

/// `1 series`, `5 series`.
fn series_count(n: usize) -> String {
    format!("{n} series")
}

/// `2026-11-26 12:41:38` of an RFC 3339 time (UTC as stored); other text as it is. `serve`
/// prints start times with it too.
pub fn when(started: &str) -> String {
    match started.get(..19) {
        Some(s) if started.as_bytes().get(10) == Some(&b'T') => s.replacen('T', " ", 1),
        _ => started.to_string(),
    }
}

/// A ratio with two decimals, or with three significant digits below 0.1.
fn ratio_text(r: f64) -> String {
    if r > 0.0 && r < 0.1 {
        let d = (2.0 - r.log10().floor()).min(12.0) as usize;
        format!("{r:.d$}")
    } else {
        fmt::two(r)
    }
}

fn run_label(id: &str, name: &Option<String>) -> String {
    name.clone().unwrap_or_else(|| id.to_string())
}

/// A value with as many decimals as its size needs (3 significant digits at least).
pub fn num(v: f64) -> String {
    let a = v.abs();
    let d = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    format!("{v:.d$}")
}

fn title(s: &Series) -> String {
    format!(
        "lab \"{}\" · target {} · step {} · {}",
        s.lab,
        s.target,
        s.step,
        fmt::plural(s.clients as usize, "client")
    )
}

/// One line per change: run, levels, ratio, p-value, direction.
pub fn change_line(s: &Series, c: &Change) -> String {
    let ratio = c.ratio.map_or("n/a".into(), |r| {
        format!("{}× ({})", ratio_text(r), fmt::signed_percent(r))
    });
    format!(
        "change at {} (point {} of {}): {} → {}, {ratio}, p = {:.1e}, {}",
        run_label(&c.run_id, &c.run_name),
        c.index + 1,
        s.points.len(),
        num(c.before_mean),
        num(c.after_mean),
        c.p_value,
        if c.worse { "worse" } else { "better" }
    )
}

/// What a `*` after an interval means.
pub const CLIPPED: &str = "* interval cut at 0: the 95% t-interval of the repeats reached below zero, which no rate, \
     cost or size can; the repeats are too few or too spread for an interval that says much (more repeats narrow it)";

/// `lo–hi`, with `*` when its lower end was cut at 0; `-` without one.
fn interval_text(p: &Point) -> String {
    let mark = if p.clipped { "*" } else { "" };
    (p.interval).map_or("-".into(), |(lo, hi)| {
        format!("{}–{}{mark}", num(lo), num(hi))
    })
}

fn text(h: &History) -> String {
    let mut out = header(h);
    if h.series.is_empty() {
        out.push_str("no stored complete run matches (dbdelta list runs shows the labs)\n");
    }
    for s in &h.series {
        let _ = writeln!(out, "\n{}", title(s));
        let rows: Vec<[String; 5]> = (s.points.iter().enumerate())
            .map(|(i, p)| {
                let mark = if s.changes.iter().any(|c| c.index == i) {
                    "◀ change"
                } else {
                    ""
                };
                [
                    run_label(&p.run_id, &p.run_name),
                    when(&p.started),
                    num(p.value),
                    interval_text(p),
                    format!("{} {mark}", p.repeats).trim_end().to_string(),
                ]
            })
            .collect();
        let head = [
            "run",
            "started",
            h.metric.as_str(),
            "95% interval",
            "repeats",
        ];
        let width = |c: usize| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([head[c].chars().count()])
                .max()
                .unwrap_or(0)
        };
        let w: Vec<usize> = (0..5).map(width).collect();
        let line = |cells: [&str; 5]| {
            format!(
                "  {:<w0$}  {:<w1$}  {:>w2$}  {:>w3$}  {}\n",
                cells[0],
                cells[1],
                cells[2],
                cells[3],
                cells[4],
                w0 = w[0],
                w1 = w[1],
                w2 = w[2],
                w3 = w[3]
            )
        };
        out.push_str(&line(head));
        for r in &rows {
            out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
        }
        match &s.too_few {
            Some(why) => {
                let _ = writeln!(out, "  no change points looked for: {why}");
            }
            None if s.changes.is_empty() => out.push_str("  no change point\n"),
            None => {}
        }
        for c in &s.changes {
            let _ = writeln!(out, "  {}", change_line(s, c));
        }
    }
    out
}

fn markdown(h: &History) -> String {
    let mut out = String::new();
    for l in header(h).lines() {
        let _ = writeln!(out, "{l}  ");
    }
    for s in &h.series {
        let _ = writeln!(out, "\n### {}\n", title(s));
        let _ = writeln!(
            out,
            "| run | started | {} | 95% interval | repeats | change |",
            h.metric
        );
        out.push_str("| --- | --- | ---: | ---: | ---: | --- |\n");
        for (i, p) in s.points.iter().enumerate() {
            let mark = s
                .changes
                .iter()
                .find(|c| c.index == i)
                .map_or(String::new(), |c| {
                    let r = c.ratio.map_or("n/a".into(), fmt::signed_percent);
                    format!(
                        "**{r}** (p = {:.1e}, {})",
                        c.p_value,
                        if c.worse { "worse" } else { "better" }
                    )
                });
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {mark} |",
                run_label(&p.run_id, &p.run_name),
                when(&p.started),
                num(p.value),
                interval_text(p),
                p.repeats
            );
        }
        match &s.too_few {
            Some(why) => {
                let _ = writeln!(out, "\nNo change points looked for: {why}.");
            }
            None if s.changes.is_empty() => out.push_str("\nNo change point.\n"),
            None => {}
        }
    }
    out
}
