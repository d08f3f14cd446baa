//! LinkBench's tables (docs/workloads.md, LinkBench): per client count, a load table (rows per
//! second of nodes, links and counts, the index build, sizes), a request table per request step
//! (requests per second and relative to the base, per-request costs, size after, the p99 of each
//! operation type) and a per-operation table (rate, share of requests, p50/p95/p99/max/mean
//! latency, rows per getlinklist).
//!
//! Owns computing [`LinkbenchSummary`] from the model's aggregates and measurement rows, and
//! laying it out as blocks. Must not: read the store or files, or format for one output.

use super::super::doc::{Block, Cell, Grid, Tone, rate, rel_cell};
use super::super::model::{
    LinkbenchLoad, LinkbenchOp, LinkbenchRequest, LinkbenchSummary, ReportModel, SuiteTables,
};
use crate::results::{Metric, OpMeasurement};
use crate::stats::mean_known;
use crate::suites::linkbench::steps::{OPS, REQUEST_GROUP, SUITE};

const LOAD: &str = "linkbench.load";
const INDEX: &str = "linkbench.index";

/// LinkBench's section.
pub(super) struct Section;

impl super::SuiteSection for Section {
    fn suite(&self) -> &'static str {
        SUITE
    }

    #[cfg(test)]
    fn schema(&self) -> &'static str {
        include_str!("linkbench.schema.json")
    }

    fn summarize(&self, model: &ReportModel) -> Option<SuiteTables> {
        let s = summaries(model);
        (!s.is_empty()).then_some(SuiteTables::Linkbench(s))
    }

    fn blocks(&self, model: &ReportModel, doc: &mut Vec<Block>) {
        blocks(model, doc);
    }
}

/// The model's LinkBench tables (empty without LinkBench measurements).
pub(in crate::report) fn summaries_of(m: &ReportModel) -> &[LinkbenchSummary] {
    match m.suites.get(SUITE) {
        Some(SuiteTables::Linkbench(s)) => s,
        _ => &[],
    }
}

/// One summary per client count with LinkBench measurements.
fn summaries(m: &ReportModel) -> Vec<LinkbenchSummary> {
    let (rows, clients, targets) = m.suite_scope(SUITE);
    clients
        .into_iter()
        .map(|c| {
            let mut steps: Vec<(u32, &str)> = (rows.iter())
                .filter(|r| r.clients == c && r.group == REQUEST_GROUP)
                .map(|r| (r.step_index, r.step.as_str()))
                .collect();
            steps.sort_unstable();
            steps.dedup();
            let steps: Vec<&str> = steps.into_iter().map(|(_, s)| s).collect();
            LinkbenchSummary {
                clients: c,
                load: (targets.iter()).filter_map(|t| load(m, t, c)).collect(),
                requests: (steps.iter())
                    .flat_map(|s| targets.iter().filter_map(move |t| request(m, t, s, c)))
                    .collect(),
                operations: (steps.iter())
                    .flat_map(|s| targets.iter().flat_map(move |t| operations(m, t, s, c)))
                    .collect(),
            }
        })
        .collect()
}

/// The base `target` is compared with (in a compare: its run-A twin).
fn base_of<'a>(m: &'a ReportModel, target: &str) -> &'a str {
    (m.targets.iter())
        .find(|t| t.name == target)
        .and_then(|t| t.relative_to.as_deref())
        .unwrap_or(&m.base)
}

/// The operation types of `target`'s `step` over its non-failed repeats.
fn repeats<'a>(
    m: &'a ReportModel,
    target: &str,
    step: &str,
    clients: u32,
) -> Vec<&'a [OpMeasurement]> {
    (m.measurements.iter())
        .filter(|r| r.target == target && r.step == step && r.clients == clients && !r.failed)
        .map(|r| r.operations.as_slice())
        .collect()
}

/// Mean over repeats of `f` of operation type `op`.
fn op_mean(
    reps: &[&[OpMeasurement]],
    op: &str,
    f: impl Fn(&OpMeasurement) -> Option<f64>,
) -> Option<f64> {
    mean_known(
        reps.iter()
            .map(|ops| ops.iter().find(|o| o.op == op).and_then(&f)),
    )
}

