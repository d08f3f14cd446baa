//! Every SQL statement the Insert Benchmark suite sends, for every dialect, in one place.
//!
//! The texts are the reference's (mdcallag's `iibench.py`; docs/workloads.md, The Insert
//! Benchmark), with each dialect's placeholders and types: the `piN` tables, the three secondary
//! indexes of `l.x`, the multi-row insert, the delete of the oldest rows, the three covering-index
//! range queries (`FORCE INDEX` on MySQL) and the 10-id point query. Shared helpers (placeholders,
//! a target's table options) are `engine::dialect`'s; what differs between dialects is one
//! table, `DIALECTS`. The suite's executors (`steps.rs`) send
//! these. Must not: execute anything.

use crate::engine::{Dialect, TableDdl};

/// Rows a range query returns at most (`rows_per_query` of the reference).
pub const RANGE_LIMIT: u32 = 10;
/// Ids per point query (`--query_pk_only`).
pub const POINT_IDS: u32 = 10;
/// Columns of one inserted row, in the insert statement's order.
pub const INSERT_COLUMNS: &[&str] = &[
    "dateandtime",
    "cashregisterid",
    "customerid",
    "productid",
    "price",
    "data",
];

/// `pi1`, `pi2`, ...: one table per client.
pub fn table(t: u32) -> String {
    format!("pi{t}")
}

/// The secondary indexes of `l.x` (name suffix, key columns), in the reference's order.
pub const INDEXES: [(&str, &str); 3] = [
    ("marketsegment", "productid, customerid, price"),
    ("registersegment", "cashregisterid, customerid, price"),
    ("pdc", "price, dateandtime, customerid"),
];

/// The range queries of `qr*` steps: (index suffix, select list = key columns, the column the
/// range starts on, comparison, that column's domain `[0, n)`).
pub const RANGES: [(&str, &str, &str, &str, u32); 3] = [
    (
        "marketsegment",
        "productid, customerid, price",
        "productid",
        ">=",
        10_000,
    ),
    (
        "registersegment",
        "cashregisterid, customerid, price",
        "cashregisterid",
        ">",
        1_000,
    ),
    ("pdc", "price, dateandtime, customerid", "price", ">=", 500),
];

/// How a dialect adds the secondary indexes after the load.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AddIndexes {
    /// One `CREATE INDEX` per index.
    CreateEach,
    /// `ALTER TABLE ... ADD INDEX` with the target's index options: all three in one
    /// statement (InnoDB), or one statement per index when the tables are MyRocks'.
    Alter,
}

/// What differs between the dialects in this suite's SQL, one row each.
struct DialectSql {
    dialect: Dialect,
    /// The statements that create the table, from its name, the columns after `dateandtime`
    /// and the target's DDL.
    create_table: fn(&str, &str, &TableDdl) -> Vec<String>,
    add_indexes: AddIndexes,
    /// `DELETE ... ORDER BY ... LIMIT` is SQL the dialect takes (else `IN` over a limited
    /// subquery).
    delete_limit: bool,
    /// Range queries name their index (`FORCE INDEX`).
    force_index: bool,
}

/// The suite's dialect table.
const DIALECTS: [DialectSql; 3] = [
    // AUTOINCREMENT: ids never reused, as MySQL's auto-increment and PostgreSQL's sequence
    // (without it SQLite restarts at 1 once the deleter empties the table).
    DialectSql {
        dialect: Dialect::Sqlite,
        create_table: |tab, cols, _| {
            vec![format!(
                "CREATE TABLE {tab} (transactionid INTEGER PRIMARY KEY AUTOINCREMENT, \
                 dateandtime DATETIME, {cols})"
            )]
        },
        add_indexes: AddIndexes::CreateEach,
        delete_limit: false,
        force_index: false,
    },
    // The reference's sequence cache.
    DialectSql {
        dialect: Dialect::Postgres,
        create_table: |tab, cols, _| {
            vec![
                format!(
                    "CREATE TABLE {tab} (transactionid BIGSERIAL PRIMARY KEY, \
                     dateandtime TIMESTAMP WITHOUT TIME ZONE, {cols})"
                ),
                format!("ALTER SEQUENCE {tab}_transactionid_seq CACHE 1000"),
            ]
        },
        add_indexes: AddIndexes::CreateEach,
        delete_limit: false,
        force_index: false,
    },
    DialectSql {
        dialect: Dialect::Mysql,
        create_table: |tab, cols, ddl| {
            vec![ddl.create_table(
                tab,
                &format!(
                    "transactionid BIGINT NOT NULL AUTO_INCREMENT, dateandtime DATETIME, {cols}"
                ),
                "transactionid",
            )]
        },
        add_indexes: AddIndexes::Alter,
        delete_limit: true,
        force_index: true,
    },
];

