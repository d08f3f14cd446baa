//! The embedded SQLite engine: the bundled library, in dbdelta's own process.
//!
//! Owns: creating the database file in the target's data directory, applying the target's
//! settings (a list of PRAGMAs, checked by reading each one back), one connection per client
//! thread (WAL mode and a busy timeout by default), bulk loads in one transaction of prepared
//! inserts, and the SQLite "postwrite" cleanup (`ANALYZE`, `wal_checkpoint(TRUNCATE)`).
//! Must not: time anything or count operations (the runner does). Its CPU is dbdelta's own, so
//! the engine cost of SQLite is our process's cost (`Observed::SelfProcess`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use rusqlite::{Connection, ErrorCode, OpenFlags, Statement};

use super::{
    DbError, Dialect, Driver, ErrorKind, Observed, Param, RowSink, RowSource, Server, Session,
    StmtId, TargetSpec,
};

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

fn classify(err: &rusqlite::Error) -> ErrorKind {
    match err.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => ErrorKind::Retryable,
        _ => ErrorKind::Fatal,
    }
}

fn db_err(err: rusqlite::Error) -> DbError {
    DbError {
        kind: classify(&err),
        message: err.to_string(),
    }
}

/// Opens connections to one SQLite database file with the target's settings.
pub struct SqliteDriver {
    path: PathBuf,
    pragmas: Vec<Pragma>,
    prepared: bool,
}

impl SqliteDriver {
    fn open(&self) -> Result<Connection, DbError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&self.path, flags).map_err(db_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db_err)?;
        // WAL by default; a target's own journal_mode setting comes later and wins.
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .map_err(db_err)?;
        for p in &self.pragmas {
            // Some PRAGMAs answer with a row, some do not: step through whatever comes back.
            let mut stmt = conn.prepare(&p.sql()).map_err(db_err)?;
            let mut rows = stmt.raw_query();
            while rows.next().map_err(db_err)?.is_some() {}
        }
        conn.set_prepared_statement_cache_capacity(1024);
        Ok(conn)
    }
}

impl Driver for SqliteDriver {
    fn connect(&self) -> Result<Box<dyn Session>, DbError> {
        Ok(Box::new(SqliteSession {
            conn: self.open()?,
            statements: Vec::new(),
            prepared: self.prepared,
        }))
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }
}

/// One connection. Prepared statements live in rusqlite's per-connection cache, keyed by text.
pub struct SqliteSession {
    conn: Connection,
    statements: Vec<String>,
    prepared: bool,
}

fn bind(stmt: &mut Statement<'_>, params: &[Param<'_>]) -> rusqlite::Result<()> {
    for (i, p) in params.iter().enumerate() {
        match *p {
            Param::Int(v) => stmt.raw_bind_parameter(i + 1, v)?,
            Param::Text(s) => stmt.raw_bind_parameter(i + 1, s)?,
        }
    }
    Ok(())
}

/// Execute a bound statement: step through every row of a query (reading its first column, as a
/// client that fetches the result would), or run a write and return the rows it changed.
fn run_bound(stmt: &mut Statement<'_>) -> rusqlite::Result<u64> {
    if stmt.column_count() == 0 {
        return stmt.raw_execute().map(|n| n as u64);
    }
    let mut rows = stmt.raw_query();
    let mut n = 0u64;
    while let Some(row) = rows.next()? {
        let _ = row.get_ref(0)?;
        n += 1;
    }
    Ok(n)
}

impl Session for SqliteSession {
    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        if self.prepared {
            // Compile now so that a bad statement fails before the measured period.
            self.conn.prepare_cached(sql).map_err(db_err)?;
        } else {
            self.conn.prepare(sql).map_err(db_err)?;
        }
        self.statements.push(sql.to_string());
        Ok(self.statements.len() - 1)
    }

    fn execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<u64, DbError> {
        let sql = &self.statements[stmt];
        let result = if self.prepared {
            let mut st = self.conn.prepare_cached(sql).map_err(db_err)?;
            bind(&mut st, params).and_then(|_| run_bound(&mut st))
        } else {
            let mut st = self.conn.prepare(sql).map_err(db_err)?;
            bind(&mut st, params).and_then(|_| run_bound(&mut st))
        };
        result.map_err(db_err)
    }

    fn execute_sql(&mut self, sql: &str) -> Result<u64, DbError> {
        let mut st = self.conn.prepare(sql).map_err(db_err)?;
        run_bound(&mut st).map_err(db_err)
    }

    fn query_strings(&mut self, sql: &str) -> Result<Vec<String>, DbError> {
        let mut st = self.conn.prepare(sql).map_err(db_err)?;
        let mut rows = st.raw_query();
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(db_err)? {
            let v = match row.get_ref(0).map_err(db_err)? {
                rusqlite::types::ValueRef::Null => "NULL".to_string(),
                rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                rusqlite::types::ValueRef::Real(f) => f.to_string(),
                rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                    String::from_utf8_lossy(t).into_owned()
                }
            };
            out.push(v);
        }
        Ok(out)
    }

    fn bulk_load(&mut self, table: &str, source: &mut dyn RowSource) -> Result<u64, DbError> {
        let cols = source.columns().join(", ");
        let marks = vec!["?"; source.columns().len()].join(", ");
        let sql = format!("INSERT INTO {table} ({cols}) VALUES ({marks})");
        let tx = self.conn.unchecked_transaction().map_err(db_err)?;
        {
            let mut stmt = tx.prepare(&sql).map_err(db_err)?;
            let mut sink = BindSink {
                stmt: &mut stmt,
                next: 1,
                error: None,
            };
            for i in 0..source.rows() {
                sink.next = 1;
                source.write_row(i, &mut sink);
                if let Some(e) = sink.error.take() {
                    return Err(db_err(e));
                }
                sink.stmt.raw_execute().map_err(db_err)?;
            }
        }
        tx.commit().map_err(db_err)?;
        Ok(source.rows())
    }
}

