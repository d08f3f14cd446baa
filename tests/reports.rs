//! Reports of real runs: the CSV loads into pandas-like readers and the real `sqlite3` shell
//! without fixes, a failed target is warned about in every format, and `dbdelta compare`
//! pairs two stored runs of the same lab (an A/A: no verdict, the runs were not interleaved)
//! and refuses runs of another scale or client count.
//!
//! Real binary, real embedded SQLite, tiny tables and sub-second steps.

mod common;
use common::*;

use std::path::{Path, PathBuf};

use dbdelta::report::csv::{columns, is_boolean, is_text};

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
    let columns = columns();
    assert_eq!(header, columns);
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    let col = |name: &str| columns.iter().position(|c| c == name).unwrap();
    // a: 2 steps at 1 client; typo failed before measuring: a failed row per step.
    assert_eq!(rows.len(), 4, "{csv}");
    let mut qps_sum = 0.0;
    for r in &rows {
        for (c, v) in columns.iter().zip(r.iter()) {
            if is_boolean(c) {
                assert!(v == "true" || v == "false", "{c}: {v:?}");
            } else if !is_text(c) {
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
    // An A/A of two separate runs, with the repeats a run's own verdicts need.
    ok(&run_lab(dir.path(), &same, &["--repeats", "2"]));
    ok(&run_lab(dir.path(), &same, &["--repeats", "2"]));

    let out = ok(&run(dir.path(), &["compare", "previous", "latest"]));
    assert!(out.starts_with("dbdelta compare: report lab"), "{out}");
    assert!(
        out.contains("Relative QPS, point queries (vs run A = "),
        "{out}"
    );
    assert!(out.contains("a@B"), "{out}");
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("The runs were not interleaved"), "{out}");
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
        // Separate runs: repeats are not pairs, so no verdict on QPS or CPU/op, only ratios.
        assert!(r["verdict"].is_null() && r["qps_test"].is_null(), "{r}");
        assert!(r["server_cpu_test"].is_null(), "{r}");
    }
    assert_eq!(json["method"]["test"], "none");
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

/// A client sweep of two SQLite targets that differ by a setting: the concurrency section in
/// text, the group QPS and crossovers in the JSON (each number checked against the JSON's own
/// aggregates, each crossover against its ratios), and the QPS-against-clients charts.
#[test]
fn a_client_sweep_reports_group_qps_against_clients_and_the_crossover() {
    let _lock = measuring();
    let dir = tempfile::tempdir().unwrap();
    let small_cache = "[[target]]\nname = \"small-cache\"\nengine = \"sqlite\"\nsettings = [\"cache_size = -64\"]\n";
    let lab = lab(
        dir.path(),
        "lab.toml",
        &format!("{GOOD}\n{small_cache}"),
        2000,
    );
    let mut args = vec!["run", lab.to_str().unwrap(), "-q"];
    args.extend(["--clients", "1,2", "--repeats", "2"]);
    args.extend(STEPS);
    args.extend(["--only", "random-points_range=10"]);
    ok(&run(dir.path(), &args));

    let json: serde_json::Value =
        serde_json::from_str(&ok(&run(dir.path(), &["report", "--format", "json"]))).unwrap();
    assert!(
        schema_errors(&json).is_empty(),
        "{:?}",
        schema_errors(&json)
    );
    let qps_of = |target: &str, step: &str, clients: u64| -> f64 {
        json["aggregates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["target"] == target && a["step"] == step && a["clients"] == clients)
            .and_then(|a| a["qps"].as_f64())
            .unwrap_or_else(|| panic!("no QPS for {target} {step} {clients}"))
    };
    // Group QPS: the geometric mean of the group's steps' QPS, per target and client count.
    let groups = [
        ("point", vec!["point-query", "random-points_range=10"]),
        ("writes", vec!["update-one"]),
    ];
    let group_qps = json["group_qps"].as_array().unwrap();
    assert_eq!(group_qps.len(), 2 * 2 * 2, "{group_qps:?}");
    for g in group_qps {
        let (target, clients) = (
            g["target"].as_str().unwrap(),
            g["clients"].as_u64().unwrap(),
        );
        let steps = &groups.iter().find(|x| g["group"] == x.0).unwrap().1;
        let logs: f64 = steps.iter().map(|s| qps_of(target, s, clients).ln()).sum();
        let want = (logs / steps.len() as f64).exp();
        let got = g["qps"].as_f64().unwrap();
        assert!((got - want).abs() <= 1e-9 * want, "{g}: want {want}");
    }
    // One crossover per group for the compared target, its kind following its ratios.
    let crossovers = json["crossovers"].as_array().unwrap();
    assert_eq!(crossovers.len(), 2, "{crossovers:?}");
    let text_report = ok(&run(dir.path(), &["report"]));
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    for x in crossovers {
        assert_eq!(
            (x["target"].as_str(), x["base"].as_str()),
            (Some("small-cache"), Some("a"))
        );
        let points = x["points"].as_array().unwrap();
        let ratios: Vec<f64> = points
            .iter()
            .map(|p| {
                let r = p["ratio"].as_f64().unwrap();
                let want = p["target_qps"].as_f64().unwrap() / p["base_qps"].as_f64().unwrap();
                assert!((r - want).abs() < 1e-12 * want, "{p}");
                assert_eq!(p["paired_repeats"], 2, "{p}");
                assert!(p["qps_test"].is_object(), "2 repeats give a verdict: {p}");
                r
            })
            .collect();
        let (kind, clients) = match (ratios[0] > 1.0, ratios[1] > 1.0) {
            (false, true) => ("overtakes", serde_json::json!(2)),
            (true, false) => ("falls_behind", serde_json::json!(2)),
            (true, true) => ("faster_throughout", serde_json::Value::Null),
            (false, false) => ("slower_throughout", serde_json::Value::Null),
        };
        assert_eq!(
            (x["kind"].as_str(), &x["clients"]),
            (Some(kind), &clients),
            "{x}"
        );
        // Two counts with a verdict each: confirmed or within noise, never unconfirmed.
        let noise = x["noise"].as_str().unwrap();
        assert!(["confirmed", "within_noise"].contains(&noise), "{x}");
        // The sentence leads the tl;dr and stands in the text report.
        let sentence = x["sentence"].as_str().unwrap();
        let title = if x["group"] == "point" {
            "point queries"
        } else {
            "writes"
        };
        assert!(sentence.contains(&format!(" a on {title}")), "{sentence}");
        assert!(json["tldr"].as_array().unwrap()[..2].contains(&x["sentence"]));
        assert!(
            flat(&text_report).contains(&flat(sentence)),
            "{text_report}"
        );
    }
    for heading in [
        "Concurrency: QPS against clients",
        "QPS against clients, point queries",
        "QPS against clients, writes",
        "Group QPS relative to a (> 1 is faster):",
    ] {
        assert!(text_report.contains(heading), "{heading}: {text_report}");
    }

    // HTML carries the line charts; --png writes them as files.
    let charts = dir.path().join("charts");
    let html = ok(&run(
        dir.path(),
        &[
            "report",
            "--format",
            "html",
            "--png",
            charts.to_str().unwrap(),
        ],
    ));
    assert_eq!(
        html.matches("aria-label=\"Line chart: group QPS").count(),
        2
    );
    for group in ["point", "writes"] {
        let png = std::fs::read(charts.join(format!("qps-by-clients-{group}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    }
}
