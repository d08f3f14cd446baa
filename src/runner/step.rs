//! One step: N client threads, an unmeasured warm-up, a measured period, a deadline.
//!
//! The only place that reads the clock around database work. Composition:
//! stop condition (deadline or interrupt) × pacer (closed loop: next event as soon as the last
//! one ends) × recorder (per-thread [`Recorder`], merged after the threads stop).
//! Phases: every thread connects and prepares, all meet at a barrier, the coordinator fixes the
//! warm-up end and the deadline, threads run until the deadline, meet again, and only then does
//! the coordinator take the closing `/proc` snapshot. A client thread with a placement pins
//! itself once, first thing, before it connects (never per event).
//! Must not: allocate, lock or format per event; write to the store (the caller does).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::recorder::{Merged, Recorder};
use crate::cpus::{self, CpuSet};
use crate::engine::{DbError, Driver, ErrorKind};
use crate::progress::StepProgress;
use crate::sampler::{Costs, CpuUse, Peaks, Probe, Sampler, Snapshot};
use crate::stats;
use crate::workload::{EventExecutor, Scale, StepDef};

/// What a step needs to run.
pub struct StepSpec {
    pub step: &'static StepDef,
    pub scale: Scale,
    pub clients: u32,
    pub warmup: Duration,
    pub measure: Duration,
    /// Seed of the first client's random generator (others add their index).
    pub seed: u64,
    /// CPUs every client thread pins itself to; `None`: not pinned.
    pub client_cpus: Option<CpuSet>,
    /// Adaptive length: (target relative half-width of the 95% CI of the per-second mean QPS,
    /// minimum measured time). The step then ends at the first whole second from the minimum
    /// on where the precision is reached, or at `measure` (its maximum). `None`: fixed length.
    pub stop_rule: Option<(f64, Duration)>,
}

/// What a step measured.
pub struct StepRun {
    pub merged: Merged,
    /// Measured seconds: from the end of warm-up to the last event's end.
    pub seconds: f64,
    pub costs: Costs,
    pub peaks: Peaks,
    /// Rows returned or changed per statement of the event, over all clients' measured events.
    pub rows_touched: Vec<u64>,
    /// The first fatal error a client hit, if any (the step ended early for that client).
    pub fatal: Option<String>,
    /// The busiest client thread's CPU time / wall time over its measured events (0..1).
    pub max_client_busy: Option<f64>,
    pub interrupted: bool,
    /// Every event the clients ran, warm-up and failed ones included (what a whole-process
    /// CPU figure must be divided by; `merged.events` counts the measured window only).
    pub events_all: u64,
    /// Where the server's and the client's threads ran and were allowed to run: the sampler's
    /// seconds plus both boundaries of the measured period.
    pub cpus: CpuUse,
    /// How an adaptive step ended; `None` for a fixed-length step.
    pub adaptive: Option<AdaptiveEnd>,
}

/// How an adaptive step ended, by the coordinator's own per-second counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveEnd {
    /// The target relative half-width.
    pub target: f64,
    /// The target precision was reached (else the step ran to its maximum).
    pub reached: bool,
    /// Whole seconds counted.
    pub seconds: u32,
    /// The last relative half-width the coordinator computed (`None`: fewer than 3 seconds).
    pub half_width: Option<f64>,
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    // SAFETY: clock_gettime writes the timespec we hand it.
    let ts = unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
        ts
    };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// What one client thread hands back.
struct ClientEnd {
    recorder: Option<Recorder>,
    rows_touched: Vec<u64>,
    error: Option<DbError>,
    /// Thread CPU / wall time over the measured period.
    busy: Option<f64>,
}

/// A counter one thread writes and the progress display reads, alone on its cache line.
#[repr(align(128))]
#[derive(Default)]
struct Live(AtomicU64);

struct Window {
    measure_start: Instant,
    deadline: Instant,
}

