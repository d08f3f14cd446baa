//! `dbdelta agent`: dbdelta on a remote target's host, started over SSH by
//! [`super::server`]. It runs the target's server there and samples its processes.
//!
//! Owns the agent's side of the protocol ([`super::protocol`]): a hello line, then one answer
//! per request line, of the type the protocol gives that request (start the server with
//! [`engine::start`], the sampler's snapshots, memory and CPUs, size, postwrite, release,
//! liveness, stop; with `client = "remote"` the plan of the lab it is sent and its load and
//! steps, run by the runner's own `timed_load` and `step::run`), and its work directory
//! (`$TMPDIR/dbdelta-agent.PID`, removed at exit). The server listens where the SSH connection
//! arrived and lets in only the address it came from (`SSH_CONNECTION`), with the server's
//! password. When its stdin closes (the run ended, or the SSH connection was lost) it stops the
//! server and removes the work directory; if that takes over [`STOP_GRACE`] it kills the
//! server's process group and exits.
//! Must not: time database work itself (the runner's code does, here as on the other side),
//! or write anything outside its work directory but what the engine writes.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::protocol::{self, Ask, BuildDir, Hello, Reply, Request, SHIPPED, Started};
use crate::engine::{self, Listen, Server};
use crate::sampler::Probe;

/// The started server's PID, for the last-resort kill after stdin closed.
static SERVER_PID: AtomicI32 = AtomicI32::new(0);

/// How long the agent may take to finish what it does and stop the server once its stdin
/// closed (a postwrite may be waiting out its budget): then the server's process group is
/// killed (its data directory is thrown away anyway).
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Serve requests on stdin until it closes or a `stop` request comes.
pub fn serve() -> Result<()> {
    let workdir = make_workdir()?;
    let mut out = std::io::stdout().lock();
    let hello = Hello {
        agent: env!("CARGO_PKG_VERSION").into(),
        pid: std::process::id(),
        workdir: workdir.clone(),
    };
    send(&mut out, Reply::Ok(serde_json::to_value(hello)?));
    let lines = read_lines(workdir.clone());
    let mut agent = Agent {
        workdir,
        server: None,
        probe: None,
        probes: 0,
        plan: None,
        steps: 0,
    };
    while let Ok(Some(line)) = lines.recv() {
        let request = serde_json::from_str::<Request>(&line);
        let stop = matches!(request, Ok(Request::Stop(_)));
        let reply = match request {
            Ok(r) => agent.handle(r),
            Err(e) => Err(anyhow::anyhow!("the agent cannot read {line:?}: {e}")),
        };
        let reply = match reply {
            Ok(v) => Reply::Ok(v),
            Err(e) => Reply::Err(format!("{e:#}")),
        };
        if !send(&mut out, reply) || stop {
            break;
        }
    }
    agent.finish();
    Ok(())
}

/// Write one answer line; false when nobody reads any more.
fn send(out: &mut impl Write, reply: Reply<serde_json::Value>) -> bool {
    let Ok(mut line) = serde_json::to_string(&reply) else {
        return false;
    };
    line.push('\n');
    out.write_all(line.as_bytes())
        .and_then(|_| out.flush())
        .is_ok()
}

/// Request lines from stdin; `None` when it closes. From then on the agent has
/// [`STOP_GRACE`] to clean up before this thread kills the server and exits.
fn read_lines(workdir: PathBuf) -> mpsc::Receiver<Option<String>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(l) = line else { break };
            if tx.send(Some(l)).is_err() {
                break;
            }
        }
        let _ = tx.send(None);
        std::thread::sleep(STOP_GRACE);
        let pid = SERVER_PID.load(Ordering::SeqCst);
        if pid > 0 {
            // SAFETY: kill(2) reads and writes no memory of ours. `pid` > 0 is the PID of the
            // server this agent started (0 once stopped), which leads its own process group,
            // so `-pid` signals only that group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            std::thread::sleep(Duration::from_millis(500));
        }
        let _ = std::fs::remove_dir_all(&workdir);
        note(format_args!(
            "dbdelta agent: still busy {STOP_GRACE:?} after the connection closed; killed the server"
        ));
        std::process::exit(1);
    });
    rx
}

