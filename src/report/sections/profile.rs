//! CPU profiles in reports: each profiled step's folded stacks scaled to CPU per operation,
//! the top functions per target, the functions that changed most against the base, and the
//! flame graphs (plain and differential, drawn by `flame`).
//!
//! Owns the per-operation normalisation (a profile's samples are scaled so that they add up
//! to the step's measured engine CPU per operation, so neither perf's start-up nor its rate
//! changes the scale). Must not: read files or run perf (the
//! runner stored the folded stacks), or invent a CPU figure that was not measured.

use std::collections::{BTreeSet, HashMap};

use super::super::doc::{Block, Cell, ChartRef, Grid, Tone};
use super::super::flame;
use super::super::model::{
    FunctionChange, FunctionCost, ProfileDiff, ProfileReport, ReportModel, StepProfiles,
    TargetProfile, TargetSummary,
};
use crate::profiler::{self, Folded};
use crate::results::{Measurement, Metric, Profiling, RunData};

/// Functions listed per target and per comparison.
pub const TOP: usize = 5;
/// A target whose share of symbol-less samples reaches this gets a note.
const UNRESOLVED_NOTE: f64 = 0.05;

/// The profiles of a run, `None` when it did not ask for them.
pub fn report(data: &RunData, targets: &[TargetSummary]) -> Option<ProfileReport> {
    let profiling = data.run.profiling.as_ref();
    let any = data.measurements.iter().any(|m| m.profile.is_some());
    if profiling.is_none() && !any {
        return None;
    }
    let mut steps = Vec::new();
    for (clients, step) in step_order(&data.measurements) {
        let profiles: Vec<TargetProfile> = targets
            .iter()
            .filter_map(|t| target_profile(&data.measurements, &t.name, &step, clients))
            .collect();
        if profiles.is_empty() {
            continue;
        }
        let diffs = targets
            .iter()
            .filter_map(|t| {
                let base = t.relative_to.as_ref()?;
                let a = profiles.iter().find(|p| &p.target == base)?;
                let b = profiles.iter().find(|p| p.target == t.name)?;
                (!a.stacks.is_empty() && !b.stacks.is_empty()).then(|| diff(a, b))
            })
            .collect();
        steps.push(StepProfiles {
            clients,
            step,
            targets: profiles,
            diffs,
        });
    }
    Some(ProfileReport {
        method: profiling.map(method).unwrap_or_else(|| "perf".into()),
        unavailable: profiling.and_then(|p| p.unavailable.clone()),
        steps,
    })
}

fn method(p: &Profiling) -> String {
    let perf = p.perf.as_deref().unwrap_or("perf");
    let scope = if p.system_wide {
        "-a (every CPU; the engine's samples kept)"
    } else {
        "-p/-t (attached to the engine's processes or threads)"
    };
    format!(
        "perf record {scope} -e cpu-clock -F {} --call-graph {} ({perf})",
        p.hz, p.call_graph
    )
}

/// Client counts × steps with a profile, in client then run order.
fn step_order(ms: &[Measurement]) -> Vec<(u32, String)> {
    let seen: BTreeSet<(u32, u32, &str)> = (ms.iter())
        .filter(|m| m.profile.is_some() && !m.warm)
        .map(|m| (m.clients, m.step_index, m.step.as_str()))
        .collect();
    let mut out: Vec<(u32, String)> = Vec::new();
    for (c, _, s) in seen {
        if !out.iter().any(|(oc, os)| *oc == c && os == s) {
            out.push((c, s.to_string()));
        }
    }
    out
}

