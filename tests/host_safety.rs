//! Never harm the host, through the real binary as root:
//! - `-o FILE` writes a regular file whole (its mode kept), follows a symbolic link to its
//!   target, writes a device in place (`/dev/null` stays a device: checked in a private mount
//!   namespace with a tmpfs on `/dev`, so the host's `/dev` is never touched), names ENOSPC for
//!   `/dev/full` (exit 1, in the same namespace), refuses a directory (exit 2); `run -o` that
//!   cannot be written is refused before the run starts;
//! - `init` on a missing directory exits 2 and on a full disk leaves no file (exit 1);
//! - `--store postgres://%zz` is bad input (exit 2); `bisect --step nosuchstep` names `--step`;
//!   SIGINT in a bisection does not promise a resume; a failed target is named once.

mod common;
use common::*;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `run --dry-run` writes the demo's plan to `-o`: the output path with no store and no server.
fn dry_run_to(dir: &Path, out: &str) -> std::process::Output {
    run(dir, &["run", "--dry-run", "--quick", "-o", out])
}

/// Whether this test may make a private mount namespace (root, with util-linux's `unshare`).
fn can_unshare() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() == 0 };
    root && Command::new("unshare").arg("--version").output().is_ok()
}

/// `script` under `sh` in `dir`, in a private mount namespace: its mounts end with it and
/// never reach the host.
fn in_private_mounts(dir: &Path, script: &str) -> (bool, String, String) {
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", script])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn o_writes_a_regular_file_whole_and_follows_a_link() {
    let d = scratch();
    let file = d.path().join("plan.txt");
    std::fs::write(&file, "old").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = dry_run_to(d.path(), "plan.txt");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.contains("point-query"), "{written}");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640, "the replaced file's mode is kept");

    std::os::unix::fs::symlink("plan.txt", d.path().join("link.txt")).unwrap();
    std::fs::write(&file, "old").unwrap();
    let out = dry_run_to(d.path(), "link.txt");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let link = std::fs::symlink_metadata(d.path().join("link.txt")).unwrap();
    assert!(link.file_type().is_symlink(), "-o LINK replaced the link");
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("point-query")
    );
    let names: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "temporary files left: {names:?}");
}