/// `$TMPDIR/dbdelta-agent.PID`, readable by the server account.
fn make_workdir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("dbdelta-agent.{}", std::process::id()));
    std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
    Ok(dir)
}

/// Where the server listens: the address the SSH connection arrived on, for the address it
/// came from (`SSH_CONNECTION` = "client-ip client-port server-ip server-port").
fn listen() -> Result<Listen> {
    let conn = std::env::var("SSH_CONNECTION")
        .context("the agent runs under ssh, which sets SSH_CONNECTION; it is not set")?;
    let parts: Vec<&str> = conn.split_whitespace().collect();
    match parts[..] {
        [client, _, address, _] => Ok(Listen {
            address: address.to_string(),
            client: client.to_string(),
        }),
        _ => bail!("SSH_CONNECTION = {conn:?} is not \"client port server port\""),
    }
}

struct Agent {
    workdir: PathBuf,
    server: Option<Box<dyn Server>>,
    probe: Option<Probe>,
    /// Sampler requests answered (reported at exit, in the target's log there).
    probes: u64,
    /// `client = "remote"`: the suites' steps.
    plan: Option<crate::plan::RunPlan>,
    /// Steps whose clients ran here (reported at exit).
    steps: u64,
}

impl Agent {
    /// Answer one request: every arm encodes the answer type the protocol gives its request.
    fn handle(&mut self, request: Request) -> Result<serde_json::Value> {
        let encoded = match request {
            Request::Start(r) => protocol::Start::encode(self.start(*r.spec)?),
            Request::BuildDir(r) => protocol::FindBuild::encode(build_dir(&r.entry)?),
            Request::Stop(_) => match self.finish() {
                None => protocol::Stop::encode(()),
                Some(e) => bail!("{e}"),
            },
            Request::Plan(r) => protocol::Plan::encode(self.plan(&r.lab, r.quick)?),
            Request::Load(r) => protocol::Load::encode(self.load(&r.suite, r.clients, &r.ddl)?),
            Request::Step(r) => {
                self.steps += 1;
                let run = self.step(&r.suite, &r.step, r.clients, r.repeat, &r.ddl)?;
                protocol::Step::encode(run)
            }
            Request::Probe(r) => {
                let probe = self.probe.as_ref().context("the agent has no server")?;
                self.probes += 1;
                protocol::Probe::encode(probe.answer(r.what))
            }
            Request::DbSize(_) => protocol::DbSize::encode(self.server()?.db_size()),
            Request::Postwrite(r) => {
                let budget = Duration::from_millis(r.budget_ms);
                protocol::Postwrite::encode(self.server()?.postwrite(&r.tables, budget)?)
            }
            Request::Release(r) => protocol::Release::encode(self.server()?.release(&r.tables)?),
            Request::CheckAlive(_) => protocol::CheckAlive::encode(self.server()?.check_alive()?),
        };
        Ok(encoded?)
    }

    fn server(&self) -> Result<&dyn Server> {
        self.server.as_deref().context("the agent has no server")
    }

    /// `client = "remote"`: the suites' steps, planned from the lab the other side sent.
    fn plan(&mut self, lab: &str, quick: bool) -> Result<()> {
        let lab = crate::plan::lab::parse(lab, "the lab sent to the agent", &self.workdir)?;
        let opts = crate::plan::RunOptions {
            quick,
            ..Default::default()
        };
        self.plan = Some(crate::plan::plan(lab, &opts)?);
        Ok(())
    }

    fn suite(&self, id: &str) -> Result<&crate::workload::SuitePlan> {
        let plan = self.plan.as_ref().context("the agent has no plan")?;
        (plan.suites.iter())
            .find(|s| s.suite.id() == id)
            .with_context(|| format!("the agent's plan has no suite {id}"))
    }

    /// Create and fill the suite's tables from here, timed by the runner's own load.
    fn load(&self, suite: &str, clients: u32, ddl: &engine::TableDdl) -> Result<(f64, f64)> {
        let server = self.server.as_deref().context("the agent has no server")?;
        let suite = self.suite(suite)?;
        let driver = server.driver();
        let mut session = driver.connect().context("connecting for the load")?;
        crate::runner::timed_load(
            suite.suite.as_ref(),
            session.as_mut(),
            driver.dialect(),
            ddl,
            clients,
        )
    }

