//! Aggregation over repeats: the step groups, each measurement's row, and the aggregates of a
//! target × step × clients (means, medians, latencies, CPU sets) over its repeats.
//!
//! Must not: compare targets (that is `summary`), write sentences, or do any I/O.

use super::warnings::settling;
use crate::report::model::*;
use crate::report::resolution::{self, SeriesIndex};
use crate::results::metrics::{Agg, METRICS, Picked};
use crate::results::{Latency, Measurement, Metric, Values};
use crate::stats::mean_known;
use crate::suites::SuiteKind;

/// Groups in the suites' order (each suite's `groups`, suites in the order `suites` lists them;
/// unknown ids after, by first appearance in step order), titled by their suite (unknown ids
/// by their id); steps in step order.
pub(super) fn step_groups(ms: &[Measurement], suites: &[&dyn SuiteKind]) -> Vec<StepGroup> {
    let known: Vec<(&str, &str)> = suites.iter().flat_map(|s| s.groups()).collect();
    let mut steps: Vec<(u32, usize, &str, &str)> = Vec::new();
    for (pos, m) in ms.iter().enumerate() {
        if !steps.iter().any(|s| s.2 == m.step) {
            steps.push((m.step_index, pos, &m.step, &m.group));
        }
    }
    steps.sort_by_key(|s| (s.0, s.1));
    let mut groups: Vec<StepGroup> = Vec::new();
    for (_, _, step, group) in steps {
        match groups.iter_mut().find(|g| g.id == group) {
            Some(g) => g.steps.push(step.to_string()),
            None => groups.push(StepGroup {
                id: group.to_string(),
                title: (known.iter())
                    .find(|(g, _)| *g == group)
                    .map_or(group, |(_, title)| title)
                    .to_string(),
                steps: vec![step.to_string()],
            }),
        }
    }
    let rank = |id: &str| {
        (known.iter())
            .position(|(g, _)| *g == id)
            .unwrap_or(known.len())
    };
    groups.sort_by_key(|g| rank(&g.id));
    groups
}

pub(super) fn measurement_row(
    m: &Measurement,
    series: &SeriesIndex,
    min_effect: f64,
) -> MeasurementRow {
    MeasurementRow {
        target: m.target.clone(),
        suite: m.suite.clone(),
        step: m.step.clone(),
        step_index: m.step_index,
        group: m.group.clone(),
        clients: m.clients,
        repeat: m.repeat,
        tables: m.tables,
        rows_per_table: m.rows_per_table,
        statements_per_event: m.statements_per_event,
        seconds: m.seconds,
        ops: m.ops,
        events: m.events,
        errors: m.errors.total(),
        errors_by_kind: m.errors,
        qps: m.qps,
        tps: m.tps,
        latency_us: m.latency_us,
        values: m.values,
        below_resolution: m.below_resolution.clone(),
        client_bound: m.client_bound,
        failed: m.failed,
        error: m.error.clone(),
        within_step: (!m.failed)
            .then(|| resolution::within_step(resolution::series_of(series, m), min_effect)),
        server_cpus_seen: m.server_cpus_seen.clone(),
        server_cpus_allowed: m.server_cpus_allowed.clone(),
        client_cpus_seen: m.client_cpus_seen.clone(),
        client_cpus_allowed: m.client_cpus_allowed.clone(),
        wakeup_bound: m.wakeup_bound,
        duration_rule: rule(m).to_string(),
        precision_target: m.precision_target,
        precision_achieved: m.precision_achieved,
        stop_reason: m.stop_reason.clone(),
        operations: m.operations.clone(),
        invocation: m.invocation,
        settling: m.settling.clone(),
        instructions_counter: (m.instruction_pairs.as_ref()).and_then(|p| p.counter.clone()),
    }
}

/// A measurement's length rule; runs stored before adaptive steps existed are `fixed`.
pub(super) fn rule(m: &Measurement) -> &str {
    if m.duration_rule.is_empty() {
        "fixed"
    } else {
        &m.duration_rule
    }
}

/// The union of the CPU lists `get` returns over `ms` (lists that do not parse are skipped).
fn cpu_union(ms: &[&Measurement], get: fn(&Measurement) -> Option<&String>) -> Option<String> {
    let mut all = crate::cpus::CpuSet::default();
    for m in ms {
        if let Some(set) = get(m).and_then(|l| crate::cpus::CpuSet::parse(l).ok()) {
            all.extend(&set);
        }
    }
    all.to_option()
}

fn mean_latency(ls: &[&Latency]) -> Option<Latency> {
    if ls.is_empty() {
        return None;
    }
    let f = |get: fn(&Latency) -> f64| ls.iter().map(|l| get(l)).sum::<f64>() / ls.len() as f64;
    Some(Latency {
        min: f(|l| l.min),
        p50: f(|l| l.p50),
        p90: f(|l| l.p90),
        p95: f(|l| l.p95),
        p99: f(|l| l.p99),
        p999: f(|l| l.p999),
        max: f(|l| l.max),
        mean: f(|l| l.mean),
    })
}

