//! Disk preflight: a run whose work directory sits on a filesystem too small for its data is
//! refused before anything is loaded or stored, with the estimate and the free space; a dry
//! run prints the estimate. The small filesystem is a 4 MB tmpfs this test mounts (root).

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
