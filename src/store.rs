//! The results store: one SQLite file (default `./dbdelta.db`) that keeps every run.
//!
//! Owns the schema (versioned by `PRAGMA user_version`, upgraded by the ordered [`MIGRATIONS`]),
//! writing each result in its own transaction the moment it exists, and reading runs back as
//! [`RunData`]. The schema is meant to be read by people too (`sqlite3`, pandas): one row per
//! measurement, plain columns, units in column names. `ARCHITECTURE.md` documents it.
//! Must not: compute metrics or format reports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rusqlite::{Connection, OptionalExtension, Row, named_params, params};

mod resume;
pub use resume::CellKey;

use crate::error::InputError;
use crate::results::{
    ErrorCounts, HostInfo, Latency, LoadResult, Measurement, OpHistograms, RunData, RunInfo,
    SecondSample, StepProfile, TargetInfo,
};

/// Schema migrations, in order. Migration `i` brings the schema to version `i + 1`.
/// Never edit a released migration; append a new one.
pub const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    lab TEXT NOT NULL,
    lab_text TEXT NOT NULL,
    started TEXT NOT NULL,
    finished TEXT,
    complete INTEGER NOT NULL DEFAULT 0,
    quick INTEGER NOT NULL DEFAULT 0,
    host_cpu_model TEXT NOT NULL,
    host_cores INTEGER NOT NULL,
    host_memory_bytes INTEGER NOT NULL,
    host_kernel TEXT NOT NULL,
    dbdelta_version TEXT NOT NULL
);
CREATE TABLE targets (
    run_id TEXT NOT NULL REFERENCES runs(id),
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    engine TEXT NOT NULL,
    server_version TEXT,
    config_name TEXT,
    config_text TEXT NOT NULL,
    env_json TEXT NOT NULL,
    settings_json TEXT NOT NULL,
    failed INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    log_path TEXT,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE loads (
    run_id TEXT NOT NULL REFERENCES runs(id),
    target TEXT NOT NULL,
    suite TEXT NOT NULL,
    clients INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    tables INTEGER NOT NULL,
    rows_per_table INTEGER NOT NULL,
    load_secs REAL NOT NULL,
    rows_per_sec REAL,
    index_secs REAL NOT NULL,
    db_size_bytes INTEGER,
    PRIMARY KEY (run_id, target, suite, clients, repeat)
);
CREATE TABLE measurements (
    run_id TEXT NOT NULL REFERENCES runs(id),
    target TEXT NOT NULL,
    suite TEXT NOT NULL,
    step TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    grp TEXT NOT NULL,
    statements_per_event INTEGER NOT NULL,
    clients INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    tables INTEGER NOT NULL,
    rows_per_table INTEGER NOT NULL,
    seconds REAL NOT NULL,
    ops INTEGER NOT NULL,
    events INTEGER NOT NULL,
    errors_retryable INTEGER NOT NULL,
    errors_reconnect INTEGER NOT NULL,
    errors_fatal INTEGER NOT NULL,
    qps REAL,
    tps REAL,
    lat_min_us REAL, lat_p50_us REAL, lat_p90_us REAL, lat_p95_us REAL,
    lat_p99_us REAL, lat_p999_us REAL, lat_max_us REAL, lat_mean_us REAL,
    server_cpu_us_per_op REAL,
    client_cpu_us_per_op REAL,
    host_cpu_us_per_op REAL,
    cs_per_op REAL,
    host_cs_per_op REAL,
    reads_per_op REAL,
    read_kb_per_op REAL,
    writes_per_op REAL,
    write_kb_per_op REAL,
    proc_read_kb_per_op REAL,
    proc_write_kb_per_op REAL,
    peak_rss_bytes INTEGER,
    peak_vsz_bytes INTEGER,
    db_size_bytes INTEGER,
    client_bound INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    error TEXT,
    histogram BLOB,
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (run_id, target, suite, step, clients, repeat)
);
CREATE TABLE series (
    run_id TEXT NOT NULL REFERENCES runs(id),
    target TEXT NOT NULL,
    step TEXT NOT NULL,
    clients INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    second INTEGER NOT NULL,
    ops INTEGER NOT NULL,
    p99_us REAL,
    max_us REAL,
    PRIMARY KEY (run_id, target, step, clients, repeat, second)
);
"#,
    // v2: peak PSS of the engine's processes.
    "ALTER TABLE measurements ADD COLUMN peak_pss_bytes INTEGER;",
    // v3: the full catalog: warm steps (stored, not reported), rows touched, scan rows/s.
    r#"
ALTER TABLE measurements ADD COLUMN warm INTEGER NOT NULL DEFAULT 0;
ALTER TABLE measurements ADD COLUMN rows_per_event REAL;
ALTER TABLE measurements ADD COLUMN rows_per_statement TEXT;
ALTER TABLE measurements ADD COLUMN scan_krows_per_sec REAL;
"#,
    // v4: the lab's minimum effect size, used by the verdicts of the run's reports.
    "ALTER TABLE runs ADD COLUMN min_effect REAL;",
    // v5: CPU placement: the host's CPUs and topology, each target's placement, and the CPUs
    // the server's and the client's threads were allowed on and seen on per step.
    r#"
ALTER TABLE runs ADD COLUMN host_online_cpus TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN host_usable_cpus TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN host_cpu_topology_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE targets ADD COLUMN placement TEXT NOT NULL DEFAULT 'os';
ALTER TABLE targets ADD COLUMN server_cpus TEXT;
ALTER TABLE targets ADD COLUMN client_cpus TEXT;
ALTER TABLE measurements ADD COLUMN server_cpus_seen TEXT;
ALTER TABLE measurements ADD COLUMN server_cpus_allowed TEXT;
ALTER TABLE measurements ADD COLUMN client_cpus_seen TEXT;
ALTER TABLE measurements ADD COLUMN client_cpus_allowed TEXT;
"#,
    // v6: the wake-up-bound flag and adaptive step length (rule, target and achieved precision,
    // how the step ended).
    r#"
ALTER TABLE measurements ADD COLUMN wakeup_bound INTEGER NOT NULL DEFAULT 0;
ALTER TABLE measurements ADD COLUMN duration_rule TEXT NOT NULL DEFAULT 'fixed';
ALTER TABLE measurements ADD COLUMN precision_target REAL;
ALTER TABLE measurements ADD COLUMN precision_achieved REAL;
ALTER TABLE measurements ADD COLUMN stop_reason TEXT;
"#,
    // Measurement v2: one row per role × operation type of each step, as JSON.
    r#"
CREATE TABLE step_ops (
    run_id TEXT NOT NULL REFERENCES runs(id),
    target TEXT NOT NULL,
    suite TEXT NOT NULL,
    step TEXT NOT NULL,
    clients INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    position INTEGER NOT NULL,
    op_json TEXT NOT NULL,
    histogram BLOB,
    response_histogram BLOB,
    PRIMARY KEY (run_id, target, suite, step, clients, repeat, position)
);
"#,
    // Build variants: how dbdelta compiled a target, as JSON.
    "ALTER TABLE targets ADD COLUMN build_json TEXT;",
    // CPU profiles: the run's perf settings and status, and one folded profile per step.
    r#"
ALTER TABLE runs ADD COLUMN profiling_json TEXT;
CREATE TABLE profiles (
    run_id TEXT NOT NULL REFERENCES runs(id),
    target TEXT NOT NULL,
    suite TEXT NOT NULL,
    step TEXT NOT NULL,
    clients INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    unresolved_samples INTEGER NOT NULL,
    unresolved_modules_json TEXT NOT NULL,
    folded TEXT NOT NULL,
    error TEXT,
    PRIMARY KEY (run_id, target, suite, step, clients, repeat)
);
"#,
    // Running servers: a target's connect URL (no password) and why its processes were not
    // measured.
    r#"
ALTER TABLE targets ADD COLUMN connect TEXT;
ALTER TABLE targets ADD COLUMN unobserved TEXT;
"#,
    // v11: resumable runs: the options that shaped the plan, each `dbdelta run` that worked
    // on a run (the first and every --resume), and each finished cell (target × suite ×
    // clients × repeat) with the invocation that ran it. Runs stored before keep their
    // finished cells (those of complete runs whose target did not fail) as invocation 1.
    r#"
ALTER TABLE runs ADD COLUMN options_json TEXT;
CREATE TABLE invocations (
    run_id TEXT NOT NULL REFERENCES runs(id),
    number INTEGER NOT NULL,
    started TEXT NOT NULL,
    finished TEXT,
    pid INTEGER,
    PRIMARY KEY (run_id, number)
);
INSERT INTO invocations (run_id, number, started, finished)
    SELECT id, 1, started, finished FROM runs;
CREATE TABLE cells (
    run_id TEXT NOT NULL REFERENCES runs(id),
    target TEXT NOT NULL,
    suite TEXT NOT NULL,
    clients INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    invocation INTEGER NOT NULL,
    finished TEXT NOT NULL,
    PRIMARY KEY (run_id, target, suite, clients, repeat)
);
INSERT INTO cells (run_id, target, suite, clients, repeat, invocation, finished)
    SELECT DISTINCT m.run_id, m.target, m.suite, m.clients, m.repeat, 1,
        COALESCE(r.finished, r.started)
    FROM measurements m JOIN runs r ON r.id = m.run_id
    WHERE r.complete = 1 AND NOT EXISTS (SELECT 1 FROM targets t
        WHERE t.run_id = m.run_id AND t.name = m.target AND t.failed = 1);
"#,
];

