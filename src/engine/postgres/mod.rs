//! PostgreSQL: a server of our own per target, driven over its unix socket.
//!
//! Owns: finding the binaries (`bin`, else Debian's newest `/usr/lib/postgresql/N/bin`),
//! `initdb` as the unprivileged server user with SCRAM-SHA-256 authentication and a fresh
//! random password for `postgres` (held in memory; the socket is the server account's alone),
//! the config (dbdelta's lines, then the target's),
//! start and readiness, version and `SHOW ALL`, `pg_database_size`, the postwrite cleanup
//! (`VACUUM (ANALYZE)` per table, `CHECKPOINT`, then wait out the budget), fast shutdown; and
//! the client: dbdelta's own wire client (`pgwire`) with server-side prepared statements (or
//! literal SQL over the simple protocol when switched off), `COPY` for loads, errors classified
//! by SQLSTATE. A server that is already running (`connect`) is [`existing`]'s.
//! Must not: time anything or count operations.

pub mod existing;
mod family;
pub use family::PgFamily;
pub mod pgwire;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::engine::common::process::{self, ServerProcess};
use crate::engine::common::secret;
use crate::engine::{
    Background, DbError, Dialect, Driver, Observed, Param, RowSink, RowSource, Server, Session,
    StmtId, TargetSpec,
};
use pgwire::PgConn;

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
pub(super) fn server_binary(bin: Option<&Path>) -> Result<PathBuf> {
    Ok(find_binaries(bin)?.postgres)
}

/// Settings that name this cell's own files, socket or port: they differ between any two runs,
/// so recording them would only hide the differences that matter.
const PER_CELL_SETTINGS: &[&str] = &[
    "config_file",
    "data_directory",
    "hba_file",
    "ident_file",
    "external_pid_file",
    "unix_socket_directories",
    "port",
];

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

/// A driver for a server reached over TCP by `url` (one this process did not start).
pub fn tcp_driver(
    url: crate::engine::common::connect::ConnectUrl,
    prepared: bool,
) -> Arc<dyn Driver> {
    Arc::new(PgDriver::new(Connect::Url(url), prepared))
}

/// Longest socket path the server can bind (`sun_path` holds 108 bytes with the NUL).
const MAX_SOCKET_PATH: usize = 107;

/// The directory of the server's unix socket: the data directory, unless the socket's path
/// there would be too long to bind; then the temporary directory (the server removes its
/// `.s.PGSQL.<port>` files there at shutdown; the port is this server's alone).
fn socket_dir(data_dir: &Path, port: u16) -> PathBuf {
    let socket = data_dir.join(format!(".s.PGSQL.{port}"));
    match socket.as_os_str().len() > MAX_SOCKET_PATH {
        true => std::env::temp_dir(),
        false => data_dir.to_path_buf(),
    }
}

/// `$1`-style SQL with the parameters written in as literals (for `prepared = false`).
fn inline_params(sql: &str, params: &[Param<'_>], out: &mut String) {
    out.clear();
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let n: usize = sql[i + 1..j].parse().unwrap_or(0);
            match params.get(n.wrapping_sub(1)) {
                Some(Param::Int(v)) => {
                    use std::fmt::Write as _;
                    let _ = write!(out, "{v}");
                }
                Some(Param::Text(s)) => {
                    out.push('\'');
                    for ch in s.chars() {
                        if ch == '\'' {
                            out.push('\'');
                        }
                        out.push(ch);
                    }
                    out.push('\'');
                }
                None => out.push_str(&sql[i..j]),
            }
            i = j;
        } else {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'$' {
                i += 1;
            }
            out.push_str(&sql[start..i]);
        }
    }
}

/// Where and as whom clients connect: `postgres` with this server's password.
#[derive(Clone)]
pub(super) struct Endpoint {
    socket_dir: PathBuf,
    port: u16,
    password: String,
}

impl Endpoint {
    fn connect(&self) -> Result<PgConn, DbError> {
        PgConn::connect(
            &self.socket_dir,
            self.port,
            "postgres",
            "postgres",
            Some(&self.password),
        )
    }
}

/// Where clients connect: a server of dbdelta's own, or a `connect` URL.
pub(super) enum Connect {
    Own(Endpoint),
    Url(crate::engine::common::connect::ConnectUrl),
}

