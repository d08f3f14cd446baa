//! A private PostgreSQL server's lifecycle: finding the binaries, `initdb` as the server user
//! with a fresh password, the config (dbdelta's lines, then the target's), the socket's place,
//! start and readiness, and [`PgServer`]'s `Server` side through to the fast shutdown. Must
//! not: open client sessions for the workload (`session.rs`) or time anything.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::PgFamily;
use super::diagnostics::{build_flags, db_size, pg_background, read_back};
use super::postwrite::postwrite;
use super::session::{Connect, Endpoint, PgDriver};
use crate::engine::common::pgwire::PgConn;
use crate::engine::common::process::{self, ServerProcess};
use crate::engine::common::secret;
use crate::engine::{Background, Driver, Observed, Server, Started, TargetSpec};

/// How long start-up may take before we give up.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a fast shutdown may take before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// The binaries of one PostgreSQL installation.
#[derive(Debug, Clone)]
struct Binaries {
    postgres: PathBuf,
    initdb: PathBuf,
    major: u32,
}

fn major_of(postgres: &Path) -> Result<u32> {
    let out = Command::new(postgres)
        .arg("--version")
        .output()
        .with_context(|| format!("running {} --version", postgres.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
    let version = text
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .with_context(|| format!("{} --version said {text:?}", postgres.display()))?;
    let major = version.split('.').next().unwrap_or("").parse::<u32>();
    major.with_context(|| format!("cannot read a major version from {version:?}"))
}

fn find_binaries(bin: Option<&Path>) -> Result<Binaries> {
    let dir = match bin {
        Some(dir) => dir.to_path_buf(),
        None => {
            let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let major = e.file_name().to_str()?.parse::<u32>().ok()?;
                    let dir = e.path().join("bin");
                    dir.join("postgres").is_file().then_some((major, dir))
                })
                .collect();
            found.sort();
            match found.pop() {
                Some((_, dir)) => dir,
                None => bail!(
                    "no PostgreSQL server found: install one (apt-get install postgresql-15) or set `bin` to the folder holding `postgres` and `initdb`"
                ),
            }
        }
    };
    let postgres = dir.join("postgres");
    let initdb = dir.join("initdb");
    if !postgres.is_file() || !initdb.is_file() {
        bail!(
            "bin directory {} holds no PostgreSQL server (looked for {} and {}); point `bin` at the folder with `postgres` and `initdb`",
            dir.display(),
            postgres.display(),
            initdb.display()
        );
    }
    let major = major_of(&postgres)?;
    Ok(Binaries {
        postgres,
        initdb,
        major,
    })
}

/// The `postgres` binary of the installation in `bin` (`None`: Debian's).
pub(in crate::engine) fn server_binary(bin: Option<&Path>) -> Result<PathBuf> {
    Ok(find_binaries(bin)?.postgres)
}

/// Settings dbdelta appends to `postgresql.conf` before the target's own lines.
fn base_config(socket_dir: &Path, port: u16, listen: Option<&crate::engine::Listen>) -> String {
    let (what, addresses) = match listen {
        None => ("loopback", "127.0.0.1".to_string()),
        Some(l) => (
            "loopback, the remote client's link",
            format!("127.0.0.1,{}", l.address),
        ),
    };
    format!(
        "# dbdelta: listen on {what} and a unix socket in the data directory only\n\
         listen_addresses = '{addresses}'\n\
         port = {port}\n\
         unix_socket_directories = '{}'\n\
         unix_socket_permissions = 0700\n\
         max_connections = 200\n",
        socket_dir.display()
    )
}

/// The `pg_hba.conf` line that lets a remote target's client host in, with the password like
/// every other connection.
fn hba_line(listen: &crate::engine::Listen) -> String {
    let bits = if listen.client.contains(':') { 128 } else { 32 };
    format!(
        "# dbdelta: the remote client\nhost all all {}/{bits} scram-sha-256\n",
        listen.client
    )
}

/// Longest socket path the server can bind (`sun_path` holds 108 bytes with the NUL).
pub(super) const MAX_SOCKET_PATH: usize = 107;

/// The directory of the server's unix socket: the data directory, unless the socket's path
/// there would be too long to bind; then the temporary directory (the server removes its
/// `.s.PGSQL.<port>` files there at shutdown; the port is this server's alone).
pub(super) fn socket_dir(data_dir: &Path, port: u16) -> PathBuf {
    let socket = data_dir.join(format!(".s.PGSQL.{port}"));
    match socket.as_os_str().len() > MAX_SOCKET_PATH {
        true => std::env::temp_dir(),
        false => data_dir.to_path_buf(),
    }
}

/// A started PostgreSQL server.
pub struct PgServer {
    started: Started,
    log: PathBuf,
    process: Mutex<ServerProcess>,
    driver: Arc<PgDriver>,
    admin: Mutex<PgConn>,
    /// The port a remote client reaches, when the target listens for one.
    tcp_port: Option<u16>,
    /// `<data_dir>.password`, removed when the server goes.
    _password_file: secret::PrivateFile,
}

