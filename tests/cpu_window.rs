//! A CPU/op that could not be measured is not a number: a step whose CPU sample
//! cannot cover its operations stores no value for it, flags it, and its report shows it as
//! below resolution, with no ratio, no verdict and no place in the tl;dr.
//!
//! Real binary, real embedded SQLite: 64 clients on a 50 ms step, shorter than the 10 clock
//! ticks a CPU time needs, so the outcome does not hang on how the host schedules the threads.

mod common;
use common::*;

use std::path::{Path, PathBuf};

use serde_json::Value;

fn lab(dir: &Path) -> PathBuf {
    let body = "[lab]\nname = \"lite\"\nrepeats = 2\n\n\
                [[target]]\nname = \"full\"\nengine = \"sqlite\"\nsettings = [\"synchronous = FULL\"]\n\n\
                [[target]]\nname = \"off\"\nengine = \"sqlite\"\nsettings = [\"synchronous = OFF\"]\n\n\
                [suite.sysbench]\nrows = 1000\nwarmup_secs = 0.05\nread_secs = 0.05\n";
    let path = dir.join("lite.toml");
    std::fs::write(&path, body).unwrap();
    path
}

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn a_cpu_sample_too_short_for_its_step_is_below_resolution_in_the_store_and_the_report() {
    let _lock = measuring();
    let dir = tempfile::tempdir().unwrap();
    let lab = lab(dir.path());
    let args = ["run", lab.to_str().unwrap(), "-q", "--only", "point-query"];
    ok(&run(
        dir.path(),
        &[&args[..], &["--clients", "64"]].concat(),
    ));

    // Stored: no number, and the flag that says why.
    let db = rusqlite::Connection::open(dir.path().join("dbdelta.db")).unwrap();
    let measured = "FROM measurements WHERE NOT warm AND step = 'point-query' ORDER BY rowid";
    let stored: Vec<(String, Option<f64>, Option<f64>)> = rows(
        &db,
        &format!("SELECT target, server_cpu_us_per_op, host_cpu_us_per_op {measured}"),
    );
    assert_eq!(stored.len(), 4, "{stored:?}");
    for (target, server, host) in &stored {
        assert_eq!((server, host), (&None, &None), "{target}: {stored:?}");
    }
    let flags: Vec<(String,)> = rows(&db, &format!("SELECT below_resolution {measured}"));
    for (flags,) in flags {
        let flags: Vec<String> = serde_json::from_str(&flags).unwrap();
        for id in ["server_cpu_us_per_op", "host_cpu_us_per_op"] {
            assert!(flags.iter().any(|f| f == id), "{flags:?}");
        }
    }

    // JSON: null and named, no ratio and no CPU verdict; QPS still judged.
    let json: Value =
        serde_json::from_str(&ok(&run(dir.path(), &["report", "--format", "json"]))).unwrap();
    assert_eq!(schema_errors(&json), Vec::<String>::new());
    for m in json["measurements"].as_array().unwrap() {
        assert_eq!(m["server_cpu_us_per_op"], Value::Null, "{m}");
        assert!(
            (m["below_resolution"].as_array().unwrap().iter()).any(|f| f == "server_cpu_us_per_op")
        );
    }
    let rel = &json["relative"][0];
    assert_eq!(rel["server_cpu_us_per_op"], Value::Null, "{rel}");
    assert_eq!(rel["server_cpu_test"], Value::Null, "{rel}");
    assert!(rel["qps_test"].is_object(), "{rel}");
    assert_eq!(rel["below_resolution"][0], "server_cpu_us_per_op", "{rel}");

    // Text: no CPU/op ratio in the tl;dr, `~` and no verdict on the CPU/op row, a warning.
    let report = ok(&run(dir.path(), &["report"]));
    let tldr: Vec<&str> = (report.lines())
        .skip_while(|l| *l != "tl;dr")
        .take_while(|l| *l != "Load")
        .collect();
    assert!(
        tldr.iter().all(|l| !l.contains("server CPU/op ")),
        "{report}"
    );
    let cpu_row = (report.lines())
        .find(|l| l.contains("| CPU/op |"))
        .unwrap_or_else(|| panic!("no CPU/op verdict row:\n{report}"));
    assert!(
        cpu_row.contains('~') && cpu_row.contains("no verdict"),
        "{cpu_row}"
    );
    assert!(report.contains("below resolution (4 steps)"), "{report}");
}

/// The CPUs this process may run on (its affinity mask), as dbdelta measures them for a run.
fn usable_cpus() -> usize {
    // SAFETY: sched_getaffinity(2) fills the zeroed set we own; pid 0 is this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        libc::CPU_COUNT(&set) as usize
    }
}

/// More clients than the CPUs dbdelta may use is a warning, from the CPUs it measured at the
/// start of the run: on this host, one client more than its CPUs is warned of, as many as its
/// CPUs is not (a 2-CPU host: `--clients 2,3`).
#[test]
fn more_clients_than_the_usable_cpus_is_a_warning() {
    let _lock = measuring();
    let dir = tempfile::tempdir().unwrap();
    let lab = lab(dir.path());
    let cpus = usable_cpus();
    let clients = format!("{cpus},{}", cpus + 1);
    let args = ["run", lab.to_str().unwrap(), "-q", "--only", "point-query"];
    ok(&run(
        dir.path(),
        &[&args[..], &["--repeats", "1", "--clients", &clients]].concat(),
    ));
    let report: Value =
        serde_json::from_str(&ok(&run(dir.path(), &["report", "--format", "json"]))).unwrap();
    let warnings: Vec<&str> = (report["warnings"].as_array().unwrap().iter())
        .filter_map(Value::as_str)
        .filter(|w| w.starts_with("clients beyond the CPUs"))
        .collect();
    let usable = report["run"]["host"]["usable_cpus"].as_str().unwrap();
    let said = format!(
        "clients beyond the CPUs: {} clients on the {cpus} CPU{} dbdelta may use ({usable})",
        cpus + 1,
        if cpus == 1 { "" } else { "s" }
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with(&said), "{said}\n{warnings:?}");
    let text = ok(&run(dir.path(), &["report"]));
    assert!(text.contains(&said), "{text}");
}
