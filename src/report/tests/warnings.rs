//! Report tests: warnings and notes, and how the steps ran (within-step noise, adaptive
//! lengths, wake-up and client-bound steps, settling, failed targets, resumed runs).

use serde_json::Value;

use super::super::fixture::{
    run_adaptive, run_settling, run_sweep, run_three_repeats, run_two_clients,
};
use super::*;

#[test]
fn warnings_and_notes() {
    let m = build(&run_two_clients(), None).unwrap();
    let w = m.warnings.join("\n");
    assert!(w.contains("target pg17.jemalloc failed: server did not accept connections within 30 s (server log: /tmp/dbdelta/20261122-0301/pg17.jemalloc/server.log)"), "{w}");
    assert!(
        w.contains("client-bound: pg17 point-query at 4 clients"),
        "{w}"
    );
    assert!(
        w.contains("failed: pg17 update-index at 4 clients: connection lost"),
        "{w}"
    );
    assert!(
        w.contains(
            "errors: pg17 update-one at 4 clients: 3 errors (retryable 3, reconnect 0, fatal 0)"
        ),
        "{w}"
    );
    assert!(w.contains("stall: pg16 point-query at 1 client: worst second 19000 ops/s, 39% of the median second (48600 ops/s)"), "{w}");
    assert!(!w.contains("incomplete"));
    let n = m.notes.join("\n");
    assert!(!n.contains("no verdict is possible"), "{n}");
    // One repeat: said once, near the top (after the tl;dr), with what would give verdicts.
    use super::doc::Block;
    let doc = super::layout::document(&m);
    let said: Vec<usize> = (doc.iter().enumerate())
        .filter(|(_, b)| matches!(b, Block::Para(p) if p.starts_with("1 repeat: no verdicts")))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(said.len(), 1, "{doc:?}");
    let tldr = doc
        .iter()
        .position(|b| *b == Block::Heading("tl;dr".into()));
    assert!(
        tldr.is_some_and(|t| t < said[0] && said[0] <= t + 2),
        "{doc:?}"
    );
    let Block::Para(p) = &doc[said[0]] else {
        unreachable!()
    };
    assert!(
        p.contains("--repeats 3") && p.contains("--instructions"),
        "{p}"
    );
    assert!(n.contains("SQLite runs inside dbdelta: server CPU is dbdelta's own process CPU (engine + client); client CPU cannot be separated"));
}

#[test]
fn within_step_noise_per_repeat_and_over_repeats() {
    // Per-second series: point-query steady, scan noisy, update-one none. Python with numpy and
    // statsmodels (acf, nlags=1) as in stats' tests: point-query CV 0.011547, lag-1
    // autocorrelation -0.5 (not credited), ±0.00826; scan CV 0.31972, ±0.22872.
    let m = build(&run_three_repeats(), None).unwrap();
    let w = |target: &str, step: &str| {
        m.aggregate(target, step, 1)
            .unwrap()
            .within_step
            .clone()
            .unwrap()
    };
    let pq = w("pg16", "point-query");
    assert_eq!(pq.seconds, 10);
    assert!((pq.cv.unwrap() - 0.011547).abs() < 1e-5, "{pq:?}");
    assert!((pq.precision.unwrap() - 0.00826).abs() < 1e-5, "{pq:?}");
    assert!(!pq.too_short && !pq.too_noisy);
    let scan = w("pg17", "scan");
    assert!((scan.precision.unwrap() - 0.22872).abs() < 1e-4, "{scan:?}");
    assert!(scan.too_noisy && !scan.too_short);
    let short = w("pg17", "update-one");
    assert_eq!((short.seconds, short.cv), (0, None));
    assert!(short.too_short);
    let row = m
        .measurements
        .iter()
        .find(|r| r.target == "pg17" && r.step == "scan" && r.repeat == 2)
        .unwrap();
    assert!(row.within_step.as_ref().unwrap().too_noisy);
    let failed = m
        .measurements
        .iter()
        .find(|r| r.step == "l.i0" && r.failed)
        .unwrap();
    assert_eq!(failed.within_step, None);
    let text = render(&m, Format::Text, false);
    assert!(text.contains("10 s 1.2% ±0.8%"), "{text}");
    assert!(text.contains("10 s 32% ±23% [noisy]"), "{text}");
    assert!(text.contains("0 s [short]"), "{text}");
}

