//! The coordinator: it fixes the warm-up's end and the deadline once every thread is ready,
//! takes the opening and closing snapshots, ends an adaptive step, and counts operations per
//! second for progress. Must not: touch a session or an executor.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::phases::{Live, Shared};
use super::{AdaptiveEnd, StepSpec};
use crate::profiler;
use crate::progress::StepProgress;
use crate::sampler::{CpuUse, Probe};
use crate::stats;

/// The instants that frame a step.
pub(super) struct Clock {
    pub(super) t0: Instant,
    pub(super) measure_start: Instant,
    pub(super) deadline: Instant,
    /// When the coordinator reached `go` (the threads start their operations after it).
    pub(super) go: Instant,
}

/// What the coordinator saw while the threads ran.
pub(super) struct Coordinated {
    pub(super) interrupted: bool,
    pub(super) cpus: CpuUse,
    pub(super) adaptive: Option<AdaptiveEnd>,
    /// `CLOCK_MONOTONIC` seconds when the coordinator saw the measured period start (the
    /// profile's window starts there, or at the opening snapshot when one was taken).
    pub(super) measured_from: f64,
}

/// Counted ops per whole second of the measured period, read by the coordinator from the
/// threads' live counters, and whether their mean is known precisely enough to stop.
struct SecondCounter {
    precision: f64,
    min_secs: usize,
    /// The next whole second of the measured period.
    next: Instant,
    /// Units counted at the previous whole second.
    prev: u64,
    per_second: Vec<f64>,
    last: Option<f64>,
}

impl SecondCounter {
    fn new((precision, min): (f64, Duration), clock: &Clock, units: u64) -> Self {
        let max_secs = clock.deadline.duration_since(clock.measure_start).as_secs() as usize;
        SecondCounter {
            precision,
            min_secs: min.as_secs_f64().ceil() as usize,
            next: clock.measure_start + Duration::from_secs(1),
            prev: units,
            per_second: Vec::with_capacity(max_secs.min(1 << 20) + 1),
            last: None,
        }
    }

