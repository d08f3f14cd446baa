//! The client side of PostgreSQL: the driver (unix socket or TCP), sessions over dbdelta's own
//! wire client with server-side prepared statements (or literal SQL over the simple protocol),
//! `COPY` loads, errors classified by SQLSTATE. Must not: start or stop a server, or time
//! anything.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;

use crate::engine::common::pgwire::PgConn;
use crate::engine::{DbError, Dialect, Driver, Param, RowSink, RowSource, Session, StmtId};

/// A driver for a server reached over TCP by `url` (one this process did not start).
pub fn tcp_driver(
    url: crate::engine::common::connect::ConnectUrl,
    prepared: bool,
) -> Arc<dyn Driver> {
    Arc::new(PgDriver::new(Connect::Url(url), prepared))
}

/// `$1`-style SQL with the parameters written in as literals (for `prepared = false`).
pub(super) fn inline_params(sql: &str, params: &[Param<'_>], out: &mut String) {
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
pub(in crate::engine) struct Endpoint {
    pub(super) socket_dir: PathBuf,
    pub(super) port: u16,
    pub(super) password: String,
}

impl Endpoint {
    pub(super) fn connect(&self) -> Result<PgConn, DbError> {
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
pub(in crate::engine) enum Connect {
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
    pub(super) endpoint: Connect,
    prepared: bool,
}

impl PgDriver {
    pub(in crate::engine) fn new(endpoint: Connect, prepared: bool) -> PgDriver {
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
pub(super) struct CopySink<'a> {
    pub(super) buf: &'a mut Vec<u8>,
    pub(super) first: bool,
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