#[test]
fn each_warning_kind_is_said_once_with_its_steps() {
    let mut data = run_adaptive();
    for m in data.measurements.iter_mut().filter(|m| !m.warm) {
        m.wakeup_bound = true;
        m.client_bound = m.target == "pg17";
    }
    let flagged = (data.measurements.iter()).filter(|m| !m.warm && !m.failed);
    let (wakeup, client) = (
        flagged.clone().count(),
        flagged.filter(|m| m.client_bound).count(),
    );
    assert!(wakeup >= 6 && client >= 3, "{wakeup} {client}");
    let m = build(&data, None).unwrap();
    let of = |kind: &str| -> Vec<&String> {
        (m.warnings.iter())
            .filter(|w| w.starts_with(kind))
            .collect()
    };
    let [w] = of("wake-up-bound").try_into().unwrap();
    // One line with the count and the fix, not every measurement's numbers.
    let steps: std::collections::BTreeSet<&str> = (data.measurements.iter())
        .filter(|m| !m.warm && !m.failed)
        .map(|m| m.step.as_str())
        .collect();
    assert!(
        w.starts_with(&format!(
            "wake-up-bound ({wakeup} measurements of {} steps, e.g. pg16 ",
            steps.len()
        )),
        "{w}"
    );
    assert_eq!(w.matches("placement = \"shared\"").count(), 1, "{w}");
    assert!(!w.contains('\n') && w.len() < 400, "{w}");
    assert!(
        !w.contains("pg17 scan"),
        "no list of every measurement: {w}"
    );
    let [c] = of("client-bound").try_into().unwrap();
    assert!(
        c.starts_with(&format!("client-bound ({client} steps): the client")),
        "{c}"
    );
    assert!(c.contains("pg17 scan at 1 client, repeat 2"), "{c}");
}

