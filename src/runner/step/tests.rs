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
