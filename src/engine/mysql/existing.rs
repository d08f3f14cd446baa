//! A MySQL or MariaDB server that is already running (`connect = "mysql://…"`): dbdelta
//! starts, configures and stops nothing, changes no global variable, and creates and drops only
//! its suite's tables in the URL's database (which must exist).
//!
//! Owns: connecting as the URL's user (with its password, if any), reading back the version and
//! `SHOW GLOBAL VARIABLES`, and finding the server's process on this host from what it says of
//! itself (`@@pid_file`, readable here, naming a `mysqld`/`mariadbd` process whose working
//! directory is `@@datadir`), else the reason its CPU is not measured. Must not: start, signal or
//! stop a process, set a global variable (the postwrite cleanup only analyzes the tables and waits
//! out its budget), or touch anything but the suite's tables.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use procfs::process::Process;

use super::{MyEndpoint, MysqlDriver, version_label};
use crate::engine::common::connect::ConnectUrl;
use crate::engine::common::mywire::MyConn;
use crate::engine::{Driver, Observed, Server, Started, TargetSpec};

pub struct MyExisting {
    driver: Arc<MysqlDriver>,
    admin: Mutex<MyConn>,
    started: Started,
    observed: Observed,
    shown: String,
}

impl MyExisting {
    pub fn attach(target: &TargetSpec, url: &ConnectUrl) -> Result<Box<dyn Server>> {
        let shown = url.shown();
        let mut admin = MyConn::connect_url(url)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("target {}: cannot connect to {shown}", target.name))?;
        // The admin connection idles through whole steps: do not let the server drop it.
        let _ = admin.query("SET SESSION wait_timeout = 31536000");
        let version = version_label(
            admin
                .first("SELECT VERSION()")?
                .context("SELECT VERSION() returned no row")?,
        );
        let sql_mode = admin.first("SELECT @@GLOBAL.sql_mode")?.unwrap_or_default();
        let settings = admin
            .rows("SHOW GLOBAL VARIABLES")?
            .into_iter()
            .filter_map(|r| {
                let mut cols = r.into_iter();
                Some((cols.next()??, cols.next().flatten().unwrap_or_default()))
            })
            .filter(|(name, _)| name != "port")
            .collect();
        let (observed, data_dir) = match find_server(&mut admin) {
            Ok((pid, dir)) => (Observed::Tree(pid), dir),
            Err(why) => (Observed::Unobserved(why), PathBuf::new()),
        };
        let driver = MysqlDriver::new(
            MyEndpoint::Url(url.clone()),
            target.prepared,
            !sql_mode.contains("NO_BACKSLASH_ESCAPES"),
        );
        Ok(Box::new(MyExisting {
            driver: Arc::new(driver),
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

/// The server's PID on this host and its data directory, or why they are not to be found.
fn find_server(admin: &mut MyConn) -> Result<(u32, PathBuf), String> {
    let elsewhere = "the server runs on another host, in a container or in another PID namespace";
    let pid_file = admin
        .first("SELECT @@pid_file")
        .ok()
        .flatten()
        .ok_or("the server did not say its pid_file")?;
    let datadir = admin
        .first("SELECT @@datadir")
        .ok()
        .flatten()
        .map(PathBuf::from)
        .ok_or("the server did not say its datadir")?;
    // A relative pid_file is relative to the data directory.
    let path = datadir.join(&pid_file);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "its pid_file {} is not readable here ({e}; {elsewhere})",
            path.display()
        )
    })?;
    let pid: i32 = text
        .trim()
        .parse()
        .map_err(|_| format!("its pid_file {} holds no PID", path.display()))?;
    let p = Process::new(pid).map_err(|_| {
        format!("its pid_file says PID {pid}, which is not a process on this host ({elsewhere})")
    })?;
    let comm = p.stat().map(|s| s.comm).unwrap_or_default();
    if !(comm.starts_with("mysqld") || comm.starts_with("mariadbd")) {
        return Err(format!(
            "PID {pid} on this host is {comm}, not the server ({elsewhere})"
        ));
    }
    let cwd = p.cwd().map_err(|e| {
        format!("cannot read /proc/{pid}/cwd ({e}): run dbdelta as root or as the server's user")
    })?;
    if !same_dir(&cwd, &datadir) {
        return Err(format!(
            "PID {pid} on this host runs in {}, not in the server's datadir {} ({elsewhere})",
            cwd.display(),
            datadir.display()
        ));
    }
    Ok((pid as u32, cwd))
}

fn same_dir(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(a) == canon(b)
}

impl Server for MyExisting {
    fn driver(&self) -> Arc<dyn Driver> {
        self.driver.clone()
    }

    fn started(&self) -> &Started {
        &self.started
    }

    fn observed(&self) -> Observed {
        self.observed.clone()
    }

    /// Data and index bytes of the database's tables, as the server's statistics say.
    fn db_size(&self) -> Option<u64> {
        let mut admin = self.admin.lock().ok()?;
        admin
            .first(
                "SELECT SUM(data_length + index_length) FROM information_schema.tables \
                 WHERE table_schema = DATABASE()",
            )
            .ok()??
            .parse()
            .ok()
    }

    fn postwrite(&self, tables: &[String], budget: Duration) -> Result<()> {
        let deadline = Instant::now() + budget;
        let mut admin = self.admin.lock().expect("admin lock");
        for t in tables {
            admin
                .query(&format!("ANALYZE TABLE {t}"))
                .with_context(|| format!("ANALYZE TABLE {t}"))?;
        }
        // No forced flush: that would change the server's global variables.
        crate::signals::sleep(deadline.saturating_duration_since(Instant::now()));
        Ok(())
    }

    fn release(&self, tables: &[String]) -> Result<()> {
        let mut admin = self.admin.lock().expect("admin lock");
        for t in tables {
            admin
                .query(&format!("DROP TABLE IF EXISTS {t}"))
                .with_context(|| format!("{}: DROP TABLE {t}", self.shown))?;
        }
        Ok(())
    }

    fn check_alive(&self) -> Result<()> {
        let mut admin = self.admin.lock().expect("admin lock");
        admin
            .query("SELECT 1")
            .map(|_| ())
            .with_context(|| format!("the server at {} does not answer", self.shown))
    }

    fn stop(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}
