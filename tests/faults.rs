//! The fault matrix: for SQLite and Debian's PostgreSQL, each fault is
//! injected while the run is inside its second target, then: no process is left under the
//! scratch directory, the store opens, the first target's finished steps are all there, and
//! `dbdelta run --resume` completes the run with every planned cell. Each case prints one row
//! of the matrix (`fault | engine | outcome | processes left | steps kept | resume`).
//!
//! Faults: kill -9 of dbdelta, SIGINT, the server killed mid-step (PostgreSQL; SQLite's engine
//! is dbdelta itself, so that is the kill -9 case), the server stopped (SIGSTOP) for longer than
//! a step (PostgreSQL: for good, until dbdelta's watchdog kills it after 10 s; SQLite: dbdelta
//! itself, its engine's process, for 3 s, ten times a step), a full disk under the work directory
//! and a full disk under the store (a small tmpfs filled up; we are root).

mod common;
use common::faults::*;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

/// The steps the first target stored: its finished cell.
const KEPT: &str = "SELECT count(*) FROM measurements WHERE target = 'a' AND failed = 0";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    Kill9,
    Sigint,
    ServerKilled,
    ServerStopped,
    WorkdirFull,
    StoreFull,
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(path: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(path).unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(path)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount a tmpfs at {} (needs root)", path.display());
        Tmpfs(path.to_path_buf())
    }

    /// Write zeros until the file system is full.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.0.join("filler")).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
    }

    fn free(&self) {
        std::fs::remove_file(self.0.join("filler")).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// The server processes of `engine` to signal: PostgreSQL's whole tree under the scratch
/// directory; SQLite's engine is dbdelta itself.
fn engine_pids(engine: &str, dir: &Path, child: &Child) -> Vec<u32> {
    match engine {
        "sqlite" => vec![child.id()],
        _ => servers_under(dir),
    }
}

/// Inject `fault` once the run is inside its second target (a full disk stays full until the
/// case frees it).
fn inject(fault: Fault, engine: &str, dir: &Path, child: &mut Child, mount: Option<&Tmpfs>) {
    let db_in = |d: &Path| match fault {
        Fault::StoreFull => d.join("store/dbdelta.db"),
        _ => d.join("dbdelta.db"),
    };
    wait_for_second_target(&db_in(dir), child);
    match fault {
        Fault::Kill9 => signal(child.id(), libc::SIGKILL),
        Fault::Sigint => signal(child.id(), libc::SIGINT),
        Fault::ServerKilled => {
            let pids = servers_under(dir);
            assert!(!pids.is_empty(), "a server runs");
            // The postmaster is the one whose parent is dbdelta.
            for pid in pids {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let ppid: Option<u32> = stat
                    .rsplit(')')
                    .next()
                    .and_then(|r| r.split_whitespace().nth(1))
                    .and_then(|p| p.parse().ok());
                if ppid == Some(child.id()) {
                    signal(pid, libc::SIGKILL);
                }
            }
        }
        Fault::ServerStopped => {
            let pids = engine_pids(engine, dir, child);
            pids.iter().for_each(|&p| signal(p, libc::SIGSTOP));
            if engine == "sqlite" {
                // dbdelta itself: nothing could end its stop but us.
                std::thread::sleep(Duration::from_secs(3));
                pids.iter().for_each(|&p| signal(p, libc::SIGCONT));
            }
            // PostgreSQL stays stopped: dbdelta's watchdog kills it after 10 s.
        }
        Fault::WorkdirFull | Fault::StoreFull => mount.unwrap().fill(),
    }
}

/// dbdelta's output once it ends; a run still going 60 s after the fault hangs (a stopped
/// server that is never killed would): it is killed and the case fails.
fn wait_bounded(mut child: Child, fault: Fault, engine: &str, dir: &Path) -> std::process::Output {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() >= deadline {
            signal(child.id(), libc::SIGKILL);
            let _ = child.wait();
            servers_under(dir)
                .into_iter()
                .for_each(|p| signal(p, libc::SIGKILL));
            panic!("{fault:?} {engine}: dbdelta still ran 60 s after the fault");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Run `engine`'s two-target lab with `fault` injected in its second target; check what is
/// left, resume and check the run is whole. Returns the matrix row.
fn case(fault: Fault, engine: &str) -> String {
    let dir = scratch();
    let lab = two_target_lab(dir.path(), engine);
    // Room for dbdelta's disk preflight (which refuses a work directory too small for the
    // plan up front); the fault fills the rest once the second target runs.
    let size = if engine == "sqlite" { "64m" } else { "256m" };
    let mount = match fault {
        Fault::WorkdirFull => Some(Tmpfs::mount(&dir.path().join("dbdelta-work"), size)),
        Fault::StoreFull => Some(Tmpfs::mount(&dir.path().join("store"), "4m")),
        _ => None,
    };
    let store = match fault {
        Fault::StoreFull => "store/dbdelta.db",
        _ => "dbdelta.db",
    };
    let db = dir.path().join(store);
    let mut child = start(dir.path(), &lab, store);
    inject(fault, engine, dir.path(), &mut child, mount.as_ref());
    let out = wait_bounded(child, fault, engine, dir.path());
    let code = out.status.code();
    // The first failure dbdelta named (its summary on standard error), for the matrix.
    let stderr = text(&out.stderr);
    let why = (stderr.lines())
        .find(|l| l.starts_with("  "))
        .or_else(|| stderr.lines().last())
        .map(|l| l.trim().chars().take(110).collect::<String>())
        .unwrap_or_default();
    if fault == Fault::StoreFull {
        // The store's failure is named as the store's and ends the run; no target is blamed.
        assert!(
            stderr.contains("store/dbdelta.db: the results store's filesystem is full")
                && stderr.contains("no fault of the target's")
                && !stderr.contains("target b failed"),
            "{engine}: a full store is named as the store's: {stderr}"
        );
    }
    // The orphaned server of a SIGKILLed dbdelta stays (checked below): no need to wait.
    let left = if fault == Fault::Kill9 && engine == "postgres" {
        processes_under(dir.path())
    } else {
        settle(dir.path())
    };
    if let Some(m) = &mount {
        m.free();
    }
    let kept = count(&db, KEPT);
    let run_id: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT id FROM runs", [], |r| r.get(0))
        .expect("the store opens and holds the run");
    if fault == Fault::Kill9 && engine == "postgres" {
        // The server runs in its own process group: it outlives a SIGKILLed dbdelta, and
        // --resume (or dbdelta clean --stop) stops it, checked below.
        assert!(
            !left.is_empty(),
            "the orphaned server is the case to handle"
        );
    } else {
        assert!(
            left.is_empty(),
            "{fault:?} {engine}: processes left: {left:?}"
        );
    }
    assert_eq!(
        kept, 3,
        "{fault:?} {engine}: the first target's 3 steps are kept"
    );

    let resume = resume_to_the_end(fault, engine, dir.path(), store, &run_id);
    format!(
        "| {fault:?} | {engine} | dbdelta exit {} {why} | {} after the fault, 0 after resume | {kept} of 3 | {resume} |",
        code.map_or("killed".into(), |c| c.to_string()),
        left.len()
    )
}

/// `--resume RUN` after `fault`: the run ends complete with all 6 cells × steps and no failed
/// target, and no process is left. Returns the matrix's resume column.
fn resume_to_the_end(fault: Fault, engine: &str, dir: &Path, store: &str, run_id: &str) -> String {
    let resumed = resume(dir, store, Some(run_id));
    let err = text(&resumed.stderr);
    let report: serde_json::Value = serde_json::from_slice(&resumed.stdout)
        .unwrap_or_else(|_| report(dir, store, Some(run_id)));
    let resume_ran = resumed.status.success();
    let whole = cells(&report).len() == 6
        && report["run"]["complete"] == true
        && report["targets"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["failed"] == false);
    let stalled_ok =
        fault == Fault::ServerStopped && engine == "sqlite" && err.contains("nothing to resume");
    assert!(
        (resume_ran || stalled_ok) && whole,
        "{fault:?} {engine}: resume exit {:?}: {err}",
        resumed.status.code()
    );
    let after = settle(dir);
    assert!(
        after.is_empty(),
        "{fault:?} {engine}: left after resume: {after:?}"
    );
    if resume_ran {
        let inv = report["run"]["invocations"].as_array().unwrap();
        format!(
            "completed: invocation {} ran {}",
            inv.len(),
            inv.last().unwrap()["cells"]
        )
    } else {
        "nothing to resume (the run had completed)".to_string()
    }
}

/// The rows of `faults` on `engine`, one after another. No `measuring()` lock: every case has
/// its own scratch directory, mounts and servers, and none asserts a time but the watchdog's,
/// which is a bound (10 s), so the matrix's tests share the host.
fn matrix(engine: &str, faults: &[Fault]) {
    for &fault in faults {
        let row = case(fault, engine);
        eprintln!("{row}");
    }
}

#[test]
fn sqlite_faults() {
    // The server killed mid-step: SQLite's engine runs inside dbdelta, so that is kill -9.
    matrix(
        "sqlite",
        &[
            Fault::Kill9,
            Fault::Sigint,
            Fault::ServerStopped,
            Fault::WorkdirFull,
            Fault::StoreFull,
        ],
    );
}

/// PostgreSQL's matrix in two tests that run side by side; each needs Debian's PostgreSQL.
fn postgres_matrix(faults: &[Fault]) {
    if postgres_installed() {
        matrix("postgres", faults);
    }
}

#[test]
fn postgres_faults() {
    postgres_matrix(&[Fault::Kill9, Fault::Sigint, Fault::ServerKilled]);
}

#[test]
fn postgres_stopped_server_and_full_disks() {
    postgres_matrix(&[Fault::ServerStopped, Fault::WorkdirFull, Fault::StoreFull]);
}

/// Counting on a full work directory (a 2 MB tmpfs: SQLite's load fits, its `ANALYZE` does
/// not): the counting cell's failure names no log that is not there (SQLite's engine runs in
/// dbdelta and writes none), its second server start is not started once the first failed
/// (one cell at a time), and nothing is left in the work directory. Needs valgrind.
#[test]
fn a_count_on_a_full_disk_names_only_a_log_that_exists() {
    if !valgrind_installed() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let lab = "[lab]\nname = \"full\"\nrepeats = 1\ninstructions = true\ncount_jobs = 1\n\n\
               [[target]]\nname = \"a\"\nengine = \"sqlite\"\n";
    std::fs::write(d.join("lab.toml"), lab).unwrap();
    let work = d.join("dbdelta-work");
    let _mount = Tmpfs::mount(&work, "2m");
    let args = ["run", "lab.toml", "--quick", "--only", "point-query"];
    let out = run(d, &[&args[..], &["--rows", "5000"]].concat());
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{said}");
    let line = (said.lines())
        .find(|l| l.contains("counting instructions:"))
        .expect(&said);
    assert!(line.contains("full"), "the full disk is the cause: {line}");
    assert!(
        said.contains("target a: counting start 2/2 not started: another start of the cell failed"),
        "{said}"
    );
    if let Some((_, log)) = line.split_once("(log: ") {
        let log = log.trim_end_matches(')');
        assert!(d.join(log).exists(), "{line} names a log that is not there");
    }
    let left: Vec<_> = std::fs::read_dir(&work).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}
