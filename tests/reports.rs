//! Reports of real runs: the CSV loads into pandas-like readers and the real `sqlite3` shell
//! without fixes, a failed target is warned about in every format, and `dbdelta compare`
//! pairs two stored runs of the same lab and refuses runs of another scale or client count.
//!
//! Real binary, real embedded SQLite, tiny tables and sub-second steps.

mod common;
use common::*;

use std::path::{Path, PathBuf};

use dbdelta::report::csv::{BOOLEAN_COLUMNS, COLUMNS, TEXT_COLUMNS};

fn lab(dir: &Path, file: &str, targets: &str, rows: u32) -> PathBuf {
    let body = format!(
        "[lab]\nname = \"report lab\"\n\n{targets}\n[suite.sysbench]\nrows = {rows}\n\
         warmup_secs = 0.1\nread_secs = 0.3\nwrite_secs = 0.3\n"
    );
    let path = dir.join(file);
    std::fs::write(&path, body).unwrap();
    path
}

const GOOD: &str = "[[target]]\nname = \"a\"\nengine = \"sqlite\"\n";
const TYPO: &str =
    "[[target]]\nname = \"typo\"\nengine = \"sqlite\"\nsettings = [\"synchronus = OFF\"]\n";
const STEPS: [&str; 4] = ["--only", "point-query", "--only", "update-one"];

