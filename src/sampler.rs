//! Hardware cost: `/proc` snapshots at the measured period's boundaries and a 1 Hz sampler.
//!
//! Owns reading what the engine's processes and the host spent: process CPU and context
//! switches (for an embedded engine that is dbdelta's own process, via `getrusage`), process IO
//! bytes (`/proc/PID/io`), host busy CPU and context switches (`/proc/stat`), device IO of the
//! data directory's disk (`/proc/diskstats`), and RSS/VSZ, which the 1 Hz sampler thread tracks
//! to find the step's peak. It also records where the server's threads and dbdelta's client
//! threads ran and were allowed to run ([`CpuUse`]: each thread's last CPU and affinity mask,
//! every second and at the boundaries), the evidence that a placement was applied. Uses the
//! `procfs` crate, not hand parsing.
//! It also judges whether a pair of snapshots can carry a step's per-op costs at all
//! ([`CpuWindow`]): a CPU window that misses part of the operations it is divided by, or is too
//! short for the clock tick, gives values that are below resolution (`None`), never a number.
//! Must not: decide when the measured period starts or ends (the runner calls [`Probe::snapshot`]
//! at those instants and hands [`Costs`] the instants) or divide by ops (that is
//! [`Costs::per_op`]), or import the engines or the remote side: they hand it an [`Observed`]
//! (its module, `observed`, is the sampler's).

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use procfs::CurrentSI;
use procfs::process::Process;

pub mod observed;

pub use observed::{Observed, ProbeWhat, Probed};

use crate::cpus::CpuSet;
use crate::results::{Metric, Values};
use crate::stats::{CLOCK_TICK_US, RESOLUTION_UNITS};

/// How long the settling guard (`runner/settle.rs`) watches a server idle before a cell's
/// first measured step, and how long at `--quick` scale (the plan's estimate counts them).
pub const IDLE_PROBE: Duration = Duration::from_secs(2);
pub const QUICK_IDLE_PROBE: Duration = Duration::from_millis(500);
use crate::sys::{rusage, timeval_us};

/// Counters of one engine process at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProcCounters {
    pub pid: u32,
    /// Context switches (voluntary + involuntary) summed over the process's threads.
    pub cs: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// Counters at one instant.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    /// Engine CPU time (user + system), µs: for a server tree, every live process's time plus
    /// the time of the children it reaped (`cutime + cstime`), so exited backends still count.
    pub proc_cpu_us: f64,
    /// Per engine process; deltas pair processes by PID.
    pub procs: Vec<ProcCounters>,
    /// dbdelta's own CPU time (user + system), µs: the client.
    pub client_cpu_us: f64,
    /// Host busy CPU (user, nice, system, irq, softirq), µs summed over CPUs.
    pub host_busy_us: f64,
    pub host_ctxt: u64,
    /// Device counters of the data directory's disk, when it shows in `/proc/diskstats`.
    pub disk: Option<DiskCounters>,
    /// The engine's processes were read (false for a server whose processes are not on this
    /// host: its per-process values are not measured).
    pub proc_observed: bool,
}

#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct DiskCounters {
    pub reads: u64,
    pub sectors_read: u64,
    pub writes: u64,
    pub sectors_written: u64,
}

/// What to read: the engine's processes and the device holding its data.
#[derive(Debug, Clone)]
pub struct Probe {
    observed: Observed,
    device: Option<(i32, i32)>,
    tick_us: f64,
    /// Read the host-wide counters (`/proc/stat`).
    host: bool,
}

/// Microseconds per clock tick of `/proc`'s CPU times.
fn tick_us() -> f64 {
    // SAFETY: sysconf(3) reads no memory of ours.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1e6 / if hz > 0 { hz as f64 } else { 100.0 }
}

impl Probe {
    pub fn new(observed: Observed, data_dir: &Path) -> Probe {
        // A remote server's data directory is on its own host (its agent reads the device).
        let here = !matches!(observed, Observed::Remote(_));
        let device = (here.then(|| std::fs::metadata(data_dir).ok()).flatten()).map(|m| {
            let dev = m.dev();
            (libc::major(dev) as i32, libc::minor(dev) as i32)
        });
        Probe {
            observed,
            device,
            tick_us: tick_us(),
            host: true,
        }
    }

