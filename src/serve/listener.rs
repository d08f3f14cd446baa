//! The HTTP/1.1 listener under `dbdelta serve`: accepting, a bounded number of connections,
//! each request's head read within a size and time limit, and the answers written back.
//!
//! Owns the accept loop (on its own thread; an error such as EMFILE never ends it: the oldest
//! connection that is not waiting for its answer is closed, the loop waits [`BACKOFF`] and
//! listens on), the connection cap ([`Limits::connections`]: a new connection at the cap
//! closes that oldest one, so a flood of idle connections cannot keep a real client out),
//! reading a request head on a thread of the connection's own (parsed by `httparse`; its
//! line and headers bounded: 414, 431; sent within [`Limits::head_time`]: 408) and writing
//! the answer on that thread, one request per connection (`Connection: close`; no body for
//! HEAD). Must not: answer a request itself (its caller does, one at a time, from
//! [`Server::next`]), read a request body, or hold more than a small buffer per connection.

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long the accept loop waits after an error (no descriptor left, no memory) before it
/// tries again.
pub const BACKOFF: Duration = Duration::from_millis(50);

/// Connections at most, whatever the descriptor limit allows.
const MAX_CONNECTIONS: usize = 64;

/// Descriptors left to the rest of the process (the store, its `-wal` and `-shm`, SQLite's
/// temporary files, standard streams) when the cap is derived from `RLIMIT_NOFILE`.
const FD_RESERVE: usize = 32;

/// After an answer, how long (and how many bytes) the rest of a request is read and dropped
/// before the connection closes, so that the client reads the answer before a reset.
const LINGER: Duration = Duration::from_secs(1);
const LINGER_BYTES: usize = 1 << 20;

/// The bounds of a connection.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once (reading a request, waiting for or writing its answer).
    pub connections: usize,
    /// Time to send the whole request head, from the connection's accept.
    pub head_time: Duration,
    /// Bytes of the request line (414 beyond).
    pub line_bytes: usize,
    /// Bytes of the whole head, request line and headers (431 beyond).
    pub head_bytes: usize,
    /// Header fields (431 beyond).
    pub headers: usize,
    /// Time one write of the answer may block on a client that does not read.
    pub write_time: Duration,
}

impl Limits {
    /// `dbdelta serve`'s bounds: at most [`MAX_CONNECTIONS`] connections, fewer when
    /// `RLIMIT_NOFILE` leaves less room (at least 1).
    pub fn for_this_process() -> Limits {
        Limits {
            connections: connection_cap(open_descriptors().unwrap_or(FD_RESERVE)),
            head_time: Duration::from_secs(10),
            line_bytes: 8 << 10,
            head_bytes: 32 << 10,
            headers: 64,
            write_time: Duration::from_secs(30),
        }
    }
}

/// [`MAX_CONNECTIONS`], or what the soft open-file limit leaves to connections once `others`
/// descriptors (all but the connections') and [`FD_RESERVE`] are counted; at least 1.
fn connection_cap(others: usize) -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `rlimit` into `limit`, which outlives the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return MAX_CONNECTIONS;
    }
    let soft = usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX);
    soft.saturating_sub(others + FD_RESERVE)
        .clamp(1, MAX_CONNECTIONS)
}

/// The descriptors this process has open (None when even that cannot be read).
fn open_descriptors() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/fd").ok()?.count())
}

/// A request's head.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: String,
    /// The request target as sent (`/run/x?y=z`).
    pub target: String,
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// The first header named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        (self.headers.iter())
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// An answer: status, header fields (names and values without CR or LF) and body.
/// `Content-Length`, `Date` and `Connection: close` are added when it is written.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// A request waiting for its answer.
pub struct Exchange {
    pub request: Request,
    answer: SyncSender<Response>,
}

impl Exchange {
    /// Hand the answer to the connection's thread, which writes it: never blocks (a client
    /// that does not read holds that thread, not the caller). A connection closed meanwhile
    /// drops it.
    pub fn respond(self, response: Response) {
        let _ = self.answer.send(response);
    }
}

