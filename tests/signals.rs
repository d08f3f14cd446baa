//! Terminating signals and one owner per run, on Debian's PostgreSQL:
//! - SIGTERM and SIGHUP during a run's load and during a step: dbdelta exits within
//!   [`EXIT_BOUND`] with 128 + the signal, leaves no process and no data directory, and
//!   `--resume` completes the run with every planned cell (each signal once in each phase: the
//!   run is signalled in its load (the signal delivered twice at once, as `timeout` does),
//!   resumed, signalled in a step, resumed to the end);
//! - SIGINT during the wait after a load (`postwrite_secs = 60`) exits within the bound; a
//!   second signal (SIGTERM then SIGQUIT) ends dbdelta at once with its server killed;
//! - a terminal's Ctrl-C (SIGINT to dbdelta's whole process group) during `initdb` leaves the
//!   target interrupted, not failed;
//! - while a run is being resumed, a second `--resume` of it is refused naming the owner's PID,
//!   and `dbdelta clean` leaves its directory alone, naming the PID;
//! - the report of a run interrupted before a target started says "not run", not "ok".

mod common;
use common::faults::{cells, count, processes_under, report, settle, signal};
use common::*;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// How long dbdelta may take to end after a signal. It takes 1-3 s (the step or wait ends at
/// once, the server's fast shutdown); the bound is generous for a loaded 2-core host, and well
/// under the 60 s wait the SIGINT case interrupts.
const EXIT_BOUND: Duration = Duration::from_secs(10);

/// The steps of these runs.
const ONLY: &str = "point-query,update-index";

/// PostgreSQL targets at a scale whose load takes about a second (60,000 rows, a debug build:
/// long enough to signal it in its `COPY`), 1.5 s steps, the wait after writes `postwrite`
/// seconds.
fn lab(dir: &Path, postwrite: f64, targets: &[&str]) -> PathBuf {
    let mut body = String::from("[lab]\nname = \"signals\"\n\n");
    for t in targets {
        body += &format!("[[target]]\nname = \"{t}\"\nengine = \"postgres\"\n\n");
    }
    body += &format!(
        "[suite.sysbench]\nrows = 60000\nread_secs = 1.5\nwrite_secs = 1.5\nwarmup_secs = 0.1\n\
         postwrite_secs = {postwrite}\n"
    );
    let path = dir.join("lab.toml");
    std::fs::write(&path, body).unwrap();
    path
}