    /// A probe that reads only this process's own CPU (`getrusage`): nothing of `/proc`. The
    /// instruction-counting client runs under valgrind, where reading the auxiliary vector (as
    /// `procfs` does for its clock) faults, and needs no costs.
    pub fn own_only() -> Probe {
        Probe {
            observed: Observed::Unobserved("an instruction-counting pass".into()),
            device: None,
            tick_us: tick_us(),
            host: false,
        }
    }

    /// Read every counter now. For a remote server the agent on its host reads all but the
    /// client's CPU (a link that fails leaves the server's side unobserved).
    pub fn snapshot(&self) -> Snapshot {
        let ru = rusage(libc::RUSAGE_SELF);
        let client_cpu_us = timeval_us(ru.ru_utime) + timeval_us(ru.ru_stime);
        if let Observed::Remote(r) = &self.observed {
            let mut s = r.snapshot().unwrap_or_default();
            s.client_cpu_us = client_cpu_us;
            return s;
        }
        let mut s = Snapshot {
            client_cpu_us,
            proc_observed: !matches!(self.observed, Observed::Unobserved(_)),
            ..Default::default()
        };
        match self.observed {
            Observed::Unobserved(_) | Observed::Remote(_) => {}
            Observed::SelfProcess => {
                s.proc_cpu_us = s.client_cpu_us;
                let mut me = ProcCounters {
                    pid: std::process::id(),
                    cs: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
                    ..Default::default()
                };
                if let Ok(io) = Process::myself().and_then(|p| p.io()) {
                    me.read_bytes = io.read_bytes;
                    me.write_bytes = io.write_bytes;
                }
                s.procs.push(me);
            }
            Observed::Tree(root) => {
                for p in tree(root) {
                    let Ok(stat) = p.stat() else { continue };
                    let ticks = stat.utime + stat.stime;
                    let reaped = (stat.cutime + stat.cstime).max(0) as u64;
                    s.proc_cpu_us += (ticks + reaped) as f64 * self.tick_us;
                    let mut c = ProcCounters {
                        pid: p.pid as u32,
                        ..Default::default()
                    };
                    if let Ok(tasks) = p.tasks() {
                        for t in tasks.flatten() {
                            if let Ok(st) = t.status() {
                                c.cs += st.voluntary_ctxt_switches.unwrap_or(0)
                                    + st.nonvoluntary_ctxt_switches.unwrap_or(0);
                            }
                        }
                    }
                    if let Ok(io) = p.io() {
                        c.read_bytes = io.read_bytes;
                        c.write_bytes = io.write_bytes;
                    }
                    s.procs.push(c);
                }
            }
        }
        if !self.host {
            return s;
        }
        if let Ok(ks) = procfs::KernelStats::current() {
            let t = &ks.total;
            let busy = t.user + t.nice + t.system + t.irq.unwrap_or(0) + t.softirq.unwrap_or(0);
            s.host_busy_us = busy as f64 * self.tick_us;
            s.host_ctxt = ks.ctxt;
        }
        if let Some((major, minor)) = self.device
            && let Ok(disks) = procfs::diskstats()
        {
            s.disk = disks
                .iter()
                .find(|d| d.major == major && d.minor == minor)
                .map(|d| DiskCounters {
                    reads: d.reads,
                    sectors_read: d.sectors_read,
                    writes: d.writes,
                    sectors_written: d.sectors_written,
                });
        }
        s
    }

    /// Current memory of the engine: largest RSS and VSZ of one process, and PSS summed over
    /// the processes (shared memory counted once), bytes.
    pub fn memory(&self) -> Option<Memory> {
        self.memory_with(true)
    }

