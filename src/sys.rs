//! Small operating-system helpers that several layers share: the end of a log file, and
//! `getrusage` with its `timeval`s in µs.
//!
//! A leaf: imports nothing of dbdelta's, so anything may use it (engines, the sampler, the
//! remote side, provisioning). Must not: grow policy (what to measure, when, which processes
//! belong to a server): that belongs to the sampler and the engines.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The last `n` lines of a log file (read from its last 64 KiB); empty when it cannot be read.
pub fn log_tail(path: &Path, n: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(64 * 1024);
    let _ = f.seek(SeekFrom::Start(start));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// `getrusage(who)`: `libc::RUSAGE_SELF` (this process) or `libc::RUSAGE_THREAD` (the calling
/// thread). The one place dbdelta asks the kernel for its own resource usage.
pub fn rusage(who: libc::c_int) -> libc::rusage {
    // SAFETY: `rusage` is plain integers, so all-zero bytes are a valid value; getrusage only
    // writes into the struct behind the pointer, which lives for the whole call. With a valid
    // `who` it cannot fail, and with an invalid one it leaves the zeroes.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    }
}

/// A `timeval` in µs.
pub fn timeval_us(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 * 1e6 + tv.tv_usec as f64
}
