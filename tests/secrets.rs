//! Secrets at rest (issue 41, item 3), through the binary on an SQLite store: a lab whose
//! `connect` URL (and a libpq `password=` in a comment) holds a password is run, and no text
//! the store keeps holds the password; `--resume` plans from the lab file again, and asks for
//! it (exit 2) once it is gone; a new store file is readable by its owner only, an existing
//! one keeps its mode, and `list runs` says once when every user may read it. The `connect`
//! target's server is not there (port 1 refuses): that target fails, the run is stored all
//! the same.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{dbdelta, measuring, rows, run, scratch, text};

/// The password the lab holds, in its decoded form (the URL has `%21` for `!`).
const PASSWORD: &str = "S3cretPw";

/// The lab: an SQLite target measured for a second, and a `connect` target with a password.
fn lab(dir: &Path) -> PathBuf {
    let path = dir.join("lab.toml");
    std::fs::write(
        &path,
        format!(
            "[lab]\nname = \"secrets\"\n# a replica: primary_conninfo = 'host=a password={PASSWORD}!'\n\n\
             [[target]]\nname = \"lite\"\nengine = \"sqlite\"\n\n\
             [[target]]\nname = \"staging\"\nengine = \"postgres\"\n\
             connect = \"postgres://bench:{PASSWORD}%21@127.0.0.1:1/benchdb\"\n\n\
             [suite.sysbench]\nrows = 1000\nwarmup_secs = 0\nread_secs = 1\n"
        ),
    )
    .unwrap();
    path
}

/// Run the lab into `store` (in `dir`); the id of the run. The `connect` target fails (exit 1).
fn run_lab(dir: &Path, store: &Path) -> String {
    let lab = lab(dir);
    let out = {
        let _lock = measuring();
        run(
            dir,
            &[
                "run",
                lab.to_str().unwrap(),
                "--only",
                "point-query",
                "--store",
                store.to_str().unwrap(),
                "--workdir",
                dir.join("work").to_str().unwrap(),
            ],
        )
    };
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("target staging") && !err.contains(PASSWORD),
        "{err}"
    );
    let db = rusqlite::Connection::open(store).unwrap();
    let ids: Vec<(String,)> = rows(&db, "SELECT id FROM runs ORDER BY started DESC LIMIT 1");
    ids[0].0.clone()
}

/// Every text value of every table of the store, as (table.column, value).
fn stored_texts(store: &Path) -> Vec<(String, String)> {
    let db = rusqlite::Connection::open(store).unwrap();
    let tables: Vec<(String,)> = rows(&db, "SELECT name FROM sqlite_master WHERE type = 'table'");
    let mut out = Vec::new();
    for (table,) in tables {
        let mut stmt = db.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let columns: Vec<String> = stmt.column_names().map(String::from).collect();
        let mut rs = stmt.query([]).unwrap();
        while let Some(r) = rs.next().unwrap() {
            for (i, c) in columns.iter().enumerate() {
                if let Ok(rusqlite::types::ValueRef::Text(t)) = r.get_ref(i) {
                    out.push((format!("{table}.{c}"), text(t)));
                }
            }
        }
    }
    out
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn no_stored_text_holds_a_password_of_the_lab() {
    let dir = scratch();
    let store = dir.path().join("s.db");
    run_lab(dir.path(), &store);
    let texts = stored_texts(&store);
    let leaks: Vec<_> = texts.iter().filter(|(_, v)| v.contains(PASSWORD)).collect();
    assert!(leaks.is_empty(), "the password is stored in {leaks:?}");
    let lab_text = &texts.iter().find(|(c, _)| c == "runs.lab_text").unwrap().1;
    assert!(
        lab_text.contains("connect = \"postgres://bench:***@127.0.0.1:1/benchdb\"")
            && lab_text.contains("password=***'"),
        "{lab_text}"
    );
    // The report still shows the run, its lab and which target failed.
    let out = run(
        dir.path(),
        &[
            "report",
            "--store",
            store.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains(PASSWORD));
}

#[test]
fn resume_plans_from_the_lab_file_and_asks_for_it_once_it_is_gone() {
    let dir = scratch();
    let store = dir.path().join("s.db");
    let id = run_lab(dir.path(), &store);
    let resume = |dir: &Path| {
        let _lock = measuring();
        let args = ["run", "--resume", &id, "--store", store.to_str().unwrap()];
        dbdelta(dir).args(args).output().unwrap()
    };
    // The failed cell runs again from the lab file, with its password (the server is still
    // not there: exit 1 again, not bad input).
    let out = resume(dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("resumed") && !err.contains(PASSWORD), "{err}");
    // Without the file, the stored text cannot connect: one line asking for the file.
    std::fs::remove_file(dir.path().join("lab.toml")).unwrap();
    let out = resume(dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("password") && err.contains(&format!("dbdelta run LAB --resume {id}")),
        "{err}"
    );
}

#[test]
fn a_new_store_is_private_an_old_one_keeps_its_mode_and_list_warns_once() {
    let dir = scratch();
    let store = dir.path().join("s.db");
    run_lab(dir.path(), &store);
    assert_eq!(mode(&store), 0o600, "a new store is its owner's only");
    let list = || {
        run(
            dir.path(),
            &["list", "runs", "--store", store.to_str().unwrap()],
        )
    };
    let out = list();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        text(&out.stderr)
    );

    // An existing store's mode is its owner's choice: kept, by a run and by `list`, which
    // says once how to make it private.
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
    let second = dir.path().join("second");
    std::fs::create_dir(&second).unwrap();
    run_lab(&second, &store);
    assert_eq!(mode(&store), 0o644);
    let out = list();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("readable by every user of this host (mode 0644)")
            && err
                .trim_end()
                .ends_with(&format!("chmod 600 {}", store.display())),
        "{err}"
    );
    assert_eq!(mode(&store), 0o644);
}