fn load(m: &ReportModel, target: &str, clients: u32) -> Option<LinkbenchLoad> {
    let a = m.aggregate(target, LOAD, clients)?;
    let reps = repeats(m, target, LOAD, clients);
    let rows_of = |op: &str| op_mean(&reps, op, |o| o.units_per_sec);
    let index = m.aggregate(target, INDEX, clients);
    let base = m
        .aggregate(base_of(m, target), LOAD, clients)
        .and_then(|b| b.qps);
    Some(LinkbenchLoad {
        target: target.to_string(),
        nodes_per_sec: rows_of("nodes"),
        links_per_sec: rows_of("links"),
        counts_per_sec: rows_of("counts"),
        rows_per_sec: a.qps,
        relative: a
            .qps
            .zip(base)
            .filter(|(_, b)| *b > 0.0)
            .map(|(r, b)| r / b),
        load_secs: a.seconds,
        server_cpu_us_per_row: a.get(Metric::ServerCpu),
        index_secs: index.and_then(|i| i.seconds),
        size_after_load: a.whole(Metric::DbSize),
        size_after_index: index.and_then(|i| i.whole(Metric::DbSize)),
    })
}

fn request(m: &ReportModel, target: &str, step: &str, clients: u32) -> Option<LinkbenchRequest> {
    let a = m.aggregate(target, step, clients)?;
    let reps = repeats(m, target, step, clients);
    let base = m
        .aggregate(base_of(m, target), step, clients)
        .and_then(|b| b.qps);
    Some(LinkbenchRequest {
        step: step.to_string(),
        target: target.to_string(),
        requests_per_sec: a.qps,
        relative: a
            .qps
            .zip(base)
            .filter(|(_, b)| *b > 0.0)
            .map(|(r, b)| r / b),
        server_cpu_us_per_request: a.get(Metric::ServerCpu),
        cs_per_request: a.get(Metric::Cs),
        write_kb_per_request: a.get(Metric::WriteKb),
        size_after: a.whole(Metric::DbSize),
        p99_us: (OPS.iter())
            .map(|op| op_mean(&reps, op, |o| o.latency_us.map(|l| l.p99)))
            .collect(),
    })
}

fn operations(m: &ReportModel, target: &str, step: &str, clients: u32) -> Vec<LinkbenchOp> {
    let reps = repeats(m, target, step, clients);
    let total = |ops: &[OpMeasurement]| ops.iter().map(|o| o.operations).sum::<u64>();
    (OPS.iter())
        .filter(|op| reps.iter().any(|ops| ops.iter().any(|o| o.op == **op)))
        .map(|op| {
            let lat = |f: fn(&crate::results::Latency) -> f64| {
                op_mean(&reps, op, move |o| o.latency_us.map(|l| f(&l)))
            };
            let share = mean_known(reps.iter().map(|ops| {
                let n = ops.iter().find(|o| o.op == *op)?.operations;
                let t = total(ops);
                (t > 0).then(|| 100.0 * n as f64 / t as f64)
            }));
            LinkbenchOp {
                step: step.to_string(),
                target: target.to_string(),
                op: op.to_string(),
                ops_per_sec: op_mean(&reps, op, |o| o.ops_per_sec),
                share_percent: share,
                p50_us: lat(|l| l.p50),
                p95_us: lat(|l| l.p95),
                p99_us: lat(|l| l.p99),
                max_us: lat(|l| l.max),
                mean_us: lat(|l| l.mean),
                rows_per_op: op_mean(&reps, op, |o| {
                    (o.operations > 0).then(|| o.rows as f64 / o.operations as f64)
                }),
            }
        })
        .collect()
}

fn text(t: impl Into<String>) -> Cell {
    Cell {
        text: t.into(),
        tone: Tone::Plain,
    }
}

/// Latency in ms with 2 decimals.
fn ms(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |us| format!("{:.2}", us / 1000.0))
}

fn mb(v: Option<u64>) -> String {
    v.map_or("n/a".into(), |b| format!("{:.0}", b as f64 / 1e6))
}

fn secs(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |s| format!("{s:.1}"))
}

fn grid(header: &[&str]) -> Grid {
    Grid {
        header: header.iter().map(|h| h.to_string()).collect(),
        right: (0..header.len()).map(|i| i > 0).collect(),
        rows: Vec::new(),
    }
}

