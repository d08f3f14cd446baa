//! The first screen of every human-readable report: what was compared (one line per target
//! with its build), the decided steps that changed by name (regressions, then improvements,
//! with ratio, interval or range and the cost that decided them), one line counting the rest,
//! and one line saying what would decide it.
//!
//! Owns the wording and order of those blocks. It must not decide anything: every fact is
//! `ReportModel::summary` (`answer`), every verdict `Relative::deciding`.

use super::doc::Block;
use super::fmt::{interval, plural, two};
use super::model::{ChangedStep, Provenance, ReportModel};

/// The answer's blocks, right under the title.
pub(super) fn blocks(m: &ReportModel, doc: &mut Vec<Block>) {
    let s = &m.summary;
    doc.push(Block::Heading("Answer".into()));
    doc.push(Block::Para("Compared:".into()));
    doc.push(Block::Bullets(s.targets.iter().map(target_line).collect()));
    if s.steps == 0 {
        doc.push(Block::Para(
            "No comparison: relative numbers need at least 2 targets with measurements.".into(),
        ));
        return;
    }
    let several_clients = m.clients.len() > 1;
    for (verdict, title) in [
        ("regression", "Regressions"),
        ("improvement", "Improvements"),
    ] {
        let lines: Vec<String> = (s.changed.iter())
            .filter(|c| c.deciding.verdict == verdict)
            .map(|c| changed_line(c, several_clients))
            .collect();
        if !lines.is_empty() {
            doc.push(Block::Para(format!("{title} ({}):", lines.len())));
            doc.push(Block::Bullets(lines));
        }
    }
    if s.changed.is_empty() {
        doc.push(Block::Para("No step changed beyond the noise.".into()));
    }
    doc.push(Block::Para(format!(
        "Of {}: {} changed, {} unchanged, {} undecided.",
        plural(s.steps as usize, "compared step"),
        s.changed.len(),
        s.unchanged,
        s.undecided
    )));
    if !s.to_decide.is_empty() {
        doc.push(Block::Para(format!(
            "What would decide the rest: {}.",
            s.to_decide.join("; ")
        )));
    }
}

/// `pg17 vs pg15: PostgreSQL 17.10 on …, compiled by gcc …, 64-bit; fetched by dbdelta
/// (version = "17")`; the compiler said apart only when the version string says none.
fn target_line(p: &Provenance) -> String {
    let role = match &p.base {
        Some(b) => format!("{} vs {b}", p.target),
        None => format!("{} (base)", p.target),
    };
    let version = p
        .server_version
        .as_deref()
        .unwrap_or("version not recorded");
    let mut line = format!("{role}: {} {version}", p.engine);
    if let Some(c) = (p.compiler.as_deref()).filter(|_| !version.contains("compiled by")) {
        line.push_str(&format!(", compiled by {c}"));
    }
    if let Some(f) = p
        .cflags
        .as_deref()
        .map(code_flags)
        .filter(|f| !f.is_empty())
    {
        line.push_str(&format!(" ({f})"));
    }
    line.push_str(&format!("; {}", p.source));
    line
}

/// The compiler flags that shape the code (`-O2`, `-Os`, `-march=…`, `-f…`, `-D…`), the
/// warnings (`-W…`) and debug information (`-g`) left out; the targets table has them all.
fn code_flags(flags: &str) -> String {
    let shapes = |f: &&str| !f.starts_with("-W") && !f.starts_with("-g");
    let mut kept: Vec<&str> = Vec::new();
    for f in flags.split_whitespace().filter(shapes) {
        if !kept.contains(&f) {
            kept.push(f);
        }
    }
    kept.join(" ")
}

/// `update-one, pg17 vs pg15: instructions/op 1.32 (range 1.30–1.34)`.
fn changed_line(c: &ChangedStep, several_clients: bool) -> String {
    let d = &c.deciding;
    let clients = match several_clients {
        true => format!(" ({})", plural(c.clients as usize, "client")),
        false => String::new(),
    };
    let better = match d.cost.as_str() {
        "QPS" => "> 1 is faster",
        _ => "< 1 is cheaper",
    };
    format!(
        "{}{clients}, {} vs {}: {} {} ({} {}; {better})",
        c.step,
        c.target,
        c.base,
        d.cost,
        two(d.ratio),
        d.interval_kind,
        interval(d.interval)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_screen_keeps_the_flags_that_shape_the_code() {
        let debian = "-Wall -Wmissing-prototypes -Werror=vla -fno-strict-aliasing -fwrapv -g -g -O2 \
                      -fstack-protector-strong -Wformat -fno-omit-frame-pointer";
        assert_eq!(
            code_flags(debian),
            "-fno-strict-aliasing -fwrapv -O2 -fstack-protector-strong -fno-omit-frame-pointer"
        );
        assert_eq!(
            code_flags("-Wall -Os -DMAP_HUGETLB=0x40000"),
            "-Os -DMAP_HUGETLB=0x40000"
        );
        assert_eq!(code_flags("-Wall -g"), "");
    }
}
