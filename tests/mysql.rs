//! End-to-end tests of the MySQL/MariaDB engine: the real `dbdelta` binary against Debian's
//! MariaDB (`/usr/sbin/mariadbd`), tiny tables, short steps.
//!
//! Without MariaDB installed the tests that need it print a note and pass, unless `CI` is set
//! (CI installs it): then they fail. Runs that start servers hold a lock so they never share
//! the CPUs.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use rusqlite::Connection;

fn lab(dir: &Path, targets: &str) -> PathBuf {
    let body = format!(
        "[lab]\nname = \"mysql test lab\"\n\n{targets}\n[suite.sysbench]\nrows = 2000\n\
         warmup_secs = 0.2\nread_secs = 0.5\nwrite_secs = 0.5\n"
    );
    let path = dir.join("lab.toml");
    std::fs::write(&path, body).unwrap();
    path
}

/// PIDs of `mariadbd` processes whose command line mentions `dir` (ours, not anyone else's).
fn servers_under(dir: &Path) -> Vec<u32> {
    let needle = dir.to_string_lossy().into_owned();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if comm.trim() != "mariadbd" {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            pids.push(pid);
        }
    }
    pids
}

fn process_user(pid: u32) -> Option<String> {
    let out = Command::new("ps")
        .args(["-o", "user=", "-p", &pid.to_string()])
        .output()
        .ok()?;
    let user = text(&out.stdout).trim().to_string();
    (!user.is_empty()).then_some(user)
}

