//! Build variants: SQLite compiled from its amalgamation with `o2`, `os` and `pgo`
//! (trained on the sysbench catalog at `--quick` scale), compared in one `--quick` lab with the
//! bundled library; each target loaded its own library (the file that provides its SQLite
//! functions, recorded by the engine, is that build's), the PGO build read its profile, the
//! cache never compiles a key twice, and a build with a bad flag fails only its target, with the
//! compiler's message and the build log's path. And `dbdelta bisect`
//! over eight targets whose build changes at one known position.

mod common;
use common::*;

use std::path::{Path, PathBuf};

/// The SQLite amalgamation the bundled library is built from: `libsqlite3-sys`'s `sqlite3/`
/// directory in cargo's registry (always there: dbdelta depends on it).
fn amalgamation() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cargo"));
    let registry = home.join("registry").join("src");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&registry)
        .unwrap_or_else(|e| panic!("{}: {e}", registry.display()))
        .flatten()
        .flat_map(|index| {
            std::fs::read_dir(index.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("libsqlite3-sys-"))
                && p.join("sqlite3/sqlite3.c").is_file()
        })
        .collect();
    found.sort();
    found
        .pop()
        .expect("libsqlite3-sys with its bundled sqlite3.c in cargo's registry")
        .join("sqlite3")
}

fn target<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no target {name}"))
}

#[test]
fn sqlite_variants_load_their_own_library_and_a_bad_flag_fails_only_its_target() {
    let _lock = measuring();
    let dir = scratch();
    let cache = dir.path().join("cache");
    let src = amalgamation();
    let build = |variant: &str, extra: &str| {
        format!(
            "build = {{ source = \"{}\", variant = \"{variant}\"{extra} }}",
            src.display()
        )
    };
    let lab = format!(
        "[lab]\nname = \"sqlite builds\"\n\n\
         [[target]]\nname = \"bundled\"\nengine = \"sqlite\"\n\
         [[target]]\nname = \"o2\"\nengine = \"sqlite\"\n{}\n\
         [[target]]\nname = \"os\"\nengine = \"sqlite\"\n{}\n\
         [[target]]\nname = \"pgo\"\nengine = \"sqlite\"\n{}\n\
         [[target]]\nname = \"bad\"\nengine = \"sqlite\"\n{}\n\
         [suite.sysbench]\nrows = 2000\n",
        build("o2", ""),
        build("os", ""),
        build("pgo", ", train_scale = \"quick\""),
        build("o2", ", cflags = \"-fno-such-flag-for-dbdelta\""),
    );
    std::fs::write(dir.path().join("lab.toml"), lab).unwrap();

    // --dry-run says what would be built, and builds nothing.
    let out = dbdelta(dir.path())
        .env("DBDELTA_CACHE", &cache)
        .args(["run", "--dry-run", "lab.toml"])
        .output()
        .unwrap();
    let plan = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        plan.contains("target pgo: not cached: will build sqlite"),
        "{plan}"
    );
    assert!(
        plan.contains("(trained on sysbench at quick scale)"),
        "{plan}"
    );
    assert!(
        !cache.join("compiled").exists(),
        "--dry-run compiled something"
    );

    let out = dbdelta(dir.path())
        .env("DBDELTA_CACHE", &cache)
        .args(["--store", "s.db", "run", "--quick", "lab.toml"])
        .args(["--only", "point-query,read-only_range=10,update-index"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "only the bad build fails: {err}"
    );
    assert!(
        err.contains("target bad: build failed; the other targets run"),
        "{err}"
    );
    assert!(
        err.contains("-fno-such-flag-for-dbdelta"),
        "the compiler's message: {err}"
    );
    assert!(err.contains("build.log"), "the log path: {err}");

    let out = run(
        dir.path(),
        &["--store", "s.db", "report", "--format", "json"],
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema_errors(&report), Vec::<String>::new());
    let bad = target(&report, "bad");
    assert_eq!(bad["failed"], true);
    let log = bad["log_path"]
        .as_str()
        .expect("the failed build's log path");
    assert!(
        std::fs::read_to_string(log)
            .unwrap()
            .contains("-fno-such-flag-for-dbdelta")
    );

    let bundled = target(&report, "bundled");
    assert!(bundled.get("build").is_none());
    let mut libraries = Vec::new();
    for name in ["o2", "os", "pgo"] {
        let t = target(&report, name);
        assert_eq!(t["failed"], false, "{t}");
        let b = &t["build"];
        assert_eq!(b["variant"], name);
        assert!(b["text_bytes"].as_u64().unwrap() > 100_000, "{b}");
        let own = Path::new(b["dir"].as_str().unwrap()).join("lib/libsqlite3.so");
        // The base (bundled) says `library = bundled`; each built target differs from it by
        // the file that provided its SQLite functions (dladdr on one of them).
        let library = t["settings_diff"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["key"] == "library")
            .unwrap_or_else(|| panic!("{name}: no library difference: {t}"));
        assert_eq!(library["base"], "bundled");
        let loaded = library["target"].as_str().expect("the loaded library");
        assert_eq!(Path::new(loaded), own.canonicalize().unwrap(), "{name}");
        libraries.push(loaded.to_string());
        let steps = report["measurements"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["target"] == name && m["ops"].as_u64().unwrap() > 0)
            .count();
        assert_eq!(steps, 3, "{name}: every step measured");
    }
    libraries.dedup();
    assert_eq!(libraries.len(), 3, "each target its own library");
    assert_ne!(
        target(&report, "o2")["server_version"],
        serde_json::Value::Null
    );
    let os = target(&report, "os")["build"]["text_bytes"]
        .as_u64()
        .unwrap();
    let o2 = target(&report, "o2")["build"]["text_bytes"]
        .as_u64()
        .unwrap();
    assert!(os < o2, "-Os makes a smaller .text: os {os} vs o2 {o2}");

    // The PGO build was trained (its profile holds counts) and compiled with that profile.
    let pgo = &target(&report, "pgo")["build"];
    let training = pgo["training"].as_str().unwrap();
    assert!(
        training.starts_with("sysbench at quick scale"),
        "{training}"
    );
    let profile = training
        .rsplit("profile in ")
        .next()
        .unwrap()
        .trim_end_matches(')');
    let gcda = std::fs::read_dir(profile)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "gcda"))
        .count();
    assert!(gcda >= 1, "no profile in {profile}");
    let log = Path::new(pgo["dir"].as_str().unwrap()).join("build.log");
    let log = std::fs::read_to_string(log).unwrap();
    assert!(!log.contains("profile count data file not found"), "{log}");

    // The text report shows the builds.
    let out = run(dir.path(), &["--store", "s.db", "report"]);
    let report = text(&out.stdout);
    assert!(report.contains("Builds (dbdelta build"), "{report}");

    // The same key is never compiled twice.
    let out = dbdelta(dir.path())
        .env("DBDELTA_CACHE", &cache)
        .args(["build", "sqlite", "--variant", "os", "--source"])
        .arg(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cached in"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        Path::new(text(&out.stdout).trim()).canonicalize().unwrap(),
        Path::new(&libraries[1]).canonicalize().unwrap()
    );
}

