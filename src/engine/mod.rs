//! Engines: the traits every DBMS implements, and the registry that picks one for a target.
//!
//! Three traits, one per stage of a target's life:
//! - [`Server`]: lifecycle (create data, start, version and settings, size, cleanup, stop) and
//!   which processes to measure.
//! - [`Driver`]: opens client connections; shared by the runner's threads.
//! - [`Session`]: one connection, used by one thread: prepare, execute, bulk load.
//!
//! Drivers never time anything and never count ops: the runner does. A driver's job is to get
//! statements to the engine as cheaply as possible and to classify errors
//! (retryable, reconnect, fatal).
//!
//! [`Family`] is what an engine family is to the rest of dbdelta (names, dialect, lab keys,
//! preflight, start, connect, remote start, fetched builds, the recipes of builds from source:
//! [`recipe`] finds one by name); the list of families is [`families`], beside this file. [`start`] starts a target's server on this host through its
//! family. Must not: name a family outside the registry, or know remote hosts beyond the
//! target's description of one ([`remote`], plain data): a server on another host is
//! `crate::remote`'s, which decides above the engines which server a target gets.

pub mod about;
pub mod common;
pub mod dialect;
pub mod families;
pub mod mysql;
pub mod postgres;
pub mod remote;
pub mod sqlite;

pub use about::{Pace, Starter, facts};
pub use dialect::{Dialect, TableDdl};

/// `connect` URLs, under the path `lab`, `plan` and `store` name.
pub use common::connect;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::cpus::CpuSet;

/// A statement parameter. Borrowed, so binding one allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Param<'a> {
    Int(i64),
    Text(&'a str),
}

/// How the runner should react to an error, decided by the driver that saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Try the next event on the same connection (lock timeout, serialization failure, busy).
    Retryable,
    /// The connection is unusable; open a new one.
    Reconnect,
    /// Give up on the step.
    Fatal,
}

/// The engine's own code for an error, kept as the engine sent it so that workloads can act
/// on it and reports can count by it. `Copy` and small: recording one allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCode {
    /// PostgreSQL's SQLSTATE, five ASCII characters (e.g. `23505`).
    SqlState([u8; 5]),
    /// A MySQL/MariaDB server error number with its SQLSTATE (e.g. 1062, `23000`).
    MySql { errno: u16, sqlstate: [u8; 5] },
    /// SQLite's (extended) result code (e.g. 5, `SQLITE_BUSY`).
    Sqlite(i32),
}

impl ErrorCode {
    /// A SQLSTATE from the server's text; `None` unless it is five ASCII characters.
    pub fn sqlstate(text: &str) -> Option<[u8; 5]> {
        let b = text.as_bytes();
        (b.len() == 5 && b.iter().all(u8::is_ascii_alphanumeric)).then(|| {
            let mut s = [0; 5];
            s.copy_from_slice(b);
            s
        })
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = |s: &[u8; 5]| String::from_utf8_lossy(s).into_owned();
        match self {
            ErrorCode::SqlState(s) => write!(f, "SQLSTATE {}", text(s)),
            ErrorCode::MySql { errno, sqlstate } => {
                write!(f, "MySQL error {errno} ({})", text(sqlstate))
            }
            ErrorCode::Sqlite(c) => write!(f, "SQLite code {c}"),
        }
    }
}

/// An error from a driver, already classified, with the engine's own code when the engine
/// sent one (`None`: a connection, protocol or client-side error).
#[derive(Debug, Clone)]
pub struct DbError {
    pub kind: ErrorKind,
    pub code: Option<ErrorCode>,
    pub message: String,
}

