//! Instruction counting under valgrind's callgrind: the command a counted process runs under,
//! switching its counting on and off, dumping its counts, and reading the dumps' totals.
//!
//! A counted process starts with instrumentation off (`--instr-atstart=no`: it runs about as
//! fast as under valgrind's `none` tool, so a server starts and loads its data in seconds), and
//! [`command`] switches it on through `vgdb`, which only the process's owner may do. Processes
//! it forks after that (PostgreSQL's backends) are counted from their start and write their
//! totals when they exit; a process that stays is asked to [`command`] `dump`, which writes the
//! counts since its previous dump. [`take_totals`] sums and removes the files a round wrote;
//! [`take_split`] sums them apart, the pass's own statements (foreground) and the server's
//! background work, by the engine's [`Attribution`] (its processes, or its threads);
//! [`take_split_functions`] also adds each dump's per-function costs ([`functions`]) before it
//! removes the file. Also chooses the run's [`Counter`] once ([`choose`]): `perf stat` of `instructions:u` where
//! this host's hardware counters count them ([`perf_counters`]), callgrind otherwise; and runs
//! one `perf stat` over given threads ([`PerfStat`]: started disabled, switched on and off
//! through its control pipe, its per-thread CSV parsed by [`parse_stat`]).
//! Must not: know engines, steps or the store (the runner composes these), or time anything.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

pub mod functions;

use functions::Functions;

/// How long one `vgdb` command may take: a process deep in a long operation under
/// instrumentation answers only between its basic blocks.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// A run's counting pass: how many pairs of passes each step gets, and the instructions a
/// short pass aims at (its events are sized from a first pass; the long one runs three times
/// as many).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counting {
    pub passes: u32,
    pub budget: u64,
    /// Counting cells run at once (`count_jobs`), each a target × suite of its own.
    pub jobs: u32,
    /// Server starts each target's pairs are spread over (`instruction_starts`; at most
    /// `passes`: a start counts at least one pair).
    pub starts: u32,
}

impl Default for Counting {
    fn default() -> Self {
        Counting {
            passes: 3,
            budget: 40_000_000,
            jobs: default_jobs(),
            starts: 2,
        }
    }
}

/// `count_jobs` when the lab gives none: the CPUs this process may use.
pub fn default_jobs() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(1))
}

/// valgrind and vgdb as found on this host.
#[derive(Debug, Clone, PartialEq)]
pub struct Callgrind {
    /// `valgrind --version`, e.g. `valgrind-3.19.0`.
    pub version: String,
}

/// Whether callgrind can count here: valgrind and vgdb on the `PATH`; otherwise why not, with
/// the fix.
pub fn check() -> Result<Callgrind, String> {
    let out = Command::new("valgrind")
        .arg("--version")
        .output()
        .map_err(|e| {
            format!("valgrind cannot run ({e}): install it (Debian: apt-get install valgrind)")
        })?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || version.is_empty() {
        return Err("`valgrind --version` failed: reinstall valgrind".into());
    }
    let vgdb = Command::new("vgdb")
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if vgdb.is_err() {
        return Err("vgdb (valgrind's) is not on the PATH: install valgrind in full".into());
    }
    Ok(Callgrind { version })
}

/// Which of a counted server's instructions are the pass's own statements (foreground) and
/// which its background work (by the clock, not by the operation): each engine says how its
/// processes or threads are told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attribution {
    /// Everything counted is the statements' work (an engine inside the client process).
    All,
    /// Per process: the main process and the processes that ran any of these functions do
    /// background work (PostgreSQL: the postmaster, autovacuum workers); every other process
    /// forked while counting (the pass's backends, their parallel workers) is foreground.
    Processes { background: &'static [&'static str] },
    /// Per thread (callgrind's `--separate-threads=yes`): the threads that ran any of these
    /// functions serve the pass's connections (MySQL's `dispatch_command`) and are foreground;
    /// every other thread (InnoDB's purge, page cleaner, master) is background.
    Threads { foreground: &'static [&'static str] },
}

/// A round's instructions: the pass's statements and the server's background work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Split {
    pub foreground: u64,
    pub background: u64,
}

