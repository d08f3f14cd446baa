//! After a step's threads stopped, or when they could not start: joining them, the CPU window,
//! merging the recorders into one [`OpRun`](super::OpRun) per operation type, and a thread's
//! panic as text. Must not: read the clock or touch the database.

use std::sync::atomic::Ordering;
use std::thread;
use std::time::Instant;

use super::client::Ends;
use super::coordinator::{Clock, Coordinated};
use super::phases::{Phases, READY, SNAPSHOTTED, Shared, ThreadEnd, Window};
use super::{OpRun, StepRun, StepSpec};
use crate::runner::recorder::{Merged, Recorder};
use crate::sampler::{Costs, CpuWindow, Peaks, Snapshot};

/// A client thread could not be started: let the ones that did pass every phase at once (with
/// `stop` set they run nothing), wait for them, and fail the step with the reason.
pub(super) fn abort_start(
    shared: &Shared,
    phases: &Phases,
    handles: Vec<thread::ScopedJoinHandle<'_, ThreadEnd>>,
    e: std::io::Error,
) -> anyhow::Error {
    shared.stop.store(true, Ordering::Relaxed);
    let now = Instant::now();
    *shared.window.lock().expect("window lock") = Some(Window {
        measure_start: now,
        deadline: now,
    });
    for i in READY..=SNAPSHOTTED {
        phases.nth(i).wait();
    }
    for h in handles {
        let _ = h.join();
    }
    anyhow::anyhow!("cannot start a client thread: {e}")
}

/// The message a panic carried (`&str` or `String`), or a placeholder.
pub(super) fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into())
}

/// Combine what the threads and the coordinator measured into the step's result.
pub(super) fn finish(
    spec: &StepSpec,
    shared: &Shared,
    ends: Vec<ThreadEnd>,
    clock: &Clock,
    coordinated: Coordinated,
    (closing_at, b): (Instant, Snapshot),
    peaks: Peaks,
) -> anyhow::Result<StepRun> {
    let Coordinated {
        interrupted,
        mut cpus,
        adaptive,
        ..
    } = coordinated;
    cpus.add(&peaks.cpus);
    let step = spec.step;
    let mut ends = Ends::merge(ends, step);
    if ends.recorders.iter().flatten().all(Vec::is_empty) {
        anyhow::bail!(
            "no client could connect and prepare: {}",
            ends.fatal.unwrap_or_else(|| "unknown error".into())
        );
    }
    let events_all: u64 = shared
        .live
        .iter()
        .map(|l| l.events.load(Ordering::Relaxed))
        .sum();
    let ops = op_runs(
        std::mem::take(&mut ends.recorders),
        &ends.role_period_end,
        clock.measure_start,
    );
    let counted: Vec<&Merged> = ops
        .iter()
        .filter(|o| step.counted.covers(o.role, o.op))
        .map(|o| &o.merged)
        .collect();
    let merged = Merged::combine(&counted);
    let last = ops
        .iter()
        .filter_map(|o| o.merged.last_end)
        .chain(ends.period_end)
        .max();
    let fallback = if step.measure.is_some() {
        clock.deadline
    } else {
        Instant::now()
    };
    let end = last.unwrap_or(fallback).max(clock.measure_start);
    let seconds = end.duration_since(clock.measure_start).as_secs_f64();
    let quota_met = step.has_quota() && shared.quota_missed.load(Ordering::Relaxed) == 0;
    let opened = shared.opening.taken.get();
    Ok(StepRun {
        ops,
        merged,
        seconds,
        costs: Costs {
            a: opened.map_or_else(|| b.clone(), |o| o.snapshot.clone()),
            window: Some(cpu_window(clock, opened.map(|o| o.at), closing_at, seconds)),
            b,
        },
        peaks,
        rows_touched: ends.rows_touched,
        fatal: ends.fatal,
        max_client_busy: ends.max_busy,
        interrupted,
        events_all,
        cpus,
        adaptive,
        quota_met,
        profile: None,
        perf_counts: None,
    })
}

/// The snapshots' window against the operations window: from the opening snapshot (its
/// middle), late by its distance from the first instant a measured operation could start (the
/// period's start, or `go` when that came later), to the closing one (its middle).
fn cpu_window(
    clock: &Clock,
    opened: Option<Instant>,
    closing_at: Instant,
    ops_seconds: f64,
) -> CpuWindow {
    let first = clock.measure_start.max(clock.go);
    let secs = |from: Instant, to: Instant| to.saturating_duration_since(from).as_secs_f64();
    CpuWindow {
        opened_late: opened.map(|at| secs(first, at)),
        seconds: opened.map_or(0.0, |at| secs(at, closing_at)),
        ops_seconds,
    }
}

/// Each role × operation type's merged recorders, with the role's own measured seconds: from
/// `measure_start` to its last operation's end or its schedule's end, whichever is later.
fn op_runs(
    recorders: Vec<Vec<Vec<Recorder>>>,
    role_period_end: &[Option<Instant>],
    measure_start: Instant,
) -> Vec<OpRun> {
    let mut ops = Vec::new();
    for (role, per_op) in recorders.into_iter().enumerate() {
        let merged: Vec<(usize, Merged)> = (per_op.into_iter().enumerate())
            .filter(|(_, r)| !r.is_empty())
            .map(|(op, r)| (op, Merged::from(r)))
            .collect();
        let role_end = (merged.iter())
            .filter_map(|(_, m)| m.last_end)
            .chain(role_period_end[role])
            .max()
            .unwrap_or(measure_start)
            .max(measure_start);
        let role_seconds = role_end.duration_since(measure_start).as_secs_f64();
        for (op, merged) in merged {
            ops.push(OpRun {
                role,
                op,
                merged,
                role_seconds,
            });
        }
    }
    ops
}
