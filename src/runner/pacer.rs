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

/// `origin + k × interval`, the due time of operation `k` (0-based) on a fixed-rate schedule,
/// computed from `k` each time (no accumulated rounding).
pub fn due(origin: Instant, interval: Duration, k: u64) -> Instant {
    origin + Duration::from_nanos((interval.as_nanos() as u64).saturating_mul(k))
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
        let i = Duration::from_millis(500);
        assert_eq!(due(o, i, 0), o);
        assert_eq!(due(o, i, 120), o + Duration::from_secs(60));
        assert_eq!(
            due(o, Duration::from_nanos(333_333), 3_000_000),
            o + Duration::from_nanos(999_999_000_000),
            "no accumulated rounding"
        );
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