    /// [`Self::memory`], with PSS only when `pss` (0 otherwise). PSS is the expensive part:
    /// the kernel walks every mapped page of every process for `smaps_rollup` (PostgreSQL
    /// with 1 GB of shared buffers touched: milliseconds per process), and that CPU is
    /// dbdelta's, so it lands in client CPU and competes with the server.
    pub fn memory_with(&self, pss: bool) -> Option<Memory> {
        let procs = match &self.observed {
            Observed::SelfProcess => vec![Process::myself().ok()?],
            Observed::Tree(root) => tree(*root),
            Observed::Unobserved(_) => return None,
            Observed::Remote(r) => return r.memory(pss),
        };
        // SAFETY: sysconf(3) reads no memory of ours.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
        let mut m = Memory::default();
        for p in procs {
            let Ok(stat) = p.stat() else { continue };
            m.rss = m.rss.max(stat.rss * page);
            m.vsz = m.vsz.max(stat.vsize);
            if !pss {
                continue;
            }
            if let Ok(rollup) = p.smaps_rollup()
                && let Some(pss) = rollup
                    .memory_map_rollup
                    .0
                    .first()
                    .and_then(|mm| mm.extension.map.get("Pss"))
            {
                m.pss += pss;
            }
        }
        (m.rss > 0).then_some(m)
    }
}

impl Probe {
    /// Read what a sampler on another host asks for (the agent answers with this).
    pub fn answer(&self, what: ProbeWhat) -> Probed {
        match what {
            ProbeWhat::Snapshot => Probed::Snapshot(self.snapshot()),
            ProbeWhat::Memory { pss } => Probed::Memory(self.memory_with(pss)),
            ProbeWhat::Cpus => Probed::Cpus(self.cpus()),
        }
    }
}

/// Where threads ran and were allowed to run: unions over every sample of a step.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CpuUse {
    /// CPUs a server thread was last seen on (`processor` of `/proc/PID/task/TID/stat`).
    pub server_seen: CpuSet,
    /// Union of the server threads' affinity masks (`Cpus_allowed_list`).
    pub server_allowed: CpuSet,
    /// The same for dbdelta's client threads.
    pub client_seen: CpuSet,
    pub client_allowed: CpuSet,
}

impl CpuUse {
    pub fn add(&mut self, other: &CpuUse) {
        self.server_seen.extend(&other.server_seen);
        self.server_allowed.extend(&other.server_allowed);
        self.client_seen.extend(&other.client_seen);
        self.client_allowed.extend(&other.client_allowed);
    }
}

/// Client threads are named `dbdelta-client-N`; the kernel keeps the first 15 bytes of a
/// thread's name, so they are found by this prefix.
pub const CLIENT_THREAD_PREFIX: &str = "dbdelta-client";

/// Add one thread's last CPU and affinity mask.
fn observe_task(task: &procfs::process::Task, seen: &mut CpuSet, allowed: &mut CpuSet) {
    if let Ok(Some(cpu)) = task.stat().map(|st| st.processor) {
        seen.insert(cpu as usize);
    }
    if let Ok(Some(list)) = task.status().map(|st| st.cpus_allowed_list) {
        for (lo, hi) in list {
            for cpu in lo..=hi {
                allowed.insert(cpu as usize);
            }
        }
    }
}

impl Probe {
    /// What a CPU profile of the engine attaches to: every process of a server's tree, or,
    /// for an embedded engine, dbdelta's client threads (where its work runs).
    pub fn attach(&self) -> crate::profiler::Attach {
        use crate::profiler::Attach;
        match self.observed {
            // A remote server's processes are not on this host: nothing to profile here.
            Observed::Unobserved(_) | Observed::Remote(_) => Attach::Processes(Vec::new()),
            Observed::Tree(root) => {
                Attach::Processes(tree(root).iter().map(|p| p.pid as u32).collect())
            }
            Observed::SelfProcess => Attach::Threads(
                Process::myself()
                    .and_then(|me| me.tasks())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter(|t| {
                        t.stat()
                            .is_ok_and(|st| st.comm.starts_with(CLIENT_THREAD_PREFIX))
                    })
                    .map(|t| t.tid as u32)
                    .collect(),
            ),
        }
    }
}

