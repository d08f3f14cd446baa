//! SQL helpers every suite's statements share: a dialect's placeholders and MySQL's table and
//! index options.
//!
//! Owns text only. Must not: know any suite's tables or statements, or execute anything.

use crate::engine::{Dialect, TableDdl};

/// The `i`-th placeholder (1-based): `?` (SQLite, MySQL) or `$i` (Postgres).
pub(crate) fn mark(dialect: Dialect, i: usize) -> String {
    match dialect {
        Dialect::Postgres => format!("${i}"),
        Dialect::Sqlite | Dialect::Mysql => "?".to_string(),
    }
}

/// MySQL's `CREATE TABLE tab (columns, PRIMARY KEY (pk) <index options>) ENGINE=<engine>
/// <table options>`, with a target's table DDL.
pub(crate) fn mysql_table(tab: &str, columns: &str, pk: &str, ddl: &TableDdl) -> String {
    let mut sql = format!(
        "CREATE TABLE {tab} ({columns}, PRIMARY KEY ({pk}){})",
        suffix(ddl.index_options.as_deref())
    );
    if let Some(e) = &ddl.engine {
        sql.push_str(&format!(" ENGINE={e}"));
    }
    sql.push_str(&suffix(ddl.table_options.as_deref()));
    sql
}

/// ` <options>`, or nothing.
pub(crate) fn suffix(options: Option<&str>) -> String {
    options.map(|o| format!(" {o}")).unwrap_or_default()
}
