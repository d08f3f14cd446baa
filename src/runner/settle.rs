//! The settling guard: an idle probe of a cell's server after the load's postwrite
//! and before its first measured step, and the rule that calls the server still settling.
//!
//! The probe runs no client work: it reads the sampler's `/proc` counters of the server's own
//! processes (CPU time, `write_bytes`) and the engine's account of its background work
//! ([`Server::background`]: InnoDB's dirty pages and history list, PostgreSQL's autovacuum
//! workers and checkpointer/bgwriter buffers) at both ends of a sleep of [`PROBE`]. Owns the
//! thresholds and the wording of the evidence. Must not: time database work (that is `step`)
//! or know a suite; an embedded engine (SQLite: no background work of its own) gets no probe.

use std::time::{Duration, Instant};

use crate::engine::{Background, Server};
use crate::progress::thousands;
use crate::results::{Metric, Settling};
use crate::sampler::{Costs, Observed, Probe};

/// How long the server is watched idle.
pub const PROBE: Duration = crate::sampler::IDLE_PROBE;
/// How long it is watched at `--quick` scale (0.3 s steps; tests): long enough for InnoDB's
/// dirty pages and the `/proc` counters to move, short beside the cell.
pub const QUICK_PROBE: Duration = crate::sampler::QUICK_IDLE_PROBE;
/// The server's own CPU while idle, as a share of one core, from which it is settling. Idle
/// MySQL 8.0 and PostgreSQL 16 use under 1% after a settled load (docs/measurement.md).
pub const CPU_SHARE: f64 = 0.10;
/// The server's own writes while idle, bytes per second, from which it is settling: about
/// twice what a settled MySQL 5.6 or 8.0 writes idle (0.52 MB/s, docs/measurement.md).
pub const WRITE_BYTES_PER_SEC: f64 = 1e6;
/// InnoDB dirty pages falling at least this fast (pages per second) while idle: the page
/// cleaner is still flushing what the load left.
pub const DIRTY_DRAIN_PER_SEC: f64 = 20.0;

/// Watch the idle server for `length` ([`PROBE`], or [`QUICK_PROBE`] at `--quick`) and apply
/// the rule. `postwrite` is the budget of the cleanup that preceded it.
pub fn probe(
    server: &dyn Server,
    probe: &Probe,
    postwrite: Duration,
    length: Duration,
) -> Settling {
    let start = server.background();
    let a = probe.snapshot();
    let t0 = Instant::now();
    // A terminating signal cuts it short; the run then ends before any step.
    crate::signals::sleep(length);
    let b = probe.snapshot();
    let secs = t0.elapsed().as_secs_f64();
    let end = server.background();
    let total = Costs::new(a, b).per_op(1);
    let mut s = Settling {
        process: process_name(&server.observed()),
        probe_secs: secs,
        postwrite_secs: postwrite.as_secs_f64(),
        cpu_share: total.get(Metric::ServerCpu).map(|us| us / 1e6 / secs),
        write_bytes_per_sec: total.get(Metric::ProcWriteKb).map(|kb| kb * 1024.0 / secs),
        ..Default::default()
    };
    engine_evidence(&mut s, &start, &end);
    decide(&mut s);
    s
}

/// The engine's readings at the probe's two ends, into `s`.
fn engine_evidence(s: &mut Settling, start: &Background, end: &Background) {
    s.dirty_pages_start = start.dirty_pages;
    s.dirty_pages_end = end.dirty_pages;
    s.history_length = end.history_length;
    s.autovacuum_workers = end.autovacuum_workers;
    s.buffers_written = (start.buffers_written)
        .zip(end.buffers_written)
        .map(|(a, b)| b.saturating_sub(a));
}

/// The settling rule: the server is settling when any evidence is over its threshold (its own
/// CPU, its own writes, InnoDB's dirty pages draining with some left, a PostgreSQL autovacuum
/// worker). InnoDB dirty pages that reached 0 by the
/// probe's end mean its flushing ended within the probe: its writes alone then do not flag it.
/// Fills `settling`, `reasons` and, when dirty pages were draining, `wait_secs` (the pages
/// left over the drain rate seen).
pub fn decide(s: &mut Settling) {
    let mut reasons = Vec::new();
    if let Some(c) = s.cpu_share.filter(|c| *c >= CPU_SHARE) {
        reasons.push(format!("used {:.0}% of a core", c * 100.0));
    }
    let flushed = s.dirty_pages_end == Some(0);
    if let Some(w) = (s.write_bytes_per_sec)
        .filter(|w| *w >= WRITE_BYTES_PER_SEC)
        .filter(|_| !flushed)
    {
        reasons.push(format!("wrote {:.1} MB/s", w / 1e6));
    }
    s.wait_secs = None;
    if let (Some(drain), Some(left)) = (s.drain_per_sec(), s.dirty_pages_end)
        && drain >= DIRTY_DRAIN_PER_SEC
        && left > 0
    {
        reasons.push(format!(
            "had {} dirty pages draining at {}/s",
            thousands(left as f64),
            thousands(drain)
        ));
        s.wait_secs = Some(left as f64 / drain);
    }
    if let Some(n) = s.autovacuum_workers.filter(|n| *n > 0) {
        let workers = if n == 1 { "worker" } else { "workers" };
        reasons.push(format!("ran {n} autovacuum {workers}"));
    }
    // PostgreSQL's checkpointer and bgwriter counters are evidence shown, not a rule: the
    // checkpointer reports its counts late, so the postwrite's own CHECKPOINT showed up as
    // 2,699 buffers "written" during a probe whose processes wrote nothing (/proc says what
    // they write now).
    s.settling = !reasons.is_empty();
    s.reasons = reasons;
}

