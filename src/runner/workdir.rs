//! The work directory's run directories: whose they are, and what an interrupted run left.
//!
//! Every run directory (`<workdir>/<run id>/`) holds a marker file, [`MARKER`], naming the run
//! and the PID of the dbdelta working in it, which holds an exclusive `flock` on it for as long
//! as it works there ([`claim`]): one owner per run directory, and so per run on a host (the
//! work directory is stored absolute, and `--resume` uses the run's). The lock dies with its
//! process, however it ends. A marked run directory whose lock is free was left by a run that
//! was killed (kill -9, power loss): its data directories are stale. A server such a run started
//! can outlive it (it runs in its own process group); it is found by its working directory
//! (PostgreSQL and MySQL servers run in their data directory) and, when asked, stopped. Nothing
//! without a marker, and nothing a live dbdelta holds, is ever touched.
//! Must not: run cells, or remove anything not provably dbdelta's.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// The marker file in every run directory.
pub const MARKER: &str = ".dbdelta-run";

/// A run directory an interrupted run left behind. Its lock is held (so no other dbdelta
/// claims it) until this is dropped.
#[derive(Debug, Clone)]
pub struct StaleRun {
    pub dir: PathBuf,
    pub run_id: String,
    /// Its data directories and files (server logs, perf data).
    pub entries: Vec<PathBuf>,
    /// Server processes still running in it (PIDs).
    pub servers: Vec<u32>,
    _lock: Arc<File>,
}

/// A run directory a live dbdelta works in.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveRun {
    pub dir: PathBuf,
    pub run_id: String,
    /// The owner's PID, as its marker says.
    pub pid: Option<u32>,
}

impl LiveRun {
    /// One line naming it and its owner.
    pub fn describe(&self) -> String {
        let pid = self.pid.map_or("?".to_string(), |p| p.to_string());
        format!(
            "{}: run {} is running (dbdelta PID {pid} owns it)",
            self.dir.display(),
            self.run_id
        )
    }
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

/// The ownership of a run directory: its marker, locked while this lives.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
    dir: PathBuf,
}

impl RunLock {
    /// Remove the marker as the run leaves its directory (the lock goes when `self` does).
    pub fn unmark(&self) {
        let _ = std::fs::remove_file(self.dir.join(MARKER));
    }

    /// What a killed invocation of this run left in its directory: its servers stopped
    /// ([`stop_servers`]), its data directories and files removed (the marker stays). Returns
    /// how many entries were removed.
    pub fn clear(&self) -> Result<usize> {
        stop_servers(&self.dir, Duration::from_secs(10))?;
        let mut removed = 0;
        for entry in std::fs::read_dir(&self.dir)?.flatten() {
            let path = entry.path();
            if path.file_name().is_some_and(|n| n == MARKER) {
                continue;
            }
            let gone = match path.is_dir() && !path.is_symlink() {
                true => std::fs::remove_dir_all(&path),
                false => std::fs::remove_file(&path),
            };
            gone.with_context(|| format!("cannot remove {}", path.display()))?;
            removed += 1;
        }
        Ok(removed)
    }
}

/// Take `flock` `how` on `file` without waiting: false when another open file holds it.
fn try_flock(file: &File, how: i32) -> Result<bool> {
    // SAFETY: flock(2) on a descriptor `file` owns; no memory is shared.
    if unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EWOULDBLOCK) => Ok(false),
        _ => Err(e).context("locking a run directory's marker"),
    }
}

/// Make this process the owner of `run_dir` (which exists) for `run_id`: lock its marker and
/// write our PID in it. Refused (bad input: exit 2) while another dbdelta owns it, naming it.
pub fn claim(run_dir: &Path, run_id: &str) -> Result<RunLock> {
    let path = run_dir.join(MARKER);
    let mut file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    // Another dbdelta's scan holds a marker only for a moment: look again for a second.
    let deadline = Instant::now() + Duration::from_secs(1);
    while !try_flock(&file, libc::LOCK_EX)? {
        if Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        return Err(owned_by_another(run_dir, run_id, file));
    }
    let text = format!("run {run_id}\npid {}\n", std::process::id());
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(text.as_bytes()))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(RunLock {
        _file: file,
        dir: run_dir.to_path_buf(),
    })
}

/// Refuse (as [`claim`] would) while another dbdelta owns the run directory of `run_id` under
/// `workdir`, without claiming it: `--resume` says so before it prepares anything.
pub fn refuse_if_owned(workdir: &Path, run_id: &str) -> Result<()> {
    let dir = workdir.join(run_id);
    let Ok(file) = File::open(dir.join(MARKER)) else {
        return Ok(());
    };
    match try_flock(&file, libc::LOCK_EX)? {
        true => Ok(()),
        false => Err(owned_by_another(&dir, run_id, file)),
    }
}

