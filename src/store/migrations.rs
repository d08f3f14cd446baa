//! The schema and how a store reaches this build's version of it.
//!
//! Owns [`MIGRATIONS`] (SQLite's DDL, the one definition of the schema for every backend),
//! [`migrate`] (one exclusive transaction that reads the version inside it, so two processes
//! opening a new store at once both succeed), [`to_postgres`] (the same DDL for PostgreSQL:
//! column types mapped, SQLite's implicit `rowid` made an identity column) and [`tables`] (the
//! schema's tables in creation order). Must not: write or read results.

use anyhow::{Context, Result};

use super::sql::{Db, Lock, Tx};

/// Schema migrations, in order. Migration `i` brings the schema to version `i + 1`.
/// Never edit a released migration; append a new one. Written in SQLite's DDL with the types
/// INTEGER, REAL, TEXT and BLOB; [`to_postgres`] translates them.
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
    // v12: instructions per op from the counting pass, on the first repeat's rows,
    // and how the run counted them.
    r#"
ALTER TABLE measurements ADD COLUMN server_instructions_per_op REAL;
ALTER TABLE measurements ADD COLUMN server_instructions_spread REAL;
ALTER TABLE measurements ADD COLUMN client_instructions_per_op REAL;
ALTER TABLE runs ADD COLUMN instructions TEXT;
"#,
    // v13: how many times a `repeats = "auto"` run could look at its steps: its
    // p-values are multiplied by it; NULL for fixed repeats.
    "ALTER TABLE runs ADD COLUMN looks INTEGER;",
    // v14: the settling guard: the idle probe before a cell's first step, as JSON
    // (`results::Settling`), on every step of the cell.
    "ALTER TABLE measurements ADD COLUMN settling_json TEXT;",
    // v15: a load copied from a saved one (`reuse_load`): the snapshot's name and
    // when it was saved; NULL for a load that ran.
    "ALTER TABLE loads ADD COLUMN reused TEXT;",
    // v16: run names (unique in a store) and tags (any number of runs each):
    // `report NAME`, `report --tag TAG`.
    r#"
ALTER TABLE runs ADD COLUMN name TEXT;
CREATE UNIQUE INDEX runs_name ON runs (name);
CREATE TABLE run_tags (
    run_id TEXT NOT NULL REFERENCES runs(id),
    tag TEXT NOT NULL,
    PRIMARY KEY (run_id, tag)
);
"#,
    // v17: `dbdelta bisect`: the metric that decided, the steps judged and the
    // answer (NULL until the bisection ends) of a run that bisected.
    r#"
CREATE TABLE bisections (
    run_id TEXT NOT NULL REFERENCES runs(id),
    metric TEXT NOT NULL,
    steps TEXT NOT NULL,
    answer TEXT,
    PRIMARY KEY (run_id)
);
"#,
    // v18: version sweeps: the sweep (`versions` target) a target is one release
    // of; its targets' positions are the release order. NULL for a target of no sweep.
    "ALTER TABLE targets ADD COLUMN sweep TEXT;",
    // v19: metrics a step's counters could not cover (a CPU window that missed the
    // operations or was too short for the clock tick), as a JSON array of metric ids; their
    // columns are NULL. NULL when every value was measured.
    "ALTER TABLE measurements ADD COLUMN below_resolution TEXT;",
    // v20: the counting pass's instructions of the server's background work per op and their
    // spread, apart from the pass's own statements (`server_instructions_per_op`),
    // and the foreground value of each pair of passes with their events (JSON), which the
    // report pairs across targets (their k-th pairs are seeded alike).
    r#"
ALTER TABLE measurements ADD COLUMN server_background_instructions_per_op REAL;
ALTER TABLE measurements ADD COLUMN server_background_instructions_spread REAL;
ALTER TABLE measurements ADD COLUMN server_instructions_pairs TEXT;
"#,
    // v21: where a finished cell's wall time went (`results::CellPhases` as JSON),
    // what `dbdelta plan` calibrates its estimate from; NULL for cells stored before.
    "ALTER TABLE cells ADD COLUMN phases_json TEXT;",
    // v22: the counting pass's per-function instructions/op of a counted step, as
    // JSON (`results::StepFunctions`), keyed as the measurements row that holds the step's
    // instructions/op (the first repeat's).
    r#"
CREATE TABLE step_functions (
    run_id TEXT NOT NULL REFERENCES runs(id),
    target TEXT NOT NULL,
    suite TEXT NOT NULL,
    step TEXT NOT NULL,
    clients INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    functions_json TEXT NOT NULL,
    PRIMARY KEY (run_id, target, suite, step, clients, repeat)
);
"#,
    // v23: `dbdelta explain`'s split of a counted step's change into code and configuration,
    // as JSON (`results::StepExplanation`), keyed as the target's measurements row that holds
    // the step's instructions/op; the twins' counts are a run of their own.
    r#"
