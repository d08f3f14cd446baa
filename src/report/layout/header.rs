//! The report's header: the run's facts, the invocations, the targets table with their
//! versions and differences (builds, settings), where each target ran and the builds table.
//!
//! Must not: compute statistics (read them from the model), emit ANSI codes or Markdown, or do
//! any I/O.

use super::cpus_text;
use crate::report::doc::{Block, Cell, Grid, NA};
use crate::report::model::{ReportModel, TargetSummary};

/// The run's facts, the targets and builds tables and each target's differences from its
/// base (the build first).
pub(super) fn header(m: &ReportModel, doc: &mut Vec<Block>) {
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
    let version = |p: &crate::report::model::Provenance| {
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
pub(super) fn placement_table(m: &ReportModel, doc: &mut Vec<Block>) {
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
            None if t.in_process => "none (in-process)".into(),
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
/// binary's text size, build time and, below the table, what a PGO profile was trained on and
/// the configure options a recipe passed beside the flags (MySQL's and MariaDB's CMake).
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
    let notes: Vec<String> = (built.iter())
        .flat_map(|(t, b)| {
            let trained = (b.training.as_ref()).map(|tr| format!("{}: trained on {tr}", t.name));
            let options = (!b.options.is_empty())
                .then(|| format!("{}: configured with {}", t.name, b.options.join(" ")));
            trained.into_iter().chain(options)
        })
        .collect();
    if !notes.is_empty() {
        doc.push(Block::Bullets(notes));
    }
}
