//! Every LinkBench statement for every dialect (docs/workloads.md, LinkBench): the three tables,
//! the `id1_type` index built after the load, the load's multi-row inserts, the ten request
//! operations' statements and the count-consistency check.
//!
//! Owns SQL text only. Must not: execute anything, or decide which statement runs when (the
//! suite's executors do).

use crate::engine::{Dialect, TableDdl};

/// The link type of link `j` of a node is `LINK_TYPE_BASE + j % link types` (LinkBench's
/// default link type, 123456789, and the next one).
pub const LINK_TYPE_BASE: i64 = 123_456_789;
/// Node type of every node (LinkBench's default node type, 2048).
pub const NODE_TYPE: i64 = 2048;
/// `visibility` of a visible link (LinkBench's VISIBILITY_DEFAULT); hidden is 0.
pub const VISIBLE: i64 = 1;
pub const HIDDEN: i64 = 0;
/// Rows one `getlinklist` returns at most (LinkBench's `range_limit`).
pub const RANGE_LIMIT: u32 = 10_000;
/// Most ids one `getlink` (multiget) asks for.
pub const MULTIGET_MAX: usize = 128;

pub const LINK_COLUMNS: &str = "id1, id2, link_type, visibility, data, time, version";
pub const COUNT_COLUMNS: &str = "id, link_type, count, time, version";
pub const NODE_LOAD_COLUMNS: &str = "id, type, version, time, data";

/// The index `linkbench.index` builds (covering every column `getlinklist` reads).
pub const ID1_TYPE: &str = "id1, link_type, visibility, time, id2, version, data";

/// How a dialect inserts a row or changes the one already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upsert {
    /// `ON DUPLICATE KEY UPDATE`: a changed row counts as 2 affected rows.
    DuplicateKey,
    /// `ON CONFLICT (...) DO UPDATE`: a changed row counts as 1.
    OnConflict,
}

/// What differs between the dialects in this suite's SQL, one row each.
struct DialectSql {
    dialect: Dialect,
    /// The three tables, from the target's DDL and `linktable`'s partitions.
    create_tables: fn(&TableDdl, u32) -> Vec<String>,
    /// Statements before `id1_type` is built (PostgreSQL moves `nodetable`'s sequence past the
    /// loaded ids, which the load wrote explicitly).
    before_index: &'static [&'static str],
    /// `id1_type` takes the target's index options.
    index_options: bool,
    /// A write transaction's first statement.
    begin: &'static str,
    upsert: Upsert,
    /// What locks the row a read inside a write transaction found (SQLite's write lock is the
    /// transaction's already).
    lock_read: &'static str,
    /// `getlinklist` names `id1_type` (`FORCE INDEX`) and pages with `LIMIT offset, n`.
    force_index: bool,
    /// `CONCAT_WS` joins the consistency check's columns (else `||`).
    concat_ws: bool,
}

/// The suite's dialect table.
const DIALECTS: [DialectSql; 3] = [
    DialectSql {
        dialect: Dialect::Sqlite,
        create_tables: sqlite_tables,
        before_index: &[],
        index_options: false,
        // SQLite takes the write lock up front, so two writers never deadlock upgrading a
        // read lock.
        begin: "BEGIN IMMEDIATE",
        upsert: Upsert::OnConflict,
        lock_read: "",
        force_index: false,
        concat_ws: false,
    },
    DialectSql {
        dialect: Dialect::Postgres,
        create_tables: postgres_tables,
        before_index: &["SELECT setval('nodetable_id_seq', (SELECT MAX(id) FROM nodetable))"],
        index_options: false,
        begin: "BEGIN",
        upsert: Upsert::OnConflict,
        lock_read: " FOR UPDATE",
        force_index: false,
        concat_ws: true,
    },
    DialectSql {
        dialect: Dialect::Mysql,
        create_tables: mysql_tables,
        before_index: &[],
        index_options: true,
        begin: "BEGIN",
        upsert: Upsert::DuplicateKey,
        lock_read: " FOR UPDATE",
        force_index: true,
        concat_ws: true,
    },
];

fn dialect_sql(dialect: Dialect) -> &'static DialectSql {
    (DIALECTS.iter())
        .find(|d| d.dialect == dialect)
        .expect("the dialect table has a row per dialect")
}

/// How `dialect` upserts (the request phase reads its affected-row counts by it).
pub fn upsert(dialect: Dialect) -> Upsert {
    dialect_sql(dialect).upsert
}