/// Switch to WAL. SQLite answers a journal-mode change that races another connection's with
/// "database is locked" at once, without its busy handler: retry for up to 10 s.
fn wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())) {
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// A file SQLite cannot read as a database is bad input naming the path and the fix; other
/// errors stay errors.
fn not_a_store(path: &str, e: rusqlite::Error) -> anyhow::Error {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => InputError::new(format!(
            "--store {path}: is not a dbdelta results store (not an SQLite database); name \
             another file, or move this one away"
        ))
        .into(),
        _ => anyhow::Error::new(e).context(format!("--store {path}")),
    }
}

/// The schema version this build writes.
pub fn schema_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// A summary line of `dbdelta list runs`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub id: String,
    pub lab: String,
    pub started: String,
    pub complete: bool,
    pub targets: Vec<String>,
    pub measurements: u64,
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Open (creating when missing) and migrate the store.
    pub fn open(path: &Path) -> Result<Store> {
        if path.is_dir() {
            return Err(InputError::new(format!(
                "--store {}: is a directory; name the results file instead, e.g. --store {}",
                path.display(),
                path.join("dbdelta.db").display()
            ))
            .into());
        }
        let conn = Connection::open(path).with_context(|| {
            format!("--store {}: cannot open the results store", path.display())
        })?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        wal(&conn).map_err(|e| not_a_store(&path.display().to_string(), e))?;
        conn.execute_batch("PRAGMA synchronous = FULL")?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.migrate()?;
        Ok(store)
    }

    /// Open an existing store for reading; a missing file is bad input, not a new store.
    pub fn open_existing(path: &Path) -> Result<Store> {
        if !path.exists() {
            return Err(InputError::new(format!(
                "no results store at {}; run `dbdelta run` first or pass --store PATH",
                path.display()
            ))
            .into());
        }
        Store::open(path)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bring the schema to this build's version in one exclusive transaction that reads the
    /// version inside it, so two processes opening a new store at once both succeed: the
    /// second waits (busy timeout), then finds nothing left to do.
    fn migrate(&mut self) -> Result<()> {
        let path = self.path.display().to_string();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)
            .map_err(|e| not_a_store(&path, e))?;
        let current: i64 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| not_a_store(&path, e))?;
        if current > schema_version() {
            bail!(
                "store {path} has schema version {current}, newer than this dbdelta's {}; use a newer dbdelta",
                schema_version()
            );
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
            tx.execute_batch(sql)
                .with_context(|| format!("store migration {}", i + 1))?;
        }
        tx.pragma_update(None, "user_version", schema_version())?;
        tx.commit()?;
        Ok(())
    }

    /// Record a new run (incomplete) and its targets.
    pub fn begin_run(&mut self, run: &RunInfo, targets: &[TargetInfo]) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO runs (id, lab, lab_text, started, finished, complete, quick, host_cpu_model,
                host_cores, host_memory_bytes, host_kernel, dbdelta_version, min_effect,
                host_online_cpus, host_usable_cpus, host_cpu_topology_json, profiling_json)
             VALUES (?1, ?2, ?3, ?4, NULL, 0, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            params![
                run.id,
                run.lab,
                run.lab_text,
                run.started,
                run.quick,
                run.host.cpu_model,
                run.host.cores,
                run.host.memory_bytes as i64,
                run.host.kernel,
                run.dbdelta_version,
                run.min_effect,
                run.host.online_cpus,
                run.host.usable_cpus,
                serde_json::to_string(&run.host.cpu_topology)?,
                run.profiling.as_ref().map(serde_json::to_string).transpose()?
            ],
        )?;
        for (i, t) in targets.iter().enumerate() {
            tx.execute(
                "INSERT INTO targets (run_id, position, name, engine, server_version, config_name,
                    config_text, env_json, settings_json, failed, error, log_path, placement,
                    server_cpus, client_cpus, build_json, connect)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                    ?17)",
                params![
                    run.id,
                    i as i64,
                    t.name,
                    t.engine,
                    t.server_version,
                    t.config_name,
                    t.config_text,
                    serde_json::to_string(&t.env)?,
                    serde_json::to_string(&t.settings)?,
                    t.failed,
                    t.error,
                    t.log_path,
                    t.placement,
                    t.server_cpus,
                    t.client_cpus,
                    t.build.as_ref().map(serde_json::to_string).transpose()?,
                    t.connect,
                ],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Record why a target's server processes are not measured.
    pub fn set_target_unobserved(&mut self, run_id: &str, target: &str, why: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE targets SET unobserved = ?3 WHERE run_id = ?1 AND name = ?2",
            params![run_id, target, why],
        )?;
        Ok(())
    }

    /// Record what a started server said about itself.
    pub fn set_target_server(
        &mut self,
        run_id: &str,
        target: &str,
        version: &str,
        settings: &BTreeMap<String, String>,
    ) -> Result<()> {
        self.conn.execute(
            "UPDATE targets SET server_version = ?3, settings_json = ?4 WHERE run_id = ?1 AND name = ?2",
            params![run_id, target, version, serde_json::to_string(settings)?],
        )?;
        Ok(())
    }

    /// Record the configuration a started server was given (the engine's own file), in place
    /// of the target's settings lines recorded when the run began.
    pub fn set_target_config(&mut self, run_id: &str, target: &str, config: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE targets SET config_text = ?3 WHERE run_id = ?1 AND name = ?2",
            params![run_id, target, config],
        )?;
        Ok(())
    }

    /// Mark a target failed with a one-line reason and where its log is.
    pub fn fail_target(
        &mut self,
        run_id: &str,
        target: &str,
        error: &str,
        log_path: Option<&str>,
    ) -> Result<()> {
        self.conn.execute(
            "UPDATE targets SET failed = 1, error = ?3, log_path = ?4 WHERE run_id = ?1 AND name = ?2",
            params![run_id, target, error, log_path],
        )?;
        Ok(())
    }

    pub fn save_load(&mut self, run_id: &str, l: &LoadResult) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO loads (run_id, target, suite, clients, repeat, tables,
                rows_per_table, load_secs, rows_per_sec, index_secs, db_size_bytes)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                run_id,
                l.target,
                l.suite,
                l.clients,
                l.repeat,
                l.tables,
                l.rows_per_table as i64,
                l.load_secs,
                l.rows_per_sec,
                l.index_secs,
                l.db_size_bytes.map(|v| v as i64)
            ],
        )?;
        Ok(())
    }

    /// Persist one step: its measurement, per-second series and histogram, in one transaction.
    pub fn save_step(
        &mut self,
        run_id: &str,
        m: &Measurement,
        series: &[SecondSample],
        histogram: &[u8],
        op_histograms: &[OpHistograms],
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        insert_measurement(&tx, run_id, m, histogram)?;
        insert_series(&tx, run_id, series)?;
        insert_operations(&tx, run_id, m, op_histograms)?;
        insert_profile(&tx, run_id, m)?;
        tx.commit()?;
        Ok(())
    }

    /// Mark a run finished; `complete` is false when it was interrupted.
    pub fn finish_run(&mut self, run_id: &str, finished: &str, complete: bool) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET finished = ?2, complete = ?3 WHERE id = ?1",
            params![run_id, finished, complete],
        )?;
        Ok(())
    }

    /// The newest run's id.
    pub fn latest_run(&self) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT id FROM runs ORDER BY started DESC, rowid DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Resolve `RUN` (an id, `latest`/none, or `previous`: the run before the latest) to an
    /// existing run id.
    pub fn resolve_run(&self, run: Option<&str>) -> Result<String> {
        match run {
            Some("previous") => {
                let found: Option<String> = self
                    .conn
                    .query_row(
                        "SELECT id FROM runs ORDER BY started DESC, rowid DESC LIMIT 1 OFFSET 1",
                        [],
                        |r| r.get(0),
                    )
                    .optional()?;
                found.ok_or_else(|| {
                    InputError::new(format!(
                        "previous: the store {} holds fewer than 2 runs; `dbdelta list runs` shows them",
                        self.path.display()
                    ))
                    .into()
                })
            }
            None | Some("latest") => self.latest_run()?.ok_or_else(|| {
                InputError::new(format!(
                    "the store {} holds no run yet; run `dbdelta run` first",
                    self.path.display()
                ))
                .into()
            }),
            Some(id) => {
                let found: Option<String> = self
                    .conn
                    .query_row("SELECT id FROM runs WHERE id = ?1", [id], |r| r.get(0))
                    .optional()?;
                found.ok_or_else(|| {
                    InputError::new(format!(
                        "no run {id} in {}; `dbdelta list runs` shows the runs it holds",
                        self.path.display()
                    ))
                    .into()
                })
            }
        }
    }

    pub fn list_runs(&self) -> Result<Vec<RunSummary>> {
        let mut stmt = self.conn.prepare(
            "SELECT r.id, r.lab, r.started, r.complete,
                    (SELECT group_concat(name, ',') FROM (SELECT name FROM targets t
                        WHERE t.run_id = r.id ORDER BY position)),
                    (SELECT count(*) FROM measurements m WHERE m.run_id = r.id)
             FROM runs r ORDER BY r.started, r.rowid",
        )?;
        let rows = stmt.query_map([], |r| {
            let targets: Option<String> = r.get(4)?;
            Ok(RunSummary {
                id: r.get(0)?,
                lab: r.get(1)?,
                started: r.get(2)?,
                complete: r.get(3)?,
                targets: targets
                    .map(|t| t.split(',').map(str::to_string).collect())
                    .unwrap_or_default(),
                measurements: r.get::<_, i64>(5)? as u64,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Each measurement's role × operation rows (schema v2), in their stored order.
    fn attach_operations(&self, run_id: &str, ms: &mut [Measurement]) -> Result<()> {
        let mut stmt = self.conn.prepare(
            "SELECT target, suite, step, clients, repeat, op_json FROM step_ops
             WHERE run_id = ?1 ORDER BY target, suite, step, clients, repeat, position",
        )?;
        let mut by_key: std::collections::HashMap<StepKey, Vec<_>> =
            std::collections::HashMap::new();
        let rows = stmt.query_map([run_id], |r| {
            Ok((
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?),
                r.get::<_, String>(5)?,
            ))
        })?;
        for row in rows {
            let (key, json) = row?;
            let op = serde_json::from_str(&json).context("a stored operation row")?;
            by_key.entry(key).or_default().push(op);
        }
        for m in ms {
            let key = step_key(m);
            m.operations = by_key.remove(&key).unwrap_or_default();
        }
        Ok(())
    }

    /// Each profiled measurement's folded profile.
    fn attach_profiles(&self, run_id: &str, ms: &mut [Measurement]) -> Result<()> {
        let mut stmt = self.conn.prepare(
            "SELECT target, suite, step, clients, repeat, samples, unresolved_samples,
                unresolved_modules_json, folded, error FROM profiles WHERE run_id = ?1",
        )?;
        let rows = stmt.query_map([run_id], |r| {
            let key: StepKey = (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
            let modules: String = r.get(7)?;
            Ok((
                key,
                StepProfile {
                    samples: r.get::<_, i64>(5)? as u64,
                    unresolved: r.get::<_, i64>(6)? as u64,
                    unresolved_modules: serde_json::from_str(&modules).unwrap_or_default(),
                    folded: r.get(8)?,
                    error: r.get(9)?,
                },
            ))
        })?;
        let mut by_key: std::collections::HashMap<StepKey, StepProfile> =
            rows.collect::<Result<_, _>>()?;
        for m in ms {
            let key = step_key(m);
            m.profile = by_key.remove(&key);
        }
        Ok(())
    }

    /// Everything stored about one run.
    pub fn load_run(&self, run_id: &str) -> Result<RunData> {
        let mut data = RunData {
            run: self.run_info(run_id)?,
            targets: self.targets_of(run_id)?,
            loads: self.loads_of(run_id)?,
            measurements: self.measurements_of(run_id)?,
            series: self.series_of(run_id)?,
        };
        self.attach_invocations(&mut data)?;
        Ok(data)
    }

    /// The run's own record.
    fn run_info(&self, run_id: &str) -> Result<RunInfo> {
        let out = self.conn.query_row(
            "SELECT id, lab, lab_text, started, finished, complete, quick, host_cpu_model,
                host_cores, host_memory_bytes, host_kernel, dbdelta_version, min_effect,
                host_online_cpus, host_usable_cpus, host_cpu_topology_json, profiling_json
             FROM runs WHERE id = ?1",
            [run_id],
            |r| {
                Ok(RunInfo {
                    id: r.get(0)?,
                    lab: r.get(1)?,
                    lab_text: r.get(2)?,
                    started: r.get(3)?,
                    finished: r.get(4)?,
                    complete: r.get(5)?,
                    quick: r.get(6)?,
                    host: HostInfo {
                        cpu_model: r.get(7)?,
                        cores: r.get(8)?,
                        memory_bytes: r.get::<_, i64>(9)? as u64,
                        kernel: r.get(10)?,
                        online_cpus: r.get(13)?,
                        usable_cpus: r.get(14)?,
                        cpu_topology: serde_json::from_str(&r.get::<_, String>(15)?)
                            .unwrap_or_default(),
                    },
                    dbdelta_version: r.get(11)?,
                    min_effect: r.get(12)?,
                    profiling: r
                        .get::<_, Option<String>>(16)?
                        .and_then(|j| serde_json::from_str(&j).ok()),
                    invocations: Vec::new(),
                })
            },
        )?;
        Ok(out)
    }

    /// The run's targets in lab order.
    fn targets_of(&self, run_id: &str) -> Result<Vec<TargetInfo>> {
        let mut stmt = self.conn.prepare(
            "SELECT name, engine, server_version, config_name, config_text, env_json, settings_json,
                failed, error, log_path, placement, server_cpus, client_cpus, build_json, connect,
                unobserved FROM targets
             WHERE run_id = ?1 ORDER BY position",
        )?;
        let out = stmt
            .query_map([run_id], |r| {
                let env: String = r.get(5)?;
                let settings: String = r.get(6)?;
                Ok(TargetInfo {
                    name: r.get(0)?,
                    engine: r.get(1)?,
                    server_version: r.get(2)?,
                    config_name: r.get(3)?,
                    config_text: r.get(4)?,
                    env: serde_json::from_str(&env).unwrap_or_default(),
                    settings: serde_json::from_str(&settings).unwrap_or_default(),
                    failed: r.get(7)?,
                    error: r.get(8)?,
                    log_path: r.get(9)?,
                    placement: r.get(10)?,
                    server_cpus: r.get(11)?,
                    client_cpus: r.get(12)?,
                    build: r
                        .get::<_, Option<String>>(13)?
                        .and_then(|b| serde_json::from_str(&b).ok()),
                    connect: r.get(14)?,
                    unobserved: r.get(15)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(out)
    }

    /// The run's loads in execution order.
    fn loads_of(&self, run_id: &str) -> Result<Vec<LoadResult>> {
        let mut stmt = self.conn.prepare(
            "SELECT target, suite, clients, repeat, tables, rows_per_table, load_secs, rows_per_sec,
                index_secs, db_size_bytes FROM loads WHERE run_id = ?1 ORDER BY rowid",
        )?;
        let out = stmt
            .query_map([run_id], |r| {
                Ok(LoadResult {
                    target: r.get(0)?,
                    suite: r.get(1)?,
                    clients: r.get(2)?,
                    repeat: r.get(3)?,
                    tables: r.get(4)?,
                    rows_per_table: r.get::<_, i64>(5)? as u64,
                    load_secs: r.get(6)?,
                    rows_per_sec: r.get(7)?,
                    index_secs: r.get(8)?,
                    db_size_bytes: r.get::<_, Option<i64>>(9)?.map(|v| v as u64),
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(out)
    }

    /// The run's measurements in execution order, each with its operation rows.
    fn measurements_of(&self, run_id: &str) -> Result<Vec<Measurement>> {
        let mut stmt = self
            .conn
            .prepare("SELECT * FROM measurements WHERE run_id = ?1 ORDER BY rowid")?;
        let mut out = stmt
            .query_map([run_id], measurement_from_row)?
            .collect::<Result<Vec<_>, _>>()?;
        self.attach_operations(run_id, &mut out)?;
        self.attach_profiles(run_id, &mut out)?;
        Ok(out)
    }

    /// The run's per-second series.
    fn series_of(&self, run_id: &str) -> Result<Vec<SecondSample>> {
        let mut stmt = self.conn.prepare(
            "SELECT target, step, clients, repeat, second, ops, p99_us, max_us FROM series
             WHERE run_id = ?1 ORDER BY rowid",
        )?;
        let out = stmt
            .query_map([run_id], |r| {
                Ok(SecondSample {
                    target: r.get(0)?,
                    step: r.get(1)?,
                    clients: r.get(2)?,
                    repeat: r.get(3)?,
                    second: r.get(4)?,
                    ops: r.get::<_, i64>(5)? as u64,
                    p99_us: r.get(6)?,
                    max_us: r.get(7)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(out)
    }
}

/// The `measurements` row of one step.
fn insert_measurement(
    tx: &rusqlite::Transaction<'_>,
    run_id: &str,
    m: &Measurement,
    histogram: &[u8],
) -> Result<()> {
    let lat = m.latency_us;
    let l = |f: fn(&Latency) -> f64| lat.as_ref().map(f);
    let opt_i = |v: Option<u64>| v.map(|x| x as i64);
    tx.execute(
            "INSERT OR REPLACE INTO measurements (run_id, target, suite, step, step_index, grp,
                statements_per_event, clients, repeat, tables, rows_per_table, seconds, ops, events,
                errors_retryable, errors_reconnect, errors_fatal, qps, tps,
                lat_min_us, lat_p50_us, lat_p90_us, lat_p95_us, lat_p99_us, lat_p999_us, lat_max_us,
                lat_mean_us, server_cpu_us_per_op, client_cpu_us_per_op, host_cpu_us_per_op,
                cs_per_op, host_cs_per_op, reads_per_op, read_kb_per_op, writes_per_op,
                write_kb_per_op, proc_read_kb_per_op, proc_write_kb_per_op, peak_rss_bytes,
                peak_vsz_bytes, peak_pss_bytes, db_size_bytes, client_bound, failed, error,
                histogram, warm, rows_per_event, rows_per_statement, scan_krows_per_sec,
                server_cpus_seen, server_cpus_allowed, client_cpus_seen, client_cpus_allowed,
                wakeup_bound, duration_rule, precision_target, precision_achieved, stop_reason,
                recorded_at)
             VALUES (:run_id, :target, :suite, :step, :step_index, :grp, :spe, :clients, :repeat,
                :tables, :rows, :seconds, :ops, :events, :er, :ec, :ef, :qps, :tps,
                :lmin, :l50, :l90, :l95, :l99, :l999, :lmax, :lmean, :scpu, :ccpu, :hcpu, :cs, :hcs,
                :r, :rkb, :w, :wkb, :prkb, :pwkb, :rss, :vsz, :pss, :size, :cb, :failed, :error, :hist,
                :warm, :rpe, :rps, :krows, :sseen, :sallowed, :cseen, :callowed,
                :wb, :rule, :ptarget, :pachieved, :stop, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
            named_params! {
                ":run_id": run_id, ":target": m.target, ":suite": m.suite, ":step": m.step,
                ":step_index": m.step_index, ":grp": m.group, ":spe": m.statements_per_event,
                ":clients": m.clients, ":repeat": m.repeat, ":tables": m.tables,
                ":rows": m.rows_per_table as i64, ":seconds": m.seconds, ":ops": m.ops as i64,
                ":events": m.events as i64, ":er": m.errors.retryable as i64,
                ":ec": m.errors.reconnect as i64, ":ef": m.errors.fatal as i64,
                ":qps": m.qps, ":tps": m.tps,
                ":lmin": l(|x| x.min), ":l50": l(|x| x.p50), ":l90": l(|x| x.p90),
                ":l95": l(|x| x.p95), ":l99": l(|x| x.p99), ":l999": l(|x| x.p999),
                ":lmax": l(|x| x.max), ":lmean": l(|x| x.mean),
                ":scpu": m.server_cpu_us_per_op, ":ccpu": m.client_cpu_us_per_op,
                ":hcpu": m.host_cpu_us_per_op, ":cs": m.cs_per_op, ":hcs": m.host_cs_per_op,
                ":r": m.reads_per_op, ":rkb": m.read_kb_per_op, ":w": m.writes_per_op,
                ":wkb": m.write_kb_per_op, ":prkb": m.proc_read_kb_per_op,
                ":pwkb": m.proc_write_kb_per_op, ":rss": opt_i(m.peak_rss_bytes),
                ":vsz": opt_i(m.peak_vsz_bytes), ":pss": opt_i(m.peak_pss_bytes), ":size": opt_i(m.db_size_bytes),
                ":cb": m.client_bound, ":failed": m.failed, ":error": m.error,
                ":hist": if histogram.is_empty() { None } else { Some(histogram) },
                ":warm": m.warm, ":rpe": m.rows_per_event,
                ":rps": m.rows_per_statement.as_ref().map(serde_json::to_string).transpose()?,
                ":krows": m.scan_krows_per_sec,
                ":sseen": m.server_cpus_seen, ":sallowed": m.server_cpus_allowed,
                ":cseen": m.client_cpus_seen, ":callowed": m.client_cpus_allowed,
                ":wb": m.wakeup_bound,
                ":rule": if m.duration_rule.is_empty() { "fixed" } else { m.duration_rule.as_str() },
                ":ptarget": m.precision_target, ":pachieved": m.precision_achieved,
                ":stop": m.stop_reason,
            },
        )?;
    Ok(())
}

/// The per-second `series` rows of one step.
fn insert_series(
    tx: &rusqlite::Transaction<'_>,
    run_id: &str,
    series: &[SecondSample],
) -> Result<()> {
    let mut ins = tx.prepare(
        "INSERT OR REPLACE INTO series (run_id, target, step, clients, repeat, second, ops,
            p99_us, max_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for s in series {
        ins.execute(params![
            run_id,
            s.target,
            s.step,
            s.clients,
            s.repeat,
            s.second,
            s.ops as i64,
            s.p99_us,
            s.max_us
        ])?;
    }
    Ok(())
}

/// The `step_ops` rows of one step: each role × operation type as JSON (measurement v2), with
/// its histograms when given (`op_histograms` in the same order).
fn insert_operations(
    tx: &rusqlite::Transaction<'_>,
    run_id: &str,
    m: &Measurement,
    op_histograms: &[OpHistograms],
) -> Result<()> {
    let mut ins = tx.prepare(
        "INSERT OR REPLACE INTO step_ops (run_id, target, suite, step, clients, repeat,
            position, op_json, histogram, response_histogram)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    let blob = |b: &[u8]| (!b.is_empty()).then(|| b.to_vec());
    for (i, o) in m.operations.iter().enumerate() {
        let h = op_histograms.get(i);
        ins.execute(params![
            run_id,
            m.target,
            m.suite,
            m.step,
            m.clients,
            m.repeat,
            i as i64,
            serde_json::to_string(o)?,
            h.and_then(|h| blob(&h.service)),
            h.and_then(|h| blob(&h.response)),
        ])?;
    }
    Ok(())
}

/// (target, suite, step, clients, repeat): what identifies a measurement within a run.
type StepKey = (String, String, String, u32, u32);

fn step_key(m: &Measurement) -> StepKey {
    (
        m.target.clone(),
        m.suite.clone(),
        m.step.clone(),
        m.clients,
        m.repeat,
    )
}

/// A profiled step's folded profile (or why it has none).
fn insert_profile(tx: &rusqlite::Transaction<'_>, run_id: &str, m: &Measurement) -> Result<()> {
    let Some(p) = &m.profile else {
        return Ok(());
    };
    tx.execute(
        "INSERT OR REPLACE INTO profiles (run_id, target, suite, step, clients, repeat, samples,
            unresolved_samples, unresolved_modules_json, folded, error)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            run_id,
            m.target,
            m.suite,
            m.step,
            m.clients,
            m.repeat,
            p.samples as i64,
            p.unresolved as i64,
            serde_json::to_string(&p.unresolved_modules)?,
            p.folded,
            p.error,
        ],
    )?;
    Ok(())
}

fn measurement_from_row(r: &Row<'_>) -> rusqlite::Result<Measurement> {
    let u = |name: &str| -> rusqlite::Result<u64> { Ok(r.get::<_, i64>(name)? as u64) };
    let ou = |name: &str| -> rusqlite::Result<Option<u64>> {
        Ok(r.get::<_, Option<i64>>(name)?.map(|v| v as u64))
    };
    let lat_p50: Option<f64> = r.get("lat_p50_us")?;
    let latency_us = match lat_p50 {
        None => None,
        Some(p50) => Some(Latency {
            min: r.get("lat_min_us")?,
            p50,
            p90: r.get("lat_p90_us")?,
            p95: r.get("lat_p95_us")?,
            p99: r.get("lat_p99_us")?,
            p999: r.get("lat_p999_us")?,
            max: r.get("lat_max_us")?,
            mean: r.get("lat_mean_us")?,
        }),
    };
    Ok(Measurement {
        target: r.get("target")?,
        suite: r.get("suite")?,
        step: r.get("step")?,
        step_index: r.get("step_index")?,
        group: r.get("grp")?,
        statements_per_event: r.get("statements_per_event")?,
        clients: r.get("clients")?,
        repeat: r.get("repeat")?,
        tables: r.get("tables")?,
        rows_per_table: u("rows_per_table")?,
        seconds: r.get("seconds")?,
        ops: u("ops")?,
        events: u("events")?,
        errors: ErrorCounts {
            retryable: u("errors_retryable")?,
            reconnect: u("errors_reconnect")?,
            fatal: u("errors_fatal")?,
        },
        qps: r.get("qps")?,
        tps: r.get("tps")?,
        latency_us,
        server_cpu_us_per_op: r.get("server_cpu_us_per_op")?,
        client_cpu_us_per_op: r.get("client_cpu_us_per_op")?,
        host_cpu_us_per_op: r.get("host_cpu_us_per_op")?,
        cs_per_op: r.get("cs_per_op")?,
        host_cs_per_op: r.get("host_cs_per_op")?,
        reads_per_op: r.get("reads_per_op")?,
        read_kb_per_op: r.get("read_kb_per_op")?,
        writes_per_op: r.get("writes_per_op")?,
        write_kb_per_op: r.get("write_kb_per_op")?,
        proc_read_kb_per_op: r.get("proc_read_kb_per_op")?,
        proc_write_kb_per_op: r.get("proc_write_kb_per_op")?,
        peak_rss_bytes: ou("peak_rss_bytes")?,
        peak_vsz_bytes: ou("peak_vsz_bytes")?,
        peak_pss_bytes: ou("peak_pss_bytes")?,
        db_size_bytes: ou("db_size_bytes")?,
        client_bound: r.get("client_bound")?,
        failed: r.get("failed")?,
        error: r.get("error")?,
        warm: r.get("warm")?,
        rows_per_event: r.get("rows_per_event")?,
        rows_per_statement: r
            .get::<_, Option<String>>("rows_per_statement")?
            .and_then(|j| serde_json::from_str(&j).ok()),
        scan_krows_per_sec: r.get("scan_krows_per_sec")?,
        server_cpus_seen: r.get("server_cpus_seen")?,
        server_cpus_allowed: r.get("server_cpus_allowed")?,
        client_cpus_seen: r.get("client_cpus_seen")?,
        client_cpus_allowed: r.get("client_cpus_allowed")?,
        wakeup_bound: r.get("wakeup_bound")?,
        duration_rule: r.get("duration_rule")?,
        precision_target: r.get("precision_target")?,
        precision_achieved: r.get("precision_achieved")?,
        stop_reason: r.get("stop_reason")?,
        operations: Vec::new(),
        profile: None,
        invocation: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> RunInfo {
        RunInfo {
            id: "r1".into(),
            lab: "lab".into(),
            lab_text: "[lab]".into(),
            started: "2026-11-22T00:00:00Z".into(),
            finished: None,
            complete: false,
            host: HostInfo {
                cpu_model: "cpu".into(),
                cores: 2,
                memory_bytes: 1,
                kernel: "k".into(),
                online_cpus: "0-1".into(),
                usable_cpus: "1".into(),
                cpu_topology: vec![crate::results::CpuTopology {
                    cpu: 1,
                    core: 1,
                    package: 0,
                    siblings: "1".into(),
                }],
            },
            dbdelta_version: "0.1.0".into(),
            quick: true,
            min_effect: Some(0.03),
            profiling: None,
            invocations: Vec::new(),
        }
    }

    #[test]
    fn two_openers_of_a_new_store_both_succeed() {
        for _ in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.db");
            let barrier = std::sync::Barrier::new(2);
            std::thread::scope(|s| {
                let open = || {
                    barrier.wait();
                    Store::open(&path).map(|_| ()).map_err(|e| format!("{e:#}"))
                };
                let a = s.spawn(open);
                let b = s.spawn(open);
                assert_eq!(a.join().unwrap(), Ok(()));
                assert_eq!(b.join().unwrap(), Ok(()));
            });
        }
    }

    #[test]
    fn a_directory_or_a_foreign_file_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let e = Store::open(dir.path()).err().unwrap();
        assert!(e.downcast_ref::<InputError>().is_some(), "{e:#}");
        assert!(format!("{e}").contains("is a directory"), "{e}");
        let junk = dir.path().join("notes.txt");
        std::fs::write(
            &junk,
            "not a database, just some text long enough to be a header....",
        )
        .unwrap();
        let e = Store::open(&junk).err().unwrap();
        assert!(e.downcast_ref::<InputError>().is_some(), "{e:#}");
        assert!(
            format!("{e}").contains("is not a dbdelta results store"),
            "{e}"
        );
    }

    #[test]
    fn round_trips_a_run_and_stays_incomplete_until_finished() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut s = Store::open(&path).unwrap();
        let t = TargetInfo {
            name: "a".into(),
            engine: "sqlite".into(),
            placement: "shared".into(),
            client_cpus: Some("1".into()),
            ..Default::default()
        };
        s.begin_run(&run(), std::slice::from_ref(&t)).unwrap();
        let m = Measurement {
            target: "a".into(),
            step: "point-query".into(),
            ops: 10,
            events: 10,
            qps: Some(5.0),
            latency_us: Some(Latency {
                p50: 1.5,
                ..Default::default()
            }),
            peak_rss_bytes: Some(1 << 40),
            rows_per_event: Some(41.5),
            rows_per_statement: Some(vec![0.0, 1.0, 10.0]),
            scan_krows_per_sec: Some(1234.5),
            server_cpus_seen: Some("0".into()),
            server_cpus_allowed: Some("0-1".into()),
            client_cpus_seen: Some("1".into()),
            client_cpus_allowed: Some("1".into()),
            wakeup_bound: true,
            duration_rule: "adaptive".into(),
            precision_target: Some(0.01),
            precision_achieved: Some(0.0093),
            stop_reason: Some("precision".into()),
            operations: vec![
                crate::results::OpMeasurement {
                    role: "querier".into(),
                    op: "range".into(),
                    pacer: "closed".into(),
                    counted: true,
                    operations: 10,
                    units: 10,
                    series: vec![5, 5],
                    ..Default::default()
                },
                crate::results::OpMeasurement {
                    role: "inserter".into(),
                    op: "insert".into(),
                    pacer: "rate".into(),
                    target_ops_per_sec: Some(2.0),
                    ops_per_sec: Some(1.9),
                    response_us: Some(Latency {
                        max: 2.5e6,
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        s.save_step("r1", &m, &[], &[], &[]).unwrap();
        let warm = Measurement {
            step: "scan.warm".into(),
            warm: true,
            ..m.clone()
        };
        s.save_step("r1", &warm, &[], &[], &[]).unwrap();
        drop(s);
        let s = Store::open(&path).unwrap();
        let data = s.load_run("r1").unwrap();
        assert!(!data.run.complete);
        assert_eq!(
            data.run.min_effect,
            Some(0.03),
            "the lab's min_effect is kept"
        );
        assert_eq!(data.measurements, vec![m, warm]);
        assert_eq!(data.targets, vec![t]);
        assert_eq!(data.run.host, run().host);
        assert_eq!(s.resolve_run(None).unwrap(), "r1");
        assert!(s.resolve_run(Some("nope")).is_err());
        assert!(
            s.resolve_run(Some("previous")).is_err(),
            "one run has no previous"
        );
        let v: i64 = s
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, schema_version());
    }
}
