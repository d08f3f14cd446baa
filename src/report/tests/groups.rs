//! Report tests: the base, the step groups (order, titles, the suites handed in), the
//! relative and group numbers, and in-process engines.

use crate::results::Metric;

use super::super::fixture::{run_pre_post, run_sweep, run_three_repeats, run_two_clients};
use super::*;

#[test]
fn pre_gives_five_groups_and_pre_post_ratios_without_warm_steps() {
    let m = build(&run_pre_post(), None).unwrap();
    let ids: Vec<&str> = m.step_groups.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(ids, ["point-1", "range-1", "point-2", "range-2", "writes"]);
    assert!(
        m.measurements.iter().all(|r| !r.step.contains(".warm")),
        "warm steps are not reported"
    );
    assert!(m.aggregates.iter().all(|a| a.group != "warm"));
    // range-2 holds scan and the ranges with and without aggregation.
    assert_eq!(
        m.step_groups[3].steps,
        ["scan", "read-only_range=10", "range-covered-pk"]
    );
    let pp = m.pre_post_of("pg16", "point-query", 1).unwrap();
    assert_eq!(pp.pre_step, "point-query.pre");
    assert!((pp.ratio.unwrap() - 0.96).abs() < 1e-9, "{pp:?}");
    let pp = m.pre_post_of("pg17", "random-points_range=100", 1).unwrap();
    assert_eq!(pp.pre_step, "random-points.pre_range=100");
    let expected = 5_400.0 * 0.98 / (6_000.0 * 0.97);
    assert!((pp.ratio.unwrap() - expected).abs() < 1e-9);
    assert_eq!(m.pre_post.len(), 8, "4 paired steps × 2 targets");
    let w = m.warnings.join("\n");
    assert!(
        w.contains("failed: warm step scan.warmpre of pg17 at 1 client: canceling statement"),
        "{w}"
    );
    let scan = m.aggregate("pg17", "scan", 1).unwrap();
    assert!(scan.get(Metric::ScanKrows).unwrap() > 0.0);
    let text = render(&m, Format::Text, false);
    assert!(text.contains("Pre/post: QPS after the writes"), "{text}");
    assert!(text.contains("Scan: thousands of rows scanned per second per client"));
    assert!(
        m.notes
            .iter()
            .any(|n| n.starts_with("scan: one full-table scan"))
    );
}

/// A suite the report is handed in a test: it lists `writes` before `point`, under its own
/// titles, and no other group.
struct Handed;

impl crate::suites::SuiteKind for Handed {
    fn name(&self) -> &'static str {
        "handed"
    }

    fn parse(
        &self,
        _: &crate::suites::Section<'_>,
    ) -> Result<Box<dyn crate::suites::SuiteConfig>, crate::error::InputError> {
        Err(crate::error::InputError::new("not a lab suite"))
    }

    fn groups(&self) -> Vec<(&'static str, &'static str)> {
        vec![("writes", "Writes (handed)"), ("point", "Point (handed)")]
    }
}

/// The report orders and titles groups by the suites it is handed, not by a registry it looks
/// up itself (which read the environment): with none, every group is shown under its id.
#[test]
fn groups_come_from_the_suites_the_report_is_handed() {
    let data = run_two_clients();
    let groups = |suites: &[&dyn crate::suites::SuiteKind]| -> Vec<(String, String)> {
        (build_for(&data, &Options::default(), suites)
            .unwrap()
            .step_groups)
            .into_iter()
            .map(|g| (g.id, g.title))
            .collect()
    };
    let pair = |id: &str, title: &str| (id.to_string(), title.to_string());
    assert_eq!(
        groups(&[&Handed]),
        [
            pair("writes", "Writes (handed)"),
            pair("point", "Point (handed)"),
            pair("range-agg", "range-agg"),
        ]
    );
    assert_eq!(
        groups(&[]),
        [
            pair("writes", "writes"),
            pair("range-agg", "range-agg"),
            pair("point", "point"),
        ]
    );
    let crossover = build_for(&run_sweep(), &Options::default(), &[&Handed]).unwrap();
    assert!(
        (crossover.crossovers.iter()).any(|c| c.title == "Point (handed)"),
        "a crossover is titled by its group"
    );
}

/// Whether an engine runs inside dbdelta comes from its family (`Family::embedded`), not from
/// the name `sqlite`: a stored target of the test-only fake family, in-process too, gets the
/// in-process note and placement.
#[test]
fn an_in_process_engine_is_known_by_its_family_not_its_name() {
    let mut data = run_two_clients();
    for t in data.targets.iter_mut().filter(|t| t.engine == "sqlite") {
        t.engine = "fake".into();
        t.facts = crate::engine::facts(t);
    }
    let m = build(&data, None).unwrap();
    assert!(
        (m.notes.iter()).any(|n| n.starts_with("the fake engine runs inside dbdelta")),
        "{:?}",
        m.notes
    );
    assert!(!m.notes.iter().any(|n| n.starts_with("SQLite runs")));
    let text = render(&m, Format::Text, false);
    assert!(text.contains("none (in-process)"), "{text}");
}