impl Probe {
    /// Where every server thread and every client thread is now: its last CPU and its
    /// affinity mask. For an embedded engine there is no server; its work runs in the client
    /// threads.
    pub fn cpus(&self) -> CpuUse {
        let mut u = CpuUse::default();
        if let Observed::Remote(r) = &self.observed
            && let Some(remote) = r.cpus()
        {
            u.server_seen = remote.server_seen;
            u.server_allowed = remote.server_allowed;
        }
        if let Observed::Tree(root) = self.observed {
            for p in tree(root) {
                for t in p.tasks().into_iter().flatten().flatten() {
                    observe_task(&t, &mut u.server_seen, &mut u.server_allowed);
                }
            }
        }
        if let Ok(me) = Process::myself() {
            for t in me.tasks().into_iter().flatten().flatten() {
                let client = t
                    .stat()
                    .is_ok_and(|st| st.comm.starts_with(CLIENT_THREAD_PREFIX));
                if client {
                    observe_task(&t, &mut u.client_seen, &mut u.client_allowed);
                }
            }
        }
        u
    }
}

/// Memory of the engine at one instant, bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Memory {
    pub rss: u64,
    pub vsz: u64,
    pub pss: u64,
}

/// `root` and every process descending from it.
fn tree(root: u32) -> Vec<Process> {
    let Ok(all) = procfs::process::all_processes() else {
        return Process::new(root as i32).into_iter().collect();
    };
    let mut procs: Vec<(Process, i32)> = all
        .flatten()
        .filter_map(|p| p.stat().ok().map(|st| (p, st.ppid)))
        .collect();
    let mut members = vec![root as i32];
    let mut out = Vec::new();
    // Parents come before their children often but not always: repeat until nothing moves.
    loop {
        let before = out.len();
        let mut i = 0;
        while i < procs.len() {
            let (pid, ppid) = (procs[i].0.pid, procs[i].1);
            if pid == root as i32 || members.contains(&ppid) {
                let (p, _) = procs.swap_remove(i);
                if pid != root as i32 {
                    members.push(pid);
                }
                out.push(p);
            } else {
                i += 1;
            }
        }
        if out.len() == before {
            break;
        }
    }
    out
}

/// Where the snapshots of a step stand against its operations: the window they measure and
/// the window whose operations their deltas are divided by.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CpuWindow {
    /// Seconds from the first instant a measured operation could start to the opening
    /// snapshot (0: it was taken before); `None`: no opening snapshot was taken within the step
    /// (it ended before its measured period began).
    pub opened_late: Option<f64>,
    /// Seconds from the opening snapshot to the closing one.
    pub seconds: f64,
    /// The operations window: the step's measured seconds.
    pub ops_seconds: f64,
}

/// A CPU window that misses more than this share of its operations window does not cover them:
/// its deltas hold only part of the work they are divided by. A tenth, as
/// [`RESOLUTION_UNITS`]: what counting alone may move a total by before a ratio is noise.
const MAX_MISSED: f64 = 1.0 / RESOLUTION_UNITS;

/// The shortest window whose CPU times resolve a per-op cost, µs: [`RESOLUTION_UNITS`] clock
/// ticks (`/proc`'s CPU times count ticks; `getrusage`'s finer ones are read at boundaries no
/// more certain than a scheduler's time slice).
const MIN_CPU_WINDOW_US: f64 = RESOLUTION_UNITS * CLOCK_TICK_US;

/// The CPU times of the snapshots.
const CPU_METRICS: &[Metric] = &[Metric::ServerCpu, Metric::ClientCpu, Metric::HostCpu];

/// Every per-op cost [`Costs::per_op`] derives from the snapshots.
const SNAPSHOT_METRICS: &[Metric] = &[
    Metric::ServerCpu,
    Metric::ClientCpu,
    Metric::Cs,
    Metric::HostCpu,
    Metric::HostCs,
    Metric::Reads,
    Metric::ReadKb,
    Metric::Writes,
    Metric::WriteKb,
    Metric::ProcReadKb,
    Metric::ProcWriteKb,
];

impl CpuWindow {
    /// The metrics this window cannot resolve: every snapshot delta when it does not cover
    /// the operations window (no opening snapshot, or one that ended more than
    /// [`MAX_MISSED`] of it late), the CPU times when it or the operations window is shorter
    /// than [`MIN_CPU_WINDOW_US`] (the work measured lasted fewer ticks than a total needs).
    pub fn unresolved(&self) -> &'static [Metric] {
        let covers = (self.opened_late).is_some_and(|late| late <= self.ops_seconds * MAX_MISSED);
        if !covers {
            SNAPSHOT_METRICS
        } else if self.seconds.min(self.ops_seconds) * 1e6 < MIN_CPU_WINDOW_US {
            CPU_METRICS
        } else {
            &[]
        }
    }
}

