//! The runner: executes a [`RunPlan`] cell by cell and persists every result as it appears.
//!
//! For each target × clients × repeat, for each suite of the plan: fresh data directory, start
//! the engine, record its version and settings, load and index (timed here), postwrite
//! cleanup, then every step ([`step::run`]), each stored the moment it ends; stop the engine
//! and remove the data directory unless `--keep`. A failing target is recorded with its reason
//! and the run goes on; a terminating signal (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT) stops the
//! current step or wait, cleans up and leaves the run marked incomplete. Suites are data ([`SuitePlan`]): nothing here knows a particular one.
//! Must not: render reports, or let drivers/workloads time themselves.

mod auto;
pub mod bisect;
mod cell;
pub mod count;
mod count_functions;
mod count_pool;
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

use anyhow::{Context, Result};

use crate::engine::{self, Dialect, Session, TableDdl};
use crate::plan::{Cell, RunPlan};
use crate::profiler::{self, Perf, ProfileSettings};
use crate::progress::{Progress, RunClock};
use crate::results::{Profiling, RunInfo, TargetInfo};
use crate::store::{CellKey, Store};
use crate::workload::Suite;

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

/// A new run as it begins: recorded (with `targets`), its directory claimed.
struct Begun {
    run_id: String,
    run_dir: PathBuf,
    created_workdir: bool,
    lock: workdir::RunLock,
    invocation: u32,
    perf: Option<Perf>,
}

impl Begun {
    /// Record a new run of `plan` with its (options JSON, label) and `targets`, and claim its
    /// directory; stale run directories are named first.
    fn new(
        plan: &RunPlan,
        store: &mut Store,
        progress: &Progress,
        (options, label): (&str, &crate::store::RunLabel),
        targets: &[TargetInfo],
    ) -> Result<Begun> {
        name_stale(plan, progress)?;
        let run_id = new_run_id();
        let (run_dir, created_workdir, lock) = make_run_dir(plan, &run_id)?;
        let mut info = run_info(plan, &run_id);
        let perf = check_perf(plan, &mut info, progress);
        store.begin_run(&info, targets)?;
        // A new id: nobody else holds it; held, another host's --resume of it is refused.
        store.hold_run(&run_id)?;
        store.set_run_options(&run_id, options)?;
        store.set_run_label(&run_id, label)?;
        let invocation = store.begin_invocation(&run_id, &info.started)?;
        Ok(Begun {
            run_id,
            run_dir,
            created_workdir,
            lock,
            invocation,
            perf,
        })
    }

    /// Where the run's cells work, their servers started by `start`.
    fn work(&self, start: StartServer) -> Work<'_> {
        Work {
            run_id: &self.run_id,
            run_dir: &self.run_dir,
            created_workdir: self.created_workdir,
            lock: &self.lock,
            invocation: self.invocation,
            perf: self.perf.as_ref(),
            finished: BTreeMap::new(),
            start,
        }
    }
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

