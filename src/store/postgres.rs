//! The PostgreSQL backend of the store: a shared database named by a `postgres://` URL, so
//! several machines or concurrent runs keep their results in one place.
//!
//! Owns connecting (the URL grammar of `connect` targets, `engine::connect`; a malformed URL is
//! bad input, an unreachable server one line naming the URL without its password), the
//! rewrite of `?N` placeholders to `$N`, sending and reading [`Value`]s in the binary format,
//! prepared statements kept per connection, migrations under `pg_advisory_xact_lock` with the
//! version in the one-row table `dbdelta_schema`, and the DDL translation
//! ([`super::migrations::to_postgres`]). Must not: know the schema's tables, or print a
//! password.

use std::collections::HashMap;
use std::error::Error;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, NoTls, Statement};

use super::migrations::to_postgres;
use super::sql::{Db, Lock, Row, Value};
use crate::engine::connect::{Address, ConnectUrl};
use crate::error::InputError;

/// The advisory lock key migrations hold ("dbdelta" in ASCII).
const MIGRATION_LOCK: i64 = 0x0064_6264_656c_7461;
/// The first key of the runs' advisory locks ("dbdr"); the second is the run's
/// ([`super::Store::hold_run`]).
const RUN_LOCKS: i32 = 0x6462_6472;

/// Whether a `--store` value names a PostgreSQL database rather than a file.
pub fn is_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

pub struct Postgres {
    client: Client,
    statements: HashMap<String, Statement>,
}

impl Postgres {
    /// Connect to the database `url` names; `flag` names it in messages. Returns the backend
    /// and the URL as shown (its password replaced by `***`).
    pub fn connect(url: &str, flag: &str) -> Result<(Postgres, String)> {
        let parsed = ConnectUrl::parse_as(url, flag).map_err(InputError::new)?;
        debug_assert_eq!(parsed.engine.name(), "postgres");
        let shown = parsed.shown();
        let mut config = postgres::Config::new();
        config
            .user(&parsed.user)
            .dbname(&parsed.database)
            .port(parsed.port)
            .application_name("dbdelta")
            .connect_timeout(Duration::from_secs(10));
        if let Some(pw) = &parsed.password {
            config.password(pw);
        }
        match &parsed.address {
            Address::Unix(dir) => config.host_path(dir),
            Address::Tcp(host) => config.host(host),
        };
        // The client's error names neither the URL nor the password; its causes (the OS
        // error, the server's message) are in its source chain, which `{:#}` prints.
        let client = config
            .connect(NoTls)
            .with_context(|| format!("{flag} {shown}: cannot connect to the results store"))?;
        let db = Postgres {
            client,
            statements: HashMap::new(),
        };
        Ok((db, shown))
    }

    /// Whether the database holds a dbdelta store (its version table exists).
    pub fn has_store(&mut self) -> Result<bool> {
        let row = self
            .client
            .query_one("SELECT to_regclass('dbdelta_schema') IS NOT NULL", &[])?;
        Ok(row.get(0))
    }

    /// The server's prepared statement for `sql` (in the store's `?N` spelling).
    fn statement(&mut self, sql: &str) -> Result<Statement> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self
            .client
            .prepare(&numbered_placeholders(sql))
            .with_context(|| format!("preparing {}", first_line(sql)))?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }
}

fn first_line(sql: &str) -> &str {
    sql.trim().lines().next().unwrap_or("")
}