#[test]
fn o_refuses_a_directory() {
    let d = scratch();
    std::fs::create_dir(d.path().join("reports")).unwrap();
    let out = dry_run_to(d.path(), "reports");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("-o reports: is a directory"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(d.path().join("reports").is_dir());
}

/// `-o /dev/null` as root leaves `/dev/null` a character device, and `-o /dev/full` is one
/// line naming ENOSPC (exit 1). Run in a private mount namespace whose `/dev` is a fresh tmpfs
/// holding its own `null` and `full` nodes: the host's `/dev` is never written, whatever the
/// binary does (an older one renamed its report over the device).
#[test]
fn o_writes_a_device_in_place_in_a_private_namespace() {
    if !can_unshare() {
        eprintln!("needs root and unshare: not checked");
        return;
    }
    let d = scratch();
    let script = format!(
        "set -e; mount -t tmpfs -o size=64k dbdelta-dev /dev; mknod -m 666 /dev/null c 1 3; \
         mknod -m 666 /dev/full c 1 7; '{bin}' run --dry-run --quick -o /dev/null; \
         set +e; '{bin}' run --dry-run --quick -o /dev/full; echo \"exit $?\"; \
         stat -c %F /dev/null /dev/full",
        bin = env!("CARGO_BIN_EXE_dbdelta")
    );
    let (ok, stdout, stderr) = in_private_mounts(d.path(), &script);
    assert!(ok, "{stdout}{stderr}");
    assert_eq!(
        stdout.trim().lines().collect::<Vec<_>>(),
        ["exit 1", "character special file", "character special file"],
        "-o on a device replaced it or did not fail on /dev/full: {stderr}"
    );
    assert!(
        stderr.contains("-o /dev/full") && stderr.contains("ENOSPC"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    // The host's own /dev/null is what it was.
    let host = std::fs::metadata("/dev/null").unwrap();
    assert!(host.file_type().is_char_device());
}

/// `run -o` somewhere no file can be created is refused before the run starts (no store, in
/// seconds), not after the measuring.
#[test]
fn run_checks_its_o_before_the_run_starts() {
    let d = scratch();
    let t0 = Instant::now();
    let out = run(
        d.path(),
        &[
            "--store",
            "s.db",
            "run",
            "--quick",
            "-o",
            "/proc/dbdelta-report.txt",
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("-o /proc/dbdelta-report.txt: cannot be written"),
        "{err}"
    );
    assert!(!d.path().join("s.db").exists(), "the run started: {err}");
    assert!(t0.elapsed() < Duration::from_secs(60), "{err}");
}

#[test]
fn init_refuses_a_missing_directory_and_leaves_nothing_on_a_full_disk() {
    let d = scratch();
    let out = run(d.path(), &["init", "no/such/dir/lab.toml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the directory no/such/dir does not exist"),
        "{err}"
    );

    if !can_unshare() {
        eprintln!("needs root and unshare: the full-disk case is not checked");
        return;
    }
    // A tmpfs of one page, filled: the lab's write meets ENOSPC.
    std::fs::create_dir(d.path().join("full")).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=4k dbdelta-full full || exit 99; \
         head -c 4096 /dev/zero > full/filler; \
         '{bin}' init full/lab.toml; echo \"exit $?\"; ls -A full",
        bin = env!("CARGO_BIN_EXE_dbdelta")
    );
    let (_, stdout, stderr) = in_private_mounts(d.path(), &script);
    assert!(stdout.contains("exit 1"), "{stdout}{stderr}");
    assert!(stderr.contains("ENOSPC"), "{stderr}");
    let left: Vec<&str> = stdout.lines().filter(|l| !l.starts_with("exit")).collect();
    assert_eq!(
        left,
        ["filler"],
        "init left a file on a full disk: {stdout}"
    );
}

/// A reader of a store whose file system is full still reads it (it failed on the WAL's
/// shared-memory file) and leaves no file beside it.
#[test]
fn a_store_on_a_full_file_system_is_still_listed() {
    if !can_unshare() {
        eprintln!("needs root and unshare: not checked");
        return;
    }
    let d = scratch();
    drop(dbdelta::store::Store::open(&d.path().join("s.db")).unwrap());
    std::fs::create_dir(d.path().join("full")).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=1m dbdelta-full full || exit 99; cp s.db full/s.db; \
         head -c 2m /dev/zero > full/filler 2>/dev/null; \
         '{bin}' list runs --store full/s.db; echo \"exit $?\"; ls -A full",
        bin = env!("CARGO_BIN_EXE_dbdelta")
    );
    let (_, stdout, stderr) = in_private_mounts(d.path(), &script);
    assert!(stdout.contains("exit 0"), "{stdout}{stderr}");
    let left: Vec<&str> = stdout.lines().filter(|l| !l.starts_with("exit")).collect();
    assert_eq!(left, ["filler", "s.db"], "{stdout}{stderr}");
}

/// `explain` adds a run to the store: on a store it cannot write it is refused before it
/// starts anything (it made a marked run folder, then failed), as `run` is.
#[test]
fn explain_refuses_a_read_only_store_up_front() {
    if !can_unshare() {
        eprintln!("needs root and unshare: not checked");
        return;
    }
    let d = scratch();
    std::fs::create_dir(d.path().join("ro")).unwrap();
    drop(dbdelta::store::Store::open(&d.path().join("ro/s.db")).unwrap());
    let script = format!(
        "mount --bind ro ro && mount -o remount,bind,ro ro || exit 99; \
         '{bin}' explain latest --target b --store ro/s.db --workdir work; echo \"exit $?\"; \
         ls -A work 2>/dev/null | wc -l",
        bin = env!("CARGO_BIN_EXE_dbdelta")
    );
    let (_, stdout, stderr) = in_private_mounts(d.path(), &script);
    assert!(stdout.contains("exit 2"), "{stdout}{stderr}");
    assert!(
        stderr.contains("the results store is read-only"),
        "{stderr}"
    );
    assert_eq!(
        stdout.lines().last(),
        Some("0"),
        "nothing made in work: {stdout}"
    );
}

#[test]
fn a_bad_percent_escape_in_a_store_url_is_bad_input() {
    let d = scratch();
    let out = run(d.path(), &["--store", "postgres://%zz", "list", "runs"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("'%' not followed by two hex digits"), "{err}");
}

fn two_sqlite_targets(dir: &Path, second_settings: &str) {
    let lab = format!(
        "[lab]\nname = \"ab\"\nrepeats = 2\n\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n\n\
         [[target]]\nname = \"f0\"\nengine = \"sqlite\"\nsettings = [{second_settings}]\n"
    );
    std::fs::write(dir.join("lab.toml"), lab).unwrap();
}

#[test]
fn bisect_step_names_step_and_sigint_promises_no_resume() {
    let d = scratch();
    two_sqlite_targets(d.path(), "");
    let out = run(
        d.path(),
        &[
            "--store",
            "s.db",
            "bisect",
            "lab.toml",
            "--quick",
            "--step",
            "nosuchstep",
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--step nosuchstep") && !err.contains("--only"),
        "{err}"
    );

    // SIGINT once the first probe runs: the message says a bisection is started again.
    let _m = measuring();
    let errfile = d.path().join("bisect.err");
    let mut child = dbdelta(d.path())
        .args([
            "--store",
            "s.db",
            "bisect",
            "lab.toml",
            "--quick",
            "--step",
            "point-query",
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&errfile).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !std::fs::read_to_string(&errfile)
        .unwrap_or_default()
        .contains("bisect: measuring")
    {
        assert!(
            child.try_wait().unwrap().is_none(),
            "bisect ended before a probe"
        );
        assert!(Instant::now() < deadline, "no probe within 120 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling the child this test started, by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let err = std::fs::read_to_string(&errfile).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("not resumable"), "{err}");
    assert!(!err.contains("(resumable)"), "{err}");
}

#[test]
fn a_failed_target_is_named_once() {
    let d = scratch();
    two_sqlite_targets(d.path(), "\"no_such_pragma_x = 1\"");
    let _m = measuring();
    let out = run(
        d.path(),
        &[
            "--store",
            "s.db",
            "run",
            "lab.toml",
            "--quick",
            "--repeats",
            "1",
            "--only",
            "point-query",
        ],
    );
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("no_such_pragma_x"), "{all}");
    assert!(!all.contains("target f0: target f0"), "{all}");
}