/// Differences between two snapshots, ready to be divided by ops.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Costs {
    pub a: Snapshot,
    pub b: Snapshot,
    /// How `a` and `b` stand against the step's operations; `None`: not a step's (the settling
    /// probe divides by nothing), every delta is taken as it is.
    #[serde(default)]
    pub window: Option<CpuWindow>,
}

impl Costs {
    /// The deltas from `a` to `b`, with no operations window to judge them against.
    pub fn new(a: Snapshot, b: Snapshot) -> Costs {
        Costs { a, b, window: None }
    }

    /// Divide every delta by `ops`, into the metric table's per-op costs (the server's CPU,
    /// context switches and IO, dbdelta's CPU, the host's, the device's); over zero ops every
    /// value is `None` ("n/a"), and so is every value [`Self::unresolved`] names.
    pub fn per_op(&self, ops: u64) -> Values {
        let mut out = self.deltas_per_op(ops);
        for &m in self.window.map_or(&[][..], |w| w.unresolved()) {
            out.set(m, None);
        }
        out
    }

    /// The per-op costs that the deltas would give over `ops` but the window cannot resolve
    /// ([`CpuWindow::unresolved`]): below resolution, `None` in [`Self::per_op`].
    pub fn unresolved(&self, ops: u64) -> Vec<Metric> {
        let deltas = self.deltas_per_op(ops);
        (self.window.map_or(&[][..], |w| w.unresolved()).iter())
            .copied()
            .filter(|&m| deltas.get(m).is_some())
            .collect()
    }

    /// Every delta divided by `ops`, whatever the window.
    fn deltas_per_op(&self, ops: u64) -> Values {
        if ops == 0 {
            return Values::default();
        }
        let n = ops as f64;
        let d = |a: u64, b: u64| Some(b.saturating_sub(a) as f64 / n);
        let (a, b) = (&self.a, &self.b);
        let disk = a.disk.zip(b.disk);
        // Per process: a process that is new in `b` counts from zero; one that exited between
        // the snapshots is lost (its CPU is not: it moved to its parent's reaped-children time).
        let (mut cs, mut rd, mut wr) = (0u64, 0u64, 0u64);
        for pb in &b.procs {
            let pa = a
                .procs
                .iter()
                .find(|p| p.pid == pb.pid)
                .copied()
                .unwrap_or_default();
            cs += pb.cs.saturating_sub(pa.cs);
            rd += pb.read_bytes.saturating_sub(pa.read_bytes);
            wr += pb.write_bytes.saturating_sub(pa.write_bytes);
        }
        let seen = a.proc_observed && b.proc_observed;
        let proc = |v: f64| seen.then_some(v);
        let mut out = Values::default();
        for (metric, value) in [
            (
                Metric::ServerCpu,
                proc((b.proc_cpu_us - a.proc_cpu_us).max(0.0) / n),
            ),
            (
                Metric::ClientCpu,
                Some((b.client_cpu_us - a.client_cpu_us).max(0.0) / n),
            ),
            (Metric::Cs, proc(cs as f64 / n)),
            (
                Metric::HostCpu,
                Some((b.host_busy_us - a.host_busy_us).max(0.0) / n),
            ),
            (Metric::HostCs, d(a.host_ctxt, b.host_ctxt)),
            (Metric::Reads, disk.and_then(|(x, y)| d(x.reads, y.reads))),
            (
                Metric::ReadKb,
                (disk.and_then(|(x, y)| d(x.sectors_read, y.sectors_read))).map(|v| v / 2.0),
            ),
            (
                Metric::Writes,
                disk.and_then(|(x, y)| d(x.writes, y.writes)),
            ),
            (
                Metric::WriteKb,
                (disk.and_then(|(x, y)| d(x.sectors_written, y.sectors_written))).map(|v| v / 2.0),
            ),
            (Metric::ProcReadKb, proc(rd as f64 / n / 1024.0)),
            (Metric::ProcWriteKb, proc(wr as f64 / n / 1024.0)),
        ] {
            out.set(metric, value);
        }
        out
    }
}