#[test]
fn a_mariadb_target_runs_every_step() {
    if !mariadb_installed("a_mariadb_target_runs_every_step") {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let lab = lab(
        dir.path(),
        "[[target]]\nname = \"maria\"\nengine = \"mysql\"\n",
    );
    let mut child = dbdelta(dir.path())
        .args([
            "run",
            lab.to_str().unwrap(),
            "-q",
            "--quick",
            "--clients",
            "2",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // While the run goes on: every server we see runs as an unprivileged user.
    let mut seen = Vec::new();
    while child.try_wait().unwrap().is_none() {
        for pid in servers_under(dir.path()) {
            if let Some(user) = process_user(pid) {
                seen.push((pid, user));
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out: Output = child.wait_with_output().unwrap();
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(!seen.is_empty(), "never saw the server process running");
    assert!(
        seen.iter().all(|(_, user)| user != "root"),
        "a mariadbd ran as root: {seen:?}"
    );
    assert!(
        servers_under(dir.path()).is_empty(),
        "a mariadbd is left after the run"
    );
    assert!(
        !dir.path().join("dbdelta-work").exists(),
        "work directory left behind"
    );

    let db = Connection::open(dir.path().join("dbdelta.db")).unwrap();
    let (version, failed): (String, bool) = db
        .query_row(
            "SELECT server_version, failed FROM targets WHERE name = 'maria'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(!failed);
    assert!(version.contains("MariaDB"), "version {version}");
    let settings: String = db
        .query_row("SELECT settings_json FROM targets", [], |r| r.get(0))
        .unwrap();
    let settings: serde_json::Value = serde_json::from_str(&settings).unwrap();
    assert_eq!(settings["performance_schema"], "OFF");
    assert_eq!(settings["datadir"], "<data_dir>/");

    let rows: Vec<(String, i64, i64, i64, bool)> = rows(
        &db,
        "SELECT step, ops, events, statements_per_event, failed FROM measurements
         WHERE target = 'maria' AND warm = 0 ORDER BY rowid",
    );
    assert_eq!(rows.len(), 32, "the whole catalog: {rows:?}");
    for (step, ops, events, spe, failed) in &rows {
        assert!(!failed, "{step} failed");
        assert!(*events > 0, "{step} ran no event");
        assert_eq!(*ops, events * spe, "{step}: ops = events × statements");
    }
    let (load_rows, size): (i64, i64) = db
        .query_row(
            "SELECT rows_per_table, db_size_bytes FROM loads WHERE target = 'maria'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(load_rows, 2000);
    assert!(size > 0, "database size {size}");

    let report = text(&out.stdout);
    assert!(
        report.contains(&version),
        "report lacks {version}:\n{report}"
    );
}

#[test]
fn an_invalid_setting_fails_with_the_log() {
    if !mariadb_installed("an_invalid_setting_fails_with_the_log") {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let lab = lab(
        dir.path(),
        "[[target]]\nname = \"bogus\"\nengine = \"mysql\"\nsettings = [\"innodb_bogus_setting = 1\"]\n",
    );
    let out = dbdelta(dir.path())
        .args(["run", lab.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    // The server refuses the setting when it starts: the target fails, with its log.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("innodb_bogus_setting"), "{err}");
    let db = Connection::open(dir.path().join("dbdelta.db")).unwrap();
    let (failed, error): (bool, String) = db
        .query_row(
            "SELECT failed, error FROM targets WHERE name = 'bogus'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(failed);
    assert!(
        error.contains("unknown variable 'innodb_bogus_setting=1'")
            && error.contains("last lines of"),
        "the error must carry the server's message and its log tail: {error}"
    );
    assert!(servers_under(dir.path()).is_empty(), "a mariadbd is left");
}

#[test]
fn a_bin_dir_without_a_server_fails_clearly() {
    // Needs no MariaDB: the engine fails before it starts anything.
    let dir = scratch();
    let bin = dir.path().join("empty-bin");
    std::fs::create_dir(&bin).unwrap();
    let lab = lab(
        dir.path(),
        &format!(
            "[[target]]\nname = \"nobin\"\nengine = \"mysql\"\nbin = \"{}\"\n",
            bin.display()
        ),
    );
    let out = dbdelta(dir.path())
        .args(["run", lab.to_str().unwrap(), "-q"])
        .output()
        .unwrap();
    // Bad input before the first cell (preflight), not a failed target after the others ran.
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains(&bin.display().to_string()) && err.contains("mariadbd"),
        "the error must name the directory and what was looked for: {err}"
    );
}

/// A relative `bin` resolves from the lab file's folder as PostgreSQL's does (the server
/// and install-db once ran in the data directory, where the relative path named nothing). The
/// lab is named relatively too, from a run in its parent folder.
#[test]
fn a_relative_bin_resolves_from_the_lab_folder() {
    if !mariadb_installed("a_relative_bin_resolves_from_the_lab_folder") {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    // `bin = "../usr/sbin"` from `labs/`: Debian's server through a link named `usr`.
    std::os::unix::fs::symlink("/usr", dir.path().join("usr")).unwrap();
    let labs = dir.path().join("labs");
    std::fs::create_dir(&labs).unwrap();
    lab(
        &labs,
        "[[target]]\nname = \"rel\"\nengine = \"mariadb\"\nbin = \"../usr/sbin\"\n",
    );
    let out = dbdelta(dir.path())
        .args(["run", "labs/lab.toml", "-q", "--only", "point-query"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A work directory with a space in its path (mariadb-install-db once split its
/// `--defaults-file` there and failed with the cause cut off).
#[test]
fn a_workdir_with_a_space_works() {
    if !mariadb_installed("a_workdir_with_a_space_works") {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let lab = lab(
        dir.path(),
        "[[target]]\nname = \"spaced\"\nengine = \"mariadb\"\n",
    );
    let out = dbdelta(dir.path())
        .args(["run", lab.to_str().unwrap(), "-q", "--only", "point-query"])
        .args(["--workdir", "work dir"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(servers_under(dir.path()).is_empty());
}

/// Both load paths (`LOAD DATA LOCAL INFILE`, and multi-row INSERTs when the server has
/// `local_infile = OFF`) load every row, read back by SQL text (`prepared = false`; the whole
/// catalog above uses prepared statements).
#[test]
fn both_load_paths_load_every_row() {
    if !mariadb_installed("both_load_paths_load_every_row") {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let body = "[lab]\nname = \"mysql load paths\"\n\n\
        [[target]]\nname = \"infile\"\nengine = \"mysql\"\n\n\
        [[target]]\nname = \"inserts\"\nengine = \"mysql\"\n\
        settings = [\"local_infile = OFF\"]\n\n\
        [suite.sysbench]\nrows = 3000\nwarmup_secs = 0\nread_secs = 0.3\nwrite_secs = 0.3\n\
        prepared = false\n";
    let lab = dir.path().join("lab.toml");
    std::fs::write(&lab, body).unwrap();
    let out = dbdelta(dir.path())
        .args(["run", lab.to_str().unwrap(), "-q", "--only", "point-query"])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let db = Connection::open(dir.path().join("dbdelta.db")).unwrap();
    for target in ["infile", "inserts"] {
        let (rows, size): (i64, i64) = db
            .query_row(
                "SELECT rows_per_table, db_size_bytes FROM loads WHERE target = ?1",
                [target],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(rows, 3000, "{target}");
        assert!(size > 0, "{target}: database size {size}");
        let steps: Vec<(String, f64, i64)> = db
            .prepare(
                "SELECT step, rows_per_event, errors_fatal FROM measurements
                 WHERE target = ?1 AND warm = 0 ORDER BY rowid",
            )
            .unwrap()
            .query_map([target], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(steps.len(), 1, "{target}: {steps:?}");
        // Every id in 1..=rows is there: each point query (uniform ids) returned its row.
        assert_eq!(steps[0].1, 1.0, "{target}: {steps:?}");
        assert!(steps.iter().all(|s| s.2 == 0), "{target}: {steps:?}");
    }
}