impl Connect {
    fn connect(&self) -> Result<PgConn, DbError> {
        match self {
            Connect::Own(e) => e.connect(),
            Connect::Url(u) => PgConn::connect_url(u),
        }
    }
}

/// Connects clients to one server.
pub struct PgDriver {
    endpoint: Connect,
    prepared: bool,
}

impl PgDriver {
    pub(super) fn new(endpoint: Connect, prepared: bool) -> PgDriver {
        PgDriver { endpoint, prepared }
    }
}

impl Driver for PgDriver {
    fn connect(&self) -> Result<Box<dyn Session>, DbError> {
        Ok(Box::new(PgSession {
            conn: self.endpoint.connect()?,
            prepared: self.prepared,
            statements: Vec::new(),
            sql: String::new(),
        }))
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }
}

/// One connection. Prepared statements are named `s0`, `s1`, ... on the server; with prepared
/// statements off, `statements` holds the SQL texts instead.
pub struct PgSession {
    conn: PgConn,
    prepared: bool,
    statements: Vec<String>,
    /// Reused buffer for literal SQL when prepared statements are off.
    sql: String,
}

impl Session for PgSession {
    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        let id = self.statements.len();
        if self.prepared {
            let name = format!("s{id}");
            self.conn.prepare(&name, sql)?;
            self.statements.push(name);
        } else {
            self.statements.push(sql.to_string());
        }
        Ok(id)
    }

    fn execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<u64, DbError> {
        if self.prepared {
            return self.conn.execute(&self.statements[stmt], params);
        }
        let mut sql = std::mem::take(&mut self.sql);
        inline_params(&self.statements[stmt], params, &mut sql);
        let r = self.conn.simple(&sql);
        self.sql = sql;
        r
    }

    fn execute_sql(&mut self, sql: &str) -> Result<u64, DbError> {
        self.conn.simple(sql)
    }

    fn query_strings(&mut self, sql: &str) -> Result<Vec<String>, DbError> {
        let rows = self.conn.rows(sql)?;
        Ok(rows
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .next()
                    .flatten()
                    .unwrap_or_else(|| "NULL".into())
            })
            .collect())
    }

    /// The backend's PID (a backend is one process of one thread: perf attaches to it by it).
    fn server_task(&mut self) -> Option<u32> {
        let pid = self.conn.rows("SELECT pg_backend_pid()").ok()?;
        pid.first()?.first()?.as_deref()?.parse().ok()
    }

    fn bulk_load(&mut self, table: &str, source: &mut dyn RowSource) -> Result<u64, DbError> {
        let cols = source.columns().join(", ");
        let has_id = source.columns().contains(&"id");
        let total = source.rows();
        let mut next = 0u64;
        let n = self
            .conn
            .copy_in(&format!("COPY {table} ({cols}) FROM STDIN"), |buf| {
                if next == total {
                    return false;
                }
                let mut sink = CopySink { buf, first: true };
                source.write_row(next, &mut sink);
                sink.buf.push(b'\n');
                next += 1;
                next < total
            })?;
        if has_id {
            // Ids were given explicitly: move the serial's sequence past them so that later
            // inserts that rely on it do not collide.
            self.conn.simple(&format!(
                "SELECT setval(pg_get_serial_sequence('{table}', 'id'), max(id)) FROM {table} \
                 WHERE pg_get_serial_sequence('{table}', 'id') IS NOT NULL"
            ))?;
        }
        Ok(n)
    }
}

/// Writes rows in COPY's text format.
struct CopySink<'a> {
    buf: &'a mut Vec<u8>,
    first: bool,
}

impl CopySink<'_> {
    fn sep(&mut self) {
        if !self.first {
            self.buf.push(b'\t');
        }
        self.first = false;
    }
}

impl RowSink for CopySink<'_> {
    fn int(&mut self, value: i64) {
        self.sep();
        let _ = write!(self.buf, "{value}");
    }

    fn text(&mut self, value: &str) {
        self.sep();
        for b in value.bytes() {
            match b {
                b'\\' => self.buf.extend_from_slice(b"\\\\"),
                b'\t' => self.buf.extend_from_slice(b"\\t"),
                b'\n' => self.buf.extend_from_slice(b"\\n"),
                b'\r' => self.buf.extend_from_slice(b"\\r"),
                _ => self.buf.push(b),
            }
        }
    }
}