fn dialect_sql(dialect: Dialect) -> &'static DialectSql {
    (DIALECTS.iter())
        .find(|d| d.dialect == dialect)
        .expect("the dialect table has a row per dialect")
}

/// The statements that create table `t` (docs/workloads.md, The Insert Benchmark), with a MySQL
/// target's storage engine, table options and index options. PostgreSQL gets the reference's
/// sequence cache.
pub fn create_table(dialect: Dialect, t: u32, ddl: &TableDdl) -> Vec<String> {
    let cols = "cashregisterid INT NOT NULL, customerid INT NOT NULL, productid INT NOT NULL, \
                price INT NOT NULL, data VARCHAR(4000)";
    (dialect_sql(dialect).create_table)(&table(t), cols, ddl)
}

/// The statements of `l.x` on table `t`: InnoDB adds the three indexes in one `ALTER TABLE`,
/// MyRocks one `ALTER TABLE` per index, PostgreSQL and SQLite three `CREATE INDEX`
/// (docs/workloads.md, The Insert Benchmark).
pub fn create_indexes(dialect: Dialect, t: u32, ddl: &TableDdl) -> Vec<String> {
    let tab = table(t);
    let add = |(name, cols): (&str, &str)| {
        format!("ADD INDEX {tab}_{name} ({cols}){}", ddl.index_suffix())
    };
    match dialect_sql(dialect).add_indexes {
        AddIndexes::Alter if ddl.rocksdb() => INDEXES
            .iter()
            .map(|i| format!("ALTER TABLE {tab} {}", add(*i)))
            .collect(),
        AddIndexes::Alter => vec![format!(
            "ALTER TABLE {tab} {}",
            INDEXES
                .iter()
                .map(|i| add(*i))
                .collect::<Vec<_>>()
                .join(", ")
        )],
        AddIndexes::CreateEach => INDEXES
            .iter()
            .map(|(name, cols)| format!("CREATE INDEX {tab}_{name} ON {tab} ({cols})"))
            .collect(),
    }
}

/// `INSERT INTO piN (dateandtime, ..., data) VALUES (...), (...)` with `rows` rows: one
/// statement, one transaction (autocommit), ids from the auto-increment or sequence.
pub fn insert(dialect: Dialect, t: u32, rows: u32) -> String {
    let per = INSERT_COLUMNS.len();
    let values: Vec<String> = (0..rows as usize)
        .map(|r| {
            let marks: Vec<String> = (1..=per)
                .map(|c| dialect.placeholder(r * per + c))
                .collect();
            format!("({})", marks.join(", "))
        })
        .collect();
    format!(
        "INSERT INTO {} ({}) VALUES {}",
        table(t),
        INSERT_COLUMNS.join(", "),
        values.join(", ")
    )
}

/// Delete the `rows` oldest rows from id `?` on (docs/workloads.md, The Insert Benchmark): MySQL's
/// `ORDER BY ... LIMIT`; PostgreSQL's (and SQLite's, which has no `DELETE ... LIMIT` by default)
/// `IN` over a limited subquery.
pub fn delete(dialect: Dialect, t: u32, rows: u32) -> String {
    let tab = table(t);
    let p = dialect.placeholder(1);
    match dialect_sql(dialect).delete_limit {
        true => format!(
            "DELETE FROM {tab} WHERE transactionid >= {p} ORDER BY transactionid ASC LIMIT {rows}"
        ),
        false => format!(
            "DELETE FROM {tab} WHERE transactionid IN (SELECT transactionid FROM {tab} \
             WHERE transactionid >= {p} ORDER BY transactionid ASC LIMIT {rows})"
        ),
    }
}

/// Range query `i` (0..3) of the `qr*` steps over its covering index, `LIMIT 10`; MySQL names
/// the index with `FORCE INDEX`.
pub fn range_query(dialect: Dialect, t: u32, i: usize) -> String {
    let tab = table(t);
    let (index, cols, col, cmp, _) = RANGES[i];
    let force = match dialect_sql(dialect).force_index {
        true => format!(" FORCE INDEX ({tab}_{index})"),
        false => String::new(),
    };
    format!(
        "SELECT {cols} FROM {tab}{force} WHERE ({col} {cmp} {}) ORDER BY {cols} LIMIT {RANGE_LIMIT}",
        dialect.placeholder(1)
    )
}

