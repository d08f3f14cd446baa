//! `client-cost`: what dbdelta's own client costs next to sysbench and pgbench (issue #4).
//!
//! Per engine (PostgreSQL, MariaDB): start one server through dbdelta's lifecycle code, compare
//! loading 1 sysbench table (`sysbench prepare` vs dbdelta's load, interleaved rounds), then run
//! a cached point select with `sysbench oltp_point_select`, `pgbench -S`-style (`-M prepared`,
//! the same query from a script file; PostgreSQL only) and dbdelta's `point-query` step
//! (in-process, `runner::step::run`), interleaved A B C per round, at each client count. Prints
//! QPS, client CPU µs/query, server CPU µs/query, the ratios against sysbench, the medians over
//! the rounds and the goals of issue #4; then, with strace, syscalls per query of every client.
//!
//! Accounting is the same for all three clients: client CPU is the whole client's CPU (an
//! external client's `wait4` rusage; for dbdelta, `getrusage(RUSAGE_SELF)` around the whole
//! `step::run` call) divided by every query it ran, so process/thread start, connect, prepare and
//! dbdelta's warm-up are inside for everyone. Server CPU is the server process tree's CPU
//! (`Probe::snapshot`) over the same interval plus a settle pause, divided by the same queries.
//! QPS is each tool's own figure (sysbench `queries:` per second, pgbench `tps` without the
//! initial connection time (one statement per transaction), dbdelta's measured window).
//! It measures; it never fails on a goal. Run it through `bench/client-cost`.

use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;

use dbdelta::engine::common::connect::Address;
use dbdelta::engine::common::process;
use dbdelta::engine::common::secret::PrivateFile;
use dbdelta::engine::common::wire::Wait;
use dbdelta::engine::postgres::pgwire::PgConn;
use dbdelta::engine::{self, EngineKind, Param, Server, TargetSpec};
use dbdelta::progress::{Mode, Progress, thousands};
use dbdelta::results::Metric;
use dbdelta::runner::{step, timed_load};
use dbdelta::sampler::{Probe, Snapshot};
use dbdelta::suites::sysbench::steps as sysbench;
use dbdelta::sys::{rusage, timeval_us};
use dbdelta::workload::Scale;

#[derive(Parser, Debug)]
#[command(about = "dbdelta's client cost next to sysbench and pgbench (issue #4)")]
struct Args {
    /// Engines to measure, in order: postgres, mysql.
    #[arg(long, value_delimiter = ',', default_value = "postgres,mysql")]
    engines: Vec<String>,
    /// Client counts.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    clients: Vec<u32>,
    /// Interleaved rounds (A B C per round) per client count.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Fixed time of every query run, seconds (sysbench --time, pgbench -T, dbdelta's measured
    /// period; dbdelta warms up 1 s more, and that is inside its CPU figure).
    #[arg(long, default_value_t = 10)]
    secs: u64,
    /// Rows of the one table.
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// Interleaved load rounds (sysbench prepare, dbdelta load).
    #[arg(long, default_value_t = 3)]
    load_rounds: u32,
    /// Seconds of each client's run under `strace -c -f` (0: no syscall counts).
    #[arg(long, default_value_t = 5)]
    strace_secs: u64,
    /// Run the clients on these CPUs (`taskset -c` for sysbench/pgbench, sched_setaffinity of
    /// dbdelta's client threads), e.g. `0` or `0-1`. Default: unpinned.
    #[arg(long)]
    cpu_list: Option<String>,
    /// Pin every process and thread of the server to these CPUs (`taskset -a -p`). Default:
    /// unpinned.
    #[arg(long)]
    server_cpu_list: Option<String>,
    /// Where the temporary work directory goes.
    #[arg(long, default_value = "/tmp")]
    workdir: PathBuf,
}

/// How a client reaches the server: where, the server's password, and a 0600 sysbench
/// `--config-file` holding it (a password on a command line is visible to every user).
#[derive(Debug, Clone)]
enum Endpoint {
    Pg {
        dir: PathBuf,
        port: u16,
        password: String,
        conf: PathBuf,
    },
    My {
        socket: PathBuf,
        conf: PathBuf,
    },
}

impl Endpoint {
    fn sysbench_args(&self) -> Vec<String> {
        match self {
            Endpoint::Pg {
                dir, port, conf, ..
            } => vec![
                "--db-driver=pgsql".into(),
                format!("--pgsql-host={}", dir.display()),
                format!("--pgsql-port={port}"),
                "--pgsql-user=postgres".into(),
                "--pgsql-db=postgres".into(),
                format!("--config-file={}", conf.display()),
            ],
            Endpoint::My { socket, conf } => vec![
                "--db-driver=mysql".into(),
                format!("--mysql-socket={}", socket.display()),
                "--mysql-user=root".into(),
                "--mysql-db=dbdelta".into(),
                format!("--config-file={}", conf.display()),
            ],
        }
    }
}

/// The three clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    Sysbench,
    Pgbench,
    Dbdelta,
    /// dbdelta's wire client in a bare loop waiting in `poll`: no runner, no workload, no
    /// recording. What is left is the cost of the protocol and the socket.
    Floor,
    /// The same bare loop blocking in `read` for the reply instead of `poll` + `read`.
    FloorRecv,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::Sysbench => "sysbench",
            Client::Pgbench => "pgbench",
            Client::Dbdelta => "dbdelta",
            Client::Floor => "wirepoll",
            Client::FloorRecv => "wireread",
        }
    }
}

/// One measured run of one client.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    qps: f64,
    /// Every query the client ran (what the CPU figures are divided by).
    queries: u64,
    client_us: f64,
    /// The system-time part of `client_us`.
    client_sys_us: f64,
    /// The client's context switches (voluntary + involuntary) per query.
    client_cs: f64,
    /// Of those, involuntary (preemptions).
    client_ics: f64,
    server_us: f64,
    /// CPU of everything else on the host over the run, in cores (others' work; host counters
    /// under-count, so this is a lower bound).
    other_cores: f64,
    /// dbdelta only: its own accounting over the measured window.
    window_client_us: f64,
    window_server_us: f64,
}

