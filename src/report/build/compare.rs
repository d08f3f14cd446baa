//! `dbdelta compare RUN_A RUN_B`: the same steps across two stored runs, as one report model.
//!
//! Owns pairing and the refusals: targets are paired by name, steps by (target, step,
//! clients); runs whose client counts or scale differ are refused. The two runs become one
//! [`RunData`] whose targets are `<target>@A` and `<target>@B`, each `@B` target relative to its
//! `@A` twin, so every renderer draws a compare like any report. It must not read the store or
//! do any I/O (the CLI loads both runs), and must not compute numbers itself: `build` does.

use std::collections::{BTreeMap, BTreeSet};

use super::super::Options;
use super::super::build::{build_with, run_summary};
use super::super::model::{CompareRuns, ReportModel};
use crate::results::{Measurement, RunData, RunInfo, TargetInfo};

/// Why two runs cannot be compared. Each message names both values and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    #[error(
        "compare: RUN_A and RUN_B are both run {run}; name two different runs (`dbdelta list runs`)"
    )]
    SameRun { run: String },
    #[error(
        "compare: runs {a} and {b} have no target name in common (run {a}: {}; run {b}: {}); \
         targets are paired by name, so compare runs of labs that share target names",
        a_targets.join(", "),
        b_targets.join(", ")
    )]
    NoCommonTarget {
        a: String,
        b: String,
        a_targets: Vec<String>,
        b_targets: Vec<String>,
    },
    #[error(
        "compare: run {a} ran with clients = [{}], run {b} with clients = [{}]; compare runs \
         with the same client counts ([lab] clients or --clients)",
        list(a_clients),
        list(b_clients)
    )]
    ClientsDiffer {
        a: String,
        b: String,
        a_clients: Vec<u32>,
        b_clients: Vec<u32>,
    },
    #[error(
        "compare: run {a} loaded {a_tables}×{a_rows} rows per table, run {b} loaded \
         {b_tables}×{b_rows} ({target} {step} at {}); compare runs of the same \
         [suite.sysbench] tables/rows (and both with or both without --quick)",
        clients_word(*clients)
    )]
    ScaleDiffers {
        a: String,
        b: String,
        target: String,
        step: String,
        clients: u32,
        a_tables: u32,
        a_rows: u64,
        b_tables: u32,
        b_rows: u64,
    },
}

fn clients_word(n: u32) -> String {
    if n == 1 {
        "1 client".into()
    } else {
        format!("{n} clients")
    }
}

fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// Label of target `name` of run side `side` (`A` or `B`).
pub fn label(name: &str, side: char) -> String {
    format!("{name}@{side}")
}

type Key<'a> = (&'a str, &'a str, u32);

fn key(m: &Measurement) -> Key<'_> {
    (m.target.as_str(), m.step.as_str(), m.clients)
}

/// Reported (non-warm) measurements of `run` by (target, step, clients): the first row of each.
fn reported(run: &RunData) -> BTreeMap<Key<'_>, &Measurement> {
    let mut out = BTreeMap::new();
    for m in run.measurements.iter().filter(|m| !m.warm) {
        out.entry(key(m)).or_insert(m);
    }
    out
}

fn clients_of(run: &RunData) -> Vec<u32> {
    run.measurements
        .iter()
        .filter(|m| !m.warm)
        .map(|m| m.clients)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The two runs' reported steps, paired: what a compare is assembled from.
struct Pairing<'r> {
    /// Target names in both runs, in run A's order.
    common: Vec<&'r str>,
    /// Run A's and run B's reported measurements by (target, step, clients).
    ra: BTreeMap<Key<'r>, &'r Measurement>,
    rb: BTreeMap<Key<'r>, &'r Measurement>,
    /// The common targets' (target, step, clients) measured in both runs.
    paired: BTreeSet<Key<'r>>,
}

