//! Copying one run from a store to another (`dbdelta store push`), whatever their backends.
//!
//! Owns reading every table's rows of a run (the tables [`migrations::tables`] names: `runs`
//! by `id`, every other by `run_id`) in insertion order, and writing them into the
//! destination in one transaction, so the run is there whole or not at all. Must not: decide
//! whether the run may be copied (the facade refuses a run the destination already holds).

use anyhow::{Context, Result};

use super::migrations;
use super::sql::{Db, Lock, Row, Tx, insert_sql};

/// Copy the run `run_id` from `from` into `to`; the number of rows copied.
pub fn copy_run(from: &mut dyn Db, to: &mut dyn Db, run_id: &str) -> Result<u64> {
    let mut tables = Vec::new();
    for table in migrations::tables() {
        let key = if table == "runs" { "id" } else { "run_id" };
        let sql = format!("SELECT * FROM {table} WHERE {key} = ?1 ORDER BY rowid");
        let rows = from
            .query(&sql, &[run_id.into()])
            .with_context(|| format!("reading run {run_id}'s {table}"))?;
        tables.push((table, rows));
    }
    let mut tx = Tx::begin(to, Lock::Shared)?;
    let mut copied = 0;
    for (table, rows) in &tables {
        for row in rows {
            insert(&mut *tx, table, row)
                .with_context(|| format!("writing run {run_id}'s {table}"))?;
            copied += 1;
        }
    }
    tx.commit()?;
    Ok(copied)
}

/// One row into `table`, every column but `rowid` (each store numbers its own rows).
fn insert(db: &mut dyn Db, table: &str, row: &Row) -> Result<()> {
    let (columns, values): (Vec<&str>, Vec<_>) = row
        .columns()
        .iter()
        .zip(row.values())
        .filter(|(c, _)| c.as_str() != "rowid")
        .map(|(c, v)| (c.as_str(), v.clone()))
        .unzip();
    db.execute(&insert_sql(table, &columns, None), &values)?;
    Ok(())
}
