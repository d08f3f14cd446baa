//! What the runs share: how a client reaches the server (`Endpoint`), the clients compared
//! (`Client`), one measured run (`Sample`) and one started engine (`Target`). Data and the
//! arithmetic of a sample; it must not start a server or a client.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dbdelta::engine::common::secret::PrivateFile;
use dbdelta::engine::{EngineKind, Server};
use dbdelta::sampler::{Probe, Snapshot};

use crate::procs::Usage;

/// How a client reaches the server: where, the server's password, and a 0600 sysbench
/// `--config-file` holding it (a password on a command line is visible to every user).
#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    Pg {
        dir: PathBuf,
        port: u16,
        password: String,
        conf: PathBuf,
    },
    My {
        socket: PathBuf,
        conf: PathBuf,
    },
}

impl Endpoint {
    pub(crate) fn sysbench_args(&self) -> Vec<String> {
        match self {
            Endpoint::Pg {
                dir, port, conf, ..
            } => vec![
                "--db-driver=pgsql".into(),
                format!("--pgsql-host={}", dir.display()),
                format!("--pgsql-port={port}"),
                "--pgsql-user=postgres".into(),
                "--pgsql-db=postgres".into(),
                format!("--config-file={}", conf.display()),
            ],
            Endpoint::My { socket, conf } => vec![
                "--db-driver=mysql".into(),
                format!("--mysql-socket={}", socket.display()),
                "--mysql-user=root".into(),
                "--mysql-db=dbdelta".into(),
                format!("--config-file={}", conf.display()),
            ],
        }
    }
}

/// The three clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Client {
    Sysbench,
    Pgbench,
    Dbdelta,
    /// dbdelta's wire client in a bare loop waiting in `poll`: no runner, no workload, no
    /// recording. What is left is the cost of the protocol and the socket.
    Floor,
    /// The same bare loop blocking in `read` for the reply instead of `poll` + `read`.
    FloorRecv,
}

impl Client {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Client::Sysbench => "sysbench",
            Client::Pgbench => "pgbench",
            Client::Dbdelta => "dbdelta",
            Client::Floor => "wirepoll",
            Client::FloorRecv => "wireread",
        }
    }
}

/// One measured run of one client.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sample {
    pub(crate) qps: f64,
    /// Every query the client ran (what the CPU figures are divided by).
    pub(crate) queries: u64,
    pub(crate) client_us: f64,
    /// The system-time part of `client_us`.
    pub(crate) client_sys_us: f64,
    /// The client's context switches (voluntary + involuntary) per query.
    pub(crate) client_cs: f64,
    /// Of those, involuntary (preemptions).
    pub(crate) client_ics: f64,
    pub(crate) server_us: f64,
    /// CPU of everything else on the host over the run, in cores (others' work; host counters
    /// under-count, so this is a lower bound).
    pub(crate) other_cores: f64,
    /// dbdelta only: its own accounting over the measured window.
    pub(crate) window_client_us: f64,
    pub(crate) window_server_us: f64,
}

impl Sample {
    /// A client that ran in this process: `usage` is our rusage delta over the run, `snaps` the
    /// server snapshots around it, `secs` its wall time (the settle pause is added here).
    pub(crate) fn in_process(
        qps: f64,
        queries: u64,
        usage: Usage,
        snaps: (&Snapshot, &Snapshot),
        secs: f64,
    ) -> Sample {
        let (a, b) = snaps;
        let server = server_delta(a, b);
        let host = b.host_busy_us - a.host_busy_us;
        let me = usage.cpu_us();
        let n = queries as f64;
        Sample {
            qps,
            queries,
            client_us: me / n,
            client_sys_us: usage.sys_us / n,
            client_cs: usage.cs / n,
            client_ics: usage.ics / n,
            server_us: server / n,
            other_cores: ((host - server - me) / ((secs + SETTLE.as_secs_f64()) * 1e6)).max(0.0),
            window_client_us: f64::NAN,
            window_server_us: f64::NAN,
        }
    }
}

/// One started engine and what the clients need to reach it.
pub(crate) struct Target<'a> {
    pub(crate) kind: EngineKind,
    pub(crate) server: &'a dyn Server,
    pub(crate) probe: Probe,
    pub(crate) endpoint: Endpoint,
    pub(crate) work: &'a Path,
    pub(crate) script: PathBuf,
    pub(crate) _password_file: PrivateFile,
}

pub(crate) fn server_delta(a: &Snapshot, b: &Snapshot) -> f64 {
    (b.proc_cpu_us - a.proc_cpu_us).max(0.0)
}

/// After a client ends: let the server reap its backends and settle before the closing snapshot.
pub(crate) const SETTLE: Duration = Duration::from_millis(300);