/// Every reading of the probe in a line, for the progress output (what the thresholds were
/// chosen from): `used 0.4% of a core, wrote 0.01 MB/s, dirty pages 120 → 100, ...`.
pub fn evidence(s: &Settling) -> String {
    let mut out = vec![
        s.cpu_share.map_or("CPU n/a".into(), |c| {
            format!("used {:.1}% of a core", c * 100.0)
        }),
        s.write_bytes_per_sec.map_or("writes n/a".into(), |w| {
            format!("wrote {:.2} MB/s", w / 1e6)
        }),
    ];
    if let (Some(a), Some(b)) = (s.dirty_pages_start, s.dirty_pages_end) {
        out.push(format!("dirty pages {a} → {b}"));
    }
    if let Some(h) = s.history_length {
        out.push(format!("history list {h}"));
    }
    if let Some(n) = s.autovacuum_workers {
        out.push(format!("{n} autovacuum workers"));
    }
    if let Some(n) = s.buffers_written {
        out.push(format!(
            "{n} buffers written by the checkpointer and bgwriter"
        ));
    }
    format!("{} over {:.1} s", out.join(", "), s.probe_secs)
}

/// The server's process name for messages (`mysqld`, `postgres`), from `/proc` when its
/// processes are on this host.
fn process_name(observed: &Observed) -> String {
    let here = match observed {
        Observed::Tree(pid) => procfs::process::Process::new(*pid as i32)
            .and_then(|p| p.stat())
            .ok()
            .map(|s| s.comm),
        _ => None,
    };
    here.unwrap_or_else(|| "the server".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle() -> Settling {
        Settling {
            process: "mysqld".into(),
            probe_secs: 2.0,
            postwrite_secs: 5.0,
            cpu_share: Some(0.004),
            write_bytes_per_sec: Some(2048.0),
            dirty_pages_start: Some(12),
            dirty_pages_end: Some(12),
            history_length: Some(0),
            ..Default::default()
        }
    }

    #[test]
    fn a_quiet_server_is_settled() {
        let mut s = idle();
        decide(&mut s);
        assert!(!s.settling);
        assert!(s.reasons.is_empty());
        assert_eq!(s.wait_secs, None);
        // Just under every threshold: still settled.
        s.cpu_share = Some(0.099);
        s.write_bytes_per_sec = Some(999_999.0);
        s.dirty_pages_start = Some(1039);
        s.dirty_pages_end = Some(1000);
        decide(&mut s);
        assert!(!s.settling, "{:?}", s.reasons);
    }

    #[test]
    fn cpu_writes_and_draining_pages_each_flag_it() {
        let mut s = idle();
        s.cpu_share = Some(0.45);
        decide(&mut s);
        assert_eq!(s.reasons, ["used 45% of a core"]);
        assert!(s.settling);
        assert_eq!(s.wait_secs, None, "no estimate without draining pages");

        let mut s = idle();
        s.write_bytes_per_sec = Some(12e6);
        decide(&mut s);
        assert_eq!(s.reasons, ["wrote 12.0 MB/s"]);

        // 34,000 → 30,000 pages in 2 s: 2,000/s, 15 s left.
        let mut s = idle();
        s.dirty_pages_start = Some(34_000);
        s.dirty_pages_end = Some(30_000);
        decide(&mut s);
        assert_eq!(s.reasons, ["had 30,000 dirty pages draining at 2,000/s"]);
        assert_eq!(s.wait_secs, Some(15.0));
        // Growing dirty pages are no drain (and no estimate).
        s.dirty_pages_start = Some(100);
        decide(&mut s);
        assert!(!s.settling);
        assert_eq!(s.wait_secs, None);
        // MySQL 5.6 after postwrite_secs = 5, second repeat: the flush's tail (116 pages, then
        // none) with 3.67 MB/s written is settled by the steps.
        s.dirty_pages_start = Some(116);
        s.dirty_pages_end = Some(0);
        s.write_bytes_per_sec = Some(3.67e6);
        decide(&mut s);
        assert!(!s.settling, "{:?}", s.reasons);
        // MySQL 8.0 after postwrite_secs = 5: 1412 → 1012 pages and 73 MB/s.
        s.dirty_pages_start = Some(1412);
        s.dirty_pages_end = Some(1012);
        s.write_bytes_per_sec = Some(73e6);
        decide(&mut s);
        assert_eq!(
            s.reasons,
            ["wrote 73.0 MB/s", "had 1,012 dirty pages draining at 200/s"]
        );
        assert_eq!(s.wait_secs, Some(5.06));
    }

    #[test]
    fn postgres_evidence_flags_it() {
        let mut s = Settling {
            probe_secs: 2.0,
            autovacuum_workers: Some(1),
            buffers_written: Some(100),
            ..Default::default()
        };
        decide(&mut s);
        assert_eq!(s.reasons, ["ran 1 autovacuum worker"]);
        // PostgreSQL 17 after postwrite_secs = 1: the checkpointer's late report of the
        // postwrite's CHECKPOINT, with nothing written by the server during the probe.
        s.autovacuum_workers = Some(0);
        s.buffers_written = Some(2699);
        s.cpu_share = Some(0.0);
        s.write_bytes_per_sec = Some(0.0);
        decide(&mut s);
        assert!(!s.settling, "{:?}", s.reasons);
    }
}
