//! Computes the [`ReportModel`] from a run's records: aggregation over repeats, relative
//! numbers, group statistics, verdicts, tl;dr sentences, warnings and method notes.
//!
//! Owns every number and sentence a report shows. It must not format tables, pick colours or
//! do any I/O (files, terminal, clock, environment): same `RunData` in, same model out.

use std::collections::{BTreeMap, BTreeSet};

use super::fmt::{decided, percent, plural, signed_percent, two};
use super::model::*;
use super::resolution::{self, SeriesIndex};
use super::suites::SECTIONS;
use super::{Options, ReportError, crossover, settings, verdict};
use crate::results::metrics::{Agg, METRICS, Picked};
use crate::results::{Latency, Measurement, Metric, RunData, Settling, TargetInfo, Values};
use crate::stats::{self, mean_known, ratio};
use crate::suites::SuiteKind;

/// Builds the model; `opts.base` defaults to the first target, and every other target is
/// relative to it. Warm steps (stored with `warm`) are left out of every number; only their
/// failures are reported, as warnings. `suites` are the suites the caller hands it (their
/// report groups' order and titles).
pub fn build(
    all: &RunData,
    opts: &Options,
    suites: &[&dyn SuiteKind],
) -> Result<ReportModel, ReportError> {
    let names: Vec<String> = all.targets.iter().map(|t| t.name.clone()).collect();
    let base = match opts.base.as_deref() {
        Some(b) if names.iter().any(|n| n == b) => b.to_string(),
        Some(b) => {
            return Err(ReportError::UnknownBase {
                base: b.to_string(),
                run: all.run.id.clone(),
                known: names,
            });
        }
        None => match names.first() {
            Some(first) => first.clone(),
            None => {
                return Err(ReportError::UnknownBase {
                    base: String::new(),
                    run: all.run.id.clone(),
                    known: names,
                });
            }
        },
    };
    let pairs: BTreeMap<String, String> = names
        .iter()
        .filter(|n| **n != base)
        .map(|n| (n.clone(), base.clone()))
        .collect();
    Ok(build_with(
        all,
        &base,
        &pairs,
        &BTreeMap::new(),
        opts,
        suites,
    ))
}

/// The method's parameters: the minimum effect from `opts`, else the run, else the default.
fn method(all: &RunData, opts: &Options) -> Method {
    let (min_effect, source) = match (opts.min_effect, all.run.min_effect) {
        (Some(m), _) => (m, "--min-effect"),
        (None, Some(m)) => (m, "lab"),
        (None, None) => (stats::MIN_EFFECT, "default"),
    };
    Method {
        fdr_q: stats::FDR_Q,
        min_effect,
        min_effect_source: source.to_string(),
        min_step_seconds: stats::MIN_STEP_SECONDS as u32,
        resolution_units: stats::RESOLUTION_UNITS,
        clock_tick_us: stats::CLOCK_TICK_US,
        test: match (opts.separate_runs, opts.student) {
            (true, _) => "none",
            (false, true) => "student",
            (false, false) => "moderated",
        }
        .to_string(),
        looks: opts.looks.or(all.run.looks).unwrap_or(1).max(1),
        power: stats::POWER,
    }
}

/// What a report reads of `all`: no warm step, and with `opts.first_repeats` only those repeats.
fn reported(all: &RunData, opts: &Options) -> RunData {
    let kept = |repeat: u32| opts.first_repeats.is_none_or(|n| repeat <= n);
    RunData {
        measurements: (all.measurements.iter())
            .filter(|m| !m.warm && kept(m.repeat))
            .cloned()
            .collect(),
        series: all
            .series
            .iter()
            .filter(|s| kept(s.repeat))
            .cloned()
            .collect(),
        ..all.clone()
    }
}

/// The model with explicit pairs: `pairs` maps each compared target to the target it is
/// relative to (targets not in it are not compared); `runs` maps a target to the run its
/// numbers come from (default: `all.run.id`). `base` must be one of `all.targets`; `opts.base`
/// is not read.
pub(super) fn build_with(
    all: &RunData,
    base: &str,
    pairs: &BTreeMap<String, String>,
    runs: &BTreeMap<String, String>,
    opts: &Options,
    suites: &[&dyn SuiteKind],
) -> ReportModel {
    let data = &reported(all, opts);
    let names: Vec<String> = data.targets.iter().map(|t| t.name.clone()).collect();
    let base = base.to_string();
    let bases: BTreeSet<&str> = pairs
        .values()
        .map(String::as_str)
        .chain([base.as_str()])
        .collect();
    let clients: Vec<u32> = data
        .measurements
        .iter()
        .map(|m| m.clients)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let method = method(all, opts);
    let series_index = resolution::series_index(&data.series);
    let step_groups = step_groups(&data.measurements, suites);
    let aggregates = aggregates(
        &data.measurements,
        &step_groups,
        &names,
        &series_index,
        method.min_effect,
    );
    let max_repeats = aggregates.iter().map(|a| a.repeats).max().unwrap_or(0);

    let mut model = ReportModel {
        schema_version: SCHEMA_VERSION,
        run: RunSummary {
            invocations: invocations(data),
            ..run_summary(&data.run)
        },
        base: base.clone(),
        targets: target_summaries(data, pairs, runs, &bases),
        clients,
        compared: compared(data, &names, pairs),
        step_groups,
        max_repeats,
        measurements: data
            .measurements
            .iter()
            .map(|m| measurement_row(m, &series_index, method.min_effect))
            .collect(),
        aggregates,
        relative: Vec::new(),
        groups: Vec::new(),
        loads: loads(data),
        series: series(data),
        pre_post: Vec::new(),
        tldr: Vec::new(),
        warnings: Vec::new(),
        notes: Vec::new(),
        compare: None,
        method,
        group_qps: Vec::new(),
        crossovers: Vec::new(),
        suites: BTreeMap::new(),
        profiles: None,
        by_version: Vec::new(),
        decided: Vec::new(),
        summary: Summary::default(),
        functions: None,
    };
    fill_derived(&mut model, all, data);
    model.profiles = super::profile::report(data, &model.targets);
    model.functions = super::why::build(&model.relative, &data.measurements);
    model
}

/// The targets (in `names` order) that have a base in `pairs` and measured something.
fn compared(data: &RunData, names: &[String], pairs: &BTreeMap<String, String>) -> Vec<String> {
    let measured: BTreeSet<&str> = data
        .measurements
        .iter()
        .map(|m| m.target.as_str())
        .collect();
    names
        .iter()
        .filter(|n| pairs.contains_key(n.as_str()) && measured.contains(n.as_str()))
        .cloned()
        .collect()
}

