//! Fuzz target `store_read`: a corrupted results store, read the way `dbdelta report`,
//! `list`, `compare` and `profile` read it.
//!
//! Each input starts from the same small valid store (`seeds/store.db`: two runs of a real
//! SQLite lab, see docs/fuzzing.md) and describes how to damage a copy of it: values of the
//! tables overwritten with fuzzer-chosen ones through SQL (any type in any column, copied from
//! another row, rows deleted or duplicated with one value changed, tables dropped, the schema
//! version changed), then a few raw bytes of the file overwritten. The copy is then opened with
//! `Store::open_existing`, its runs listed, resolved and loaded, and each loaded run's report
//! built (default base, or a target the input picks), rendered in a format the input picks and
//! its profile files made; the first two runs are compared when the input asks. PNG charts are
//! not drawn (over 10 s an input); the HTML format draws the same charts as SVG.
//! Any error is a fine answer; a panic, abort, running out of memory or time is a bug.
#![no_main]

use std::path::{Path, PathBuf};

use arbitrary::Arbitrary;
use dbdelta::report::{self, Format};
use dbdelta::store::Store;
use libfuzzer_sys::fuzz_target;
use rusqlite::Connection;
use rusqlite::types::Value as SqlValue;

/// The seed store, built into the target so every input starts from the same bytes.
const SEED: &[u8] = include_bytes!("../seeds/store.db");

/// The store's tables, in the order an input's `table` byte picks them: every table the
/// migrations create (the seed is a store of the current schema).
fn tables() -> &'static [&'static str] {
    static TABLES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    TABLES.get_or_init(dbdelta::store::tables)
}

#[derive(Arbitrary, Debug)]
struct Input {
    edits: Vec<Edit>,
    /// (offset, byte): raw damage to the file after the edits; offsets wrap at its length.
    patches: Vec<(u32, u8)>,
    /// Which format to render (one per input: every format of every report made one input
    /// take a second, PNG charts over ten).
    format: u8,
    /// The report's base: `None` the default, else the run's `n`th target (wrapping).
    base: Option<u8>,
    /// Also compare the first two runs.
    compare: bool,
}

#[derive(Arbitrary, Debug)]
enum Edit {
    /// One column of one row (`None`: of every row) set to a value.
    Set {
        table: u8,
        column: u8,
        row: Option<u8>,
        value: Value,
    },
    /// A copy of a row with one column changed (primary keys may then collide: ignored).
    Duplicate {
        table: u8,
        row: u8,
        column: u8,
        value: Value,
    },
    Delete {
        table: u8,
        row: Option<u8>,
    },
    Drop {
        table: u8,
    },
    UserVersion(i64),
}

#[derive(Arbitrary, Debug)]
enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
    /// The same column's value in another row of the table.
    FromRow(u8),
}

fuzz_target!(|input: Input| {
    let path = scratch_store();
    if damage(&path, &input).is_ok() {
        let _ = read(&path, &input);
    }
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
});

/// This process's copy of the seed, in memory-backed storage when there is one.
fn scratch_store() -> PathBuf {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("dbdelta-fuzz-store-{}.db", std::process::id()));
    std::fs::write(&path, SEED).expect("writing the seed store");
    path
}

/// Applies the input's edits (each one that SQLite refuses is skipped), then its patches.
fn damage(path: &Path, input: &Input) -> rusqlite::Result<()> {
    let conn = Connection::open(path)?;
    for edit in input.edits.iter().take(16) {
        let _ = apply(&conn, edit);
    }
    drop(conn);
    if input.patches.is_empty() {
        return Ok(());
    }
    let mut bytes = std::fs::read(path).expect("reading the scratch store");
    for (offset, byte) in input.patches.iter().take(8) {
        let len = bytes.len();
        bytes[*offset as usize % len] = *byte;
    }
    std::fs::write(path, bytes).expect("writing the scratch store");
    Ok(())
}

