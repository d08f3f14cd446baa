//! The report's layout, independent of output format: which sections, paragraphs and tables a
//! human-readable report has, in what order, with every number already formatted.
//!
//! Owns section order, table contents, number formatting and the better/worse tone of relative
//! cells. It must not compute new statistics (read them from the model), emit ANSI codes or
//! Markdown syntax (that is `text` and `markdown`), or do any I/O.
//!
//! This file keeps the document's order and the blocks shared by sections; `header` (run facts,
//! targets, placement, builds), `concurrency` (load, clients grids, the shared step grids),
//! `results` (the tables at one client count) and `verdicts` (verdict and within-step tables)
//! hold the sections.

mod cell;
mod concurrency;
mod header;
mod results;
#[cfg(test)]
mod tests;
mod verdicts;

use super::doc::{Block, CB, COARSE, Cell, NA, SETTLING};
use super::model::ReportModel;
use crate::results::{HostInfo, Metric};
use concurrency::{concurrency, load, steps_at};
use header::{header, placement_table};
use results::{cost_tables, results};

/// A step's name with its flags: client-bound, measured while a server settled.
fn step_label(step: &str, (client_bound, settling): (bool, bool)) -> Cell {
    let mut label = step.to_string();
    if client_bound {
        label.push_str(CB);
    }
    if settling {
        label.push_str(SETTLING);
    }
    Cell::plain(label)
}

/// The whole human-readable report.
pub fn document(m: &ReportModel) -> Vec<Block> {
    let mut doc = Vec::new();
    doc.push(Block::Title(match &m.compare {
        Some(_) => format!("dbdelta compare: {}", m.run.lab),
        None => format!("dbdelta report: {}", m.run.lab),
    }));
    super::first_screen::blocks(m, &mut doc);
    doc.push(Block::Heading("tl;dr".into()));
    if m.tldr.is_empty() {
        doc.push(Block::Para(
            "No comparison: relative numbers need at least 2 targets with measurements.".into(),
        ));
    } else {
        doc.push(Block::Bullets(m.tldr.clone()));
    }
    if let Some(p) = no_verdicts(m) {
        doc.push(Block::Para(p));
    }
    header(m, &mut doc);
    load(m, &mut doc);
    for section in super::suites::SECTIONS {
        section.blocks(m, &mut doc);
    }
    concurrency(m, &mut doc);
    super::by_version::blocks(m, &mut doc);
    for &clients in &m.clients {
        results(m, clients, &mut doc);
    }
    super::profile::blocks(m, &mut doc);
    doc.push(Block::Heading("Warnings".into()));
    if m.warnings.is_empty() {
        doc.push(Block::Para("None.".into()));
    } else {
        doc.push(Block::Bullets(m.warnings.clone()));
    }
    diagnostics(m, &mut doc);
    doc.push(Block::Heading("Notes".into()));
    let mut notes = m.notes.clone();
    notes.push(format!(
        "{NA}: the value could not be computed (no ops, metric not available on this host or engine, or the step \
         did not run). \"{}\" after a step: flagged client-bound (see warnings). {COARSE}: a ratio of two values \
         too coarse to compare (see above).",
        CB.trim()
    ));
    if m.aggregates.iter().any(|a| a.settling) {
        notes.push(format!(
            "\"{}\" after a step: a server was still settling before its steps (its own CPU or writes while \
             idle, dirty pages draining, autovacuum): see the warnings for the evidence and how long to wait.",
            SETTLING.trim()
        ));
    }
    notes.push(
        "Latency cells: k = thousand, M = million µs. MB = 10^6 bytes, GiB = 2^30 bytes.".into(),
    );
    doc.push(Block::Bullets(notes));
    leave_out_empty_tables(&mut doc);
    doc
}

/// The diagnostic tables, after the warnings: where each target's threads ran and, per client
/// count, the device IO costs (what the device saw, the engine's own IO or not).
fn diagnostics(m: &ReportModel, doc: &mut Vec<Block>) {
    doc.push(Block::Heading("Diagnostics".into()));
    placement_table(m, doc);
    for &clients in &m.clients {
        let steps = steps_at(m, clients);
        let at = doc.len();
        cost_tables(m, clients, &steps, doc, true);
        if m.clients.len() > 1 && doc.len() > at {
            doc.insert(at, Block::Para(format!("Clients = {clients}:")));
        }
    }
}

