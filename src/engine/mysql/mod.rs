//! MySQL and MariaDB (one engine, one protocol): a private server per target.
//!
//! Owns: finding the server and install-db binaries (the target's `bin`, else Debian's
//! MariaDB), the config file (dbdelta's defaults, then the target's settings), initialising the
//! data directory and starting the server as the unprivileged server user on a unix socket and
//! a free loopback port (`root@localhost` the only account, with a fresh random password set by
//! `--init-file` before the first connection; the data directory and the socket's directory
//! the server account's alone), recording version and effective settings, the InnoDB "postwrite"
//! cleanup (`ANALYZE TABLE`, forced dirty-page flush, settings restored), and the client side:
//! sessions over the unix socket with server-side prepared statements (or SQL text with escaped
//! literals when `prepared = false`), multi-row-insert bulk loads, error classification.
//! Must not: time anything or count operations (the runner does), or invent suite SQL
//! (`workload/sql.rs` does).

pub mod existing;
mod family;
pub use family::MysqlFamily;
pub mod flavor;
pub mod mywire;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::engine::common::process::{self, ServerProcess, ServerUser};
use crate::engine::common::secret;
use crate::engine::{
    Background, DbError, Dialect, Driver, Observed, Param, RowSink, RowSource, Server, Session,
    StmtId, TargetSpec,
};
use flavor::{Build, Init, Storage, find_binaries, render_config};
use mywire::{MyConn, Stmt};

/// The database the suite's tables live in.
const DB_NAME: &str = "dbdelta";
/// Config file written into the data directory.
const CONFIG_NAME: &str = "dbdelta.cnf";
/// Unix socket, inside the data directory when the path is short enough.
const SOCKET_NAME: &str = "mysqld.sock";
/// Longest socket path we use (`sun_path` holds 108 bytes including the NUL).
const MAX_SOCKET_PATH: usize = 100;
/// How long the server may take to accept connections, and to stop.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_TIMEOUT: Duration = Duration::from_secs(60);
/// Bulk load without local files: rows per multi-row INSERT, INSERTs per transaction.
const ROWS_PER_INSERT: usize = 1000;
const INSERTS_PER_COMMIT: usize = 10;
/// Bulk load with `LOAD DATA LOCAL INFILE`: rows per statement (all in one transaction), rows
/// formatted per call of the data source.
const INFILE_ROWS_PER_STATEMENT: u64 = 100_000;
const INFILE_ROWS_PER_FILL: u64 = 256;
/// Column character sets in which ASCII text is the same bytes as in UTF-8.
const ASCII_CHARSETS: &[&str] = &["latin1", "ascii", "utf8mb3", "utf8"];
/// How often postwrite polls the number of dirty pages.
const FLUSH_POLL: Duration = Duration::from_millis(100);

/// The InnoDB settings postwrite forces (docs/workloads.md, The postwrite cleanup), in the order
/// they are set; they are restored in reverse order. A server without one skips it.
const FLUSH_SETTINGS: &[(&str, &str)] = &[
    ("innodb_max_dirty_pages_pct_lwm", "1"),
    ("innodb_max_dirty_pages_pct", "1"),
    ("innodb_idle_flush_pct", "100"),
];

/// MyRocks' postwrite (docs/workloads.md, The postwrite cleanup): how often to look for running
/// compactions, how long to let the memtable flush settle, how to see compactions (Facebook's MySQL
/// lists the running ones; MariaDB only says per column family whether one is pending), and how to
/// compact L0 (Facebook's variable, then MariaDB's).
const ROCKSDB_COMPACTION_POLL: Duration = Duration::from_secs(10);
const ROCKSDB_FLUSH_WAIT: Duration = Duration::from_secs(20);
const ROCKSDB_COMPACTIONS: &[&str] = &[
    "SELECT COUNT(*) FROM information_schema.rocksdb_active_compaction_stats",
    "SELECT CAST(COALESCE(SUM(VALUE), 0) AS UNSIGNED) FROM information_schema.ROCKSDB_CFSTATS \
     WHERE STAT_TYPE = 'COMPACTION_PENDING'",
];
const ROCKSDB_LZERO: &[&str] = &[
    "rocksdb_compact_lzero_now",
    "rocksdb_force_flush_memtable_and_lzero_now",
];
/// MyRocks' files, inside the data directory (`rocksdb_datadir`'s default).
const ROCKSDB_DIR: &str = "#rocksdb";

/// Server error codes the engine treats specially (retryable and reconnect codes: `mywire`).
const ER_UNKNOWN_SYSTEM_VARIABLE: u16 = 1193;
const ER_UNKNOWN_TABLE: u16 = 1109;
const ER_UNSUPPORTED_PS: u16 = 1295;
/// Local files refused: by the server's `local_infile = OFF` (MariaDB: 1148, 4166; MySQL 8:
/// 3948). The load then goes as INSERTs.
const LOCAL_INFILE_REFUSED: &[u16] = &[1148, 4166, 3948];

// ---------------------------------------------------------------------------------------------
// Errors and literals

/// Append `s` as a quoted string literal. Quotes are doubled (valid in every SQL mode); with
/// backslash escapes on (the default `sql_mode`), backslashes and control characters are
/// escaped as `mysql_real_escape_string` does.
fn push_literal(out: &mut String, s: &str, backslash_escapes: bool) {
    out.push('\'');
    for ch in s.chars() {
        match ch {
            '\'' => out.push_str("''"),
            '\\' if backslash_escapes => out.push_str("\\\\"),
            '\0' if backslash_escapes => out.push_str("\\0"),
            '\n' if backslash_escapes => out.push_str("\\n"),
            '\r' if backslash_escapes => out.push_str("\\r"),
            '\x1a' if backslash_escapes => out.push_str("\\Z"),
            c => out.push(c),
        }
    }
    out.push('\'');
}

fn push_param(out: &mut String, p: &Param<'_>, backslash_escapes: bool) {
    match *p {
        Param::Int(v) => {
            let _ = write!(out, "{v}");
        }
        Param::Text(s) => push_literal(out, s, backslash_escapes),
    }
}