/// A listening socket and the requests read from its connections.
pub struct Server {
    addr: SocketAddr,
    requests: Receiver<Exchange>,
}

impl Server {
    /// Listen on `addr` and accept on a thread of its own for the rest of the process.
    pub fn bind(addr: SocketAddr, limits: Limits) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let (send, requests) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("serve-accept".into())
            .spawn(move || accept_loop(&listener, limits, &send))?;
        Ok(Server { addr, requests })
    }

    /// The address it listens on (the port chosen when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The next request whose head was read, or None after `wait`.
    pub fn next(&self, wait: Duration) -> anyhow::Result<Option<Exchange>> {
        use std::sync::mpsc::RecvTimeoutError;
        match self.requests.recv_timeout(wait) {
            Ok(exchange) => Ok(Some(exchange)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => {
                anyhow::bail!("the server's accept loop ended (a bug: it must never end)")
            }
        }
    }
}

/// Where a connection is: only one waiting for its answer is never closed to make room.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stage {
    Reading,
    Waiting,
    Writing,
}

/// The open connections, oldest first (ids only grow).
#[derive(Default)]
struct Slots {
    next: u64,
    open: BTreeMap<u64, (Arc<TcpStream>, Stage)>,
}

type Shared = Arc<Mutex<Slots>>;

fn lock(slots: &Mutex<Slots>) -> MutexGuard<'_, Slots> {
    slots.lock().unwrap_or_else(|e| e.into_inner())
}

impl Slots {
    /// Close the oldest connection not waiting for its answer (its thread sees the end of
    /// its stream and ends); false when every one is waiting.
    fn make_room(&mut self) -> bool {
        let oldest = (self.open.iter())
            .find(|(_, (_, stage))| *stage != Stage::Waiting)
            .map(|(&id, _)| id);
        let Some((stream, _)) = oldest.and_then(|id| self.open.remove(&id)) else {
            return false;
        };
        let _ = stream.shutdown(Shutdown::Both);
        true
    }

    /// Move connection `id` to `stage`; false when it was closed to make room.
    fn advance(&mut self, id: u64, stage: Stage) -> bool {
        self.open.get_mut(&id).map(|slot| slot.1 = stage).is_some()
    }
}

/// Accept until the process ends. Errors are survived: a client gone before its accept is
/// skipped; anything else (EMFILE, ENFILE, ENOBUFS, ENOMEM) frees a connection and waits
/// [`BACKOFF`], saying so on stderr at most every 10 s. Out of descriptors (the limit was
/// lowered, or the store took more), the cap is derived again from the limit now.
fn accept_loop(listener: &TcpListener, mut limits: Limits, requests: &Sender<Exchange>) {
    let slots: Shared = Arc::default();
    let mut said: Option<Instant> = None;
    loop {
        match listener.accept() {
            Ok((stream, _)) => admit(stream, limits, &slots, requests),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::ConnectionAborted | ErrorKind::Interrupted
                ) => {}
            Err(e) => {
                lock(&slots).make_room();
                if said.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
                    // Not eprintln!: it panics when stderr is gone, and this loop must not end.
                    let _ = writeln!(
                        std::io::stderr(),
                        "dbdelta serve: cannot accept a connection ({e}); still listening"
                    );
                    said = Some(Instant::now());
                }
                std::thread::sleep(BACKOFF);
                // Counted now that the connection closed above has given its descriptor back.
                let held = lock(&slots).open.len();
                if e.raw_os_error() == Some(libc::EMFILE)
                    && let Some(open) = open_descriptors()
                {
                    limits.connections = connection_cap(open.saturating_sub(held));
                }
            }
        }
    }
}

