//! Report tests: whole-report snapshots in text, Markdown and JSON (two clients, three
//! repeats, builds, pre/post) and what every format must do (colour, width, names, no data).

use serde_json::Value;

use super::super::fixture::{run_pre_post, run_three_repeats, run_two_clients};
use super::*;

#[test]
fn snapshot_text() {
    let model = build(&run_two_clients(), None).unwrap();
    insta::assert_snapshot!("two_clients_text", render(&model, Format::Text, false));
}

#[test]
fn snapshot_markdown() {
    let model = build(&run_two_clients(), None).unwrap();
    insta::assert_snapshot!("two_clients_md", render(&model, Format::Markdown, false));
}

#[test]
fn snapshot_json() {
    let model = build(&run_two_clients(), None).unwrap();
    insta::assert_snapshot!("two_clients_json", render(&model, Format::Json, false));
}

#[test]
fn snapshot_repeats_text() {
    let model = build(&run_three_repeats(), None).unwrap();
    insta::assert_snapshot!("three_repeats_text", render(&model, Format::Text, false));
}

#[test]
fn snapshot_repeats_markdown() {
    let model = build(&run_three_repeats(), None).unwrap();
    insta::assert_snapshot!("three_repeats_md", render(&model, Format::Markdown, false));
}

/// The three-repeat fixture with its targets compiled by `dbdelta build` (the second one a
/// PGO build).
pub(super) fn run_builds() -> crate::results::RunData {
    let mut data = run_three_repeats();
    for (i, t) in data.targets.iter_mut().enumerate() {
        let pgo = i == 1;
        t.build = Some(crate::results::BuildInfo {
            engine: "postgres".into(),
            source: "postgresql-15 (Debian source 15.18-0+deb12u1)".into(),
            source_version: "15.18".into(),
            variant: if pgo { "pgo" } else { "o2" }.into(),
            cflags: if pgo {
                "-O2 -fprofile-use=/cache/p/profile -fprofile-correction"
            } else {
                "-O2"
            }
            .into(),
            ldflags: String::new(),
            options: Vec::new(),
            compiler: "gcc (Debian 12.2.0-14+deb12u1) 12.2.0".into(),
            build_secs: if pgo { 612.4 } else { 151.2 },
            text_bytes: Some(if pgo { 7_912_345 } else { 8_123_456 }),
            training: pgo.then(|| "sysbench at small scale (lab and results in /cache/p/training, profile in /cache/p/profile)".into()),
            key: "50885c0e6a9e".into(),
            dir: "/cache/postgres-15.18-o2-50885c0e6a9e".into(),
        });
    }
    data
}

/// Oracle MySQL's builds list the CMake options beside the flags (its `lto` is
/// `-DWITH_LTO=ON`, so the flags alone would not tell the two builds apart).
#[test]
fn snapshot_cmake_options_under_the_builds_table() {
    let mut data = run_builds();
    for (t, lto) in data.targets.iter_mut().zip([false, true]) {
        let b = t.build.as_mut().unwrap();
        b.engine = "mysql".into();
        b.source = "mysql-9.7 (Debian source 9.7.2-4)".into();
        b.source_version = "9.7.2".into();
        b.variant = if lto { "lto" } else { "o2" }.into();
        b.cflags = if lto { "-O2 -flto=auto" } else { "-O2" }.into();
        b.ldflags = if lto { "-flto=auto" } else { "" }.into();
        b.training = None;
        b.options = [
            "-DWITH_UNIT_TESTS=OFF",
            "-DWITH_ROUTER=OFF",
            "-DWITH_SSL=system",
        ]
        .into_iter()
        .chain(lto.then_some("-DWITH_LTO=ON"))
        .map(String::from)
        .collect();
    }
    let text = render(&build(&data, None).unwrap(), Format::Text, false);
    let builds = text
        .split_once("Builds (")
        .and_then(|(_, rest)| rest.split_once("Differences from the base"))
        .map(|(section, _)| section)
        .expect("a builds section");
    insta::assert_snapshot!("cmake_options", builds);
    let json: Value =
        serde_json::from_str(&render(&build(&data, None).unwrap(), Format::Json, false)).unwrap();
    assert_eq!(
        json["targets"][1]["build"]["options"][3], "-DWITH_LTO=ON",
        "{json}"
    );
    let errors: Vec<String> = validator()
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn snapshot_builds_text_and_markdown() {
    let model = build(&run_builds(), None).unwrap();
    insta::assert_snapshot!("builds_text", render(&model, Format::Text, false));
    insta::assert_snapshot!("builds_md", render(&model, Format::Markdown, false));
    let json: Value = serde_json::from_str(&render(&model, Format::Json, false)).unwrap();
    let errors: Vec<String> = validator()
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(json["targets"][1]["build"]["variant"], "pgo");
}

#[test]
fn snapshot_repeats_json() {
    let model = build(&run_three_repeats(), None).unwrap();
    insta::assert_snapshot!("three_repeats_json", render(&model, Format::Json, false));
}

#[test]
fn snapshot_pre_post_text() {
    let model = build(&run_pre_post(), None).unwrap();
    insta::assert_snapshot!("pre_post_text", render(&model, Format::Text, false));
}

#[test]
fn snapshot_pre_post_markdown() {
    let model = build(&run_pre_post(), None).unwrap();
    insta::assert_snapshot!("pre_post_md", render(&model, Format::Markdown, false));
}

#[test]
fn snapshot_pre_post_json() {
    let model = build(&run_pre_post(), None).unwrap();
    insta::assert_snapshot!("pre_post_json", render(&model, Format::Json, false));
}

#[test]
fn colour_only_in_text_and_only_when_asked() {
    let m = build(&run_two_clients(), None).unwrap();
    assert!(!render(&m, Format::Text, false).contains('\u{1b}'));
    let coloured = render(&m, Format::Text, true);
    assert!(coloured.contains("\u{1b}["), "colour codes expected");
    assert!(!render(&m, Format::Markdown, true).contains('\u{1b}'));
    assert!(!render(&m, Format::Json, true).contains('\u{1b}'));
}

#[test]
fn text_fits_a_100_column_terminal() {
    let m = build(&run_two_clients(), None).unwrap();
    let text = render(&m, Format::Text, false);
    for line in text.lines() {
        assert!(
            line.chars().count() <= 100,
            "too wide ({}): {line}",
            line.chars().count()
        );
    }
}

#[test]
fn format_value_names() {
    use clap::ValueEnum;
    let names: Vec<String> = Format::value_variants()
        .iter()
        .map(|f| f.to_possible_value().unwrap().get_name().to_string())
        .collect();
    assert_eq!(names, ["text", "md", "json", "csv", "html"]);
}

#[test]
fn run_without_measurements_still_renders() {
    let mut data = run_two_clients();
    data.run.complete = false;
    data.measurements.clear();
    data.loads.clear();
    data.series.clear();
    let m = build(&data, None).unwrap();
    assert!(m.relative.is_empty() && m.clients.is_empty());
    assert!(m.warnings[0].contains("showing the 0 steps that finished"));
    for format in [Format::Text, Format::Markdown, Format::Json] {
        assert!(!render(&m, format, true).is_empty());
    }
    let v: Value = serde_json::from_str(&render(&m, Format::Json, false)).unwrap();
    assert!(schema_errors(&v).is_empty());
}
