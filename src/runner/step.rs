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

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::pacer::{self, Cell, Schedule};
use super::recorder::{Merged, Recorder};
use crate::cpus::{self, CpuSet};
use crate::engine::{DbError, Driver, ErrorKind, Session, TableDdl};
use crate::profiler::{self, Perf, ProfileSettings, Recorded, Recording};
use crate::progress::StepProgress;
use crate::sampler::{Costs, CpuUse, CpuWindow, Peaks, Probe, Sampler, Snapshot};
use crate::stats;
use crate::workload::{Done, Executor, Opening, Pacer, Role, StepPlan};

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

/// What one role thread hands back.
struct ThreadEnd {
    role: usize,
    /// One per operation type of the role; `None` when the thread could not set up.
    recorders: Option<Vec<Recorder>>,
    rows_touched: Vec<u64>,
    error: Option<DbError>,
    /// Thread CPU / wall time over the measured period.
    busy: Option<f64>,
    /// The end of a paced role's last schedule slot, when it waited for it.
    period_end: Option<Instant>,
}

/// Counters one thread writes and the coordinator reads, alone on their cache line.
#[repr(align(128))]
#[derive(Default)]
struct Live {
    /// Operations run, warm-up and failed ones included.
    events: AtomicU64,
    /// Counted units of the counted operations (warm-up included).
    units: AtomicU64,
    /// Counted operations completed (warm-up included): `--report-interval`'s transactions
    /// (a sysbench event is one).
    transactions: AtomicU64,
    /// Failed operations (warm-up included): `--report-interval`'s errors.
    errors: AtomicU64,
    /// On the perf path: the thread's own id and the server task serving its connection (0:
    /// none), noted once after it connects.
    tid: AtomicU32,
    task: AtomicU32,
}

struct Window {
    measure_start: Instant,
    deadline: Instant,
}

/// The four points every started thread and the coordinator pass together, in this order.
/// Made once the coordinator knows how many threads really started.
struct Phases {
    /// Every thread connected and prepared (or failed to).
    ready: Barrier,
    /// The window is set: run.
    go: Barrier,
    /// Every thread stopped.
    done: Barrier,
    /// The closing snapshot is taken: threads may close their connections.
    snapshotted: Barrier,
}

impl Phases {
    fn new(parties: usize) -> Phases {
        Phases {
            ready: Barrier::new(parties),
            go: Barrier::new(parties),
            done: Barrier::new(parties),
            snapshotted: Barrier::new(parties),
        }
    }

    fn nth(&self, i: usize) -> &Barrier {
        [&self.ready, &self.go, &self.done, &self.snapshotted][i]
    }
}

const READY: usize = 0;
const GO: usize = 1;
const DONE: usize = 2;
const SNAPSHOTTED: usize = 3;

/// A client thread's way through the [`Phases`]: it passes each exactly once, in order, and
/// when the thread returns early or panics, its drop reports the thread stopped and passes
/// the rest, so the coordinator never waits at a barrier for a thread that is gone.
struct Passage<'a> {
    t: &'a ThreadSpec<'a>,
    shared: &'a Shared,
    next: usize,
    stopped: bool,
}

impl Passage<'_> {
    /// Pass every phase up to and including `phase`.
    fn pass(&mut self, phase: usize) {
        let phases = self.shared.phases.wait();
        while self.next <= phase {
            phases.nth(self.next).wait();
            self.next += 1;
        }
    }

    fn stop(&mut self, quota_met: bool) {
        if !std::mem::replace(&mut self.stopped, true) {
            stopped(self.t, self.shared, quota_met);
        }
    }
}

impl Drop for Passage<'_> {
    fn drop(&mut self) {
        self.stop(false);
        self.pass(SNAPSHOTTED);
    }
}

