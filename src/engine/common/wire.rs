//! The receive side shared by dbdelta's own wire clients
//! ([`pgwire`](crate::engine::common::pgwire) and [`mywire`](crate::engine::common::mywire)):
//! one reusable byte buffer filled from a blocking unix socket.
//!
//! Owns: compacting and growing the buffer so a whole message fits, and how a client waits for
//! a reply ([`Wait`]), which decides much of what a client costs (`bench/client-cost`, PG 15,
//! point select, medians of 3 rounds):
//! - Blocked in `read`: a thread asleep in a unix-socket `recv` is also woken when the server
//!   consumes the request (the write-space wake-up shares the socket's wait queue and a
//!   blocking `recv` does not filter by event). When the CPUs are busy (2 clients on 2 cores)
//!   the client is usually asleep by then: 1.87 context switches per query, 2.99 µs of client
//!   CPU per query. On idle cores (1 client) the server has read the request before the client
//!   sleeps: 1.06 switches per query, and it is the fastest wait: 19.1 µs/q, 1.43× sysbench's
//!   QPS.
//! - `poll(POLLIN)` then `read`: woken by readable data only, one more syscall. Busy CPUs:
//!   1.00 switches per query, 2.51 µs/q (sysbench 3.17); idle cores: 23.0 µs/q, 1.02× QPS.
//! - [`Wait::Adaptive`] (the default) blocks in `read` and counts the thread's voluntary
//!   context switches per reply over windows of [`WINDOW`] replies: above 1.5 it moves to
//!   `poll`, and after [`POLL_WINDOWS`] windows in `poll` it tries `read` again (the load may
//!   have changed). One `getrusage(RUSAGE_THREAD)` per window; no clock is read.
//!
//! Must not: parse messages (each protocol frames its own), time anything, or allocate except
//! to grow for a message larger than the buffer.

use std::io::Read;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

/// How a client waits for a reply (see the module doc for what each costs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Block in `read`.
    Read,
    /// `poll(POLLIN)`, then `read`.
    Poll,
    /// `Read`, moving to `Poll` while replies cost more than 1.5 context switches each.
    Adaptive,
}

/// Replies per adaptive window.
pub const WINDOW: u32 = 4096;
/// Windows spent in `poll` before `read` is tried again.
pub const POLL_WINDOWS: u32 = 16;

/// The adaptive choice between `read` and `poll`, fed one window at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Adapt {
    polling: bool,
    /// Replies in the current window.
    replies: u32,
    /// Windows done in `poll` since the last switch.
    poll_windows: u32,
    /// Voluntary context switches of the thread at the window's start (None: not read yet).
    cs_at_start: Option<u64>,
}

impl Adapt {
    fn new() -> Adapt {
        Adapt {
            polling: false,
            replies: 0,
            poll_windows: 0,
            cs_at_start: None,
        }
    }

    /// Count one reply; at the end of a window, `cs_now` (called then only) gives the thread's
    /// voluntary context switches so far, and the mode for the next window is decided.
    fn reply(&mut self, cs_now: impl FnOnce() -> u64) {
        if self.cs_at_start.is_none() {
            self.cs_at_start = Some(cs_now());
            return;
        }
        self.replies += 1;
        if self.replies < WINDOW {
            return;
        }
        let now = cs_now();
        let per_reply =
            now.saturating_sub(self.cs_at_start.unwrap_or(now)) as f64 / f64::from(self.replies);
        self.replies = 0;
        self.cs_at_start = Some(now);
        if self.polling {
            self.poll_windows += 1;
            if self.poll_windows >= POLL_WINDOWS {
                self.polling = false;
                self.poll_windows = 0;
            }
        } else if per_reply > 1.5 {
            self.polling = true;
            self.poll_windows = 0;
        }
    }
}

/// Voluntary context switches of the calling thread.
fn thread_voluntary_cs() -> u64 {
    crate::sys::rusage(libc::RUSAGE_THREAD).ru_nvcsw as u64
}

/// Bytes received and not yet consumed are `buf[start..end]`.
pub struct RecvBuf {
    pub buf: Vec<u8>,
    start: usize,
    end: usize,
    /// A request went out and no byte was read since: the next fill waits for its reply.
    awaiting: bool,
    wait: Wait,
    adapt: Adapt,
}

impl RecvBuf {
    pub fn new(capacity: usize) -> RecvBuf {
        RecvBuf {
            buf: vec![0; capacity],
            start: 0,
            end: 0,
            awaiting: false,
            wait: Wait::Adaptive,
            adapt: Adapt::new(),
        }
    }

    /// Wait for replies this way from now on (default [`Wait::Adaptive`]).
    pub fn set_wait(&mut self, wait: Wait) {
        self.wait = wait;
        self.adapt = Adapt::new();
    }

