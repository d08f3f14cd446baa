//! Pacers: when a role's next operation may start, and the instant its latency counts from.
//!
//! Three kinds (the data is `workload::Pacer`): closed loop (the next operation as soon as the
//! last one ended; it counts from its own start); a fixed rate on an absolute schedule
//! (operation `k` is due at `origin + k / rate`: no drift, and a late operation neither sleeps
//! nor is skipped, it runs at once and counts from when it was due, so a stall shows in its
//! latency instead of being hidden, the coordinated-omission rule); and follow (a deleter that
//! keeps pace with its client's inserter: its operation `k` may start only once the leader's
//! operation `k` completed, and counts from that completion; the leader in turn waits while it
//! is more than a bound ahead). Waiting is sleeping or parking, never spinning a core.
//! Must not: allocate, lock or format per operation, or talk to the database.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use crate::workload::Pacer;

/// Completion times kept per role thread: a follower lags its leader by at most the follow
/// bound, which must stay below this.
pub const RING: usize = 64;

/// The longest single sleep or park while waiting, so stop flags are seen promptly.
const NAP: Duration = Duration::from_millis(10);

/// What one role thread publishes for the threads paced against it: operations completed, when
/// each ended, and whether it has stopped. One per role thread of a client; written by its
/// owner only, read by its partners.
pub struct Cell {
    done: AtomicU64,
    finished: AtomicBool,
    /// End of operation `k` (1-based) at `(k - 1) % RING`, in ns since the step's origin.
    ends: [AtomicU64; RING],
    owner: OnceLock<Thread>,
}

impl Default for Cell {
    fn default() -> Self {
        Cell {
            done: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            ends: std::array::from_fn(|_| AtomicU64::new(0)),
            owner: OnceLock::new(),
        }
    }
}

impl Cell {
    /// The calling thread owns this cell: partners wake it through [`Cell::wake`].
    pub fn register(&self) {
        let _ = self.owner.set(thread::current());
    }

    /// Operation number `k` (1-based) completed `end_ns` after the origin.
    pub fn publish(&self, k: u64, end_ns: u64) {
        self.ends[((k - 1) as usize) % RING].store(end_ns, Ordering::Relaxed);
        self.done.store(k, Ordering::Release);
    }

    /// The owner will run no more operations.
    pub fn finish(&self) {
        self.finished.store(true, Ordering::Release);
    }

    /// Wake the owner if it waits on a partner (a no-op futex-free store when it does not).
    pub fn wake(&self) {
        if let Some(t) = self.owner.get() {
            t.unpark();
        }
    }

    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Acquire)
    }

    /// Wait until this cell's owner has completed `k` operations: `Some(end of operation k in
    /// ns since the origin)`, or `None` when it finished with fewer or `give_up` says so.
    /// The caller must be woken by the owner ([`Cell::wake`] on the caller's own cell).
    pub fn wait_for(&self, k: u64, give_up: &dyn Fn() -> bool) -> Option<u64> {
        loop {
            if self.done() >= k {
                return Some(self.ends[((k - 1) as usize) % RING].load(Ordering::Relaxed));
            }
            if self.finished.load(Ordering::Acquire) {
                // It may have published its last operation just before finishing.
                return (self.done() >= k)
                    .then(|| self.ends[((k - 1) as usize) % RING].load(Ordering::Relaxed));
            }
            if give_up() {
                return None;
            }
            thread::park_timeout(NAP);
        }
    }

    /// Wait until this cell's owner has completed at least `k` operations or stopped; false
    /// when `give_up` said so first.
    pub fn wait_until_done(&self, k: u64, give_up: &dyn Fn() -> bool) -> bool {
        loop {
            if self.done() >= k || self.finished.load(Ordering::Acquire) {
                return true;
            }
            if give_up() {
                return false;
            }
            thread::park_timeout(NAP);
        }
    }
}

/// Sleep until `t` (in naps, so `give_up` is checked): true when `t` was reached.
pub fn sleep_until(t: Instant, give_up: &dyn Fn() -> bool) -> bool {
    loop {
        let now = Instant::now();
        if now >= t {
            return true;
        }
        if give_up() {
            return false;
        }
        thread::sleep((t - now).min(NAP));
    }
}