impl DbError {
    pub fn fatal(message: impl Into<String>) -> Self {
        DbError {
            kind: ErrorKind::Fatal,
            code: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DbError {}

/// Handle of a statement prepared on one session.
pub type StmtId = usize;

/// Receives the columns of one row of a bulk load, in column order.
pub trait RowSink {
    fn int(&mut self, value: i64);
    fn text(&mut self, value: &str);
}

/// Produces the rows of a bulk load. The engine decides how to ship them (one transaction of
/// prepared inserts, `COPY`, multi-row inserts).
pub trait RowSource {
    /// Column names, in the order `write_row` emits them.
    fn columns(&self) -> &[&'static str];
    /// Number of rows to load.
    fn rows(&self) -> u64;
    /// Emit row `i` (0-based) into the sink.
    fn write_row(&mut self, i: u64, sink: &mut dyn RowSink);
}

/// One client connection, owned by one thread.
pub trait Session: Send {
    /// Prepare `sql` once; later executions use the handle. With prepared statements switched
    /// off the session keeps the text and sends it each time.
    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError>;
    /// Execute a prepared statement and consume its whole result.
    /// Returns the rows returned (queries) or changed (writes).
    fn execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<u64, DbError>;
    /// Run one unprepared statement (DDL, maintenance). Returns rows returned or changed.
    fn execute_sql(&mut self, sql: &str) -> Result<u64, DbError>;
    /// Run a query and return the first column of every row as text (for settings and sizes).
    fn query_strings(&mut self, sql: &str) -> Result<Vec<String>, DbError>;
    /// Load all rows of `source` into `table` as fast as the engine allows.
    fn bulk_load(&mut self, table: &str, source: &mut dyn RowSource) -> Result<u64, DbError>;
    /// The server's task (its OS thread or process id) serving this connection, which a
    /// counting pass's `perf stat` attaches to; `None`: not known (or no server).
    fn server_task(&mut self) -> Option<u32> {
        None
    }
}

/// Opens connections to a started server. Shared by all client threads.
pub trait Driver: Send + Sync {
    fn connect(&self) -> Result<Box<dyn Session>, DbError>;
    fn dialect(&self) -> Dialect;
}

/// Which processes hold the engine's cost: the sampler's type, which a [`Server`] hands it.
pub use crate::sampler::Observed;

/// What a server said of itself when it started, which [`Server`]'s getters hand out.
#[derive(Debug, Clone, Default)]
pub struct Started {
    /// The engine's own version string.
    pub version: String,
    /// Effective settings read back after start.
    pub settings: BTreeMap<String, String>,
    /// The directory holding the database files (its device is the one whose IO we count);
    /// empty for a running server whose processes are not on this host.
    pub data_dir: PathBuf,
}

/// A started DBMS instance for one target.
pub trait Server {
    fn driver(&self) -> Arc<dyn Driver>;
    /// What it said of itself when it started.
    fn started(&self) -> &Started;
    /// The engine's own version string.
    fn version(&self) -> String {
        self.started().version.clone()
    }
    /// Effective settings read back after start.
    fn settings(&self) -> BTreeMap<String, String> {
        self.started().settings.clone()
    }
    /// Which processes to measure.
    fn observed(&self) -> Observed;
    /// The directory holding the database files (its device is the one whose IO we count).
    fn data_dir(&self) -> &Path {
        &self.started().data_dir
    }
    /// Logical database size in bytes, as the engine reports it.
    fn db_size(&self) -> Option<u64>;
    /// Bring the database to a settled state after loads and writes ("postwrite":
    /// docs/workloads.md, The postwrite cleanup): statistics collected, dirty data flushed.
    /// `tables` are the suite's tables; `budget` is the time the cleanup may take (the same
    /// section's budget), which a server engine waits out so background flushing settles.
    fn postwrite(&self, tables: &[String], budget: std::time::Duration) -> anyhow::Result<()>;
    /// The configuration the engine wrote, as recorded with the run (its defaults, the lines
    /// this server version needs, the target's settings), when it writes one of its own.
    fn config_text(&self) -> Option<String> {
        None
    }
    /// The server's log file, when it has one.
    fn log_path(&self) -> Option<PathBuf> {
        None
    }
    /// An error (with the end of the log) when the server process has died.
    fn check_alive(&self) -> anyhow::Result<()> {
        Ok(())
    }
    /// The PID of the server process dbdelta started, which leads its own process group;
    /// `None` for in-process engines and for running servers dbdelta only connects to.
    fn started_pid(&self) -> Option<u32> {
        None
    }
    /// Drop the suite's `tables` if they exist: a running server (`connect`) keeps no
    /// tables of dbdelta's between cells. Servers dbdelta starts need nothing (their data
    /// directory goes).
    fn release(&self, _tables: &[String]) -> anyhow::Result<()> {
        Ok(())
    }
    /// How a client on another host reaches this server over TCP, when it listens for one
    /// ([`TargetSpec::listen`]).
    fn tcp_endpoint(&self) -> Option<TcpEndpoint> {
        None
    }
    /// How another process on this host connects to this server as dbdelta's own clients do
    /// (an instruction-counting pass's client): the server's unix socket. `None` for
    /// in-process engines (that process opens [`Server::data_dir`]) and running servers.
    fn client_url(&self) -> Option<connect::ConnectUrl> {
        None
    }
    /// The C compiler flags the server says it was built with (`None`: it does not say).
    fn build_flags(&self) -> Option<String> {
        None
    }
    /// What the server says of its own background work now (the settling guard's engine
    /// evidence; cheap status reads on the admin connection). Embedded engines and servers
    /// that offer nothing answer the default, every field `None`.
    fn background(&self) -> Background {
        Background::default()
    }
    /// Stop the engine (fast shutdown). Does not remove the data directory.
    fn stop(self: Box<Self>) -> anyhow::Result<()>;
}

/// A server's own account of its background work at one instant ([`Server::background`]);
/// each field `None` when the engine does not offer it or the read failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Background {
    /// InnoDB: `Innodb_buffer_pool_pages_dirty`.
    pub dirty_pages: Option<u64>,
    /// InnoDB: the undo history list length (`trx_rseg_history_len`), the purge backlog.
    pub history_length: Option<u64>,
    /// PostgreSQL: autovacuum workers running (`pg_stat_activity`).
    pub autovacuum_workers: Option<u64>,
    /// PostgreSQL: buffers written by the checkpointer and the background writer since the
    /// statistics were reset (a counter: the difference of two reads is what they wrote).
    pub buffers_written: Option<u64>,
}

/// A server that also listens on `address` for one client host, `client`, which may log in
/// with the server's password (a remote target's agent asks for this: `address` is where the
/// SSH connection arrived).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listen {
    pub address: String,
    pub client: String,
}

/// How a client reaches a started server over TCP: the client's address may log in as
/// `user` with `password` (the server's random one; it crosses only the SSH connection).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpEndpoint {
    pub port: u16,
    pub user: String,
    pub password: String,
    pub database: String,
    /// MySQL/MariaDB: the server reads backslashes in literals as escapes.
    pub backslash_escapes: bool,
}

impl fmt::Debug for TcpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpEndpoint")
            .field("port", &self.port)
            .field("user", &self.user)
            .field("password", &"***")
            .field("database", &self.database)
            .field("backslash_escapes", &self.backslash_escapes)
            .finish()
    }
}

