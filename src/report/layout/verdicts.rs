//! The verdict and within-step tables: each metric's test as a cell (q-value, levels,
//! detectable effect) and the within-step comparisons.
//!
//! Must not: compute statistics (read them from the model), emit ANSI codes or Markdown, or do
//! any I/O.

use super::cell::verdict_cell;
use super::concurrency::{any_flag, steps_at, targets_grid};
use super::step_label;
use crate::report::doc::{Block, COARSE, Cell, Grid, MAX, NA, NOISY, SHORT, Tone, rel_cell};
use crate::report::fmt::{interval, percent, two};
use crate::report::model::{MetricTest, Relative, ReportModel, WithinStep};
use crate::results::Metric;

/// A q-value: 3 significant digits, `<0.001` below.
fn q_value(q: f64) -> String {
    if q < 0.001 {
        "<0.001".into()
    } else {
        format!("{q:.3}")
    }
}

/// Family-level facts for a heading: `QPS 97.5%, CPU/op 99.8%`.
fn levels(rows: &[&Relative]) -> String {
    let level = |get: fn(&Relative) -> Option<&MetricTest>| {
        rows.iter()
            .find_map(|r| get(r))
            .map(|t| format!("{}%", percent(t.ci_level).trim_end_matches('%')))
    };
    let mut parts = Vec::new();
    if let Some(l) = level(|r| r.qps_test.as_ref()) {
        parts.push(format!("QPS {l}"));
    }
    if let Some(l) = level(|r| r.tests.get(Metric::ServerCpu)) {
        parts.push(format!("CPU/op {l}"));
    }
    parts.join(", ")
}

/// The `QPS` or `CPU/op` row of a step in a verdict table (the step named on the QPS row).
fn verdict_row(m: &ReportModel, r: &Relative, metric: &str) -> Vec<Cell> {
    let (test, cost, step) = match metric {
        "QPS" => (
            r.qps_test.as_ref(),
            false,
            step_label(&r.step, (r.client_bound, r.settling)),
        ),
        _ => (r.tests.get(Metric::ServerCpu), true, Cell::plain("")),
    };
    let mut row = vec![step, Cell::plain(metric)];
    let means = m.ratio_of_means(r, metric);
    let means = Cell::plain(means.map_or(NA.to_string(), two));
    match test {
        Some(t) => {
            // Coloured only when it is a verdict, and one the Answer does not contradict: a
            // large but noisy ratio is plain.
            let ratio = rel_cell(Some(t.geo_mean), r.shown_verdict(Some(&t.verdict)));
            row.extend([
                Cell::plain(t.paired_repeats.to_string()),
                ratio,
                means,
                Cell::plain(interval(t.ci)),
                Cell::plain(q_value(t.q)),
                answer_followed(r, verdict_cell(t, m.method.min_effect), &t.verdict),
            ]);
        }
        None => {
            let coarse = cost
                && r.below_resolution
                    .iter()
                    .any(|f| f == "server_cpu_us_per_op");
            let ratio = if coarse { COARSE } else { NA };
            row.extend([Cell::plain(""), Cell::plain(ratio), means]);
            row.extend(["", "", "no verdict"].map(Cell::plain));
        }
    }
    row
}

/// A verdict the step's (the Answer's) contradicts, uncoloured and naming the metric the
/// Answer followed and what it says.
fn answer_followed(r: &Relative, mut cell: Cell, verdict: &str) -> Cell {
    if let Some(d) = r.deciding().filter(|_| r.contradicts(verdict)) {
        cell.tone = Tone::Plain;
        cell.text
            .push_str(&format!("; the Answer follows {}: {}", d.cost, d.verdict));
    }
    cell
}

