//! `reuse_load`: the second run of a lab copies its load from the snapshot the first one saved
//! (and says so, and the report's Load table says "reused"); another scale refuses that
//! snapshot naming what differs and loads afresh; a damaged snapshot is refused and removed;
//! `clean --snapshots` removes them. SQLite, and PostgreSQL (Debian's `postgresql-15`; without
//! it the test prints a note and passes locally, but fails under CI).
//!
//! Touching only what dbdelta made: a shared `--snapshots` directory keeps its mode
//! and everything `clean --snapshots` did not choose (its `--dry-run` names exactly what goes);
//! a full work directory (a small tmpfs in a private mount namespace, so nothing on the host
//! changes; needs root, as CI has) fails the cell naming ENOSPC and keeps the snapshot.

mod common;
use common::*;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::Digest;

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
    let out = run(dir, &quick_run(lab, "work", &[]));
    let err = text(&out.stderr);
    assert!(out.status.success(), "dbdelta run failed:\n{err}");
    let report = serde_json::from_slice(&out.stdout).expect("a JSON report");
    (err, report)
}

/// The arguments of one quick run of `point-query` in `workdir`, then `more`.
fn quick_run<'a>(lab: &'a Path, workdir: &'a str, more: &[&'a str]) -> Vec<&'a str> {
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
        workdir,
        "--format",
        "json",
    ];
    [&args[..], more].concat()
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
    let left = std::fs::read_dir(&snapshots).map(|d| d.count());
    assert_eq!(
        left.ok(),
        Some(0),
        "clean --snapshots keeps the directory, empty"
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

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn names(dir: &Path) -> Vec<String> {
    let entries = std::fs::read_dir(dir).unwrap().flatten();
    let mut out: Vec<String> = entries
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// The lines of `out`'s standard output that start with `head`, without it.
fn said(out: &std::process::Output, head: &str) -> Vec<String> {
    let stdout = text(&out.stdout);
    let lines = stdout.lines().filter_map(|l| l.strip_prefix(head));
    lines.map(str::to_string).collect()
}

#[test]
fn a_shared_snapshot_directory_keeps_its_mode_and_what_dbdelta_did_not_make() {
    let _lock = measuring();
    let dir = scratch();
    let d = dir.path();
    let shared = d.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Others' entries: a file, a directory of the snapshot form without a manifest, a file of
    // an unfinished save's form. One unfinished save of a process that is gone (PIDs end at
    // 2^22) is dbdelta's.
    std::fs::write(shared.join("notes.txt"), "mine").unwrap();
    std::fs::create_dir(shared.join("t.sysbench.0123456789ab")).unwrap();
    std::fs::write(shared.join("t.sysbench.0123456789ab/keep"), "mine").unwrap();
    std::fs::write(shared.join(".t.sysbench.0123456789ab.4194305.tmp"), "mine").unwrap();
    let unfinished = ".t.sysbench.0123456789ab.4194306.tmp";
    std::fs::create_dir(shared.join(unfinished)).unwrap();
    let foreign = names(&shared);

    let out = run(
        d,
        &quick_run(&lab(d, "sqlite", 2000), "work", &["--snapshots", "shared"]),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        mode(&shared),
        0o755,
        "--snapshots on an existing directory keeps its mode"
    );
    let saved: Vec<String> = (names(&shared).into_iter())
        .filter(|n| !foreign.contains(n))
        .collect();
    assert_eq!(saved.len(), 1, "one snapshot saved: {saved:?}");
    let expected = [
        format!("snapshot {} in shared", saved[0]),
        format!("unfinished snapshot {unfinished} in shared"),
    ];

    let clean = ["clean", "--workdir", "work", "--snapshots", "shared"];
    let dry = run(d, &[&clean[..], &["--dry-run"]].concat());
    assert!(dry.status.success(), "{}", text(&dry.stderr));
    assert_eq!(said(&dry, "would remove "), expected);
    assert_eq!(
        names(&shared).len(),
        foreign.len() + 1,
        "a dry run removes nothing"
    );

    let out = run(d, &clean);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(said(&out, "removed "), expected, "the dry run's list");
    assert!(err.contains("kept 3 entries of shared"), "{err}");
    let mut kept = foreign.clone();
    kept.retain(|n| n != unfinished);
    assert_eq!(names(&shared), kept, "everything else is kept");
    assert_eq!(mode(&shared), 0o755);
    assert!(shared.join("t.sysbench.0123456789ab/keep").is_file());
}

/// Whether this machine can mount a tmpfs in a private mount namespace (root, `unshare`);
/// under CI it must.
fn can_mount() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let unshare = Command::new("unshare").arg("--version").output();
    let can = root && unshare.is_ok_and(|o| o.status.success());
    if !can {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root with util-linux"
        );
        eprintln!("note: a full work directory needs root and unshare (a private tmpfs); skipping");
    }
    can
}

/// Add `bytes` of ballast to the data of the only snapshot in `snapshots`, checksummed in its
/// manifest like the rest (a valid snapshot larger than its load).
fn grow_the_snapshot(snapshots: &Path, bytes: usize) -> PathBuf {
    let snap = std::fs::read_dir(snapshots)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let ballast = vec![7u8; bytes];
    std::fs::write(snap.join("data/ballast"), &ballast).unwrap();
    let path = snap.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let sum: String = (sha2::Sha256::digest(&ballast).iter())
        .map(|b| format!("{b:02x}"))
        .collect();
    m["files"]["ballast"] = serde_json::json!([bytes, sum]);
    std::fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
    snap
}

#[test]
fn a_full_work_directory_fails_the_cell_and_keeps_the_snapshot() {
    if !can_mount() {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let d = dir.path();
    let lab = lab(d, "sqlite", 2000);
    let out = run(d, &quick_run(&lab, "work", &["--snapshots", "snaps"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let snap = grow_the_snapshot(&d.join("snaps"), 8 << 20);

    // The work directory: a 4 MiB tmpfs, in a mount namespace of this command's own (private
    // propagation: the mount is gone when it ends, and never seen outside).
    let full = d.join("full");
    std::fs::create_dir(&full).unwrap();
    let script = r#"mount -t tmpfs -o size=4m dbdelta-test "$1" && shift && exec "$@""#;
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
    ])
    .arg(&full)
    .arg(env!("CARGO_BIN_EXE_dbdelta"))
    .args(quick_run(&lab, "full", &["--snapshots", "snaps"]))
    .current_dir(d)
    .env("NO_COLOR", "1")
    .stdin(std::process::Stdio::null());
    let out = cmd.output().expect("start unshare");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("failed: restoring snapshot t.sysbench."),
        "{err}"
    );
    assert!(
        err.contains(": no space left on device (ENOSPC) writing "),
        "{err}"
    );
    assert!(err.contains("(the snapshot is kept)"), "{err}");
    assert!(!err.contains("is damaged"), "{err}");
    assert!(snap.join("manifest.json").is_file() && snap.join("data/ballast").is_file());
    assert_eq!(names(&full), Vec::<String>::new(), "the tmpfs was private");
}