/// An engine family as the registry knows it ([`families::FAMILIES`]): its names and SQL
/// dialect, what the lab, the preflight and a counting pass need to know of it, which fetched
/// builds serve it, and how it starts a server here, attaches to a running one (`connect`) or
/// reaches one an agent started on another host. A family is a folder under `engine/` that
/// implements this and the three traits above, plus one line in [`families::FAMILIES`] (or
/// [`families::TEST_FAMILIES`]). Every method but the names, dialect, start and build file has
/// a default that fits an embedded engine.
pub trait Family: Sync {
    /// `engine = "NAME"` in a lab, stored with every target.
    fn name(&self) -> &'static str;
    /// Other names a lab may write for it (`postgresql`; `mariadb`: the same family as mysql).
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// How messages name it: `SQLite`, `PostgreSQL`.
    fn title(&self) -> &'static str;
    fn dialect(&self) -> Dialect;
    /// True when the engine runs inside dbdelta's own process (its CPU is ours).
    fn embedded(&self) -> bool {
        true
    }
    /// How a counting pass tells the statements' instructions from the server's background
    /// work ([`crate::counter::Attribution`]).
    fn attribution(&self) -> crate::counter::Attribution {
        crate::counter::Attribution::All
    }
    /// A statement that, run on a connection of its own and left open, keeps the server's
    /// purge of old row versions from running during a counting cell; `None`: none needed.
    fn purge_hold(&self) -> Option<&'static str> {
        None
    }
    /// A settings line (as a target's `settings` take them) that sets `key` to `value` as the
    /// server reads it back (`dbdelta explain` gives a twin its base's values this way): `key =
    /// value` by default; a later line for the same key wins.
    fn setting_line(&self, key: &str, value: &str) -> String {
        format!("{key} = {value}")
    }
    /// The names of the settings the target's server program accepts at its start (lower case,
    /// `_` for `-`), asked of the program itself (`dbdelta explain` gives a twin only those);
    /// `None`: any setting it is given is one (an embedded engine's pragmas).
    fn startup_settings(
        &self,
        _target: &TargetSpec,
    ) -> anyhow::Result<Option<std::collections::BTreeSet<String>>> {
        Ok(None)
    }
    /// Whether its sessions name the server task serving them ([`Session::server_task`]), so
    /// that a counting pass can count them with `perf stat`. An embedded engine runs in the
    /// client's threads.
    fn server_tasks(&self) -> bool {
        true
    }
    /// Whether a target may set `storage_engine`, `table_options` and `index_options`.
    fn table_options(&self) -> bool {
        false
    }
    /// The `ENGINE=` name of a target's `storage_engine` as written (`rocksdb` → `ROCKSDB`),
    /// for a build of `fetched` (the product a `version` names) or any; `Err` says why not.
    fn storage_engine(
        &self,
        written: &str,
        _fetched: Option<&'static common::fetchable::Product>,
    ) -> Result<&'static str, String> {
        Err(format!(
            "{} has no storage engine \"{written}\" to choose",
            self.title()
        ))
    }
    /// The products whose fetched builds (`version`, `versions`) serve this family, each named
    /// by its id or an alias as the lab's engine name ([`common::fetchable`]). Empty: none are
    /// fetched.
    fn products(&self) -> &'static [&'static common::fetchable::Product] {
        &[]
    }
    /// The product as reports name it, for families that serve several (`mariadb` for
    /// MariaDB, which shares the `mysql` family): from the fetched build's product id
    /// (`fetched`), the recipe dbdelta `built` it with, or the target's server program; the
    /// family's name by default.
    fn product_name(
        &self,
        _target: &TargetSpec,
        _fetched: Option<&'static str>,
        _built: Option<&'static str>,
    ) -> &'static str {
        self.name()
    }
    /// The product as a reader names it, from a stored record alone: the server's own version
    /// line and the target's settings as stored (`mariadb`, `mariadb (myrocks)`); the
    /// family's name by default.
    fn stored_product(&self, _server_version: Option<&str>, _settings: &str) -> String {
        self.name().to_string()
    }
    /// What a run's phases cost on this family before the store has measured them here (`plan`'s
    /// estimate); `release`: dbdelta is a release build. The slowest server's by default.
    fn pace(&self, release: bool) -> Pace {
        Pace::slow_server(release)
    }
    /// The labs `dbdelta init` writes for this family, one per engine name a lab gives it.
    fn starters(&self) -> &'static [Starter] {
        &[]
    }
    /// The lab `dbdelta run` runs when given none (the registry's first family's that has one).
    fn demo_lab(&self) -> Option<&'static str> {
        None
    }
    /// For the disk preflight: what the family stores per row, in percent of PostgreSQL's.
    fn disk_percent(&self, _tables: &TableDdl) -> u64 {
        100
    }
    /// For the disk preflight: the files it writes whatever the data (catalog, redo, WAL).
    fn fixed_bytes(&self) -> u64 {
        0
    }
    /// The server program a target starts here, found in `bin` (`None`: the distribution's
    /// install) and answering `--version` with `env`; `Err` says what is missing or failing.
    fn check_server(
        &self,
        _bin: Option<&Path>,
        _env: &BTreeMap<String, String>,
    ) -> anyhow::Result<()> {
        Ok(())
    }
    /// The file that is the target's engine build (a saved load is keyed by its path and
    /// contents); `None`: the build inside dbdelta.
    fn build_file(&self, target: &TargetSpec) -> anyhow::Result<Option<PathBuf>>;
    /// How `dbdelta build` and a lab's `build` compile its engines from source (the recipes'
    /// names are the cache's engine ids); empty: it builds none.
    fn recipes(&self) -> &'static [&'static dyn common::recipe::Recipe] {
        &[]
    }
    /// The build inside dbdelta, as a saved load names it when [`Family::build_file`] is `None`
    /// (`bundled SQLite 3.46.0`).
    fn built_in(&self) -> String {
        format!("{} built into dbdelta", self.title())
    }
    /// What the target's build says of itself (compilers, version line), read on this host:
    /// by default the `.comment` of [`Family::build_file`] and, for a server, its `--version`
    /// run with the target's `env`. Called only for a server this host started.
    fn provenance(&self, target: &TargetSpec) -> crate::results::BinaryProvenance {
        match self.build_file(target) {
            Ok(Some(file)) if self.embedded() => {
                common::provenance::of_file(&file, file.display().to_string())
            }
            Ok(Some(program)) => common::provenance::of_program(&program, &target.env),
            Ok(None) => crate::results::BinaryProvenance::default(),
            Err(e) => crate::results::BinaryProvenance {
                unread: vec![format!("{e:#}")],
                ..Default::default()
            },
        }
    }
    /// Create, initialise and start the target's server in the fresh `data_dir`, its log in
    /// `log`.
    fn start(
        &self,
        target: &TargetSpec,
        data_dir: &Path,
        log: &Path,
    ) -> anyhow::Result<Box<dyn Server>>;
    /// The `connect = "…"` URL form of a running server of this family; `None`: it has none.
    fn url(&self) -> Option<&'static connect::UrlForm> {
        None
    }
    /// A running server at `url` (`connect`), its tables dropped between cells.
    fn attach(
        &self,
        _target: &TargetSpec,
        _url: &connect::ConnectUrl,
    ) -> anyhow::Result<Box<dyn Server>> {
        anyhow::bail!("{} has no server to connect to", self.title())
    }
    /// A driver for a server an agent started on another host, reached over TCP at `url`
    /// as `tcp` says.
    fn tcp_driver(
        &self,
        _url: connect::ConnectUrl,
        _prepared: bool,
        _tcp: &TcpEndpoint,
    ) -> anyhow::Result<Arc<dyn Driver>> {
        anyhow::bail!("{} has no server to run remotely", self.title())
    }
}

