//! Recording an operation, and pacing one, must not allocate: a counting global allocator
//! proves it.
//!
//! This file is its own test binary so that its allocator counts only this test's work. It
//! counts the allocations of the thread that records, not the whole process: the test
//! harness's own thread may allocate while it waits for the test (it did, now and then, on a
//! busy machine), and that is not the recorder's doing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::{Duration, Instant};

use dbdelta::engine::ErrorKind;
use dbdelta::runner::pacer::{self, Cell as PaceCell, Schedule};
use dbdelta::runner::recorder::{Merged, Recorder};
use dbdelta::workload::Pacer;

struct Counting;

thread_local! {
    // Const-initialised and without a destructor: reading it never allocates.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    ALLOCATIONS.with(|n| n.set(n.get() + 1));
}

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn recording_events_allocates_nothing() {
    let t0 = Instant::now();
    let mut rec = Recorder::new(t0, Duration::from_secs(3));
    let before = allocations();
    // 300,000 events spread over 4 seconds (past the deadline too), latencies from 1 µs to 2 s.
    for i in 0..300_000u64 {
        let start = t0 + Duration::from_micros(i * 13);
        let end = start + Duration::from_nanos(1_000 + (i * 7919) % 2_000_000_000);
        if i % 1000 == 0 {
            rec.record_error(ErrorKind::Retryable, end);
        } else {
            rec.record_event(start, end);
        }
    }
    let after = allocations();
    assert_eq!(
        after - before,
        0,
        "recording allocated {} times",
        after - before
    );
    assert_eq!(rec.events(), 299_700);
    let merged = Merged::from(vec![rec]);
    assert_eq!(merged.events, 299_700);
    assert_eq!(merged.errors.retryable, 300);
}

/// A paced role's loop as the runner runs it: the schedule's wait (late slots: no sleep), the
/// recorder with a response-time histogram, publishing the completion to a follower; and the
/// follower's wait for that completion.
#[test]
fn pacing_and_recording_paced_operations_allocates_nothing() {
    let t0 = Instant::now();
    // 300,000 slots at 1,000,000/s from t0: all due by the time the loop reaches them.
    let origin = t0;
    let follower = PaceCell::default();
    let published = PaceCell::default();
    follower.register();
    let schedule = Schedule::new(
        Pacer::Rate { per_sec: 1e6 },
        origin,
        None,
        vec![(&follower, u64::MAX)],
    );
    let follow = Schedule::new(
        Pacer::Follow {
            leader: 0,
            bound: 8,
        },
        origin,
        Some(&published),
        Vec::new(),
    );
    let mut fixed = Recorder::with(t0, Some(Duration::from_secs(3)), true);
    let mut open_ended = Recorder::with(t0, None, true);
    std::thread::sleep(Duration::from_millis(300));
    let before = allocations();
    for k in 0..300_000u64 {
        let intended = schedule.wait(k, k, &|| false).unwrap().unwrap();
        let start = Instant::now().max(intended);
        let end = start + Duration::from_nanos(1_000 + (k * 7919) % 2_000_000_000);
        let rec = if k % 2 == 0 {
            &mut fixed
        } else {
            &mut open_ended
        };
        if k % 1000 == 0 {
            rec.record_error(ErrorKind::Reconnect, end);
        } else {
            rec.record(intended, start, end, 50, 50);
        }
        published.publish(k + 1, pacer::ns_since(origin, end));
        follower.wake();
        let leader_end = follow.wait(k, k, &|| false).unwrap().unwrap();
        assert_eq!(
            leader_end,
            origin + Duration::from_nanos(pacer::ns_since(origin, end))
        );
    }
    let after = allocations();
    assert_eq!(
        after - before,
        0,
        "pacing and recording allocated {} times",
        after - before
    );
    let merged = Merged::from(vec![fixed]);
    assert_eq!(merged.events, 149_700, "the errors fell on even slots");
    assert_eq!(merged.units, 149_700 * 50);
    assert_eq!(merged.errors.reconnect, 300);
    assert!(merged.response_latency().is_some());
}
