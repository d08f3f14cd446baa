//! End-to-end tests against real PostgreSQL servers started by dbdelta's own lifecycle code.
//!
//! They need Debian's PostgreSQL (`.ci/run` installs `postgresql-15`). Without it they print a
//! note and pass locally, but fail under CI (`CI` set), where a missing server is a broken setup.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;

fn lab(dir: &Path, target: &str, secs: f64) -> PathBuf {
    let body = format!(
        "[lab]\nname = \"pg test\"\n\n[[target]]\nname = \"pg\"\nengine = \"postgres\"\n{target}\n\n\
         [suite.sysbench]\nrows = 2000\nwarmup_secs = 0.2\nread_secs = {secs}\nwrite_secs = {secs}\n"
    );
    let path = dir.join("lab.toml");
    std::fs::write(&path, body).unwrap();
    path
}

/// (pid, ppid, user) of every process named `postgres`.
fn postgres_processes() -> Vec<(u32, u32, String)> {
    let out = Command::new("ps")
        .args(["-C", "postgres", "-o", "pid=,ppid=,user="])
        .output()
        .unwrap();
    text(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((
                f.next()?.parse().ok()?,
                f.next()?.parse().ok()?,
                f.next()?.to_string(),
            ))
        })
        .collect()
}

/// Children of `parent` named postgres (the postmaster dbdelta started).
fn postmaster_of(parent: u32) -> Option<u32> {
    postgres_processes()
        .into_iter()
        .find(|p| p.1 == parent)
        .map(|p| p.0)
}