/// The family of a target: a handle on its [`Family`] in the registry, compared, hashed and
/// stored by its name.
#[derive(Clone, Copy)]
pub struct EngineKind(&'static dyn Family);

impl EngineKind {
    /// The family a lab names (`engine = "…"`, or one of its aliases), among those this
    /// process knows ([`families::registry`]).
    pub fn parse(name: &str) -> Option<EngineKind> {
        (families::registry().into_iter())
            .find(|f| f.name() == name || f.aliases().contains(&name))
            .map(EngineKind)
    }

    /// The family a stored target names (`TargetInfo::engine`, its family's name), among every
    /// family compiled in ([`families::all`]): reports read stored runs without the environment.
    pub fn stored(name: &str) -> Option<EngineKind> {
        (families::all().into_iter())
            .find(|f| f.name() == name)
            .map(EngineKind)
    }

    /// Every engine name a lab may use, for error messages.
    pub fn names() -> Vec<&'static str> {
        families::registry().iter().map(|f| f.name()).collect()
    }

    /// The family whose `connect` URLs start `scheme://`, with their form.
    pub fn by_scheme(scheme: &str) -> Option<(EngineKind, &'static connect::UrlForm)> {
        families::registry().into_iter().find_map(|f| {
            let form = f.url().filter(|u| u.schemes.contains(&scheme))?;
            Some((EngineKind(f), form))
        })
    }

    /// The handle on `family` (a family naming itself).
    pub fn of(family: &'static dyn Family) -> EngineKind {
        EngineKind(family)
    }

    /// The `connect` URL forms of the families that have one, in registry order.
    pub fn url_forms() -> Vec<&'static connect::UrlForm> {
        families::registry()
            .iter()
            .filter_map(|f| f.url())
            .collect()
    }

    pub fn family(self) -> &'static dyn Family {
        self.0
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }

    pub fn dialect(self) -> Dialect {
        self.0.dialect()
    }

    /// True when the engine runs inside dbdelta's own process (its CPU is ours).
    pub fn embedded(self) -> bool {
        self.0.embedded()
    }

    /// [`Family::attribution`].
    pub fn attribution(self) -> crate::counter::Attribution {
        self.0.attribution()
    }

    /// [`Family::purge_hold`].
    pub fn purge_hold(self) -> Option<&'static str> {
        self.0.purge_hold()
    }

    /// [`Family::setting_line`].
    pub fn setting_line(self, key: &str, value: &str) -> String {
        self.0.setting_line(key, value)
    }

    /// [`Family::startup_settings`].
    pub fn startup_settings(
        self,
        target: &TargetSpec,
    ) -> anyhow::Result<Option<std::collections::BTreeSet<String>>> {
        self.0.startup_settings(target)
    }

    /// [`Family::server_tasks`].
    pub fn server_tasks(self) -> bool {
        self.0.server_tasks()
    }

    /// Whether the counting pass runs one pair of passes before the pairs it keeps: on InnoDB
    /// (the engines that hold purge) the first pair after sizing differs from the ones after
    /// it, which agree (see `runner::count`'s `count_step`).
    pub fn drops_first_pair(self) -> bool {
        self.purge_hold().is_some()
    }
}