/// What the coordinator and the threads of one step share.
struct Shared {
    phases: std::sync::OnceLock<Phases>,
    window: Mutex<Option<Window>>,
    live: Vec<Live>,
    /// Pacing state per thread (`client × roles + role`).
    cells: Vec<Cell>,
    /// Threads with a quota still running; the last one to stop sets `stop`.
    quota_left: AtomicUsize,
    /// Threads with a quota that stopped before meeting it.
    quota_missed: AtomicUsize,
    /// Set to end the step early (interrupt, adaptive precision reached, quotas met).
    stop: AtomicBool,
    /// A counting pass's coordinator, woken when the quotas are met.
    coordinator: std::sync::OnceLock<thread::Thread>,
    /// The measured period's opening snapshot.
    opening: OpeningSnapshot,
    /// A counting pass on the perf path: threads note their ids in `live`.
    note_ids: bool,
}

/// How long after the measured period's start the coordinator has to take the opening
/// snapshot before the first client thread to start an operation takes it instead.
const OPENING_GRACE: Duration = Duration::from_millis(5);

/// The measured period's opening snapshot, taken once, by whoever claims it first: the
/// coordinator when it wakes at the period's start, or, when it has not by [`OPENING_GRACE`]
/// later, the first client thread to start an operation. The coordinator sleeps until the
/// start and then waits its turn for a CPU: behind 64 busy client threads on 2 CPUs that was up
/// to 0.2 s, after a `--quick` step had ended, so its snapshot covered none of the operations
/// its deltas were divided by. A thread starting an operation is on a CPU at that instant.
struct OpeningSnapshot {
    probe: Probe,
    /// Client threads may take it (not in a counting pass: its clients only count).
    by_clients: bool,
    claimed: AtomicBool,
    taken: std::sync::OnceLock<Opened>,
}

/// An opening snapshot and when it was taken.
struct Opened {
    snapshot: Snapshot,
    /// The middle of the snapshot: its counters were read then, give or take half its length
    /// (a remote server's are read by its agent, a round trip away).
    at: Instant,
    /// `CLOCK_MONOTONIC` seconds then (the profile's window starts there).
    monotonic: f64,
}

impl OpeningSnapshot {
    fn new(probe: &Probe, by_clients: bool) -> OpeningSnapshot {
        OpeningSnapshot {
            probe: probe.clone(),
            by_clients,
            claimed: AtomicBool::new(false),
            taken: std::sync::OnceLock::new(),
        }
    }

    /// Take the snapshot unless someone claimed it before; true when this call took it.
    fn claim(&self) -> bool {
        if self.claimed.swap(true, Ordering::AcqRel) {
            return false;
        }
        let from = Instant::now();
        let snapshot = self.probe.snapshot();
        let _ = self.taken.set(Opened {
            snapshot,
            at: from + from.elapsed() / 2,
            monotonic: profiler::monotonic_now(),
        });
        true
    }

    /// [`Self::claim`] for a client thread past the grace: a load first, so that only a late
    /// coordinator leaves it to a client.
    fn claim_late(&self) -> bool {
        self.by_clients && !self.claimed.load(Ordering::Acquire) && self.claim()
    }
}

/// One role thread's place in the step.
struct ThreadSpec<'a> {
    /// `client × roles + role`: its `Live` and `Cell`.
    index: usize,
    client: u32,
    /// Clients in the step (connections per role).
    clients: u32,
    role: usize,
    step: &'a StepPlan,
    seed: u64,
    client_cpus: Option<&'a CpuSet>,
    ddl: &'a TableDdl,
}

