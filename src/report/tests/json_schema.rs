//! Report tests: the JSON contract (the schema validates every fixture's report and a
//! compare, names every metric and suite section, and rejects wrong types).

use serde_json::Value;

use super::super::fixture::{
    run_insert, run_pre_post, run_sweep, run_three_repeats, run_two_clients,
};
use super::*;

#[test]
fn json_validates_against_schema() {
    for data in [
        run_two_clients(),
        run_three_repeats(),
        run_pre_post(),
        run_sweep(),
        super::fixture::run_version_sweep(),
    ] {
        for base in [None, Some("sqlite.wal"), Some("pg17"), Some("mysql80")] {
            let Ok(model) = build(&data, base) else {
                continue;
            };
            let out = render(&model, Format::Json, false);
            assert!(out.ends_with("}\n"));
            let v: Value = serde_json::from_str(&out).unwrap();
            let errors = schema_errors(&v);
            assert!(errors.is_empty(), "{errors:#?}");
        }
    }
    // A compare report is the same contract.
    let a = run_two_clients();
    let mut b = a.clone();
    b.run.id = "20261123-0301".into();
    let v: Value =
        serde_json::from_str(&render(&compare(&a, &b).unwrap(), Format::Json, false)).unwrap();
    assert_eq!(v["compare"]["b"]["id"], "20261123-0301");
    assert!(schema_errors(&v).is_empty(), "{:#?}", schema_errors(&v));
    let mut broken = v.clone();
    broken["compare"]["a"] = Value::String("20261122-0301".into());
    assert!(
        !schema_errors(&broken).is_empty(),
        "compare.a must be a run object"
    );
}

/// The JSON contract's metric fields are the metric table's: every metric in `measurements`,
/// every aggregated one in `aggregates`, every ratio and verdict in `relative`, with
/// `integer_or_null` for whole numbers.
#[test]
fn schema_names_every_metric_of_the_table() {
    use crate::results::metrics::METRICS;
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let props = |list: &str| schema["properties"][list]["items"]["properties"].clone();
    let (measured, aggregated, relative) = (
        props("measurements"),
        props("aggregates"),
        props("relative"),
    );
    for d in METRICS {
        let kind = if d.integer() { "integer" } else { "number" };
        let want = Value::from(format!("#/$defs/{kind}_or_null"));
        assert_eq!(measured[d.id]["$ref"], want, "measurements.{}", d.id);
        if d.over_repeats.is_some() {
            assert_eq!(aggregated[d.id]["$ref"], want, "aggregates.{}", d.id);
        }
        if d.relative {
            let want = Value::from("#/$defs/number_or_null");
            assert_eq!(relative[d.id]["$ref"], want, "relative.{}", d.id);
        }
        if let Some(short) = d.verdict {
            let test = &relative[format!("{short}_test")]["oneOf"][1]["$ref"];
            let want = match d.spread {
                Some(_) => "#/$defs/spread_test",
                None => "#/$defs/metric_test",
            };
            assert_eq!(test, want, "relative.{short}_test");
        }
    }
}

/// Each suite section's schema fragment is what the JSON schema lists under `suites.<id>`,
/// and the schema lists no suite without a section.
#[test]
fn schema_lists_each_suite_section_fragment() {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let listed = schema["properties"]["suites"]["properties"]
        .as_object()
        .expect("the schema lists suites");
    for section in suites::SECTIONS {
        let fragment: Value = serde_json::from_str(section.schema()).expect("fragment is JSON");
        assert_eq!(
            listed.get(section.suite()),
            Some(&fragment),
            "{}",
            section.suite()
        );
    }
    let ids: Vec<&str> = suites::SECTIONS.iter().map(|s| s.suite()).collect();
    let keys: Vec<&str> = listed.keys().map(String::as_str).collect();
    assert_eq!(keys, ids, "schema suites vs SECTIONS");
}

/// The report model keeps a suite's tables under its suite id: the Insert Benchmark's and
/// LinkBench's under `suites`, and no per-suite field at the top.
#[test]
fn suite_tables_are_keyed_by_suite_id() {
    let m = build(&run_insert(), None).unwrap();
    let v: Value = serde_json::from_str(&render(&m, Format::Json, false)).unwrap();
    assert_eq!(v["schema_version"], 4);
    let keys: Vec<&String> = v["suites"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["insert"]);
    assert!(v.get("insert").is_none() && v.get("linkbench").is_none());
    let plain = build(&run_two_clients(), None).unwrap();
    let v: Value = serde_json::from_str(&render(&plain, Format::Json, false)).unwrap();
    assert_eq!(v["suites"], serde_json::json!({}));
}

#[test]
fn schema_rejects_a_string_qps() {
    let model = build(&run_two_clients(), None).unwrap();
    let mut v: Value = serde_json::from_str(&render(&model, Format::Json, false)).unwrap();
    v["measurements"][0]["qps"] = Value::String("48500".into());
    let errors = schema_errors(&v);
    assert!(!errors.is_empty(), "a string qps must not validate");
    assert!(
        errors.iter().any(|e| e.contains("/measurements/0/qps")),
        "{errors:?}"
    );

    // The verdict objects are part of the contract too.
    let repeats = build(&run_three_repeats(), None).unwrap();
    let mut v: Value = serde_json::from_str(&render(&repeats, Format::Json, false)).unwrap();
    assert!(v["relative"][0]["qps_test"].is_object());
    v["relative"][0]["qps_test"]["verdict"] = Value::String("worse".into());
    v["relative"][0]["server_cpu_test"]["q"] = Value::from(1.5);
    v["method"]["min_effect_source"] = Value::String("guess".into());
    let errors = schema_errors(&v);
    for path in [
        "/relative/0/qps_test",
        "/relative/0/server_cpu_test",
        "/method/min_effect_source",
    ] {
        assert!(
            errors.iter().any(|e| e.contains(path)),
            "{path}: {errors:?}"
        );
    }

    let mut v: Value = serde_json::from_str(&render(&model, Format::Json, false)).unwrap();
    v.as_object_mut().unwrap().remove("relative");
    assert!(
        !schema_errors(&v).is_empty(),
        "a missing contract field must not validate"
    );
}