impl Default for EngineKind {
    /// The first family of the registry (SQLite).
    fn default() -> Self {
        EngineKind(families::FAMILIES[0])
    }
}

impl PartialEq for EngineKind {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for EngineKind {}

impl std::hash::Hash for EngineKind {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state)
    }
}

impl fmt::Debug for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for EngineKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for EngineKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        EngineKind::parse(&name.to_ascii_lowercase())
            .ok_or_else(|| serde::de::Error::custom(format!("unknown engine {name:?}")))
    }
}

/// Everything an engine needs to start one target: its own settings, not the plan's (`plan`
/// builds it; the engine never looks at the plan). It crosses to a remote target's agent as
/// JSON, less the fields that only mean something here.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TargetSpec {
    /// The target's name, for messages.
    pub name: String,
    pub engine: EngineKind,
    /// Engine settings, one per line (SQLite PRAGMAs; server config-file lines).
    pub settings: Vec<String>,
    /// Directory holding the server binaries; `None`: Debian's install.
    pub bin: Option<PathBuf>,
    /// The version `bin` was fetched for, for messages when it is missing.
    pub version: Option<String>,
    /// Environment of the server process.
    pub env: BTreeMap<String, String>,
    /// Extra command-line arguments of the server.
    pub args: Vec<String>,
    /// Fixed loopback port (default: a free one).
    pub port: Option<u16>,
    /// Server-side prepared statements for the clients.
    pub prepared: bool,
    /// CPUs the server process tree is pinned to; `None`: not pinned.
    pub server_cpus: Option<CpuSet>,
    /// What the suite's CREATE statements add (MySQL/MariaDB).
    pub tables: TableDdl,
    /// SQLite: the shared library to open instead of the bundled one.
    pub library: Option<PathBuf>,
    /// An already running server to connect to instead of starting one.
    #[serde(skip)]
    pub connect: Option<connect::ConnectUrl>,
    /// The host the server runs on, when it is not this one.
    #[serde(skip)]
    pub remote: Option<remote::RemoteHost>,
    /// Where the server listens for a client on another host, besides loopback.
    pub listen: Option<Listen>,
    /// A command the server process runs under (its program and arguments before the
    /// server's own, e.g. valgrind's for an instruction-counting pass); empty: none. The server
    /// then gets [`WRAPPED_START_FACTOR`] times its usual start-up time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wrap: Vec<String>,
    /// The server of an instruction-counting pass (under `wrap` or counted by `perf stat`):
    /// an engine holds its clock-driven background work still (PostgreSQL: autovacuum off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub counting: bool,
    /// The data directory already holds this target's database, copied from a saved load
    /// (`runner::snapshot`): the engine starts on it as it is (a server engine rewrites only
    /// its per-start lines and its superuser's password) instead of creating one.
    #[serde(skip)]
    pub restored: bool,
}