/// Render `parts` (the SQL split at its `?` placeholders) with `params` into `out`.
fn render_text(
    out: &mut String,
    parts: &[String],
    params: &[Param<'_>],
    backslash_escapes: bool,
) -> Result<(), DbError> {
    if parts.len() != params.len() + 1 {
        return Err(DbError::fatal(format!(
            "statement has {} placeholders but {} parameters were given",
            parts.len() - 1,
            params.len()
        )));
    }
    out.clear();
    out.push_str(&parts[0]);
    for (p, part) in params.iter().zip(&parts[1..]) {
        push_param(out, p, backslash_escapes);
        out.push_str(part);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Driver and session

/// Opens client connections over the server's unix socket to the `dbdelta` database.
pub struct MysqlDriver {
    endpoint: MyEndpoint,
    prepared: bool,
    /// False when the server's `sql_mode` has NO_BACKSLASH_ESCAPES.
    backslash_escapes: bool,
}

/// Where clients connect: the socket of a server of dbdelta's own (as root with the server's
/// password, to its database), or a `connect` URL.
pub(super) enum MyEndpoint {
    Own { socket: PathBuf, password: String },
    Url(crate::engine::common::connect::ConnectUrl),
}

impl MysqlDriver {
    pub(super) fn new(endpoint: MyEndpoint, prepared: bool, backslash_escapes: bool) -> Self {
        MysqlDriver {
            endpoint,
            prepared,
            backslash_escapes,
        }
    }
}

/// The user dbdelta logs in as on its own servers (with the server's random password).
const USER: &str = "root";
/// Access denied: the server is up, the password did not take.
const ER_ACCESS_DENIED: &[u16] = &[1045, 1698];

impl Driver for MysqlDriver {
    fn connect(&self) -> Result<Box<dyn Session>, DbError> {
        let conn = match &self.endpoint {
            MyEndpoint::Own { socket, password } => {
                MyConn::connect(socket, USER, Some(password), Some(DB_NAME))?
            }
            MyEndpoint::Url(url) => MyConn::connect_url(url)?,
        };
        Ok(Box::new(MysqlSession {
            conn,
            prepared: self.prepared,
            backslash_escapes: self.backslash_escapes,
            statements: Vec::new(),
            sql: String::with_capacity(4096),
        }))
    }

    fn dialect(&self) -> Dialect {
        Dialect::Mysql
    }
}

/// A statement of one session.
enum Prepared {
    /// A server-side prepared statement.
    Server(Stmt),
    /// SQL text split at its `?` placeholders, sent with the parameters as literals.
    Text(Vec<String>),
}

/// One connection, used by one thread.
pub struct MysqlSession {
    conn: MyConn,
    prepared: bool,
    backslash_escapes: bool,
    statements: Vec<(String, Prepared)>,
    /// Reused buffer for SQL text.
    sql: String,
}

impl MysqlSession {
    fn run_text(&mut self, sql: &str) -> Result<u64, DbError> {
        Ok(self.conn.query(sql)?)
    }

    /// The character set `LOAD DATA` declares for the rows of `table`, and whether the rows
    /// must then be ASCII. Declaring the columns' own single-byte set spares the server a
    /// conversion of every value (measured: a third of its CPU for a sysbench table in
    /// `latin1`); for ASCII text the two declarations mean the same bytes.
    fn infile_charset(&mut self, table: &str) -> Result<(String, bool), DbError> {
        let sets = self.conn.rows(&format!(
            "SELECT DISTINCT CHARACTER_SET_NAME FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{table}' \
             AND CHARACTER_SET_NAME IS NOT NULL"
        ))?;
        let sets: Vec<String> = sets
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten())
            .collect();
        Ok(match sets.as_slice() {
            [one] if ASCII_CHARSETS.contains(&one.as_str()) => (one.clone(), true),
            _ => ("utf8mb4".to_string(), false),
        })
    }

    /// The bulk load as `LOAD DATA LOCAL INFILE` fed from memory, in one transaction of
    /// statements of `INFILE_ROWS_PER_STATEMENT` rows. `Ok(None)` when nothing was loaded and
    /// the rows should go another way: the server refuses local files, or the declared
    /// character set needs ASCII and a value was not.
    fn load_infile(
        &mut self,
        table: &str,
        source: &mut dyn RowSource,
    ) -> Result<Option<u64>, DbError> {
        let (charset, ascii_only) = self.infile_charset(table)?;
        let sql = format!(
            "LOAD DATA LOCAL INFILE 'dbdelta-rows' INTO TABLE {table} CHARACTER SET {charset} ({})",
            source.columns().join(", ")
        );
        let total = source.rows();
        let mut sink = InfileSink {
            out: Vec::new(),
            first: true,
            non_ascii: false,
            itoa: itoa::Buffer::new(),
        };
        self.run_text("BEGIN")?;
        let mut i = 0u64;
        let mut loaded = 0u64;
        while i < total {
            let stop = total.min(i + INFILE_ROWS_PER_STATEMENT);
            let result = self.conn.load_local(&sql, |out| {
                std::mem::swap(&mut sink.out, out);
                let end = stop.min(i + INFILE_ROWS_PER_FILL);
                while i < end {
                    sink.first = true;
                    source.write_row(i, &mut sink);
                    sink.out.push(b'\n');
                    i += 1;
                }
                std::mem::swap(&mut sink.out, out);
                i < stop && !(ascii_only && sink.non_ascii)
            });
            let refused = match &result {
                Err(e) => e.code().is_some_and(|c| LOCAL_INFILE_REFUSED.contains(&c)),
                Ok(_) => ascii_only && sink.non_ascii,
            };
            if refused {
                self.run_text("ROLLBACK")?;
                return Ok(None);
            }
            match result {
                Ok(n) => loaded += n,
                Err(e) => {
                    let _ = self.run_text("ROLLBACK");
                    return Err(e.into());
                }
            }
        }
        self.run_text("COMMIT")?;
        if loaded != total {
            return Err(DbError::fatal(format!(
                "LOAD DATA loaded {loaded} of {total} rows into {table}"
            )));
        }
        Ok(Some(loaded))
    }

    /// The bulk load as multi-row `INSERT`s, a few per transaction.
    fn load_inserts(&mut self, table: &str, source: &mut dyn RowSource) -> Result<u64, DbError> {
        let head = format!(
            "INSERT INTO {table} ({}) VALUES ",
            source.columns().join(", ")
        );
        let total = source.rows();
        let mut sink = LiteralSink {
            out: std::mem::take(&mut self.sql),
            backslash_escapes: self.backslash_escapes,
            first: true,
        };
        let result = (|| {
            self.run_text("BEGIN")?;
            let (mut in_insert, mut inserts) = (0usize, 0usize);
            for i in 0..total {
                if in_insert == 0 {
                    sink.out.clear();
                    sink.out.push_str(&head);
                } else {
                    sink.out.push(',');
                }
                sink.out.push('(');
                sink.first = true;
                source.write_row(i, &mut sink);
                sink.out.push(')');
                in_insert += 1;
                if in_insert == ROWS_PER_INSERT || i + 1 == total {
                    self.run_text(&sink.out)?;
                    in_insert = 0;
                    inserts += 1;
                    if inserts % INSERTS_PER_COMMIT == 0 {
                        self.run_text("COMMIT")?;
                        self.run_text("BEGIN")?;
                    }
                }
            }
            self.run_text("COMMIT")?;
            Ok(total)
        })();
        if result.is_err() {
            let _ = self.run_text("ROLLBACK");
        }
        self.sql = sink.out;
        self.sql.clear();
        result
    }
}

impl Session for MysqlSession {
    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        if let Some(i) = self.statements.iter().position(|(s, _)| s == sql) {
            return Ok(i);
        }
        let stmt = if self.prepared {
            match self.conn.prepare(sql) {
                Ok(st) => Prepared::Server(st),
                // Statements the server cannot prepare go as text (as sysbench does).
                Err(e) if e.code() == Some(ER_UNSUPPORTED_PS) => {
                    Prepared::Text(sql.split('?').map(str::to_string).collect())
                }
                Err(e) => return Err(e.into()),
            }
        } else {
            Prepared::Text(sql.split('?').map(str::to_string).collect())
        };
        self.statements.push((sql.to_string(), stmt));
        Ok(self.statements.len() - 1)
    }

    fn execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<u64, DbError> {
        let Some((_, prepared)) = self.statements.get(stmt) else {
            return Err(DbError::fatal(format!("unknown statement handle {stmt}")));
        };
        match prepared {
            Prepared::Server(st) => Ok(self.conn.execute(st, params)?),
            Prepared::Text(parts) => {
                render_text(&mut self.sql, parts, params, self.backslash_escapes)?;
                Ok(self.conn.query(&self.sql)?)
            }
        }
    }

    fn execute_sql(&mut self, sql: &str) -> Result<u64, DbError> {
        self.run_text(sql)
    }

    fn query_strings(&mut self, sql: &str) -> Result<Vec<String>, DbError> {
        Ok(self.conn.first_column(sql)?)
    }

    fn bulk_load(&mut self, table: &str, source: &mut dyn RowSource) -> Result<u64, DbError> {
        match self.load_infile(table, source)? {
            Some(n) => Ok(n),
            None => self.load_inserts(table, source),
        }
    }
}

/// Writes one row as a line of `LOAD DATA`'s default format.
struct InfileSink {
    out: Vec<u8>,
    first: bool,
    /// A text value had a non-ASCII byte.
    non_ascii: bool,
    itoa: itoa::Buffer,
}

impl InfileSink {
    fn sep(&mut self) {
        if !self.first {
            self.out.push(b'\t');
        }
        self.first = false;
    }
}

impl RowSink for InfileSink {
    fn int(&mut self, value: i64) {
        self.sep();
        let s = self.itoa.format(value);
        self.out.extend_from_slice(s.as_bytes());
    }

    fn text(&mut self, value: &str) {
        self.sep();
        self.non_ascii |= !value.is_ascii();
        mywire::push_infile_field(&mut self.out, value.as_bytes());
    }
}

/// Writes one row's columns as SQL literals, comma-separated.
struct LiteralSink {
    out: String,
    backslash_escapes: bool,
    first: bool,
}

impl LiteralSink {
    fn sep(&mut self) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
    }
}

