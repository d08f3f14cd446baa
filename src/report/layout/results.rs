//! The results at one client count: aggregate, scan, cost and relative tables, the decided
//! row, throughput charts and the pre/post table.
//!
//! Must not: compute statistics (read them from the model), emit ANSI codes or Markdown, or do
//! any I/O.

use super::concurrency::{any_flag, base_header, step_grid, steps_at, targets_grid};
use super::step_label;
use super::verdicts::{verdict_tables, within_step_table};
use crate::report::doc::{
    Block, COARSE, Cell, ChartRef, Grid, NA, mb, metric, micros, rate, rel_cell,
};
use crate::report::fmt::{plural, two};
use crate::report::model::{Aggregate, Relative, ReportModel};
use crate::results::Metric;
use crate::results::metrics::{CostTable, Device, METRICS, MetricDef};

/// The results at one client count: relative and verdict tables (with 2+ targets), within-step
/// and pre/post tables, absolute QPS, scan rate, costs, latency with throughput charts, and
/// memory and size.
pub(super) fn results(m: &ReportModel, clients: u32, doc: &mut Vec<Block>) {
    doc.push(Block::Heading(format!("Results, clients = {clients}")));
    let steps = steps_at(m, clients);
    if m.compared.is_empty() {
        doc.push(Block::Para(
            "Relative tables need at least 2 targets with measurements; showing absolute numbers only."
                .into(),
        ));
    } else {
        relative_tables(m, clients, doc);
        verdict_tables(m, clients, doc);
        crate::report::instructions::tables(m, clients, doc);
        crate::report::why::section(m, clients, doc);
    }
    within_step_table(m, clients, doc);
    pre_post_table(m, clients, doc);

    doc.push(Block::SubHeading(
        "Absolute QPS (queries per second)".into(),
    ));
    let qps = |a: Option<&Aggregate>| rate(a.and_then(|a| a.qps));
    doc.push(Block::Table(aggregate_table(m, clients, &steps, true, qps)));
    scan_table(m, clients, &steps, doc);
    cost_tables(m, clients, &steps, doc, false);

    doc.push(Block::SubHeading(
        "Latency per event, µs: p50 / p99 / max".into(),
    ));
    let latency = |a: Option<&Aggregate>| match a.and_then(|a| a.latency_us) {
        Some(l) => format!("{} / {} / {}", micros(l.p50), micros(l.p99), micros(l.max)),
        None => NA.into(),
    };
    doc.push(Block::Table(aggregate_table(
        m, clients, &steps, true, latency,
    )));
    throughput_figures(m, clients, &steps, doc);

    doc.push(Block::SubHeading(
        "Memory and size, MB: peak RSS / database size after the step".into(),
    ));
    let memory = |a: Option<&Aggregate>| {
        format!(
            "{} / {}",
            mb(a.and_then(|a| a.whole(Metric::PeakRss))),
            mb(a.and_then(|a| a.whole(Metric::DbSize)))
        )
    };
    doc.push(Block::Table(aggregate_table(
        m, clients, &steps, false, memory,
    )));
}

/// A row per step (marked client-bound or settling when `mark_cb` and a target is) and a column per shown
/// target: `cell` of the target's aggregate at `clients` (`None`: not measured).
fn aggregate_table(
    m: &ReportModel,
    clients: u32,
    steps: &[&str],
    mark_cb: bool,
    cell: impl Fn(Option<&Aggregate>) -> String,
) -> Grid {
    let shown = m.shown_targets();
    let mut grid = targets_grid(m, &shown);
    for step in steps {
        let (cb, settling) = any_flag(m, step, clients);
        let mut row = vec![step_label(step, (mark_cb && cb, mark_cb && settling))];
        for t in &shown {
            row.push(Cell::plain(cell(m.aggregate(t, step, clients))));
        }
        grid.rows.push(row);
    }
    grid
}

/// Thousands of rows scanned per second per client, for the steps that scan.
fn scan_table(m: &ReportModel, clients: u32, steps: &[&str], doc: &mut Vec<Block>) {
    let shown = m.shown_targets();
    let scans: Vec<&str> = steps
        .iter()
        .copied()
        .filter(|s| {
            shown.iter().any(|t| {
                m.aggregate(t, s, clients)
                    .is_some_and(|a| a.get(Metric::ScanKrows).is_some())
            })
        })
        .collect();
    if scans.is_empty() {
        return;
    }
    doc.push(Block::SubHeading(
        "Scan: thousands of rows scanned per second per client".into(),
    ));
    let scan = |a: Option<&Aggregate>| rate(a.and_then(|a| a.get(Metric::ScanKrows)));
    doc.push(Block::Table(aggregate_table(
        m, clients, &scans, true, scan,
    )));
}