fn load_table(s: &LinkbenchSummary) -> Grid {
    let mut g = grid(&[
        "target",
        "nodes/s",
        "links/s",
        "counts/s",
        "rows/s",
        "relative",
        "load s",
        "CPU µs/row",
        "index s",
        "MB after load",
        "MB after index",
    ]);
    for l in &s.load {
        g.rows.push(vec![
            text(l.target.clone()),
            text(rate(l.nodes_per_sec)),
            text(rate(l.links_per_sec)),
            text(rate(l.counts_per_sec)),
            text(rate(l.rows_per_sec)),
            rel_cell(l.relative, None),
            text(secs(l.load_secs)),
            text(
                l.server_cpu_us_per_row
                    .map_or("n/a".into(), |v| format!("{v:.2}")),
            ),
            text(secs(l.index_secs)),
            text(mb(l.size_after_load)),
            text(mb(l.size_after_index)),
        ]);
    }
    g
}

fn request_table(s: &LinkbenchSummary) -> Grid {
    let mut header = vec![
        "step",
        "target",
        "requests/s",
        "relative",
        "CPU µs/req",
        "cs/req",
        "KB written/req",
        "MB after",
    ];
    header.extend(OPS);
    let mut g = grid(&header);
    g.right[1] = false;
    for r in &s.requests {
        let mut row = vec![
            text(r.step.clone()),
            text(r.target.clone()),
            text(rate(r.requests_per_sec)),
            rel_cell(r.relative, None),
            text(
                r.server_cpu_us_per_request
                    .map_or("n/a".into(), |v| format!("{v:.1}")),
            ),
            text(r.cs_per_request.map_or("n/a".into(), |v| format!("{v:.2}"))),
            text(
                r.write_kb_per_request
                    .map_or("n/a".into(), |v| format!("{v:.2}")),
            ),
            text(mb(r.size_after)),
        ];
        row.extend(r.p99_us.iter().map(|p| text(ms(*p))));
        g.rows.push(row);
    }
    g
}

fn operations_table(s: &LinkbenchSummary) -> Grid {
    let mut g = grid(&[
        "step", "target", "op", "per sec", "% of req", "p50 ms", "p95 ms", "p99 ms", "max ms",
        "mean ms", "rows/op",
    ]);
    g.right[1] = false;
    g.right[2] = false;
    for o in &s.operations {
        g.rows.push(vec![
            text(o.step.clone()),
            text(o.target.clone()),
            text(o.op.clone()),
            text(rate(o.ops_per_sec)),
            text(o.share_percent.map_or("n/a".into(), |v| format!("{v:.2}"))),
            text(ms(o.p50_us)),
            text(ms(o.p95_us)),
            text(ms(o.p99_us)),
            text(ms(o.max_us)),
            text(ms(o.mean_us)),
            text(o.rows_per_op.map_or("n/a".into(), |v| format!("{v:.1}"))),
        ]);
    }
    g
}

/// The tables of each summary, for every format.
fn blocks(m: &ReportModel, doc: &mut Vec<Block>) {
    for s in summaries_of(m) {
        doc.push(Block::Heading(format!(
            "LinkBench, clients = {}",
            s.clients
        )));
        let base = match &m.compare {
            Some(_) => "each run-B target's run-A twin".to_string(),
            None => m.base.clone(),
        };
        if !s.load.is_empty() {
            doc.push(Block::SubHeading(format!(
                "Load: rows per second (nodes + links + counts; relative to {base}), the id1_type index build, database size after each"
            )));
            doc.push(Block::Table(load_table(s)));
        }
        if !s.requests.is_empty() {
            doc.push(Block::SubHeading(format!(
                "Requests: requests per second (relative to {base}), server CPU, context switches and device KB written per request, size after the step, and the p99 (ms) of each operation type"
            )));
            doc.push(Block::Table(request_table(s)));
            doc.push(Block::SubHeading(
                "Per operation type: rate, share of the requests, latency (ms; means over repeats) and rows returned or changed per operation (getlinklist: LinkBench's RANGE_SIZE)"
                    .into(),
            ));
            doc.push(Block::Table(operations_table(s)));
        }
    }
}
