//! The Insert Benchmark's ten steps through the real runner on real servers (embedded SQLite,
//! Debian's PostgreSQL and MariaDB), at a tiny scale with 2 clients: after every step each
//! table `piN` holds exactly the rows the step definitions say (l.i0 inserts, l.x adds 100,
//! every deleter removes what its inserter added), and every role met its quota.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use dbdelta::engine::{self, EngineKind, TableDdl, TargetSpec};
use dbdelta::progress::{Mode, Progress};
use dbdelta::runner::step::{self, StepSpec};
use dbdelta::sampler::Probe;
use dbdelta::workload::Suite;
use dbdelta::workload::insert::{InsertBench, Kind, Settings};
use dbdelta::workload::insert_sql;

const CLIENTS: u32 = 2;

fn settings() -> Settings {
    Settings {
        rows: 1_000,
        write_rows: 500,
        query: Duration::from_millis(1_000),
        rates: vec![100, 200],
        commit: [100, 50, 5],
        deletes: true,
    }
}

/// Rows in each table, read after a step (not timed).
fn counts(server: &dyn engine::Server) -> Vec<u64> {
    let mut session = server.driver().connect().unwrap();
    (1..=CLIENTS)
        .map(|t| {
            let v = session.query_strings(&insert_sql::count(t)).unwrap();
            v[0].parse().unwrap()
        })
        .collect()
}

/// Run every step of the suite on `engine`, checking the rows after each.
fn every_step_keeps_its_row_count(engine: EngineKind, dir: &Path) {
    let spec = TargetSpec {
        name: "insert".into(),
        engine,
        prepared: true,
        ..Default::default()
    };
    let data = dir.join("data");
    std::fs::create_dir(&data).unwrap();
    let server = engine::start(&spec, &data, &dir.join("server.log")).unwrap();
    let driver = server.driver();
    let s = settings();
    let suite = InsertBench {
        settings: s.clone(),
    };
    let ddl = TableDdl::default();
    let mut admin = driver.connect().unwrap();
    suite
        .fill(admin.as_mut(), driver.dialect(), &ddl, CLIENTS)
        .unwrap();
    drop(admin);
    let probe = Probe::new(server.observed(), server.data_dir());
    let quiet = Progress {
        mode: Mode::Quiet,
        verbose: false,
    };
    let interrupt = Arc::new(AtomicBool::new(false));
    let kinds: Vec<(String, Kind)> = s.steps();
    let plans = suite.plan(|_| true);
    assert_eq!(plans.len(), 8, "4 load steps and 2 rates × (qr, qp)");
    for (plan, (label, kind)) in plans.iter().zip(&kinds) {
        assert_eq!(&plan.label, label);
        let spec = StepSpec {
            step: plan,
            clients: CLIENTS,
            seed: 7 << 32,
            client_cpus: None,
            ddl: &ddl,
        };
        let bar = quiet.step(label, plan.expected);
        let run = step::run(&spec, &driver, &probe, &bar, &interrupt).unwrap();
        assert!(run.fatal.is_none(), "{label}: {:?}", run.fatal);
        assert!(run.quota_met, "{label}: every quota met");
        if plan.postwrite_after {
            server
                .postwrite(&suite.tables(CLIENTS), Duration::from_secs(30))
                .unwrap();
        }
        let want = s.rows_after(*kind);
        assert_eq!(
            counts(server.as_ref()),
            vec![want; CLIENTS as usize],
            "{label}: rows per table"
        );
        // The counted role's rate is in its units: rows for load steps, queries for qr/qp.
        assert!(run.merged.units > 0, "{label}: counted something");
    }
    server.stop().unwrap();
}

#[test]
fn sqlite_every_step_keeps_its_row_count() {
    let dir = common::scratch();
    every_step_keeps_its_row_count(EngineKind::Sqlite, dir.path());
}

#[test]
fn postgres_every_step_keeps_its_row_count() {
    let _m = common::measuring();
    let dir = common::scratch();
    every_step_keeps_its_row_count(EngineKind::Postgres, dir.path());
}

#[test]
fn mariadb_every_step_keeps_its_row_count() {
    let _m = common::measuring();
    let dir = common::scratch();
    every_step_keeps_its_row_count(EngineKind::Mysql, dir.path());
}
