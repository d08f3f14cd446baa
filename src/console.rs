//! Text for people on standard output and standard error, and what a closed pipe means.
//!
//! Owns the rule for a reader that went away (`dbdelta run … 2>&1 | head`): a write that fails
//! with EPIPE means what SIGPIPE means to a command-line tool, so it raises the interrupt flag
//! with SIGPIPE as its reason ([`signals::pipe_closed`]) and the command stops the way SIGTERM
//! stops it, exiting 141; the text is dropped, never retried, never a panic. Any other failure
//! to write a line (stderr on a full disk) drops the line too: a message is not worth ending a
//! run for. Results written whole ([`write_out`]) fail with [`PipeClosed`] instead, so the
//! command ends quietly with 141. Every line `dbdelta`'s commands write goes through here
//! (`outln!`, `errln!` instead of `println!`/`eprintln!`): Rust ignores SIGPIPE, and those
//! macros panic on EPIPE. (The protocol pipes of `count-client` and the remote agent are not
//! for people: their errors are theirs.)
//! Must not: decide what is written, or exit the process.

use std::fmt;
use std::io::{self, Write};

use crate::error::PipeClosed;
use crate::signals;

/// A line on standard output, as `println!` but never a panic ([`out`]).
macro_rules! outln {
    ($($t:tt)*) => { $crate::console::out(format_args!($($t)*)) };
}
/// A line on standard error, as `eprintln!` but never a panic ([`err`]).
macro_rules! errln {
    ($($t:tt)*) => { $crate::console::err(format_args!($($t)*)) };
}
pub(crate) use {errln, outln};

/// Write `args` and a newline to standard output; a closed pipe stops the command (see the
/// module doc), any failure drops the line.
pub fn out(args: fmt::Arguments<'_>) {
    if line(io::stdout().lock(), args) {
        signals::pipe_closed();
    }
}

/// Write `args` and a newline to standard error, as [`out`].
pub fn err(args: fmt::Arguments<'_>) {
    if line(io::stderr().lock(), args) {
        signals::pipe_closed();
    }
}

/// Write `args` and a newline to `w` in one piece; whether `w` was a closed pipe.
fn line(mut w: impl Write, args: fmt::Arguments<'_>) -> bool {
    let text = format!("{args}\n");
    let written = w.write_all(text.as_bytes()).and_then(|()| w.flush());
    written.is_err_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

/// Write `bytes` (a report, a list) whole to standard output. A closed pipe stops the command
/// and fails with [`PipeClosed`] (`main` then says nothing and exits 141); another failure is
/// returned as it is.
pub fn write_out(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if closed_if_pipe(&e) => Err(PipeClosed.into()),
        r => Ok(r?),
    }
}

/// Whether `e` is a closed pipe (EPIPE); if so, the command stops as SIGPIPE would stop it.
pub fn closed_if_pipe(e: &io::Error) -> bool {
    let closed = e.kind() == io::ErrorKind::BrokenPipe;
    if closed {
        signals::pipe_closed();
    }
    closed
}

#[cfg(test)]
mod tests {
    use std::io::{self, Write};

    /// A writer whose reader went away.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A writer that fails otherwise (a full disk).
    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from_raw_os_error(libc::ENOSPC))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    // The flag itself is the process's: raising it here would interrupt the other tests of
    // this binary, so the integration tests (`tests/pipe.rs`) check what follows from it.
    #[test]
    fn a_line_into_a_closed_pipe_is_dropped_and_named_closed_without_a_panic() {
        assert!(super::line(Closed, format_args!("a line nobody reads")));
        assert!(!super::line(Full, format_args!("a line with no room")));
        let mut fine = Vec::new();
        assert!(!super::line(&mut fine, format_args!("{} read", 1)));
        assert_eq!(fine, b"1 read\n");
    }
}
