//! Each engine's errors reach the runner with the engine's own code: SQLSTATE from
//! PostgreSQL, the error number and SQLSTATE from MariaDB, the result code from SQLite. Real
//! servers, started in-process through dbdelta's own lifecycle code.

mod common;

use std::path::Path;

use dbdelta::engine::{self, EngineKind, ErrorCode, ErrorKind, Session, TargetSpec};

fn start(kind: EngineKind, dir: &Path) -> Box<dyn engine::Server> {
    let spec = TargetSpec {
        name: "codes".into(),
        engine: kind,
        ..Default::default()
    };
    let data = dir.join("data");
    std::fs::create_dir(&data).unwrap();
    engine::start(&spec, &data, &dir.join("server.log")).unwrap()
}

/// A missing table, then a duplicate key on a table this test creates: the codes and kinds
/// each engine's driver gives them.
fn errors_of(session: &mut dyn Session) -> [(ErrorKind, Option<ErrorCode>); 2] {
    let missing = session
        .execute_sql("SELECT * FROM no_such_table")
        .unwrap_err();
    session
        .execute_sql("CREATE TABLE codes (id INTEGER PRIMARY KEY)")
        .unwrap();
    session
        .execute_sql("INSERT INTO codes (id) VALUES (1)")
        .unwrap();
    let duplicate = session
        .execute_sql("INSERT INTO codes (id) VALUES (1)")
        .unwrap_err();
    [
        (missing.kind, missing.code),
        (duplicate.kind, duplicate.code),
    ]
}

#[test]
fn sqlite_errors_carry_their_result_code() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(EngineKind::parse("sqlite").unwrap(), dir.path());
    let mut s = server.driver().connect().unwrap();
    let [missing, duplicate] = errors_of(s.as_mut());
    // SQLITE_ERROR (1); SQLITE_CONSTRAINT_PRIMARYKEY (19 | 6 << 8) with extended codes.
    assert_eq!(missing, (ErrorKind::Fatal, Some(ErrorCode::Sqlite(1))));
    let Some(ErrorCode::Sqlite(code)) = duplicate.1 else {
        panic!("{duplicate:?}")
    };
    assert_eq!(code & 0xff, 19, "SQLITE_CONSTRAINT: {code}");
}

#[test]
fn postgres_errors_carry_their_sqlstate() {
    if !common::postgres_installed() {
        return;
    }
    let dir = common::scratch();
    let server = start(EngineKind::parse("postgres").unwrap(), dir.path());
    let mut s = server.driver().connect().unwrap();
    let [missing, duplicate] = errors_of(s.as_mut());
    assert_eq!(
        missing,
        (ErrorKind::Fatal, Some(ErrorCode::SqlState(*b"42P01")))
    );
    assert_eq!(
        duplicate,
        (ErrorKind::Retryable, Some(ErrorCode::SqlState(*b"23505")))
    );
    assert_eq!(duplicate.1.unwrap().to_string(), "SQLSTATE 23505");
    drop(s);
    server.stop().unwrap();
}

#[test]
fn mariadb_errors_carry_their_number_and_sqlstate() {
    if !Path::new("/usr/sbin/mariadbd").is_file() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install mariadb-server (.ci/run)"
        );
        eprintln!("note: MariaDB is not installed; skipping (apt-get install mariadb-server)");
        return;
    }
    let dir = common::scratch();
    let server = start(EngineKind::parse("mysql").unwrap(), dir.path());
    let mut s = server.driver().connect().unwrap();
    let [missing, duplicate] = errors_of(s.as_mut());
    let code = |errno, sqlstate: &[u8; 5]| {
        Some(ErrorCode::MySql {
            errno,
            sqlstate: *sqlstate,
        })
    };
    assert_eq!(missing.1, code(1146, b"42S02"), "{missing:?}");
    assert_eq!(duplicate.1, code(1062, b"23000"), "{duplicate:?}");
    assert_eq!(duplicate.1.unwrap().to_string(), "MySQL error 1062 (23000)");
    drop(s);
    server.stop().unwrap();
}