/// The metrics with a cost table, in the tables' order.
pub(super) fn costs() -> Vec<(&'static MetricDef, CostTable)> {
    let mut out: Vec<_> = (METRICS.iter())
        .filter_map(|d| Some((d, d.cost_table?)))
        .collect();
    out.sort_by_key(|(_, t)| t.rank);
    out
}

/// A relative cost cell: `~` below resolution, `(0.65)` for device IO the engine's own IO does
/// not confirm (a fact about the device, not a finding), else [`rel_cell`].
fn cost_cell(r: Option<&Relative>, d: &MetricDef, table: CostTable) -> Cell {
    let Some(r) = r else {
        return Cell::plain(NA);
    };
    if r.below_resolution.iter().any(|f| f == d.id) {
        return Cell::plain(COARSE);
    }
    let confirmed = match table.device {
        None => true,
        Some(Device::Reads) => r.device_reads_confirmed,
        Some(Device::Writes) => r.device_writes_confirmed,
    };
    match r.ratio(d.metric) {
        Some(v) if !confirmed => Cell::plain(format!("({})", two(v))),
        v => rel_cell(v, r.shown_verdict(r.cost_verdict(d.metric))),
    }
}

/// The cost tables of the device IO metrics (`device`: the diagnostics) or of the others.
pub(super) fn cost_tables(
    m: &ReportModel,
    clients: u32,
    steps: &[&str],
    doc: &mut Vec<Block>,
    device: bool,
) {
    let shown = m.shown_targets();
    for (d, cost) in costs()
        .into_iter()
        .filter(|(_, c)| c.device.is_some() == device)
    {
        let get = |a: &Aggregate| a.get(d.metric);
        let known = steps.iter().any(|s| {
            shown
                .iter()
                .any(|t| m.aggregate(t, s, clients).and_then(get).is_some())
        });
        if !known && !cost.always {
            continue;
        }
        doc.push(Block::SubHeading(format!(
            "{}: absolute, then relative to {} (< 1 is cheaper)",
            cost.title,
            m.base_label()
        )));
        let mut grid = step_grid(
            shown
                .iter()
                .map(|t| base_header(m, t))
                .chain(m.compared.iter().map(|t| format!("{t}\nrel"))),
        );
        for step in steps {
            let mut row = vec![step_label(step, any_flag(m, step, clients))];
            for t in &shown {
                let value = m.aggregate(t, step, clients).and_then(get);
                row.push(Cell::plain(match value {
                    None if m.unresolved(t, step, clients, d.metric) => COARSE.to_string(),
                    v => metric(v),
                }));
            }
            for t in &m.compared {
                row.push(cost_cell(m.relative_of(t, step, clients), d, cost));
            }
            grid.rows.push(row);
        }
        doc.push(Block::Table(grid));
    }
}

fn relative_tables(m: &ReportModel, clients: u32, doc: &mut Vec<Block>) {
    let mut noted = false;
    for group in &m.step_groups {
        let steps: Vec<&String> = group
            .steps
            .iter()
            .filter(|s| {
                m.compared
                    .iter()
                    .any(|t| m.relative_of(t, s, clients).is_some())
            })
            .collect();
        if steps.is_empty() {
            continue;
        }
        doc.push(Block::SubHeading(format!(
            "Relative QPS, {} (vs {}; > 1 is faster)",
            group.title,
            m.base_label()
        )));
        let paired = (steps.iter()).any(|s| {
            (m.compared.iter()).any(|t| {
                m.relative_of(t, s, clients)
                    .is_some_and(|r| r.qps_test.is_some())
            })
        });
        if paired && !noted {
            noted = true;
            doc.push(Block::Para(
                "A step's ratio is the geometric mean of its repeats' paired ratios (target / \
                 base, repeat by repeat), which its verdict judges, not the ratio of the mean QPS \
                 in the Absolute QPS table: the two differ when repeats swing (the verdict table \
                 shows both)."
                    .into(),
            ));
        }
        let mut grid = step_grid(m.compared.iter().cloned());
        for step in steps {
            let flag = |f: fn(&Relative) -> bool| {
                (m.compared.iter()).any(|t| m.relative_of(t, step, clients).is_some_and(f))
            };
            let cb = flag(|r| r.client_bound);
            let mut row = vec![step_label(step, (cb, flag(|r| r.settling)))];
            for t in &m.compared {
                let r = m.relative_of(t, step, clients);
                row.push(rel_cell(
                    r.and_then(|r| r.qps),
                    r.and_then(|r| r.shown_verdict(r.qps_verdict())),
                ));
            }
            grid.rows.push(row);
        }
        type Stat = fn(&crate::report::model::GroupSummary) -> Option<f64>;
        let stats: [(&str, Stat); 4] = [
            ("(min)", |g| g.min),
            ("(max)", |g| g.max),
            ("(avg)", |g| g.avg),
            ("(median)", |g| g.median),
        ];
        for (label, get) in stats {
            let mut row = vec![Cell::plain(label)];
            for t in &m.compared {
                // A summary of steps, not a step: no verdict, so plain.
                row.push(rel_cell(
                    m.group_of(t, &group.id, clients).and_then(get),
                    None,
                ));
            }
            grid.rows.push(row);
        }
        decided_row(m, &group.id, clients, &mut grid);
        doc.push(Block::Table(grid));
        doc.push(Block::Figures {
            title: None,
            charts: vec![ChartRef::RelativeQps {
                group: group.id.clone(),
                clients,
            }],
            note: None,
        });
    }
}

