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
        if path.exists() && !writable_store(path) {
            return Err(InputError::new(format!(
                "{shown}: the results store is read-only to this user (the file or its directory); make both writable or name another file"
            ))
            .into());
        }
        if !path.exists() {
            let dir = dir_of(path);
            if !dir.is_dir() {
                return Err(InputError::new(format!(
                    "{shown}: the directory {} does not exist; create it, or name a file in an existing directory",
                    dir.display()
                ))
                .into());
            }
            create_private(path)
                .with_context(|| format!("{shown}: cannot create the results store"))?;
        }
        let conn = Connection::open(path)
            .with_context(|| format!("{shown}: cannot open the results store"))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        // Before WAL, which would rewrite another program's file header.
        not_foreign(&conn, &shown)?;
        wal(&conn).map_err(|e| not_a_store(&shown, e))?;
        conn.execute_batch("PRAGMA synchronous = FULL")
            .map_err(|e| not_a_store(&shown, e))?;
        schema_is_text(&conn, &shown)?;
        Ok(Sqlite { conn, shown })
    }

    /// Open an existing store that this process cannot write (a read-only file, directory or
    /// filesystem) for reading only. Without a `-wal` file beside it (no writer has it open)
    /// it is read as immutable: SQLite then needs no `-shm` file, which it could not create in
    /// a read-only directory and could not remove after itself in a writable one. With
    /// `lasting` (a reader that stays open while runs may write, `dbdelta serve`) it is read as
    /// immutable only when no writer could exist (the directory is not writable).
    pub fn open_read_only(path: &Path, flag: &str, lasting: bool) -> Result<Sqlite> {
        use rusqlite::OpenFlags;
        let shown = format!("{flag} {}", path.display());
        let wal_file = wal_of(path);
        // An SQLite URI: `%`, `?` and `#` in the path escaped.
        let mut uri = String::from("file:");
        for c in std::path::absolute(path)?.to_string_lossy().chars() {
            match c {
                '%' | '?' | '#' => uri.push_str(&format!("%{:02X}", c as u32)),
                c => uri.push(c),
            }
        }
        uri.push_str("?mode=ro");
        // A lasting reader in a writable directory may see a writer start later.
        let writer_possible = lasting && writable(dir_of(path));
        if !wal_file.exists() && !writer_possible {
            uri.push_str("&immutable=1");
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(&uri, flags)
            .with_context(|| format!("{shown}: cannot open the results store to read it"))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        not_foreign(&conn, &shown)?;
        schema_is_text(&conn, &shown)?;
        Ok(Sqlite { conn, shown })
    }
}

/// Whether the file at `path` is empty, or an SQLite database with no tables and no schema
/// version (made by `touch`, or by a program that never wrote): no store yet. Read from the
/// file's header and first page without SQLite, which would make WAL files beside it; a file
/// with a `-wal` beside it (a writer may be making a store) or not SQLite's is not "nothing".
pub fn holds_nothing(path: &Path) -> bool {
    use std::io::Read;
    if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
        return true;
    }
    if wal_of(path).exists() {
        return false;
    }
    let mut head = [0u8; 105];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head));
    // The header's magic, its user_version (offset 60), and page 1 a table leaf (0x0D at
    // offset 100) with no cells (offset 103): sqlite_master is empty.
    read.is_ok()
        && head.starts_with(b"SQLite format 3\0")
        && head[60..64] == [0; 4]
        && head[100] == 0x0D
        && head[103..105] == [0; 2]
}

/// The `-wal` file beside the store file `path`.
fn wal_of(path: &Path) -> std::path::PathBuf {
    path.with_file_name(format!(
        "{}-wal",
        path.file_name().unwrap_or_default().to_string_lossy()
    ))
}

