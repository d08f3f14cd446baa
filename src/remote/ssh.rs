//! OpenSSH, driven as the system `ssh` for a target's `host = "ssh://user@host[:port]"`
//! (an [`SshHost`], parsed with the target in `engine::remote`): one control master per remote
//! target, and commands run through it.
//!
//! Owns the ssh command line of a host, starting the master (`ssh -M -N`, batch mode: keys and
//! `known_hosts` as the user's ssh config, or the lab's `ssh_config` file, say; never a
//! password), waiting until it is connected (or saying why not, from ssh's own message),
//! building `Command`s that run over it, and ending it (a master that is dropped is killed,
//! which closes every session on the remote side). Must not: know what runs remotely (the
//! remote server and the agent do) or time anything.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

pub use crate::engine::remote::SshHost;

/// The destination and options every `ssh` invocation for `host` takes.
fn args(host: &SshHost, config: Option<&Path>) -> Vec<String> {
    let mut a = Vec::new();
    if let Some(c) = config {
        a.push("-F".into());
        a.push(c.display().to_string());
    }
    if let Some(p) = host.port {
        a.push("-p".into());
        a.push(p.to_string());
    }
    if let Some(u) = &host.user {
        a.push("-l".into());
        a.push(u.clone());
    }
    a
}

/// How long the master may take to log in.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `ssh -M` control master: every command for the host goes over its one
/// connection. Dropping it kills it.
pub struct Master {
    host: SshHost,
    config: Option<PathBuf>,
    /// Holds the control socket (short: `sun_path` is 108 bytes).
    dir: PathBuf,
    child: Child,
    log: PathBuf,
}

impl Master {
    /// Log in to `host` and keep the connection open. ssh's messages go to `log`.
    pub fn connect(host: &SshHost, config: Option<&Path>, log: &Path) -> Result<Master> {
        let dir = control_dir()?;
        let stderr = std::fs::File::create(log)
            .with_context(|| format!("creating the ssh log {}", log.display()))?;
        let mut cmd = Command::new("ssh");
        cmd.args(args(host, config))
            .args(["-M", "-N", "-S"])
            .arg(dir.join("c"))
            .args(["-o", "ControlPersist=no", "-o", "BatchMode=yes"])
            // A dead link is noticed within about 6 s, not at the kernel's TCP timeout.
            .args(["-o", "ServerAliveInterval=2", "-o", "ServerAliveCountMax=3"])
            .args(["-o", "ConnectTimeout=20"])
            .arg(&host.host)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        detach(&mut cmd);
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e).context("running ssh (install openssh-client)");
            }
        };
        let mut master = Master {
            host: host.clone(),
            config: config.map(Path::to_path_buf),
            dir,
            child,
            log: log.to_path_buf(),
        };
        master.wait_connected()?;
        Ok(master)
    }

    fn wait_connected(&mut self) -> Result<()> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "ssh to {} failed ({status}): {}",
                    self.host,
                    crate::sys::log_tail(&self.log, 3).replace('\n', " / ")
                );
            }
            let check = self
                .command_with(&["-O", "check"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()?;
            if check.success() {
                return Ok(());
            }
            if start.elapsed() > CONNECT_TIMEOUT {
                bail!(
                    "ssh to {} did not connect within {} s",
                    self.host,
                    CONNECT_TIMEOUT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `ssh` over the master with extra options before the destination.
    fn command_with(&self, opts: &[&str]) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.args(args(&self.host, self.config.as_deref()))
            .arg("-S")
            .arg(self.dir.join("c"))
            .args(["-o", "ControlMaster=no", "-o", "BatchMode=yes"])
            .args(opts)
            .arg(&self.host.host);
        cmd
    }

    /// A command that runs `remote` (a shell command line) on the host over the master.
    pub fn command(&self, remote: &str) -> Command {
        let mut cmd = self.command_with(&["-T"]);
        cmd.arg("--").arg(remote);
        detach(&mut cmd);
        cmd
    }

    /// Run `remote` and return its standard output; an error carries its standard error.
    pub fn output(&self, remote: &str) -> Result<String> {
        let out = self
            .command(remote)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running ssh to {}", self.host))?;
        if !out.status.success() {
            bail!(
                "`{remote}` on {} failed ({}): {}",
                self.host,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The PID of the local `ssh -M` process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn host(&self) -> &SshHost {
        &self.host
    }

    /// True while the master process runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            // SAFETY: kill(2) reads and writes no memory of ours. The child is not reaped yet
            // (try_wait just found it running), so its PID cannot name another process.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
            let start = Instant::now();
            while matches!(self.child.try_wait(), Ok(None)) {
                if start.elapsed() > Duration::from_secs(5) {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Run `cmd` in its own process group, so a Ctrl-C at the terminal reaches dbdelta (which
/// ends the run and then the session) but not ssh, and have the kernel end it when dbdelta
/// dies (the remote side then sees the connection close and cleans up).
fn detach(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // calls are allowed: setpgid and prctl are plain system calls on the child itself, and it
    // allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(|| {
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
}

/// A fresh private directory for a control socket, under /tmp so its path stays short.
fn control_dir() -> Result<PathBuf> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = PathBuf::from(format!("/tmp/dbdelta-ssh.{}.{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_becomes_ssh_dash_l() {
        assert_eq!(
            args(&SshHost::parse("ssh://a@h").unwrap(), None),
            vec!["-l", "a"]
        );
    }
}