impl PgServer {
    pub fn start(target: &TargetSpec, data_dir: &Path, log: &Path) -> Result<Box<dyn Server>> {
        Ok(Box::new(
            Self::start_server(target, data_dir, log)
                .with_context(|| format!("target {}: PostgreSQL did not start", target.name))?,
        ))
    }

    fn start_server(target: &TargetSpec, data_dir: &Path, log: &Path) -> Result<PgServer> {
        // Absolute: the server resolves relative paths (the socket directory) from the data dir.
        let data_dir = &std::path::absolute(data_dir)?;
        let bins = find_binaries(target.bin.as_deref()).map_err(|e| match &target.version {
            Some(v) => e.context(format!("postgres@{v} was not fetched into the cache")),
            None => e,
        })?;
        let user = process::server_user()?;
        // The log is ours; the server user writes to it through the descriptors we hand over.
        std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        if let Some(u) = &user {
            process::check_reachable(data_dir, u)?;
            process::chown_tree(data_dir, u)?;
        }
        let password = secret::new_password();
        let how = (password.as_str(), target.restored);
        ready_cluster(&bins, data_dir, user.as_ref(), log, how)?;
        let port = match target.port {
            Some(p) => {
                process::check_port_free(p)?;
                p
            }
            None => process::free_port()?,
        };
        let password_file = secret::password_file(data_dir, &password)?;
        let endpoint = Endpoint {
            socket_dir: socket_dir(data_dir, port),
            port,
            password,
        };
        write_config(target, data_dir, &endpoint, user.as_ref())?;
        let mut cmd = Command::new(&bins.postgres);
        cmd.arg("-D")
            .arg(data_dir)
            .args(&target.args)
            .args(counting_args(target))
            .envs(&target.env);
        let mut server = ServerProcess::spawn(
            cmd,
            &target.wrap,
            user.as_ref(),
            target.server_cpus.as_ref(),
            log,
            "postgres",
        )?;
        let mut admin = None;
        server.wait_ready(START_TIMEOUT, || match endpoint.connect() {
            Ok(c) => {
                admin = Some(c);
                true
            }
            Err(_) => false,
        })?;
        let mut admin = admin.context("connected but lost the admin connection")?;
        let (version, settings) = read_back(&mut admin)?;
        Ok(PgServer {
            started: Started {
                version,
                settings,
                data_dir: data_dir.to_path_buf(),
            },
            log: log.to_path_buf(),
            process: Mutex::new(server),
            driver: Arc::new(PgDriver::new(Connect::Own(endpoint), target.prepared)),
            admin: Mutex::new(admin),
            tcp_port: target.listen.as_ref().map(|_| port),
            _password_file: password_file,
        })
    }
}

/// The cluster in `data_dir` as this start needs it, `password` set for `postgres`: made by
/// `initdb`, or, restored from a saved load, reused. The password crosses in a 0600 file
/// beside the data directory, removed right after.
fn ready_cluster(
    bins: &Binaries,
    data_dir: &Path,
    user: Option<&process::ServerUser>,
    log: &Path,
    (password, restored): (&str, bool),
) -> Result<()> {
    let (ext, text) = match restored {
        false => ("pw", format!("{password}\n")),
        true => (
            "pw.sql",
            format!("ALTER USER postgres PASSWORD '{password}';\n"),
        ),
    };
    let beside = PathBuf::from(format!("{}.{ext}", data_dir.display()));
    let file = secret::PrivateFile::create(&beside, &text, user)?;
    let tool = match restored {
        false => init_cluster(bins, data_dir, file.path()),
        true => reuse_cluster(bins, data_dir, file.path())?,
    };
    let (cmd, input, what) = tool;
    process::run_tool_with_input(cmd, input, user, log, what)
}

/// `initdb` with the password in `pwfile`: SCRAM-SHA-256 for every connection (initdb then
/// also sets `password_encryption` so, from PostgreSQL 10 on), UTF-8, the C locale.
fn init_cluster(
    bins: &Binaries,
    data_dir: &Path,
    pwfile: &Path,
) -> (Command, std::process::Stdio, &'static str) {
    let mut initdb = Command::new(&bins.initdb);
    initdb.arg("-D").arg(data_dir).args([
        "-U",
        "postgres",
        "--auth=scram-sha-256",
        "--encoding=UTF8",
        "--locale=C",
    ]);
    initdb.arg(format!("--pwfile={}", pwfile.display()));
    if bins.major >= 18 {
        // Parity with 12–17, whose initdb does not enable checksums by default.
        initdb.arg("--no-data-checksums");
    }
    (initdb, std::process::Stdio::null(), "initdb")
}

