//! Helpers for the resume and fault tests: a two-target lab on one engine, a run started in
//! the background and watched through its store, the cells of a JSON report, and the processes
//! a run left under its scratch directory.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::{dbdelta, run, text};

/// The steps every resume and fault run measures (with `--quick`: 0.1 s warm-up + 0.3 s).
pub const ONLY: &str = "point-query,update-index,insert";

/// Two targets, `a` and `b`, of `engine` (`sqlite` or `postgres`), tiny tables. `b` differs
/// by one setting.
pub fn two_target_lab(dir: &Path, engine: &str) -> PathBuf {
    let setting = match engine {
        "sqlite" => "synchronous = OFF",
        _ => "synchronous_commit = off",
    };
    let body = format!(
        "[lab]\nname = \"{engine} resume\"\n\n[[target]]\nname = \"a\"\nengine = \"{engine}\"\n\n\
         [[target]]\nname = \"b\"\nengine = \"{engine}\"\nsettings = [\"{setting}\"]\n\n\
         [suite.sysbench]\nrows = 2000\n"
    );
    let path = dir.join("lab.toml");
    std::fs::write(&path, body).unwrap();
    path
}

/// The arguments of a run of `lab` at test scale, into `store` (a file name in `dir`).
pub fn run_args(lab: &Path, store: &str) -> Vec<String> {
    [
        "--store",
        store,
        "run",
        lab.to_str().unwrap(),
        "-q",
        "--quick",
        "--only",
        ONLY,
        "--format",
        "json",
    ]
    .map(String::from)
    .to_vec()
}

/// Start a run of `lab` into `store` in the background.
pub fn start(dir: &Path, lab: &Path, store: &str) -> Child {
    dbdelta(dir)
        .args(run_args(lab, store))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The number `sql` counts in the store at `db` (0 while it cannot be read).
pub fn count(db: &Path, sql: &str) -> i64 {
    Connection::open(db)
        .and_then(|c| c.query_row(sql, [], |r| r.get(0)))
        .unwrap_or(0)
}

/// Wait until `sql` counts at least `n` in the store, while `child` runs.
pub fn wait_for(db: &Path, sql: &str, n: i64, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while count(db, sql) < n {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("dbdelta ended ({status}) before `{sql}` reached {n}");
        }
        assert!(
            Instant::now() < deadline,
            "`{sql}` did not reach {n} in 90 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait until the first target's cell finished and the second target stored its first step:
/// the run is inside its second target.
pub fn wait_for_second_target(db: &Path, child: &mut Child) {
    wait_for(
        db,
        "SELECT count(*) FROM cells WHERE target = 'a'",
        1,
        child,
    );
    wait_for(
        db,
        "SELECT count(*) FROM measurements WHERE target = 'b'",
        1,
        child,
    );
}

/// `dbdelta run --resume [RUN]` with the store `store`, to completion.
pub fn resume(dir: &Path, store: &str, run_id: Option<&str>) -> Output {
    // Not quiet: what resume removes and reruns is progress on standard error.
    let mut args = vec!["--store", store, "run", "--format", "json", "--resume"];
    args.extend(run_id);
    run(dir, &args)
}

/// The JSON report of `run_id` (`latest` when `None`).
pub fn report(dir: &Path, store: &str, run_id: Option<&str>) -> serde_json::Value {
    let out = run(
        dir,
        &[
            "--store",
            store,
            "report",
            run_id.unwrap_or("latest"),
            "--format",
            "json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// One value per measurement of a JSON report, as a set.
fn per_measurement<T: Ord>(
    report: &serde_json::Value,
    f: impl Fn(&serde_json::Value) -> T,
) -> BTreeSet<T> {
    report["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .map(f)
        .collect()
}

/// (target, clients, repeat, step) of every measurement in a JSON report.
pub fn cells(report: &serde_json::Value) -> BTreeSet<(String, u64, u64, String)> {
    per_measurement(report, |m| {
        (
            m["target"].as_str().unwrap().to_string(),
            m["clients"].as_u64().unwrap(),
            m["repeat"].as_u64().unwrap(),
            m["step"].as_str().unwrap().to_string(),
        )
    })
}

/// (target, invocation) of every measurement: which invocation measured each target's steps.
pub fn invocations_by_target(report: &serde_json::Value) -> BTreeSet<(String, u64)> {
    per_measurement(report, |m| {
        (
            m["target"].as_str().unwrap().to_string(),
            m["invocation"].as_u64().unwrap(),
        )
    })
}

/// (PID, command line) of every process whose working directory or command line is under
/// `dir`, this test process excepted: what a run left behind.
pub fn processes_under(dir: &Path) -> Vec<(u32, String)> {
    let dir = dir.canonicalize().unwrap();
    let me = std::process::id();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        let in_dir = std::fs::read_link(format!("/proc/{pid}/cwd"))
            .is_ok_and(|c| c.starts_with(&dir))
            || cmdline.contains(dir.to_str().unwrap());
        if in_dir {
            out.push((pid, cmdline));
        }
    }
    out
}

/// Wait (up to 10 s) until no process is left under `dir`; the ones left otherwise.
pub fn settle(dir: &Path) -> Vec<(u32, String)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_under(dir);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The PIDs of the server processes running in data directories under `dir`.
pub fn servers_under(dir: &Path) -> Vec<u32> {
    processes_under(dir)
        .into_iter()
        .map(|(pid, _)| pid)
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() != "dbdelta")
        })
        .collect()
}

/// Send `signal` to `pid`.
pub fn signal(pid: u32, signal: i32) {
    // SAFETY: a signal to a process this test started, or one of its servers.
    unsafe { libc::kill(pid as i32, signal) };
}
