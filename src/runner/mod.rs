//! The runner: executes a [`RunPlan`] cell by cell and persists every result as it appears.
//!
//! For each target × clients × repeat, for each suite of the plan: fresh data directory, start
//! the engine, record its version and settings, load and index (timed here), postwrite
//! cleanup, then every step ([`step::run`]), each stored the moment it ends; stop the engine
//! and remove the data directory unless `--keep`. A failing target is recorded with its reason
//! and the run goes on; a terminating signal (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT) stops the
//! current step or wait, cleans up and leaves the run marked incomplete. Suites are data ([`SuitePlan`]): nothing here knows a particular one.
//! Must not: render reports, or let drivers/workloads time themselves.
//!
//! This file keeps what callers use (`execute`, `resume`, `plan_keys`, the client-bound rule,
//! the timed load) and the order of a run's timed cells; `begin_end` (a run's record and
//! directory as it begins, and its end), `cell/` (one cell), `count/cells` (the counting cells
//! after the timed ones) and the files below hold the rest.

mod auto;
mod begin_end;
pub mod bisect;
mod cell;
pub mod count;
mod grown;
pub mod pacer;
pub mod recorder;
mod server;
mod settle;
pub mod snapshot;
pub mod step;
mod watchdog;
pub mod workdir;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::Result;

use crate::engine::{self, Dialect, Session, TableDdl};
use crate::plan::{Cell, RunPlan};
use crate::profiler::Perf;
use crate::progress::{Progress, RunClock};
use crate::store::{CellKey, Store};
use crate::workload::Suite;
use begin_end::{Begun, check_perf, end_run, make_run_dir, record_broken, run_info, target_infos};
use count::cells::{count_cells, counting_cells};

pub use grown::{Cells, Grown};
pub use server::{ClientsThere, StartServer, TargetServer};

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub run_id: String,
    /// One line per failed target or step.
    pub failures: Vec<String>,
    pub interrupted: bool,
}

/// A new run id: sortable UTC time plus a random suffix.
pub fn new_run_id() -> String {
    let now = chrono::Utc::now();
    format!(
        "{}-{:04x}",
        now.format("%Y%m%d-%H%M%S"),
        rand::random::<u16>()
    )
}

/// The data directory of one target × clients × repeat for the plan's suite number
/// `suite`: the first suite's is the engine's plain name, later ones add the suite's id (each
/// suite runs on its own fresh data directory).
fn data_dir_for(
    run_dir: &Path,
    target: &str,
    clients: u32,
    repeat: u32,
    suite: (usize, &str),
) -> PathBuf {
    let dir = engine::data_dir_for(run_dir, target, clients, repeat);
    match suite {
        (0, _) => dir,
        (_, id) => PathBuf::from(format!("{}.{id}", dir.display())),
    }
}

/// The server log of a data directory: beside it, so it outlives the directory.
fn log_path_for(data_dir: &Path) -> PathBuf {
    PathBuf::from(format!("{}.log", data_dir.display()))
}

/// Removes a data directory when dropped, unless told to keep it.
struct DataDir {
    path: PathBuf,
    keep: bool,
}

impl Drop for DataDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Execute `plan` as a new run, writing into `store`, each target's server started by
/// `start`; `options` is the JSON of the command-line options that shaped the plan (kept for
/// `--resume`). Returns how it ended; errors are only for failures that stop the whole run
/// (the store or the work directory).
pub fn execute(
    plan: &RunPlan,
    store: &mut Store,
    progress: &Progress,
    interrupt: &Arc<AtomicBool>,
    options: &str,
    label: &crate::store::RunLabel,
    start: StartServer,
) -> Result<Outcome> {
    let begun = Begun::new(plan, store, progress, (options, label), &target_infos(plan))?;
    progress.line(&format!(
        "run {}: {} — {} target(s), results in {}",
        begun.run_id,
        plan.lab.name,
        plan.targets.len(),
        store.path().display()
    ));
    run_cells(plan, store, progress, interrupt, &begun.work(start))
}

