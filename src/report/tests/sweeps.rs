//! Report tests: client sweeps (crossovers, group QPS and their tests, the tl;dr, snapshots).

use serde_json::Value;

use super::super::fixture::{run_sweep, run_three_repeats};
use super::*;

#[test]
fn sweep_names_crossovers_per_group_and_target() {
    let m = build(&run_sweep(), None).unwrap();
    let c = |target: &str, group: &str| m.crossover_of(target, group).unwrap().clone();
    for (target, group, kind, clients, noise, between) in [
        (
            "mysql80",
            "point",
            "overtakes",
            Some(4),
            "confirmed",
            Some([2, 4]),
        ),
        (
            "mysql80",
            "range-agg",
            "slower_throughout",
            None,
            "confirmed",
            None,
        ),
        (
            "mysql80",
            "writes",
            "overtakes",
            Some(8),
            "within_noise",
            None,
        ),
        (
            "mariadb114",
            "point",
            "falls_behind",
            Some(4),
            "bracketed",
            Some([2, 8]),
        ),
        (
            "mariadb114",
            "range-agg",
            "faster_throughout",
            None,
            "within_noise",
            None,
        ),
        (
            "mariadb114",
            "writes",
            "falls_behind",
            Some(8),
            "confirmed",
            Some([2, 8]),
        ),
    ] {
        let x = c(target, group);
        assert_eq!(
            (
                x.kind.as_str(),
                x.clients,
                x.noise.as_deref(),
                x.confirmed_between
            ),
            (kind, clients, Some(noise), between),
            "{target} {group}: {}",
            x.sentence
        );
        assert_eq!(x.base, "mysql56");
        assert_eq!(x.points.len(), 4);
    }
}

#[test]
fn sweep_group_qps_ratios_and_their_tests() {
    let m = build(&run_sweep(), None).unwrap();
    let c = |target: &str, group: &str| m.crossover_of(target, group).unwrap().clone();
    // Group QPS is the geometric mean of the group's steps' QPS (means over repeats).
    let g = m.group_qps_of("mysql56", "point", 2).unwrap();
    let q = |s: &str| m.aggregate("mysql56", s, 2).unwrap().qps.unwrap();
    let want = (q("point-query") * q("random-points_range=10")).sqrt();
    assert!((g.qps.unwrap() - want).abs() < 1e-9 * want, "{g:?}");
    assert_eq!((g.steps, g.missing_steps.len()), (2, 0));
    // The failed step leaves mariadb114's writes without a group QPS at 4 clients.
    let g = m.group_qps_of("mariadb114", "writes", 4).unwrap();
    assert_eq!(
        (g.qps, g.missing_steps.clone()),
        (None, vec!["update-index".to_string()])
    );
    let p = &c("mariadb114", "writes").points[2];
    assert_eq!((p.clients, p.ratio, p.qps_test.is_none()), (4, None, true));
    // Its failed repeat at 1 client leaves 2 pairs for range-agg there.
    assert_eq!(c("mariadb114", "range-agg").points[0].paired_repeats, 2);
    assert_eq!(c("mysql80", "point").points[0].paired_repeats, 3);
    // The ratio of group QPS; the test's family is the target × group over the 4 counts.
    let p = &c("mysql80", "point").points[1];
    assert!((p.ratio.unwrap() - 0.90).abs() < 1e-3, "{p:?}");
    let t = p.qps_test.as_ref().unwrap();
    assert_eq!((t.family_size, t.verdict.as_str()), (4, "regression"));
}

#[test]
fn sweep_crossovers_lead_the_tldr_and_have_a_note() {
    let m = build(&run_sweep(), None).unwrap();
    // The crossover sentences come first in the tl;dr, in target then group order.
    assert!(
        m.tldr[0].starts_with("mysql80 overtakes mysql56 on point queries from 4 clients (QPS ratio 0.80 at 1, 0.90 at 2, 1.15 at 4, 1.40 at 8 clients; confirmed"),
        "{:?}",
        m.tldr
    );
    assert!(m.tldr[1].starts_with(
        "mysql80 is slower than mysql56 on range queries with aggregation at every client count, 1–8"
    ));
    assert!(
        m.tldr[3].starts_with("mariadb114 falls behind mysql56 on point queries from 4 clients")
    );
    assert!(
        m.notes
            .iter()
            .any(|n| n.starts_with("Concurrency: a group's QPS"))
    );
}

#[test]
fn one_repeat_leaves_every_crossover_unconfirmed() {
    let mut data = run_sweep();
    data.measurements.retain(|m| m.repeat == 1);
    let m = build(&data, None).unwrap();
    let x = m.crossover_of("mysql80", "point").unwrap();
    assert_eq!((x.kind.as_str(), x.clients), ("overtakes", Some(4)));
    assert_eq!(x.noise.as_deref(), Some("unconfirmed"));
    assert!(
        x.sentence
            .ends_with("; unconfirmed: one repeat, so noise cannot be judged)"),
        "{}",
        x.sentence
    );
    assert!(
        m.crossovers
            .iter()
            .all(|c| c.noise.as_deref() == Some("unconfirmed"))
    );
}

#[test]
fn one_client_count_has_no_concurrency_section() {
    let m = build(&run_three_repeats(), None).unwrap();
    assert!(m.group_qps.is_empty() && m.crossovers.is_empty());
    let text = render(&m, Format::Text, false);
    assert!(!text.contains("QPS against clients"));
}

#[test]
fn snapshot_sweep_text() {
    let model = build(&run_sweep(), None).unwrap();
    insta::assert_snapshot!("sweep_text", render(&model, Format::Text, false));
}

#[test]
fn snapshot_sweep_markdown() {
    let model = build(&run_sweep(), None).unwrap();
    insta::assert_snapshot!("sweep_md", render(&model, Format::Markdown, false));
}

/// The sweep's JSON additions (its whole JSON is thousands of lines of per-repeat rows that the
/// other JSON snapshots already cover).
#[test]
fn snapshot_sweep_json_additions() {
    #[derive(serde::Serialize)]
    struct Part<'a> {
        clients: &'a [u32],
        group_qps: &'a [model::GroupQps],
        crossovers: &'a [model::Crossover],
        tldr: &'a [String],
    }
    let model = build(&run_sweep(), None).unwrap();
    let part = Part {
        clients: &model.clients,
        group_qps: &model.group_qps,
        crossovers: &model.crossovers,
        tldr: &model.tldr,
    };
    insta::assert_snapshot!(
        "sweep_json_additions",
        serde_json::to_string_pretty(&part).unwrap()
    );
    let v: Value = serde_json::from_str(&render(&model, Format::Json, false)).unwrap();
    assert_eq!(
        v["crossovers"],
        serde_json::to_value(&model.crossovers).unwrap()
    );
    assert!(schema_errors(&v).is_empty(), "{:#?}", schema_errors(&v));
    // The additions are part of the contract: a wrong kind or a string ratio does not validate.
    let mut broken = v.clone();
    broken["crossovers"][0]["kind"] = Value::String("crosses".into());
    broken["crossovers"][0]["points"][1]["ratio"] = Value::String("0.9".into());
    broken["group_qps"][0]["qps"] = Value::String("36221".into());
    let errors = schema_errors(&broken);
    for path in [
        "/crossovers/0/kind",
        "/crossovers/0/points/1/ratio",
        "/group_qps/0/qps",
    ] {
        assert!(
            errors.iter().any(|e| e.contains(path)),
            "{path}: {errors:?}"
        );
    }
}
