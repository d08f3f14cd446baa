//! The shared PostgreSQL results store (`--store postgres://…`), on a PostgreSQL server of the
//! test's own (Debian's, as `nobody`, on a unix socket in a scratch directory): two runs
//! writing into one store at once both succeed and `list`, `report` and `compare` read them
//! from it; a run made into a local SQLite store and copied by `dbdelta store push` reports
//! (and `history` lists it, `dbdelta serve` shows it) exactly as it does from SQLite, and a second push is refused. A run held through one
//! connection to the store is refused to another (one owner per run across hosts). Bad and
//! unreachable URLs are one line without the password. The runs are SQLite targets at tiny scale (cheap); needs root
//! and Debian's PostgreSQL, otherwise it says why and passes, except under CI.

mod common;
use common::pg::*;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};

/// Two SQLite targets, two short steps of 2,000 rows.
fn lab(dir: &Path) -> PathBuf {
    let path = dir.join("lab.toml");
    std::fs::write(
        &path,
        "[lab]\nname = \"pg store lab\"\n\n\
         [[target]]\nname = \"full\"\nengine = \"sqlite\"\nsettings = [\"synchronous = FULL\"]\n\n\
         [[target]]\nname = \"off\"\nengine = \"sqlite\"\nsettings = [\"synchronous = OFF\"]\n\n\
         [suite.sysbench]\nrows = 2000\nwarmup_secs = 0.1\nread_secs = 0.3\nwrite_secs = 0.3\n",
    )
    .unwrap();
    path
}

/// `dbdelta --store STORE run LAB` of two steps, quietly.
fn run_args<'a>(store: &'a str, lab: &'a Path) -> Vec<&'a str> {
    vec![
        "--store",
        store,
        "run",
        lab.to_str().unwrap(),
        "-q",
        "--only",
        "point-query,update-one",
    ]
}

/// A child `dbdelta`, killed and waited for if the test ends before it does.
struct Running(Option<Child>);

impl Running {
    fn start(dir: &Path, args: &[&str]) -> Running {
        let child = dbdelta(dir)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start dbdelta");
        Running(Some(child))
    }