/// Each target's summary: its differences from the target it is relative to, whether it is a
/// base, and the run its numbers come from.
fn target_summaries(
    data: &RunData,
    pairs: &BTreeMap<String, String>,
    runs: &BTreeMap<String, String>,
    bases: &BTreeSet<&str>,
) -> Vec<TargetSummary> {
    let info = |name: &str| data.targets.iter().find(|t| t.name == name);
    data.targets
        .iter()
        .map(|t| {
            let relative_to = pairs.get(&t.name);
            let mut s = target_summary(t, relative_to.and_then(|b| info(b)));
            s.is_base = bases.contains(t.name.as_str());
            s.relative_to = relative_to.cloned();
            s.run_id = runs.get(&t.name).unwrap_or(&data.run.id).clone();
            s
        })
        .collect()
}

/// Fills in, in this order, what is computed from the model itself: relative numbers,
/// verdicts, group summaries, pre/post, tl;dr, warnings (with `all`'s failed warm steps),
/// notes, crossovers and the by-version view. `data` is `all` without its warm steps.
fn fill_derived(model: &mut ReportModel, all: &RunData, data: &RunData) {
    model.relative = relative(model, &data.measurements);
    for section in SECTIONS {
        if let Some(tables) = section.summarize(model) {
            model.suites.insert(section.suite().to_string(), tables);
        }
    }
    verdict::apply(model, &data.measurements);
    model.groups = group_summaries(model);
    model.decided = target_decided(model);
    model.pre_post = pre_post(model);
    model.tldr = tldr(model);
    model.warnings = warnings(model, data);
    for section in SECTIONS {
        let more = section.warnings(model);
        model.warnings.extend(more);
    }
    for m in all.measurements.iter().filter(|m| m.warm && m.failed) {
        model.warnings.push(format!(
            "failed: warm step {} of {} at {}: {}",
            m.step,
            m.target,
            plural(m.clients as usize, "client"),
            m.error.as_deref().unwrap_or("no error recorded")
        ));
    }
    model.notes = notes(model, data);
    model.summary = super::answer::summary(model, data);
    crossover::apply(model, &data.measurements);
    model.by_version = super::by_version::sweeps(model);
}

pub(super) fn run_summary(run: &crate::results::RunInfo) -> RunSummary {
    RunSummary {
        id: run.id.clone(),
        lab: run.lab.clone(),
        started: run.started.clone(),
        finished: run.finished.clone(),
        complete: run.complete,
        quick: run.quick,
        host: run.host.clone(),
        dbdelta_version: run.dbdelta_version.clone(),
        invocations: Vec::new(),
    }
}

/// The run's invocations, each with the cells whose measurements it made (in execution order).
fn invocations(data: &RunData) -> Vec<InvocationSummary> {
    (data.run.invocations.iter())
        .map(|i| {
            let mut cells: Vec<String> = Vec::new();
            for m in data
                .measurements
                .iter()
                .filter(|m| m.invocation == i.number)
            {
                let cell = format!("{} c={} r={}", m.target, m.clients, m.repeat);
                if !cells.contains(&cell) {
                    cells.push(cell);
                }
            }
            InvocationSummary {
                number: i.number,
                started: i.started.clone(),
                finished: i.finished.clone(),
                cells,
            }
        })
        .collect()
}

