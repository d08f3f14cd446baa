//! Running a database server as a child process: the parts every server engine shares.
//!
//! Owns: the unprivileged user servers run as when dbdelta is root, picking a free loopback
//! port, spawning with the target's environment and a log file, waiting until the server
//! accepts connections (or showing the end of its log when it died), and stopping it by its PID
//! (a polite signal, then SIGKILL after a timeout). Servers and helper tools run in
//! process groups of their own (a terminal's Ctrl-C reaches only dbdelta); one that is dropped
//! while running is killed with its group, and [`kill_started`] kills every one still running
//! (dbdelta's way out at once), so none outlives dbdelta's own cleanup. Whether a server is stopped
//! (`is_stopped`) and killing its whole process group (`kill_group`) serve the runner's
//! watchdog. A server with a placement starts pinned: its CPU mask is set between fork and
//! exec, so every process and thread it ever creates inherits it. Helper tools (`run_tool`: initdb, install-db) are not pinned:
//! they are not measured, and the server is a new process started afterwards.
//! Must not: know any engine's SQL or files (the engines do), or measure cost (the sampler does).

use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::cpus::CpuSet;
use crate::sys::log_tail;

/// `server --version` runs with `env` and succeeds: the preflight's check that a server
/// program found for a target can start here. `Err` says what failed, with its last line.
pub fn answers_version(
    server: &Path,
    env: &std::collections::BTreeMap<String, String>,
) -> Result<()> {
    let out = Command::new(server)
        .arg("--version")
        .envs(env)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", server.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        bail!(
            "{} --version failed: {}",
            server.display(),
            err.lines().last().unwrap_or("no message").trim()
        );
    }
    Ok(())
}

/// Run `cmd` (its input closed, in `/`) and the setting names `parse` reads in its output;
/// finding none is an error naming the command, its exit status and its last line of errors.
pub fn names_listed(
    mut cmd: Command,
    parse: fn(&str) -> std::collections::BTreeSet<String>,
) -> Result<std::collections::BTreeSet<String>> {
    cmd.current_dir("/").stdin(Stdio::null());
    let args: Vec<String> = (cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let shown = format!(
        "{} {}",
        Path::new(cmd.get_program()).display(),
        args.join(" ")
    );
    let out = cmd.output().with_context(|| format!("running {shown}"))?;
    let names = parse(&String::from_utf8_lossy(&out.stdout));
    if names.is_empty() {
        let err = String::from_utf8_lossy(&out.stderr);
        bail!(
            "{shown} listed no settings ({}): {}",
            out.status,
            err.lines().last().unwrap_or("no message")
        );
    }
    Ok(names)
}

/// Name of the account servers run as when dbdelta runs as root.
pub const SERVER_USER: &str = "dbdelta";

/// The account a server process runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

fn lookup_user(name: &str) -> Option<ServerUser> {
    let cname = std::ffi::CString::new(name).ok()?;
    // SAFETY: getpwnam returns a pointer into static storage or null; we copy out at once.
    unsafe {
        let pw = libc::getpwnam(cname.as_ptr());
        if pw.is_null() {
            return None;
        }
        Some(ServerUser {
            name: name.to_string(),
            uid: (*pw).pw_uid,
            gid: (*pw).pw_gid,
        })
    }
}

/// The user servers must run as: `None` when dbdelta is not root (servers run as us),
/// else the `dbdelta` system account, created when missing. Database servers refuse to run as
/// root, and we never start one as root.
pub fn server_user() -> Result<Option<ServerUser>> {
    if !rustix::process::geteuid().is_root() {
        return Ok(None);
    }
    if let Some(u) = lookup_user(SERVER_USER) {
        return Ok(Some(u));
    }
    let status = Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            SERVER_USER,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .context("running useradd to create the unprivileged server account")?;
    if !status.status.success() && lookup_user(SERVER_USER).is_none() {
        bail!(
            "cannot create the unprivileged user `{SERVER_USER}` servers run as: {}; create it yourself (useradd --system {SERVER_USER})",
            String::from_utf8_lossy(&status.stderr).trim()
        );
    }
    lookup_user(SERVER_USER)
        .map(Some)
        .context("the server account vanished after useradd")
}

/// Give `path` (recursively) to `user`.
pub fn chown_tree(path: &Path, user: &ServerUser) -> Result<()> {
    let status = Command::new("chown")
        .arg("-R")
        .arg(format!("{}:{}", user.uid, user.gid))
        .arg(path)
        .status()
        .context("running chown")?;
    if !status.success() {
        bail!("chown -R {} {} failed", user.name, path.display());
    }
    Ok(())
}

/// Fail clearly when `user` cannot reach `dir` because a parent directory is not searchable
/// for it (a 0700 home or temporary directory is the usual cause).
pub fn check_reachable(dir: &Path, user: &ServerUser) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    for a in abs.ancestors().skip(1) {
        let Ok(m) = std::fs::metadata(a) else {
            continue;
        };
        let mode = m.mode();
        let ok = if m.uid() == user.uid {
            mode & 0o100 != 0
        } else if m.gid() == user.gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !ok {
            bail!(
                "the server runs as `{}`, which cannot reach {}: {} has mode {:o}; use a --workdir below a directory others may enter, or chmod o+x {}",
                user.name,
                dir.display(),
                a.display(),
                mode & 0o7777,
                a.display()
            );
        }
    }
    Ok(())
}