/// SQLite's `?N` placeholders as PostgreSQL's `$N` (never inside a quoted literal or name).
pub fn numbered_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '?') if chars.peek().is_some_and(char::is_ascii_digit) => {
                out.push('$');
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

impl ToSql for Value {
    /// Whatever type the server decided for the parameter, as long as the value fits it: an
    /// integer where a double is expected (SQLite keeps whole reals as integers), a null
    /// anywhere.
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(i) if *ty == Type::INT8 => i.to_sql(ty, out),
            Value::Int(i) if *ty == Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
            Value::Int(i) if *ty == Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
            Value::Int(i) if *ty == Type::BOOL => (*i != 0).to_sql(ty, out),
            Value::Int(i) if *ty == Type::FLOAT8 => (*i as f64).to_sql(ty, out),
            Value::Real(r) if *ty == Type::FLOAT8 => r.to_sql(ty, out),
            Value::Real(r) if *ty == Type::FLOAT4 => (*r as f32).to_sql(ty, out),
            Value::Text(s) if <&str as ToSql>::accepts(ty) => s.as_str().to_sql(ty, out),
            Value::Blob(b) if *ty == Type::BYTEA => b.as_slice().to_sql(ty, out),
            v => Err(format!("cannot store a {} value in a {ty} column", v.kind()).into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// Column `i` of a row the server sent, by its type.
fn value_at(row: &postgres::Row, i: usize) -> Result<Value> {
    let ty = row.columns()[i].type_();
    let v = if *ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?.into()
    } else if *ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?.map(i64::from).into()
    } else if *ty == Type::INT2 {
        row.try_get::<_, Option<i16>>(i)?.map(i64::from).into()
    } else if *ty == Type::BOOL {
        row.try_get::<_, Option<bool>>(i)?.into()
    } else if *ty == Type::FLOAT8 {
        row.try_get::<_, Option<f64>>(i)?.into()
    } else if *ty == Type::FLOAT4 {
        row.try_get::<_, Option<f32>>(i)?.map(f64::from).into()
    } else if *ty == Type::BYTEA {
        row.try_get::<_, Option<Vec<u8>>>(i)?.into()
    } else {
        row.try_get::<_, Option<String>>(i)
            .with_context(|| format!("column {}", row.columns()[i].name()))?
            .into()
    };
    Ok(v)
}

impl Db for Postgres {
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64> {
        let stmt = self.statement(sql)?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        self.client
            .execute(&stmt, &refs)
            .with_context(|| first_line(sql).to_string())
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        let stmt = self.statement(sql)?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
        let rows = self
            .client
            .query(&stmt, &refs)
            .with_context(|| first_line(sql).to_string())?;
        let columns: std::sync::Arc<[String]> = stmt
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        rows.iter()
            .map(|r| {
                let values = (0..columns.len())
                    .map(|i| value_at(r, i))
                    .collect::<Result<_>>()?;
                Ok(Row::new(columns.clone(), values))
            })
            .collect()
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        Ok(self.client.batch_execute(sql)?)
    }

    /// An exclusive transaction holds the store's advisory lock until it ends; the lock is
    /// per database, so stores in other databases of the server do not wait.
    fn begin(&mut self, lock: Lock) -> Result<()> {
        self.client.batch_execute("BEGIN")?;
        if lock == Lock::Exclusive {
            self.client
                .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        }
        Ok(())
    }

    /// A session advisory lock in the two-key space (`RUN_LOCKS`, `key`), apart from the
    /// one-key migration lock; it goes with the connection, however dbdelta ends.
    fn try_hold(&mut self, key: i32) -> Result<bool> {
        let row = self
            .client
            .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&RUN_LOCKS, &key])?;
        Ok(row.get(0))
    }

    fn schema_version(&mut self) -> Result<i64> {
        self.client.batch_execute(
            "CREATE TABLE IF NOT EXISTS dbdelta_schema (version BIGINT NOT NULL);
             INSERT INTO dbdelta_schema (version)
                SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM dbdelta_schema)",
        )?;
        let row = self
            .client
            .query_one("SELECT version FROM dbdelta_schema", &[])?;
        Ok(row.get(0))
    }

    fn set_schema_version(&mut self, version: i64) -> Result<()> {
        self.client
            .execute("UPDATE dbdelta_schema SET version = $1", &[&version])?;
        Ok(())
    }

    fn dialect(&self, migration: &str) -> String {
        to_postgres(migration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_the_postgresql_way() {
        assert_eq!(
            numbered_placeholders("UPDATE t SET a = ?2 WHERE id = ?1 AND b = ?10"),
            "UPDATE t SET a = $2 WHERE id = $1 AND b = $10"
        );
        assert_eq!(
            numbered_placeholders("SELECT '?1', \"a?2\", ? FROM t WHERE x = ?3"),
            "SELECT '?1', \"a?2\", ? FROM t WHERE x = $3"
        );
    }

    #[test]
    fn urls_are_recognised_and_bad_ones_are_input_errors_without_the_password() {
        assert!(is_url("postgres://u@h/db") && is_url("postgresql:///db"));
        assert!(!is_url("dbdelta.db") && !is_url("mysql://h/db"));
        let e = Postgres::connect("postgres://u:secret@h:notaport/db", "--store")
            .err()
            .unwrap();
        assert!(e.downcast_ref::<InputError>().is_some(), "{e:#}");
        let msg = format!("{e:#}");
        assert!(
            msg.starts_with("--store \"postgres://u:***@h:notaport/db\""),
            "{msg}"
        );
        assert!(!msg.contains("secret"), "{msg}");
    }

    #[test]
    fn an_unreachable_server_is_one_line_without_the_password() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("postgres://u:secret@:5432/db?host={}", dir.path().display());
        let e = Postgres::connect(&url, "--store").err().unwrap();
        assert!(e.downcast_ref::<InputError>().is_none(), "{e:#}");
        let msg = format!("{e:#}");
        assert!(
            msg.contains("u:***@") && msg.contains("cannot connect") && !msg.contains("secret"),
            "{msg}"
        );
        assert!(
            msg.contains("No such file or directory"),
            "the cause: {msg}"
        );
        assert!(!msg.contains('\n'), "{msg}");
    }
}
