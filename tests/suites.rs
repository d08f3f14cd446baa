//! The suite plug-in seam, end to end: `src/suites/probe/` (a test-only suite that is a
//! folder plus the registry's lines) runs through `dbdelta run` on SQLite, is stored and is
//! reported; the engine plug-in seam the same way with `src/engine/fake/` (a test-only engine
//! family: a folder plus the registry's lines). Test-only suites and engine families exist only
//! with `DBDELTA_TEST_SUITES` set.

mod common;
use common::*;

use std::path::{Path, PathBuf};

fn lab(dir: &Path) -> PathBuf {
    let path = dir.join("lab.toml");
    std::fs::write(
        &path,
        "[lab]\nname = \"probe lab\"\n\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n\n\
         [[target]]\nname = \"b\"\nengine = \"sqlite\"\nsettings = [\"synchronous = OFF\"]\n\n\
         [suite.probe]\nsecs = 0.3\n",
    )
    .unwrap();
    path
}

/// Run `lab` (the probe step on two targets) with the test switch; its one measurement per
/// target must have counted queries. Returns the text report of the store.
fn runs_the_probe(dir: &Path, lab: &Path) -> String {
    let out = dbdelta(dir)
        .env("DBDELTA_TEST_SUITES", "1")
        .args(["run", lab.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = json["measurements"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "one step × two targets: {rows:?}");
    for m in rows {
        assert_eq!(m["step"], "probe.select", "{m}");
        assert!(m["qps"].as_f64().unwrap() > 0.0, "{m}");
    }
    let report = dbdelta(dir).args(["report"]).output().unwrap();
    text(&report.stdout)
}

#[test]
fn a_test_only_suite_runs_end_to_end() {
    let _lock = measuring();
    let dir = tempfile::tempdir().unwrap();
    let lab = lab(dir.path());
    let report = runs_the_probe(dir.path(), &lab);
    assert!(report.contains("probe.select"), "{report}");
}

#[test]
fn test_only_suites_are_unknown_without_the_switch() {
    let dir = tempfile::tempdir().unwrap();
    let lab = lab(dir.path());
    let out = run(dir.path(), &["run", lab.to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains(
            "[suite.probe] unknown field `probe`, expected one of `sysbench`, `insert`, `linkbench`"
        ),
        "{err}"
    );
    let dry = dbdelta(dir.path())
        .env("DBDELTA_TEST_SUITES", "1")
        .args(["run", lab.to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    assert!(dry.status.success(), "{}", text(&dry.stderr));
    let plan = text(&dry.stdout);
    assert!(plan.contains("probe: one-row reads for 0.3 s"), "{plan}");
    assert!(
        plan.contains("probe steps (1 reported): probe.select"),
        "{plan}"
    );
}

/// The engine plug-in seam: `src/engine/fake/` (a test-only engine family that is a folder plus
/// the registry's lines) runs the probe suite through `dbdelta run`, is stored and is reported;
/// without the switch a lab cannot name it.
#[test]
fn a_test_only_engine_family_runs_end_to_end() {
    let _lock = measuring();
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().join("lab.toml");
    std::fs::write(
        &lab,
        "[lab]\nname = \"fake lab\"\n\n[[target]]\nname = \"a\"\nengine = \"fake\"\n\n\
         [[target]]\nname = \"b\"\nengine = \"fake\"\nsettings = [\"mode = b\"]\n\n\
         [suite.probe]\nsecs = 0.3\n",
    )
    .unwrap();
    let out = run(dir.path(), &["run", lab.to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(err.contains("unknown engine \"fake\""), "{err}");
    let report = runs_the_probe(dir.path(), &lab);
    assert!(report.contains("fake 1"), "{report}");
}

/// A family brings what it offers in its own folder: with the switch, the fake's starter lab is
/// `init`'s and plans as written, and `dbdelta build fake` compiles its source with the fake's
/// own recipe through provision's build driver, which names no engine; without the switch
/// neither is offered.
#[test]
fn a_test_only_family_brings_its_starter_lab_and_its_build() {
    let dir = tempfile::tempdir().unwrap();
    let with_switch = |args: &[&str]| {
        dbdelta(dir.path())
            .env("DBDELTA_TEST_SUITES", "1")
            .env("DBDELTA_CACHE", dir.path().join("cache"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(dir.path(), &["init", "plain.toml", "--engine", "fake"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("no starter lab"),
        "{}",
        text(&out.stderr)
    );
    let out = with_switch(&["init", "lab.toml", "--engine", "fake"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lab = std::fs::read_to_string(dir.path().join("lab.toml")).unwrap();
    assert!(
        lab.contains("engine = \"fake\"") && lab.contains("mode = b"),
        "{lab}"
    );
    let out = with_switch(&["plan", "lab.toml", "--quick"]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let src = dir.path().join("fake-src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("fake.c"), "int main(void) { return 0; }\n").unwrap();
    std::fs::write(src.join("VERSION"), "1.2.3\n").unwrap();
    let source = src.to_str().unwrap();
    let out = with_switch(&["build", "fake", "--source", source, "--variant", "o2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let bin = PathBuf::from(text(&out.stdout).trim());
    assert!(bin.join("fake").is_file(), "{}", bin.display());
    assert!(
        bin.starts_with(dir.path().join("cache")),
        "{}",
        bin.display()
    );
    let out = run(dir.path(), &["build", "fake", "--source", source]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
