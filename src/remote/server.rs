//! A server on another host (`host = "ssh://…"`): its whole lifecycle runs there, in dbdelta
//! itself started over SSH as an agent (`dbdelta agent`, [`super::agent`]), and the clients
//! here connect to it over TCP (or, with `client = "remote"`, run there: [`RemoteClients`]).
//!
//! Owns putting dbdelta's own binary on the host (cached there by a name that changes with
//! the binary), shipping a cached build there, the [`Link`] to a running agent (typed requests
//! of [`super::protocol`], serialised; a closed pipe marks the link lost and every later
//! request fails at once, naming the host), and [`RemoteServer`], a [`Server`] whose every call
//! is a request. Dropping a `RemoteServer` ends the SSH session; the agent sees its stdin
//! close, stops the server and removes its work directory, so a lost connection leaves
//! nothing running there.
//! Must not: time anything, or read `/proc` of the remote host (the agent's sampler does; the
//! sampler here asks through the link, a [`RemoteProbe`]).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, anyhow, bail};

use super::protocol::{
    self, Ask, BuildDir, CheckAlive, DbSize, FindBuild, Hello, Postwrite, Release, Reply, Request,
    SHIPPED, Started,
};
use super::ssh::{Master, SshHost};
use crate::engine::common::connect::{Address, ConnectUrl};
use crate::engine::remote::{RemoteHost, Shipment};
use crate::engine::{Driver, Observed, Server, TableDdl, TargetSpec};
use crate::runner::ClientsThere;
use crate::runner::step::StepRun;
use crate::sampler::observed::{Elsewhere, ProbeWhat, Probed, RemoteProbe};

/// A running agent: its SSH session and the pipes to it.
pub struct Link {
    host: String,
    io: Mutex<Io>,
    agent: Mutex<Child>,
    master: Mutex<Option<Master>>,
}

struct Io {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Why the link is gone, once it is.
    lost: Option<String>,
}

impl Link {
    /// Send one request and wait for its answer, of the type the protocol gives it.
    pub fn ask<A: Ask>(&self, request: A) -> Result<A::Answer> {
        let answer = self.exchange(&request.into())?;
        match serde_json::from_str::<Reply<A::Answer>>(&answer) {
            Ok(Reply::Ok(v)) => Ok(v),
            Ok(Reply::Err(e)) => Err(anyhow!("{e}")),
            Err(e) => bail!("the agent on {} answered {answer:?}: {e}", self.host),
        }
    }

    /// Write one request line and read the answer line.
    fn exchange(&self, req: &Request) -> Result<String> {
        let mut io = self.io.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(why) = &io.lost {
            bail!("{why}");
        }
        let mut line = serde_json::to_string(req)?;
        line.push('\n');
        let mut answer = String::new();
        let sent = io
            .stdin
            .write_all(line.as_bytes())
            .and_then(|_| io.stdin.flush());
        let read = sent.and_then(|_| io.stdout.read_line(&mut answer));
        match read {
            Ok(n) if n > 0 => Ok(answer),
            other => {
                let why = match other {
                    Err(e) => format!("lost the SSH connection to {} ({e})", self.host),
                    Ok(_) => format!("lost the SSH connection to {}", self.host),
                };
                io.lost = Some(why.clone());
                bail!("{why}");
            }
        }
    }

    /// The local `ssh -M` process's PID (what a test kills to cut the connection).
    pub fn master_pid(&self) -> Option<u32> {
        let m = self.master.lock().unwrap_or_else(|e| e.into_inner());
        m.as_ref().map(Master::pid)
    }

    /// End the session: the agent's stdin closes (it stops what it started), then the master.
    fn close(&self) {
        let mut agent = self.agent.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(agent.try_wait(), Ok(None)) {
            let _ = agent.kill();
        }
        let _ = agent.wait();
        self.master.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.close();
    }
}

impl RemoteProbe for Link {
    /// Ask the agent's sampler for `what`.
    fn probe(&self, what: ProbeWhat) -> Result<Probed> {
        self.ask(protocol::Probe { what })
    }
    fn describe(&self) -> String {
        self.host.clone()
    }
}

/// A server that an agent started on another host.
pub struct RemoteServer {
    link: Arc<Link>,
    /// What the server said of itself there, its settings with `dbdelta.host` added.
    said: crate::engine::Started,
    config_text: Option<String>,
    host: SshHost,
    driver: Arc<dyn Driver>,
}