impl RowSink for LiteralSink {
    fn int(&mut self, value: i64) {
        self.sep();
        let _ = write!(self.out, "{value}");
    }

    fn text(&mut self, value: &str) {
        self.sep();
        push_literal(&mut self.out, value, self.backslash_escapes);
    }
}

// ---------------------------------------------------------------------------------------------
// Server

/// A running MySQL/MariaDB server of one target.
pub struct MysqlServer {
    data_dir: PathBuf,
    log: PathBuf,
    process: Mutex<ServerProcess>,
    admin: Mutex<Option<MyConn>>,
    driver: Arc<MysqlDriver>,
    version: String,
    settings: BTreeMap<String, String>,
    /// The unix socket clients connect to.
    socket: PathBuf,
    /// `root`'s password on this server.
    password: String,
    /// `<data_dir>.password`, removed when the server goes.
    _password_file: secret::PrivateFile,
    /// A private directory outside the data directory holding the socket (long paths), removed
    /// at stop.
    outside_dir: Option<PathBuf>,
    storage: Storage,
    /// `dbdelta.cnf` as recorded with the run (`<basedir>` for the build's directory).
    config: String,
    /// How a remote target's client logs in, when the target listens for one.
    tcp: Option<crate::engine::TcpEndpoint>,
}

/// On the first connection: the `dbdelta` database (and a remote client's login), then what
/// the server says of itself: its version, whether backslashes escape in literals, and its
/// effective settings.
fn prepare_admin(
    admin: &mut MyConn,
    target: &TargetSpec,
    data_dir: &Path,
    socket: &Path,
    build: &Build,
    password: &str,
) -> anyhow::Result<(String, bool, BTreeMap<String, String>)> {
    // A restored data directory (`TargetSpec::restored`) holds it already.
    admin
        .query(&format!("CREATE DATABASE IF NOT EXISTS {DB_NAME}"))
        .context("creating the dbdelta database")?;
    admin.query(&format!("USE {DB_NAME}"))?;
    if let Some(l) = &target.listen {
        let_client_in(admin, &l.client, password)?;
    }
    // The admin connection idles through whole steps: do not let the server drop it.
    let _ = admin.query("SET SESSION wait_timeout = 31536000");
    let version = admin
        .first("SELECT VERSION()")?
        .context("SELECT VERSION() returned no row")?;
    let version = version_label(version);
    let sql_mode = admin.first("SELECT @@GLOBAL.sql_mode")?.unwrap_or_default();
    let vars: Vec<(String, Option<String>)> = admin
        .rows("SHOW GLOBAL VARIABLES")?
        .into_iter()
        .filter_map(|r| {
            let mut cols = r.into_iter();
            Some((cols.next()??, cols.next().flatten()))
        })
        .collect();
    let settings = effective_settings(vars, data_dir, socket, build.bins.basedir.as_deref());
    Ok((
        version,
        !sql_mode.contains("NO_BACKSLASH_ESCAPES"),
        settings,
    ))
}

