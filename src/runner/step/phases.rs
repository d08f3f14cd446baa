//! What a step's threads and its coordinator share: the four [`Phases`] they pass together
//! (ready, go, done, snapshotted), each thread's [`Passage`] through them, the counters each
//! thread writes alone ([`Live`]), the opening snapshot whoever comes first takes, and a role
//! thread's place ([`ThreadSpec`]). Must not: read the clock around an operation or block
//! anywhere but at a phase.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::StepSpec;
use crate::cpus::CpuSet;
use crate::engine::{DbError, TableDdl};
use crate::profiler;
use crate::runner::pacer::{Cell, Schedule};
use crate::runner::recorder::Recorder;
use crate::sampler::{Probe, Snapshot};
use crate::workload::{Pacer, Role, StepPlan};

/// CPU time of the calling thread.
pub(super) fn thread_cpu() -> Duration {
    // SAFETY: clock_gettime writes the timespec we hand it.
    let ts = unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
        ts
    };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// What one role thread hands back.
pub(super) struct ThreadEnd {
    pub(super) role: usize,
    /// One per operation type of the role; `None` when the thread could not set up.
    pub(super) recorders: Option<Vec<Recorder>>,
    pub(super) rows_touched: Vec<u64>,
    pub(super) error: Option<DbError>,
    /// Thread CPU / wall time over the measured period.
    pub(super) busy: Option<f64>,
    /// The end of a paced role's last schedule slot, when it waited for it.
    pub(super) period_end: Option<Instant>,
}

impl ThreadEnd {
    /// A thread that could not pin itself, connect or prepare: `error`, nothing recorded.
    pub(super) fn not_set_up(role: usize, error: DbError) -> ThreadEnd {
        ThreadEnd {
            role,
            recorders: None,
            rows_touched: Vec::new(),
            error: Some(error),
            busy: None,
            period_end: None,
        }
    }
}

/// Counters one thread writes and the coordinator reads, alone on their cache line.
#[repr(align(128))]
#[derive(Default)]
pub(super) struct Live {
    /// Operations run, warm-up and failed ones included.
    pub(super) events: AtomicU64,
    /// Counted units of the counted operations (warm-up included).
    pub(super) units: AtomicU64,
    /// Counted operations completed (warm-up included): `--report-interval`'s transactions
    /// (a sysbench event is one).
    pub(super) transactions: AtomicU64,
    /// Failed operations (warm-up included): `--report-interval`'s errors.
    pub(super) errors: AtomicU64,
    /// On the perf path: the thread's own id and the server task serving its connection (0:
    /// none), noted once after it connects.
    pub(super) tid: AtomicU32,
    pub(super) task: AtomicU32,
}

pub(super) struct Window {
    pub(super) measure_start: Instant,
    pub(super) deadline: Instant,
}

/// The four points every started thread and the coordinator pass together, in this order.
/// Made once the coordinator knows how many threads really started.
pub(super) struct Phases {
    /// Every thread connected and prepared (or failed to).
    pub(super) ready: Barrier,
    /// The window is set: run.
    pub(super) go: Barrier,
    /// Every thread stopped.
    pub(super) done: Barrier,
    /// The closing snapshot is taken: threads may close their connections.
    pub(super) snapshotted: Barrier,
}

impl Phases {
    pub(super) fn new(parties: usize) -> Phases {
        Phases {
            ready: Barrier::new(parties),
            go: Barrier::new(parties),
            done: Barrier::new(parties),
            snapshotted: Barrier::new(parties),
        }
    }

    pub(super) fn nth(&self, i: usize) -> &Barrier {
        [&self.ready, &self.go, &self.done, &self.snapshotted][i]
    }
}

pub(super) const READY: usize = 0;

pub(super) const GO: usize = 1;

pub(super) const DONE: usize = 2;

pub(super) const SNAPSHOTTED: usize = 3;

/// A client thread's way through the [`Phases`]: it passes each exactly once, in order, and
/// when the thread returns early or panics, its drop reports the thread stopped and passes
/// the rest, so the coordinator never waits at a barrier for a thread that is gone.
pub(super) struct Passage<'a> {
    pub(super) t: &'a ThreadSpec<'a>,
    pub(super) shared: &'a Shared,
    pub(super) next: usize,
    pub(super) stopped: bool,
}

impl Passage<'_> {
    /// Pass every phase up to and including `phase`.
    pub(super) fn pass(&mut self, phase: usize) {
        let phases = self.shared.phases.wait();
        while self.next <= phase {
            phases.nth(self.next).wait();
            self.next += 1;
        }
    }

    pub(super) fn stop(&mut self, quota_met: bool) {
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

/// The coordinator's way through the [`Phases`], as a client thread's [`Passage`]: when the
/// coordinator's part of the step unwinds (a panic: it once printed progress into a closed
/// pipe), its drop sets `stop` and passes the phases left, so the client threads end and the
/// step's scope can join them instead of every thread waiting forever at a barrier.
pub(super) struct Leading<'a> {
    shared: &'a Shared,
    next: usize,
}

impl<'a> Leading<'a> {
    /// At the first phase; the [`Phases`] must be set.
    pub(super) fn new(shared: &'a Shared) -> Leading<'a> {
        Leading {
            shared,
            next: READY,
        }
    }

    /// Pass every phase up to and including `phase`.
    pub(super) fn pass(&mut self, phase: usize) {
        let phases = self.shared.phases.wait();
        while self.next <= phase {
            phases.nth(self.next).wait();
            self.next += 1;
        }
    }
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        if self.next > SNAPSHOTTED {
            return;
        }
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Ok(mut window) = self.shared.window.lock()
            && window.is_none()
        {
            let now = Instant::now();
            *window = Some(Window {
                measure_start: now,
                deadline: now,
            });
        }
        self.pass(SNAPSHOTTED);
    }
}