/// The command a counted process runs under: callgrind, instrumentation off until switched
/// on, its counts dumped into `dir` as `TAG.PID` (at exit) and `TAG.PID.N` (each dump); with
/// [`Attribution::Threads`], one file per thread (`TAG.PID.N-TT`).
pub fn wrap(dir: &Path, tag: &str, by: Attribution) -> Vec<String> {
    let mut w = vec![
        "valgrind".into(),
        "--tool=callgrind".into(),
        "--instr-atstart=no".into(),
        "--vgdb=yes".into(),
        // vgdb's FIFOs beside the counts, not in the temporary directory: a process killed
        // before valgrind removes them leaves them where its run directory's removal finds them.
        vgdb_prefix(dir),
        // Followed through exec: a Debian build's launcher (`/bin/sh`) execs the build's own
        // loader, which runs the server in the same process. The servers themselves exec
        // nothing; forked children are counted either way.
        "--trace-children=yes".into(),
        format!("--callgrind-out-file={}/{tag}.%p", dir.display()),
        // Below valgrind's own messages: they go to the server's log.
        "--log-fd=2".into(),
    ];
    if matches!(by, Attribution::Threads { .. }) {
        w.push("--separate-threads=yes".into());
    }
    w
}

/// `--vgdb-prefix` for processes wrapped with counts in `dir`: valgrind and vgdb must agree.
fn vgdb_prefix(dir: &Path) -> String {
    format!("--vgdb-prefix={}/vgdb", dir.display())
}

