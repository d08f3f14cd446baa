//! Instructions per operation end to end: a `--quick` run with
//! `--instructions` counts a point read, a range read and a write (`update-index`) of two
//! identical SQLite targets, a SQLite target with a 10-page cache, and two identical PostgreSQL
//! targets (Debian's) in their counting passes under callgrind. The identical targets must agree
//! within 1% on every step, the write included (PostgreSQL's foreground: its backends, apart from
//! autovacuum; counted once more before failing: see the test), SQLite's pair is `unchanged` and
//! PostgreSQL's never a change; the small cache, which makes SQLite re-read and re-parse pages
//! (deterministic: SQLite runs in the counted process, nothing else runs there), must be a
//! regression from this one repeat, on the write too; its function diff names the
//! pager's or B-tree's functions among the top rising ones, and the identical targets' function
//! tables agree within their steps' spread.
//!
//! Needs valgrind (installed by `.ci/run`) and Debian's PostgreSQL; without them the test says
//! why and passes, except under CI (`CI` set), where that is a failure.

mod common;
use common::*;

use serde_json::Value;

const LAB: &str = r#"[lab]
name = "instructions"
repeats = 1
instructions = true

[[target]]
name = "sqlite-a"
engine = "sqlite"

[[target]]
name = "sqlite-b"
engine = "sqlite"

[[target]]
name = "sqlite-cache10"
engine = "sqlite"
settings = ["cache_size = 10"]

[[target]]
name = "pg-a"
engine = "postgres"

[[target]]
name = "pg-b"
engine = "postgres"
"#;

/// The relative row of `target` against its base `base` for `step`.
fn relative<'a>(report: &'a Value, base: &str, target: &str, step: &str) -> &'a Value {
    (report["relative"].as_array().unwrap().iter())
        .find(|r| r["base"] == base && r["target"] == target && r["step"] == step)
        .unwrap_or_else(|| panic!("no relative row {target}/{base} {step}"))
}

/// One `--quick --instructions` run of [`LAB`] over `steps`: its JSON report, the same run's
/// report with `pg-a` as the base (pg-b judged against it), and its text report.
fn count(steps: &str) -> (Value, Value, String) {
    let dir = scratch();
    std::fs::write(dir.path().join("lab.toml"), LAB).unwrap();
    let out = {
        let _lock = measuring();
        run(
            dir.path(),
            &[
                "-q", "run", "lab.toml", "--quick", "--only", steps, "--format", "json",
            ],
        )
    };
    assert!(out.status.success(), "run failed: {}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(schema_errors(&report), Vec::<String>::new());
    let out = run(
        dir.path(),
        &["report", "--base", "pg-a", "--format", "json"],
    );
    assert!(out.status.success(), "report failed: {}", text(&out.stderr));
    let by_pg = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let out = run(dir.path(), &["report", "--format", "text"]);
    assert!(out.status.success(), "report failed: {}", text(&out.stderr));
    (report, by_pg, text(&out.stdout))
}

/// The function diff of `target` against `base` on `step` (the JSON's `functions.steps`).
fn function_diff<'a>(report: &'a Value, base: &str, target: &str, step: &str) -> &'a Value {
    (report["functions"]["steps"].as_array())
        .and_then(|s| {
            s.iter()
                .find(|d| d["base"] == base && d["target"] == target && d["step"] == step)
        })
        .unwrap_or_else(|| panic!("no function diff {target}/{base} {step}"))
}