/// One aggregate per target × step × clients seen (targets in lab order, then steps in report
/// order, then clients); failed repeats are left out of the numbers.
pub(super) fn aggregates(
    ms: &[Measurement],
    groups: &[StepGroup],
    targets: &[String],
    series: &SeriesIndex,
    min_effect: f64,
) -> Vec<Aggregate> {
    aggregate_keys(ms, groups, targets)
        .into_iter()
        .map(|(target, step, clients)| aggregate(ms, target, step, clients, series, min_effect))
        .collect()
}

/// Each target × step × clients measured, once: targets in `targets` order, then steps in
/// report order, then clients.
fn aggregate_keys<'m>(
    ms: &'m [Measurement],
    groups: &[StepGroup],
    targets: &[String],
) -> Vec<(&'m str, &'m str, u32)> {
    let mut keys: Vec<(&str, &str, u32)> = Vec::new();
    for m in ms {
        let k = (m.target.as_str(), m.step.as_str(), m.clients);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let target_pos = |t: &str| targets.iter().position(|n| n == t).unwrap_or(usize::MAX);
    let step_pos = |s: &str| {
        groups
            .iter()
            .flat_map(|g| g.steps.iter())
            .position(|n| n == s)
            .unwrap_or(usize::MAX)
    };
    keys.sort_by_key(|(t, s, c)| (target_pos(t), step_pos(s), *c));
    keys
}

/// The aggregate of one target × step × clients: means (peaks for memory and size) over its
/// non-failed repeats.
fn aggregate(
    ms: &[Measurement],
    target: &str,
    step: &str,
    clients: u32,
    series: &SeriesIndex,
    min_effect: f64,
) -> Aggregate {
    let all: Vec<&Measurement> = ms
        .iter()
        .filter(|m| m.target == target && m.step == step && m.clients == clients)
        .collect();
    let ok: Vec<&Measurement> = all.iter().copied().filter(|m| !m.failed).collect();
    let mean = |get: fn(&Measurement) -> Option<f64>| mean_known(ok.iter().map(|m| get(m)));
    let lats: Vec<&Latency> = ok.iter().filter_map(|m| m.latency_us.as_ref()).collect();
    let per_second: Vec<&[f64]> = ok
        .iter()
        .map(|m| resolution::series_of(series, m))
        .collect();
    let values = aggregate_values(&ok);
    let confirmed =
        |device: Metric, own: Metric| resolution::confirmed(values.get(device), values.get(own));
    Aggregate {
        target: target.to_string(),
        step: step.to_string(),
        group: all[0].group.clone(),
        clients,
        repeats: ok.len() as u32,
        qps: mean(|m| m.qps),
        tps: mean(|m| m.tps),
        latency_us: mean_latency(&lats),
        values: Picked(values),
        client_bound: ok.iter().any(|m| m.client_bound),
        errors: (ok.iter()).fold(0u64, |n, m| n.saturating_add(m.errors.total())),
        own_io: Picked(values),
        device_reads_confirmed: confirmed(Metric::ReadKb, Metric::ProcReadKb),
        device_writes_confirmed: confirmed(Metric::WriteKb, Metric::ProcWriteKb),
        within_step: resolution::within_step_over(&per_second, min_effect),
        server_cpus_seen: cpu_union(&ok, |m| m.server_cpus_seen.as_ref()),
        client_cpus_seen: cpu_union(&ok, |m| m.client_cpus_seen.as_ref()),
        wakeup_bound: ok.iter().any(|m| m.wakeup_bound),
        seconds: mean(|m| Some(m.seconds)),
        duration_rule: if ok.iter().any(|m| rule(m) == "adaptive") {
            "adaptive"
        } else {
            "fixed"
        }
        .into(),
        ran_to_max: ok
            .iter()
            .filter(|m| m.stop_reason.as_deref() == Some("max"))
            .count() as u32,
        settling: ok.iter().any(|m| settling(m)),
    }
}

/// Each metric the table aggregates, over the repeats `ok` as its row says.
fn aggregate_values(ok: &[&Measurement]) -> Values {
    let mut out = Values::default();
    for d in METRICS {
        let known = ok.iter().map(|m| m.values.get(d.metric));
        let v = match d.over_repeats {
            None => None,
            Some(Agg::Mean) => mean_known(known),
            Some(Agg::Max) => known.flatten().reduce(f64::max),
        };
        out.set(d.metric, v);
    }
    out
}

/// The non-failed repeats of one target × step × clients.
pub(super) fn repeats_of<'a>(
    ms: &'a [Measurement],
    target: &str,
    step: &str,
    clients: u32,
) -> Vec<&'a Measurement> {
    ms.iter()
        .filter(|m| m.target == target && m.step == step && m.clients == clients && !m.failed)
        .collect()
}
