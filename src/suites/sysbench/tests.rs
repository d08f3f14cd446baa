//! sysbench tests: the catalog's order and shapes, and the parameters the executor binds for
//! every step (IN-list sizes, spans, hot range, zipf bounds, fixed ids), on a recording session.

use std::collections::BTreeMap;

use super::catalog::*;
use super::sql;
use super::steps as sysbench;
use crate::engine::{DbError, Param, Session, StmtId};
use crate::engine::{Dialect, RowSource};
use crate::workload::*;
use rand::SeedableRng;
use rand::rngs::SmallRng;

/// A bound parameter, owned.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Int(i64),
    Text(String),
}

/// A session that records what it is asked to do and returns no rows.
#[derive(Default)]
struct Recording {
    sql: Vec<String>,
    calls: Vec<(String, Vec<Value>)>,
}

impl Session for Recording {
    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        self.sql.push(sql.to_string());
        Ok(self.sql.len() - 1)
    }
    fn execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<u64, DbError> {
        let values = params
            .iter()
            .map(|p| match p {
                Param::Int(i) => Value::Int(*i),
                Param::Text(t) => Value::Text(t.to_string()),
            })
            .collect();
        self.calls.push((self.sql[stmt].clone(), values));
        Ok(0)
    }
    fn execute_sql(&mut self, _sql: &str) -> Result<u64, DbError> {
        Ok(0)
    }
    fn query_strings(&mut self, _sql: &str) -> Result<Vec<String>, DbError> {
        Ok(Vec::new())
    }
    fn bulk_load(&mut self, _table: &str, _source: &mut dyn RowSource) -> Result<u64, DbError> {
        Ok(0)
    }
}

const ROWS: u64 = 10_000;

/// Run `events` events of `label` as client `client` of a 1-table (or `tables`-table) scale.
fn record(label: &str, tables: u32, client: u64, events: usize) -> Recording {
    let step = sysbench::find(label).unwrap_or_else(|| panic!("no step {label}"));
    let scale = Scale { tables, rows: ROWS };
    let mut s = Recording::default();
    let mut ex = EventExecutor::new(
        step,
        scale,
        &mut s,
        Dialect::Sqlite,
        step_seed(7, 1) + client,
    )
    .unwrap();
    for _ in 0..events {
        ex.run_event(&mut s).unwrap();
    }
    s
}

fn ints(v: &[Value]) -> Vec<i64> {
    v.iter()
        .filter_map(|x| match x {
            Value::Int(i) => Some(*i),
            Value::Text(_) => None,
        })
        .collect()
}

/// The catalog's order (docs/workloads.md, The catalog), with the `.pre` set where `pre = true`
/// puts it.
const ORDER: &[&str] = &[
    "point-query.warm",
    "scan.warmpre",
    "point-query.pre",
    "random-points.pre_range=10",
    "random-points.pre_range=100",
    "random-points.pre_range=1000",
    "read-only.pre_range=10",
    "read-only.pre_range=100",
    "read-only.pre_range=10000",
    "points-covered-pk.pre",
    "points-notcovered-pk.pre",
    "points-covered-si.pre",
    "points-notcovered-si.pre",
    "range-covered-pk.pre",
    "range-notcovered-pk.pre",
    "range-covered-si.pre",
    "range-notcovered-si.pre",
    "update-inlist",
    "update-index",
    "update-nonindex",
    "update-one",
    "update-zipf",
    "write-only",
    "read-write_range=10",
    "read-write_range=100",
    "scan.warm",
    "scan",
    "read-only_range=10",
    "read-only_range=100",
    "read-only_range=10000",
    "read-only-simple",
    "read-only-sum",
    "read-only-order",
    "read-only-distinct",
    "read-only-count",
    "point-query",
    "random-points_range=10",
    "random-points_range=100",
    "random-points_range=1000",
    "hot-points",
    "points-covered-pk",
    "points-notcovered-pk",
    "range-covered-pk",
    "range-notcovered-pk",
    "points-covered-si.warm",
    "points-covered-si",
    "points-notcovered-si",
    "range-covered-si",
    "range-notcovered-si",
    "delete",
    "insert",
];

