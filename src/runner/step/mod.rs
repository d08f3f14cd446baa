//! One step: its roles' threads, an unmeasured warm-up, a measured period, and how it ends.
//!
//! The only place that reads the clock around database work. Composition: stop condition
//! (a deadline, fixed or adaptive; quotas; an interrupt) × roles, each with its pacer (closed
//! loop, fixed rate on an absolute schedule, or following another role; `pacer`) × recorders
//! (one per thread and operation type, merged after the threads stop). Phases: every thread
//! connects and prepares, all meet at a barrier, the coordinator fixes the warm-up end and the
//! deadline, threads run until the deadline, their quotas or `stop`, meet again, and only then
//! does the coordinator take the closing `/proc` snapshot. The opening one is taken once, at
//! the measured period's start ([`OpeningSnapshot`]): by the coordinator (before `go` when
//! there is no warm-up) or, when the coordinator is late for it, by the first client thread to
//! start an operation; the step hands both instants to its [`Costs`]. A client thread with a
//! placement pins itself once, first thing, before it connects (never per operation). Nothing
//! here knows a suite: a step is a [`StepPlan`].
//! A counting pass on the perf path ([`run_counting`]) attaches `perf stat` to the pass's
//! threads (each client thread's own, and the server task serving its connection, which each
//! thread asks its session for once, after it connects) between the connect barrier and `go`,
//! and switches it off when every thread stopped.
//! Must not: allocate, lock or format per operation; write to the store (the caller does).
//!
//! The folder: `phases` (what threads and coordinator share), `client` (the client threads and
//! their operation loop), `coordinator`, `finish` (after the threads stop), `perf` (the
//! counting glue of the perf path); this file the step's types and entry points.

mod client;
mod coordinator;
mod finish;
mod perf;
mod phases;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::thread;
use std::time::{Duration, Instant};

use super::pacer::{self};
use super::recorder::Merged;
use crate::cpus::CpuSet;
use crate::engine::{Driver, TableDdl};
use crate::profiler::{self, Perf, ProfileSettings, Recorded, Recording};
use crate::progress::StepProgress;
use crate::sampler::{Costs, CpuUse, Peaks, Probe, Sampler};
use crate::workload::{Pacer, StepPlan};
use client::spawn_threads;
use coordinator::{Clock, coordinate};
use finish::{abort_start, finish, panic_text};
use perf::PerfPass;
use phases::{DONE, GO, Leading, Phases, READY, SNAPSHOTTED, Shared, Window};

/// How far away the deadline of a step without one is (it ends on its quotas).
const OPEN_ENDED: Duration = Duration::from_secs(30 * 24 * 3_600);

/// What a step needs to run: the step and the cell's part.
pub struct StepSpec<'a> {
    pub step: &'a StepPlan,
    /// Client connections per role (the step's own count when it fixes one).
    pub clients: u32,
    /// Seed of the first thread's random generator (others add their index).
    pub seed: u64,
    /// CPUs every client thread pins itself to; `None`: not pinned.
    pub client_cpus: Option<CpuSet>,
    /// The target's table DDL, for executors that create indexes.
    pub ddl: &'a TableDdl,
    /// Record a CPU profile of the measured period (`None`: not profiled).
    pub profile: Option<ProfileSpec<'a>>,
    /// An instruction-counting pass (a step of quotas): no memory sampler, and the coordinator
    /// sleeps until the quotas are met, so that nothing but the operations runs and is counted.
    pub counting: bool,
}

/// A profiled step: `perf`, its settings, and the file the recording goes to.
pub struct ProfileSpec<'a> {
    pub perf: &'a Perf,
    pub settings: ProfileSettings,
    pub data: PathBuf,
}

/// What one operation type of one role measured, merged over its threads.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct OpRun {
    pub role: usize,
    pub op: usize,
    pub merged: Merged,
    /// The role's own measured seconds: from the end of warm-up to its last operation's end
    /// (or its schedule's end, when later). A paced role's rate divides by these, so a closed
    /// loop that finishes its last operation after the schedule ended does not dilute it.
    pub role_seconds: f64,
}

