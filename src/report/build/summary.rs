//! Numbers across targets: each aggregate relative to the base, the group summaries, what
//! each target decided, pre/post pairs and the tl;dr sentences built from them.
//!
//! Must not: aggregate repeats (that is `aggregate`), warn, or do any I/O.

use super::aggregate::repeats_of;
use crate::report::fmt::{decided, plural, signed_percent, two};
use crate::report::model::*;
use crate::report::resolution;
use crate::results::metrics::{METRICS, Picked};
use crate::results::{Measurement, Metric, Values};
use crate::stats::{self, ratio};

/// One row per compared target × step × clients with the ratios of the aggregates (cost
/// ratios below resolution left out, see [`resolution::below_resolution`]); verdicts are
/// `verdicts::apply`'s.
pub(super) fn relative(model: &ReportModel, ms: &[Measurement]) -> Vec<Relative> {
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
                        in_process: (model.targets.iter())
                            .find(|t| t.name == name)
                            .is_some_and(|t| t.in_process),
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

pub(super) fn group_summaries(model: &ReportModel) -> Vec<GroupSummary> {
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
pub(super) fn target_decided(model: &ReportModel) -> Vec<TargetDecided> {
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
pub(super) fn pre_post(model: &ReportModel) -> Vec<PrePost> {
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

pub(super) fn tldr(model: &ReportModel) -> Vec<String> {
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
