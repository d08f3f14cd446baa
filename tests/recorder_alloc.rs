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

use dbdelta::engine::{ErrorCode, ErrorKind};
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

// SAFETY: every method forwards its arguments unchanged to `System`, so the memory it hands
// out is System's, with System's guarantees; counting touches only a const-initialised
// thread-local `Cell`, which never allocates (no re-entry) and never unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: our caller keeps `GlobalAlloc::alloc`'s contract (a non-zero size), which is
        // System's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator with `layout`, that is from System (alloc and
        // realloc forward there), as System's dealloc requires.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as for `dealloc`, and our caller keeps realloc's contract for `new_size`.
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
            // Twelve distinct codes: more than the recorder's table holds.
            let code = ErrorCode::SqlState(*b"40P01");
            let code = match i % 12_000 {
                0 => None,
                n => Some(ErrorCode::Sqlite((n / 1000) as i32)),
            }
            .or(Some(code));
            rec.record_error(ErrorKind::Retryable, code, end);
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
            rec.record_error(ErrorKind::Reconnect, None, end);
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

/// A session that touches no database and allocates nothing per statement: it answers every
/// statement with the number of parameters it got (a row count) and every query with "1".
struct Quiet;

impl dbdelta::engine::Session for Quiet {
    fn prepare(&mut self, _sql: &str) -> Result<dbdelta::engine::StmtId, dbdelta::engine::DbError> {
        Ok(0)
    }
    fn execute(
        &mut self,
        _stmt: dbdelta::engine::StmtId,
        params: &[dbdelta::engine::Param<'_>],
    ) -> Result<u64, dbdelta::engine::DbError> {
        Ok(params.len() as u64)
    }
    fn execute_sql(&mut self, _sql: &str) -> Result<u64, dbdelta::engine::DbError> {
        Ok(0)
    }
    fn query_strings(&mut self, _sql: &str) -> Result<Vec<String>, dbdelta::engine::DbError> {
        Ok(vec!["1".into()])
    }
    fn bulk_load(
        &mut self,
        _table: &str,
        _source: &mut dyn dbdelta::engine::RowSource,
    ) -> Result<u64, dbdelta::engine::DbError> {
        Ok(0)
    }
}

/// The Insert Benchmark's executors (inserter, deleter, range and point querier) run their
/// operations without allocating: their parameter buffers are reused. Only the point querier's
/// id refresh (its own operation type, one in 101) reads text back.
#[test]
fn insert_benchmark_operations_allocate_nothing() {
    use dbdelta::engine::{Dialect, TableDdl};
    use dbdelta::suites::insert::steps::{InsertBench, Settings};
    use dbdelta::workload::Opening;
    let suite = InsertBench {
        settings: Settings {
            rows: 1_000,
            write_rows: 1_000,
            query: Duration::from_secs(10),
            rates: vec![100],
            commit: [100, 50, 5],
            deletes: true,
        },
    };
    let ddl = TableDdl::default();
    let at = Opening {
        dialect: Dialect::Postgres,
        client: 0,
        seed: 3,
        ddl: &ddl,
    };
    let plans = suite.plan(|l| l == "l.i1" || l == "qr100" || l == "qp100");
    let mut session = Quiet;
    for plan in &plans {
        for role in &plan.roles {
            let mut exec = role.executor.open(&mut session, &at).unwrap();
            // Warm: the first operations may size the reused buffers.
            for _ in 0..3 {
                exec.run(&mut session).unwrap();
            }
            let before = allocations();
            let mut refreshes = 0;
            for _ in 0..1_000 {
                let done = exec.run(&mut session).unwrap();
                refreshes += u64::from(done.op == 1);
            }
            let allocated = allocations() - before;
            // An id refresh reads two one-row results back as text: 2 strings + 2 vectors.
            assert!(
                allocated <= refreshes * 4,
                "{} {}: {allocated} allocations in 1,000 operations ({refreshes} id refreshes)",
                plan.label,
                role.name
            );
        }
    }
}
