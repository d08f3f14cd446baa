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
//!
//! This file checks the flags, prints the header and runs each engine in turn; it must not
//! measure. One job per file beside it: `args` (the flags), `bench` (the harness's state),
//! `servers` (one engine's server and the order of the steps), `load` (the load comparison),
//! `clients` (one run of each client), `table` (the rounds and their table), `strace` (syscalls
//! per query), `target` (what the runs share), `procs` (child processes, rusage, pinning),
//! `parse` (the tools' output) and `stats` (medians and spreads).

mod args;
mod bench;
mod clients;
mod load;
mod parse;
mod procs;
mod servers;
mod stats;
mod strace;
mod table;
mod target;

use std::process::Command;
use std::sync::atomic::Ordering;

use anyhow::{Context, Result, bail};
use clap::Parser;

use dbdelta::engine::EngineKind;

use crate::args::Args;
use crate::bench::Bench;
use crate::parse::parse_cpu_list;
use crate::procs::{WorkDir, find_pgbench, first_line};

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
    header(&mut bench, &args);
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

/// The lines ahead of the measurements: date, commit, host, client versions, placement, the
/// query and how the figures are accounted.
fn header(bench: &mut Bench, args: &Args) {
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
}
