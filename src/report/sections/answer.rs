//! The report's answer (`ReportModel::summary`): what was compared and where each build came
//! from, the decided steps that changed with the cost that decided them, the rest counted, and
//! what would decide it, measured from this run's own noise.
//!
//! Owns those facts and the sentences of "what would decide the rest". It reads verdicts
//! (`Relative::deciding`, the one place a step's verdict comes from) and must not compute a
//! test, format a table or do I/O; the lab text it reads is data, never a path.

use super::super::fmt::{percent, plural, rough_percent};
use super::super::model::{
    ChangedStep, Disagreement, Provenance, Relative, ReportModel, Summary, is_decided,
};
use crate::results::{Metric, RunData};

/// The summary of a built model; `data` gives the lab text (where each build came from).
pub(in crate::report) fn summary(model: &ReportModel, data: &RunData) -> Summary {
    let lab: Option<toml::Table> = data.run.lab_text.parse().ok();
    let targets = (model.targets.iter())
        .map(|t| provenance(t, lab.as_ref()))
        .collect();
    let mut changed: Vec<ChangedStep> = Vec::new();
    for verdict in ["regression", "improvement"] {
        for r in &model.relative {
            if let Some(d) = r.deciding().filter(|d| d.verdict == verdict) {
                changed.push(ChangedStep {
                    target: r.target.clone(),
                    base: r.base.clone(),
                    step: r.step.clone(),
                    clients: r.clients,
                    deciding: d,
                });
            }
        }
    }
    let undecided: Vec<&Relative> = (model.relative.iter())
        .filter(|r| !r.step_verdict().is_some_and(is_decided))
        .collect();
    let unchanged = (model.relative.iter())
        .filter(|r| r.step_verdict() == Some("unchanged"))
        .count();
    Summary {
        targets,
        changed,
        steps: model.relative.len() as u32,
        unchanged: unchanged as u32,
        undecided: undecided.len() as u32,
        to_decide: to_decide(model, &undecided),
        disagree: disagree(model),
    }
}

/// The counted steps whose QPS verdict tells another story than their instructions/op.
fn disagree(model: &ReportModel) -> Vec<Disagreement> {
    (model.relative.iter())
        .filter_map(|r| {
            Some(Disagreement {
                target: r.target.clone(),
                base: r.base.clone(),
                step: r.step.clone(),
                clients: r.clients,
                other: r.qps_disagrees()?,
                followed: r.deciding()?,
            })
        })
        .collect()
}

/// A target's build: its whole version string, the compiler (from `dbdelta build`, else the
/// binary's ELF `.comment` read at run time, else the version string's "compiled by"), its
/// program's version line, and where it came from (the lab's keys for it).
fn provenance(t: &super::super::model::TargetSummary, lab: Option<&toml::Table>) -> Provenance {
    let read = t.provenance.as_ref();
    let compiler = match &t.build {
        Some(b) if !b.compiler.is_empty() => Some(b.compiler.clone()),
        _ => (read.and_then(|p| p.compiler()))
            .or_else(|| t.server_version.as_deref().and_then(compiled_by)),
    };
    Provenance {
        target: t.name.clone(),
        base: t.relative_to.clone(),
        engine: t.engine.clone(),
        server_version: t.server_version.clone(),
        compiler,
        version_line: read.and_then(|p| p.version_line.clone()),
        cflags: (t.build.as_ref())
            .map(|b| b.cflags.clone())
            .or_else(|| read.and_then(|p| p.build_flags.clone())),
        source: source(t, lab),
    }
}

/// `gcc (Debian 12.2.0-14) 12.2.0` from PostgreSQL's `version()`: `… compiled by X, 64-bit`.
pub(in crate::report) fn compiled_by(version: &str) -> Option<String> {
    let rest = version.split_once("compiled by ")?.1;
    let end = rest.rfind(", ").unwrap_or(rest.len());
    Some(rest[..end].trim().to_string()).filter(|c| !c.is_empty())
}

/// Where a target's server came from, in a few words.
fn source(t: &super::super::model::TargetSummary, lab: Option<&toml::Table>) -> String {
    if let Some(b) = &t.build {
        return format!("built here by dbdelta build ({}, {})", b.variant, b.source);
    }
    if let Some(url) = &t.connect {
        return format!("a running server (connect {url})");
    }
    if t.in_process {
        return format!("the {} library compiled into dbdelta", t.engine_title);
    }
    // A compare names targets NAME@A: the lab's target is NAME.
    // An explanation's twin runs the build of the target it copies.
    let name = t.name.split('@').next().unwrap_or(&t.name);
    let targets = lab.and_then(|l| l.get("target")).and_then(|v| v.as_array());
    let find = |name: &str| {
        (targets?.iter()).find(|e| e.get("name").and_then(|n| n.as_str()) == Some(name))
    };
    let entry = find(name).or_else(|| crate::results::twin_of(name).and_then(find));
    let key = |k: &str| entry.and_then(|e| e.get(k)).and_then(|v| v.as_str());
    let debian = t.server_version.as_deref().and_then(debian_package);
    match (key("version"), key("bin"), key("host"), debian) {
        (Some(v), ..) => format!("fetched by dbdelta (version = \"{v}\")"),
        (_, Some(bin), _, Some(d)) => format!("{d} ({bin})"),
        (_, Some(bin), ..) => format!("bin = {bin}"),
        (_, _, Some(host), _) => format!("on host {host}"),
        (.., Some(d)) => format!("{d} (this host's install)"),
        _ => "this host's install".into(),
    }
}

