//! `repeats = "auto"`: after the first rounds, one more interleaved round at a time for the
//! steps the verdicts have not decided, until none is left or the lab's bound is reached.
//!
//! Owns which steps an extra round runs and in what order. What "decided" means is the
//! report's (`report::undecided`, the verdicts every report shows); this module must not judge a
//! step itself, and times nothing.

use std::collections::BTreeSet;

use anyhow::Result;

use super::{Ctx, Outcome, cell, cell_key};
use crate::plan::Cell;
use crate::report;
use crate::store::Store;
use crate::workload::SuitePlan;

/// The extra rounds of a `repeats = "auto"` run (nothing for a fixed one). Each round's
/// undecided steps come from the repeats before it, so a resumed run picks the same steps.
pub(super) fn rounds(
    ctx: &Ctx<'_>,
    store: &mut Store,
    recorded_server: &mut [bool],
    outcome: &mut Outcome,
) -> Result<()> {
    let plan = ctx.plan;
    let Some(auto) = plan.auto else {
        return Ok(());
    };
    let mut open = BTreeSet::new();
    for round in plan.repeats + 1..=auto.max + 1 {
        open = report::undecided(&store.load_run(ctx.work.run_id)?, round - 1)?;
        if open.is_empty() {
            ctx.progress.line(&format!(
                "repeats = \"auto\": every step decided after {} round(s)",
                round - 1
            ));
            return Ok(());
        }
        if round > auto.max {
            break;
        }
        let names: BTreeSet<&str> = open.iter().map(|(_, s)| s.as_str()).collect();
        ctx.progress.line(&format!(
            "repeats = \"auto\": round {round} of at most {} for {} undecided step(s): {}",
            auto.max,
            names.len(),
            names.into_iter().collect::<Vec<_>>().join(", ")
        ));
        if !run_round(ctx, store, round, &open, recorded_server, outcome)? {
            return Ok(());
        }
    }
    ctx.progress.line(&format!(
        "repeats = \"auto\": {} step(s) still undecided after {} rounds (max_repeats)",
        open.len(),
        auto.max
    ));
    Ok(())
}

/// One extra round: per client count, every target (interleaved, in lab order) runs the warm
/// steps and the undecided steps of each suite. `false` when interrupted.
fn run_round(
    ctx: &Ctx<'_>,
    store: &mut Store,
    round: u32,
    open: &BTreeSet<(u32, String)>,
    recorded_server: &mut [bool],
    outcome: &mut Outcome,
) -> Result<bool> {
    let plan = ctx.plan;
    for &clients in &plan.clients {
        for target in 0..plan.targets.len() {
            if plan.targets[target].broken.is_some() {
                continue;
            }
            let cell = Cell {
                target,
                clients,
                repeat: round,
            };
            for (index, suite) in plan.suites.iter().enumerate() {
                let Some(fewer) = narrowed(suite, |s| open.contains(&(clients, s.to_string())))
                else {
                    continue;
                };
                let key = cell_key(plan, cell, suite.id());
                if !ctx.work.finished.contains_key(&key) {
                    // What an interrupted invocation left of this cell runs again whole.
                    store.discard_cell(ctx.work.run_id, &key)?;
                }
                let end = ctx.run_cell(store, cell, (index, &fewer), recorded_server, outcome)?;
                if end == Some(cell::CellEnd::Interrupted) {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

/// `suite` with only its warm steps and the steps `keep` names; `None` when it keeps no
/// measured step. A read that followed a skipped write step then reads the table as loaded, on
/// both targets alike.
fn narrowed(suite: &SuitePlan, keep: impl Fn(&str) -> bool) -> Option<SuitePlan> {
    let steps: Vec<_> = (suite.steps.iter())
        .filter(|s| s.warm || keep(&s.label))
        .cloned()
        .collect();
    steps.iter().any(|s| !s.warm).then(|| SuitePlan {
        steps,
        ..suite.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrowed_suite_keeps_warm_and_named_steps_in_order() {
        let lab = crate::plan::lab::parse(crate::plan::demo_lab(), "demo", ".".as_ref()).unwrap();
        let quick = crate::plan::RunOptions {
            quick: true,
            ..Default::default()
        };
        let plan = crate::plan::plan(lab, &quick).unwrap();
        let suite = &plan.suites[0];
        let warm: Vec<String> = (suite.steps.iter())
            .filter(|s| s.warm)
            .map(|s| s.label.clone())
            .collect();
        let measured: Vec<String> = (suite.steps.iter())
            .filter(|s| !s.warm)
            .map(|s| s.label.clone())
            .collect();
        let (a, b) = (&measured[3], &measured[1]);
        let fewer = narrowed(suite, |s| s == a || s == b).unwrap();
        let labels: Vec<&str> = fewer.steps.iter().map(|s| s.label.as_str()).collect();
        let expected: Vec<&str> = (suite.steps.iter())
            .filter(|s| s.warm || &s.label == a || &s.label == b)
            .map(|s| s.label.as_str())
            .collect();
        assert_eq!(labels, expected, "run order kept");
        assert_eq!(fewer.steps.len(), warm.len() + 2);
        assert!(
            narrowed(suite, |_| false).is_none(),
            "warm steps alone: no cell"
        );
    }
}
