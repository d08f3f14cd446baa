//! The Insert Benchmark's ten steps through the real runner on real servers (embedded SQLite,
//! Debian's PostgreSQL and MariaDB), at a tiny scale with 2 clients: after every step each
//! table `piN` holds exactly the rows the step definitions say (l.i0 inserts, l.x adds 100,
//! every deleter removes what its inserter added), and every role met its quota.
//!
//! Quotas are met in time, which a busy host can deny (a fresh-clone CI run once saw MyRocks
//! miss qp20's within its 2x cap): a run with a quota unmet is repeated once on a fresh server
//! before the test fails. The row counts are exact in every run that met its quotas.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use dbdelta::engine::{self, EngineKind, TableDdl, TargetSpec};
use dbdelta::progress::{Mode, Progress};
use dbdelta::runner::step::{self, StepSpec};
use dbdelta::sampler::Probe;
use dbdelta::suites::insert::sql as insert_sql;
use dbdelta::suites::insert::steps::{InsertBench, Kind, Settings};
use dbdelta::workload::{StepPlan, Suite};

const CLIENTS: u32 = 2;

fn settings() -> Settings {
    Settings {
        rows: 1_000,
        write_rows: 500,
        query: Duration::from_millis(1_000),
        // Rates any engine keeps up with in a 1 s step even on a slow disk (2 clients, every
        // statement a commit): this test checks the step definitions, not capacity; an exact
        // count needs every quota met. The SLA test below runs the default rates.
        rates: vec![20, 50, 100],
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
    steps_keep_their_row_counts(&spec, dir, settings());
}

/// How many fresh servers a run with a quota unmet gets before the test fails. MyRocks' paced
/// inserter missed a quota in two of three fresh-clone CI runs (qr100, then qr20/qp20), each
/// time twice in a row, and passed alone in 49 s: a timing miss on a loaded host, whose cause
/// is still to be found.
const ATTEMPTS: u32 = 3;

/// [`quotas_met_and_row_counts`] on `spec`; a run with a quota unmet (timing: the host was
/// busy) is repeated on a fresh server in a fresh directory, up to [`ATTEMPTS`] runs, before
/// the test fails. A wrong row count fails at once, whatever the attempt.
fn steps_keep_their_row_counts(spec: &TargetSpec, dir: &Path, s: Settings) {
    let mut unmet = String::new();
    for attempt in 1..=ATTEMPTS {
        let here = dir.join(format!("attempt{attempt}"));
        std::fs::create_dir(&here).unwrap();
        match quotas_met_and_row_counts(spec, &here, s.clone()) {
            Ok(()) => return,
            Err(e) => {
                eprintln!("{e}; attempt {attempt} of {ATTEMPTS}");
                unmet = e;
            }
        }
    }
    panic!("{ATTEMPTS} times in a row: {unmet}");
}

/// A started server with the suite's empty tables, running its steps through `step::run`.
struct Rig {
    server: Box<dyn engine::Server>,
    driver: Arc<dyn engine::Driver>,
    suite: InsertBench,
    ddl: TableDdl,
    clients: u32,
    probe: Probe,
    quiet: Progress,
    interrupt: Arc<AtomicBool>,
}

impl Rig {
    /// Start `spec` in `dir/data` and create the suite's tables for `clients` clients.
    fn new(spec: &TargetSpec, dir: &Path, settings: Settings, clients: u32) -> Rig {
        let data = dir.join("data");
        std::fs::create_dir(&data).unwrap();
        let server = engine::start(spec, &data, &dir.join("server.log")).unwrap();
        let driver = server.driver();
        let suite = InsertBench { settings };
        let mut admin = driver.connect().unwrap();
        suite
            .fill(admin.as_mut(), driver.dialect(), &spec.tables, clients)
            .unwrap();
        let probe = Probe::new(server.observed(), server.data_dir());
        Rig {
            server,
            driver,
            suite,
            ddl: spec.tables.clone(),
            clients,
            probe,
            quiet: Progress {
                mode: Mode::Quiet,
                verbose: false,
                interval: None,
            },
            interrupt: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Run one step; a thread's fatal error fails the test.
    fn run(&self, plan: &StepPlan, seed: u64) -> step::StepRun {
        let spec = StepSpec {
            step: plan,
            clients: self.clients,
            seed,
            client_cpus: None,
            ddl: &self.ddl,
            profile: None,
            counting: false,
        };
        let bar = self.quiet.step(&plan.label, plan.expected);
        let run = step::run(&spec, &self.driver, &self.probe, &bar, &self.interrupt).unwrap();
        assert!(run.fatal.is_none(), "{}: {:?}", plan.label, run.fatal);
        run
    }
}

/// Run every step of the suite on the target `spec`, checking the rows after each (a wrong
/// count fails the test at once). `Err` names the first step whose quota was not met in time;
/// the steps stop there.
fn quotas_met_and_row_counts(spec: &TargetSpec, dir: &Path, s: Settings) -> Result<(), String> {
    let rig = Rig::new(spec, dir, s.clone(), CLIENTS);
    let (server, ddl) = (&rig.server, &rig.ddl);
    let mut admin = rig.driver.connect().unwrap();
    if let Some(want) = &ddl.engine {
        let got = admin
            .query_strings(
                "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_NAME = 'pi1' \
                 AND TABLE_SCHEMA = DATABASE()",
            )
            .unwrap();
        assert!(
            got[0].eq_ignore_ascii_case(want),
            "pi1 is {got:?}, not {want}"
        );
    }
    drop(admin);
    let kinds: Vec<(String, Kind)> = s.steps();
    let plans = rig.suite.plan(|_| true);
    assert_eq!(
        plans.len(),
        10,
        "the ten steps: 4 load steps and 3 rates × (qr, qp)"
    );
    for (plan, (label, kind)) in plans.iter().zip(&kinds) {
        assert_eq!(&plan.label, label);
        let run = rig.run(plan, 7 << 32);
        if !run.quota_met {
            let unmet = format!(
                "{label}: a quota not met (in {:.2} s: {:?}; {:?})",
                run.seconds,
                run.ops
                    .iter()
                    .map(|o| (o.role, o.merged.units))
                    .collect::<Vec<_>>(),
                run.fatal
            );
            rig.server.stop().unwrap();
            return Err(unmet);
        }
        if plan.postwrite_after {
            server
                .postwrite(&rig.suite.tables(CLIENTS), Duration::from_secs(30))
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
    rig.server.stop().unwrap();
    Ok(())
}

#[test]
fn sqlite_every_step_keeps_its_row_count() {
    // Measuring too: its closed-loop queriers keep both CPUs busy, and beside MyRocks' paced
    // inserter (whose commits stall) they made a quota go unmet twice in a row in a CI run.
    let _m = common::measuring();
    let dir = common::scratch();
    every_step_keeps_its_row_count(EngineKind::parse("sqlite").unwrap(), dir.path());
}

#[test]
fn postgres_every_step_keeps_its_row_count() {
    let _m = common::measuring();
    let dir = common::scratch();
    every_step_keeps_its_row_count(EngineKind::parse("postgres").unwrap(), dir.path());
}

/// Oracle MySQL 8.0 as `dbdelta fetch` provides it (the build cache shared by the tests).
#[test]
fn oracle_mysql80_every_step_keeps_its_row_count() {
    let _m = common::measuring();
    let dir = common::scratch();
    let out = common::dbdelta(dir.path())
        .env("DBDELTA_CACHE", common::fetch_cache())
        .args(["fetch", "mysql@8.0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    // `MySQL 8.0.31: <bin directory> (...)`
    let line = common::text(&out.stdout);
    let bin = line
        .split_once(": ")
        .and_then(|(_, rest)| rest.split(" (").next())
        .map(|b| std::path::PathBuf::from(b.trim()))
        .unwrap_or_else(|| panic!("a bin directory in {line:?}"));
    let spec = TargetSpec {
        name: "mysql80".into(),
        engine: EngineKind::parse("mysql").unwrap(),
        bin: Some(bin),
        version: Some("8.0".into()),
        prepared: true,
        ..Default::default()
    };
    steps_keep_their_row_counts(&spec, dir.path(), settings());
}

/// MyRocks on Debian's MariaDB: `ENGINE=ROCKSDB` tables, l.x's indexes one ALTER each.
#[test]
fn myrocks_every_step_keeps_its_row_count() {
    let _m = common::measuring();
    let dir = common::scratch();
    let spec = TargetSpec {
        name: "rocks".into(),
        engine: EngineKind::parse("mysql").unwrap(),
        prepared: true,
        tables: TableDdl {
            engine: Some("ROCKSDB".into()),
            table_options: None,
            index_options: None,
        },
        ..Default::default()
    };
    // No deleters on MyRocks: each delete of a table's oldest rows leaves RocksDB tombstones
    // that the next "oldest row" lookup must skip, so beside a querier that keeps both CPUs busy
    // the deleter fell behind its inserter (60 of 100 rows in 6 s in qr20; qp100 and qr100 in
    // CI) and the step ended on its cap with a quota unmet. The deleters' row counts are checked
    // on SQLite, PostgreSQL, MariaDB and MySQL 8.0; this test keeps RocksDB's tables, inserts,
    // queries and l.x's indexes. 2 s query steps give its commit stalls room, and half the
    // paced rates a margin: beside other work on the host its inserter kept 15 of 20 and 87 of
    // 100 rows/s (qr20, qp100; three fresh servers in a row, 2026-11-28), short of a quota.
    let s = Settings {
        query: Duration::from_secs(2),
        deletes: false,
        rates: vec![10, 25, 50],
        ..settings()
    };
    steps_keep_their_row_counts(&spec, dir.path(), s);
}

#[test]
fn mariadb_every_step_keeps_its_row_count() {
    let _m = common::measuring();
    let dir = common::scratch();
    every_step_keeps_its_row_count(EngineKind::parse("mysql").unwrap(), dir.path());
}

/// Through the binary on embedded SQLite: every step of the suite runs at `--quick` scale, and
/// a background rate far above what the machine can insert (1,000,000 rows/s) is an SLA
/// failure reported with its achieved rate in every format.
#[test]
fn an_unreachable_background_rate_is_an_sla_failure_in_every_format() {
    let _m = common::measuring();
    let dir = common::scratch();
    let lab = dir.path().join("lab.toml");
    std::fs::write(
        &lab,
        "[lab]\nname = \"sla\"\n\n\
         [[target]]\nname = \"a\"\nengine = \"sqlite\"\n\n\
         [[target]]\nname = \"b\"\nengine = \"sqlite\"\nsettings = [\"synchronous = FULL\"]\n\n\
         [suite.insert]\nrows = 2000\nrates = [100, 1000000]\n",
    )
    .unwrap();
    let out = common::run(dir.path(), &["run", "-q", "--quick", lab.to_str().unwrap()]);
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let report = |format: &str| {
        let out = common::run(dir.path(), &["report", "--format", format]);
        assert!(out.status.success(), "{}", common::text(&out.stderr));
        common::text(&out.stdout)
    };
    for format in ["text", "md", "html"] {
        let r = report(format);
        for step in [
            "l.i0",
            "l.x",
            "l.i1",
            "l.i2",
            "qr100",
            "qp100",
            "qr1000000",
            "qp1000000",
        ] {
            assert!(r.contains(step), "{format}: {step} is reported");
        }
        assert!(
            r.contains("[SLA]") || r.contains("\\[SLA\\]"),
            "{format}: the failure is marked"
        );
        assert!(
            r.contains("SLA failure: a qr1000000 at 1 client(s) inserted "),
            "{format}: a warning names the step and its achieved rate"
        );
        assert!(
            !r.contains("SLA failure: a qr100 "),
            "{format}: 100 rows/s is reachable"
        );
    }
    let json: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    assert!(
        common::schema_errors(&json).is_empty(),
        "{:?}",
        common::schema_errors(&json)
    );
    let cells = &json["suites"]["insert"][0]["rows"][0]["cells"];
    let cell = |step: &str| {
        cells
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["step"] == step)
            .unwrap()
            .clone()
    };
    assert_eq!(cell("qr100")["background"]["sla_met"], true);
    let failed = cell("qr1000000")["background"].clone();
    assert_eq!(failed["sla_met"], false);
    let achieved = failed["achieved_rows_per_sec"].as_f64().unwrap();
    assert!(
        achieved > 0.0 && achieved < 950_000.0,
        "the achieved rate is measured: {achieved}"
    );
    assert_eq!(failed["target_rows_per_sec"], 1_000_000.0);
    let csv = report("csv");
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(|r| r.unwrap()).collect();
    let sla = |step: &str| {
        let row = (rows.iter())
            .find(|r| &r[col("target")] == "a" && &r[col("step")] == step)
            .unwrap();
        (
            row[col("sla")].to_string(),
            row[col("background_rows_per_sec")].parse::<f64>().ok(),
        )
    };
    assert_eq!(sla("qr100").0, "met");
    let (verdict, achieved_csv) = sla("qr1000000");
    assert_eq!(verdict, "failed", "CSV: the failure");
    assert!(
        achieved_csv.is_some_and(|a| (a - achieved).abs() < 1.0),
        "CSV: its rate"
    );
}

/// Every process of the tree under `root` (the server and its backends).
fn process_tree(root: u32) -> Vec<i32> {
    let parent_of = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let all: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let mut tree = vec![root];
    loop {
        let more: Vec<u32> = all
            .iter()
            .copied()
            .filter(|p| !tree.contains(p) && parent_of(*p).is_some_and(|pp| tree.contains(&pp)))
            .collect();
        if more.is_empty() {
            return tree.into_iter().map(|p| p as i32).collect();
        }
        tree.extend(more);
    }
}

/// A server paused for 2 s (SIGSTOP to every one of its processes, then SIGCONT) in the middle
/// of a paced step: the background inserter falls behind its schedule, so response time from
/// the intended start shows the pause (max ≥ 2 s less one schedule slot, p99 ≥ 1 s), while
/// service time does not (its p99 stays far below; at most one statement was in flight).
#[test]
fn a_paused_server_shows_in_response_time_not_in_service_time() {
    let _m = common::measuring();
    let dir = common::scratch();
    let spec = TargetSpec {
        name: "paused".into(),
        engine: EngineKind::parse("postgres").unwrap(),
        prepared: true,
        ..Default::default()
    };
    let s = Settings {
        rows: 2_000,
        write_rows: 500,
        query: Duration::from_secs(6),
        rates: vec![1000],
        ..settings()
    };
    let rig = Rig::new(&spec, dir.path(), s, 1);
    let engine::Observed::Tree(root) = rig.server.observed() else {
        panic!("a server process")
    };
    let run = |label: &str| rig.run(&rig.suite.plan(|l| l == label).remove(0), 11 << 32);
    run("l.i0");
    let pauser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1_500));
        let pids = process_tree(root);
        for &p in &pids {
            // SAFETY: plain kill(2) of processes this test started.
            unsafe { libc::kill(p, libc::SIGSTOP) };
        }
        std::thread::sleep(Duration::from_secs(2));
        for &p in &pids {
            // SAFETY: kill(2) touches no memory of ours; these are the processes stopped
            // above, continued.
            unsafe { libc::kill(p, libc::SIGCONT) };
        }
        pids.len()
    });
    let paced = run("qp1000");
    assert!(
        pauser.join().unwrap() > 1,
        "the postmaster and its backends"
    );
    let inserter = paced
        .ops
        .iter()
        .find(|o| o.role == 1)
        .expect("the inserter's operations");
    let service = inserter.merged.latency().unwrap();
    let response = inserter.merged.response_latency().unwrap();
    // 1000 rows/s at 50 rows per statement: a statement every 50 ms.
    assert!(
        response.max >= 1.95e6,
        "response max {} µs: the pause shows",
        response.max
    );
    assert!(response.p99 >= 1.0e6, "response p99 {} µs", response.p99);
    assert!(
        service.p99 < 0.5e6,
        "service p99 {} µs: only a statement in flight waited",
        service.p99
    );
    assert!(paced.quota_met, "the inserter caught up within the cap");
    rig.server.stop().unwrap();
}

/// `dbdelta list steps` shows the ten steps with their roles, and `--sql` their statements.
#[test]
fn list_steps_shows_the_insert_benchmark() {
    let dir = common::scratch();
    let out = common::run(dir.path(), &["list", "steps"]);
    let s = common::text(&out.stdout);
    let insert: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.starts_with("The Insert Benchmark"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        insert,
        [
            "l.i0", "l.x", "l.i1", "l.i2", "qr100", "qp100", "qr500", "qp500", "qr1000", "qp1000"
        ]
    );
    assert!(s.contains("inserter (insert, 20 statements/s) + deleter (delete, follows within 8)"));
    let out = common::run(
        dir.path(),
        &["list", "steps", "--sql", "--engine", "postgres"],
    );
    let sql = common::text(&out.stdout);
    assert!(sql.contains("CREATE INDEX pi1_pdc ON pi1 (price, dateandtime, customerid);"));
    assert!(sql.contains("ALTER SEQUENCE pi1_transactionid_seq CACHE 1000;"));
}