/// The three tables, without `id1_type` (docs/workloads.md, LinkBench). MySQL tables get the
/// target's engine, table and index options (compression); `partitions` > 0 partitions `linktable`
/// by `KEY(id1)` on MySQL. Latin-1 as LinkBench's DDL declares, so `data` is one byte per character
/// on every version.
pub fn create_tables(dialect: Dialect, ddl: &TableDdl, partitions: u32) -> Vec<String> {
    (dialect_sql(dialect).create_tables)(ddl, partitions)
}

fn postgres_tables(_: &TableDdl, _: u32) -> Vec<String> {
    vec![
        "CREATE TABLE linktable (id1 BIGINT NOT NULL, id2 BIGINT NOT NULL, \
             link_type BIGINT NOT NULL, visibility SMALLINT NOT NULL, data BYTEA NOT NULL, \
             time BIGINT NOT NULL, version INT NOT NULL, PRIMARY KEY (link_type, id1, id2))"
            .into(),
        "CREATE TABLE counttable (id BIGINT NOT NULL, link_type BIGINT NOT NULL, \
             count INT NOT NULL, time BIGINT NOT NULL, version BIGINT NOT NULL, \
             PRIMARY KEY (id, link_type))"
            .into(),
        "CREATE TABLE nodetable (id BIGSERIAL PRIMARY KEY, type INT NOT NULL, \
             version BIGINT NOT NULL, time INT NOT NULL, data BYTEA NOT NULL)"
            .into(),
    ]
}

fn sqlite_tables(_: &TableDdl, _: u32) -> Vec<String> {
    vec![
        "CREATE TABLE linktable (id1 INTEGER NOT NULL, id2 INTEGER NOT NULL, \
             link_type INTEGER NOT NULL, visibility INTEGER NOT NULL, data TEXT NOT NULL, \
             time INTEGER NOT NULL, version INTEGER NOT NULL, \
             PRIMARY KEY (link_type, id1, id2)) WITHOUT ROWID"
            .into(),
        "CREATE TABLE counttable (id INTEGER NOT NULL, link_type INTEGER NOT NULL, \
             count INTEGER NOT NULL, time INTEGER NOT NULL, version INTEGER NOT NULL, \
             PRIMARY KEY (id, link_type)) WITHOUT ROWID"
            .into(),
        "CREATE TABLE nodetable (id INTEGER PRIMARY KEY, type INTEGER NOT NULL, \
             version INTEGER NOT NULL, time INTEGER NOT NULL, data TEXT NOT NULL)"
            .into(),
    ]
}

fn mysql_tables(ddl: &TableDdl, partitions: u32) -> Vec<String> {
    let table = |name: &str, cols: &str, pk: &str, part: &str| {
        let mut sql = format!(
            "CREATE TABLE {name} ({cols}, PRIMARY KEY ({pk}){})",
            ddl.index_suffix()
        );
        sql.push_str(&ddl.engine_clause());
        sql.push_str(" DEFAULT CHARSET=latin1");
        sql.push_str(&ddl.table_suffix());
        sql.push_str(part);
        sql
    };
    let part = if partitions > 0 {
        format!(" PARTITION BY KEY(id1) PARTITIONS {partitions}")
    } else {
        String::new()
    };
    vec![
        table(
            "linktable",
            "id1 BIGINT UNSIGNED NOT NULL, id2 BIGINT UNSIGNED NOT NULL, \
             link_type BIGINT UNSIGNED NOT NULL, visibility TINYINT NOT NULL, \
             data VARCHAR(255) NOT NULL, time BIGINT UNSIGNED NOT NULL, \
             version INT UNSIGNED NOT NULL",
            "link_type, id1, id2",
            &part,
        ),
        table(
            "counttable",
            "id BIGINT UNSIGNED NOT NULL, link_type BIGINT UNSIGNED NOT NULL, \
             count INT UNSIGNED NOT NULL, time BIGINT UNSIGNED NOT NULL, \
             version BIGINT UNSIGNED NOT NULL",
            "id, link_type",
            "",
        ),
        table(
            "nodetable",
            "id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, type INT UNSIGNED NOT NULL, \
             version BIGINT UNSIGNED NOT NULL, time INT UNSIGNED NOT NULL, \
             data MEDIUMTEXT NOT NULL",
            "id",
            "",
        ),
    ]
}

