//! A lean, blocking PostgreSQL wire-protocol client: one connection, one thread, no runtime.
//!
//! Why it exists: the `postgres` crate drives tokio underneath, which costs two extra
//! `epoll_wait` calls per query (measured with `strace -c`: 4.1 syscalls per point query against
//! a floor of 2). Here a request is one `write` of the whole message batch and the response is
//! read with as few `read`s as its size needs. Message encoding and framing come from the
//! `postgres-protocol` crate; this file only moves bytes and reads message tags.
//!
//! Owns: startup (trust, clear-text, MD5 or SCRAM-SHA-256: dbdelta's own servers ask for
//! SCRAM), the extended protocol (Parse/Describe/Sync once, then Bind/Execute/Sync per
//! execution, parameters and results in text format as pgbench and sysbench send them), simple
//! queries, `COPY ... FROM STDIN`, and
//! turning `ErrorResponse` into a classified [`DbError`]. Must not: time anything, or allocate
//! per execution beyond growing its two reusable buffers.

use postgres_protocol::authentication::{
    self,
    sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256},
};
use std::io::Write;

use crate::engine::common::connect::{Address, ConnectUrl};
use crate::engine::common::wire::Stream;
use std::path::Path;

use bytes::{BufMut, BytesMut};
use postgres_protocol::IsNull;
use postgres_protocol::message::backend::Header;
use postgres_protocol::message::frontend;

use crate::engine::common::wire::{RecvBuf, Wait};
use crate::engine::{DbError, ErrorCode, ErrorKind, Param};

/// A server error: SQLSTATE and message.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerError {
    pub code: String,
    pub message: String,
}

fn classify_code(code: &str) -> ErrorKind {
    match code {
        // serialization failure, deadlock, lock not available, and a duplicate key: two clients
        // of write-only can delete and re-insert the same id at once (sysbench ignores it too)
        "40001" | "40P01" | "55P03" | "23505" => ErrorKind::Retryable,
        // admin/crash shutdown, cannot connect now
        "57P01" | "57P02" | "57P03" => ErrorKind::Reconnect,
        _ => ErrorKind::Fatal,
    }
}

impl From<ServerError> for DbError {
    fn from(e: ServerError) -> DbError {
        DbError {
            kind: classify_code(&e.code),
            code: ErrorCode::sqlstate(&e.code).map(ErrorCode::SqlState),
            message: format!("{}: {}", e.code, e.message),
        }
    }
}

fn io_err(e: std::io::Error) -> DbError {
    DbError {
        kind: ErrorKind::Reconnect,
        code: None,
        message: format!("connection to PostgreSQL: {e}"),
    }
}

fn protocol(what: &str) -> DbError {
    DbError::fatal(format!("PostgreSQL protocol: {what}"))
}

/// Parse an `ErrorResponse` body: fields of (type byte, C string), ended by a zero byte.
fn parse_error(body: &[u8]) -> ServerError {
    let mut code = String::new();
    let mut message = String::new();
    let mut rest = body;
    while let Some((&kind, tail)) = rest.split_first() {
        if kind == 0 {
            break;
        }
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        let value = String::from_utf8_lossy(&tail[..end]);
        match kind {
            b'C' => code = value.into_owned(),
            b'M' => message = value.into_owned(),
            _ => {}
        }
        rest = tail.get(end + 1..).unwrap_or(&[]);
    }
    ServerError { code, message }
}

/// Rows affected from a `CommandComplete` tag: the last number (`UPDATE 1`, `INSERT 0 1`).
fn tag_rows(body: &[u8]) -> u64 {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    tag.rsplit(|&b| b == b' ')
        .next()
        .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
        .unwrap_or(0)
}

/// One connection.
pub struct PgConn {
    sock: Stream,
    out: BytesMut,
    rx: RecvBuf,
    itoa: itoa::Buffer,
}

