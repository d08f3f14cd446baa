//! The work directory's run directories: whose they are, and what an interrupted run left.
//!
//! Every run directory (`<workdir>/<run id>/`) holds a marker file, [`MARKER`], naming the run
//! and the PID of the dbdelta working in it; it is removed with the directory when the run
//! ends. A run directory whose marker names a process that is no longer a running dbdelta was
//! left by a run that was killed (kill -9, power loss): its data directories are stale. A
//! server such a run started can outlive it (it runs in its own process group); it is found by
//! its working directory (PostgreSQL and MySQL servers run in their data directory) and, when
//! asked, stopped. Nothing without a marker is ever touched.
//! Must not: run cells, or remove anything not provably dbdelta's.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// The marker file in every run directory.
pub const MARKER: &str = ".dbdelta-run";

/// A run directory an interrupted run left behind.
#[derive(Debug, Clone, PartialEq)]
pub struct StaleRun {
    pub dir: PathBuf,
    pub run_id: String,
    /// Its data directories and files (server logs, perf data).
    pub entries: Vec<PathBuf>,
    /// Server processes still running in it (PIDs).
    pub servers: Vec<u32>,
}

impl StaleRun {
    /// One line naming it for the terminal.
    pub fn describe(&self) -> String {
        let servers = match self.servers.as_slice() {
            [] => String::new(),
            pids => format!(
                ", a server still running (PID {})",
                pids.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        format!(
            "{} (run {}: {} data director{}/file(s){servers})",
            self.dir.display(),
            self.run_id,
            self.entries.len(),
            if self.entries.len() == 1 { "y" } else { "ies" },
        )
    }
}

/// Write the marker of `run_dir`: this process works on `run_id` there.
pub fn mark(run_dir: &Path, run_id: &str) -> Result<()> {
    let path = run_dir.join(MARKER);
    std::fs::write(&path, format!("run {run_id}\npid {}\n", std::process::id()))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Remove the marker as the run leaves its directory.
pub fn unmark(run_dir: &Path) {
    let _ = std::fs::remove_file(run_dir.join(MARKER));
}

/// (run id, PID) from a marker's text.
fn parse_marker(text: &str) -> Option<(String, u32)> {
    let mut run = None;
    let mut pid = None;
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("run", v)) => run = Some(v.trim().to_string()),
            Some(("pid", v)) => pid = v.trim().parse().ok(),
            _ => {}
        }
    }
    Some((run?, pid?))
}

/// Whether `pid` is a running dbdelta (not a reused PID of something else, nor a killed one
/// its parent has not reaped yet: a zombie keeps its name in `/proc` until then).
fn dbdelta_alive(pid: u32) -> bool {
    let named =
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "dbdelta");
    named && !zombie(pid)
}

/// Whether `pid` has exited and waits to be reaped (state `Z`, or `X` while it goes).
fn zombie(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state is the first field after the command name, which ends with the last ')'.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    matches!(state, Some("Z" | "X") | None)
}

/// The run directories under `workdir` left by runs whose dbdelta is gone (this process's own
/// excepted). A missing work directory has none.
pub fn stale_runs(workdir: &Path) -> Result<Vec<StaleRun>> {
    let Ok(entries) = std::fs::read_dir(workdir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let dir = entry.path();
        let Ok(text) = std::fs::read_to_string(dir.join(MARKER)) else {
            continue;
        };
        let Some((run_id, pid)) = parse_marker(&text) else {
            continue;
        };
        if pid == std::process::id() || dbdelta_alive(pid) {
            continue;
        }
        let mut inside: Vec<PathBuf> = std::fs::read_dir(&dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n != MARKER))
            .collect();
        inside.sort();
        out.push(StaleRun {
            servers: processes_in(&dir),
            dir,
            run_id,
            entries: inside,
        });
    }
    out.sort_by(|a, b| a.dir.cmp(&b.dir));
    Ok(out)
}

