//! The counting cells of a run that counts instructions (`instructions = true`): which cells
//! count (one per target, not on another host or a running server, at the first client
//! count, as repeat 0), the run's counter chosen and recorded, every target × suite handed to
//! `pool` after the timed cells (up to `count_jobs` at once), and each that ends recorded
//! as finished (with the phases the estimate calibrates from) or as its target's failure.
//!
//! Must not: run beside a timed cell, or count anything itself (`count/` does).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::pool as count_pool;
use super::{ServerStart, start_order};
use crate::plan::{Cell, RunPlan};
use crate::progress::Progress;
use crate::runner::cell;
use crate::runner::{Ctx, Outcome, cell_key, clock_name, data_dir_for, log_path_for};
use crate::store::{CellKey, Store};

/// The products (or families) that only callgrind counts: their sessions do not name the
/// server task serving them (`MySQL and MariaDB`).
fn callgrind_only() -> String {
    let names: Vec<&str> = (crate::engine::families::registry().into_iter())
        .filter(|f| !f.server_tasks())
        .flat_map(|f| match f.products() {
            [] => vec![f.title()],
            products => products.iter().map(|p| p.title).collect(),
        })
        .collect();
    crate::suggest::join(&names, "and")
}

/// The counting cells of a run that counts instructions: one per target (not one on another
/// host or a running server) at the first client count, as repeat 0.
pub(in crate::runner) fn counting_cells(plan: &RunPlan) -> Vec<Cell> {
    if plan.instructions.is_none() {
        return Vec::new();
    }
    let clients = plan
        .cells()
        .into_iter()
        .map(|c| c.clients)
        .min()
        .unwrap_or(1);
    (0..plan.targets.len())
        .filter(|&t| plan.targets[t].remote.is_none() && plan.targets[t].connect.is_none())
        .map(|target| Cell {
            target,
            clients,
            repeat: 0,
        })
        .collect()
}