/// One target's profile of a step over its repeats: each repeat's samples scaled to its
/// measured CPU per operation, then averaged over the repeats.
fn target_profile(
    ms: &[Measurement],
    target: &str,
    step: &str,
    clients: u32,
) -> Option<TargetProfile> {
    let runs: Vec<&Measurement> = ms
        .iter()
        .filter(|m| m.target == target && m.step == step && m.clients == clients && !m.warm)
        .filter(|m| m.profile.is_some())
        .collect();
    if runs.is_empty() {
        return None;
    }
    let mut stacks: HashMap<String, f64> = HashMap::new();
    let (mut used, mut samples, mut unresolved, mut cpu) = (0u32, 0u64, 0u64, 0.0);
    let mut modules: Vec<String> = Vec::new();
    let mut errors = Vec::new();
    for m in &runs {
        let p = m.profile.as_ref().expect("filtered");
        if let Some(e) = &p.error {
            errors.push(format!("repeat {}: {e}", m.repeat));
            continue;
        }
        let (Some(us), true) = (m.values.get(Metric::ServerCpu), p.samples > 0 && !m.failed) else {
            continue;
        };
        let per_sample = us / p.samples as f64;
        for (stack, n) in Folded::parse(&p.folded).stacks {
            *stacks.entry(stack).or_default() += n as f64 * per_sample;
        }
        used += 1;
        // A damaged store's counts can be near u64::MAX (a negative one read back).
        samples = samples.saturating_add(p.samples);
        unresolved = unresolved.saturating_add(p.unresolved);
        cpu += us;
        for module in &p.unresolved_modules {
            if !modules.contains(module) {
                modules.push(module.clone());
            }
        }
    }
    let n = f64::from(used.max(1));
    let mut stacks: Vec<(String, f64)> = stacks.into_iter().map(|(s, v)| (s, v / n)).collect();
    stacks.sort_by(|a, b| a.0.cmp(&b.0));
    let cpu_us_per_op = (used > 0).then(|| cpu / n);
    let instructions_per_op = (ms.iter())
        .filter(|m| m.target == target && m.step == step && m.clients == clients && !m.failed)
        .find_map(|m| m.values.get(Metric::ServerInstr));
    let scale = instructions_scale(cpu_us_per_op, instructions_per_op);
    let top = top_functions(&stacks, scale);
    Some(TargetProfile {
        target: target.to_string(),
        repeats: used,
        samples,
        cpu_us_per_op,
        instructions_per_op,
        unresolved_share: if samples > 0 {
            unresolved as f64 / samples as f64
        } else {
            0.0
        },
        unresolved_modules: modules,
        top,
        errors,
        stacks,
    })
}

/// Instructions per µs of the profile's CPU: a function's share of the CPU scaled to the
/// step's instructions/op instead (`None` without a counting pass).
fn instructions_scale(cpu_us: Option<f64>, instructions: Option<f64>) -> Option<f64> {
    match (cpu_us, instructions) {
        (Some(c), Some(i)) if c > 0.0 => Some(i / c),
        _ => None,
    }
}

/// Self and total CPU per operation of every function of `stacks`.
fn functions(stacks: &[(String, f64)]) -> HashMap<String, (f64, f64)> {
    profiler::functions(stacks.iter().map(|(s, v)| (s.as_str(), *v)))
}

fn top_functions(stacks: &[(String, f64)], scale: Option<f64>) -> Vec<FunctionCost> {
    let mut all: Vec<FunctionCost> = functions(stacks)
        .into_iter()
        .filter(|(_, (s, _))| *s > 0.0)
        .map(|(f, (s, t))| FunctionCost {
            function: f,
            self_us_per_op: s,
            total_us_per_op: t,
            self_instructions_per_op: scale.map(|k| s * k),
        })
        .collect();
    all.sort_by(|a, b| {
        b.self_us_per_op
            .total_cmp(&a.self_us_per_op)
            .then_with(|| a.function.cmp(&b.function))
    });
    all.truncate(TOP);
    all
}

/// The functions whose self CPU per operation changed most from `a` (base) to `b`.
fn diff(a: &TargetProfile, b: &TargetProfile) -> ProfileDiff {
    let fa = functions(&a.stacks);
    let fb = functions(&b.stacks);
    let scales = instructions_scale(a.cpu_us_per_op, a.instructions_per_op)
        .zip(instructions_scale(b.cpu_us_per_op, b.instructions_per_op));
    let mut names: Vec<&String> = fa.keys().chain(fb.keys()).collect();
    names.sort();
    names.dedup();
    let mut changed: Vec<FunctionChange> = names
        .into_iter()
        .map(|f| {
            let x = fa.get(f).map_or(0.0, |v| v.0);
            let y = fb.get(f).map_or(0.0, |v| v.0);
            FunctionChange {
                function: f.clone(),
                base_self_us_per_op: x,
                self_us_per_op: y,
                delta_us_per_op: y - x,
                delta_instructions_per_op: scales.map(|(ka, kb)| y * kb - x * ka),
            }
        })
        .filter(|c| c.delta_us_per_op != 0.0)
        .collect();
    changed.sort_by(|x, y| {
        y.delta_us_per_op
            .abs()
            .total_cmp(&x.delta_us_per_op.abs())
            .then_with(|| x.function.cmp(&y.function))
    });
    changed.truncate(TOP);
    ProfileDiff {
        target: b.target.clone(),
        base: a.target.clone(),
        changed,
    }
}

/// Stacks as folded text with integer counts in [`flame::CPU`] units.
pub fn folded_per_op(stacks: &[(String, f64)]) -> String {
    flame::folded(stacks, flame::CPU)
}