/// What the coordinator and the client threads of one step share.
struct Shared {
    /// Every client connected and prepared (or failed to).
    ready: Barrier,
    /// The window is set: run.
    go: Barrier,
    /// Every client stopped.
    done: Barrier,
    /// The closing snapshot is taken: clients may close their connections.
    snapshotted: Barrier,
    window: Mutex<Option<Window>>,
    live: Vec<Live>,
    /// Set by the coordinator to end the step early (interrupt, adaptive precision reached).
    stop: AtomicBool,
}

/// What one client thread needs besides [`Shared`].
struct ClientSpec {
    index: usize,
    step: &'static StepDef,
    scale: Scale,
    measure: Duration,
    seed: u64,
    client_cpus: Option<CpuSet>,
}

/// Run one step to its deadline (or until `interrupt` is set, or an adaptive step's precision
/// is reached).
pub fn run(
    spec: &StepSpec,
    driver: &Arc<dyn Driver>,
    probe: &Probe,
    progress: &StepProgress,
    interrupt: &Arc<AtomicBool>,
) -> anyhow::Result<StepRun> {
    let n = spec.clients as usize;
    let shared = Arc::new(Shared {
        ready: Barrier::new(n + 1),
        go: Barrier::new(n + 1),
        done: Barrier::new(n + 1),
        snapshotted: Barrier::new(n + 1),
        window: Mutex::new(None),
        live: (0..n).map(|_| Live::default()).collect(),
        stop: AtomicBool::new(false),
    });
    let handles = spawn_clients(spec, &shared, interrupt, driver)?;
    shared.ready.wait();
    let t0 = Instant::now();
    let clock = Clock {
        t0,
        measure_start: t0 + spec.warmup,
        deadline: t0 + spec.warmup + spec.measure,
    };
    *shared.window.lock().expect("window lock") = Some(Window {
        measure_start: clock.measure_start,
        deadline: clock.deadline,
    });
    let sampler = Sampler::start(probe.clone());
    shared.go.wait();
    let Coordinated {
        a,
        interrupted,
        mut cpus,
        adaptive,
    } = coordinate(
        spec,
        &clock,
        probe,
        progress,
        interrupt,
        &shared.stop,
        &shared.live,
    );
    shared.done.wait();
    let b = probe.snapshot();
    cpus.add(&probe.cpus());
    shared.snapshotted.wait();
    let peaks = sampler.finish();
    cpus.add(&peaks.cpus);

    let ends = handles
        .into_iter()
        .map(|h| h.join())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| anyhow::anyhow!("a client thread panicked"))?;
    let clients = Ends::merge(ends, spec.step.event.len());
    if clients.recorders.is_empty() {
        anyhow::bail!(
            "no client could connect and prepare: {}",
            clients.fatal.unwrap_or_else(|| "unknown error".into())
        );
    }
    let events_all: u64 = shared
        .live
        .iter()
        .map(|l| l.0.load(Ordering::Relaxed))
        .sum();
    let merged = Merged::from(clients.recorders);
    let end = merged
        .last_end
        .unwrap_or(clock.deadline)
        .max(clock.measure_start);
    let seconds = end.duration_since(clock.measure_start).as_secs_f64();
    Ok(StepRun {
        merged,
        seconds,
        costs: Costs { a, b },
        peaks,
        rows_touched: clients.rows_touched,
        fatal: clients.fatal,
        max_client_busy: clients.max_busy,
        interrupted,
        events_all,
        cpus,
        adaptive,
    })
}

