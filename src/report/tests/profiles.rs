//! Report tests: CPU profiles (snapshots of the section, the HTML flame graph, why a profiled
//! run has none, and a profile diff scaled to instructions).

use serde_json::Value;

use crate::results::Metric;

use super::super::fixture::run_three_repeats;
use super::*;

/// `run_three_repeats` profiled: point-query of both targets in every repeat (pg17 spends more
/// in the planner and less in the buffer manager), repeat 3 of pg17's scan without a profile
/// (its recording failed).
pub(super) fn run_profiled() -> crate::results::RunData {
    use crate::results::{Profiling, StepProfile};
    let mut data = run_three_repeats();
    data.run.profiling = Some(Profiling {
        hz: 99,
        call_graph: "dwarf".into(),
        perf: Some("perf version 6.1.187".into()),
        system_wide: true,
        unavailable: None,
    });
    for m in data.measurements.iter_mut() {
        let folded = match (m.target.as_str(), m.step.as_str()) {
            ("pg16", "point-query") => {
                "postgres;PostgresMain;exec_simple_query;pg_plan_query 30\n\
                 postgres;PostgresMain;exec_simple_query;ReadBuffer 50\n\
                 postgres;PostgresMain;[libc.so.6] 20\n"
            }
            ("pg17", "point-query") => {
                "postgres;PostgresMain;exec_simple_query;pg_plan_query 50\n\
                 postgres;PostgresMain;exec_simple_query;ReadBuffer 30\n\
                 postgres;PostgresMain;[libc.so.6] 20\n"
            }
            ("pg17", "scan") if m.repeat == 3 => {
                m.profile = Some(StepProfile {
                    error: Some("perf record failed: no samples".into()),
                    ..Default::default()
                });
                continue;
            }
            _ => continue,
        };
        let f = crate::profiler::Folded::parse(folded);
        m.profile = Some(StepProfile {
            samples: f.samples(),
            unresolved: f.unresolved(),
            unresolved_modules: f.unresolved_modules(),
            folded: folded.into(),
            error: None,
        });
    }
    data
}

#[test]
fn snapshot_profiles_text_markdown_json_csv() {
    let model = build(&run_profiled(), None).unwrap();
    let text = render(&model, Format::Text, false);
    let section = &text[text.find("CPU profiles").unwrap()..text.find("Warnings").unwrap()];
    insta::assert_snapshot!("profiles_text", section);
    let md = render(&model, Format::Markdown, false);
    let section = &md[md.find("## CPU profiles").unwrap()..md.find("## Warnings").unwrap()];
    insta::assert_snapshot!("profiles_md", section);
    let json: Value = serde_json::from_str(&render(&model, Format::Json, false)).unwrap();
    let errors: Vec<String> = validator()
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    insta::assert_snapshot!(
        "profiles_json",
        serde_json::to_string_pretty(&json["profiles"]).unwrap()
    );
    let csv = render(&model, Format::Csv, false);
    let cells: Vec<String> = csv
        .lines()
        .filter(|l| l.contains("point-query") || l.contains(",scan,"))
        .map(|l| l.rsplitn(3, ',').take(2).collect::<Vec<_>>().join(" | "))
        .collect();
    insta::assert_snapshot!("profiles_csv", cells.join("\n"));
}

#[test]
fn html_embeds_a_differential_flame_graph_without_script_or_page_wide_style() {
    let model = build(&run_profiled(), None).unwrap();
    let html = render(&model, Format::Html, false);
    let start = html
        .find("<figure class=\"flame\">")
        .expect("a flame graph figure");
    let figure = &html[start..start + html[start..].find("</figure>").unwrap()];
    assert!(figure.contains("<svg role=\"img\""), "inline SVG");
    assert!(figure.contains("pg_plan_query") && figure.contains("ReadBuffer"));
    // pg17 spends more in the planner than pg16: red; less in ReadBuffer: blue.
    for bad in ["<script", "onload", "<style", "<!--", "<?xml", "http://"] {
        assert!(!figure.contains(bad), "{bad} in the inlined flame graph");
    }
    assert!(!html.contains("<script"), "the page stays script-free");
}

#[test]
fn every_format_says_why_a_profiled_run_has_no_profiles() {
    let mut data = run_three_repeats();
    data.run.profiling = Some(crate::results::Profiling {
        hz: 99,
        call_graph: "dwarf".into(),
        perf: None,
        system_wide: false,
        unavailable: Some("perf is not on PATH (install Debian's linux-perf)".into()),
    });
    let model = build(&data, None).unwrap();
    for format in [
        Format::Text,
        Format::Markdown,
        Format::Html,
        Format::Json,
        Format::Csv,
    ] {
        let out = render(&model, format, false);
        assert!(
            out.contains("perf is not on PATH"),
            "{format:?} does not say why"
        );
    }
}

/// With a counting pass, a profile's shares are scaled to instructions too: pg16's point-query
/// at 100,000 instructions/op and pg17's at 80,000, the planner's share going from 30% to 50%.
#[test]
fn a_profile_diff_explains_an_instruction_delta_function_by_function() {
    let mut data = run_profiled();
    for m in data.measurements.iter_mut() {
        if m.step == "point-query" && m.repeat == 1 {
            let i = if m.target == "pg16" {
                100_000.0
            } else {
                80_000.0
            };
            m.values.set(Metric::ServerInstr, Some(i));
        }
    }
    let model = build(&data, None).unwrap();
    let step = (model.profiles.as_ref().unwrap().steps.iter())
        .find(|s| s.step == "point-query")
        .unwrap();
    let pg16 = step.targets.iter().find(|t| t.target == "pg16").unwrap();
    assert_eq!(pg16.instructions_per_op, Some(100_000.0));
    let top = (pg16.top.iter())
        .find(|f| f.function == "ReadBuffer")
        .unwrap();
    assert!(
        (top.self_instructions_per_op.unwrap() - 50_000.0).abs() < 1.0,
        "{top:?}"
    );
    let diff = &step.diffs[0];
    let planner = (diff.changed.iter())
        .find(|c| c.function == "pg_plan_query")
        .unwrap();
    // 50% of 80,000 − 30% of 100,000.
    assert!((planner.delta_instructions_per_op.unwrap() - 10_000.0).abs() < 1.0);
    let text = render(&model, Format::Text, false);
    assert!(text.contains("instr/op change"), "{text}");
    let json: Value = serde_json::from_str(&render(&model, Format::Json, false)).unwrap();
    assert_eq!(schema_errors(&json), Vec::<String>::new());
}
