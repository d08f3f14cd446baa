//! The report's method notes: in-process engines, marks, the test used, verdicts and
//! resolution, and the configuration differences they mention.
//!
//! Must not: warn (that is `warnings`), change a number, or do any I/O.

use std::collections::{BTreeMap, BTreeSet};

use super::aggregate::rule;
use crate::report::fmt::percent;
use crate::report::model::*;
use crate::results::metrics::METRICS;
use crate::results::{Metric, RunData};

pub(super) fn notes(model: &ReportModel, data: &RunData) -> Vec<String> {
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
    let mut titles: Vec<&str> = Vec::new();
    for t in data.targets.iter().filter(|t| t.facts.embedded) {
        if !titles.contains(&t.facts.title.as_str()) {
            titles.push(&t.facts.title);
        }
    }
    (titles.into_iter())
        .map(|title| {
            let names: Vec<&str> = (data.targets.iter())
                .filter(|t| t.facts.embedded && t.facts.title == title)
                .map(|t| t.name.as_str())
                .collect();
            format!(
                "{title} runs inside dbdelta: server CPU is dbdelta's own process CPU (engine + client); client CPU cannot be \
                 separated, so no {title} step is flagged client-bound ({}).",
                names.join(", ")
            )
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

pub(super) fn diff_maps(
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

pub(super) fn config_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}