/// Start dbdelta with `args` in `dir`, in a process group of its own (as a shell starts a
/// job), its standard error into `dir/<name>.err`.
fn spawn(dir: &Path, name: &str, args: &[&str]) -> Child {
    let err = std::fs::File::create(dir.join(format!("{name}.err"))).unwrap();
    dbdelta(dir)
        .args(["--store", "dbdelta.db"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(err)
        .process_group(0)
        .spawn()
        .unwrap()
}

fn stderr_of(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(format!("{name}.err"))).unwrap_or_default()
}

/// Wait until `ready`, while `child` runs (90 s at most: the slowest phase takes about 15 s).
fn until(what: &str, child: &mut Child, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !ready() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("dbdelta ended ({status}) before {what}");
        }
        assert!(Instant::now() < deadline, "no {what} within 90 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether a process under `dir` shows `title` in its command line (PostgreSQL's backends show
/// the statement they run: `COPY` in the load, `UPDATE` in update-index).
fn backend_shows(dir: &Path, title: &str) -> bool {
    processes_under(dir)
        .iter()
        .any(|(_, cmd)| cmd.starts_with("postgres: ") && cmd.contains(title))
}

/// Send `sigs` to `child`, 20 ms apart (to its whole process group when `group`: a terminal's
/// Ctrl-C); check it ends within [`EXIT_BOUND`] with 128 + the last, leaving no process, and no
/// data directory unless a different second signal ended it at once (its servers killed). The
/// same signal twice at once is one signal delivered twice, as `timeout` does.
fn signal_and_check(dir: &Path, name: &str, mut child: Child, sigs: &[i32], group: bool) {
    let pid = child.id() as i32;
    for (i, &sig) in sigs.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
        signal(if group { (-pid) as u32 } else { pid as u32 }, sig);
    }
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > EXIT_BOUND {
            signal(pid as u32, libc::SIGKILL);
            let _ = child.wait();
            panic!(
                "{name}: still running {EXIT_BOUND:?} after signals {sigs:?}: {}",
                stderr_of(dir, name)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = stderr_of(dir, name);
    let last = *sigs.last().unwrap();
    assert_eq!(status.code(), Some(128 + last), "{name}: {err}");
    // The server's last backends may take a moment after the postmaster is reaped.
    let left = settle(dir);
    assert!(left.is_empty(), "{name}: processes left: {left:?}");
    eprintln!(
        "{name}: signals {sigs:?} → exit {:?} in {:.1} s",
        status.code(),
        t0.elapsed().as_secs_f64()
    );
    // A different second signal ends dbdelta at once, leaving the data directories (stale).
    if sigs.windows(2).any(|w| w[0] != w[1]) {
        return;
    }
    let work = dir.join("dbdelta-work");
    let entries: Vec<_> = std::fs::read_dir(&work)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        entries.is_empty(),
        "{name}: left in the work directory: {entries:?}"
    );
}

fn run_id(dir: &Path) -> String {
    rusqlite::Connection::open(dir.join("dbdelta.db"))
        .unwrap()
        .query_row("SELECT id FROM runs", [], |r| r.get(0))
        .unwrap()
}

/// Interrupt a two-target run with `first` in its first load, resume it and interrupt that
/// with `second` in a step of the second target, then resume it to the end: every planned cell,
/// none failed.
fn load_then_step(first: i32, second: i32, check_owner: bool) {
    let dir = scratch();
    let d = dir.path();
    let lab = lab(d, 0.2, &["a", "b"]);
    let mut child = spawn(d, "run", &["run", lab.to_str().unwrap(), "--only", ONLY]);
    until("the load's COPY", &mut child, || backend_shows(d, "COPY"));
    // Delivered twice, as `timeout` does (to its child, then to its process group): still one.
    signal_and_check(d, "run", child, &[first, first], false);
    assert!(
        stderr_of(d, "run").contains("the load was interrupted"),
        "{}",
        stderr_of(d, "run")
    );
    let id = run_id(d);
    if check_owner {
        // No target started a step; the report says so.
        let out = run(d, &["--store", "dbdelta.db", "report", &id]);
        let report = text(&out.stdout);
        for (t, status) in [
            ("a", "base, not run (run interrupted)"),
            ("b", "not run (run interrupted)"),
        ] {
            assert!(
                report
                    .lines()
                    .any(|l| l.trim_start().starts_with(&format!("{t} ")) && l.contains(status)),
                "target {t} is `{status}`:\n{report}"
            );
        }
    }

    let db = d.join("dbdelta.db");
    let mut child = spawn(d, "resume1", &["run", "--resume", &id]);
    until("b's load", &mut child, || {
        count(&db, "SELECT count(*) FROM loads WHERE target = 'b'") == 1
    });
    if check_owner {
        second_invocations_refused(d, &id, &child);
    }
    until("b's update-index step", &mut child, || {
        backend_shows(d, "UPDATE")
    });
    signal_and_check(d, "resume1", child, &[second], false);
    let err = stderr_of(d, "resume1");
    assert!(err.contains("interrupted (not recorded)"), "{err}");

    let out = run(
        d,
        &[
            "--store",
            "dbdelta.db",
            "run",
            "--resume",
            &id,
            "--format",
            "json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let want: std::collections::BTreeSet<_> = ["a", "b"]
        .iter()
        .flat_map(|t| {
            ONLY.split(',')
                .map(move |s| (t.to_string(), 1, 1, s.to_string()))
        })
        .collect();
    assert_eq!(cells(&r), want, "the run is whole");
    assert_eq!(r["run"]["complete"], true);
    assert!(
        r["targets"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["failed"] == false)
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM measurements WHERE failed = 1"),
        0
    );
    let left = settle(d);
    assert!(left.is_empty(), "left after resume: {left:?}");
}

/// While `owner` resumes run `id`, another `--resume` is refused naming its PID, and
/// `dbdelta clean` leaves its directory alone, naming the PID; the owner runs on.
fn second_invocations_refused(dir: &Path, id: &str, owner: &Child) {
    let pid = format!("PID {}", owner.id());
    let out = run(dir, &["--store", "dbdelta.db", "run", "--resume", id]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&pid) && err.lines().count() == 1, "{err}");
    let out = run(dir, &["clean"]);
    let said = text(&out.stderr) + &text(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.contains(&pid) && !said.contains("removed"), "{said}");
    assert!(
        std::fs::read_dir(dir.join("dbdelta-work").join(id)).is_ok(),
        "the live run's directory is kept"
    );
}

/// Both orders of SIGTERM and SIGHUP (the load, then a step), one after the other: the checks
/// of a second invocation and of the report once.
#[test]
fn sigterm_and_sighup_in_the_load_and_in_a_step_then_resume() {
    if !postgres_installed() {
        return;
    }
    let _lock = measuring();
    load_then_step(libc::SIGTERM, libc::SIGHUP, true);
    load_then_step(libc::SIGHUP, libc::SIGTERM, false);
}

/// A one-target run with `postwrite` seconds of wait after the load, started in `dir`.
fn one_target_run(dir: &Path, postwrite: f64) -> Child {
    let lab = lab(dir, postwrite, &["a"]);
    let args = ["run", lab.to_str().unwrap(), "--only", "point-query"];
    spawn(dir, "run", &args)
}

/// A one-target run in `dir`, once it is in its 60 s wait after the load (the load is stored
/// before the wait starts).
fn in_the_wait_after_the_load(dir: &Path) -> Child {
    let mut child = one_target_run(dir, 60.0);
    let db = dir.join("dbdelta.db");
    until("the load", &mut child, || {
        count(&db, "SELECT count(*) FROM loads") == 1
    });
    child
}

/// SIGINT in the 60 s wait after the load: out within the bound, not after the wait; and a
/// terminal's Ctrl-C (SIGINT to dbdelta's whole process group) during initdb: initdb runs in
/// its own group, so dbdelta stops it and the target is interrupted, not failed.
#[test]
fn sigint_in_the_wait_after_the_load_and_ctrl_c_in_initdb() {
    if !postgres_installed() {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let d = dir.path();
    let child = in_the_wait_after_the_load(d);
    signal_and_check(d, "run", child, &[libc::SIGINT], false);

    // A second signal ends dbdelta at once, its server killed first (SIGQUIT: exit 131); what
    // it leaves is stale, and `dbdelta clean` removes it.
    let dir = scratch();
    let d = dir.path();
    let child = in_the_wait_after_the_load(d);
    signal_and_check(d, "run", child, &[libc::SIGTERM, libc::SIGQUIT], false);
    let err = stderr_of(d, "run");
    assert!(err.contains("SIGQUIT again: servers killed"), "{err}");
    let out = run(d, &["clean"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("removed"),
        "{}",
        text(&out.stdout)
    );

    let dir = scratch();
    let d = dir.path();
    let mut child = one_target_run(d, 0.2);
    until("initdb", &mut child, || {
        processes_under(d).iter().any(|(pid, _)| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "initdb")
        })
    });
    signal_and_check(d, "run", child, &[libc::SIGINT], true);
    let err = stderr_of(d, "run");
    assert!(!err.contains("initdb failed"), "{err}");
    let r = report(d, "dbdelta.db", None);
    assert_eq!(r["targets"][0]["failed"], false, "{err}");
    assert_eq!(r["run"]["complete"], false);
}
