//! Instructions per operation of the Insert Benchmark and LinkBench end to end: a
//! `--quick` run with `instructions = true` counts every role of a query step on its own (the
//! querier, the paced inserter, the deleter that follows it) and LinkBench's request mix with
//! each of its types alone, on SQLite and on SQLite with a 10-page cache, and the Insert
//! Benchmark's roles on PostgreSQL (Debian's); the one-time steps (`l.x`'s index build,
//! LinkBench's load and index) run once, uncounted. Every part gets a count on every target; the 10-page cache, which makes SQLite
//! re-read and re-parse pages inside the counted process (deterministic), is a regression from
//! this one repeat on the queries and on the deletes.
//!
//! Needs valgrind (installed by `.ci/run`) and Debian's PostgreSQL; without them the test says
//! why and passes, except under CI (`CI` set), where that is a failure.

mod common;
use common::*;

use serde_json::Value;

const LAB: &str = r#"[lab]
name = "suites counted"
repeats = 1
instructions = true
instruction_passes = 2
# One server start: this test is about counting each role and type apart; the starts are
# tests/instructions.rs's, and a second start here would add a third to its time.
instruction_starts = 1
only = ["l.i0", "l.x", "qr100", "linkbench.load", "linkbench.index", "linkbench.request.P1"]

[suite.insert]

[suite.linkbench]
[suite.linkbench.mix]
getnode = 60
addlink = 40

[[target]]
name = "sqlite"
engine = "sqlite"

[[target]]
name = "sqlite-cache10"
engine = "sqlite"
settings = ["cache_size = 10"]
"#;

/// PostgreSQL counts the Insert Benchmark's roles apart from its background (LinkBench's mix is
/// the same counting code, on SQLite above: a second suite here would double the test's time).
const LAB_PG: &str = r#"[lab]
name = "insert benchmark counted"
repeats = 1
instructions = true
instruction_passes = 2
# One server start: this test is about counting each role and type apart; the starts are
# tests/instructions.rs's, and a second start here would add a third to its time.
instruction_starts = 1
only = ["l.i0", "l.x", "qr100"]

[suite.insert]

[[target]]
name = "pg"
engine = "postgres"
"#;

/// The first-repeat measurement of `target`'s `step`.
fn measurement<'a>(report: &'a Value, target: &str, step: &str) -> &'a Value {
    (report["measurements"].as_array().unwrap().iter())
        .filter(|m| m["target"] == target && m["step"] == step)
        .min_by_key(|m| m["repeat"].as_u64())
        .unwrap_or_else(|| panic!("no measurement {target} {step}"))
}

/// Instructions per unit of `target`'s `step` (`role/op`: that operation counted on its own).
fn counted(report: &Value, target: &str, step: &str, part: Option<(&str, &str)>) -> f64 {
    let m = measurement(report, target, step);
    let value = match part {
        None => m["server_instructions_per_op"].as_f64(),
        Some((role, op)) => (m["operations"].as_array().unwrap().iter())
            .find(|o| o["role"] == role && o["op"] == op)
            .and_then(|o| o["instructions"]["server"].as_f64()),
    };
    value.unwrap_or_else(|| panic!("{target} {step} {part:?}: not counted: {m}"))
}

/// The verdict of `step` (or of its counted operation `role/op`) of `target` against `sqlite`.
fn verdict(report: &Value, target: &str, step: &str, part: Option<(&str, &str)>) -> String {
    let r = (report["relative"].as_array().unwrap().iter())
        .find(|r| r["base"] == "sqlite" && r["target"] == target && r["step"] == step)
        .unwrap_or_else(|| panic!("no relative row {target} {step}"));
    let test = match part {
        None => &r["server_instructions_test"],
        Some((role, op)) => (r["counted_ops"].as_array())
            .and_then(|ops| ops.iter().find(|o| o["role"] == role && o["op"] == op))
            .map(|o| &o["test"])
            .unwrap_or_else(|| panic!("{target} {step}: no test of {role}/{op}: {r}")),
    };
    eprintln!("{target} {step} {part:?}: {test}");
    test["verdict"].as_str().unwrap().to_string()
}

/// The Insert Benchmark's and LinkBench's parts (`l.i0`, `qr100` and its inserter and deleter,
/// the request mix and each of its types): counted.
const PARTS: [(&str, Option<(&str, &str)>); 7] = [
    ("l.i0", None),
    ("qr100", None),
    ("qr100", Some(("inserter", "insert"))),
    ("qr100", Some(("deleter", "delete"))),
    (REQUEST, None),
    (REQUEST, Some(("requester", "getnode"))),
    (REQUEST, Some(("requester", "addlink"))),
];
const REQUEST: &str = "linkbench.request.P1";

#[test]
fn every_role_and_every_type_of_a_mix_is_counted_and_a_small_cache_is_a_regression() {
    if !valgrind_installed() {
        return;
    }
    let report = run_lab(LAB);
    for target in ["sqlite", "sqlite-cache10"] {
        for (step, part) in PARTS {
            let v = counted(&report, target, step, part);
            eprintln!("{target} {step} {part:?}: {v:.0} instructions/unit");
            assert!(v > 1000.0, "{target} {step} {part:?}: {v}");
        }
        // Types the mix never runs are not counted apart.
        let m = measurement(&report, target, REQUEST);
        let apart = (m["operations"].as_array().unwrap().iter())
            .filter(|o| o["instructions"].is_object())
            .count();
        assert_eq!(apart, 2, "{target}: {m}");
    }
    // A 10-page cache re-reads pages: the querier and the deleter, each counted alone, cost more.
    for part in [None, Some(("deleter", "delete"))] {
        assert_eq!(
            verdict(&report, "sqlite-cache10", "qr100", part),
            "regression"
        );
    }
}

/// PostgreSQL: every role of the Insert Benchmark counted, its background work apart from the
/// pass's own. A test of its own, beside the SQLite one: neither asserts a time, so they
/// share the host.
#[test]
fn postgres_counts_every_insert_benchmark_role_and_its_background_apart() {
    if !valgrind_installed() || !postgres_installed() {
        return;
    }
    let report = run_lab(LAB_PG);
    for (step, part) in &PARTS[..4] {
        let v = counted(&report, "pg", step, *part);
        eprintln!("pg {step} {part:?}: {v:.0} instructions/unit");
        assert!(v > 1000.0, "pg {step} {part:?}: {v}");
    }
    let pg = measurement(&report, "pg", "qr100");
    let deleter = (pg["operations"].as_array().unwrap().iter())
        .find(|o| o["role"] == "deleter")
        .unwrap();
    assert!(
        deleter["instructions"]["background"].is_number(),
        "{deleter}"
    );
}

/// Run `lab` at `--quick` in a scratch directory: its JSON report, checked against the schema.
fn run_lab(lab: &str) -> Value {
    let dir = scratch();
    std::fs::write(dir.path().join("lab.toml"), lab).unwrap();
    // No `measuring()` lock: the tests here assert counts and verdicts on counts, never a time.
    let out = run(
        dir.path(),
        &["-q", "run", "lab.toml", "--quick", "--format", "json"],
    );
    assert!(out.status.success(), "run failed: {}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(schema_errors(&report), Vec::<String>::new());
    report
}
