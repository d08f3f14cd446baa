//! The embedded SQLite engine, in dbdelta's own process: the bundled library, or the
//! `libsqlite3.so` a target names (`library`, or the one its `build` made), called through the
//! function table of [`api`].
//!
//! Owns: creating the database file in the target's data directory, applying the target's
//! settings (a list of PRAGMAs, checked by reading each one back), one connection per client
//! thread (WAL mode and a busy timeout by default), bulk loads in one transaction of prepared
//! inserts, and the SQLite "postwrite" cleanup (`ANALYZE`, `wal_checkpoint(TRUNCATE)`).
//! Must not: time anything or count operations (the runner does). Its CPU is dbdelta's own, so
//! the engine cost of SQLite is our process's cost (`Observed::SelfProcess`).

pub mod api;
mod family;
mod labs;
mod recipe;
pub use family::SqliteFamily;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::engine::{
    DbError, Dialect, Driver, ErrorCode, ErrorKind, Observed, Param, RowSink, RowSource, Server,
    Session, Started, StmtId, TargetSpec,
};
use api::{Api, Conn, Origin, SqlError, Stmt, Value};

/// File name of the database inside the target's data directory.
const DB_FILE: &str = "dbdelta.sqlite";
/// How long a connection waits for a lock before SQLITE_BUSY.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Settings read back and recorded for every target, besides the ones it sets.
const RECORDED_PRAGMAS: &[&str] = &[
    "journal_mode",
    "synchronous",
    "cache_size",
    "page_size",
    "mmap_size",
    "temp_store",
    "locking_mode",
    "busy_timeout",
    "wal_autocheckpoint",
];

/// One target setting: `PRAGMA name = value` (or a bare `name`).
#[derive(Debug, Clone, PartialEq)]
struct Pragma {
    name: String,
    value: Option<String>,
}

impl Pragma {
    /// Parse a settings line: `synchronous = NORMAL`, `PRAGMA cache_size=-65536;`, `# comment`.
    fn parse(line: &str) -> Option<Result<Pragma, String>> {
        let line = line.split('#').next().unwrap_or("").trim();
        let line = line.trim_end_matches(';').trim();
        if line.is_empty() {
            return None;
        }
        let body = match line.get(..7) {
            Some(p) if p.eq_ignore_ascii_case("pragma ") => line[7..].trim(),
            _ => line,
        };
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim().to_string())),
            None => (body, None),
        };
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if !valid || value.as_deref() == Some("") {
            return Some(Err(format!(
                "`{line}` is not a SQLite setting; write `name = value`, e.g. `synchronous = NORMAL`"
            )));
        }
        Some(Ok(Pragma {
            name: name.to_string(),
            value,
        }))
    }

    fn sql(&self) -> String {
        match &self.value {
            Some(v) => format!("PRAGMA {} = {}", self.name, v),
            None => format!("PRAGMA {}", self.name),
        }
    }
}

fn parse_settings(lines: &[String]) -> anyhow::Result<Vec<Pragma>> {
    let mut out = Vec::new();
    for line in lines {
        match Pragma::parse(line) {
            None => {}
            Some(Ok(p)) => out.push(p),
            Some(Err(e)) => bail!(e),
        }
    }
    Ok(out)
}

fn db_err(err: SqlError) -> DbError {
    DbError {
        kind: match api::retryable(err.code) {
            true => ErrorKind::Retryable,
            false => ErrorKind::Fatal,
        },
        code: Some(ErrorCode::Sqlite(err.code)),
        message: err.to_string(),
    }
}

/// Opens connections to one SQLite database file with the target's settings, through one
/// library's functions.
pub struct SqliteDriver {
    api: &'static Api,
    path: PathBuf,
    pragmas: Vec<Pragma>,
    prepared: bool,
}

impl SqliteDriver {
    fn open(&self) -> Result<Conn, DbError> {
        let conn = self.api.open(&self.path).map_err(DbError::fatal)?;
        conn.busy_timeout(BUSY_TIMEOUT.as_millis() as i32)
            .map_err(db_err)?;
        // WAL by default; a target's own journal_mode setting comes later and wins.
        conn.run("PRAGMA journal_mode = WAL").map_err(db_err)?;
        for p in &self.pragmas {
            // Some PRAGMAs answer with a row, some do not: step through whatever comes back.
            conn.run(&p.sql()).map_err(db_err)?;
        }
        Ok(conn)
    }
}