CREATE TABLE explanations (
    run_id TEXT NOT NULL REFERENCES runs(id),
    target TEXT NOT NULL,
    suite TEXT NOT NULL,
    step TEXT NOT NULL,
    clients INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    explanation_json TEXT NOT NULL,
    PRIMARY KEY (run_id, target, suite, step, clients, repeat)
);
"#,
    // v24: what a target's build says of itself (`results::BinaryProvenance` as JSON: the
    // compilers of its ELF `.comment`, its `--version` line), read when its server first
    // started; NULL for targets stored before, running servers and other hosts' servers.
    "ALTER TABLE targets ADD COLUMN provenance_json TEXT;",
    // v25: what a run is: NULL for a run of a lab (`dbdelta run`, `bisect`), `explain` for the
    // run that holds `dbdelta explain`'s twins, with `explains` the id of the run it explains.
    // A run of another kind is never `latest`, nor in a lab's run list or its history.
    // The twins' runs of explanations stored before are found by the explanation that names
    // them (`"twin_run":"ID"` in its JSON); a stopped explanation's run is named by none.
    r#"
ALTER TABLE runs ADD COLUMN kind TEXT;
ALTER TABLE runs ADD COLUMN explains TEXT;
UPDATE runs SET kind = 'explain', explains = (
    SELECT e.run_id FROM explanations e
    WHERE e.explanation_json LIKE '%"twin_run":"' || runs.id || '"%' LIMIT 1)
WHERE EXISTS (
    SELECT 1 FROM explanations e
    WHERE e.explanation_json LIKE '%"twin_run":"' || runs.id || '"%');
"#,
    // v26: each step's floor per build (`dbdelta calibrate`: how far the step's
    // instructions/op moved between two identical servers of the build), the newest
    // calibration's; a run of kind `calibrate` measured it.
    r#"
CREATE TABLE floors (
    build TEXT NOT NULL,
    suite TEXT NOT NULL,
    step TEXT NOT NULL,
    clients INTEGER NOT NULL,
    floor REAL NOT NULL,
    run_id TEXT NOT NULL REFERENCES runs(id),
    PRIMARY KEY (build, suite, step, clients)
);
"#,
];

/// The schema version this build writes.
pub fn schema_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// What is wrong with a store at schema `version`, newer than this build's, and the fix.
pub fn newer(version: i64) -> String {
    format!(
        "has schema version {version}, newer than this dbdelta's {}; use a newer dbdelta",
        schema_version()
    )
}

/// Bring the store's schema to this build's version in one exclusive transaction that reads
/// the version inside it: a second process opening a new store at once waits, then finds
/// nothing left to do.
pub fn migrate(db: &mut dyn Db, location: &str) -> Result<()> {
    let mut tx = Tx::begin(db, Lock::Exclusive)?;
    let current = tx.schema_version()?;
    if current > schema_version() {
        // Bad input, as every reader says it (exit 2): the fix is another dbdelta.
        return crate::error::input(format!("store {location} {}", newer(current)));
    }
    if current == schema_version() {
        // Nothing to write: a reader of a store on a full file system still reads it.
        return Ok(());
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let sql = tx.dialect(sql);
        tx.batch(&sql)
            .with_context(|| format!("store migration {}", i + 1))?;
    }
    tx.set_schema_version(schema_version())?;
    tx.commit()
}

/// A piece of DDL: a word (identifier or keyword), a quoted literal or one other character.
#[derive(Debug, PartialEq)]
enum Token<'a> {
    Word(&'a str),
    Quoted(&'a str),
    Other(char),
}

fn tokens(sql: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut rest = sql;
    while let Some(c) = rest.chars().next() {
        let len = if c.is_ascii_alphanumeric() || c == '_' {
            rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len())
        } else if c == '\'' || c == '"' {
            // To the closing quote ('' inside a literal closes and reopens it: same result).
            rest[1..].find(c).map_or(rest.len(), |i| i + 2)
        } else {
            c.len_utf8()
        };
        let (head, tail) = rest.split_at(len);
        out.push(match c {
            c if c.is_ascii_alphanumeric() || c == '_' => Token::Word(head),
            '\'' | '"' => Token::Quoted(head),
            c => Token::Other(c),
        });
        rest = tail;
    }
    out
}

/// SQLite's column types in PostgreSQL: 64-bit integers (byte counts overflow `integer`),
/// double precision, `bytea`.
fn pg_type(word: &str) -> Option<&'static str> {
    match word.to_ascii_uppercase().as_str() {
        "INTEGER" => Some("BIGINT"),
        "REAL" => Some("DOUBLE PRECISION"),
        "BLOB" => Some("BYTEA"),
        _ => None,
    }
}

/// The column every PostgreSQL table starts with: SQLite's implicit `rowid` (the insertion
/// order the store reads runs back in), made explicit.
pub const PG_ROWID: &str = "rowid BIGINT GENERATED ALWAYS AS IDENTITY";