/// Give a new connection a slot (at the cap: the oldest ones') and a thread; without either
/// it is closed at once.
fn admit(stream: TcpStream, limits: Limits, slots: &Shared, requests: &Sender<Exchange>) {
    let stream = Arc::new(stream);
    let id = {
        let mut s = lock(slots);
        while s.open.len() >= limits.connections {
            if !s.make_room() {
                return;
            }
        }
        s.next += 1;
        let id = s.next;
        s.open.insert(id, (stream.clone(), Stage::Reading));
        id
    };
    let slot = Slot {
        slots: slots.clone(),
        id,
    };
    let requests = requests.clone();
    // When no thread can start, the closure is dropped with its slot: the connection closes.
    let _ = std::thread::Builder::new()
        .name("serve-connection".into())
        .spawn(move || connection(&stream, &slot, &limits, &requests));
}

/// A connection's place in [`Slots`], given back when its thread ends (even by a panic).
struct Slot {
    slots: Shared,
    id: u64,
}

impl Slot {
    /// Move the connection to `stage`; false when it was closed to make room.
    fn advance(&self, stage: Stage) -> bool {
        lock(&self.slots).advance(self.id, stage)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        lock(&self.slots).open.remove(&self.id);
    }
}

/// One connection: read its request's head, queue it, write the answer it gets back.
fn connection(stream: &TcpStream, slot: &Slot, limits: &Limits, requests: &Sender<Exchange>) {
    let request = match read_head(stream, limits) {
        Ok(request) => request,
        Err(Refusal::Quiet) => return,
        Err(Refusal::Status(status, why)) => {
            if slot.advance(Stage::Writing) {
                let _ = write(stream, &refusal(status, &why), false, limits);
                linger(stream);
            }
            return;
        }
    };
    let head_only = request.method == "HEAD";
    if !slot.advance(Stage::Waiting) {
        return;
    }
    let (answer, answered) = std::sync::mpsc::sync_channel(1);
    if requests.send(Exchange { request, answer }).is_err() {
        return;
    }
    let Ok(response) = answered.recv() else {
        return;
    };
    if slot.advance(Stage::Writing) && write(stream, &response, head_only, limits).is_ok() {
        linger(stream);
    }
}

/// Why a request head was not read: the client went away or sent nothing (the connection is
/// closed without a word), or an answer saying what was wrong.
#[derive(Debug, PartialEq)]
enum Refusal {
    Quiet,
    Status(u16, String),
}

/// The head of the connection's request, read within `limits`.
fn read_head(stream: &TcpStream, limits: &Limits) -> Result<Request, Refusal> {
    let deadline = Instant::now() + limits.head_time;
    let mut head = Head::default();
    const CHUNK: usize = 4096;
    let mut chunk = [0u8; CHUNK];
    let mut reader = stream;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let late = || match head.buf.is_empty() {
            true => Refusal::Quiet,
            false => Refusal::Status(
                408,
                format!(
                    "the request head was not sent within {} s",
                    limits.head_time.as_secs()
                ),
            ),
        };
        if left.is_zero() {
            return Err(late());
        }
        stream
            .set_read_timeout(Some(left))
            .map_err(|_| Refusal::Quiet)?;
        let room = limits.head_bytes - head.buf.len();
        let n = match reader.read(&mut chunk[..room.min(CHUNK)]) {
            Ok(0) => return Err(Refusal::Quiet),
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(late());
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return Err(Refusal::Quiet),
        };
        if let Some(request) = head.add(&chunk[..n], limits)? {
            return Ok(request);
        }
    }
}

/// A request head as it arrives.
#[derive(Default)]
struct Head {
    buf: Vec<u8>,
    /// Where the request line ends (its `\n`), once seen.
    line_end: Option<usize>,
}

