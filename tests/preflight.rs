//! Preflight: what a run needs of this host is checked before its first cell. A work directory
//! on a filesystem too small for its data is refused before anything is loaded or stored, with
//! the estimate and the free space; a dry run prints the estimate (the small filesystem is a
//! 4 MB tmpfs this test mounts, as root). `--instructions` without valgrind and `--profile`
//! without perf (a `PATH` without them: nothing is uninstalled) are refused before any timed
//! cell, by `run` and `plan` alike; so is a version that does not exist. `plan` takes the flags
//! of `run` that change the plan.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted for the test, unmounted when dropped (also when the test fails).
struct SmallFs(PathBuf);

impl SmallFs {
    fn mount(at: &Path) -> Option<SmallFs> {
        std::fs::create_dir(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=4m", "dbdelta-test"])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| SmallFs(at.to_path_buf()))
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_work_directory_too_small_for_the_data_is_refused_before_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let Some(small) = SmallFs::mount(&dir.path().join("small")) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs as root and must be able to mount a tmpfs"
        );
        eprintln!("note: cannot mount a tmpfs here (not root?); skipping");
        return;
    };
    let lab = dir.path().join("lab.toml");
    std::fs::write(
        &lab,
        "[lab]\nname = \"too big\"\n\n[[target]]\nname = \"lite\"\nengine = \"sqlite\"\n\n\
         [suite.sysbench]\ntables = 1\nrows = 200_000\nread_secs = 1\n",
    )
    .unwrap();
    let work = small.0.join("work");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "run",
            lab.to_str().unwrap(),
            "--only",
            "point-query",
            "--workdir",
            work.to_str().unwrap(),
            "--store",
            "runs.db",
        ];
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };

    let out = common::dbdelta(dir.path())
        .args(args(&[]))
        .output()
        .unwrap();
    let err = common::text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    // 200k rows × 280 B × 0.9 for SQLite ≈ 50 MB against 4 MB.
    assert!(err.contains("needs about 50 MB"), "{err}");
    assert!(err.contains("MB free") || err.contains("kB free"), "{err}");
    assert!(err.contains("--workdir"), "{err}");
    assert!(!dir.path().join("runs.db").exists(), "nothing written");
    assert!(!work.exists(), "no work directory made");

    let out = common::dbdelta(dir.path())
        .args(args(&["--dry-run"]))
        .output()
        .unwrap();
    let plan = common::text(&out.stdout);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    assert!(
        plan.contains("disk: about 50 MB needed, largest data directory: lite sysbench; "),
        "{plan}"
    );
}

/// Two SQLite targets (they need nothing from `PATH`) and one step.
fn sqlite_lab(dir: &Path, extra: &str) -> PathBuf {
    let lab = dir.join("lab.toml");
    std::fs::write(
        &lab,
        format!(
            "[lab]\nname = \"tools\"\n{extra}\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n\n\
             [[target]]\nname = \"b\"\nengine = \"sqlite\"\n\n[suite.sysbench]\nrows = 1000\n"
        ),
    )
    .unwrap();
    lab
}

#[test]
fn a_missing_valgrind_or_perf_is_refused_before_the_first_cell() {
    let dir = tempfile::tempdir().unwrap();
    // An empty directory as the whole PATH: no valgrind, vgdb or perf to find.
    let bare = dir.path().join("bare-bin");
    std::fs::create_dir(&bare).unwrap();
    let lab = sqlite_lab(dir.path(), "");
    std::fs::create_dir(dir.path().join("counted")).unwrap();
    let counted = sqlite_lab(&dir.path().join("counted"), "instructions = true");
    let lab = lab.to_str().unwrap();
    let counted = counted.to_str().unwrap();
    let base = ["--quick", "--only", "point-query", "--workdir", "w"];
    let cases: [(&[&str], &str, &str); 5] = [
        (
            &["run", lab, "--instructions"],
            "valgrind",
            "apt-get install valgrind",
        ),
        (&["run", counted], "valgrind", "apt-get install valgrind"),
        (
            &["plan", lab, "--instructions"],
            "valgrind",
            "apt-get install valgrind",
        ),
        (
            &["run", lab, "--profile"],
            "perf",
            "apt-get install linux-perf",
        ),
        (
            &["plan", lab, "--profile"],
            "perf",
            "apt-get install linux-perf",
        ),
    ];
    for (args, tool, fix) in cases {
        let out = common::dbdelta(dir.path())
            .env("PATH", &bare)
            .args(args)
            .args(base)
            .args(if args[0] == "run" {
                &["--store", "s.db"][..]
            } else {
                &[]
            })
            .output()
            .unwrap();
        let err = common::text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains(tool) && err.contains(fix), "{args:?}: {err}");
        assert!(!err.contains("qps"), "{args:?}: no cell ran: {err}");
        assert!(
            !dir.path().join("s.db").exists(),
            "{args:?}: nothing stored"
        );
        assert!(
            !dir.path().join("w").exists(),
            "{args:?}: no work directory"
        );
    }
}

