//! The client threads: spawning one per role thread, each connecting, preparing and passing
//! the phases, and the operation loop (pacer, executor, recorder) between `go` and its end
//! (deadline, quota or `stop`). Must not: allocate, lock or format per operation.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::StepSpec;
use super::phases::{
    DONE, GO, OPENING_GRACE, Passage, READY, SNAPSHOTTED, Shared, ThreadEnd, ThreadSpec, thread_cpu,
};
use crate::cpus::{self, CpuSet};
use crate::engine::{DbError, Driver, ErrorKind, Session};
use crate::runner::pacer;
use crate::runner::recorder::Recorder;
use crate::workload::{Done, Executor, Opening, Pacer, StepPlan};

/// Start the step's threads, one per client per role, named `dbdelta-client-N` (the sampler
/// finds them by it).
pub(super) fn spawn_threads<'scope, 'env>(
    s: &'scope thread::Scope<'scope, 'env>,
    spec: &'env StepSpec<'env>,
    shared: &'env Shared,
    interrupt: &'env AtomicBool,
    driver: &'env Arc<dyn Driver>,
) -> (
    Vec<thread::ScopedJoinHandle<'scope, ThreadEnd>>,
    Option<std::io::Error>,
) {
    let roles = spec.step.roles.len();
    let mut handles = Vec::with_capacity(spec.clients as usize * roles);
    for client in 0..spec.clients {
        for role in 0..roles {
            let index = client as usize * roles + role;
            let t = ThreadSpec {
                index,
                client,
                clients: spec.clients,
                role,
                step: spec.step,
                seed: spec.seed.wrapping_add(index as u64),
                client_cpus: spec.client_cpus.as_ref(),
                ddl: spec.ddl,
            };
            let spawned = thread::Builder::new()
                .name(format!("dbdelta-client-{index}"))
                .spawn_scoped(s, move || {
                    client_thread(&t, shared, interrupt, driver.as_ref())
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => return (handles, Some(e)),
            }
        }
    }
    (handles, None)
}

/// The threads' results, combined.
pub(super) struct Ends {
    /// Per role, per operation type: every thread's recorder.
    pub(super) recorders: Vec<Vec<Vec<Recorder>>>,
    /// Rows per statement of the counted role.
    pub(super) rows_touched: Vec<u64>,
    /// The first fatal error.
    pub(super) fatal: Option<String>,
    pub(super) max_busy: Option<f64>,
    /// The latest end of a paced role's schedule.
    pub(super) period_end: Option<Instant>,
    /// The same per role.
    pub(super) role_period_end: Vec<Option<Instant>>,
}

impl Ends {
    pub(super) fn merge(ends: Vec<ThreadEnd>, step: &StepPlan) -> Ends {
        let mut out = Ends {
            recorders: step
                .roles
                .iter()
                .map(|r| r.ops.iter().map(|_| Vec::new()).collect())
                .collect(),
            rows_touched: Vec::new(),
            fatal: None,
            max_busy: None,
            period_end: None,
            role_period_end: vec![None; step.roles.len()],
        };
        for end in ends {
            if let Some(recs) = end.recorders {
                for (into, r) in out.recorders[end.role].iter_mut().zip(recs) {
                    into.push(r);
                }
            }
            if end.role == step.counted.role {
                out.rows_touched
                    .resize(out.rows_touched.len().max(end.rows_touched.len()), 0);
                for (into, v) in out.rows_touched.iter_mut().zip(end.rows_touched) {
                    *into += v;
                }
            }
            if let (None, Some(e)) = (&out.fatal, end.error) {
                out.fatal = Some(e.to_string());
            }
            if let Some(b) = end.busy {
                out.max_busy = Some(out.max_busy.map_or(b, |m: f64| m.max(b)));
            }
            out.period_end = out.period_end.max(end.period_end);
            let role = &mut out.role_period_end[end.role];
            *role = (*role).max(end.period_end);
        }
        out
    }
}

/// A connected session and its executor.
type Connected = (Box<dyn Session>, Box<dyn Executor>);

/// Pins the calling thread to `client_cpus`, when the cell places its clients.
fn pin(client_cpus: Option<&CpuSet>) -> Result<(), DbError> {
    match client_cpus {
        Some(set) => cpus::pin_current_thread(set)
            .map_err(|e| DbError::fatal(format!("cannot pin a client thread to CPUs {set}: {e}"))),
        None => Ok(()),
    }
}

/// One role thread: pin (once), connect and prepare, meet the others, run operations until
/// the step ends for it, then hold the connection until the closing snapshot is taken.
fn client_thread(
    t: &ThreadSpec,
    shared: &Shared,
    interrupt: &AtomicBool,
    driver: &dyn Driver,
) -> ThreadEnd {
    shared.cells[t.index].register();
    // Once per thread, before it connects: the mask holds for the whole step.
    let pinned = pin(t.client_cpus);
    // Connect and prepare the role's statements (at setup and after a lost connection).
    let open = || {
        driver.connect().and_then(|mut s| {
            let at = Opening {
                dialect: driver.dialect(),
                client: t.client,
                seed: t.seed,
                ddl: t.ddl,
            };
            let exec = t.role().executor.open(s.as_mut(), &at)?;
            Ok((s, exec))
        })
    };
    // Setup failures, early returns and panics still pass every phase (`Passage`'s drop).
    let mut passage = Passage {
        t,
        shared,
        next: READY,
        stopped: false,
    };
    let mut setup = pinned.and_then(|()| open());
    if let (true, Ok((session, _))) = (shared.note_ids, setup.as_mut()) {
        // Once per connection, before `go`: what perf attaches to.
        let live = &shared.live[t.index];
        // SAFETY: gettid(2) reads no memory and cannot fail.
        live.tid
            .store(unsafe { libc::gettid() } as u32, Ordering::Relaxed);
        live.task
            .store(session.server_task().unwrap_or(0), Ordering::Relaxed);
    }
    passage.pass(GO);
    let (mut session, mut exec) = match setup {
        Ok(v) => v,
        Err(e) => return ThreadEnd::not_set_up(t.role, e),
    };
    let ran = run_ops(t, shared, interrupt, &mut session, &mut exec, &open);
    if ran.fatal.is_some() {
        // A fatal error fails the step: the other threads stop now rather than run out the
        // clock (a dead or unreachable server would otherwise hold the run for the whole step).
        shared.stop.store(true, Ordering::Relaxed);
    }
    passage.stop(ran.quota_met);
    passage.pass(DONE);
    // Keep the connection open until the closing snapshot is taken, so a server
    // process serving it is still there to be counted.
    passage.pass(SNAPSHOTTED);
    ThreadEnd {
        role: t.role,
        recorders: Some(ran.recorders),
        // Rows of measured operations only (a reconnect restarts the counters, so
        // saturate rather than underflow).
        rows_touched: match ran.rows_before {
            Some(before) => exec
                .rows_touched()
                .iter()
                .zip(before)
                .map(|(now, was)| now.saturating_sub(was))
                .collect(),
            None => vec![0; exec.rows_touched().len()],
        },
        error: ran.fatal,
        busy: ran.busy,
        period_end: ran.period_end,
    }
}

/// What one thread's operation loop measured.
struct Ran {
    recorders: Vec<Recorder>,
    fatal: Option<DbError>,
    /// Thread CPU / wall time over the measured operations.
    busy: Option<f64>,
    /// Rows touched when the measured period began (`None`: no measured operation started).
    rows_before: Option<Vec<u64>>,
    quota_met: bool,
    period_end: Option<Instant>,
}

/// One thread's operation loop between operations: its recorders and counters.
struct OpLoop<'a> {
    t: &'a ThreadSpec<'a>,
    shared: &'a Shared,
    measure_start: Instant,
    recorders: Vec<Recorder>,
    /// Operations run (failed ones included), counted units and counted operations
    /// completed, operations completed, and the next schedule slot (a failed operation uses
    /// its slot too).
    count: u64,
    units: u64,
    transactions: u64,
    done: u64,
    slot: u64,
    errors: u64,
    /// (wall, thread CPU) when the first measured operation started.
    measured_from: Option<(Instant, Duration)>,
    /// Rows touched when the measured period began.
    rows_before: Option<Vec<u64>>,
    /// From when this thread takes the opening snapshot if nobody has ([`OpeningSnapshot`]);
    /// `None` once it has looked.
    opens_from: Option<Instant>,
}

