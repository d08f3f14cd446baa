//! Reading what the external tools print: sysbench's and pgbench's query counts and rates,
//! `strace -c`'s summary, and `--cpu-list`. Pure text in, numbers out; it must not start
//! processes or print.

use anyhow::Result;

/// sysbench's `queries:` line: (queries, queries per second).
pub(crate) fn parse_sysbench(out: &str) -> Option<(u64, f64)> {
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
pub(crate) fn parse_pgbench(out: &str) -> Option<(u64, f64)> {
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
pub(crate) fn parse_strace(summary: &str) -> Option<(u64, Vec<(String, u64)>)> {
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
pub(crate) fn parse_cpu_list(list: &str) -> Result<Vec<usize>> {
    let set = dbdelta::cpus::CpuSet::parse(list).map_err(|e| anyhow::anyhow!("--cpu-list {e}"))?;
    Ok(set.iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::median;

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