/// A remote target's client host may log in as `root` with the server's password.
fn let_client_in(admin: &mut MyConn, client: &str, password: &str) -> anyhow::Result<()> {
    admin
        .query(&format!(
            "CREATE USER '{USER}'@'{client}' IDENTIFIED BY '{password}'"
        ))
        .with_context(|| format!("creating {USER}@{client} for the remote client"))?;
    admin
        .query(&format!(
            "GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'{client}'"
        ))
        .with_context(|| format!("granting {USER}@{client} its privileges"))?;
    Ok(())
}

/// A driver for a server reached over TCP by `url` (one this process did not start).
pub fn tcp_driver(
    url: crate::engine::common::connect::ConnectUrl,
    prepared: bool,
    backslash_escapes: bool,
) -> Arc<dyn Driver> {
    Arc::new(MysqlDriver::new(
        MyEndpoint::Url(url),
        prepared,
        backslash_escapes,
    ))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl MysqlServer {
    /// Write the config, initialise `data_dir`, start the server and wait until it accepts
    /// connections, create the `dbdelta` database, record version and settings.
    pub fn start(
        target: &TargetSpec,
        data_dir: &Path,
        log: &Path,
    ) -> anyhow::Result<Box<dyn Server>> {
        Ok(Box::new(Self::start_inner(target, data_dir, log)?))
    }

    fn start_inner(target: &TargetSpec, data_dir: &Path, log: &Path) -> anyhow::Result<Self> {
        // Absolute, as PostgreSQL's: the tools run in the data directory, where a relative
        // `bin` (the lab's folder joined to `../mdb/bin`) would name nothing.
        let bin = target.bin.as_deref().map(std::path::absolute).transpose()?;
        let bins = find_binaries(bin.as_deref())?;
        let env = bins.env(&target.env);
        let build = Build::probe(bins, &env)?;
        let storage = Storage::of(&target.tables);
        build.check_storage(storage)?;
        let data_dir = data_dir
            .canonicalize()
            .with_context(|| format!("data directory {}", data_dir.display()))?;
        let user = process::server_user()?;
        if let Some(u) = &user {
            process::check_reachable(&data_dir, u)?;
        }
        let config = render_config(&build, storage, &target.tables, &target.settings, None);
        // Nobody else may read the files or reach the socket inside: before the tool writes
        // the first file, and again after (a tool may set its own mode).
        secret::private_dir(&data_dir)?;
        // A restored data directory is initialised already: its config is written again
        // below and `root`'s password is set by the `--init-file` of every start.
        if !target.restored {
            initialise(&build, &config, &data_dir, user.as_ref(), &env, log)?;
        } else if let Some(u) = &user {
            process::chown_tree(&data_dir, u)?;
        }
        secret::private_dir(&data_dir)?;
        let password = secret::new_password();
        let password_file = secret::password_file(&data_dir, &password)?;
        let cnf = data_dir.join(CONFIG_NAME);
        std::fs::write(&cnf, &config).with_context(|| format!("writing {}", cnf.display()))?;
        if let Some(u) = &user {
            process::chown_tree(&cnf, u)?;
        }
        let place = Place {
            cnf: &cnf,
            data_dir: &data_dir,
            user: user.as_ref(),
            env: &env,
            log,
        };
        let launched = launch(target, &build, &place, &password)?;
        let Launched {
            process: proc,
            mut admin,
            socket,
            outside_dir,
            port,
        } = launched;
        let (version, backslash_escapes, settings) =
            prepare_admin(&mut admin, target, &data_dir, &socket, &build, &password)?;
        let driver = Arc::new(MysqlDriver::new(
            MyEndpoint::Own {
                socket: socket.clone(),
                password: password.clone(),
            },
            target.prepared,
            backslash_escapes,
        ));
        let mut recorded = render_config(
            &build,
            storage,
            &target.tables,
            &target.settings,
            Some("<basedir>"),
        );
        if let Some(base) = &build.bins.basedir {
            recorded.push_str(&format!("# <basedir> = {}\n", base.display()));
        }
        Ok(MysqlServer {
            data_dir,
            log: log.to_path_buf(),
            process: Mutex::new(proc),
            admin: Mutex::new(Some(admin)),
            driver,
            version,
            settings,
            socket,
            outside_dir,
            storage,
            config: recorded,
            tcp: target.listen.as_ref().map(|_| crate::engine::TcpEndpoint {
                port,
                user: USER.into(),
                password: password.clone(),
                database: DB_NAME.into(),
                backslash_escapes,
            }),
            password,
            _password_file: password_file,
        })
    }

    fn admin(&self) -> anyhow::Result<MutexGuard<'_, Option<MyConn>>> {
        let guard = lock(&self.admin);
        if guard.is_none() {
            bail!("the admin connection is closed");
        }
        Ok(guard)
    }

    /// Force the dirty pages out and wait until none is left or the deadline passes.
    fn flush_dirty(conn: &mut MyConn, deadline: Instant) -> anyhow::Result<()> {
        for (name, value) in FLUSH_SETTINGS {
            match conn.query(&format!("SET GLOBAL {name} = {value}")) {
                Ok(_) => {}
                Err(e) if e.code() == Some(ER_UNKNOWN_SYSTEM_VARIABLE) => {}
                Err(e) => return Err(e).with_context(|| format!("SET GLOBAL {name}")),
            }
        }
        loop {
            let dirty = conn.rows("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")?;
            let dirty: Option<u64> = dirty
                .first()
                .and_then(|r| r.get(1)?.as_deref()?.parse().ok());
            if dirty.is_none_or(|n| n == 0) || Instant::now() >= deadline {
                return Ok(());
            }
            if !crate::signals::sleep(
                FLUSH_POLL.min(deadline.saturating_duration_since(Instant::now())),
            ) {
                return Ok(());
            }
        }
    }
}