/// A flame graph of one target's CPU per operation, as an SVG document.
pub fn flame_svg(p: &TargetProfile, step: &str) -> Result<String, String> {
    flame::plain(&p.stacks, flame::CPU, plain_title(&p.target, step).into())
}

fn plain_title(target: &str, step: &str) -> String {
    format!("{target}: {step}, CPU per operation")
}

fn diff_title(target: &str, base: &str, step: &str) -> String {
    format!(
        "{target} against {base}: {step}, CPU per operation (red: more than {base}, blue: less)"
    )
}

/// The differential flame graph of `b` against its base `a`: frame widths are `b`'s CPU per
/// operation, red where `b` spends more per operation than `a`, blue where it spends less.
pub fn diff_svg(
    a: &TargetProfile,
    b: &TargetProfile,
    step: &str,
    interactive: bool,
) -> Result<String, String> {
    let title = diff_title(&b.target, &a.target, step);
    let sides = (a.stacks.as_slice(), b.stacks.as_slice());
    flame::diff(
        sides,
        flame::CPU,
        flame::Shape::Target,
        (title.into(), interactive),
    )
}

/// `stack base_count target_count` lines (inferno's differential folded format).
pub fn diff_folded(a: &TargetProfile, b: &TargetProfile) -> Result<String, String> {
    flame::diff_folded(&a.stacks, &b.stacks, flame::CPU)
}

/// Longest function name shown in a table cell (the flame graphs show every name whole).
const NAME_WIDTH: usize = 64;

fn cell(text: impl Into<String>) -> Cell {
    Cell {
        text: text.into(),
        tone: Tone::Plain,
    }
}

fn short(name: &str) -> String {
    if name.chars().count() <= NAME_WIDTH {
        return name.to_string();
    }
    let head: String = name.chars().take(NAME_WIDTH - 1).collect();
    format!("{head}…")
}

fn us(v: f64) -> String {
    format!("{v:.3}")
}

/// The report's "CPU profiles" section: why there are none, or per step the top functions of
/// each target, the largest changes against the base and the differential flame graphs.
pub fn blocks(m: &ReportModel, doc: &mut Vec<Block>) {
    let Some(p) = &m.profiles else { return };
    doc.push(Block::Heading("CPU profiles".into()));
    if let Some(why) = &p.unavailable {
        doc.push(Block::Para(format!("No CPU profiles: {why}.")));
        return;
    }
    doc.push(Block::Para(format!(
        "Sampled with {} over each measured period. Each target's samples are scaled to its \
         measured engine CPU per operation (mean over the profiled repeats), so the numbers are µs of \
         CPU per operation: self where the function is the innermost frame, total where it is anywhere \
         on the stack.",
        p.method
    )));
    if p.steps.is_empty() {
        doc.push(Block::Para("No step has a profile.".into()));
    }
    for s in &p.steps {
        doc.push(Block::SubHeading(format!(
            "{}, clients = {}: top functions by self CPU per operation, µs",
            s.step, s.clients
        )));
        doc.push(Block::Table(top_table(s)));
        for d in &s.diffs {
            doc.push(Block::SubHeading(format!(
                "{}, clients = {}: {} against {}, the largest changes in self CPU per operation, µs",
                s.step, s.clients, d.target, d.base
            )));
            doc.push(Block::Table(diff_table(d)));
        }
        let notes = profile_notes(s);
        if !notes.is_empty() {
            doc.push(Block::Bullets(notes));
        }
        let charts: Vec<ChartRef> = (s.diffs.iter())
            .map(|d| ChartRef::ProfileDiff {
                step: s.step.clone(),
                clients: s.clients,
                target: d.target.clone(),
            })
            .collect();
        if !charts.is_empty() {
            doc.push(Block::Figures {
                title: Some(format!(
                    "Differential flame graphs, {}, clients = {}: widths are the target's CPU per \
                     operation; red: more than its base, blue: less",
                    s.step, s.clients
                )),
                charts,
                note: None,
            });
        }
    }
}