/// Peak memory seen by the sampler, and where threads ran meanwhile.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Peaks {
    pub rss: Option<u64>,
    pub vsz: Option<u64>,
    pub pss: Option<u64>,
    pub samples: u32,
    pub cpus: CpuUse,
}

impl Peaks {
    fn add(&mut self, m: Option<Memory>) {
        if let Some(m) = m {
            self.rss = self.rss.max(Some(m.rss));
            self.vsz = self.vsz.max(Some(m.vsz));
            if m.pss > 0 {
                self.pss = self.pss.max(Some(m.pss));
            }
            self.samples += 1;
        }
    }
}

/// PSS is read every this many seconds (and at the end); RSS and VSZ every second.
const PSS_EVERY: u32 = 10;

/// A thread that samples the engine's memory once per second until stopped.
pub struct Sampler {
    stop: mpsc::Sender<()>,
    handle: thread::JoinHandle<Peaks>,
}

impl Sampler {
    pub fn start(probe: Probe) -> Sampler {
        let (stop, stopped) = mpsc::channel::<()>();
        let handle = thread::Builder::new()
            .name("dbdelta-sampler".into())
            .spawn(move || {
                let mut peaks = Peaks::default();
                let mut next = Instant::now();
                let mut tick = 0u32;
                loop {
                    peaks.add(probe.memory_with(tick.is_multiple_of(PSS_EVERY)));
                    peaks.cpus.add(&probe.cpus());
                    tick += 1;
                    next += Duration::from_secs(1);
                    let wait = next.saturating_duration_since(Instant::now());
                    match stopped.recv_timeout(wait) {
                        Err(mpsc::RecvTimeoutError::Timeout) => continue,
                        _ => break,
                    }
                }
                // One last sample at the end of the period.
                peaks.add(probe.memory());
                peaks.cpus.add(&probe.cpus());
                peaks
            })
            .expect("spawn sampler thread");
        Sampler { stop, handle }
    }

