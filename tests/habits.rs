//! Everyday habits dbdelta serves: `dbdelta init`, `-o FILE` on the commands that print,
//! run names and tags, and the scale on the command line (`--rows`, `--tables`, `--time`).
//! Real binary, embedded SQLite, `--quick` runs of one or two steps.
//!
//! Runs that measure hold `common::measuring()` (see tests/cli.rs); input errors need no lock.

mod common;
use common::*;

use std::path::Path;

use rusqlite::Connection;

/// A two-target SQLite lab, as `dbdelta init` writes it for sqlite (so this also checks that
/// the template runs).
fn init(dir: &Path, file: &str) {
    let out = run(dir, &["init", file]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

fn runs(dir: &Path, store: &str) -> i64 {
    let db = Connection::open(dir.join(store)).unwrap();
    db.query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn init_writes_a_lab_that_plans_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), "lab.toml");
    let lab = std::fs::read_to_string(dir.path().join("lab.toml")).unwrap();
    assert!(
        lab.contains("docs/lab.md") && lab.contains("engine = \"sqlite\""),
        "{lab}"
    );
    let again = run(dir.path(), &["init", "lab.toml", "--engine", "postgres"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("exists and is kept"));
    let kept = std::fs::read_to_string(dir.path().join("lab.toml")).unwrap();
    assert_eq!(kept, lab, "an existing lab is left as it was");
    for engine in ["postgres", "mysql", "mariadb"] {
        let file = format!("{engine}.toml");
        let out = run(dir.path(), &["init", &file, "--engine", engine]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let written = std::fs::read_to_string(dir.path().join(&file)).unwrap();
        assert!(
            written.contains(&format!("engine = \"{engine}\"")),
            "{written}"
        );
    }
    let plan = run(dir.path(), &["plan", "lab.toml", "--quick"]);
    assert!(plan.status.success(), "{}", text(&plan.stderr));
    assert!(text(&plan.stdout).contains("target a: sqlite"));
}

#[test]
fn dash_o_writes_whole_files_and_progress_stays_on_stderr() {
    let _m = measuring();
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), "lab.toml");
    // A file in a directory that does not exist: refused before the run starts.
    let bad = run(
        dir.path(),
        &["run", "lab.toml", "--quick", "-o", "no/such/r.md"],
    );
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
    assert!(!dir.path().join("dbdelta.db").exists(), "nothing written");

    let args = [
        "run",
        "lab.toml",
        "--quick",
        "--only",
        "point-query",
        "--repeats",
        "1",
    ];
    let out = run(
        dir.path(),
        &[&args[..], &["--format", "markdown", "-o", "r.md"]].concat(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "", "the report went to the file");
    let progress = text(&out.stderr);
    assert!(progress.contains("point-query"), "progress on stderr");
    // The run says its estimate, then each cell's number, elapsed and time left.
    assert!(
        progress.contains("estimated time: about") && progress.contains("from the defaults"),
        "{progress}"
    );
    assert!(
        progress.contains("cell 1/2 · ") && progress.contains("cell 2/2 · "),
        "{progress}"
    );
    assert!(progress.contains(" left: "), "{progress}");
    let md = std::fs::read_to_string(dir.path().join("r.md")).unwrap();
    assert!(md.lines().any(|l| l.starts_with("| ")), "{md}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    for (cmd, file) in [
        (&["list", "runs", "-o", "runs.txt"][..], "runs.txt"),
        (&["plan", "lab.toml", "-o", "plan.txt"], "plan.txt"),
        (&["report", "-o", "again.md", "--format", "md"], "again.md"),
    ] {
        let out = run(dir.path(), cmd);
        assert!(out.status.success(), "{cmd:?}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "", "{cmd:?}");
        let written = std::fs::read_to_string(dir.path().join(file)).unwrap();
        assert!(!written.is_empty(), "{cmd:?}");
        // The run stored where its cells' time went, and `plan` calibrates from it.
        if file == "plan.txt" {
            assert!(
                written.contains("estimated time: about")
                    && written
                        .contains("calibrated by 2 cell(s) this host ran before (sqlite sysbench)"),
                "{written}"
            );
        }
    }
}

#[test]
fn names_and_tags_pick_runs_and_a_taken_name_is_refused_before_the_run() {
    let _m = measuring();
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), "lab.toml");
    let quick = [
        "run",
        "lab.toml",
        "--quick",
        "--only",
        "point-query",
        "--repeats",
        "1",
        "-q",
    ];
    for (name, tags) in [("before", &["baseline"][..]), ("after", &["baseline", "x"])] {
        let mut args = quick.to_vec();
        args.extend(["--name", name]);
        for t in tags {
            args.extend(["--tag", t]);
        }
        let out = run(dir.path(), &args);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let again = run(dir.path(), &[&quick[..], &["--name", "before"]].concat());
    assert_eq!(again.status.code(), Some(2));
    let err = text(&again.stderr);
    assert!(
        err.contains("--name before") && err.contains("pick another name"),
        "{err}"
    );
    assert_eq!(
        runs(dir.path(), "dbdelta.db"),
        2,
        "the refused run never began"
    );

    let list = text(&run(dir.path(), &["list", "runs"]).stdout);
    // Steps are steps (as `serve` counts them), measurements are step × target × cell.
    for line in list.lines() {
        assert!(line.contains(" 1 step(s), 2 measurement(s) "), "{line}");
    }
    assert!(list.contains("name before  tags baseline\n"), "{list}");
    assert!(list.contains("name after  tags baseline,x\n"), "{list}");
    let id_of = |name: &str| {
        let line = list
            .lines()
            .find(|l| l.contains(&format!("name {name}")))
            .unwrap();
        line.split_whitespace().next().unwrap().to_string()
    };
    let json = |args: &[&str]| {
        let out = run(dir.path(), &[args, &["--format", "json"]].concat());
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let by_name = json(&["report", "before"]);
    assert_eq!(by_name["run"]["id"], id_of("before").as_str());
    let by_tag = json(&["report", "--tag", "baseline"]);
    assert_eq!(
        by_tag["run"]["id"],
        id_of("after").as_str(),
        "the latest with the tag"
    );
    let cmp = run(dir.path(), &["compare", "before", "after"]);
    assert!(cmp.status.success(), "{}", text(&cmp.stderr));
    let none = run(dir.path(), &["report", "--tag", "nope"]);
    assert_eq!(none.status.code(), Some(2));
}

#[test]
fn scale_flags_shape_the_run_and_are_stored_for_resume() {
    let _m = measuring();
    let dir = tempfile::tempdir().unwrap();
    init(dir.path(), "lab.toml");
    let scale = ["--rows", "300", "--tables", "2", "--time", "1"];
    let plan = run(
        dir.path(),
        &[&["plan", "lab.toml", "--quick"][..], &scale].concat(),
    );
    let plan = text(&plan.stdout);
    assert!(
        plan.contains("2 table(s) × 300 rows") && plan.contains("reads 1 s"),
        "{plan}"
    );

    let args = [
        "run",
        "lab.toml",
        "--quick",
        "--only",
        "point-query",
        "--repeats",
        "1",
        "-q",
    ];
    let out = run(dir.path(), &[&args[..], &scale].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let db = Connection::open(dir.path().join("dbdelta.db")).unwrap();
    let options: String = db
        .query_row("SELECT options_json FROM runs", [], |r| r.get(0))
        .unwrap();
    let options: serde_json::Value = serde_json::from_str(&options).unwrap();
    assert_eq!(
        (&options["rows"], &options["tables"], &options["time"]),
        (&300.into(), &2.into(), &1.0.into())
    );
    // --quick alone measures 0.3 s; --time 1 wins. The lower bound cannot be missed by a slow
    // host (a step runs at least its time); the upper one is generous for a loaded 2-core one.
    let mut stmt = db
        .prepare("SELECT seconds FROM measurements WHERE step = 'point-query'")
        .unwrap();
    let seconds: Vec<f64> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(seconds.len(), 2, "one per target");
    for s in seconds {
        assert!((0.95..20.0).contains(&s), "measured {s} s");
    }
    let loaded: (i64, i64) = db
        .query_row(
            "SELECT tables, rows_per_table FROM loads LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(loaded, (2, 300), "--quick alone loads 1 table");
    // Where a flag has no meaning for the lab's suites, it is refused naming the lab key.
    std::fs::write(
        dir.path().join("lb.toml"),
        "[lab]\nname = \"lb\"\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n[suite.linkbench]\n",
    )
    .unwrap();
    let lb = run(dir.path(), &["run", "lb.toml", "--quick", "--rows", "300"]);
    assert_eq!(lb.status.code(), Some(2));
    assert!(text(&lb.stderr).contains("maxid1"), "{}", text(&lb.stderr));
}
