//! The Insert Benchmark's three summary tables (docs/workloads.md, The Insert Benchmark): absolute
//! rates with the reference's quartile colouring, rates relative to the base, and each query step's
//! background insert rate against its target with SLA failures marked.
//!
//! Owns computing [`InsertSummary`] from the model's aggregates and measurement rows, and
//! laying it out as blocks. Must not: read the store or files, or format for one output.

use super::super::doc::{Block, Cell, ChartRef, Grid, Tone, rate, rel_cell};
use super::super::model::{
    Background, InsertCell, InsertOp, InsertRow, InsertSummary, ReportModel, SuiteTables,
};
use crate::results::OpMeasurement;

/// The suite id of insert-suite measurements.
const SUITE: &str = "insert";
/// A query step meets its SLA when its background inserts reach this share of the target.
pub const SLA_SHARE: f64 = 0.95;

/// Whether `step` is a query step (`qr*`/`qp*`), whose SLA and colouring rules differ.
fn is_query(step: &str) -> bool {
    step.starts_with("qr") || step.starts_with("qp")
}

/// The Insert Benchmark's section.
pub(super) struct Section;

impl super::SuiteSection for Section {
    fn suite(&self) -> &'static str {
        SUITE
    }

    #[cfg(test)]
    fn schema(&self) -> &'static str {
        include_str!("insert.schema.json")
    }

    fn summarize(&self, model: &ReportModel) -> Option<SuiteTables> {
        let s = summaries(model);
        (!s.is_empty()).then_some(SuiteTables::Insert(s))
    }

    fn warnings(&self, model: &ReportModel) -> Vec<String> {
        sla_warnings(model)
    }

    fn blocks(&self, model: &ReportModel, doc: &mut Vec<Block>) {
        blocks(model, doc);
    }

    fn no_load_note(&self) -> Option<&'static str> {
        Some("No load phase was recorded: the Insert Benchmark loads its tables in its l.i0 step.")
    }
}

/// The model's Insert Benchmark tables (empty without insert-suite measurements).
pub(in crate::report) fn summaries_of(m: &ReportModel) -> &[InsertSummary] {
    match m.suites.get(SUITE) {
        Some(SuiteTables::Insert(s)) => s,
        _ => &[],
    }
}

/// One summary per client count with insert-suite measurements.
fn summaries(m: &ReportModel) -> Vec<InsertSummary> {
    let (rows, clients, targets) = m.suite_scope(SUITE);
    clients
        .into_iter()
        .map(|c| {
            let mut steps: Vec<(u32, &str)> = (rows.iter())
                .filter(|r| r.clients == c)
                .map(|r| (r.step_index, r.step.as_str()))
                .collect();
            steps.sort_unstable();
            steps.dedup();
            let steps: Vec<String> = steps.into_iter().map(|(_, s)| s.to_string()).collect();
            let mut summary = InsertSummary {
                clients: c,
                rows: (targets.iter()).map(|t| row(m, t, c, &steps)).collect(),
                operations: operations(m, &targets, c, &steps),
                steps,
            };
            colour(&mut summary);
            summary
        })
        .collect()
}

/// One target's cells at `clients`, relative to its own base (in a compare: its run-A twin).
fn row(m: &ReportModel, target: &str, clients: u32, steps: &[String]) -> InsertRow {
    let base = (m.targets.iter())
        .find(|t| t.name == target)
        .and_then(|t| t.relative_to.as_deref())
        .unwrap_or(&m.base);
    let rate_of = |t: &str, step: &str| {
        (m.aggregates.iter())
            .find(|a| a.target == t && a.step == step && a.clients == clients)
            .and_then(|a| a.qps)
    };
    let cells = steps
        .iter()
        .map(|step| {
            let rate = rate_of(target, step);
            let base = rate_of(base, step);
            InsertCell {
                step: step.clone(),
                rate,
                relative: rate.zip(base).filter(|(_, b)| *b > 0.0).map(|(r, b)| r / b),
                quartile: None,
                background: is_query(step)
                    .then(|| background(m, target, step, clients))
                    .flatten(),
            }
        })
        .collect();
    InsertRow {
        target: target.to_string(),
        cells,
    }
}