fn top_table(s: &StepProfiles) -> Grid {
    let mut g = Grid {
        header: vec![
            "target".into(),
            "samples".into(),
            "CPU/op".into(),
            "function".into(),
            "self".into(),
            "total".into(),
        ],
        right: vec![false, true, true, false, true, true],
        rows: Vec::new(),
    };
    for t in &s.targets {
        let cpu = t.cpu_us_per_op.map_or("n/a".into(), us);
        if t.top.is_empty() {
            g.rows.push(vec![
                cell(t.target.clone()),
                cell(t.samples.to_string()),
                cell(cpu),
                cell("no samples"),
                cell(""),
                cell(""),
            ]);
            continue;
        }
        for (i, f) in t.top.iter().enumerate() {
            let first = i == 0;
            g.rows.push(vec![
                cell(if first {
                    t.target.clone()
                } else {
                    String::new()
                }),
                cell(if first {
                    t.samples.to_string()
                } else {
                    String::new()
                }),
                cell(if first { cpu.clone() } else { String::new() }),
                cell(short(&f.function)),
                cell(us(f.self_us_per_op)),
                cell(us(f.total_us_per_op)),
            ]);
        }
    }
    g
}

fn diff_table(d: &ProfileDiff) -> Grid {
    let mut g = Grid {
        header: vec![
            "function".into(),
            d.base.clone(),
            d.target.clone(),
            "change".into(),
        ],
        right: vec![false, true, true, true],
        rows: Vec::new(),
    };
    let instructions = d
        .changed
        .iter()
        .any(|c| c.delta_instructions_per_op.is_some());
    if instructions {
        g.header.push("instr/op change".into());
        g.right.push(true);
    }
    // Plain: a function's share of one profile is no verdict (only verdicts are coloured).
    for c in &d.changed {
        g.rows.push(vec![
            cell(short(&c.function)),
            cell(us(c.base_self_us_per_op)),
            cell(us(c.self_us_per_op)),
            cell(format!("{:+.3}", c.delta_us_per_op)),
        ]);
        if instructions {
            let text = (c.delta_instructions_per_op).map_or("n/a".into(), |d| format!("{d:+.0}"));
            g.rows.last_mut().expect("pushed").push(cell(text));
        }
    }
    g
}

/// Failed recordings and symbol-less samples of a step's targets.
fn profile_notes(s: &StepProfiles) -> Vec<String> {
    let mut out = Vec::new();
    for t in &s.targets {
        if t.unresolved_share >= UNRESOLVED_NOTE {
            out.push(format!(
                "{}: {:.0}% of the samples have no symbol, only their module and address, as \
                 [module <address>] ({}): a stripped build; Debian's -dbgsym package or a build \
                 from `dbdelta build` gives symbols",
                t.target,
                t.unresolved_share * 100.0,
                t.unresolved_modules.join(", ")
            ));
        }
        for e in &t.errors {
            out.push(format!("{}: no profile for {e}", t.target));
        }
    }
    out
}

/// `dbdelta profile`'s files for one step (every client count it ran at): per target its
/// folded profile (counts in ns per 1000 operations) and flame graph, and per compared target
/// the differential folded profile and flame graph against its base. `target` keeps one target
/// (and its base's diff). `Err` says why there is nothing to write, and what there is.
pub fn files(
    m: &ReportModel,
    step: &str,
    target: Option<&str>,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let Some(p) = &m.profiles else {
        return Err(format!(
            "run {} was not profiled: run it with --profile (or profile = true in its [lab])",
            m.run.id
        ));
    };
    if let Some(why) = &p.unavailable {
        return Err(format!("run {} has no CPU profiles: {why}", m.run.id));
    }
    let steps: Vec<&StepProfiles> = p.steps.iter().filter(|s| s.step == step).collect();
    if steps.is_empty() {
        let mut names: Vec<&str> = p.steps.iter().map(|s| s.step.as_str()).collect();
        names.dedup();
        return Err(format!(
            "step {step} has no profile in run {}; profiled steps: {}",
            m.run.id,
            names.join(", ")
        ));
    }
    let keep = |t: &str| target.is_none_or(|want| want == t);
    if let Some(want) = target
        && !steps
            .iter()
            .any(|s| s.targets.iter().any(|t| t.target == want))
    {
        let names: Vec<&str> = steps[0].targets.iter().map(|t| t.target.as_str()).collect();
        return Err(format!(
            "--target {want}: no profile of {step} for it; profiled targets: {}",
            names.join(", ")
        ));
    }
    let mut out = Vec::new();
    for s in steps {
        let stem = |t: &str| file_name(&format!("{}-c{}-{t}", s.step, s.clients));
        for t in s
            .targets
            .iter()
            .filter(|t| keep(&t.target) && !t.stacks.is_empty())
        {
            out.push((
                format!("{}.folded", stem(&t.target)),
                folded_per_op(&t.stacks).into_bytes(),
            ));
            out.push((
                format!("{}.svg", stem(&t.target)),
                flame_svg(t, &s.step)?.into_bytes(),
            ));
        }
        for d in s.diffs.iter().filter(|d| keep(&d.target)) {
            let find = |n: &str| s.targets.iter().find(|t| t.target == n);
            let (Some(a), Some(b)) = (find(&d.base), find(&d.target)) else {
                continue;
            };
            let name = stem(&format!("{}-vs-{}", d.target, d.base));
            out.push((
                format!("{name}.diff.folded"),
                diff_folded(a, b)?.into_bytes(),
            ));
            out.push((
                format!("{name}.diff.svg"),
                diff_svg(a, b, &s.step, true)?.into_bytes(),
            ));
        }
    }
    Ok(out)
}