impl<'a> OpLoop<'a> {
    /// Before the first operation: a recorder per operation type of the role, no counts.
    fn new(t: &'a ThreadSpec<'a>, shared: &'a Shared, measure_start: Instant, paced: bool) -> Self {
        OpLoop {
            t,
            shared,
            measure_start,
            recorders: (t.role().ops.iter())
                .map(|_| Recorder::with(measure_start, t.step.measure, paced))
                .collect(),
            count: 0,
            units: 0,
            transactions: 0,
            done: 0,
            slot: 0,
            errors: 0,
            measured_from: None,
            rows_before: None,
            opens_from: Some(measure_start + OPENING_GRACE),
        }
    }
}

impl OpLoop<'_> {
    /// An operation is about to start at `start`: past [`OPENING_GRACE`] with no opening
    /// snapshot taken (the coordinator is late), take it first. True when this thread took
    /// it (the operation starts after it). Looked at once per thread.
    fn opens(&mut self, start: Instant) -> bool {
        match self.opens_from {
            Some(from) if start >= from => {
                self.opens_from = None;
                self.shared.opening.claim_late()
            }
            _ => false,
        }
    }

    /// An operation is about to start at `start`: take the opening snapshot if it is this
    /// thread's to take ([`Self::opens`]), and note the measured period's first operation.
    /// Returns when the operation starts (after the snapshot, when this thread took it).
    fn measuring(&mut self, start: Instant, exec: &dyn Executor) -> Instant {
        let start = if self.opens(start) {
            Instant::now()
        } else {
            start
        };
        if self.measured_from.is_none() && start >= self.measure_start {
            self.measured_from = Some((start, thread_cpu()));
            // Rows touched so far belong to the warm-up (copied once per step).
            self.rows_before = Some(exec.rows_touched().to_vec());
        }
        start
    }

    /// An operation that was due at `intended` ran from `start` to `end`: record it, publish
    /// it to the threads paced against this one, and hand back its error.
    fn ran(
        &mut self,
        intended: Option<Instant>,
        start: Instant,
        end: Instant,
        result: Result<Done, DbError>,
    ) -> Result<(), DbError> {
        self.count += 1;
        self.slot += 1;
        self.shared.live[self.t.index]
            .events
            .store(self.count, Ordering::Relaxed);
        let measured = start >= self.measure_start;
        let d = match result {
            Ok(d) => d,
            Err(e) => {
                self.errors += 1;
                self.shared.live[self.t.index]
                    .errors
                    .store(self.errors, Ordering::Relaxed);
                if measured {
                    // The executor does not say which operation type failed: the role's first.
                    self.recorders[0].record_error(e.kind, e.code, end);
                }
                return Err(e);
            }
        };
        if measured {
            let from = intended.unwrap_or(start);
            self.recorders[d.op].record(from, start, end, d.units, d.rows);
        }
        if self.t.step.counted.covers(self.t.role, d.op) {
            self.units += d.units;
            self.transactions += 1;
            let live = &self.shared.live[self.t.index];
            live.units.store(self.units, Ordering::Relaxed);
            live.transactions
                .store(self.transactions, Ordering::Relaxed);
        }
        self.done += 1;
        self.shared.cells[self.t.index]
            .publish(self.done, pacer::ns_since(self.measure_start, end));
        self.t.wake_partners(self.shared);
        Ok(())
    }

    /// Thread CPU / wall time since the first measured operation.
    fn busy(&self) -> Option<f64> {
        self.measured_from.and_then(|(wall, cpu)| {
            let w = wall.elapsed().as_secs_f64();
            (w > 0.0).then(|| (thread_cpu() - cpu).as_secs_f64() / w)
        })
    }
}

