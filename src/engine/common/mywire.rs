//! A lean, blocking MySQL/MariaDB client: one connection, one thread, one unix socket.
//!
//! Why it exists: the `mysql` crate turns every result into owned `Row`s and `Column`s, keeps a
//! pool of buffers behind a lock-free queue and re-reads the statement's column definitions on
//! every execution; measured with `perf`, that was most of dbdelta's client CPU per point query
//! against MariaDB. Here a request is one `write` of a reused buffer, the response is read with
//! as few `read`s as its size needs, rows are counted where they lie in the receive buffer, and
//! with MariaDB's `MARIADB_CLIENT_CACHE_METADATA` the server stops resending column definitions
//! of a prepared statement (so the server saves that work too). Handshake, OK/EOF/ERR packets,
//! the prepare response and authentication data come from the `mysql_common` crate; this file
//! frames packets and encodes `COM_STMT_EXECUTE` with borrowed parameters.
//!
//! Owns: the handshake (`mysql_native_password`, `caching_sha2_password` with its fast path
//! and its full authentication: the password in clear over a unix socket, RSA-encrypted with
//! the server's public key over TCP; or a plugin that needs no password data such as
//! `unix_socket`), `COM_QUERY`
//! (text results), `COM_STMT_PREPARE`/`COM_STMT_EXECUTE` (binary results), `LOAD DATA LOCAL
//! INFILE` fed from memory, and server errors with their codes. Must not: time anything, or
//! allocate per execution beyond growing its two reusable buffers.

use crate::engine::common::connect::{Address, ConnectUrl};
use crate::engine::common::wire::Stream;
use std::fmt;
use std::io::Write;
use std::ops::Range;
use std::path::Path;

use mysql_common::constants::{
    CapabilityFlags, ColumnType, Command, MariadbCapabilities, StatusFlags,
};
use mysql_common::io::ParseBuf;
use mysql_common::packets::{
    AuthSwitchRequest, CommonOkPacket, ErrPacket, HandshakePacket, HandshakeResponse,
    OkPacketDeserializer, OldEofPacket, ResultSetTerminator, StmtPacket,
};
use mysql_common::proto::MySerialize;

use crate::engine::common::wire::RecvBuf;
use crate::engine::{DbError, ErrorCode, ErrorKind, Param};

/// Largest payload of one packet; a longer one continues in the next.
const MAX_PAYLOAD: usize = 0xFF_FFFF;
/// Data bytes per packet of a `LOAD DATA LOCAL INFILE` stream.
const INFILE_CHUNK: usize = 256 * 1024;
/// Server error codes the classification knows.
const ER_LOCK_WAIT_TIMEOUT: u16 = 1205;
const ER_LOCK_DEADLOCK: u16 = 1213;
/// Duplicate key: concurrent write-only clients may re-insert the same id (sysbench ignores it).
const ER_DUP_ENTRY: u16 = 1062;
/// Connection-level codes: server gone away / lost, shutdown in progress, connection killed,
/// disconnected for inactivity (MySQL 8).
const RECONNECT_CODES: &[u16] = &[2006, 2013, 1053, 1927, 4031];

/// What the client asks for; the connection uses what the server also offers.
fn wanted_capabilities() -> CapabilityFlags {
    // No CLIENT_LONG_PASSWORD: a MariaDB server reads that bit as "this is a MySQL client" and
    // then ignores MariaDB's extended capabilities.
    CapabilityFlags::CLIENT_PROTOCOL_41
        | CapabilityFlags::CLIENT_SECURE_CONNECTION
        | CapabilityFlags::CLIENT_PLUGIN_AUTH
        | CapabilityFlags::CLIENT_LONG_FLAG
        | CapabilityFlags::CLIENT_TRANSACTIONS
        | CapabilityFlags::CLIENT_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PS_MULTI_RESULTS
        | CapabilityFlags::CLIENT_DEPRECATE_EOF
        | CapabilityFlags::CLIENT_LOCAL_FILES
}