/// Run B relative to run A. Refuses runs that are the same, share no target name, ran at
/// different client counts, or measured a paired step at different scales.
pub fn compare_runs(
    a: &RunData,
    b: &RunData,
    opts: &Options,
    suites: &[&dyn crate::suites::SuiteKind],
) -> Result<ReportModel, CompareError> {
    let p = pair(a, b)?;
    let warnings = warnings(a, b, &p);
    let (data, pairs, runs) = combined(a, b, &p);
    let base = label(p.common[0], 'A');
    let opts = Options {
        separate_runs: true,
        ..opts.clone()
    };
    let mut model = build_with(&data, &base, &pairs, &runs, &opts, suites);
    // A compare pairs each target with its twin: no release order to read along.
    model.by_version.clear();
    model.compare = Some(CompareRuns {
        a: run_summary(&a.run),
        b: run_summary(&b.run),
    });
    model.warnings.extend(warnings);
    model.notes.insert(
        0,
        format!(
            "Compare: run B ({}) relative to run A ({}) for the same target, step and client count: \
             <target>@B / <target>@A (QPS B/A, costs B/A, each the mean over its run's repeats). The \
             runs were not interleaved: whatever changed on the machine between them (other work, \
             caches, its thermal state) is in every ratio, and the noise between repeats of one run \
             cannot measure it (an A/A of two runs of one lab read 1.47× on a step), so QPS and CPU/op \
             get no verdict here and their ratios are shown plain. For a verdict, run both in one \
             lab, where targets are interleaved (A B A B), or count instructions per operation \
             (--instructions): host noise cannot move that count, so its verdicts stand across runs.",
            b.run.id, a.run.id
        ),
    );
    Ok(model)
}

/// Target names of `run`, in its order.
fn names(run: &RunData) -> Vec<&str> {
    run.targets.iter().map(|t| t.name.as_str()).collect()
}

/// Pairs the runs' reported steps by (target, step, clients), refusing (in this order) the
/// same run twice, runs without a common target name, and different client counts or scales.
fn pair<'r>(a: &'r RunData, b: &'r RunData) -> Result<Pairing<'r>, CompareError> {
    let (ida, idb) = (a.run.id.clone(), b.run.id.clone());
    if ida == idb {
        return Err(CompareError::SameRun { run: ida });
    }
    let (names_a, names_b) = (names(a), names(b));
    let common: Vec<&str> = names_a
        .iter()
        .copied()
        .filter(|n| names_b.contains(n))
        .collect();
    if common.is_empty() {
        let owned = |v: Vec<&str>| v.into_iter().map(String::from).collect();
        return Err(CompareError::NoCommonTarget {
            a: ida,
            b: idb,
            a_targets: owned(names_a),
            b_targets: owned(names_b),
        });
    }
    let (clients_a, clients_b) = (clients_of(a), clients_of(b));
    if !clients_a.is_empty() && !clients_b.is_empty() && clients_a != clients_b {
        return Err(CompareError::ClientsDiffer {
            a: ida,
            b: idb,
            a_clients: clients_a,
            b_clients: clients_b,
        });
    }
    let (ra, rb) = (reported(a), reported(b));
    same_scale(&ida, &idb, &ra, &rb, &common)?;
    let paired = ra
        .keys()
        .filter(|k| common.contains(&k.0) && rb.contains_key(*k))
        .copied()
        .collect();
    Ok(Pairing {
        common,
        ra,
        rb,
        paired,
    })
}

/// Refuses the first step of a common target that the runs measured at different scales
/// (tables × rows per table).
fn same_scale(
    ida: &str,
    idb: &str,
    ra: &BTreeMap<Key, &Measurement>,
    rb: &BTreeMap<Key, &Measurement>,
    common: &[&str],
) -> Result<(), CompareError> {
    for (k, ma) in ra.iter().filter(|(k, _)| common.contains(&k.0)) {
        if let Some(mb) = rb.get(k)
            && (ma.tables, ma.rows_per_table) != (mb.tables, mb.rows_per_table)
        {
            return Err(CompareError::ScaleDiffers {
                a: ida.to_string(),
                b: idb.to_string(),
                target: k.0.to_string(),
                step: k.1.to_string(),
                clients: k.2,
                a_tables: ma.tables,
                a_rows: ma.rows_per_table,
                b_tables: mb.tables,
                b_rows: mb.rows_per_table,
            });
        }
    }
    Ok(())
}

/// The compare's own warnings: what was left out, whether anything was paired, and whether
/// the runs ran on different hosts.
fn warnings(a: &RunData, b: &RunData, p: &Pairing) -> Vec<String> {
    let mut warnings = left_out_targets(a, b);
    warnings.extend(left_out_steps(a, b, p));
    if p.paired.is_empty() {
        warnings.push(
            "compare: no step was measured in both runs, so there is nothing to compare".into(),
        );
    }
    if a.run.host != b.run.host {
        let h = |r: &RunInfo| format!("{}, {} cores", r.host.cpu_model, r.host.cores);
        warnings.push(format!(
            "compare: the runs ran on different hosts (A: {}; B: {}): ratios mix the host's \
             difference with the targets'",
            h(&a.run),
            h(&b.run)
        ));
    }
    warnings
}

