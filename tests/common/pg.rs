//! PostgreSQL servers of a test's own (Debian's binaries, as `nobody`, on a unix socket in a
//! scratch directory) and the process helpers they need: started by the test, stopped by
//! their launcher's PID on drop.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::text;

pub fn pg_bin() -> PathBuf {
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
pub fn nobody() -> (u32, u32) {
    // SAFETY: getpwnam with a NUL-terminated name; the record is read before any other call.
    unsafe {
        let pw = libc::getpwnam(c"nobody".as_ptr());
        assert!(!pw.is_null(), "no user nobody");
        ((*pw).pw_uid, (*pw).pw_gid)
    }
}

pub fn is_root() -> bool {
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

/// Give `dir` and everything in it to `nobody`, the user test servers run as.
pub fn chown_nobody(dir: &Path) {
    let status = Command::new("chown")
        .args(["-R", "nobody"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

/// A PostgreSQL server of the test's own, in `dir/data`, socket in `dir`; killed (by its
/// launcher's PID) and waited for on drop.
pub struct OwnServer {
    child: Child,
    pub dir: PathBuf,
    pub port: u16,
}

impl OwnServer {
    /// initdb and start as `nobody`; in a new PID namespace when `namespaced`.
    pub fn start(dir: &Path, port: u16, namespaced: bool) -> OwnServer {
        let bin = pg_bin();
        let data = dir.join("data");
        std::fs::create_dir(&data).unwrap();
        chown_nobody(dir);
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

    pub fn wait_ready(&self, bin: &Path) {
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

    pub fn url(&self) -> String {
        format!(
            "postgres://postgres@:{}/postgres?host={}",
            self.port,
            self.dir.display()
        )
    }
}

/// Signal our own child by its PID and wait for it; SIGKILL after 30 s.
pub fn stop_child(child: &mut Child, signal: i32) {
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

pub fn port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
