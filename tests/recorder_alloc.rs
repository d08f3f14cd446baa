//! Recording an event must not allocate: a counting global allocator proves it.
//!
//! This file is its own test binary so that its allocator counts only this test's work. It
//! counts the allocations of the thread that records, not the whole process: the test
//! harness's own thread may allocate while it waits for the test (it did, now and then, on a
//! busy machine), and that is not the recorder's doing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::{Duration, Instant};

use dbdelta::engine::ErrorKind;
use dbdelta::runner::recorder::{Merged, Recorder};

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
