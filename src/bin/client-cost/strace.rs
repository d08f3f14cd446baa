//! Syscalls per query: each client alone under `strace -c -f` (dbdelta with strace attached to
//! this process). It reports counts only; it must not time anything.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::bench::Bench;
use crate::parse::{parse_pgbench, parse_strace, parse_sysbench};
use crate::procs::run_child;
use crate::target::{Client, Target};

impl Bench<'_> {
    /// Syscalls per query of each client, each under `strace -c -f` for a short fixed time.
    pub(crate) fn strace(&mut self, t: &Target) -> Result<()> {
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
}