impl Sample {
    /// A client that ran in this process: `usage` is our rusage delta over the run, `snaps` the
    /// server snapshots around it, `secs` its wall time (the settle pause is added here).
    fn in_process(
        qps: f64,
        queries: u64,
        usage: Usage,
        snaps: (&Snapshot, &Snapshot),
        secs: f64,
    ) -> Sample {
        let (a, b) = snaps;
        let server = server_delta(a, b);
        let host = b.host_busy_us - a.host_busy_us;
        let me = usage.cpu_us();
        let n = queries as f64;
        Sample {
            qps,
            queries,
            client_us: me / n,
            client_sys_us: usage.sys_us / n,
            client_cs: usage.cs / n,
            client_ics: usage.ics / n,
            server_us: server / n,
            other_cores: ((host - server - me) / ((secs + SETTLE.as_secs_f64()) * 1e6)).max(0.0),
            window_client_us: f64::NAN,
            window_server_us: f64::NAN,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Output parsers

/// sysbench's `queries:` line: (queries, queries per second).
fn parse_sysbench(out: &str) -> Option<(u64, f64)> {
    let line = out
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("queries:"))?;
    let rest = line.strip_prefix("queries:")?.trim();
    let count = rest.split_whitespace().next()?.parse().ok()?;
    let rate = rest
        .split_once('(')?
        .1
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some((count, rate))
}

/// pgbench: (transactions processed, tps without the initial connection time).
fn parse_pgbench(out: &str) -> Option<(u64, f64)> {
    let mut count = None;
    let mut tps = None;
    for line in out.lines().map(str::trim) {
        if let Some(v) = line.strip_prefix("number of transactions actually processed:") {
            count = v.trim().split('/').next()?.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("tps = ")
            && line.contains("without initial connection time")
        {
            tps = v.split_whitespace().next()?.parse().ok();
        }
    }
    Some((count?, tps?))
}

/// `strace -c` summary: (total calls, [(syscall, calls)] by calls, descending).
fn parse_strace(summary: &str) -> Option<(u64, Vec<(String, u64)>)> {
    let mut total = None;
    let mut rows = Vec::new();
    for line in summary.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // % time, seconds, usecs/call, calls, [errors], syscall
        if f.len() < 5 || f[0].starts_with('%') || f[0].starts_with('-') {
            continue;
        }
        let Ok(calls) = f[3].parse::<u64>() else {
            continue;
        };
        let name = f[f.len() - 1].to_string();
        if name == "total" {
            total = Some(calls);
        } else {
            rows.push((name, calls));
        }
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    Some((total?, rows))
}

/// `0`, `0,1`, `0-1` → CPU numbers (dbdelta's own CPU-list parser).
fn parse_cpu_list(list: &str) -> Result<Vec<usize>> {
    let set = dbdelta::cpus::CpuSet::parse(list).map_err(|e| anyhow::anyhow!("--cpu-list {e}"))?;
    Ok(set.iter().collect())
}

// ---------------------------------------------------------------------------------------------
// Statistics

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn spread(v: &[f64], digits: usize) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if digits == 0 {
        format!("{}–{}", thousands(min), thousands(max))
    } else {
        format!("{min:.digits$}–{max:.digits$}")
    }
}

// ---------------------------------------------------------------------------------------------
// Processes

/// What an external client left behind.
struct ChildRun {
    secs: f64,
    usage: Usage,
    stdout: String,
}

/// What `rusage` says about a client: CPU split and context switches.
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    user_us: f64,
    sys_us: f64,
    cs: f64,
    /// Involuntary context switches (preemptions), part of `cs`.
    ics: f64,
}

impl Usage {
    fn of(ru: &libc::rusage) -> Usage {
        Usage {
            user_us: timeval_us(ru.ru_utime),
            sys_us: timeval_us(ru.ru_stime),
            cs: (ru.ru_nvcsw + ru.ru_nivcsw) as f64,
            ics: ru.ru_nivcsw as f64,
        }
    }

    fn since(self, a: Usage) -> Usage {
        Usage {
            user_us: self.user_us - a.user_us,
            sys_us: self.sys_us - a.sys_us,
            cs: self.cs - a.cs,
            ics: self.ics - a.ics,
        }
    }

    fn cpu_us(self) -> f64 {
        self.user_us + self.sys_us
    }
}

fn self_usage() -> Usage {
    Usage::of(&rusage(libc::RUSAGE_SELF))
}

fn self_cpu_us() -> f64 {
    self_usage().cpu_us()
}

/// Run `cmd` to its end; its CPU comes from `wait4`'s rusage of that very process.
fn run_child(mut cmd: Command, work: &Path, tag: &str) -> Result<ChildRun> {
    let out_path = work.join(format!("{tag}.out"));
    let err_path = work.join(format!("{tag}.err"));
    cmd.stdin(Stdio::null())
        .stdout(File::create(&out_path)?)
        .stderr(File::create(&err_path)?);
    let started = Instant::now();
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {tag}: {cmd:?}"))?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: `rusage` is plain integers, for which all-zero bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `ru` are live locals that wait4 only writes. `pid` is our own
        // child, reaped only here: `child` is dropped afterwards without a wait, so no one
        // waits for a PID the kernel may have given to another process.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err).with_context(|| format!("waiting for {tag}"));
        }
    }
    drop(child); // already reaped; dropping a Child neither waits nor kills
    let secs = started.elapsed().as_secs_f64();
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        bail!(
            "{tag} failed (wait status {status}): {}{}",
            stderr.trim(),
            stdout.lines().rev().take(5).collect::<Vec<_>>().join(" / ")
        );
    }
    Ok(ChildRun {
        secs,
        usage: Usage::of(&ru),
        stdout,
    })
}