impl Head {
    /// Add bytes read: the request once its head is whole, an error once it breaks a limit
    /// or is not HTTP.
    fn add(&mut self, bytes: &[u8], limits: &Limits) -> Result<Option<Request>, Refusal> {
        let from = self.buf.len();
        self.buf.extend_from_slice(bytes);
        // Empty lines before the request line are allowed (RFC 9112 §2.2).
        let start = (self.buf.iter())
            .position(|b| !matches!(b, b'\r' | b'\n'))
            .unwrap_or(self.buf.len());
        if self.line_end.is_none() {
            self.line_end = (self.buf[start.max(from)..].iter())
                .position(|&b| b == b'\n')
                .map(|i| start.max(from) + i);
        }
        let line = self.line_end.unwrap_or(self.buf.len()) - start;
        if line > limits.line_bytes {
            return Err(Refusal::Status(
                414,
                format!(
                    "the request line is longer than {} bytes",
                    limits.line_bytes
                ),
            ));
        }
        let too_large = || {
            Refusal::Status(
                431,
                format!(
                    "the request head is larger than {} bytes or has more than {} header fields",
                    limits.head_bytes, limits.headers
                ),
            )
        };
        // Parse only once the head is whole: its blank line arrived with these bytes.
        let tail = &self.buf[from.saturating_sub(3)..];
        if !(tail.windows(2).any(|w| w == b"\n\n") || tail.windows(3).any(|w| w == b"\n\r\n")) {
            return match self.buf.len() >= limits.head_bytes {
                true => Err(too_large()),
                false => Ok(None),
            };
        }
        let mut fields = vec![httparse::EMPTY_HEADER; limits.headers];
        let mut parsed = httparse::Request::new(&mut fields);
        match parsed.parse(&self.buf) {
            Ok(httparse::Status::Complete(_)) => Ok(Some(Request {
                method: parsed.method.unwrap_or_default().to_string(),
                target: parsed.path.unwrap_or_default().to_string(),
                headers: (parsed.headers.iter())
                    .map(|h| {
                        let value = String::from_utf8_lossy(h.value).into_owned();
                        (h.name.to_string(), value)
                    })
                    .collect(),
            })),
            Ok(httparse::Status::Partial) if self.buf.len() < limits.head_bytes => Ok(None),
            Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
                Err(too_large())
            }
            Err(e) => Err(Refusal::Status(400, format!("not an HTTP/1 request ({e})"))),
        }
    }
}

/// The answer to a request refused before it was read whole: plain text, one line.
fn refusal(status: u16, why: &str) -> Response {
    Response {
        status,
        headers: vec![
            ("Content-Type", "text/plain; charset=utf-8".to_string()),
            ("Content-Security-Policy", "default-src 'none'".to_string()),
            ("X-Content-Type-Options", "nosniff".to_string()),
        ],
        body: format!("{status} {}: {why}\n", reason(status)).into_bytes(),
    }
}

fn reason(status: u16) -> &'static str {
    (::http::StatusCode::from_u16(status).ok())
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

/// Write `response` (without its body for a HEAD request).
fn write(
    mut stream: &TcpStream,
    response: &Response,
    head_only: bool,
    limits: &Limits,
) -> std::io::Result<()> {
    use std::fmt::Write as _;
    stream.set_write_timeout(Some(limits.write_time))?;
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        debug_assert!(!value.contains(['\r', '\n']), "{name}: {value:?}");
        let _ = write!(head, "{name}: {value}\r\n");
    }
    let date = chrono::Utc::now().format("%a, %d %b %Y %H:%M:%S GMT");
    let _ = write!(
        head,
        "Date: {date}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        response.body.len()
    );
    stream.write_all(head.as_bytes())?;
    if !head_only {
        stream.write_all(&response.body)?;
    }
    stream.flush()
}

/// End the answer (FIN), then read and drop what the client still sends for up to [`LINGER`]
/// or [`LINGER_BYTES`]: closing with unread bytes would reset the connection, and a reset
/// can discard the answer before the client reads it.
fn linger(mut stream: &TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let deadline = Instant::now() + LINGER;
    let mut left = LINGER_BYTES;
    let mut sink = [0u8; 4096];
    while left > 0 {
        let wait = deadline.saturating_duration_since(Instant::now());
        if wait.is_zero() || stream.set_read_timeout(Some(wait)).is_err() {
            return;
        }
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

#[cfg(test)]
mod tests;
