//! The instructions/op section of a human-readable report: per compared target, each step's
//! instructions per operation on both sides with their spread, the ratio, its verdict from one
//! repeat, and where instructions and CPU/op disagree.
//!
//! Owns that table's layout and its explanation. Must not: compute verdicts (`verdict` does,
//! into the model's `SpreadTest`s), or format for a particular output.

use super::super::doc::{Block, Cell, Grid, NA, Tone, rel_cell, thousands};
use super::super::fmt::percent;
use super::super::model::{OpSpreadTest, Relative, ReportModel, SpreadTest};
use crate::results::Metric;

/// `41,518 ±0.25%`: instructions/op and its half-range.
fn with_spread(m: &ReportModel, target: &str, step: &str, clients: u32) -> String {
    let Some(a) = m.aggregate(target, step, clients) else {
        return NA.into();
    };
    match (a.get(Metric::ServerInstr), a.get(Metric::ServerInstrSpread)) {
        (Some(v), Some(s)) if v > 0.0 => value_text(v, s / v),
        (Some(v), _) => thousands(v),
        _ => NA.into(),
    }
}

/// Most of a value's half-range that is still a measurement: beyond it the passes disagree by
/// more than half and the value is no number (its range would reach zero).
const MAX_SPREAD: f64 = 0.5;

/// `41,518 ±0.25%`, or what the passes say when they disagree by more than half (the range
/// would reach below zero: not data).
fn value_text(v: f64, spread: f64) -> String {
    match spread > MAX_SPREAD {
        true => format!("{NA} (passes disagree)"),
        false => format!("{} ±{:.2}%", thousands(v), 100.0 * spread),
    }
}

/// The ratio's cell: none where the passes disagree by more than half.
fn ratio_cell(t: &SpreadTest) -> Cell {
    match t.verdict.as_str() {
        "unmeasurable" => Cell::plain(NA),
        v => rel_cell(Some(t.ratio), Some(v)),
    }
}

/// The server's background instructions/op during the passes, base → target (`n/a` where
/// the engine has none: SQLite).
fn background(m: &ReportModel, r: &Relative) -> String {
    let of = |target: &str| {
        (m.aggregate(target, &r.step, r.clients)).and_then(|a| a.get(Metric::ServerBgInstr))
    };
    match (of(&r.base), of(&r.target)) {
        (None, None) => NA.into(),
        (b, t) => format!(
            "{} → {}",
            b.map_or(NA.into(), thousands),
            t.map_or(NA.into(), thousands)
        ),
    }
}

/// The range, with `(k)` for k seed-matched pairs; none where it reaches zero (the passes
/// disagree by more than half: not a range).
fn range_text(t: &SpreadTest) -> String {
    if t.verdict == "unmeasurable" {
        return "passes disagree by more than half".into();
    }
    let pairs = match (t.paired, t.interval) {
        (0, Some([b, t])) => format!(" (95%, {b}+{t} pairs)"),
        (0, None) => String::new(),
        (k, _) => format!(" ({k})"),
    };
    let starts = (t.between_starts)
        .map(|b| format!(", between starts ±{}", percent(b)))
        .unwrap_or_default();
    format!(
        "{:.3}–{:.3}{pairs}{starts}",
        t.range[0],
        t.range[1].min(99.0)
    )
}

/// The step's floor, `±x%`, or `none` where its build was not calibrated.
fn floor_text(t: &SpreadTest) -> String {
    t.floor
        .map_or("none".into(), |f| format!("±{}", percent(f)))
}

fn verdict_cell(t: &SpreadTest) -> Cell {
    let tone = match t.verdict.as_str() {
        "regression" => Tone::Worse,
        "improvement" => Tone::Better,
        _ => Tone::Plain,
    };
    Cell {
        text: t.verdict.clone(),
        tone,
    }
}

/// What a disagreement of instructions and CPU suggests, in a few words.
fn disagreement(t: &SpreadTest) -> String {
    match (t.cpu_ratio, t.cpu_disagrees) {
        // Said of the ratios, whichever way each moved (both can fall, or rise).
        (Some(c), true) if c > t.ratio => {
            "CPU/op says costlier than instructions: kernel work (system calls, IO), waits, \
             contention or cache misses"
                .into()
        }
        (Some(_), true) => {
            "CPU/op says cheaper than instructions: less waiting or fewer cache misses".into()
        }
        _ => String::new(),
    }
}

/// An operation type counted on its own, under its step: `  deleter/delete`.
fn op_row(o: &OpSpreadTest) -> Vec<Cell> {
    let t = &o.test;
    vec![
        Cell::plain(format!("  {}/{}", o.role, o.op)),
        Cell::plain(value_text(o.base, t.base_spread)),
        Cell::plain(value_text(o.value, t.target_spread)),
        ratio_cell(t),
        Cell::plain(range_text(t)),
        Cell::plain(""),
        verdict_cell(t),
        Cell::plain(""),
        Cell::plain(""),
        Cell::plain(""),
    ]
}

fn row(m: &ReportModel, r: &Relative, t: &SpreadTest) -> Vec<Cell> {
    vec![
        Cell::plain(&r.step),
        Cell::plain(with_spread(m, &r.base, &r.step, r.clients)),
        Cell::plain(with_spread(m, &r.target, &r.step, r.clients)),
        ratio_cell(t),
        Cell::plain(range_text(t)),
        Cell::plain(floor_text(t)),
        verdict_cell(t),
        rel_cell(
            t.cpu_ratio,
            r.shown_verdict(r.cost_verdict(Metric::ServerCpu)),
        ),
        Cell::plain(background(m, r)),
        Cell::plain(disagreement(t)),
    ]
}