impl RemoteServer {
    /// Connect to the target's host, put the agent there, start the server through it.
    /// ssh's and the agent's messages (with the end of the server's log when it fails) go to
    /// `log`.
    pub fn start(target: &TargetSpec, log: &Path) -> Result<RemoteServer> {
        let remote = target.remote.as_ref().context("not a remote target")?;
        let what = format!("target {} on {}", target.name, remote.host);
        let link = Arc::new(open_link(remote, log).with_context(|| what.clone())?);
        let mut spec = target.clone();
        spec.remote = None;
        if let Some(ship) = &remote.ship {
            spec.bin = Some(
                ship_build(&link, ship)
                    .with_context(|| format!("{what}: copying {} to the host", ship.entry))?,
            );
        }
        let started = link
            .ask(protocol::Start {
                spec: Box::new(spec),
            })
            .with_context(|| format!("{what}: the server did not start"))?;
        let url = ConnectUrl {
            engine: target.engine,
            user: started.tcp.user.clone(),
            password: Some(started.tcp.password.clone()),
            address: Address::Tcp(started.address.clone()),
            port: started.tcp.port,
            database: started.tcp.database.clone(),
        };
        let driver: Arc<dyn Driver> = (target.engine.family())
            .tcp_driver(url, target.prepared, &started.tcp)
            .with_context(|| what.clone())?;
        let Started {
            version,
            mut settings,
            config_text,
            data_dir,
            ..
        } = started;
        settings.insert("dbdelta.host".into(), remote.host.to_string());
        Ok(RemoteServer {
            link,
            said: crate::engine::Started {
                version,
                settings,
                data_dir,
            },
            config_text,
            host: remote.host.clone(),
            driver,
        })
    }

    /// The load's and the steps' clients on the server's host, through the same agent.
    pub fn clients_there(&self) -> RemoteClients {
        RemoteClients(self.link.clone())
    }

    /// The local `ssh -M` process's PID.
    pub fn master_pid(&self) -> Option<u32> {
        self.link.master_pid()
    }
}

impl Server for RemoteServer {
    fn driver(&self) -> Arc<dyn Driver> {
        self.driver.clone()
    }
    fn started(&self) -> &crate::engine::Started {
        &self.said
    }
    fn observed(&self) -> Observed {
        Observed::Remote(Elsewhere(self.link.clone()))
    }
    fn db_size(&self) -> Option<u64> {
        self.link.ask(DbSize {}).ok().flatten()
    }
    fn postwrite(&self, tables: &[String], budget: std::time::Duration) -> Result<()> {
        self.link.ask(Postwrite {
            tables: tables.to_vec(),
            budget_ms: budget.as_millis() as u64,
        })
    }
    fn config_text(&self) -> Option<String> {
        self.config_text.clone()
    }
    fn check_alive(&self) -> Result<()> {
        self.link.ask(CheckAlive {})
    }
    fn release(&self, tables: &[String]) -> Result<()> {
        self.link.ask(Release {
            tables: tables.to_vec(),
        })
    }
    fn stop(self: Box<Self>) -> Result<()> {
        let stopped = self.link.ask(protocol::Stop {});
        self.link.close();
        stopped.with_context(|| format!("stopping the server on {}", self.host))
    }
}

/// `client = "remote"`: the runner's load and steps, run with their clients by the agent on
/// the server's host.
pub struct RemoteClients(Arc<Link>);

impl ClientsThere for RemoteClients {
    fn plan(&self, lab: String, quick: bool) -> Result<()> {
        self.0.ask(protocol::Plan { lab, quick })
    }
    fn load(&self, suite: &str, clients: u32, ddl: &TableDdl) -> Result<(f64, f64)> {
        self.0.ask(protocol::Load {
            suite: suite.into(),
            clients,
            ddl: ddl.clone(),
        })
    }
    fn step(
        &self,
        suite: &str,
        step: &str,
        clients: u32,
        repeat: u32,
        ddl: &TableDdl,
    ) -> Result<StepRun> {
        self.0.ask(protocol::Step {
            suite: suite.into(),
            step: step.into(),
            clients,
            repeat,
            ddl: ddl.clone(),
        })
    }
}

