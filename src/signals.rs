//! Terminating signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT all end a run the way Ctrl-C does.
//!
//! Owns the process-wide interrupt flag ([`flag`]), which signal came first ([`first`]) and
//! the interruptible wait every long sleep in the crate uses ([`sleep`]: it returns within
//! [`POLL`] of the flag being set). The signal handler is signal-hook's (it only wakes a
//! self-pipe); a thread of ours reads the signals from it and does the rest: the first
//! signal sets the flag, every later one calls the `again` the caller installed (except the
//! same signal within [`DUPLICATE`]: one signal delivered twice). A closed pipe on standard
//! output or error counts as SIGPIPE arriving first ([`pipe_closed`], raised by `console` on
//! EPIPE and, for a run, by [`watch_pipes`] without a write): the command stops as after
//! SIGTERM and exits 128 + 13 = 141.
//! Must not: exit the process or stop anything itself (the caller's `again` decides), or know
//! what a run is.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, LazyLock, Once};
use std::time::{Duration, Instant};

/// The signals that end a run: Ctrl-C, `kill`/systemd/`timeout`, a closed terminal or SSH
/// session, Ctrl-\.
pub const SIGNALS: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The same signal again within this long is one signal delivered twice (`timeout` sends
/// SIGTERM to its child and then to its process group), not a second one.
pub const DUPLICATE: Duration = Duration::from_secs(1);

/// How often [`sleep`] looks at the flag.
pub const POLL: Duration = Duration::from_millis(100);

static FLAG: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));
/// The first signal received (0: none).
static FIRST: AtomicI32 = AtomicI32::new(0);
static INSTALL: Once = Once::new();

/// The process-wide interrupt flag, set by the first terminating signal.
pub fn flag() -> Arc<AtomicBool> {
    FLAG.clone()
}

/// Whether a terminating signal arrived.
pub fn interrupted() -> bool {
    FLAG.load(Ordering::Relaxed)
}

/// The first terminating signal received, if any.
pub fn first() -> Option<i32> {
    Some(FIRST.load(Ordering::Relaxed)).filter(|&s| s != 0)
}

/// Standard output or error was a pipe whose reader went away: stop as the first
/// terminating signal does, SIGPIPE as its reason (unless a signal came first).
pub fn pipe_closed() {
    let _ = FIRST.compare_exchange(0, libc::SIGPIPE, Ordering::SeqCst, Ordering::SeqCst);
    FLAG.store(true, Ordering::SeqCst);
}

/// Whether a closed pipe stopped the command ([`pipe_closed`] came before any signal).
pub fn pipe_was_closed() -> bool {
    first() == Some(libc::SIGPIPE)
}

/// Watch standard output and standard error, when they are pipes, for a reader that went away
/// (every [`POLL`], on a thread of its own): a closed pipe stops a run while it writes nothing
/// (a step of minutes), not only at its next line. For commands whose output is read to its
/// end (a run); not for `serve`, whose reader may take its address and leave.
pub fn watch_pipes() -> std::io::Result<()> {
    let fds: Vec<i32> = [libc::STDOUT_FILENO, libc::STDERR_FILENO]
        .into_iter()
        .filter(|&fd| is_pipe(fd))
        .collect();
    if fds.is_empty() {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("dbdelta-pipes".into())
        .spawn(move || {
            while !interrupted() {
                if reader_gone(&fds) {
                    pipe_closed();
                }
                std::thread::sleep(POLL);
            }
        })?;
    Ok(())
}

/// Whether `fd` is a pipe (a FIFO).
fn is_pipe(fd: i32) -> bool {
    // SAFETY: fstat writes the stat buffer we hand it; an invalid fd only makes it fail.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let ok = unsafe { libc::fstat(fd, &mut st) } == 0;
    ok && st.st_mode & libc::S_IFMT == libc::S_IFIFO
}

/// Whether a pipe among `fds` has no reader left: Linux reports POLLERR on a pipe's writing end
/// then, without a write.
fn reader_gone(fds: &[i32]) -> bool {
    let mut polled: Vec<libc::pollfd> = (fds.iter())
        .map(|&fd| libc::pollfd {
            fd,
            events: 0,
            revents: 0,
        })
        .collect();
    // SAFETY: `polled` is a valid array of `polled.len()` pollfd; a zero timeout never blocks.
    let n = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, 0) };
    n > 0 && polled.iter().any(|p| p.revents & libc::POLLERR != 0)
}

/// The signal's usual name (`SIGTERM`), for messages.
pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGPIPE => "a closed pipe",
        _ => "a signal",
    }
}

/// Sleep `length`, or less once the interrupt flag is set. True when it slept the whole time.
pub fn sleep(length: Duration) -> bool {
    let deadline = Instant::now() + length;
    loop {
        if interrupted() {
            return false;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(POLL));
    }
}

/// Catch [`SIGNALS`] for the rest of the process (once; later calls only return the flag):
/// the first sets [`flag`], each later one calls `again` with its number, on a thread of its
/// own. Returns the flag.
pub fn install(again: impl Fn(i32) + Send + 'static) -> std::io::Result<Arc<AtomicBool>> {
    install_saying(RUN_STOPPING, again)
}

/// What the first signal prints after `dbdelta: SIGINT: ` by default.
pub const RUN_STOPPING: &str = "stopping the run (resumable); send it again to stop at once";

/// [`install`], printing `first` (after `dbdelta: SIGNAL: `) when the first signal arrives.
pub fn install_saying(
    first: &'static str,
    again: impl Fn(i32) + Send + 'static,
) -> std::io::Result<Arc<AtomicBool>> {
    let mut result = Ok(());
    INSTALL.call_once(|| result = install_now(first, Box::new(again)));
    result.map(|()| flag())
}

/// signal-hook's iterator does the async-signal-safe part (its handler only notes the signal
/// and wakes a self-pipe); everything else happens here, on an ordinary thread.
fn install_now(message: &'static str, again: Box<dyn Fn(i32) + Send>) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new(SIGNALS)?;
    std::thread::Builder::new()
        .name("dbdelta-signals".into())
        .spawn(move || {
            let mut first: Option<(i32, Instant)> = None;
            for signal in signals.forever() {
                match first {
                    None => first = Some((signal, Instant::now())),
                    // One signal delivered twice (timeout(1) signals its child, then its
                    // process group): not a second request.
                    Some((s, at)) if s == signal && at.elapsed() < DUPLICATE => continue,
                    Some(_) => {
                        again(signal);
                        continue;
                    }
                }
                // A closed pipe before it stays the reason.
                let _ = FIRST.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
                FLAG.store(true, Ordering::SeqCst);
                // A closed terminal (SIGHUP) makes this fail: the message is then nobody's.
                let _ = writeln!(std::io::stderr(), "dbdelta: {}: {message}", name(signal));
            }
        })?;
    Ok(())
}