/// What counted a target's instructions at `clients` (its first counted step's), `callgrind`
/// when not recorded (runs stored before dbdelta recorded it).
fn counter_of<'a>(m: &'a ReportModel, target: &str, clients: u32) -> &'a str {
    (m.measurements.iter())
        .filter(|r| r.target == target && r.clients == clients)
        .find_map(|r| r.instructions_counter.as_deref())
        .unwrap_or("callgrind")
}

/// `Counted under callgrind in a counting pass of its own`, `Counted by perf stat -e
/// instructions:u …`, or each side's counter when they differ; with perf, that it counts no
/// background work.
fn counted_by(m: &ReportModel, base: &str, target: &str, clients: u32) -> String {
    let (b, t) = (counter_of(m, base, clients), counter_of(m, target, clients));
    let said = |c: &str| match c {
        "callgrind" => "under callgrind".to_string(),
        perf => format!("by {perf}"),
    };
    let mut out = match b == t {
        true => format!("Counted {}", said(b)),
        false => format!("Counted {} ({base}) and {} ({target})", said(b), said(t)),
    };
    out.push_str(" in a counting pass of its own");
    if b != "callgrind" || t != "callgrind" {
        out.push_str(
            " (perf counts the pass's client threads and the server tasks serving its \
             connections, nothing else: no background/op)",
        );
    }
    out
}

/// One table per compared target with counted steps at `clients`.
pub(in crate::report) fn tables(m: &ReportModel, clients: u32, doc: &mut Vec<Block>) {
    for target in &m.compared {
        let rows: Vec<(&Relative, &SpreadTest)> = (m.relative.iter())
            .filter(|r| r.clients == clients && r.target == *target)
            .filter_map(|r| r.tests.spread(Metric::ServerInstr).map(|t| (r, t)))
            .collect();
        let Some((first, _)) = rows.first() else {
            continue;
        };
        doc.push(Block::SubHeading(format!(
            "Instructions/op, {target} vs {}: verdicts from one repeat (< 1 is cheaper)",
            first.base
        )));
        doc.push(Block::Para(format!(
            "{}; ± is half the range of the \
             pass pairs' values. Instructions/op are the pass's own statements (PostgreSQL's \
             backends, the MySQL threads serving its connections); the server's background \
             work during the passes (autovacuum, InnoDB's purge and page cleaner), which runs by \
             the clock, is `background/op`, base → target, and is not judged. The range is the \
             lowest and highest ratio of the pass pairs matched by seed (their number in \
             parentheses: the k-th pair of each side ran the same rows), or without them what \
             the two sides' spreads allow; the pairs are spread over separate server starts, \
             and where the starts' mean ratios disagree more than the pairs of one start \
             (`between starts ±x%`), the range holds the mean ratio moved by that whole \
             disagreement either way. The floor is how far the step moved between two \
             identical servers of the build (`dbdelta calibrate`; `none`: not calibrated, no \
             floor assumed). A change needs the ratio beyond ±{1}, 1 outside the range and the \
             range beyond the floor; `unchanged` means the whole range lies within ±{1}; `unmeasurable`, that the \
             passes disagree by more than half. Instructions do not show \
             time spent waiting (IO, locks, fsync, the network) or on cache misses, nor the \
             kernel's work: where CPU/op says otherwise, believe it for time. Indented rows \
             (role/type) are a step's other roles, or each type of a request mix, counted on \
             their own: that role alone, closed-loop (a deleter after as many uncounted inserts), \
             or that type alone; instructions per unit (row inserted or deleted, query, request).",
            counted_by(m, &first.base, target, clients),
            percent(m.method.min_effect)
        )));
        let header = [
            "step",
            "base instr/op",
            "instr/op",
            "ratio",
            "range",
            "floor",
            "verdict",
            "CPU/op",
            "background/op",
            "",
        ];
        let mut grid = Grid {
            header: header.map(String::from).to_vec(),
            right: vec![
                false, true, true, true, true, true, false, true, true, false,
            ],
            rows: Vec::new(),
        };
        for (r, t) in rows {
            grid.rows.push(row(m, r, t));
            grid.rows.extend(r.counted_ops.iter().map(op_row));
        }
        doc.push(Block::Table(grid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test(ratio: f64, cpu: f64) -> SpreadTest {
        SpreadTest {
            metric: Metric::ServerInstr.id().into(),
            ratio,
            range: [ratio, ratio],
            base_spread: 0.0,
            target_spread: 0.0,
            paired: 0,
            interval: None,
            between_starts: None,
            floor: None,
            verdict: "improvement".into(),
            cpu_ratio: Some(cpu),
            cpu_disagrees: true,
        }
    }

    #[test]
    fn a_disagreement_is_said_of_the_ratios_whichever_way_both_moved() {
        // Both fell, CPU/op less: CPU says costlier than instructions, not that it "rose".
        assert!(disagreement(&test(0.5, 0.8)).starts_with("CPU/op says costlier"));
        assert!(disagreement(&test(1.6, 1.2)).starts_with("CPU/op says cheaper"));
        assert!(disagreement(&test(0.8, 0.5)).starts_with("CPU/op says cheaper"));
    }
}