/// Initialise `data_dir` the build's way ([`Init`]), as the server user, with `config`. The
/// config sits beside the data directory meanwhile (`--initialize` wants an empty directory),
/// or in a private directory under the temporary directory when the data directory's path has
/// whitespace: install-db scripts split `--defaults-file` at spaces.
fn initialise(
    build: &Build,
    config: &str,
    data_dir: &Path,
    user: Option<&ServerUser>,
    env: &BTreeMap<String, String>,
    log: &Path,
) -> anyhow::Result<()> {
    let spaced = |p: &Path| p.to_string_lossy().contains(char::is_whitespace);
    let mut apart = None;
    let init_cnf = if spaced(data_dir) {
        let tmp = std::env::temp_dir();
        let dir = tmp.join(format!(
            "dbdelta-init-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        if spaced(&dir) {
            bail!(
                "the work directory {} has whitespace in its path and so has the temporary directory {}; mariadb-install-db cannot take such a path: choose a --workdir or TMPDIR without spaces",
                data_dir.parent().unwrap_or(data_dir).display(),
                tmp.display()
            );
        }
        std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        apart = Some(dir.clone());
        dir.join("init.cnf")
    } else {
        PathBuf::from(format!("{}.init.cnf", data_dir.display()))
    };
    let written = std::fs::write(&init_cnf, config)
        .with_context(|| format!("writing {}", init_cnf.display()))
        .and_then(|()| match (user, &apart) {
            (Some(u), Some(dir)) => process::chown_tree(dir, u),
            _ => Ok(()),
        });
    let result = written.and_then(|()| initialise_with(build, &init_cnf, data_dir, user, env, log));
    let _ = std::fs::remove_file(&init_cnf);
    if let Some(dir) = apart {
        let _ = std::fs::remove_dir_all(dir);
    }
    result
}

fn initialise_with(
    build: &Build,
    cnf: &Path,
    data_dir: &Path,
    user: Option<&ServerUser>,
    env: &BTreeMap<String, String>,
    log: &Path,
) -> anyhow::Result<()> {
    if build.flavor.init == Init::Template
        && let Some(template) = build.template()
    {
        copy_template(&template, data_dir).with_context(|| {
            format!("copying the template data directory {}", template.display())
        })?;
        if let Some(u) = user {
            process::chown_tree(data_dir, u)?;
        }
        return Ok(());
    }
    if let Some(u) = user {
        process::chown_tree(data_dir, u)?;
    }
    let defaults = format!("--defaults-file={}", cnf.display());
    let datadir = format!("--datadir={}", data_dir.display());
    let mut cmd = match build.flavor.init {
        Init::InitializeInsecure => {
            let mut cmd = Command::new(&build.bins.server);
            cmd.arg(&defaults)
                .arg(&datadir)
                .arg("--initialize-insecure");
            cmd
        }
        Init::Template | Init::InstallDb(_) => {
            let install = build.bins.install.as_ref().with_context(|| {
                format!(
                    "no mariadb-install-db or mysql_install_db for {} ({}): looked beside it, in <basedir>/scripts and on PATH",
                    build.bins.server.display(),
                    build.flavor.name
                )
            })?;
            let mut cmd = Command::new(install);
            cmd.arg(&defaults).arg(&datadir);
            if let Init::InstallDb(args) = build.flavor.init {
                cmd.args(args);
            }
            if let Some(base) = &build.bins.basedir {
                cmd.arg(format!("--basedir={}", base.display()));
            }
            cmd
        }
    };
    cmd.current_dir(data_dir).envs(env);
    let log_start = std::fs::metadata(log).map(|m| m.len()).unwrap_or(0);
    if let Err(e) = process::run_tool(cmd, user, log, "initialising the data directory") {
        // install-db ends with a page of advice that pushes the cause out of the log tail:
        // put the cause first.
        let errors = cause_lines(&read_from(log, log_start));
        if errors.is_empty() {
            return Err(e);
        }
        bail!(
            "initialising the data directory: {}\n{e:#}",
            errors.join("; ")
        );
    }
    Ok(())
}

/// Copy a package's initialised data directory, without its `auto.cnf` (each server makes its
/// own UUID).
fn copy_template(from: &Path, to: &Path) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == "auto.cnf" {
            continue;
        }
        let dest = to.join(&name);
        if entry.file_type()?.is_dir() {
            std::fs::create_dir(&dest)?;
            copy_template(&entry.path(), &dest)?;
        } else {
            std::fs::copy(entry.path(), &dest)?;
        }
    }
    Ok(())
}

/// A started server and the first connection to it.
struct Launched {
    process: ServerProcess,
    admin: MyConn,
    socket: PathBuf,
    /// A private directory outside the data directory holding the socket (long paths).
    outside_dir: Option<PathBuf>,
    port: u16,
}

/// Where a server starts: its config, data directory, account, environment and log.
struct Place<'a> {
    cnf: &'a Path,
    data_dir: &'a Path,
    user: Option<&'a ServerUser>,
    env: &'a BTreeMap<String, String>,
    log: &'a Path,
}

/// The socket's path: in the data directory, or when that path is too long to bind, in a
/// directory of its own under the temporary directory that only the server account may enter
/// (returned second, for removal at stop).
fn socket_path(place: &Place<'_>, port: u16) -> anyhow::Result<(PathBuf, Option<PathBuf>)> {
    let socket = place.data_dir.join(SOCKET_NAME);
    if socket.as_os_str().len() <= MAX_SOCKET_PATH {
        return Ok((socket, None));
    }
    let dir = std::env::temp_dir().join(format!("dbdelta-mysqld-{}-{port}", std::process::id()));
    std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    secret::private_dir(&dir)?;
    if let Some(u) = place.user {
        process::chown_tree(&dir, u)?;
    }
    Ok((dir.join(SOCKET_NAME), Some(dir)))
}