/// The point query of the `qp*` steps: 10 ids of the primary key.
pub fn point_query(dialect: Dialect, t: u32) -> String {
    let marks: Vec<String> = (1..=POINT_IDS as usize)
        .map(|i| dialect.placeholder(i))
        .collect();
    format!(
        "SELECT transactionid, productid, data FROM {} WHERE transactionid IN ({})",
        table(t),
        marks.join(", ")
    )
}

/// The smallest and largest id, read when a deleter or a point-query connection starts and
/// every 100 point queries (the reference's `min_trxid`/`max_trxid`).
pub fn min_id(t: u32) -> String {
    format!("SELECT MIN(transactionid) FROM {}", table(t))
}

pub fn max_id(t: u32) -> String {
    format!("SELECT MAX(transactionid) FROM {}", table(t))
}

/// Rows in table `t`, counted after every step (not timed).
pub fn count(t: u32) -> String {
    format!("SELECT COUNT(*) FROM {}", table(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_per_dialect() {
        let plain = TableDdl::default();
        assert_eq!(
            create_table(Dialect::Postgres, 1, &plain),
            [
                "CREATE TABLE pi1 (transactionid BIGSERIAL PRIMARY KEY, dateandtime TIMESTAMP WITHOUT TIME ZONE, \
                 cashregisterid INT NOT NULL, customerid INT NOT NULL, productid INT NOT NULL, price INT NOT NULL, \
                 data VARCHAR(4000))",
                "ALTER SEQUENCE pi1_transactionid_seq CACHE 1000"
            ]
        );
        let rocks = TableDdl {
            engine: Some("ROCKSDB".into()),
            table_options: None,
            index_options: Some("COMMENT 'cfname=cf1'".into()),
        };
        let t = &create_table(Dialect::Mysql, 2, &rocks)[0];
        assert!(t.starts_with("CREATE TABLE pi2 (transactionid BIGINT NOT NULL AUTO_INCREMENT"));
        assert!(t.ends_with("PRIMARY KEY (transactionid) COMMENT 'cfname=cf1') ENGINE=ROCKSDB"));
        assert_eq!(
            create_indexes(Dialect::Mysql, 1, &rocks).len(),
            3,
            "MyRocks: one ALTER per index"
        );
        let innodb = create_indexes(Dialect::Mysql, 1, &plain);
        assert_eq!(
            innodb,
            [
                "ALTER TABLE pi1 ADD INDEX pi1_marketsegment (productid, customerid, price), \
              ADD INDEX pi1_registersegment (cashregisterid, customerid, price), \
              ADD INDEX pi1_pdc (price, dateandtime, customerid)"
            ]
        );
        assert_eq!(
            create_indexes(Dialect::Postgres, 3, &plain)[2],
            "CREATE INDEX pi3_pdc ON pi3 (price, dateandtime, customerid)"
        );
    }

    #[test]
    fn statements_per_dialect() {
        assert_eq!(
            insert(Dialect::Postgres, 1, 2),
            "INSERT INTO pi1 (dateandtime, cashregisterid, customerid, productid, price, data) \
             VALUES ($1, $2, $3, $4, $5, $6), ($7, $8, $9, $10, $11, $12)"
        );
        assert_eq!(insert(Dialect::Mysql, 1, 100).matches('?').count(), 600);
        assert_eq!(
            delete(Dialect::Mysql, 1, 50),
            "DELETE FROM pi1 WHERE transactionid >= ? ORDER BY transactionid ASC LIMIT 50"
        );
        assert_eq!(
            delete(Dialect::Postgres, 2, 5),
            "DELETE FROM pi2 WHERE transactionid IN (SELECT transactionid FROM pi2 WHERE \
             transactionid >= $1 ORDER BY transactionid ASC LIMIT 5)"
        );
        assert_eq!(
            range_query(Dialect::Mysql, 1, 0),
            "SELECT productid, customerid, price FROM pi1 FORCE INDEX (pi1_marketsegment) \
             WHERE (productid >= ?) ORDER BY productid, customerid, price LIMIT 10"
        );
        assert_eq!(
            range_query(Dialect::Postgres, 1, 1),
            "SELECT cashregisterid, customerid, price FROM pi1 WHERE (cashregisterid > $1) \
             ORDER BY cashregisterid, customerid, price LIMIT 10"
        );
        assert_eq!(
            point_query(Dialect::Sqlite, 1),
            "SELECT transactionid, productid, data FROM pi1 WHERE transactionid IN \
             (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        );
    }
}