/// A group table's last row: how many of its steps each compared target decided (`7 of 8`);
/// none when the report has no verdicts.
fn decided_row(m: &ReportModel, group: &str, clients: u32, grid: &mut Grid) {
    let cells: Vec<Option<crate::report::model::Decided>> = (m.compared.iter())
        .map(|t| m.group_of(t, group, clients).and_then(|g| g.decided))
        .collect();
    if cells.iter().all(Option::is_none) {
        return;
    }
    let mut row = vec![Cell::plain("(decided)")];
    row.extend(cells.into_iter().map(|d| {
        Cell::plain(d.map_or(NA.to_string(), |d| {
            crate::report::fmt::of(d.decided, d.steps)
        }))
    }));
    grid.rows.push(row);
}

/// The fewest whole seconds a per-second chart needs on some side to show a line.
const MIN_CHART_SECONDS: usize = 5;

/// Per-second throughput charts of the steps with a recorded series (first repeat) of at least
/// [`MIN_CHART_SECONDS`] on some side; the shorter ones are named once, under the title.
fn throughput_figures(m: &ReportModel, clients: u32, steps: &[&str], doc: &mut Vec<Block>) {
    let longest = |step: &str| {
        (m.series.iter())
            .filter(|x| x.clients == clients && x.step == step)
            .map(|x| x.ops_per_sec.len())
            .max()
            .unwrap_or(0)
    };
    let (drawn, short): (Vec<&str>, Vec<&str>) = (steps.iter())
        .filter(|s| longest(s) > 0)
        .partition(|s| longest(s) >= MIN_CHART_SECONDS);
    if drawn.is_empty() && short.is_empty() {
        return;
    }
    let note = (!short.is_empty()).then(|| {
        let which = match drawn.is_empty() {
            true => format!("no step ran {MIN_CHART_SECONDS} whole seconds, so there is none"),
            false => format!(
                "{} left out ({})",
                plural(short.len(), "step"),
                short.join(", ")
            ),
        };
        format!(
            "Drawn only for steps of at least {MIN_CHART_SECONDS} whole seconds on some side \
             (fewer points show no line): {which}."
        )
    });
    doc.push(Block::Figures {
        title: Some(format!(
            "Throughput per second (queries/s; first repeat), clients = {clients}"
        )),
        charts: (drawn.iter())
            .map(|s| ChartRef::Throughput {
                step: s.to_string(),
                clients,
            })
            .collect(),
        note,
    });
}

/// `pre = true`: post QPS / pre QPS per paired step, one column per target.
fn pre_post_table(m: &ReportModel, clients: u32, doc: &mut Vec<Block>) {
    let mut steps: Vec<&str> = Vec::new();
    for p in m.pre_post.iter().filter(|p| p.clients == clients) {
        if !steps.contains(&p.step.as_str()) {
            steps.push(&p.step);
        }
    }
    if steps.is_empty() {
        return;
    }
    doc.push(Block::SubHeading(
        "Pre/post: QPS after the writes / QPS of the .pre step before them (< 1 is slower after)"
            .into(),
    ));
    let shown = m.shown_targets();
    let mut grid = targets_grid(m, &shown);
    for step in steps {
        let mut row = vec![Cell::plain(step)];
        for t in &shown {
            row.push(rel_cell(
                m.pre_post_of(t, step, clients).and_then(|p| p.ratio),
                None,
            ));
        }
        grid.rows.push(row);
    }
    doc.push(Block::Table(grid));
}