#[test]
fn unknown_base_names_the_choices() {
    let err = build(&run_two_clients(), Some("pg99")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "--base pg99: run 20261122-0301 has no such target \
         (targets: pg16, pg17, sqlite.wal, pg17.jemalloc); pick one of them"
    );
    assert!(matches!(err, ReportError::UnknownBase { ref known, .. } if known.len() == 4));
}

#[test]
fn base_defaults_to_first_target_and_can_be_chosen() {
    let data = run_two_clients();
    let m = build(&data, None).unwrap();
    assert_eq!(m.base, "pg16");
    assert_eq!(m.compared, ["pg17", "sqlite.wal"]);
    let m = build(&data, Some("sqlite.wal")).unwrap();
    assert_eq!(m.base, "sqlite.wal");
    assert_eq!(m.compared, ["pg16", "pg17"]);
    assert!(m.relative.iter().all(|r| r.target != "sqlite.wal"));
}

#[test]
fn groups_follow_the_reference_order_and_unknown_ids_show_as_is() {
    let m = build(&run_two_clients(), None).unwrap();
    let ids: Vec<&str> = m.step_groups.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(
        ids,
        ["point", "range-agg", "writes"],
        "point, range, writes"
    );
    assert_eq!(m.step_groups[1].title, "range queries with aggregation");
    let m = build(&run_three_repeats(), None).unwrap();
    let last = m.step_groups.last().unwrap();
    assert_eq!(
        (last.id.as_str(), last.title.as_str()),
        ("insert", "insert")
    );
}

#[test]
fn relative_and_group_numbers() {
    let m = build(&run_two_clients(), None).unwrap();
    let r = m.relative_of("pg17", "update-one", 1).unwrap();
    assert!((r.qps.unwrap() - 0.91).abs() < 1e-9);
    assert_eq!(r.ratio(Metric::Cs), None, "missing on one side is n/a");
    assert_eq!(r.ci95, None);
    assert_eq!(r.verdict, None);
    // pg16 and pg17 both read 0 per op: 0 reads are below resolution, so no ratio (not 0/0 = 1);
    // sqlite.wal has no reads metric: n/a.
    let r = m.relative_of("pg17", "point-query", 1).unwrap();
    assert_eq!(
        r.ratio(Metric::Reads),
        None,
        "0 reads vs 0 reads is not a finding"
    );
    assert_eq!(
        r.below_resolution,
        ["reads_per_op", "read_kb_per_op", "write_kb_per_op"]
    );
    assert_eq!(
        m.relative_of("sqlite.wal", "point-query", 1)
            .unwrap()
            .ratio(Metric::Reads),
        None
    );
    // sqlite.wal has 0 context switches/op against the base's 0.4: 0/x = 0, not n/a.
    assert_eq!(
        m.relative_of("sqlite.wal", "point-query", 1)
            .unwrap()
            .ratio(Metric::Cs),
        Some(0.0)
    );
    // pg17 update-index at 4 clients failed: left out, so n/a.
    let r = m.relative_of("pg17", "update-index", 4).unwrap();
    assert_eq!(r.qps, None);
    let g = m.group_of("pg17", "writes", 1).unwrap();
    assert_eq!(g.steps, 2);
    assert!((g.median.unwrap() - 0.99).abs() < 1e-9, "{g:?}");
    assert_eq!(g.largest_change.as_ref().unwrap().step, "update-one");
    let writes = m
        .tldr
        .iter()
        .find(|l| l.starts_with("pg17 vs pg16, writes (1 client)"))
        .unwrap();
    assert!(writes.starts_with(
        "pg17 vs pg16, writes (1 client): median 0.99 (min 0.91, max 1.07); largest change: update-one 0.91; server CPU/op +4%"
    ), "{writes}");
}

#[test]
fn single_target_skips_relative_tables() {
    let mut data = run_three_repeats();
    data.targets.truncate(1);
    data.measurements.retain(|m| m.target == "pg16");
    let m = build(&data, None).unwrap();
    assert!(m.relative.is_empty() && m.groups.is_empty() && m.tldr.is_empty());
    let text = render(&m, Format::Text, false);
    assert!(text.contains("Relative tables need at least 2 targets"));
    assert!(text.contains("Absolute QPS"));
}
