//! The "by version" view of a run with a version sweep (`versions` in the lab): per group and
//! per step, relative QPS and relative server CPU/op against the base along the release
//! order, with the first release whose verdict against the base is a change marked, and how
//! many steps each release decided.
//!
//! Owns choosing the sweeps (targets sharing a `sweep`, in run order, at least 2), reading
//! their numbers, verdicts and decided steps from the model (`relative`, `groups`, `decided`:
//! nothing is recomputed, no new test is run), a group's verdict at a release (the one more
//! than half of its steps share), and the section's blocks (text and Markdown tables, HTML charts). Must not:
//! compute statistics, or draw (the charts module does).

use super::super::doc::{Block, Cell, ChartRef, Grid, NA, rel_cell};
use super::super::fmt::of;
use super::super::model::{FirstChange, Relative, ReportModel, VersionSeries, VersionSweep};
use crate::results::Metric;

/// Every sweep × client count of the model, for `model.by_version` (after the verdicts and
/// the group summaries are in).
pub(in crate::report) fn sweeps(model: &ReportModel) -> Vec<VersionSweep> {
    if model.compare.is_some() {
        return Vec::new();
    }
    let mut names: Vec<&str> = Vec::new();
    for t in &model.targets {
        if let Some(s) = t.sweep.as_deref()
            && !names.contains(&s)
        {
            names.push(s);
        }
    }
    let mut out = Vec::new();
    for name in names {
        let releases: Vec<String> = (model.targets.iter())
            .filter(|t| t.sweep.as_deref() == Some(name))
            .map(|t| t.name.clone())
            .collect();
        if releases.len() < 2 {
            continue;
        }
        for &clients in &model.clients {
            let series = (model.step_groups.iter())
                .flat_map(|g| {
                    let group = group_series(model, &releases, &g.id, clients);
                    let steps =
                        (g.steps.iter()).map(|s| step_series(model, &releases, g, s, clients));
                    std::iter::once(group).chain(steps)
                })
                .filter(|s| s.qps.iter().any(Option::is_some))
                .collect();
            let decided = (releases.iter())
                .map(|r| model.decided_of(r, clients).map(|d| d.counts))
                .collect();
            out.push(VersionSweep {
                sweep: name.to_string(),
                clients,
                base: model.base.clone(),
                releases: releases.clone(),
                series,
                decided,
            });
        }
    }
    out
}

/// 1 at the base itself, else `value`.
fn at<T>(model: &ReportModel, release: &str, one: T, value: impl FnOnce() -> T) -> T {
    if release == model.base { one } else { value() }
}

fn step_series(
    model: &ReportModel,
    releases: &[String],
    group: &super::super::model::StepGroup,
    step: &str,
    clients: u32,
) -> VersionSeries {
    let rel = |r: &str| model.relative_of(r, step, clients);
    let qps = |r: &String| at(model, r, Some(1.0), || rel(r).and_then(|x| x.qps));
    let cpu = |r: &String| {
        at(model, r, Some(1.0), || {
            rel(r).and_then(|x| x.ratios.0.get(Metric::ServerCpu))
        })
    };
    let qv = |r: &String| rel(r).and_then(|x| x.verdict.clone());
    let cv = |r: &String| rel(r).and_then(|x| cpu_verdict(x).map(str::to_string));
    finish(
        releases,
        VersionSeries {
            group: group.id.clone(),
            step: Some(step.to_string()),
            qps: releases.iter().map(qps).collect(),
            server_cpu: releases.iter().map(cpu).collect(),
            qps_verdicts: releases.iter().map(qv).collect(),
            server_cpu_verdicts: releases.iter().map(cv).collect(),
            first_qps_change: None,
            first_server_cpu_change: None,
        },
    )
}

fn cpu_verdict(r: &Relative) -> Option<&str> {
    r.tests.get(Metric::ServerCpu).map(|t| t.verdict.as_str())
}

