//! LinkBench on real engines: `--quick` runs load, index, warm-up, a request step and the
//! consistency check through the real binary on SQLite, Debian's PostgreSQL and MariaDB and a
//! fetched Oracle MySQL 8.0; in-process through the real runner, a
//! corrupted count row fails the check with its key named, the realised operation mix over
//! 20,000 requests matches the configured percentages within 1 point, and every node holds
//! exactly the links its out-degree says.

mod common;
use common::*;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use dbdelta::engine::{self, EngineKind, TargetSpec};
use dbdelta::progress::{Mode, Progress};
use dbdelta::runner::step::{self, StepRun, StepSpec};
use dbdelta::sampler::Probe;
use dbdelta::suites::linkbench::steps::{DEGREES, Kind, LinkBench, Mix, OPS, Settings, degree};
use dbdelta::workload::Suite;
use rusqlite::Connection;

/// `--quick` on every engine: every step stored, none failed, the check passed (it fails its
/// step on a mismatch), and the run exits 0.
#[test]
fn quick_runs_load_index_requests_and_the_check_on_every_engine() {
    let _lock = measuring();
    let dir = scratch();
    let mut targets = String::from("[[target]]\nname = \"sqlite\"\nengine = \"sqlite\"\n");
    if postgres_installed() {
        targets.push_str("[[target]]\nname = \"pg\"\nengine = \"postgres\"\n");
    }
    if mariadb_installed("linkbench quick") {
        targets.push_str("[[target]]\nname = \"mariadb\"\nengine = \"mariadb\"\n");
    }
    targets.push_str("[[target]]\nname = \"mysql80\"\nengine = \"mysql\"\nversion = \"8.0\"\n");
    let lab = format!(
        "[lab]\nname = \"linkbench quick\"\n\n{targets}\n[suite.linkbench]\nrequesters = [2]\n"
    );
    std::fs::write(dir.path().join("lab.toml"), lab).unwrap();
    let out = dbdelta(dir.path())
        .env("DBDELTA_CACHE", fetch_cache())
        .args(["--store", "s.db", "run", "--quick", "lab.toml"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let db = Connection::open(dir.path().join("s.db")).unwrap();
    let steps: Vec<(String, String, i64, Option<String>, f64)> = rows(
        &db,
        "SELECT target, step, failed, error, ops FROM measurements ORDER BY target, step_index",
    );
    let names: Vec<&str> = targets
        .lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .map(|l| l.trim_end_matches('"'))
        .collect();
    for t in &names {
        let mine: Vec<&str> = (steps.iter())
            .filter(|s| s.0 == *t)
            .map(|s| s.1.as_str())
            .collect();
        assert_eq!(
            mine,
            [
                "linkbench.load",
                "linkbench.index",
                "linkbench.warm",
                "linkbench.request.P2",
                "linkbench.check"
            ],
            "{t}"
        );
    }
    for (t, s, failed, error, ops) in &steps {
        assert_eq!(*failed, 0, "{t} {s}: {error:?}");
        assert!(*ops > 0.0, "{t} {s} counted nothing");
    }
    // The load wrote every node of the quick scale (2,000) and their links and counts.
    let loads: Vec<(String, String)> = rows(
        &db,
        "SELECT target, op_json FROM step_ops WHERE step = 'linkbench.load' ORDER BY position",
    );
    for (t, json) in loads.iter().filter(|(_, j)| j.contains("\"op\":\"nodes\"")) {
        assert!(json.contains("\"units\":2000,"), "{t}: {json}");
    }
}

/// `dbdelta list steps` shows LinkBench's steps with their roles, and `--sql` its statements.
#[test]
fn list_steps_shows_linkbench() {
    let dir = scratch();
    let s = text(&run(dir.path(), &["list", "steps"]).stdout);
    let steps: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.starts_with("LinkBench"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "linkbench.load",
            "linkbench.index",
            "linkbench.warm",
            "linkbench.request.P1",
            "linkbench.request.P4",
            "linkbench.check"
        ]
    );
    let sql = text(&run(dir.path(), &["list", "steps", "--sql", "--engine", "mysql"]).stdout);
    assert!(sql.contains("FORCE INDEX (id1_type)"), "{sql}");
    assert!(sql.contains("ON DUPLICATE KEY UPDATE visibility = VALUES(visibility)"));
}

/// A started server with LinkBench's empty tables, running its steps through `step::run`.
struct Rig {
    server: Box<dyn engine::Server>,
    driver: Arc<dyn engine::Driver>,
    suite: LinkBench,
    probe: Probe,
    quiet: Progress,
    interrupt: Arc<AtomicBool>,
}

impl Rig {
    fn new(engine: EngineKind, dir: &Path, settings: Settings) -> Rig {
        let spec = TargetSpec {
            name: "lb".into(),
            engine,
            prepared: true,
            ..Default::default()
        };
        let data = dir.join("data");
        std::fs::create_dir(&data).unwrap();
        let server = engine::start(&spec, &data, &dir.join("server.log")).unwrap();
        let driver = server.driver();
        let suite = LinkBench { settings };
        let mut admin = driver.connect().unwrap();
        (suite.fill(admin.as_mut(), driver.dialect(), &spec.tables, 1)).unwrap();
        let probe = Probe::new(server.observed(), server.data_dir());
        Rig {
            server,
            driver,
            suite,
            probe,
            quiet: Progress {
                mode: Mode::Quiet,
                verbose: false,
                interval: None,
            },
            interrupt: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Run the step of `kind` (its plan from the suite's settings).
    fn run(&self, kind: Kind) -> StepRun {
        let steps = self.suite.settings.steps();
        let (i, (label, _)) = (steps.iter().enumerate())
            .find(|(_, (_, k))| *k == kind)
            .expect("the step is planned");
        let plan = self.suite.settings.step_plan(i as u32, label, kind);
        let ddl = Default::default();
        let spec = StepSpec {
            step: &plan,
            clients: plan.clients.unwrap_or(1),
            seed: 42 + i as u64,
            client_cpus: None,
            ddl: &ddl,
            profile: None,
            counting: false,
        };
        let bar = self.quiet.step(label, plan.expected);
        step::run(&spec, &self.driver, &self.probe, &bar, &self.interrupt).unwrap()
    }

    fn strings(&self, sql: &str) -> Vec<String> {
        let mut s = self.driver.connect().unwrap();
        s.query_strings(sql).unwrap()
    }
}

fn settings(quota: Option<u64>) -> Settings {
    Settings {
        loaders: 2,
        request: Duration::from_secs(1),
        warmup: Duration::ZERO,
        request_quota: quota,
        ..Settings::with_defaults(20_000, vec![1])
    }
}

/// Load, index, requests, then one count row corrupted: the check fails naming its key.
fn corrupted_count_fails_the_check(engine: EngineKind) {
    let dir = scratch();
    let rig = Rig::new(engine, dir.path(), settings(None));
    for kind in [
        Kind::Load,
        Kind::Index,
        Kind::Request {
            requesters: 1,
            warm: false,
        },
    ] {
        let run = rig.run(kind);
        assert!(run.fatal.is_none(), "{kind:?}: {:?}", run.fatal);
    }
    assert!(rig.run(Kind::Check).fatal.is_none(), "clean data passes");
    let key = &rig.strings("SELECT MIN(id) FROM counttable WHERE count > 0")[0];
    let ty = &rig.strings(&format!(
        "SELECT MIN(link_type) FROM counttable WHERE id = {key} AND count > 0"
    ))[0];
    let mut admin = rig.driver.connect().unwrap();
    admin
        .execute_sql(&format!(
            "UPDATE counttable SET count = count + 1 WHERE id = {key} AND link_type = {ty}"
        ))
        .unwrap();
    let fatal = rig.run(Kind::Check).fatal.expect("the check fails");
    assert!(
        fatal.contains(&format!("(id={key}, link_type={ty}): count")),
        "{fatal}"
    );
    drop(admin);
    rig.server.stop().unwrap();
}

#[test]
fn a_corrupted_count_row_fails_the_check_with_its_key_sqlite() {
    corrupted_count_fails_the_check(EngineKind::parse("sqlite").unwrap());
}

#[test]
fn a_corrupted_count_row_fails_the_check_with_its_key_postgres() {
    if postgres_installed() {
        let _lock = measuring();
        corrupted_count_fails_the_check(EngineKind::parse("postgres").unwrap());
    }
}

/// The realised mix over 20,000 requests is within 1 point of the configured percentages, and
/// the loaded graph has exactly the configured out-degrees (whose shares per bucket are within
/// 1.5 points of the configured ones at 20,000 nodes).
#[test]
fn realised_mix_and_out_degrees_match_the_configuration() {
    let dir = scratch();
    let rig = Rig::new(
        EngineKind::parse("sqlite").unwrap(),
        dir.path(),
        settings(Some(20_000)),
    );
    assert!(rig.run(Kind::Load).fatal.is_none());
    let per_node = rig.strings("SELECT id1 || ',' || COUNT(*) FROM linktable GROUP BY id1");
    let mut linked = std::collections::HashMap::new();
    for row in &per_node {
        let (id, n) = row.split_once(',').unwrap();
        linked.insert(id.parse::<u64>().unwrap(), n.parse::<u32>().unwrap());
    }
    let mut hits = vec![0u64; DEGREES.len()];
    for id in 1..=20_000u64 {
        let d = linked.get(&id).copied().unwrap_or(0);
        assert_eq!(d, degree(id), "node {id}");
        hits[DEGREES.iter().position(|(hi, _)| d <= *hi).unwrap()] += 1;
    }
    let mut prev = 0.0;
    for (i, (hi, cum)) in DEGREES.iter().enumerate() {
        let got = hits[i] as f64 / 20_000.0;
        assert!(
            (got - (cum - prev)).abs() < 0.015,
            "degrees up to {hi}: {got:.4} of nodes, configured {:.4}",
            cum - prev
        );
        prev = *cum;
    }
    assert!(rig.run(Kind::Index).fatal.is_none());
    let run = rig.run(Kind::Request {
        requesters: 1,
        warm: false,
    });
    assert!(run.fatal.is_none(), "{:?}", run.fatal);
    let total: u64 = run.ops.iter().map(|o| o.merged.events).sum();
    assert!(total >= 20_000, "{total} requests");
    for o in &run.ops {
        let got = 100.0 * o.merged.events as f64 / total as f64;
        let want = Mix::UPDATED.0[o.op];
        assert!(
            (got - want).abs() <= 1.0,
            "{}: {got:.2}% of requests, configured {want}%",
            OPS[o.op]
        );
    }
}