/// The counting pass's function tables explain the small cache's regression by the
/// pager's and B-tree's functions (in the JSON and the text's "Why"), and identical targets'
/// tables agree within the step's own spread.
fn functions_explain(report: &Value, by_pg: &Value, report_text: &str, steps: &str) {
    for step in steps.split(',') {
        let d = function_diff(report, "sqlite-a", "sqlite-cache10", step);
        let rising: Vec<&str> = (d["functions"].as_array().unwrap().iter())
            .filter(|f| f["change"].as_f64().unwrap() > 0.0)
            .take(5)
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        eprintln!("{step}: sqlite-cache10's top rising functions {rising:?}");
        let pager = |n: &&str| {
            ["pcache", "Pager", "btree", "getPage", "readDbPage"]
                .iter()
                .any(|p| n.contains(p))
        };
        assert!(
            rising.iter().any(pager),
            "{step}: no pager or B-tree function in {rising:?}"
        );
        for (diffs, base, target) in [(report, "sqlite-a", "sqlite-b"), (by_pg, "pg-a", "pg-b")] {
            let value = |t: &str, m: &str| aggregate(report, t, step, m).unwrap();
            let spread = |t: &str| value(t, "server_instructions_spread");
            let total = |t: &str| value(t, "server_instructions_per_op");
            // Within what the step's own totals allow: their spreads (half-ranges, both sides)
            // and the gap between the two totals, and an instruction. Once (CI, a busy host)
            // PostgreSQL's identical targets' point-query totals were 0.32% (135/op) apart with
            // spreads of 83: 86 of it in `WaitEventSetWait`, whose count follows how often a
            // backend finds its next query not yet arrived (timing, not the statement). A
            // function table that mixed up names or passes moves by far more than the total.
            let gap = (total(target) - total(base)).abs();
            let allowed = spread(base) + spread(target) + gap + 1.0;
            let d = function_diff(diffs, base, target, step);
            let worst = (d["functions"].as_array().unwrap().iter())
                .max_by(|x, y| {
                    x["change"]
                        .as_f64()
                        .unwrap()
                        .abs()
                        .total_cmp(&y["change"].as_f64().unwrap().abs())
                })
                .unwrap();
            eprintln!(
                "{step}: {target} vs {base}: largest function change {worst}, allowed ±{allowed:.1}"
            );
            assert!(
                worst["change"].as_f64().unwrap().abs() <= allowed,
                "{step}: {worst}"
            );
        }
    }
    let groups = report["functions"]["groups"].as_array().unwrap();
    assert!(
        groups
            .iter()
            .any(|g| g["target"] == "sqlite-cache10" && g["group"] == "point")
    );
    let why = report_text
        .split("Why: the functions behind the instruction changes, sqlite-cache10 vs sqlite-a")
        .nth(1);
    let why = why
        .expect("a Why section for the small cache")
        .split("\n\n")
        .next()
        .unwrap();
    assert!(why.contains("pcache") || why.contains("btree"), "{why}");
    assert!(!report_text.contains("Why: the functions behind the instruction changes, sqlite-b"));
}

fn aggregate(report: &Value, target: &str, step: &str, metric: &str) -> Option<f64> {
    (report["aggregates"].as_array().unwrap().iter())
        .find(|a| a["target"] == target && a["step"] == step)
        .and_then(|a| a[metric].as_f64())
}

/// The same target counted twice, per step: the pairs more than 1% apart.
fn aa_gaps(report: &Value, steps: &str) -> Vec<String> {
    let mut gaps = Vec::new();
    for step in steps.split(',') {
        for (a, b) in [("sqlite-a", "sqlite-b"), ("pg-a", "pg-b")] {
            let instructions = |t: &str| {
                aggregate(report, t, step, "server_instructions_per_op")
                    .unwrap_or_else(|| panic!("{t} {step}: no instructions/op"))
            };
            let (x, y) = (instructions(a), instructions(b));
            eprintln!(
                "{step}: {a} {x:.0}, {b} {y:.0} instructions/op ({:+.3}%)",
                100.0 * (y / x - 1.0)
            );
            assert!(x > 1000.0 && y > 1000.0, "{step}: {a} {x}, {b} {y}");
            if (y / x - 1.0).abs() >= 0.01 {
                gaps.push(format!("{step}: {a} {x} vs {b} {y}"));
            }
        }
    }
    gaps
}