/// The SVGs [`files`] writes for `step` (every target), with their titles and what each shows,
/// without drawing them; empty when the run has no profile of it.
pub fn svg_listing(m: &ReportModel, step: &str) -> Vec<super::super::why::FlameListing> {
    let steps = (m.profiles.iter().flat_map(|p| &p.steps)).filter(|s| s.step == step);
    let mut out = Vec::new();
    for s in steps {
        let stem = |t: &str| file_name(&format!("{}-c{}-{t}", s.step, s.clients));
        for t in s.targets.iter().filter(|t| !t.stacks.is_empty()) {
            out.push(super::super::why::FlameListing {
                file: format!("{}.svg", stem(&t.target)),
                title: plain_title(&t.target, &s.step),
                shows: format!("where {} spends its CPU per operation", t.target),
            });
        }
        for d in &s.diffs {
            let has = |n: &str| s.targets.iter().any(|t| t.target == n);
            if has(&d.base) && has(&d.target) {
                out.push(super::super::why::FlameListing {
                    file: format!("{}.diff.svg", stem(&format!("{}-vs-{}", d.target, d.base))),
                    title: diff_title(&d.target, &d.base, &s.step),
                    shows: format!("in {}'s widths, coloured by the change", d.target),
                });
            }
        }
    }
    out
}

/// Only letters, digits, `.`, `_`, `-` and `@`.
pub(in crate::report) fn file_name(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-@".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{StepProfile, Values};

    fn m(target: &str, repeat: u32, cpu: f64, folded: &str) -> Measurement {
        let f = Folded::parse(folded);
        Measurement {
            target: target.into(),
            step: "point-query".into(),
            clients: 1,
            repeat,
            values: Values::default().with(&[(Metric::ServerCpu, cpu)]),
            profile: Some(StepProfile {
                samples: f.samples(),
                folded: folded.into(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn summary(name: &str, base: Option<&str>) -> TargetSummary {
        TargetSummary {
            name: name.into(),
            relative_to: base.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn samples_are_scaled_to_the_measured_cpu_per_op_and_averaged_over_repeats() {
        let data = RunData {
            measurements: vec![
                m("a", 1, 10.0, "p;main;plan 3\np;main;exec 1\n"),
                m("a", 2, 20.0, "p;main;plan 1\np;main;exec 1\n"),
                m("b", 1, 12.0, "p;main;plan 1\np;main;exec 3\n"),
            ],
            ..Default::default()
        };
        let r = report(&data, &[summary("a", None), summary("b", Some("a"))]).unwrap();
        let s = &r.steps[0];
        let a = &s.targets[0];
        // Repeat 1: plan 7.5, exec 2.5; repeat 2: plan 10, exec 10; mean: 8.75 and 6.25.
        assert_eq!(a.top[0].function, "plan");
        assert!((a.top[0].self_us_per_op - 8.75).abs() < 1e-9);
        assert!((a.top[1].self_us_per_op - 6.25).abs() < 1e-9);
        assert!(
            (a.top
                .iter()
                .find(|f| f.function == "plan")
                .unwrap()
                .total_us_per_op
                - 8.75)
                .abs()
                < 1e-9
        );
        assert_eq!(a.cpu_us_per_op, Some(15.0));
        // b: plan 3, exec 9: exec +2.75, plan -5.75; largest change first.
        let d = &s.diffs[0];
        assert_eq!((d.target.as_str(), d.base.as_str()), ("b", "a"));
        assert_eq!(d.changed[0].function, "plan");
        assert!((d.changed[0].delta_us_per_op + 5.75).abs() < 1e-9);
        assert!((d.changed[1].delta_us_per_op - 2.75).abs() < 1e-9);
        let svg = diff_svg(a, &s.targets[1], "point-query", false).unwrap();
        assert!(svg.contains("<svg") && svg.contains("plan") && !svg.contains("init(evt)\n"));
    }

    #[test]
    fn a_run_without_profiling_has_no_profile_section() {
        assert!(report(&RunData::default(), &[]).is_none());
    }
}
