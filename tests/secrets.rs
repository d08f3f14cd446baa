//! Secrets at rest and on screen, through the binary on an SQLite store: a lab whose
//! `connect` URL (and a libpq `password=` in a comment) holds a password is run, and no text
//! the store keeps holds the password; `--resume` plans from the lab file again, and asks for
//! it (exit 2) once it is gone; a new store file is readable by its owner only, an existing
//! one keeps its mode, and `list runs` says once when every user may read it. The `connect`
//! target's server is not there (port 1 refuses): that target fails, the run is stored all
//! the same. A lab with a secret of each kind (a `connect` password, a setting's libpq
//! `password=`, an env `PGPASSWORD`, an env name of `secret_env`) run on a real PostgreSQL
//! server shows none of them in the store (also after `store push` of rows an older dbdelta
//! wrote in clear), in any report format, `plan`, `run --dry-run`, `serve`'s pages, or the
//! k8s manifests outside their Secret.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::serve::{get, start_serve, stop_serve};
use common::{dbdelta, measuring, postgres_installed, rows, run, scratch, text};

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

/// One secret of each kind, each its own text so that a leak names its kind.
const URL_SECRET: &str = "UrlPw4417";
const SETTING_SECRET: &str = "ConnInfoPw4417";
const ENV_SECRET: &str = "EnvPgPw4417";
const NAMED_SECRET: &str = "NamedCred4417";
const SECRETS: [&str; 4] = [URL_SECRET, SETTING_SECRET, ENV_SECRET, NAMED_SECRET];

/// A PostgreSQL target dbdelta starts, with a replica's `primary_conninfo` (ignored by a
/// primary) and a `[target.env]` table, and a `connect` target that is not there.
fn lab_of_every_kind(dir: &Path) -> PathBuf {
    let path = dir.join("lab.toml");
    std::fs::write(
        &path,
        format!(
            "[lab]\nname = \"secrets-every-kind\"\nsecret_env = [\"MY_CRED\"]\n\n\
             [[target]]\nname = \"pg\"\nengine = \"postgres\"\n\
             settings = [\"primary_conninfo = 'host=127.0.0.1 port=1 password={SETTING_SECRET}'\"]\n\
             [target.env]\nPGPASSWORD = \"{ENV_SECRET}\"\nMY_CRED = '{NAMED_SECRET}'\n\n\
             [[target]]\nname = \"staging\"\nengine = \"postgres\"\n\
             connect = \"postgres://bench:{URL_SECRET}@127.0.0.1:1/benchdb\"\n\n\
             [suite.sysbench]\nrows = 1000\nwarmup_secs = 0\nread_secs = 1\n"
        ),
    )
    .unwrap();
    path
}

/// The secrets `what` shows, with `what` named: none, for the test to pass.
fn leaks(what: &str, shown: &str) -> Vec<String> {
    (SECRETS.iter())
        .filter(|s| shown.contains(*s))
        .map(|s| format!("{what}: {s}"))
        .collect()
}

/// `dbdelta ARGS` succeeds (or exits `code`): its stdout and stderr.
fn output(dir: &Path, args: &[&str], code: i32) -> String {
    let out = run(dir, args);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(code), "{args:?}: {all}");
    all
}