/// `linkbench.index`: `id1_type` (docs/workloads.md, LinkBench: built after the load, as mdcallag's
/// `.post` DDL does); PostgreSQL first moves `nodetable`'s sequence past the loaded ids (the load
/// writes explicit ids).
pub fn create_index(dialect: Dialect, ddl: &TableDdl) -> Vec<String> {
    let index = format!("CREATE INDEX id1_type ON linktable ({ID1_TYPE})");
    let d = dialect_sql(dialect);
    let index = match d.index_options {
        true => index + &ddl.index_suffix(),
        false => index,
    };
    (d.before_index.iter().map(|s| s.to_string()))
        .chain([index])
        .collect()
}

/// Placeholder rows `(…), (…)` of `per` columns, `rows` rows.
fn rows_of(dialect: Dialect, rows: usize, per: usize) -> String {
    (0..rows)
        .map(|r| {
            let marks: Vec<String> = (1..=per)
                .map(|c| dialect.placeholder(r * per + c))
                .collect();
            format!("({})", marks.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The load's multi-row insert of `rows` nodes with their ids (5 parameters per row).
pub fn load_nodes(dialect: Dialect, rows: usize) -> String {
    format!(
        "INSERT INTO nodetable ({NODE_LOAD_COLUMNS}) VALUES {}",
        rows_of(dialect, rows, 5)
    )
}

/// The load's multi-row insert of `rows` links (7 parameters per row).
pub fn load_links(dialect: Dialect, rows: usize) -> String {
    format!(
        "INSERT INTO linktable ({LINK_COLUMNS}) VALUES {}",
        rows_of(dialect, rows, 7)
    )
}

/// The load's multi-row insert of `rows` counts (5 parameters per row).
pub fn load_counts(dialect: Dialect, rows: usize) -> String {
    format!(
        "INSERT INTO counttable ({COUNT_COLUMNS}) VALUES {}",
        rows_of(dialect, rows, 5)
    )
}

/// A write transaction's first statement (SQLite takes the write lock up front, so two
/// writers never deadlock upgrading a read lock).
pub fn begin(dialect: Dialect) -> &'static str {
    dialect_sql(dialect).begin
}

/// The statements of the request phase, in [`Stmt`] order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stmt {
    /// addlink/updatelink: insert the link, or make it visible. MySQL's rows affected: 1 new,
    /// 2 made visible, 0 already visible; PostgreSQL's and SQLite's: 1 new or made visible, 0
    /// already visible. Parameters: id1, id2, link_type, visibility, data, time, version.
    LinkUpsert,
    /// The link's count + 1 (inserted at 1 when absent): id, link_type, time.
    CountUp,
    /// The link's count − 1, never below 0: id, link_type, time.
    CountDown,
    /// addlink/updatelink on a link that was already visible: visibility, data, time,
    /// version, id1, id2, link_type.
    LinkUpdate,
    /// deletelink: the link if visible, locked: id1, id2, link_type.
    LinkVisible,
    /// deletelink: hide it: id1, id2, link_type.
    LinkHide,
    /// countlink: id, link_type.
    CountLink,
    /// getlinklist: id1, link_type, min time, max time, offset.
    GetLinkList,
    /// getnode: id.
    GetNode,
    /// addnode: type, version, time, data.
    AddNode,
    /// updatenode: version, time, data, id, type.
    UpdateNode,
    /// deletenode: id, type.
    DeleteNode,
}

impl Stmt {
    /// Every statement in declaration order (`s as usize` is its index here).
    pub const ALL: [Stmt; 12] = [
        Stmt::LinkUpsert,
        Stmt::CountUp,
        Stmt::CountDown,
        Stmt::LinkUpdate,
        Stmt::LinkVisible,
        Stmt::LinkHide,
        Stmt::CountLink,
        Stmt::GetLinkList,
        Stmt::GetNode,
        Stmt::AddNode,
        Stmt::UpdateNode,
        Stmt::DeleteNode,
    ];
}

/// `?, ?, …` (or `$1, $2, …`) for `n` parameters.
fn marks(dialect: Dialect, n: usize) -> Vec<String> {
    (1..=n).map(|i| dialect.placeholder(i)).collect()
}

const LINK_KEY: &str = "id1 = {1} AND id2 = {2} AND link_type = {3}";

/// `LINK_KEY` with the placeholders from `first` on.
fn link_key(dialect: Dialect, first: usize) -> String {
    LINK_KEY
        .replace("{1}", &dialect.placeholder(first))
        .replace("{2}", &dialect.placeholder(first + 1))
        .replace("{3}", &dialect.placeholder(first + 2))
}

/// The SQL of `stmt` for `dialect` (docs/workloads.md, LinkBench: LinkBench's MySQL store).
pub fn text(stmt: Stmt, dialect: Dialect) -> String {
    let m = marks(dialect, 7);
    let d = dialect_sql(dialect);
    let my = d.upsert == Upsert::DuplicateKey;
    match stmt {
        Stmt::LinkUpsert if my => format!(
            "INSERT INTO linktable ({LINK_COLUMNS}) VALUES ({}) \
             ON DUPLICATE KEY UPDATE visibility = VALUES(visibility)",
            m.join(", ")
        ),
        Stmt::LinkUpsert => format!(
            "INSERT INTO linktable ({LINK_COLUMNS}) VALUES ({}) \
             ON CONFLICT (link_type, id1, id2) DO UPDATE SET visibility = excluded.visibility \
             WHERE linktable.visibility <> excluded.visibility",
            m.join(", ")
        ),
        Stmt::CountUp | Stmt::CountDown => count_change(stmt == Stmt::CountUp, dialect),
        Stmt::LinkUpdate => format!(
            "UPDATE linktable SET visibility = {}, data = {}, time = {}, version = {} WHERE {}",
            m[0],
            m[1],
            m[2],
            m[3],
            link_key(dialect, 5)
        ),
        Stmt::LinkVisible => format!(
            "SELECT visibility FROM linktable WHERE {} AND visibility = {VISIBLE}{}",
            link_key(dialect, 1),
            d.lock_read
        ),
        Stmt::LinkHide => format!(
            "UPDATE linktable SET visibility = {HIDDEN} WHERE {}",
            link_key(dialect, 1)
        ),
        Stmt::CountLink => format!(
            "SELECT count FROM counttable WHERE id = {} AND link_type = {}",
            m[0], m[1]
        ),
        Stmt::GetLinkList => get_link_list(dialect),
        Stmt::GetNode => format!(
            "SELECT id, type, version, time, data FROM nodetable WHERE id = {}",
            m[0]
        ),
        Stmt::AddNode => format!(
            "INSERT INTO nodetable (type, version, time, data) VALUES ({}, {}, {}, {})",
            m[0], m[1], m[2], m[3]
        ),
        Stmt::UpdateNode => format!(
            "UPDATE nodetable SET version = {}, time = {}, data = {} WHERE id = {} AND type = {}",
            m[0], m[1], m[2], m[3], m[4]
        ),
        Stmt::DeleteNode => format!(
            "DELETE FROM nodetable WHERE id = {} AND type = {}",
            m[0], m[1]
        ),
    }
}

/// counttable's insert-or-change: + 1, or − 1 never below 0 (LinkBench's `IF (count = 0, 0,
/// count - 1)`).
fn count_change(up: bool, dialect: Dialect) -> String {
    let m = marks(dialect, 3);
    let start = if up { 1 } else { 0 };
    let insert = format!(
        "INSERT INTO counttable ({COUNT_COLUMNS}) VALUES ({}, {}, {start}, {}, 0)",
        m[0], m[1], m[2]
    );
    match (dialect_sql(dialect).upsert, up) {
        (Upsert::DuplicateKey, true) => format!(
            "{insert} ON DUPLICATE KEY UPDATE count = count + 1, version = version + 1, \
             time = VALUES(time)"
        ),
        (Upsert::DuplicateKey, false) => format!(
            "{insert} ON DUPLICATE KEY UPDATE count = IF(count = 0, 0, count - 1), \
             version = version + 1, time = VALUES(time)"
        ),
        (_, true) => format!(
            "{insert} ON CONFLICT (id, link_type) DO UPDATE SET \
             count = counttable.count + 1, version = counttable.version + 1, time = excluded.time"
        ),
        (_, false) => format!(
            "{insert} ON CONFLICT (id, link_type) DO UPDATE SET \
             count = CASE WHEN counttable.count = 0 THEN 0 ELSE counttable.count - 1 END, \
             version = counttable.version + 1, time = excluded.time"
        ),
    }
}

/// getlinklist: visible links of (id1, link_type) in a time range, newest first, one page of
/// at most [`RANGE_LIMIT`] from an offset; MySQL names `id1_type` with `FORCE INDEX`.
fn get_link_list(dialect: Dialect) -> String {
    let m = marks(dialect, 5);
    let head = format!("SELECT {LINK_COLUMNS} FROM linktable");
    let filter = format!(
        "WHERE id1 = {} AND link_type = {} AND time >= {} AND time <= {} AND visibility = {VISIBLE} \
         ORDER BY time DESC",
        m[0], m[1], m[2], m[3]
    );
    match dialect_sql(dialect).force_index {
        true => format!(
            "{head} FORCE INDEX (id1_type) {filter} LIMIT {}, {RANGE_LIMIT}",
            m[4]
        ),
        false => format!("{head} {filter} LIMIT {RANGE_LIMIT} OFFSET {}", m[4]),
    }
}

/// getlink (multiget): the links of (id1, link_type) among `n` id2s.
pub fn get_links(dialect: Dialect, n: usize) -> String {
    let m: Vec<String> = (3..3 + n).map(|i| dialect.placeholder(i)).collect();
    format!(
        "SELECT {LINK_COLUMNS} FROM linktable WHERE id1 = {} AND link_type = {} AND id2 IN ({})",
        dialect.placeholder(1),
        dialect.placeholder(2),
        m.join(", ")
    )
}

/// Rows in each table (after the load; not timed).
pub fn count_rows(table: &str) -> String {
    format!("SELECT COUNT(*) FROM {table}")
}

/// The consistency check (docs/workloads.md, LinkBench: `linkbench.check`): every (id, link_type)
/// whose count differs from its visible links, either side missing counted as 0, as
/// `id,link_type,count,visible` strings in key order, at most `limit` of them.
pub fn count_mismatches(dialect: Dialect, limit: u32) -> String {
    let visible = format!(
        "SELECT id1, link_type, COUNT(*) AS n FROM linktable WHERE visibility = {VISIBLE} \
         GROUP BY id1, link_type"
    );
    let row = |id: &str, lt: &str, c: &str, n: &str| match dialect_sql(dialect).concat_ws {
        false => format!("{id} || ',' || {lt} || ',' || {c} || ',' || {n}"),
        true => format!("CONCAT_WS(',', {id}, {lt}, {c}, {n})"),
    };
    format!(
        "SELECT k FROM (\
         SELECT c.id AS a, c.link_type AS b, {} AS k FROM counttable c \
         LEFT JOIN ({visible}) v ON v.id1 = c.id AND v.link_type = c.link_type \
         WHERE c.count <> COALESCE(v.n, 0) \
         UNION ALL \
         SELECT v.id1 AS a, v.link_type AS b, {} AS k FROM ({visible}) v \
         LEFT JOIN counttable c ON c.id = v.id1 AND c.link_type = v.link_type \
         WHERE c.id IS NULL) d ORDER BY a, b LIMIT {limit}",
        row("c.id", "c.link_type", "c.count", "COALESCE(v.n, 0)"),
        row("v.id1", "v.link_type", "0", "v.n"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_paging_per_dialect() {
        assert_eq!(
            text(Stmt::CountLink, Dialect::Postgres),
            "SELECT count FROM counttable WHERE id = $1 AND link_type = $2"
        );
        let my = text(Stmt::GetLinkList, Dialect::Mysql);
        assert!(my.contains("FORCE INDEX (id1_type)") && my.ends_with("LIMIT ?, 10000"));
        let pg = text(Stmt::GetLinkList, Dialect::Postgres);
        assert!(pg.ends_with("LIMIT 10000 OFFSET $5"), "{pg}");
        assert_eq!(
            text(Stmt::LinkUpdate, Dialect::Postgres),
            "UPDATE linktable SET visibility = $1, data = $2, time = $3, version = $4 \
             WHERE id1 = $5 AND id2 = $6 AND link_type = $7"
        );
        assert!(!text(Stmt::LinkVisible, Dialect::Sqlite).contains("FOR UPDATE"));
        assert!(get_links(Dialect::Postgres, 3).ends_with("id2 IN ($3, $4, $5)"));
        assert!(Stmt::ALL.iter().enumerate().all(|(i, s)| *s as usize == i));
        assert_eq!(load_links(Dialect::Sqlite, 2).matches('?').count(), 14);
    }

    #[test]
    fn mysql_ddl_takes_the_target_options_and_partitions() {
        let ddl = TableDdl {
            engine: Some("InnoDB".into()),
            table_options: Some("ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8".into()),
            index_options: None,
        };
        let t = create_tables(Dialect::Mysql, &ddl, 16);
        assert!(t[0].ends_with(
            "ENGINE=InnoDB DEFAULT CHARSET=latin1 ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8 \
             PARTITION BY KEY(id1) PARTITIONS 16"
        ));
        assert!(!t[1].contains("PARTITION") && t[2].contains("AUTO_INCREMENT"));
        assert_eq!(create_index(Dialect::Postgres, &ddl).len(), 2);
    }
}