/// A started PostgreSQL server.
pub struct PgServer {
    data_dir: PathBuf,
    log: PathBuf,
    process: Mutex<ServerProcess>,
    driver: Arc<PgDriver>,
    admin: Mutex<PgConn>,
    version: String,
    settings: BTreeMap<String, String>,
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
            data_dir: data_dir.to_path_buf(),
            log: log.to_path_buf(),
            process: Mutex::new(server),
            driver: Arc::new(PgDriver::new(Connect::Own(endpoint), target.prepared)),
            admin: Mutex::new(admin),
            version,
            settings,
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

/// The server's version string and its settings (less the ones naming this cell's files).
pub(super) fn read_back(admin: &mut PgConn) -> Result<(String, BTreeMap<String, String>)> {
    let first = |rows: Vec<Vec<Option<String>>>| {
        rows.into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten())
    };
    let version = first(admin.rows("SELECT version()")?).context("SELECT version()")?;
    let mut settings = BTreeMap::new();
    for row in admin.rows("SELECT name, setting FROM pg_settings")? {
        let mut cols = row.into_iter();
        let (Some(Some(name)), Some(value)) = (cols.next(), cols.next()) else {
            continue;
        };
        if !PER_CELL_SETTINGS.contains(&name.as_str()) {
            settings.insert(name, value.unwrap_or_default());
        }
    }
    Ok((version, settings))
}

/// `pg_database_size` of the connection's database.
pub(super) fn db_size(admin: &mut PgConn) -> Option<u64> {
    let rows = admin
        .rows("SELECT pg_database_size(current_database())")
        .ok()?;
    rows.first()?.first()?.as_deref()?.parse().ok()
}

/// The postwrite's `VACUUM` options for a server of `server_version_num` `version`:
/// INDEX_CLEANUP is PostgreSQL 12's; 10 and 11 know no such option (and clean up anyway).
fn vacuum_options(version: Option<u32>) -> &'static str {
    match version {
        Some(v) if v < 120_000 => "ANALYZE",
        _ => "ANALYZE, INDEX_CLEANUP ON",
    }
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

/// `VACUUM (ANALYZE)` each table, `CHECKPOINT` (an error only when `checkpoint_required`: a
/// `connect` user may lack the right), then wait out the budget so background writers settle,
/// as the reference does.
pub(super) fn postwrite(
    admin: &mut PgConn,
    tables: &[String],
    budget: Duration,
    checkpoint_required: bool,
) -> Result<()> {
    let deadline = Instant::now() + budget;
    let options = vacuum_options(server_version_num(admin));
    for t in tables {
        admin
            .simple(&format!("VACUUM ({options}) {t}"))
            .with_context(|| format!("VACUUM (ANALYZE) {t}"))?;
    }
    let checkpoint = admin.simple("CHECKPOINT");
    if checkpoint_required {
        checkpoint.context("CHECKPOINT")?;
    }
    // Cut short by a terminating signal: the run is ending, nothing is measured after this.
    crate::signals::sleep(deadline.saturating_duration_since(Instant::now()));
    Ok(())
}

/// `server_version_num` of the connection's server (`None`: it could not be read).
fn server_version_num(admin: &mut PgConn) -> Option<u32> {
    (admin.rows("SHOW server_version_num").ok())
        .and_then(|r| r.first()?.first()?.as_deref()?.parse::<u32>().ok())
}

/// The query for the buffers the checkpointer and the background writer have written, on a
/// server of `server_version_num` `version`: `pg_stat_checkpointer` exists from PostgreSQL 17
/// (which moved `buffers_checkpoint` there as `buffers_written`); before, `pg_stat_bgwriter`
/// holds both. Asking for a view the server lacks puts an ERROR in its log.
fn buffers_written_sql(version: u32) -> &'static str {
    if version >= 170_000 {
        "SELECT (SELECT buffers_written FROM pg_stat_checkpointer) \
         + (SELECT buffers_clean FROM pg_stat_bgwriter)"
    } else {
        "SELECT buffers_checkpoint + buffers_clean FROM pg_stat_bgwriter"
    }
}