#[test]
fn no_secret_of_any_kind_is_stored_reported_planned_served_or_in_a_config_map() {
    if !postgres_installed() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let lab = lab_of_every_kind(d);
    let (lab, store) = (lab.to_str().unwrap(), d.join("s.db"));
    let s = store.to_str().unwrap();
    let mut found = Vec::new();

    // What the run prints, then what the store keeps: the staging target fails (exit 1).
    let args = ["run", lab, "--quick", "--only", "point-query", "--store", s];
    let ran = {
        let _lock = measuring();
        output(d, &args, 1)
    };
    found.extend(leaks("run", &ran));
    for (column, value) in stored_texts(&store) {
        found.extend(leaks(&column, &value));
    }
    let measured: Vec<(i64,)> = rows(
        &rusqlite::Connection::open(&store).unwrap(),
        "SELECT count(*) FROM measurements WHERE target = 'pg'",
    );
    assert!(measured[0].0 > 0, "the PostgreSQL target ran: {ran}");
    let texts = stored_texts(&store);
    let lab_text = &texts.iter().find(|(c, _)| c == "runs.lab_text").unwrap().1;
    assert!(
        lab_text.contains("PGPASSWORD = \"***\"") && lab_text.contains("MY_CRED = '***'"),
        "{lab_text}"
    );
    for format in ["text", "md", "json", "csv", "html"] {
        let shown = output(d, &["report", "--store", s, "--format", format], 0);
        found.extend(leaks(&format!("report --format {format}"), &shown));
    }
    let json = output(d, &["report", "--store", s, "--format", "json"], 0);
    assert!(json.contains("\"PGPASSWORD\": \"***\""), "{json}");
    let plan = output(d, &["plan", lab, "--quick"], 0);
    assert!(plan.contains("password=***'"), "{plan}");
    found.extend(leaks("plan", &plan));
    let dry = output(d, &["run", lab, "--quick", "--dry-run", "--store", s], 0);
    found.extend(leaks("run --dry-run", &dry));

    // serve's pages of the run.
    let id: Vec<(String,)> = rows(
        &rusqlite::Connection::open(&store).unwrap(),
        "SELECT id FROM runs",
    );
    let (server, base) = start_serve(d, &["--store", s]);
    let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
    let lab_q = "secrets-every-kind";
    for page in [
        "/".to_string(),
        format!("/run/{}", id[0].0),
        format!("/run/{}/flames", id[0].0),
        format!("/history?lab={lab_q}"),
        format!("/history/overview?lab={lab_q}"),
    ] {
        let shown = get(port, &page);
        assert!(shown.starts_with("HTTP/1.1 200"), "{page}: {shown}");
        found.extend(leaks(&format!("serve {page}"), &shown));
    }
    stop_serve(server);

    // The k8s manifests: every secret in the Secret, none elsewhere.
    let yaml = output(
        d,
        &["plan", lab, "--emit", "k8s", "--image", "i:1", "--quick"],
        0,
    );
    let docs: Vec<serde_json::Value> = serde_saphyr::from_str_multiple(&yaml).unwrap();
    let (secrets, rest): (Vec<_>, Vec<_>) = docs.iter().partition(|d| d["kind"] == "Secret");
    assert_eq!(secrets.len(), 1, "{yaml}");
    let secret = serde_json::to_string(&secrets).unwrap();
    assert!(SECRETS.iter().all(|s| secret.contains(s)), "{secret}");
    found.extend(leaks(
        "k8s outside the Secret",
        &serde_json::to_string(&rest).unwrap(),
    ));
    let comments: String = yaml.lines().filter(|l| l.starts_with('#')).collect();
    found.extend(leaks("k8s comments", &comments));

    // Rows an older dbdelta kept in clear are kept without their secrets by `store push`.
    let clear = std::fs::read_to_string(lab).unwrap();
    let env = format!(r#"{{"PGPASSWORD":"{ENV_SECRET}","PATH":"/bin"}}"#);
    let db = rusqlite::Connection::open(&store).unwrap();
    db.execute("UPDATE runs SET lab_text = ?1", [&clear])
        .unwrap();
    db.execute("UPDATE targets SET env_json = ?1 WHERE name = 'pg'", [&env])
        .unwrap();
    drop(db);
    let copy = d.join("copy.db");
    let args = [
        "--store",
        s,
        "store",
        "push",
        &id[0].0,
        "--to",
        copy.to_str().unwrap(),
    ];
    output(d, &args, 0);
    for (column, value) in stored_texts(&copy) {
        found.extend(leaks(&format!("pushed {column}"), &value));
    }
    assert!(found.is_empty(), "secrets shown or stored: {found:#?}");
}
