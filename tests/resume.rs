//! `dbdelta run --resume` end to end: a run killed with kill -9 in its
//! second target, resumed, reports the same set of cells as a run that was never interrupted,
//! with the resumed cells marked; on SQLite and on Debian's PostgreSQL (whose server outlives
//! the killed dbdelta and must be found and stopped). Also: a lab file that changed the plan is
//! refused, and `dbdelta clean` removes only what a dead run left.

mod common;
use common::faults::*;
use common::*;

use std::path::Path;

/// Run `engine`'s two-target lab once whole, and once killed (SIGKILL) inside its second target
/// then resumed; the two reports must hold the same cells.
fn killed_and_resumed_equals_uninterrupted(engine: &str) {
    let _lock = measuring();
    let dir = scratch();
    let lab = two_target_lab(dir.path(), engine);

    let whole = run(dir.path(), &to_str(&run_args(&lab, "whole.db")));
    assert!(whole.status.success(), "{}", text(&whole.stderr));
    let whole: serde_json::Value = serde_json::from_slice(&whole.stdout).unwrap();

    let mut child = start(dir.path(), &lab, "killed.db");
    let db = dir.path().join("killed.db");
    wait_for_second_target(&db, &mut child);
    signal(child.id(), libc::SIGKILL);
    child.wait().unwrap();
    let orphans = servers_under(dir.path());
    if engine == "postgres" {
        assert!(
            !orphans.is_empty(),
            "kill -9 of dbdelta leaves its PostgreSQL server running (the case to handle)"
        );
    }
    let stored_b = count(&db, "SELECT count(*) FROM measurements WHERE target = 'b'");
    assert!(stored_b >= 1, "the cut-off cell had stored a step");

    let out = resume(dir.path(), "killed.db", None);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("removing stale"),
        "the stale run directory is named: {err}"
    );
    assert!(
        err.contains("b c=1 r=1 sysbench: cut off after"),
        "the cut-off cell reruns whole: {err}"
    );
    assert!(settle(dir.path()).is_empty(), "no process left");
    let resumed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema_errors(&resumed), Vec::<String>::new());

    assert_eq!(
        cells(&resumed),
        cells(&whole),
        "the same cells as a whole run"
    );
    assert_eq!(resumed["run"]["complete"], true);
    let inv = resumed["run"]["invocations"].as_array().unwrap();
    assert_eq!(inv.len(), 2, "{inv:?}");
    assert!(
        inv[0]["finished"].is_null(),
        "the killed invocation never finished"
    );
    assert_eq!(inv[1]["cells"], serde_json::json!(["b c=1 r=1"]));
    assert_eq!(
        invocations_by_target(&resumed),
        [("a".into(), 1), ("b".into(), 2)].into(),
        "a's cell is kept from invocation 1, b's ran in the resume"
    );
    for format in ["text", "md"] {
        let out = run(
            dir.path(),
            &["--store", "killed.db", "report", "--format", format],
        );
        let report = text(&out.stdout);
        assert!(
            report.contains("invocation 2 (run --resume)") && report.contains("b c=1 r=1"),
            "{report}"
        );
    }
    let work = dir.path().join("dbdelta-work");
    assert!(
        std::fs::read_dir(&work).is_ok_and(|mut d| d.next().is_none()),
        "the resumed run leaves no data directory in {}",
        work.display()
    );
}

