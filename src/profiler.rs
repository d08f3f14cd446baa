//! CPU profiles of a measured period, taken with Linux `perf` on the software `cpu-clock`
//! event (hardware counters are not available on many VMs, so nothing here needs them).
//!
//! Owns: whether `perf` exists and may record here ([`check`]), one recording
//! ([`Recording`]: `perf record` with call graphs, attached to the PIDs of a server's process
//! tree or to the TIDs of dbdelta's own engine threads, stopped with SIGINT), and turning a
//! recording into folded stacks ([`fold`]: `perf script`, then inferno's perf collapser), plus
//! the arithmetic on folded stacks ([`Folded`]: samples, unresolved samples; [`functions`]: self and total per function).
//! Must not: decide when a period starts or ends (the runner starts and stops a recording at
//! the measured period's boundaries), divide by operations (callers scale by a measured CPU
//! per operation), or render anything.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use inferno::collapse::Collapse;
use serde::{Deserialize, Serialize};

/// Samples per second of CPU time when a lab does not say.
pub const DEFAULT_HZ: u32 = 99;
/// Bytes of user stack copied per sample for DWARF unwinding.
const DWARF_STACK_BYTES: u32 = 8192;
/// Longest wait for `perf record` to write its file after SIGINT.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// How call stacks are unwound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CallGraph {
    /// `.eh_frame` unwinding of a copied stack: full stacks from builds without frame
    /// pointers (most `-O2` builds), at the price of 8 KB per sample.
    #[default]
    Dwarf,
    /// Frame pointers: cheap, but stacks through code built without them are cut short.
    Fp,
}

impl CallGraph {
    pub fn name(self) -> &'static str {
        match self {
            CallGraph::Dwarf => "dwarf",
            CallGraph::Fp => "fp",
        }
    }

    fn perf_arg(self) -> String {
        match self {
            CallGraph::Dwarf => format!("dwarf,{DWARF_STACK_BYTES}"),
            CallGraph::Fp => "fp".into(),
        }
    }
}

/// What a profiled run asks of `perf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileSettings {
    /// Samples per second of CPU time of each profiled thread.
    pub hz: u32,
    pub call_graph: CallGraph,
}

impl Default for ProfileSettings {
    fn default() -> Self {
        ProfileSettings {
            hz: DEFAULT_HZ,
            call_graph: CallGraph::default(),
        }
    }
}

/// What is profiled: every thread of these processes, or exactly these threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attach {
    Processes(Vec<u32>),
    Threads(Vec<u32>),
}

/// `perf`, found and able to record here.
#[derive(Debug, Clone)]
pub struct Perf {
    pub path: PathBuf,
    /// `perf version 6.1.187`.
    pub version: String,
    /// Records every CPU (`-a`) and keeps the engine's samples when folding. Attaching to the
    /// engine's tasks instead (`-p`/`-t`, when CPU-wide recording is not allowed) costs the
    /// engine at every context switch, where the kernel switches the events with the task:
    /// measured here, 20–25% of a 1-client point select's QPS, against under 2% CPU-wide.
    pub system_wide: bool,
}

/// Find `perf` on `PATH` and make one tiny recording of `true` with `settings`: `Err` says
/// why profiles cannot be taken (no perf, or no permission) and what to do about it.
pub fn check(settings: &ProfileSettings) -> Result<Perf, String> {
    check_on(settings, std::env::var_os("PATH").as_deref())
}