    /// Run one step with its clients here, through the runner's own `step::run`.
    fn step(
        &self,
        suite: &str,
        label: &str,
        clients: u32,
        repeat: u32,
        ddl: &engine::TableDdl,
    ) -> Result<crate::runner::step::StepRun> {
        let server = self.server.as_deref().context("the agent has no server")?;
        let probe = self.probe.as_ref().context("the agent has no server")?;
        let step = (self.suite(suite)?.steps.iter())
            .find(|s| s.label == label)
            .with_context(|| format!("the agent's plan has no step {label}"))?;
        let spec = crate::runner::step::StepSpec {
            step,
            clients: step.clients_at(clients),
            seed: crate::workload::step_seed(step.index, repeat),
            client_cpus: None,
            ddl,
            profile: None,
            counting: false,
        };
        crate::runner::step::run_unattended(&spec, &server.driver(), probe)
    }

    fn start(&mut self, mut spec: engine::TargetSpec) -> Result<Started> {
        if self.server.is_some() {
            bail!("the agent already runs a server");
        }
        let listen = listen()?;
        spec.listen = Some(listen.clone());
        let name: String = (spec.name.chars())
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let data_dir = self.workdir.join(&name);
        std::fs::create_dir(&data_dir)
            .with_context(|| format!("creating {}", data_dir.display()))?;
        let log = self.workdir.join(format!("{name}.log"));
        let server = engine::start(&spec, &data_dir, &log).inspect_err(|_| tail(&log))?;
        SERVER_PID.store(server.started_pid().unwrap_or(0) as i32, Ordering::SeqCst);
        let tcp = server
            .tcp_endpoint()
            .context("the server does not listen for a remote client")?;
        let started = Started {
            version: server.version(),
            settings: server.settings(),
            config_text: server.config_text(),
            data_dir: server.data_dir().to_path_buf(),
            address: listen.address,
            tcp,
        };
        self.probe = Some(Probe::new(server.observed(), server.data_dir()));
        self.server = Some(server);
        Ok(started)
    }

    /// Stop the server (its log's end to stderr when that fails) and remove the work
    /// directory. Idempotent.
    fn finish(&mut self) -> Option<String> {
        self.probe = None;
        let mut failed = None;
        if let Some(server) = self.server.take() {
            let log = server.log_path();
            if let Err(e) = server.stop() {
                note(format_args!("dbdelta agent: stopping the server: {e:#}"));
                if let Some(l) = log {
                    tail(&l);
                }
                failed = Some(format!("{e:#}"));
            }
            SERVER_PID.store(0, Ordering::SeqCst);
        }
        let _ = std::fs::remove_dir_all(&self.workdir);
        note(format_args!(
            "dbdelta agent (pid {}): answered {} sampler request(s), ran {} step(s) with their \
             clients here; server stopped, {} removed",
            std::process::id(),
            self.probes,
            self.steps,
            self.workdir.display()
        ));
        failed
    }
}

/// Where a build shipped from the other side's cache goes in this host's cache (apart from
/// builds fetched here), and whether it is complete there.
fn build_dir(entry: &str) -> Result<BuildDir> {
    let rel = Path::new(entry);
    let plain = rel
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !plain || !entry.starts_with("builds/") {
        bail!("{entry:?} is not a cache entry");
    }
    let dir = crate::provision::cache_dir()
        .join("remote")
        .join(rel)
        .join("tree");
    let present = dir.join(SHIPPED).is_file();
    Ok(BuildDir { dir, present })
}

/// One line to stderr (the SSH session's, kept in the target's log here); nothing when
/// nobody reads it any more (`eprintln!` would panic).
fn note(args: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr(), "{args}");
}

/// The end of the server's log to stderr (which the local side keeps in the target's log).
fn tail(log: &Path) {
    let text = crate::sys::log_tail(log, 20);
    if !text.is_empty() {
        note(format_args!(
            "dbdelta agent: last lines of the server log:\n{text}"
        ));
    }
}
