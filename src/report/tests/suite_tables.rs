//! Report tests: the suites' own tables (the Insert Benchmark's summary and LinkBench's),
//! in every format and in a compare.

use serde_json::Value;

use super::super::fixture::{run_insert, run_linkbench};
use super::*;

#[test]
fn insert_summary_in_every_format() {
    let m = build(&run_insert(), None).unwrap();
    let s = &suites::insert_summaries(&m)[0];
    assert_eq!(s.steps.len(), 8);
    let pg17 = &s.rows[1];
    let qr1000 = pg17.cells.iter().find(|c| c.step == "qr1000").unwrap();
    let b = qr1000.background.as_ref().unwrap();
    assert!(!b.sla_met, "930 of 1000 rows/s in one repeat is below 95%");
    assert_eq!(b.target_rows_per_sec, Some(1000.0));
    assert!((b.worst_share.unwrap() - 0.93).abs() < 1e-9);
    assert_eq!(
        qr1000.quartile.as_deref(),
        Some("sla"),
        "faster, but missed its SLA"
    );
    let l_i0 = &pg17.cells[0];
    assert!((l_i0.relative.unwrap() - 1.10).abs() < 1e-9);
    assert_eq!(l_i0.quartile.as_deref(), Some("top"));
    assert_eq!(
        s.rows[0].cells[0].quartile, None,
        "the slower is within 80% of the faster: no bottom-quartile mark"
    );
    assert_eq!(
        s.rows[1].cells[3].quartile.as_deref(),
        Some("bottom"),
        "0.70 of the max: below 80%, so the bottom quartile is marked"
    );
    assert!(
        m.warnings
            .iter()
            .any(|w| w.starts_with("SLA failure: pg17 qr1000")
                && w.contains("93% of its target 1,000 rows/s")),
        "{:?}",
        m.warnings
    );
    insta::assert_snapshot!("insert_text", render(&m, Format::Text, false));
    insta::assert_snapshot!("insert_md", render(&m, Format::Markdown, false));
    let json = render(&m, Format::Json, false);
    let v: Value = serde_json::from_str(&json).unwrap();
    let errors: Vec<String> = validator().iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        v["suites"]["insert"][0]["rows"][1]["cells"][6]["background"]["sla_met"],
        false
    );
    let html = render(&m, Format::Html, false);
    assert!(html.contains("Insert Benchmark summary, clients = 1"));
    assert!(html.contains("964 [SLA]"), "the mean achieved rate, marked");
    assert!(
        html.contains("qr1000: background rows inserted per second, clients = 1"),
        "the per-second chart of the background inserts"
    );
    let csv = render(&m, Format::Csv, false);
    let mut r = ::csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let row = r
        .records()
        .map(|r| r.unwrap())
        .find(|r| &r[col("target")] == "pg17" && &r[col("step")] == "qr1000")
        .unwrap();
    assert_eq!(&row[col("sla")], "failed");
    assert_eq!(&row[col("insert_quartile")], "sla");
    assert_eq!(&row[col("background_rows_per_sec")], "964");
    assert_eq!(&row[col("background_target_rows_per_sec")], "1000");
}

#[test]
fn an_operation_type_without_units_shows_a_dash_not_a_zero_rate() {
    let mut data = run_insert();
    let qp = (data.measurements.iter_mut())
        .find(|m| m.step == "qp100" && m.target == "pg16" && m.repeat == 1)
        .unwrap();
    qp.operations.push(crate::results::OpMeasurement {
        role: "querier".into(),
        op: "ids".into(),
        pacer: "closed".into(),
        operations: 30,
        ops_per_sec: Some(3.0),
        units_per_sec: Some(0.0),
        ..Default::default()
    });
    let text = render(&build(&data, None).unwrap(), Format::Text, false);
    let row = text
        .lines()
        .find(|l| l.contains("| ids "))
        .expect("the ids row");
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cells[4], "-", "{row}");
}

#[test]
fn linkbench_tables_in_every_format_and_in_a_compare() {
    let m = build(&run_linkbench(), None).unwrap();
    let s = &suites::linkbench_summaries(&m)[0];
    assert_eq!(s.load.len(), 2);
    let my80 = &s.load[1];
    assert!((my80.relative.unwrap() - 0.8).abs() < 1e-9);
    assert!((my80.nodes_per_sec.unwrap() - 1_000_000.0 / 10.0).abs() < 1e-6);
    assert_eq!(my80.size_after_index, Some(1_100_000_000));
    assert!(my80.index_secs.is_some());
    let req = &s.requests[1];
    assert_eq!(
        (req.step.as_str(), req.target.as_str()),
        ("linkbench.request.P1", "my80")
    );
    assert!((req.relative.unwrap() - 0.8).abs() < 1e-9);
    assert_eq!(req.p99_us.len(), 10);
    assert!((req.p99_us[6].unwrap() / s.requests[0].p99_us[6].unwrap() - 2.0).abs() < 1e-9);
    let list = (s.operations.iter())
        .find(|o| o.target == "my56" && o.op == "getlinklist")
        .unwrap();
    assert!(
        (list.rows_per_op.unwrap() - 6.0).abs() < 1e-9,
        "rows per getlinklist"
    );
    assert!((list.share_percent.unwrap() - 22.57).abs() < 0.1);
    insta::assert_snapshot!("linkbench_text", render(&m, Format::Text, false));
    insta::assert_snapshot!("linkbench_md", render(&m, Format::Markdown, false));
    let v: Value = serde_json::from_str(&render(&m, Format::Json, false)).unwrap();
    let errors: Vec<String> = validator().iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(v["suites"]["linkbench"][0]["requests"][1]["target"], "my80");
    let html = render(&m, Format::Html, false);
    assert!(html.contains("LinkBench, clients = 1"));
    let mut b = run_linkbench();
    b.run.id = "20261124-1200".into();
    let c = compare(&run_linkbench(), &b).unwrap();
    let targets: Vec<&str> = suites::linkbench_summaries(&c)[0]
        .load
        .iter()
        .map(|l| l.target.as_str())
        .collect();
    assert_eq!(targets, ["my56@A", "my56@B", "my80@A", "my80@B"]);
    let my80b = suites::linkbench_summaries(&c)[0]
        .load
        .iter()
        .find(|l| l.target == "my80@B");
    assert_eq!(my80b.unwrap().relative, Some(1.0), "my80@B against my80@A");
    let text = render(&c, Format::Text, false);
    assert!(text.contains("LinkBench, clients = 1"), "{text}");
}