/// The operation loop: paced operations until the deadline, the quota, `stop` or `interrupt`;
/// operations that start after the warm-up are recorded. A lost connection is reopened with
/// `open`.
fn run_ops(
    t: &ThreadSpec,
    shared: &Shared,
    interrupt: &AtomicBool,
    session: &mut Box<dyn Session>,
    exec: &mut Box<dyn Executor>,
    open: &dyn Fn() -> Result<Connected, DbError>,
) -> Ran {
    let (measure_start, deadline) = {
        let w = shared.window.lock().expect("window lock");
        let w = w.as_ref().expect("window set before go");
        (w.measure_start, w.deadline)
    };
    let role = t.role();
    let paced = role.pacer != Pacer::Closed;
    let mut ops = OpLoop::new(t, shared, measure_start, paced);
    let schedule = t.schedule(shared, measure_start);
    let stopping = || shared.stop.load(Ordering::Relaxed) || interrupt.load(Ordering::Relaxed);
    let give_up = || Instant::now() >= deadline || stopping();
    let mut fatal = None;
    while role.quota.is_none_or(|q| ops.done < q) && !exec.finished() {
        let Some(intended) = schedule.wait(ops.slot, ops.done, &give_up) else {
            break;
        };
        let start = Instant::now();
        if start >= deadline || stopping() {
            break;
        }
        let start = ops.measuring(start, exec.as_ref());
        let result = exec.run(session.as_mut());
        let end = Instant::now();
        let Err(e) = ops.ran(intended, start, end, result) else {
            continue;
        };
        match e.kind {
            ErrorKind::Retryable => {}
            ErrorKind::Reconnect => match open() {
                Ok((s, x)) => (*session, *exec) = (s, x),
                Err(e) => {
                    fatal = Some(e);
                    break;
                }
            },
            ErrorKind::Fatal => {
                fatal = Some(e);
                break;
            }
        }
    }
    // An executor that has finished its work met its quota (a loader whose range needed
    // fewer statements than the role's quota, which is the largest of any connection).
    let quota_met = role.quota.is_some_and(|q| ops.done >= q || exec.finished());
    let busy = ops.busy();
    let period_end = if quota_met {
        schedule.end_of_period(ops.slot, &|| interrupt.load(Ordering::Relaxed))
    } else {
        None
    };
    Ran {
        recorders: ops.recorders,
        fatal,
        busy,
        rows_before: ops.rows_before,
        quota_met,
        period_end,
    }
}