/// Create the new store file `path` readable by its owner only (0600): it keeps lab texts and
/// server settings. SQLite gives the `-wal` and `-shm` files it creates beside it the same
/// mode. A file another process created first (two runs starting on one new store) is left
/// as it is; so is every existing store.
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match (std::fs::OpenOptions::new())
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// The directory a store file is in (`.` for a bare file name).
pub fn dir_of(file: &Path) -> &Path {
    (file.parent())
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Whether this process may write the store file `path` and create its `-wal` and `-shm`
/// files beside it.
pub fn writable_store(path: &Path) -> bool {
    writable(path) && writable(dir_of(path))
}

/// Whether this process may write `path` (a file to open for writing, a directory to create
/// files in).
fn writable(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a NUL-terminated path; access only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Refuse an SQLite file of another program: objects in its schema, but no schema version
/// (every dbdelta store has one from its first migration, written in the same transaction
/// as its tables). Adding dbdelta's tables to it would change a file that is not ours.
fn not_foreign(conn: &Connection, shown: &str) -> Result<()> {
    let (version, objects): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT user_version FROM pragma_user_version), count(*) FROM sqlite_master",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(|e| not_a_store(shown, e))?;
    if version == 0 && objects > 0 {
        let file = shown.split_once(' ').map_or(shown, |(_, f)| f);
        let msg = match version_by_tables(conn) {
            Some(v) => format!(
                "{shown}: holds a dbdelta results store at schema version {v} that has lost its \
                 version (a copy made with `sqlite3 … .dump` keeps every table but not `PRAGMA \
                 user_version`); restore it with `sqlite3 '{file}' 'PRAGMA user_version = {v}'`"
            ),
            None if table_names(conn).is_ok_and(|t| t.iter().any(|n| n == "runs")) => format!(
                "{shown}: has a `runs` table but its tables match no dbdelta schema version, and \
                 it has no version of its own; name a new file, or the dbdelta store it was copied from"
            ),
            None => format!(
                "{shown}: is an SQLite database of another program (it has tables, none of them a \
                 dbdelta results store's); name a new file or a dbdelta store"
            ),
        };
        return Err(InputError::new(msg).into());
    }
    Ok(())
}

/// The schema version whose tables and indexes `conn` has, to the letter (SQLite keeps each
/// object's DDL as written, and a `.dump` copy writes it again as it was): the migrations run
/// one by one on an empty database in memory until the two schemas match.
fn version_by_tables(conn: &Connection) -> Option<i64> {
    let have = schema_text(conn).ok()?;
    let mem = Connection::open_in_memory().ok()?;
    for (i, sql) in super::migrations::MIGRATIONS.iter().enumerate() {
        mem.execute_batch(sql).ok()?;
        if schema_text(&mem).ok()? == have {
            return Some(i as i64 + 1);
        }
    }
    None
}

/// Every table's and index's name and DDL, in name order (SQLite's own objects left out).
fn schema_text(conn: &Connection) -> rusqlite::Result<Vec<(String, Option<String>)>> {
    let mut q = conn.prepare(
        "SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
    )?;
    let rows = q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

fn table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    Ok(schema_text(conn)?.into_iter().map(|(n, _)| n).collect())
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

/// Whether a writer could open the store at `path`: its `-wal` file is there (a writer has it
/// open, or left it), or its file system has room for the `-wal` and `-shm` files SQLite makes
/// (1 MiB). On a full one, opening for writing fails on the first read.
pub fn room_to_open(path: &Path) -> bool {
    if wal_of(path).exists() {
        return true;
    }
    let Ok(c) = std::ffi::CString::new(dir_of(path).as_os_str().as_encoded_bytes()) else {
        return true;
    };
    // SAFETY: statvfs is plain data, for which all zeroes is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a buffer of the type statvfs fills.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return true;
    }
    (st.f_bavail as u128) * (st.f_frsize as u128) >= 1 << 20
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
        _ => store_error(shown, e),
    }
}

/// An error of the store's file named as the store's, with what to do when its filesystem is
/// full or it cannot be written (so a failed write is not taken for the target's fault).
fn store_error(shown: &str, e: rusqlite::Error) -> anyhow::Error {
    let why = match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => {
            "the results store's filesystem is full; free space there, then continue with `dbdelta run --resume`"
        }
        Some(ErrorCode::ReadOnly) => {
            "the results store is read-only; make it writable or name another file"
        }
        _ => "the results store",
    };
    anyhow::Error::new(e).context(crate::error::StoreError(format!("{shown}: {why}")))
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
        (stmt.execute(rusqlite::params_from_iter(params)))
            .map(|n| n as u64)
            .map_err(|e| store_error(&self.shown, e))
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
        (self.conn.execute_batch(sql)).map_err(|e| store_error(&self.shown, e))
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
        (self.conn.pragma_update(None, "user_version", version))
            .map_err(|e| store_error(&self.shown, e))
    }

    fn dialect(&self, migration: &str) -> String {
        migration.to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_new_store_and_its_wal_and_shm_are_private_an_old_one_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.db");
        let mut db = Sqlite::open(&new, "--store").unwrap();
        db.batch("CREATE TABLE t (a TEXT); INSERT INTO t VALUES ('x')")
            .unwrap();
        for f in ["new.db", "new.db-wal", "new.db-shm"] {
            assert_eq!(mode(&dir.path().join(f)), 0o600, "{f}");
        }
        drop(db);

        let old = dir.path().join("old.db");
        drop(Sqlite::open(&old, "--store").unwrap());
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        let db = Sqlite::open(&old, "--store").unwrap();
        assert_eq!(mode(&old), 0o644, "an existing store keeps its mode");
        drop(db);
    }
}