    /// Count the second that ended at `self.next` (`units` read just after it). True when
    /// the step has run its minimum and its per-second mean is within ±precision.
    fn second(&mut self, units: u64) -> bool {
        self.per_second.push(units.saturating_sub(self.prev) as f64);
        self.prev = units;
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

/// `--report-interval`: the live counters at the last interval's end, read by the coordinator
/// (the threads only store their running counts; nothing is added to an operation).
/// Counted units, transactions and errors of every thread so far.
type Totals = (u64, u64, u64);

struct Intervals {
    every: Duration,
    /// The next interval's end.
    next: Instant,
    /// (instant, counted units, transactions, errors) at the last one.
    last: (Instant, u64, u64, u64),
}

impl Intervals {
    /// When the progress asks for intervals (never for a counting pass, which is not timed).
    fn new(spec: &StepSpec, progress: &StepProgress, t0: Instant) -> Option<Intervals> {
        let every = progress.interval().filter(|_| !spec.counting)?;
        Some(Intervals {
            every,
            next: t0 + every,
            last: (t0, 0, 0, 0),
        })
    }

    /// At or past the interval's end: hand its counts and measured length to `progress`
    /// (`warming` when it began in the warm-up).
    fn tick(&mut self, clock: &Clock, progress: &StepProgress, (units, tx, errors): Totals) {
        let now = Instant::now();
        if now < self.next {
            return;
        }
        let (from, u0, t0, e0) = self.last;
        progress.interval_line(
            now.duration_since(clock.t0),
            from < clock.measure_start,
            crate::progress::Interval {
                ops: units.saturating_sub(u0),
                transactions: tx.saturating_sub(t0),
                secs: now.duration_since(from).as_secs_f64(),
                errors: errors.saturating_sub(e0),
            },
        );
        self.last = (now, units, tx, errors);
        while self.next <= now {
            self.next += self.every;
        }
    }
}

/// How long the coordinator sleeps between looks. A counting pass's registers itself to be
/// woken when the quotas are met and otherwise looks every 10 s (for an interrupt): its ticks
/// would be counted as the client's.
fn coordinator_tick(spec: &StepSpec, shared: &Shared) -> Duration {
    if !spec.counting {
        return Duration::from_millis(200);
    }
    let _ = shared.coordinator.set(thread::current());
    Duration::from_secs(10)
}

/// The coordinator's part of a step: show progress, take the opening snapshot when the
/// measured period starts (unless a client thread took it), count whole seconds for an
/// adaptive step and stop it early through `stop`, and return at the deadline, when the quotas
/// are met, or on `interrupt`.
pub(super) fn coordinate(
    spec: &StepSpec,
    clock: &Clock,
    probe: &Probe,
    progress: &StepProgress,
    interrupt: &AtomicBool,
    shared: &Shared,
) -> Coordinated {
    let tick = coordinator_tick(spec, shared);
    let stop = &shared.stop;
    let sum = |of: fn(&Live) -> &AtomicU64| {
        (shared.live.iter())
            .map(|l| of(l).load(Ordering::Relaxed))
            .sum::<u64>()
    };
    let total = || sum(|l| &l.units);
    let mut intervals = Intervals::new(spec, progress, clock.t0);
    let mut last = (clock.t0, 0u64);
    let mut opened = false;
    let mut cpus = CpuUse::default();
    let mut counter: Option<SecondCounter> = None;
    let mut adaptive = None;
    let mut interrupted = false;
    let mut measured_from = 0.0;
    loop {
        let now = Instant::now();
        if !opened && now >= clock.measure_start {
            opened = true;
            let units = total();
            counter = spec
                .step
                .stop_rule
                .map(|rule| SecondCounter::new(rule, clock, units));
            shared.opening.claim();
            cpus.add(&probe.cpus());
            measured_from = profiler::monotonic_now();
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
        if let Some(i) = intervals.as_mut() {
            let totals = (total(), sum(|l| &l.transactions), sum(|l| &l.errors));
            i.tick(clock, progress, totals);
        }
        if now >= clock.deadline || stop.load(Ordering::Relaxed) {
            break;
        }
        if interrupt.load(Ordering::Relaxed) {
            interrupted = true;
            stop.store(true, Ordering::Relaxed);
            break;
        }
        let next_boundary = next_boundary(clock, opened, counter.as_ref(), intervals.as_ref());
        let wait = tick.min(next_boundary.saturating_duration_since(now));
        match spec.counting {
            true => thread::park_timeout(wait),
            false => thread::sleep(wait),
        }
        last = show_progress(progress, clock, counter.as_ref(), last, total());
    }
    if adaptive.is_none() {
        adaptive = counter.map(|c| c.end(false));
    }
    if !opened {
        measured_from = profiler::monotonic_now();
    }
    Coordinated {
        interrupted,
        cpus,
        adaptive,
        measured_from,
    }
}

/// The coordinator's next instant to act at: the measured period's start, then the next whole
/// second of an adaptive step or the deadline, whichever is first, and the next progress
/// interval when that is earlier.
fn next_boundary(
    clock: &Clock,
    opened: bool,
    counter: Option<&SecondCounter>,
    intervals: Option<&Intervals>,
) -> Instant {
    let next_boundary = match (opened, counter) {
        (false, _) => clock.measure_start,
        (true, Some(c)) => c.next.min(clock.deadline),
        (true, None) => clock.deadline,
    };
    match intervals {
        Some(i) => next_boundary.min(i.next),
        None => next_boundary,
    }
}

/// One progress update: the rate since the `last` (instant, units) and, for an adaptive step,
/// its precision so far. Returns the new `last`.
fn show_progress(
    progress: &StepProgress,
    clock: &Clock,
    counter: Option<&SecondCounter>,
    last: (Instant, u64),
    count: u64,
) -> (Instant, u64) {
    let now = Instant::now();
    let dt = now.duration_since(last.0).as_secs_f64();
    if dt > 0.0 {
        let rate = count.saturating_sub(last.1) as f64 / dt;
        let state = counter.map(SecondCounter::state);
        progress.update(
            now.duration_since(clock.t0),
            now < clock.measure_start,
            rate,
            state.as_deref(),
        );
    }
    (now, count)
}
