//! End-to-end tests: the real `dbdelta` binary, real embedded SQLite, tiny data.
//!
//! Runs that measure take a global lock so that two of them never share the CPUs (measurements
//! on a 2-core machine are only comparable when nothing else runs). Input-error tests need no
//! lock: they must fail before anything starts.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rusqlite::Connection;

/// A lab with tiny tables and short steps.
fn lab(dir: &Path, targets: &str, sysbench: &str) -> PathBuf {
    let body = format!(
        "[lab]\nname = \"test lab\"\n\n{targets}\n[suite.sysbench]\nrows = 2000\nwarmup_secs = 0.2\n{sysbench}\n"
    );
    let path = dir.join("lab.toml");
    std::fs::write(&path, body).unwrap();
    path
}

const ONE_TARGET: &str = "[[target]]\nname = \"a\"\nengine = \"sqlite\"\n";

fn store(dir: &Path) -> Connection {
    Connection::open(dir.join("dbdelta.db")).unwrap()
}

fn markdown_table_lines(s: &str) -> usize {
    s.lines()
        .filter(|l| l.starts_with('|') && l.ends_with('|'))
        .count()
}

#[test]
fn demo_runs_reports_and_writes_the_store() {
    let _lock = measuring();
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = run(dir.path(), &["run", "--quick"]);
    let took = started.elapsed();
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    // Planned at about 35 s; generous for a loaded 2-core host.
    assert!(
        took < Duration::from_secs(120),
        "--quick (2 targets × 14 steps × 3 repeats) took {took:?}"
    );
    let report = text(&out.stdout);
    for step in [
        "update-index",
        "point-query.pre",
        "random-points.pre_range=10",
        "range-covered-pk.pre",
        "insert",
    ] {
        assert!(report.contains(step), "report lacks {step}:\n{report}");
    }
    assert!(!report.contains("read-only"), "the demo's subset: {report}");
    assert!(dir.path().join("dbdelta.db").exists());
    assert!(
        !dir.path().join("dbdelta-work").exists(),
        "work directory left behind"
    );

    // JSON validates against the schema in the repository.
    let out = run(dir.path(), &["report", "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors = schema_errors(&json);
    assert!(errors.is_empty(), "schema violations: {errors:?}");
    assert_eq!(json["schema_version"], 4);
    // v2: each sysbench step is one closed-loop role with one operation type, counted.
    for m in json["measurements"].as_array().unwrap() {
        let ops = m["operations"].as_array().unwrap();
        assert_eq!(ops.len(), 1, "{m}");
        assert_eq!(ops[0]["role"], "client");
        assert_eq!(ops[0]["op"], m["step"]);
        assert_eq!(ops[0]["counted"], true);
        assert_eq!(
            ops[0]["units"], m["ops"],
            "its units are the step's statements"
        );
    }
    assert_eq!(
        json["measurements"].as_array().unwrap().len(),
        84,
        "14 steps (the demo's only) × 2 targets × 3 repeats"
    );
    let relative = json["relative"].as_array().unwrap();
    assert_eq!(
        relative.len(),
        14,
        "one relative row per step for the non-base target"
    );
    for r in relative {
        assert!(r["qps"].as_f64().unwrap() > 0.0);
        // Which verdict depends on the host's noise at --quick scale; that there is one
        // does not.
        assert!(r["verdict"].is_string(), "3 repeats give verdicts: {r}");
    }

    // Markdown is a Markdown table.
    let out = run(dir.path(), &["report", "--format", "md"]);
    assert!(out.status.success());
    let md = text(&out.stdout);
    assert!(markdown_table_lines(&md) >= 8, "{md}");
    assert!(
        md.lines()
            .any(|l| l.starts_with("|") && l.replace(['|', '-', ':', ' '], "").is_empty()),
        "no Markdown header separator:\n{md}"
    );
}

#[test]
fn point_query_measured_twice_agrees_and_counts_are_exact() {
    let _lock = measuring();
    let dir = tempfile::tempdir().unwrap();
    let lab = lab(dir.path(), ONE_TARGET, "read_secs = 1.5\nwrite_secs = 0.5");
    let mut args = vec!["run", lab.to_str().unwrap(), "--repeats", "2", "-q"];
    for step in [
        "update-index",
        "read-only_range=10",
        "point-query",
        "random-points_range=100",
        "range-covered-pk",
        "insert",
    ] {
        args.extend(["--only", step]);
    }
    let out = run(dir.path(), &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let db = store(dir.path());
    let mut stmt = db
        .prepare(
            "SELECT step, repeat, ops, events, statements_per_event, seconds, qps, tps
             FROM measurements ORDER BY rowid",
        )
        .unwrap();
    struct Row {
        step: String,
        ops: i64,
        events: i64,
        spe: i64,
        seconds: f64,
        qps: f64,
        tps: f64,
    }
    let rows: Vec<Row> = stmt
        .query_map([], |r| {
            Ok(Row {
                step: r.get(0)?,
                ops: r.get(2)?,
                events: r.get(3)?,
                spe: r.get(4)?,
                seconds: r.get(5)?,
                qps: r.get(6)?,
                tps: r.get(7)?,
            })
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 12, "6 steps × 2 repeats");
    for Row {
        step,
        ops,
        events,
        spe,
        seconds,
        qps,
        tps,
    } in &rows
    {
        assert!(*events > 0, "{step} ran no event");
        assert_eq!(
            *ops,
            events * spe,
            "{step}: ops must be events × statements per event"
        );
        assert!(
            (qps - *ops as f64 / seconds).abs() < 1e-6 * qps,
            "{step}: qps = ops / seconds"
        );
        assert!((tps - *events as f64 / seconds).abs() < 1e-6 * tps);
        let expected = if step.starts_with("update") || step == "insert" {
            0.5
        } else {
            1.5
        };
        assert!(
            *seconds >= expected - 0.05 && *seconds < expected + 0.5,
            "{step}: measured {seconds} s, configured {expected} s (warm-up must be excluded)"
        );
    }
    let spe = |label: &str| rows.iter().find(|r| r.step == label).unwrap().spe;
    assert_eq!(
        spe("read-only_range=10"),
        16,
        "BEGIN + 10 points + 4 ranges + COMMIT"
    );
    assert_eq!(spe("point-query"), 1);
    let pq: Vec<f64> = rows
        .iter()
        .filter(|r| r.step == "point-query")
        .map(|r| r.qps)
        .collect();
    let ratio = pq[0] / pq[1];
    assert!(
        (0.5..2.0).contains(&ratio),
        "point-query QPS of two repeats: {pq:?}"
    );
}

#[test]
fn sigkill_keeps_finished_steps_and_marks_the_run_incomplete() {
    let _lock = measuring();
    let dir = tempfile::tempdir().unwrap();
    let lab = lab(dir.path(), ONE_TARGET, "read_secs = 1\nwrite_secs = 1");
    let mut child = dbdelta(dir.path())
        .args(["run", lab.to_str().unwrap(), "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let db_path = dir.path().join("dbdelta.db");
    let deadline = Instant::now() + Duration::from_secs(30);
    let count = |db: &Path| -> i64 {
        Connection::open(db)
            .and_then(|c| c.query_row("SELECT count(*) FROM measurements", [], |r| r.get(0)))
            .unwrap_or(0)
    };
    // point-query.warm, scan.warmpre, update-inlist, update-index
    while !(db_path.exists() && count(&db_path) >= 4) {
        assert!(Instant::now() < deadline, "no step finished in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let db = store(dir.path());
    let (complete, finished): (bool, Option<String>) = db
        .query_row("SELECT complete, finished FROM runs", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert!(
        !complete && finished.is_none(),
        "a killed run must stay incomplete"
    );
    let stored: i64 = db
        .query_row("SELECT count(*) FROM measurements", [], |r| r.get(0))
        .unwrap();
    assert!(
        (4..36).contains(&stored),
        "finished steps are kept: {stored}"
    );
    let with_data: i64 = db
        .query_row(
            "SELECT count(*) FROM measurements WHERE ops > 0 AND qps > 0 AND histogram IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(with_data, stored, "every stored step is whole");

    let out = run(dir.path(), &["report"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.to_lowercase().contains("incomplete"), "{report}");
    assert!(report.contains("update-index"), "{report}");
}

#[test]
fn ctrl_c_stops_cleans_up_and_keeps_what_finished() {
    let _lock = measuring();
    let dir = tempfile::tempdir().unwrap();
    let lab = lab(dir.path(), ONE_TARGET, "read_secs = 1\nwrite_secs = 1");
    let child = dbdelta(dir.path())
        .args(["run", lab.to_str().unwrap(), "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let db_path = dir.path().join("dbdelta.db");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n: i64 = Connection::open(&db_path)
            .and_then(|c| c.query_row("SELECT count(*) FROM measurements", [], |r| r.get(0)))
            .unwrap_or(0);
        if n >= 1 {
            break;
        }
        assert!(Instant::now() < deadline, "no step finished in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: sending a signal to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("incomplete"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !dir.path().join("dbdelta-work").exists(),
        "data directories must be removed"
    );
    let complete: bool = store(dir.path())
        .query_row("SELECT complete FROM runs", [], |r| r.get(0))
        .unwrap();
    assert!(!complete);
}

#[test]
fn a_target_with_a_bad_setting_fails_alone() {
    let _lock = measuring();
    let dir = tempfile::tempdir().unwrap();
    let targets = "[[target]]\nname = \"good\"\nengine = \"sqlite\"\n\n\
                   [[target]]\nname = \"typo\"\nengine = \"sqlite\"\nsettings = [\"synchronus = OFF\"]\n";
    let lab = lab(dir.path(), targets, "read_secs = 0.3\nwrite_secs = 0.3");
    let out = run(
        dir.path(),
        &["run", lab.to_str().unwrap(), "--only", "point-query", "-q"],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed target makes the run exit 1"
    );
    let err = text(&out.stderr);
    assert!(err.contains("synchronus") && err.contains("typo"), "{err}");
    let db = store(dir.path());
    let (failed, error): (bool, String) = db
        .query_row(
            "SELECT failed, error FROM targets WHERE name = 'typo'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(failed && error.contains("synchronus"));
    let good: i64 = db
        .query_row(
            "SELECT count(*) FROM measurements WHERE target = 'good'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(good, 1, "the good target still ran");
}

/// Each bad input: one line on stderr naming the problem, exit code 2, nothing written.
#[test]
fn bad_input_is_one_line_exit_2_and_writes_nothing() {
    let cases: Vec<(&str, String, Vec<&str>, &str)> = vec![
        (
            "unknown key",
            "rowz = 10\n".into(),
            vec![],
            "unknown field `rowz`",
        ),
        (
            "wrong type",
            "tables = \"many\"\n".into(),
            vec![],
            "tables: invalid type",
        ),
        ("duplicate target", String::new(), vec![], "is used twice"),
        (
            "missing config",
            String::new(),
            vec![],
            "cannot read config file",
        ),
        (
            "zero clients",
            String::new(),
            vec!["--clients", "0"],
            "--clients 0:",
        ),
        // These were a panic (exit 101), an abort (exit 134) and unstated ranges before.
        (
            "huge step",
            "write_secs = 1e20\n".into(),
            vec![],
            "lab.toml:11: [suite.sysbench] write_secs: write_secs must be a number of seconds above 0 and at most 604800 (7 days), not 1e20",
        ),
        (
            "tables at its line",
            "tables = 0\n".into(),
            vec![],
            "lab.toml:11: [suite.sysbench] tables: tables must be from 1 to 1000",
        ),
        (
            "huge repeats",
            String::new(),
            vec!["--repeats", "4294967295", "--dry-run"],
            "4294967295 is not in 1..=1000",
        ),
        (
            "too many cells",
            String::new(),
            vec!["--repeats", "1000", "--clients", "1,2,3,4,5,6,7,8,9,10,11"],
            "the plan has 11000 cells",
        ),
        (
            "clients cap",
            String::new(),
            vec!["--clients", "100000"],
            "client counts from 1 to 10000",
        ),
        (
            "unknown flag",
            String::new(),
            vec!["--frob"],
            "unexpected argument '--frob' found",
        ),
        (
            "missing store dir",
            String::new(),
            vec!["--store", "no/such/dir/x.db"],
            "the directory no/such/dir does not exist",
        ),
    ];
    for (name, sysbench, extra, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let targets = match name {
            "duplicate target" => format!("{ONE_TARGET}\n{ONE_TARGET}"),
            "missing config" => format!("{ONE_TARGET}config = \"nope.conf\"\n"),
            _ => ONE_TARGET.to_string(),
        };
        let lab = lab(dir.path(), &targets, &sysbench);
        let mut args = vec!["run", lab.to_str().unwrap()];
        args.extend(extra);
        let out = run(dir.path(), &args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{name}: not one line: {err}"
        );
        assert!(err.starts_with("error: "), "{name}: {err}");
        assert!(err.contains(expected), "{name}: {err}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n != "lab.toml")
            .collect();
        assert!(left.is_empty(), "{name}: wrote {left:?}");
    }
}

#[test]
fn a_store_that_is_a_directory_or_another_file_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let lab = lab(dir.path(), ONE_TARGET, "");
    let notes = dir.path().join("notes.txt");
    let text_before = "these are notes, not a database; long enough for a header......";
    std::fs::write(&notes, text_before).unwrap();
    for (store, expected) in [
        (dir.path().to_path_buf(), "is a directory"),
        (notes.clone(), "is not a dbdelta results store"),
    ] {
        let out = run(
            dir.path(),
            &[
                "--store",
                store.to_str().unwrap(),
                "run",
                lab.to_str().unwrap(),
                "--quick",
            ],
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
        assert!(err.contains(expected), "{err}");
    }
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        text_before,
        "the foreign file is untouched"
    );
    assert!(
        !dir.path().join("dbdelta-work").exists(),
        "no work directory"
    );
}

#[test]
fn a_workdir_that_is_a_file_or_a_lab_not_in_utf8_is_bad_input_before_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let lab = lab(dir.path(), ONE_TARGET, "");
    std::fs::write(dir.path().join("afile"), "").unwrap();
    let out = run(
        dir.path(),
        &[
            "run",
            lab.to_str().unwrap(),
            "--quick",
            "--workdir",
            "afile",
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--workdir afile: afile is a file, not a directory"),
        "{err}"
    );
    assert!(
        !dir.path().join("dbdelta.db").exists(),
        "no store was created"
    );

    std::fs::write(&lab, b"[lab]\nname = \"caf\xe9\"\n").unwrap();
    let out = run(dir.path(), &["run", lab.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("lab.toml:2: is not UTF-8 text"), "{err}");
}

#[test]
fn report_without_a_store_says_how_to_get_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["report"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("run `dbdelta run` first"));
    assert!(!dir.path().join("dbdelta.db").exists());
}

#[test]
fn list_steps_shows_the_catalog_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["list", "steps"]);
    assert!(out.status.success());
    let s = text(&out.stdout);
    let labels: Vec<&str> = s
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(labels.len(), 51, "every step, .pre and warm ones too: {s}");
    assert_eq!(
        &labels[..4],
        [
            "point-query.warm",
            "scan.warmpre",
            "point-query.pre",
            "random-points.pre_range=10"
        ]
    );
    assert_eq!(labels[50], "insert");
    assert!(
        s.lines().any(|l| l.starts_with("read-only_range=10 ")
            && l.contains("range-agg")
            && l.contains(" 16  read_secs")
            && l.contains("BEGIN, 10×point, range 10, sum 10, order 10, distinct 10, COMMIT")),
        "{s}"
    );
    assert!(
        s.lines()
            .any(|l| l.starts_with("write-only ") && l.contains(" 6  read_secs")),
        "write-only uses read_secs: {s}"
    );
}

#[test]
fn dry_run_prints_the_plan_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["run", "--dry-run", "--clients", "1,2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(s.contains("sqlite.sync-full@c2r1"), "{s}");
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "dry run wrote files"
    );
}

#[test]
fn png_dir_that_is_a_file_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("charts"), "not a directory").unwrap();
    for args in [
        &["report", "--png", "charts"][..],
        &["run", "--quick", "--png", "charts"][..],
    ] {
        let out = run(dir.path(), args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let err = text(&out.stderr);
        assert!(
            err.contains("--png charts") && err.contains("not a directory"),
            "{err}"
        );
        assert!(!dir.path().join("dbdelta.db").exists(), "nothing written");
    }
}
