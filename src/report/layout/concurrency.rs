//! The load and concurrency sections: the load summary, the clients grids (QPS and ratio at
//! each client count), and the step and target grids the result tables share.
//!
//! Must not: compute statistics (read them from the model), emit ANSI codes or Markdown, or do
//! any I/O.

use super::cell::verdict_cell;
use crate::report::doc::{Block, Cell, ChartRef, Grid, NA, mb, rate, rel_cell, thousands};
use crate::report::model::{Aggregate, ReportModel};

pub(super) fn load(m: &ReportModel, doc: &mut Vec<Block>) {
    doc.push(Block::Heading("Load".into()));
    if m.loads.is_empty() {
        doc.push(Block::Para(crate::report::suites::no_load_text(m).into()));
        return;
    }
    let several_clients = m.loads.iter().any(|l| l.clients != m.loads[0].clients);
    let several_suites = m.loads.iter().any(|l| l.suite != m.loads[0].suite);
    let several_repeats = m.loads.iter().any(|l| l.repeats > 1);
    let mut grid = Grid::default();
    let mut col = |name: &str, right: bool| {
        grid.header.push(name.into());
        grid.right.push(right);
    };
    col("target", false);
    if several_suites {
        col("suite", false);
    }
    if several_clients {
        col("clients", true);
    }
    if several_repeats {
        col("repeats", true);
    }
    for (name, right) in [
        ("rows", true),
        ("load s", true),
        ("rows/s", true),
        ("index s", true),
        ("size MB", true),
    ] {
        col(name, right);
    }
    for l in &m.loads {
        let mut row = vec![Cell::plain(&l.target)];
        if several_suites {
            row.push(Cell::plain(&l.suite));
        }
        if several_clients {
            row.push(Cell::plain(l.clients.to_string()));
        }
        if several_repeats {
            row.push(Cell::plain(l.repeats.to_string()));
        }
        row.push(Cell::plain(thousands(
            l.tables as f64 * l.rows_per_table as f64,
        )));
        row.push(Cell::plain(format!("{:.1}", l.load_secs)));
        match &l.reused {
            // A copy of a saved load: its seconds are the copy's, no rows/s, no index build.
            Some(_) => row.extend([Cell::plain("reused"), Cell::plain("-")]),
            None => {
                row.push(Cell::plain(rate(l.rows_per_sec)));
                row.push(Cell::plain(format!("{:.1}", l.index_secs)));
            }
        }
        row.push(Cell::plain(mb(l.db_size_bytes)));
        grid.rows.push(row);
    }
    doc.push(Block::Table(grid));
    let reused: Vec<String> = (m.loads.iter())
        .filter_map(|l| l.reused.as_ref().map(|r| format!("{}: {r}", l.target)))
        .collect();
    if !reused.is_empty() {
        doc.push(Block::Para(format!(
            "\"reused\": the load was copied from a saved one (reuse_load); its load s is the copy's time. {}.",
            reused.join("; ")
        )));
    }
}

/// An empty table with two left-aligned label columns and a column per client count.
fn clients_grid(m: &ReportModel, labels: [&str; 2]) -> Grid {
    Grid {
        header: labels
            .map(String::from)
            .into_iter()
            .chain(m.clients.iter().map(|c| clients_header(*c)))
            .collect(),
        right: [false, false]
            .into_iter()
            .chain(m.clients.iter().map(|_| true))
            .collect(),
        rows: Vec::new(),
    }
}

/// `1\nclient`, `4\nclients`: a client count as a two-line column header.
fn clients_header(c: u32) -> String {
    if c == 1 {
        "1\nclient".to_string()
    } else {
        format!("{c}\nclients")
    }
}

/// With a client sweep: per group, each step's and the group's QPS against clients, the group
/// ratios and verdicts per compared target, the crossover sentences and the chart.
pub(super) fn concurrency(m: &ReportModel, doc: &mut Vec<Block>) {
    if m.group_qps.is_empty() {
        return;
    }
    doc.push(Block::Heading("Concurrency: QPS against clients".into()));
    doc.push(Block::Para(
        "Per group: each step's QPS (mean over repeats) by client count, the group's QPS (the \
         geometric mean of its steps' QPS), each compared target's group QPS relative to its base \
         with its verdict when there are repeats, and whether it crosses over (see Notes)."
            .into(),
    ));
    for group in &m.step_groups {
        if !m.group_qps.iter().any(|g| g.group == group.id) {
            continue;
        }
        doc.push(Block::SubHeading(format!(
            "QPS against clients, {}",
            group.title
        )));
        doc.push(Block::Table(clients_qps_table(m, group)));
        if let Some(grid) = clients_ratio_table(m, &group.id) {
            doc.push(Block::Para(format!(
                "Group QPS relative to {} (> 1 is faster):",
                m.base_label()
            )));
            doc.push(Block::Table(grid));
            let sentences: Vec<String> = m
                .crossovers
                .iter()
                .filter(|c| c.group == group.id)
                .map(|c| c.sentence.clone())
                .collect();
            doc.push(Block::Bullets(sentences));
        }
        doc.push(Block::Figures {
            title: None,
            charts: vec![ChartRef::ClientsQps {
                group: group.id.clone(),
            }],
            note: None,
        });
    }
}

