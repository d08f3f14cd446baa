//! The processes around a measurement: an external client run to its end with `wait4`'s rusage,
//! this process's own rusage, the server's process tree, CPU pinning of our client threads, the
//! work directory's removal, and finding the client programs. It must not parse a tool's output
//! or decide what a figure means.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use dbdelta::sys::{rusage, timeval_us};

/// What an external client left behind.
pub(crate) struct ChildRun {
    pub(crate) secs: f64,
    pub(crate) usage: Usage,
    pub(crate) stdout: String,
}

/// What `rusage` says about a client: CPU split and context switches.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Usage {
    pub(crate) user_us: f64,
    pub(crate) sys_us: f64,
    pub(crate) cs: f64,
    /// Involuntary context switches (preemptions), part of `cs`.
    pub(crate) ics: f64,
}

impl Usage {
    pub(crate) fn of(ru: &libc::rusage) -> Usage {
        Usage {
            user_us: timeval_us(ru.ru_utime),
            sys_us: timeval_us(ru.ru_stime),
            cs: (ru.ru_nvcsw + ru.ru_nivcsw) as f64,
            ics: ru.ru_nivcsw as f64,
        }
    }

    pub(crate) fn since(self, a: Usage) -> Usage {
        Usage {
            user_us: self.user_us - a.user_us,
            sys_us: self.sys_us - a.sys_us,
            cs: self.cs - a.cs,
            ics: self.ics - a.ics,
        }
    }

    pub(crate) fn cpu_us(self) -> f64 {
        self.user_us + self.sys_us
    }
}

pub(crate) fn self_usage() -> Usage {
    Usage::of(&rusage(libc::RUSAGE_SELF))
}

pub(crate) fn self_cpu_us() -> f64 {
    self_usage().cpu_us()
}

/// Run `cmd` to its end; its CPU comes from `wait4`'s rusage of that very process.
pub(crate) fn run_child(mut cmd: Command, work: &Path, tag: &str) -> Result<ChildRun> {
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
pub(crate) fn tree_pids(root: u32) -> Vec<u32> {
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
pub(crate) struct Affinity {
    old: Option<libc::cpu_set_t>,
}

impl Affinity {
    pub(crate) fn pin(cpus: Option<&[usize]>) -> Result<Affinity> {
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
pub(crate) struct WorkDir(pub(crate) PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(crate) fn first_line(cmd: &str, args: &[&str]) -> String {
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
pub(crate) fn find_pgbench() -> Option<PathBuf> {
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
