//! The report's layout, independent of output format: which sections, paragraphs and tables a
//! human-readable report has, in what order, with every number already formatted.
//!
//! Owns section order, table contents, number formatting and the better/worse tone of relative
//! cells. It must not compute new statistics (read them from the model), emit ANSI codes or
//! Markdown syntax (that is `text` and `markdown`), or do any I/O.

use super::doc::{
    Block, CB, COARSE, Cell, ChartRef, Grid, MAX, NA, NOISY, SETTLING, SHORT, Tone, mb, metric,
    micros, rate, rel_cell, thousands,
};
use super::fmt::{interval, percent, plural, rough_percent, two};
use super::model::{Aggregate, MetricTest, Relative, ReportModel, TargetSummary, WithinStep};
use crate::results::metrics::{CostTable, Device, METRICS, MetricDef};
use crate::results::{HostInfo, Metric};

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

/// The run's facts, the targets and builds tables and each target's differences from its
/// base (the build first).
fn header(m: &ReportModel, doc: &mut Vec<Block>) {
    doc.push(Block::Heading("Run and targets".into()));
    doc.push(Block::Bullets(run_facts(m)));
    doc.push(Block::Table(targets_table(m)));
    version_lines(m, doc);
    builds_table(m, doc);
    let diffs: Vec<String> = m
        .targets
        .iter()
        .filter(|t| t.relative_to.is_some())
        .map(|t| difference(m, t))
        .collect();
    if !diffs.is_empty() {
        doc.push(Block::Para(format!(
            "Differences from the base ({}):",
            m.base_label()
        )));
        doc.push(Block::Bullets(diffs));
    }
}

/// The run's facts: id, start and status, host, CPUs, dbdelta version, base, a compare's two
/// runs and the most repeats.
fn run_facts(m: &ReportModel) -> Vec<String> {
    let r = &m.run;
    let status = match (&r.finished, r.complete) {
        (Some(f), true) => format!("finished {f}, complete"),
        (Some(f), false) => format!("finished {f}, INCOMPLETE"),
        (None, _) => "INCOMPLETE (not finished)".to_string(),
    };
    let h = &r.host;
    let mut facts = vec![
        format!(
            "run {}, started {}, {status}{}",
            r.id,
            r.started,
            if r.quick { ", --quick scale" } else { "" }
        ),
        format!(
            "host: {}, {} cores, {:.1} GiB memory, kernel {}",
            h.cpu_model,
            h.cores,
            h.memory_bytes as f64 / (1u64 << 30) as f64,
            h.kernel
        ),
        cpus_text(h),
        format!("dbdelta {}", r.dbdelta_version),
        format!("base: {}", m.base_label()),
    ];
    if let Some(c) = &m.compare {
        for (side, r) in [("A", &c.a), ("B", &c.b)] {
            facts.push(format!(
                "run {side} = {} ({}), started {}{}",
                r.id,
                r.lab,
                r.started,
                if r.complete { "" } else { ", INCOMPLETE" }
            ));
        }
    }
    if m.max_repeats > 1 {
        facts.push(format!("repeats: up to {}", m.max_repeats));
    }
    facts.extend(invocation_facts(m));
    facts
}

/// A resumed run: one line per invocation of `dbdelta run` saying which cells it ran (none for
/// a run that ran in one go).
fn invocation_facts(m: &ReportModel) -> Vec<String> {
    let inv = &m.run.invocations;
    if inv.len() < 2 {
        return Vec::new();
    }
    inv.iter()
        .map(|i| {
            let how = if i.number == 1 { "run" } else { "run --resume" };
            let end = match &i.finished {
                Some(f) => format!("finished {f}"),
                None => "cut off".to_string(),
            };
            let cells = match i.cells.as_slice() {
                [] => "no cell".to_string(),
                c => format!("cells {}", c.join(", ")),
            };
            format!(
                "invocation {} ({how}), started {}, {end}: {cells}",
                i.number, i.started
            )
        })
        .collect()
}

/// Width a whole server version is broken to in the targets table (its lines end in `\n`,
/// which text draws as lines of one cell and the other formats as spaces).
const VERSION_WIDTH: usize = 44;

/// `text` with its words' spaces turned into line breaks where a line would pass `width`.
fn break_lines(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        let len = word.chars().count();
        if line > 0 && line + 1 + len > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += len;
    }
    out
}