/// [`check`] with `PATH` given.
fn check_on(
    settings: &ProfileSettings,
    path_var: Option<&std::ffi::OsStr>,
) -> Result<Perf, String> {
    let path = on_path("perf", path_var).ok_or_else(|| {
        "perf is not on PATH (install Debian's linux-perf: apt-get install linux-perf)".to_string()
    })?;
    let out = Command::new(&path)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let dir = tempfile_dir()?;
    let data = dir.join("check.data");
    let record = |wide: bool| {
        Command::new(&path)
            .args(record_args(settings, &data))
            .args(if wide { &["-a"][..] } else { &[][..] })
            .args(["--", "true"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", path.display()))
    };
    let wide = record(true)?;
    let (out, system_wide) = if wide.status.success() {
        (wide, true)
    } else {
        (record(false)?, false)
    };
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() {
        let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        return Err(format!(
            "perf record cannot sample here ({}; kernel.perf_event_paranoid = {paranoid}): run \
             as root or lower it with sysctl kernel.perf_event_paranoid=1",
            last_line(&out.stderr)
        ));
    }
    Ok(Perf {
        path,
        version,
        system_wide,
    })
}

/// A running `perf record`.
pub struct Recording {
    child: Child,
    data: PathBuf,
    log: PathBuf,
    attach: Attach,
}

/// A finished recording: its data file (the caller folds and removes it), the window of it
/// that counts, in `CLOCK_MONOTONIC` seconds (perf records with that clock), and whose samples
/// count.
#[derive(Debug)]
pub struct Recorded {
    pub data: PathBuf,
    pub window: (f64, f64),
    pub attach: Attach,
}

/// `CLOCK_MONOTONIC` now, in seconds: the clock of a recording's sample times.
pub fn monotonic_now() -> f64 {
    // SAFETY: clock_gettime only writes the struct we hand it.
    let ts = unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
        ts
    };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

impl Recording {
    /// Start `perf record` for `attach` (every CPU when `perf.system_wide`, else attached to
    /// those tasks), writing `data` (its messages go to `data` + `.log`).
    pub fn start(
        perf: &Perf,
        settings: &ProfileSettings,
        attach: &Attach,
        data: &Path,
    ) -> Result<Recording, String> {
        let (flag, ids) = match attach {
            Attach::Processes(p) => ("-p", p),
            Attach::Threads(t) => ("-t", t),
        };
        if ids.is_empty() {
            return Err("nothing to profile: no process or thread was found".into());
        }
        let list = ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let log = data.with_extension("log");
        let log_file =
            File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let target = if perf.system_wide {
            vec!["-a".to_string()]
        } else {
            vec![flag.to_string(), list]
        };
        let child = Command::new(&perf.path)
            .args(record_args(settings, data))
            .args(target)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", perf.path.display()))?;
        Ok(Recording {
            child,
            data: data.to_path_buf(),
            log,
            attach: attach.clone(),
        })
    }

    /// Stop with SIGINT (perf then writes its file) and wait for it; SIGKILL after
    /// [`STOP_TIMEOUT`]. `window` is the part of the recording that counts (the measured
    /// period, from [`monotonic_now`] at its boundaries): perf starts before it, so that it
    /// is attached and sampling when the period begins.
    pub fn stop(mut self, window: (f64, f64)) -> Result<Recorded, String> {
        // SAFETY: kill on the PID of our own child, which we have not waited for yet.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGINT);
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(format!(
                        "perf record did not stop within {} s (log: {})",
                        STOP_TIMEOUT.as_secs(),
                        self.log.display()
                    ));
                }
            }
        };
        let log = std::fs::read(&self.log).unwrap_or_default();
        // perf exits 0 or by the SIGINT it was sent; either way its file must be there.
        if !self.data.exists() || (!status.success() && status.code().is_some()) {
            return Err(format!("perf record failed: {}", last_line(&log)));
        }
        let _ = std::fs::remove_file(&self.log);
        Ok(Recorded {
            data: self.data.clone(),
            window,
            attach: self.attach.clone(),
        })
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        // Only reached without `stop` on an error path: end our child by its PID.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `perf script` of a recording's window, folded by inferno's perf collapser into
/// `a;b;leaf count` lines, one count per sample (`[module <address>]` where perf found no
/// symbol). The root frame is the thread's name (`postgres`, `dbdelta-client-`).
pub fn fold(perf: &Perf, recorded: &Recorded) -> Result<Folded, String> {
    let (from, to) = recorded.window;
    let only = match &recorded.attach {
        Attach::Processes(p) => format!("--pid={}", join(p)),
        Attach::Threads(t) => format!("--tid={}", join(t)),
    };
    let mut child = Command::new(&perf.path)
        // No `period` field: inferno would weigh each sample by it (ns for cpu-clock).
        .args([
            "script",
            "--no-inline",
            "-F",
            "comm,tid,time,event,ip,sym,dso",
        ])
        .arg(format!("--time={from:.6},{to:.6}"))
        .arg(only)
        .arg("-i")
        .arg(&recorded.data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start perf script: {e}"))?;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let mut out = Vec::new();
    let mut folder =
        inferno::collapse::perf::Folder::from(inferno::collapse::perf::Options::default());
    let folded = folder.collapse(BufReader::new(stdout), &mut out);
    let status = child.wait().map_err(|e| format!("perf script: {e}"))?;
    let err = err_reader.join().unwrap_or_default();
    folded.map_err(|e| format!("folding perf script output: {e}"))?;
    if !status.success() {
        return Err(format!("perf script failed: {}", last_line(&err)));
    }
    Ok(Folded::parse(&String::from_utf8_lossy(&out)))
}

/// Folded stacks: root first, frames joined by `;`, with their sample counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Folded {
    pub stacks: Vec<(String, u64)>,
}

impl Folded {
    /// Read `a;b;c 12` lines; lines without a count are skipped.
    pub fn parse(text: &str) -> Folded {
        let stacks = text
            .lines()
            .filter_map(|l| {
                let (stack, n) = l.trim_end().rsplit_once(' ')?;
                Some((stack.to_string(), n.parse().ok()?))
            })
            .filter(|(s, n)| !s.is_empty() && *n > 0)
            .collect();
        Folded { stacks }
    }

    /// The folded text (one `stack count` line each).
    pub fn text(&self) -> String {
        let mut s = String::new();
        for (stack, n) in &self.stacks {
            s.push_str(stack);
            s.push(' ');
            s.push_str(&n.to_string());
            s.push('\n');
        }
        s
    }

    pub fn samples(&self) -> u64 {
        self.stacks.iter().map(|(_, n)| n).sum()
    }

    /// Samples whose leaf frame has no symbol: perf named only its module and address
    /// (`[postgres <3a5f10>]`) or nothing (`[unknown]`).
    pub fn unresolved(&self) -> u64 {
        self.stacks
            .iter()
            .filter(|(s, _)| is_unresolved(leaf(s)))
            .map(|(_, n)| n)
            .sum()
    }

    /// The modules of unresolved leaf frames, most samples first.
    pub fn unresolved_modules(&self) -> Vec<String> {
        let mut by: HashMap<&str, u64> = HashMap::new();
        for (s, n) in &self.stacks {
            let l = leaf(s);
            if is_unresolved(l) {
                *by.entry(module_of(l)).or_default() += n;
            }
        }
        let mut v: Vec<(&str, u64)> = by.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v.into_iter().map(|(m, _)| m.to_string()).collect()
    }
}

/// Per function of weighted folded stacks: (self, where it is the leaf; total, the stacks it
/// is on, each counted once however often it recurses in them).
pub fn functions<'a>(stacks: impl Iterator<Item = (&'a str, f64)>) -> HashMap<String, (f64, f64)> {
    let mut out: HashMap<String, (f64, f64)> = HashMap::new();
    let mut seen: Vec<&str> = Vec::new();
    for (stack, w) in stacks {
        seen.clear();
        for f in stack.split(';') {
            if !seen.contains(&f) {
                seen.push(f);
                out.entry(f.to_string()).or_default().1 += w;
            }
        }
        if let Some(l) = stack.rsplit(';').next() {
            out.entry(l.to_string()).or_default().0 += w;
        }
    }
    out
}

