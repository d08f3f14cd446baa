//! `dbdelta calibrate LAB`: each step's floor for the build of one of the lab's targets (the
//! base by default): the target and a twin of it (`T-again`, the same spec) are counted by
//! instructions alone in a run of their own (kind `calibrate`, `runner::Grown::add_counted`),
//! together, each over its server starts in the order A B B A, and the A/A's report gives per step how far two identical
//! servers of the build moved: the farthest end of the ratio's range from 1, on the log scale.
//! The floors are stored per build (engine, server version, dbdelta's build key), replacing an
//! older calibration's, and every report of a run with that build judges by them.
//!
//! Owns the calibration's run and the arithmetic from an A/A's range to a floor. Must not:
//! count (the runner does), judge (the report does) or print (the CLI does).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, anyhow};

use crate::plan::RunPlan;
use crate::progress::Progress;
use crate::results::Metric;
use crate::results::floors::build_key;
use crate::runner::Grown;
use crate::store::{RunLabel, Store};

/// One step's outcome of a calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct Floor {
    pub step: String,
    pub clients: u32,
    /// The floor stored, or why there is none.
    pub floor: Result<f64, String>,
    /// The A/A's ratio, range and verdict, as the report gave them.
    pub ratio: f64,
    pub range: [f64; 2],
    pub verdict: String,
}

/// What a calibration measured and stored.
#[derive(Debug)]
pub struct Calibrated {
    pub run_id: String,
    pub build: String,
    pub floors: Vec<Floor>,
}

/// The floor an A/A's range gives: how far its farther end lies from 1 on the log scale
/// (0.99–1.003 gives 1.0%); none where the range reaches zero.
pub fn floor_of(range: [f64; 2]) -> Option<f64> {
    let [low, high] = range;
    (low > 0.0 && high.is_finite()).then(|| low.ln().abs().max(high.ln().abs()).exp_m1())
}

/// Count `plan`'s target number `target` and its twin, then store each step's floor for the
/// target's build. `options`: the stored options of the run (as `run` stores them).
pub fn calibrate(
    plan: &RunPlan,
    target: usize,
    store: &mut Store,
    (progress, interrupt): (&Progress, &Arc<AtomicBool>),
    options: &str,
) -> Result<Calibrated> {
    let mut one = plan.clone();
    one.targets = vec![plan.targets[target].clone()];
    let prepared = crate::plan::prepare(one, progress)?;
    let base = prepared.targets[0].clone();
    let mut twin = base.clone();
    twin.name = crate::results::twin_name(&base.name, None);
    let mut grown_plan: RunPlan = (*prepared).clone();
    grown_plan.targets.clear();
    let label = RunLabel {
        calibrates: true,
        ..RunLabel::default()
    };
    let start = crate::remote::start;
    let mut run = Grown::begin(&grown_plan, store, progress, options, &label, start)?;
    let run_id = run.run_id().to_string();
    grown_plan.targets = vec![base.clone(), twin];
    let outcome = run.add_counted(&grown_plan, store, progress, interrupt)?;
    let failed = match (outcome.interrupted, outcome.failures.first()) {
        (true, _) => Some(anyhow!("interrupted while counting")),
        (false, Some(f)) => Some(anyhow!("{f}")),
        (false, None) => None,
    };
    run.finish(&grown_plan, store, failed.is_none())?;
    if let Some(e) = failed {
        return Err(e.context(format!(
            "calibrate: run {run_id} stopped; no floor was stored"
        )));
    }
    store_floors(store, &run_id, &base.name)
}

/// The A/A's report (the target against its twin) and each counted step's floor, stored for
/// the target's build.
fn store_floors(store: &mut Store, run_id: &str, base: &str) -> Result<Calibrated> {
    let data = store.load_run(run_id)?;
    let info = (data.targets.iter()).find(|t| t.name == base);
    let build = info.and_then(build_key).with_context(|| {
        format!("calibrate: run {run_id}: {base}'s server reported no version; no floor stored")
    })?;
    let model = crate::report::build(&data, Some(base))?;
    let mut floors = Vec::new();
    for r in model.relative.iter().filter(|r| r.base == base) {
        let Some(t) = r.tests.spread(Metric::ServerInstr) else {
            continue;
        };
        let floor = floor_of(t.range).ok_or_else(|| {
            "the pairs disagree by more than half (unmeasurable): no floor".to_string()
        });
        if let Ok(f) = floor {
            let suite = (data.measurements.iter())
                .find(|m| m.step == r.step)
                .map_or("", |m| m.suite.as_str());
            store.set_floor(&build, (suite, &r.step, r.clients), f, run_id)?;
        }
        floors.push(Floor {
            step: r.step.clone(),
            clients: r.clients,
            floor,
            ratio: t.ratio,
            range: t.range,
            verdict: t.verdict.clone(),
        });
    }
    Ok(Calibrated {
        run_id: run_id.to_string(),
        build,
        floors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_floor_is_the_ranges_farther_end_from_one() {
        let f = floor_of([0.99, 1.003]).unwrap();
        assert!((f - (1.0 / 0.99 - 1.0)).abs() < 1e-12, "{f}");
        assert!((floor_of([0.999, 1.02]).unwrap() - 0.02).abs() < 1e-12);
        assert_eq!(floor_of([1.0, 1.0]), Some(0.0));
        assert_eq!(floor_of([-0.1, 2.0]), None);
    }
}
