//! Helpers shared by the integration tests: run the real `dbdelta` binary, and keep runs that
//! measure from sharing the CPUs.
#![allow(dead_code)] // each test binary uses a subset

pub mod pg;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};

pub mod chromium;
pub mod faults;
pub mod netns;
pub mod serve;
pub mod source;

static MEASURING: Mutex<()> = Mutex::new(());

/// Held by every test that measures, so two measurements never run at once in a test binary.
pub fn measuring() -> MutexGuard<'static, ()> {
    MEASURING.lock().unwrap_or_else(|e| e.into_inner())
}

/// The binary under test, in `dir`, without colour or standard input.
pub fn dbdelta(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dbdelta"));
    cmd.current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    cmd
}

/// Run the binary to completion.
pub fn run(dir: &Path, args: &[&str]) -> Output {
    dbdelta(dir).args(args).output().expect("start dbdelta")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A temporary directory the unprivileged server user may enter (temp dirs are 0700).
pub fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Schema violations of a JSON report (`schema/report-v4.schema.json`), one string each.
pub fn schema_errors(report: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/schema/report-v4.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    jsonschema::validator_for(&schema)
        .unwrap()
        .iter_errors(report)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// Where CI artifacts go: `$CARGO_TARGET_DIR`, else the target directory holding the binary.
pub fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_dbdelta"));
    exe.parent()
        .and_then(Path::parent)
        .expect("the binary sits in <target>/<profile>/")
        .to_path_buf()
}

/// Whether Debian's PostgreSQL is installed; under CI (`CI` set) it must be.
pub fn postgres_installed() -> bool {
    let found = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.flatten().any(|e| e.path().join("bin/postgres").is_file()))
        .unwrap_or(false);
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install postgresql-15"
        );
        eprintln!("note: PostgreSQL is not installed; skipping (apt-get install postgresql-15)");
    }
    found
}

/// Whether Debian's MariaDB is installed (`mariadbd` and `mariadb-install-db`); otherwise a
/// note naming `test`, or under CI (`CI` set) a failure.
pub fn mariadb_installed(test: &str) -> bool {
    let found = ["/usr/sbin/mariadbd", "/usr/bin/mariadb-install-db"]
        .iter()
        .all(|p| Path::new(p).is_file());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: CI must install mariadb-server (.ci/run does)"
        );
        eprintln!(
            "note: {test}: MariaDB is not installed; skipping (apt-get install mariadb-server)"
        );
    }
    found
}

/// Whether `perf record` works here (Debian's `linux-perf`, root or a permissive
/// `perf_event_paranoid`); under CI (`CI` set) it must.
pub fn perf_records() -> bool {
    let ok = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-o",
            "/dev/null",
            "--",
            "true",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have a working perf (.ci/run installs linux-perf)"
        );
        eprintln!("note: perf cannot record here; skipping (apt-get install linux-perf)");
    }
    ok
}

/// Whether Debian's `sqlite3` shell is installed; under CI (`CI` set) it must be.
pub fn sqlite3_installed() -> bool {
    let found = Command::new("sqlite3")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install sqlite3 (.ci/run)"
        );
        eprintln!("note: the sqlite3 shell is not installed; skipping (apt-get install sqlite3)");
    }
    found
}

/// Every row of `sql` (no parameters) from the store at `db`, each as a tuple of its columns
/// (rusqlite converts a row into a tuple of `FromSql` values).
pub fn rows<T>(db: &rusqlite::Connection, sql: &str) -> Vec<T>
where
    T: for<'r> TryFrom<&'r rusqlite::Row<'r>, Error = rusqlite::Error>,
{
    let mut stmt = db.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    stmt.query_map([], |r| T::try_from(r))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The fetch cache every test shares: `<target>/tmp/fetch-cache`, kept between test
/// runs (so a checkout downloads each build once), when the unprivileged server user can reach
/// it; else a scratch directory for this run.
pub fn fetch_cache() -> &'static Path {
    static CACHE: OnceLock<(PathBuf, Option<tempfile::TempDir>)> = OnceLock::new();
    let (path, _) = CACHE.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fetch-cache");
        let reachable = std::fs::create_dir_all(&dir).is_ok()
            && dir.ancestors().all(|a| {
                std::fs::metadata(a).is_ok_and(|m| m.permissions().mode() & 0o005 == 0o005)
            });
        if reachable {
            (dir, None)
        } else {
            let t = scratch();
            (t.path().to_path_buf(), Some(t))
        }
    });
    path
}

/// `dbdelta list versions PRODUCT` with the shared fetch cache: what it prints.
pub fn list_versions(dir: &Path, product: &str) -> String {
    let out = dbdelta(dir)
        .env("DBDELTA_CACHE", fetch_cache())
        .args(["list", "versions", product])
        .output()
        .unwrap();
    text(&out.stdout)
}

/// Whether valgrind runs here (instruction counting); without it a test says why and passes,
/// except under CI (`CI` set), where that is a failure.
pub fn valgrind_installed() -> bool {
    let ok = std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install valgrind (.ci/run does)"
        );
        eprintln!("note: valgrind is not installed; skipping (apt-get install valgrind)");
    }
    ok
}