fn to_str(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn sqlite_killed_in_its_second_target_resumes_to_the_same_cells() {
    killed_and_resumed_equals_uninterrupted("sqlite");
}

#[test]
fn postgres_killed_in_its_second_target_resumes_to_the_same_cells() {
    if !postgres_installed() {
        return;
    }
    killed_and_resumed_equals_uninterrupted("postgres");
}

/// Kill a SQLite run in its second target; the run is left incomplete in `killed.db`.
fn killed_run(dir: &Path, lab: &Path) -> String {
    let mut child = start(dir, lab, "killed.db");
    let db = dir.join("killed.db");
    wait_for_second_target(&db, &mut child);
    signal(child.id(), libc::SIGKILL);
    child.wait().unwrap();
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row("SELECT id FROM runs", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_lab_file_that_changes_the_plan_is_refused_and_clean_removes_what_a_dead_run_left() {
    let _lock = measuring();
    let dir = scratch();
    let lab = two_target_lab(dir.path(), "sqlite");
    let run_id = killed_run(dir.path(), &lab);
    let original = std::fs::read_to_string(&lab).unwrap();

    std::fs::write(
        &lab,
        original.replace("synchronous = OFF", "synchronous = NORMAL"),
    )
    .unwrap();
    let out = resume(dir.path(), "killed.db", Some(&run_id));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("changed since the run started")
            && err.contains("target b: settings")
            && err.contains("NORMAL")
            && err.lines().count() == 1,
        "{err}"
    );
    // A comment changes no plan.
    std::fs::write(&lab, format!("# resumed\n{original}")).unwrap();

    // A new run names what the dead one left; clean removes it and nothing else.
    let work = dir.path().join("dbdelta-work");
    let foreign = work.join("not-dbdelta");
    std::fs::create_dir_all(&foreign).unwrap();
    let out = run(
        dir.path(),
        &[
            "--store",
            "other.db",
            "run",
            lab.to_str().unwrap(),
            "--quick",
            "--only",
            "point-query",
        ],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("stale dbdelta-work/{run_id}")) && err.contains("dbdelta clean"),
        "{err}"
    );
    let listed = run(dir.path(), &["clean", "--dry-run"]);
    let listed_text = text(&listed.stdout);
    assert!(
        listed_text.contains(&format!("would remove dbdelta-work/{run_id}")),
        "{listed_text}"
    );
    let cleaned = run(dir.path(), &["clean"]);
    assert!(cleaned.status.success(), "{}", text(&cleaned.stderr));
    assert!(!work.join(&run_id).exists() && foreign.exists());
    assert!(text(&run(dir.path(), &["clean"]).stdout).contains("nothing left"));

    // With its data directories gone, the run still resumes (cut-off cells rerun anyway).
    let out = resume(dir.path(), "killed.db", None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["run"]["complete"], true);
    assert_eq!(report["run"]["invocations"].as_array().unwrap().len(), 2);
    // Nothing is left to resume now.
    let again = resume(dir.path(), "killed.db", None);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again.stderr));
    let again = resume(dir.path(), "killed.db", Some(&run_id));
    assert!(
        text(&again.stderr).contains("nothing to resume"),
        "{}",
        text(&again.stderr)
    );
}

/// A `config =` file edited after the run started would make the resumed cells run other
/// settings than the finished ones under the same target: the resume is refused with one line
/// naming the file, the line and the fix, and with the file restored it resumes.
#[test]
fn a_config_file_edited_since_the_run_started_is_refused_until_restored() {
    let _lock = measuring();
    let dir = scratch();
    let lab = two_target_lab(dir.path(), "sqlite");
    let body = std::fs::read_to_string(&lab).unwrap();
    let setting = "settings = [\"synchronous = OFF\"]";
    assert!(body.contains(setting));
    std::fs::write(&lab, body.replace(setting, "config = \"b.conf\"")).unwrap();
    let conf = dir.path().join("b.conf");
    std::fs::write(&conf, "synchronous = OFF\n").unwrap();
    let run_id = killed_run(dir.path(), &lab);

    std::fs::write(&conf, "synchronous = NORMAL\n").unwrap();
    let out = resume(dir.path(), "killed.db", Some(&run_id));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("config file b.conf (")
            && err.contains("of target b differs from what run")
            && err.contains("now `synchronous = NORMAL`")
            && err.contains("restore it")
            && err.lines().count() == 1,
        "{err}"
    );

    std::fs::write(&conf, "synchronous = OFF\n").unwrap();
    let out = resume(dir.path(), "killed.db", Some(&run_id));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["run"]["complete"], true);
}