/// A loopback TCP port that was free a moment ago.
pub fn free_port() -> Result<u16> {
    let l = TcpListener::bind(("127.0.0.1", 0)).context("finding a free loopback port")?;
    Ok(l.local_addr()?.port())
}

/// Fail with a clear message when `port` is taken on loopback.
pub fn check_port_free(port: u16) -> Result<()> {
    match TcpListener::bind(("127.0.0.1", port)) {
        Ok(_) => Ok(()),
        Err(e) => bail!(
            "port {port} on 127.0.0.1 is in use ({e}); stop what listens there or choose another port"
        ),
    }
}

/// Run a helper program (initdb, install-db) as the server user, its output into `log`, in a
/// process group of its own (a terminal's Ctrl-C reaches only dbdelta). A signal for dbdelta
/// ([`crate::signals`]) stops it (SIGKILL to its group) and fails with "interrupted"; on
/// failure the error carries the last lines of the log.
pub fn run_tool(cmd: Command, user: Option<&ServerUser>, log: &Path, what: &str) -> Result<()> {
    run_tool_with_input(cmd, Stdio::null(), user, log, what)
}

/// [`run_tool`] with `input` as the tool's standard input.
pub fn run_tool_with_input(
    mut cmd: Command,
    input: Stdio,
    user: Option<&ServerUser>,
    log: &Path,
    what: &str,
) -> Result<()> {
    let out = File::options().create(true).append(true).open(log)?;
    cmd.stdin(input).stdout(out.try_clone()?).stderr(out);
    if let Some(u) = user {
        cmd.uid(u.uid).gid(u.gid);
    }
    cmd.process_group(0);
    let child = cmd
        .spawn()
        .with_context(|| format!("{what}: cannot start {:?}", cmd.get_program()))?;
    let mut tool = Started::new(child);
    let status = loop {
        if let Some(status) = tool.exited()? {
            break status;
        }
        if crate::signals::interrupted() {
            drop(tool);
            bail!("{what} interrupted: dbdelta was signalled");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if !status.success() {
        bail!(
            "{what} failed ({status}); last lines of {}:\n{}",
            log.display(),
            log_tail(log, 20)
        );
    }
    Ok(())
}

/// The process groups of the servers and tools started and not yet reaped: what
/// [`kill_started`] kills.
static STARTED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn started() -> MutexGuard<'static, Vec<u32>> {
    STARTED.lock().unwrap_or_else(|e| e.into_inner())
}

/// SIGKILL the process group of every server and tool dbdelta started that still runs: the
/// way out when dbdelta must end at once (a second terminating signal) and leave none behind.
pub fn kill_started() {
    for &pid in started().iter() {
        // `pid` leads its own process group (spawned with `process_group(0)`) and is not reaped
        // while listed (reaping happens under the same lock), so the group is still ours.
        kill_group(pid);
    }
}

/// A child in its own process group, listed in [`STARTED`] until it is reaped; dropped while
/// running, its group is killed.
struct Started(Option<Child>);

impl Started {
    fn new(child: Child) -> Started {
        started().push(child.id());
        Started(Some(child))
    }

    /// Its exit status once it exited (reaped, and no longer listed).
    fn exited(&mut self) -> Result<Option<std::process::ExitStatus>> {
        let Some(child) = self.0.as_mut() else {
            return Ok(None);
        };
        let mut list = started();
        let status = child.try_wait().context("waiting for a child process")?;
        if status.is_some() {
            let pid = child.id();
            list.retain(|&p| p != pid);
            self.0 = None;
        }
        Ok(status)
    }

    /// SIGKILL it (its group, when `group`), then reap it.
    fn kill(&mut self, group: bool) {
        let Some(mut child) = self.0.take() else {
            return;
        };
        {
            let mut list = started();
            let pid = child.id();
            if group && list.contains(&pid) {
                // As in `kill_started`: an unreaped child leading its own group.
                kill_group(pid);
            }
            let _ = child.kill();
            list.retain(|&p| p != pid);
        }
        let _ = child.wait();
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        self.kill(true);
    }
}

/// A child in a process group of its own that [`kill_started`] kills too (a second signal
/// ends dbdelta at once): for a long tool whose caller waits on it and stops it itself (a
/// build's compile, a PGO training run). Dropped while running, its group is killed.
pub struct Listed(Started);

impl Listed {
    /// Spawn `cmd` as the leader of a new process group, listed.
    pub fn spawn(cmd: &mut Command) -> std::io::Result<Listed> {
        cmd.process_group(0);
        Ok(Listed(Started::new(cmd.spawn()?)))
    }

    /// Its exit status once it exited.
    pub fn exited(&mut self) -> Result<Option<std::process::ExitStatus>> {
        self.0.exited()
    }

    /// Send `signal` to its group and wait up to `grace` for it to exit; then SIGKILL.
    pub fn stop(mut self, signal: rustix::process::Signal, grace: Duration) {
        if let Some(child) = self.0.0.as_ref() {
            let leader = i32::try_from(child.id()).ok();
            if let Some(group) = leader.and_then(rustix::process::Pid::from_raw) {
                // Unreaped and listed: the group is still ours.
                let _ = rustix::process::kill_process_group(group, signal);
            }
        }
        let deadline = std::time::Instant::now() + grace;
        while std::time::Instant::now() < deadline {
            if !matches!(self.exited(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Dropped: SIGKILL to the group.
    }
}

/// Whether process `pid` is stopped (state `T`: SIGSTOP, or a terminal stop).
pub fn is_stopped(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses and may hold spaces.
    stat.rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        == Some("T")
}

/// SIGKILL every process of the process group a server dbdelta started leads (its PID is
/// the group's: servers are spawned with `process_group(0)`), a stopped one too.
/// A `pid` that names no process group (0, or beyond `i32`) sends nothing.
pub fn kill_group(pid: u32) {
    use rustix::process::{Pid, Signal, kill_process_group};
    if let Some(group) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        // An error (the group is gone already) leaves nothing to do.
        let _ = kill_process_group(group, Signal::KILL);
    }
}

/// `cmd` run under `wrap` (program and arguments first): the same arguments, environment
/// and working directory; `cmd` itself when `wrap` is empty.
fn wrapped(cmd: Command, wrap: &[String]) -> Command {
    let Some((program, args)) = wrap.split_first() else {
        return cmd;
    };
    let mut out = Command::new(program);
    out.args(args).arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => out.env(k, v),
            None => out.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        out.current_dir(dir);
    }
    out
}

/// A running server.
pub struct ServerProcess {
    child: Started,
    pid: u32,
    log: PathBuf,
    what: String,
    /// Runs under a wrapper: start-up and shut-down may take
    /// [`crate::engine::WRAPPED_START_FACTOR`] times longer.
    wrapped: bool,
}

impl ServerProcess {
    /// Start `cmd` as `user`, stdout and stderr appended to `log`, pinned to `cpus` when given,
    /// under the command `wrap` when it is not empty ([`crate::engine::TargetSpec::wrap`]).
    pub fn spawn(
        cmd: Command,
        wrap: &[String],
        user: Option<&ServerUser>,
        cpus: Option<&CpuSet>,
        log: &Path,
        what: &str,
    ) -> Result<ServerProcess> {
        let mut cmd = wrapped(cmd, wrap);
        if let Some(cpus) = cpus {
            crate::cpus::pin_command(&mut cmd, cpus);
        }
        let out = File::options().create(true).append(true).open(log)?;
        cmd.stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        if let Some(u) = user {
            cmd.uid(u.uid).gid(u.gid);
        }
        // Own process group: a Ctrl-C on the terminal reaches dbdelta, which stops the server
        // itself in order, instead of the terminal killing the server mid-step.
        cmd.process_group(0);
        let child = cmd.spawn().with_context(|| match cpus {
            Some(c) => format!(
                "{what}: cannot start {:?} pinned to CPUs {c}",
                cmd.get_program()
            ),
            None => format!("{what}: cannot start {:?}", cmd.get_program()),
        })?;
        Ok(ServerProcess {
            pid: child.id(),
            child: Started::new(child),
            log: log.to_path_buf(),
            what: what.into(),
            wrapped: !wrap.is_empty(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// `usual`, or [`crate::engine::WRAPPED_START_FACTOR`] times it under a wrapper.
    fn allowed(&self, usual: Duration) -> Duration {
        match self.wrapped {
            true => usual * crate::engine::WRAPPED_START_FACTOR,
            false => usual,
        }
    }

    /// True while the process has not exited.
    pub fn alive(&mut self) -> bool {
        self.child.0.is_some() && matches!(self.child.exited(), Ok(None))
    }

    /// Poll `ready` until it returns true; fail when the process exits or `timeout` passes.
    pub fn wait_ready(&mut self, timeout: Duration, mut ready: impl FnMut() -> bool) -> Result<()> {
        let timeout = self.allowed(timeout);
        let deadline = Instant::now() + timeout;
        loop {
            if ready() {
                return Ok(());
            }
            if !self.alive() {
                bail!(
                    "{} exited during start-up; last lines of its log {}:\n{}",
                    self.what,
                    self.log.display(),
                    log_tail(&self.log, 20)
                );
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} did not accept connections within {} s; last lines of its log {}:\n{}",
                    self.what,
                    timeout.as_secs(),
                    self.log.display(),
                    log_tail(&self.log, 20)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Send `signal`, wait up to `timeout`, then SIGKILL. Only our own child's PID is signalled.
    pub fn stop(&mut self, signal: i32, timeout: Duration) -> Result<()> {
        let timeout = self.allowed(timeout);
        if !self.alive() {
            return Ok(());
        }
        // SAFETY: kill(2) reads and writes no memory of ours. `self.pid` is our child, not reaped
        // yet (`alive` just said so; only this thread reaps it), so the PID names no other process.
        unsafe { libc::kill(self.pid as i32, signal) };
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if !self.alive() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child.kill(false);
        bail!(
            "{} did not stop within {} s and was killed; see {}",
            self.what,
            timeout.as_secs(),
            self.log.display()
        )
    }
}
