//! Counting cells of several targets at once (`count_jobs`): instruction counts do not depend
//! on the host's load, so the counting cells, which run after every timed cell, need not wait
//! for each other.
//!
//! Owns the workers and the hand-over: each worker takes the next target × suite from a
//! shared queue and runs its [`CountCell`]; every counted step's values go over a channel to
//! the thread that owns the store, which writes them at once (a step is in the store as soon as
//! it is counted, as with one job) and answers; a finished cell goes back the same way, to be
//! recorded by the caller with its wall time (what the plan's estimate calibrates from). A
//! cell one of whose server starts failed starts no other: its count is lost either way, and
//! a start that is not run costs nothing (one line says so). Must
//! not: run beside a timed cell (it is only called after them), time anything but whole
//! cells, or touch the store from a worker.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use anyhow::Result;

use super::{Count, CountCell, CountSink, ServerStart, Sizes};
use crate::counter::Counting;
use crate::plan::RunPlan;
use crate::progress::Progress;
use crate::runner::cell::CellEnd;
use crate::runner::server::StartServer;
use crate::store::{CellKey, Store};
use crate::workload::SuitePlan;

/// One counting cell to run: its key, the suite (with its index in the plan), where its data
/// directory and log go.
pub(super) struct Job<'a> {
    pub key: CellKey,
    pub target: usize,
    pub suite: &'a SuitePlan,
    pub dir: std::path::PathBuf,
    pub log: std::path::PathBuf,
    /// Which of the target's server starts this job counts.
    pub start: ServerStart,
}

/// What a worker hands the store's thread.
enum Msg {
    /// A counted step's values, to be stored now; the answer: whether a timed row held them.
    Counted {
        key: CellKey,
        step: String,
        count: Box<Count>,
        stored: mpsc::Sender<Result<bool>>,
    },
    /// A cell ended (its job's index in the queue, how, and its wall seconds).
    Ended(usize, Result<CellEnd>, f64),
}

/// A worker's sink: each step's values to the store's thread, waiting for its answer.
struct ToStore(mpsc::Sender<Msg>);

impl CountSink for ToStore {
    fn counted(&mut self, key: &CellKey, _run_id: &str, step: &str, count: &Count) -> Result<bool> {
        let (tx, rx) = mpsc::channel();
        let msg = Msg::Counted {
            key: key.clone(),
            step: step.to_string(),
            count: Box::new(count.clone()),
            stored: tx,
        };
        self.0
            .send(msg)
            .map_err(|_| anyhow::anyhow!("the run stopped taking counts"))?;
        rx.recv()
            .map_err(|_| anyhow::anyhow!("the run stopped taking counts"))?
    }
}

/// What every job shares.
pub(super) struct Shared<'a> {
    pub plan: &'a RunPlan,
    pub run_id: &'a str,
    pub progress: &'a Progress,
    pub interrupt: &'a Arc<AtomicBool>,
    pub start: StartServer,
    pub counting: Counting,
    /// The run's counter ([`crate::counter::choose`]).
    pub counter: &'a crate::counter::Counter,
}

/// Run `jobs` on up to `counting.jobs` workers, storing each counted step as it comes;
/// `ended` records each finished cell (in the order they end, with its wall seconds) and
/// returns false to stop handing out new jobs (an interrupted run).
pub(super) fn run(
    jobs: Vec<Job<'_>>,
    shared: &Shared<'_>,
    store: &mut Store,
    mut ended: impl FnMut(&mut Store, &Job<'_>, Result<CellEnd>, f64) -> Result<bool>,
) -> Result<()> {
    let workers = (shared.counting.jobs.max(1) as usize).min(jobs.len());
    let queue = Mutex::new((0..jobs.len()).collect::<VecDeque<usize>>());
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<Msg>();
    let sizes = Sizes::default();
    let failed = Mutex::new(HashSet::new());
    std::thread::scope(|s| -> Result<()> {
        for _ in 0..workers {
            let tx = tx.clone();
            let (queue, stop, jobs, sizes) = (&queue, (&stop, &failed), &jobs, &sizes);
            s.spawn(move || worker(jobs, queue, stop, (shared, sizes), tx));
        }
        drop(tx);
        let mut first_error = None;
        for msg in rx {
            match msg {
                Msg::Counted {
                    key,
                    step,
                    count,
                    stored,
                } => {
                    let r = store.counted(&key, shared.run_id, &step, &count);
                    let _ = stored.send(r);
                }
                Msg::Ended(i, end, secs) => match ended(store, &jobs[i], end, secs) {
                    Ok(true) => {}
                    Ok(false) => stop.store(true, Ordering::Relaxed),
                    Err(e) => {
                        stop.store(true, Ordering::Relaxed);
                        first_error.get_or_insert(e);
                    }
                },
            }
        }
        first_error.map_or(Ok(()), Err)
    })
}

/// Take jobs until none is left or the run stops; each cell's steps go to the store's thread.
/// A job whose cell failed on another start (`failed`) ends at once, not run.
fn worker(
    jobs: &[Job<'_>],
    queue: &Mutex<VecDeque<usize>>,
    (stop, failed): (&AtomicBool, &Mutex<HashSet<CellKey>>),
    (shared, sizes): (&Shared<'_>, &Sizes),
    tx: mpsc::Sender<Msg>,
) {
    fn lock(m: &Mutex<HashSet<CellKey>>) -> std::sync::MutexGuard<'_, HashSet<CellKey>> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }
    loop {
        if stop.load(Ordering::Relaxed) || shared.interrupt.load(Ordering::Relaxed) {
            return;
        }
        let Some(i) = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front() else {
            return;
        };
        let job = &jobs[i];
        let (end, secs) = match lock(failed).contains(&job.key) {
            true => (Err(not_started(job, shared)), 0.0),
            false => {
                let mut sink = ToStore(tx.clone());
                let began = std::time::Instant::now();
                let end = run_job(job, (shared, sizes), &mut sink);
                (end, began.elapsed().as_secs_f64())
            }
        };
        let failing = end.is_err();
        if tx.send(Msg::Ended(i, end, secs)).is_err() {
            return;
        }
        // After its end is sent: the cell is recorded with this start's error, not a sibling's.
        if failing {
            lock(failed).insert(job.key.clone());
        }
    }
}

/// A start not run because another start of its cell failed, said on the terminal.
fn not_started(job: &Job<'_>, shared: &Shared<'_>) -> anyhow::Error {
    let what = format!(
        "counting start {}/{} not started: another start of the cell failed",
        job.start.number, job.start.of
    );
    (shared.progress).line(&format!(
        "target {}: {what}",
        shared.plan.targets[job.target].name
    ));
    anyhow::anyhow!(what)
}

fn run_job(
    job: &Job<'_>,
    (shared, sizes): (&Shared<'_>, &Sizes),
    sink: &mut dyn CountSink,
) -> Result<CellEnd> {
    let mut c = CountCell {
        plan: shared.plan,
        suite: job.suite,
        target: &shared.plan.targets[job.target],
        key: job.key.clone(),
        run_id: shared.run_id,
        data_dir: &job.dir,
        log: &job.log,
        store: sink,
        progress: shared.progress,
        interrupt: shared.interrupt,
        start: shared.start,
        counting: shared.counting,
        counter: shared.counter,
        sizes,
        server_start: job.start,
    };
    c.run()
}