/// One edit through SQL.
fn apply(conn: &Connection, edit: &Edit) -> rusqlite::Result<()> {
    let table = |t: &u8| tables()[*t as usize % tables().len()];
    match edit {
        Edit::Set {
            table: t,
            column,
            row,
            value,
        } => {
            let (t, col) = (table(t), column_of(conn, table(t), *column)?);
            let v = value_of(conn, t, &col, value)?;
            let sql = match row {
                None => format!("UPDATE {t} SET \"{col}\" = ?1"),
                Some(r) => format!(
                    "UPDATE {t} SET \"{col}\" = ?1 WHERE rowid = ({})",
                    nth_row(t, *r)
                ),
            };
            conn.execute(&sql, [v]).map(drop)
        }
        Edit::Duplicate {
            table: t,
            row,
            column,
            value,
        } => {
            let (t, col) = (table(t), column_of(conn, table(t), *column)?);
            let v = value_of(conn, t, &col, value)?;
            conn.execute_batch(&format!(
                "DROP TABLE IF EXISTS temp.copy;
                 CREATE TEMP TABLE copy AS SELECT * FROM {t} WHERE rowid = ({});",
                nth_row(t, *row)
            ))?;
            conn.execute(&format!("UPDATE temp.copy SET \"{col}\" = ?1"), [v])?;
            conn.execute_batch(&format!(
                "INSERT OR IGNORE INTO {t} SELECT * FROM temp.copy"
            ))
        }
        Edit::Delete {
            table: t,
            row: None,
        } => conn.execute_batch(&format!("DELETE FROM {}", table(t))),
        Edit::Delete {
            table: t,
            row: Some(r),
        } => {
            let t = table(t);
            conn.execute_batch(&format!(
                "DELETE FROM {t} WHERE rowid = ({})",
                nth_row(t, *r)
            ))
        }
        Edit::Drop { table: t } => conn.execute_batch(&format!("DROP TABLE {}", table(t))),
        Edit::UserVersion(v) => conn.pragma_update(None, "user_version", v),
    }
}

/// A subquery for the rowid of the `n`th row (wrapping at the table's row count).
fn nth_row(table: &str, n: u8) -> String {
    format!(
        "SELECT rowid FROM {table} ORDER BY rowid LIMIT 1 OFFSET {n} % max(1, (SELECT count(*) FROM {table}))"
    )
}

/// The table's `n`th column (wrapping).
fn column_of(conn: &Connection, table: &str, n: u8) -> rusqlite::Result<String> {
    let mut stmt = conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    if names.is_empty() {
        return Err(rusqlite::Error::QueryReturnedNoRows);
    }
    Ok(names[n as usize % names.len()].clone())
}

fn value_of(conn: &Connection, table: &str, column: &str, v: &Value) -> rusqlite::Result<SqlValue> {
    Ok(match v {
        Value::Null => SqlValue::Null,
        Value::Int(i) => SqlValue::Integer(*i),
        Value::Real(f) => SqlValue::Real(*f),
        Value::Text(s) => SqlValue::Text(s.clone()),
        Value::Blob(b) => SqlValue::Blob(b.clone()),
        Value::FromRow(r) => conn.query_row(
            &format!(
                "SELECT \"{column}\" FROM {table} WHERE rowid = ({})",
                nth_row(table, *r)
            ),
            [],
            |row| row.get(0),
        )?,
    })
}

/// What the commands that read a store do with it.
fn read(path: &Path, input: &Input) -> anyhow::Result<()> {
    let store = Store::open_existing(path)?;
    let runs = store.list_runs()?;
    for which in [None, Some("previous"), Some("latest")] {
        let _ = store.resolve_run(which);
    }
    let loaded: Vec<_> = runs
        .iter()
        .take(4)
        .filter_map(|r| store.load_run(&r.id).ok())
        .collect();
    let format = FORMATS[input.format as usize % FORMATS.len()];
    for data in &loaded {
        let base = input
            .base
            .and_then(|n| data.targets.get(n as usize % data.targets.len().max(1)))
            .map(|t| t.name.as_str());
        if let Ok(model) = report::build(data, base) {
            render(&model, format);
        }
    }
    if let [a, b, ..] = loaded.as_slice()
        && input.compare
        && let Ok(model) = report::compare(a, b)
    {
        render(&model, format);
    }
    Ok(())
}

const FORMATS: [Format; 5] = [
    Format::Text,
    Format::Markdown,
    Format::Json,
    Format::Csv,
    Format::Html,
];

/// A report in one format, and a profile's files for each profiled step it names.
fn render(model: &report::ReportModel, format: Format) {
    let _ = report::render(model, format, true);
    let steps: Vec<String> = match &model.profiles {
        Some(p) => p.steps.iter().take(2).map(|s| s.step.clone()).collect(),
        None => Vec::new(),
    };
    for step in steps {
        let _ = report::profile::files(model, &step, None);
    }
}
