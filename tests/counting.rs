//! The counting pass's honesty and pairing, end to end on embedded SQLite (its engine runs in
//! the count client under callgrind, so its dumps are the client's):
//! - a dump directory that fills up once the count client has started (a tmpfs mounted on it
//!   in a private mount namespace, then filled) fails the counting cell with one line naming
//!   `no space left on device` and the directory, within two minutes (the passes no longer
//!   grow to their maximum on counts of 0), the run exits 1, and nothing is stored as a count;
//! - two targets of one build counted at 16 clients run the same pass sizes, so that their
//!   pairs of passes pair.
//!
//! Needs valgrind (installed by `.ci/run`); the full directory also root and `unshare`.

mod common;
use common::faults::settle;
use common::*;

use std::path::Path;
use std::process::{Command, Stdio};

/// A lab of `targets` identical SQLite targets that counts instructions, `passes` pairs a step.
fn lab(dir: &Path, targets: &[&str], passes: u32) {
    let mut body = format!(
        "[lab]\nname = \"counting\"\nrepeats = 1\ninstructions = true\n\
         instruction_passes = {passes}\n"
    );
    for t in targets {
        body += &format!("\n[[target]]\nname = \"{t}\"\nengine = \"sqlite\"\n");
    }
    std::fs::write(dir.join("lab.toml"), body).unwrap();
}

/// Whether this test may make a private mount namespace (root, with util-linux's `unshare`).
fn can_unshare() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() == 0 };
    root && Command::new("unshare").arg("--version").output().is_ok()
}

/// The script run in the private mount namespace: the run in the background; its counting
/// cell's dump directory, once it exists, gets a 1 MiB tmpfs of its own, filled as soon as the
/// count client's valgrind has written its vgdb file there (on a full one, valgrind cannot
/// start: the client exits); then the run's exit. A run that goes on past 150 s is stopped as
/// by Ctrl-C.
fn fill_dumps_script(run: &str, filler: &str) -> String {
    format!(
        "timeout -s INT 150 {run} > out.txt 2> err.txt & run=$!\n\
         dumps=''\n\
         while [ -z \"$dumps\" ] && kill -0 $run 2>/dev/null; do\n\
           dumps=$(ls -d dbdelta-work/*/*.count.callgrind 2>/dev/null | head -n 1); sleep 0.01\n\
         done\n\
         [ -n \"$dumps\" ] || {{ wait $run; echo \"no dump directory: exit $?\"; exit 98; }}\n\
         mount -t tmpfs -o size=1m dbdelta-dumps \"$dumps\" || exit 99\n\
         while [ -z \"$(find \"$dumps\" -name 'vgdb-shared-mem-*' -size +0c)\" ] \\\n\
               && kill -0 $run 2>/dev/null; do sleep 0.01; done\n\
         head -c {filler} /dev/zero > \"$dumps/filler\" 2>/dev/null\n\
         echo \"dumps $dumps\"\n\
         wait $run; echo \"exit $?\"\n\
         umount \"$dumps\"\n"
    )
}

/// A run of one SQLite target's `point-query` whose dump directory is filled with `filler`
/// of its 1 MiB once the count client started: it fails in one line naming the full file
/// system, the directory and the dump, whose problem is `what`; nothing is stored as a count.
fn fails_on_a_full_dump_directory(filler: &str, what: &str) {
    let dir = scratch();
    let d = dir.path();
    lab(d, &["a"], 1);
    let command = format!(
        "'{}' run lab.toml --quick --only point-query",
        env!("CARGO_BIN_EXE_dbdelta")
    );
    let started = std::time::Instant::now();
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(fill_dumps_script(&command, filler))
        .current_dir(d)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let script = format!("{}{}", text(&out.stdout), text(&out.stderr));
    let said = std::fs::read_to_string(d.join("err.txt")).unwrap_or_default()
        + &std::fs::read_to_string(d.join("out.txt")).unwrap_or_default();
    eprintln!("{filler}: {script}{said}");
    eprintln!(
        "{filler}: ended in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(script.contains("exit 1"), "the run fails: {script}");
    let dumps = (script.lines())
        .find_map(|l| l.strip_prefix("dumps "))
        .expect(&script);
    let dumps = d.join(dumps).canonicalize().unwrap();
    let line = (said.lines())
        .find(|l| l.contains("counting instructions:"))
        .expect(&said);
    let cause = format!("no space left on device in {}", dumps.display());
    assert!(line.contains(&cause), "the cause and the directory: {line}");
    assert!(
        line.contains("callgrind's dump") && line.contains(what),
        "{line}"
    );
    // Nothing counted is stored as a count: the step's row has none.
    let report = run(d, &["report", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let row = (report["measurements"].as_array().unwrap().iter())
        .find(|m| m["target"] == "a" && m["step"] == "point-query")
        .expect("the timed row");
    assert_eq!(row["server_instructions_per_op"], serde_json::Value::Null);
    let db = rusqlite::Connection::open(d.join("dbdelta.db")).unwrap();
    let counted: Vec<(i64,)> = rows(
        &db,
        "SELECT count(*) FROM measurements WHERE server_instructions_per_op IS NOT NULL",
    );
    assert_eq!(counted, [(0,)]);
    assert_eq!(settle(d), Vec::new());
}

#[test]
fn a_full_dump_directory_fails_the_count_naming_it_and_stores_no_count() {
    if !valgrind_installed() {
        return;
    }
    if !can_unshare() {
        eprintln!("needs root and unshare: not checked");
        return;
    }
    let _lock = measuring();
    // Full: callgrind creates each dump and writes nothing into it.
    fails_on_a_full_dump_directory("2m", "is empty");
    // 64 kB left: the first dumps fit, a sizing pass's is cut short.
    fails_on_a_full_dump_directory("960k", "ends before its totals line");
}

#[test]
fn targets_of_one_build_run_the_same_pass_sizes_at_16_clients() {
    if !valgrind_installed() {
        return;
    }
    let dir = scratch();
    let d = dir.path();
    lab(d, &["a", "b"], 1);
    let args = [
        "-q",
        "run",
        "lab.toml",
        "--quick",
        "--clients",
        "16",
        "--only",
        "update-index",
    ];
    let out = {
        let _lock = measuring();
        run(d, &args)
    };
    assert!(out.status.success(), "run failed: {}", text(&out.stderr));
    let db = rusqlite::Connection::open(d.join("dbdelta.db")).unwrap();
    let pairs: Vec<(String, Option<String>)> = rows(
        &db,
        "SELECT target, server_instructions_pairs FROM measurements \
         WHERE step = 'update-index' AND clients = 16 ORDER BY target",
    );
    eprintln!("{pairs:#?}");
    let events: Vec<u64> = (pairs.iter())
        .map(|(target, json)| {
            let json = json
                .as_deref()
                .unwrap_or_else(|| panic!("{target}: no pairs"));
            let json: serde_json::Value = serde_json::from_str(json).unwrap();
            json["events"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(events.len(), 2, "{pairs:?}");
    assert_eq!(events[0], events[1], "one build, one size: {pairs:?}");
}