/// Whether a cell says nothing: `n/a`, `n/a / n/a`, `-` or empty.
fn says_nothing(text: &str) -> bool {
    text.replace(NA, "")
        .chars()
        .all(|c| c.is_whitespace() || matches!(c, '/' | '-' | '–'))
}

/// A table whose every cell after the first column says nothing is left out with the heading
/// that names it; one line where the first was says which were left out.
fn leave_out_empty_tables(doc: &mut Vec<Block>) {
    let mut left_out: Vec<String> = Vec::new();
    let mut first_at = None;
    let mut i = 0;
    while i < doc.len() {
        let empty = match &doc[i] {
            Block::Table(g) => {
                !g.rows.is_empty()
                    && (g.rows.iter()).all(|r| r.iter().skip(1).all(|c| says_nothing(&c.text)))
            }
            _ => false,
        };
        if !empty {
            i += 1;
            continue;
        }
        doc.remove(i);
        let title = match i.checked_sub(1).map(|j| &doc[j]) {
            Some(Block::SubHeading(t)) => Some(t.clone()),
            Some(Block::Para(t)) if t.ends_with(':') => Some(t.clone()),
            _ => None,
        };
        if let Some(t) = title {
            i -= 1;
            doc.remove(i);
            let name = t.split([':', '(']).next().unwrap_or(&t).trim();
            left_out.push(name.to_string());
        } else {
            left_out.push("a table".into());
        }
        first_at.get_or_insert(i);
    }
    if let Some(at) = first_at {
        doc.insert(
            at,
            Block::Para(format!(
                "Left out, every cell {NA}: {}.",
                left_out.join("; ")
            )),
        );
    }
}

/// Said once, near the top, when a comparison has no QPS verdict at all: why, and what would
/// give verdicts (every relative number below is then plain).
fn no_verdicts(m: &ReportModel) -> Option<String> {
    if m.relative.is_empty() || m.relative.iter().any(|r| r.qps_test.is_some()) {
        return None;
    }
    if m.method.test == "none" {
        return Some(
            "Two separate runs: no verdicts on QPS or CPU/op (the runs were not interleaved, see the notes), \
             so no relative number below is coloured or marked; instructions/op keeps its verdicts."
                .to_string(),
        );
    }
    let why = match m.max_repeats {
        0 | 1 => "1 repeat: no verdicts on QPS or CPU/op".to_string(),
        n => format!(
            "no step has 2 repeats that ran on both sides (up to {n} were planned): no verdicts on QPS or CPU/op"
        ),
    };
    let instructions = (m.relative.iter()).any(|r| r.tests.spread(Metric::ServerInstr).is_some());
    let other = if instructions {
        "; instructions/op has verdicts of its own, from one repeat"
    } else {
        " (or --instructions: a verdict on instructions/op from one repeat)"
    };
    Some(format!(
        "{why}, so no relative number below is coloured or marked. --repeats 3 or repeats = \"auto\" in \
         the lab gives them{other}."
    ))
}

/// The host's CPUs for the header: online and usable lists, then each CPU's package, core and
/// SMT siblings (a summary beyond 16 CPUs).
pub fn cpus_text(h: &HostInfo) -> String {
    if h.online_cpus.is_empty() {
        return "CPUs: not recorded".into();
    }
    let mut out = format!(
        "CPUs: online {}, dbdelta may use {}",
        h.online_cpus, h.usable_cpus
    );
    let t = &h.cpu_topology;
    if t.is_empty() {
        return out;
    }
    if t.len() > 16 {
        let packages: std::collections::BTreeSet<i64> = t.iter().map(|c| c.package).collect();
        let cores: std::collections::BTreeSet<(i64, i64)> =
            t.iter().map(|c| (c.package, c.core)).collect();
        out.push_str(&format!(
            "; topology: {} package(s), {} cores, {} CPUs",
            packages.len(),
            cores.len(),
            t.len()
        ));
        return out;
    }
    // One entry per core, with the CPUs on it (more than one: SMT siblings).
    let mut cores: std::collections::BTreeMap<(i64, i64), crate::cpus::CpuSet> = Default::default();
    for c in t {
        cores
            .entry((c.package, c.core))
            .or_default()
            .insert(c.cpu as usize);
    }
    let each: Vec<String> = cores
        .iter()
        .map(|((package, core), cpus)| {
            let word = if cpus.len() == 1 { "CPU" } else { "CPUs" };
            format!("package {package} core {core} → {word} {cpus}")
        })
        .collect();
    out.push_str(&format!("; topology: {}", each.join("; ")));
    out
}