#[test]
fn catalog_is_the_spec_order_with_its_roles_and_groups() {
    let labels: Vec<&str> = sysbench::CATALOG.iter().map(|s| s.label).collect();
    assert_eq!(labels, ORDER);
    let mut by_group: BTreeMap<&str, usize> = BTreeMap::new();
    for s in sysbench::CATALOG {
        *by_group.entry(s.group.id()).or_default() += 1;
        assert_eq!(
            s.kind == StepKind::Warm,
            s.label.contains(".warm"),
            "{}",
            s.label
        );
        assert_eq!(
            s.kind == StepKind::Pre,
            s.label.contains(".pre"),
            "{}",
            s.label
        );
    }
    let expected: BTreeMap<&str, usize> = [
        ("point", 9),
        ("range-noagg", 5),
        ("range-agg", 8),
        ("writes", 10),
        ("point-1", 8),
        ("range-1", 7),
        ("warm", 4),
    ]
    .into_iter()
    .collect();
    assert_eq!(by_group, expected);
    // Every `.pre` step repeats a reported step's event exactly.
    for p in sysbench::CATALOG.iter().filter(|s| s.kind == StepKind::Pre) {
        let post = sysbench::find(&p.label.replacen(".pre", "", 1)).unwrap();
        assert_eq!(post.kind, StepKind::Main);
        assert_eq!(p.event, post.event, "{}", p.label);
        let twin = match post.group {
            Group::Point => Group::Point1,
            _ => Group::Range1,
        };
        assert_eq!(p.group, twin, "{}", p.label);
    }
    // Postwrite after the load's warm-up and after the writes, nowhere else.
    let postwrite: Vec<&str> = sysbench::CATALOG
        .iter()
        .filter(|s| s.postwrite_after)
        .map(|s| s.label)
        .collect();
    assert_eq!(postwrite, ["point-query.warm", "read-write_range=100"]);
}

#[test]
fn every_step_has_its_statements_and_duration() {
    use DurationRule::*;
    // (label, statements per event, the event, duration rule)
    let cases: &[(&str, u32, &str, DurationRule)] = &[
        ("point-query.warm", 1, "point", Read),
        ("scan.warmpre", 1, "full scan", ScanWarm),
        ("update-inlist", 1, "update c in-list ×100", Write),
        ("update-index", 1, "update k", Write),
        ("update-nonindex", 1, "update c", Write),
        ("update-one", 1, "update c", Write),
        ("update-zipf", 1, "update c", Write),
        (
            "write-only",
            6,
            "BEGIN, update k, update c, delete, re-insert, COMMIT",
            Read,
        ),
        (
            "read-write_range=10",
            20,
            "BEGIN, 10×point, range 10, sum 10, order 10, distinct 10, update k, update c, delete, re-insert, COMMIT",
            Write,
        ),
        (
            "read-write_range=100",
            20,
            "BEGIN, 10×point, range 100, sum 100, order 100, distinct 100, update k, update c, delete, re-insert, COMMIT",
            Write,
        ),
        ("scan.warm", 1, "full scan", ScanWarm),
        ("scan", 1, "full scan", Read),
        (
            "read-only_range=10",
            16,
            "BEGIN, 10×point, range 10, sum 10, order 10, distinct 10, COMMIT",
            Read,
        ),
        (
            "read-only_range=100",
            16,
            "BEGIN, 10×point, range 100, sum 100, order 100, distinct 100, COMMIT",
            Read,
        ),
        (
            "read-only_range=10000",
            16,
            "BEGIN, 10×point, range 10000, sum 10000, order 10000, distinct 10000, COMMIT",
            Read,
        ),
        (
            "read-only-simple",
            13,
            "BEGIN, 10×point, range 1000, COMMIT",
            Read,
        ),
        (
            "read-only-sum",
            13,
            "BEGIN, 10×point, sum 1000, COMMIT",
            Read,
        ),
        (
            "read-only-order",
            13,
            "BEGIN, 10×point, order 1000, COMMIT",
            Read,
        ),
        (
            "read-only-distinct",
            13,
            "BEGIN, 10×point, distinct 1000, COMMIT",
            Read,
        ),
        ("read-only-count", 1, "count 1000", Read),
        ("point-query", 1, "point", Read),
        ("random-points_range=10", 1, "in-list id→c ×10", Read),
        ("random-points_range=100", 1, "in-list id→c ×100", Read),
        ("random-points_range=1000", 1, "in-list id→c ×1000", Read),
        ("hot-points", 1, "in-list id→c ×100", Read),
        ("points-covered-pk", 1, "in-list id→id ×100", Read),
        ("points-notcovered-pk", 1, "in-list id→id,c ×100", Read),
        ("range-covered-pk", 1, "range id→id 101", Read),
        ("range-notcovered-pk", 1, "range id→id,c 101", Read),
        ("points-covered-si.warm", 1, "in-list k→k ×100", Read),
        ("points-covered-si", 1, "in-list k→k ×100", Read),
        ("points-notcovered-si", 1, "in-list k→k,c ×100", Read),
        ("range-covered-si", 1, "range k→k 101", Read),
        ("range-notcovered-si", 1, "range k→k,c 101", Read),
        ("delete", 1, "delete", Write),
        ("insert", 1, "insert", Write),
    ];
    let non_pre: Vec<&str> = sysbench::CATALOG
        .iter()
        .filter(|s| s.kind != StepKind::Pre)
        .map(|s| s.label)
        .collect();
    let listed: Vec<&str> = cases.iter().map(|c| c.0).collect();
    assert_eq!(listed, non_pre, "every non-.pre step is checked, in order");
    for (label, spe, shape, duration) in cases {
        let s = sysbench::find(label).unwrap();
        assert_eq!(s.statements_per_event(), *spe, "{label}");
        assert_eq!(s.shape(), *shape, "{label}");
        assert_eq!(s.duration, *duration, "{label}");
    }
    assert_eq!(
        sysbench::find("point-query.warm").unwrap().threads,
        Threads::Tables
    );
}