/// The counting cells (`instructions = true`), after every timed cell: each target × suite,
/// up to `count_jobs` at once (counts do not depend on the host's load); each step stored as it
/// is counted, each cell recorded as it ends.
pub(in crate::runner) fn count_cells(
    plan: &RunPlan,
    store: &mut Store,
    ctx: &Ctx<'_>,
    only: Option<usize>,
    outcome: &mut Outcome,
) -> Result<()> {
    let (progress, work) = (ctx.progress, ctx.work);
    let Some(counting) = plan.instructions else {
        return Ok(());
    };
    let mut cells = counting_cells(plan);
    cells.retain(|c| only.is_none_or(|t| t == c.target));
    if cells.is_empty() {
        return Ok(());
    }
    let Some(counter) = counter_ready(store, progress, work.run_id, outcome)? else {
        return Ok(());
    };
    cells.retain(|c| plan.targets[c.target].broken.is_none());
    let targets: Vec<usize> = cells.iter().map(|c| c.target).collect();
    let starts = ServerStart::all(counting.starts, counting.passes);
    let mut jobs = Vec::new();
    for (target, start) in start_order(&targets, &starts) {
        let Some(&cell) = cells.iter().find(|c| c.target == target) else {
            continue;
        };
        for (index, suite) in plan.suites.iter().enumerate() {
            let key = cell_key(plan, cell, suite.id());
            if !work.finished.contains_key(&key) {
                let at = (cell, index, suite);
                jobs.push(count_job(plan, work.run_dir, at, key, start));
            }
        }
    }
    if jobs.is_empty() {
        return Ok(());
    }
    if let Some(first) = jobs.first() {
        let at = ctx.clock.borrow_mut().begin(&clock_name(&first.key));
        progress.line(&format!("{at}: {} counting cell(s)", jobs.len()));
    }
    let started = std::time::Instant::now();
    let shared = count_pool::Shared {
        plan,
        run_id: work.run_id,
        progress,
        interrupt: ctx.interrupt,
        start: work.start,
        counting,
        counter: &counter,
    };
    let n = jobs.len();
    let mut starts_left = StartsLeft::of(&jobs);
    count_pool::run(jobs, &shared, store, |store, job, end, secs| {
        let Some(secs) = starts_left.ended(job, &end, secs) else {
            drop_log(ctx, job, &end);
            return Ok(true);
        };
        let phases = count_phases(plan, job, counting, secs);
        record_count(store, ctx, job, (end, &phases), outcome).map(|f| f.is_continue())
    })?;
    progress.line(&format!(
        "instructions: {n} counting cell(s) ({} server start(s) per target), {} at once, in {:.1} s",
        starts.len(),
        counting.jobs.min(n as u32).max(1),
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// Remove `job`'s log unless it failed (an interrupted cell runs again whole) or the run keeps
/// its directories; whether it failed.
fn drop_log(ctx: &Ctx<'_>, job: &count_pool::Job<'_>, end: &Result<cell::CellEnd>) -> bool {
    // Ended because dbdelta was signalled: interrupted, not failed.
    let interrupted = ctx.interrupt.load(std::sync::atomic::Ordering::Relaxed);
    let failed = end.is_err() && !interrupted;
    if !ctx.plan.keep && !failed {
        let _ = std::fs::remove_file(&job.log);
    }
    failed
}

/// The server starts of each counting cell still counting: a cell is recorded once, when its
/// last start ended (finished, with the wall time of all its starts) or when one of them did
/// not end done (failed or interrupted).
struct StartsLeft(HashMap<CellKey, (usize, f64, bool)>);

impl StartsLeft {
    fn of(jobs: &[count_pool::Job<'_>]) -> StartsLeft {
        let mut left: HashMap<CellKey, (usize, f64, bool)> = HashMap::new();
        for job in jobs {
            left.entry(job.key.clone()).or_default().0 += 1;
        }
        StartsLeft(left)
    }

    /// `job` ended: the cell's wall seconds when it is to be recorded now, `None` when it
    /// waits for its other starts or was recorded already.
    fn ended(
        &mut self,
        job: &count_pool::Job<'_>,
        end: &Result<cell::CellEnd>,
        secs: f64,
    ) -> Option<f64> {
        let (left, total, recorded) = self.0.entry(job.key.clone()).or_default();
        *left = left.saturating_sub(1);
        *total += secs;
        if *recorded || (*left > 0 && matches!(end, Ok(cell::CellEnd::Done))) {
            return None;
        }
        *recorded = true;
        Some(*total)
    }
}

/// One server start of a target × suite's counting cell: its key, data directory and log
/// (the first start's as before starts were spread, `.count`; the others' `.countN`).
fn count_job<'a>(
    plan: &RunPlan,
    run_dir: &Path,
    (cell, index, suite): (Cell, usize, &'a crate::workload::SuitePlan),
    key: CellKey,
    start: ServerStart,
) -> count_pool::Job<'a> {
    let target = &plan.targets[cell.target];
    let dir = data_dir_for(run_dir, &target.name, cell.clients, 0, (index, suite.id()));
    let dir = match start.number {
        1 => PathBuf::from(format!("{}.count", dir.display())),
        n => PathBuf::from(format!("{}.count{n}", dir.display())),
    };
    count_pool::Job {
        key,
        target: cell.target,
        suite,
        log: log_path_for(&dir),
        dir,
        start,
    }
}

/// What a counting cell that took `secs` did, as the estimate calibrates from it.
fn count_phases(
    plan: &RunPlan,
    job: &count_pool::Job<'_>,
    counting: crate::counter::Counting,
    secs: f64,
) -> crate::results::CellPhases {
    let engine = plan.targets[job.target].engine;
    let shape = crate::plan::estimate::count_shape(engine, job.suite, job.key.clients, counting);
    crate::results::CellPhases {
        secs,
        counting: true,
        load_secs: shape.load_secs,
        postwrites: shape.postwrites,
        postwrite_budget_secs: shape.postwrite_budget_secs,
        steps: shape.steps,
        passes: shape.passes,
        jobs: counting.jobs,
        starts: shape.starts,
        ..Default::default()
    }
}

/// A counting cell that ended: recorded as finished (with its `phases`) or as the target's
/// failure; `Break` when the run was interrupted and must stop.
fn record_count(
    store: &mut Store,
    ctx: &Ctx<'_>,
    job: &count_pool::Job<'_>,
    (end, phases): (Result<cell::CellEnd>, &crate::results::CellPhases),
    outcome: &mut Outcome,
) -> Result<std::ops::ControlFlow<()>> {
    use std::ops::ControlFlow::{Break, Continue};
    let (plan, progress, work) = (ctx.plan, ctx.progress, ctx.work);
    let target = &plan.targets[job.target];
    let failed = drop_log(ctx, job, &end);
    match (end, failed) {
        (Ok(cell::CellEnd::Done), _) => {
            store.finish_cell(work.run_id, &job.key, work.invocation, phases)?;
        }
        (Ok(_), _) | (Err(_), false) => {
            outcome.interrupted = true;
            return Ok(Break(()));
        }
        (Err(e), true) => {
            let log = match job.log.exists() {
                true => format!(" (log: {})", job.log.display()),
                false => String::new(),
            };
            let msg = format!("counting instructions: {e:#}{log}");
            progress.line(&format!("target {}: {msg}", target.name));
            outcome
                .failures
                .push(format!("target {}: {msg}", target.name));
        }
    }
    Ok(Continue(()))
}

/// The run's counter, chosen once ([`crate::counter::choose`]: perf where hardware counters
/// count instructions, else callgrind), said on the terminal and recorded with the run; `None`
/// (a failure of the run) when callgrind is needed and cannot count here. On the perf path
/// callgrind still counts the engines perf cannot (MySQL, MariaDB).
fn counter_ready(
    store: &mut Store,
    progress: &Progress,
    run_id: &str,
    outcome: &mut Outcome,
) -> Result<Option<crate::counter::Counter>> {
    use crate::counter::Counter;
    let (counter, why) = crate::counter::choose();
    let callgrind = crate::counter::check();
    let how = match (&counter, &callgrind) {
        (Counter::Callgrind, Err(no)) => {
            progress.line(&format!("instructions are not counted: {no}"));
            outcome.failures.push(format!("instructions: {no}"));
            return Ok(None);
        }
        (Counter::Callgrind, Ok(c)) => format!("callgrind ({}); {why}", c.version),
        (Counter::Perf { .. }, Ok(c)) => format!(
            "{} ({why}); callgrind ({}) for {}",
            counter.name(),
            c.version,
            callgrind_only()
        ),
        (Counter::Perf { .. }, Err(no)) => {
            format!(
                "{} ({why}); {} cannot be counted: {no}",
                counter.name(),
                callgrind_only()
            )
        }
    };
    progress.line(&format!("instructions: counted by {how}"));
    store.set_run_instructions(run_id, &how)?;
    Ok(Some(counter))
}
