//! The client side of MySQL/MariaDB: the driver (unix socket or TCP), sessions with
//! server-side prepared statements or SQL text with escaped literals (`prepared = false`),
//! multi-row-insert and `LOAD DATA LOCAL INFILE` bulk loads, and error classification. Must
//! not: start or stop a server, or time anything.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use super::{DB_NAME, USER};
use crate::engine::common::mywire;
use crate::engine::common::mywire::{MyConn, Stmt};
use crate::engine::{DbError, Dialect, Driver, Param, RowSink, RowSource, Session, StmtId};

/// Bulk load without local files: rows per multi-row INSERT, INSERTs per transaction.
const ROWS_PER_INSERT: usize = 1000;

const INSERTS_PER_COMMIT: usize = 10;

/// Bulk load with `LOAD DATA LOCAL INFILE`: rows per statement (all in one transaction), rows
/// formatted per call of the data source.
const INFILE_ROWS_PER_STATEMENT: u64 = 100_000;

const INFILE_ROWS_PER_FILL: u64 = 256;

/// Column character sets in which ASCII text is the same bytes as in UTF-8.
const ASCII_CHARSETS: &[&str] = &["latin1", "ascii", "utf8mb3", "utf8"];

const ER_UNSUPPORTED_PS: u16 = 1295;

/// Local files refused: by the server's `local_infile = OFF` (MariaDB: 1148, 4166; MySQL 8:
/// 3948). The load then goes as INSERTs.
const LOCAL_INFILE_REFUSED: &[u16] = &[1148, 4166, 3948];

// ---------------------------------------------------------------------------------------------
// Errors and literals

/// Append `s` as a quoted string literal. Quotes are doubled (valid in every SQL mode); with
/// backslash escapes on (the default `sql_mode`), backslashes and control characters are
/// escaped as `mysql_real_escape_string` does.
pub(super) fn push_literal(out: &mut String, s: &str, backslash_escapes: bool) {
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
pub(super) fn render_text(
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
pub(in crate::engine) enum MyEndpoint {
    Own { socket: PathBuf, password: String },
    Url(crate::engine::common::connect::ConnectUrl),
}

impl MysqlDriver {
    pub(in crate::engine) fn new(
        endpoint: MyEndpoint,
        prepared: bool,
        backslash_escapes: bool,
    ) -> Self {
        MysqlDriver {
            endpoint,
            prepared,
            backslash_escapes,
        }
    }
}

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
pub(super) struct LiteralSink {
    pub(super) out: String,
    pub(super) backslash_escapes: bool,
    pub(super) first: bool,
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