/// What the coordinator and the threads of one step share.
pub(super) struct Shared {
    pub(super) phases: std::sync::OnceLock<Phases>,
    pub(super) window: Mutex<Option<Window>>,
    pub(super) live: Vec<Live>,
    /// Pacing state per thread (`client × roles + role`).
    pub(super) cells: Vec<Cell>,
    /// Threads with a quota still running; the last one to stop sets `stop`.
    pub(super) quota_left: AtomicUsize,
    /// Threads with a quota that stopped before meeting it.
    pub(super) quota_missed: AtomicUsize,
    /// Set to end the step early (interrupt, adaptive precision reached, quotas met).
    pub(super) stop: AtomicBool,
    /// A counting pass's coordinator, woken when the quotas are met.
    pub(super) coordinator: std::sync::OnceLock<thread::Thread>,
    /// The measured period's opening snapshot.
    pub(super) opening: OpeningSnapshot,
    /// A counting pass on the perf path: threads note their ids in `live`.
    pub(super) note_ids: bool,
}

impl Shared {
    /// The shared state of `spec`'s step before any thread starts (`note_ids`: every thread
    /// notes its ids for perf).
    pub(super) fn new(spec: &StepSpec, probe: &Probe, note_ids: bool) -> Shared {
        let step = spec.step;
        let n = spec.clients as usize * step.roles.len();
        let quota_threads =
            spec.clients as usize * step.roles.iter().filter(|r| r.quota.is_some()).count();
        Shared {
            phases: std::sync::OnceLock::new(),
            window: Mutex::new(None),
            live: (0..n).map(|_| Live::default()).collect(),
            cells: (0..n).map(|_| Cell::default()).collect(),
            quota_left: AtomicUsize::new(quota_threads),
            quota_missed: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            coordinator: std::sync::OnceLock::new(),
            opening: OpeningSnapshot::new(probe, !spec.counting),
            note_ids,
        }
    }
}

/// How long after the measured period's start the coordinator has to take the opening
/// snapshot before the first client thread to start an operation takes it instead.
pub(super) const OPENING_GRACE: Duration = Duration::from_millis(5);

/// The measured period's opening snapshot, taken once, by whoever claims it first: the
/// coordinator when it wakes at the period's start, or, when it has not by [`OPENING_GRACE`]
/// later, the first client thread to start an operation. The coordinator sleeps until the
/// start and then waits its turn for a CPU: behind 64 busy client threads on 2 CPUs that was up
/// to 0.2 s, after a `--quick` step had ended, so its snapshot covered none of the operations
/// its deltas were divided by. A thread starting an operation is on a CPU at that instant.
pub(super) struct OpeningSnapshot {
    probe: Probe,
    /// Client threads may take it (not in a counting pass: its clients only count).
    by_clients: bool,
    claimed: AtomicBool,
    pub(super) taken: std::sync::OnceLock<Opened>,
}

/// An opening snapshot and when it was taken.
pub(super) struct Opened {
    pub(super) snapshot: Snapshot,
    /// The middle of the snapshot: its counters were read then, give or take half its length
    /// (a remote server's are read by its agent, a round trip away).
    pub(super) at: Instant,
    /// `CLOCK_MONOTONIC` seconds then (the profile's window starts there).
    pub(super) monotonic: f64,
}

impl OpeningSnapshot {
    pub(super) fn new(probe: &Probe, by_clients: bool) -> OpeningSnapshot {
        OpeningSnapshot {
            probe: probe.clone(),
            by_clients,
            claimed: AtomicBool::new(false),
            taken: std::sync::OnceLock::new(),
        }
    }

    /// Take the snapshot unless someone claimed it before; true when this call took it.
    pub(super) fn claim(&self) -> bool {
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
    pub(super) fn claim_late(&self) -> bool {
        self.by_clients && !self.claimed.load(Ordering::Acquire) && self.claim()
    }
}

/// One role thread's place in the step.
pub(super) struct ThreadSpec<'a> {
    /// `client × roles + role`: its `Live` and `Cell`.
    pub(super) index: usize,
    pub(super) client: u32,
    /// Clients in the step (connections per role).
    pub(super) clients: u32,
    pub(super) role: usize,
    pub(super) step: &'a StepPlan,
    pub(super) seed: u64,
    pub(super) client_cpus: Option<&'a CpuSet>,
    pub(super) ddl: &'a TableDdl,
}

impl ThreadSpec<'_> {
    pub(super) fn role(&self) -> &Role {
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
    pub(super) fn schedule<'s>(&self, shared: &'s Shared, origin: Instant) -> Schedule<'s> {
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
    pub(super) fn wake_partners(&self, shared: &Shared) {
        for (f, _) in self.followers() {
            self.cell_of(shared, f).wake();
        }
        if let Pacer::Follow { leader, .. } = self.role().pacer {
            self.cell_of(shared, leader).wake();
        }
    }
}

/// A thread stops: partners stop waiting for it, and the last thread with a quota ends the
/// step.
pub(super) fn stopped(t: &ThreadSpec, shared: &Shared, quota_met: bool) {
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