/// Start the server on a unix socket and a loopback port, `root`'s password set by an
/// `--init-file` (a 0600 file removed once the server is up), and wait until it accepts
/// `root` with it.
fn launch(
    target: &TargetSpec,
    build: &Build,
    place: &Place<'_>,
    password: &str,
) -> anyhow::Result<Launched> {
    let port = match target.port {
        Some(p) => {
            process::check_port_free(p)?;
            p
        }
        None => process::free_port()?,
    };
    let (socket, outside_dir) = socket_path(place, port)?;
    let init = secret::PrivateFile::create(
        &PathBuf::from(format!("{}.init.sql", place.data_dir.display())),
        &build.flavor.secure_sql(password),
        place.user,
    )?;
    let mut cmd = Command::new(&build.bins.server);
    cmd.arg(format!("--defaults-file={}", place.cnf.display()))
        .arg(format!("--datadir={}", place.data_dir.display()))
        .arg(format!("--socket={}", socket.display()))
        .arg(format!("--port={port}"))
        .arg(format!("--init-file={}", init.path().display()))
        .arg(match &target.listen {
            // One address: MySQL before 8.0.13 and MariaDB before 10.11 take no list.
            Some(l) => format!("--bind-address={}", l.address),
            None => "--bind-address=127.0.0.1".into(),
        })
        .args(&target.args)
        .args(under_valgrind(&target.wrap, place.cnf))
        .current_dir(place.data_dir)
        .envs(place.env);
    let mut proc = ServerProcess::spawn(
        cmd,
        &target.wrap,
        place.user,
        target.server_cpus.as_ref(),
        place.log,
        "the MySQL server",
    )?;
    let mut first = None;
    proc.wait_ready(READY_TIMEOUT, || {
        match MyConn::connect(&socket, USER, Some(password), None) {
            Ok(c) => first = Some(Ok(c)),
            Err(e) if e.code().is_some_and(|c| ER_ACCESS_DENIED.contains(&c)) => {
                first = Some(Err(e))
            }
            Err(_) => {}
        }
        first.is_some()
    })?;
    drop(init);
    let admin = match first.expect("connected when ready") {
        Ok(c) => c,
        Err(e) => bail!(
            "the server refused root with the password its --init-file set ({e}); last lines of {}:\n{}",
            place.log.display(),
            crate::sys::log_tail(place.log, 20)
        ),
    };
    Ok(Launched {
        process: proc,
        admin,
        socket,
        outside_dir,
        port,
    })
}

/// InnoDB's postwrite (docs/workloads.md, The postwrite cleanup): force the dirty pages out until
/// none is left or the deadline passes, then restore the settings.
fn innodb_postwrite(conn: &mut MyConn, deadline: Instant) -> anyhow::Result<()> {
    let mut saved = Vec::new();
    for (name, _) in FLUSH_SETTINGS {
        match conn.first(&format!("SELECT @@GLOBAL.{name}")) {
            Ok(Some(v)) => saved.push((*name, v)),
            Ok(None) => {}
            Err(e) if e.code() == Some(ER_UNKNOWN_SYSTEM_VARIABLE) => {}
            Err(e) => return Err(e).with_context(|| format!("reading {name}")),
        }
    }
    let flushed = MysqlServer::flush_dirty(conn, deadline).context("flushing dirty pages");
    let mut restored = Ok(());
    for (name, value) in saved.iter().rev() {
        if let Err(e) = conn.query(&format!("SET GLOBAL {name} = {value}")) {
            restored = Err(e).with_context(|| format!("restoring {name} = {value}"));
        }
    }
    flushed.and(restored)
}

/// MyRocks' postwrite (docs/workloads.md, The postwrite cleanup): wait (polling every 10 s) until
/// no compaction runs, flush the memtable, wait 20 s, compact L0, then wait out the deadline. Every
/// wait ends at the deadline, or at once on a terminating signal (the run is ending).
fn rocksdb_postwrite(conn: &mut MyConn, deadline: Instant) -> anyhow::Result<()> {
    let sleep_until = |until: Instant| {
        crate::signals::sleep(
            until
                .min(deadline)
                .saturating_duration_since(Instant::now()),
        )
    };
    loop {
        if rocksdb_compactions(conn)? == 0 || Instant::now() >= deadline {
            break;
        }
        if !sleep_until(Instant::now() + ROCKSDB_COMPACTION_POLL) {
            return Ok(());
        }
    }
    conn.query("SET GLOBAL rocksdb_force_flush_memtable_now = 1")
        .context("SET GLOBAL rocksdb_force_flush_memtable_now = 1")?;
    if !sleep_until(Instant::now() + ROCKSDB_FLUSH_WAIT) {
        return Ok(());
    }
    let mut compacted = false;
    for name in ROCKSDB_LZERO {
        match conn.query(&format!("SET GLOBAL {name} = 1")) {
            Ok(_) => {
                compacted = true;
                break;
            }
            Err(e) if e.code() == Some(ER_UNKNOWN_SYSTEM_VARIABLE) => {}
            Err(e) => return Err(e).with_context(|| format!("SET GLOBAL {name} = 1")),
        }
    }
    if !compacted {
        bail!(
            "MyRocks postwrite: the server has none of {} to compact L0",
            ROCKSDB_LZERO.join(", ")
        );
    }
    sleep_until(deadline);
    Ok(())
}