/// Each target's engine, whole server version (broken into lines), config and status.
fn targets_table(m: &ReportModel) -> Grid {
    let mut grid = Grid {
        header: ["target", "engine", "server version", "config", "status"]
            .map(String::from)
            .to_vec(),
        right: vec![false; 5],
        rows: Vec::new(),
    };
    for t in &m.targets {
        let version =
            (t.server_version.as_deref()).map_or(NA.into(), |v| break_lines(v, VERSION_WIDTH));
        // A target that failed in one cell (a server that did not start for one repeat) still
        // has its other cells' numbers: say so rather than "FAILED".
        let measured = m
            .measurements
            .iter()
            .any(|x| x.target == t.name && !x.failed);
        // A target with no step at all never ran: an interrupted run stopped before it.
        let ran = m.measurements.iter().any(|x| x.target == t.name);
        let not_run = match m.run.complete {
            true => "not run",
            false => "not run (run interrupted)",
        };
        let status = match (t.is_base, t.failed, measured) {
            (true, false, _) if !ran => format!("base, {not_run}"),
            (false, false, _) if !ran => not_run.to_string(),
            (true, false, _) => "base".into(),
            (true, true, false) => "base, FAILED".into(),
            (true, true, true) => "base, FAILED in part".into(),
            (false, true, false) => "FAILED".into(),
            (false, true, true) => "FAILED in part".into(),
            (false, false, _) => "ok".into(),
        };
        grid.rows.push(vec![
            Cell::plain(&t.name),
            Cell::plain(&t.engine),
            Cell::plain(version),
            Cell::plain(match &t.connect {
                Some(url) => format!("connect {url}"),
                None => t.config_name.clone().unwrap_or_else(|| "-".into()),
            }),
            Cell::plain(status),
        ]);
    }
    grid
}

/// What each target's program (or SQLite library) said of its own version when its server
/// first started, with the compiler `Answer` has; nothing for targets not read (older runs,
/// running servers, other hosts).
fn version_lines(m: &ReportModel, doc: &mut Vec<Block>) {
    let lines: Vec<String> = (m.summary.targets.iter())
        .filter_map(|p| {
            let compiler = match &p.compiler {
                Some(c) => format!("compiled by {c}"),
                None => "no compiler named in the binary".into(),
            };
            Some(format!(
                "{}: {}; {compiler}",
                p.target,
                p.version_line.as_deref()?
            ))
        })
        .collect();
    if !lines.is_empty() {
        doc.push(Block::Para(
            "Builds as they say of themselves (--version; the compiler from the binary's .comment, else the version string):"
                .into(),
        ));
        doc.push(Block::Bullets(lines));
    }
}

/// A compared target's differences from its base, as one bullet: config, settings (the first
/// ten) and environment; in a compare, the base is named.
fn difference(m: &ReportModel, t: &TargetSummary) -> String {
    let mut parts = build_difference(m, t);
    if !t.config_diff.is_empty() {
        parts.push(format!("config {}", t.config_diff.join("; ")));
    }
    if !t.settings_diff.is_empty() {
        let order = match t.settings_diff.len() {
            n if n > MAX_SETTINGS => {
                format!("({n} differ; what the lab set and what shapes performance first) ")
            }
            _ => String::new(),
        };
        parts.push(format!("settings {order}{}", settings_diff(t).join("; ")));
    }
    if !t.env_diff.is_empty() {
        let e: Vec<String> = t
            .env_diff
            .iter()
            .map(|d| match &d.target {
                Some(v) => format!("{}={v}", d.key),
                None => format!(
                    "{} unset (base: {})",
                    d.key,
                    d.base.as_deref().unwrap_or("")
                ),
            })
            .collect();
        parts.push(format!("env {}", e.join("; ")));
    }
    if parts.is_empty() {
        parts.push("same build; no config, settings or environment difference".into());
    }
    match t.relative_to.as_deref() {
        Some(b) if m.compare.is_some() => format!("{} (vs {b}): {}", t.name, parts.join("; ")),
        _ => format!("{}: {}", t.name, parts.join("; ")),
    }
}

