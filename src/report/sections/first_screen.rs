//! The first screen of every human-readable report: what was compared (one line per target
//! with its build), the decided steps that changed by name (regressions, then improvements,
//! with ratio, interval or range and the cost that decided them), the counted steps whose QPS
//! says otherwise (with both), which metric decides and what a paired ratio is (when it
//! matters), one line counting the rest, and one line saying what would decide it.
//!
//! Owns the wording and order of those blocks. It must not decide anything: every fact is
//! `ReportModel::summary` (`answer`), every verdict `Relative::deciding`.

use super::super::doc::Block;
use super::super::fmt::{interval, plural, two};
use super::super::model::{ChangedStep, Deciding, Disagreement, Provenance, ReportModel};

/// The answer's blocks, right under the title.
pub(in crate::report) fn blocks(m: &ReportModel, doc: &mut Vec<Block>) {
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
            .map(|c| changed_line(m, c, several_clients))
            .collect();
        if !lines.is_empty() {
            doc.push(Block::Para(format!("{title} ({}):", lines.len())));
            doc.push(Block::Bullets(lines));
        }
    }
    if s.changed.is_empty() {
        doc.push(Block::Para("No step changed beyond the noise.".into()));
    }
    if !s.disagree.is_empty() {
        doc.push(Block::Para(format!(
            "QPS says otherwise ({}; the verdict follows the instructions, which host noise \
             cannot move):",
            s.disagree.len()
        )));
        let lines = (s.disagree.iter()).map(|d| disagreement_line(d, several_clients));
        doc.push(Block::Bullets(lines.collect()));
    }
    if let Some(rule) = deciding_rule(m) {
        doc.push(Block::Para(rule));
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

/// `update-one, pg17 vs pg15: instructions/op 1.32 (range 1.30–1.34; < 1 is cheaper)`; a QPS
/// or CPU/op ratio (a geometric mean of paired ratios) with the ratio of the means beside it
/// when that lies outside the interval.
fn changed_line(m: &ReportModel, c: &ChangedStep, several_clients: bool) -> String {
    let d = &c.deciding;
    let means = means_beside(m, c).map_or(String::new(), |v| {
        format!("; ratio of the means {}", two(v))
    });
    format!(
        "{}, {} vs {}: {}{means})",
        step_at(&c.step, c.clients, several_clients),
        c.target,
        c.base,
        cost_text(d, false).trim_end_matches(')')
    )
}

/// The ratio of the means of a step decided by a paired test, where it lies outside the test's
/// interval: there a reader of the tables' means would take the verdict's ratio for an error
/// (1.26 beside 35,494 → 35,755).
fn means_beside(m: &ReportModel, c: &ChangedStep) -> Option<f64> {
    let r = m.relative_of(&c.target, &c.step, c.clients)?;
    let means = m.ratio_of_means(r, &c.deciding.cost)?;
    let [low, high] = c.deciding.interval;
    (means < low || means > high).then_some(means)
}

/// `point-query, pg17 vs pg16: QPS regression 0.91 (interval 0.87–0.95; > 1 is faster), but
/// instructions/op within noise 1.00 (range 0.99–1.01; < 1 is cheaper)`.
fn disagreement_line(d: &Disagreement, several_clients: bool) -> String {
    format!(
        "{}, {} vs {}: {}, but {}",
        step_at(&d.step, d.clients, several_clients),
        d.target,
        d.base,
        cost_text(&d.other, true),
        cost_text(&d.followed, true)
    )
}

/// `QPS 1.11 (interval 1.07–1.15; > 1 is faster)`, with the verdict after the cost when asked.
fn cost_text(d: &Deciding, verdict: bool) -> String {
    let better = match d.cost.as_str() {
        "QPS" => "> 1 is faster",
        _ => "< 1 is cheaper",
    };
    let said = match verdict {
        true => format!(" {}", d.verdict),
        false => String::new(),
    };
    format!(
        "{}{said} {} ({} {}; {better})",
        d.cost,
        two(d.ratio),
        d.interval_kind,
        interval(d.interval)
    )
}

/// `update-one` or `update-one (4 clients)`.
fn step_at(step: &str, clients: u32, several_clients: bool) -> String {
    match several_clients {
        true => format!("{step} ({})", plural(clients as usize, "client")),
        false => step.to_string(),
    }
}

/// Which metric decided the changed steps, said once when they were not all decided by the
/// same one or CPU/op decided some (their QPS was no decision), with why; and what a QPS or
/// CPU/op ratio is, where the ratio of the means beside one lies outside its interval.
fn deciding_rule(m: &ReportModel) -> Option<String> {
    let changed = &m.summary.changed;
    let mut costs: Vec<(&str, usize)> = Vec::new();
    for c in changed {
        match costs.iter_mut().find(|(k, _)| *k == c.deciding.cost) {
            Some((_, n)) => *n += 1,
            None => costs.push((&c.deciding.cost, 1)),
        }
    }
    let paired = changed.iter().any(|c| means_beside(m, c).is_some());
    let mut out = Vec::new();
    if costs.len() > 1 || costs.iter().any(|(k, _)| *k == "CPU/op") {
        let each: Vec<String> = (costs.iter())
            .map(|(k, n)| format!("{} by {k}", plural(*n, "step")))
            .collect();
        out.push(format!(
            "Each step's verdict follows its instructions/op where it was counted (host noise \
             cannot move a count), else its QPS where that is a decision, else its server CPU/op \
             (steadier than QPS where a shared host or fsync makes QPS swing): here {}.",
            each.join(", ")
        ));
    }
    if paired {
        out.push(
            "A QPS or CPU/op ratio here is the geometric mean of the repeats' paired ratios \
             (target / base, repeat by repeat), which the test judges; the means the tables \
             show give another ratio when repeats swing, as here."
                .into(),
        );
    }
    (!out.is_empty()).then(|| out.join(" "))
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