    /// The received bytes not consumed yet.
    pub fn available(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Consume `n` bytes; returns where they are in `buf`.
    pub fn consume(&mut self, n: usize) -> Range<usize> {
        let r = self.start..self.start + n;
        debug_assert!(r.end <= self.end);
        self.start = r.end;
        r
    }

    /// A request was sent: the next [`Self::fill`] waits for its reply.
    pub fn sent(&mut self) {
        self.awaiting = true;
    }

    /// Read more bytes from `sock` (at least one), making room for a message of `need` bytes
    /// in all. The end of the stream is an `UnexpectedEof` error.
    pub fn fill(&mut self, sock: &mut Stream, need: usize) -> std::io::Result<()> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() || self.start + need > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if need > self.buf.len() {
            // A message larger than the buffer (rare: big rows).
            self.buf.resize(need.next_power_of_two(), 0);
        }
        if std::mem::take(&mut self.awaiting) {
            let poll = match self.wait {
                Wait::Read => false,
                Wait::Poll => true,
                Wait::Adaptive => {
                    self.adapt.reply(thread_voluntary_cs);
                    self.adapt.polling
                }
            };
            if poll {
                wait_readable(sock)?;
            }
        }
        let n = sock.read(&mut self.buf[self.end..])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.end += n;
        Ok(())
    }
}

/// A client connection's socket: a unix socket (dbdelta's own servers, and `connect` URLs
/// that name one) or TCP (a `connect` target elsewhere; Nagle off, one write per request).
#[derive(Debug)]
pub enum Stream {
    Unix(UnixStream),
    Tcp(std::net::TcpStream),
}

impl Stream {
    pub fn unix(path: &std::path::Path) -> std::io::Result<Stream> {
        UnixStream::connect(path).map(Stream::Unix)
    }

    pub fn tcp(host: &str, port: u16) -> std::io::Result<Stream> {
        let s = std::net::TcpStream::connect((host, port))?;
        s.set_nodelay(true)?;
        Ok(Stream::Tcp(s))
    }
}

impl std::io::Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl std::io::Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }
}

/// Sleep until `sock` has bytes to read (or an error or hang-up to report).
fn wait_readable(sock: &Stream) -> std::io::Result<()> {
    let mut fd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: `fd` is a live local `pollfd` and the count is 1, so poll reads and writes only
        // it; the descriptor in it stays open while the stream is borrowed.
        let r = unsafe { libc::poll(&mut fd, 1, -1) };
        if r >= 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn fills_compacts_and_grows_for_a_large_message() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut a = Stream::Unix(a);
        let mut rx = RecvBuf::new(8);
        b.write_all(b"abcdef").unwrap();
        rx.sent();
        rx.fill(&mut a, 4).unwrap();
        assert_eq!(rx.available(), b"abcdef");
        assert_eq!(rx.consume(4), 0..4);
        assert_eq!(rx.available(), b"ef");
        // A 20-byte message: the buffer compacts and grows, keeping the unconsumed bytes.
        b.write_all(&[7u8; 18]).unwrap();
        while rx.available().len() < 20 {
            rx.fill(&mut a, 20).unwrap();
        }
        assert!(rx.buf.len() >= 20);
        assert_eq!(&rx.available()[..2], b"ef");
        assert_eq!(rx.consume(20), 0..20);
        assert!(rx.available().is_empty());
    }

    #[test]
    fn adaptive_wait_moves_to_poll_on_spurious_wakeups_and_probes_read_again() {
        let mut a = Adapt::new();
        let mut cs = 0u64;
        a.reply(|| cs); // first reply: the window starts
        // A window at 1.0 switch per reply stays in read.
        for _ in 0..WINDOW {
            cs += 1;
            a.reply(|| cs);
        }
        assert!(!a.polling);
        // A window at 2 switches per reply moves to poll.
        for _ in 0..WINDOW {
            cs += 2;
            a.reply(|| cs);
        }
        assert!(a.polling);
        // POLL_WINDOWS windows later it tries read again, whatever the switches.
        for _ in 0..POLL_WINDOWS * WINDOW {
            cs += 1;
            a.reply(|| cs);
        }
        assert!(!a.polling);
    }

    #[test]
    fn the_wait_modes_all_read_the_reply() {
        for wait in [Wait::Read, Wait::Poll, Wait::Adaptive] {
            let (a, mut b) = UnixStream::pair().unwrap();
            let mut a = Stream::Unix(a);
            let mut rx = RecvBuf::new(64);
            rx.set_wait(wait);
            for i in 0..3u8 {
                b.write_all(&[i]).unwrap();
                rx.sent();
                rx.fill(&mut a, 1).unwrap();
                assert_eq!(rx.consume(1).len(), 1, "{wait:?}");
            }
        }
    }

    #[test]
    fn end_of_stream_is_an_error() {
        let (a, b) = UnixStream::pair().unwrap();
        let mut a = Stream::Unix(a);
        drop(b);
        let mut rx = RecvBuf::new(8);
        rx.sent();
        let e = rx.fill(&mut a, 1).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
    }
}