/// The group's row: the group summary's medians, and the verdict more than half of its
/// steps (with a relative QPS) share, else `within noise` (`None` when no step has one).
fn group_series(
    model: &ReportModel,
    releases: &[String],
    group: &str,
    clients: u32,
) -> VersionSeries {
    let steps: Vec<&String> = (model.step_groups.iter())
        .find(|g| g.id == group)
        .map(|g| g.steps.iter().collect())
        .unwrap_or_default();
    let majority = |r: &String, of: &dyn Fn(&Relative) -> Option<&str>| -> Option<String> {
        let rows: Vec<&Relative> = (steps.iter())
            .filter_map(|s| model.relative_of(r, s, clients))
            .filter(|x| x.qps.is_some())
            .collect();
        let verdicts: Vec<&str> = rows.iter().filter_map(|x| of(x)).collect();
        if verdicts.is_empty() {
            return None;
        }
        let share = |v: &str| verdicts.iter().filter(|x| **x == v).count() * 2 > rows.len();
        Some(
            ["regression", "improvement"]
                .into_iter()
                .find(|v| share(v))
                .unwrap_or("within noise")
                .to_string(),
        )
    };
    let summary = |r: &String| model.group_of(r, group, clients);
    finish(
        releases,
        VersionSeries {
            group: group.to_string(),
            step: None,
            qps: (releases.iter())
                .map(|r| at(model, r, Some(1.0), || summary(r).and_then(|g| g.median)))
                .collect(),
            server_cpu: (releases.iter())
                .map(|r| {
                    at(model, r, Some(1.0), || {
                        summary(r).and_then(|g| g.server_cpu_us_per_op_median)
                    })
                })
                .collect(),
            qps_verdicts: (releases.iter())
                .map(|r| majority(r, &|x| x.verdict.as_deref()))
                .collect(),
            server_cpu_verdicts: (releases.iter())
                .map(|r| majority(r, &cpu_verdict))
                .collect(),
            first_qps_change: None,
            first_server_cpu_change: None,
        },
    )
}

/// The first release whose verdict is a change, for each metric.
fn finish(releases: &[String], mut s: VersionSeries) -> VersionSeries {
    let first = |verdicts: &[Option<String>]| {
        (releases.iter().zip(verdicts)).find_map(|(r, v)| match v.as_deref() {
            Some(v @ ("regression" | "improvement")) => Some(FirstChange {
                release: r.clone(),
                verdict: v.to_string(),
            }),
            _ => None,
        })
    };
    s.first_qps_change = first(&s.qps_verdicts);
    s.first_server_cpu_change = first(&s.server_cpu_verdicts);
    s
}

/// A release's short name in tables: the target name without the sweep's `NAME-`.
fn short<'a>(sweep: &str, release: &'a str) -> &'a str {
    release
        .strip_prefix(sweep)
        .and_then(|r| r.strip_prefix('-'))
        .unwrap_or(release)
}

/// `16.9 ↓` (a regression first) or `16.9 ↑`; `none` when nothing moved; n/a without verdicts.
fn first_text(sweep: &str, f: Option<&FirstChange>, any_verdict: bool) -> String {
    match f {
        Some(f) if f.verdict == "regression" => format!("{} worse", short(sweep, &f.release)),
        Some(f) => format!("{} better", short(sweep, &f.release)),
        None if any_verdict => "none".into(),
        None => NA.into(),
    }
}

/// A relative cell, with `*` on the first release that moved.
fn marked(v: Option<f64>, verdict: Option<&str>, first: bool) -> Cell {
    let mut c = rel_cell(v, verdict);
    if first {
        c.text.push('*');
    }
    c
}

/// The section: per sweep × clients, the groups' table (releases as rows), the steps' QPS
/// and CPU/op tables (steps as rows) and, in HTML, one chart per group.
pub(in crate::report) fn blocks(m: &ReportModel, doc: &mut Vec<Block>) {
    for v in &m.by_version {
        doc.push(Block::Heading(format!(
            "By version: {} ({} releases), clients = {}",
            v.sweep,
            v.releases.len(),
            v.clients
        )));
        let verdicts = (v.series.iter()).any(|s| s.qps_verdicts.iter().any(Option::is_some));
        let mut para = format!(
            "Relative to {}, in release order: relative QPS (> 1 is faster) and relative server CPU/op (< 1 is cheaper). ",
            v.base
        );
        para.push_str(if verdicts {
            "\"*\" marks the first release whose verdict against the base is a change (coloured as the verdict); \
             a group moved when more than half of its steps did, the same way."
        } else {
            "1 repeat: no verdicts, so no release is marked as the first that moved (--repeats 3 or repeats = \"auto\" gives them)."
        });
        doc.push(Block::Para(para));
        doc.push(Block::Table(groups_table(v, verdicts)));
        doc.push(Block::Figures {
            title: Some(format!("{} by version, clients = {}", v.sweep, v.clients)),
            charts: (v.series.iter())
                .filter(|s| s.step.is_none())
                .map(|s| ChartRef::ByVersion {
                    sweep: v.sweep.clone(),
                    group: s.group.clone(),
                    clients: v.clients,
                })
                .collect(),
            note: None,
        });
        doc.push(Block::SubHeading("Relative QPS per step".into()));
        doc.push(Block::Table(steps_table(v, verdicts, Measure::Qps)));
        doc.push(Block::SubHeading("Relative server CPU/op per step".into()));
        doc.push(Block::Table(steps_table(v, verdicts, Measure::Cpu)));
    }
}