/// An error of this client: the server's (with its code), the socket's, or the protocol's.
#[derive(Debug)]
pub enum MyError {
    Server {
        code: u16,
        state: String,
        message: String,
    },
    Io(std::io::Error),
    Protocol(String),
}

impl MyError {
    /// The server's error code, when the server sent the error.
    pub fn code(&self) -> Option<u16> {
        match self {
            MyError::Server { code, .. } => Some(*code),
            _ => None,
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            MyError::Server { code, .. } => match *code {
                ER_LOCK_DEADLOCK | ER_LOCK_WAIT_TIMEOUT | ER_DUP_ENTRY => ErrorKind::Retryable,
                c if RECONNECT_CODES.contains(&c) => ErrorKind::Reconnect,
                _ => ErrorKind::Fatal,
            },
            // Out of step with the server: only a new connection is safe.
            MyError::Io(_) | MyError::Protocol(_) => ErrorKind::Reconnect,
        }
    }
}

impl fmt::Display for MyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MyError::Server {
                code,
                state,
                message,
            } => write!(f, "ERROR {code} ({state}): {message}"),
            MyError::Io(e) => write!(f, "connection to the MySQL server: {e}"),
            MyError::Protocol(what) => write!(f, "MySQL protocol: {what}"),
        }
    }
}

impl std::error::Error for MyError {}

impl From<MyError> for DbError {
    fn from(e: MyError) -> DbError {
        let code = match &e {
            MyError::Server { code, state, .. } => Some(ErrorCode::MySql {
                errno: *code,
                sqlstate: ErrorCode::sqlstate(state).unwrap_or(*b"HY000"),
            }),
            _ => None,
        };
        DbError {
            kind: e.kind(),
            code,
            message: e.to_string(),
        }
    }
}

impl From<std::io::Error> for MyError {
    fn from(e: std::io::Error) -> MyError {
        MyError::Io(e)
    }
}

fn protocol(what: impl Into<String>) -> MyError {
    MyError::Protocol(what.into())
}

/// A statement prepared on one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stmt {
    pub id: u32,
    pub params: u16,
    pub columns: u16,
}

/// Rows of a text result: every column as text, `None` for NULL.
pub type TextRows = Vec<Vec<Option<String>>>;

/// One connection.
pub struct MyConn {
    sock: Stream,
    /// Outgoing packets; reused.
    out: Vec<u8>,
    /// Incoming bytes.
    rx: RecvBuf,
    /// Sequence id of the last packet read.
    seq: u8,
    caps: CapabilityFlags,
    /// MariaDB skips the column definitions of a prepared statement it has sent before.
    cache_metadata: bool,
    server_version: String,
}

impl MyConn {
    /// Connect over the unix socket `socket` as `user` with `password` (`None`: none) to `db`
    /// (or none).
    pub fn connect(
        socket: &Path,
        user: &str,
        password: Option<&str>,
        db: Option<&str>,
    ) -> Result<MyConn, MyError> {
        Self::login(Stream::unix(socket)?, user, password, db)
    }

    /// Connect to a `connect` target (a socket file or a TCP host) as its user, with its
    /// password when it has one.
    pub fn connect_url(url: &ConnectUrl) -> Result<MyConn, MyError> {
        let sock = match &url.address {
            Address::Unix(path) => Stream::unix(path)?,
            Address::Tcp(host) => Stream::tcp(host, url.port)?,
        };
        Self::login(
            sock,
            &url.user,
            url.password.as_deref(),
            Some(&url.database),
        )
    }

    fn login(
        sock: Stream,
        user: &str,
        password: Option<&str>,
        db: Option<&str>,
    ) -> Result<MyConn, MyError> {
        let mut c = MyConn {
            sock,
            out: Vec::with_capacity(8192),
            rx: RecvBuf::new(64 * 1024),
            seq: 0,
            caps: CapabilityFlags::empty(),
            cache_metadata: false,
            server_version: String::new(),
        };
        c.handshake(user, password, db)?;
        Ok(c)
    }