impl ThreadSpec<'_> {
    fn role(&self) -> &Role {
        &self.step.roles[self.role]
    }

    /// The cell of role `r` of this thread's client.
    fn cell_of<'s>(&self, shared: &'s Shared, r: usize) -> &'s Cell {
        &shared.cells[self.client as usize * self.step.roles.len() + r]
    }

    /// The roles that follow this one: (role, bound).
    fn followers(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.step
            .roles
            .iter()
            .enumerate()
            .filter_map(move |(r, role)| match role.pacer {
                Pacer::Follow { leader, bound } if leader == self.role => {
                    Some((r, u64::from(bound)))
                }
                _ => None,
            })
    }

    /// This thread's schedule, its operations due from `origin`.
    fn schedule<'s>(&self, shared: &'s Shared, origin: Instant) -> Schedule<'s> {
        let pacer = self.role().pacer;
        // Clients of a fixed-rate role are spread over one period, so their statements do
        // not all arrive at the same instant.
        let origin = match pacer {
            Pacer::Rate { per_sec } if self.clients > 1 => {
                let period = 1.0 / (per_sec * f64::from(self.clients));
                origin + Duration::from_secs_f64(period * f64::from(self.client))
            }
            _ => origin,
        };
        let leader = match pacer {
            Pacer::Follow { leader, .. } => Some(self.cell_of(shared, leader)),
            _ => None,
        };
        let followers = (self.followers())
            .map(|(f, bound)| (self.cell_of(shared, f), bound))
            .collect();
        Schedule::new(pacer, origin, leader, followers)
    }

    /// Wake every thread that may wait on this one: its followers and its leader.
    fn wake_partners(&self, shared: &Shared) {
        for (f, _) in self.followers() {
            self.cell_of(shared, f).wake();
        }
        if let Pacer::Follow { leader, .. } = self.role().pacer {
            self.cell_of(shared, leader).wake();
        }
    }
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
    let n = spec.clients as usize * step.roles.len();
    let quota_threads =
        spec.clients as usize * step.roles.iter().filter(|r| r.quota.is_some()).count();
    let shared = Shared {
        phases: std::sync::OnceLock::new(),
        window: Mutex::new(None),
        live: (0..n).map(|_| Live::default()).collect(),
        cells: (0..n).map(|_| Cell::default()).collect(),
        quota_left: AtomicUsize::new(quota_threads),
        quota_missed: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        coordinator: std::sync::OnceLock::new(),
        opening: OpeningSnapshot::new(probe, !spec.counting),
        note_ids: perf_event.is_some(),
    };
    let (ends, clock, coordinated, closing, peaks, profile, perf) = thread::scope(|s| {
        let (handles, spawn_error) = spawn_threads(s, spec, &shared, interrupt, driver);
        let phases = shared.phases.get_or_init(|| Phases::new(handles.len() + 1));
        if let Some(e) = spawn_error {
            return Err(abort_start(&shared, phases, handles, e));
        }
        phases.ready.wait();
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
        phases.go.wait();
        let mut coordinated = coordinate(spec, &clock, probe, progress, interrupt, &shared);
        phases.done.wait();
        let perf = perf.map(|p| p.and_then(PerfPass::off));
        let from = Instant::now();
        let b = probe.snapshot();
        let closing = (from + from.elapsed() / 2, b);
        coordinated.cpus.add(&probe.cpus());
        let from = (shared.opening.taken.get()).map_or(coordinated.measured_from, |o| o.monotonic);
        let window = (from, profiler::monotonic_now());
        let profile = recording.map(|r| r.and_then(|r| r.stop(window)));
        phases.snapshotted.wait();
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

/// `perf stat` over a pass's threads: the client threads and the server tasks serving them,
/// as they noted them in [`Live`].
struct PerfPass {
    stat: crate::counter::PerfStat,
    server: Vec<u32>,
    client: Vec<u32>,
}

impl PerfPass {
    /// Attach and switch counting on (perf's ack: on before any thread passes `go`). On
    /// failure the threads are told to stop at once, and the step fails with the reason.
    fn start(event: &str, shared: &Shared) -> anyhow::Result<PerfPass> {
        let ids = |f: fn(&Live) -> &AtomicU32| -> Vec<u32> {
            (shared.live.iter())
                .map(|l| f(l).load(Ordering::Relaxed))
                .filter(|&id| id != 0)
                .collect()
        };
        let (server, client) = (ids(|l| &l.task), ids(|l| &l.tid));
        let all: Vec<u32> = server.iter().chain(&client).copied().collect();
        let started = crate::counter::PerfStat::start(event, &all).and_then(|mut stat| {
            stat.enable()?;
            Ok(stat)
        });
        match started {
            Ok(stat) => Ok(PerfPass {
                stat,
                server,
                client,
            }),
            Err(e) => {
                shared.stop.store(true, Ordering::Relaxed);
                Err(e.context("counting the pass with perf stat"))
            }
        }
    }

    fn off(mut self) -> anyhow::Result<PerfPass> {
        self.stat.disable()?;
        Ok(self)
    }

    /// Stop perf and sum its counts: the server tasks' and the client threads'.
    fn counts(self) -> anyhow::Result<PerfCounts> {
        let per_thread = self.stat.stop()?;
        let sum = |ids: &[u32]| -> u64 {
            (per_thread.iter())
                .filter(|(tid, _)| ids.contains(tid))
                .map(|(_, n)| n)
                .sum()
        };
        Ok(PerfCounts {
            server: sum(&self.server),
            client: sum(&self.client),
            tasks: self.server.len() as u32,
        })
    }
}

/// A client thread could not be started: let the ones that did pass every phase at once (with
/// `stop` set they run nothing), wait for them, and fail the step with the reason.
fn abort_start(
    shared: &Shared,
    phases: &Phases,
    handles: Vec<thread::ScopedJoinHandle<'_, ThreadEnd>>,
    e: std::io::Error,
) -> anyhow::Error {
    shared.stop.store(true, Ordering::Relaxed);
    let now = Instant::now();
    *shared.window.lock().expect("window lock") = Some(Window {
        measure_start: now,
        deadline: now,
    });
    for i in READY..=SNAPSHOTTED {
        phases.nth(i).wait();
    }
    for h in handles {
        let _ = h.join();
    }
    anyhow::anyhow!("cannot start a client thread: {e}")
}

/// The message a panic carried (`&str` or `String`), or a placeholder.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into())
}

/// Combine what the threads and the coordinator measured into the step's result.
fn finish(
    spec: &StepSpec,
    shared: &Shared,
    ends: Vec<ThreadEnd>,
    clock: &Clock,
    coordinated: Coordinated,
    (closing_at, b): (Instant, Snapshot),
    peaks: Peaks,
) -> anyhow::Result<StepRun> {
    let Coordinated {
        interrupted,
        mut cpus,
        adaptive,
        ..
    } = coordinated;
    cpus.add(&peaks.cpus);
    let step = spec.step;
    let mut ends = Ends::merge(ends, step);
    if ends.recorders.iter().flatten().all(Vec::is_empty) {
        anyhow::bail!(
            "no client could connect and prepare: {}",
            ends.fatal.unwrap_or_else(|| "unknown error".into())
        );
    }
    let events_all: u64 = shared
        .live
        .iter()
        .map(|l| l.events.load(Ordering::Relaxed))
        .sum();
    let ops = op_runs(
        std::mem::take(&mut ends.recorders),
        &ends.role_period_end,
        clock.measure_start,
    );
    let counted: Vec<&Merged> = ops
        .iter()
        .filter(|o| step.counted.covers(o.role, o.op))
        .map(|o| &o.merged)
        .collect();
    let merged = Merged::combine(&counted);
    let last = ops
        .iter()
        .filter_map(|o| o.merged.last_end)
        .chain(ends.period_end)
        .max();
    let fallback = if step.measure.is_some() {
        clock.deadline
    } else {
        Instant::now()
    };
    let end = last.unwrap_or(fallback).max(clock.measure_start);
    let seconds = end.duration_since(clock.measure_start).as_secs_f64();
    let quota_met = step.has_quota() && shared.quota_missed.load(Ordering::Relaxed) == 0;
    let opened = shared.opening.taken.get();
    Ok(StepRun {
        ops,
        merged,
        seconds,
        costs: Costs {
            a: opened.map_or_else(|| b.clone(), |o| o.snapshot.clone()),
            window: Some(cpu_window(clock, opened.map(|o| o.at), closing_at, seconds)),
            b,
        },
        peaks,
        rows_touched: ends.rows_touched,
        fatal: ends.fatal,
        max_client_busy: ends.max_busy,
        interrupted,
        events_all,
        cpus,
        adaptive,
        quota_met,
        profile: None,
        perf_counts: None,
    })
}

/// The snapshots' window against the operations window: from the opening snapshot (its
/// middle), late by its distance from the first instant a measured operation could start (the
/// period's start, or `go` when that came later), to the closing one (its middle).
fn cpu_window(
    clock: &Clock,
    opened: Option<Instant>,
    closing_at: Instant,
    ops_seconds: f64,
) -> CpuWindow {
    let first = clock.measure_start.max(clock.go);
    let secs = |from: Instant, to: Instant| to.saturating_duration_since(from).as_secs_f64();
    CpuWindow {
        opened_late: opened.map(|at| secs(first, at)),
        seconds: opened.map_or(0.0, |at| secs(at, closing_at)),
        ops_seconds,
    }
}

/// Each role × operation type's merged recorders, with the role's own measured seconds: from
/// `measure_start` to its last operation's end or its schedule's end, whichever is later.
fn op_runs(
    recorders: Vec<Vec<Vec<Recorder>>>,
    role_period_end: &[Option<Instant>],
    measure_start: Instant,
) -> Vec<OpRun> {
    let mut ops = Vec::new();
    for (role, per_op) in recorders.into_iter().enumerate() {
        let merged: Vec<(usize, Merged)> = (per_op.into_iter().enumerate())
            .filter(|(_, r)| !r.is_empty())
            .map(|(op, r)| (op, Merged::from(r)))
            .collect();
        let role_end = (merged.iter())
            .filter_map(|(_, m)| m.last_end)
            .chain(role_period_end[role])
            .max()
            .unwrap_or(measure_start)
            .max(measure_start);
        let role_seconds = role_end.duration_since(measure_start).as_secs_f64();
        for (op, merged) in merged {
            ops.push(OpRun {
                role,
                op,
                merged,
                role_seconds,
            });
        }
    }
    ops
}

/// Start the step's threads, one per client per role, named `dbdelta-client-N` (the sampler
/// finds them by it).
fn spawn_threads<'scope, 'env>(
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
struct Ends {
    /// Per role, per operation type: every thread's recorder.
    recorders: Vec<Vec<Vec<Recorder>>>,
    /// Rows per statement of the counted role.
    rows_touched: Vec<u64>,
    /// The first fatal error.
    fatal: Option<String>,
    max_busy: Option<f64>,
    /// The latest end of a paced role's schedule.
    period_end: Option<Instant>,
    /// The same per role.
    role_period_end: Vec<Option<Instant>>,
}

impl Ends {
    fn merge(ends: Vec<ThreadEnd>, step: &StepPlan) -> Ends {
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
    let pinned = match t.client_cpus {
        Some(set) => cpus::pin_current_thread(set)
            .map_err(|e| DbError::fatal(format!("cannot pin a client thread to CPUs {set}: {e}"))),
        None => Ok(()),
    };
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
        Err(e) => {
            return ThreadEnd {
                role: t.role,
                recorders: None,
                rows_touched: Vec::new(),
                error: Some(e),
                busy: None,
                period_end: None,
            };
        }
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

/// A thread stops: partners stop waiting for it, and the last thread with a quota ends the
/// step.
fn stopped(t: &ThreadSpec, shared: &Shared, quota_met: bool) {
    shared.cells[t.index].finish();
    t.wake_partners(shared);
    if t.role().quota.is_some() {
        if !quota_met {
            shared.quota_missed.fetch_add(1, Ordering::Relaxed);
        }
        if shared.quota_left.fetch_sub(1, Ordering::AcqRel) == 1 {
            shared.stop.store(true, Ordering::Relaxed);
            if let Some(c) = shared.coordinator.get() {
                c.unpark();
            }
        }
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
    let mut ops = OpLoop {
        t,
        shared,
        measure_start,
        recorders: (role.ops.iter())
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
    };
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

/// The instants that frame a step.
struct Clock {
    t0: Instant,
    measure_start: Instant,
    deadline: Instant,
    /// When the coordinator reached `go` (the threads start their operations after it).
    go: Instant,
}

/// What the coordinator saw while the threads ran.
struct Coordinated {
    interrupted: bool,
    cpus: CpuUse,
    adaptive: Option<AdaptiveEnd>,
    /// `CLOCK_MONOTONIC` seconds when the coordinator saw the measured period start (the
    /// profile's window starts there, or at the opening snapshot when one was taken).
    measured_from: f64,
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
fn coordinate(
    spec: &StepSpec,
    clock: &Clock,
    probe: &Probe,
    progress: &StepProgress,
    interrupt: &AtomicBool,
    shared: &Shared,
) -> Coordinated {
    let tick = coordinator_tick(spec, shared);
    let stop = &shared.stop;
    let total = || {
        shared
            .live
            .iter()
            .map(|l| l.units.load(Ordering::Relaxed))
            .sum::<u64>()
    };
    let sum = |of: fn(&Live) -> &AtomicU64| {
        (shared.live.iter())
            .map(|l| of(l).load(Ordering::Relaxed))
            .sum::<u64>()
    };
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
        let next_boundary = match (opened, &counter) {
            (false, _) => clock.measure_start,
            (true, Some(c)) => c.next.min(clock.deadline),
            (true, None) => clock.deadline,
        };
        let next_boundary = match &intervals {
            Some(i) => next_boundary.min(i.next),
            None => next_boundary,
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::sysbench::steps as sysbench;

    /// Every LinkBench step's roles (the load's loaders, the requesters at each count) pass the
    /// check a step runs first (the test lives here so the suites never import the runner).
    #[test]
    fn every_linkbench_step_passes_the_role_check() {
        use crate::suites::linkbench::steps::Settings;
        let s = Settings::with_defaults(10_000, vec![1, 4]);
        for (i, (label, kind)) in s.steps().into_iter().enumerate() {
            let plan = s.step_plan(i as u32, &label, kind);
            check_roles(&plan).unwrap_or_else(|e| panic!("{label}: {e}"));
        }
    }

    #[test]
    fn roles_are_checked_before_a_step_runs() {
        let point = sysbench::find("point-query").unwrap();
        let scale = crate::workload::Scale {
            tables: 1,
            rows: 10,
        };
        let base = sysbench::step_plan(point, scale, Duration::ZERO, Duration::from_secs(1));
        assert!(
            check_roles(&base).is_ok(),
            "a sysbench step: one closed-loop role"
        );
        let with = |pacer: Pacer, quota: Option<u64>| {
            let mut step = base.clone();
            step.roles[0].quota = Some(10);
            let mut second = step.roles[0].clone();
            (second.name, second.pacer, second.quota) = ("second", pacer, quota);
            step.roles.push(second);
            check_roles(&step).map_err(|e| e.to_string())
        };
        let follow = |leader, bound| Pacer::Follow { leader, bound };
        assert_eq!(with(follow(0, 8), Some(10)), Ok(()));
        assert_eq!(with(Pacer::Rate { per_sec: 100.0 }, None), Ok(()));
        let errors = [
            (with(Pacer::Rate { per_sec: 0.0 }, None), "has rate 0"),
            (with(follow(1, 8), Some(10)), "follows no other role"),
            (with(follow(5, 8), Some(10)), "follows no other role"),
            (with(follow(0, 0), Some(10)), "follows within 0"),
            (with(follow(0, 64), Some(10)), "follows within 64"),
            (with(follow(0, 8), None), "must share the quota of client"),
        ];
        for (got, want) in errors {
            let e = got.unwrap_err();
            assert!(e.contains(want), "{e}: want {want}");
        }
    }
}