#[test]
fn plan_refuses_a_version_that_does_not_exist_as_run_does() {
    let dir = tempfile::tempdir().unwrap();
    // Oracle MySQL's builds are a table in dbdelta: no registry is read for 4.0.
    std::fs::write(
        dir.path().join("lab.toml"),
        "[lab]\nname = \"old\"\n\n[[target]]\nname = \"old\"\nengine = \"mysql\"\nversion = \"4.0\"\n",
    )
    .unwrap();
    for args in [
        &["plan", "lab.toml"][..],
        &["run", "lab.toml", "--dry-run"],
        &["run", "lab.toml", "--store", "s.db", "--workdir", "w"],
    ] {
        let out = common::run(dir.path(), args);
        let err = common::text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("mysql@4.0: no such Oracle MySQL build") && err.contains("list versions"),
            "{args:?}: {err}"
        );
        assert!(
            common::text(&out.stdout).is_empty(),
            "{args:?}: no half a plan"
        );
    }
    assert!(!dir.path().join("s.db").exists(), "nothing stored");
}

#[test]
fn plan_takes_the_flags_of_run_that_change_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let lab = sqlite_lab(dir.path(), "");
    let lab = lab.to_str().unwrap();
    let plan = |flags: &[&str]| {
        let out = common::dbdelta(dir.path())
            .args(["plan", lab, "--quick", "--threads", "2"])
            .args(flags)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{flags:?}: {}",
            common::text(&out.stderr)
        );
        common::text(&out.stdout)
    };
    let plain = plan(&[]);
    assert!(
        plain.contains("order: a@c2r1 → b@c2r1"),
        "--threads is --clients: {plain}"
    );
    let how = [
        "--keep",
        "--workdir",
        "elsewhere",
        "--reuse-load",
        "--snapshots",
        "snaps",
        "--cell",
        "b:2:1",
    ];
    let shaped = plan(&how);
    assert!(shaped.contains("order: b@c2r1\n"), "--cell: {shaped}");
    if common::valgrind_installed() {
        let counted = plan(&["--instructions"]);
        assert!(
            counted.contains("instructions: counted under callgrind after the timed cells"),
            "{counted}"
        );
    }
    if common::perf_records() {
        let profiled = plan(&["--profile"]);
        assert!(
            profiled.contains("profile: perf records every measured step"),
            "{profiled}"
        );
    }
}

#[test]
fn a_bin_without_its_server_is_refused_before_the_first_cell() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    // The SQLite target would run; the PostgreSQL one cannot start, which used to fail it
    // only after the SQLite cells were measured.
    std::fs::write(
        dir.path().join("lab.toml"),
        "[lab]\nname = \"bin\"\n\n[[target]]\nname = \"lite\"\nengine = \"sqlite\"\n\n\
         [[target]]\nname = \"pg\"\nengine = \"postgres\"\nbin = \"empty\"\n\n\
         [suite.sysbench]\nrows = 1000\n",
    )
    .unwrap();
    let run = ["run", "lab.toml", "--quick", "--only", "point-query"];
    for args in [
        &["plan", "lab.toml", "--quick"][..],
        &[&run[..], &["--store", "s.db", "--workdir", "w"]].concat(),
    ] {
        let out = common::run(dir.path(), args);
        let err = common::text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(
            err.contains("target pg: bin directory") && err.contains("holds no PostgreSQL server"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("qps"), "{args:?}: no cell ran: {err}");
    }
    assert!(!dir.path().join("s.db").exists(), "nothing stored");
    assert!(!dir.path().join("w").exists(), "no work directory");
}