/// "Debian package X" from a server version string that names one: PostgreSQL's
/// `… (Debian 16.4-1.pgdg120+1)`, MariaDB's and MySQL's `10.11.6-MariaDB-0+deb12u1` (Debian's
/// revision, `+debNuM`, appended to the version).
fn debian_package(version: &str) -> Option<String> {
    if let Some((pkg, _)) = version
        .split_once("(Debian ")
        .and_then(|(_, r)| r.split_once(')'))
    {
        return Some(format!("Debian package {pkg}"));
    }
    let word = version.split_whitespace().find(|w| w.contains("+deb"))?;
    Some(format!("Debian package {word}"))
}

/// What would decide the undecided steps, measured: the repeats the detectable change asks
/// for, `--instructions` when nothing was counted, `placement = "shared"` for wake-up-bound
/// steps, longer steps for short ones.
fn to_decide(m: &ReportModel, undecided: &[&Relative]) -> Vec<String> {
    if undecided.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let counted = |r: &Relative| r.tests.spread(Metric::ServerInstr).is_some();
    // A counted step's verdict is its instructions': timed repeats do not decide it.
    let (by_count, timed): (Vec<&Relative>, Vec<&Relative>) =
        undecided.iter().partition(|r| counted(r));
    if let Some(line) = min_effect_would(m, &by_count) {
        out.push(line);
    }
    let unmeasurable = (by_count.iter())
        .filter(|r| r.step_verdict() == Some("unmeasurable"))
        .count();
    if unmeasurable > 0 {
        out.push(format!(
            "{} unmeasurable: the counting passes disagree by more than half (see the instructions table)",
            plural(unmeasurable, "counted step")
        ));
    }
    if let Some(line) = wide_pairs(&by_count) {
        out.push(line);
    }
    if timed.is_empty() {
        return out;
    }
    let tested: Vec<&Relative> = timed
        .iter()
        .copied()
        .filter(|r| r.qps_test.is_some())
        .collect();
    if m.max_repeats < 2 && m.method.test != "none" {
        out.push(
            "--repeats 3 (or repeats = \"auto\"): one repeat gives no QPS or CPU/op verdict".into(),
        );
    } else if let Some(line) = more_repeats(m, &tested) {
        out.push(line);
    }
    if !m.relative.iter().any(counted) {
        out.push(
            "--instructions: a verdict on instructions/op from one repeat, which host noise cannot move"
                .into(),
        );
    }
    let aggregates = |f: fn(&super::super::model::Aggregate) -> bool| {
        (timed.iter())
            .filter(|r| {
                [&r.base, &r.target]
                    .iter()
                    .any(|t| m.aggregate(t, &r.step, r.clients).is_some_and(f))
            })
            .count()
    };
    let wakeup = aggregates(|a| a.wakeup_bound);
    if wakeup > 0 {
        out.push(format!(
            "placement = \"shared\": {} wake-up-bound (client and server waking each other across CPUs)",
            was(wakeup)
        ));
    }
    let short = aggregates(|a| a.within_step.as_ref().is_some_and(|w| w.too_short));
    if short > 0 {
        out.push(format!(
            "longer steps (--time, or the suite's read_secs/write_secs): {} ran shorter than {} whole seconds",
            plural(short, "undecided step"),
            m.method.min_step_seconds
        ));
    }
    let no_event = timed.iter().filter(|r| r.unmeasurable.is_some()).count();
    if no_event > 0 {
        out.push(format!(
            "{} with a repeat that completed no event (see the warnings): longer steps, or a look at its errors",
            plural(no_event, "undecided step")
        ));
    }
    out
}

/// Counted steps within noise whose range holds 1 (a side's pairs of passes spread widely):
/// how wide, where, and that more pairs narrow the interval.
fn wide_pairs(counted: &[&Relative]) -> Option<String> {
    let wide: Vec<(&Relative, f64, &str)> = (counted.iter())
        .filter_map(|r| Some((r, r.tests.spread(Metric::ServerInstr)?)))
        .filter(|(_, t)| t.verdict == "within noise" && t.range[0] <= 1.0 && t.range[1] >= 1.0)
        .map(|(r, t)| match t.base_spread >= t.target_spread {
            true => (*r, t.base_spread, r.base.as_str()),
            false => (*r, t.target_spread, r.target.as_str()),
        })
        .collect();
    let (r, spread, side) = wide.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(format!(
        "{} within noise by instructions, their pairs of passes spreading up to ±{:.1}% ({}: \
         {side}): more pairs (the lab's instruction_passes) narrow the interval where the \
         passes' own cost varies",
        plural(wide.len(), "counted step"),
        100.0 * spread,
        r.step
    ))
}

