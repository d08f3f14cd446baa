//! `connect` targets: PostgreSQL servers the test starts itself (Debian's binaries, as an
//! unprivileged user, listening on a unix socket in a scratch directory), measured by dbdelta
//! beside a server dbdelta starts, in one lab. One of them runs in its own PID namespace, so
//! the PID it reports for its backend is not a process on this host: its CPU is n/a and the
//! report says why. Needs root (to run the servers as `nobody` and to create the namespace)
//! and Debian's PostgreSQL; otherwise it says why and passes, except under CI.

mod common;
use common::*;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn pg_bin() -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .unwrap()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("postgres").is_file())
        .collect();
    dirs.sort();
    dirs.pop().unwrap()
}

/// nobody's uid and gid.
fn nobody() -> (u32, u32) {
    // SAFETY: getpwnam with a NUL-terminated name; the record is read before any other call.
    unsafe {
        let pw = libc::getpwnam(c"nobody".as_ptr());
        assert!(!pw.is_null(), "no user nobody");
        ((*pw).pw_uid, (*pw).pw_gid)
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs the tests as root"
        );
        eprintln!("note: not root; skipping (the test runs servers as nobody)");
    }
    root
}

/// A PostgreSQL server of the test's own, in `dir/data`, socket in `dir`; killed (by its
/// launcher's PID) and waited for on drop.
struct OwnServer {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl OwnServer {
    /// initdb and start as `nobody`; in a new PID namespace when `namespaced`.
    fn start(dir: &Path, port: u16, namespaced: bool) -> OwnServer {
        let bin = pg_bin();
        let data = dir.join("data");
        std::fs::create_dir(&data).unwrap();
        let status = Command::new("chown")
            .args(["-R", "nobody"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(status.success());
        let out = Command::new("runuser")
            .args(["-u", "nobody", "--"])
            .arg(bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "--locale=C"])
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb: {}", text(&out.stderr));
        // The child we signal is the server itself (as nobody), or unshare, whose
        // --kill-child ends the namespace and every process in it when unshare exits.
        let (uid, gid) = nobody();
        let mut cmd = if namespaced {
            let mut c = Command::new("unshare");
            // runuser, not --setuid: a credential change would clear --kill-child's
            // parent-death signal.
            c.args(["--pid", "--fork", "--mount-proc", "--kill-child"])
                .args(["runuser", "-u", "nobody", "--"])
                .arg(bin.join("postgres"));
            c
        } else {
            let mut c = Command::new(bin.join("postgres"));
            c.uid(uid).gid(gid);
            c
        };
        cmd.arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(dir)
            .args(["-p", &port.to_string(), "-c", "listen_addresses="])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("server.log")).unwrap());
        let server = OwnServer {
            child: cmd.spawn().unwrap(),
            dir: dir.to_path_buf(),
            port,
        };
        server.wait_ready(&bin);
        server
    }

    fn wait_ready(&self, bin: &Path) {
        let started = Instant::now();
        loop {
            let ok = Command::new(bin.join("pg_isready"))
                .arg("-h")
                .arg(&self.dir)
                .args(["-p", &self.port.to_string(), "-q"])
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "server did not start: {}",
                std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn url(&self) -> String {
        format!(
            "postgres://postgres@:{}/postgres?host={}",
            self.port,
            self.dir.display()
        )
    }
}

/// Signal our own child by its PID and wait for it; SIGKILL after 30 s.
fn stop_child(child: &mut Child, signal: i32) {
    // SAFETY: kill on the PID of our own child, not yet waited for.
    unsafe { libc::kill(child.id() as i32, signal) };
    let started = Instant::now();
    while child.try_wait().ok().flatten().is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        // SIGINT: the server's fast shutdown, or unshare's exit, which ends the namespace.
        stop_child(&mut self.child, libc::SIGINT);
    }
}

fn port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

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
        let status = Command::new("chown")
            .args(["-R", "nobody"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(status.success());
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