/// Send the callgrind monitor command `what` (`instrumentation on`, `instrumentation off`,
/// `dump`) to the counted process `pid`, wrapped with its counts in `dir`, as its owner (vgdb only reaches its own user's
/// processes). Waits until the process has done it.
pub fn command(pid: u32, dir: &Path, what: &str) -> Result<()> {
    let (uid, gid) = owner(pid)?;
    let mut cmd = Command::new("vgdb");
    cmd.arg(vgdb_prefix(dir))
        .arg(format!("--pid={pid}"))
        .args(what.split_whitespace())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: getuid(2) reads no memory of ours and cannot fail.
    if uid != unsafe { libc::getuid() } {
        use std::os::unix::process::CommandExt;
        cmd.uid(uid).gid(gid);
    }
    let mut child = cmd.spawn().context("starting vgdb")?;
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait()? {
            let out = child.wait_with_output()?;
            if status.success() {
                return Ok(());
            }
            bail!(
                "vgdb --pid={pid} {what} failed: {}{}",
                String::from_utf8_lossy(&out.stderr).trim(),
                String::from_utf8_lossy(&out.stdout).trim()
            );
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "vgdb --pid={pid} {what} did not finish within {} s",
                COMMAND_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// callgrind's client requests (valgrind's `callgrind.h`): `VG_USERREQ_TOOL_BASE('C','T')`
/// and the requests after it.
const CALLGRIND_BASE: u64 = (b'C' as u64) << 24 | (b'T' as u64) << 16;
const DUMP_STATS: u64 = CALLGRIND_BASE;
const START_INSTRUMENTATION: u64 = CALLGRIND_BASE + 4;

/// Switch counting on in this process, when it runs under callgrind (a no-op otherwise). A
/// counted process of dbdelta's own asks this itself: `vgdb` interrupting its blocked read of
/// a pipe can end the read as if the pipe had closed.
pub fn count_self() {
    client_request(START_INSTRUMENTATION);
}

/// Write this process's counts since its last dump, when it runs under callgrind (a no-op
/// otherwise); done when this returns.
pub fn dump_self() {
    client_request(DUMP_STATS);
}

/// valgrind's client request `request` (no arguments): the instruction sequence valgrind
/// recognises, which does nothing on a real CPU.
#[cfg(target_arch = "x86_64")]
fn client_request(request: u64) {
    let block: [u64; 6] = [request, 0, 0, 0, 0, 0];
    // SAFETY: the four rotations of rdi add up to 128 bits (rdi is unchanged, and declared
    // clobbered anyway) and `xchg rbx, rbx` leaves rbx as it was; valgrind reads `block`
    // through rax (six words, alive for the call) and writes its answer to rdx.
    unsafe {
        std::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            in("rax") block.as_ptr(),
            inout("rdx") 0u64 => _,
            inout("rdi") 0u64 => _,
            options(nostack, preserves_flags),
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn client_request(_request: u64) {}

/// The real user and group of process `pid`.
fn owner(pid: u32) -> Result<(u32, u32)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("process {pid} is gone"))?;
    if matches!(state(&status), "Z" | "X") {
        bail!("process {pid} exited (its log says why)");
    }
    let field = |name: &str| -> Option<u32> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    match (field("Uid:"), field("Gid:")) {
        (Some(u), Some(g)) => Ok((u, g)),
        _ => bail!("/proc/{pid}/status names no owner"),
    }
}

/// The instructions in the dump files of `dir` whose names start with `TAG.`, summed; the
/// files are removed. Returns (instructions, files). An empty exit file (`TAG.PID`) is a live
/// process's (callgrind creates it at start), or one that counts its threads apart (their
/// files are `TAG.PID-TT`): left alone. Any other dump that is not whole is an error naming
/// it ([`take_split_functions`]).
pub fn take_totals(dir: &Path, tag: &str) -> Result<(u64, usize)> {
    let (split, files) = take_split(dir, tag, Attribution::All, None)?;
    Ok((split.foreground, files))
}

/// [`take_totals`], each file attributed to the foreground or the background by `by`; `main`
/// is the counted server's main process.
pub fn take_split(
    dir: &Path,
    tag: &str,
    by: Attribution,
    main: Option<u32>,
) -> Result<(Split, usize)> {
    take_split_functions(dir, tag, by, main, None)
}

/// Per-function costs of a round, the foreground's and the background's apart (as [`Split`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SplitFunctions {
    pub foreground: Functions,
    pub background: Functions,
}

/// [`take_split`], each dump's per-function costs also added to `functions` (when given)
/// before its file is removed. A dump that is not whole fails it, naming the file: an empty
/// one other than an exit file (`TAG.PID.N`, `TAG.PID.N-TT`, `TAG.PID-TT`: callgrind created
/// it and wrote nothing, as on a full file system, where valgrind says nothing of it), or one
/// whose last line is not its totals (cut short; its header's `summary:` holds the whole
/// count, but its functions are missing).
pub fn take_split_functions(
    dir: &Path,
    tag: &str,
    by: Attribution,
    main: Option<u32>,
    mut functions: Option<&mut SplitFunctions>,
) -> Result<(Split, usize)> {
    let prefix = format!("{tag}.");
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let empty = entry.metadata().is_ok_and(|m| m.len() == 0);
        if !(empty && rest.parse::<u32>().is_ok()) {
            files.push(entry.path());
        }
    }
    let mut split = Split::default();
    for f in &files {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        if text.is_empty() {
            bail!("callgrind's dump {} is empty", f.display());
        }
        let n = (totals(&text).filter(|_| whole(&text))).with_context(|| {
            format!(
                "callgrind's dump {} ends before its totals line",
                f.display()
            )
        })?;
        let name = f.file_name().unwrap_or_default().to_string_lossy();
        let fg = foreground(&text, &name[prefix.len()..], by, main);
        match fg {
            true => split.foreground += n,
            false => split.background += n,
        }
        if let Some(f) = functions.as_deref_mut() {
            match fg {
                true => f.foreground.add_dump(&text),
                false => f.background.add_dump(&text),
            }
        }
        std::fs::remove_file(f).with_context(|| format!("removing {}", f.display()))?;
    }
    Ok((split, files.len()))
}

/// Whether a dump (or its tail) is whole: its last line is its totals, `totals:` (callgrind's
/// format also has a `summary:` in its header) or, in a format without them, `summary:`.
fn whole(text: &str) -> bool {
    let last = text.trim_end().lines().last().unwrap_or("");
    last.starts_with("totals:")
        || last.starts_with("summary:") && !text.starts_with("# callgrind format")
}