/// Copy `ship`'s tree to the host unless it is there (a `tar` stream over the SSH master,
/// unpacked beside its place, marker written last, and renamed into it; a copy another run
/// finished meanwhile is kept and this one dropped); the binaries' directory there.
fn ship_build(link: &Link, ship: &Shipment) -> Result<PathBuf> {
    let at: BuildDir = link.ask(FindBuild {
        entry: ship.entry.clone(),
    })?;
    if !at.present {
        let d = shell_quote(&at.dir.to_string_lossy());
        let mut tar = std::process::Command::new("tar")
            .arg("-C")
            .arg(&ship.tree)
            .args(["-cf", "-", "."])
            .stdout(Stdio::piped())
            .spawn()
            .context("running tar")?;
        let stream = tar.stdout.take().context("tar's output")?;
        let unpack = {
            let master = link.master.lock().unwrap_or_else(|e| e.into_inner());
            let master = master.as_ref().context("the SSH connection is closed")?;
            master
                .command(&format!(
                    "set -e; p={d}.part.$$; mkdir -p \"$p\"; tar -C \"$p\" -xf -; \
                     touch \"$p/{SHIPPED}\"; \
                     if mv -T \"$p\" {d} 2>/dev/null; then :; \
                     elif [ -e {d}/{SHIPPED} ]; then rm -rf \"$p\"; \
                     else rm -rf {d}; mv -T \"$p\" {d}; fi"
                ))
                .stdin(stream)
                .stdout(Stdio::null())
                .output()?
        };
        let packed = tar.wait()?;
        if !packed.success() || !unpack.status.success() {
            bail!(
                "tar ({packed}) into {} ({}): {}",
                at.dir.display(),
                unpack.status,
                String::from_utf8_lossy(&unpack.stderr).trim()
            );
        }
    }
    Ok(at.dir.join(&ship.bin))
}

/// Log in, put the agent on the host, start it and read its hello.
fn open_link(remote: &RemoteHost, log: &Path) -> Result<Link> {
    let master = Master::connect(&remote.host, remote.ssh_config.as_deref(), log)?;
    let agent_path = deploy(&master)?;
    let stderr = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)?;
    let mut child = master
        .command(&format!("exec {agent_path} agent"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .context("running ssh for the agent")?;
    let stdin = child.stdin.take().context("agent stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().context("agent stdout")?);
    let mut hello = String::new();
    stdout.read_line(&mut hello)?;
    let hello: Hello = match serde_json::from_str::<Reply<Hello>>(&hello) {
        Ok(Reply::Ok(h)) => h,
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "the agent did not start on {}: {}",
                remote.host,
                crate::sys::log_tail(log, 3).replace('\n', " / ")
            );
        }
    };
    if hello.agent != env!("CARGO_PKG_VERSION") {
        bail!(
            "the agent on {} is dbdelta {}, this is {}",
            remote.host,
            hello.agent,
            env!("CARGO_PKG_VERSION")
        );
    }
    Ok(Link {
        host: remote.host.to_string(),
        io: Mutex::new(Io {
            stdin,
            stdout,
            lost: None,
        }),
        agent: Mutex::new(child),
        master: Mutex::new(Some(master)),
    })
}

/// Put this very binary on the host, unless it is there already, and return its path
/// there (under `~/.cache/dbdelta/agent/`, named by version, size and modification time;
/// copied under a hidden name and renamed, so runs deploying at once never see half a file;
/// copying a new one removes the other versions there).
/// The host must run the same architecture.
fn deploy(master: &Master) -> Result<String> {
    // The running binary itself, even when a rebuild or an upgrade replaced its file.
    let exe = std::fs::File::open("/proc/self/exe").context("opening dbdelta's own binary")?;
    let meta = exe.metadata()?;
    let mtime = meta
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let name = format!(
        "dbdelta-{}-{:x}-{:x}",
        env!("CARGO_PKG_VERSION"),
        meta.len(),
        mtime.as_nanos()
    );
    let path = format!("\"$HOME/.cache/dbdelta/agent/{name}\"");
    let probe = master.output(&format!(
        "uname -m; if test -x {path}; then echo present; else echo missing; fi; echo {path}"
    ))?;
    let mut lines = probe.lines();
    let arch = lines.next().unwrap_or("").trim();
    if arch != std::env::consts::ARCH {
        bail!(
            "{} runs {arch}, this dbdelta is built for {}; the agent cannot run there",
            master.host(),
            std::env::consts::ARCH
        );
    }
    let present = lines.next() == Some("present");
    let resolved = lines.next().unwrap_or("").trim().to_string();
    if !present {
        let status = master
            .command(&format!(
                "set -e; d=\"$HOME/.cache/dbdelta/agent\"; mkdir -p \"$d\"; \
                 t=\"$d/.{name}.$$\"; cat > \"$t\"; chmod 755 \"$t\"; mv \"$t\" {path}; \
                 find \"$d\" -maxdepth 1 -name 'dbdelta-*' ! -name '{name}' -delete"
            ))
            .stdin(exe)
            .stdout(Stdio::null())
            .status()
            .context("copying dbdelta to the host")?;
        if !status.success() {
            bail!("copying dbdelta to {} failed ({status})", master.host());
        }
    }
    Ok(shell_quote(&resolved))
}

/// `text` as one word for a POSIX shell.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_word_quotes_its_quotes() {
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
    }
}
