//! Servers dbdelta starts accept only dbdelta: during a PostgreSQL run and a
//! MariaDB run (Debian's packages), a second, unprivileged OS user (`dbdelta-probe`, created
//! here) tries to log in as every likely database user over TCP on the server's loopback port
//! and over its unix socket, and to list the data directory and read the password file; each
//! attempt must fail for the right reason (the server refused the password, or the file system
//! refused the user: never "no server"), and the run must still complete. Needs root (to create
//! the user and run clients as it); skipped with a note otherwise.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::pg::{is_root, pg_bin};
use common::{dbdelta, measuring, postgres_installed, scratch, text};

/// The unprivileged OS user the probes run as.
const PROBE: &str = "dbdelta-probe";
/// Database users the probes try: the superusers, dbdelta's account and the probe's own name,
/// and the empty (anonymous) user.
const USERS: &[&str] = &["postgres", "root", "dbdelta", PROBE, ""];
/// The step the probes run during: long enough for every probe on a loaded 2-core host (they
/// take about a second; a generous margin, not a timing assertion).
const STEP_SECS: u32 = 10;

fn probe_user() {
    let out = Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            PROBE,
        ])
        .output()
        .expect("useradd");
    // 9: the user exists already (an earlier test run).
    assert!(
        out.status.success() || out.status.code() == Some(9),
        "useradd {PROBE}: {}",
        text(&out.stderr)
    );
}

/// `program args` as the probe user, in `/` (the test's own directories are not its).
fn as_probe(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new("runuser")
        .args(["-u", PROBE, "--"])
        .arg(program)
        .args(args)
        .envs(env.iter().copied())
        .current_dir("/")
        .stdin(Stdio::null())
        .output()
        .expect("runuser")
}

/// A run of the binary; interrupted (SIGINT: dbdelta stops its server and cleans up) when a
/// failed assertion leaves it running.
struct Run(Option<Child>);

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            common::faults::signal(child.id(), libc::SIGINT);
            let _ = child.wait();
        }
    }
}