/// The dump files of `dir` named `TAG.…` that are not whole yet: empty (a live process's exit
/// file, created when it starts) or still being written (no `totals:` line at its end). A
/// process's counts are in [`take_split`]'s sum only once its file is whole.
pub fn unfinished(dir: &Path, tag: &str) -> Result<Vec<String>> {
    use std::io::{Read, Seek, SeekFrom};
    let prefix = format!("{tag}.");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(&prefix) {
            continue;
        }
        let mut tail = String::new();
        if let Ok(mut f) = std::fs::File::open(entry.path()) {
            let len = f.metadata().map_or(0, |m| m.len());
            let _ = f.seek(SeekFrom::Start(len.saturating_sub(256)));
            let _ = f.take(256).read_to_string(&mut tail);
        }
        if !whole(&tail) {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

/// The process that writes the dump file `name` of tag `tag` (`TAG.PID[.N][-TT]`).
pub fn dump_pid(name: &str, tag: &str) -> Option<u32> {
    let rest = name.strip_prefix(tag)?.strip_prefix('.')?;
    rest.split(['.', '-']).next()?.parse().ok()
}

/// Whether process `pid` has ended (gone, or a zombie): callgrind has written its exit dump
/// by then, or never will.
pub fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(status) => matches!(state(&status), "Z" | "X"),
        Err(_) => true,
    }
}

/// The one-letter state of a `/proc/PID/status` text.
fn state(status: &str) -> &str {
    (status.lines().find(|l| l.starts_with("State:")))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("")
}

/// Whether the dump `text`, named `PID[.N][-TT]` after its tag, holds foreground work.
fn foreground(text: &str, name: &str, by: Attribution, main: Option<u32>) -> bool {
    match by {
        Attribution::All => true,
        Attribution::Processes { background } => {
            let pid = name.split(['.', '-']).next().and_then(|p| p.parse().ok());
            !(pid.is_some() && pid == main || ran_any(text, background))
        }
        Attribution::Threads { foreground } => ran_any(text, foreground),
    }
}

/// Whether a dump has costs for any of `names` (a C name, or a C++ one before its argument
/// list): one of its `fn=` blocks is that function. With callgrind's name compression a name is
/// spelled once, as `(id) name`, in whichever `fn=` or `cfn=` line comes first, and as `(id)`
/// after that.
fn ran_any(text: &str, names: &[&str]) -> bool {
    let wanted = |f: &str| {
        names.iter().any(|n| {
            f.strip_prefix(n)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('('))
        })
    };
    let mut ids: std::collections::HashMap<&str, bool> = std::collections::HashMap::new();
    for line in text.lines() {
        let (is_fn, f) = match (line.strip_prefix("fn="), line.strip_prefix("cfn=")) {
            (Some(f), _) => (true, f),
            (None, Some(f)) => (false, f),
            _ => continue,
        };
        let hit = match f.strip_prefix('(').and_then(|r| r.split_once(')')) {
            Some((id, rest)) => match rest.strip_prefix(' ') {
                Some(name) => *ids.entry(id).or_insert(wanted(name)),
                None => ids.get(id).copied().unwrap_or(false),
            },
            None => wanted(f),
        };
        if is_fn && hit {
            return true;
        }
    }
    false
}

/// The first event's total of one callgrind dump (`totals:`, or `summary:` in older
/// formats): the instructions executed (`Ir`).
fn totals(text: &str) -> Option<u64> {
    let line = (text.lines().find(|l| l.starts_with("totals:")))
        .or_else(|| text.lines().find(|l| l.starts_with("summary:")))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The PIDs of the children of `pid` (its forked processes), from `/proc`.
pub fn children(pid: u32) -> Vec<u32> {
    let path = format!("/proc/{pid}/task/{pid}/children");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Whether `perf stat` can count instructions on this host (hardware counters exposed to it);
/// otherwise why not. Virtual machines often hide them.
pub fn perf_counters() -> Result<(), String> {
    let out = Command::new("perf")
        .args(["stat", "-x,", "-e", HARDWARE_EVENT, "true"])
        .output()
        .map_err(|e| format!("perf cannot run: {e}"))?;
    probe_result(&String::from_utf8_lossy(&out.stderr))
}

/// The event the perf path counts: instructions retired in user mode.
pub const HARDWARE_EVENT: &str = "instructions:u";

/// Test-only: an event (e.g. `task-clock`) the perf path counts instead of [`HARDWARE_EVENT`],
/// without the probe, so that CI, whose hosts have no hardware counters, runs the perf path's
/// plumbing. Its counts are not instructions (a software event's unit: task-clock in ns).
pub const EVENT_ENV: &str = "DBDELTA_COUNT_EVENT";

/// `perf stat -x, -e instructions:u true`'s messages (its stderr): `Ok` when it counted some.
fn probe_result(stderr: &str) -> Result<(), String> {
    let line = (stderr.lines())
        .find(|l| l.contains(HARDWARE_EVENT))
        .unwrap_or("");
    let value = line.split(',').next().unwrap_or("");
    match value.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(()),
        _ => Err(format!(
            "perf counts no instructions here ({})",
            line.trim().trim_matches(',')
        )),
    }
}

/// What counts a run's instructions: chosen once per run ([`choose`]), stored with each count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Counter {
    /// Everything under valgrind's callgrind: the server (foreground and background apart) and
    /// the client.
    Callgrind,
    /// `perf stat -e EVENT` attached to the threads of the pass only: the client's threads and
    /// the server's tasks serving their connections (no background count, no valgrind).
    Perf { event: String },
}