/// Groups in the suites' order (each suite's `groups`, suites in the order `suites` lists them;
/// unknown ids after, by first appearance in step order), titled by their suite (unknown ids
/// by their id); steps in step order.
fn step_groups(ms: &[Measurement], suites: &[&dyn SuiteKind]) -> Vec<StepGroup> {
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

fn measurement_row(m: &Measurement, series: &SeriesIndex, min_effect: f64) -> MeasurementRow {
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
fn rule(m: &Measurement) -> &str {
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
fn aggregates(
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
fn repeats_of<'a>(
    ms: &'a [Measurement],
    target: &str,
    step: &str,
    clients: u32,
) -> Vec<&'a Measurement> {
    ms.iter()
        .filter(|m| m.target == target && m.step == step && m.clients == clients && !m.failed)
        .collect()
}

/// One row per compared target × step × clients with the ratios of the aggregates (cost
/// ratios below resolution left out, see [`resolution::below_resolution`]); verdicts are
/// `verdict::apply`'s.
fn relative(model: &ReportModel, ms: &[Measurement]) -> Vec<Relative> {
    let mut out = Vec::new();
    for target in &model.compared {
        for group in &model.step_groups {
            for step in &group.steps {
                for &clients in &model.clients {
                    let base = model.base_of(target);
                    let t = model.aggregate(target, step, clients);
                    let b = model.aggregate(base, step, clients);
                    if t.is_none() && b.is_none() {
                        continue;
                    }
                    let side = |name: &str| resolution::Side {
                        repeats: repeats_of(ms, name, step, clients),
                        engine: model
                            .targets
                            .iter()
                            .find(|t| t.name == name)
                            .map_or("", |t| t.engine.as_str()),
                    };
                    let coarse = resolution::below_resolution(&side(target), &side(base));
                    let mut ratios = Values::default();
                    for d in METRICS.iter().filter(|d| d.relative) {
                        let get = |a: &Aggregate| a.get(d.metric);
                        let ratio = ratio(t.and_then(get), b.and_then(get));
                        ratios.set(
                            d.metric,
                            ratio.filter(|_| !coarse.iter().any(|c| c == d.id)),
                        );
                    }
                    let qps = ratio(t.and_then(|a| a.qps), b.and_then(|a| a.qps));
                    let both = |get: fn(&Aggregate) -> Option<bool>| {
                        t.and_then(get) == Some(true) && b.and_then(get) == Some(true)
                    };
                    out.push(Relative {
                        target: target.clone(),
                        base: base.to_string(),
                        step: step.clone(),
                        group: group.id.clone(),
                        clients,
                        qps,
                        ratios: Picked(ratios),
                        paired_repeats: 0,
                        geo_mean: None,
                        ci95: None,
                        verdict: None,
                        unstable: false,
                        client_bound: t.is_some_and(|a| a.client_bound)
                            || b.is_some_and(|a| a.client_bound),
                        settling: t.is_some_and(|a| a.settling) || b.is_some_and(|a| a.settling),
                        qps_test: None,
                        tests: CostTests::default(),
                        below_resolution: coarse,
                        device_reads_confirmed: both(|a| a.device_reads_confirmed),
                        device_writes_confirmed: both(|a| a.device_writes_confirmed),
                        counted_ops: Vec::new(),
                        unmeasurable: None,
                    });
                }
            }
        }
    }
    out
}

fn group_summaries(model: &ReportModel) -> Vec<GroupSummary> {
    let mut out = Vec::new();
    for target in &model.compared {
        for group in &model.step_groups {
            for &clients in &model.clients {
                let rows: Vec<&Relative> = model
                    .relative
                    .iter()
                    .filter(|r| r.target == *target && r.group == group.id && r.clients == clients)
                    .collect();
                if rows.is_empty() {
                    continue;
                }
                let qps: Vec<f64> = rows.iter().filter_map(|r| r.qps).collect();
                let cpu: Vec<f64> = rows
                    .iter()
                    .filter_map(|r| r.ratio(Metric::ServerCpu))
                    .collect();
                let s = stats::summary(&qps);
                let largest = rows
                    .iter()
                    .filter_map(|r| r.qps.filter(|q| *q > 0.0).map(|q| (r, q)))
                    .fold(None::<(&Relative, f64)>, |best, (r, q)| match best {
                        Some((_, bq)) if bq.ln().abs() >= q.ln().abs() => best,
                        _ => Some((r, q)),
                    });
                let count = |v: &str| {
                    rows.iter()
                        .filter(|r| r.verdict.as_deref() == Some(v))
                        .count()
                };
                let cpu_count = |v: &str| {
                    rows.iter()
                        .filter(|r| {
                            (r.tests.get(Metric::ServerCpu)).is_some_and(|t| t.verdict == v)
                        })
                        .count()
                };
                out.push(GroupSummary {
                    target: target.clone(),
                    base: model.base_of(target).to_string(),
                    group: group.id.clone(),
                    title: group.title.clone(),
                    clients,
                    steps: qps.len() as u32,
                    min: s.map(|s| s.0),
                    max: s.map(|s| s.1),
                    avg: s.map(|s| s.2),
                    median: s.map(|s| s.3),
                    server_cpu_us_per_op_median: stats::median(&cpu),
                    largest_change: largest.map(|(r, q)| StepValue {
                        step: r.step.clone(),
                        value: q,
                    }),
                    regressions: count("regression") as u32,
                    improvements: count("improvement") as u32,
                    server_cpu_regressions: cpu_count("regression") as u32,
                    server_cpu_improvements: cpu_count("improvement") as u32,
                    decided: model.decided_among(rows.iter().copied()),
                });
            }
        }
    }
    out
}

/// Per compared target × clients, its decided steps over every group; empty when no step of
/// the report has a verdict.
fn target_decided(model: &ReportModel) -> Vec<TargetDecided> {
    let mut out = Vec::new();
    for target in &model.compared {
        for &clients in &model.clients {
            let rows =
                (model.relative.iter()).filter(|r| r.target == *target && r.clients == clients);
            if let Some(counts) = model.decided_among(rows).filter(|d| d.steps > 0) {
                out.push(TargetDecided {
                    target: target.clone(),
                    base: model.base_of(target).to_string(),
                    clients,
                    counts,
                });
            }
        }
    }
    out
}

/// The step a `.pre` step repeats after the writes: `random-points.pre_range=10` →
/// `random-points_range=10`.
pub fn post_of(pre_step: &str) -> Option<String> {
    pre_step
        .contains(".pre")
        .then(|| pre_step.replacen(".pre", "", 1))
}

/// Post/pre QPS for every target (base included) × clients × `.pre` step with a twin.
fn pre_post(model: &ReportModel) -> Vec<PrePost> {
    let mut out = Vec::new();
    for target in model.shown_targets() {
        for &clients in &model.clients {
            for group in &model.step_groups {
                for pre_step in &group.steps {
                    let Some(step) = post_of(pre_step) else {
                        continue;
                    };
                    let pre = model.aggregate(target, pre_step, clients);
                    let post = model.aggregate(target, &step, clients);
                    if pre.is_none() && post.is_none() {
                        continue;
                    }
                    let pre_qps = pre.and_then(|a| a.qps);
                    let post_qps = post.and_then(|a| a.qps);
                    out.push(PrePost {
                        target: target.to_string(),
                        clients,
                        step,
                        pre_step: pre_step.clone(),
                        pre_qps,
                        post_qps,
                        ratio: ratio(post_qps, pre_qps),
                    });
                }
            }
        }
    }
    out
}

/// The tl;dr's line on a target's whole run at one client count: `pg17 vs pg16: decided 31 of
/// 32 steps: 3 regressions, 5 improvements, 23 unchanged; 1 within noise` (the undecided
/// named only when there are some).
fn decided_line(d: &TargetDecided, clients: Option<u32>) -> String {
    let c = &d.counts;
    let mut line = format!("{} vs {}", d.target, d.base);
    if let Some(n) = clients {
        line.push_str(&format!(" ({})", plural(n as usize, "client")));
    }
    line.push_str(&format!(": {} steps", decided(c.decided, c.steps)));
    if c.decided > 0 {
        line.push_str(&format!(
            ": {}, {}, {} unchanged",
            plural(c.regressions as usize, "regression"),
            plural(c.improvements as usize, "improvement"),
            c.unchanged
        ));
    }
    let none = c.steps - c.decided - c.within_noise - c.unmeasurable;
    let undecided: Vec<String> = [
        (c.within_noise, "within noise"),
        (c.unmeasurable, "unmeasurable"),
        (none, "without a verdict"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    if !undecided.is_empty() {
        line.push_str(&format!("; {}", undecided.join(", ")));
    }
    line
}

fn tldr(model: &ReportModel) -> Vec<String> {
    let several_clients = model.clients.len() > 1;
    let mut out = Vec::new();
    for &clients in &model.clients {
        for target in &model.compared {
            if let Some(d) = model.decided_of(target, clients) {
                out.push(decided_line(d, several_clients.then_some(clients)));
            }
            for group in &model.step_groups {
                let Some(g) = model.group_of(target, &group.id, clients) else {
                    continue;
                };
                let mut line = format!("{target} vs {}, {}", g.base, g.title);
                if several_clients {
                    line.push_str(&format!(" ({})", plural(clients as usize, "client")));
                }
                line.push(':');
                if let Some(d) = g.decided {
                    line.push_str(&format!(" {};", decided(d.decided, d.steps)));
                }
                match (g.median, g.min, g.max) {
                    (Some(med), Some(min), Some(max)) => line.push_str(&format!(
                        " median {} (min {}, max {})",
                        two(med),
                        two(min),
                        two(max)
                    )),
                    _ => {
                        line.push_str(" no step with a relative QPS");
                        out.push(line);
                        continue;
                    }
                }
                if let Some(l) = &g.largest_change {
                    line.push_str(&format!("; largest change: {} {}", l.step, two(l.value)));
                }
                if let Some(cpu) = g.server_cpu_us_per_op_median {
                    line.push_str(&format!("; server CPU/op {}", signed_percent(cpu)));
                }
                if model.max_repeats >= 2 {
                    let counts = |reg: u32, imp: u32| {
                        format!(
                            "{}, {}",
                            plural(reg as usize, "regression"),
                            plural(imp as usize, "improvement")
                        )
                    };
                    line.push_str(&format!(
                        "; verdicts on QPS: {}; on server CPU/op: {}",
                        counts(g.regressions, g.improvements),
                        counts(g.server_cpu_regressions, g.server_cpu_improvements)
                    ));
                }
                out.push(line);
            }
        }
    }
    out
}

/// A target's error as one warning line: without a repeated `target NAME: ` prefix, and when
/// it carries a server log's tail, its first line and the tail's last two lines (the whole
/// error stays in the target's `error`).
fn condensed(name: &str, error: &str) -> String {
    // In a compare the target is `NAME@A`; its error names NAME (names never contain `@`).
    let plain = name.split('@').next().unwrap_or(name);
    let error = error
        .strip_prefix(&format!("target {plain}: "))
        .unwrap_or(error);
    let lines: Vec<&str> = error
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    // A build's error quotes its log's end, where the compiler's own message (the first
    // `error:` line) is what says what went wrong.
    let compiler = lines.iter().skip(1).find(|l| l.contains("error:"));
    match (lines.as_slice(), compiler) {
        ([], _) => "no error recorded".into(),
        ([one], _) => one.to_string(),
        ([first, last], _) => format!("{first} {last}"),
        ([first, .., before, last], Some(e)) if e != before && e != last => {
            format!("{first} … {e} … {last}")
        }
        ([first, .., before, last], _) => format!("{first} … {before} {last}"),
    }
}

/// A second below this fraction of the step's median second is reported as a stall.
const STALL_FRACTION: f64 = 0.5;

/// The engine's codes of a step's errors over its operation types, most frequent first, as
/// `; SQLSTATE 40P01 ×12, …` (empty when none carried a code).
fn error_codes(m: &Measurement) -> String {
    let mut codes: Vec<(&str, u64)> = Vec::new();
    for c in m.operations.iter().flat_map(|o| &o.error_codes) {
        match codes.iter_mut().find(|(code, _)| *code == c.code) {
            Some((_, n)) => *n += c.count,
            None => codes.push((&c.code, c.count)),
        }
    }
    codes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let list: Vec<String> = codes.iter().map(|(c, n)| format!("{c} ×{n}")).collect();
    match list.is_empty() {
        true => String::new(),
        false => format!("; {}", list.join(", ")),
    }
}

/// Every warning of the model, in this order: the run and its targets, failed and erroring
/// steps, stalls, then client- and wake-up-bound steps. Each kind is said once, with the list
/// of the steps it applies to (a step alone keeps the one-line form).
fn warnings(model: &ReportModel, data: &RunData) -> Vec<String> {
    let mut out = run_warnings(model, data);
    let ok = || data.measurements.iter().filter(|m| !m.failed);
    // Failures with the same error are one warning; different errors stay apart.
    let mut failed: Vec<(String, Vec<String>)> = Vec::new();
    for m in data.measurements.iter().filter(|m| m.failed) {
        let error = m
            .error
            .as_deref()
            .unwrap_or("no error recorded")
            .to_string();
        match failed.iter_mut().find(|(e, _)| *e == error) {
            Some((_, places)) => places.push(place(model, m)),
            None => failed.push((error, vec![place(model, m)])),
        }
    }
    for (error, places) in failed {
        out.push(match places.as_slice() {
            [one] => format!("failed: {one}: {error}; left out of the numbers"),
            _ => format!(
                "failed ({}): {error}; left out of the numbers: {}",
                plural(places.len(), "step"),
                places.join("; ")
            ),
        });
    }
    let errors: Vec<(String, String)> = (data.measurements.iter())
        .filter(|m| m.errors.total() > 0)
        .map(|m| (place(model, m), error_counts(m)))
        .collect();
    let what = "statements failed (retried, reconnected, or fatal to their client)";
    out.extend(said_once("errors", what, errors));
    for r in &model.relative {
        if let Some(why) = &r.unmeasurable {
            out.push(format!(
                "unmeasurable: {} vs {}, {} at {}: {why}; no QPS or CPU/op ratio or verdict (longer \
                 steps: --time, or see the errors)",
                r.target,
                r.base,
                r.step,
                plural(r.clients as usize, "client")
            ));
        }
    }
    out.extend(stall_warnings(model));
    let client_bound: Vec<(String, String)> = (ok())
        .filter(|m| m.client_bound)
        .map(|m| (place(model, m), String::new()))
        .collect();
    out.extend(said_once(
        "client-bound",
        "the client may have been the bottleneck: dbdelta is measured as much as the engine",
        client_bound,
    ));
    let unresolved: Vec<String> = (ok())
        .filter(|m| !m.below_resolution.is_empty())
        .map(|m| format!("{}: {}", place(model, m), m.below_resolution.join(", ")))
        .collect();
    if !unresolved.is_empty() {
        out.push(format!(
            "below resolution ({}): the step's CPU sample could not cover its operations (see the notes), so \
             these costs are stored as no number and get no ratio or verdict: {}",
            plural(unresolved.len(), "step"),
            unresolved.join("; ")
        ));
    }
    let wakeup: Vec<&Measurement> = ok().filter(|m| m.wakeup_bound).collect();
    match wakeup.as_slice() {
        [] => {}
        [m] => out.push(wakeup_warning(&place(model, m), m)),
        several => out.push(wakeup_warnings(model, several)),
    }
    out.extend(settling_warnings(model, data));
    out
}

/// `3 errors (retryable 3, reconnect 0, fatal 0)` and the error codes seen.
fn error_counts(m: &Measurement) -> String {
    let e = m.errors;
    format!(
        "{} (retryable {}, reconnect {}, fatal {}){}",
        plural(e.total() as usize, "error"),
        e.retryable,
        e.reconnect,
        e.fatal,
        error_codes(m)
    )
}

/// One warning of a kind for all the places it applies to: `kind: place: detail` for one place,
/// else `kind (N steps): what; place: detail; …`.
fn said_once(kind: &str, what: &str, entries: Vec<(String, String)>) -> Option<String> {
    let each = |(place, detail): &(String, String)| match detail.is_empty() {
        true => place.clone(),
        false => format!("{place}: {detail}"),
    };
    match entries.as_slice() {
        [] => None,
        [one] if one.1.is_empty() => Some(format!("{kind}: {}: {what}", one.0)),
        [one] => Some(format!("{kind}: {}", each(one))),
        all => Some(format!(
            "{kind} ({}): {what}: {}",
            plural(all.len(), "step"),
            all.iter().map(each).collect::<Vec<_>>().join("; ")
        )),
    }
}

/// The settling guard found the server of this measurement still settling.
fn settling(m: &Measurement) -> bool {
    m.settling.as_ref().is_some_and(|s| s.settling)
}

/// A warning per cell (target × clients × repeat) whose server was still settling before its
/// steps, with the evidence and how long to wait.
fn settling_warnings(model: &ReportModel, data: &RunData) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for m in data
        .measurements
        .iter()
        .filter(|m| settling(m) && !m.failed)
    {
        if !seen.insert((&m.target, m.clients, m.repeat)) {
            continue;
        }
        let s = m.settling.as_ref().expect("settling(m)");
        let mut place = format!("{} at {}", m.target, plural(m.clients as usize, "client"));
        if model.max_repeats > 1 || m.repeat > 1 {
            place.push_str(&format!(", repeat {}", m.repeat));
        }
        out.push(format!("settling: {place}: {}", settling_note(s)));
    }
    out
}

/// What the idle server did and how long to wait: "mysqld wrote 73.0 MB/s and had 1,012 dirty
/// pages draining at 200/s while idle ...: its dirty pages alone needed ≈ 6 s more: wait at
/// least that much longer (postwrite_secs = 5)" (a lower bound: its other writes may last
/// longer). Without a drain rate there is no estimate, and it says so.
fn settling_note(s: &Settling) -> String {
    let postwrite = format!("postwrite_secs = {}", s.postwrite_secs);
    let wait = match s.wait_secs {
        Some(w) => format!(
            "its dirty pages alone needed ≈ {:.0} s more: wait at least that much longer \
             ({postwrite})",
            w.ceil()
        ),
        None => format!(
            "still busy after {postwrite}: no estimate of how long it needs; \
             try a longer postwrite_secs"
        ),
    };
    format!(
        "{} {} while idle for {:.0} s before the steps, so its steps were measured while it \
         settled: {wait}",
        s.process,
        and_list(&s.reasons),
        s.probe_secs
    )
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Where a measurement was taken, as [`where_taken`] says it.
fn place(model: &ReportModel, m: &Measurement) -> String {
    where_taken(model, &m.target, &m.step, m.clients, m.repeat)
}

/// `target step at N clients`, with the repeat when the run has repeats (or it is not the
/// first).
fn where_taken(model: &ReportModel, target: &str, step: &str, clients: u32, repeat: u32) -> String {
    let mut s = format!("{target} {step} at {}", plural(clients as usize, "client"));
    if model.max_repeats > 1 || repeat > 1 {
        s.push_str(&format!(", repeat {repeat}"));
    }
    s
}

/// Warnings about the run as a whole: incomplete, failed targets (with their logs) and
/// measurements of targets the run does not list.
fn run_warnings(model: &ReportModel, data: &RunData) -> Vec<String> {
    let mut out = Vec::new();
    for t in &model.targets {
        if let Some(why) = &t.unobserved {
            out.push(format!(
                "{}: server CPU, context switches, process IO and memory are n/a: its processes \
                 were not found on this host: {why}",
                t.name
            ));
        }
    }
    if !data.run.complete {
        let finished: BTreeSet<&str> = data
            .measurements
            .iter()
            .filter(|m| !m.failed)
            .map(|m| m.step.as_str())
            .collect();
        out.push(format!(
            "run is incomplete (interrupted?): showing the {} that finished",
            plural(finished.len(), "step")
        ));
    }
    for t in &data.targets {
        if t.failed {
            let mut w = format!(
                "target {} failed: {}",
                t.name,
                t.error
                    .as_deref()
                    .map_or("no error recorded".into(), |e| condensed(&t.name, e))
            );
            if let Some(log) = &t.log_path {
                let which = match log.ends_with("build.log") {
                    true => "build log",
                    false => "server log",
                };
                w.push_str(&format!(" ({which}: {log})"));
            }
            if t.name == model.base && model.compare.is_none() {
                w.push_str(
                    "; it is the base, so relative numbers are n/a (pick another with --base)",
                );
            }
            out.push(w);
        }
    }
    let known: BTreeSet<&str> = data.targets.iter().map(|t| t.name.as_str()).collect();
    let unknown: BTreeSet<&str> = data
        .measurements
        .iter()
        .map(|m| m.target.as_str())
        .filter(|t| !known.contains(t))
        .collect();
    for t in unknown {
        out.push(format!(
            "measurements name target {t}, which the run does not list: they appear only in the JSON measurements"
        ));
    }
    out
}

/// One warning for the recorded series whose worst second fell below [`STALL_FRACTION`] of
/// their median second.
fn stall_warnings(model: &ReportModel) -> Option<String> {
    let mut stalls = Vec::new();
    for s in &model.series {
        if s.ops_per_sec_median > 0.0 && s.ops_per_sec_min < STALL_FRACTION * s.ops_per_sec_median {
            let place = where_taken(model, &s.target, &s.step, s.clients, s.repeat);
            let detail = format!(
                "worst second {:.0} ops/s, {:.0}% of the median second ({:.0} ops/s)",
                s.ops_per_sec_min,
                100.0 * s.ops_per_sec_min / s.ops_per_sec_median,
                s.ops_per_sec_median
            );
            stalls.push((place, detail));
        }
    }
    let what = format!(
        "throughput fell below {:.0}% of the step's median second",
        100.0 * STALL_FRACTION
    );
    said_once("stall", &what, stalls)
}

/// Why a step is wake-up-bound and what to do, said once for all of them.
const WAKEUP_WHY: &str = ", so the result measures cross-CPU wake-ups \
    (on a VM, the hypervisor's) and where the scheduler put the two more than the engine; to measure the engine, \
    run both on one CPU with placement = \"shared\" (or set server_cpus and client_cpus)";

/// The numbers behind a wake-up-bound flag: the client's and server's busy shares, their CPU
/// per query, the QPS and the CPUs each was seen on.
fn wakeup_numbers(m: &Measurement) -> [String; 7] {
    let busy = |cpu| crate::cpus::busy_share(cpu, m.qps, m.clients);
    let pct = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{:.0}%", v * 100.0));
    let us = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{v:.1} µs"));
    let seen = |v: &Option<String>| v.clone().unwrap_or_else(|| "n/a".into());
    let (client, server) = (
        m.values.get(Metric::ClientCpu),
        m.values.get(Metric::ServerCpu),
    );
    [
        pct(busy(client)),
        pct(busy(server)),
        us(client),
        us(server),
        m.qps.map_or("n/a".into(), |q| format!("{q:.0}")),
        seen(&m.server_cpus_seen),
        seen(&m.client_cpus_seen),
    ]
}

/// One wake-up-bound warning for several measurements, on one line: how many (and of how
/// many steps), one of them, and the fix; the csv and json reports flag each.
fn wakeup_warnings(model: &ReportModel, all: &[&Measurement]) -> String {
    let steps: BTreeSet<&str> = all.iter().map(|m| m.step.as_str()).collect();
    format!(
        "wake-up-bound ({} of {}, e.g. {}): each query is a short round trip between threads on \
         different CPUs, so these measure cross-CPU wake-ups more than the engine; fix: placement = \"shared\" \
         (or set server_cpus and client_cpus); wakeup_bound in --format csv or json flags each",
        plural(all.len(), "measurement"),
        plural(steps.len(), "step"),
        place(model, all[0])
    )
}

/// The wake-up-bound warning of one measurement, with the numbers behind it.
fn wakeup_warning(place: &str, m: &Measurement) -> String {
    let [c, s, cu, su, qps, scpus, ccpus] = wakeup_numbers(m);
    format!(
        "wake-up-bound: {place}: each query is a short round trip (the client was on CPU {c} and the \
         server {s} of its wall time: client {cu} + server {su} CPU per query at {qps} QPS) between threads not confined \
         to one CPU (server seen on CPUs {scpus}, client on {ccpus}){WAKEUP_WHY}"
    )
}

fn notes(model: &ReportModel, data: &RunData) -> Vec<String> {
    let mut out = vec![
        "Relative QPS = QPS(target) / QPS(base) for the same step and client count; > 1 is faster than the base. \
         Relative cost (CPU/op, context switches/op, reads/op, KB read/op, KB written/op) = target / base; < 1 is cheaper. \
         0/0 = 1 (unless both are too coarse to compare: ~); x/0 and missing values are n/a."
            .to_string(),
        "Repeats are averaged: the arithmetic mean over non-failed repeats of QPS, each per-op value and each latency \
         percentile; peak RSS and database size are the largest over the repeats."
            .to_string(),
        "Group rows min/max/avg/median summarise the relative QPS of the group's steps (avg = arithmetic mean); \
         they are plain numbers, a summary is no verdict."
            .to_string(),
        marks_note(),
    ];
    out.extend(verdict_notes(model));
    out.extend(resolution_notes(model));
    if data
        .measurements
        .iter()
        .any(|m| m.values.get(Metric::ScanKrows).is_some())
    {
        out.push(
            "scan: one full-table scan per event that returns no row; besides QPS it reports thousands of rows \
             scanned per second per client = rows per table / 1000 ÷ mean event latency in s (the reference's \
             number). Relative QPS of scan stays QPS-based: at equal client counts it matches the relative \
             rows/s (a closed loop runs about clients ÷ mean latency events per second)."
                .to_string(),
        );
    }
    if !model.pre_post.is_empty() {
        out.push(
            "pre = true: point-1 and range-1 are the .pre steps, run after the load and its cleanup and before the \
             writes; point-2 and range-2 the same reads after the writes. Pre/post = QPS(after the writes) / \
             QPS(.pre) per target; < 1 means the writes left the database slower to read."
                .to_string(),
        );
    }
    if data
        .measurements
        .iter()
        .any(|m| !m.warm && rule(m) == "adaptive")
    {
        out.push(
            "Adaptive steps (duration = \"adaptive\"): after the warm-up the runner counts the ops of each whole second; \
             from min_secs on it ends the step at the first whole second where the 95% confidence interval of the mean \
             of those per-second counts is within ±precision of it, else at max_secs. The interval is t·s/√n_eff, with \
             n_eff = n(1−ρ)/(1+ρ) for the lag-1 autocorrelation ρ (clamped at 0) and Student's t with n_eff−1 degrees of \
             freedom. The ± shown is recomputed from the stored per-second series with the same formula (the step \
             length table shows the mean seconds and the worst ± over repeats); \"max\" marks steps with a repeat that \
             ran to its maximum without reaching the target. Warm steps keep their fixed length."
                .to_string(),
        );
    }
    out.extend(in_process_notes(data));
    out
}

/// One note per engine family that runs inside dbdelta (SQLite), naming its targets.
fn in_process_notes(data: &RunData) -> Vec<String> {
    let mut families: Vec<&str> = Vec::new();
    for t in data.targets.iter().filter(|t| in_process(&t.engine)) {
        if !families.contains(&t.engine.as_str()) {
            families.push(&t.engine);
        }
    }
    (families.into_iter())
        .filter_map(|engine| {
            let title = crate::engine::EngineKind::stored(engine)?.family().title();
            let names: Vec<&str> = (data.targets.iter())
                .filter(|t| t.engine == engine)
                .map(|t| t.name.as_str())
                .collect();
            Some(format!(
                "{title} runs inside dbdelta: server CPU is dbdelta's own process CPU (engine + client); client CPU cannot be \
                 separated, so no {title} step is flagged client-bound ({}).",
                names.join(", ")
            ))
        })
        .collect()
}

/// How relative cells are marked and coloured: by verdicts only, naming the metrics that get one.
fn marks_note() -> String {
    let judged: Vec<&str> = (METRICS.iter())
        .filter(|d| d.verdict.is_some())
        .filter_map(|d| d.cost_table.map(|t| t.title))
        .collect();
    format!(
        "A relative cell is coloured (green better, red worse) and marked \"+\" (above 1) or \"-\" (below 1) only \
         where the statistics call a change for its metric: the QPS verdict for relative QPS, and the cost verdicts \
         for {}. Every other relative number is plain: within noise, fewer than 2 repeats, or a metric without \
         a verdict (client CPU, context switches, device IO and the like).",
        judged.join(", ")
    )
}

/// The verdict notes' sentence on the test: moderated or not, and the looks of an auto run.
fn test_sentence(m: &Method) -> String {
    let mut s = if m.test == "moderated" {
        "A moderated t test of the mean of ln r_i against 0 gives each step a p-value: each step's variance is \
         pooled with its report group's (empirical Bayes, as limma does: a prior fitted to the variances of the \
         group's steps, worth d0 degrees of freedom, is averaged with the step's own n−1, never lowers it and \
         at most doubles its degrees of freedom), so 2–3 repeats borrow the noise level of the steps of the same \
         kind measured on the same machine; a group with fewer than 4 steps, and a step whose two sides ran \
         beside other processes' CPU more than a core apart (\"uneven load\"), use Student's t."
            .to_string()
    } else {
        "Student's t test of the mean of ln r_i against 0 (n−1 degrees of freedom) gives each step a p-value."
            .to_string()
    };
    if m.looks > 1 {
        s.push_str(&format!(
            " The run added repeats for undecided steps (repeats = \"auto\"), so it could look at a step {} times: \
             every p-value is multiplied by {} before the adjustment (Bonferroni over the looks), which keeps the \
             error rate whenever the run stopped.",
            m.looks, m.looks
        ));
    }
    s
}

/// How verdicts are made, with this report's parameters (docs/verdicts.md).
fn verdict_notes(model: &ReportModel) -> Vec<String> {
    let with_test = model
        .relative
        .iter()
        .filter(|r| r.qps_test.is_some())
        .count();
    if model.method.test == "none" {
        return vec![
            "No verdict on QPS or CPU/op: the two sides come from separate runs, whose repeats are not pairs \
             (see Compare above)."
                .to_string(),
        ];
    }
    if with_test == 0 {
        // The report says so once, near the top (`layout`).
        return Vec::new();
    }
    let m = &model.method;
    let (q, eff, power) = (m.fdr_q, percent(m.min_effect), percent(m.power));
    let source = match m.min_effect_source.as_str() {
        "lab" => "the lab's min_effect",
        "--min-effect" => "set by --min-effect",
        _ => "the default",
    };
    let test = test_sentence(m);
    let mut out = vec![
        format!(
            "Verdicts on QPS (> 1 is better) and, second, on server CPU/op (< 1 is better): per step, the ratios \
             r_i = value(target, repeat i) / value(base, repeat i), repeats paired by number, failed repeats left \
             out. {test} A family is one compared target × client count × metric over all its steps: \
             Benjamini–Hochberg adjusts its p-values (q) and selects the steps with q ≤ {q}, which keeps the \
             expected share of false changes among the selected at {q} and, when nothing changed, the chance of \
             any false verdict in the family at {q}. A selected step is a regression or an improvement when its \
             whole adjusted interval (below) lies at least a factor of 1 + min effect away from 1 (min effect \
             {eff}, {source}): the change is at least that large with the interval's confidence, not only in its \
             estimate. Otherwise it is within noise (\"may be < {eff}\" when selected but the interval reaches \
             inside; else \"a change below D could not be seen\": D is the change that would have been called \
             with {power} probability at the noise the run measured, the interval's level and the min effect)."
        ),
        format!(
            "The interval beside a verdict is false-coverage-rate adjusted (Benjamini–Yekutieli): exp(m ± t·s/√n) \
             at level 1 − R·{q}/(m·looks) for R steps selected of the family's m (at least 1 − {q}/(m·looks)), where \
             m is the mean of ln r_i and s the standard deviation the test uses. It excludes 1 exactly when the step is selected and lies beyond \
             the minimum effect exactly when the step is a change, so it agrees with the verdict. The unadjusted 95% interval of a step on its own is in the JSON (ci95) and the CSV \
             (*_ci95_*): over dozens of steps some of those exclude 1 by chance, which is why verdicts do not use it."
        ),
        format!(
            "Unstable: the largest and smallest paired ratio differ by a larger factor than the effect \
             (max r / min r > max(g, 1/g) for the geometric mean g) and than 1 + {eff}: the repeats disagree more \
             than the change they measure, so read that verdict with care."
        ),
        "Assumptions: the log ratios of a step are independent across repeats and roughly normal (a few slow \
         repeats widen the interval rather than fake a change). Targets run interleaved (A B A B) and ratios are \
         paired by repeat, so drift of the machine over the run cancels; what differs within a repeat (the order \
         of A and B) does not. The steps of a family share the machine, so their tests are positively dependent, \
         under which Benjamini–Hochberg keeps its guarantee."
            .to_string(),
    ];
    if with_test < model.relative.len() {
        out.push("Steps with fewer than 2 paired repeats have no verdict.".to_string());
    }
    out
}

/// Within-step noise, counter resolution (`~`) and device IO attribution.
fn resolution_notes(model: &ReportModel) -> Vec<String> {
    let m = &model.method;
    let mut out = vec![format!(
        "Within-step noise, from each repeat's per-second QPS (whole seconds only): the coefficient of variation \
         (CV) and the precision ±p = the half-width of the 95% interval of the mean per-second QPS relative to \
         the mean, with the seconds counted as n·(1−ρ)/(1+ρ) for their lag-1 autocorrelation ρ. Over repeats: the \
         fewest seconds, the median CV and the median precision. Too short: fewer than {} whole seconds; too noisy: \
         ±p wider than the minimum effect ({}), so one repeat cannot resolve a change that small. Verdicts come \
         from the repeats either way; these flags say how far each single number can be trusted.",
        m.min_step_seconds,
        percent(m.min_effect)
    )];
    if model
        .relative
        .iter()
        .any(|r| !r.below_resolution.is_empty())
    {
        out.push(format!(
            "~: both sides' totals are below the resolution of their counter, fewer than {} units per repeat: a \
             server's CPU clock ticks ({} ms; /proc counts CPU time in ticks; SQLite's and dbdelta's own CPU \
             come from getrusage in µs), context switches, or device reads and writes (also for the KB they \
             moved). Their ratio is counting noise, not a finding (JSON null, named in below_resolution; CSV \
             empty). A step whose server CPU is that coarse gets no CPU verdict.",
            m.resolution_units,
            m.clock_tick_us / 1000.0
        ));
    }
    if (model.measurements.iter()).any(|r| !r.below_resolution.is_empty()) {
        out.push(format!(
            "~ also marks a cost its step's sample could not cover: the window from the opening /proc snapshot to \
             the closing one missed more than 1/{} of the operations the cost is divided by, or was shorter than {} \
             clock ticks ({} ms), too short for a CPU time. Such a value is stored as NULL and named in the \
             measurement's below_resolution (see the warnings): it is no number, and gets no ratio, no verdict \
             and no place in the tl;dr or the group summaries.",
            m.resolution_units,
            m.resolution_units,
            m.resolution_units * m.clock_tick_us / 1000.0
        ));
    }
    if model
        .aggregates
        .iter()
        .any(|a| a.get(Metric::ReadKb).is_some())
    {
        out.push(
            "Device IO (reads/op, KB read/op, KB written/op) is the data directory's whole device (/proc/diskstats): \
             every process on that disk, not only the engine. A relative device value is a finding about the \
             engine only when the engine's own IO (/proc/PID/io) confirms the device's on both sides (within a \
             factor of 2); otherwise it is shown in parentheses, as the device's."
                .to_string(),
        );
    }
    out
}

fn diff_maps(
    base: &BTreeMap<String, String>,
    target: &BTreeMap<String, String>,
) -> Vec<Difference> {
    let keys: BTreeSet<&String> = base.keys().chain(target.keys()).collect();
    keys.into_iter()
        .filter(|k| base.get(*k) != target.get(*k))
        .map(|k| Difference {
            key: k.clone(),
            base: base.get(k).cloned(),
            target: target.get(k).cloned(),
        })
        .collect()
}

fn config_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

/// `t` with its differences from `base` (none when `base` is `None`: `t` is a base or not
/// compared). `is_base`, `relative_to` and `run_id` are the caller's to set.
/// The engine as a reader names it, from the stored data alone: the stored engine is the
/// family (`mysql` for MySQL and MariaDB alike), so a server whose own version string says
/// `MariaDB` is named `mariadb`, and a target whose tables dbdelta created with
/// `ENGINE=ROCKSDB` (its recorded `table-options` line) says so.
pub fn engine_label(t: &TargetInfo) -> String {
    let mariadb = t
        .server_version
        .as_deref()
        .is_some_and(|v| v.contains("MariaDB"));
    let product = if mariadb {
        "mariadb"
    } else {
        t.engine.as_str()
    };
    let rocksdb = t.config_text.lines().any(|l| {
        let l = l.trim().to_ascii_lowercase().replace(' ', "");
        l.starts_with("table-options=") && l.contains("engine=rocksdb")
    });
    if rocksdb {
        format!("{product} (myrocks)")
    } else {
        product.to_string()
    }
}

fn target_summary(t: &TargetInfo, base: Option<&TargetInfo>) -> TargetSummary {
    let (config_diff, settings_diff, env_diff) = match base {
        None => (Vec::new(), Vec::new(), Vec::new()),
        Some(base) => {
            let (bl, tl) = (
                config_lines(&base.config_text),
                config_lines(&t.config_text),
            );
            let mut config: Vec<String> = tl
                .iter()
                .filter(|l| !bl.contains(l))
                .map(|l| format!("+ {l}"))
                .collect();
            config.extend(
                bl.iter()
                    .filter(|l| !tl.contains(l))
                    .map(|l| format!("- {l}")),
            );
            let mut settings =
                if t.engine == base.engine && !t.settings.is_empty() && !base.settings.is_empty() {
                    diff_maps(&base.settings, &t.settings)
                } else {
                    Vec::new()
                };
            let set = settings::keys_set(&format!("{}\n{}", base.config_text, t.config_text));
            settings::order(&mut settings, &set);
            (config, settings, diff_maps(&base.env, &t.env))
        }
    };
    TargetSummary {
        name: t.name.clone(),
        engine: engine_label(t),
        server_version: t.server_version.clone(),
        provenance: t.provenance.clone(),
        config_name: t.config_name.clone(),
        failed: t.failed,
        error: t.error.clone(),
        log_path: t.log_path.clone(),
        is_base: base.is_none(),
        relative_to: None,
        run_id: String::new(),
        env: t.env.clone(),
        config_diff,
        settings_diff,
        env_diff,
        placement: if t.placement.is_empty() {
            "os".into()
        } else {
            t.placement.clone()
        },
        server_cpus: t.server_cpus.clone(),
        client_cpus: t.client_cpus.clone(),
        build: t.build.clone(),
        connect: t.connect.clone(),
        unobserved: t.unobserved.clone(),
        sweep: t.sweep.clone(),
    }
}

/// The loads per target × suite × clients, averaged over repeats; loads copied from a saved
/// one (`reuse_load`) are a row of their own: a copy's seconds are not a load's.
fn loads(data: &RunData) -> Vec<LoadSummary> {
    let mut keys: Vec<(&str, &str, u32, bool)> = Vec::new();
    for l in &data.loads {
        let k = (
            l.target.as_str(),
            l.suite.as_str(),
            l.clients,
            l.reused.is_some(),
        );
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(target, suite, clients, reused)| {
            let ls: Vec<_> = (data.loads.iter())
                .filter(|l| l.target == target && l.suite == suite && l.clients == clients)
                .filter(|l| l.reused.is_some() == reused)
                .collect();
            let n = ls.len() as f64;
            LoadSummary {
                target: target.to_string(),
                suite: suite.to_string(),
                clients,
                repeats: ls.len() as u32,
                tables: ls[0].tables,
                rows_per_table: ls[0].rows_per_table,
                load_secs: ls.iter().map(|l| l.load_secs).sum::<f64>() / n,
                rows_per_sec: mean_known(ls.iter().map(|l| l.rows_per_sec)),
                index_secs: ls.iter().map(|l| l.index_secs).sum::<f64>() / n,
                db_size_bytes: mean_known(ls.iter().map(|l| l.db_size_bytes.map(|b| b as f64)))
                    .map(|b| b.round() as u64),
                reused: ls[0].reused.clone(),
            }
        })
        .collect()
}

fn series(data: &RunData) -> Vec<SeriesSummary> {
    let mut keys: Vec<(&str, &str, u32, u32)> = Vec::new();
    for s in &data.series {
        let k = (s.target.as_str(), s.step.as_str(), s.clients, s.repeat);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(target, step, clients, repeat)| {
            let ss: Vec<_> = data
                .series
                .iter()
                .filter(|s| {
                    s.target == target
                        && s.step == step
                        && s.clients == clients
                        && s.repeat == repeat
                })
                .collect();
            let ops: Vec<f64> = ss.iter().map(|s| s.ops as f64).collect();
            let (min, max, _, median) = stats::summary(&ops).expect("at least one sample");
            SeriesSummary {
                target: target.to_string(),
                step: step.to_string(),
                clients,
                repeat,
                seconds: ss.len() as u32,
                ops_per_sec_min: min,
                ops_per_sec_median: median,
                ops_per_sec_max: max,
                p99_us_max: ss.iter().filter_map(|s| s.p99_us).reduce(f64::max),
                ops_per_sec: {
                    let mut points: Vec<(u32, f64)> =
                        ss.iter().map(|s| (s.second, s.ops as f64)).collect();
                    points.sort_by_key(|p| p.0);
                    points
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{ErrorCodeCount, OpMeasurement};

    #[test]
    fn error_codes_are_summed_over_operation_types_most_frequent_first() {
        let op = |codes: &[(&str, u64)]| OpMeasurement {
            error_codes: codes
                .iter()
                .map(|(c, n)| ErrorCodeCount {
                    code: c.to_string(),
                    count: *n,
                })
                .collect(),
            ..OpMeasurement::default()
        };
        let m = Measurement {
            operations: vec![
                op(&[("SQLSTATE 23505", 2), ("SQLSTATE 40P01", 1)]),
                op(&[("SQLSTATE 40P01", 4)]),
            ],
            ..Measurement::default()
        };
        assert_eq!(error_codes(&m), "; SQLSTATE 40P01 ×5, SQLSTATE 23505 ×2");
        assert_eq!(error_codes(&Measurement::default()), "");
    }

    #[test]
    fn a_log_tail_is_condensed_to_its_last_lines() {
        assert_eq!(condensed("x", "target x: refused"), "refused");
        assert_eq!(condensed("x@B", "target x: refused"), "refused");
        assert_eq!(
            condensed(
                "pg",
                "target pg: did not start; last lines of its log a.log:\n\nok\nok\n\nLOG:  bad value\nFATAL: errors\n"
            ),
            "did not start; last lines of its log a.log: … LOG:  bad value FATAL: errors"
        );
        assert_eq!(condensed("pg", "a\nb"), "a b");
        assert_eq!(
            condensed(
                "bad",
                "build failed at configure; last lines of build.log:\ngcc -O2 -fno-x conftest.c\n\
                 gcc: error: unrecognized command-line option '-fno-x'\nconfigure:4038: $? = 1\n\
                 configure:4083: error: C compiler cannot create executables\nSee `config.log'"
            ),
            "build failed at configure; last lines of build.log: … gcc: error: unrecognized \
             command-line option '-fno-x' … See `config.log'"
        );
    }

    #[test]
    fn mariadb_and_myrocks_are_named_in_the_engine_column() {
        let t = |engine: &str, version: &str, config: &str| TargetInfo {
            engine: engine.into(),
            server_version: Some(version.into()),
            config_text: config.into(),
            ..Default::default()
        };
        assert_eq!(engine_label(&t("mysql", "MySQL 8.0.31", "")), "mysql");
        assert_eq!(engine_label(&t("mysql", "11.4.5-MariaDB", "")), "mariadb");
        let rocks = "[mysqld]\nplugin-load-add = ha_rocksdb.so\n[dbdelta]\ntable-options = ENGINE=ROCKSDB\n";
        assert_eq!(
            engine_label(&t("mysql", "10.11.19-MariaDB-0+deb12u1", rocks)),
            "mariadb (myrocks)"
        );
        // The plugin alone does not make the tables MyRocks.
        let plugin = "[mysqld]\nplugin-load-add = ha_rocksdb.so\n";
        assert_eq!(
            engine_label(&t("mysql", "10.11.19-MariaDB", plugin)),
            "mariadb"
        );
        assert_eq!(
            engine_label(&t("postgres", "PostgreSQL 17.2", "")),
            "postgres"
        );
    }
}
