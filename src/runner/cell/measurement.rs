//! A step's [`Measurement`]: its record before the step runs (where it belongs, at what
//! scale), then everything a [`StepRun`] measured (counts, rates, latency, rows touched, costs
//! per op, memory, the CPUs threads ran on, the client-bound and wake-up-bound flags, every
//! role × operation type, the per-second series and the step-length rule).
//!
//! Arithmetic over what was measured. Must not: time, store or print anything.

use super::CellRun;
use crate::plan::{Cell, TargetPlan};
use crate::results::{Measurement, Metric, OpMeasurement, SecondSample};
use crate::runner::client_bound;
use crate::runner::step::StepRun;
use crate::stats;
use crate::workload::{Pacer, StepPlan, SuitePlan};

impl CellRun<'_> {
    /// Everything `run` measured, into `m`: counts, rates, latency, rows, costs per op,
    /// memory, the CPUs threads ran on, and the client-bound and wake-up-bound flags.
    /// `threads` is the number of client connections per role.
    pub fn fill(&self, m: &mut Measurement, step: &StepPlan, run: &StepRun, threads: u32) {
        fill_counts(m, step, run);
        m.operations = operations(step, run, threads);
        // The sampler's per-op costs, under their metrics; then the peaks.
        let per = run.costs.per_op(m.ops);
        let (server_cpu, measured_client) =
            (per.get(Metric::ServerCpu), per.get(Metric::ClientCpu));
        m.values.fill_from(&per);
        let embedded = self.target.engine.embedded();
        // What the snapshots' window could not resolve (not the client's CPU of an in-process
        // engine, which is never separated from it).
        m.below_resolution = (run.costs.unresolved(m.ops).into_iter())
            .filter(|&u| !(embedded && u == Metric::ClientCpu))
            .map(|u| u.id().to_string())
            .collect();
        // In-process engines share our CPU: client cost is not separable from engine cost.
        let client_cpu = measured_client.filter(|_| !embedded);
        m.values.set(Metric::ClientCpu, client_cpu);
        // Connections, not clients: a step of several roles runs one per role per client.
        let connections = threads * step.roles.len() as u32;
        let client_busy = crate::cpus::busy_share(measured_client, m.qps, connections);
        m.client_bound = !embedded
            && client_bound(
                measured_client,
                server_cpu,
                client_busy,
                run.max_client_busy,
            );
        let peak = |b: Option<u64>| b.map(|b| b as f64);
        m.values.set(Metric::PeakRss, peak(run.peaks.rss));
        m.values.set(Metric::PeakVsz, peak(run.peaks.vsz));
        m.values.set(Metric::PeakPss, peak(run.peaks.pss));
        let cpus = &run.cpus;
        m.server_cpus_seen = cpus.server_seen.to_option();
        m.server_cpus_allowed = cpus.server_allowed.to_option();
        m.client_cpus_seen = cpus.client_seen.to_option();
        m.client_cpus_allowed = cpus.client_allowed.to_option();
        let placement = &self.target.placement;
        m.wakeup_bound = crate::cpus::wakeup_bound(&crate::cpus::WakeupInputs {
            embedded,
            clients: connections,
            usable_cpus: self.plan.machine.usable.len(),
            one_shared_cpu: placement.one_shared_cpu(),
            server_io_kb_per_op: (m.values.get(Metric::ProcReadKb))
                .zip(m.values.get(Metric::ProcWriteKb))
                .map(|(r, w)| r + w),
            client_cpu_us_per_op: client_cpu,
            server_cpu_us_per_op: server_cpu,
            qps: m.qps,
        });
    }
}

/// Counts, rates, latency and rows touched of the counted operations.
fn fill_counts(m: &mut Measurement, step: &StepPlan, run: &StepRun) {
    let merged = &run.merged;
    m.seconds = run.seconds;
    m.events = merged.events;
    m.ops = merged.units;
    m.errors = merged.errors;
    let rate = |n: u64| (run.seconds > 0.0 && n > 0).then(|| n as f64 / run.seconds);
    m.qps = rate(m.ops);
    m.tps = rate(m.events);
    m.latency_us = merged.latency();
    if let Some(rows) = step.scan_rows {
        let krows = (m.latency_us)
            .filter(|l| l.mean > 0.0)
            .map(|l| rows as f64 / 1000.0 / (l.mean / 1e6));
        m.values.set(Metric::ScanKrows, krows);
    }
    // Rows touched by the measured events (failed ones included: they ran statements too).
    let executions = merged.events + m.errors.total();
    m.rows_per_statement = (executions > 0).then(|| {
        step.event_shape
            .iter()
            .zip(&run.rows_touched)
            .map(|(n, rows)| *rows as f64 / (executions * u64::from(*n)) as f64)
            .collect()
    });
    let per_event = m.rows_per_statement.as_ref().map(|per| {
        per.iter()
            .zip(&step.event_shape)
            .map(|(r, n)| r * f64::from(*n))
            .sum()
    });
    m.values.set(Metric::RowsPerEvent, per_event);
}