impl Driver for SqliteDriver {
    fn connect(&self) -> Result<Box<dyn Session>, DbError> {
        Ok(Box::new(SqliteSession {
            statements: Vec::new(),
            conn: self.open()?,
            prepared: self.prepared,
        }))
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }
}

/// A session's statement: compiled once (prepared statements), or its text, compiled on
/// every execution.
enum Prepared {
    Compiled(Stmt),
    Text(String),
}

/// One connection and the statements prepared on it (by `StmtId`).
pub struct SqliteSession {
    // Declared before `conn`: statements are finalized before the connection closes.
    statements: Vec<Prepared>,
    conn: Conn,
    prepared: bool,
}

/// Bind a statement's parameters in order and run it to its end.
fn run_with(stmt: &mut Stmt, params: &[Param<'_>]) -> Result<u64, SqlError> {
    for (i, p) in params.iter().enumerate() {
        let v = match *p {
            Param::Int(v) => Value::Int(v),
            Param::Text(s) => Value::Text(s),
        };
        stmt.bind(i + 1, v)?;
    }
    stmt.run(&[])
}

impl Session for SqliteSession {
    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        // Compile now so that a bad statement fails before the measured period.
        let stmt = self.conn.prepare(sql).map_err(db_err)?;
        self.statements.push(match self.prepared {
            true => Prepared::Compiled(stmt),
            false => Prepared::Text(sql.to_string()),
        });
        Ok(self.statements.len() - 1)
    }

    fn execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<u64, DbError> {
        match &mut self.statements[stmt] {
            Prepared::Compiled(st) => run_with(st, params),
            Prepared::Text(sql) => self
                .conn
                .prepare(sql)
                .and_then(|mut st| run_with(&mut st, params)),
        }
        .map_err(db_err)
    }

    fn execute_sql(&mut self, sql: &str) -> Result<u64, DbError> {
        self.conn.run(sql).map_err(db_err)
    }

    fn query_strings(&mut self, sql: &str) -> Result<Vec<String>, DbError> {
        self.conn.strings(sql).map_err(db_err)
    }

    fn bulk_load(&mut self, table: &str, source: &mut dyn RowSource) -> Result<u64, DbError> {
        let cols = source.columns().join(", ");
        let marks = vec!["?"; source.columns().len()].join(", ");
        let sql = format!("INSERT INTO {table} ({cols}) VALUES ({marks})");
        self.conn.run("BEGIN").map_err(db_err)?;
        let loaded = load_rows(&self.conn, &sql, source);
        match loaded {
            Ok(()) => self.conn.run("COMMIT").map_err(db_err)?,
            Err(e) => {
                let _ = self.conn.run("ROLLBACK");
                return Err(db_err(e));
            }
        };
        Ok(source.rows())
    }
}

/// Every row of `source` through one prepared insert (inside the caller's transaction).
fn load_rows(conn: &Conn, sql: &str, source: &mut dyn RowSource) -> Result<(), SqlError> {
    let mut stmt = conn.prepare(sql)?;
    let mut sink = BindSink {
        stmt: &mut stmt,
        next: 1,
        error: None,
    };
    for i in 0..source.rows() {
        sink.next = 1;
        source.write_row(i, &mut sink);
        if let Some(e) = sink.error.take() {
            return Err(e);
        }
        sink.stmt.run(&[])?;
    }
    Ok(())
}

/// Binds one row's columns to a prepared insert, in order.
struct BindSink<'s> {
    stmt: &'s mut Stmt,
    next: usize,
    error: Option<SqlError>,
}

impl BindSink<'_> {
    fn bind(&mut self, value: Value<'_>) {
        if let Err(e) = self.stmt.bind(self.next, value) {
            self.error.get_or_insert(e);
        }
        self.next += 1;
    }
}

impl RowSink for BindSink<'_> {
    fn int(&mut self, value: i64) {
        self.bind(Value::Int(value));
    }

    fn text(&mut self, value: &str) {
        self.bind(Value::Text(value));
    }
}

/// A SQLite "server": the database file, an admin connection, and the driver for clients.
pub struct SqliteServer {
    started: Started,
    driver: Arc<SqliteDriver>,
    admin: Conn,
}

