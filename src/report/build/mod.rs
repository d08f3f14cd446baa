//! Computes the [`ReportModel`] from a run's records: aggregation over repeats, relative
//! numbers, group statistics, verdicts, tl;dr sentences, warnings and method notes.
//!
//! Owns every number and sentence a report shows. It must not format tables, pick colours or
//! do any I/O (files, terminal, clock, environment): same `RunData` in, same model out.
//!
//! This file keeps the entry points (`build`, `build_with`) and the run's summaries;
//! `aggregate` (repeats), `summary` (relative numbers, groups, tl;dr), `warnings`, `notes`
//! and `targets` (per-target summaries, loads, series) compute the rest.

mod aggregate;
pub(super) mod compare;
mod notes;
mod summary;
mod targets;
#[cfg(test)]
mod tests;
mod warnings;

use std::collections::{BTreeMap, BTreeSet};

use super::fmt::plural;
use super::model::*;
use super::resolution;
use super::suites::SECTIONS;
use super::{Options, ReportError, crossover, verdicts};
use crate::results::RunData;
use crate::stats;
use crate::suites::SuiteKind;
use aggregate::{aggregates, measurement_row, step_groups};
use notes::notes;
use summary::{group_summaries, pre_post, relative, target_decided, tldr};
pub use targets::engine_label;
use targets::{loads, series, target_summary};
use warnings::warnings;

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
    verdicts::apply(model, (&data.measurements, &data.floors));
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