impl Counter {
    /// `callgrind`, `perf stat -e instructions:u`: how reports name it.
    pub fn name(&self) -> String {
        match self {
            Counter::Callgrind => "callgrind".into(),
            Counter::Perf { event } => format!("perf stat -e {event}"),
        }
    }

    /// The perf event, on the perf path.
    pub fn perf_event(&self) -> Option<&str> {
        match self {
            Counter::Callgrind => None,
            Counter::Perf { event } => Some(event),
        }
    }
}

/// The run's counter and why: [`EVENT_ENV`]'s event when set (tests), else perf's
/// `instructions:u` when [`perf_counters`] finds them, else callgrind.
pub fn choose() -> (Counter, String) {
    choose_from(std::env::var(EVENT_ENV).ok(), perf_counters)
}

fn choose_from(
    event: Option<String>,
    probe: impl FnOnce() -> Result<(), String>,
) -> (Counter, String) {
    if let Some(event) = event.filter(|e| !e.trim().is_empty()) {
        let why = format!("{EVENT_ENV} names {event}, standing in for {HARDWARE_EVENT}");
        return (Counter::Perf { event }, why);
    }
    match probe() {
        Ok(()) => (
            Counter::Perf {
                event: HARDWARE_EVENT.into(),
            },
            "hardware counters count instructions here".into(),
        ),
        Err(why) => (Counter::Callgrind, format!("no hardware counters: {why}")),
    }
}

/// How long `perf stat` may take to answer a control command or to stop.
const PERF_TIMEOUT: Duration = Duration::from_secs(30);

/// One `perf stat -e EVENT --per-thread -t TIDS`, started with its counting off (`-D -1`) and
/// switched on and off through its control pipe (`--control fd:…`), so that what it counts
/// is exactly between [`PerfStat::enable`] and [`PerfStat::disable`] (each waits for perf's
/// `ack`). Its CSV goes to its stderr, read when it stops.
pub struct PerfStat {
    child: std::process::Child,
    ctl: std::fs::File,
    ack: std::fs::File,
}