/// Every role × operation type the step ran, with its own rates, latencies, per-unit costs
/// and per-second series (schema v2). `threads` is the connections per role.
fn operations(step: &StepPlan, run: &StepRun, threads: u32) -> Vec<OpMeasurement> {
    let whole_seconds = (run.seconds + 1e-3).floor() as usize;
    run.ops
        .iter()
        .map(|o| {
            let rate = |n: u64| (o.role_seconds > 0.0).then(|| n as f64 / o.role_seconds);
            let role = &step.roles[o.role];
            let merged = &o.merged;
            let (pacer, target) = match role.pacer {
                Pacer::Closed => ("closed", None),
                Pacer::Rate { per_sec } => ("rate", Some(per_sec * f64::from(threads))),
                Pacer::Follow { .. } => ("follow", None),
            };
            let per = run.costs.per_op(merged.units);
            OpMeasurement {
                role: role.name.to_string(),
                op: role.ops.get(o.op).copied().unwrap_or("?").to_string(),
                pacer: pacer.to_string(),
                counted: step.counted.covers(o.role, o.op),
                operations: merged.events,
                units: merged.units,
                rows: merged.rows,
                errors: merged.errors,
                error_codes: merged.error_codes.clone(),
                ops_per_sec: rate(merged.events),
                units_per_sec: rate(merged.units),
                target_ops_per_sec: target,
                latency_us: merged.latency(),
                response_us: merged.response_latency(),
                step_server_cpu_us_per_unit: per.get(Metric::ServerCpu),
                step_cs_per_unit: per.get(Metric::Cs),
                step_read_kb_per_unit: per.get(Metric::ReadKb),
                step_write_kb_per_unit: per.get(Metric::WriteKb),
                series: (merged.seconds.iter().take(whole_seconds))
                    .map(|s| s.units)
                    .collect(),
                instructions: None,
            }
        })
        .collect()
}

/// The step-length rule and how it ended, with the precision achieved as computed from the
/// stored per-second `series` (the same function the adaptive rule uses).
pub(super) fn fill_length(m: &mut Measurement, run: &StepRun, series: &[SecondSample]) {
    let ops: Vec<f64> = series.iter().map(|s| s.ops as f64).collect();
    m.precision_achieved = stats::series_precision(&ops)
        .map(|p| p.half_width)
        .filter(|h| h.is_finite());
    match &run.adaptive {
        None => {
            m.duration_rule = "fixed".into();
            m.stop_reason = Some(if run.quota_met { "quota" } else { "deadline" }.into());
        }
        Some(end) => {
            m.duration_rule = "adaptive".into();
            m.precision_target = Some(end.target);
            m.stop_reason = Some(if end.reached { "precision" } else { "max" }.into());
        }
    }
}

/// The per-second series of a step: whole seconds of the measured period only. A partial last
/// second (or the bucket of events that ended after the deadline) is not a rate and would read
/// as a stall. The last event ends a hair before the deadline, so 1 ms of slack is allowed:
/// 0.9999 s is one whole second.
pub(super) fn series_of(m: &Measurement, run: &StepRun) -> Vec<SecondSample> {
    let whole_seconds = (run.seconds + 1e-3).floor() as usize;
    run.merged
        .seconds
        .iter()
        .take(whole_seconds)
        .enumerate()
        .map(|(i, s)| SecondSample {
            target: m.target.clone(),
            step: m.step.clone(),
            clients: m.clients,
            repeat: m.repeat,
            second: i as u32,
            ops: s.units,
            p99_us: s.p99_ns.map(|v| v as f64 / 1000.0),
            max_us: s.max_ns.map(|v| v as f64 / 1000.0),
        })
        .collect()
}

/// The record of `target`'s `step` of `suite` in `cell` before anything is measured: where it
/// belongs and at what scale.
pub(in crate::runner) fn step_record(
    target: &TargetPlan,
    suite: &SuitePlan,
    step: &StepPlan,
    cell: Cell,
) -> Measurement {
    let scale = suite.suite.scale(cell.clients);
    Measurement {
        target: target.name.clone(),
        suite: step.suite.into(),
        step: step.label.clone(),
        step_index: step.index,
        group: step.group.clone(),
        warm: step.warm,
        statements_per_event: step.statements_per_event,
        clients: cell.clients,
        repeat: cell.repeat,
        tables: scale.tables,
        rows_per_table: scale.rows,
        ..Default::default()
    }
}