/// One table per compared target: per step a QPS row and a server CPU/op row with the geometric
/// mean ratio, its adjusted interval, q and verdict.
pub(super) fn verdict_tables(m: &ReportModel, clients: u32, doc: &mut Vec<Block>) {
    for target in &m.compared {
        let rows: Vec<&Relative> = m
            .relative
            .iter()
            .filter(|r| r.clients == clients && r.target == *target && r.qps_test.is_some())
            .collect();
        let Some(first) = rows.first() else {
            continue;
        };
        doc.push(Block::SubHeading(format!(
            "Verdicts, {target} vs {}: QPS (> 1 is better) and server CPU/op (< 1 is better)",
            first.base
        )));
        doc.push(Block::Para(format!(
            "ratio: the geometric mean of the repeats' paired ratios (target / base, repeat by \
             repeat), which the test judges; means: the ratio of the means the other tables \
             show (the two differ when repeats swing). Interval adjusted for the {} steps of each family \
             ({}); q = Benjamini–Hochberg adjusted p; a change needs q ≤ {} and the whole interval \
             beyond ±{}. A step's verdict, the one the Answer follows, is its instructions/op's \
             where it was counted, else its QPS's where that is a decision, else its CPU/op's.",
            rows.len(),
            levels(&rows),
            m.method.fdr_q,
            percent(m.method.min_effect)
        )));
        let mut grid = Grid {
            header: [
                "step", "metric", "n", "ratio", "means", "interval", "q", "verdict",
            ]
            .map(String::from)
            .to_vec(),
            right: vec![false, false, true, true, true, true, true, false],
            rows: Vec::new(),
        };
        for r in rows {
            grid.rows.push(verdict_row(m, r, "QPS"));
            grid.rows.push(verdict_row(m, r, "CPU/op"));
        }
        doc.push(Block::Table(grid));
    }
}

/// A fraction as a percent: one decimal below 10%, none above.
fn pct(v: f64) -> String {
    if v.abs() < 0.1 {
        format!("{:.1}%", v * 100.0)
    } else {
        format!("{:.0}%", v * 100.0)
    }
}

/// `60 s 2.1% ±0.9%`: a target's within-step noise for one step, with `[short]` or `[noisy]`.
fn within_text(w: &WithinStep) -> String {
    let mut out = format!("{} s", w.seconds);
    if let Some(cv) = w.cv {
        out.push_str(&format!(" {}", pct(cv)));
    }
    out.push_str(&match w.precision {
        Some(p) => format!(" ±{}", pct(p)),
        None if w.cv.is_some() => " ±?".to_string(),
        None => String::new(),
    });
    if w.too_short {
        out.push_str(SHORT);
    } else if w.too_noisy {
        out.push_str(NOISY);
    }
    out
}

/// Per step and target: whole seconds, CV and ±precision of the per-second QPS, the flags, and
/// for adaptive steps whether they ran to their maximum.
pub(super) fn within_step_table(m: &ReportModel, clients: u32, doc: &mut Vec<Block>) {
    let shown = m.shown_targets();
    let steps = steps_at(m, clients);
    if steps.is_empty() {
        return;
    }
    let adaptive = m
        .measurements
        .iter()
        .filter(|r| r.clients == clients && r.duration_rule == "adaptive")
        .find_map(|r| r.precision_target)
        .map(|p| {
            format!(
                "; adaptive steps: target ±{}, {}: ran to max_secs",
                pct(p),
                MAX.trim()
            )
        })
        .unwrap_or_default();
    doc.push(Block::SubHeading(format!(
        "Step length and within-step QPS noise: seconds, CV, ±95% precision ({}: < {} s; {}: ± > {}{adaptive})",
        SHORT.trim(),
        m.method.min_step_seconds,
        NOISY.trim(),
        percent(m.method.min_effect)
    )));
    let mut grid = targets_grid(m, &shown);
    for step in steps {
        let mut row = vec![step_label(step, any_flag(m, step, clients))];
        for t in &shown {
            let a = m.aggregate(t, step, clients);
            let mut text = a
                .and_then(|a| a.within_step.as_ref())
                .map_or_else(|| NA.into(), within_text);
            if a.is_some_and(|a| a.ran_to_max > 0) {
                text.push_str(MAX);
            }
            // Uncoloured: the tones mean better or worse than the base, which a flag is not.
            row.push(Cell::plain(text));
        }
        grid.rows.push(row);
    }
    doc.push(Block::Table(grid));
}