/// PIDs of processes whose working directory is `dir` or below it.
pub fn processes_in(dir: &Path) -> Vec<u32> {
    let Ok(dir) = dir.canonicalize() else {
        return Vec::new();
    };
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out: Vec<u32> = procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(&dir))
        })
        .collect();
    out.sort();
    out
}

/// Stop the servers still running in a stale run directory: SIGINT (PostgreSQL's fast
/// shutdown; MySQL stops on it too) and SIGCONT (a stopped server must see it), then SIGKILL
/// whatever is left after `timeout`. Only processes whose working directory is in `dir` are
/// signalled.
pub fn stop_servers(dir: &Path, timeout: Duration) -> Result<()> {
    let pids = processes_in(dir);
    for &pid in &pids {
        // SAFETY: signalling a process that runs in a dbdelta run directory (checked above).
        unsafe {
            libc::kill(pid as i32, libc::SIGINT);
            libc::kill(pid as i32, libc::SIGCONT);
        }
    }
    let deadline = Instant::now() + timeout;
    while !processes_in(dir).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for pid in processes_in(dir) {
        // SAFETY: as above; the process did not stop on SIGINT.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_in(dir).is_empty() {
        if Instant::now() >= deadline {
            anyhow::bail!(
                "processes {:?} in {} did not stop",
                processes_in(dir),
                dir.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Remove a stale run directory; its servers are stopped first when `stop` is set, else a
/// running server makes this an error that names it.
pub fn remove(stale: &StaleRun, stop: bool) -> Result<()> {
    let running = processes_in(&stale.dir);
    if !running.is_empty() {
        if !stop {
            anyhow::bail!(
                "{}: a server is still running in it (PID {running:?}); stop it, or use \
                 `dbdelta clean --stop` or `dbdelta run --resume`",
                stale.dir.display()
            );
        }
        stop_servers(&stale.dir, Duration::from_secs(10))?;
    }
    std::fs::remove_dir_all(&stale.dir)
        .with_context(|| format!("cannot remove {}", stale.dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_process_not_yet_reaped_is_not_alive() {
        let mut running = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert!(!zombie(running.id()), "a sleeping process is alive");
        running.kill().unwrap();
        // Killed and not waited for: a zombie until we reap it.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !zombie(running.id()) {
            assert!(
                std::time::Instant::now() < deadline,
                "never became a zombie"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let pid = running.id();
        running.wait().unwrap();
        assert!(zombie(pid), "a reaped process is gone");
    }

    #[test]
    fn a_marker_names_its_run_and_process() {
        assert_eq!(
            parse_marker("run 20261125-0901-ab12\npid 4242\n"),
            Some(("20261125-0901-ab12".into(), 4242))
        );
        assert_eq!(parse_marker("pid 12\n"), None);
        assert_eq!(parse_marker("run x\npid twelve\n"), None);
    }

    #[test]
    fn only_marked_directories_of_dead_runs_are_stale() {
        let work = tempfile::tempdir().unwrap();
        let dead = work.path().join("20261125-000000-0001");
        std::fs::create_dir_all(dead.join("a.c1.r1")).unwrap();
        // PID 0 is never a process.
        std::fs::write(dead.join(MARKER), "run 20261125-000000-0001\npid 0\n").unwrap();
        let live = work.path().join("20261125-000000-0002");
        std::fs::create_dir_all(live.join("a.c1.r1")).unwrap();
        mark(&live, "20261125-000000-0002").unwrap();
        let foreign = work.path().join("not-ours");
        std::fs::create_dir_all(foreign.join("a.c1.r1")).unwrap();

        let stale = stale_runs(work.path()).unwrap();
        assert_eq!(stale.len(), 1, "{stale:?}");
        assert_eq!(stale[0].run_id, "20261125-000000-0001");
        assert_eq!(stale[0].entries, vec![dead.join("a.c1.r1")]);
        assert!(stale[0].servers.is_empty());
        remove(&stale[0], false).unwrap();
        assert!(!dead.exists() && live.exists() && foreign.exists());
    }
}