/// Start the step's client threads, named `dbdelta-client-N` (the sampler finds them by it).
fn spawn_clients(
    spec: &StepSpec,
    shared: &Arc<Shared>,
    interrupt: &Arc<AtomicBool>,
    driver: &Arc<dyn Driver>,
) -> std::io::Result<Vec<thread::JoinHandle<ClientEnd>>> {
    let n = spec.clients as usize;
    let mut handles = Vec::with_capacity(n);
    for index in 0..n {
        let c = ClientSpec {
            index,
            step: spec.step,
            scale: spec.scale,
            measure: spec.measure,
            seed: spec.seed.wrapping_add(index as u64),
            client_cpus: spec.client_cpus.clone(),
        };
        let (shared, interrupt, driver) = (shared.clone(), interrupt.clone(), driver.clone());
        let handle = thread::Builder::new()
            .name(format!("dbdelta-client-{index}"))
            .spawn(move || client(&c, &shared, &interrupt, driver.as_ref()))?;
        handles.push(handle);
    }

    Ok(handles)
}

/// The client threads' results, combined.
struct Ends {
    recorders: Vec<Recorder>,
    rows_touched: Vec<u64>,
    /// The first fatal error.
    fatal: Option<String>,
    max_busy: Option<f64>,
}

impl Ends {
    fn merge(ends: Vec<ClientEnd>, statements: usize) -> Ends {
        let mut out = Ends {
            recorders: Vec::with_capacity(ends.len()),
            rows_touched: vec![0u64; statements],
            fatal: None,
            max_busy: None,
        };
        for end in ends {
            if let Some(r) = end.recorder {
                out.recorders.push(r);
            }
            for (into, v) in out.rows_touched.iter_mut().zip(end.rows_touched) {
                *into += v;
            }
            if let (None, Some(e)) = (&out.fatal, end.error) {
                out.fatal = Some(e.to_string());
            }
            if let Some(b) = end.busy {
                out.max_busy = Some(out.max_busy.map_or(b, |m: f64| m.max(b)));
            }
        }
        out
    }
}

/// One client thread: pin (once), connect and prepare, meet the others, run events closed-loop
/// until the deadline or `stop`, then hold the connection until the closing snapshot is taken.
fn client(
    c: &ClientSpec,
    shared: &Shared,
    interrupt: &AtomicBool,
    driver: &dyn Driver,
) -> ClientEnd {
    // Once per thread, before it connects: the mask holds for the whole step.
    let pinned = match &c.client_cpus {
        Some(set) => cpus::pin_current_thread(set)
            .map_err(|e| DbError::fatal(format!("cannot pin a client thread to CPUs {set}: {e}"))),
        None => Ok(()),
    };
    // Connect and prepare the step's statements (at setup and after a lost connection).
    let open = || {
        driver.connect().and_then(|mut s| {
            let exec = EventExecutor::new(c.step, c.scale, s.as_mut(), driver.dialect(), c.seed)?;
            Ok((s, exec))
        })
    };
    // Setup failures still pass every barrier.
    let setup = pinned.and_then(|()| open());
    shared.ready.wait();
    shared.go.wait();
    let (mut session, mut exec) = match setup {
        Ok(v) => v,
        Err(e) => {
            shared.done.wait();
            shared.snapshotted.wait();
            return ClientEnd {
                recorder: None,
                rows_touched: Vec::new(),
                error: Some(e),
                busy: None,
            };
        }
    };
    let ran = run_events(c, shared, interrupt, &mut session, &mut exec, &open);
    shared.done.wait();
    // Keep the connection open until the closing snapshot is taken, so a server
    // process serving it is still there to be counted.
    shared.snapshotted.wait();
    ClientEnd {
        recorder: Some(ran.recorder),
        // Rows of measured events only (a reconnect restarts the counters, so
        // saturate rather than underflow).
        rows_touched: match ran.rows_before {
            Some(before) => exec
                .rows_touched
                .iter()
                .zip(before)
                .map(|(now, was)| now.saturating_sub(was))
                .collect(),
            None => vec![0; exec.rows_touched.len()],
        },
        error: ran.fatal,
        busy: ran.busy,
    }
}

