//! Tests of the MySQL/MariaDB engine's pure parts: escaping, rendering SQL text, log and
//! version parsing. Must not: start a server (the integration tests do).

use std::path::Path;

use super::diagnostics::{cause_lines, effective_settings, error_lines};
use super::session::{LiteralSink, push_literal, render_text};
use crate::engine::ErrorKind;
use crate::engine::{Param, RowSink};

#[test]
fn literals_are_escaped() {
    let lit = |s: &str, bs: bool| {
        let mut out = String::new();
        push_literal(&mut out, s, bs);
        out
    };
    assert_eq!(lit("12-34", true), "'12-34'");
    assert_eq!(lit("it's", true), "'it''s'");
    assert_eq!(lit("a\\b", true), "'a\\\\b'");
    assert_eq!(lit("a\0b\nc\rd\x1ae", true), "'a\\0b\\nc\\rd\\Ze'");
    // NO_BACKSLASH_ESCAPES: a backslash is an ordinary character.
    assert_eq!(lit("a\\b'c", false), "'a\\b''c'");
}

#[test]
fn text_statements_render_parameters_in_place() {
    let parts: Vec<String> = "SELECT c FROM t WHERE id BETWEEN ? AND ?"
        .split('?')
        .map(str::to_string)
        .collect();
    let mut out = String::from("stale");
    render_text(&mut out, &parts, &[Param::Int(5), Param::Int(-14)], true).unwrap();
    assert_eq!(out, "SELECT c FROM t WHERE id BETWEEN 5 AND -14");
    let ins: Vec<String> = "INSERT INTO t (id, k, c) VALUES (0, ?, ?)"
        .split('?')
        .map(str::to_string)
        .collect();
    render_text(&mut out, &ins, &[Param::Int(1), Param::Text("x'y")], true).unwrap();
    assert_eq!(out, "INSERT INTO t (id, k, c) VALUES (0, 1, 'x''y')");
    let err = render_text(&mut out, &ins, &[Param::Int(1)], true).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Fatal);
}

#[test]
fn bulk_rows_are_literal_tuples() {
    let mut sink = LiteralSink {
        out: String::new(),
        backslash_escapes: true,
        first: true,
    };
    sink.int(1);
    sink.int(42);
    sink.text("a'b");
    assert_eq!(sink.out, "1,42,'a''b'");
}

#[test]
fn settings_hide_per_cell_paths_and_port() {
    let vars = vec![
        ("datadir".to_string(), Some("/w/run/a.c1.r1/".to_string())),
        ("socket".to_string(), Some("/tmp/x.sock".to_string())),
        ("port".to_string(), Some("41234".to_string())),
        ("version".to_string(), None),
        (
            "plugin_dir".to_string(),
            Some("/cache/8.0.31/tree/lib/plugin/".to_string()),
        ),
    ];
    let s = effective_settings(
        vars,
        Path::new("/w/run/a.c1.r1"),
        Path::new("/tmp/x.sock"),
        Some(Path::new("/cache/8.0.31/tree")),
    );
    assert_eq!(s["datadir"], "<data_dir>/");
    assert_eq!(s["socket"], "<socket>");
    assert!(!s.contains_key("port"));
    assert_eq!(s["version"], "");
    assert_eq!(s["plugin_dir"], "<basedir>/lib/plugin/");
}

#[test]
fn a_failed_install_db_without_error_lines_shows_its_first_lines() {
    // mariadb-install-db on a --defaults-file with a space in its path.
    let log = "Could not open required defaults file: /tmp/w\n\
               Fatal error in defaults handling. Program aborted\n\
               Installing MariaDB/MySQL system tables in '/tmp/w d/x' ...\n\n\
               Installation of system tables failed!  Examine the logs in\n";
    assert_eq!(
        cause_lines(log),
        [
            "Could not open required defaults file: /tmp/w",
            "Fatal error in defaults handling. Program aborted"
        ]
    );
    let with_errors = "x\n2026-11-22  2:52:17 0 [ERROR] Aborting\n";
    assert_eq!(cause_lines(with_errors), ["[ERROR] Aborting"]);
}

#[test]
fn error_lines_lose_their_timestamps() {
    let log = "Installing MariaDB/MySQL system tables in '/d' ...\n\
               2026-11-22  2:52:17 0 [ERROR] /usr/sbin/mariadbd: unknown variable 'x=1'\n\
               2026-11-22  2:52:17 0 [ERROR] Aborting\n\nInstallation of system tables failed!\n";
    assert_eq!(
        error_lines(log),
        [
            "[ERROR] /usr/sbin/mariadbd: unknown variable 'x=1'",
            "[ERROR] Aborting"
        ]
    );
}

#[test]
fn a_server_under_valgrind_keeps_its_pool_and_does_not_spin_on_redo_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let cnf = dir.path().join("my.cnf");
    std::fs::write(&cnf, "[mysqld]\ninnodb-buffer-pool-size = 1G\n").unwrap();
    assert!(super::server::under_valgrind(&[], &cnf).is_empty());
    let args = super::server::under_valgrind(&["valgrind".into()], &cnf);
    for want in [
        "--loose-innodb-buffer-pool-size-max=1G",
        "--loose-innodb-log-spin-cpu-pct-hwm=0",
        "--innodb-use-native-aio=0",
    ] {
        assert!(args.iter().any(|a| a == want), "{want} in {args:?}");
    }
}
