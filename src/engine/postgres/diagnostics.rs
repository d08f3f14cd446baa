//! What a PostgreSQL server tells about itself: its version and `pg_settings`, the database's
//! size, and the background writers' work. Must not: change anything on the server.

use std::collections::BTreeMap;

use anyhow::{Context, Result};

use crate::engine::Background;
use crate::engine::common::pgwire::PgConn;

/// Settings that name this cell's own files, socket or port: they differ between any two runs,
/// so recording them would only hide the differences that matter.
const PER_CELL_SETTINGS: &[&str] = &[
    "config_file",
    "data_directory",
    "hba_file",
    "ident_file",
    "external_pid_file",
    "unix_socket_directories",
    "port",
];

/// The server's version string and its settings (less the ones naming this cell's files).
pub(in crate::engine) fn read_back(
    admin: &mut PgConn,
) -> Result<(String, BTreeMap<String, String>)> {
    let first = |rows: Vec<Vec<Option<String>>>| {
        rows.into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten())
    };
    let version = first(admin.rows("SELECT version()")?).context("SELECT version()")?;
    let mut settings = BTreeMap::new();
    for row in admin.rows("SELECT name, setting FROM pg_settings")? {
        let mut cols = row.into_iter();
        let (Some(Some(name)), Some(value)) = (cols.next(), cols.next()) else {
            continue;
        };
        if !PER_CELL_SETTINGS.contains(&name.as_str()) {
            settings.insert(name, value.unwrap_or_default());
        }
    }
    Ok((version, settings))
}

/// `pg_database_size` of the connection's database.
pub(in crate::engine) fn db_size(admin: &mut PgConn) -> Option<u64> {
    let rows = admin
        .rows("SELECT pg_database_size(current_database())")
        .ok()?;
    rows.first()?.first()?.as_deref()?.parse().ok()
}

/// The `CFLAGS` the server was built with, from its `pg_config` view (superusers only; the
/// admin connection is one); `None` when it cannot be read.
pub(in crate::engine) fn build_flags(admin: &mut PgConn) -> Option<String> {
    let rows = admin
        .rows("SELECT setting FROM pg_config WHERE name = 'CFLAGS'")
        .ok()?;
    let flags = rows.first()?.first()?.as_deref()?.trim();
    (!flags.is_empty()).then(|| flags.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// `server_version_num` of the connection's server (`None`: it could not be read).
pub(super) fn server_version_num(admin: &mut PgConn) -> Option<u32> {
    (admin.rows("SHOW server_version_num").ok())
        .and_then(|r| r.first()?.first()?.as_deref()?.parse::<u32>().ok())
}

/// The query for the buffers the checkpointer and the background writer have written, on a
/// server of `server_version_num` `version`: `pg_stat_checkpointer` exists from PostgreSQL 17
/// (which moved `buffers_checkpoint` there as `buffers_written`); before, `pg_stat_bgwriter`
/// holds both. Asking for a view the server lacks puts an ERROR in its log.
pub(super) fn buffers_written_sql(version: u32) -> &'static str {
    if version >= 170_000 {
        "SELECT (SELECT buffers_written FROM pg_stat_checkpointer) \
         + (SELECT buffers_clean FROM pg_stat_bgwriter)"
    } else {
        "SELECT buffers_checkpoint + buffers_clean FROM pg_stat_bgwriter"
    }
}

/// PostgreSQL's account of its background work: autovacuum workers running, and the buffers
/// written so far by the checkpointer and the background writer (from the views the server's
/// version has). A read that fails is `None`.
pub(in crate::engine) fn pg_background(admin: &mut PgConn) -> Background {
    let version = server_version_num(admin);
    let mut number = |sql: &str| -> Option<u64> {
        let rows = admin.rows(sql).ok()?;
        rows.into_iter()
            .next()?
            .into_iter()
            .next()??
            .trim()
            .parse()
            .ok()
    };
    let autovacuum_workers =
        number("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'");
    let buffers_written = version.and_then(|v| number(buffers_written_sql(v)));
    Background {
        autovacuum_workers,
        buffers_written,
        ..Default::default()
    }
}
