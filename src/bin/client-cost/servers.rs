//! One engine's server for the benchmark: started and stopped through dbdelta's lifecycle code,
//! the sysbench password file, server pinning, pgbench's script, and the order of the steps run
//! against it. It must not measure a client itself.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use dbdelta::engine::common::connect::Address;
use dbdelta::engine::common::process;
use dbdelta::engine::common::secret::PrivateFile;
use dbdelta::engine::{self, EngineKind, Server, TargetSpec};
use dbdelta::sampler::Probe;

use crate::bench::Bench;
use crate::procs::tree_pids;
use crate::target::{Endpoint, Target};

impl Bench<'_> {
    pub(crate) fn engine(&mut self, kind: EngineKind, root: &Path) -> Result<()> {
        let data_dir = root.join(kind.name());
        std::fs::create_dir(&data_dir)?;
        let log = root.join(format!("{}.log", kind.name()));
        let port = process::free_port()?;
        let settings = match kind.name() {
            "postgres" => vec!["shared_buffers = '1GB'".to_string()],
            _ => vec!["innodb_buffer_pool_size = 1G".to_string()],
        };
        let target = TargetSpec {
            name: kind.name().to_string(),
            engine: kind,
            settings: settings.clone(),
            port: Some(port),
            prepared: true,
            ..Default::default()
        };
        let server = engine::start(&target, &data_dir, &log)
            .with_context(|| format!("starting {}", kind.name()))?;
        let result = self.with_server(kind, server.as_ref(), &data_dir, port, &settings, root);
        if result.is_err() {
            eprintln!(
                "server log tail ({}):\n{}",
                log.display(),
                dbdelta::sys::log_tail(&log, 20)
            );
        }
        let stopped = server.stop();
        result.and(stopped)
    }

    fn with_server(
        &mut self,
        kind: EngineKind,
        server: &dyn Server,
        data_dir: &Path,
        port: u16,
        settings: &[String],
        work: &Path,
    ) -> Result<()> {
        let (endpoint, password_file) = endpoint(kind, server, port, work)?;
        let engine::Observed::Tree(root_pid) = server.observed() else {
            bail!("{} is not a server", kind.name());
        };
        self.pin_server(root_pid)?;
        let script = work.join("point_select.sql");
        std::fs::write(
            &script,
            format!(
                "\\set id random(1, {})\nSELECT c FROM sbtest1 WHERE id = :id;\n",
                self.args.rows
            ),
        )?;
        let t = Target {
            kind,
            server,
            probe: Probe::new(server.observed(), data_dir),
            endpoint,
            work,
            script,
            _password_file: password_file,
        };
        self.say("");
        self.say(&format!("=== {} ===", server.version()));
        self.say(&format!(
            "server: started by dbdelta's engine code, pid {root_pid}, settings: {}",
            settings.join("; ")
        ));
        self.load(&t)?;
        server.postwrite(&["sbtest1".to_string()], Duration::from_secs(5))?;
        self.say("postwrite after the load: dbdelta's own (statistics, flush), 5 s budget");
        self.prewarm(&t)?;
        self.rounds(&t)?;
        if self.args.strace_secs > 0 {
            self.strace(&t)?;
        }
        Ok(())
    }

    /// Pins every process and thread of the server's tree to `--server-cpu-list`, if given.
    fn pin_server(&self, root_pid: u32) -> Result<()> {
        if let Some(list) = &self.args.server_cpu_list {
            for pid in tree_pids(root_pid) {
                let ok = Command::new("taskset")
                    .args(["-a", "-p", "-c", list, &pid.to_string()])
                    .stdout(Stdio::null())
                    .status()?
                    .success();
                if !ok {
                    bail!("taskset -a -p -c {list} {pid} failed");
                }
            }
        }
        Ok(())
    }
}

/// How sysbench and pgbench reach `server`, and the 0600 sysbench config holding its password
/// (kept while the clients run).
fn endpoint(
    kind: EngineKind,
    server: &dyn Server,
    port: u16,
    work: &Path,
) -> Result<(Endpoint, PrivateFile)> {
    let url = server
        .client_url()
        .context("the server has no client URL")?;
    let (Address::Unix(at), Some(password)) = (&url.address, &url.password) else {
        bail!("the server gave no socket and password: {}", url.shown());
    };
    let driver = match kind.name() {
        "postgres" => "pgsql",
        _ => "mysql",
    };
    let password_file = PrivateFile::create(
        &work.join("sysbench-password.conf"),
        &format!("{driver}-password={password}\n"),
        None,
    )?;
    let conf = password_file.path().to_path_buf();
    let endpoint = match kind.name() {
        "postgres" => Endpoint::Pg {
            dir: at.clone(),
            port,
            password: password.clone(),
            conf,
        },
        _ => Endpoint::My {
            socket: at.clone(),
            conf,
        },
    };
    Ok((endpoint, password_file))
}
