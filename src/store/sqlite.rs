//! The SQLite backend of the store: one file, opened through rusqlite.
//!
//! Owns opening the file (a directory or a file that is not SQLite is bad input naming the
//! `--store` path), WAL with `synchronous = FULL`, a 10 s busy timeout, `BEGIN EXCLUSIVE` for
//! migrations and the version in `PRAGMA user_version`, and converting [`Value`]s to and from
//! rusqlite's. Must not: know the schema's tables (the store's facade does).

use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ErrorCode};

use super::sql::{Db, Lock, Row, Value};
use crate::error::InputError;

pub struct Sqlite {
    conn: Connection,
    /// The `--store` flag and path, for messages.
    shown: String,
}

impl Sqlite {
    /// Open (creating when missing) the file at `path`; `flag` names it in messages.
    pub fn open(path: &Path, flag: &str) -> Result<Sqlite> {
        if path.is_dir() {
            return Err(InputError::new(format!(
                "{flag} {}: is a directory; name the results file instead, e.g. {flag} {}",
                path.display(),
                path.join("dbdelta.db").display()
            ))
            .into());
        }
        let shown = format!("{flag} {}", path.display());
        let conn = Connection::open(path)
            .with_context(|| format!("{shown}: cannot open the results store"))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        wal(&conn).map_err(|e| not_a_store(&shown, e))?;
        conn.execute_batch("PRAGMA synchronous = FULL")?;
        schema_is_text(&conn, &shown)?;
        Ok(Sqlite { conn, shown })
    }
}

/// A damaged store whose schema text is not UTF-8 is an error here: rusqlite panics on a
/// column name that is not UTF-8 (found by the `store_read` fuzzer), and column names come
/// from this text.
fn schema_is_text(conn: &Connection, shown: &str) -> Result<()> {
    let mut stmt = conn.prepare("SELECT CAST(sql AS BLOB) FROM sqlite_master")?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        if let Some(bytes) = r.get_ref(0)?.as_blob_or_null()?
            && std::str::from_utf8(bytes).is_err()
        {
            anyhow::bail!(
                "{shown}: the results store is damaged (its schema is not UTF-8 text); \
                 restore it from a copy or name another file"
            );
        }
    }
    Ok(())
}

/// Switch to WAL. SQLite answers a journal-mode change that races another connection's with
/// "database is locked" at once, without its busy handler: retry for up to 10 s.
fn wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())) {
            Err(e)
                if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// A file SQLite cannot read as a database is bad input naming the path and the fix; other
/// errors stay errors.
fn not_a_store(shown: &str, e: rusqlite::Error) -> anyhow::Error {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => InputError::new(format!(
            "{shown}: is not a dbdelta results store (not an SQLite database); name another \
             file, or move this one away"
        ))
        .into(),
        _ => anyhow::Error::new(e).context(shown.to_string()),
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(i) => ValueRef::Integer(*i),
            Value::Real(r) => ValueRef::Real(*r),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
            Value::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

fn value_of(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(r) => Value::Real(r),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

impl Db for Sqlite {
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        Ok(stmt.execute(rusqlite::params_from_iter(params))? as u64)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let columns: std::sync::Arc<[String]> = stmt.column_names().map(String::from).collect();
        let n = columns.len();
        let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let values = (0..n)
                .map(|i| r.get_ref(i).map(value_of))
                .collect::<rusqlite::Result<_>>()?;
            out.push(Row::new(columns.clone(), values));
        }
        Ok(out)
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        Ok(self.conn.execute_batch(sql)?)
    }

    fn begin(&mut self, lock: Lock) -> Result<()> {
        let sql = match lock {
            Lock::Shared => "BEGIN",
            Lock::Exclusive => "BEGIN EXCLUSIVE",
        };
        self.conn
            .execute_batch(sql)
            .map_err(|e| not_a_store(&self.shown, e))
    }

    fn schema_version(&mut self) -> Result<i64> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| not_a_store(&self.shown, e))
    }

    fn set_schema_version(&mut self, version: i64) -> Result<()> {
        Ok(self.conn.pragma_update(None, "user_version", version)?)
    }

    fn dialect(&self, migration: &str) -> String {
        migration.to_string()
    }
}