impl PgConn {
    /// Connect over the unix socket of `socket_dir`/`port` and log in (with `password` when
    /// the server asks for one).
    pub fn connect(
        socket_dir: &Path,
        port: u16,
        user: &str,
        dbname: &str,
        password: Option<&str>,
    ) -> Result<PgConn, DbError> {
        let path = socket_dir.join(format!(".s.PGSQL.{port}"));
        Self::login(Stream::unix(&path).map_err(io_err)?, user, dbname, password)
    }

    /// Connect to a `connect` target: a socket directory or a TCP host, logging in with
    /// trust, a clear-text or MD5 password, or SCRAM-SHA-256.
    pub fn connect_url(url: &ConnectUrl) -> Result<PgConn, DbError> {
        let sock = match &url.address {
            Address::Unix(dir) => Stream::unix(&dir.join(format!(".s.PGSQL.{}", url.port))),
            Address::Tcp(host) => Stream::tcp(host, url.port),
        }
        .map_err(io_err)?;
        Self::login(sock, &url.user, &url.database, url.password.as_deref())
    }

    fn login(
        sock: Stream,
        user: &str,
        dbname: &str,
        password: Option<&str>,
    ) -> Result<PgConn, DbError> {
        let mut c = PgConn {
            sock,
            out: BytesMut::with_capacity(8192),
            rx: RecvBuf::new(64 * 1024),
            itoa: itoa::Buffer::new(),
        };
        frontend::startup_message(
            [
                ("user", user),
                ("database", dbname),
                ("client_encoding", "UTF8"),
            ],
            &mut c.out,
        )
        .map_err(io_err)?;
        c.flush()?;
        let mut scram = None;
        loop {
            let (tag, body) = c.next()?;
            match tag {
                b'R' => {
                    let msg = c.rx.buf[body].to_vec();
                    c.authenticate(&msg, user, password, &mut scram)?;
                }
                b'E' => return Err(parse_error(&c.rx.buf[body]).into()),
                b'Z' => return Ok(c),
                _ => {} // ParameterStatus, BackendKeyData, notices
            }
        }
    }

