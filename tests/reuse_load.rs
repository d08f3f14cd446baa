//! `reuse_load`: the second run of a lab copies its load from the snapshot the first one saved
//! (and says so, and the report's Load table says "reused"); another scale refuses that
//! snapshot naming what differs and loads afresh; a damaged snapshot is refused and removed;
//! `clean --snapshots` removes them. SQLite, and PostgreSQL (Debian's `postgresql-15`; without
//! it the test prints a note and passes locally, but fails under CI).

mod common;
use common::*;

use std::path::{Path, PathBuf};

fn lab(dir: &Path, engine: &str, rows: u64) -> PathBuf {
    let body = format!(
        "[lab]\nname = \"reuse\"\nreuse_load = true\n\n[[target]]\nname = \"t\"\nengine = \"{engine}\"\n\n\
         [suite.sysbench]\nrows = {rows}\n"
    );
    let path = dir.join("lab.toml");
    std::fs::write(&path, body).unwrap();
    path
}

/// One quick run of `point-query`: (stderr, the JSON report).
fn run_lab(dir: &Path, lab: &Path) -> (String, serde_json::Value) {
    let lab = lab.to_str().unwrap();
    let args = [
        "--store",
        "s.db",
        "run",
        lab,
        "--quick",
        "--only",
        "point-query",
        "--workdir",
        "work",
        "--format",
        "json",
    ];
    let out = run(dir, &args);
    let err = text(&out.stderr);
    assert!(out.status.success(), "dbdelta run failed:\n{err}");
    let report = serde_json::from_slice(&out.stdout).expect("a JSON report");
    (err, report)
}

fn reused(report: &serde_json::Value) -> Option<String> {
    report["loads"][0]["reused"].as_str().map(str::to_string)
}

fn second_run_reuses_and_another_scale_loads_afresh(engine: &str) {
    let _lock = measuring();
    let dir = scratch();
    let d = dir.path();
    let (first, report) = run_lab(d, &lab(d, engine, 2000));
    assert!(first.contains("loaded 2,000 rows"), "{first}");
    assert!(
        first.contains("load: saved snapshot t.sysbench."),
        "{first}"
    );
    assert_eq!(reused(&report), None, "the first run loaded");

    let (second, report) = run_lab(d, &lab(d, engine, 2000));
    assert!(
        second.contains("load: reused snapshot t.sysbench."),
        "{second}"
    );
    assert!(!second.contains("loaded 2,000 rows"), "{second}");
    let from = reused(&report).expect("the report says the load was reused");
    assert!(from.starts_with("snapshot t.sysbench."), "{from}");
    let text_report = text(&run(d, &["--store", "s.db", "report"]).stdout);
    assert!(text_report.contains("| reused |"), "{text_report}");

    // Another scale: the snapshot is refused naming the rows, the load runs and is saved.
    let (third, report) = run_lab(d, &lab(d, engine, 3000));
    assert!(third.contains("no snapshot of this key"), "{third}");
    assert!(
        third.contains("rows=2000\", not \"sysbench tables=1 rows=3000"),
        "{third}"
    );
    assert!(third.contains("loaded 3,000 rows"), "{third}");
    assert_eq!(reused(&report), None);

    // A changed file: refused, removed, loaded afresh.
    let snapshots = d.join("work/snapshots");
    let damaged = damage_one(&snapshots, "rows=3000");
    let (fourth, _) = run_lab(d, &lab(d, engine, 3000));
    assert!(fourth.contains("is damaged"), "{fourth}");
    assert!(fourth.contains(&damaged), "{fourth}");
    assert!(fourth.contains("loaded 3,000 rows"), "{fourth}");

    let out = run(d, &["clean", "--workdir", "work", "--snapshots"]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert_eq!(
        said.matches("removed snapshot t.sysbench.").count(),
        2,
        "{said}"
    );
    assert!(
        !snapshots.exists(),
        "clean --snapshots left {}",
        snapshots.display()
    );
}

/// Append a byte to the largest file of the snapshot whose manifest holds `key`: its
/// relative path.
fn damage_one(snapshots: &Path, key: &str) -> String {
    let snap = std::fs::read_dir(snapshots)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| std::fs::read_to_string(p.join("manifest.json")).is_ok_and(|m| m.contains(key)))
        .expect("the snapshot of that key");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(snap.join("manifest.json")).unwrap())
            .unwrap();
    let files = manifest["files"].as_object().unwrap();
    let (largest, _) = files
        .iter()
        .max_by_key(|(_, v)| v[0].as_u64().unwrap())
        .unwrap();
    let path = snap.join("data").join(largest);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.push(0);
    std::fs::write(&path, bytes).unwrap();
    largest.clone()
}

#[test]
fn sqlite_second_run_reuses_its_load_and_another_scale_loads_afresh() {
    second_run_reuses_and_another_scale_loads_afresh("sqlite");
}

#[test]
fn postgres_second_run_reuses_its_load_and_another_scale_loads_afresh() {
    if !postgres_installed() {
        return;
    }
    second_run_reuses_and_another_scale_loads_afresh("postgres");
}

#[test]
fn a_running_server_cannot_reuse_a_load() {
    let dir = scratch();
    let d = dir.path();
    let body = "[lab]\nname = \"r\"\n\n[[target]]\nname = \"there\"\nengine = \"postgres\"\n\
                connect = \"postgres://u@127.0.0.1:1/db\"\n";
    std::fs::write(d.join("lab.toml"), body).unwrap();
    let out = run(d, &["run", "lab.toml", "--reuse-load", "--dry-run"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("target there: reuse_load (--reuse-load) needs a server dbdelta starts"),
        "{err}"
    );
}