/// The lab: one target of `engine`, one point-query step of [`STEP_SECS`] on a tiny table.
fn start_run(dir: &Path, engine: &str) -> Run {
    std::fs::write(
        dir.join("lab.toml"),
        format!(
            "[lab]\nname = \"security\"\n[[target]]\nname = \"t\"\nengine = \"{engine}\"\n\
             [suite.sysbench]\nrows = 1000\nwarmup_secs = 0.1\nread_secs = {STEP_SECS}\npostwrite_secs = 1\n"
        ),
    )
    .unwrap();
    let child = dbdelta(dir)
        .args(["run", "lab.toml", "-q", "--only", "point-query"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Run(Some(child))
}

/// The command line (NUL-separated arguments) of a process whose command line names `dir` and
/// has an argument `flag` (e.g. `-D`, `--datadir=`).
fn server_args(dir: &Path) -> Option<Vec<String>> {
    let needle = dir.to_string_lossy().into_owned();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let args: Vec<String> = String::from_utf8_lossy(&cmdline)
            .split('\0')
            .map(str::to_string)
            .collect();
        let server = args.first().is_some_and(|a| {
            a.ends_with("/postgres") || a.ends_with("mariadbd") || a.ends_with("mysqld")
        });
        if server && args.iter().any(|a| a.contains(&needle)) {
            return Some(args);
        }
    }
    None
}

/// Wait until a server started under `dir` accepts TCP connections on the port `port_of`
/// finds; its command line and port.
fn wait_for_server(
    dir: &Path,
    run: &mut Run,
    port_of: impl Fn(&[String]) -> Option<u16>,
) -> (Vec<String>, u16) {
    let deadline = Instant::now() + Duration::from_secs(180);
    let child = run.0.as_mut().expect("running");
    loop {
        assert!(
            child.try_wait().unwrap().is_none(),
            "dbdelta ended before its server was seen"
        );
        assert!(Instant::now() < deadline, "no server within 180 s");
        if let Some(args) = server_args(dir)
            && let Some(port) = port_of(&args)
            && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        {
            return (args, port);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// dbdelta completed the run; no password file is left.
fn finish(mut run: Run, data_dir: &Path) {
    let out = run.0.take().expect("running").wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "dbdelta did not complete the run: {}",
        text(&out.stderr)
    );
    let password = PathBuf::from(format!("{}.password", data_dir.display()));
    assert!(!password.exists(), "{} is left", password.display());
}

/// The attempt failed, and its error says `why` (one of several phrasings).
fn refused(out: &Output, what: &str, why: &[&str]) {
    let err = text(&out.stderr);
    assert!(
        !out.status.success(),
        "{what}: succeeded: {}",
        text(&out.stdout)
    );
    assert!(
        why.iter().any(|w| err.contains(w)),
        "{what}: failed for another reason than {why:?}: {err}"
    );
}

/// Listing the data directory and reading the password file beside it are refused.
fn files_refused(data_dir: &Path) {
    let ls = as_probe(Path::new("ls"), &[data_dir.to_str().unwrap()], &[]);
    refused(&ls, "ls of the data directory", &["Permission denied"]);
    let password = format!("{}.password", data_dir.display());
    assert!(
        Path::new(&password).is_file(),
        "{password} while the server runs"
    );
    let cat = as_probe(Path::new("cat"), &[&password], &[]);
    refused(&cat, "reading the password file", &["Permission denied"]);
}

#[test]
fn a_postgres_run_lets_no_other_local_user_in() {
    if !is_root() || !postgres_installed() {
        return;
    }
    let _lock = measuring();
    probe_user();
    let dir = scratch();
    let mut run = start_run(dir.path(), "postgres");
    let port_of = |args: &[String]| {
        let data_dir = args.iter().skip_while(|a| *a != "-D").nth(1)?;
        // postmaster.pid: line 4 is the port; line 8 says `ready` once the server accepts
        // logins (before, a login is refused as "starting up", not for its password).
        let pid = std::fs::read_to_string(Path::new(data_dir).join("postmaster.pid")).ok()?;
        let lines: Vec<&str> = pid.lines().map(str::trim).collect();
        (lines.get(7) == Some(&"ready")).then_some(())?;
        lines.get(3)?.parse().ok()
    };
    let (args, port) = wait_for_server(dir.path(), &mut run, port_of);
    let data_dir = PathBuf::from(args.iter().skip_while(|a| *a != "-D").nth(1).unwrap());
    let psql = pg_bin().join("psql");
    let port = port.to_string();
    for user in USERS {
        for host in ["127.0.0.1", data_dir.to_str().unwrap()] {
            let what = format!("psql -h {host} -U {user:?}");
            let base = ["-h", host, "-p", &port, "-d", "postgres", "-c", "SELECT 1"];
            let mut with_user: Vec<&str> = base.to_vec();
            with_user.extend(["-U", user]);
            let no_password = as_probe(&psql, &[&with_user[..], &["-w"]].concat(), &[]);
            let guessed = as_probe(&psql, &with_user, &[("PGPASSWORD", "postgres")]);
            if host == "127.0.0.1" {
                // The server asks for a password, and refuses a guess.
                refused(&no_password, &what, &["no password supplied"]);
                refused(&guessed, &what, &["password authentication failed"]);
            } else {
                // The socket is in the data directory, which the probe cannot enter.
                refused(&no_password, &what, &["Permission denied"]);
                refused(&guessed, &what, &["Permission denied"]);
            }
        }
    }
    files_refused(&data_dir);
    finish(run, &data_dir);
}

#[test]
fn a_mariadb_run_lets_no_other_local_user_in() {
    if !is_root() {
        return;
    }
    if !Path::new("/usr/sbin/mariadbd").is_file() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install mariadb-server"
        );
        eprintln!("note: skipped: apt-get install mariadb-server");
        return;
    }
    let _lock = measuring();
    probe_user();
    let dir = scratch();
    let mut run = start_run(dir.path(), "mariadb");
    let flag = |args: &[String], name: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(name).map(str::to_string))
    };
    let (args, port) = wait_for_server(dir.path(), &mut run, |args| {
        flag(args, "--port=")?.parse().ok()
    });
    let data_dir = PathBuf::from(flag(&args, "--datadir=").unwrap());
    let socket = flag(&args, "--socket=").unwrap();
    let port = port.to_string();
    let mariadb = Path::new("mariadb");
    for user in USERS {
        let what = format!("mariadb -u {user:?}");
        let tcp = ["-h", "127.0.0.1", "-P", &port, "-u", user, "-e", "SELECT 1"];
        // No account matches 127.0.0.1 but `root@localhost` (socket only, skip-name-resolve):
        // the server refuses the host, or the password.
        let why = ["Access denied", "is not allowed to connect"];
        refused(&as_probe(mariadb, &tcp, &[]), &what, &why);
        let guessed = as_probe(mariadb, &tcp, &[("MYSQL_PWD", "root")]);
        refused(&guessed, &what, &why);
        // The socket is in the data directory, which the probe cannot enter: errno 13.
        let sock = ["-S", &socket, "-u", user, "-e", "SELECT 1"];
        refused(&as_probe(mariadb, &sock, &[]), &what, &["(13"]);
    }
    files_refused(&data_dir);
    finish(run, &data_dir);
}