/// The statements an event sends, grouped: every call must use the step's SQL in order.
#[test]
fn each_event_sends_its_statements_in_order() {
    for step in sysbench::CATALOG {
        let rec = record(step.label, 1, 0, 3);
        let expected: Vec<String> = step
            .event
            .iter()
            .flat_map(|(n, s)| std::iter::repeat_n(sql::text(*s, Dialect::Sqlite, 1), *n as usize))
            .collect();
        let sent: Vec<String> = rec.calls.iter().map(|c| c.0.clone()).collect();
        assert_eq!(sent.len(), 3 * expected.len(), "{}", step.label);
        for chunk in sent.chunks(expected.len()) {
            assert_eq!(chunk, expected.as_slice(), "{}", step.label);
        }
        for (sql, params) in &rec.calls {
            assert_eq!(params.len(), sql.matches('?').count(), "{sql}");
        }
    }
}

#[test]
fn in_lists_have_their_sizes_and_ids_stay_in_the_table() {
    for (label, n) in [
        ("random-points_range=10", 10),
        ("random-points_range=100", 100),
        ("random-points_range=1000", 1000),
        ("points-covered-pk", 100),
        ("points-notcovered-pk", 100),
        ("points-covered-si", 100),
        ("points-notcovered-si", 100),
        ("update-inlist", 100),
    ] {
        let rec = record(label, 1, 0, 50);
        for (sql, params) in &rec.calls {
            let ids = ints(params);
            assert_eq!(ids.len(), n, "{label}: {sql}");
            assert!(ids.iter().all(|i| (1..=ROWS as i64).contains(i)), "{label}");
            // Uniform draws: not the hot range, not a constant.
            assert!(ids.iter().any(|i| *i != ids[0]), "{label}");
        }
        if label == "update-inlist" {
            for (_, params) in &rec.calls {
                match &params[0] {
                    Value::Text(c) => assert_eq!(c.len(), sql::C_LEN),
                    other => panic!("update-inlist binds c first, got {other:?}"),
                }
            }
        }
    }
}

#[test]
fn hot_points_read_the_middle_hundred() {
    let rec = record("hot-points", 1, 0, 20);
    let hot: Vec<i64> = (ROWS as i64 / 2 + 1..=ROWS as i64 / 2 + 100).collect();
    for (_, params) in &rec.calls {
        assert_eq!(ints(params), hot);
    }
}

#[test]
fn ranges_have_their_spans() {
    for (label, spans) in [
        ("read-only_range=10", vec![9]),
        ("read-only_range=100", vec![99]),
        ("read-only_range=10000", vec![9999]),
        ("read-only-simple", vec![999]),
        ("read-only-count", vec![999]),
        ("read-write_range=100", vec![99]),
        ("range-covered-pk", vec![100]),
        ("range-notcovered-pk", vec![100]),
        ("range-covered-si", vec![100]),
        ("range-notcovered-si", vec![100]),
    ] {
        let rec = record(label, 1, 0, 30);
        let mut seen = 0;
        for (sql, params) in &rec.calls {
            if !sql.contains("BETWEEN") {
                continue;
            }
            seen += 1;
            let v = ints(params);
            assert!((1..=ROWS as i64).contains(&v[0]), "{label}");
            assert!(spans.contains(&(v[1] - v[0])), "{label}: {sql} {v:?}");
        }
        assert!(seen >= 30, "{label}");
    }
}

