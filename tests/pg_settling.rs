//! The settling probe asks PostgreSQL only for the statistics views its version has:
//! `pg_stat_checkpointer` is PostgreSQL 17's, and asking a 15 for it put `relation
//! "pg_stat_checkpointer" does not exist` in the server's log twice per cell.
//!
//! Needs Debian's PostgreSQL (`.ci/run` installs `postgresql-15`); without it the test prints a
//! note and passes locally, but fails under CI.

mod common;
use common::*;

#[test]
fn a_cells_server_log_has_no_error_from_the_settling_probe() {
    if !postgres_installed() {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let lab = dir.path().join("pg.toml");
    std::fs::write(
        &lab,
        "[lab]\nname = \"pg log\"\n\n[[target]]\nname = \"pg\"\nengine = \"postgres\"\n\n\
         [suite.sysbench]\nrows = 2000\nwarmup_secs = 0.1\nread_secs = 0.3\n",
    )
    .unwrap();
    let out = run(
        dir.path(),
        &[
            "run",
            lab.to_str().unwrap(),
            "-q",
            "--quick",
            "--only",
            "point-query",
            "--keep",
            "--workdir",
            "work",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let db = rusqlite::Connection::open(dir.path().join("dbdelta.db")).unwrap();
    let (version, settling): (String, String) = db
        .query_row(
            "SELECT t.server_version, m.settling_json FROM targets t JOIN measurements m \
             ON m.run_id = t.run_id AND m.target = t.name WHERE NOT m.warm",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    // The probe still read what the checkpointer and background writer wrote.
    let settling: serde_json::Value = serde_json::from_str(&settling).unwrap();
    assert!(settling["buffers_written"].is_u64(), "{settling}");
    let logs: Vec<std::path::PathBuf> = walk(&dir.path().join("work"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    assert!(!logs.is_empty(), "the kept server log");
    for log in logs {
        let text = std::fs::read_to_string(&log).unwrap();
        let errors: Vec<&str> = (text.lines()).filter(|l| l.contains("ERROR")).collect();
        assert!(
            errors.is_empty(),
            "{version}: {}: {errors:#?}",
            log.display()
        );
    }
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