/// A warning per run that has targets the other run lacks (run A's first).
fn left_out_targets(a: &RunData, b: &RunData) -> Vec<String> {
    let (names_a, names_b) = (names(a), names(b));
    let mut warnings = Vec::new();
    for (run, mine, other) in [
        (&a.run.id, &names_a, &names_b),
        (&b.run.id, &names_b, &names_a),
    ] {
        let only: Vec<&str> = mine
            .iter()
            .copied()
            .filter(|n| !other.contains(n))
            .collect();
        if !only.is_empty() {
            warnings.push(format!(
                "compare: left out target{} only in run {run}: {} (targets are paired by name)",
                if only.len() == 1 { "" } else { "s" },
                only.join(", ")
            ));
        }
    }
    warnings
}

/// A warning per common target and client count with steps measured in only one run (run
/// A's first).
fn left_out_steps(a: &RunData, b: &RunData, p: &Pairing) -> Vec<String> {
    let mut warnings = Vec::new();
    for (run, side) in [(&p.ra, 'A'), (&p.rb, 'B')] {
        let mut unpaired: BTreeMap<(&str, u32), Vec<&str>> = BTreeMap::new();
        for k in run
            .keys()
            .filter(|k| p.common.contains(&k.0) && !p.paired.contains(*k))
        {
            unpaired.entry((k.0, k.2)).or_default().push(k.1);
        }
        for ((target, clients), steps) in unpaired {
            warnings.push(format!(
                "compare: left out {target} at {clients} client{}: {} measured only in run {side} \
                 ({})",
                if clients == 1 { "" } else { "s" },
                steps.join(", "),
                if side == 'A' { &a.run.id } else { &b.run.id },
            ));
        }
    }
    warnings
}

/// Target pairs (`<target>@B` → `<target>@A`) and each label's run, as `build_with` takes them.
type Labels = BTreeMap<String, String>;

/// The combined run: common targets in run A's order, each A then B, with their loads, their
/// paired steps (and warm steps) and those steps' series; and the labels' pairs and runs.
fn combined(a: &RunData, b: &RunData, p: &Pairing) -> (RunData, Labels, Labels) {
    let mut data = RunData {
        run: combined_run(&a.run, &b.run),
        targets: Vec::new(),
        loads: Vec::new(),
        measurements: Vec::new(),
        series: Vec::new(),
        floors: Vec::new(),
    };
    let mut pairs = BTreeMap::new();
    let mut runs = BTreeMap::new();
    for name in &p.common {
        for (run, side) in [(a, 'A'), (b, 'B')] {
            let t = run.targets.iter().find(|t| &t.name == name);
            let t = t.expect("common names come from both runs");
            let renamed = label(name, side);
            data.targets.push(TargetInfo {
                name: renamed.clone(),
                ..t.clone()
            });
            runs.insert(renamed.clone(), run.run.id.clone());
            if side == 'B' {
                pairs.insert(renamed.clone(), label(name, 'A'));
            }
        }
    }
    for (run, side) in [(a, 'A'), (b, 'B')] {
        relabelled_records(run, side, p, &mut data);
    }
    (data, pairs, runs)
}

/// Appends `run`'s loads, measurements, step floors and series of the common targets to `data`,
/// labelled as side `side`: measurements of paired steps (and warm ones), series of paired steps.
fn relabelled_records(run: &RunData, side: char, p: &Pairing, data: &mut RunData) {
    let keep = |t: &str| p.common.contains(&t);
    data.loads
        .extend(
            run.loads
                .iter()
                .filter(|l| keep(&l.target))
                .map(|l| crate::results::LoadResult {
                    target: label(&l.target, side),
                    ..l.clone()
                }),
        );
    data.measurements.extend(
        run.measurements
            .iter()
            .filter(|m| keep(&m.target) && (m.warm || p.paired.contains(&key(m))))
            .map(|m| Measurement {
                target: label(&m.target, side),
                ..m.clone()
            }),
    );
    // A step's floor belongs to the target's build, whichever run it was read with.
    data.floors
        .extend(run.floors.iter().filter(|f| keep(&f.target)).map(|f| {
            crate::results::floors::StepFloor {
                target: label(&f.target, side),
                ..f.clone()
            }
        }));
    data.series.extend(
        run.series
            .iter()
            .filter(|s| {
                p.paired
                    .contains(&(s.target.as_str(), s.step.as_str(), s.clients))
            })
            .map(|s| crate::results::SecondSample {
                target: label(&s.target, side),
                ..s.clone()
            }),
    );
}