/// `origin + k / per_sec`, the due time of operation `k` (0-based) on a fixed-rate schedule,
/// computed from `k` each time: no rounding accumulates, whatever the rate.
pub fn due(origin: Instant, per_sec: f64, k: u64) -> Instant {
    origin + Duration::from_secs_f64(k as f64 / per_sec)
}

/// The schedule of one role thread: when its next operation may start and from when it counts.
pub struct Schedule<'a> {
    pacer: Pacer,
    /// Where the schedule starts (the measured period's start) and what completion times in
    /// the cells count from.
    origin: Instant,
    /// The cell of the role this one follows.
    leader: Option<&'a Cell>,
    /// Followers that bound how far ahead this thread may run: (cell, bound).
    followers: Vec<(&'a Cell, u64)>,
}

impl<'a> Schedule<'a> {
    pub fn new(
        pacer: Pacer,
        origin: Instant,
        leader: Option<&'a Cell>,
        followers: Vec<(&'a Cell, u64)>,
    ) -> Schedule<'a> {
        Schedule {
            pacer,
            origin,
            leader,
            followers,
        }
    }

    /// Wait until operation `slot` (0-based schedule slot) may start, `done` operations having
    /// completed: `Some(intended start)` (`None` inside: closed loop, it counts from its own
    /// start), or `None` when the thread should stop instead. A fixed-rate operation that is
    /// already due (late) returns at once: no sleep, no skipped slot.
    pub fn wait(
        &self,
        slot: u64,
        done: u64,
        give_up: &dyn Fn() -> bool,
    ) -> Option<Option<Instant>> {
        let intended = match self.pacer {
            Pacer::Closed => None,
            Pacer::Rate { per_sec } => {
                let due = due(self.origin, per_sec, slot);
                if !sleep_until(due, give_up) {
                    return None;
                }
                Some(due)
            }
            Pacer::Follow { .. } => {
                let ns = self.leader?.wait_for(done + 1, give_up)?;
                Some(self.origin + Duration::from_nanos(ns))
            }
        };
        for (cell, bound) in &self.followers {
            if done >= *bound && !cell.wait_until_done(done + 1 - bound, give_up) {
                return None;
            }
        }
        Some(intended)
    }

    /// After the last operation of a fixed-rate role: its work ends with its last schedule
    /// slot (`None` for other pacers, or when `give_up` said so first).
    pub fn end_of_period(&self, slots: u64, give_up: &dyn Fn() -> bool) -> Option<Instant> {
        let Pacer::Rate { per_sec } = self.pacer else {
            return None;
        };
        let end = due(self.origin, per_sec, slots);
        sleep_until(end, give_up).then_some(end)
    }
}