fn wait_for_steps(db: &Path, n: i64, child: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let done: i64 = Connection::open(db)
            .and_then(|c| c.query_row("SELECT count(*) FROM measurements", [], |r| r.get(0)))
            .unwrap_or(0);
        if done >= n {
            return;
        }
        assert!(child.try_wait().unwrap().is_none(), "dbdelta ended early");
        assert!(Instant::now() < deadline, "no {n} steps in 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn postgres_runs_every_step_as_an_unprivileged_user() {
    if !postgres_installed() {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let lab = lab(dir.path(), "", 0.5);
    let mut child = dbdelta(dir.path())
        .args([
            "run",
            lab.to_str().unwrap(),
            "-q",
            "--quick",
            "--clients",
            "2",
            "--only",
            "update-index",
            "--only",
            "read-only_range=10",
            "--only",
            "point-query",
            "--only",
            "random-points_range=100",
            "--only",
            "range-covered-pk",
            "--only",
            "insert",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // While it runs: its server exists and no server process is root.
    wait_for_steps(&dir.path().join("dbdelta.db"), 1, &mut child);
    let pm = postmaster_of(child.id()).expect("a postmaster child of dbdelta");
    let ours: Vec<_> = postgres_processes()
        .into_iter()
        .filter(|p| p.0 == pm || p.1 == pm)
        .collect();
    assert!(ours.len() >= 3, "postmaster and its helpers: {ours:?}");
    assert!(
        ours.iter().all(|p| p.2 != "root"),
        "a server process runs as root: {ours:?}"
    );
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("PostgreSQL"),
        "report names the server version"
    );

    let db = Connection::open(dir.path().join("dbdelta.db")).unwrap();
    // A step whose /proc sample window missed too much on a busy host stores no server CPU
    // and names it in below_resolution: no number, not a zero.
    let unsampled: Vec<String> = rows::<(String,)>(
        &db,
        "SELECT step FROM measurements WHERE server_cpu_us_per_op IS NULL
           AND below_resolution LIKE '%server_cpu_us_per_op%'",
    )
    .into_iter()
    .map(|r| r.0)
    .collect();
    assert!(unsampled.len() < 6, "no step's server CPU was sampled");
    type Row = (String, i64, i64, i64, Option<f64>, Option<f64>, Option<f64>);
    let rows: Vec<Row> = rows(
        &db,
        "SELECT step, ops, events, statements_per_event, server_cpu_us_per_op,
                client_cpu_us_per_op, cs_per_op FROM measurements",
    );
    assert_eq!(rows.len(), 6);
    for (step, ops, events, spe, server, client, cs) in rows {
        assert!(events > 0, "{step}: no events");
        assert_eq!(ops, events * spe, "{step}");
        assert!(
            server.is_some_and(|s| s > 0.0) || unsampled.contains(&step),
            "{step}: server CPU measured from the process tree"
        );
        assert!(
            client.unwrap() > 0.0,
            "{step}: client CPU measured separately"
        );
        assert!(
            cs.is_some_and(|c| c > 0.0) || unsampled.contains(&step),
            "{step}: server context switches"
        );
    }
    assert!(postmaster_of(std::process::id()).is_none());
    assert!(
        postgres_processes().iter().all(|p| p.1 != pm && p.0 != pm),
        "server left running"
    );
    assert!(
        !dir.path().join("dbdelta-work").exists(),
        "data directory left behind"
    );
}

#[test]
fn a_bad_setting_fails_the_target_with_its_log() {
    if !postgres_installed() {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    std::fs::write(
        dir.path().join("bad.conf"),
        "work_mem = '4MB'\nshared_buffers = 'lots'\n",
    )
    .unwrap();
    let lab = lab(dir.path(), "config = \"bad.conf\"", 0.3);
    let out: Output = dbdelta(dir.path())
        .args(["run", lab.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("shared_buffers"),
        "the log tail names the setting: {err}"
    );
    assert!(err.contains(".log"), "the message points at the log: {err}");
    let log = std::fs::read_dir(dir.path().join("dbdelta-work"))
        .unwrap()
        .flatten()
        .flat_map(|run| std::fs::read_dir(run.path()).unwrap().flatten())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "log"))
        .expect("the failed target's log is kept");
    assert!(
        std::fs::read_to_string(log)
            .unwrap()
            .contains("shared_buffers")
    );
    let data_dirs = std::fs::read_dir(dir.path().join("dbdelta-work"))
        .unwrap()
        .flatten()
        .flat_map(|run| std::fs::read_dir(run.path()).unwrap().flatten())
        .filter(|e| e.path().is_dir())
        .count();
    assert_eq!(data_dirs, 0, "the data directory is removed");
}

#[test]
fn a_bin_directory_without_a_server_is_named() {
    let dir = scratch();
    std::fs::create_dir(dir.path().join("emptybin")).unwrap();
    let lab = lab(dir.path(), "bin = \"emptybin\"", 0.3);
    let out = dbdelta(dir.path())
        .args(["run", lab.to_str().unwrap()])
        .output()
        .unwrap();
    // Bad input before the first cell (preflight), not a failed target after the others ran.
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("holds no PostgreSQL server"), "{err}");
    assert!(err.contains("emptybin"), "{err}");
}

#[test]
fn killing_the_server_mid_run_keeps_finished_steps_and_cleans_up() {
    if !postgres_installed() {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let lab = lab(dir.path(), "", 1.0);
    let mut child = dbdelta(dir.path())
        .args(["run", lab.to_str().unwrap(), "-q", "--quick"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let db = dir.path().join("dbdelta.db");
    wait_for_steps(&db, 2, &mut child);
    let pm = postmaster_of(child.id()).expect("postmaster");
    // SAFETY: SIGKILL to the server dbdelta started for this test.
    unsafe { libc::kill(pm as i32, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("pg"), "{err}");
    let conn = Connection::open(&db).unwrap();
    let (failed, error, log): (bool, String, Option<String>) = conn
        .query_row("SELECT failed, error, log_path FROM targets", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert!(failed, "the target is marked failed");
    assert!(error.contains("gone") || error.contains("died"), "{error}");
    assert!(log.is_some_and(|l| Path::new(&l).exists() || dir.path().join(&l).exists()));
    let whole: i64 = conn
        .query_row(
            "SELECT count(*) FROM measurements WHERE failed = 0 AND ops > 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(whole >= 2, "finished steps are kept: {whole}");
    let complete: bool = conn
        .query_row("SELECT complete FROM runs", [], |r| r.get(0))
        .unwrap();
    assert!(complete, "the run itself finished (with a failed target)");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        postgres_processes().iter().all(|p| p.0 != pm && p.1 != pm),
        "no server process of the run is left"
    );
}

#[test]
fn fetched_postgres_with_jemalloc_runs_and_the_cache_is_reused() {
    if !postgres_installed() {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let cache = dir.path().join("cache");
    let lab = lab(dir.path(), "version = \"17\"\nmalloc = \"jemalloc\"", 1.0);
    let mut child = dbdelta(dir.path())
        .env("DBDELTA_CACHE", &cache)
        .args([
            "run",
            lab.to_str().unwrap(),
            "-q",
            "--quick",
            "--only",
            "point-query",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // While it runs, the server has the allocator mapped (LD_PRELOAD maps it at exec).
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut mapped = false;
    while !mapped && child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "no server in 120 s");
        if let Some(pm) = postmaster_of(child.id()) {
            let maps = std::fs::read_to_string(format!("/proc/{pm}/maps")).unwrap_or_default();
            mapped = maps.contains("libjemalloc");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(mapped, "jemalloc was never seen loaded in the server");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let db = Connection::open(dir.path().join("dbdelta.db")).unwrap();
    let (version, env): (String, String) = db
        .query_row("SELECT server_version, env_json FROM targets", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert!(version.starts_with("PostgreSQL 17."), "{version}");
    assert!(env.contains("libjemalloc.so.2"), "{env}");

    // `fetch` finds it in the cache: nothing downloaded.
    let out = dbdelta(dir.path())
        .env("DBDELTA_CACHE", &cache)
        .args(["fetch", "postgres@17"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("from the cache, nothing downloaded"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_version_that_does_not_exist_is_bad_input() {
    let dir = scratch();
    let lab = lab(dir.path(), "version = \"99\"", 0.3);
    let out = dbdelta(dir.path())
        .env("DBDELTA_CACHE", dir.path().join("cache"))
        .args(["run", lab.to_str().unwrap()])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("error: target pg: postgres@99: no such PostgreSQL build"),
        "{err}"
    );
    assert!(
        !dir.path().join("dbdelta.db").exists(),
        "nothing is written"
    );
}

/// PostgreSQL from Debian's stable suite: the 17.x trixie holds (a release npm's
/// builds lack), whatever its point release is today, fetched into the shared cache (kept
/// between CI runs like mysql@9.7's), started through its own loader, measured (its CPU
/// through the launcher, the same process) and reporting its version; cached, it needs no
/// suite. Takes ~40 s cold (a 38 MB download), ~20 s cached, on a loaded 2-core host.
#[test]
fn debian_postgres_runs_a_step_and_reports_its_version() {
    let _lock = measuring();
    let cache = fetch_cache();
    let dir = scratch();
    let listing = list_versions(dir.path(), "postgres");
    let version = listing
        .lines()
        .find(|l| l.contains(" Debian trixie postgresql-17 17."))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no Debian trixie PostgreSQL 17 listed:\n{listing}"))
        .to_string();
    let started = Instant::now();
    let lab = lab(dir.path(), &format!("version = \"{version}\""), 0.5);
    let out = dbdelta(dir.path())
        .env("DBDELTA_CACHE", cache)
        .args(["run", lab.to_str().unwrap(), "-q", "--quick"])
        .args(["--only", "point-query"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    eprintln!(
        "PostgreSQL {version} from Debian: fetch (if not cached) and run took {:?}",
        started.elapsed()
    );
    let db = Connection::open(dir.path().join("dbdelta.db")).unwrap();
    let (server, failed): (String, bool) = db
        .query_row("SELECT server_version, failed FROM targets", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert!(
        !failed && server.starts_with(&format!("PostgreSQL {version} (Debian {version}-")),
        "{server}"
    );
    // Its build flags as the server says them (the `pg_config` view), beside the binary's
    // compilers and version line (its provenance).
    let provenance: String = db
        .query_row("SELECT provenance_json FROM targets", [], |r| r.get(0))
        .unwrap();
    let provenance: serde_json::Value = serde_json::from_str(&provenance).unwrap();
    let flags = provenance["build_flags"].as_str().unwrap_or_default();
    assert!(flags.contains("-O2"), "{provenance}");
    let steps: Vec<(i64, bool, Option<f64>)> = rows(
        &db,
        "SELECT events, failed, server_cpu_us_per_op FROM measurements WHERE warm = 0",
    );
    assert!(
        steps.len() == 1
            && steps
                .iter()
                .all(|(e, f, cpu)| *e > 0 && !f && cpu.is_some_and(|c| c > 0.0)),
        "{steps:?}"
    );
    let again = dbdelta(dir.path())
        .env("DBDELTA_CACHE", cache)
        .env("DBDELTA_DEBIAN_MIRROR", "http://127.0.0.1:9/debian")
        .args(["fetch", &format!("postgres@{version}")])
        .output()
        .unwrap();
    // Cached: an exact version needs no suite (the mirror above refuses every connection).
    assert!(
        again.status.success()
            && text(&again.stdout).contains("from the cache, nothing downloaded"),
        "{}{}",
        text(&again.stdout),
        text(&again.stderr)
    );
}

#[test]
fn a_port_in_use_fails_the_target_clearly() {
    if !postgres_installed() {
        return;
    }
    let dir = scratch();
    let busy = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = busy.local_addr().unwrap().port();
    let lab = lab(dir.path(), &format!("port = {port}"), 0.3);
    let out = dbdelta(dir.path())
        .args(["run", lab.to_str().unwrap(), "--quick"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("port {port} on 127.0.0.1 is in use")),
        "{err}"
    );
    assert!(
        postgres_processes()
            .iter()
            .all(|p| p.1 != std::process::id())
    );
}

/// The catalog's labels in run order without the `.pre` steps, as `dbdelta list steps` prints.
fn catalog_without_pre(dir: &Path) -> Vec<String> {
    let out = dbdelta(dir).args(["list", "steps"]).output().unwrap();
    text(&out.stdout)
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|l| !l.contains(".pre"))
        .collect()
}

#[test]
fn postgres_runs_the_whole_catalog_with_quick() {
    if !postgres_installed() {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let lab = lab(dir.path(), "", 0.3);
    let started = Instant::now();
    let out = dbdelta(dir.path())
        .args(["run", lab.to_str().unwrap(), "-q", "--quick"])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(out.status.success(), "{}", text(&out.stderr));
    eprintln!("the whole catalog on PostgreSQL with --quick took {took:?}");
    assert!(took < Duration::from_secs(120), "took {took:?}");

    let db = Connection::open(dir.path().join("dbdelta.db")).unwrap();
    type Row = (String, bool, i64, i64, i64, bool, i64, Option<f64>);
    let rows: Vec<Row> = rows(
        &db,
        "SELECT step, warm, ops, events, statements_per_event, failed,
                errors_retryable + errors_reconnect + errors_fatal, rows_per_event
         FROM measurements ORDER BY rowid",
    );
    let order: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
    assert_eq!(
        order,
        catalog_without_pre(dir.path()),
        "docs/workloads.md's catalog order"
    );
    assert_eq!(
        rows.iter().filter(|r| !r.1).count(),
        32,
        "32 reported steps"
    );
    for (step, warm, ops, events, spe, failed, errors, rows_per_event) in rows {
        assert!(!failed, "{step} failed");
        assert_eq!(errors, 0, "{step}: errors");
        assert!(events > 0, "{step}: no events");
        assert_eq!(ops, events * spe, "{step}");
        assert_eq!(warm, step.contains(".warm"), "{step}");
        assert!(
            rows_per_event.is_some(),
            "{step}: rows per event of the measured events"
        );
    }
    let report = text(&out.stdout);
    assert!(report.contains("Scan: thousands of rows scanned per second"));
}

/// A run with a failed target and a client-bound step: both warnings in every format (CSV
/// carries them as columns). Nothing is faked: the failed target has a setting PostgreSQL
/// rejects, and the client-bound flag is the runner's own (docs/measurement.md, What is
/// measured: client CPU/op ≥ half the server's, or a client thread busy > 80%). Under `cargo
/// test` the client is the unoptimised test build, whose CPU per cheap read is about the
/// server's own, so short point reads are flagged; the test needs one of them to be.
#[test]
fn a_failed_target_and_a_client_bound_step_are_warned_in_every_format() {
    if !postgres_installed() {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let lab = dir.path().join("lab.toml");
    std::fs::write(
        &lab,
        "[lab]\nname = \"warnings\"\n\n\
         [[target]]\nname = \"pg\"\nengine = \"postgres\"\n\n\
         [[target]]\nname = \"pgbad\"\nengine = \"postgres\"\nsettings = [\"shared_buffers = 'lots'\"]\n\n\
         [suite.sysbench]\nrows = 2000\n",
    )
    .unwrap();
    let mut args = vec!["run", lab.to_str().unwrap(), "-q", "--quick"];
    for step in ["point-query", "read-only-simple", "range-covered-pk"] {
        args.extend(["--only", step]);
    }
    let out = dbdelta(dir.path()).args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));

    let db = Connection::open(dir.path().join("dbdelta.db")).unwrap();
    let flagged: Vec<String> = rows::<(String,)>(
        &db,
        "SELECT step FROM measurements WHERE client_bound AND NOT failed",
    )
    .into_iter()
    .map(|(s,)| s)
    .collect();
    // NULL where a step's CPU window could not cover it (below resolution).
    let costs: Vec<(String, Option<f64>, Option<f64>)> = rows(
        &db,
        "SELECT step, client_cpu_us_per_op, server_cpu_us_per_op FROM measurements",
    );
    assert!(
        !flagged.is_empty(),
        "no step was client-bound (client, server CPU µs/op): {costs:?}"
    );
    let log: String = db
        .query_row(
            "SELECT log_path FROM targets WHERE name = 'pgbad' AND failed",
            [],
            |r| r.get(0),
        )
        .unwrap();

    let report = |format: &str| {
        let out = dbdelta(dir.path())
            .args(["report", "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let failed = "target pgbad failed:";
    for format in ["text", "md", "json"] {
        let r = report(format);
        assert!(
            r.contains(failed) && r.contains(&log),
            "{format}: no failed-target warning with {log}:\n{r}"
        );
        for step in &flagged {
            // One warning names every client-bound step (`client-bound (2 steps): …`), which
            // text wraps.
            let words = r.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                words.contains("client-bound") && words.contains(&format!("pg {step} at 1 client")),
                "{format}: no client-bound warning for {step}:\n{r}"
            );
        }
    }
    let json: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    let warnings: Vec<&str> = (json["warnings"].as_array().unwrap().iter())
        .filter_map(|w| w.as_str())
        .filter(|w| w.starts_with("client-bound"))
        .collect();
    assert_eq!(warnings.len(), 1, "said once: {warnings:?}");
    for step in &flagged {
        assert!(
            warnings[0].contains(&format!("pg {step} at 1 client")),
            "{warnings:?}"
        );
    }
    assert!(
        schema_errors(&json).is_empty(),
        "{:?}",
        schema_errors(&json)
    );

    let csv = report("csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    for r in &rows {
        let cb = &r[col("client_bound")] == "true";
        match &r[col("target")] {
            "pg" => assert_eq!(cb, flagged.iter().any(|s| s == &r[col("step")]), "{r:?}"),
            _ => {
                assert_eq!(
                    (
                        &r[col("failed")],
                        &r[col("target_failed")],
                        &r[col("log_path")]
                    ),
                    ("true", "true", log.as_str())
                );
                assert!(r[col("error")].contains("did not start"), "{r:?}");
            }
        }
    }
    assert_eq!(rows.len(), 6, "3 steps × (pg, pgbad):\n{csv}");
}
