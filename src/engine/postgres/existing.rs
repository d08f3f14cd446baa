//! A PostgreSQL server that is already running (`connect = "postgres://…"`): dbdelta starts,
//! configures and stops nothing, and creates and drops only its suite's tables in the named
//! database.
//!
//! Owns: connecting (the URL's socket or TCP host, its user and password), reading back the
//! version and settings, and finding the server's processes on this host from what the server
//! says of itself (`pg_backend_pid()`, checked against `/proc`: a process named `postgres`
//! whose working directory is the server's `data_directory` when that is visible), so its CPU
//! is measured like a server dbdelta started; otherwise the reason it is not. Must not: start,
//! signal or stop a process, or touch anything but the suite's tables.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use procfs::process::Process;

use super::{Connect, PgDriver, db_size, postwrite, read_back};
use crate::engine::common::connect::ConnectUrl;
use crate::engine::common::pgwire::PgConn;
use crate::engine::{Driver, Observed, Server, Started, TargetSpec};

pub struct PgExisting {
    driver: Arc<PgDriver>,
    admin: Mutex<PgConn>,
    started: Started,
    observed: Observed,
    shown: String,
}

impl PgExisting {
    pub fn attach(target: &TargetSpec, url: &ConnectUrl) -> Result<Box<dyn Server>> {
        let shown = url.shown();
        let mut admin = PgConn::connect_url(url)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("target {}: cannot connect to {shown}", target.name))?;
        let (version, settings) = read_back(&mut admin)?;
        let (observed, data_dir) = find_server(&mut admin);
        Ok(Box::new(PgExisting {
            driver: Arc::new(PgDriver::new(Connect::Url(url.clone()), target.prepared)),
            admin: Mutex::new(admin),
            // The data directory when the server's processes were found here (for device IO);
            // else an empty path, which no device holds.
            started: Started {
                version,
                settings,
                data_dir,
            },
            observed,
            shown,
        }))
    }
}

fn first(admin: &mut PgConn, sql: &str) -> Option<String> {
    admin
        .rows(sql)
        .ok()?
        .into_iter()
        .next()?
        .into_iter()
        .next()?
}

/// The server's process tree on this host (the parent of this connection's backend) and its
/// data directory, or why it cannot be measured here.
fn find_server(admin: &mut PgConn) -> (Observed, PathBuf) {
    let Some(pid) = first(admin, "SELECT pg_backend_pid()").and_then(|p| p.parse::<i32>().ok())
    else {
        return (
            Observed::Unobserved("the server did not say its backend's PID".into()),
            PathBuf::new(),
        );
    };
    // Visible to superusers and pg_read_all_settings only; an empty answer otherwise.
    let data_directory = first(
        admin,
        "SELECT setting FROM pg_settings WHERE name = 'data_directory'",
    )
    .map(PathBuf::from);
    match backend_here(pid, data_directory.as_deref()) {
        Ok((root, cwd)) => (Observed::Tree(root), cwd),
        Err(why) => (Observed::Unobserved(why), PathBuf::new()),
    }
}

/// Check that `pid` on this host is a postgres backend of this server: `(postmaster PID,
/// working directory)`.
fn backend_here(pid: i32, data_directory: Option<&Path>) -> Result<(u32, PathBuf), String> {
    let elsewhere = "the server runs on another host, in a container or in another PID namespace";
    let p = Process::new(pid).map_err(|_| {
        format!("its backend is PID {pid} by its own account, and no such process is on this host ({elsewhere})")
    })?;
    let stat = p
        .stat()
        .map_err(|e| format!("cannot read /proc/{pid}/stat: {e}"))?;
    if !stat.comm.starts_with("postgres") {
        return Err(format!(
            "its backend is PID {pid} by its own account, but PID {pid} on this host is {} ({elsewhere})",
            stat.comm
        ));
    }
    let cwd = p.cwd().map_err(|e| {
        format!("cannot read /proc/{pid}/cwd ({e}): run dbdelta as root or as the server's user to measure its CPU")
    })?;
    if let Some(dd) = data_directory
        && cwd != dd
    {
        return Err(format!(
            "PID {pid} on this host is a postgres process in {}, not in this server's data directory {} ({elsewhere})",
            cwd.display(),
            dd.display()
        ));
    }
    let root = stat.ppid;
    let parent = Process::new(root)
        .and_then(|pp| pp.stat())
        .map_err(|e| format!("cannot read the backend's parent PID {root}: {e}"))?;
    if !parent.comm.starts_with("postgres") {
        return Err(format!(
            "the backend's parent (PID {root}) is {}, not the postmaster",
            parent.comm
        ));
    }
    Ok((root as u32, cwd))
}

impl Server for PgExisting {
    fn driver(&self) -> Arc<dyn Driver> {
        self.driver.clone()
    }

    fn started(&self) -> &Started {
        &self.started
    }

    fn observed(&self) -> Observed {
        self.observed.clone()
    }

    fn db_size(&self) -> Option<u64> {
        db_size(&mut *self.admin.lock().ok()?)
    }

    fn postwrite(&self, tables: &[String], budget: Duration) -> Result<()> {
        let mut admin = self.admin.lock().expect("admin lock");
        // CHECKPOINT needs superuser (or pg_checkpoint); a connect user may not have it.
        postwrite(&mut admin, tables, budget, false)
    }

    fn release(&self, tables: &[String]) -> Result<()> {
        let mut admin = self.admin.lock().expect("admin lock");
        for t in tables {
            admin
                .simple(&format!("DROP TABLE IF EXISTS {t}"))
                .with_context(|| format!("{}: DROP TABLE {t}", self.shown))?;
        }
        Ok(())
    }

    fn check_alive(&self) -> Result<()> {
        let mut admin = self.admin.lock().expect("admin lock");
        admin
            .simple("SELECT 1")
            .map(|_| ())
            .with_context(|| format!("the server at {} does not answer", self.shown))
    }

    fn stop(self: Box<Self>) -> Result<()> {
        // Not ours to stop: only the admin connection closes.
        Ok(())
    }
}
