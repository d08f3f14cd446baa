//! OpenSSH, driven as the system `ssh`: a target's `host = "ssh://user@host[:port]"`, one
//! control master per remote target, and commands run through it.
//!
//! Owns parsing the `ssh://` address, starting the master (`ssh -M -N`, batch mode: keys and
//! `known_hosts` as the user's ssh config, or the lab's `ssh_config` file, say; never a
//! password), waiting until it is connected (or saying why not, from ssh's own message),
//! building `Command`s that run over it, and ending it (a master that is dropped is killed,
//! which closes every session on the remote side). Must not: know what runs remotely (the
//! remote engine and the agent do) or time anything.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// `ssh://[user@]host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshHost {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
}

impl SshHost {
    /// Parse `ssh://[user@]host[:port]`; an IPv6 address goes in brackets.
    pub fn parse(text: &str) -> Result<SshHost, String> {
        let bad = |why: &str| {
            format!(
                "host = \"{text}\": {why}; expected e.g. \"ssh://bench@db1.example\" or \"ssh://root@10.0.0.2:2222\""
            )
        };
        let rest = text
            .strip_prefix("ssh://")
            .ok_or_else(|| bad("only ssh:// hosts are supported"))?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', ' ']) {
            return Err(bad("a host takes no path, query or spaces"));
        }
        let (user, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) if !u.is_empty() && !u.contains(':') => (Some(u.to_string()), h),
            Some((u, _)) if u.contains(':') => {
                return Err(bad(
                    "a password does not belong in the lab; use a key (ssh-agent or IdentityFile)",
                ));
            }
            Some(_) => return Err(bad("the user before @ is empty")),
            None => (None, rest),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| bad("an unclosed [ in the host"))?;
            (h, after.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        if host.is_empty() || host.starts_with('-') {
            return Err(bad("the host name is missing"));
        }
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    return Err(bad(&format!(
                        "port \"{p}\" is not a number from 1 to 65535"
                    )));
                }
            },
        };
        Ok(SshHost {
            user,
            host: host.to_string(),
            port,
        })
    }

    /// The destination and options every `ssh` invocation for this host takes.
    fn args(&self, config: Option<&Path>) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(c) = config {
            a.push("-F".into());
            a.push(c.display().to_string());
        }
        if let Some(p) = self.port {
            a.push("-p".into());
            a.push(p.to_string());
        }
        if let Some(u) = &self.user {
            a.push("-l".into());
            a.push(u.clone());
        }
        a
    }
}

impl fmt::Display for SshHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ssh://")?;
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        match self.host.contains(':') {
            true => write!(f, "[{}]", self.host)?,
            false => f.write_str(&self.host)?,
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
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
        cmd.args(host.args(config))
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
        cmd.args(self.host.args(self.config.as_deref()))
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
            // SAFETY: signalling our own child by its PID.
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
    // SAFETY: setpgid and prctl are async-signal-safe and touch only the child.
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
    fn parses_user_host_and_port() {
        let h = SshHost::parse("ssh://bench@db1.example:2222").unwrap();
        assert_eq!(h.user.as_deref(), Some("bench"));
        assert_eq!(h.host, "db1.example");
        assert_eq!(h.port, Some(2222));
        assert_eq!(h.to_string(), "ssh://bench@db1.example:2222");
        let h = SshHost::parse("ssh://10.0.0.2").unwrap();
        assert_eq!((h.user, h.port), (None, None));
        let h = SshHost::parse("ssh://root@[fd00::2]:22").unwrap();
        assert_eq!((h.host.as_str(), h.port), ("fd00::2", Some(22)));
        assert_eq!(h.to_string(), "ssh://root@[fd00::2]:22");
        assert_eq!(
            SshHost::parse("ssh://a@h").unwrap().args(None),
            vec!["-l", "a"]
        );
    }

    #[test]
    fn refuses_what_is_not_an_ssh_host() {
        for (text, why) in [
            ("http://h", "only ssh://"),
            ("ssh://u:pw@h", "password"),
            ("ssh://h:0", "port \"0\""),
            ("ssh://h:x", "port \"x\""),
            ("ssh://", "host name is missing"),
            ("ssh://-oProxyCommand=x", "host name is missing"),
            ("ssh://h/path", "no path"),
            ("ssh://@h", "user before @"),
        ] {
            let e = SshHost::parse(text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
    }
}
