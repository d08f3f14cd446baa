//! Why a counted step changed: per compared step, the functions whose instructions/op changed
//! (target − base), from the counting pass's per-function tables (`results::StepFunctions`),
//! each with its share of the step's change; per group, the functions that explain most of the
//! group's change. The JSON's `functions` (every function), and the text and Markdown section
//! "Why" (the top [`TOP`] of each step decided from instructions).
//!
//! Functions are matched across targets by symbol name. A renamed function shows as one
//! removed (its whole base cost falls) and one added; a function inlined into its caller shows
//! as the callee removed and the caller's own cost rising by about as much (the reverse when it
//! stops being inlined). A function below the table's share on one side counts 0 there (its
//! cost is in that side's `(other)` row, whose change is given apart): `below_share_in` says so.
//! Must not: compute verdicts, read the store, or format for a particular output.

use std::collections::{BTreeMap, BTreeSet};

use super::super::doc::{Block, Cell, ChartRef, Grid, thousands};
use super::super::fmt::plural;
use super::super::model::{Relative, ReportModel};
pub use super::super::why_model::{
    CallTrees, FunctionDiff, FunctionDiffs, GroupFunction, GroupFunctionDiff, StepConfiguration,
    StepFunctionDiff,
};
use super::super::{call_tree, flame};
use crate::results::{FunctionCost, Measurement, Metric, StepExplanation, StepFunctions};

/// Functions shown per step in text and Markdown.
pub const TOP: usize = 10;
/// Functions named per group in text and Markdown.
const GROUP_TOP: usize = 5;
/// The longest function name a table shows.
const NAME_CHARS: usize = 60;

/// The function view of `relative`'s steps whose targets both have function tables in
/// `measurements`; `None` when no step has.
pub fn build(relative: &[Relative], measurements: &[Measurement]) -> Option<FunctionDiffs> {
    let table = |target: &str, step: &str, clients: u32| {
        (measurements.iter())
            .find(|m| m.target == target && m.step == step && m.clients == clients)
            .and_then(|m| m.functions.as_ref())
    };
    let steps: Vec<StepFunctionDiff> = (relative.iter())
        .filter_map(|r| {
            let b = table(&r.base, &r.step, r.clients)?;
            let t = table(&r.target, &r.step, r.clients)?;
            Some(step_diff(r, b, t))
        })
        .collect();
    let configuration = configuration(relative, measurements);
    if steps.is_empty() && configuration.is_empty() {
        return None;
    }
    let groups = groups(&steps);
    Some(FunctionDiffs {
        steps,
        groups,
        configuration,
    })
}

/// The explanations stored with `relative`'s targets against the same base.
fn configuration(relative: &[Relative], measurements: &[Measurement]) -> Vec<StepConfiguration> {
    (relative.iter())
        .filter_map(|r| {
            let e = (measurements.iter())
                .filter(|m| m.target == r.target && m.step == r.step && m.clients == r.clients)
                .find_map(|m| m.explanation.as_ref())
                .filter(|e| e.base == r.base)?;
            Some(StepConfiguration {
                target: r.target.clone(),
                step: r.step.clone(),
                clients: r.clients,
                explanation: e.clone(),
            })
        })
        .collect()
}

/// "1.62× = code 1.02× × config 1.59×: key OFF (base ON) explains 1.58×": an explained
/// step's split and the settings found.
pub fn explanation_line(e: &StepExplanation) -> String {
    let mut out = format!(
        "{:.2}× = code {:.2}× × config {:.2}×",
        e.ratio, e.code, e.config
    );
    let named: Vec<String> = (e.settings.iter())
        .map(|s| {
            format!(
                "{} {} (base {}) explains {:.2}×",
                s.key,
                s.target.as_deref().unwrap_or("unset"),
                s.base.as_deref().unwrap_or("unset"),
                s.explains
            )
        })
        .collect();
    if !named.is_empty() {
        out.push_str(&format!(": {}", named.join(", ")));
    }
    out
}