/// A migration's SQLite DDL as PostgreSQL's: types mapped (never inside a quoted name or
/// literal), and each `CREATE TABLE` given [`PG_ROWID`] as its first column.
pub fn to_postgres(sqlite: &str) -> String {
    let mut out = String::with_capacity(sqlite.len() + 64);
    let (mut create, mut table) = (false, false);
    for t in tokens(sqlite) {
        match t {
            Token::Word(w) if w.eq_ignore_ascii_case("CREATE") => create = true,
            Token::Word(w) if create && w.eq_ignore_ascii_case("TABLE") => table = true,
            Token::Other('(') if table => {
                out.push_str(&format!("(\n    {PG_ROWID},"));
                (create, table) = (false, false);
                continue;
            }
            Token::Other(c) if c.is_whitespace() => {}
            Token::Word(_) if table => {}
            _ => create = false,
        }
        match t {
            Token::Word(w) => out.push_str(pg_type(w).unwrap_or(w)),
            Token::Quoted(q) => out.push_str(q),
            Token::Other(c) => out.push(c),
        }
    }
    out
}

/// The schema's tables in creation order (`runs` first: the others refer to it).
pub fn tables() -> Vec<&'static str> {
    let mut out = Vec::new();
    for sql in MIGRATIONS {
        let words: Vec<&str> = tokens(sql)
            .into_iter()
            .filter_map(|t| match t {
                Token::Word(w) => Some(w),
                _ => None,
            })
            .collect();
        for w in words.windows(3) {
            if w[0].eq_ignore_ascii_case("CREATE") && w[1].eq_ignore_ascii_case("TABLE") {
                out.push(w[2]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_types_and_rowid() {
        let sqlite = "CREATE TABLE t (\n    a INTEGER NOT NULL DEFAULT 0,\n    b REAL,\n    \
                      c BLOB, d TEXT DEFAULT 'REAL integer',\n    real_time integer\n);\n\
                      ALTER TABLE t ADD COLUMN e INTEGER;";
        assert_eq!(
            to_postgres(sqlite),
            "CREATE TABLE t (\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY,\n    \
             a BIGINT NOT NULL DEFAULT 0,\n    b DOUBLE PRECISION,\n    \
             c BYTEA, d TEXT DEFAULT 'REAL integer',\n    real_time BIGINT\n);\n\
             ALTER TABLE t ADD COLUMN e BIGINT;"
        );
        // Only a table's own parenthesis: not a reference's, nor an index's.
        let sqlite = "CREATE TABLE IF NOT EXISTS u (\n    r TEXT REFERENCES runs(id)\n);\n\
                      CREATE INDEX i ON u (r);";
        assert_eq!(
            to_postgres(sqlite),
            "CREATE TABLE IF NOT EXISTS u (\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY,\n    \
             r TEXT REFERENCES runs(id)\n);\nCREATE INDEX i ON u (r);"
        );
    }

    /// A store at v24 with an explanation: the twins' run it names becomes kind `explain`,
    /// linked to the explained run; the explained run stays a lab's run.
    #[test]
    fn the_twins_runs_of_earlier_explanations_are_marked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let old = rusqlite::Connection::open(&path).unwrap();
        for sql in &MIGRATIONS[..24] {
            old.execute_batch(sql).unwrap();
        }
        // r2, the twins' run of r1, is the newest.
        let run = |id: &str, day: u32| {
            format!(
                "INSERT INTO runs (id, lab, lab_text, started, host_cpu_model, host_cores,
                 host_memory_bytes, host_kernel, dbdelta_version)
                 VALUES ('{id}', 'lab', '', '2026-11-{day}T00:00:00Z', 'cpu', 2, 1, 'k', '0.1.0');"
            )
        };
        let json = r#"{"base":"base","ratio":1.1,"twin_run":"r2","twins":3}"#;
        old.execute_batch(&format!(
            "{}{}{}INSERT INTO explanations VALUES ('r1', 'small', 'sysbench', 'point-query', 1, 0, '{json}');
             PRAGMA user_version = 24;",
            run("r1", 21),
            run("r2", 23),
            run("r3", 22),
        ))
        .unwrap();
        drop(old);
        let store = crate::store::Store::open(&path).unwrap();
        assert_eq!(store.run_explained("r2").unwrap().as_deref(), Some("r1"));
        assert_eq!(store.run_explained("r1").unwrap(), None);
        assert_eq!(store.latest_run().unwrap().as_deref(), Some("r3"));
        let listed: Vec<String> = store
            .list_runs()
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(listed, ["r1", "r3"]);
    }

    #[test]
    fn every_migration_translates_and_names_its_tables() {
        for sql in MIGRATIONS {
            let pg = to_postgres(sql);
            for sqlite_only in [" INTEGER", " REAL", " BLOB"] {
                assert!(!pg.contains(sqlite_only), "{sqlite_only} left in {pg}");
            }
            assert_eq!(
                pg.matches("CREATE TABLE").count(),
                pg.matches(PG_ROWID).count()
            );
        }
        let t = tables();
        assert_eq!(t[0], "runs");
        for name in [
            "targets",
            "loads",
            "measurements",
            "series",
            "step_ops",
            "profiles",
            "step_functions",
            "explanations",
        ] {
            assert!(t.contains(&name), "{name} in {t:?}");
        }
    }
}
