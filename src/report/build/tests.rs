//! Tests of the report model's computation.

use super::targets::engine_label;
use super::warnings::{condensed, error_codes};
use crate::results::{ErrorCodeCount, Measurement, OpMeasurement, TargetInfo};

#[test]
fn error_codes_are_summed_over_operation_types_most_frequent_first() {
    let op = |codes: &[(&str, u64)]| OpMeasurement {
        error_codes: codes
            .iter()
            .map(|(c, n)| ErrorCodeCount {
                code: c.to_string(),
                count: *n,
            })
            .collect(),
        ..OpMeasurement::default()
    };
    let m = Measurement {
        operations: vec![
            op(&[("SQLSTATE 23505", 2), ("SQLSTATE 40P01", 1)]),
            op(&[("SQLSTATE 40P01", 4)]),
        ],
        ..Measurement::default()
    };
    assert_eq!(error_codes(&m), "; SQLSTATE 40P01 ×5, SQLSTATE 23505 ×2");
    assert_eq!(error_codes(&Measurement::default()), "");
}

#[test]
fn a_log_tail_is_condensed_to_its_last_lines() {
    assert_eq!(condensed("x", "target x: refused"), "refused");
    assert_eq!(condensed("x@B", "target x: refused"), "refused");
    assert_eq!(
        condensed(
            "pg",
            "target pg: did not start; last lines of its log a.log:\n\nok\nok\n\nLOG:  bad value\nFATAL: errors\n"
        ),
        "did not start; last lines of its log a.log: … LOG:  bad value FATAL: errors"
    );
    assert_eq!(condensed("pg", "a\nb"), "a b");
    assert_eq!(
        condensed(
            "bad",
            "build failed at configure; last lines of build.log:\ngcc -O2 -fno-x conftest.c\n\
             gcc: error: unrecognized command-line option '-fno-x'\nconfigure:4038: $? = 1\n\
             configure:4083: error: C compiler cannot create executables\nSee `config.log'"
        ),
        "build failed at configure; last lines of build.log: … gcc: error: unrecognized \
         command-line option '-fno-x' … See `config.log'"
    );
}

#[test]
fn mariadb_and_myrocks_are_named_in_the_engine_column() {
    let t = |engine: &str, version: &str, config: &str| {
        let mut t = TargetInfo {
            engine: engine.into(),
            server_version: Some(version.into()),
            config_text: config.into(),
            ..Default::default()
        };
        t.facts = crate::engine::facts(&t);
        t
    };
    assert_eq!(engine_label(&t("mysql", "MySQL 8.0.31", "")), "mysql");
    assert_eq!(engine_label(&t("mysql", "11.4.5-MariaDB", "")), "mariadb");
    let rocks =
        "[mysqld]\nplugin-load-add = ha_rocksdb.so\n[dbdelta]\ntable-options = ENGINE=ROCKSDB\n";
    assert_eq!(
        engine_label(&t("mysql", "10.11.19-MariaDB-0+deb12u1", rocks)),
        "mariadb (myrocks)"
    );
    // The plugin alone does not make the tables MyRocks.
    let plugin = "[mysqld]\nplugin-load-add = ha_rocksdb.so\n";
    assert_eq!(
        engine_label(&t("mysql", "10.11.19-MariaDB", plugin)),
        "mariadb"
    );
    assert_eq!(
        engine_label(&t("postgres", "PostgreSQL 17.2", "")),
        "postgres"
    );
}