fn combined_run(a: &RunInfo, b: &RunInfo) -> RunInfo {
    let both = |x: &str, y: &str| {
        if x == y {
            x.to_string()
        } else {
            format!("{x} vs {y}")
        }
    };
    RunInfo {
        id: format!("{}..{}", a.id, b.id),
        lab: both(&a.lab, &b.lab),
        lab_text: String::new(),
        started: a.started.clone(),
        finished: a.finished.as_ref().and(b.finished.clone()),
        complete: a.complete && b.complete,
        host: a.host.clone(),
        dbdelta_version: both(&a.dbdelta_version, &b.dbdelta_version),
        quick: a.quick || b.quick,
        min_effect: b.min_effect.or(a.min_effect),
        looks: None,
        profiling: b.profiling.clone().or_else(|| a.profiling.clone()),
        invocations: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::fixture::run_two_clients;
    use super::super::super::{Format, compare, render};
    use super::*;
    use crate::results::Metric;

    /// Run A = the two-client fixture; run B = the same lab a day later: pg17 10% faster and
    /// 5% cheaper everywhere, `sqlite.wal` replaced by `sqlite.delete`, `update-one` not run.
    fn runs() -> (RunData, RunData) {
        let a = run_two_clients();
        let mut b = a.clone();
        b.run.id = "20261123-0301".into();
        b.run.started = "2026-11-23T03:01:07Z".into();
        b.targets[2].name = "sqlite.delete".into();
        for m in b.measurements.iter_mut() {
            if m.target == "sqlite.wal" {
                m.target = "sqlite.delete".into();
            }
            if m.target == "pg17" {
                m.qps = m.qps.map(|q| q * 1.1);
                let cpu = m.values.get(Metric::ServerCpu);
                m.values.set(Metric::ServerCpu, cpu.map(|c| c * 0.95));
            }
        }
        b.measurements.retain(|m| m.step != "update-one");
        for l in b.loads.iter_mut().filter(|l| l.target == "sqlite.wal") {
            l.target = "sqlite.delete".into();
        }
        (a, b)
    }

    #[test]
    fn pairs_by_target_step_and_clients_b_over_a() {
        let (a, b) = runs();
        let m = compare(&a, &b).unwrap();
        assert_eq!(m.base, "pg16@A");
        assert_eq!(m.compared, ["pg16@B", "pg17@B"]);
        assert_eq!(m.base_of("pg17@B"), "pg17@A");
        assert_eq!(m.shown_targets(), ["pg16@A", "pg16@B", "pg17@A", "pg17@B"]);
        let r = m.relative_of("pg17@B", "point-query", 4).unwrap();
        assert!((r.qps.unwrap() - 1.1).abs() < 1e-9, "{r:?}");
        assert!((r.ratio(Metric::ServerCpu).unwrap() - 0.95).abs() < 1e-9);
        assert_eq!(r.base, "pg17@A");
        let r = m.relative_of("pg16@B", "point-query", 1).unwrap();
        assert!((r.qps.unwrap() - 1.0).abs() < 1e-12);
        assert!(m.relative_of("pg17@B", "update-one", 1).is_none());
        let g = m.group_of("pg17@B", "point", 1).unwrap();
        assert!((g.median.unwrap() - 1.1).abs() < 1e-9, "{g:?}");
        assert!(
            m.tldr
                .iter()
                .any(|l| l.starts_with("pg17@B vs pg17@A, point queries"))
        );
        let t = m.targets.iter().find(|t| t.name == "pg17@B").unwrap();
        assert_eq!(
            (t.run_id.as_str(), t.relative_to.as_deref()),
            ("20261123-0301", Some("pg17@A"))
        );
        assert!(
            m.targets
                .iter()
                .find(|t| t.name == "pg17@A")
                .unwrap()
                .is_base
        );
        assert_eq!(m.run.id, "20261122-0301..20261123-0301");
        assert_eq!(m.compare.as_ref().unwrap().b.id, "20261123-0301");
    }

    #[test]
    fn separate_runs_get_no_verdict_from_repeats() {
        // Two repeats on each side, pg17 10% faster in each: within one run that pairs into a
        // verdict; across runs the repeats are not pairs.
        let (mut a, mut b) = runs();
        for run in [&mut a, &mut b] {
            let second: Vec<Measurement> = (run.measurements.iter())
                .map(|m| Measurement {
                    repeat: 2,
                    qps: m.qps.map(|q| q * 1.001),
                    ..m.clone()
                })
                .collect();
            run.measurements.extend(second);
        }
        let m = compare(&a, &b).unwrap();
        assert_eq!(m.method.test, "none");
        let r = m.relative_of("pg17@B", "point-query", 4).unwrap();
        assert!((r.qps.unwrap() - 1.1).abs() < 1e-3, "{r:?}");
        assert!(m.relative.iter().all(|r| r.verdict.is_none()
            && r.qps_test.is_none()
            && r.tests.get(Metric::ServerCpu).is_none()));
        assert!(m.notes[0].contains("not interleaved"), "{}", m.notes[0]);
        assert!(
            m.notes
                .iter()
                .any(|n| n.starts_with("No verdict on QPS or CPU/op"))
        );
    }

    #[test]
    fn what_is_left_out_is_a_warning() {
        let (a, b) = runs();
        let w = compare(&a, &b).unwrap().warnings.join("\n");
        assert!(
            w.contains("compare: left out target only in run 20261122-0301: sqlite.wal"),
            "{w}"
        );
        assert!(
            w.contains("compare: left out target only in run 20261123-0301: sqlite.delete"),
            "{w}"
        );
        assert!(
            w.contains("compare: left out pg16 at 1 client: update-one measured only in run A (20261122-0301)"),
            "{w}"
        );
        // Run A's failed target stays a warning, with its log.
        assert!(
            w.contains("target pg17.jemalloc@A failed: server did not accept connections within 30 s (server log: /tmp/dbdelta/20261122-0301/pg17.jemalloc/server.log)"),
            "{w}"
        );
        assert!(
            w.contains("failed (2 steps): connection lost")
                && w.contains("; pg17@B update-index at 4 clients"),
            "{w}"
        );
        assert!(!w.contains("different hosts"));
    }

    #[test]
    fn refuses_different_scale_clients_or_the_same_run() {
        let (a, mut b) = runs();
        for m in b.measurements.iter_mut() {
            m.rows_per_table = 1_000_000;
        }
        assert_eq!(
            compare(&a, &b).unwrap_err().to_string(),
            "compare: run 20261122-0301 loaded 1×100000 rows per table, run 20261123-0301 loaded \
             1×1000000 (pg16 point-query at 1 client); compare runs of the same [suite.sysbench] \
             tables/rows (and both with or both without --quick)"
        );
        let (a, mut b) = runs();
        b.measurements.retain(|m| m.clients == 1);
        assert_eq!(
            compare(&a, &b).unwrap_err().to_string(),
            "compare: run 20261122-0301 ran with clients = [1, 4], run 20261123-0301 with \
             clients = [1]; compare runs with the same client counts ([lab] clients or --clients)"
        );
        let (a, _) = runs();
        assert!(matches!(compare(&a, &a), Err(CompareError::SameRun { .. })));
        let (a, mut b) = runs();
        for t in b.targets.iter_mut() {
            t.name.push('x');
        }
        let e = compare(&a, &b).unwrap_err().to_string();
        assert!(e.contains("no target name in common"), "{e}");
    }

    #[test]
    fn every_format_renders_a_compare() {
        let (a, b) = runs();
        let m = compare(&a, &b).unwrap();
        let text = render(&m, Format::Text, false);
        assert!(
            text.starts_with("dbdelta compare: pg16 vs pg17 vs sqlite"),
            "{text}"
        );
        assert!(text.contains("run B = 20261123-0301"), "{text}");
        assert!(
            text.contains("Relative QPS, point queries (vs run A = 20261122-0301; > 1 is faster)")
        );
        // One repeat on each side: no verdict, so the ratio is plain.
        assert!(text.contains("1.10") && !text.contains("1.10+"), "{text}");
        let md = render(&m, Format::Markdown, false);
        assert!(md.contains("pg17@B"));
        let csv = render(&m, Format::Csv, false);
        let row = csv
            .lines()
            .find(|l| l.contains(",pg17@B,") && l.contains(",point-query,22,4,"))
            .unwrap();
        assert!(
            row.starts_with("20261123-0301,"),
            "the row's own run: {row}"
        );
        assert!(row.contains(",pg17@A,"), "its base: {row}");
    }
}
