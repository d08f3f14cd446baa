//! A cell's watchdog: a server dbdelta started that stays stopped (SIGSTOP, state `T`) would
//! block every client in its reads for ever; after [`STOPPED_LIMIT`] the watchdog kills the
//! server's process group and every process running in the cell's data directory (PostgreSQL's
//! children lead process groups of their own), so the clients see the connection end, the step
//! fails on a dead server and the target fails (its cell unfinished: `--resume` runs it again).
//!
//! A server that is slow (stalled on I/O, state `D`) is never touched: only a stopped one.
//! Must not: time database work or signal anything but the process group of a server dbdelta
//! started.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::engine::common::process;

/// How long a server may stay stopped before it is killed.
pub const STOPPED_LIMIT: Duration = Duration::from_secs(10);

/// Watches one server until dropped.
pub struct Watchdog {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Watch the server whose process is `pid` (`None`: nothing to watch), running in
    /// `data_dir`; `say` is called once with what it did when it kills the server.
    pub fn start(
        pid: Option<u32>,
        data_dir: PathBuf,
        say: impl Fn(&str) + Send + 'static,
    ) -> Watchdog {
        let done = Arc::new(AtomicBool::new(false));
        let thread = pid.map(|pid| {
            let done = done.clone();
            std::thread::spawn(move || watch(pid, &data_dir, &done, &say))
        });
        Watchdog { done, thread }
    }
}

fn watch(pid: u32, data_dir: &std::path::Path, done: &AtomicBool, say: &dyn Fn(&str)) {
    let mut stopped_since: Option<Instant> = None;
    while !done.load(Ordering::Relaxed) {
        if process::is_stopped(pid) {
            let since = *stopped_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= STOPPED_LIMIT {
                process::kill_group(pid);
                for p in super::workdir::processes_in(data_dir) {
                    // SAFETY: a process running in the cell's own data directory, which dbdelta
                    // created: one of the server's.
                    unsafe { libc::kill(p as i32, libc::SIGKILL) };
                }
                say(&format!(
                    "the server (pid {pid}) was stopped (SIGSTOP) for {} s: killed it, its cell fails",
                    STOPPED_LIMIT.as_secs()
                ));
                return;
            }
        } else {
            stopped_since = None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