fn run_lab(dir: &Path, lab: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run", lab.to_str().unwrap(), "-q"];
    args.extend(STEPS);
    args.extend(extra);
    run(dir, &args)
}

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn csv_of_a_run_with_a_failed_target_loads_in_sqlite3_and_every_format_warns() {
    let _lock = measuring();
    let dir = tempfile::tempdir().unwrap();
    let lab = lab(dir.path(), "lab.toml", &format!("{GOOD}\n{TYPO}"), 2000);
    let out = run_lab(dir.path(), &lab, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));

    let out = run(dir.path(), &["report", "--format", "csv", "-o", "r.csv"]);
    ok(&out);
    let csv = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(header, COLUMNS);
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    let col = |name: &str| COLUMNS.iter().position(|c| *c == name).unwrap();
    // a: 2 steps at 1 client; typo failed before measuring: a failed row per step.
    assert_eq!(rows.len(), 4, "{csv}");
    let mut qps_sum = 0.0;
    for r in &rows {
        for (c, v) in COLUMNS.iter().zip(r.iter()) {
            if BOOLEAN_COLUMNS.contains(c) {
                assert!(v == "true" || v == "false", "{c}: {v:?}");
            } else if !TEXT_COLUMNS.contains(c) {
                assert!(
                    v.is_empty() || v.parse::<f64>().is_ok(),
                    "{c}: {v:?} is neither a number nor empty"
                );
            }
        }
        qps_sum += r[col("qps")].parse::<f64>().unwrap_or(0.0);
        match &r[col("target")] {
            "a" => {
                assert_eq!(&r[col("failed")], "false");
                assert!(r[col("qps")].parse::<f64>().unwrap() > 0.0);
            }
            "typo" => {
                assert_eq!(
                    (&r[col("failed")], &r[col("target_failed")]),
                    ("true", "true")
                );
                assert!(r[col("error")].contains("synchronus"), "{r:?}");
                assert_eq!(&r[col("qps")], "");
            }
            other => panic!("unexpected target {other}"),
        }
    }

    // The real sqlite3 shell imports it as it is; its numbers sum like ours.
    if sqlite3_installed() {
        let out = std::process::Command::new("sqlite3")
            .current_dir(dir.path())
            .args([
                "-bail",
                "-cmd",
                ".import --csv r.csv r",
                ":memory:",
                "SELECT count(*), sum(qps), sum(failed = 'true'), \
                 sum(client_bound = 'true'), typeof(max(qps) + 0) FROM r;",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "sqlite3: {}", text(&out.stderr));
        assert!(
            out.stderr.is_empty(),
            "sqlite3 complained: {}",
            text(&out.stderr)
        );
        let line = text(&out.stdout);
        let f: Vec<&str> = line.trim().split('|').collect();
        assert_eq!(f[0], "4", "{line}");
        let sum: f64 = f[1].parse().unwrap();
        assert!((sum - qps_sum).abs() < 1e-6 * qps_sum, "{sum} vs {qps_sum}");
        assert_eq!(&f[2..], ["2", "0", "real"], "{line}");
    }

    // Every format warns about the failed target.
    let warning = "target typo failed:";
    for format in ["text", "md"] {
        let out = ok(&run(dir.path(), &["report", "--format", format]));
        assert!(
            out.contains(warning) && out.contains("synchronus"),
            "{format}: {out}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&ok(&run(dir.path(), &["report", "--format", "json"]))).unwrap();
    assert!(
        schema_errors(&json).is_empty(),
        "{:?}",
        schema_errors(&json)
    );
    let warnings = json["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().starts_with(warning)),
        "{warnings:?}"
    );
}

#[test]
fn compare_pairs_two_runs_and_refuses_another_scale_or_client_count() {
    let _lock = measuring();
    let dir = tempfile::tempdir().unwrap();
    let same = lab(dir.path(), "lab.toml", GOOD, 2000);
    ok(&run_lab(dir.path(), &same, &[]));
    ok(&run_lab(dir.path(), &same, &[]));

    let out = ok(&run(dir.path(), &["compare", "previous", "latest"]));
    assert!(out.starts_with("dbdelta compare: report lab"), "{out}");
    assert!(
        out.contains("Relative QPS, point queries (vs run A = "),
        "{out}"
    );
    assert!(out.contains("a@B"), "{out}");
    let json: serde_json::Value = serde_json::from_str(&ok(&run(
        dir.path(),
        &["compare", "previous", "latest", "--format", "json"],
    )))
    .unwrap();
    assert!(
        schema_errors(&json).is_empty(),
        "{:?}",
        schema_errors(&json)
    );
    let relative = json["relative"].as_array().unwrap();
    let steps: Vec<&str> = relative
        .iter()
        .map(|r| r["step"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["point-query", "update-one"], "per-step ratios");
    for r in relative {
        assert_eq!(
            (r["target"].as_str(), r["base"].as_str()),
            (Some("a@B"), Some("a@A"))
        );
        assert!(r["qps"].as_f64().unwrap() > 0.0, "{r}");
    }
    let ids: Vec<String> = text(&run(dir.path(), &["list", "runs"]).stdout)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2);
    assert_eq!(json["compare"]["a"]["id"], ids[0].as_str());
    let csv = ok(&run(
        dir.path(),
        &["compare", &ids[0], &ids[1], "--format", "csv"],
    ));
    assert_eq!(csv.lines().count(), 1 + 4, "2 steps × a@A, a@B:\n{csv}");
    // A compare has charts too: --png writes them (a@B's bars against a@A).
    let charts = dir.path().join("charts");
    ok(&run(
        dir.path(),
        &[
            "compare",
            "previous",
            "latest",
            "--png",
            charts.to_str().unwrap(),
        ],
    ));
    let pngs: Vec<_> = std::fs::read_dir(&charts)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".png"))
        .collect();
    assert!(
        pngs.iter().any(|n| n.starts_with("relative-qps-")),
        "{pngs:?}"
    );

    // Refusals: one line, exit 2, both values and the fix.
    let refused = |args: &[&str], expected: &[&str]| {
        let out = run(dir.path(), args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        for e in expected {
            assert!(err.contains(e), "{args:?}: {err} lacks {e}");
        }
    };
    refused(
        &["compare", "nope", "latest"],
        &["no run nope", "dbdelta list runs"],
    );
    refused(&["compare", "latest", &ids[1]], &["both run", &ids[1]]);
    let bigger = lab(dir.path(), "bigger.toml", GOOD, 3000);
    ok(&run_lab(dir.path(), &bigger, &[]));
    refused(
        &["compare", &ids[0], "latest"],
        &[
            &format!("run {} loaded 1×2000 rows per table", ids[0]),
            "loaded 1×3000",
            "compare runs of the same [suite.sysbench] tables/rows",
        ],
    );
    ok(&run_lab(dir.path(), &same, &["--clients", "2"]));
    refused(
        &["compare", &ids[0], "latest"],
        &[
            &format!("run {} ran with clients = [1]", ids[0]),
            "with clients = [2];",
            "--clients",
        ],
    );
}
