//! CPU profiles end to end: a profiled `--quick` run of one PostgreSQL step (Debian's server)
//! and one SQLite step, each with two targets, then `dbdelta profile` writes the folded
//! profiles and flame graphs, and the HTML report embeds the differential flame graph. A run
//! without `perf` on PATH is refused before its first cell, saying why.
//!
//! Needs `perf` (Debian's `linux-perf`, installed by `.ci/run`) able to record; without it the
//! profiling tests print why and pass, except under CI (`CI` set), where that is a failure.

mod common;
use common::*;

use std::path::Path;

/// A profiled lab of two targets of `engine` (the second with `setting`).
fn lab(dir: &Path, engine: &str, setting: &str) -> std::path::PathBuf {
    let path = dir.join("lab.toml");
    std::fs::write(
        &path,
        format!(
            "[lab]\nname = \"profile test\"\nprofile = true\n\n\
             [[target]]\nname = \"a\"\nengine = \"{engine}\"\n\n\
             [[target]]\nname = \"b\"\nengine = \"{engine}\"\nsettings = [\"{setting}\"]\n"
        ),
    )
    .unwrap();
    path
}

/// Profile `step` of both targets, then check the folded profiles name `functions` of the
/// engine, and that the HTML report holds the differential flame graph.
fn profiled_step(engine: &str, setting: &str, step: &str, functions: &[&str]) {
    let dir = scratch();
    let lab = lab(dir.path(), engine, setting);
    {
        let _lock = measuring();
        let out = run(
            dir.path(),
            &[
                "-q",
                "run",
                lab.to_str().unwrap(),
                "--quick",
                // 1 s, not --quick's 0.3 s: under a load average of 7 a 0.3 s step left one
                // target's perf with no sample (and no profile file) while the other had some.
                "--time",
                "1",
                "--only",
                step,
            ],
        );
        assert!(out.status.success(), "run failed: {}", text(&out.stderr));
    }
    let files = dir.path().join("profiles");
    let out = run(
        dir.path(),
        &["profile", "latest", step, "-o", files.to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "profile failed: {}",
        text(&out.stderr)
    );
    let listed = text(&out.stdout);
    for target in ["a", "b"] {
        let folded = files.join(format!("{step}-c1-{target}.folded"));
        assert!(listed.contains(folded.to_str().unwrap()), "{listed}");
        let stacks = std::fs::read_to_string(&folded).unwrap();
        assert!(!stacks.trim().is_empty(), "{target}: empty folded profile");
        assert!(
            functions.iter().any(|f| stacks.contains(f)),
            "{target}: none of {functions:?} in\n{}",
            &stacks[..stacks.len().min(2000)]
        );
        let svg = std::fs::read_to_string(files.join(format!("{step}-c1-{target}.svg"))).unwrap();
        assert!(svg.contains("<svg"), "{target}: no SVG");
    }
    assert!(
        files.join(format!("{step}-c1-b-vs-a.diff.svg")).is_file(),
        "{listed}"
    );

    let out = run(dir.path(), &["report", "--format", "html"]);
    assert!(out.status.success(), "report failed: {}", text(&out.stderr));
    let html = text(&out.stdout);
    let at = html
        .find("<figure class=\"flame\"><svg")
        .expect("a flame graph in the HTML");
    assert!(
        html[at..].contains("b against a"),
        "the differential's title"
    );
    let out = run(dir.path(), &["report"]);
    assert!(text(&out.stdout).contains(&format!("{step}, clients = 1: b against a")));
}

#[test]
fn a_postgres_step_is_profiled_with_its_functions() {
    if !postgres_installed() || !perf_records() {
        return;
    }
    profiled_step(
        "postgres",
        "shared_buffers = 16MB",
        "point-query",
        &[
            "PostgresMain",
            "exec_bind_message",
            "ExecScan",
            "pg_plan_query",
        ],
    );
}

#[test]
fn a_sqlite_step_is_profiled_with_its_functions() {
    if !perf_records() {
        return;
    }
    profiled_step(
        "sqlite",
        "cache_size = -4000",
        "point-query",
        &["sqlite3VdbeExec", "sqlite3_step", "sqlite3BtreeTableMoveto"],
    );
}

#[test]
fn without_perf_a_profiled_run_is_refused_before_its_first_cell() {
    let dir = scratch();
    let lab = lab(dir.path(), "sqlite", "cache_size = -4000");
    let empty = dir.path().join("no-perf-here");
    std::fs::create_dir(&empty).unwrap();
    let out = dbdelta(dir.path())
        .env("PATH", &empty)
        .args([
            "run",
            lab.to_str().unwrap(),
            "--quick",
            "--only",
            "point-query",
        ])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    // It went on without profiles before; the reports of such stored runs still say why
    // (`report::tests`).
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("perf is not on PATH") && err.contains("apt-get install linux-perf"),
        "{err}"
    );
    assert!(!dir.path().join("dbdelta.db").exists(), "nothing stored");
}
