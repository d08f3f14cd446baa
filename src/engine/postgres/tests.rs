//! Tests of the PostgreSQL engine's pure parts: `VACUUM` options and checkpointer views by
//! version, the socket's place, literal parameters. Must not: start a server.

use std::path::{Path, PathBuf};

use super::diagnostics::buffers_written_sql;
use super::postwrite::vacuum_options;
use super::server::{MAX_SOCKET_PATH, socket_dir};
use super::session::{CopySink, inline_params};
use crate::engine::{Param, RowSink};

#[test]
fn postgresql_10_and_11_vacuum_without_index_cleanup() {
    // PostgreSQL 10.23 refused the option: 42601 unrecognized VACUUM option "index_cleanup".
    assert_eq!(vacuum_options(Some(100_023)), "ANALYZE");
    assert_eq!(vacuum_options(Some(110_022)), "ANALYZE");
    assert_eq!(vacuum_options(Some(120_000)), "ANALYZE, INDEX_CLEANUP ON");
    assert_eq!(vacuum_options(Some(170_010)), "ANALYZE, INDEX_CLEANUP ON");
    assert_eq!(vacuum_options(None), "ANALYZE, INDEX_CLEANUP ON");
}

#[test]
fn checkpointer_buffers_come_from_the_views_the_version_has() {
    // PostgreSQL 15 has no pg_stat_checkpointer: asking logged an ERROR twice per cell.
    for v in [100_023, 150_014, 160_006] {
        assert!(
            !buffers_written_sql(v).contains("pg_stat_checkpointer"),
            "{v}"
        );
        assert!(buffers_written_sql(v).contains("buffers_checkpoint"), "{v}");
    }
    // 17 moved buffers_checkpoint out of pg_stat_bgwriter.
    assert!(!buffers_written_sql(170_002).contains("buffers_checkpoint"));
    assert!(buffers_written_sql(170_002).contains("pg_stat_checkpointer"));
}

#[test]
fn the_socket_leaves_a_data_directory_too_deep_to_bind_it() {
    let short = Path::new("/work/run/pg.c1.r1");
    assert_eq!(socket_dir(short, 5432), short);
    let deep = PathBuf::from(format!("/work/{}/pg.c1.r1", "d".repeat(90)));
    assert_eq!(socket_dir(&deep, 5432), std::env::temp_dir());
    assert!(
        std::env::temp_dir()
            .join(".s.PGSQL.65535")
            .as_os_str()
            .len()
            <= MAX_SOCKET_PATH
    );
}

#[test]
fn inlines_parameters_as_literals() {
    let mut out = String::new();
    inline_params(
        "UPDATE t SET c=$1 WHERE id=$2 AND k=$10",
        &[Param::Text("it's"), Param::Int(7)],
        &mut out,
    );
    assert_eq!(out, "UPDATE t SET c='it''s' WHERE id=7 AND k=$10");
}

#[test]
fn copy_sink_escapes_text() {
    let mut buf = Vec::new();
    let mut s = CopySink {
        buf: &mut buf,
        first: true,
    };
    s.int(5);
    s.text("a\tb\\c");
    assert_eq!(buf, b"5\ta\\tb\\\\c");
}