/// Every PID of the process tree under `root` (root first).
fn tree_pids(root: u32) -> Vec<u32> {
    let all: Vec<(u32, u32)> = procfs::process::all_processes()
        .map(|it| {
            it.flatten()
                .filter_map(|p| p.stat().ok().map(|s| (s.pid as u32, s.ppid as u32)))
                .collect()
        })
        .unwrap_or_default();
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(all.iter().filter(|(_, pp)| *pp == parent).map(|(p, _)| *p));
        i += 1;
    }
    out
}

/// Pins the calling thread (and threads it spawns later) to `cpus`; restores on drop.
struct Affinity {
    old: Option<libc::cpu_set_t>,
}

impl Affinity {
    fn pin(cpus: Option<&[usize]>) -> Result<Affinity> {
        let Some(cpus) = cpus else {
            return Ok(Affinity { old: None });
        };
        // SAFETY: cpu_set_t is plain data; the calls read/write the sets we hand them.
        unsafe {
            let mut old: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of_val(&old), &mut old) != 0 {
                bail!("sched_getaffinity: {}", std::io::Error::last_os_error());
            }
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in cpus {
                libc::CPU_SET(c, &mut set);
            }
            if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
                bail!("sched_setaffinity: {}", std::io::Error::last_os_error());
            }
            Ok(Affinity { old: Some(old) })
        }
    }
}

impl Drop for Affinity {
    fn drop(&mut self) {
        if let Some(old) = &self.old {
            // SAFETY: as above.
            unsafe {
                libc::sched_setaffinity(0, std::mem::size_of_val(old), old);
            }
        }
    }
}

/// Removes the work directory (and anything left in it) when dropped.
struct WorkDir(PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn first_line(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| format!("{cmd}: not found"))
}

/// Debian's newest `pgbench` (called directly, not through the perl `pg_wrapper`).
fn find_pgbench() -> Option<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let major = e.file_name().to_str()?.parse().ok()?;
            let p = e.path().join("bin/pgbench");
            p.exists().then_some((major, p))
        })
        .collect();
    dirs.sort();
    dirs.pop().map(|(_, p)| p)
}

// ---------------------------------------------------------------------------------------------
// The harness

struct Bench<'a> {
    args: &'a Args,
    client_cpus: Option<Vec<usize>>,
    interrupt: Arc<AtomicBool>,
    pgbench: Option<PathBuf>,
    out: String,
    goals: Vec<String>,
}

/// One started engine and what the clients need to reach it.
struct Target<'a> {
    kind: EngineKind,
    server: &'a dyn Server,
    probe: Probe,
    endpoint: Endpoint,
    work: &'a Path,
    script: PathBuf,
    _password_file: PrivateFile,
}

fn server_delta(a: &Snapshot, b: &Snapshot) -> f64 {
    (b.proc_cpu_us - a.proc_cpu_us).max(0.0)
}

/// After a client ends: let the server reap its backends and settle before the closing snapshot.
const SETTLE: Duration = Duration::from_millis(300);