#[test]
fn update_one_always_updates_id_1_and_zipf_prefers_low_ids() {
    let rec = record("update-one", 1, 0, 100);
    for (sql, params) in &rec.calls {
        assert_eq!(sql, "UPDATE sbtest1 SET c=? WHERE id=?");
        assert_eq!(ints(params), [1]);
    }
    let rec = record("update-zipf", 1, 0, 20_000);
    let ids: Vec<i64> = rec.calls.iter().map(|(_, p)| ints(p)[0]).collect();
    assert!(ids.iter().all(|i| (1..=ROWS as i64).contains(i)));
    let ones = ids.iter().filter(|i| **i == 1).count() as f64 / ids.len() as f64;
    // P(1) = 1 / Σ k^-0.8 over 1..=10000 ≈ 0.0285.
    let norm: f64 = (1..=ROWS).map(|k| (k as f64).powf(-ZIPF_EXPONENT)).sum();
    assert!((ones - 1.0 / norm).abs() < 0.006, "P(id = 1) = {ones}");
    assert!(ids.iter().any(|i| *i > 5000), "the tail is reachable");
}

#[test]
fn zipf_follows_k_to_the_minus_exponent() {
    let z = Zipf::new(10, ZIPF_EXPONENT);
    let mut rng = SmallRng::seed_from_u64(1);
    let mut counts = [0u64; 11];
    let n = 400_000;
    for _ in 0..n {
        let k = z.sample(&mut rng);
        assert!((1..=10).contains(&k));
        counts[k as usize] += 1;
    }
    let norm: f64 = (1..=10).map(|k| (k as f64).powf(-ZIPF_EXPONENT)).sum();
    for (k, &count) in counts.iter().enumerate().skip(1) {
        let expected = (k as f64).powf(-ZIPF_EXPONENT) / norm;
        let got = count as f64 / n as f64;
        assert!(
            (got - expected).abs() < 0.005,
            "P({k}) = {got}, expected {expected}"
        );
    }
    let one = Zipf::new(1, ZIPF_EXPONENT);
    assert_eq!(one.sample(&mut rng), 1);
}

#[test]
fn write_only_reinserts_the_id_it_deleted() {
    for label in ["write-only", "read-write_range=10"] {
        let rec = record(label, 1, 0, 50);
        let mut deleted = None;
        let mut pairs = 0;
        for (sql, params) in &rec.calls {
            if sql.starts_with("DELETE") {
                deleted = Some(ints(params)[0]);
            }
            if sql.starts_with("INSERT") {
                assert_eq!(Some(ints(params)[0]), deleted, "{label}");
                assert!(matches!(&params[2], Value::Text(c) if c.len() == sql::C_LEN));
                assert!(matches!(&params[3], Value::Text(p) if p.len() == sql::PAD_LEN));
                pairs += 1;
            }
        }
        assert_eq!(pairs, 50, "{label}");
    }
}

#[test]
fn scan_uses_the_clients_own_table() {
    for (client, table) in [
        (0u64, "sbtest1"),
        (1, "sbtest2"),
        (2, "sbtest3"),
        (3, "sbtest1"),
    ] {
        let rec = record("scan", 3, client, 5);
        for (sql, params) in &rec.calls {
            assert_eq!(sql, &format!("SELECT * from {table} WHERE LENGTH(c) < 0"));
            assert!(params.is_empty());
        }
    }
    // Other steps pick a table per event.
    let rec = record("point-query", 3, 0, 200);
    let tables: std::collections::BTreeSet<&str> = rec
        .calls
        .iter()
        .map(|(sql, _)| sql.split_whitespace().nth(3).unwrap())
        .collect();
    assert_eq!(tables.len(), 3, "{tables:?}");
}

#[test]
fn groups_switch_to_five_with_pre() {
    assert_eq!(Group::Point.with_pre(true), Group::Point2);
    assert_eq!(Group::RangeNoAgg.with_pre(true), Group::Range2);
    assert_eq!(Group::RangeAgg.with_pre(true), Group::Range2);
    assert_eq!(Group::Writes.with_pre(true), Group::Writes);
    assert_eq!(Group::Point.with_pre(false), Group::Point);
}
