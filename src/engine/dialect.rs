//! SQL dialects ([`Dialect`]: which SQL an engine speaks, and what every suite's statements
//! share: placeholders) and what a target adds to a suite's `CREATE` statements ([`TableDdl`]:
//! MySQL's storage engine and table and index options). Each suite keeps its own statements
//! per dialect in one table of its own. Must not: know a suite's tables or statements.

use serde::{Deserialize, Serialize};

/// SQL dialects: the workloads keep one SQL text per dialect for every statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    Sqlite,
    Postgres,
    Mysql,
}

/// What a target adds to the suite's `CREATE TABLE` and `CREATE INDEX` statements (MySQL and
/// MariaDB; the other dialects take none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDdl {
    /// `ENGINE=` of every table (`InnoDB`, `ROCKSDB`); `None`: the server's default.
    pub engine: Option<String>,
    /// Table options after the column list, e.g. `ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8`.
    pub table_options: Option<String>,
    /// Index options after each index's key list, e.g. `COMMENT 'cfname=cf1'` (a MyRocks column
    /// family).
    pub index_options: Option<String>,
}

impl Dialect {
    /// The `i`-th placeholder (1-based): `$i` (PostgreSQL) or `?` (SQLite, MySQL).
    pub fn placeholder(self, i: usize) -> String {
        match self {
            Dialect::Postgres => format!("${i}"),
            Dialect::Sqlite | Dialect::Mysql => "?".to_string(),
        }
    }

    /// Placeholders `first ..= first + n - 1`, comma-separated.
    pub fn placeholders(self, first: usize, n: usize) -> String {
        (first..first + n)
            .map(|i| self.placeholder(i))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl TableDdl {
    /// `CREATE TABLE tab (columns, PRIMARY KEY (pk) <index options>) ENGINE=<engine> <table
    /// options>`: MySQL's form, with the target's options.
    pub fn create_table(&self, tab: &str, columns: &str, pk: &str) -> String {
        format!(
            "CREATE TABLE {tab} ({columns}, PRIMARY KEY ({pk}){}){}{}",
            self.index_suffix(),
            self.engine_clause(),
            self.table_suffix()
        )
    }

    /// ` ENGINE=<engine>`, or nothing (the server's default).
    pub fn engine_clause(&self) -> String {
        self.engine
            .as_ref()
            .map(|e| format!(" ENGINE={e}"))
            .unwrap_or_default()
    }

    /// ` <table options>` after a table's column list, or nothing.
    pub fn table_suffix(&self) -> String {
        suffix(self.table_options.as_deref())
    }

    /// ` <index options>` after an index's key list, or nothing.
    pub fn index_suffix(&self) -> String {
        suffix(self.index_options.as_deref())
    }

    /// True when the tables are MyRocks tables.
    pub fn rocksdb(&self) -> bool {
        self.engine
            .as_deref()
            .is_some_and(|e| e.eq_ignore_ascii_case("rocksdb"))
    }
}

/// ` <options>`, or nothing.
fn suffix(options: Option<&str>) -> String {
    options.map(|o| format!(" {o}")).unwrap_or_default()
}