    /// Answer one `Authentication*` message (`msg`: its body).
    fn authenticate(
        &mut self,
        msg: &[u8],
        user: &str,
        password: Option<&str>,
        scram: &mut Option<ScramSha256>,
    ) -> Result<(), DbError> {
        let kind = msg
            .get(..4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let rest = msg.get(4..).unwrap_or_default();
        let need = || {
            DbError::fatal(
                "the server asks for a password: put it in the connect URL \
                 (postgres://user:password@host/db) or use trust authentication",
            )
        };
        match kind {
            Some(0) => return Ok(()),
            Some(12) => {
                // SASLFinal: the server's proof that it knows the password too.
                let s = scram
                    .as_mut()
                    .ok_or_else(|| DbError::fatal("SASLFinal without SASL"))?;
                return s.finish(rest).map_err(io_err);
            }
            Some(3) => {
                frontend::password_message(password.ok_or_else(need)?.as_bytes(), &mut self.out)
                    .map_err(io_err)?
            }
            Some(5) => {
                let salt: [u8; 4] = rest
                    .get(..4)
                    .and_then(|s| s.try_into().ok())
                    .ok_or_else(|| DbError::fatal("a short MD5 salt"))?;
                let hash = authentication::md5_hash(
                    user.as_bytes(),
                    password.ok_or_else(need)?.as_bytes(),
                    salt,
                );
                frontend::password_message(hash.as_bytes(), &mut self.out).map_err(io_err)?;
            }
            Some(10) => {
                let s = ScramSha256::new(
                    password.ok_or_else(need)?.as_bytes(),
                    ChannelBinding::unsupported(),
                );
                frontend::sasl_initial_response(SCRAM_SHA_256, s.message(), &mut self.out)
                    .map_err(io_err)?;
                *scram = Some(s);
            }
            Some(11) => {
                let s = scram
                    .as_mut()
                    .ok_or_else(|| DbError::fatal("SASLContinue without SASL"))?;
                s.update(rest).map_err(io_err)?;
                frontend::sasl_response(s.message(), &mut self.out).map_err(io_err)?;
            }
            other => {
                return Err(DbError::fatal(format!(
                    "the server asks for authentication method {other:?}, which dbdelta's client does not speak (trust, password, md5 and SCRAM-SHA-256 it does)"
                )));
            }
        }
        self.flush()
    }

    fn flush(&mut self) -> Result<(), DbError> {
        self.sock.write_all(&self.out).map_err(io_err)?;
        self.out.clear();
        self.rx.sent();
        Ok(())
    }

    /// The next whole message: its tag and the range of its body in `self.rx.buf`.
    fn next(&mut self) -> Result<(u8, std::ops::Range<usize>), DbError> {
        loop {
            let avail = self.rx.available();
            let need = match Header::parse(avail).map_err(io_err)? {
                Some(h) => {
                    let total = 1 + h.len() as usize;
                    if avail.len() >= total {
                        let r = self.rx.consume(total);
                        return Ok((h.tag(), r.start + 5..r.end));
                    }
                    total
                }
                None => 5,
            };
            self.rx.fill(&mut self.sock, need).map_err(io_err)?;
        }
    }

    /// Read to `ReadyForQuery`: (data rows, rows affected by the command), or the first error.
    fn finish(&mut self, mut row: impl FnMut(&[u8])) -> Result<(u64, u64), DbError> {
        let mut rows = 0u64;
        let mut affected = 0u64;
        let mut error = None;
        loop {
            let (tag, body) = self.next()?;
            match tag {
                b'D' => {
                    rows += 1;
                    row(&self.rx.buf[body]);
                }
                b'C' => affected = tag_rows(&self.rx.buf[body]),
                b'E' => error = Some(parse_error(&self.rx.buf[body])),
                b'Z' => break,
                _ => {} // ParseComplete, BindComplete, RowDescription, NoData, notices, ...
            }
        }
        match error {
            Some(e) => Err(e.into()),
            None => Ok((rows, affected)),
        }
    }

    /// How to wait for replies (default adaptive; see [`crate::engine::common::wire`]); `bench/client-cost`
    /// measures each.
    pub fn set_wait(&mut self, wait: Wait) {
        self.rx.set_wait(wait);
    }

    /// Prepare a named statement (types inferred by the server).
    pub fn prepare(&mut self, name: &str, sql: &str) -> Result<(), DbError> {
        frontend::parse(name, sql, std::iter::empty(), &mut self.out).map_err(io_err)?;
        frontend::sync(&mut self.out);
        self.flush()?;
        self.finish(|_| {}).map(|_| ())
    }

    /// Execute a prepared statement; returns rows returned, or rows affected when none.
    pub fn execute(&mut self, name: &str, params: &[Param<'_>]) -> Result<u64, DbError> {
        let itoa = &mut self.itoa;
        let bound = frontend::bind(
            "",
            name,
            std::iter::empty(),
            params.iter(),
            |p, buf: &mut BytesMut| {
                match *p {
                    Param::Int(v) => buf.put_slice(itoa.format(v).as_bytes()),
                    Param::Text(s) => buf.put_slice(s.as_bytes()),
                }
                Ok(IsNull::No)
            },
            std::iter::empty(),
            &mut self.out,
        );
        if bound.is_err() {
            self.out.clear();
            return Err(protocol("cannot encode the parameters"));
        }
        self.out.put_slice(EXECUTE_SYNC);
        self.flush()?;
        let (rows, affected) = self.finish(|_| {})?;
        Ok(if rows > 0 { rows } else { affected })
    }

    /// Run SQL over the simple protocol; returns rows returned, or rows affected when none.
    pub fn simple(&mut self, sql: &str) -> Result<u64, DbError> {
        frontend::query(sql, &mut self.out).map_err(io_err)?;
        self.flush()?;
        let (rows, affected) = self.finish(|_| {})?;
        Ok(if rows > 0 { rows } else { affected })
    }

    /// Run a query over the simple protocol and return every row's columns as text.
    pub fn rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
        frontend::query(sql, &mut self.out).map_err(io_err)?;
        self.flush()?;
        let mut out = Vec::new();
        self.finish(|body| out.push(decode_row(body)))?;
        Ok(out)
    }

    /// `COPY ... FROM STDIN`: `fill` appends text-format rows to the buffer it is given and
    /// returns false when there are no more; data is sent in 64 KiB chunks.
    pub fn copy_in(
        &mut self,
        sql: &str,
        mut fill: impl FnMut(&mut Vec<u8>) -> bool,
    ) -> Result<u64, DbError> {
        frontend::query(sql, &mut self.out).map_err(io_err)?;
        self.flush()?;
        loop {
            let (tag, body) = self.next()?;
            match tag {
                b'G' => break,
                b'E' => {
                    let e = parse_error(&self.rx.buf[body]);
                    self.finish(|_| {})?;
                    return Err(e.into());
                }
                _ => {}
            }
        }
        let mut chunk = Vec::with_capacity(1 << 17);
        let mut more = true;
        while more {
            while more && chunk.len() < 1 << 16 {
                more = fill(&mut chunk);
            }
            // CopyData: 'd', length, bytes.
            self.out.put_u8(b'd');
            self.out.put_i32(4 + chunk.len() as i32);
            self.out.put_slice(&chunk);
            chunk.clear();
            self.flush()?;
        }
        frontend::copy_done(&mut self.out);
        self.flush()?;
        let (_, affected) = self.finish(|_| {})?;
        Ok(affected)
    }
}

impl Drop for PgConn {
    fn drop(&mut self) {
        frontend::terminate(&mut self.out);
        let _ = self.sock.write_all(&self.out);
    }
}

/// Columns of a `DataRow` body as text (`None` for NULL).
fn decode_row(body: &[u8]) -> Vec<Option<String>> {
    let mut out = Vec::new();
    if body.len() < 2 {
        return out;
    }
    let n = i16::from_be_bytes([body[0], body[1]]).max(0) as usize;
    let mut at = 2;
    for _ in 0..n {
        let Some(len) = body.get(at..at + 4) else {
            break;
        };
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        at += 4;
        if len < 0 {
            out.push(None);
        } else {
            let end = (at + len as usize).min(body.len());
            out.push(Some(String::from_utf8_lossy(&body[at..end]).into_owned()));
            at = end;
        }
    }
    out
}

/// `Execute` of the unnamed portal with no row limit, then `Sync`: the same 15 bytes after every
/// statement's `Bind`, so written as they are. `postgres-protocol`'s encoders of them, called out
/// of line since the engine folders were split, cost the client 33 of its 2,438 instructions per
/// point query (callgrind, PostgreSQL 15); a test checks the bytes against those encoders.
const EXECUTE_SYNC: &[u8] = b"E\0\0\0\x09\0\0\0\0\0S\0\0\0\x04";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execute_and_sync_are_the_bytes_the_protocol_crate_encodes() {
        let mut encoded = BytesMut::new();
        frontend::execute("", 0, &mut encoded).unwrap();
        frontend::sync(&mut encoded);
        assert_eq!(&encoded[..], EXECUTE_SYNC);
    }

    #[test]
    fn reads_error_fields_and_command_tags() {
        let body = b"SERROR\0C40001\0Mcould not serialize access\0\0";
        let e = parse_error(body);
        assert_eq!(e.code, "40001");
        assert_eq!(DbError::from(e).kind, ErrorKind::Retryable);
        assert_eq!(tag_rows(b"UPDATE 1\0"), 1);
        assert_eq!(tag_rows(b"INSERT 0 7\0"), 7);
        assert_eq!(tag_rows(b"BEGIN\0"), 0);
    }

    #[test]
    fn decodes_data_rows() {
        // 2 columns: "ab", NULL
        let body = [0, 2, 0, 0, 0, 2, b'a', b'b', 0xff, 0xff, 0xff, 0xff];
        assert_eq!(decode_row(&body), vec![Some("ab".to_string()), None]);
    }
}