/// What a server run under valgrind (`wrap`, the counting pass) needs that a native one does
/// not: InnoDB's native asynchronous IO off (under callgrind MariaDB 10.11's start waits on it
/// for good), and on servers that reserve address space for the largest buffer pool up front
/// (MariaDB 10.11.12 and later: 8 TiB by default, which valgrind cannot map) that reservation
/// cut to the configured pool (`--loose-`: servers without the option ignore it). Neither
/// changes what a statement executes. And a redo log of 512 MiB (8.0.30 and later: its
/// capacity; older servers and MariaDB: 256 MiB files), whatever the target sets: under
/// valgrind the page cleaner falls behind, the checkpoint age nears the log's size and the
/// statements themselves flush, by the clock (MySQL 5.6.24, 1 × 100,000 rows, `update-one`:
/// pairs 79,273 / 96,848 / 79,326 instructions/op with the default 2 × 48 MiB, 79,200 to
/// 79,362 over four pairs with this).
fn under_valgrind(wrap: &[String], cnf: &Path) -> Vec<String> {
    if wrap.is_empty() {
        return Vec::new();
    }
    let text = std::fs::read_to_string(cnf).unwrap_or_default();
    let pool = (text.lines().rev())
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim().replace('-', "_") == "innodb_buffer_pool_size")
        .map_or("128M".to_string(), |(_, v)| v.trim().to_string());
    vec![
        "--innodb-use-native-aio=0".into(),
        format!("--loose-innodb-buffer-pool-size-max={pool}"),
        "--loose-innodb-redo-log-capacity=512M".into(),
        "--loose-innodb-log-file-size=256M".into(),
    ]
}

/// Compactions running (Facebook's MySQL) or pending (MariaDB, which has no list of running
/// ones): the first query the server knows.
fn rocksdb_compactions(conn: &mut MyConn) -> anyhow::Result<u64> {
    for sql in ROCKSDB_COMPACTIONS {
        match conn.first(sql) {
            Ok(v) => return Ok(v.and_then(|v| v.parse().ok()).unwrap_or(0)),
            Err(e) if e.code() == Some(ER_UNKNOWN_TABLE) => {}
            Err(e) => return Err(e).with_context(|| sql.to_string()),
        }
    }
    bail!("MyRocks postwrite: the server has no table of RocksDB compactions")
}

/// Total bytes of the files under `dir` (MyRocks' size: the reference's `du -bs .rocksdb`).
fn dir_bytes(dir: &Path) -> Option<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let meta = entry.path().symlink_metadata().ok()?;
        total += if meta.is_dir() {
            dir_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Some(total)
}

/// The log text appended since byte `start`.
fn read_from(log: &Path, start: u64) -> String {
    let bytes = std::fs::read(log).unwrap_or_default();
    let start = usize::try_from(start).unwrap_or(0).min(bytes.len());
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// The server's `[ERROR]` lines of a log, without their timestamps.
fn error_lines(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| l.find("[ERROR]").map(|i| l[i..].trim().to_string()))
        .collect()
}

/// The cause of a failed initialisation in its output: the server's `[ERROR]` lines, else the
/// tool's first two lines (install-db's own complaints come first, its advice after).
fn cause_lines(output: &str) -> Vec<String> {
    let errors = error_lines(output);
    if !errors.is_empty() {
        return errors;
    }
    (output.lines().map(str::trim))
        .filter(|l| !l.is_empty())
        .take(2)
        .map(str::to_string)
        .collect()
}

/// `VERSION()` as recorded: MariaDB's says so itself; Oracle MySQL's gets a `MySQL ` prefix.
pub(super) fn version_label(version: String) -> String {
    if version.contains("MariaDB") {
        version
    } else {
        format!("MySQL {version}")
    }
}

/// `SHOW GLOBAL VARIABLES` as recorded settings: the per-cell paths are written relative to
/// the data directory (`<data_dir>`, `<socket>`) and the random port is left out, so two
/// targets differ only where their configuration does.
fn effective_settings(
    vars: Vec<(String, Option<String>)>,
    data_dir: &Path,
    socket: &Path,
    basedir: Option<&Path>,
) -> BTreeMap<String, String> {
    let dir = data_dir.to_string_lossy();
    let sock = socket.to_string_lossy();
    let base = basedir.map(|b| b.to_string_lossy().trim_end_matches('/').to_string());
    vars.into_iter()
        .filter(|(name, _)| name != "port")
        .map(|(name, value)| {
            let value = value.unwrap_or_default();
            let value = value.replace(sock.as_ref(), "<socket>");
            let value = value.replace(dir.as_ref(), "<data_dir>");
            let value = match &base {
                Some(b) if !b.is_empty() => value.replace(b.as_str(), "<basedir>"),
                _ => value,
            };
            (name, value)
        })
        .collect()
}

