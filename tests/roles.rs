//! A step of several roles through the real runner on real embedded SQLite: an inserter paced
//! on a fixed-rate schedule with a quota, a deleter that follows it, and a closed-loop querier.
//! The step ends on the quotas, lasts the inserter's schedule, keeps the table's size (the
//! deleter never ran ahead of the inserter) and records every role × operation type, with the
//! paced ones' response time from the intended start.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use dbdelta::engine::{self, DbError, EngineKind, Param, Session, StmtId, TargetSpec};
use dbdelta::runner::step::{self, StepSpec};
use dbdelta::sampler::Probe;
use dbdelta::workload::{Counted, Done, Executor, ExecutorFactory, Opening, Pacer, Role, StepPlan};

/// What each role's connection runs: one statement per operation.
#[derive(Clone, Copy)]
enum Work {
    /// Insert one row: operation type 0.
    Insert,
    /// Delete the oldest row: operation type 0.
    Delete,
    /// Count the rows (type 0) or read the newest one (type 1), alternately.
    Query,
    /// Count the rows, and panic at the fifth operation.
    Panic,
}

struct Exec {
    work: Work,
    stmts: [StmtId; 2],
    runs: u64,
    rows: [u64; 2],
}

impl Executor for Exec {
    fn run(&mut self, session: &mut dyn Session) -> Result<Done, DbError> {
        self.runs += 1;
        if matches!(self.work, Work::Panic) && self.runs == 5 {
            panic!("injected panic in a client thread");
        }
        let op = match self.work {
            Work::Query => (self.runs % 2) as usize,
            Work::Insert | Work::Delete | Work::Panic => 0,
        };
        let rows = session.execute(self.stmts[op], &[] as &[Param<'_>])?;
        self.rows[op] += rows;
        Ok(Done { op, units: 1, rows })
    }

    fn rows_touched(&self) -> &[u64] {
        &self.rows
    }
}

impl ExecutorFactory for Work {
    fn open(&self, session: &mut dyn Session, _at: &Opening) -> Result<Box<dyn Executor>, DbError> {
        let texts = match self {
            Work::Insert => ["INSERT INTO q (v) VALUES (1)", "SELECT 1"],
            Work::Delete => [
                "DELETE FROM q WHERE id = (SELECT MIN(id) FROM q)",
                "SELECT 1",
            ],
            Work::Query | Work::Panic => [
                "SELECT COUNT(*) FROM q",
                "SELECT v FROM q ORDER BY id DESC LIMIT 1",
            ],
        };
        Ok(Box::new(Exec {
            work: *self,
            stmts: [session.prepare(texts[0])?, session.prepare(texts[1])?],
            runs: 0,
            rows: [0; 2],
        }))
    }
}

fn role(name: &'static str, pacer: Pacer, quota: Option<u64>, work: Work) -> Role {
    Role {
        name,
        pacer,
        quota,
        ops: match work {
            Work::Query => vec!["count", "newest"],
            Work::Insert | Work::Delete | Work::Panic => vec![name],
        },
        executor: Arc::new(work),
    }
}

/// 100 inserts at 200/s, each deleted after it by the follower; a querier as fast as it can.
fn plan() -> StepPlan {
    StepPlan {
        suite: "test",
        label: "paced".into(),
        index: 0,
        group: "test".into(),
        warm: false,
        clients: None,
        roles: vec![
            role(
                "inserter",
                Pacer::Rate { per_sec: 200.0 },
                Some(100),
                Work::Insert,
            ),
            role(
                "deleter",
                Pacer::Follow {
                    leader: 0,
                    bound: 8,
                },
                Some(100),
                Work::Delete,
            ),
            role("querier", Pacer::Closed, None, Work::Query),
        ],
        counted: Counted { role: 0, op: None },
        rate_unit: "rows/s",
        statements_per_event: 1,
        event_shape: vec![1, 1],
        scan_rows: None,
        warmup: Duration::ZERO,
        measure: None,
        expected: Duration::from_millis(500),
        stop_rule: None,
        postwrite_after: false,
    }
}

fn sqlite(dir: &Path) -> Box<dyn engine::Server> {
    let spec = TargetSpec {
        name: "roles".into(),
        engine: EngineKind::parse("sqlite").unwrap(),
        ..Default::default()
    };
    engine::start(&spec, dir, &dir.join("log")).unwrap()
}

/// The SQLite server of a test, its driver and an admin session, with the empty table `q`.
fn with_queue(
    dir: &Path,
) -> (
    Box<dyn engine::Server>,
    Arc<dyn engine::Driver>,
    Box<dyn engine::Session>,
) {
    let server = sqlite(dir);
    let driver = server.driver();
    let mut admin = driver.connect().unwrap();
    admin
        .execute_sql("CREATE TABLE q (id INTEGER PRIMARY KEY, v INT)")
        .unwrap();
    (server, driver, admin)
}

#[test]
fn paced_roles_end_on_their_quotas_on_schedule_and_are_recorded_per_operation_type() {
    let dir = tempfile::tempdir().unwrap();
    let (server, driver, mut admin) = with_queue(dir.path());
    // Empty before the step: a delete that ran before its insert would find no row.
    let plan = plan();
    let spec = StepSpec {
        step: &plan,
        clients: 1,
        seed: 1,
        client_cpus: None,
        ddl: &Default::default(),
        profile: None,
        counting: false,
    };
    let probe = Probe::new(server.observed(), dir.path());
    let run = step::run_unattended(&spec, &driver, &probe).unwrap();

    assert!(run.fatal.is_none(), "{:?}", run.fatal);
    assert!(run.quota_met, "both quotas were met");
    assert!(
        run.seconds >= 0.5 && run.seconds < 10.0,
        "100 slots at 200/s last 0.5 s: {} s",
        run.seconds
    );
    let op = |role: usize, op: usize| {
        &run.ops
            .iter()
            .find(|o| o.role == role && o.op == op)
            .unwrap()
            .merged
    };
    let (inserts, deletes) = (op(0, 0), op(1, 0));
    assert_eq!((inserts.events, inserts.rows), (100, 100));
    assert_eq!(
        (deletes.events, deletes.rows),
        (100, 100),
        "every delete found a row: the deleter never ran ahead of the inserter"
    );
    for m in [inserts, deletes] {
        let (service, response) = (m.latency().unwrap(), m.response_latency().unwrap());
        assert!(
            response.max >= service.max * 0.999,
            "{service:?} {response:?}"
        );
    }
    let (counts, newest) = (op(2, 0), op(2, 1));
    assert!(
        counts.events > 0 && newest.events > 0,
        "the querier ran both types"
    );
    assert!(counts.response.is_none(), "closed loop: service time only");
    assert_eq!(
        run.merged.events, 100,
        "the step counts the inserter's operations"
    );
    assert_eq!(run.merged.units, 100);
    let left = admin.query_strings("SELECT COUNT(*) FROM q").unwrap();
    assert_eq!(left, ["0"], "the table kept its size");
}

/// A client thread that panics mid-step (here one with a quota, in an open-ended step) fails
/// the step with the panic's message instead of leaving the coordinator at a barrier.
#[test]
fn a_client_thread_that_panics_fails_the_step_and_nothing_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let (server, driver, _admin) = with_queue(dir.path());
    let mut plan = plan();
    plan.roles = vec![
        role(
            "inserter",
            Pacer::Rate { per_sec: 200.0 },
            Some(100),
            Work::Insert,
        ),
        role("panicker", Pacer::Closed, Some(1000), Work::Panic),
    ];
    let probe = Probe::new(server.observed(), dir.path());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let spec = StepSpec {
                step: &plan,
                clients: 2,
                seed: 1,
                client_cpus: None,
                ddl: &Default::default(),
                profile: None,
                counting: false,
            };
            let result = step::run_unattended(&spec, &driver, &probe);
            tx.send(result.err().map(|e| format!("{e:#}"))).unwrap();
        });
        let err = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the step ended within 60 s");
        let err = err.expect("the step failed");
        assert!(
            err.contains("a client thread panicked: injected panic in a client thread"),
            "{err}"
        );
    });
}
