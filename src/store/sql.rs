//! The small SQL interface the store is written against, once for every backend.
//!
//! Owns [`Db`] (execute, query, several statements at once, transactions, the schema version),
//! the values that cross it ([`Value`]: null, integer, real, text, blob, as SQLite has them),
//! rows read back ([`Row`], with typed getters), the transaction guard [`Tx`] (rolled back
//! unless committed) and the statement text both SQLite and PostgreSQL accept for an insert or
//! an upsert. Statements use SQLite's numbered placeholders `?1`, `?2`, …; a backend rewrites
//! them when its server wants another spelling. Must not: know a table of the schema, or a
//! backend's client library.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use anyhow::{Result, anyhow};

/// A value sent to or read from the store.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Value {
    /// The kind's name, for messages (never the value: it may be a whole profile).
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Int(_) => "integer",
            Value::Real(_) => "real",
            Value::Text(_) => "text",
            Value::Blob(_) => "blob",
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Int(v.into())
    }
}

/// Stored as SQLite's signed 64-bit integer (a count past `i64::MAX` wraps, as it always did).
impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::Int(v as i64)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Int(v.into())
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Real(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_string())
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Value {
        Value::Text(v.clone())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}

impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Value {
        Value::Blob(v)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// A Rust type a stored value converts to.
pub trait FromValue: Sized {
    fn from_value(v: &Value) -> Result<Self, String>;
}

fn wrong(v: &Value, want: &str) -> String {
    format!("{} where {want} was expected", v.kind())
}

impl FromValue for i64 {
    fn from_value(v: &Value) -> Result<i64, String> {
        match v {
            Value::Int(i) => Ok(*i),
            _ => Err(wrong(v, "an integer")),
        }
    }
}

impl FromValue for u64 {
    fn from_value(v: &Value) -> Result<u64, String> {
        i64::from_value(v).map(|i| i as u64)
    }
}

impl FromValue for u32 {
    fn from_value(v: &Value) -> Result<u32, String> {
        let i = i64::from_value(v)?;
        u32::try_from(i).map_err(|_| format!("{i} is out of range for a 32-bit count"))
    }
}

impl FromValue for bool {
    fn from_value(v: &Value) -> Result<bool, String> {
        i64::from_value(v).map(|i| i != 0)
    }
}

/// A real, or an integer SQLite kept for a real column.
impl FromValue for f64 {
    fn from_value(v: &Value) -> Result<f64, String> {
        match v {
            Value::Real(r) => Ok(*r),
            Value::Int(i) => Ok(*i as f64),
            _ => Err(wrong(v, "a number")),
        }
    }
}

impl FromValue for String {
    fn from_value(v: &Value) -> Result<String, String> {
        match v {
            Value::Text(s) => Ok(s.clone()),
            _ => Err(wrong(v, "text")),
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> Result<Option<T>, String> {
        match v {
            Value::Null => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

/// One row of a query: its columns' names (shared by the rows of one query) and values.
#[derive(Debug, Clone)]
pub struct Row {
    columns: Arc<[String]>,
    values: Vec<Value>,
}

impl Row {
    pub fn new(columns: Arc<[String]>, values: Vec<Value>) -> Row {
        Row { columns, values }
    }

    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// The value of column `i` (0-based).
    pub fn get<T: FromValue>(&self, i: usize) -> Result<T> {
        let v = self
            .values
            .get(i)
            .ok_or_else(|| anyhow!("the query has no column {i}"))?;
        T::from_value(v).map_err(|e| anyhow!("column {}: {e}", self.columns[i]))
    }

    /// The value of the column named `name`.
    pub fn col<T: FromValue>(&self, name: &str) -> Result<T> {
        let i = self
            .columns
            .iter()
            .position(|c| c == name)
            .ok_or_else(|| anyhow!("the store has no column {name}"))?;
        self.get(i)
    }
}

/// How a transaction holds the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lock {
    /// An ordinary transaction: concurrent writers of other rows proceed.
    Shared,
    /// One at a time across every process using the store (schema migrations).
    Exclusive,
}

/// A connection to a store's database. Statements take `?N` placeholders and `params[N - 1]`.
pub trait Db: Send {
    /// Run one statement; the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64>;
    /// Run one query; its rows.
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>>;
    /// Run several statements without parameters, already in this backend's dialect.
    fn batch(&mut self, sql: &str) -> Result<()>;
    /// Start a transaction holding the store as `lock` says.
    fn begin(&mut self, lock: Lock) -> Result<()>;
    /// The schema version recorded in the store (0: none yet); inside an exclusive transaction.
    fn schema_version(&mut self) -> Result<i64>;
    fn set_schema_version(&mut self, version: i64) -> Result<()>;
    /// A migration (SQLite's DDL) in this backend's dialect.
    fn dialect(&self, migration: &str) -> String;

    /// Hold the lock named `key` for as long as this connection lives, unless another
    /// connection holds it (then false). Only a store shared by hosts needs one (PostgreSQL: a
    /// session advisory lock); a store file lives on one host, and the work directory's lock
    /// already keeps one owner per run there.
    fn try_hold(&mut self, key: i32) -> Result<bool> {
        let _ = key;
        Ok(true)
    }

    fn commit(&mut self) -> Result<()> {
        self.batch("COMMIT")
    }

    fn rollback(&mut self) -> Result<()> {
        self.batch("ROLLBACK")
    }
}

/// An open transaction; rolled back when dropped without [`Tx::commit`].
pub struct Tx<'a> {
    db: &'a mut dyn Db,
    open: bool,
}

impl<'a> Tx<'a> {
    pub fn begin(db: &'a mut dyn Db, lock: Lock) -> Result<Tx<'a>> {
        db.begin(lock)?;
        Ok(Tx { db, open: true })
    }

    pub fn commit(mut self) -> Result<()> {
        self.open = false;
        self.db.commit()
    }
}

impl<'a> Deref for Tx<'a> {
    type Target = dyn Db + 'a;
    fn deref(&self) -> &Self::Target {
        self.db
    }
}

impl DerefMut for Tx<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.db
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.db.rollback();
        }
    }
}

/// `INSERT INTO table (columns) VALUES (?1, …)`; with `keys`, an upsert: a row with the same
/// key is replaced (`ON CONFLICT (keys) DO UPDATE`, which SQLite and PostgreSQL both run).
pub fn insert_sql(table: &str, columns: &[&str], keys: Option<&[&str]>) -> String {
    let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
    let mut sql = format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        columns.join(", "),
        marks.join(", ")
    );
    if let Some(keys) = keys {
        let set: Vec<String> = columns
            .iter()
            .filter(|c| !keys.contains(c))
            .map(|c| format!("{c} = excluded.{c}"))
            .collect();
        sql.push_str(&format!(
            " ON CONFLICT ({}) DO UPDATE SET {}",
            keys.join(", "),
            set.join(", ")
        ));
    }
    sql
}

/// Write one row given as (column, value) pairs, replacing the row with the same `keys`.
pub fn upsert(db: &mut dyn Db, table: &str, keys: &[&str], row: Vec<(&str, Value)>) -> Result<()> {
    let (columns, values): (Vec<&str>, Vec<Value>) = row.into_iter().unzip();
    db.execute(&insert_sql(table, &columns, Some(keys)), &values)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_and_upsert_text() {
        assert_eq!(
            insert_sql("t", &["a", "b"], None),
            "INSERT INTO t (a, b) VALUES (?1, ?2)"
        );
        assert_eq!(
            insert_sql("t", &["k", "a", "b"], Some(&["k"])),
            "INSERT INTO t (k, a, b) VALUES (?1, ?2, ?3) ON CONFLICT (k) DO UPDATE SET \
             a = excluded.a, b = excluded.b"
        );
    }

    #[test]
    fn typed_getters_say_which_column_is_wrong() {
        let cols: Arc<[String]> = vec!["n".to_string(), "x".to_string()].into();
        let r = Row::new(cols, vec![Value::Int(3), Value::Null]);
        assert_eq!(r.col::<u32>("n").unwrap(), 3);
        assert_eq!(r.col::<f64>("n").unwrap(), 3.0);
        assert!(r.col::<bool>("n").unwrap());
        assert_eq!(r.col::<Option<String>>("x").unwrap(), None);
        let e = r.col::<String>("n").unwrap_err().to_string();
        assert_eq!(e, "column n: integer where text was expected");
        assert!(r.col::<i64>("nope").is_err());
        assert_eq!(Value::from(Some(u64::MAX)), Value::Int(-1));
        assert_eq!(Value::from(None::<f64>), Value::Null);
    }
}