/// Continue the stored, interrupted run `run_id` with `plan` (rebuilt from what the run
/// stored): first the run's directory is claimed (refused, naming its PID, while another
/// dbdelta works on the run) and cleared, then stale run directories are removed (their
/// servers stopped), what the unfinished cells stored is deleted, and every cell that did not
/// finish runs whole (servers started by `start`), recorded as this invocation's.
pub fn resume(
    plan: &RunPlan,
    store: &mut Store,
    progress: &Progress,
    interrupt: &Arc<AtomicBool>,
    run_id: &str,
    start: StartServer,
) -> Result<Outcome> {
    let (run_dir, created_workdir, lock) = make_run_dir(plan, run_id)?;
    let left = lock.clear()?;
    if left > 0 {
        progress.line(&format!(
            "removing stale {}: {left} data director(ies)/file(s) an earlier invocation of run {run_id} left",
            run_dir.display()
        ));
    }
    for stale in workdir::stale_runs(&plan.workdir)? {
        progress.line(&format!("removing stale {}", stale.describe()));
        workdir::remove(&stale, true)?;
    }
    let finished = store.finished_cells(run_id)?;
    for key in plan_keys(plan) {
        if !finished.contains_key(&key) {
            let steps = store.discard_cell(run_id, &key)?;
            if steps > 0 {
                progress.line(&format!(
                    "{} c={} r={} {}: cut off after {steps} step(s); it runs again whole",
                    key.target, key.clients, key.repeat, key.suite
                ));
            }
        }
    }
    store.reopen_run(run_id)?;
    let started = chrono::Utc::now().to_rfc3339();
    let invocation = store.begin_invocation(run_id, &started)?;
    let mut info = run_info(plan, run_id);
    let perf = check_perf(plan, &mut info, progress);
    progress.line(&format!(
        "run {run_id}: resumed (invocation {invocation}): {} of {} planned cell(s) finished before, results in {}",
        plan_keys(plan).iter().filter(|k| finished.contains_key(k)).count(),
        plan_keys(plan).len(),
        store.path().display()
    ));
    let work = Work {
        run_id,
        run_dir: &run_dir,
        created_workdir,
        lock: &lock,
        invocation,
        perf: perf.as_ref(),
        finished,
        start,
    };
    run_cells(plan, store, progress, interrupt, &work)
}

/// Every cell × suite of the plan, as the store names it: the timed cells, then the counting
/// cells (repeat 0) of a run that counts instructions.
pub fn plan_keys(plan: &RunPlan) -> Vec<CellKey> {
    let mut out = Vec::new();
    for cell in plan.cells() {
        for suite in &plan.suites {
            out.push(cell_key(plan, cell, suite.id()));
        }
    }
    for cell in counting_cells(plan) {
        for suite in &plan.suites {
            out.push(cell_key(plan, cell, suite.id()));
        }
    }
    out
}

fn cell_key(plan: &RunPlan, cell: Cell, suite: &str) -> CellKey {
    CellKey {
        target: plan.targets[cell.target].name.clone(),
        suite: suite.into(),
        clients: cell.clients,
        repeat: cell.repeat,
    }
}

/// One invocation's place to work: its run, directory and number, and the cells finished
/// before it (skipped).
struct Work<'a> {
    run_id: &'a str,
    run_dir: &'a Path,
    created_workdir: bool,
    /// This process owns the run directory while this lives.
    lock: &'a workdir::RunLock,
    invocation: u32,
    perf: Option<&'a Perf>,
    finished: BTreeMap<CellKey, u32>,
    /// Starts each cell's server.
    start: StartServer,
}

/// Run every cell × suite of the plan that did not finish before, each recorded finished as it
/// ends; then leave the work directory and mark the run (and this invocation) finished.
fn run_cells(
    plan: &RunPlan,
    store: &mut Store,
    progress: &Progress,
    interrupt: &Arc<AtomicBool>,
    work: &Work<'_>,
) -> Result<Outcome> {
    let run_id = work.run_id;
    let mut outcome = Outcome {
        run_id: run_id.to_string(),
        failures: Vec::new(),
        interrupted: false,
    };
    let mut recorded_server = vec![false; plan.targets.len()];
    record_broken(plan, run_id, store, &mut outcome.failures)?;
    let ctx = Ctx {
        plan,
        progress,
        interrupt,
        work,
        clock: run_clock(plan, store, work, None, progress),
    };
    timed_cells(&ctx, store, None, &mut recorded_server, &mut outcome)?;
    if !outcome.interrupted {
        auto::rounds(&ctx, store, &mut recorded_server, &mut outcome)?;
    }
    if !outcome.interrupted {
        count_cells(plan, store, &ctx, None, &mut outcome)?;
    }
    end_run(plan, store, work, !outcome.interrupted)?;
    Ok(outcome)
}