    /// The version string the server announced.
    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    fn handshake(
        &mut self,
        user: &str,
        password: Option<&str>,
        db: Option<&str>,
    ) -> Result<(), MyError> {
        let p = self.next_packet()?;
        if self.rx.buf.get(p.start) == Some(&0xFF) {
            return Err(self.server_error(p));
        }
        let payload = self.rx.buf[p].to_vec();
        let hs: HandshakePacket<'_> = ParseBuf(&payload).parse(())?;
        let server_caps = hs.capabilities();
        self.caps = wanted_capabilities() & server_caps;
        self.server_version = hs.server_version_str().into_owned();
        let is_mariadb = !server_caps.contains(CapabilityFlags::CLIENT_LONG_PASSWORD);
        let mut ext = MariadbCapabilities::empty();
        if is_mariadb
            && hs
                .mariadb_ext_capabilities()
                .contains(MariadbCapabilities::MARIADB_CLIENT_CACHE_METADATA)
        {
            ext |= MariadbCapabilities::MARIADB_CLIENT_CACHE_METADATA;
        }
        self.cache_metadata = !ext.is_empty();
        let nonce = hs.nonce();
        let plugin = hs.auth_plugin().map(|p| p.into_owned());
        let data = plugin.as_ref().and_then(|p| p.gen_data(password, &nonce));
        let mut scramble = Vec::new();
        if let Some(d) = &data {
            d.serialize(&mut scramble);
        }
        let response = HandshakeResponse::new(
            Some(scramble),
            hs.server_version_parsed().unwrap_or((5, 5, 5)),
            Some(user.as_bytes()),
            db.map(str::as_bytes),
            plugin,
            self.caps,
            None,
            MAX_PAYLOAD as u32,
        )
        .with_mariadb_ext_capabilities(ext);
        // The response may add CLIENT_CONNECT_WITH_DB; later packets parse with its flags.
        self.caps = response.capabilities();
        self.begin_packet();
        response.serialize(&mut self.out);
        let seq = self.seq.wrapping_add(1);
        self.send(seq)?;
        self.authenticate(password, nonce)
    }

    /// The server's answers after the handshake response, until its OK or its error.
    fn authenticate(&mut self, password: Option<&str>, mut nonce: Vec<u8>) -> Result<(), MyError> {
        loop {
            let p = self.next_packet()?;
            let payload = self.rx.buf[p.clone()].to_vec();
            match payload.first() {
                Some(0x00) => return Ok(()),
                Some(0xFF) => return Err(self.server_error(p)),
                Some(0xFE) => {
                    // Auth switch: answer for the plugin the server names.
                    let req: AuthSwitchRequest<'_> = ParseBuf(&payload).parse(())?;
                    let data = req.plugin_data();
                    nonce = data.strip_suffix(&[0]).unwrap_or(data).to_vec();
                    self.begin_packet();
                    if let Some(d) = req.auth_plugin().gen_data(password, &nonce) {
                        d.serialize(&mut self.out);
                    }
                    self.send(self.seq.wrapping_add(1))?;
                }
                // caching_sha2_password's "fast authentication succeeded"; the OK follows.
                Some(0x01) if payload == [0x01, 0x03] => {}
                // caching_sha2_password's "perform full authentication": the server has not
                // cached this account's password since it started.
                Some(0x01) if payload == [0x01, 0x04] => self.full_auth(password)?,
                // The public key asked for by `full_auth`.
                Some(0x01) => {
                    let pem = &payload[1..];
                    let mut clear = password.unwrap_or_default().as_bytes().to_vec();
                    clear.push(0);
                    for (i, b) in clear.iter_mut().enumerate() {
                        *b ^= nonce.get(i % nonce.len().max(1)).copied().unwrap_or(0);
                    }
                    let sealed = mysql_common::crypto::encrypt(&clear, pem);
                    self.begin_packet();
                    self.out.extend_from_slice(&sealed);
                    self.send(self.seq.wrapping_add(1))?;
                }
                _ => {
                    return Err(protocol(
                        "an authentication packet this client does not know",
                    ));
                }
            }
        }
    }

