//! Report tests: every fixture's report is consistent across its sections and formats (one
//! ratio per step, the first screen's counts, what the formats print first).

use serde_json::Value;

use crate::results::Metric;

use super::super::fixture::{
    run_adaptive, run_insert, run_linkbench, run_pre_post, run_settling, run_sweep,
    run_three_repeats, run_two_clients,
};
use super::formats::run_builds;
use super::instructions::run_with_instructions;
use super::profiles::run_profiled;
use super::verdicts::{run_disagreeing_repeats, run_without_an_event};
use super::warnings::run_resumed;
use super::*;

/// Every report fixture: the shared ones and these tests' variations of them.
fn every_fixture() -> Vec<(&'static str, crate::results::RunData)> {
    vec![
        ("two_clients", run_two_clients()),
        ("three_repeats", run_three_repeats()),
        ("pre_post", run_pre_post()),
        ("adaptive", run_adaptive()),
        ("settling", run_settling()),
        ("sweep", run_sweep()),
        ("insert", run_insert()),
        ("linkbench", run_linkbench()),
        ("version_sweep", super::fixture::run_version_sweep()),
        ("builds", run_builds()),
        ("profiled", run_profiled()),
        ("resumed", run_resumed()),
        ("instructions", run_with_instructions()),
        ("without_an_event", run_without_an_event()),
        ("disagreeing_repeats", run_disagreeing_repeats()),
    ]
}

/// The consistency rules across a report's sections, for one fixture: one ratio per step (the
/// relative tables' is the verdict's), the first screen's decided steps and counts are the
/// step verdicts and the tl;dr's, no verdict's words contradict its ratio, an unmeasurable
/// ratio is a warning, and no instruction count whose range reaches below zero is data.
fn consistency_errors(name: &str, data: &crate::results::RunData) -> Vec<String> {
    let m = build(data, None).unwrap();
    let mut errors = Vec::new();
    let mut fail = |e: String| errors.push(format!("{name}: {e}"));
    relative_errors(&m, &mut fail);
    first_screen_errors(&m, &mut fail);
    rendered_errors(&m, &mut fail);
    errors
}

/// One ratio per step (the relative tables' is the verdict's); an unmeasurable step has no
/// ratio, a verdict and a warning.
fn relative_errors(m: &ReportModel, fail: &mut impl FnMut(String)) {
    for r in &m.relative {
        let at = format!("{} vs {} {} c{}", r.target, r.base, r.step, r.clients);
        if let Some(t) = &r.qps_test
            && (r.qps != Some(t.geo_mean) || r.geo_mean != Some(t.geo_mean))
        {
            fail(format!(
                "{at}: QPS ratio {:?} ≠ its verdict's {}",
                r.qps, t.geo_mean
            ));
        }
        if let Some(t) = r.tests.get(Metric::ServerCpu)
            && r.ratio(Metric::ServerCpu) != Some(t.geo_mean)
        {
            fail(format!("{at}: CPU/op ratio ≠ its verdict's"));
        }
        if r.unmeasurable.is_some() {
            if r.qps.is_some() || r.step_verdict().is_none() {
                fail(format!(
                    "{at}: an unmeasurable step with a ratio or no verdict"
                ));
            }
            if !m
                .warnings
                .iter()
                .any(|w| w.starts_with("unmeasurable") && w.contains(&r.step))
            {
                fail(format!("{at}: unmeasurable but in no warning"));
            }
        }
    }
}

/// The first screen's decided steps and counts are the step verdicts and the tl;dr's, and no
/// verdict's words contradict its ratio.
fn first_screen_errors(m: &ReportModel, fail: &mut impl FnMut(String)) {
    let s = &m.summary;
    let changed = |v: &str| {
        m.relative
            .iter()
            .filter(|r| r.step_verdict() == Some(v))
            .count()
    };
    let counted = changed("regression") + changed("improvement");
    if s.changed.len() != counted {
        fail(format!(
            "first screen: {} changed, step verdicts: {counted}",
            s.changed.len()
        ));
    }
    for c in &s.changed {
        let r = m.relative_of(&c.target, &c.step, c.clients).unwrap();
        if r.deciding().as_ref() != Some(&c.deciding) {
            fail(format!(
                "first screen: {} is not its step's verdict",
                c.step
            ));
        }
        let up = c.deciding.ratio > 1.0;
        let better = if c.deciding.cost == "QPS" { up } else { !up };
        if better != (c.deciding.verdict == "improvement") {
            fail(format!(
                "{}: {} at ratio {}",
                c.step, c.deciding.verdict, c.deciding.ratio
            ));
        }
    }
    let tldr: (u32, u32) = (m.decided.iter()).fold((0, 0), |(d, n), t| {
        (d + t.counts.decided, n + t.counts.steps)
    });
    if !m.decided.is_empty() && (s.changed.len() as u32 + s.unchanged, s.steps) != tldr {
        fail(format!(
            "first screen decided {} of {}, tl;dr {tldr:?}",
            s.changed.len() as u32 + s.unchanged,
            s.steps
        ));
    }
    if s.unchanged + s.undecided + s.changed.len() as u32 != s.steps {
        fail("first screen counts do not add up".into());
    }
}

/// What the formats print: no 10× ratio said unseeable, no instruction count whose range
/// reaches below zero, the answer first, the warnings before the diagnostics, and the JSON's
/// summary.
fn rendered_errors(m: &ReportModel, fail: &mut impl FnMut(String)) {
    let s = &m.summary;
    let text = render(m, Format::Text, false);
    for line in text.lines() {
        if line.contains("could not be seen") && line.contains("| QPS") {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let ratio: f64 = cells[4].trim_end_matches(['+', '-']).parse().unwrap_or(1.0);
            if ratio.ln().abs() >= 10f64.ln() {
                fail(format!("a 10× or larger ratio said unseeable: {line}"));
            }
        }
        // `3,034 ±3540.07%`: a value with its half-range (a number right before ` ±`).
        let parts: Vec<&str> = line.split(" ±").collect();
        let spread = (parts.windows(2))
            .filter(|w| w[0].ends_with(|c: char| c.is_ascii_digit()))
            .filter_map(|w| w[1].split('%').next()?.trim().parse::<f64>().ok());
        if spread.into_iter().any(|p| p > 50.0) {
            fail(format!(
                "an instruction count whose range reaches below zero: {line}"
            ));
        }
    }
    for format in [Format::Text, Format::Markdown, Format::Html] {
        let out = render(m, format, false);
        let answer = out.find("Answer").unwrap_or(usize::MAX);
        let rest = ["tl;dr", "Warnings", "Notes"].map(|h| out.find(h).unwrap_or(usize::MAX));
        if rest.iter().any(|&h| h < answer) {
            fail(format!("{format:?}: the answer is not first"));
        }
        if let Some(d) = out.find("Diagnostics")
            && out.find("Warnings").is_some_and(|w| w > d)
        {
            fail(format!("{format:?}: diagnostics before the warnings"));
        }
    }
    let json: Value = serde_json::from_str(&render(m, Format::Json, false)).unwrap();
    if json["summary"]["steps"].as_u64() != Some(s.steps as u64) {
        fail("the JSON has no summary".into());
    }
}

#[test]
fn every_fixture_is_consistent_across_sections_and_formats() {
    let errors: Vec<String> = (every_fixture().iter())
        .flat_map(|(name, data)| consistency_errors(name, data))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}