/// How much longer a server run under [`TargetSpec::wrap`] may take to start and stop.
pub const WRAPPED_START_FACTOR: u32 = 10;

/// Create, initialise and start the server of `target` on this host, in the fresh directory
/// `data_dir`; a server engine writes its log to `log`. A target on another host
/// ([`TargetSpec::remote`]) is not an engine's to start: `crate::remote::start` decides.
pub fn start(target: &TargetSpec, data_dir: &Path, log: &Path) -> anyhow::Result<Box<dyn Server>> {
    if let Some(r) = &target.remote {
        anyhow::bail!(
            "target {} runs on {}: its server is started there, not by an engine here",
            target.name,
            r.host
        );
    }
    let family = target.engine.family();
    match &target.connect {
        Some(url) => family.attach(target, url),
        None => family.start(target, data_dir, log),
    }
}

/// The file that is the target's engine build: the server binary (`bin`, else Debian's
/// install), or SQLite's `library`; `None`: the SQLite bundled into dbdelta. A saved load is
/// keyed by its path and contents.
pub fn build_file(target: &TargetSpec) -> anyhow::Result<Option<PathBuf>> {
    target.engine.family().build_file(target)
}

/// The recipe `dbdelta build NAME` compiles (its name or an alias), among the recipes of the
/// families this process knows ([`families::registry`]); a recipe's own name wins over another's
/// alias.
pub fn recipe(name: &str) -> Option<&'static dyn common::recipe::Recipe> {
    let recipes = recipes();
    (recipes.iter().find(|r| r.name() == name))
        .or_else(|| recipes.iter().find(|r| r.aliases().contains(&name)))
        .copied()
}