#[test]
fn bad_build_input_is_one_line_naming_the_key() {
    let dir = scratch();
    let cases = [
        (
            "engine = \"sqlite\"\nbuild = { variant = \"o4\" }",
            "unknown variant \"o4\"",
        ),
        (
            "engine = \"postgres\"\nbuild = { variant = \"lto\" }",
            "needs a source",
        ),
        (
            "engine = \"sqlite\"\nbuild = { variant = \"pgo\", train = \"tpcc\" }",
            "PGO trains on sysbench, insert or linkbench",
        ),
        (
            "engine = \"sqlite\"\nlibrary = \"/nonexistent/libsqlite3.so\"",
            "does not exist",
        ),
        (
            "engine = \"postgres\"\nbin = \"/usr\"\nbuild = { source = \"postgresql-15\" }",
            "remove bin, version and library",
        ),
        ("engine = \"sqlite\"\nbuild = { sauce = \"x\" }", "sauce"),
    ];
    for (target, expected) in cases {
        let lab =
            format!("[lab]\nname = \"x\"\n[[target]]\nname = \"a\"\n{target}\n[suite.sysbench]\n");
        std::fs::write(dir.path().join("lab.toml"), lab).unwrap();
        let out = run(dir.path(), &["run", "--dry-run", "lab.toml"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{target}: {err}");
        assert!(err.contains(expected), "{target}: {err}");
    }
    let out = run(dir.path(), &["build", "sqlite", "--variant", "o9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--variant: unknown variant \"o9\""));
}

/// `dbdelta build mysql` on MariaDB's source, and `build mariadb` on Oracle MySQL's (a
/// directory, or a tarball that is only looked into once unpacked), are refused with one line
/// naming the command that builds it, exit 2, and nothing left in the cache. The two trees are
/// told apart by MariaDB's Aria engine (`storage/maria`), which only MariaDB's trees have.
#[test]
fn a_source_of_the_other_product_is_refused_in_one_line() {
    let dir = scratch();
    let cache = dir.path().join("cache");
    let tree = |name: &str, file: &str| {
        let root = dir.path().join(name);
        std::fs::create_dir_all(root.join("sql")).unwrap();
        if file == "VERSION" {
            std::fs::create_dir_all(root.join("storage/maria")).unwrap();
        }
        std::fs::write(root.join("CMakeLists.txt"), "project(x)\n").unwrap();
        std::fs::write(
            root.join(file),
            "MYSQL_VERSION_MAJOR=11\nMYSQL_VERSION_MINOR=4\nMYSQL_VERSION_PATCH=5\n",
        )
        .unwrap();
        root
    };
    let mariadb = tree("mariadb-11.4.5", "VERSION");
    let mysql = tree("mysql-9.7.2", "MYSQL_VERSION");
    let tarball = dir.path().join("mariadb-11.4.5.tar.gz");
    let tar = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir.path())
        .arg("mariadb-11.4.5")
        .status()
        .unwrap();
    assert!(tar.success());
    let cases = [
        (
            "mysql",
            mariadb.display().to_string(),
            "is MariaDB's source (it has storage/maria, MariaDB's Aria engine); build it with `dbdelta build mariadb`",
        ),
        (
            "mysql",
            tarball.display().to_string(),
            "is MariaDB's source (it has storage/maria, MariaDB's Aria engine); build it with `dbdelta build mariadb`",
        ),
        (
            "mariadb",
            mysql.display().to_string(),
            "is Oracle MySQL's source (it has a MySQL version file and no storage/maria, MariaDB's Aria engine); build it with `dbdelta build mysql`",
        ),
    ];
    for (engine, source, expected) in cases {
        let out = dbdelta(dir.path())
            .env("DBDELTA_CACHE", &cache)
            .args(["build", engine, "--source", &source])
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{engine} {source}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with("build ")).collect();
        assert_eq!(lines.len(), 1, "one line: {err}");
        assert!(lines[0].contains(expected), "{err}");
        let left: Vec<_> = walk(&cache.join("compiled"));
        assert!(left.is_empty(), "nothing cached: {left:?}");
    }
}

