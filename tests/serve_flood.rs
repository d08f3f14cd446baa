//! `dbdelta serve` on what it must refuse: a store from a newer dbdelta is refused with the
//! fix. Each serves a copy of the fuzz seed store (two real SQLite runs), brought to this
//! build's schema by `dbdelta list runs`.

mod common;
use common::*;

use std::path::Path;

/// A scratch directory holding the seed store as `dbdelta.db`, at this build's schema.
fn seeded() -> tempfile::TempDir {
    let dir = scratch();
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/store.db");
    std::fs::copy(seed, dir.path().join("dbdelta.db")).unwrap();
    let out = run(dir.path(), &["list", "runs"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    dir
}

/// `serve` on a store written by a newer dbdelta (a later schema version) says to use a newer
/// dbdelta, in one line, exit 2 (it said to migrate it with `list runs`).
#[test]
fn serve_on_a_newer_store_says_to_use_a_newer_dbdelta() {
    let dir = seeded();
    let store = dir.path().join("dbdelta.db");
    {
        let db = rusqlite::Connection::open(&store).unwrap();
        let v: i64 = db
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        db.pragma_update(None, "user_version", v + 1).unwrap();
    }
    let out = run(dir.path(), &["serve", "--port", "0"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("newer than this dbdelta's"), "{err}");
    assert!(err.contains("use a newer dbdelta"), "{err}");
    assert!(!err.contains("list runs"), "{err}");
}