/// The recipe a lab's `build` compiles for a target of `engine = "NAME"`: as [`recipe`], less
/// an alias that names another product the recipe only stands in for on the command line
/// ([`common::recipe::Recipe::stand_in_for`]: a lab's target of that name is the other
/// product, which the recipe does not build).
pub fn lab_recipe(name: &str) -> Option<&'static dyn common::recipe::Recipe> {
    recipe(name).filter(|r| !r.stand_in_for().contains(&name))
}

/// The names of every recipe, in registry order, for messages.
pub fn recipe_names() -> Vec<&'static str> {
    recipes().iter().map(|r| r.name()).collect()
}

fn recipes() -> Vec<&'static dyn common::recipe::Recipe> {
    (families::registry().into_iter())
        .flat_map(|f| f.recipes().iter().copied())
        .collect()
}

/// The server program a target of `engine` starts here, found in `bin` (`None`: the
/// distribution's install) and answering `--version` with the target's environment `env`;
/// `Err` says what is missing or failing. An embedded engine has no program to run.
pub fn check_server(
    engine: EngineKind,
    bin: Option<&Path>,
    env: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    engine.family().check_server(bin, env)
}

/// What the build of a target this host started says of itself (its family's
/// [`Family::provenance`]); `None` for a running server (`connect`) or another host's, whose
/// program is not the file this host would read.
pub fn provenance(target: &TargetSpec) -> Option<crate::results::BinaryProvenance> {
    if target.connect.is_some() || target.remote.is_some() {
        return None;
    }
    Some(target.engine.family().provenance(target))
}

/// The data directory of one target × clients × repeat under a run's work directory.
pub fn data_dir_for(run_dir: &Path, target: &str, clients: u32, repeat: u32) -> PathBuf {
    run_dir.join(format!("{target}.c{clients}.r{repeat}"))
}