    fn output(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The run ids `list runs` shows, oldest first.
fn run_ids(dir: &Path, store: &str) -> Vec<String> {
    let out = ok(&run(dir, &["--store", store, "list", "runs"]));
    out.lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

/// A server of our own, with its scratch directory (removed after the server stops).
fn server() -> Option<(OwnServer, tempfile::TempDir)> {
    if !postgres_installed() || !is_root() {
        return None;
    }
    let dir = scratch();
    let server_dir = dir.path().join("pg");
    std::fs::create_dir(&server_dir).unwrap();
    Some((OwnServer::start(&server_dir, port(), false), dir))
}

#[test]
fn two_runs_at_once_into_one_postgres_store_then_compare_from_it() {
    let Some((server, dir)) = server() else {
        return;
    };
    let url = server.url();
    let lab = lab(dir.path());
    let (a, b) = {
        let _lock = measuring();
        let a = Running::start(dir.path(), &run_args(&url, &lab));
        let b = Running::start(dir.path(), &run_args(&url, &lab));
        (a.output(), b.output())
    };
    let (report_a, report_b) = (ok(&a), ok(&b));
    for r in [&report_a, &report_b] {
        assert!(r.contains("point-query") && r.contains("update-one"), "{r}");
    }

    let out = ok(&run(dir.path(), &["--store", &url, "list", "runs"]));
    assert_eq!(out.lines().count(), 2, "{out}");
    for line in out.lines() {
        assert!(
            line.contains("complete")
                && line.contains("2 step(s), 4 measurement(s)")
                && line.contains("[full, off]"),
            "{line}"
        );
    }
    let ids = run_ids(dir.path(), &url);
    let mut spans = Vec::new();
    for id in &ids {
        let report = ok(&run(dir.path(), &["--store", &url, "report", id]));
        assert!(report == report_a || report == report_b, "{report}");
        let json = ok(&run(
            dir.path(),
            &["--store", &url, "report", id, "--format", "json"],
        ));
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        let run = &json["run"];
        let at = |k: &str| chrono::DateTime::parse_from_rfc3339(run[k].as_str().unwrap()).unwrap();
        spans.push((at("started"), at("finished")));
    }
    assert!(
        spans[0].0 < spans[1].1 && spans[1].0 < spans[0].1,
        "the two runs overlapped in time: {spans:?}"
    );

    let out = ok(&run(
        dir.path(),
        &["--store", &url, "compare", &ids[0], &ids[1]],
    ));
    assert!(out.starts_with("dbdelta compare: pg store lab"), "{out}");
    for t in ["full@A", "full@B", "off@A", "off@B"] {
        assert!(out.contains(t), "{t} in {out}");
    }
    println!("{out}");
    drop(server);
}

#[test]
fn a_sqlite_run_pushed_to_postgres_reports_the_same() {
    let Some((server, dir)) = server() else {
        return;
    };
    let url = server.url();
    let lab = lab(dir.path());
    let out = run(dir.path(), &["--store", &url, "report"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("holds no dbdelta results store yet"),
        "{}",
        text(&out.stderr)
    );
    {
        let _lock = measuring();
        let args = [
            &run_args("local.db", &lab)[..],
            &["--name", "n1", "--tag", "t1"],
        ]
        .concat();
        ok(&run(dir.path(), &args));
    }
    let out = ok(&run(
        dir.path(),
        &[
            "--store", "local.db", "store", "push", "latest", "--to", &url,
        ],
    ));
    let id = run_ids(dir.path(), "local.db").pop().unwrap();
    assert!(out.starts_with(&format!("pushed run {id} (")), "{out}");
    assert_eq!(run_ids(dir.path(), &url), vec![id.clone()]);
    for format in ["text", "json", "csv"] {
        let report = |store: &str| {
            ok(&run(
                dir.path(),
                &["--store", store, "report", &id, "--format", format],
            ))
        };
        assert_eq!(report("local.db"), report(&url), "{format}");
    }
    // `dbdelta serve` reads the PostgreSQL store (a read-only session) as it reads the file.
    let (served, base) = common::serve::start_serve(dir.path(), &["--store", &url]);
    let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
    let home = common::serve::get(port, "/");
    assert!(
        home.starts_with("HTTP/1.1 200") && home.contains("<td>n1</td>"),
        "{home}"
    );
    let page = common::serve::get(port, &format!("/run/{id}"));
    assert!(page.contains("<h1>dbdelta report: "), "{page}");
    common::serve::stop_serve(served);
    // Its name and tag came along (schema v15 on PostgreSQL): both find it there.
    let by_name = ok(&run(dir.path(), &["--store", &url, "report", "n1"]));
    let by_tag = ok(&run(
        dir.path(),
        &["--store", &url, "report", "--tag", "t1"],
    ));
    assert_eq!(by_name, by_tag);
    let listed = ok(&run(dir.path(), &["--store", &url, "list", "runs"]));
    assert!(listed.contains("name n1  tags t1"), "{listed}");
    // `history` reads the PostgreSQL store as it reads the SQLite file: one point per target ×
    // step (one run: too few for change points).
    for format in ["text", "json"] {
        let history = |store: &str| {
            ok(&run(
                dir.path(),
                &["--store", store, "history", "--format", format],
            ))
        };
        assert_eq!(history("local.db"), history(&url), "{format}");
    }
    let json: serde_json::Value = serde_json::from_str(&ok(&run(
        dir.path(),
        &[
            "--store",
            &url,
            "history",
            "--lab",
            "pg store lab",
            "--format",
            "json",
        ],
    )))
    .unwrap();
    let series = json["series"].as_array().unwrap();
    assert_eq!(
        series.len(),
        4,
        "full and off × point-query and update-one: {json}"
    );
    for s in series {
        assert_eq!(s["points"][0]["run_name"], "n1", "{s}");
        assert!(s["points"][0]["value"].as_f64().unwrap() > 0.0, "{s}");
        assert!(
            s["too_few"].as_str().unwrap().starts_with("1 value(s)"),
            "{s}"
        );
    }

    // Pushed once: a second push is refused, and nothing changes.
    let out = run(
        dir.path(),
        &["--store", "local.db", "store", "push", &id, "--to", &url],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("is already in"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(run_ids(dir.path(), &url).len(), 1);
    // And back: PostgreSQL to a new SQLite file reports the same too.
    ok(&run(
        dir.path(),
        &["--store", &url, "store", "push", &id, "--to", "copy.db"],
    ));
    let report = |store: &str| ok(&run(dir.path(), &["--store", store, "report", &id]));
    assert_eq!(report("copy.db"), report("local.db"));
    drop(server);
}

#[test]
fn bad_and_unreachable_urls_are_one_line_without_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["--store", "postgres://u:hunter2@h:port/db", "list", "runs"],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--store \"postgres://u:***@h:port/db\""),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");

    // No server listens on this socket directory.
    let url = format!(
        "postgresql://u:hunter2@:5432/db?host={}",
        dir.path().display()
    );
    let out = run(dir.path(), &["--store", &url, "report"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("u:***@") && err.contains("cannot connect"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");

    let out = run(
        dir.path(),
        &["--store", "mysql://root@h/db", "list", "runs"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// One owner per run across hosts: a run one connection to the shared store holds (a
/// dbdelta running it) is refused to another (a second host's `--resume`) until the first
/// connection ends, however its dbdelta ended.
#[test]
fn a_run_is_held_by_one_connection_to_a_shared_store() {
    let Some((server, _dir)) = server() else {
        return;
    };
    let url = server.url();
    let run = "20261126-000000-0001";
    let mut one = dbdelta::store::Store::open(Path::new(&url)).unwrap();
    let mut two = dbdelta::store::Store::open(Path::new(&url)).unwrap();
    assert!(one.hold_run(run).unwrap(), "a free run");
    assert!(one.hold_run(run).unwrap(), "its holder may ask again");
    assert!(!two.hold_run(run).unwrap(), "another connection may not");
    assert!(
        two.hold_run("20261126-000000-0002").unwrap(),
        "another run is free"
    );
    drop(one);
    // The holder's backend ends after its client has gone, not with it: on a loaded host that
    // took longer than the next statement (seen once under a load average of 7), so wait for it,
    // up to a minute.
    let start = std::time::Instant::now();
    while !two.hold_run(run).unwrap() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "still held a minute after its holder was gone"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
