//! A closed pipe ends the command, never hangs it (`dbdelta run … 2>&1 | head`):
//! - a run whose standard output and error go into one pipe, its reader closing it after a few
//!   lines, exits within [`EXIT_BOUND`] with 141 (128 + SIGPIPE), leaves no process and no data
//!   directory, and is stored incomplete; `run --resume` completes it. On embedded SQLite (the
//!   reader gone after 3 lines, as `head -3`) and on Debian's PostgreSQL (gone once a step runs,
//!   with `--report-interval 1`: the progress of a running step is what meets the closed pipe);
//! - `report` into a closed pipe, in every format, exits 141 with nothing on standard error, and
//!   `report | head -1` ends quietly (0 when the report fit in the pipe before `head` left, 141
//!   when not: `error::EXIT_PIPE`);
//! - a counting run (`--instructions`, callgrind) whose pipe closes stops as promptly;
//! - a run whose reader leaves during a two-minute step that writes nothing stops within 30 s
//!   (the closed pipe is noticed without a write).

mod common;
use common::faults::{processes_under, settle};
use common::*;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long dbdelta may take to end once its pipe is closed. It takes a second or two (the
/// next line it writes meets the closed pipe, the step ends, the server stops); the bound is
/// generous for a loaded 2-core host, and far under what the runs below take to finish.
const EXIT_BOUND: Duration = Duration::from_secs(60);

/// 128 + SIGPIPE.
const EXIT_PIPE: i32 = 141;

/// Start dbdelta with `args` in `dir` (store `dbdelta.db`), in a process group of its own,
/// standard output and error both into one pipe (`2>&1 |`); the reader of that pipe.
fn spawn_into_pipe(dir: &Path, args: &[&str]) -> (Child, std::io::PipeReader) {
    let (reader, writer) = std::io::pipe().unwrap();
    let child = dbdelta(dir)
        .args(["--store", "dbdelta.db"])
        .args(args)
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .process_group(0)
        .spawn()
        .unwrap();
    (child, reader)
}

/// Read `child`'s pipe line by line until `enough` says so (given each line and how many came
/// so far; 300 s at most), close it, and wait for the child to end within [`EXIT_BOUND`]
/// (killed and the test failed when not). Its exit status, the lines read, and how long it
/// took to end after the close.
fn close_after(
    mut child: Child,
    reader: std::io::PipeReader,
    mut enough: impl FnMut(&str, usize) -> bool,
) -> (ExitStatus, Vec<String>, Duration) {
    let mut lines = Vec::new();
    let mut reader = BufReader::new(reader);
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).unwrap();
        assert!(
            n > 0,
            "the pipe ended before the reader closed it: {lines:#?}"
        );
        lines.push(line.trim_end().to_string());
        if enough(&lines[lines.len() - 1], lines.len()) {
            break;
        }
        assert!(Instant::now() < deadline, "not enough lines: {lines:#?}");
    }
    drop(reader);
    let closed = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, lines, closed.elapsed());
        }
        if closed.elapsed() > EXIT_BOUND {
            // SAFETY: the process group this test started.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!("still running {EXIT_BOUND:?} after its pipe closed; it read: {lines:#?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// After a run a closed pipe ended: exit 141 within the bound, no process and no data
/// directory left, the run stored incomplete; its id.
fn check_stopped(dir: &Path, what: &str, status: ExitStatus, lines: &[String], took: Duration) {
    assert_eq!(
        status.code(),
        Some(EXIT_PIPE),
        "{what}: {status}; read {lines:#?}"
    );
    let left = settle(dir);
    assert!(left.is_empty(), "{what}: processes left: {left:?}");
    let work = dir.join("dbdelta-work");
    let entries: Vec<_> = std::fs::read_dir(&work)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(entries.is_empty(), "{what}: left in {work:?}: {entries:?}");
    let complete: Vec<(String, bool)> = rows(&store(dir), "SELECT id, complete FROM runs");
    assert!(
        complete.len() == 1 && !complete[0].1,
        "{what}: one run, incomplete: {complete:?}"
    );
    eprintln!(
        "{what}: pipe closed after {} line(s) → exit {:?} in {:.1} s",
        lines.len(),
        status.code(),
        took.as_secs_f64()
    );
}

fn store(dir: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(dir.join("dbdelta.db")).unwrap()
}

fn run_id(dir: &Path) -> String {
    store(dir)
        .query_row("SELECT id FROM runs", [], |r| r.get(0))
        .unwrap()
}

/// `run --resume` completes the run: exit 0, the run complete.
fn resume_completes(dir: &Path, what: &str) {
    let id = run_id(dir);
    let out = run(dir, &["--store", "dbdelta.db", "run", "--resume", &id]);
    assert!(
        out.status.success(),
        "{what}: resume: {}",
        text(&out.stderr)
    );
    let complete: bool = store(dir)
        .query_row("SELECT complete FROM runs WHERE id = ?1", [&id], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(complete, "{what}: the resumed run is complete");
}

/// A SQLite lab of two targets: the whole catalog's `--quick` steps, about a minute (the run is
/// found incomplete: finishing is not why it ends).
fn sqlite_lab(dir: &Path) -> std::path::PathBuf {
    let body = "[lab]\nname = \"pipe\"\n\n\
                [[target]]\nname = \"a\"\nengine = \"sqlite\"\n\n\
                [[target]]\nname = \"b\"\nengine = \"sqlite\"\n";
    let path = dir.join("lab.toml");
    std::fs::write(&path, body).unwrap();
    path
}

/// `dbdelta run LAB --quick 2>&1 | head -3` on SQLite, then `--resume` (two steps: the
/// resume runs what the run was asked for, and the whole catalog would only cost CI time).
#[test]
fn a_sqlite_run_whose_pipe_closes_after_three_lines_stops_resumably_with_141() {
    let _lock = measuring();
    let dir = scratch();
    let d = dir.path();
    let lab = sqlite_lab(d);
    let args = [
        "run",
        lab.to_str().unwrap(),
        "--quick",
        "--only",
        "point-query,update-index",
    ];
    let (child, reader) = spawn_into_pipe(d, &args);
    let (status, lines, took) = close_after(child, reader, |_, n| n == 3);
    check_stopped(d, "sqlite", status, &lines, took);
    resume_completes(d, "sqlite");
}

/// A stored run's report into closed pipes: quiet, 141 (or 0 for what fit in the pipe).
#[test]
fn a_report_into_a_closed_pipe_ends_quietly() {
    let _lock = measuring();
    let dir = scratch();
    let d = dir.path();
    let lab = sqlite_lab(d);
    let args = [
        "--store",
        "dbdelta.db",
        "run",
        lab.to_str().unwrap(),
        "--quick",
    ];
    let out = run(
        d,
        &[&args[..], &["--only", "point-query,update-index"]].concat(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    reports_into_closed_pipes(d);
}

/// Every report format of the stored run into a pipe already closed: exit 141, nothing on
/// standard error; `report | head -1` through a shell: quiet, 0 or 141.
fn reports_into_closed_pipes(dir: &Path) {
    for format in ["text", "md", "html", "json", "csv"] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = dbdelta(dir)
            .args(["--store", "dbdelta.db", "report", "--format", format])
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(EXIT_PIPE),
            "report --format {format} into a closed pipe: {err}"
        );
        assert!(err.is_empty(), "report --format {format}: said {err:?}");
    }
    let bin = env!("CARGO_BIN_EXE_dbdelta");
    for (format, head) in [("text", "head -1"), ("html", "head -c 10")] {
        let script = format!(
            "'{bin}' --store dbdelta.db report --format {format} | {head} >/dev/null; \
             echo ${{PIPESTATUS[0]}}"
        );
        let started = Instant::now();
        let out = std::process::Command::new("bash")
            .args(["-c", &script])
            .current_dir(dir)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let err = text(&out.stderr);
        let code = text(&out.stdout).trim().to_string();
        assert!(
            err.is_empty(),
            "report --format {format} | {head}: said {err:?}"
        );
        assert!(
            code == "0" || code == "141",
            "report --format {format} | {head}: exit {code}"
        );
        assert!(started.elapsed() < Duration::from_secs(30));
    }
}

/// The same on Debian's PostgreSQL, with `--report-interval 1`: the reader leaves once the
/// first step runs, so the interval line of a running step meets the closed pipe (today's
/// dbdelta panicked there and hung: the step's client threads waited forever for it).
#[test]
fn a_postgres_run_whose_pipe_closes_in_a_step_stops_resumably_with_141() {
    if !postgres_installed() {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let d = dir.path();
    let lab = d.join("lab.toml");
    std::fs::write(
        &lab,
        "[lab]\nname = \"pipe\"\n\n\
         [[target]]\nname = \"a\"\nengine = \"postgres\"\n\n\
         [[target]]\nname = \"b\"\nengine = \"postgres\"\n",
    )
    .unwrap();
    let args = [
        "run",
        lab.to_str().unwrap(),
        "--quick",
        "--only",
        "point-query,update-index",
        "--time",
        "3",
        "--report-interval",
        "1",
    ];
    let (child, reader) = spawn_into_pipe(d, &args);
    // The load is done: a server runs and its first step begins.
    let (status, lines, took) = close_after(child, reader, |l, _| l.contains(": loaded "));
    check_stopped(d, "postgres", status, &lines, took);
    assert!(processes_under(d).is_empty());
    resume_completes(d, "postgres");
}

/// A counting run (`--instructions`: each target's counting cell under callgrind, two at once)
/// whose reader leaves once the first counting server started: the next line a counting thread writes
/// meets the closed pipe (today a panic in that thread, the other cell counting on), and the
/// run stops as promptly, leaving no valgrind'd server behind.
#[test]
fn a_counting_run_whose_pipe_closes_stops_promptly_with_141() {
    if !valgrind_installed() {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let d = dir.path();
    let lab = sqlite_lab(d);
    let args = [
        "run",
        lab.to_str().unwrap(),
        "--quick",
        "--instructions",
        "--only",
        "point-query,update-index",
    ];
    let (child, reader) = spawn_into_pipe(d, &args);
    let (status, lines, took) =
        close_after(child, reader, |l, _| l.contains(" started, counted by "));
    check_stopped(d, "counting", status, &lines, took);
    assert!(took < Duration::from_secs(15), "took {took:?} to stop");
}

/// A run whose reader leaves during a step of two minutes that writes nothing: the closed pipe
/// is noticed without a write (the run watches its pipes), and the run stops within the bound
/// instead of running the step out.
#[test]
fn a_closed_pipe_stops_a_silent_step_without_waiting_for_its_next_line() {
    let _lock = measuring();
    let dir = scratch();
    let d = dir.path();
    let lab = sqlite_lab(d);
    let args = [
        "run",
        lab.to_str().unwrap(),
        "--quick",
        "--only",
        "point-query",
        "--time",
        "120",
    ];
    let (child, reader) = spawn_into_pipe(d, &args);
    let (status, lines, took) = close_after(child, reader, |l, _| l.contains(": loaded "));
    check_stopped(d, "silent step", status, &lines, took);
    assert!(took < Duration::from_secs(30), "took {took:?} to stop");
}