#[test]
fn adaptive_lengths_and_wakeup_warnings_in_every_format() {
    let m = build(&run_adaptive(), None).unwrap();
    let scan = m.aggregate("pg17", "scan", 1).unwrap();
    assert_eq!((scan.seconds, scan.ran_to_max), (Some(60.0), 3));
    assert_eq!(scan.duration_rule, "adaptive");
    let text = render(&m, Format::Text, false);
    insta::assert_snapshot!("adaptive_text", text);
    for out in [
        text,
        render(&m, Format::Markdown, false),
        render(&m, Format::Html, false),
    ] {
        assert!(
            out.contains("Step length and within-step QPS noise"),
            "{out}"
        );
        assert!(
            out.contains("±23% [noisy] [max]") || out.contains("±23% \\[noisy\\] \\[max\\]"),
            "{out}"
        );
        assert!(out.contains("adaptive steps: target ±1.0%"), "{out}");
        assert!(out.contains("wake-up-bound: pg16 point-query at 1 client, repeat 1"));
        assert!(
            out.contains("placement = \"shared\"")
                || out.contains("placement = &quot;shared&quot;")
        );
        assert!(out.contains("Adaptive steps (duration"));
    }
    let w = m
        .warnings
        .iter()
        .find(|w| w.starts_with("wake-up-bound"))
        .unwrap();
    assert!(
        w.contains("the client was on CPU 35% and the server 45% of its wall time: client 26.0 µs + server 33.0 µs CPU per query at 13500 QPS) between threads not confined to one CPU (server seen on CPUs 0-3, client on 1,3)"),
        "{w}"
    );
    let v: Value = serde_json::from_str(&render(&m, Format::Json, false)).unwrap();
    assert!(schema_errors(&v).is_empty(), "{:#?}", schema_errors(&v));
    let row = v["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["target"] == "pg17" && r["step"] == "scan")
        .unwrap();
    assert_eq!(row["duration_rule"], "adaptive");
    assert_eq!(row["stop_reason"], "max");
    assert_eq!(row["precision_target"], 0.01);
    let csv = render(&m, Format::Csv, false);
    let mut r = ::csv::Reader::from_reader(csv.as_bytes());
    let h = r.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap();
    let rows: Vec<_> = r.records().map(|r| r.unwrap()).collect();
    let scan = rows
        .iter()
        .find(|r| &r[col("target")] == "pg17" && &r[col("step")] == "scan")
        .unwrap();
    assert_eq!(&scan[col("seconds")], "60");
    assert_eq!(&scan[col("precision_target")], "0.01");
    assert_eq!(&scan[col("ran_to_max")], "3");
    assert_eq!(&scan[col("duration_rule")], "adaptive");
    let pq = rows
        .iter()
        .find(|r| &r[col("target")] == "pg16" && &r[col("step")] == "point-query")
        .unwrap();
    assert_eq!(&pq[col("wakeup_bound")], "true");
    assert_eq!(&pq[col("placement")], "os");
    assert_eq!(&pq[col("host_cpu_topology")], "0:0:0 1:0:1 2:0:0 3:0:1");
}

#[test]
fn settling_steps_are_flagged_in_every_format() {
    let m = build(&run_settling(), None).unwrap();
    let pq = |t: &str| m.aggregate(t, "point-query", 1).unwrap().settling;
    assert!(pq("pg17") && !pq("pg16"));
    assert!(
        m.relative.iter().all(|r| r.settling),
        "either side settling"
    );
    let settling: Vec<&String> = (m.warnings.iter())
        .filter(|w| w.starts_with("settling:"))
        .collect();
    // One warning per cell, not per step.
    assert_eq!(settling.len(), 1, "{settling:?}");
    let note = "settling: pg17 at 1 client, repeat 2: postgres used 45% of a core, wrote 12.3 MB/s \
                and ran 1 autovacuum worker while idle for 2 s before the steps, so its steps were \
                measured while it settled: still busy after postwrite_secs = 5: no estimate of how \
                long it needs; try a longer postwrite_secs";
    assert_eq!(settling[0], note);
    let text = render(&m, Format::Text, false);
    insta::assert_snapshot!("settling_text", text);
    for out in [
        text,
        render(&m, Format::Markdown, false),
        render(&m, Format::Html, false),
    ] {
        assert!(
            out.contains("point-query [settling]") || out.contains("point-query \\[settling\\]"),
            "{out}"
        );
        assert!(out.contains("settling: pg17 at 1 client, repeat 2: postgres used 45%"));
    }
    let v: Value = serde_json::from_str(&render(&m, Format::Json, false)).unwrap();
    assert!(schema_errors(&v).is_empty(), "{:#?}", schema_errors(&v));
    let rows = v["measurements"].as_array().unwrap();
    let busy = (rows.iter())
        .find(|r| r["target"] == "pg17" && r["repeat"] == 2)
        .unwrap();
    assert_eq!(busy["settling"]["settling"], true);
    assert_eq!(busy["settling"]["autovacuum_workers"], 1);
    assert_eq!(v["relative"][0]["settling"], true);
    let csv = render(&m, Format::Csv, false);
    let mut r = ::csv::Reader::from_reader(csv.as_bytes());
    let h = r.headers().unwrap().clone();
    let col = h.iter().position(|c| c == "settling").unwrap();
    let flags: Vec<String> = r.records().map(|r| r.unwrap()[col].to_string()).collect();
    assert!(flags.contains(&"true".into()) && flags.contains(&"false".into()));

    // With InnoDB's dirty pages draining, the note says how long to wait.
    let mut data = run_settling();
    for s in data
        .measurements
        .iter_mut()
        .filter_map(|m| m.settling.as_mut())
    {
        if s.settling {
            s.process = "mysqld".into();
            s.reasons = vec!["had 30,000 dirty pages draining at 2,000/s".into()];
            s.wait_secs = Some(14.6);
        }
    }
    let m = build(&data, None).unwrap();
    let w = m
        .warnings
        .iter()
        .find(|w| w.starts_with("settling:"))
        .unwrap();
    assert!(
        w.ends_with(
            "mysqld had 30,000 dirty pages draining at 2,000/s while idle for 2 s before the \
             steps, so its steps were measured while it settled: its dirty pages alone needed ≈ \
             15 s more: wait at least that much longer (postwrite_secs = 5)"
        ),
        "{w}"
    );
}

#[test]
fn a_target_failed_in_one_cell_is_failed_in_part() {
    let mut data = run_sweep();
    let t = data
        .targets
        .iter_mut()
        .find(|t| t.name == "mysql80")
        .unwrap();
    t.failed = true;
    t.error = Some("the MySQL server did not accept connections within 60 s".into());
    let text = render(&build(&data, None).unwrap(), Format::Text, false);
    let row = text.lines().find(|l| l.starts_with(" mysql80 ")).unwrap();
    assert!(row.ends_with("| FAILED in part"), "{row}");
    // Without a single measured step it is plainly FAILED.
    data.measurements.retain(|m| m.target != "mysql80");
    let text = render(&build(&data, None).unwrap(), Format::Text, false);
    let row = text.lines().find(|l| l.starts_with(" mysql80 ")).unwrap();
    assert!(row.ends_with("| FAILED"), "{row}");
}

/// `run_three_repeats` as if its third repeat ran in a `--resume` after the first invocation
/// was killed.
pub(super) fn run_resumed() -> crate::results::RunData {
    let mut data = run_three_repeats();
    data.run.invocations = vec![
        crate::results::Invocation {
            number: 1,
            started: "2026-11-22T03:01:07Z".into(),
            finished: None,
        },
        crate::results::Invocation {
            number: 2,
            started: "2026-11-22T04:00:00Z".into(),
            finished: Some("2026-11-22T04:10:00Z".into()),
        },
    ];
    for m in &mut data.measurements {
        m.invocation = if m.repeat == 3 { 2 } else { 1 };
    }
    data
}

#[test]
fn a_resumed_run_says_which_invocation_ran_which_cell_in_every_format() {
    let data = run_resumed();
    let model = build(&data, None).unwrap();
    let inv = &model.run.invocations;
    assert_eq!(inv.len(), 2);
    assert!(inv[0].cells.iter().all(|c| !c.ends_with("r=3")), "{inv:?}");
    assert!(
        !inv[1].cells.is_empty() && inv[1].cells.iter().all(|c| c.ends_with("r=3")),
        "{inv:?}"
    );
    for format in [Format::Text, Format::Markdown, Format::Html] {
        // HTML keeps a flag on one line (a span around `--resume),`).
        let out = (render(&model, format, false).replace("<span class=\"flag\">", ""))
            .replace("</span>", "");
        // Text wraps long lines: check each line's start.
        assert!(
            out.contains("invocation 1 (run), started 2026-11-22T03:01:07Z, cut off: cells pg16"),
            "{format:?}:\n{out}"
        );
        assert!(
            out.contains("invocation 2 (run --resume), started 2026-11-22T04:00:00Z, finished"),
            "{format:?}:\n{out}"
        );
    }
    let json: Value = serde_json::from_str(&render(&model, Format::Json, false)).unwrap();
    assert_eq!(schema_errors(&json), Vec::<String>::new());
    assert_eq!(json["run"]["invocations"][1]["number"], 2);
    let by_repeat = |r: u64| {
        (json["measurements"].as_array().unwrap().iter())
            .filter(|m| m["repeat"] == r)
            .map(|m| m["invocation"].as_u64().unwrap())
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(by_repeat(1), [1].into());
    assert_eq!(by_repeat(3), [2].into());
    let csv = render(&model, Format::Csv, false);
    let mut reader = ::csv::Reader::from_reader(csv.as_bytes());
    let col = (reader.headers().unwrap().iter())
        .position(|h| h == "invocations")
        .unwrap();
    let cells: std::collections::BTreeSet<String> = (reader.records())
        .map(|r| r.unwrap()[col].to_string())
        .collect();
    assert!(cells.contains("1 2"), "{cells:?}");
    // A run that ran in one go adds no line.
    let once = render(
        &build(&run_three_repeats(), None).unwrap(),
        Format::Text,
        false,
    );
    assert!(!once.contains("invocation"), "{once}");
}

/// More clients than the CPUs dbdelta may use is a warning, read from the run's own CPU list:
/// 4 clients fit 4 CPUs, not 2 (the fixture's other client count, 1, fits both).
#[test]
fn clients_beyond_the_usable_cpus_are_a_warning() {
    let mut data = run_two_clients();
    let beyond = |m: &ReportModel| {
        (m.warnings.iter())
            .find(|w| w.starts_with("clients beyond the CPUs"))
            .cloned()
    };
    assert_eq!(beyond(&build(&data, None).unwrap()), None);
    data.run.host.usable_cpus = "0-1".into();
    let w = beyond(&build(&data, None).unwrap()).expect("a warning for 4 clients on 2 CPUs");
    assert!(
        w.starts_with("clients beyond the CPUs: 4 clients on the 2 CPUs dbdelta may use (0-1)"),
        "{w}"
    );
}