/// Every role × operation type per step × target at `clients`, means over non-failed repeats.
fn operations(m: &ReportModel, targets: &[&str], clients: u32, steps: &[String]) -> Vec<InsertOp> {
    let mut out = Vec::new();
    for step in steps {
        for &target in targets {
            let repeats: Vec<&Vec<OpMeasurement>> = (m.measurements.iter())
                .filter(|r| r.target == target && r.step == *step && r.clients == clients)
                .filter(|r| !r.failed)
                .map(|r| &r.operations)
                .collect();
            let Some(first) = repeats.first() else {
                continue;
            };
            for o in first.iter() {
                let same: Vec<&OpMeasurement> = (repeats.iter())
                    .filter_map(|ops| ops.iter().find(|x| x.role == o.role && x.op == o.op))
                    .collect();
                let f = |g: fn(&OpMeasurement) -> Option<f64>| {
                    crate::stats::mean_known(same.iter().map(|x| g(x)))
                };
                out.push(InsertOp {
                    step: step.clone(),
                    target: target.to_string(),
                    role: o.role.clone(),
                    op: o.op.clone(),
                    repeats: same.len() as u32,
                    ops_per_sec: f(|x| x.ops_per_sec),
                    units_per_sec: f(|x| x.units_per_sec),
                    service_p99_us: f(|x| x.latency_us.map(|l| l.p99)),
                    service_max_us: f(|x| x.latency_us.map(|l| l.max)),
                    response_p99_us: f(|x| x.response_us.map(|l| l.p99)),
                    response_max_us: f(|x| x.response_us.map(|l| l.max)),
                    step_server_cpu_us_per_unit: f(|x| x.step_server_cpu_us_per_unit),
                });
            }
        }
    }
    out
}

/// The inserter of a query step over the non-failed repeats.
fn background(m: &ReportModel, target: &str, step: &str, clients: u32) -> Option<Background> {
    let inserters: Vec<_> = (m.measurements.iter())
        .filter(|r| r.target == target && r.step == step && r.clients == clients && !r.failed)
        .filter_map(|r| r.operations.iter().find(|o| o.role == "inserter"))
        .collect();
    if inserters.is_empty() {
        return None;
    }
    let n = inserters.len() as f64;
    let achieved = inserters
        .iter()
        .map(|o| o.units_per_sec.unwrap_or(0.0))
        .sum::<f64>()
        / n;
    // Rows per statement are fixed per step, so the target in rows is the target in
    // statements times the rows each one inserted.
    let target_rows = inserters.iter().find_map(|o| {
        let per_op = (o.operations > 0).then(|| o.units as f64 / o.operations as f64)?;
        o.target_ops_per_sec.map(|t| t * per_op)
    });
    let shares: Vec<f64> = inserters
        .iter()
        .map(|o| o.target_share().unwrap_or(0.0))
        .collect();
    let worst = shares.iter().copied().reduce(f64::min);
    Some(Background {
        target_rows_per_sec: target_rows,
        achieved_rows_per_sec: achieved,
        worst_share: worst,
        sla_met: worst.is_some_and(|w| w >= SLA_SHARE),
    })
}

/// The reference's colouring of the absolute table, per step column: bottom quartile, then a
/// query step that missed its SLA, then top quartile (the first rule that applies). The
/// maximum of a query column counts only targets that met the SLA; the bottom quartile is not
/// marked when the whole column is within 80% of its maximum.
fn colour(s: &mut InsertSummary) {
    for (i, step) in s.steps.iter().enumerate() {
        let query = is_query(step);
        let cells: Vec<&InsertCell> = s.rows.iter().map(|r| &r.cells[i]).collect();
        let met = |c: &InsertCell| !query || c.background.as_ref().is_some_and(|b| b.sla_met);
        let min = cells.iter().filter_map(|c| c.rate).reduce(f64::min);
        let max = (cells.iter())
            .filter(|c| met(c))
            .filter_map(|c| c.rate)
            .reduce(f64::max);
        let (Some(min), max) = (min, max) else {
            continue;
        };
        let max = max.unwrap_or(min);
        let gap = max - min;
        let marks: Vec<Option<&str>> = cells
            .iter()
            .map(|c| {
                let r = c.rate?;
                if gap > 0.0 && min < 0.8 * max && r <= min + gap / 4.0 {
                    Some("bottom")
                } else if !met(c) {
                    Some("sla")
                } else if gap > 0.0 && r >= max - gap / 4.0 {
                    Some("top")
                } else {
                    None
                }
            })
            .collect();
        for (row, mark) in s.rows.iter_mut().zip(marks) {
            row.cells[i].quartile = mark.map(str::to_string);
        }
    }
}