#[derive(Clone, Copy)]
enum Measure {
    Qps,
    Cpu,
}

impl Measure {
    fn of(self, s: &VersionSeries) -> (&[Option<f64>], &[Option<String>], Option<&FirstChange>) {
        match self {
            Measure::Qps => (&s.qps, &s.qps_verdicts, s.first_qps_change.as_ref()),
            Measure::Cpu => (
                &s.server_cpu,
                &s.server_cpu_verdicts,
                s.first_server_cpu_change.as_ref(),
            ),
        }
    }
}

/// Releases as rows; per group a QPS and a CPU/op column, and how many steps each release
/// decided (when the report has verdicts); a last row naming the first move.
fn groups_table(v: &VersionSweep, verdicts: bool) -> Grid {
    let groups: Vec<&VersionSeries> = v.series.iter().filter(|s| s.step.is_none()).collect();
    let mut header = vec!["release".to_string()];
    for g in &groups {
        header.push(format!("{}\nQPS", g.group));
        header.push(format!("{}\nCPU/op", g.group));
    }
    let decided = v.decided.iter().any(Option::is_some);
    if decided {
        header.push("steps\ndecided".into());
    }
    let cell = |g: &VersionSeries, m: Measure, i: usize, r: &str| {
        let (vals, verd, first) = m.of(g);
        marked(
            vals[i],
            verd[i].as_deref(),
            first.is_some_and(|f| f.release == r),
        )
    };
    let mut rows: Vec<Vec<Cell>> = (v.releases.iter().enumerate())
        .map(|(i, r)| {
            let mut row = vec![Cell::plain(short(&v.sweep, r))];
            for g in &groups {
                row.push(cell(g, Measure::Qps, i, r));
                row.push(cell(g, Measure::Cpu, i, r));
            }
            if decided {
                let d = v.decided.get(i).copied().flatten();
                let text = match d {
                    Some(d) => of(d.decided, d.steps),
                    None if *r == v.base => "base".into(),
                    None => NA.into(),
                };
                row.push(Cell::plain(text));
            }
            row
        })
        .collect();
    let mut last = vec![Cell::plain("first moved")];
    for g in &groups {
        for m in [Measure::Qps, Measure::Cpu] {
            last.push(Cell::plain(first_text(&v.sweep, m.of(g).2, verdicts)));
        }
    }
    if decided {
        last.push(Cell::plain(""));
    }
    rows.push(last);
    Grid {
        right: (0..header.len()).map(|i| i > 0).collect(),
        header,
        rows,
    }
}

