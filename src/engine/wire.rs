//! The receive side shared by dbdelta's own wire clients ([`pgwire`](super::pgwire) and
//! [`mywire`](super::mywire)): one reusable byte buffer filled from a blocking unix socket.
//!
//! Owns: compacting and growing the buffer so a whole message fits, and how a client waits for
//! a reply. After a request goes out ([`RecvBuf::sent`]), the next fill first waits in
//! `poll(POLLIN)` and then reads. Why not simply block in `read`: a thread asleep in a
//! unix-socket `recv` is also woken when the server consumes the request (the kernel's
//! write-space wake-up shares the socket's wait queue, and a blocking `recv` does not filter
//! by event), so every query cost two sleeps and two wake-ups. Measured with
//! `bench/client-cost`: 1.5–2.1 context switches per point query on PostgreSQL against 1.00
//! for sysbench and pgbench, which wait in `poll`. `poll` is woken by readable data only: one
//! more syscall, one fewer context switch, less client CPU.
//!
//! Must not: parse messages (each protocol frames its own), time anything, or allocate except
//! to grow for a message larger than the buffer.

use std::io::Read;
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

/// Bytes received and not yet consumed are `buf[start..end]`.
pub struct RecvBuf {
    pub buf: Vec<u8>,
    start: usize,
    end: usize,
    /// A request went out and no byte was read since: wait in `poll` before reading.
    awaiting: bool,
}

impl RecvBuf {
    pub fn new(capacity: usize) -> RecvBuf {
        RecvBuf {
            buf: vec![0; capacity],
            start: 0,
            end: 0,
            awaiting: false,
        }
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

    /// A request was sent: the next [`Self::fill`] waits for its reply in `poll`.
    pub fn sent(&mut self) {
        self.awaiting = true;
    }

    /// Read more bytes from `sock` (at least one), making room for a message of `need` bytes
    /// in all. The end of the stream is an `UnexpectedEof` error.
    pub fn fill(&mut self, sock: &mut UnixStream, need: usize) -> std::io::Result<()> {
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
            wait_readable(sock)?;
        }
        let n = sock.read(&mut self.buf[self.end..])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.end += n;
        Ok(())
    }
}

/// Sleep until `sock` has bytes to read (or an error or hang-up to report).
fn wait_readable(sock: &UnixStream) -> std::io::Result<()> {
    let mut fd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd for the duration of the call.
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
        let (mut a, mut b) = UnixStream::pair().unwrap();
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
    fn end_of_stream_is_an_error() {
        let (mut a, b) = UnixStream::pair().unwrap();
        drop(b);
        let mut rx = RecvBuf::new(8);
        rx.sent();
        let e = rx.fill(&mut a, 1).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
    }
}