/// Rows of (step, target) then (`(geo mean)`, target); a column per client count.
fn clients_qps_table(m: &ReportModel, group: &crate::report::model::StepGroup) -> Grid {
    let shown = m.shown_targets();
    let mut grid = clients_grid(m, ["step", "target"]);
    for step in &group.steps {
        if !m
            .clients
            .iter()
            .any(|c| shown.iter().any(|t| m.aggregate(t, step, *c).is_some()))
        {
            continue;
        }
        for (i, t) in shown.iter().enumerate() {
            let mut row = vec![
                Cell::plain(if i == 0 { step.as_str() } else { "" }),
                Cell::plain(*t),
            ];
            for &c in &m.clients {
                row.push(Cell::plain(rate(
                    m.aggregate(t, step, c).and_then(|a| a.qps),
                )));
            }
            grid.rows.push(row);
        }
    }
    for t in &shown {
        let mut row = vec![Cell::plain("(geo mean)"), Cell::plain(*t)];
        for &c in &m.clients {
            row.push(Cell::plain(rate(
                m.group_qps_of(t, &group.id, c).and_then(|g| g.qps),
            )));
        }
        grid.rows.push(row);
    }
    grid
}

/// Per compared target: its group QPS ratio per client count and, with repeats, the verdicts.
fn clients_ratio_table(m: &ReportModel, group: &str) -> Option<Grid> {
    let rows: Vec<&crate::report::model::Crossover> =
        m.crossovers.iter().filter(|c| c.group == group).collect();
    if rows.is_empty() {
        return None;
    }
    let mut grid = clients_grid(m, ["target / base", "group QPS"]);
    for x in rows {
        let tested = x.points.iter().any(|p| p.qps_test.is_some());
        let mut ratios = vec![
            Cell::plain(format!("{} / {}", x.target, x.base)),
            Cell::plain("ratio"),
        ];
        let mut verdicts = vec![Cell::plain(""), Cell::plain("verdict")];
        for p in &x.points {
            // Coloured only when it is a verdict; the qualifiers (may be below the minimum
            // effect, unstable) are in the JSON.
            let cell = rel_cell(p.ratio, p.qps_test.as_ref().map(|t| t.verdict.as_str()));
            match &p.qps_test {
                Some(t) => {
                    let mut v = verdict_cell(t, m.method.min_effect);
                    v.text = t.verdict.clone();
                    verdicts.push(v);
                }
                None => verdicts.push(Cell::plain(if p.ratio.is_some() {
                    "no verdict"
                } else {
                    NA
                })),
            }
            ratios.push(cell);
        }
        grid.rows.push(ratios);
        if tested {
            grid.rows.push(verdicts);
        }
    }
    Some(grid)
}

/// Steps measured at `clients` by any shown target, in report order.
pub(super) fn steps_at(m: &ReportModel, clients: u32) -> Vec<&str> {
    let shown = m.shown_targets();
    m.step_groups
        .iter()
        .flat_map(|g| g.steps.iter())
        .filter(|s| shown.iter().any(|t| m.aggregate(t, s, clients).is_some()))
        .map(String::as_str)
        .collect()
}

/// Whether any shown target's aggregate of the step is client-bound, and whether any was
/// measured while its server settled.
pub(super) fn any_flag(m: &ReportModel, step: &str, clients: u32) -> (bool, bool) {
    let shown = m.shown_targets();
    let any = |f: fn(&Aggregate) -> bool| {
        (shown.iter()).any(|t| m.aggregate(t, step, clients).is_some_and(f))
    };
    (any(|a| a.client_bound), any(|a| a.settling))
}

pub(super) fn base_header(m: &ReportModel, t: &str) -> String {
    if m.is_base(t) {
        format!("{t}\n(base)")
    } else {
        t.to_string()
    }
}

/// An empty table with a left-aligned `step` column followed by right-aligned value columns.
pub(super) fn step_grid(columns: impl IntoIterator<Item = String>) -> Grid {
    let columns: Vec<String> = columns.into_iter().collect();
    Grid {
        right: std::iter::once(false)
            .chain(columns.iter().map(|_| true))
            .collect(),
        header: std::iter::once("step".to_string()).chain(columns).collect(),
        rows: Vec::new(),
    }
}

/// `step_grid` with one column per shown target (the base marked).
pub(super) fn targets_grid(m: &ReportModel, shown: &[&str]) -> Grid {
    step_grid(shown.iter().map(|t| base_header(m, t)))
}