/// What a step measured. It crosses from a remote target's agent (`client = "remote"`) as
/// JSON, without a profile.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct StepRun {
    /// Every operation type of every role, in role then operation order.
    pub ops: Vec<OpRun>,
    /// The counted operations merged: what the step's rate, latency and series describe.
    pub merged: Merged,
    /// Measured seconds: from the end of warm-up to the end of the last operation (or of a
    /// paced role's last schedule slot, when later).
    pub seconds: f64,
    pub costs: Costs,
    pub peaks: Peaks,
    /// Rows returned or changed per statement of the counted role, over its measured
    /// operations.
    pub rows_touched: Vec<u64>,
    /// The first fatal error a thread hit, if any (the step ended early for that thread).
    pub fatal: Option<String>,
    /// The busiest client thread's CPU time / wall time over its measured operations (0..1).
    pub max_client_busy: Option<f64>,
    pub interrupted: bool,
    /// Every operation the threads ran, warm-up and failed ones included (what a whole-process
    /// CPU figure must be divided by; `merged.events` counts the measured window only).
    pub events_all: u64,
    /// Where the server's and the client's threads ran and were allowed to run: the sampler's
    /// seconds plus both boundaries of the measured period.
    pub cpus: CpuUse,
    /// How an adaptive step ended; `None` for a fixed-length step.
    pub adaptive: Option<AdaptiveEnd>,
    /// Every role with a quota met it (the step ended on its quotas).
    pub quota_met: bool,
    /// The measured period's CPU profile, when asked for: its recording or why there is none.
    #[serde(skip)]
    pub profile: Option<Result<Recorded, String>>,
    /// A counting pass on the perf path ([`run_counting`]): what `perf stat` counted.
    #[serde(default)]
    pub perf_counts: Option<PerfCounts>,
}

/// What `perf stat` counted over a pass ([`run_counting`]): the server tasks serving the
/// pass's connections (`tasks` of them; none for an in-process engine) and the client threads.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PerfCounts {
    pub server: u64,
    pub client: u64,
    pub tasks: u32,
}

/// How an adaptive step ended, by the coordinator's own per-second counts.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
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

/// Whether the runner can run `step`'s roles as given: a fixed rate is positive and finite; a
/// follower's leader is another role, its bound fits the completions a thread keeps
/// ([`pacer::RING`]), and when the leader has a quota the follower has the same one (the last
/// thread with a quota ends the step, so a follower without it could stop before its leader's
/// last operations). A step of the plan that breaks these is a bug in its suite.
pub fn check_roles(step: &StepPlan) -> anyhow::Result<()> {
    for (r, role) in step.roles.iter().enumerate() {
        let name = role.name;
        match role.pacer {
            Pacer::Closed => {}
            Pacer::Rate { per_sec } => anyhow::ensure!(
                per_sec.is_finite() && per_sec > 0.0,
                "{}: role {name} has rate {per_sec}",
                step.label
            ),
            Pacer::Follow { leader, bound } => {
                let lead = step.roles.get(leader).filter(|_| leader != r);
                let Some(lead) = lead else {
                    anyhow::bail!("{}: role {name} follows no other role", step.label);
                };
                anyhow::ensure!(
                    bound >= 1 && (bound as usize) < pacer::RING,
                    "{}: role {name} follows within {bound}, not 1..{}",
                    step.label,
                    pacer::RING
                );
                anyhow::ensure!(
                    lead.quota.is_none() || lead.quota == role.quota,
                    "{}: role {name} must share the quota of {}",
                    step.label,
                    lead.name
                );
            }
        }
    }
    Ok(())
}

/// [`run`] with no progress shown and no interrupt: a remote target's agent, and tests.
pub fn run_unattended(
    spec: &StepSpec,
    driver: &Arc<dyn Driver>,
    probe: &Probe,
) -> anyhow::Result<StepRun> {
    run_quietly(spec, driver, probe, None)
}

/// [`run_unattended`] of a counting pass (`spec.counting`) on the perf path: `perf stat -e
/// event` counts the pass's client threads and the server tasks serving their connections
/// from `go` until every thread stopped ([`StepRun::perf_counts`]).
pub fn run_counting(
    spec: &StepSpec,
    driver: &Arc<dyn Driver>,
    probe: &Probe,
    event: &str,
) -> anyhow::Result<StepRun> {
    run_quietly(spec, driver, probe, Some(event))
}