fn leaf(stack: &str) -> &str {
    stack.rsplit(';').next().unwrap_or(stack)
}

fn is_unresolved(frame: &str) -> bool {
    frame.starts_with('[') && frame.ends_with(']')
}

/// `postgres` of `[postgres <3a5f10>]` or `[postgres]`.
fn module_of(frame: &str) -> &str {
    let inner = frame.trim_start_matches('[').trim_end_matches(']');
    inner.split(" <").next().unwrap_or(inner)
}

fn record_args(settings: &ProfileSettings, data: &Path) -> Vec<String> {
    vec![
        "record".into(),
        "-q".into(),
        "-k".into(),
        "CLOCK_MONOTONIC".into(),
        "-e".into(),
        "cpu-clock".into(),
        "-F".into(),
        settings.hz.to_string(),
        "--call-graph".into(),
        settings.call_graph.perf_arg(),
        "-o".into(),
        data.display().to_string(),
    ]
}

fn join(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

fn on_path(name: &str, path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path_var?)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn tempfile_dir() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("dbdelta-perf-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

fn last_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no message")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOLDED: &str = "postgres;main;PostgresMain;exec_simple_query;pg_plan_query 6\n\
                          postgres;main;PostgresMain;exec_simple_query 2\n\
                          postgres;main;PostgresMain;[libc.so.6 <10a929>] 1\n\
                          postgres;main;f;f 1\n";

    #[test]
    fn folded_text_round_trips_and_counts_self_and_total_once_per_stack() {
        let f = Folded::parse(FOLDED);
        assert_eq!(f.samples(), 10);
        assert_eq!(Folded::parse(&f.text()), f);
        let fns: HashMap<String, (u64, u64)> =
            functions(f.stacks.iter().map(|(s, n)| (s.as_str(), *n as f64)))
                .into_iter()
                .map(|(k, (a, b))| (k, (a as u64, b as u64)))
                .collect();
        assert_eq!(fns["pg_plan_query"], (6, 6));
        assert_eq!(fns["exec_simple_query"], (2, 8));
        assert_eq!(fns["main"], (0, 10));
        // Recursion counts once in total, once as the leaf.
        assert_eq!(fns["f"], (1, 1));
    }

    #[test]
    fn unresolved_leaves_are_counted_by_module() {
        let f = Folded::parse(FOLDED);
        assert_eq!(f.unresolved(), 1);
        assert_eq!(f.unresolved_modules(), vec!["libc.so.6".to_string()]);
    }

    #[test]
    fn a_missing_perf_is_an_error_that_says_how_to_get_it() {
        let e = check_on(
            &ProfileSettings::default(),
            Some(std::ffi::OsStr::new("/nonexistent-dbdelta")),
        )
        .unwrap_err();
        assert!(
            e.contains("perf is not on PATH") && e.contains("linux-perf"),
            "{e}"
        );
    }
}
