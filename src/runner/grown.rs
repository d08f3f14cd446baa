//! A run that grows one target at a time (`dbdelta bisect`, `dbdelta explain`): begun with no
//! target, each target added when the caller decides to measure it, its cells (timed, then
//! counting; or only counting) run at once and stored like any run's, then the run is finished.
//!
//! Owns only the order of those calls; the cells run through the same code as `execute`'s.
//! Must not: decide which target comes next (the caller does), or render anything.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::begin_end::{Begun, end_run, target_infos};
use super::count::cells::{count_cells, counting_cells};
use super::server::StartServer;
use super::{Ctx, Outcome, run_clock, timed_cells};
use crate::plan::RunPlan;
use crate::progress::Progress;
use crate::store::{RunLabel, Store};

/// Which of a target's cells [`Grown::add`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cells {
    /// Every timed cell, then its counting cell when the plan counts instructions.
    TimedThenCounted,
    /// Only the counting cell (the plan counts instructions; `dbdelta explain`'s twins are
    /// judged by instructions alone): its steps' rows hold the counted values, nothing timed.
    CountedOnly,
}

/// A begun run whose targets are added one by one ([`Grown::add`]).
pub struct Grown {
    begun: Begun,
    /// Per target of the plan: its server's version and settings are recorded.
    recorded_server: Vec<bool>,
    start: StartServer,
}

impl Grown {
    /// Begin a run of `plan` with no target yet (the run's record, its directory, its options
    /// and label), as `execute` begins one.
    pub fn begin(
        plan: &RunPlan,
        store: &mut Store,
        progress: &Progress,
        options: &str,
        label: &RunLabel,
        start: StartServer,
    ) -> Result<Grown> {
        let begun = Begun::new(plan, store, progress, (options, label), &[])?;
        progress.line(&format!(
            "run {}: {} — targets added as they are measured, results in {}",
            begun.run_id,
            plan.lab.name,
            store.path().display()
        ));
        Ok(Grown {
            begun,
            recorded_server: vec![false; plan.targets.len()],
            start,
        })
    }

    pub fn run_id(&self) -> &str {
        &self.begun.run_id
    }

    /// Add `plan`'s target number `target` (prepared: its fetch or build done) to the run and
    /// run its `cells`. A failed build is recorded as the target's failure.
    pub fn add(
        &mut self,
        plan: &RunPlan,
        (target, cells): (usize, Cells),
        store: &mut Store,
        progress: &Progress,
        interrupt: &Arc<AtomicBool>,
    ) -> Result<Outcome> {
        let info = target_infos(plan).swap_remove(target);
        store.add_target(&self.begun.run_id, target, &info)?;
        let mut outcome = Outcome {
            run_id: self.begun.run_id.clone(),
            failures: Vec::new(),
            interrupted: false,
        };
        if let Some(b) = &plan.targets[target].broken {
            let log = b.log.as_ref().map(|l| l.display().to_string());
            store.fail_target(&self.begun.run_id, &info.name, &b.error, log.as_deref())?;
            (outcome.failures).push(format!("target {}: {}", info.name, b.error));
            return Ok(outcome);
        }
        let mut recorded = std::mem::take(&mut self.recorded_server);
        let work = self.begun.work(self.start);
        let ctx = Ctx {
            plan,
            progress,
            interrupt,
            work: &work,
            clock: run_clock(plan, store, &work, Some(target), progress),
        };
        let timed = match cells {
            Cells::TimedThenCounted => {
                timed_cells(&ctx, store, Some(target), &mut recorded, &mut outcome)
            }
            Cells::CountedOnly => counted_rows(plan, target, store, &self.begun.run_id),
        };
        let counted = match (&timed, outcome.interrupted) {
            (Ok(()), false) => count_cells(plan, store, &ctx, Some(target), &mut outcome),
            _ => Ok(()),
        };
        self.recorded_server = recorded;
        timed.and(counted)?;
        Ok(outcome)
    }

    /// Add every target of `plan` (all prepared, none recorded yet) and count them together,
    /// by instructions only: their server starts in the counting cells' order (A B B A),
    /// `count_jobs` at once, as one run counts its targets (`dbdelta calibrate`'s A/A).
    pub fn add_counted(
        &mut self,
        plan: &RunPlan,
        store: &mut Store,
        progress: &Progress,
        interrupt: &Arc<AtomicBool>,
    ) -> Result<Outcome> {
        let mut outcome = Outcome {
            run_id: self.begun.run_id.clone(),
            failures: Vec::new(),
            interrupted: false,
        };
        for (target, info) in target_infos(plan).into_iter().enumerate() {
            store.add_target(&self.begun.run_id, target, &info)?;
            if let Some(b) = &plan.targets[target].broken {
                let log = b.log.as_ref().map(|l| l.display().to_string());
                store.fail_target(&self.begun.run_id, &info.name, &b.error, log.as_deref())?;
                (outcome.failures).push(format!("target {}: {}", info.name, b.error));
                return Ok(outcome);
            }
            counted_rows(plan, target, store, &self.begun.run_id)?;
        }
        let work = self.begun.work(self.start);
        let ctx = Ctx {
            plan,
            progress,
            interrupt,
            work: &work,
            clock: run_clock(plan, store, &work, None, progress),
        };
        count_cells(plan, store, &ctx, None, &mut outcome)?;
        Ok(outcome)
    }

    /// Finish the run: complete unless it was interrupted.
    pub fn finish(self, plan: &RunPlan, store: &mut Store, complete: bool) -> Result<()> {
        end_run(plan, store, &self.begun.work(self.start), complete)
    }
}

/// The rows a counted-only target's steps are stored on (a counting pass stores its values on
/// the step's first repeat): where each belongs and at what scale, with nothing timed (its
/// per-op values over zero operations are n/a).
fn counted_rows(plan: &RunPlan, target: usize, store: &mut Store, run_id: &str) -> Result<()> {
    let cells = counting_cells(plan)
        .into_iter()
        .filter(|c| c.target == target);
    for cell in cells {
        for suite in &plan.suites {
            for step in &suite.steps {
                let m = super::cell::step_record(&plan.targets[target], suite, step, cell);
                store.save_step(run_id, &m, &[], &[], &[])?;
            }
        }
    }
    Ok(())
}