fn run_quietly(
    spec: &StepSpec,
    driver: &Arc<dyn Driver>,
    probe: &Probe,
    perf_event: Option<&str>,
) -> anyhow::Result<StepRun> {
    let quiet = crate::progress::Progress {
        mode: crate::progress::Mode::Quiet,
        verbose: false,
        interval: None,
    };
    let bar = quiet.step(&spec.step.label, spec.step.warmup + spec.step.expected);
    let interrupt = Arc::new(AtomicBool::new(false));
    run_with(spec, driver, probe, (&bar, &interrupt), perf_event)
}

/// Run one step to its end: its deadline (or an adaptive step's precision), its quotas, or
/// `interrupt`.
pub fn run(
    spec: &StepSpec,
    driver: &Arc<dyn Driver>,
    probe: &Probe,
    progress: &StepProgress,
    interrupt: &Arc<AtomicBool>,
) -> anyhow::Result<StepRun> {
    run_with(spec, driver, probe, (progress, interrupt), None)
}

/// [`run`], counted by `perf stat -e EVENT` when `perf_event` is given.
fn run_with(
    spec: &StepSpec,
    driver: &Arc<dyn Driver>,
    probe: &Probe,
    (progress, interrupt): (&StepProgress, &Arc<AtomicBool>),
    perf_event: Option<&str>,
) -> anyhow::Result<StepRun> {
    let step = spec.step;
    check_roles(step)?;
    let shared = Shared::new(spec, probe, perf_event.is_some());
    let (ends, clock, coordinated, closing, peaks, profile, perf) = thread::scope(|s| {
        let (handles, spawn_error) = spawn_threads(s, spec, &shared, interrupt, driver);
        let phases = shared.phases.get_or_init(|| Phases::new(handles.len() + 1));
        if let Some(e) = spawn_error {
            return Err(abort_start(&shared, phases, handles, e));
        }
        let mut lead = Leading::new(&shared);
        lead.pass(READY);
        let t0 = Instant::now();
        let measure_start = t0 + step.warmup;
        let mut clock = Clock {
            t0,
            measure_start,
            deadline: measure_start + step.measure.unwrap_or(OPEN_ENDED),
            go: t0,
        };
        *shared.window.lock().expect("window lock") = Some(Window {
            measure_start: clock.measure_start,
            deadline: clock.deadline,
        });
        let sampler = (!spec.counting).then(|| Sampler::start(probe.clone()));
        // Every connection is open: perf attaches to the processes serving them now, so it
        // samples from the measured period's first instant.
        let recording = spec
            .profile
            .as_ref()
            .map(|p| Recording::start(p.perf, &p.settings, &probe.attach(), &p.data));
        if step.warmup.is_zero() {
            // Every thread waits at `go`: nothing runs, the window opens exactly here.
            shared.opening.claim();
        }
        // Every thread connected and noted its ids; none runs until `go`.
        let perf = perf_event.map(|event| PerfPass::start(event, &shared));
        clock.go = Instant::now();
        lead.pass(GO);
        let mut coordinated = coordinate(spec, &clock, probe, progress, interrupt, &shared);
        lead.pass(DONE);
        let perf = perf.map(|p| p.and_then(PerfPass::off));
        let from = Instant::now();
        let b = probe.snapshot();
        let closing = (from + from.elapsed() / 2, b);
        coordinated.cpus.add(&probe.cpus());
        let from = (shared.opening.taken.get()).map_or(coordinated.measured_from, |o| o.monotonic);
        let window = (from, profiler::monotonic_now());
        let profile = recording.map(|r| r.and_then(|r| r.stop(window)));
        lead.pass(SNAPSHOTTED);
        let peaks = sampler.map(Sampler::finish).unwrap_or_default();
        // Join every thread before looking at any: the scope would panic over a panicked
        // thread left unjoined.
        let joined: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        let ends = joined
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|p| anyhow::anyhow!("a client thread panicked: {}", panic_text(&*p)))?;
        anyhow::Ok((ends, clock, coordinated, closing, peaks, profile, perf))
    })?;
    let mut run = finish(spec, &shared, ends, &clock, coordinated, closing, peaks)?;
    run.profile = profile;
    run.perf_counts = perf.map(|p| p.and_then(PerfPass::counts)).transpose()?;
    Ok(run)
}