/// A build stopped by SIGTERM (exit 143) keeps its tree and writes no record; the same build
/// asked again says it continues in that tree and finishes there. The compiler is a script
/// (the test-only family's recipe runs `CC`) that, in a fresh tree, leaves a file and waits to
/// be stopped, and in a tree holding that file compiles: a second sitting that unpacked the
/// source again would find no file and fail.
#[test]
fn a_stopped_build_keeps_its_tree_and_the_same_build_continues_in_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let cache = dir.path().join("cache");
    let src = dir.path().join("fake-src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("fake.c"), "int main(void) { return 0; }\n").unwrap();
    std::fs::write(src.join("VERSION"), "1.2.3\n").unwrap();
    let cc = dir.path().join("cc");
    std::fs::write(
        &cc,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'stopcc 1'; exit 0; }\n\
         [ -e first-sitting ] && exec gcc \"$@\"\n\
         [ -n \"$SECOND\" ] && { echo 'a fresh tree: the build did not continue' >&2; exit 1; }\n\
         touch first-sitting; echo '[ 40%] Building C object fake.o'; exec sleep 120\n",
    )
    .unwrap();
    std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let build = |second: bool| {
        let mut cmd = dbdelta(dir.path());
        cmd.env("DBDELTA_TEST_SUITES", "1")
            .env("DBDELTA_CACHE", &cache)
            .env("CC", &cc)
            .args(["build", "fake", "--source", src.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if second {
            cmd.env("SECOND", "1");
        }
        cmd.spawn().unwrap()
    };
    let first = build(false);
    let started = std::time::Instant::now();
    let marker = || {
        walk(&cache.join("compiled").join("work"))
            .into_iter()
            .find(|p| p.ends_with("src/first-sitting"))
    };
    while marker().is_none() {
        assert!(
            started.elapsed().as_secs() < 60,
            "the compile never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: kill(2) on the child we spawned; it touches no memory.
    unsafe { libc::kill(first.id() as i32, libc::SIGTERM) };
    let out = first.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(
        err.contains("the build tree is kept, so the same command continues the build"),
        "{err}"
    );
    let records = |c: &Path| {
        walk(&c.join("compiled"))
            .into_iter()
            .filter(|p| p.ends_with("build.json"))
            .count()
    };
    assert_eq!(
        records(&cache),
        0,
        "a stopped build is never cached as finished"
    );
    let out = build(true).wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("continuing the build kept in"), "{err}");
    let bin = PathBuf::from(text(&out.stdout).trim());
    assert!(bin.join("fake").is_file(), "{}", bin.display());
    assert_eq!(records(&cache), 1);
    assert!(marker().is_none(), "the tree goes once the build is cached");
}

/// Every file under `dir` (none when it does not exist).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

/// Eight SQLite targets whose build changes at position 3 (-O1, -O1,
/// -O1, -O0, -O0, -O0, -O0, -O0: two keys, each compiled once, in about 40 s together on a
/// loaded 2-core host; -O0 runs about twice the instructions of -O1, where o2 and os differ by
/// 5% and take three times as long to compile). Deciding by instructions/op, `bisect` names
/// t3 after measuring at most four targets, and its run holds exactly those targets' cells.
/// About 100 s on a loaded 2-core host, builds included.
#[test]
fn bisect_names_the_first_changed_build_after_four_probes() {
    if !valgrind_installed() {
        return;
    }
    let _lock = measuring();
    let dir = scratch();
    let src = amalgamation();
    let mut lab = String::from(
        "[lab]\nname = \"O1 to O0\"\nrepeats = 1\ninstructions = true\ninstruction_passes = 2\n",
    );
    for i in 0..8 {
        let flags = if i < 3 { "-O1" } else { "-O0" };
        lab.push_str(&format!(
            "[[target]]\nname = \"t{i}\"\nengine = \"sqlite\"\n\
             build = {{ source = \"{}\", variant = \"custom\", cflags = \"{flags}\" }}\n",
            src.display()
        ));
    }
    std::fs::write(dir.path().join("lab.toml"), lab).unwrap();
    let out = dbdelta(dir.path())
        .env("DBDELTA_CACHE", dir.path().join("cache"))
        .args([
            "-q",
            "--store",
            "s.db",
            "bisect",
            "lab.toml",
            "--step",
            "point-query",
        ])
        .args(["--quick", "--rows", "200"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("decided by instructions/op"), "{stdout}");
    let answer = stdout.lines().last().unwrap();
    assert!(
        answer.starts_with("first changed: t3 (-O0): instructions/op "),
        "{stdout}"
    );
    assert!(
        answer.contains("x t2 (-O1) on point-query (c=1), regression"),
        "{answer}"
    );
    let probes: Vec<&str> = (answer.split("probes: ").nth(1).unwrap())
        .split(';')
        .next()
        .unwrap()
        .split(", ")
        .collect();
    assert!(probes.len() <= 4, "{answer}");
    assert!(
        answer.contains(&format!("{} of 8 measured", probes.len())),
        "{answer}"
    );

    // One run, holding exactly the probed targets, each with its timed and its counting cell.
    let db = rusqlite::Connection::open(dir.path().join("s.db")).unwrap();
    let col = |sql: &str| -> Vec<String> {
        let r: Vec<(String,)> = rows(&db, sql);
        r.into_iter().map(|(v,)| v).collect()
    };
    let mut probed: Vec<String> = probes.iter().map(|p| p.to_string()).collect();
    probed.sort();
    assert_eq!(col("SELECT name FROM targets ORDER BY name"), probed);
    let cells = "SELECT target || ':' || repeat FROM cells ORDER BY target, repeat";
    let want: Vec<String> = (probed.iter())
        .flat_map(|t| [format!("{t}:0"), format!("{t}:1")])
        .collect();
    assert_eq!(col(cells), want);
    let measured = "SELECT DISTINCT target FROM measurements ORDER BY target";
    assert_eq!(col(measured), probed);
    assert_eq!(col("SELECT CAST(count(*) AS TEXT) FROM runs"), ["1"]);

    // The answer is stored, and the run is a report like any other.
    let shown = run(
        dir.path(),
        &["--store", "s.db", "bisect", "--show", "latest"],
    );
    assert!(
        text(&shown.stdout).ends_with(&format!("{answer}\n")),
        "{}",
        text(&shown.stdout)
    );
    let out = run(
        dir.path(),
        &["--store", "s.db", "report", "--format", "json"],
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema_errors(&report), Vec::<String>::new());
}