impl Bench<'_> {
    fn say(&mut self, line: &str) {
        println!("{line}");
        self.out.push_str(line);
        self.out.push('\n');
    }

    fn check_interrupt(&self) -> Result<()> {
        if self.interrupt.load(Ordering::Relaxed) {
            bail!("interrupted");
        }
        Ok(())
    }

    fn scale(&self) -> Scale {
        Scale {
            tables: 1,
            rows: self.args.rows,
        }
    }

    /// The sysbench suite at this bench's scale (only its load is used).
    fn suite(&self) -> sysbench::Sysbench {
        sysbench::Sysbench {
            settings: sysbench::Settings {
                scale: self.scale(),
                warmup: Duration::ZERO,
                read: Duration::ZERO,
                write: Duration::ZERO,
                adaptive: None,
                pre: false,
                quick: false,
            },
        }
    }

    /// `taskset -c LIST` in front of an external client when clients are pinned.
    fn command(&self, program: &Path) -> Command {
        match &self.args.cpu_list {
            Some(list) => {
                let mut c = Command::new("taskset");
                c.arg("-c").arg(list).arg(program);
                c
            }
            None => Command::new(program),
        }
    }

    fn sysbench_cmd(&self, t: &Target, clients: u32, secs: u64) -> Command {
        let mut c = self.command(Path::new("sysbench"));
        c.arg("oltp_point_select")
            .args(t.endpoint.sysbench_args())
            .arg("--tables=1")
            .arg(format!("--table-size={}", self.args.rows))
            .arg("--rand-type=uniform")
            .arg("--skip-trx=on")
            .arg("--db-ps-mode=auto")
            .arg(format!("--threads={clients}"))
            .arg(format!("--time={secs}"))
            .arg("--report-interval=0")
            .arg("run");
        c
    }

    fn pgbench_cmd(&self, t: &Target, clients: u32, secs: u64) -> Result<Command> {
        let (
            Some(pgbench),
            Endpoint::Pg {
                dir,
                port,
                password,
                ..
            },
        ) = (&self.pgbench, &t.endpoint)
        else {
            bail!("pgbench needs PostgreSQL and Debian's pgbench");
        };
        let mut c = self.command(pgbench);
        c.env("PGPASSWORD", password)
            .arg("-h")
            .arg(dir)
            .arg("-p")
            .arg(port.to_string())
            .args(["-U", "postgres", "-n", "-M", "prepared"])
            .arg(format!("-c{clients}"))
            .arg(format!("-j{clients}"))
            .arg(format!("-T{secs}"))
            .arg("-f")
            .arg(&t.script)
            .arg("postgres");
        Ok(c)
    }

    fn external(&self, t: &Target, client: Client, clients: u32) -> Result<Sample> {
        let secs = self.args.secs;
        let cmd = match client {
            Client::Sysbench => self.sysbench_cmd(t, clients, secs),
            Client::Pgbench => self.pgbench_cmd(t, clients, secs)?,
            Client::Dbdelta | Client::Floor | Client::FloorRecv => {
                unreachable!("dbdelta runs in-process")
            }
        };
        let a = t.probe.snapshot();
        let me_a = self_cpu_us();
        let run = run_child(cmd, t.work, client.name())?;
        std::thread::sleep(SETTLE);
        let b = t.probe.snapshot();
        let me = self_cpu_us() - me_a;
        let parsed = match client {
            Client::Sysbench => parse_sysbench(&run.stdout),
            _ => parse_pgbench(&run.stdout),
        };
        let Some((queries, qps)) = parsed.filter(|(q, _)| *q > 0) else {
            bail!(
                "{}: cannot read the query count from its output:\n{}",
                client.name(),
                run.stdout
            );
        };
        let server = server_delta(&a, &b);
        let wall_us = (run.secs + SETTLE.as_secs_f64()) * 1e6;
        let host = b.host_busy_us - a.host_busy_us;
        Ok(Sample {
            qps,
            queries,
            client_us: run.usage.cpu_us() / queries as f64,
            client_sys_us: run.usage.sys_us / queries as f64,
            client_cs: run.usage.cs / queries as f64,
            client_ics: run.usage.ics / queries as f64,
            server_us: server / queries as f64,
            other_cores: ((host - server - run.usage.cpu_us() - me) / wall_us).max(0.0),
            ..Default::default()
        })
    }

    fn dbdelta_step(
        &self,
        t: &Target,
        clients: u32,
        warmup: Duration,
        measure: Duration,
    ) -> Result<step::StepRun> {
        let point_query = sysbench::step_plan(
            sysbench::find("point-query").context("point-query is in the catalog")?,
            self.scale(),
            warmup,
            measure,
        );
        let spec = step::StepSpec {
            step: &point_query,
            clients,
            seed: 0xc11e_c057 ^ u64::from(clients),
            // Pinned by inheritance from this thread (`Affinity::pin` below).
            client_cpus: None,
            ddl: &Default::default(),
            profile: None,
            counting: false,
        };
        let quiet = Progress {
            mode: Mode::Quiet,
            verbose: false,
            interval: None,
        };
        let bar = quiet.step("point-query", warmup + measure);
        let _pin = Affinity::pin(self.client_cpus.as_deref())?;
        let run = step::run(&spec, &t.server.driver(), &t.probe, &bar, &self.interrupt)?;
        if let Some(e) = &run.fatal {
            bail!("dbdelta point-query: {e}");
        }
        Ok(run)
    }

    fn dbdelta(&self, t: &Target, clients: u32) -> Result<Sample> {
        let a = t.probe.snapshot();
        let me_a = self_usage();
        let started = Instant::now();
        let run = self.dbdelta_step(
            t,
            clients,
            Duration::from_secs(1),
            Duration::from_secs(self.args.secs),
        )?;
        let secs = started.elapsed().as_secs_f64();
        std::thread::sleep(SETTLE);
        let b = t.probe.snapshot();
        let usage = self_usage().since(me_a);
        self.check_interrupt()?;
        let events = run.merged.events;
        // The process CPU covers connect, prepare and the warm-up too, so divide by every query
        // run (one statement per event), as for the external clients.
        let all = run.events_all;
        // Every measured point select returns its one row.
        let rows = run.rows_touched.first().copied().unwrap_or(0);
        if events == 0 || all < events || rows != events {
            bail!(
                "dbdelta point-query: {events} measured queries returned {rows} rows ({all} queries in all)"
            );
        }
        let window = run.costs.per_op(events);
        Ok(Sample {
            window_client_us: window.get(Metric::ClientCpu).unwrap_or(f64::NAN),
            window_server_us: window.get(Metric::ServerCpu).unwrap_or(f64::NAN),
            ..Sample::in_process(events as f64 / run.seconds, all, usage, (&a, &b), secs)
        })
    }

    /// The floor: N threads of dbdelta's wire client, each preparing the point select and
    /// executing it in a bare loop (ids from an xorshift, a clock read every 256 queries, no
    /// histogram, no runner). Accounted like dbdelta: `getrusage(RUSAGE_SELF)` around it all.
    fn floor(&self, t: &Target, clients: u32, wait: Wait) -> Result<Sample> {
        let Endpoint::Pg {
            dir,
            port,
            password,
            ..
        } = &t.endpoint
        else {
            bail!("the wire floor is measured on PostgreSQL only");
        };
        let rows = self.args.rows.max(1);
        let a = t.probe.snapshot();
        let me_a = self_usage();
        let started = Instant::now();
        let deadline = started + Duration::from_secs(self.args.secs);
        let _pin = Affinity::pin(self.client_cpus.as_deref())?;
        let counts: Vec<Result<u64, engine::DbError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..clients)
                .map(|i| {
                    s.spawn(move || {
                        let mut c =
                            PgConn::connect(dir, *port, "postgres", "postgres", Some(password))?;
                        c.set_wait(wait);
                        c.prepare("floor", "SELECT c FROM sbtest1 WHERE id = $1")?;
                        let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (u64::from(i) + 1);
                        let mut n = 0u64;
                        while !n.is_multiple_of(256) || Instant::now() < deadline {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            let id = (x % rows) as i64 + 1;
                            if c.execute("floor", &[Param::Int(id)])? != 1 {
                                return Err(engine::DbError::fatal(
                                    "the point select lost its row",
                                ));
                            }
                            n += 1;
                        }
                        Ok(n)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("floor thread"))
                .collect()
        });
        drop(_pin);
        let secs = started.elapsed().as_secs_f64();
        std::thread::sleep(SETTLE);
        let b = t.probe.snapshot();
        let usage = self_usage().since(me_a);
        self.check_interrupt()?;
        let mut all = 0;
        for c in counts {
            all += c.context("wire floor")?;
        }
        Ok(Sample::in_process(
            all as f64 / secs,
            all,
            usage,
            (&a, &b),
            secs,
        ))
    }

    /// Rows/s of `sysbench prepare` and of dbdelta's load, interleaved; leaves dbdelta's table.
    fn load(&mut self, t: &Target) -> Result<()> {
        let rows = self.args.rows;
        let rounds = self.args.load_rounds.max(1);
        let driver = t.server.driver();
        let mut session = driver.connect().context("connecting for the load")?;
        let mut sb = Vec::new();
        let mut db = Vec::new();
        let mut sb_cpu = Vec::new();
        let mut db_cpu = Vec::new();
        let mut db_split = Vec::new();
        self.say(&format!(
            "load: 1 table × {} rows, {rounds} rounds interleaved (A = sysbench prepare, B = dbdelta load)",
            thousands(rows as f64)
        ));
        self.say("  rows/s = rows / (table load + secondary index build) wall seconds, for both (sysbench prepare builds k_1 too)");
        for round in 1..=rounds {
            self.check_interrupt()?;
            let mut c = self.command(Path::new("sysbench"));
            c.arg("oltp_point_select")
                .args(t.endpoint.sysbench_args())
                .arg("--tables=1")
                .arg(format!("--table-size={rows}"))
                .arg("prepare");
            let a = t.probe.snapshot();
            let run = run_child(c, t.work, "sysbench-prepare")?;
            let b = t.probe.snapshot();
            let rps = rows as f64 / run.secs;
            self.say(&format!(
                "  round {round} sysbench prepare: {:.2} s, {} rows/s, client CPU {:.2} s, server CPU {:.2} s",
                run.secs,
                thousands(rps),
                run.usage.cpu_us() / 1e6,
                server_delta(&a, &b) / 1e6
            ));
            sb.push(rps);
            sb_cpu.push(run.usage.cpu_us() / 1e6);
            session
                .execute_sql("DROP TABLE sbtest1")
                .context("dropping sysbench's table")?;

            let a = t.probe.snapshot();
            let me_a = self_cpu_us();
            let started = Instant::now();
            let (load_secs, index_secs) = {
                let _pin = Affinity::pin(self.client_cpus.as_deref())?;
                timed_load(
                    &self.suite(),
                    session.as_mut(),
                    driver.dialect(),
                    &Default::default(),
                    1,
                )?
            };
            let secs = started.elapsed().as_secs_f64();
            let me = self_cpu_us() - me_a;
            let b = t.probe.snapshot();
            let rps = rows as f64 / secs;
            self.say(&format!(
                "  round {round} dbdelta load:     {secs:.2} s (load {load_secs:.2} s + index {index_secs:.2} s), {} rows/s, client CPU {:.2} s, server CPU {:.2} s",
                thousands(rps),
                me / 1e6,
                server_delta(&a, &b) / 1e6
            ));
            db.push(rps);
            db_cpu.push(me / 1e6);
            db_split.push(rows as f64 / load_secs);
            if round < rounds {
                session
                    .execute_sql("DROP TABLE sbtest1")
                    .context("dropping dbdelta's table")?;
            }
        }
        let ratio = median(&db) / median(&sb);
        self.say(&format!(
            "  {:<18} {:>14} {:>22} {:>16} {:>10}",
            "load", "median rows/s", "min–max", "client CPU s", "× sysbench"
        ));
        self.say(&format!(
            "  {:<18} {:>14} {:>22} {:>16.2} {:>10.2}",
            "sysbench prepare",
            thousands(median(&sb)),
            spread(&sb, 0),
            median(&sb_cpu),
            1.0
        ));
        self.say(&format!(
            "  {:<18} {:>14} {:>22} {:>16.2} {:>10.2}",
            "dbdelta load",
            thousands(median(&db)),
            spread(&db, 0),
            median(&db_cpu),
            ratio
        ));
        self.say(&format!(
            "  (dbdelta without the index build: median {} rows/s)",
            thousands(median(&db_split))
        ));
        let goal = format!(
            "GOAL {} load rows/s ≥ 2× sysbench prepare: {} ({ratio:.2}×)",
            t.kind.name(),
            met(ratio >= 2.0)
        );
        self.say(&goal);
        self.goals.push(goal);
        Ok(())
    }

    /// Warm the caches so every client sees the table in memory.
    fn prewarm(&mut self, t: &Target) -> Result<()> {
        let mut s = t.server.driver().connect()?;
        let what = match t.kind.name() {
            "postgres" => {
                s.execute_sql("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
                    .context("pg_prewarm")?;
                s.query_strings("SELECT pg_prewarm('sbtest1')")?;
                s.query_strings("SELECT pg_prewarm('sbtest1_pkey')")?;
                "pg_prewarm of sbtest1 and its primary key"
            }
            _ => {
                s.query_strings("SELECT COUNT(*) FROM sbtest1 FORCE INDEX (PRIMARY)")?;
                "a full scan of sbtest1's primary key"
            }
        };
        self.say(&format!("prewarm: {what}"));
        Ok(())
    }

    fn rounds(&mut self, t: &Target) -> Result<()> {
        let mut order = vec![Client::Sysbench];
        if t.kind.name() == "postgres" {
            order.push(Client::Pgbench);
        }
        order.push(Client::Dbdelta);
        if t.kind.name() == "postgres" {
            order.push(Client::Floor);
            order.push(Client::FloorRecv);
        }
        let names: Vec<&str> = order.iter().map(|c| c.name()).collect();
        for &clients in &self.args.clients.clone() {
            self.say("");
            self.say(&format!(
                "point select, {clients} client(s), {} s per run, {} rounds, order per round: {}",
                self.args.secs,
                self.args.rounds,
                names.join(" ")
            ));
            let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); order.len()];
            for round in 1..=self.args.rounds {
                for (i, &client) in order.iter().enumerate() {
                    self.check_interrupt()?;
                    let s = match client {
                        Client::Dbdelta => self.dbdelta(t, clients)?,
                        Client::Floor => self.floor(t, clients, Wait::Poll)?,
                        Client::FloorRecv => self.floor(t, clients, Wait::Read)?,
                        _ => self.external(t, client, clients)?,
                    };
                    let mut line = format!(
                        "  round {round} {:<9} {:>9} qps  client {:>6.2} µs/q (sys {:>5.2}, {:.2} cs/q, {:.2} preempted)  server {:>6.2} µs/q  queries {:>9}  other load {:.2} cores",
                        client.name(),
                        thousands(s.qps),
                        s.client_us,
                        s.client_sys_us,
                        s.client_cs,
                        s.client_ics,
                        s.server_us,
                        s.queries,
                        s.other_cores
                    );
                    if client == Client::Dbdelta {
                        let _ = write!(
                            line,
                            "  (window: client {:.2}, server {:.2} µs/q)",
                            s.window_client_us, s.window_server_us
                        );
                    }
                    self.say(&line);
                    samples[i].push(s);
                }
            }
            self.summary(t, clients, &order, &samples);
        }
        Ok(())
    }

    fn summary(&mut self, t: &Target, clients: u32, order: &[Client], samples: &[Vec<Sample>]) {
        let col = |i: usize, f: fn(&Sample) -> f64| samples[i].iter().map(f).collect::<Vec<f64>>();
        let base_qps = median(&col(0, |s| s.qps));
        let base_cpu = median(&col(0, |s| s.client_us));
        self.say(&format!(
            "  {:<9} {:>10} {:>17} {:>11} {:>13} {:>8} {:>6} {:>11} {:>13} {:>8} {:>11}",
            "median",
            "QPS",
            "min–max",
            "client µs/q",
            "min–max",
            "sys µs/q",
            "cs/q",
            "server µs/q",
            "min–max",
            "QPS ×sb",
            "client ×sb"
        ));
        let mut med = Vec::new();
        for (i, client) in order.iter().enumerate() {
            let qps = col(i, |s| s.qps);
            let cpu = col(i, |s| s.client_us);
            let srv = col(i, |s| s.server_us);
            let (mq, mc) = (median(&qps), median(&cpu));
            med.push((*client, mq, mc));
            self.say(&format!(
                "  {:<9} {:>10} {:>17} {:>11.2} {:>13} {:>8.2} {:>6.2} {:>11.2} {:>13} {:>8.2} {:>11.2}",
                client.name(),
                thousands(mq),
                spread(&qps, 0),
                mc,
                spread(&cpu, 2),
                median(&col(i, |s| s.client_sys_us)),
                median(&col(i, |s| s.client_cs)),
                median(&srv),
                spread(&srv, 2),
                mq / base_qps,
                mc / base_cpu
            ));
        }
        if let Some(i) = order.iter().position(|c| *c == Client::Dbdelta) {
            self.say(&format!(
                "  dbdelta, measured window only (its own accounting, excludes connect, prepare, warm-up): client {:.2} µs/q, server {:.2} µs/q",
                median(&col(i, |s| s.window_client_us)),
                median(&col(i, |s| s.window_server_us))
            ));
        }
        let get = |c: Client| med.iter().find(|m| m.0 == c).map(|m| (m.1, m.2));
        for floor in [Client::Floor, Client::FloorRecv] {
            if let (Some((_, dc)), Some((_, fc))) = (get(Client::Dbdelta), get(floor)) {
                self.say(&format!(
                    "  dbdelta's client CPU is {:.2}× {}'s (the runner, workload, recording and wait choice: {:+.2} µs/q)",
                    dc / fc,
                    floor.name(),
                    dc - fc
                ));
            }
        }
        let engine = t.kind.name();
        let mut goals = Vec::new();
        if let (Some((dq, dc)), Some((sq, sc))) = (get(Client::Dbdelta), get(Client::Sysbench)) {
            goals.push(format!(
                "GOAL {engine} c={clients} dbdelta client CPU ≤ 0.7× sysbench: {} ({:.2}×)",
                met(dc <= 0.7 * sc),
                dc / sc
            ));
            if let Some((_, pc)) = get(Client::Pgbench) {
                goals.push(format!(
                    "GOAL {engine} c={clients} dbdelta client CPU ≤ pgbench: {} ({:.2}×)",
                    met(dc <= pc),
                    dc / pc
                ));
            }
            goals.push(format!(
                "GOAL {engine} c={clients} dbdelta QPS ≥ 1.05× sysbench: {} ({:.2}×)",
                met(dq >= 1.05 * sq),
                dq / sq
            ));
        }
        for g in goals {
            self.say(&g);
            self.goals.push(g);
        }
    }

    /// Syscalls per query of each client, each under `strace -c -f` for a short fixed time.
    fn strace(&mut self, t: &Target) -> Result<()> {
        let secs = self.args.strace_secs;
        self.say("");
        self.say(&format!(
            "syscalls per query: each client alone under `strace -c -f` for {secs} s (whole client: start, connect, prepare included; strace slows every client, so only the counts mean something)"
        ));
        let mut order = vec![Client::Sysbench];
        if t.kind.name() == "postgres" {
            order.push(Client::Pgbench);
        }
        order.push(Client::Dbdelta);
        for &clients in &self.args.clients.clone() {
            for &client in &order {
                self.check_interrupt()?;
                let file = t.work.join(format!("strace-{}.txt", client.name()));
                let queries = match client {
                    Client::Dbdelta => self.strace_self(t, clients, &file)?,
                    _ => {
                        let inner = match client {
                            Client::Sysbench => self.sysbench_cmd(t, clients, secs),
                            _ => self.pgbench_cmd(t, clients, secs)?,
                        };
                        let mut c = Command::new("strace");
                        c.args(["-c", "-f", "-o"])
                            .arg(&file)
                            .arg(inner.get_program())
                            .args(inner.get_args());
                        let run = run_child(c, t.work, "strace")?;
                        let parsed = match client {
                            Client::Sysbench => parse_sysbench(&run.stdout),
                            _ => parse_pgbench(&run.stdout),
                        };
                        parsed
                            .with_context(|| {
                                format!("{} under strace: no query count", client.name())
                            })?
                            .0
                    }
                };
                let text = std::fs::read_to_string(&file)
                    .with_context(|| format!("reading {}", file.display()))?;
                let _ = std::fs::remove_file(&file);
                let (total, rows) = parse_strace(&text).context("no total in strace's summary")?;
                let q = queries.max(1) as f64;
                let top: Vec<String> = rows
                    .iter()
                    .take(4)
                    .map(|(name, n)| format!("{name} {:.2}", *n as f64 / q))
                    .collect();
                self.say(&format!(
                    "  c={clients} {:<9} {:>6.2} syscalls/query  ({} syscalls, {} queries; top: {})",
                    client.name(),
                    total as f64 / q,
                    total,
                    queries,
                    top.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// dbdelta's point-query in this process with strace attached to it (every thread).
    fn strace_self(&self, t: &Target, clients: u32, file: &Path) -> Result<u64> {
        let mut c = Command::new("strace");
        c.args(["-c", "-f", "-o"])
            .arg(file)
            .arg("-p")
            .arg(std::process::id().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut strace = c.spawn().context("starting strace")?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
            let traced = status
                .lines()
                .find_map(|l| l.strip_prefix("TracerPid:"))
                .is_some_and(|v| v.trim() != "0");
            if traced {
                break;
            }
            if Instant::now() > deadline {
                let _ = strace.kill();
                let _ = strace.wait();
                bail!("strace did not attach within 10 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(200));
        // No warm-up: every query is in `events`, and strace counts them all.
        let run = self.dbdelta_step(
            t,
            clients,
            Duration::ZERO,
            Duration::from_secs(self.args.strace_secs),
        );
        // SAFETY: signalling the strace we started, by its PID; it detaches and writes its summary.
        unsafe {
            libc::kill(strace.id() as libc::pid_t, libc::SIGINT);
        }
        strace.wait().context("waiting for strace")?;
        Ok(run?.merged.events)
    }

    fn engine(&mut self, kind: EngineKind, root: &Path) -> Result<()> {
        let data_dir = root.join(kind.name());
        std::fs::create_dir(&data_dir)?;
        let log = root.join(format!("{}.log", kind.name()));
        let port = process::free_port()?;
        let settings = match kind.name() {
            "postgres" => vec!["shared_buffers = '1GB'".to_string()],
            _ => vec!["innodb_buffer_pool_size = 1G".to_string()],
        };
        let target = TargetSpec {
            name: kind.name().to_string(),
            engine: kind,
            settings: settings.clone(),
            port: Some(port),
            prepared: true,
            ..Default::default()
        };
        let server = engine::start(&target, &data_dir, &log)
            .with_context(|| format!("starting {}", kind.name()))?;
        let result = self.with_server(kind, server.as_ref(), &data_dir, port, &settings, root);
        if result.is_err() {
            eprintln!(
                "server log tail ({}):\n{}",
                log.display(),
                dbdelta::sys::log_tail(&log, 20)
            );
        }
        let stopped = server.stop();
        result.and(stopped)
    }

    fn with_server(
        &mut self,
        kind: EngineKind,
        server: &dyn Server,
        data_dir: &Path,
        port: u16,
        settings: &[String],
        work: &Path,
    ) -> Result<()> {
        let url = server
            .client_url()
            .context("the server has no client URL")?;
        let (Address::Unix(at), Some(password)) = (&url.address, &url.password) else {
            bail!("the server gave no socket and password: {}", url.shown());
        };
        let driver = match kind.name() {
            "postgres" => "pgsql",
            _ => "mysql",
        };
        let password_file = PrivateFile::create(
            &work.join("sysbench-password.conf"),
            &format!("{driver}-password={password}\n"),
            None,
        )?;
        let conf = password_file.path().to_path_buf();
        let endpoint = match kind.name() {
            "postgres" => Endpoint::Pg {
                dir: at.clone(),
                port,
                password: password.clone(),
                conf,
            },
            _ => Endpoint::My {
                socket: at.clone(),
                conf,
            },
        };
        let engine::Observed::Tree(root_pid) = server.observed() else {
            bail!("{} is not a server", kind.name());
        };
        if let Some(list) = &self.args.server_cpu_list {
            for pid in tree_pids(root_pid) {
                let ok = Command::new("taskset")
                    .args(["-a", "-p", "-c", list, &pid.to_string()])
                    .stdout(Stdio::null())
                    .status()?
                    .success();
                if !ok {
                    bail!("taskset -a -p -c {list} {pid} failed");
                }
            }
        }
        let script = work.join("point_select.sql");
        std::fs::write(
            &script,
            format!(
                "\\set id random(1, {})\nSELECT c FROM sbtest1 WHERE id = :id;\n",
                self.args.rows
            ),
        )?;
        let t = Target {
            kind,
            server,
            probe: Probe::new(server.observed(), data_dir),
            endpoint,
            work,
            script,
            _password_file: password_file,
        };
        self.say("");
        self.say(&format!("=== {} ===", server.version()));
        self.say(&format!(
            "server: started by dbdelta's engine code, pid {root_pid}, settings: {}",
            settings.join("; ")
        ));
        self.load(&t)?;
        server.postwrite(&["sbtest1".to_string()], Duration::from_secs(5))?;
        self.say("postwrite after the load: dbdelta's own (statistics, flush), 5 s budget");
        self.prewarm(&t)?;
        self.rounds(&t)?;
        if self.args.strace_secs > 0 {
            self.strace(&t)?;
        }
        Ok(())
    }
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}

fn git_commit() -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    let head = first_line("git", &["-C", dir, "rev-parse", "HEAD"]);
    let dirty = Command::new("git")
        .args(["-C", dir, "status", "--porcelain", "--untracked-files=no"])
        .output()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    if dirty {
        format!("{head} (with uncommitted changes)")
    } else {
        head
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let mut kinds = Vec::new();
    for e in &args.engines {
        match EngineKind::parse(e) {
            Some(k) if !k.embedded() => kinds.push(k),
            _ => bail!("--engines {e}: expected postgres or mysql"),
        }
    }
    let client_cpus = args.cpu_list.as_deref().map(parse_cpu_list).transpose()?;
    if let Some(list) = &args.server_cpu_list {
        parse_cpu_list(list)?;
    }
    // A second signal only repeats the first: the benchmark stops at its next check.
    let interrupt = dbdelta::signals::install(|_| {})?;
    let root = args
        .workdir
        .join(format!("dbdelta-client-cost-{}", std::process::id()));
    std::fs::create_dir(&root).with_context(|| format!("creating {}", root.display()))?;
    let _guard = WorkDir(root.clone());
    // The servers run as the unprivileged `dbdelta` user when we are root: it must enter.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755))?;

    let mut bench = Bench {
        args: &args,
        client_cpus,
        interrupt,
        pgbench: find_pgbench(),
        out: String::new(),
        goals: Vec::new(),
    };
    let host = dbdelta::host::describe();
    bench.say("dbdelta client-cost (issue #4)");
    bench.say(&format!(
        "date: {}  commit: {}",
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
        git_commit()
    ));
    bench.say(&format!(
        "host: {}, {} CPUs, {:.1} GiB, {}; load average at start: {}",
        host.cpu_model,
        host.cores,
        host.memory_bytes as f64 / (1u64 << 30) as f64,
        host.kernel,
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    ));
    bench.say(&format!(
        "clients: {}; {}",
        first_line("sysbench", &["--version"]),
        bench
            .pgbench
            .as_ref()
            .map(|p| first_line(&p.to_string_lossy(), &["--version"]))
            .unwrap_or_else(|| "pgbench: not found".into())
    ));
    bench.say(&format!(
        "placement: clients {}, server {}",
        args.cpu_list
            .as_deref()
            .map_or("unpinned".to_string(), |l| format!("on CPUs {l}")),
        args.server_cpu_list
            .as_deref()
            .map_or("unpinned".to_string(), |l| format!("on CPUs {l}"))
    ));
    bench.say("query: SELECT c FROM sbtest1 WHERE id = ? (prepared, id uniform in 1..rows) from all three clients; sysbench --rand-type=uniform --skip-trx=on --db-ps-mode=auto; pgbench -n -M prepared -c C -j C -f script; dbdelta point-query in-process (1 s warm-up)");
    bench.say("client µs/q: the client's whole CPU (wait4 rusage; dbdelta: getrusage around step::run) / every query it ran; server µs/q: the server tree's CPU over the same interval + 0.3 s settle / the same queries; ratios are of medians");
    let mut failed = false;
    for kind in kinds {
        if let Err(e) = bench.engine(kind, &root) {
            bench.say(&format!("{}: FAILED: {e:#}", kind.name()));
            failed = true;
            if bench.interrupt.load(Ordering::Relaxed) {
                break;
            }
        }
    }
    bench.say("");
    bench.say("summary of goals (issue #4):");
    for g in bench.goals.clone() {
        bench.say(&format!("  {g}"));
    }
    if failed {
        std::process::exit(1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYSBENCH: &str = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Running the test with following options:
Number of threads: 2
Initializing random number generator from current time


Initializing worker threads...

Threads started!

SQL statistics:
    queries performed:
        read:                            1163542
        write:                           0
        other:                           0
        total:                           1163542
    transactions:                        1163542 (116339.71 per sec.)
    queries:                             1163542 (116339.71 per sec.)
    ignored errors:                      0      (0.00 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
    total time:                          10.0001s
    total number of events:              1163542
";

    const PGBENCH: &str = "transaction type: /tmp/point_select.sql
scaling factor: 1
query mode: prepared
number of clients: 2
number of threads: 2
maximum number of tries: 1
duration: 10 s
number of transactions actually processed: 1062311
number of failed transactions: 0 (0.000%)
latency average = 0.019 ms
initial connection time = 4.117 ms
tps = 106245.810441 (without initial connection time)
";

    const STRACE: &str = "% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 52.10    1.204000           5    230001           sendto
 46.90    1.084000           4    230010       120 recvfrom
  0.50    0.011000          11      1000           poll
  0.50    0.011000          36       300         3 openat
------ ----------- ----------- --------- --------- ----------------
100.00    2.310000           5    461311       123 total
";

    #[test]
    fn reads_sysbench_queries_and_rate() {
        assert_eq!(parse_sysbench(SYSBENCH), Some((1_163_542, 116_339.71)));
        assert_eq!(parse_sysbench("FATAL: no such table"), None);
    }

    #[test]
    fn reads_pgbench_count_and_tps_without_connection_time() {
        assert_eq!(parse_pgbench(PGBENCH), Some((1_062_311, 106_245.810441)));
        let with_max = PGBENCH.replace("processed: 1062311", "processed: 1000/1000");
        assert_eq!(parse_pgbench(&with_max).map(|p| p.0), Some(1000));
        assert_eq!(parse_pgbench("pgbench: error: connection failed"), None);
    }

    #[test]
    fn reads_strace_totals_and_orders_by_calls() {
        let (total, rows) = parse_strace(STRACE).unwrap();
        assert_eq!(total, 461_311);
        assert_eq!(rows[0], ("recvfrom".to_string(), 230_010));
        assert_eq!(rows[1], ("sendto".to_string(), 230_001));
        assert_eq!(rows.len(), 4);
        assert_eq!(
            parse_strace("strace: attach: ptrace: Operation not permitted"),
            None
        );
    }

    #[test]
    fn cpu_lists_and_medians() {
        assert_eq!(parse_cpu_list("0").unwrap(), vec![0]);
        assert_eq!(parse_cpu_list("0,2-3").unwrap(), vec![0, 2, 3]);
        assert!(parse_cpu_list("1-0").is_err());
        assert!(parse_cpu_list("x").is_err());
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