/// Counted steps whose range excludes 1 but reaches inside the minimum effect: the
/// `--min-effect` that would call them all (the smallest distance of a range from 1, rounded
/// down to a tenth of a percent).
fn min_effect_would(m: &ReportModel, counted: &[&Relative]) -> Option<String> {
    let near: Vec<f64> = (counted.iter())
        .filter_map(|r| r.tests.spread(Metric::ServerInstr))
        .filter(|t| t.verdict == "within noise" && (t.range[0] > 1.0 || t.range[1] < 1.0))
        .map(|t| (t.range[0] - 1.0).abs().min((t.range[1] - 1.0).abs()))
        .collect();
    let least = near.iter().copied().reduce(f64::min)?;
    let effect = (least * 1000.0).floor() / 1000.0;
    (effect > 0.0).then(|| {
        format!(
            "--min-effect {}: {} moved beyond the passes' range but by less than the minimum effect ({})",
            percent(effect),
            plural(near.len(), "counted step"),
            percent(m.method.min_effect)
        )
    })
}

/// `1 undecided step was`, `3 undecided steps were`.
fn was(n: usize) -> String {
    let verb = if n == 1 { "was" } else { "were" };
    format!("{} {verb}", plural(n, "undecided step"))
}

/// Repeats needed for a paired test to see the minimum effect, from the detectable change at
/// the repeats it had (the detectable change shrinks as 1/√n): the median over the undecided
/// steps with a QPS test.
fn more_repeats(m: &ReportModel, tested: &[&Relative]) -> Option<String> {
    let mut need: Vec<(f64, u32, f64)> = (tested.iter())
        .filter_map(|r| r.qps_test.as_ref())
        .filter(|t| t.paired_repeats >= 2 && t.detectable > 0.0)
        .map(|t| {
            let scale = (1.0 + t.detectable).ln() / (1.0 + m.method.min_effect).ln();
            (
                t.paired_repeats as f64 * scale * scale,
                t.paired_repeats,
                t.detectable,
            )
        })
        .collect();
    if need.is_empty() {
        return None;
    }
    need.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (n, had, detectable) = need[need.len() / 2];
    let total = n.ceil().max(had as f64 + 1.0);
    let more = total as u64 - had as u64;
    let why = format!(
        "the median undecided step could see a change of {} at {had} repeats; {} needs about {total}",
        rough_percent(detectable),
        percent(m.method.min_effect)
    );
    Some(match more {
        0..=20 => format!(
            "{} ({why}); repeats = \"auto\" adds them to the undecided steps only",
            plural(more as usize, "more repeat")
        ),
        _ => format!(
            "more repeats will not do at this noise (the median undecided step could not see a change below \
             {} at {had} repeats)",
            rough_percent(detectable)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An explanation's twins (`T-again`, `T-twinN`) run T's build: their source is T's, not
    /// "this host's install" (a twins' run's lab names only T).
    #[test]
    fn a_twin_is_said_to_come_from_its_targets_build() {
        let lab: toml::Table =
            "[[target]]\nname = \"pg17\"\nengine = \"postgres\"\nversion = \"17\"\n"
                .parse()
                .unwrap();
        for name in ["pg17", "pg17-again", "pg17-twin3"] {
            let t = super::super::super::model::TargetSummary {
                name: name.into(),
                engine: "postgres".into(),
                ..Default::default()
            };
            assert_eq!(
                source(&t, Some(&lab)),
                "fetched by dbdelta (version = \"17\")",
                "{name}"
            );
        }
        let other = super::super::super::model::TargetSummary {
            name: "pg17-twinx".into(),
            engine: "postgres".into(),
            ..Default::default()
        };
        assert_eq!(source(&other, Some(&lab)), "this host's install");
    }

    #[test]
    fn the_compiler_is_read_from_postgres_version_string() {
        let v = "PostgreSQL 17.10 on x86_64-pc-linux-gnu, compiled by gcc (Ubuntu 7.5.0-3ubuntu1~18.04) 7.5.0, 64-bit";
        assert_eq!(
            compiled_by(v).as_deref(),
            Some("gcc (Ubuntu 7.5.0-3ubuntu1~18.04) 7.5.0")
        );
        assert_eq!(compiled_by("8.0.31"), None);
    }

    #[test]
    fn a_debian_package_is_read_from_each_familys_version_string() {
        let pg =
            "PostgreSQL 16.4 (Debian 16.4-1.pgdg120+1) on x86_64-pc-linux-gnu, compiled by gcc";
        assert_eq!(
            debian_package(pg).as_deref(),
            Some("Debian package 16.4-1.pgdg120+1")
        );
        assert_eq!(
            debian_package("10.11.6-MariaDB-0+deb12u1").as_deref(),
            Some("Debian package 10.11.6-MariaDB-0+deb12u1")
        );
        assert_eq!(debian_package("8.0.31"), None);
        assert_eq!(
            debian_package("PostgreSQL 17.10 on x86_64-pc-linux-gnu"),
            None
        );
    }
}