/// The configuration part of the "Why" section for `target` at `clients`, after `explain`.
fn configuration_part(diffs: &FunctionDiffs, clients: u32, target: &str, doc: &mut Vec<Block>) {
    let shown: Vec<&StepConfiguration> = (diffs.configuration.iter())
        .filter(|c| c.clients == clients && c.target == target)
        .collect();
    let Some(first) = shown.first().map(|c| &c.explanation) else {
        return;
    };
    doc.push(Block::SubHeading(format!(
        "Why: configuration, {target} vs {}",
        first.base
    )));
    let mut para = format!(
        "dbdelta explain counted {} of {target} ({target} again, then its spec with the \
         base's values of the settings that differ; instructions only, run {}): config = \
         {target} counted beside them / twin, code = ({target} / base) / config, and the \
         settings a halving search found behind the config part.",
        plural(first.twins as usize, "twin"),
        if first.twin_run.is_empty() {
            "none"
        } else {
            &first.twin_run
        }
    );
    if !first.left_out.is_empty() {
        para.push_str(&format!(
            " Left out (not carried over): {}.",
            (first.left_out_by_reason().iter())
                .map(|(why, keys)| format!("{why}: {}", keys.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    doc.push(Block::Para(para));
    let bullets = (shown.iter())
        .map(|c| format!("{}: {}", c.step, explanation_line(&c.explanation)))
        .collect();
    doc.push(Block::Bullets(bullets));
}

fn step_diff(r: &Relative, b: &StepFunctions, t: &StepFunctions) -> StepFunctionDiff {
    let total = |rows: &[FunctionCost]| rows.iter().map(|r| r.own).sum::<f64>();
    let other = |rows: &[FunctionCost]| {
        (rows.iter().find(|r| r.name == StepFunctions::OTHER)).map_or(0.0, |r| r.own)
    };
    let (base_total, target_total) = (total(&b.foreground), total(&t.foreground));
    let change = target_total - base_total;
    StepFunctionDiff {
        target: r.target.clone(),
        base: r.base.clone(),
        step: r.step.clone(),
        group: r.group.clone(),
        clients: r.clients,
        base_total,
        target_total,
        change,
        functions: diff(&b.foreground, &t.foreground, change),
        other_change: other(&t.foreground) - other(&b.foreground),
        background: diff(
            &b.background,
            &t.background,
            total(&t.background) - total(&b.background),
        ),
        trees: trees(b, t),
    }
}

/// Both sides' call trees, when both have calls stored, cut at the function they share
/// ([`call_tree::anchor`]).
fn trees(b: &StepFunctions, t: &StepFunctions) -> Option<CallTrees> {
    let (base, target) = (call_tree::stacks(b), call_tree::stacks(t));
    if base.is_empty() || target.is_empty() {
        return None;
    }
    let anchor = call_tree::anchor(&base, &target);
    let (base, target) = match &anchor {
        Some(a) => (call_tree::cut(&base, a), call_tree::cut(&target, a)),
        None => (base, target),
    };
    Some(CallTrees {
        base,
        target,
        anchor,
    })
}

/// Every function of either table but `(other)`, by the size of its change.
fn diff(base: &[FunctionCost], target: &[FunctionCost], change: f64) -> Vec<FunctionDiff> {
    let index = |rows: &'_ [FunctionCost]| -> BTreeMap<String, FunctionCost> {
        (rows.iter())
            .filter(|r| r.name != StepFunctions::OTHER)
            .map(|r| (r.name.clone(), r.clone()))
            .collect()
    };
    let (b, t) = (index(base), index(target));
    let names: BTreeSet<&String> = b.keys().chain(t.keys()).collect();
    let mut out: Vec<FunctionDiff> = (names.into_iter())
        .map(|name| {
            let (bf, tf) = (b.get(name), t.get(name));
            let own = |f: Option<&FunctionCost>| f.map_or(0.0, |f| f.own);
            let d = own(tf) - own(bf);
            FunctionDiff {
                name: name.clone(),
                base: own(bf),
                target: own(tf),
                change: d,
                share: (change != 0.0).then(|| d / change),
                inclusive_change: match (bf.and_then(|f| f.inclusive), tf.and_then(|f| f.inclusive))
                {
                    (Some(x), Some(y)) => Some(y - x),
                    _ => None,
                },
                below_share_in: match (bf, tf) {
                    (None, _) => Some("base"),
                    (_, None) => Some("target"),
                    _ => None,
                },
            }
        })
        .collect();
    out.sort_by(|x, y| {
        (y.change.abs().total_cmp(&x.change.abs())).then_with(|| x.name.cmp(&y.name))
    });
    out
}

/// Per target × group × clients: each function's mean part of the steps' relative change.
fn groups(steps: &[StepFunctionDiff]) -> Vec<GroupFunctionDiff> {
    let mut by_group: BTreeMap<(&str, &str, &str, u32), Vec<&StepFunctionDiff>> = BTreeMap::new();
    for s in steps.iter().filter(|s| s.base_total > 0.0) {
        let key = (
            s.target.as_str(),
            s.base.as_str(),
            s.group.as_str(),
            s.clients,
        );
        by_group.entry(key).or_default().push(s);
    }
    let mut out = Vec::new();
    for ((target, base, group, clients), steps) in by_group {
        let n = steps.len() as f64;
        let mut parts: BTreeMap<&str, f64> = BTreeMap::new();
        for s in &steps {
            for f in &s.functions {
                *parts.entry(&f.name).or_default() += f.change / s.base_total / n;
            }
            *parts.entry(StepFunctions::OTHER).or_default() += s.other_change / s.base_total / n;
        }
        let change = steps.iter().map(|s| s.change / s.base_total).sum::<f64>() / n;
        let mut functions: Vec<GroupFunction> = (parts.into_iter())
            .map(|(name, contribution)| GroupFunction {
                name: name.to_string(),
                contribution,
                share: (change != 0.0).then(|| contribution / change),
            })
            .collect();
        functions.sort_by(|x, y| {
            (y.contribution.abs().total_cmp(&x.contribution.abs()))
                .then_with(|| x.name.cmp(&y.name))
        });
        out.push(GroupFunctionDiff {
            target: target.to_string(),
            base: base.to_string(),
            group: group.to_string(),
            clients,
            steps: steps.len() as u32,
            change,
            functions,
        });
    }
    out
}

/// `1,080`, `12.5`, `-0.25`: instructions/op with the digits a small value needs.
fn per_op(v: f64) -> String {
    match v.abs() {
        a if a >= 100.0 => thousands(v),
        a if a >= 1.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

fn signed(v: f64) -> String {
    match v >= 0.0 {
        true => format!("+{}", per_op(v)),
        false => per_op(v),
    }
}

/// A function's name cut to [`NAME_CHARS`] for a table (the JSON has it whole).
fn short(name: &str) -> String {
    match name.char_indices().nth(NAME_CHARS) {
        Some((end, _)) => format!("{}…", &name[..end]),
        None => name.to_string(),
    }
}

/// `+1.2%`: a part of a relative change.
fn signed_percent(fraction: f64) -> String {
    format!("{:+.1}%", 100.0 * fraction)
}

/// `+12%` of the step's change.
fn share(s: Option<f64>) -> String {
    s.map_or_else(|| "n/a".into(), |s| format!("{:.0}%", 100.0 * s))
}

/// The rows of one decided step: its top functions by change.
fn step_rows(s: &StepFunctionDiff, grid: &mut Grid) {
    for (i, f) in s.functions.iter().take(TOP).enumerate() {
        let step = match i {
            0 => format!("{} ({})", s.step, signed(s.change)),
            _ => String::new(),
        };
        let name = match f.below_share_in {
            Some(_) => format!("{} *", short(&f.name)),
            None => short(&f.name),
        };
        grid.rows.push(vec![
            Cell::plain(step),
            Cell::plain(name),
            Cell::plain(per_op(f.base)),
            Cell::plain(per_op(f.target)),
            Cell::plain(signed(f.change)),
            Cell::plain(share(f.share)),
            Cell::plain(f.inclusive_change.map_or_else(|| "n/a".into(), signed)),
        ]);
    }
    grid.rows.push(vec![
        Cell::plain(""),
        Cell::plain("the rest (under the share on both sides)"),
        Cell::plain(""),
        Cell::plain(""),
        Cell::plain(signed(s.other_change)),
        Cell::plain(share((s.change != 0.0).then(|| s.other_change / s.change))),
        Cell::plain(""),
    ]);
}

/// Whether `r`'s instructions/op were decided a change.
fn decided(r: &Relative) -> bool {
    (r.tests.spread(Metric::ServerInstr))
        .is_some_and(|t| t.verdict == "regression" || t.verdict == "improvement")
}

/// The "Why" section at `clients`: per compared target, the top functions of each step
/// decided from instructions, and the functions that explain most of each group's change.
pub(in crate::report) fn section(m: &ReportModel, clients: u32, doc: &mut Vec<Block>) {
    let Some(diffs) = &m.functions else {
        return;
    };
    for target in &m.compared {
        functions_part(m, diffs, (clients, target), doc);
        configuration_part(diffs, clients, target, doc);
    }
}

/// The function part of the "Why" section for `target` at `clients`.
fn functions_part(
    m: &ReportModel,
    diffs: &FunctionDiffs,
    (clients, target): (u32, &str),
    doc: &mut Vec<Block>,
) {
    let shown: Vec<&StepFunctionDiff> = (diffs.steps.iter())
        .filter(|s| s.clients == clients && s.target == *target)
        .filter(|s| {
            (m.relative.iter()).any(|r| {
                r.target == s.target && r.step == s.step && r.clients == clients && decided(r)
            })
        })
        .collect();
    let Some(first) = shown.first() else {
        return;
    };
    doc.push(Block::SubHeading(format!(
        "Why: the functions behind the instruction changes, {target} vs {}",
        first.base
    )));
    doc.push(Block::Para(format!(
        "For each step decided from instructions, the {TOP} functions whose own \
         instructions/op (callgrind's self cost, from the same pass pairs) changed most, \
         target − base, with their share of the step's change and the change of their \
         inclusive cost. Functions are matched by name: a renamed function shows as one \
         removed and one added; an inlined one as the callee removed and its caller rising. \
         A function under {} of a step's instructions on one side (`*`) counts 0 there. Under the \
         table, each group's mean relative change and the functions' parts of it. The JSON \
         report has every function, and the background's.",
        super::super::fmt::percent(StepFunctions::SHARE)
    )));
    let header = [
        "step (change/op)",
        "function",
        "base self/op",
        "self/op",
        "change",
        "share",
        "inclusive change",
    ];
    let mut grid = Grid {
        header: header.map(String::from).to_vec(),
        right: vec![false, false, true, true, true, true, true],
        rows: Vec::new(),
    };
    for s in &shown {
        step_rows(s, &mut grid);
    }
    doc.push(Block::Table(grid));
    let groups: BTreeSet<&str> = shown.iter().map(|s| s.group.as_str()).collect();
    let bullets: Vec<String> = (diffs.groups.iter())
        .filter(|g| g.clients == clients && g.target == *target)
        .filter(|g| groups.contains(g.group.as_str()))
        .map(|g| {
            let named: Vec<String> = (g.functions.iter().take(GROUP_TOP))
                .map(|f| {
                    let name = match f.name == StepFunctions::OTHER {
                        true => "the rest".into(),
                        false => short(&f.name),
                    };
                    format!("{name} {}", signed_percent(f.contribution))
                })
                .collect();
            format!(
                "{} ({}, {} on average): {}",
                g.group,
                plural(g.steps as usize, "step"),
                signed_percent(g.change),
                named.join(", ")
            )
        })
        .collect();
    if !bullets.is_empty() {
        doc.push(Block::Bullets(bullets));
    }
    flame_figures(&shown, doc);
}

/// The differential flame graph of `target`'s instructions per operation against its base on
/// `step` at `clients`, in the target's widths or the base's; `None` when the model has no call
/// trees of it.
pub fn flame_svg(
    m: &ReportModel,
    (step, clients, target): (&str, u32, &str),
    base_widths: bool,
    interactive: bool,
) -> Option<Result<String, String>> {
    let s = (m.functions.as_ref()?.steps.iter())
        .find(|s| s.step == step && s.clients == clients && s.target == target)?;
    let trees = s.trees.as_ref()?;
    let (shape, widths) = match base_widths {
        false => (flame::Shape::Target, &s.target),
        true => (flame::Shape::Base, &s.base),
    };
    let from = (trees.anchor.as_ref()).map_or(String::new(), |a| format!(", from {a} up"));
    let title = flame::Title {
        text: format!(
            "{} vs {}, {step}: instructions/op in {widths}'s widths",
            s.target, s.base
        ),
        sub: Some(format!("red: more than {}, blue: fewer{from}", s.base)),
    };
    let sides = (trees.base.as_slice(), trees.target.as_slice());
    Some(flame::diff(
        sides,
        flame::INSTRUCTIONS,
        shape,
        (title, interactive),
    ))
}

/// The instruction flame graphs of `step` (of `target` only, when given) as files, named by step,
/// clients and targets: each compared target's differential graph in its widths
/// (`….instructions.svg`) and its base's (`….instructions.base-widths.svg`), the one that shows
/// the larger change first ([`base_widths_first`]), and their differential folded stacks
/// (`….instructions.diff.folded`).
pub fn flame_files(
    m: &ReportModel,
    step: &str,
    target: Option<&str>,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    for (s, trees, stem) in flame_steps(m, step, target) {
        let at = (s.step.as_str(), s.clients, s.target.as_str());
        for (base_widths, suffix) in svg_order(trees) {
            let svg = flame_svg(m, at, base_widths, true).expect("the step has trees")?;
            out.push((format!("{stem}.{suffix}"), svg.into_bytes()));
        }
        let folded = flame::diff_folded(&trees.base, &trees.target, flame::INSTRUCTIONS)?;
        out.push((format!("{stem}.diff.folded"), folded.into_bytes()));
    }
    Ok(out)
}

/// One instruction flame graph of a step as `profile` and `serve` list it: its file, its title
/// and a line saying what it shows.
#[derive(Debug, Clone, PartialEq)]
pub struct FlameListing {
    pub file: String,
    pub title: String,
    pub shows: String,
}

/// [`flame_files`]' SVGs of `step` (of `target` only), without drawing them: per compared target
/// the graph that shows the larger change first, each with its title (the compared pair, the
/// step's instructions/op ratio) and what it shows.
pub fn flame_listing(m: &ReportModel, step: &str, target: Option<&str>) -> Vec<FlameListing> {
    let mut out = Vec::new();
    for (s, trees, stem) in flame_steps(m, step, target) {
        let ratio = (m.relative_of(&s.target, &s.step, s.clients))
            .and_then(|r| r.tests.spread(Metric::ServerInstr).map(|t| t.ratio))
            .or_else(|| (s.base_total > 0.0).then(|| s.target_total / s.base_total));
        let clients = match m.clients.len() > 1 {
            true => format!(" at {}", plural(s.clients as usize, "client")),
            false => String::new(),
        };
        let ratio = ratio.map_or(String::new(), |r| format!(" (instructions/op {r:.2}×)"));
        for (i, (base_widths, suffix)) in svg_order(trees).into_iter().enumerate() {
            let (widths, shows) = match base_widths {
                true => (
                    &s.base,
                    format!(
                        "what {} no longer runs or runs less, in blue; code it added has no frame",
                        s.target
                    ),
                ),
                false => (
                    &s.target,
                    format!(
                        "what {} added or runs more, in red; code it no longer runs has no frame",
                        s.target
                    ),
                ),
            };
            let larger = match i {
                0 => "the larger change: ",
                _ => "",
            };
            out.push(FlameListing {
                file: format!("{stem}.{suffix}"),
                title: format!(
                    "{} vs {}, {}{clients}{ratio}: in {widths}'s widths",
                    s.target, s.base, s.step
                ),
                shows: format!("{larger}{shows}"),
            });
        }
    }
    out
}

/// A step's two SVGs, the one that shows the larger change first: in the target's widths
/// (`false`) and in the base's (`true`), with their file suffixes.
fn svg_order(trees: &CallTrees) -> [(bool, &'static str); 2] {
    let [target, base] = SVG_SUFFIXES;
    match base_widths_first(trees) {
        true => [base, target],
        false => [target, base],
    }
}

/// The two SVGs of a step: in the target's widths, then in the base's.
const SVG_SUFFIXES: [(bool, &str); 2] = [(false, "svg"), (true, "base-widths.svg")];

/// The change a differential graph draws in one side's widths: the sum of |target − base| over
/// the stacks that side has (a stack only the other side has draws no frame there), in
/// instructions per operation.
fn changed_width(trees: &CallTrees, base_widths: bool) -> f64 {
    fn sum(stacks: &[(String, f64)]) -> BTreeMap<&str, f64> {
        let mut by: BTreeMap<&str, f64> = BTreeMap::new();
        for (s, v) in stacks {
            *by.entry(s.as_str()).or_default() += v;
        }
        by
    }
    let (base, target) = (sum(&trees.base), sum(&trees.target));
    let (drawn, other) = match base_widths {
        true => (&base, &target),
        false => (&target, &base),
    };
    (drawn.iter())
        .filter(|(_, v)| **v > 0.0)
        .map(|(s, v)| (v - other.get(s).copied().unwrap_or(0.0)).abs())
        .sum()
}

/// Whether the base's widths show more of the change than the target's: a step whose change
/// is mostly code the target removed is pale in the target's widths (the removed frames are
/// gone, what is left shrank) and strongly blue in the base's. Equal changes (within 1%) go by
/// the step's direction: fewer instructions, the base's widths.
pub fn base_widths_first(trees: &CallTrees) -> bool {
    let (in_base, in_target) = (changed_width(trees, true), changed_width(trees, false));
    if (in_base - in_target).abs() > 0.01 * in_base.max(in_target) {
        return in_base > in_target;
    }
    let total = |stacks: &[(String, f64)]| stacks.iter().map(|(_, v)| v).sum::<f64>();
    total(&trees.target) < total(&trees.base)
}

/// The compared steps named `step` (of `target` only) with call trees, and their files' stem.
fn flame_steps<'a>(
    m: &'a ReportModel,
    step: &'a str,
    target: Option<&'a str>,
) -> impl Iterator<Item = (&'a StepFunctionDiff, &'a CallTrees, String)> {
    (m.functions.iter().flat_map(|f| f.steps.iter()))
        .filter(move |s| s.step == step && target.is_none_or(|want| want == s.target))
        .filter_map(|s| {
            let stem = super::super::profile::file_name(&format!(
                "{}-c{}-{}-vs-{}.instructions",
                s.step, s.clients, s.target, s.base
            ));
            Some((s, s.trees.as_ref()?, stem))
        })
}

/// The differential flame graphs of the shown steps whose sides both have call trees, in
/// the target's widths and in the base's, the larger change first (HTML only).
fn flame_figures(shown: &[&StepFunctionDiff], doc: &mut Vec<Block>) {
    let charts: Vec<ChartRef> = (shown.iter())
        .filter_map(|s| Some((s, s.trees.as_ref()?)))
        .flat_map(|(s, trees)| {
            svg_order(trees).map(|(base_widths, _)| ChartRef::CallTreeDiff {
                step: s.step.clone(),
                clients: s.clients,
                target: s.target.clone(),
                base_widths,
            })
        })
        .collect();
    let Some(first) = shown.first() else {
        return;
    };
    if charts.is_empty() {
        return;
    }
    doc.push(Block::Figures {
        title: Some(format!(
            "Differential flame graphs of the instructions, {} vs {}",
            first.target, first.base
        )),
        charts,
        note: Some(format!(
            "Each step in {}'s widths and in {}'s, the one that shows the larger change first \
             (code the target added has frames only in its widths, code it removed only in the \
             base's); red: more instructions per operation than the base, blue: fewer. Drawn from callgrind's calls between functions, a function's \
             callees shared among its callers in proportion to their calls.",
            first.target, first.base
        )),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, own: f64, inclusive: Option<f64>) -> FunctionCost {
        FunctionCost {
            name: name.into(),
            own,
            spread: 0.0,
            inclusive,
        }
    }

    fn trees(base: &[(&str, f64)], target: &[(&str, f64)]) -> CallTrees {
        let own = |v: &[(&str, f64)]| v.iter().map(|(s, n)| (s.to_string(), *n)).collect();
        CallTrees {
            base: own(base),
            target: own(target),
            anchor: None,
        }
    }

    /// A removal (PostgreSQL 17's cheaper `hot-points`: a search the target no longer does)
    /// shows in the base's widths, an addition (`cache_size = 10`'s page fetches) in the
    /// target's; a change within shared stacks goes by the step's direction.
    #[test]
    fn the_graph_that_shows_the_larger_change_comes_first() {
        let removal = trees(
            &[
                ("exec;_bt_first;_bt_binsrch;_bt_compare", 600.0),
                ("exec;heap", 400.0),
            ],
            &[("exec;_bt_first;_bt_binsrch", 100.0), ("exec;heap", 400.0)],
        );
        assert!(base_widths_first(&removal));
        assert_eq!(svg_order(&removal)[0], (true, "base-widths.svg"));
        let addition = trees(
            &[("exec;read", 1000.0)],
            &[("exec;read", 1000.0), ("exec;read;fetch_page", 300.0)],
        );
        assert!(!base_widths_first(&addition));
        assert_eq!(svg_order(&addition)[0], (false, "svg"));
        let cheaper = trees(&[("exec;read", 1000.0)], &[("exec;read", 900.0)]);
        assert!(base_widths_first(&cheaper));
        let dearer = trees(&[("exec;read", 900.0)], &[("exec;read", 1000.0)]);
        assert!(!base_widths_first(&dearer));
    }

    #[test]
    fn what_explain_left_out_is_listed_once_per_reason() {
        let e = crate::results::StepExplanation {
            left_out: vec![
                "port (a path, port or address)".into(),
                "old (the target has no such setting)".into(),
                "plugin_dir (a path, port or address)".into(),
                "odd".into(),
            ],
            ..Default::default()
        };
        let said: Vec<String> = (e.left_out_by_reason().iter())
            .map(|(why, keys)| format!("{why}: {}", keys.join(", ")))
            .collect();
        assert_eq!(
            said,
            [
                "a path, port or address: port, plugin_dir",
                "the target has no such setting: old",
                "no reason given: odd"
            ]
        );
    }

    #[test]
    fn functions_rank_by_their_change_with_renames_as_removed_and_added() {
        let base = [
            row("exec", 500.0, Some(1000.0)),
            row("getPage", 300.0, Some(300.0)),
            row("old_name", 100.0, Some(100.0)),
            row("(other)", 100.0, None),
        ];
        let target = [
            row("exec", 500.0, Some(1500.0)),
            row("getPage", 700.0, Some(700.0)),
            row("new_name", 100.0, Some(100.0)),
            row("(other)", 140.0, None),
        ];
        let d = diff(&base, &target, 440.0);
        let names: Vec<&str> = d.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["getPage", "new_name", "old_name", "exec"]);
        assert_eq!(d[0].change, 400.0);
        assert_eq!(d[0].share, Some(400.0 / 440.0));
        assert_eq!(d[1].below_share_in, Some("base"));
        assert_eq!(d[2].below_share_in, Some("target"));
        assert_eq!(d[2].inclusive_change, None);
        assert_eq!(d[3].inclusive_change, Some(500.0));
    }

    #[test]
    fn a_groups_functions_add_up_to_its_mean_relative_change() {
        let step = |name: &str, base_total: f64, change: f64, other: f64| StepFunctionDiff {
            target: "t".into(),
            base: "b".into(),
            step: name.into(),
            group: "point".into(),
            clients: 1,
            base_total,
            target_total: base_total + change,
            change,
            functions: vec![FunctionDiff {
                name: "getPage".into(),
                base: 0.0,
                target: change - other,
                change: change - other,
                share: None,
                inclusive_change: None,
                below_share_in: None,
            }],
            other_change: other,
            background: Vec::new(),
            trees: None,
        };
        let g = groups(&[step("a", 1000.0, 100.0, 20.0), step("b", 2000.0, 0.0, 0.0)]);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].steps, 2);
        assert!((g[0].change - 0.05).abs() < 1e-12);
        assert_eq!(g[0].functions[0].name, "getPage");
        assert!((g[0].functions[0].contribution - 0.04).abs() < 1e-12);
        let sum: f64 = g[0].functions.iter().map(|f| f.contribution).sum();
        assert!((sum - g[0].change).abs() < 1e-12);
    }
}