    /// caching_sha2_password's full authentication: the password in clear over a unix socket
    /// (the server accepts it there), else a request for the server's RSA public key, which
    /// [`MyConn::authenticate`] answers with the password sealed by it.
    fn full_auth(&mut self, password: Option<&str>) -> Result<(), MyError> {
        let Some(password) = password else {
            return Err(protocol(
                "the server asks for a password (caching_sha2_password); put it in the connect URL (mysql://user:password@host/db)",
            ));
        };
        self.begin_packet();
        match self.sock {
            Stream::Unix(_) => {
                self.out.extend_from_slice(password.as_bytes());
                self.out.push(0);
            }
            Stream::Tcp(_) => self.out.push(0x02),
        }
        self.send(self.seq.wrapping_add(1))
    }

    // -----------------------------------------------------------------------------------------
    // Packets

    /// Start a packet in `out`: room for its header.
    fn begin_packet(&mut self) {
        self.out.clear();
        self.out.extend_from_slice(&[0; 4]);
    }

    /// Frame the payload in `out` (after the 4 header bytes) with sequence id `seq`, send it.
    fn send(&mut self, seq: u8) -> Result<(), MyError> {
        let len = self.out.len() - 4;
        if len < MAX_PAYLOAD {
            self.out[..3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
            self.out[3] = seq;
            self.sock.write_all(&self.out)?;
            self.rx.sent();
            self.seq = seq;
            return Ok(());
        }
        // Long payload (large statements): split into packets of MAX_PAYLOAD, ending with a
        // shorter (possibly empty) one.
        let payload = self.out.split_off(4);
        let mut seq = seq;
        let mut chunks = payload.chunks(MAX_PAYLOAD).peekable();
        let mut last_len = 0;
        while let Some(chunk) = chunks.next() {
            self.write_packet(chunk, seq)?;
            last_len = chunk.len();
            if chunks.peek().is_some() {
                seq = seq.wrapping_add(1);
            }
        }
        if last_len == MAX_PAYLOAD {
            seq = seq.wrapping_add(1);
            self.write_packet(&[], seq)?;
        }
        self.seq = seq;
        Ok(())
    }

    fn write_packet(&mut self, payload: &[u8], seq: u8) -> Result<(), MyError> {
        let mut head = (payload.len() as u32).to_le_bytes();
        head[3] = seq;
        self.sock.write_all(&head)?;
        self.sock.write_all(payload)?;
        self.rx.sent();
        Ok(())
    }

    /// Send a command: its byte and `body`, as packet 0 of a new exchange.
    fn command(&mut self, cmd: Command, body: &[u8]) -> Result<(), MyError> {
        self.begin_packet();
        self.out.push(cmd as u8);
        self.out.extend_from_slice(body);
        self.send(0)
    }

    /// The next whole packet's payload range in `self.rx.buf`.
    fn next_packet(&mut self) -> Result<Range<usize>, MyError> {
        loop {
            let avail = self.rx.available();
            let need = if avail.len() >= 4 {
                let len = u32::from_le_bytes([avail[0], avail[1], avail[2], 0]) as usize;
                if len == MAX_PAYLOAD {
                    return Err(protocol("a packet of 16 MiB or more (not supported)"));
                }
                let total = 4 + len;
                if avail.len() >= total {
                    self.seq = avail[3];
                    let r = self.rx.consume(total);
                    return Ok(r.start + 4..r.end);
                }
                total
            } else {
                4
            };
            self.rx.fill(&mut self.sock, need)?;
        }
    }

    fn server_error(&self, p: Range<usize>) -> MyError {
        match ParseBuf(&self.rx.buf[p]).parse::<ErrPacket<'_>>(self.caps) {
            Ok(ErrPacket::Error(e)) => MyError::Server {
                code: e.error_code(),
                state: e
                    .sql_state_ref()
                    .map(|s| s.as_str().into_owned())
                    .unwrap_or_default(),
                message: e.message_str().into_owned(),
            },
            Ok(ErrPacket::Progress(_)) => protocol("a progress report where an error was due"),
            Err(e) => protocol(format!("unreadable error packet: {e}")),
        }
    }