/// The timed cells of the plan (only target `only`'s, when given), in order, each × suite;
/// stops at an interruption.
fn timed_cells(
    ctx: &Ctx<'_>,
    store: &mut Store,
    only: Option<usize>,
    recorded_server: &mut [bool],
    outcome: &mut Outcome,
) -> Result<()> {
    let plan = ctx.plan;
    let cells = (plan.cells().into_iter()).filter(|c| only.is_none_or(|t| t == c.target));
    for cell in cells {
        if plan.targets[cell.target].broken.is_some() {
            continue;
        }
        for (index, suite) in plan.suites.iter().enumerate() {
            let end = ctx.run_cell(store, cell, (index, suite), recorded_server, outcome)?;
            if end == Some(cell::CellEnd::Interrupted) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// What every cell of an invocation shares.
struct Ctx<'a> {
    plan: &'a RunPlan,
    progress: &'a Progress,
    interrupt: &'a Arc<AtomicBool>,
    work: &'a Work<'a>,
    /// Which cell of how many, and the time left.
    clock: RefCell<RunClock>,
}

/// The run's clock over the cells still to run (only target `only`'s, when given), from the
/// plan's estimate calibrated by what the store measured on this host; the estimate is said
/// as the run starts.
fn run_clock(
    plan: &RunPlan,
    store: &Store,
    work: &Work<'_>,
    only: Option<usize>,
    progress: &Progress,
) -> RefCell<RunClock> {
    use crate::plan::estimate::{self, CALIBRATION_CELLS, Calibration};
    // The estimate is help, not a result: a store that cannot say leaves the defaults.
    let stored =
        (store.cell_phases(&crate::host::describe(), CALIBRATION_CELLS)).unwrap_or_default();
    let est = estimate::estimate(plan, &Calibration::from_stored(&stored));
    if only.is_none() {
        progress.line(&est.describe(plan));
    }
    let left: Vec<(CellKey, f64, bool)> = (est.cells.iter())
        .filter(|c| only.is_none_or(|t| t == c.cell.target))
        .map(|c| {
            (
                cell_key(plan, c.cell, plan.suites[c.suite].id()),
                c.secs,
                c.counting,
            )
        })
        .filter(|(key, _, _)| !work.finished.contains_key(key))
        .collect();
    let mut planned: Vec<(String, f64)> = (left.iter())
        .filter(|(_, _, counting)| !counting)
        .map(|(key, secs, _)| (clock_name(key), *secs))
        .collect();
    // The counting cells run `count_jobs` at once: one step of the clock, named by the first.
    let counting: Vec<&(CellKey, f64, bool)> = left.iter().filter(|c| c.2).collect();
    if let Some((first, _, _)) = counting.first() {
        let jobs = plan.instructions.map_or(1, |c| c.jobs.max(1)) as usize;
        let secs: Vec<f64> = counting.iter().map(|c| c.1).collect();
        planned.push((clock_name(first), estimate::pool_wall(&secs, jobs)));
    }
    RefCell::new(RunClock::new(planned))
}

/// A cell's name on the run's clock.
fn clock_name(key: &CellKey) -> String {
    format!(
        "{} c={} r={} {}",
        key.target, key.clients, key.repeat, key.suite
    )
}

impl Ctx<'_> {
    /// Runs one cell of `suite` (the plan's suite number `index`, or a copy with fewer steps)
    /// unless it finished before, and records it finished when it ended with no failure.
    /// `None`: skipped (finished before).
    fn run_cell(
        &self,
        store: &mut Store,
        cell: Cell,
        (index, suite): (usize, &crate::workload::SuitePlan),
        recorded_server: &mut [bool],
        outcome: &mut Outcome,
    ) -> Result<Option<cell::CellEnd>> {
        let (plan, work) = (self.plan, self.work);
        let key = cell_key(plan, cell, suite.id());
        if work.finished.contains_key(&key) {
            return Ok(None);
        }
        if self.interrupt.load(std::sync::atomic::Ordering::Relaxed) {
            outcome.interrupted = true;
            return Ok(Some(cell::CellEnd::Interrupted));
        }
        let target = &plan.targets[cell.target];
        let at = self.clock.borrow_mut().begin(&clock_name(&key));
        self.progress.line(&format!("{at}: {}", clock_name(&key)));
        let data_dir = data_dir_for(
            work.run_dir,
            &target.name,
            cell.clients,
            cell.repeat,
            (index, suite.id()),
        );
        let mut ctx = cell::CellRun {
            plan,
            suite,
            cell,
            target,
            run_id: work.run_id,
            data_dir: &data_dir,
            store,
            progress: self.progress,
            interrupt: self.interrupt,
            record_server: !recorded_server[cell.target],
            failures: &mut outcome.failures,
            log: &log_path_for(&data_dir),
            profile: work.perf.zip(plan.profile),
            start: work.start,
            clients_there: None,
            settling: None,
            loaded: cell::Loaded::Fresh,
            phases: Default::default(),
        };
        let failures_before = ctx.failures.len();
        let end = ctx.run_and_record()?;
        let phases = std::mem::take(&mut ctx.phases);
        match end {
            cell::CellEnd::Done => {
                recorded_server[cell.target] = true;
                // A cell with a failed step (a full disk, a lost connection) ran to its end but
                // is not finished: --resume runs it again.
                if outcome.failures.len() == failures_before {
                    store.finish_cell(work.run_id, &key, work.invocation, &phases)?;
                }
            }
            cell::CellEnd::Failed => {}
            cell::CellEnd::Interrupted => outcome.interrupted = true,
        }
        Ok(Some(end))
    }
}

/// Below this share of a core per client connection, a client is not the bottleneck whatever
/// its cost next to the server's: a server that waits (on fsync, on locks) uses little CPU per
/// op too, and a client busy 1% of its time waits with it.
pub const CLIENT_BOUND_MIN_BUSY: f64 = 0.1;

/// The client may be the bottleneck (docs/measurement.md, What is measured): one client thread was
/// busy more than 80% of the time, or its CPU per op is at least half the server's while each
/// client connection kept a core busy at least [`CLIENT_BOUND_MIN_BUSY`] of the wall time
/// (`client_busy`, from [`crate::cpus::busy_share`]; unknown: judged by cost alone).
pub fn client_bound(
    client_us: Option<f64>,
    server_us: Option<f64>,
    client_busy: Option<f64>,
    busiest: Option<f64>,
) -> bool {
    let by_cost = matches!((client_us, server_us), (Some(c), Some(s)) if s > 0.0 && c >= 0.5 * s)
        && client_busy.is_none_or(|b| b >= CLIENT_BOUND_MIN_BUSY);
    by_cost || busiest.is_some_and(|b| b > 0.8)
}

/// Create and fill `suite`'s tables on `session` (with the target's table DDL), then build
/// the indexes its load builds. Returns (load seconds, index seconds), each timed here.
pub fn timed_load(
    suite: &dyn Suite,
    session: &mut dyn Session,
    dialect: Dialect,
    ddl: &TableDdl,
    clients: u32,
) -> Result<(f64, f64)> {
    let started = Instant::now();
    suite.fill(session, dialect, ddl, clients)?;
    let load_secs = started.elapsed().as_secs_f64();
    if crate::signals::interrupted() {
        anyhow::bail!("the load was interrupted: dbdelta was signalled");
    }
    let started = Instant::now();
    suite.index(session, dialect, ddl, clients)?;
    Ok((load_secs, started.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::client_bound;
    use crate::cpus::busy_share;

    #[test]
    fn a_client_using_a_sliver_of_a_core_is_not_client_bound() {
        // PostgreSQL update-one at 22 QPS, 1 client: the server waits on fsync, so its CPU
        // per op is small next to the client's, but the client is on CPU 0.07% of the time.
        let (client, server) = (Some(30.0), Some(50.0));
        let idle = busy_share(client, Some(22.0), 1);
        assert!(idle.is_some_and(|b| b < 0.001), "{idle:?}");
        assert!(!client_bound(client, server, idle, Some(0.01)));
        // The same costs at 20,000 QPS: the client is busy 60% of the time.
        let busy = busy_share(client, Some(20_000.0), 1);
        assert!(client_bound(client, server, busy, Some(0.6)));
        // Cheap next to the server: not client-bound, however busy.
        assert!(!client_bound(Some(10.0), server, busy, Some(0.6)));
        // A client thread busy more than 80% of the time is client-bound whatever the costs.
        assert!(client_bound(Some(1.0), server, idle, Some(0.85)));
        // Without a rate, the costs decide alone (as before).
        assert!(client_bound(client, server, None, None));
    }
}