/// What one client's event loop measured.
struct Ran {
    recorder: Recorder,
    fatal: Option<DbError>,
    /// Thread CPU / wall time over the measured events.
    busy: Option<f64>,
    /// Rows touched when the measured period began (`None`: no measured event started).
    rows_before: Option<Vec<u64>>,
}

/// A connected session and its prepared statements.
type Opened = (Box<dyn crate::engine::Session>, EventExecutor);

/// The closed loop: events back to back until the deadline, `stop` or `interrupt`; events
/// that start after the warm-up are recorded. A lost connection is reopened with `open`.
fn run_events(
    c: &ClientSpec,
    shared: &Shared,
    interrupt: &AtomicBool,
    session: &mut Box<dyn crate::engine::Session>,
    exec: &mut EventExecutor,
    open: &dyn Fn() -> Result<Opened, DbError>,
) -> Ran {
    let (measure_start, deadline) = {
        let w = shared.window.lock().expect("window lock");
        let w = w.as_ref().expect("window set before go");
        (w.measure_start, w.deadline)
    };
    let mut rec = Recorder::new(measure_start, c.measure);
    let mut fatal = None;
    let mut count = 0u64;
    // (wall, thread CPU) when the first measured event started.
    let mut measured_from: Option<(Instant, Duration)> = None;
    let mut rows_before: Option<Vec<u64>> = None;
    loop {
        let start = Instant::now();
        if start >= deadline
            || shared.stop.load(Ordering::Relaxed)
            || interrupt.load(Ordering::Relaxed)
        {
            break;
        }
        if measured_from.is_none() && start >= measure_start {
            measured_from = Some((start, thread_cpu()));
            // Rows touched so far belong to the warm-up (copied once per step).
            rows_before = Some(exec.rows_touched.clone());
        }
        let result = exec.run_event(session.as_mut());
        let end = Instant::now();
        count += 1;
        shared.live[c.index].0.store(count, Ordering::Relaxed);
        match result {
            Ok(()) => {
                if start >= measure_start {
                    rec.record_event(start, end);
                }
            }
            Err(e) => {
                if start >= measure_start {
                    rec.record_error(e.kind, end);
                }
                match e.kind {
                    ErrorKind::Retryable => {}
                    ErrorKind::Reconnect => match open() {
                        Ok((s, x)) => {
                            *session = s;
                            *exec = x;
                        }
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
        }
    }
    let busy = measured_from.and_then(|(wall, cpu)| {
        let w = wall.elapsed().as_secs_f64();
        (w > 0.0).then(|| (thread_cpu() - cpu).as_secs_f64() / w)
    });
    Ran {
        recorder: rec,
        fatal,
        busy,
        rows_before,
    }
}

/// The instants that frame a step.
struct Clock {
    t0: Instant,
    measure_start: Instant,
    deadline: Instant,
}

/// What the coordinator saw while the clients ran.
struct Coordinated {
    /// The opening snapshot, taken at the start of the measured period.
    a: Snapshot,
    interrupted: bool,
    cpus: CpuUse,
    adaptive: Option<AdaptiveEnd>,
}

/// Ops per whole second of the measured period, counted by the coordinator from the clients'
/// live event counters, and whether their mean is known precisely enough to stop.
struct SecondCounter {
    precision: f64,
    min_secs: usize,
    statements_per_event: f64,
    /// The next whole second of the measured period.
    next: Instant,
    /// Events counted at the previous whole second.
    prev: u64,
    per_second: Vec<f64>,
    last: Option<f64>,
}

impl SecondCounter {
    fn new((precision, min): (f64, Duration), clock: &Clock, step: &StepDef, events: u64) -> Self {
        let max_secs = clock.deadline.duration_since(clock.measure_start).as_secs() as usize;
        SecondCounter {
            precision,
            min_secs: min.as_secs_f64().ceil() as usize,
            statements_per_event: f64::from(step.statements_per_event()),
            next: clock.measure_start + Duration::from_secs(1),
            prev: events,
            per_second: Vec::with_capacity(max_secs + 1),
            last: None,
        }
    }

    /// Count the second that ended at `self.next` (`events` read just after it). True when
    /// the step has run its minimum and its per-second mean is within ±precision.
    fn second(&mut self, events: u64) -> bool {
        self.per_second
            .push(events.saturating_sub(self.prev) as f64 * self.statements_per_event);
        self.prev = events;
        self.next += Duration::from_secs(1);
        self.last = stats::series_precision(&self.per_second)
            .map(|p| p.half_width)
            .filter(|h| h.is_finite());
        self.per_second.len() >= self.min_secs && self.last.is_some_and(|h| h <= self.precision)
    }

    /// `±1.4% after 12 s`, for the progress bar.
    fn state(&self) -> String {
        match self.last {
            Some(h) => format!(
                "±{:.1}% after {} s (target ±{:.1}%)",
                h * 100.0,
                self.per_second.len(),
                self.precision * 100.0
            ),
            None => format!("{} s measured", self.per_second.len()),
        }
    }

    fn end(&self, reached: bool) -> AdaptiveEnd {
        AdaptiveEnd {
            target: self.precision,
            reached,
            seconds: self.per_second.len() as u32,
            half_width: self.last,
        }
    }
}

/// The coordinator's part of a step: show progress, take the opening snapshot when the
/// measured period starts, count whole seconds for an adaptive step and stop it early through
/// `stop`, and return at the deadline (or on `interrupt`).
fn coordinate(
    spec: &StepSpec,
    clock: &Clock,
    probe: &Probe,
    progress: &StepProgress,
    interrupt: &AtomicBool,
    stop: &AtomicBool,
    live: &[Live],
) -> Coordinated {
    let tick = Duration::from_millis(200);
    let total = || {
        live.iter()
            .map(|l| l.0.load(Ordering::Relaxed))
            .sum::<u64>()
    };
    let mut last = (clock.t0, 0u64);
    let mut a = None;
    let mut cpus = CpuUse::default();
    let mut counter: Option<SecondCounter> = None;
    let mut adaptive = None;
    let mut interrupted = false;
    loop {
        let now = Instant::now();
        if a.is_none() && now >= clock.measure_start {
            let events = total();
            counter = spec
                .stop_rule
                .map(|rule| SecondCounter::new(rule, clock, spec.step, events));
            a = Some(probe.snapshot());
            cpus.add(&probe.cpus());
        }
        if let Some(c) = counter.as_mut()
            && now >= c.next
            && c.next <= clock.deadline
            && c.second(total())
        {
            adaptive = Some(c.end(true));
            stop.store(true, Ordering::Relaxed);
            break;
        }
        if now >= clock.deadline {
            break;
        }
        if interrupt.load(Ordering::Relaxed) {
            interrupted = true;
            stop.store(true, Ordering::Relaxed);
            break;
        }
        let next_boundary = match (&a, &counter) {
            (None, _) => clock.measure_start,
            (Some(_), Some(c)) => c.next.min(clock.deadline),
            (Some(_), None) => clock.deadline,
        };
        thread::sleep(tick.min(next_boundary.saturating_duration_since(now)));
        let now = Instant::now();
        let count = total();
        let dt = now.duration_since(last.0).as_secs_f64();
        if dt > 0.0 {
            let rate = (count - last.1) as f64 / dt * spec.step.statements_per_event() as f64;
            let state = counter.as_ref().map(SecondCounter::state);
            progress.update(
                now.duration_since(clock.t0),
                now < clock.measure_start,
                rate,
                state.as_deref(),
            );
        }
        last = (now, count);
    }
    if adaptive.is_none() {
        adaptive = counter.map(|c| c.end(false));
    }
    Coordinated {
        a: a.unwrap_or_else(|| probe.snapshot()),
        interrupted,
        cpus,
        adaptive,
    }
}