/// Nanoseconds from `origin` to `t` (0 before it).
pub fn ns_since(origin: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(origin).as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn schedule_is_absolute() {
        let o = Instant::now();
        assert_eq!(due(o, 2.0, 0), o);
        assert_eq!(due(o, 2.0, 120), o + Duration::from_secs(60));
        assert_eq!(due(o, 1000.0, 60_000), o + Duration::from_secs(60));
        assert_eq!(
            due(o, 3.0, 3 * 3_600),
            o + Duration::from_secs(3_600),
            "no accumulated rounding: 1/3 s is not a whole number of ns"
        );
    }

    /// Operations of 4 ms on a 5 ms schedule: a pacer that slept an interval after each one
    /// would drift 4 ms per operation; the absolute schedule does not drift at all.
    #[test]
    fn a_fixed_rate_runs_on_its_absolute_schedule_without_drift() {
        let origin = Instant::now();
        let s = Schedule::new(Pacer::Rate { per_sec: 200.0 }, origin, None, Vec::new());
        let mut last_start = origin;
        for k in 0..20 {
            let intended = s.wait(k, k, &|| false).unwrap().unwrap();
            last_start = Instant::now();
            assert_eq!(intended, origin + Duration::from_millis(5 * k), "slot {k}");
            assert!(last_start >= intended, "slot {k} started early");
            thread::sleep(Duration::from_millis(4));
        }
        let late = last_start - (origin + Duration::from_millis(95));
        assert!(
            late < Duration::from_millis(60),
            "drifted {late:?} in 20 slots"
        );
        assert_eq!(
            s.end_of_period(20, &|| false),
            Some(origin + Duration::from_millis(100)),
            "the period ends with the last slot"
        );
    }

    /// A stall of 300 ms at 100/s: the 30 operations that fell due meanwhile run back to back
    /// at once (none skipped, none sleeping), each counted from when it was due, so the stall
    /// shows in the response time and not in the service time.
    #[test]
    fn late_operations_run_at_once_and_count_from_when_they_were_due() {
        use crate::runner::recorder::{Merged, Recorder};
        let origin = Instant::now();
        let s = Schedule::new(Pacer::Rate { per_sec: 100.0 }, origin, None, Vec::new());
        let mut rec = Recorder::with(origin, Some(Duration::from_secs(2)), true);
        let mut caught_up = None;
        for k in 0..=30 {
            let intended = s.wait(k, k, &|| false).unwrap().unwrap();
            assert_eq!(intended, origin + Duration::from_millis(10 * k), "slot {k}");
            let start = Instant::now();
            rec.record(intended, start, Instant::now(), 1, 1);
            if k == 0 {
                // The client (or the server it waits on) stalls.
                thread::sleep(Duration::from_millis(300));
                caught_up = Some(Instant::now());
            }
        }
        let catch_up = caught_up.unwrap().elapsed();
        assert!(
            catch_up < Duration::from_millis(250),
            "30 late slots took {catch_up:?}: the pacer slept"
        );
        let m = Merged::from(vec![rec]);
        assert_eq!(m.events, 31, "no slot skipped");
        let response = m.response_latency().unwrap();
        let service = m.latency().unwrap();
        assert!(response.max >= 280_000.0, "{response:?}");
        assert!(service.max < 100_000.0, "{service:?}");
    }

    /// A follower's operation k counts from the leader's completion of k; a leader bounded by
    /// its follower waits while it is `bound` operations ahead.
    #[test]
    fn a_follower_keeps_pace_and_bounds_its_leader() {
        let origin = Instant::now();
        let (leader, follower) = (Cell::default(), Cell::default());
        let lead = Schedule::new(Pacer::Closed, origin, None, vec![(&follower, 2)]);
        let follow = Schedule::new(
            Pacer::Follow {
                leader: 0,
                bound: 2,
            },
            origin,
            Some(&leader),
            Vec::new(),
        );
        thread::scope(|sc| {
            sc.spawn(|| {
                leader.register();
                for k in 0..10u64 {
                    assert_eq!(lead.wait(k, k, &|| false), Some(None));
                    assert!(follower.done() + 2 > k, "leader ran {k} ahead");
                    leader.publish(k + 1, 1_000 * (k + 1));
                    follower.wake();
                }
                leader.finish();
                follower.wake();
            });
            follower.register();
            for k in 0..10u64 {
                let intended = follow.wait(k, k, &|| false).unwrap().unwrap();
                assert_eq!(intended, origin + Duration::from_micros(k + 1));
                thread::sleep(Duration::from_millis(2));
                follower.publish(k + 1, 0);
                leader.wake();
            }
            assert_eq!(follow.wait(10, 10, &|| false), None, "the leader finished");
        });
    }

    #[test]
    fn a_follower_waits_for_its_leader_and_sees_when_each_op_ended() {
        let leader = Arc::new(Cell::default());
        let follower = Arc::new(Cell::default());
        let (l, f) = (leader.clone(), follower.clone());
        let h = thread::spawn(move || {
            f.register();
            let got: Vec<Option<u64>> = (1..=4).map(|k| l.wait_for(k, &|| false)).collect();
            got
        });
        for k in 1..=3 {
            thread::sleep(Duration::from_millis(5));
            leader.publish(k, k * 1000);
            follower.wake();
        }
        leader.finish();
        follower.wake();
        assert_eq!(
            h.join().unwrap(),
            [Some(1000), Some(2000), Some(3000), None],
            "the fourth never came: the leader finished with three"
        );
    }

    #[test]
    fn waiting_gives_up_on_request() {
        let c = Cell::default();
        assert_eq!(c.wait_for(1, &|| true), None);
        assert!(!c.wait_until_done(1, &|| true));
        assert!(!sleep_until(
            Instant::now() + Duration::from_secs(60),
            &|| true
        ));
        assert!(sleep_until(Instant::now(), &|| true));
    }
}