/// PostgreSQL's account of its background work: autovacuum workers running, and the buffers
/// written so far by the checkpointer and the background writer (from the views the server's
/// version has). A read that fails is `None`.
pub(super) fn pg_background(admin: &mut PgConn) -> Background {
    let version = server_version_num(admin);
    let mut number = |sql: &str| -> Option<u64> {
        let rows = admin.rows(sql).ok()?;
        rows.into_iter()
            .next()?
            .into_iter()
            .next()??
            .trim()
            .parse()
            .ok()
    };
    let autovacuum_workers =
        number("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'");
    let buffers_written = version.and_then(|v| number(buffers_written_sql(v)));
    Background {
        autovacuum_workers,
        buffers_written,
        ..Default::default()
    }
}

impl Server for PgServer {
    fn background(&self) -> Background {
        pg_background(&mut self.admin.lock().expect("admin lock"))
    }

    fn driver(&self) -> Arc<dyn Driver> {
        self.driver.clone()
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

    fn version(&self) -> String {
        self.version.clone()
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }

    fn observed(&self) -> Observed {
        Observed::Tree(self.process.lock().expect("process lock").pid())
    }

    fn started_pid(&self) -> Option<u32> {
        Some(self.process.lock().expect("process lock").pid())
    }

    fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    fn db_size(&self) -> Option<u64> {
        db_size(&mut *self.admin.lock().ok()?)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgresql_10_and_11_vacuum_without_index_cleanup() {
        // PostgreSQL 10.23 refused the option: 42601 unrecognized VACUUM option "index_cleanup".
        assert_eq!(vacuum_options(Some(100_023)), "ANALYZE");
        assert_eq!(vacuum_options(Some(110_022)), "ANALYZE");
        assert_eq!(vacuum_options(Some(120_000)), "ANALYZE, INDEX_CLEANUP ON");
        assert_eq!(vacuum_options(Some(170_010)), "ANALYZE, INDEX_CLEANUP ON");
        assert_eq!(vacuum_options(None), "ANALYZE, INDEX_CLEANUP ON");
    }

    #[test]
    fn checkpointer_buffers_come_from_the_views_the_version_has() {
        // PostgreSQL 15 has no pg_stat_checkpointer: asking logged an ERROR twice per cell.
        for v in [100_023, 150_014, 160_006] {
            assert!(
                !buffers_written_sql(v).contains("pg_stat_checkpointer"),
                "{v}"
            );
            assert!(buffers_written_sql(v).contains("buffers_checkpoint"), "{v}");
        }
        // 17 moved buffers_checkpoint out of pg_stat_bgwriter.
        assert!(!buffers_written_sql(170_002).contains("buffers_checkpoint"));
        assert!(buffers_written_sql(170_002).contains("pg_stat_checkpointer"));
    }

    #[test]
    fn the_socket_leaves_a_data_directory_too_deep_to_bind_it() {
        let short = Path::new("/work/run/pg.c1.r1");
        assert_eq!(socket_dir(short, 5432), short);
        let deep = PathBuf::from(format!("/work/{}/pg.c1.r1", "d".repeat(90)));
        assert_eq!(socket_dir(&deep, 5432), std::env::temp_dir());
        assert!(
            std::env::temp_dir()
                .join(".s.PGSQL.65535")
                .as_os_str()
                .len()
                <= MAX_SOCKET_PATH
        );
    }

    #[test]
    fn inlines_parameters_as_literals() {
        let mut out = String::new();
        inline_params(
            "UPDATE t SET c=$1 WHERE id=$2 AND k=$10",
            &[Param::Text("it's"), Param::Int(7)],
            &mut out,
        );
        assert_eq!(out, "UPDATE t SET c='it''s' WHERE id=7 AND k=$10");
    }

    #[test]
    fn copy_sink_escapes_text() {
        let mut buf = Vec::new();
        let mut s = CopySink {
            buf: &mut buf,
            first: true,
        };
        s.int(5);
        s.text("a\tb\\c");
        assert_eq!(buf, b"5\ta\\tb\\\\c");
    }
}
