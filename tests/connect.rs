//! `connect` targets: PostgreSQL servers the test starts itself (Debian's binaries, as an
//! unprivileged user, listening on a unix socket in a scratch directory), measured by dbdelta
//! beside a server dbdelta starts, in one lab. One of them runs in its own PID namespace, so
//! the PID it reports for its backend is not a process on this host: its CPU is n/a and the
//! report says why. Needs root (to run the servers as `nobody` and to create the namespace)
//! and Debian's PostgreSQL; otherwise it says why and passes, except under CI.

mod common;
use common::pg::*;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A lab of a `managed` target of `engine` (dbdelta starts it) and an `existing` one at `url`.
fn lab(dir: &Path, engine: &str, url: &str) -> PathBuf {
    let path = dir.join("lab.toml");
    std::fs::write(
        &path,
        format!(
            "[lab]\nname = \"connect test\"\n\n\
             [[target]]\nname = \"managed\"\nengine = \"{engine}\"\n\n\
             [[target]]\nname = \"existing\"\nengine = \"{engine}\"\nconnect = \"{url}\"\n"
        ),
    )
    .unwrap();
    path
}

/// Run the lab's point-query at `--quick` scale and return the JSON report.
fn run_lab(dir: &Path, engine: &str, url: &str) -> Value {
    let lab = lab(dir, engine, url);
    let out = {
        let _lock = measuring();
        run(
            dir,
            &[
                "run",
                lab.to_str().unwrap(),
                "--quick",
                "--only",
                "point-query",
            ],
        )
    };
    assert!(out.status.success(), "run failed: {}", text(&out.stderr));
    let out = run(dir, &["report", "--format", "json"]);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn measurement<'a>(json: &'a Value, target: &str) -> &'a Value {
    json["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["target"] == target && m["step"] == "point-query")
        .unwrap_or_else(|| panic!("no point-query of {target}"))
}

#[test]
fn a_running_server_is_measured_beside_a_managed_one() {
    if !postgres_installed() || !is_root() {
        return;
    }
    let dir = scratch();
    let server_dir = dir.path().join("own");
    std::fs::create_dir(&server_dir).unwrap();
    let server = OwnServer::start(&server_dir, port(), false);
    let json = run_lab(dir.path(), "postgres", &server.url());
    for target in ["managed", "existing"] {
        let m = measurement(&json, target);
        assert!(m["qps"].as_f64().unwrap() > 0.0, "{target}: {m}");
        assert!(
            m["server_cpu_us_per_op"].as_f64().is_some_and(|c| c > 0.0),
            "{target}: server CPU/op measured: {m}"
        );
    }
    let t = &json["targets"][1];
    assert_eq!(t["connect"], server.url());
    assert!(t["unobserved"].is_null(), "{t}");
    // dbdelta dropped its tables: the server holds none of them.
    let out = Command::new(pg_bin().join("psql"))
        .arg("-h")
        .arg(&server_dir)
        .args(["-p", &server.port.to_string(), "-U", "postgres", "-Atc"])
        .arg("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'sbtest%'")
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout).trim(), "0", "{}", text(&out.stderr));
}

#[test]
fn a_server_whose_processes_are_not_here_gets_na_and_the_reason() {
    if !postgres_installed() || !is_root() {
        return;
    }
    let dir = scratch();
    let server_dir = dir.path().join("ns");
    std::fs::create_dir(&server_dir).unwrap();
    let server = OwnServer::start(&server_dir, port(), true);
    let json = run_lab(dir.path(), "postgres", &server.url());
    let m = measurement(&json, "existing");
    assert!(m["qps"].as_f64().unwrap() > 0.0, "{m}");
    assert!(m["server_cpu_us_per_op"].is_null(), "{m}");
    assert!(
        measurement(&json, "managed")["server_cpu_us_per_op"].is_number(),
        "the managed target is measured"
    );
    let why = json["targets"][1]["unobserved"].as_str().expect("a reason");
    assert!(why.contains("PID"), "{why}");
    let out = run(dir.path(), &["report"]);
    let report = text(&out.stdout);
    assert!(
        report.contains("existing: server CPU, context switches, process IO and memory are n/a"),
        "{report}"
    );
}

/// Debian's MariaDB server of the test's own, as `nobody`, on a unix socket in `dir`, with a
/// `dbdelta` database; stopped (SIGTERM to its launcher's PID) on drop.
struct OwnMariadb {
    child: Child,
    socket: PathBuf,
}

impl OwnMariadb {
    fn start(dir: &Path) -> OwnMariadb {
        let data = dir.join("data");
        let out = Command::new("mariadb-install-db")
            .args([
                "--no-defaults",
                "--user=nobody",
                "--auth-root-authentication-method=normal",
            ])
            .arg(format!("--datadir={}", data.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "install-db: {}", text(&out.stderr));
        let socket = dir.join("my.sock");
        chown_nobody(dir);
        // Started as root, mariadbd switches to --user itself: our child is the server.
        let child = Command::new("/usr/sbin/mariadbd")
            .args(["--no-defaults", "--user=nobody"])
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", dir.join("server.pid").display()))
            .args(["--skip-networking", "--innodb-buffer-pool-size=64M"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("server.log")).unwrap())
            .spawn()
            .unwrap();
        let server = OwnMariadb { child, socket };
        let started = Instant::now();
        while !server.sql("CREATE DATABASE IF NOT EXISTS dbdelta") {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "mariadbd did not start: {}",
                std::fs::read_to_string(dir.join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        server
    }

    fn sql(&self, sql: &str) -> bool {
        Command::new("mariadb")
            .arg(format!("--socket={}", self.socket.display()))
            .args(["-u", "root", "-e", sql])
            .output()
            .is_ok_and(|o| o.status.success())
    }
}

impl Drop for OwnMariadb {
    fn drop(&mut self) {
        stop_child(&mut self.child, libc::SIGTERM);
    }
}

#[test]
fn a_running_mariadb_server_is_measured_beside_a_managed_one() {
    if !is_root() || !std::path::Path::new("/usr/sbin/mariadbd").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI installs mariadb-server"
        );
        return;
    }
    let dir = scratch();
    let server_dir = dir.path().join("maria");
    std::fs::create_dir(&server_dir).unwrap();
    let server = OwnMariadb::start(&server_dir);
    let url = format!("mysql://root@/dbdelta?socket={}", server.socket.display());
    let json = run_lab(dir.path(), "mariadb", &url);
    for target in ["managed", "existing"] {
        let m = measurement(&json, target);
        assert!(m["qps"].as_f64().unwrap() > 0.0, "{target}: {m}");
        assert!(
            m["server_cpu_us_per_op"].as_f64().is_some_and(|c| c > 0.0),
            "{target}: server CPU/op measured: {m}"
        );
    }
    assert!(
        json["targets"][1]["unobserved"].is_null(),
        "{}",
        json["targets"][1]
    );
    assert!(
        !server.sql("SELECT 1 FROM dbdelta.sbtest1"),
        "dbdelta dropped its table after the cell"
    );
}