/// Steps as rows (by group), releases as columns, and the first move.
fn steps_table(v: &VersionSweep, verdicts: bool, m: Measure) -> Grid {
    let mut header = vec!["step".to_string()];
    header.extend(v.releases.iter().map(|r| short(&v.sweep, r).to_string()));
    header.push("first moved".into());
    let rows = (v.series.iter().filter(|s| s.step.is_some()))
        .map(|s| {
            let (vals, verd, first) = m.of(s);
            let mut row = vec![Cell::plain(s.step.clone().unwrap_or_default())];
            for (i, r) in v.releases.iter().enumerate() {
                let is_first = first.is_some_and(|f| f.release == *r);
                row.push(marked(vals[i], verd[i].as_deref(), is_first));
            }
            row.push(Cell::plain(first_text(&v.sweep, first, verdicts)));
            row
        })
        .collect();
    Grid {
        right: (0..header.len())
            .map(|i| i > 0 && i < header.len() - 1)
            .collect(),
        header,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::fixture::{run_two_clients, run_version_sweep};
    use super::super::super::{Format, build, render};
    use super::*;

    fn section(format: Format, data: &crate::results::RunData) -> String {
        let model = build(data, None).unwrap();
        let all = render(&model, format, false);
        let heading = match format {
            Format::Html => "<h2 id=\"by-version",
            _ => "By version",
        };
        let start = all.find(heading).expect("the section is there");
        let start = all[..start].rfind('\n').map_or(0, |i| i + 1);
        let rest = &all[start + 1..];
        let next = match format {
            Format::Html => rest.find("<h2"),
            Format::Markdown => rest.find("\n## "),
            _ => rest.find("\nResults").or_else(|| rest.find("\nWarnings")),
        };
        all[start..start + 1 + next.unwrap_or(rest.len())].to_string()
    }

    /// The point group and its steps first move at 16.9 (not 16.10: numeric order), both in
    /// QPS (a regression) and in CPU/op; the range-agg step never does.
    #[test]
    fn the_first_release_that_moved_is_the_first_with_a_verdict_of_change() {
        let m = build(&run_version_sweep(), None).unwrap();
        assert_eq!(m.by_version.len(), 1);
        let v = &m.by_version[0];
        assert_eq!(v.releases, ["pg-16.2", "pg-16.3", "pg-16.9", "pg-16.10"]);
        assert_eq!(v.base, "pg-16.2");
        let first = |group: &str, step: Option<&str>| {
            let s = (v.series.iter())
                .find(|s| s.group == group && s.step.as_deref() == step)
                .unwrap();
            assert_eq!(s.qps[0], Some(1.0), "1 at the base");
            (
                s.first_qps_change
                    .as_ref()
                    .map(|f| (f.release.as_str(), f.verdict.as_str())),
                s.first_server_cpu_change
                    .as_ref()
                    .map(|f| (f.release.as_str(), f.verdict.as_str())),
            )
        };
        // Against 16.2: 16.3 decides none of its 3 steps (within noise), 16.9 and 16.10 the
        // two point steps (regressions); range-agg stays within noise.
        let decided: Vec<Option<(u32, u32, u32)>> = (v.decided.iter())
            .map(|d| d.map(|d| (d.decided, d.steps, d.regressions)))
            .collect();
        assert_eq!(
            decided,
            [None, Some((0, 3, 0)), Some((2, 3, 2)), Some((2, 3, 2))]
        );
        let moved = Some(("pg-16.9", "regression"));
        assert_eq!(first("point", None), (moved, moved));
        assert_eq!(first("point", Some("point-query")), (moved, moved));
        assert_eq!(first("range-agg", None), (None, None));
        assert_eq!(first("range-agg", Some("read-only_range=10")), (None, None));
    }

    /// One repeat: no verdicts, so nothing is marked and the section says why.
    #[test]
    fn one_repeat_marks_nothing_and_says_so() {
        let mut data = run_version_sweep();
        data.measurements.retain(|m| m.repeat == 1);
        let m = build(&data, None).unwrap();
        assert!(
            m.by_version[0]
                .series
                .iter()
                .all(|s| s.first_qps_change.is_none())
        );
        assert!(m.by_version[0].decided.iter().all(Option::is_none));
        let text = section(Format::Text, &data);
        assert!(text.contains("1 repeat: no verdicts"), "{text}");
        assert!(!text.contains("decided"), "{text}");
        assert!(!text.contains('*'), "{text}");
    }

    #[test]
    fn a_run_without_a_sweep_has_no_by_version_view() {
        let m = build(&run_two_clients(), None).unwrap();
        assert!(m.by_version.is_empty());
        assert!(!render(&m, Format::Text, false).contains("By version"));
    }

    #[test]
    fn snapshot_by_version_text_and_markdown() {
        insta::assert_snapshot!(
            "by_version_text",
            section(Format::Text, &run_version_sweep())
        );
        insta::assert_snapshot!(
            "by_version_md",
            section(Format::Markdown, &run_version_sweep())
        );
    }

    /// The HTML section with each chart's SVG body elided (its drawing is checked below).
    #[test]
    fn snapshot_by_version_html_with_a_chart_per_group() {
        let html = section(Format::Html, &run_version_sweep());
        let mut shown = String::new();
        let mut rest = html.as_str();
        while let Some(i) = rest.find("<svg") {
            let end = rest[i..].find("</svg>").expect("closed") + i + "</svg>".len();
            shown.push_str(&rest[..i]);
            shown.push_str("<svg>…</svg>");
            rest = &rest[end..];
        }
        shown.push_str(rest);
        insta::assert_snapshot!("by_version_html", shown);
        let m = build(&run_version_sweep(), None).unwrap();
        let svg = |group: &str| {
            let chart = ChartRef::ByVersion {
                sweep: "pg".into(),
                group: group.into(),
                clients: 1,
            };
            super::super::super::charts::svg(&m, &chart)
                .unwrap()
                .expect("drawn")
        };
        let point = svg("point");
        for text in [
            "first moved: QPS regression",
            "16.10",
            "relative server CPU/op",
        ] {
            assert!(point.contains(text), "{text} in the point chart");
        }
        let svg = svg("range-agg");
        assert!(!svg.contains("first moved"), "range-agg never moved");
    }
}
