//! Tests of one step: phases, pacing, quotas, followers, panics and ends, on the fake engine.
//! Must not: start a real server.

use std::time::Duration;

use super::check_roles;
use crate::suites::sysbench::steps as sysbench;
use crate::workload::Pacer;

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

/// The coordinator's part of a step panics after `go` (it once printed progress into a closed
/// pipe): its [`Leading`](super::phases::Leading) stops the client threads and passes the
/// phases left, so the step's scope ends instead of every thread waiting at a barrier.
#[test]
fn a_coordinator_that_panics_does_not_leave_the_client_threads_waiting() {
    use super::phases::{DONE, GO, Leading, OpeningSnapshot, Phases, READY, SNAPSHOTTED, Shared};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Instant;
    let probe = crate::sampler::Probe::new(
        crate::sampler::Observed::SelfProcess,
        std::path::Path::new("."),
    );
    let clients = 2;
    let shared = Shared {
        phases: std::sync::OnceLock::new(),
        window: std::sync::Mutex::new(None),
        live: Vec::new(),
        cells: Vec::new(),
        quota_left: AtomicUsize::new(0),
        quota_missed: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        coordinator: std::sync::OnceLock::new(),
        opening: OpeningSnapshot::new(&probe, false),
        note_ids: false,
    };
    let _ = shared.phases.set(Phases::new(clients + 1));
    let (ended, ends) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let panicked = std::thread::scope(|s| {
            for _ in 0..clients {
                s.spawn(|| {
                    let phases = shared.phases.get().unwrap();
                    for phase in [READY, GO] {
                        phases.nth(phase).wait();
                    }
                    // A client runs until the step stops (or 20 s: the test then fails).
                    let until = Instant::now() + Duration::from_secs(20);
                    while !shared.stop.load(Ordering::Relaxed) && Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    for phase in [DONE, SNAPSHOTTED] {
                        phases.nth(phase).wait();
                    }
                });
            }
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut lead = Leading::new(&shared);
                lead.pass(GO);
                panic!("failed printing to stderr: Broken pipe");
            }))
            .is_err()
        });
        let _ = ended.send((panicked, shared.stop.load(Ordering::Relaxed)));
    });
    let (panicked, stopped) = ends
        .recv_timeout(Duration::from_secs(10))
        .expect("the step's scope ended within 10 s of its coordinator's panic");
    assert!(panicked && stopped);
}