/// Binds one row's columns to a prepared insert, in order.
struct BindSink<'s, 'c> {
    stmt: &'s mut Statement<'c>,
    next: usize,
    error: Option<rusqlite::Error>,
}

impl RowSink for BindSink<'_, '_> {
    fn int(&mut self, value: i64) {
        if let Err(e) = self.stmt.raw_bind_parameter(self.next, value) {
            self.error.get_or_insert(e);
        }
        self.next += 1;
    }

    fn text(&mut self, value: &str) {
        if let Err(e) = self.stmt.raw_bind_parameter(self.next, value) {
            self.error.get_or_insert(e);
        }
        self.next += 1;
    }
}

/// A SQLite "server": the database file, an admin connection, and the driver for clients.
pub struct SqliteServer {
    data_dir: PathBuf,
    driver: Arc<SqliteDriver>,
    admin: Connection,
    version: String,
    settings: BTreeMap<String, String>,
}

impl SqliteServer {
    /// Create the database in `data_dir` (which the runner created empty) and check every
    /// setting of the target by reading it back.
    pub fn start(target: &TargetSpec, data_dir: &Path) -> anyhow::Result<SqliteServer> {
        let pragmas = parse_settings(&target.settings)
            .with_context(|| format!("target {}: bad setting", target.name))?;
        let driver = Arc::new(SqliteDriver {
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
        let mut settings = BTreeMap::new();
        for p in &driver.pragmas {
            let value = read_pragma(&admin, &p.name)?.ok_or_else(|| {
                anyhow::anyhow!(
                    "target {}: `{}` is not a SQLite PRAGMA this build knows (it reads back nothing); \
                     check the spelling in the target's settings",
                    target.name,
                    p.name
                )
            })?;
            settings.insert(p.name.clone(), value);
        }
        for name in RECORDED_PRAGMAS {
            if let Some(v) = read_pragma(&admin, name)? {
                settings.entry(name.to_string()).or_insert(v);
            }
        }
        let opts: Vec<String> = admin
            .prepare("PRAGMA compile_options")?
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<_, _>>()?;
        settings.insert("compile_options".into(), opts.join(" "));
        let version: String = admin.query_row("SELECT sqlite_version()", [], |r| r.get(0))?;
        Ok(SqliteServer {
            data_dir: data_dir.to_path_buf(),
            driver,
            admin,
            version: format!("SQLite {version}"),
            settings,
        })
    }
}

/// Read a PRAGMA's current value; `None` when SQLite returns no row (an unknown PRAGMA).
fn read_pragma(conn: &Connection, name: &str) -> anyhow::Result<Option<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA {name}"))?;
    let mut rows = stmt.raw_query();
    Ok(match rows.next()? {
        Some(row) => Some(match row.get_ref(0)? {
            rusqlite::types::ValueRef::Integer(i) => i.to_string(),
            rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
            rusqlite::types::ValueRef::Real(f) => f.to_string(),
            _ => String::new(),
        }),
        None => None,
    })
}

impl Server for SqliteServer {
    fn driver(&self) -> Arc<dyn Driver> {
        self.driver.clone()
    }

    fn version(&self) -> String {
        self.version.clone()
    }

    fn settings(&self) -> BTreeMap<String, String> {
        self.settings.clone()
    }

    fn observed(&self) -> Observed {
        Observed::SelfProcess
    }

    fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    fn db_size(&self) -> Option<u64> {
        let pages: i64 = self
            .admin
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .ok()?;
        let size: i64 = self
            .admin
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .ok()?;
        u64::try_from(pages * size).ok()
    }

    fn postwrite(&self, _tables: &[String], _budget: std::time::Duration) -> anyhow::Result<()> {
        // Nothing flushes in the background in SQLite: no need to wait out the budget.
        self.admin
            .execute_batch("ANALYZE")
            .context("SQLite ANALYZE")?;
        let mode: String = self
            .admin
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        if mode.eq_ignore_ascii_case("wal") {
            self.admin
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .context("SQLite wal_checkpoint(TRUNCATE)")?;
        }
        Ok(())
    }

    fn stop(self: Box<Self>) -> anyhow::Result<()> {
        let SqliteServer { admin, .. } = *self;
        admin
            .close()
            .map_err(|(_, e)| e)
            .context("closing SQLite")?;
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