/// A data directory restored from a saved load: its `postgresql.conf` cut back to initdb's
/// lines (the saving cell's socket and port follow them), and a single-user backend (no
/// socket: nobody else can connect meanwhile) to run the password statement in `sql`.
fn reuse_cluster(
    bins: &Binaries,
    data_dir: &Path,
    sql: &Path,
) -> Result<(Command, std::process::Stdio, &'static str)> {
    let conf = data_dir.join("postgresql.conf");
    let text = std::fs::read_to_string(&conf).context("reading postgresql.conf")?;
    let cut = text.find(BASE_CONFIG_MARK).unwrap_or(text.len());
    std::fs::write(&conf, &text[..cut]).context("writing postgresql.conf")?;
    let mut single = Command::new(&bins.postgres);
    single
        .args(["--single", "-D"])
        .arg(data_dir)
        .arg("postgres");
    let input = std::fs::File::open(sql).context("opening the password statement")?;
    Ok((single, input.into(), "postgres --single"))
}

/// The first line dbdelta appends to `postgresql.conf` (where a restored one is cut).
const BASE_CONFIG_MARK: &str = "# dbdelta: listen on";

/// initdb's `postgresql.conf` with dbdelta's lines, then the target's.
fn write_config(
    target: &TargetSpec,
    data_dir: &Path,
    endpoint: &Endpoint,
    user: Option<&process::ServerUser>,
) -> Result<()> {
    let conf = data_dir.join("postgresql.conf");
    let mut text = std::fs::read_to_string(&conf).context("reading postgresql.conf")?;
    text.push_str(&base_config(
        &endpoint.socket_dir,
        endpoint.port,
        target.listen.as_ref(),
    ));
    text.push_str("# target settings\n");
    for line in &target.settings {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(&conf, text).context("writing postgresql.conf")?;
    if let Some(u) = user {
        process::chown_tree(&conf, u)?;
    }
    if let Some(l) = &target.listen {
        let hba = data_dir.join("pg_hba.conf");
        let mut text = std::fs::read_to_string(&hba).context("reading pg_hba.conf")?;
        text.push_str(&hba_line(l));
        std::fs::write(&hba, text).context("writing pg_hba.conf")?;
    }
    Ok(())
}

/// The counting server's (`counting`, or under callgrind: `wrap` set) settings beyond the target's:
/// autovacuum off. It starts by the clock, and what it cleans changes what the next statements
/// cost, so two identical targets counted apart (PostgreSQL 15, `--quick`: update-nonindex
/// 118,013 against 83,706 instructions/op, write-only ±194%); without it they agree within
/// 0.05% on every write step but delete (1.9%). The postwrite cleanup's VACUUM still runs where
/// the catalog has it, with counting off.
fn counting_args(target: &TargetSpec) -> Vec<String> {
    match target.counting || !target.wrap.is_empty() {
        false => Vec::new(),
        true => vec!["-c".into(), "autovacuum=off".into()],
    }
}

impl Server for PgServer {
    fn background(&self) -> Background {
        pg_background(&mut self.admin.lock().expect("admin lock"))
    }

    fn driver(&self) -> Arc<dyn Driver> {
        self.driver.clone()
    }

    fn started(&self) -> &Started {
        &self.started
    }

    fn client_url(&self) -> Option<crate::engine::connect::ConnectUrl> {
        let Connect::Own(e) = &self.driver.endpoint else {
            return None;
        };
        Some(crate::engine::connect::ConnectUrl {
            engine: crate::engine::EngineKind::of(&PgFamily),
            user: "postgres".into(),
            password: Some(e.password.clone()),
            address: crate::engine::connect::Address::Unix(e.socket_dir.clone()),
            port: e.port,
            database: "postgres".into(),
        })
    }

    fn tcp_endpoint(&self) -> Option<crate::engine::TcpEndpoint> {
        let Connect::Own(e) = &self.driver.endpoint else {
            return None;
        };
        Some(crate::engine::TcpEndpoint {
            port: self.tcp_port?,
            user: "postgres".into(),
            password: e.password.clone(),
            database: "postgres".into(),
            backslash_escapes: false,
        })
    }

    fn observed(&self) -> Observed {
        Observed::Tree(self.process.lock().expect("process lock").pid())
    }

    fn started_pid(&self) -> Option<u32> {
        Some(self.process.lock().expect("process lock").pid())
    }

    fn db_size(&self) -> Option<u64> {
        db_size(&mut *self.admin.lock().ok()?)
    }

    fn build_flags(&self) -> Option<String> {
        build_flags(&mut *self.admin.lock().ok()?)
    }

    fn postwrite(&self, tables: &[String], budget: Duration) -> Result<()> {
        postwrite(
            &mut self.admin.lock().expect("admin lock"),
            tables,
            budget,
            true,
        )
    }

    fn log_path(&self) -> Option<PathBuf> {
        Some(self.log.clone())
    }

    fn check_alive(&self) -> Result<()> {
        let mut p = self.process.lock().expect("process lock");
        if p.alive() {
            Ok(())
        } else {
            bail!(
                "the PostgreSQL server (pid {}) is gone; last lines of {}:\n{}",
                p.pid(),
                self.log.display(),
                crate::sys::log_tail(&self.log, 20)
            )
        }
    }

    fn stop(self: Box<Self>) -> Result<()> {
        let PgServer { process, admin, .. } = *self;
        drop(admin);
        let mut p = process.into_inner().expect("process lock");
        // SIGINT = fast shutdown.
        p.stop(libc::SIGINT, STOP_TIMEOUT)
    }
}