    pub fn finish(self) -> Peaks {
        let _ = self.stop.send(());
        self.handle.join().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cpu_shows_up_in_snapshots() {
        let probe = Probe::new(Observed::SelfProcess, Path::new("."));
        let a = probe.snapshot();
        // Spin until this thread has used 50 ms of CPU (by getrusage, not the wall clock: on a
        // loaded host 50 ms of wall time can be 10 ms of CPU), for at most 10 s.
        let thread_cpu = || {
            let ru = rusage(libc::RUSAGE_THREAD);
            timeval_us(ru.ru_utime) + timeval_us(ru.ru_stime)
        };
        let (start, t) = (thread_cpu(), Instant::now());
        let mut x = 0u64;
        while thread_cpu() - start < 50_000.0 && t.elapsed() < Duration::from_secs(10) {
            for _ in 0..10_000 {
                x = x.wrapping_mul(31).wrapping_add(1);
            }
            std::hint::black_box(x);
        }
        let b = probe.snapshot();
        let per = Costs::new(a.clone(), b.clone()).per_op(1);
        // 50 ms of CPU by getrusage: at least 20 ms must be visible in /proc.
        assert!(per.get(Metric::ServerCpu).unwrap() > 20_000.0, "{per:?}");
        assert!(per.get(Metric::HostCpu).unwrap() > 0.0);
        assert!(Costs::new(a, b).per_op(0).get(Metric::ServerCpu).is_none());
        assert!(probe.memory().unwrap().rss > 0);
    }

    /// A step's snapshots: 600 ms of engine CPU, 1.2 s of host CPU and 300 context switches
    /// apart, divided over 100,000 operations in 0.3 s, judged against `window`.
    fn step_costs(window: Option<CpuWindow>) -> Costs {
        let snap = |cpu: f64, cs: u64| Snapshot {
            proc_cpu_us: cpu,
            procs: vec![ProcCounters {
                pid: 7,
                cs,
                ..Default::default()
            }],
            client_cpu_us: cpu,
            host_busy_us: 2.0 * cpu,
            host_ctxt: cs,
            proc_observed: true,
            ..Default::default()
        };
        Costs {
            a: snap(1_000_000.0, 1_000),
            b: snap(1_600_000.0, 1_300),
            window,
        }
    }

    fn window(opened_late: Option<f64>, seconds: f64) -> Option<CpuWindow> {
        Some(CpuWindow {
            opened_late,
            seconds,
            ops_seconds: 0.3,
        })
    }

    #[test]
    fn a_window_that_cannot_cover_its_operations_is_below_resolution() {
        let ops = 100_000;
        // Opened 2 ms late, 0.3 s long: every value is a number.
        let covered = step_costs(window(Some(0.002), 0.3));
        let per = covered.per_op(ops);
        assert_eq!(per.get(Metric::ServerCpu), Some(6.0));
        assert_eq!(per.get(Metric::HostCpu), Some(12.0));
        assert_eq!(per.get(Metric::Cs), Some(0.003));
        assert!(covered.unresolved(ops).is_empty());
        // Here the opening snapshot came after the operations had ended (0.35 s into a 0.3 s
        // window); its deltas hold none of their work. Not a number, nor are the other deltas;
        // the device's (no disk in these snapshots) stay merely unknown.
        let late = step_costs(window(Some(0.35), 0.005));
        let per = late.per_op(ops);
        for m in [
            Metric::ServerCpu,
            Metric::ClientCpu,
            Metric::HostCpu,
            Metric::Cs,
        ] {
            assert_eq!(per.get(m), None, "{m:?}");
        }
        assert_eq!(
            late.unresolved(ops),
            [
                Metric::ServerCpu,
                Metric::ClientCpu,
                Metric::Cs,
                Metric::HostCpu,
                Metric::HostCs,
                Metric::ProcReadKb,
                Metric::ProcWriteKb,
            ]
        );
        // Missing 31 ms of 0.3 s (over a tenth) does not cover it either; 29 ms does.
        assert_eq!(
            step_costs(window(Some(0.031), 0.27)).unresolved(ops).len(),
            7
        );
        assert!(
            step_costs(window(Some(0.029), 0.27))
                .unresolved(ops)
                .is_empty()
        );
        // Too few samples: no opening snapshot within the step at all.
        assert_eq!(
            step_costs(window(None, 0.0))
                .per_op(ops)
                .get(Metric::ServerCpu),
            None
        );
        // Too short for the clock tick: 50 ms is 5 ticks; the CPU times go, the counts stay.
        let short = step_costs(Some(CpuWindow {
            opened_late: Some(0.0),
            seconds: 0.05,
            ops_seconds: 0.05,
        }));
        assert_eq!(
            short.unresolved(ops),
            [Metric::ServerCpu, Metric::ClientCpu, Metric::HostCpu]
        );
        assert_eq!(short.per_op(ops).get(Metric::Cs), Some(0.003));
        // A longer CPU window (threads slow to stop) does not lengthen the work it measured.
        let tail = step_costs(Some(CpuWindow {
            opened_late: Some(0.0),
            seconds: 0.15,
            ops_seconds: 0.05,
        }));
        assert_eq!(tail.per_op(ops).get(Metric::ServerCpu), None);
        // Not a step's (the settling probe): taken as it is.
        assert_eq!(
            step_costs(None).per_op(ops).get(Metric::ServerCpu),
            Some(6.0)
        );
    }

    #[test]
    fn client_threads_are_seen_on_their_pinned_cpu() {
        let probe = Probe::new(Observed::SelfProcess, Path::new("."));
        let first = crate::cpus::current_affinity()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        let one: CpuSet = [first].into_iter().collect();
        let (tx, rx) = mpsc::channel::<()>();
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let pinned = one.clone();
        let h = thread::Builder::new()
            .name("dbdelta-client-7".into())
            .spawn(move || {
                crate::cpus::pin_current_thread(&pinned).unwrap();
                let t = Instant::now();
                while t.elapsed() < Duration::from_millis(20) {}
                ready_tx.send(()).unwrap();
                rx.recv().unwrap();
            })
            .unwrap();
        ready_rx.recv().unwrap();
        let u = probe.cpus();
        tx.send(()).unwrap();
        h.join().unwrap();
        assert_eq!(u.client_seen, one, "{u:?}");
        assert_eq!(u.client_allowed, one, "{u:?}");
        assert!(u.server_seen.is_empty(), "no server process: {u:?}");
    }
}