/// The three tables of each summary, for every format.
fn blocks(m: &ReportModel, doc: &mut Vec<Block>) {
    for s in summaries_of(m) {
        doc.push(Block::Heading(format!(
            "Insert Benchmark summary, clients = {}",
            s.clients
        )));
        doc.push(Block::Para(
            "Rows per second for l.i0, l.i1 and l.i2; indexed rows per second for l.x; queries per second \
             for qr (range) and qp (point) steps, which run while a paced inserter and a deleter keep the \
             table size constant."
                .into(),
        ));
        doc.push(Block::SubHeading("Absolute".into()));
        doc.push(Block::Table(absolute(s)));
        if s.rows.len() > 1 {
            let base = match &m.compare {
                Some(_) => "each run-B target's run-A twin (run-A targets: the base)".to_string(),
                None => m.base.clone(),
            };
            doc.push(Block::SubHeading(format!("Relative to {base}")));
            doc.push(Block::Table(relative(s)));
        }
        if !s.operations.is_empty() {
            doc.push(Block::SubHeading(
                "Per operation type: rate (rows or queries/s), service time and, for paced roles, response time from the intended start (p99 / max), the step's server CPU divided by the rows or queries of each type (the reference's per-insert and per-query costs)"
                    .into(),
            ));
            doc.push(Block::Table(operations_table(s)));
        }
        let charts: Vec<ChartRef> = (s.steps.iter())
            .filter(|step| is_query(step))
            .map(|step| ChartRef::BackgroundInserts {
                step: step.clone(),
                clients: s.clients,
            })
            .collect();
        if !charts.is_empty() {
            doc.push(Block::Figures {
                title: Some(format!(
                    "Background inserts per second (rows/s; first repeat), clients = {}",
                    s.clients
                )),
                charts,
                note: None,
            });
        }
        if let Some(g) = background_table(s) {
            doc.push(Block::SubHeading(
                "Background insert rate (rows/s) against its target; SLA: at least 95% in every repeat"
                    .into(),
            ));
            doc.push(Block::Table(g));
        }
    }
}

fn grid(s: &InsertSummary) -> Grid {
    Grid {
        header: std::iter::once("target".to_string())
            .chain(s.steps.iter().cloned())
            .collect(),
        right: std::iter::once(false)
            .chain(s.steps.iter().map(|_| true))
            .collect(),
        rows: Vec::new(),
    }
}

fn name_cell(t: &str) -> Cell {
    Cell {
        text: t.to_string(),
        tone: Tone::Plain,
    }
}

/// Absolute rates; `[low]`/`[high]`: bottom/top quartile, `[SLA]`: missed its target.
fn absolute(s: &InsertSummary) -> Grid {
    let mut g = grid(s);
    for r in &s.rows {
        let mut cells = vec![name_cell(&r.target)];
        cells.extend(r.cells.iter().map(|c| {
            let (mark, tone) = match c.quartile.as_deref() {
                Some("bottom") => (" [low]", Tone::Worse),
                Some("sla") => (" [SLA]", Tone::Worse),
                Some("top") => (" [high]", Tone::Better),
                _ => ("", Tone::Plain),
            };
            Cell {
                text: format!("{}{mark}", rate(c.rate)),
                tone,
            }
        }));
        g.rows.push(cells);
    }
    g
}

fn relative(s: &InsertSummary) -> Grid {
    let mut g = grid(s);
    for r in &s.rows {
        let mut cells = vec![name_cell(&r.target)];
        cells.extend(r.cells.iter().map(|c| rel_cell(c.relative, None)));
        g.rows.push(cells);
    }
    g
}