impl PerfStat {
    /// Attach to `tids` (threads, or single-threaded processes by their PID).
    pub fn start(event: &str, tids: &[u32]) -> Result<PerfStat> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        use std::os::unix::process::CommandExt;
        if tids.is_empty() {
            bail!("perf stat: no thread to count");
        }
        let pipe = || -> Result<(OwnedFd, OwnedFd)> {
            let mut fds = [0; 2];
            // SAFETY: pipe2 writes two descriptors into `fds`, which we then own.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                bail!("pipe2: {}", std::io::Error::last_os_error());
            }
            // SAFETY: both were just created and are owned by nothing else.
            Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
        };
        let (ctl_read, ctl_write) = pipe()?;
        let (ack_read, ack_write) = pipe()?;
        let (cr, aw) = (ctl_read.as_raw_fd(), ack_write.as_raw_fd());
        let list = tids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let mut cmd = Command::new("perf");
        cmd.args(["stat", "-x,", "--per-thread", "-D", "-1", "-e", event, "-t"])
            .arg(&list)
            .arg(format!("--control=fd:{cr},{aw}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: between fork and exec the closure only calls fcntl(2), which is
        // async-signal-safe, on two descriptors this process owns: perf inherits them.
        unsafe {
            cmd.pre_exec(move || {
                for fd in [cr, aw] {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let child = cmd.spawn().context("starting perf stat")?;
        drop((ctl_read, ack_write));
        Ok(PerfStat {
            child,
            ctl: ctl_write.into(),
            ack: ack_read.into(),
        })
    }

    pub fn enable(&mut self) -> Result<()> {
        self.control("enable")
    }

    pub fn disable(&mut self) -> Result<()> {
        self.control("disable")
    }

    /// Send `what` and wait for perf's `ack`.
    fn control(&mut self, what: &str) -> Result<()> {
        use std::io::{Read, Write};
        use std::os::fd::AsRawFd;
        self.ctl
            .write_all(format!("{what}\n").as_bytes())
            .with_context(|| format!("perf stat: sending {what}"))?;
        let mut fd = libc::pollfd {
            fd: self.ack.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = PERF_TIMEOUT.as_millis() as i32;
        // SAFETY: poll(2) reads and writes only `fd`, one valid pollfd for the call's length.
        if unsafe { libc::poll(&mut fd, 1, ms) } <= 0 {
            bail!(
                "perf stat did not acknowledge {what} within {} s",
                PERF_TIMEOUT.as_secs()
            );
        }
        let mut buf = [0u8; 16];
        let n = self.ack.read(&mut buf).context("perf stat's ack")?;
        if !buf[..n].starts_with(b"ack") {
            bail!(
                "perf stat answered {what} with {:?}",
                String::from_utf8_lossy(&buf[..n])
            );
        }
        Ok(())
    }

    /// Stop perf (SIGINT: it prints its counts) and read them: (thread id, count) per thread.
    pub fn stop(mut self) -> Result<Vec<(u32, u64)>> {
        use std::io::Read;
        // SAFETY: kill on the PID of our own child, which we have not waited for yet.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGINT);
        }
        let mut text = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            err.read_to_string(&mut text).context("reading perf stat")?;
        }
        let _ = self.child.wait();
        parse_stat(&text)
    }
}

impl Drop for PerfStat {
    fn drop(&mut self) {
        // Only reached without `stop` on an error path: end our own child by its PID.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `perf stat -x, --per-thread`'s lines `COMM-TID,VALUE,UNIT,EVENT,…`: (thread id, count) per
/// thread. A `<not counted>` thread (it did not run) counts 0; `<not supported>` is an error.
/// A value in `msec` (task-clock) is turned into nanoseconds.
pub fn parse_stat(text: &str) -> Result<Vec<(u32, u64)>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() < 4 || line.starts_with('#') {
            continue;
        }
        let Some(tid) = (fields[0].rsplit_once('-')).and_then(|(_, t)| t.parse::<u32>().ok())
        else {
            continue;
        };
        let count = match fields[1].trim() {
            "<not counted>" => 0,
            "<not supported>" => bail!("perf stat: {} is not supported here", fields[3]),
            v => {
                let v: f64 =
                    (v.parse()).with_context(|| format!("perf stat: no count in {line:?}"))?;
                let scale = if fields[2] == "msec" { 1e6 } else { 1.0 };
                (v * scale).round() as u64
            }
        };
        out.push((tid, count));
    }
    if out.is_empty() {
        bail!("perf stat counted no thread: {}", text.trim());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_totals_of_a_dump() {
        let text = "version: 1\ncreator: callgrind-3.19.0\npid: 7\ncmd: x\npart: 1\n\n\
                    events: Ir\nsummary: 12345\n\nfn=main\n1 100\ntotals: 12263057\n";
        assert_eq!(totals(text), Some(12263057));
        assert_eq!(totals("events: Ir\nsummary: 99\n"), Some(99));
        assert_eq!(totals("events: Ir\n"), None);
    }

    #[test]
    fn the_wrapper_names_the_dump_files_by_tag_and_pid() {
        let w = wrap(Path::new("/tmp/x"), "server", Attribution::All);
        assert_eq!(w[0], "valgrind");
        assert!(w.contains(&"--instr-atstart=no".to_string()));
        assert!(w.contains(&"--callgrind-out-file=/tmp/x/server.%p".to_string()));
        // vgdb's FIFOs go beside the counts (removed with the run directory), not to /tmp.
        assert!(w.contains(&"--vgdb-prefix=/tmp/x/vgdb".to_string()));
        assert!(!w.contains(&"--separate-threads=yes".to_string()));
        let by = Attribution::Threads {
            foreground: &["dispatch_command"],
        };
        assert!(wrap(Path::new("/tmp/x"), "server", by).contains(&"--separate-threads=yes".into()));
    }

    #[test]
    fn a_dump_is_unfinished_until_its_totals_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("server.1"), "").unwrap();
        std::fs::write(dir.path().join("server.2"), "events: Ir\nfn=(1) x\n1 5\n").unwrap();
        std::fs::write(dir.path().join("server.3"), "fn=(1) x\n1 5\ntotals: 5\n").unwrap();
        std::fs::write(dir.path().join("client.4"), "").unwrap();
        assert_eq!(
            unfinished(dir.path(), "server").unwrap(),
            ["server.1", "server.2"]
        );
    }

    /// A dump as callgrind 3.19 writes it: `summary:` in its header, `totals:` last.
    const WHOLE: &str = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 7\n\n\
                         events: Ir\nsummary: 900\n\nfn=(1) main\n1 900\n\ntotals: 900\n";

    #[test]
    fn a_dump_cut_short_is_an_error_naming_it_not_its_header_summary() {
        let dir = tempfile::tempdir().unwrap();
        let cut = &WHOLE[..WHOLE.find("fn=(1) main").unwrap() + 8];
        std::fs::write(dir.path().join("client.7.3"), cut).unwrap();
        std::fs::write(dir.path().join("client.8.1"), WHOLE).unwrap();
        let e = take_totals(dir.path(), "client").unwrap_err().to_string();
        assert!(e.contains("client.7.3") && e.contains("totals"), "{e}");
    }

    #[test]
    fn an_empty_dump_is_an_error_an_empty_exit_file_is_a_live_process() {
        for name in ["client.7.3", "server.7.2-05", "server.7-01"] {
            let dir = tempfile::tempdir().unwrap();
            let tag = name.split('.').next().unwrap();
            // A live process's exit file, empty until it exits: left alone.
            std::fs::write(dir.path().join(format!("{tag}.7")), "").unwrap();
            std::fs::write(dir.path().join(name), "").unwrap();
            let e = take_totals(dir.path(), tag).unwrap_err().to_string();
            assert!(e.contains(name) && e.contains("empty"), "{e}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("client.7"), "").unwrap();
        std::fs::write(dir.path().join("client.7.1"), WHOLE).unwrap();
        assert_eq!(take_totals(dir.path(), "client").unwrap(), (900, 1));
    }

    const PG: Attribution = Attribution::Processes {
        background: &["AutoVacWorkerMain"],
    };

    #[test]
    fn processes_split_the_main_process_and_autovacuum_from_the_backends() {
        let dir = tempfile::tempdir().unwrap();
        let backend = "fn=(1) main\n1 10\nfn=(2) PostgresMain\n1 90\ntotals: 100\n";
        let autovacuum = "fn=(1) main\nfn=(5) AutoVacWorkerMain\n1 7\ntotals: 7000\n";
        std::fs::write(dir.path().join("server.200"), backend).unwrap();
        std::fs::write(dir.path().join("server.201"), backend).unwrap();
        std::fs::write(dir.path().join("server.202"), autovacuum).unwrap();
        std::fs::write(dir.path().join("server.100.3"), "totals: 50\n").unwrap();
        let (split, files) = take_split(dir.path(), "server", PG, Some(100)).unwrap();
        assert_eq!(files, 4);
        assert_eq!(
            split,
            Split {
                foreground: 200,
                background: 7050
            }
        );
    }

    #[test]
    fn threads_split_by_the_statement_dispatcher() {
        let dir = tempfile::tempdir().unwrap();
        // The name spelled once, in a call line; the dispatcher's own block by its id.
        let conn = "fn=(3) do_command(THD*)\ncfn=(4) dispatch_command(THD*, COM_DATA const*, enum_server_command)\n\
                    calls=1 0\n1 5\nfn=(4)\n1 5\ntotals: 300\n";
        // A name that only starts like the dispatcher's, and a call never entered.
        let purge = "fn=(1) srv_purge_coordinator_thread\ncfn=(2) dispatch_command_x\n1 9\n\
                     cfn=(6) dispatch_command(THD*)\ncalls=0 0\ntotals: 999\n";
        std::fs::write(dir.path().join("server.7.2-05"), conn).unwrap();
        std::fs::write(dir.path().join("server.7.2-02"), purge).unwrap();
        let by = Attribution::Threads {
            foreground: &["dispatch_command"],
        };
        let (split, _) = take_split(dir.path(), "server", by, Some(7)).unwrap();
        assert_eq!(
            split,
            Split {
                foreground: 300,
                background: 999
            }
        );
    }

    #[test]
    fn functions_are_taken_apart_like_the_totals_before_the_files_go() {
        let dir = tempfile::tempdir().unwrap();
        let backend = "fn=(1) main\n1 10\nfn=(2) PostgresMain\n1 90\ntotals: 100\n";
        let autovacuum = "fn=(5) AutoVacWorkerMain\n1 7\ntotals: 7\n";
        std::fs::write(dir.path().join("server.200"), backend).unwrap();
        std::fs::write(dir.path().join("server.202"), autovacuum).unwrap();
        let mut f = SplitFunctions::default();
        take_split_functions(dir.path(), "server", PG, Some(100), Some(&mut f)).unwrap();
        assert_eq!(f.foreground.total(), 100);
        assert_eq!(f.foreground.costs["PostgresMain"].own, 90);
        assert_eq!(f.background.costs["AutoVacWorkerMain"].own, 7);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn takes_and_removes_only_its_own_tag() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("server.10"), "totals: 5\n").unwrap();
        std::fs::write(dir.path().join("server.11.1"), "summary: 7\n").unwrap();
        std::fs::write(dir.path().join("client.12"), "totals: 100\n").unwrap();
        std::fs::write(dir.path().join("server.13"), "").unwrap();
        assert_eq!(take_totals(dir.path(), "server").unwrap(), (12, 2));
        assert_eq!(take_totals(dir.path(), "server").unwrap(), (0, 0));
        assert_eq!(take_totals(dir.path(), "client").unwrap(), (100, 1));
    }

    #[test]
    fn the_probe_finds_instructions_or_says_why_not() {
        assert!(probe_result("123456,,instructions:u,1000,100.00,,\n").is_ok());
        let e = probe_result("<not supported>,,instructions:u,0,100.00,,\n").unwrap_err();
        assert!(e.contains("<not supported>"), "{e}");
        assert!(probe_result("").is_err());
    }

    #[test]
    fn the_counter_is_the_tests_event_else_the_probes_answer() {
        let (c, why) = choose_from(Some("task-clock".into()), || panic!("not probed"));
        assert_eq!(c.perf_event(), Some("task-clock"));
        assert!(why.contains("standing in"), "{why}");
        let (c, _) = choose_from(None, || Ok(()));
        assert_eq!(c.name(), "perf stat -e instructions:u");
        let (c, why) = choose_from(Some(String::new()), || Err("<not supported>".into()));
        assert_eq!(
            (c, why.contains("<not supported>")),
            (Counter::Callgrind, true)
        );
    }

    #[test]
    fn reads_per_thread_counts_from_perf_stat() {
        let text = "# started on Sat Nov 28 15:41:20 2026\n\n\
                    postgres-918,79.12,msec,task-clock,79119323,100.00,0.053,CPUs utilized\n\
                    dbdelta-c0-r0-920,<not counted>,msec,task-clock,0,100.00,,\n\
                    Events disabled\n";
        assert_eq!(parse_stat(text).unwrap(), [(918, 79_120_000), (920, 0)]);
        let hw = "mysqld-77,1234567,,instructions:u,1000,100.00,,\n";
        assert_eq!(parse_stat(hw).unwrap(), [(77, 1_234_567)]);
        let e = parse_stat("postgres-9,<not supported>,,instructions:u,0,100.00,,\n");
        assert!(e.unwrap_err().to_string().contains("not supported"));
        assert!(parse_stat("Events enabled\n").is_err());
    }

    #[test]
    fn perf_stat_counts_only_between_enable_and_disable() {
        if Command::new("perf").arg("--version").output().is_err() {
            return;
        }
        // SAFETY: gettid(2) reads no memory and cannot fail.
        let tid = unsafe { libc::gettid() } as u32;
        let mut stat = PerfStat::start("task-clock", &[tid]).unwrap();
        stat.enable().unwrap();
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(50) {
            std::hint::black_box(t.elapsed());
        }
        stat.disable().unwrap();
        let counts = stat.stop().unwrap();
        assert_eq!(counts.len(), 1);
        assert_eq!(counts[0].0, tid);
        assert!(counts[0].1 > 1_000_000, "{counts:?}");
    }
}