/// The refusal of a run directory another dbdelta owns, naming its PID from the marker.
fn owned_by_another(run_dir: &Path, run_id: &str, mut marker: File) -> anyhow::Error {
    let mut text = String::new();
    let _ = marker.read_to_string(&mut text);
    let pid = parse_marker(&text).map_or("?".into(), |(_, p)| p.to_string());
    crate::error::InputError::new(format!(
        "run {run_id} is running: dbdelta PID {pid} owns {}; wait for it to end or stop it (kill {pid}), then `dbdelta run --resume {run_id}`",
        run_dir.display()
    ))
    .into()
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

/// A marked run directory under the work directory: stale (its lock taken here) or live.
enum Marked {
    Stale(StaleRun),
    Live(LiveRun),
}

/// The marked run directory `dir`, or `None` (no marker, or one being written).
fn marked(dir: PathBuf) -> Result<Option<Marked>> {
    let Ok(mut file) = File::open(dir.join(MARKER)) else {
        return Ok(None);
    };
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    if !try_flock(&file, libc::LOCK_EX)? {
        let run_id = parse_marker(&text).map_or_else(
            || dir.file_name().unwrap_or_default().to_string_lossy().into(),
            |(r, _)| r,
        );
        let pid = parse_marker(&text).map(|(_, p)| p);
        return Ok(Some(Marked::Live(LiveRun { dir, run_id, pid })));
    }
    let Some((run_id, _)) = parse_marker(&text) else {
        return Ok(None);
    };
    let mut inside: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n != MARKER))
        .collect();
    inside.sort();
    Ok(Some(Marked::Stale(StaleRun {
        servers: processes_in(&dir),
        dir,
        run_id,
        entries: inside,
        _lock: Arc::new(file),
    })))
}

/// The marked run directories under `workdir`: those left by runs whose dbdelta is gone
/// (locked here until dropped) and those a live dbdelta owns (this process's own among them).
/// A missing work directory has none.
pub fn scan(workdir: &Path) -> Result<(Vec<StaleRun>, Vec<LiveRun>)> {
    let Ok(entries) = std::fs::read_dir(workdir) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let (mut stale, mut live) = (Vec::new(), Vec::new());
    for entry in entries.flatten() {
        match marked(entry.path())? {
            Some(Marked::Stale(s)) => stale.push(s),
            Some(Marked::Live(l)) => live.push(l),
            None => {}
        }
    }
    stale.sort_by(|a, b| a.dir.cmp(&b.dir));
    live.sort_by(|a, b| a.dir.cmp(&b.dir));
    Ok((stale, live))
}

/// The run directories under `workdir` left by runs whose dbdelta is gone.
pub fn stale_runs(workdir: &Path) -> Result<Vec<StaleRun>> {
    Ok(scan(workdir)?.0)
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

/// How long a server counted under valgrind may take to stop: its shutdown runs at
/// valgrind's pace and ends with callgrind writing its counts (a MySQL server took over 10 s).
const VALGRIND_STOP: Duration = Duration::from_secs(120);

/// Whether process `pid` runs under valgrind (its executable is one of valgrind's tools).
fn under_valgrind(pid: u32) -> bool {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .is_ok_and(|exe| exe.to_string_lossy().contains("/valgrind/"))
}

/// Stop the servers still running in a stale run directory: SIGINT (PostgreSQL's fast
/// shutdown; MySQL stops on it too) and SIGCONT (a stopped server must see it), then SIGKILL
/// whatever is left after `timeout` ([`VALGRIND_STOP`] when one runs under valgrind). Only
/// processes whose working directory is in `dir` are signalled.
pub fn stop_servers(dir: &Path, timeout: Duration) -> Result<()> {
    let pids = processes_in(dir);
    let timeout = match pids.iter().any(|&p| under_valgrind(p)) {
        true => timeout.max(VALGRIND_STOP),
        false => timeout,
    };
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
        let _owner = claim(&live, "20261125-000000-0002").unwrap();
        let foreign = work.path().join("not-ours");
        std::fs::create_dir_all(foreign.join("a.c1.r1")).unwrap();

        let stale = stale_runs(work.path()).unwrap();
        assert_eq!(stale.len(), 1, "{stale:?}");
        assert_eq!(stale[0].run_id, "20261125-000000-0001");
        assert_eq!(stale[0].entries, vec![dead.join("a.c1.r1")]);
        assert!(stale[0].servers.is_empty());
        remove(&stale[0], false).unwrap();
        assert!(!dead.exists() && live.exists() && foreign.exists());
        let (_, running) = scan(work.path()).unwrap();
        assert_eq!(
            running,
            vec![LiveRun {
                dir: live.clone(),
                run_id: "20261125-000000-0002".into(),
                pid: Some(std::process::id()),
            }]
        );
    }

    #[test]
    fn a_run_directory_has_one_owner_until_it_lets_go() {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("20261125-000000-0003");
        std::fs::create_dir_all(&dir).unwrap();
        let owner = claim(&dir, "20261125-000000-0003").unwrap();
        // A second claim (another open file: as another process's) is refused, naming the PID.
        let e = claim(&dir, "20261125-000000-0003").unwrap_err();
        let pid = format!("dbdelta PID {} owns", std::process::id());
        assert!(format!("{e:#}").contains(&pid), "{e:#}");
        assert!(e.is::<crate::error::InputError>());
        let e = refuse_if_owned(work.path(), "20261125-000000-0003").unwrap_err();
        assert!(format!("{e:#}").contains(&pid), "{e:#}");
        assert!(
            stale_runs(work.path()).unwrap().is_empty(),
            "a live run is not stale"
        );
        // Its owner gone (the lock dies with the open file), the directory is stale.
        drop(owner);
        refuse_if_owned(work.path(), "20261125-000000-0003").unwrap();
        assert_eq!(stale_runs(work.path()).unwrap().len(), 1);
        drop(claim(&dir, "20261125-000000-0003").unwrap());
    }
}