#[test]
fn counted_twice_agree_and_a_known_difference_gets_its_verdict() {
    if !valgrind_installed() || !postgres_installed() {
        return;
    }
    // A read of each kind and a write: the write's foreground count (its backends, apart from
    // autovacuum's) agrees within 1% too.
    let steps = "point-query,read-only_range=10,update-index";
    // The same target counted twice agrees within 1%. Once, on a host busy with other tests,
    // PostgreSQL's point-query pair came out 1.9% apart (what a pass counts beyond the
    // operations, such as background processes' work, grows with how long it lasts): an A/A
    // gap is counted once more, from scratch, before it fails (the load tolerance is this
    // repeat, not a wider bound).
    let (mut report, mut by_pg, mut report_text) = count(steps);
    let gaps = aa_gaps(&report, steps);
    if !gaps.is_empty() {
        eprintln!("A/A gaps over 1% (counting again once): {gaps:?}");
        (report, by_pg, report_text) = count(steps);
        let gaps = aa_gaps(&report, steps);
        assert!(gaps.is_empty(), "counted twice, twice apart: {gaps:?}");
    }
    for step in steps.split(',') {
        let aggregate = |target: &str, metric: &str| aggregate(&report, target, step, metric);
        // PostgreSQL's client is dbdelta's own, counted too; SQLite's is in its engine's count.
        assert!(aggregate("pg-a", "client_instructions_per_op").is_some_and(|c| c > 100.0));
        assert_eq!(aggregate("sqlite-a", "client_instructions_per_op"), None);
        // A 10-page cache costs instructions: a regression from one repeat.
        let small = relative(&report, "sqlite-a", "sqlite-cache10", step);
        let test = &small["server_instructions_test"];
        assert_eq!(test["verdict"], "regression", "{step}: {test}");
        assert!(test["ratio"].as_f64().unwrap() > 1.02, "{step}: {test}");
        // Identical targets: SQLite's counts (in-process, deterministic) are `unchanged`, a
        // decision; PostgreSQL's are never a change, and unchanged where their pairs agree.
        let same = relative(&report, "sqlite-a", "sqlite-b", step);
        assert_eq!(
            same["server_instructions_test"]["verdict"], "unchanged",
            "{same}"
        );
        let pg = &relative(&by_pg, "pg-a", "pg-b", step)["server_instructions_test"];
        let verdict = pg["verdict"].as_str().unwrap();
        assert!(
            !matches!(verdict, "regression" | "improvement"),
            "{step}: identical PostgreSQL targets called {verdict}: {pg}"
        );
        eprintln!("{step}: pg-b vs pg-a {verdict}, range {}", pg["range"]);
    }
    functions_explain(&report, &by_pg, &report_text, steps);
}