    /// Status flags of an OK packet (0x00 header) and its affected rows.
    fn ok(&self, p: Range<usize>) -> Result<(StatusFlags, u64), MyError> {
        let ok = ParseBuf(&self.rx.buf[p])
            .parse::<OkPacketDeserializer<'_, CommonOkPacket>>(self.caps)?
            .into_inner();
        Ok((ok.status_flags(), ok.affected_rows()))
    }

    /// Status flags of the packet that ends a result set's rows.
    fn terminator(&self, p: Range<usize>) -> Result<StatusFlags, MyError> {
        let mut pb = ParseBuf(&self.rx.buf[p]);
        let ok = if self.caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF) {
            pb.parse::<OkPacketDeserializer<'_, ResultSetTerminator>>(self.caps)?
                .into_inner()
        } else {
            pb.parse::<OkPacketDeserializer<'_, OldEofPacket>>(self.caps)?
                .into_inner()
        };
        Ok(ok.status_flags())
    }

    /// Skip `n` packets, then the EOF packet that ends them when the server still sends one.
    fn skip_definitions(&mut self, n: usize) -> Result<(), MyError> {
        let eof = usize::from(!self.caps.contains(CapabilityFlags::CLIENT_DEPRECATE_EOF));
        for _ in 0..n + eof {
            self.next_packet()?;
        }
        Ok(())
    }

    /// Read a command's whole response (every result set): (rows returned, rows affected).
    /// `row` sees each row's payload.
    fn response(&mut self, mut row: impl FnMut(&[u8])) -> Result<(u64, u64), MyError> {
        let mut rows = 0u64;
        let mut affected = 0u64;
        loop {
            let p = self.next_packet()?;
            let status = match self.rx.buf.get(p.start).copied() {
                Some(0x00) => {
                    let (status, n) = self.ok(p)?;
                    affected += n;
                    status
                }
                Some(0xFF) => return Err(self.server_error(p)),
                Some(0xFB) => {
                    return Err(protocol(
                        "the server asks for a local file outside LOAD DATA LOCAL",
                    ));
                }
                Some(_) => {
                    let mut pb = ParseBuf(&self.rx.buf[p]);
                    let columns = pb
                        .checked_eat_lenenc_int()
                        .ok_or_else(|| protocol("short column count"))?;
                    let metadata = !self.cache_metadata || pb.checked_eat_u8() != Some(0);
                    if metadata {
                        self.skip_definitions(columns as usize)?;
                    } else {
                        self.skip_definitions(0)?;
                    }
                    loop {
                        let p = self.next_packet()?;
                        match self.rx.buf.get(p.start).copied() {
                            Some(0xFF) => return Err(self.server_error(p)),
                            Some(0xFE) if p.len() < MAX_PAYLOAD => break self.terminator(p)?,
                            _ => {
                                rows += 1;
                                row(&self.rx.buf[p]);
                            }
                        }
                    }
                }
                None => return Err(protocol("an empty packet where a response was due")),
            };
            if !status.contains(StatusFlags::SERVER_MORE_RESULTS_EXISTS) {
                return Ok((rows, affected));
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Commands

    /// Run SQL text (`COM_QUERY`); returns rows returned, or rows affected when none.
    pub fn query(&mut self, sql: &str) -> Result<u64, MyError> {
        self.command(Command::COM_QUERY, sql.as_bytes())?;
        let (rows, affected) = self.response(|_| {})?;
        Ok(if rows > 0 { rows } else { affected })
    }

    /// Run SQL text and return every row's columns as text.
    pub fn rows(&mut self, sql: &str) -> Result<TextRows, MyError> {
        self.command(Command::COM_QUERY, sql.as_bytes())?;
        let mut out = Vec::new();
        self.response(|payload| out.push(decode_text_row(payload)))?;
        Ok(out)
    }

    /// Run SQL text and return the first column of every row as text ("NULL" for NULL).
    pub fn first_column(&mut self, sql: &str) -> Result<Vec<String>, MyError> {
        self.command(Command::COM_QUERY, sql.as_bytes())?;
        let mut out = Vec::new();
        self.response(|payload| {
            let first = decode_text_row(payload).into_iter().next().flatten();
            out.push(first.unwrap_or_else(|| "NULL".into()));
        })?;
        Ok(out)
    }

    /// The first column of the first row, `None` without rows or for NULL.
    pub fn first(&mut self, sql: &str) -> Result<Option<String>, MyError> {
        Ok(self
            .rows(sql)?
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten()))
    }

    /// Prepare a statement on the server.
    pub fn prepare(&mut self, sql: &str) -> Result<Stmt, MyError> {
        self.command(Command::COM_STMT_PREPARE, sql.as_bytes())?;
        let p = self.next_packet()?;
        if self.rx.buf.get(p.start) == Some(&0xFF) {
            return Err(self.server_error(p));
        }
        let sp: StmtPacket = ParseBuf(&self.rx.buf[p]).parse(())?;
        let stmt = Stmt {
            id: sp.statement_id(),
            params: sp.num_params(),
            columns: sp.num_columns(),
        };
        if stmt.params > 0 {
            self.skip_definitions(usize::from(stmt.params))?;
        }
        if stmt.columns > 0 {
            self.skip_definitions(usize::from(stmt.columns))?;
        }
        Ok(stmt)
    }

    /// Execute a prepared statement with `params` (binary protocol); returns rows returned,
    /// or rows affected when none.
    pub fn execute(&mut self, stmt: &Stmt, params: &[Param<'_>]) -> Result<u64, MyError> {
        if params.len() != usize::from(stmt.params) {
            return Err(MyError::Protocol(format!(
                "statement has {} placeholders but {} parameters were given",
                stmt.params,
                params.len()
            )));
        }
        self.begin_packet();
        let out = &mut self.out;
        out.push(Command::COM_STMT_EXECUTE as u8);
        out.extend_from_slice(&stmt.id.to_le_bytes());
        out.push(0); // no cursor
        out.extend_from_slice(&1u32.to_le_bytes()); // iteration count
        if !params.is_empty() {
            // NULL bitmap (no NULLs), then "types follow" and one (type, flags) pair each.
            out.resize(out.len() + params.len().div_ceil(8), 0);
            out.push(1);
            for p in params {
                let ty = match p {
                    Param::Int(_) => ColumnType::MYSQL_TYPE_LONGLONG,
                    Param::Text(_) => ColumnType::MYSQL_TYPE_VAR_STRING,
                };
                out.extend_from_slice(&[ty as u8, 0]);
            }
            for p in params {
                match *p {
                    Param::Int(v) => out.extend_from_slice(&v.to_le_bytes()),
                    Param::Text(s) => {
                        put_lenenc_int(out, s.len() as u64);
                        out.extend_from_slice(s.as_bytes());
                    }
                }
            }
        }
        self.send(0)?;
        let (rows, affected) = self.response(|_| {})?;
        Ok(if rows > 0 { rows } else { affected })
    }

    /// `LOAD DATA LOCAL INFILE` (`sql`) fed from memory: `fill` appends rows in the statement's
    /// format to the buffer it is given and returns false when there are no more. Returns the
    /// rows the server loaded.
    pub fn load_local(
        &mut self,
        sql: &str,
        mut fill: impl FnMut(&mut Vec<u8>) -> bool,
    ) -> Result<u64, MyError> {
        self.command(Command::COM_QUERY, sql.as_bytes())?;
        let p = self.next_packet()?;
        match self.rx.buf.get(p.start) {
            Some(0xFB) => {}
            Some(0xFF) => return Err(self.server_error(p)),
            _ => {
                return Err(protocol(
                    "LOAD DATA LOCAL: the server did not ask for the data",
                ));
            }
        }
        let mut seq = self.seq;
        let mut more = true;
        while more {
            self.begin_packet();
            while more && self.out.len() - 4 < INFILE_CHUNK {
                more = fill(&mut self.out);
            }
            if self.out.len() == 4 {
                break;
            }
            seq = seq.wrapping_add(1);
            self.send(seq)?;
            seq = self.seq;
        }
        // An empty packet ends the data.
        self.begin_packet();
        self.send(seq.wrapping_add(1))?;
        let (_, affected) = self.response(|_| {})?;
        Ok(affected)
    }
}

impl Drop for MyConn {
    fn drop(&mut self) {
        let _ = self.command(Command::COM_QUIT, &[]);
    }
}

/// Append a length-encoded integer.
fn put_lenenc_int(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=250 => out.push(n as u8),
        251..=0xFFFF => {
            out.push(0xFC);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            out.push(0xFD);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xFE);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// Columns of a text-protocol row (`None` for NULL, 0xFB).
fn decode_text_row(payload: &[u8]) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut pb = ParseBuf(payload);
    while !pb.is_empty() {
        if pb.0[0] == 0xFB {
            pb.skip(1);
            out.push(None);
            continue;
        }
        match pb.checked_eat_lenenc_str() {
            Some(s) => out.push(Some(String::from_utf8_lossy(s).into_owned())),
            None => break,
        }
    }
    out
}

/// Append `s` as a field of `LOAD DATA`'s default format (tab-separated, backslash escapes).
pub fn push_infile_field(out: &mut Vec<u8>, s: &[u8]) {
    for &b in s {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0 => out.extend_from_slice(b"\\0"),
            b => out.push(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_integers_take_their_shortest_form() {
        let enc = |n| {
            let mut v = Vec::new();
            put_lenenc_int(&mut v, n);
            v
        };
        assert_eq!(enc(250), [250]);
        assert_eq!(enc(251), [0xFC, 251, 0]);
        assert_eq!(enc(0x1_0000), [0xFD, 0, 0, 1]);
        assert_eq!(enc(1 << 24), [0xFE, 0, 0, 0, 1, 0, 0, 0, 0]);
    }

    #[test]
    fn text_rows_decode_nulls_and_strings() {
        let payload = [2, b'a', b'b', 0xFB, 0];
        assert_eq!(
            decode_text_row(&payload),
            vec![Some("ab".to_string()), None, Some(String::new())]
        );
    }

    #[test]
    fn infile_fields_escape_separators() {
        let mut out = Vec::new();
        push_infile_field(&mut out, b"a\tb\nc\\d\0");
        assert_eq!(out, b"a\\tb\\nc\\\\d\\0");
    }

    #[test]
    fn errors_are_classified() {
        let server = |code| MyError::Server {
            code,
            state: "HY000".into(),
            message: "test".into(),
        };
        for (code, kind) in [
            (1213, ErrorKind::Retryable),
            (1205, ErrorKind::Retryable),
            (1062, ErrorKind::Retryable),
            (2006, ErrorKind::Reconnect),
            (2013, ErrorKind::Reconnect),
            (1064, ErrorKind::Fatal),
            (1146, ErrorKind::Fatal),
        ] {
            assert_eq!(server(code).kind(), kind, "{code}");
        }
        let io = MyError::Io(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "gone"));
        assert_eq!(io.kind(), ErrorKind::Reconnect);
        assert_eq!(DbError::from(server(1213)).kind, ErrorKind::Retryable);
        assert!(server(1146).to_string().contains("1146"));
    }
}