/// The counting cells of a run that counts instructions: one per target (not one on another
/// host or a running server) at the first client count, as repeat 0.
fn counting_cells(plan: &RunPlan) -> Vec<Cell> {
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

fn cell_key(plan: &RunPlan, cell: Cell, suite: &str) -> CellKey {
    CellKey {
        target: plan.targets[cell.target].name.clone(),
        suite: suite.into(),
        clients: cell.clients,
        repeat: cell.repeat,
    }
}

/// Say which stale run directories earlier interrupted runs left in the work directory.
fn name_stale(plan: &RunPlan, progress: &Progress) -> Result<()> {
    let stale = workdir::stale_runs(&plan.workdir)?;
    for s in &stale {
        progress.line(&format!("stale {}", s.describe()));
    }
    if !stale.is_empty() {
        progress.line(
            "  left by interrupted runs: `dbdelta run --resume RUN` or `dbdelta clean` removes them",
        );
    }
    Ok(())
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

/// Leave the work directory and mark the run (and this invocation) finished.
fn end_run(plan: &RunPlan, store: &mut Store, work: &Work<'_>, complete: bool) -> Result<()> {
    leave_run_dir(plan, work);
    let now = chrono::Utc::now().to_rfc3339();
    store.finish_run(work.run_id, &now, complete)?;
    store.finish_invocation(work.run_id, work.invocation, &now)
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

/// The counting cells (`instructions = true`), after every timed cell: each target × suite,
/// up to `count_jobs` at once (counts do not depend on the host's load); each step stored as it
/// is counted, each cell recorded as it ends.
fn count_cells(
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
    let mut jobs = Vec::new();
    for cell in cells
        .into_iter()
        .filter(|c| plan.targets[c.target].broken.is_none())
    {
        for (index, suite) in plan.suites.iter().enumerate() {
            let key = cell_key(plan, cell, suite.id());
            if !work.finished.contains_key(&key) {
                jobs.push(count_job(plan, work.run_dir, (cell, index, suite), key));
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
    count_pool::run(jobs, &shared, store, |store, job, end, secs| {
        let phases = count_phases(plan, job, counting, secs);
        record_count(store, ctx, job, (end, &phases), outcome).map(|f| f.is_continue())
    })?;
    progress.line(&format!(
        "instructions: {n} counting cell(s), {} at once, in {:.1} s",
        counting.jobs.min(n as u32).max(1),
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// One target × suite's counting cell: its key, data directory and log.
fn count_job<'a>(
    plan: &RunPlan,
    run_dir: &Path,
    (cell, index, suite): (Cell, usize, &'a crate::workload::SuitePlan),
    key: CellKey,
) -> count_pool::Job<'a> {
    let target = &plan.targets[cell.target];
    let dir = data_dir_for(run_dir, &target.name, cell.clients, 0, (index, suite.id()));
    let dir = PathBuf::from(format!("{}.count", dir.display()));
    count_pool::Job {
        key,
        target: cell.target,
        suite,
        log: log_path_for(&dir),
        dir,
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
    let shape =
        crate::plan::estimate::count_shape(engine, job.suite, job.key.clients, counting.passes);
    crate::results::CellPhases {
        secs,
        counting: true,
        load_secs: shape.load_secs,
        postwrites: shape.postwrites,
        postwrite_budget_secs: shape.postwrite_budget_secs,
        steps: shape.steps,
        passes: shape.passes,
        jobs: counting.jobs,
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
    let (plan, progress, interrupt, work) = (ctx.plan, ctx.progress, ctx.interrupt, ctx.work);
    let target = &plan.targets[job.target];
    match end {
        Ok(cell::CellEnd::Done) => {
            if !plan.keep {
                let _ = std::fs::remove_file(&job.log);
            }
            store.finish_cell(work.run_id, &job.key, work.invocation, phases)?;
        }
        Ok(_) => {
            outcome.interrupted = true;
            return Ok(Break(()));
        }
        // Ended because dbdelta was signalled: interrupted, not failed.
        Err(_) if interrupt.load(std::sync::atomic::Ordering::Relaxed) => {
            outcome.interrupted = true;
            return Ok(Break(()));
        }
        Err(e) => {
            let msg = format!("counting instructions: {e:#} (log: {})", job.log.display());
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
            "{} ({why}); callgrind ({}) for MySQL and MariaDB",
            counter.name(),
            c.version
        ),
        (Counter::Perf { .. }, Err(no)) => {
            format!(
                "{} ({why}); MySQL and MariaDB cannot be counted: {no}",
                counter.name()
            )
        }
    };
    progress.line(&format!("instructions: counted by {how}"));
    store.set_run_instructions(run_id, &how)?;
    Ok(Some(counter))
}

/// Unmark the run directory (what `--keep` keeps is not stale), then remove it (and a work
/// directory this run created) when empty, unless `--keep`: whatever is left in them is kept
/// for inspection.
fn leave_run_dir(plan: &RunPlan, work: &Work<'_>) {
    work.lock.unmark();
    if plan.keep {
        return;
    }
    let _ = std::fs::remove_dir(work.run_dir);
    if work.created_workdir {
        let _ = std::fs::remove_dir(&plan.workdir);
    }
}

/// The run's own directory under the work directory, claimed as this process's (a resumed
/// run's may exist already; refused while another dbdelta owns it); `true` when the work
/// directory itself was created here (and so is removed again when the run leaves it empty).
fn make_run_dir(
    plan: &RunPlan,
    run_id: &str,
) -> Result<(std::path::PathBuf, bool, workdir::RunLock)> {
    let created_workdir = !plan.workdir.exists();
    std::fs::create_dir_all(&plan.workdir).with_context(|| {
        format!(
            "--workdir {}: cannot create the work directory",
            plan.workdir.display()
        )
    })?;
    let run_dir = plan.workdir.join(run_id);
    std::fs::create_dir_all(&run_dir)
        .with_context(|| format!("cannot create run directory {}", run_dir.display()))?;
    let lock = workdir::claim(&run_dir, run_id)?;
    Ok((run_dir, created_workdir, lock))
}

/// Targets that failed before the run (their build): recorded as failed with their log, so
/// the report says why they have no results; the other targets run.
fn record_broken(
    plan: &RunPlan,
    run_id: &str,
    store: &mut Store,
    failures: &mut Vec<String>,
) -> Result<()> {
    for t in &plan.targets {
        if let Some(b) = &t.broken {
            let log = b.log.as_ref().map(|l| l.display().to_string());
            store.fail_target(run_id, &t.name, &b.error, log.as_deref())?;
            failures.push(format!("target {}: {}", t.name, b.error));
        }
    }
    Ok(())
}

/// The run's record as it starts.
fn run_info(plan: &RunPlan, run_id: &str) -> RunInfo {
    RunInfo {
        id: run_id.to_string(),
        lab: plan.lab.name.clone(),
        lab_text: plan.lab.text.clone(),
        started: chrono::Utc::now().to_rfc3339(),
        finished: None,
        complete: false,
        host: crate::host::describe(),
        dbdelta_version: env!("CARGO_PKG_VERSION").to_string(),
        quick: plan.quick,
        min_effect: Some(plan.lab.min_effect),
        looks: plan.auto.map(|a| a.looks()),
        profiling: None,
        invocations: Vec::new(),
    }
}

/// In a profiled run: whether perf can record here, recorded in `info` (and said on the
/// terminal when it cannot); `perf` when it can.
fn check_perf(plan: &RunPlan, info: &mut RunInfo, progress: &Progress) -> Option<Perf> {
    let settings = plan.profile?;
    let checked = profiler::check(&settings);
    info.profiling = Some(profiling_info(&settings, &checked));
    if let Err(why) = &checked {
        progress.line(&format!("no CPU profiles: {why}"));
    }
    checked.ok()
}

/// What the run records of its profiling: the settings and `perf`'s version, or why there
/// are no profiles.
fn profiling_info(settings: &ProfileSettings, perf: &Result<Perf, String>) -> Profiling {
    Profiling {
        hz: settings.hz,
        call_graph: settings.call_graph.name().into(),
        perf: perf.as_ref().ok().map(|p| p.version.clone()),
        system_wide: perf.as_ref().is_ok_and(|p| p.system_wide),
        unavailable: perf.as_ref().err().cloned(),
    }
}

/// The targets' records as the run starts (server version and settings come later).
fn target_infos(plan: &RunPlan) -> Vec<TargetInfo> {
    plan.targets
        .iter()
        .map(|t| TargetInfo {
            name: t.name.clone(),
            engine: t.engine.name().to_string(),
            config_name: t.config_name.clone(),
            config_text: t.settings.join("\n"),
            env: t.env.clone(),
            placement: t.placement.name.clone(),
            server_cpus: t.placement.server.as_ref().map(|c| c.to_string()),
            client_cpus: t.placement.client.as_ref().map(|c| c.to_string()),
            build: t.built.clone(),
            connect: t.connect.as_ref().map(|c| c.shown()),
            sweep: t.sweep.clone(),
            ..Default::default()
        })
        .collect()
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
