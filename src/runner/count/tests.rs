//! Tests of the counting pass's plan, sizes and pairs.

use super::passes::{WIDE_PAIRS, on_grid, per_event, widened};
use super::plan::{count_plan, pass_step};
use super::sink::Sizes;
use crate::workload::Pacer;
use std::path::Path;

#[test]
fn three_pairs_that_disagree_by_more_than_a_percent_widen_to_seven() {
    assert_eq!(widened(&[100.0, 100.5, 101.9], 3), 3);
    assert_eq!(widened(&[100.0, 101.0, 102.2], 3), WIDE_PAIRS);
    assert_eq!(widened(&[100.0, 101.0, 102.2], 9), 9);
    assert_eq!(widened(&[100.0], 1), 1);
    assert_eq!(widened(&[f64::NAN, 1.0, 2.0], 3), 3);
}
use super::*;

/// The quick lab's steps of both suites with many roles, as the counting cell plans them.
fn plans() -> Vec<(String, String)> {
    let text = "[lab]\nname = \"t\"\n[suite.insert]\n[suite.linkbench]\n\
                [[target]]\nname = \"a\"\nengine = \"sqlite\"\n";
    let lab = crate::plan::lab::parse(text, "a test lab", Path::new("/")).unwrap();
    let opts = crate::plan::RunOptions {
        quick: true,
        ..Default::default()
    };
    let plan = crate::plan::plan(lab, &opts).unwrap();
    let steps = plan.suites.iter().flat_map(|s| s.steps.iter());
    steps
        .map(|step| {
            let how = match count_plan(step) {
                CountPlan::Skip => "skip".to_string(),
                CountPlan::Once => "once".to_string(),
                CountPlan::Parts(parts) => (parts.iter().map(|p| p.label(step)))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            (step.label.clone(), how)
        })
        .collect()
}

#[test]
fn every_role_and_every_type_of_a_mix_is_counted_and_one_time_work_runs_once() {
    let plans = plans();
    let of = |label: &str| {
        (plans.iter().find(|(l, _)| l == label))
            .unwrap_or_else(|| panic!("no step {label} in {plans:?}"))
            .1
            .as_str()
    };
    assert_eq!(of("l.i0"), "l.i0");
    assert_eq!(of("l.x"), "once", "an index is built once");
    assert_eq!(of("l.i1"), "l.i1, l.i1 deleter");
    assert_eq!(of("qr100"), "qr100, qr100 inserter, qr100 deleter");
    assert_eq!(of("linkbench.load"), "once");
    assert_eq!(
        of("linkbench.check"),
        "skip",
        "stored flagged, never reported"
    );
    let request = (plans.iter().map(|(l, _)| l.as_str()))
        .find(|l| l.starts_with("linkbench.request"))
        .unwrap();
    let parts: Vec<&str> = of(request).split(", ").collect();
    assert_eq!(parts.len(), 11, "the mix and its ten types: {parts:?}");
    assert_eq!(parts[0], request);
    assert!(parts.contains(&format!("{request} getnode").as_str()));
}

#[test]
fn a_deleter_is_refilled_by_the_role_it_follows() {
    let text =
        "[lab]\nname = \"t\"\n[suite.insert]\n[[target]]\nname = \"a\"\nengine = \"sqlite\"\n";
    let lab = crate::plan::lab::parse(text, "a test lab", Path::new("/")).unwrap();
    let opts = crate::plan::RunOptions {
        quick: true,
        ..Default::default()
    };
    let plan = crate::plan::plan(lab, &opts).unwrap();
    let step = (plan.suites[0].steps.iter())
        .find(|s| s.label == "qr100")
        .unwrap();
    let CountPlan::Parts(parts) = count_plan(step) else {
        panic!("qr100 is counted");
    };
    let refills: Vec<Option<usize>> = parts.iter().map(|p| p.refill).collect();
    assert_eq!(
        refills,
        [None, None, Some(1)],
        "the deleter after its inserter"
    );
    let alone = pass_step(step, Some(&parts[2]), 30, 1).unwrap();
    assert_eq!(alone.roles.len(), 1);
    assert_eq!(alone.roles[0].name, "deleter");
    assert_eq!(alone.roles[0].pacer, Pacer::Closed);
    assert_eq!(alone.roles[0].quota, Some(30));
}

#[test]
fn targets_run_the_first_ones_n_unless_far_from_their_own() {
    let sizes = Sizes::default();
    let agree = |key: &str, build: &str, own| sizes.agree(key.into(), build, own);
    assert_eq!(agree("update-index", "pg16", 500), 500, "the first sets it");
    assert_eq!(
        agree("update-index", "pg17", 200),
        500,
        "near: the same rows"
    );
    assert_eq!(
        agree("update-index", "pg18", 100),
        100,
        "5 times apart: its own"
    );
    assert_eq!(agree("insert", "pg17", 200), 200, "per part");
}

/// Every target's cell of one server start counts the same pairs of a part: the first cell of
/// that start to settle it decides, whatever a later one's own pairs say, so that no target's
/// tables run ahead of another's; a part widened on one start is wide on a start not yet
/// settled (whose one pair of its own cannot see a spread), and only that part.
#[test]
fn the_first_cell_of_a_start_settles_a_parts_pairs_for_every_target() {
    let sizes = Sizes::default();
    let key = "update-zipf c=1";
    assert_eq!(sizes.begin(key, 1), None, "nothing sized yet");
    sizes.agree(key.into(), "pg16", 500);
    sizes.agree("insert c=1".into(), "pg16", 500);
    // pg16's first start settles it narrow; pg17's, whose pairs disagree, follows.
    assert_eq!(sizes.begin(key, 1), None);
    assert!(!sizes.settle(key, 1, false));
    assert_eq!(sizes.begin(key, 1), Some(false));
    assert!(!sizes.settle(key, 1, true), "settled narrow on this start");
    // The second start: one pair each, settled wide by the first cell whose pairs disagree.
    assert!(sizes.settle(key, 2, true));
    assert_eq!(sizes.begin(key, 2), Some(true));
    assert!(sizes.settle(key, 2, false), "settled wide on this start");
    // A third start not yet settled takes the widening; another part does not.
    assert_eq!(sizes.begin(key, 3), Some(true));
    assert_eq!(sizes.begin("insert c=1", 3), None, "per part");
    let start2 = super::starts::ServerStart { number: 2, of: 2 };
    assert_eq!(start2.seeds(super::passes::WIDE_PAIRS), [2, 4, 6]);
}

#[test]
fn targets_of_one_build_run_its_first_n_however_far_their_own() {
    let sizes = Sizes::default();
    let agree = |build: &str, own| sizes.agree("update-index c=16".into(), build, own);
    assert_eq!(agree("sqlite", 500), 500);
    assert_eq!(
        agree("sqlite", 20),
        500,
        "25 times apart, one build: the first n"
    );
    assert_eq!(agree("sqlite", 5_000), 500);
    // Another build sized far from the first runs its own n, and so do its other targets.
    assert_eq!(agree("pg", 50), 50);
    assert_eq!(
        agree("pg", 200),
        50,
        "the build's first n, though near the part's first"
    );
}

#[test]
fn pass_sizes_snap_to_a_grid_that_near_costs_share() {
    let grid: Vec<u64> = [1, 3, 7, 10, 19, 20, 49, 51, 199, 346, 1038, 200_000]
        .into_iter()
        .map(on_grid)
        .collect();
    assert_eq!(grid, [1, 2, 5, 10, 10, 20, 20, 50, 100, 200, 1000, 200_000]);
}

/// A sizing pass's counts: `events` events and `instructions` of the statements.
fn counts(events: u64, instructions: u64) -> Counts {
    Counts {
        units: events,
        events,
        server: instructions,
        background: 0,
        client: 0,
        functions: Default::default(),
    }
}

#[test]
fn sizing_takes_a_cost_per_event_only_from_events_above_the_fixed_costs_noise() {
    let budget = 40_000_000;
    // 16 connections, SQLite's point-query: 307 million instructions whatever the events.
    // 4 and 12 events both ran one a connection: 2.5 million apart is noise, not one event.
    let round = |a: (u64, u64), b: (u64, u64), k| {
        per_event((&counts(a.0, a.1), &counts(b.0, b.1)), k, budget)
    };
    assert_eq!(round((16, 307_000_000), (16, 309_500_000), 4), None);
    // 64 and 192 events: 1.8 million more is under a twentieth of the budget.
    assert_eq!(round((64, 308_000_000), (192, 309_800_000), 64), None);
    // 512 and 1,536: 14 million more, 4.5% of the short pass: 14,000 an event.
    assert_eq!(
        round((512, 314_000_000), (1536, 328_336_000), 512),
        Some(14_000.0)
    );
    // A cost per event that stays within the passes' noise is taken at the last round only.
    let (a, b) = ((5_000, 400_000_000), (15_000, 403_000_000));
    assert_eq!(round(a, b, 5_000 / 8), None);
    assert_eq!(round(a, b, 5_000), Some(300.0));
}