/// Achieved background rate per query step, `[SLA]` where it missed 95% of the target; the
/// last row is the target. `None` without query steps.
fn background_table(s: &InsertSummary) -> Option<Grid> {
    let cols: Vec<usize> = (0..s.steps.len())
        .filter(|i| is_query(&s.steps[*i]))
        .collect();
    if cols.is_empty() {
        return None;
    }
    let mut g = Grid {
        header: std::iter::once("target".to_string())
            .chain(cols.iter().map(|i| s.steps[*i].clone()))
            .collect(),
        right: std::iter::once(false)
            .chain(cols.iter().map(|_| true))
            .collect(),
        rows: Vec::new(),
    };
    for r in &s.rows {
        let mut cells = vec![name_cell(&r.target)];
        cells.extend(cols.iter().map(|i| match &r.cells[*i].background {
            None => Cell {
                text: "n/a".into(),
                tone: Tone::Plain,
            },
            Some(b) if b.sla_met => Cell {
                text: rate(Some(b.achieved_rows_per_sec)),
                tone: Tone::Plain,
            },
            Some(b) => Cell {
                text: format!("{} [SLA]", rate(Some(b.achieved_rows_per_sec))),
                tone: Tone::Worse,
            },
        }));
        g.rows.push(cells);
    }
    let mut target = vec![name_cell("target rate")];
    target.extend(cols.iter().map(|i| {
        let t = (s.rows.iter()).find_map(|r| r.cells[*i].background.as_ref()?.target_rows_per_sec);
        Cell {
            text: rate(t),
            tone: Tone::Plain,
        }
    }));
    g.rows.push(target);
    Some(g)
}

/// Latency in ms with 2 decimals (`n/a` when unknown).
fn ms(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |us| format!("{:.2}", us / 1000.0))
}

fn operations_table(s: &InsertSummary) -> Grid {
    let header = [
        "step",
        "target",
        "role",
        "op",
        "per sec",
        "service p99/max ms",
        "response p99/max ms",
        "step CPU µs ÷ units",
    ];
    let mut g = Grid {
        header: header.iter().map(|h| h.to_string()).collect(),
        right: vec![false, false, false, false, true, true, true, true],
        rows: Vec::new(),
    };
    let text = |t: String| Cell {
        text: t,
        tone: Tone::Plain,
    };
    for o in &s.operations {
        let response = if o.response_p99_us.is_some() {
            format!("{} / {}", ms(o.response_p99_us), ms(o.response_max_us))
        } else {
            "-".into()
        };
        g.rows.push(vec![
            text(o.step.clone()),
            text(o.target.clone()),
            text(o.role.clone()),
            text(o.op.clone()),
            // An operation type that counts no units (the point querier's id refresh): a dash,
            // not a rate of zero.
            text(match (o.units_per_sec, o.ops_per_sec) {
                (Some(u), Some(ops)) if u == 0.0 && ops > 0.0 => "-".into(),
                (u, _) => rate(u),
            }),
            text(format!(
                "{} / {}",
                ms(o.service_p99_us),
                ms(o.service_max_us)
            )),
            text(response),
            text(
                o.step_server_cpu_us_per_unit
                    .map_or("n/a".into(), |v| format!("{v:.1}")),
            ),
        ]);
    }
    g
}

/// One warning per target × query step that missed its SLA, with the achieved rate.
fn sla_warnings(m: &ReportModel) -> Vec<String> {
    let mut out = Vec::new();
    for s in summaries_of(m) {
        for r in &s.rows {
            for c in &r.cells {
                let Some(b) = c.background.as_ref().filter(|b| !b.sla_met) else {
                    continue;
                };
                out.push(format!(
                    "SLA failure: {} {} at {} client(s) inserted {} rows/s in the background, {} of its target {} rows/s (the SLA is 95% in every repeat)",
                    r.target,
                    c.step,
                    s.clients,
                    rate(Some(b.achieved_rows_per_sec)),
                    b.worst_share
                        .map_or("n/a".into(), |w| format!("{:.0}%", w * 100.0)),
                    rate(b.target_rows_per_sec),
                ));
            }
        }
    }
    out
}