/// InnoDB's account of its background work: dirty pages and the purge backlog (the history
/// list length from `INNODB_METRICS`, enabled by default since 5.6). A read that fails is `None`.
fn innodb_background(conn: &mut MyConn) -> Background {
    let number = |v: Option<String>| v.and_then(|v| v.trim().parse().ok());
    let dirty = conn
        .rows("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
        .ok()
        .and_then(|rows| rows.into_iter().next()?.into_iter().nth(1).flatten());
    let history = conn
        .first(
            "SELECT count FROM information_schema.INNODB_METRICS \
             WHERE name = 'trx_rseg_history_len'",
        )
        .ok()
        .flatten();
    Background {
        dirty_pages: number(dirty),
        history_length: number(history),
        ..Default::default()
    }
}

impl Server for MysqlServer {
    fn background(&self) -> Background {
        match (self.storage, self.admin()) {
            (Storage::InnoDb, Ok(mut guard)) => {
                guard.as_mut().map(innodb_background).unwrap_or_default()
            }
            _ => Background::default(),
        }
    }

    fn driver(&self) -> Arc<dyn Driver> {
        self.driver.clone()
    }

    fn tcp_endpoint(&self) -> Option<crate::engine::TcpEndpoint> {
        self.tcp.clone()
    }

    fn client_url(&self) -> Option<crate::engine::connect::ConnectUrl> {
        Some(crate::engine::connect::ConnectUrl {
            engine: crate::engine::EngineKind::of(&MysqlFamily),
            user: USER.into(),
            password: Some(self.password.clone()),
            address: crate::engine::connect::Address::Unix(self.socket.clone()),
            port: 3306,
            database: DB_NAME.into(),
        })
    }

    fn version(&self) -> String {
        self.version.clone()
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }

    fn observed(&self) -> Observed {
        Observed::Tree(lock(&self.process).pid())
    }

    fn started_pid(&self) -> Option<u32> {
        Some(lock(&self.process).pid())
    }

    fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The reference's `du -bs`: MyRocks' bytes under `#rocksdb`, InnoDB's under the database's
    /// directory (one `.ibd` per table). Not `data_length + index_length`: InnoDB fills those
    /// from persistent statistics, which after a bulk load can still say 0 (MySQL 8.0).
    fn db_size(&self) -> Option<u64> {
        let dir = match self.storage {
            Storage::RocksDb => ROCKSDB_DIR,
            Storage::InnoDb => DB_NAME,
        };
        dir_bytes(&self.data_dir.join(dir))
    }

    fn config_text(&self) -> Option<String> {
        Some(self.config.clone())
    }

    fn postwrite(&self, tables: &[String], budget: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + budget;
        let mut guard = self.admin()?;
        let conn = guard.as_mut().expect("checked by admin()");
        for t in tables {
            conn.query(&format!("ANALYZE TABLE {t}"))
                .with_context(|| format!("ANALYZE TABLE {t}"))?;
        }
        match self.storage {
            Storage::InnoDb => innodb_postwrite(conn, deadline),
            Storage::RocksDb => rocksdb_postwrite(conn, deadline),
        }
    }

    fn log_path(&self) -> Option<PathBuf> {
        Some(self.log.clone())
    }

    fn check_alive(&self) -> anyhow::Result<()> {
        if lock(&self.process).alive() {
            return Ok(());
        }
        bail!(
            "the MySQL server exited; last lines of its log {}:\n{}",
            self.log.display(),
            crate::sys::log_tail(&self.log, 20)
        )
    }

    fn stop(self: Box<Self>) -> anyhow::Result<()> {
        // Close our connection first, so the server has no client left.
        drop(lock(&self.admin).take());
        let result = lock(&self.process).stop(libc::SIGTERM, STOP_TIMEOUT);
        if let Some(d) = &self.outside_dir {
            let _ = std::fs::remove_dir_all(d);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ErrorKind;

    #[test]
    fn literals_are_escaped() {
        let lit = |s: &str, bs: bool| {
            let mut out = String::new();
            push_literal(&mut out, s, bs);
            out
        };
        assert_eq!(lit("12-34", true), "'12-34'");
        assert_eq!(lit("it's", true), "'it''s'");
        assert_eq!(lit("a\\b", true), "'a\\\\b'");
        assert_eq!(lit("a\0b\nc\rd\x1ae", true), "'a\\0b\\nc\\rd\\Ze'");
        // NO_BACKSLASH_ESCAPES: a backslash is an ordinary character.
        assert_eq!(lit("a\\b'c", false), "'a\\b''c'");
    }

    #[test]
    fn text_statements_render_parameters_in_place() {
        let parts: Vec<String> = "SELECT c FROM t WHERE id BETWEEN ? AND ?"
            .split('?')
            .map(str::to_string)
            .collect();
        let mut out = String::from("stale");
        render_text(&mut out, &parts, &[Param::Int(5), Param::Int(-14)], true).unwrap();
        assert_eq!(out, "SELECT c FROM t WHERE id BETWEEN 5 AND -14");
        let ins: Vec<String> = "INSERT INTO t (id, k, c) VALUES (0, ?, ?)"
            .split('?')
            .map(str::to_string)
            .collect();
        render_text(&mut out, &ins, &[Param::Int(1), Param::Text("x'y")], true).unwrap();
        assert_eq!(out, "INSERT INTO t (id, k, c) VALUES (0, 1, 'x''y')");
        let err = render_text(&mut out, &ins, &[Param::Int(1)], true).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Fatal);
    }

    #[test]
    fn bulk_rows_are_literal_tuples() {
        let mut sink = LiteralSink {
            out: String::new(),
            backslash_escapes: true,
            first: true,
        };
        sink.int(1);
        sink.int(42);
        sink.text("a'b");
        assert_eq!(sink.out, "1,42,'a''b'");
    }

    #[test]
    fn settings_hide_per_cell_paths_and_port() {
        let vars = vec![
            ("datadir".to_string(), Some("/w/run/a.c1.r1/".to_string())),
            ("socket".to_string(), Some("/tmp/x.sock".to_string())),
            ("port".to_string(), Some("41234".to_string())),
            ("version".to_string(), None),
            (
                "plugin_dir".to_string(),
                Some("/cache/8.0.31/tree/lib/plugin/".to_string()),
            ),
        ];
        let s = effective_settings(
            vars,
            Path::new("/w/run/a.c1.r1"),
            Path::new("/tmp/x.sock"),
            Some(Path::new("/cache/8.0.31/tree")),
        );
        assert_eq!(s["datadir"], "<data_dir>/");
        assert_eq!(s["socket"], "<socket>");
        assert!(!s.contains_key("port"));
        assert_eq!(s["version"], "");
        assert_eq!(s["plugin_dir"], "<basedir>/lib/plugin/");
    }

    #[test]
    fn a_failed_install_db_without_error_lines_shows_its_first_lines() {
        // mariadb-install-db on a --defaults-file with a space (issue 30, item 9).
        let log = "Could not open required defaults file: /tmp/w\n\
                   Fatal error in defaults handling. Program aborted\n\
                   Installing MariaDB/MySQL system tables in '/tmp/w d/x' ...\n\n\
                   Installation of system tables failed!  Examine the logs in\n";
        assert_eq!(
            cause_lines(log),
            [
                "Could not open required defaults file: /tmp/w",
                "Fatal error in defaults handling. Program aborted"
            ]
        );
        let with_errors = "x\n2026-11-22  2:52:17 0 [ERROR] Aborting\n";
        assert_eq!(cause_lines(with_errors), ["[ERROR] Aborting"]);
    }

    #[test]
    fn error_lines_lose_their_timestamps() {
        let log = "Installing MariaDB/MySQL system tables in '/d' ...\n\
                   2026-11-22  2:52:17 0 [ERROR] /usr/sbin/mariadbd: unknown variable 'x=1'\n\
                   2026-11-22  2:52:17 0 [ERROR] Aborting\n\nInstallation of system tables failed!\n";
        assert_eq!(
            error_lines(log),
            [
                "[ERROR] /usr/sbin/mariadbd: unknown variable 'x=1'",
                "[ERROR] Aborting"
            ]
        );
    }
}