/// The perf path's plumbing. These hosts' `perf stat` has no hardware
/// counters (`instructions:u` is `<not supported>`), so the test-only `DBDELTA_COUNT_EVENT`
/// stands a software event (`task-clock`, nanoseconds on the CPU) in for it: a SQLite and a
/// PostgreSQL 15 target are counted by `perf stat` over each pass's threads (SQLite's client
/// threads, where its engine runs; PostgreSQL's backends, by `pg_backend_pid()`, and the client
/// threads), with no valgrind. The report names the counter (JSON and text), each count is
/// positive and stored, and perf claims no background work.
#[test]
fn the_perf_path_counts_the_pass_threads_with_a_software_event_standing_in() {
    if !postgres_installed() || !perf_records() {
        return;
    }
    let dir = scratch();
    let lab = "[lab]\nname = \"perf-path\"\nrepeats = 1\ninstructions = true\n\
               [[target]]\nname = \"sqlite\"\nengine = \"sqlite\"\n\
               [[target]]\nname = \"pg\"\nengine = \"postgres\"\n";
    std::fs::write(dir.path().join("lab.toml"), lab).unwrap();
    let out = {
        let _lock = measuring();
        dbdelta(dir.path())
            .env("DBDELTA_COUNT_EVENT", "task-clock")
            .args(["run", "lab.toml", "--quick", "--only", "point-query"])
            .args(["--format", "json"])
            .output()
            .unwrap()
    };
    let log = text(&out.stderr);
    assert!(out.status.success(), "run failed: {log}");
    assert!(
        log.contains("instructions: counted by perf stat -e task-clock"),
        "the counter chosen is said: {log}"
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(schema_errors(&report), Vec::<String>::new());
    for target in ["sqlite", "pg"] {
        let row = (report["measurements"].as_array().unwrap().iter())
            .find(|m| m["target"] == target && m["step"] == "point-query")
            .unwrap_or_else(|| panic!("no {target} point-query row"));
        assert_eq!(
            row["instructions_counter"], "perf stat -e task-clock",
            "{row}"
        );
        let per_op = row["server_instructions_per_op"].as_f64();
        assert!(per_op.is_some_and(|v| v > 0.0), "{target}: {per_op:?}");
        assert_eq!(row["server_background_instructions_per_op"], Value::Null);
    }
    // PostgreSQL's client threads are counted apart from its backends.
    let pg_client = aggregate(&report, "pg", "point-query", "client_instructions_per_op");
    assert!(pg_client.is_some_and(|c| c > 0.0), "{pg_client:?}");
    // Stored: the text report, read back from the store, names the counter too.
    let out = run(dir.path(), &["report"]);
    assert!(out.status.success(), "report failed: {}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(
        shown.contains("Counted by perf stat -e task-clock in a counting pass"),
        "{shown}"
    );
}

/// Two identical SQLite targets and two identical MariaDB targets (Debian's), a read whose
/// passes spread (`read-only-distinct`) and a write, `--quick`, one repeat: every target's
/// pairs are spread over two server starts (stored with each pair's start), no identical pair
/// gets a regression or an improvement, and SQLite's is `unchanged`. Then `dbdelta calibrate`
/// stores SQLite's floor of one step, and the report of the same run shows it for the SQLite
/// pair (a number) and none for the step not calibrated (never an assumed one).
#[test]
fn identical_targets_over_two_starts_get_no_verdict_and_calibrated_floors_show() {
    let test = "identical_targets_over_two_starts";
    if !valgrind_installed() || !mariadb_installed(test) {
        return;
    }
    let steps = "read-only-distinct,update-index";
    let dir = scratch();
    let lab = "[lab]\nname = \"aa\"\nrepeats = 1\ninstructions = true\n\n\
               [[target]]\nname = \"sqlite-a\"\nengine = \"sqlite\"\n\n\
               [[target]]\nname = \"sqlite-b\"\nengine = \"sqlite\"\n\n\
               [[target]]\nname = \"maria-a\"\nengine = \"mariadb\"\n\n\
               [[target]]\nname = \"maria-b\"\nengine = \"mariadb\"\n";
    std::fs::write(dir.path().join("lab.toml"), lab).unwrap();
    let _lock = measuring();
    let args = [
        "-q", "run", "lab.toml", "--quick", "--only", steps, "--format", "json",
    ];
    let out = run(dir.path(), &args);
    assert!(out.status.success(), "run failed: {}", text(&out.stderr));
    let db = rusqlite::Connection::open(dir.path().join("dbdelta.db")).unwrap();
    let mut q = db
        .prepare("SELECT target, step, server_instructions_pairs FROM measurements")
        .unwrap();
    let rows: Vec<(String, String, String)> = q
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 8, "{rows:?}");
    for (target, step, pairs) in &rows {
        let pairs: Value = serde_json::from_str(pairs).unwrap();
        let starts: Vec<u64> = (pairs["starts"].as_array().unwrap().iter())
            .map(|s| s.as_u64().unwrap())
            .collect();
        assert!(
            starts.contains(&1) && starts.contains(&2),
            "{target} {step}: {pairs}"
        );
    }
    let by_maria = run(
        dir.path(),
        &["report", "--base", "maria-a", "--format", "json"],
    );
    let by_maria: Value = serde_json::from_slice(&by_maria.stdout).expect("a JSON report");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    for step in steps.split(',') {
        for (rep, a, b) in [
            (&report, "sqlite-a", "sqlite-b"),
            (&by_maria, "maria-a", "maria-b"),
        ] {
            let t = &relative(rep, a, b, step)["server_instructions_test"];
            let verdict = t["verdict"].as_str().unwrap();
            eprintln!("{step}: {b} vs {a}: {verdict}, range {}", t["range"]);
            assert!(
                !matches!(verdict, "regression" | "improvement"),
                "{step}: {t}"
            );
            assert!(a != "sqlite-a" || verdict == "unchanged", "{step}: {t}");
            assert!(t["floor"].is_null(), "no calibration yet: {t}");
        }
    }
    let cal = [
        "calibrate",
        "lab.toml",
        "--quick",
        "--only",
        "read-only-distinct",
    ];
    let out = run(dir.path(), &cal);
    assert!(
        out.status.success(),
        "calibrate failed: {}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("floors of sqlite"),
        "{}",
        text(&out.stdout)
    );
    let out = run(dir.path(), &["report", "--format", "json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let floor = &relative(&report, "sqlite-a", "sqlite-b", "read-only-distinct")["server_instructions_test"]
        ["floor"];
    assert!(
        floor.as_f64().is_some_and(|f| (0.0..0.01).contains(&f)),
        "{floor}"
    );
    let none =
        &relative(&report, "sqlite-a", "sqlite-b", "update-index")["server_instructions_test"];
    assert!(
        none["floor"].is_null(),
        "update-index was not calibrated: {none}"
    );
}