impl SqliteServer {
    /// Create the database in `data_dir` (which the runner created empty) with the target's
    /// library (the bundled one unless it names one), and check every setting of the target by
    /// reading it back.
    pub fn start(target: &TargetSpec, data_dir: &Path) -> anyhow::Result<SqliteServer> {
        let pragmas = parse_settings(&target.settings)
            .with_context(|| format!("target {}: bad setting", target.name))?;
        let api = match &target.library {
            Some(lib) => Api::load(lib).with_context(|| format!("target {}", target.name))?,
            None => Api::bundled(),
        };
        let driver = Arc::new(SqliteDriver {
            api,
            path: data_dir.join(DB_FILE),
            pragmas,
            prepared: target.prepared,
        });
        let admin = driver.open().map_err(|e| {
            anyhow::anyhow!(
                "target {}: SQLite rejected its settings: {e}; fix the target's `settings`/`config`",
                target.name
            )
        })?;
        let settings = read_settings(&admin, &driver.pragmas, api)
            .with_context(|| format!("target {}", target.name))?;
        let version = admin.one("SELECT sqlite_version()")?.unwrap_or_default();
        Ok(SqliteServer {
            started: Started {
                version: format!("SQLite {version}"),
                settings,
                data_dir: data_dir.to_path_buf(),
            },
            driver,
            admin,
        })
    }
}

/// The target's settings read back, the recorded PRAGMAs, the compile options, and which
/// library runs the target: `bundled`, or the file that provides its functions.
fn read_settings(
    admin: &Conn,
    pragmas: &[Pragma],
    api: &Api,
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut settings = BTreeMap::new();
    for p in pragmas {
        let value = admin.one(&format!("PRAGMA {}", p.name))?.ok_or_else(|| {
            anyhow::anyhow!(
                "`{}` is not a SQLite PRAGMA this build knows (it reads back nothing); \
                 check the spelling in the target's settings",
                p.name
            )
        })?;
        settings.insert(p.name.clone(), value);
    }
    for name in RECORDED_PRAGMAS {
        if let Some(v) = admin.one(&format!("PRAGMA {name}"))? {
            settings.entry(name.to_string()).or_insert(v);
        }
    }
    let opts = admin.strings("PRAGMA compile_options")?;
    settings.insert("compile_options".into(), opts.join(" "));
    let library = match &api.origin {
        Origin::Bundled => "bundled".to_string(),
        Origin::Library(path) => path.display().to_string(),
    };
    settings.insert("library".into(), library);
    settings.insert("source_id".into(), api.source_id());
    Ok(settings)
}

impl Server for SqliteServer {
    fn driver(&self) -> Arc<dyn Driver> {
        self.driver.clone()
    }

    fn started(&self) -> &Started {
        &self.started
    }

    fn observed(&self) -> Observed {
        Observed::SelfProcess
    }

    fn db_size(&self) -> Option<u64> {
        let number = |sql: &str| -> Option<u64> { self.admin.one(sql).ok()??.parse().ok() };
        Some(number("PRAGMA page_count")? * number("PRAGMA page_size")?)
    }

    fn postwrite(&self, _tables: &[String], _budget: std::time::Duration) -> anyhow::Result<()> {
        // Nothing flushes in the background in SQLite: no need to wait out the budget.
        self.admin.run("ANALYZE").context("SQLite ANALYZE")?;
        let mode = self.admin.one("PRAGMA journal_mode")?.unwrap_or_default();
        if mode.eq_ignore_ascii_case("wal") {
            self.admin
                .run("PRAGMA wal_checkpoint(TRUNCATE)")
                .context("SQLite wal_checkpoint(TRUNCATE)")?;
        }
        Ok(())
    }

    fn stop(self: Box<Self>) -> anyhow::Result<()> {
        // The admin connection closes when it is dropped.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_settings_lines() {
        let p = Pragma::parse("PRAGMA synchronous=NORMAL;")
            .unwrap()
            .unwrap();
        assert_eq!(
            p,
            Pragma {
                name: "synchronous".into(),
                value: Some("NORMAL".into())
            }
        );
        let p = Pragma::parse("  cache_size = -65536  # 64 MiB")
            .unwrap()
            .unwrap();
        assert_eq!(p.sql(), "PRAGMA cache_size = -65536");
        assert!(Pragma::parse("# only a comment").is_none());
        assert!(Pragma::parse("synchronous = ").unwrap().is_err());
        assert!(Pragma::parse("drop table x").unwrap().is_err());
    }
}
