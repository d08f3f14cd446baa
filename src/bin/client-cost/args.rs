//! The command line of `client-cost`: which engines, client counts, rounds, durations, sizes and
//! CPU placement. It only declares the flags; it must not check them (that is `main`) nor run
//! anything.

use std::path::PathBuf;

use clap::Parser;

#[derive(Parser, Debug)]
#[command(about = "dbdelta's client cost next to sysbench and pgbench (issue #4)")]
pub(crate) struct Args {
    /// Engines to measure, in order: postgres, mysql.
    #[arg(long, value_delimiter = ',', default_value = "postgres,mysql")]
    pub(crate) engines: Vec<String>,
    /// Client counts.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub(crate) clients: Vec<u32>,
    /// Interleaved rounds (A B C per round) per client count.
    #[arg(long, default_value_t = 3)]
    pub(crate) rounds: u32,
    /// Fixed time of every query run, seconds (sysbench --time, pgbench -T, dbdelta's measured
    /// period; dbdelta warms up 1 s more, and that is inside its CPU figure).
    #[arg(long, default_value_t = 10)]
    pub(crate) secs: u64,
    /// Rows of the one table.
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) rows: u64,
    /// Interleaved load rounds (sysbench prepare, dbdelta load).
    #[arg(long, default_value_t = 3)]
    pub(crate) load_rounds: u32,
    /// Seconds of each client's run under `strace -c -f` (0: no syscall counts).
    #[arg(long, default_value_t = 5)]
    pub(crate) strace_secs: u64,
    /// Run the clients on these CPUs (`taskset -c` for sysbench/pgbench, sched_setaffinity of
    /// dbdelta's client threads), e.g. `0` or `0-1`. Default: unpinned.
    #[arg(long)]
    pub(crate) cpu_list: Option<String>,
    /// Pin every process and thread of the server to these CPUs (`taskset -a -p`). Default:
    /// unpinned.
    #[arg(long)]
    pub(crate) server_cpu_list: Option<String>,
    /// Where the temporary work directory goes.
    #[arg(long, default_value = "/tmp")]
    pub(crate) workdir: PathBuf,
}