/// How a target's build differs from its base's: version, compiler, flags, source (each only
/// when it differs).
fn build_difference(m: &ReportModel, t: &TargetSummary) -> Vec<String> {
    let of = |name: &str| m.summary.targets.iter().find(|p| p.target == name);
    let (Some(p), Some(base)) = (of(&t.name), t.relative_to.as_deref().and_then(of)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut differ = |what: &str, b: Option<&str>, v: Option<&str>| {
        if b != v {
            out.push(format!(
                "{what} {} → {}",
                b.unwrap_or("(unknown)"),
                v.unwrap_or("(unknown)")
            ));
        }
    };
    let version = |p: &super::model::Provenance| {
        (p.server_version.as_deref()).map(|v| v.split(" on ").next().unwrap_or(v).to_string())
    };
    differ(
        "build: version",
        version(base).as_deref(),
        version(p).as_deref(),
    );
    differ("compiler", base.compiler.as_deref(), p.compiler.as_deref());
    differ("cflags", base.cflags.as_deref(), p.cflags.as_deref());
    differ("source", Some(&base.source), Some(&p.source));
    if !out.is_empty() && !out[0].starts_with("build") {
        out[0] = format!("build: {}", out[0]);
    }
    out
}

/// How many setting differences a report lists (the JSON has all).
const MAX_SETTINGS: usize = 10;

/// The first ten setting differences (`key base → target`), then how many more there are.
fn settings_diff(t: &TargetSummary) -> Vec<String> {
    let mut s: Vec<String> = t
        .settings_diff
        .iter()
        .take(MAX_SETTINGS)
        .map(|d| {
            format!(
                "{} {} → {}",
                d.key,
                d.base.as_deref().unwrap_or("(unset)"),
                d.target.as_deref().unwrap_or("(unset)")
            )
        })
        .collect();
    if t.settings_diff.len() > MAX_SETTINGS {
        s.push(format!(
            "and {} more (see the JSON report)",
            t.settings_diff.len() - MAX_SETTINGS
        ));
    }
    s
}

/// Where each target's server and client threads ran: the placement and its CPU lists.
fn placement_table(m: &ReportModel, doc: &mut Vec<Block>) {
    doc.push(Block::Para(
        "CPU placement (lab keys placement, server_cpus, client_cpus; \"not pinned\": the scheduler's choice):"
            .into(),
    ));
    let mut grid = Grid {
        header: ["target", "placement", "server CPUs", "client CPUs"]
            .map(String::from)
            .to_vec(),
        right: vec![false; 4],
        rows: Vec::new(),
    };
    for t in &m.targets {
        let server = match &t.server_cpus {
            Some(s) => s.clone(),
            None if super::model::in_process(&t.engine) => "none (in-process)".into(),
            None => "not pinned".into(),
        };
        grid.rows.push(vec![
            Cell::plain(&t.name),
            Cell::plain(&t.placement),
            Cell::plain(server),
            Cell::plain(t.client_cpus.as_deref().unwrap_or("not pinned")),
        ]);
    }
    doc.push(Block::Table(grid));
}

/// How each compiled target was built (`build = {…}`): variant, flags, compiler, the main
/// binary's text size, build time and, for PGO, what the profile was trained on.
fn builds_table(m: &ReportModel, doc: &mut Vec<Block>) {
    let built: Vec<_> = m
        .targets
        .iter()
        .filter_map(|t| t.build.as_ref().map(|b| (t, b)))
        .collect();
    if built.is_empty() {
        return;
    }
    doc.push(Block::Para(
        "Builds (dbdelta build; text: size of the main binary's .text section; time: every stage, PGO training included):"
            .into(),
    ));
    let mut grid = Grid {
        header: [
            "target", "variant", "source", "compiler", "cflags", "ldflags", "text", "time",
        ]
        .map(String::from)
        .to_vec(),
        right: vec![false, false, false, false, false, false, true, true],
        rows: Vec::new(),
    };
    for (t, b) in &built {
        grid.rows.push(vec![
            Cell::plain(&t.name),
            Cell::plain(&b.variant),
            Cell::plain(&b.source_version),
            Cell::plain(&b.compiler),
            Cell::plain(if b.cflags.is_empty() { "-" } else { &b.cflags }),
            Cell::plain(if b.ldflags.is_empty() {
                "-"
            } else {
                &b.ldflags
            }),
            Cell::plain(
                b.text_bytes
                    .map_or(NA.into(), |n| format!("{:.2} MB", n as f64 / 1e6)),
            ),
            Cell::plain(format!("{:.0} s", b.build_secs)),
        ]);
    }
    doc.push(Block::Table(grid));
    let trained: Vec<String> = built
        .iter()
        .filter_map(|(t, b)| {
            b.training
                .as_ref()
                .map(|tr| format!("{}: trained on {tr}", t.name))
        })
        .collect();
    if !trained.is_empty() {
        doc.push(Block::Bullets(trained));
    }
}

fn load(m: &ReportModel, doc: &mut Vec<Block>) {
    doc.push(Block::Heading("Load".into()));
    if m.loads.is_empty() {
        doc.push(Block::Para(super::suites::no_load_text(m).into()));
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
fn concurrency(m: &ReportModel, doc: &mut Vec<Block>) {
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
fn clients_qps_table(m: &ReportModel, group: &super::model::StepGroup) -> Grid {
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
    let rows: Vec<&super::model::Crossover> =
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
fn steps_at(m: &ReportModel, clients: u32) -> Vec<&str> {
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
fn any_flag(m: &ReportModel, step: &str, clients: u32) -> (bool, bool) {
    let shown = m.shown_targets();
    let any = |f: fn(&Aggregate) -> bool| {
        (shown.iter()).any(|t| m.aggregate(t, step, clients).is_some_and(f))
    };
    (any(|a| a.client_bound), any(|a| a.settling))
}

fn base_header(m: &ReportModel, t: &str) -> String {
    if m.is_base(t) {
        format!("{t}\n(base)")
    } else {
        t.to_string()
    }
}

/// An empty table with a left-aligned `step` column followed by right-aligned value columns.
fn step_grid(columns: impl IntoIterator<Item = String>) -> Grid {
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
fn targets_grid(m: &ReportModel, shown: &[&str]) -> Grid {
    step_grid(shown.iter().map(|t| base_header(m, t)))
}

/// The results at one client count: relative and verdict tables (with 2+ targets), within-step
/// and pre/post tables, absolute QPS, scan rate, costs, latency with throughput charts, and
/// memory and size.
fn results(m: &ReportModel, clients: u32, doc: &mut Vec<Block>) {
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
        super::instructions::tables(m, clients, doc);
        super::why::section(m, clients, doc);
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
fn costs() -> Vec<(&'static MetricDef, CostTable)> {
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
        v => rel_cell(v, r.cost_verdict(d.metric)),
    }
}

/// The cost tables of the device IO metrics (`device`: the diagnostics) or of the others.
fn cost_tables(m: &ReportModel, clients: u32, steps: &[&str], doc: &mut Vec<Block>, device: bool) {
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
                    r.and_then(Relative::qps_verdict),
                ));
            }
            grid.rows.push(row);
        }
        type Stat = fn(&super::model::GroupSummary) -> Option<f64>;
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
    let cells: Vec<Option<super::model::Decided>> = (m.compared.iter())
        .map(|t| m.group_of(t, group, clients).and_then(|g| g.decided))
        .collect();
    if cells.iter().all(Option::is_none) {
        return;
    }
    let mut row = vec![Cell::plain("(decided)")];
    row.extend(
        cells
            .into_iter()
            .map(|d| Cell::plain(d.map_or(NA.to_string(), |d| super::fmt::of(d.decided, d.steps)))),
    );
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

/// A q-value: 3 significant digits, `<0.001` below.
fn q_value(q: f64) -> String {
    if q < 0.001 {
        "<0.001".into()
    } else {
        format!("{q:.3}")
    }
}

fn verdict_cell(t: &MetricTest, min_effect: f64) -> Cell {
    let mut text = t.verdict.clone();
    if t.verdict == "unchanged" {
        text.push_str(&format!(" (no change of {} or more)", percent(min_effect)));
    } else if t.may_be_below_min_effect {
        text.push_str(&format!(" (may be < {})", percent(min_effect)));
    } else if t.verdict == "within noise" && beyond_detectable(t) {
        // Said of its own numbers: a ratio as large as the detectable change that was not
        // called is one the repeats disagree on, never "a change that could not be seen".
        text.push_str(&format!(
            " (the repeats disagree: its interval {} includes 1, no change)",
            interval(t.ci)
        ));
    } else if t.verdict == "within noise" {
        text.push_str(&format!(
            " (a change below {} could not be seen)",
            rough_percent(t.detectable)
        ));
    }
    if t.unstable {
        text.push_str(", unstable");
    }
    if t.uneven_load {
        text.push_str(", uneven load");
    }
    let tone = match t.verdict.as_str() {
        "regression" => Tone::Worse,
        "improvement" => Tone::Better,
        _ => Tone::Plain,
    };
    Cell { text, tone }
}

/// The step's ratio moved at least as far as the change it could have seen, or that change is
/// 10× or more: either way its repeats disagree, and "a change below D could not be seen" would
/// contradict the ratio beside it.
fn beyond_detectable(t: &MetricTest) -> bool {
    t.detectable >= 9.0 || t.geo_mean.ln().abs() >= (1.0 + t.detectable).ln()
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
    match test {
        Some(t) => {
            // Coloured only when it is a verdict: a large but noisy ratio is plain.
            let ratio = rel_cell(Some(t.geo_mean), Some(&t.verdict));
            row.extend([
                Cell::plain(t.paired_repeats.to_string()),
                ratio,
                Cell::plain(interval(t.ci)),
                Cell::plain(q_value(t.q)),
                verdict_cell(t, m.method.min_effect),
            ]);
        }
        None => {
            let coarse = cost
                && r.below_resolution
                    .iter()
                    .any(|f| f == "server_cpu_us_per_op");
            let ratio = if coarse { COARSE } else { NA };
            row.extend(["", ratio, "", "", "no verdict"].map(Cell::plain));
        }
    }
    row
}

/// One table per compared target: per step a QPS row and a server CPU/op row with the geometric
/// mean ratio, its adjusted interval, q and verdict.
fn verdict_tables(m: &ReportModel, clients: u32, doc: &mut Vec<Block>) {
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
            "Geometric mean of the paired ratios; interval adjusted for the {} steps of each family \
             ({}); q = Benjamini–Hochberg adjusted p; a change needs q ≤ {} and the whole interval \
             beyond ±{}.",
            rows.len(),
            levels(&rows),
            m.method.fdr_q,
            percent(m.method.min_effect)
        )));
        let mut grid = Grid {
            header: ["step", "metric", "n", "ratio", "interval", "q", "verdict"]
                .map(String::from)
                .to_vec(),
            right: vec![false, false, true, true, true, true, false],
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
fn within_step_table(m: &ReportModel, clients: u32, doc: &mut Vec<Block>) {
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

#[cfg(test)]
mod tests {
    #[test]
    fn unbounded_intervals_are_capped() {
        assert_eq!(super::interval([0.88, 0.94]), "0.88–0.94");
        assert_eq!(super::interval([1.0e-9, 4.2e40]), "<0.01–>100");
        assert_eq!(super::interval([0.011, 99.0]), "0.01–99.00");
    }

    use super::*;

    #[test]
    fn relative_cells_are_coloured_only_by_a_verdict() {
        let worse = rel_cell(Some(0.91), Some("regression"));
        assert_eq!((worse.text.as_str(), worse.tone), ("0.91-", Tone::Worse));
        // A cost that fell: below 1, and better.
        let cheaper = rel_cell(Some(0.30), Some("improvement"));
        assert_eq!(
            (cheaper.text.as_str(), cheaper.tone),
            ("0.30-", Tone::Better)
        );
        let faster = rel_cell(Some(1.03), Some("improvement"));
        assert_eq!((faster.text.as_str(), faster.tone), ("1.03+", Tone::Better));
        // Large ratios without a called change are plain and unmarked.
        for verdict in [None, Some("within noise")] {
            let c = rel_cell(Some(8.48), verdict);
            assert_eq!((c.text.as_str(), c.tone), ("8.48", Tone::Plain));
        }
        assert_eq!(rel_cell(None, Some("improvement")).tone, Tone::Plain);
        assert_eq!(rel_cell(Some(0.9504), Some("regression")).text, "0.95-");
        assert_eq!(rel_cell(None, None).text, "n/a");
    }

    #[test]
    fn number_formats() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(rate(Some(12345.6)), "12,346");
        assert_eq!(rate(Some(42.25)), "42.2");
        assert_eq!(rate(None), "n/a");
        assert_eq!(micros(850.2), "850");
        assert_eq!(micros(12345.0), "12k");
        assert_eq!(micros(2500.0), "2.5k");
        assert_eq!(micros(1_500_000.0), "1.5M");
        assert_eq!(mb(Some(52_428_800)), "52.4");
    }
}
