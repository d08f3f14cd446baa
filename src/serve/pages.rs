//! The pages `dbdelta serve` draws itself: the runs and labs of the store, the bar above a
//! run's report, a run's flame graphs, the history charts, and the error page.
//!
//! Owns their HTML and CSS (inline: nothing is fetched) and the links between them. Must not:
//! read the store or render a report (its callers hand it records and the report's model).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use super::chart::{Chart, Dot, Line, Overlay, number};
use super::url::enc;
use crate::history::render::when;
use crate::history::{History, Point, Series};
use crate::report::{ReportModel, escape};
use crate::store::RunSummary;

const CSS: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 1.5em 2em; color: #1b1b1b; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.92em; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 0.3em 0.7em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
a { color: #0b57d0; }
.partial { color: #7f3000; font-weight: 600; }
.muted { color: #666; }
.bar { font: 0.9em system-ui, sans-serif; background: #f4f4f4; padding: 0.5em 0.8em; margin-bottom: 1em; border-bottom: 1px solid #ddd; }
.bar a { margin-right: 1.2em; }
figure { margin: 0.5em 0 1.5em; }
figcaption { font-weight: 600; margin-bottom: 0.3em; }
form { margin: 0.8em 0; } form label { margin-right: 0.6em; }
ul.changes li { margin: 0.3em 0; } li.worse b { color: #c5221f; } li.better b { color: #137333; }
";

/// The bar above a report (its page has the report's stylesheet, not ours).
const BAR_STYLE: &str = "font: 0.9em system-ui, sans-serif; background: #f4f4f4; padding: 0.5em 0.8em; border-bottom: 1px solid #ddd";

/// A whole page around `body`.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{CSS}</style></head>\n<body>\n{body}</body></html>\n",
        escape(title)
    )
}

/// An error page: the status and one line saying what is wrong.
pub fn problem(status: u16, what: &str) -> String {
    page(
        &format!("{status}"),
        &format!(
            "<div class=\"bar\"><a href=\"/\">All runs</a></div>\n<h1>{status}</h1>\n<p>{}</p>\n",
            escape(what)
        ),
    )
}

/// `/`: the runs, newest first, each linking to its report; the labs, each linking to its
/// history.
pub fn runs(runs: &[RunSummary], store: &Path) -> String {
    let mut b = format!(
        "<h1>dbdelta: {}</h1>\n<p class=\"muted\">Runs stored: {}.</p>\n",
        escape(&store.display().to_string()),
        runs.len()
    );
    b.push_str(
        "<h2>Labs</h2>\n<table><tr><th>lab</th><th>runs</th><th>latest</th><th>history</th></tr>\n",
    );
    let mut labs: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    for r in runs {
        let e = labs.entry(&r.lab).or_insert((0, ""));
        e.0 += 1;
        e.1 = e.1.max(r.started.as_str());
    }
    for (lab, (n, latest)) in &labs {
        let _ = writeln!(
            b,
            "<tr><td><a href=\"/history?lab={0}\">{1}</a></td><td>{n}</td><td>{2}</td>\
             <td><a href=\"/history/overview?lab={0}\">overview</a></td></tr>",
            enc(lab),
            escape(lab),
            escape(&when(latest))
        );
    }
    b.push_str("</table>\n<h2>Runs</h2>\n");
    b.push_str(
        "<table><tr><th>run</th><th>name</th><th>tags</th><th>lab</th><th>started</th>\
         <th>state</th><th>targets</th><th>steps</th></tr>\n",
    );
    for r in runs.iter().rev() {
        let state = if r.complete {
            "complete".to_string()
        } else {
            "<span class=\"partial\">partial</span>".to_string()
        };
        let _ = writeln!(
            b,
            "<tr><td><a href=\"/run/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{state}</td><td>{}</td><td>{}</td></tr>",
            enc(&r.id),
            escape(&r.id),
            escape(r.name.as_deref().unwrap_or("")),
            escape(&r.tags.join(", ")),
            escape(&r.lab),
            escape(&when(&r.started)),
            escape(&r.targets.join(", ")),
            r.steps
        );
    }
    b.push_str("</table>\n");
    page("dbdelta: runs", &b)
}

/// The bar above a run's report: back to the runs, the lab's history, the flame graphs (when
/// `flames`: the store holds folded stacks of some step) or why there are none.
pub fn report_bar(m: &ReportModel, flames: bool) -> String {
    // Styled inline: the report's own stylesheet knows no `.bar`.
    let mut b = format!("<div style=\"{BAR_STYLE}\"><a href=\"/\">All runs</a>");
    let _ = write!(
        b,
        " · <a href=\"/history?lab={}\">History of this lab</a>",
        enc(&m.run.lab)
    );
    if flames {
        let _ = write!(
            b,
            " · <a href=\"/run/{}/flames\">Flame graphs</a>",
            enc(&m.run.id)
        );
    } else if m.profiles.is_some() {
        let _ = write!(
            b,
            " · <a href=\"/run/{}/flames\">No flame graphs (why)</a>",
            enc(&m.run.id)
        );
    }
    b.push_str("</div>\n");
    b
}

/// `/run/ID/flames`: per profiled or counted step, a link to each flame graph SVG the store's
/// folded stacks or call trees give, by its title (a counted step's: the compared pair, its
/// instructions/op ratio, whose widths), with a line saying what it shows, in the order given
/// (the larger change first).
pub fn flames(m: &ReportModel, steps: &[(String, Vec<crate::report::FlameListing>)]) -> String {
    let id = &m.run.id;
    let mut b = format!(
        "<div class=\"bar\"><a href=\"/\">All runs</a><a href=\"/run/{}\">Report of run {}</a></div>\n\
         <h1>Flame graphs of run {}</h1>\n",
        enc(id),
        escape(id),
        escape(id)
    );
    if steps.is_empty() {
        let why = match &m.profiles {
            None => "the run was not profiled (run it with --profile) and no compared step has \
                     its calls counted (run it with --instructions, callgrind counting)"
                .to_string(),
            Some(p) => p.unavailable.clone().unwrap_or_else(|| {
                let notes: Vec<String> = (p.steps.iter())
                    .flat_map(|s| {
                        s.targets.iter().flat_map(|t| {
                            t.errors.iter().map(move |e| format!("{}: {e}", t.target))
                        })
                    })
                    .collect();
                format!(
                    "the store holds no folded stacks of any step ({})",
                    notes.join("; ")
                )
            }),
        };
        let _ = writeln!(b, "<p>No flame graphs: {}.</p>", escape(&why));
    }
    for (step, files) in steps {
        let _ = writeln!(b, "<h2>{}</h2>\n<ul>", escape(step));
        for f in files {
            let _ = writeln!(
                b,
                "<li><a href=\"/run/{}/flame/{}/{}\">{}</a><br>{}</li>",
                enc(id),
                enc(step),
                enc(&f.file),
                escape(&f.title),
                escape(&f.shows)
            );
        }
        b.push_str("</ul>\n");
    }
    page(&format!("dbdelta: flame graphs of {id}"), &b)
}

/// What the history page was asked for (the query string), to fill its form and its links.
#[derive(Debug, Clone, Default)]
pub struct HistoryAsk {
    pub lab: String,
    pub target: String,
    pub step: String,
    pub metric: String,
    /// `first`, a run id or name: values relative to that run; empty: absolute.
    pub relative: String,
}

/// `/history`: the filter form, then per series its chart and its change points, each linking
/// to the report of the run after the change, of the run before it, and to its flame graphs.
pub fn history(h: &History, ask: &HistoryAsk) -> String {
    let title = if ask.lab.is_empty() {
        "History of every lab".to_string()
    } else {
        format!("History: {}", ask.lab)
    };
    let overview = match ask.lab.is_empty() {
        true => String::new(),
        false => format!(
            "<a href=\"/history/overview?lab={}\">Overview of this lab</a>",
            enc(&ask.lab)
        ),
    };
    let mut b = format!(
        "<div class=\"bar\"><a href=\"/\">All runs</a>{overview}</div>\n<h1>{}</h1>\n",
        escape(&title)
    );
    history_form(&mut b, ask);
    let _ = writeln!(
        b,
        "<p class=\"muted\">{} per run over time: the report's value (mean over the run's repeats) \
         with its 95% interval. A dashed red line is a change point (p ≤ {}, a move of at least {:.0}%); \
         click a point or a change for its run's report.</p>",
        escape(&h.metric),
        h.max_p,
        h.min_magnitude * 100.0
    );
    if !h.partial.is_empty() {
        let names: Vec<String> = (h.partial.iter())
            .map(|r| run_link(&r.run_id, r.run_name.as_deref()))
            .collect();
        let _ = writeln!(
            b,
            "<p class=\"muted\">Left out, not complete: {}.</p>",
            names.join(", ")
        );
    }
    notes(&mut b, h);
    if h.series.is_empty() {
        b.push_str("<p>No stored run matches: check the lab name and the filters.</p>\n");
    }
    // The targets of one step (and client count) overlaid in one chart, then each target's
    // change points.
    for same in steps_of(h) {
        if same.len() > 1 {
            let s0 = same[0];
            let heading = format!("{} · {} · {}", s0.lab, s0.step, clients_text(s0.clients));
            let _ = writeln!(b, "<h2>{}</h2>", escape(&heading));
            let lines = same.iter().map(|s| (s.target.clone(), s.points.clone()));
            let chart = overlay_of(&format!("{heading}: {}", h.metric), &unit(h), lines);
            let _ = writeln!(b, "<figure>{}</figure>", super::chart::overlay(&chart));
        }
        for s in same.iter().copied() {
            series(&mut b, h, s, same.len() > 1);
        }
    }
    page(&title, &b)
}

/// The notes above the charts: relative values, intervals cut at 0.
fn notes(b: &mut String, h: &History) {
    if let Some(base) = &h.relative_to {
        let _ = writeln!(
            b,
            "<p class=\"muted\">Values relative to each series' value in run <b>{}</b> (1 = that run).</p>",
            escape(base)
        );
    }
    if h.series.iter().flat_map(|s| &s.points).any(|p| p.clipped) {
        let _ = writeln!(
            b,
            "<p class=\"muted\">{}</p>",
            escape(crate::history::render::CLIPPED)
        );
    }
}

/// The unit of the charts' axis.
fn unit(h: &History) -> String {
    match h.relative_to.as_deref() {
        Some(crate::history::FIRST) => format!("{} / first run", h.metric),
        Some(base) => format!("{} / run {base}", h.metric),
        None => h.metric.clone(),
    }
}

fn clients_text(n: u32) -> String {
    format!("{n} client{}", if n == 1 { "" } else { "s" })
}

/// The series grouped by lab, step and clients, in the history's order.
fn steps_of(h: &History) -> Vec<Vec<&Series>> {
    let mut out: Vec<Vec<&Series>> = Vec::new();
    for s in &h.series {
        let same = |o: &&Series| o.lab == s.lab && o.step == s.step && o.clients == s.clients;
        match out.iter_mut().find(|g| g.first().is_some_and(same)) {
            Some(g) => g.push(s),
            None => out.push(vec![s]),
        }
    }
    out
}

/// An overlay of named point lists over the union of their runs, in start order.
fn overlay_of(
    title: &str,
    unit: &str,
    lines: impl Iterator<Item = (String, Vec<Point>)>,
) -> Overlay {
    let lines: Vec<(String, Vec<Point>)> = lines.collect();
    let mut runs: Vec<&Point> = lines.iter().flat_map(|(_, ps)| ps).collect();
    runs.sort_by(|a, b| (&a.started, &a.run_id).cmp(&(&b.started, &b.run_id)));
    runs.dedup_by(|a, b| a.run_id == b.run_id);
    let label = |p: &Point| (p.run_name.clone()).unwrap_or_else(|| when(&p.started));
    let at = |ps: &[Point], id: &str| ps.iter().find(|p| p.run_id == id).cloned();
    Overlay {
        title: title.to_string(),
        unit: unit.to_string(),
        runs: runs.iter().map(|p| (p.run_id.clone(), label(p))).collect(),
        lines: (lines.iter())
            .map(|(name, ps)| Line {
                name: name.clone(),
                values: runs
                    .iter()
                    .map(|r| at(ps, &r.run_id).map(|p| p.value))
                    .collect(),
                intervals: (runs.iter())
                    .map(|r| at(ps, &r.run_id).and_then(|p| p.interval))
                    .collect(),
            })
            .collect(),
    }
}

/// `/history/overview?lab=LAB`: one chart per report group (and client count), each target a
/// line: per run, the geometric mean of the group's steps' values relative to each step's
/// first run (`h` is the lab's history relative to [`crate::history::FIRST`]).
pub fn overview(h: &History, lab: &str) -> String {
    let title = format!("Overview: {lab}");
    let mut b = format!(
        "<div class=\"bar\"><a href=\"/\">All runs</a><a href=\"/history?lab={}\">Every step of this lab</a></div>\n<h1>{}</h1>\n",
        enc(lab),
        escape(&title)
    );
    let _ = writeln!(
        b,
        "<p class=\"muted\">{} per run, one chart per report group: each target's line is the geometric mean over the group's \
         steps of each step's value relative to its first run (1 = as in the first run; {} is better). \
         Intervals are per step: see every step of the lab.</p>",
        escape(&h.metric),
        if h.higher_is_better {
            "higher"
        } else {
            "lower"
        }
    );
    if h.series.is_empty() {
        b.push_str("<p>No stored complete run of this lab.</p>\n");
    }
    for ((group, clients), lines) in groups_of(h) {
        let heading = format!("{group} · {}", clients_text(clients));
        let _ = writeln!(b, "<h2>{}</h2>", escape(&heading));
        let chart = overlay_of(
            &heading,
            &format!("{} / first run", h.metric),
            lines.into_iter(),
        );
        let _ = writeln!(b, "<figure>{}</figure>", super::chart::overlay(&chart));
    }
    page(&title, &b)
}

/// A target's points in a group.
type Named = (String, Vec<Point>);

/// Per report group and client count (first-seen order), per target, the geometric mean of
/// the group's steps' values in each run (over the steps that have one), as points.
fn groups_of(h: &History) -> Vec<((String, u32), Vec<Named>)> {
    let mut out: Vec<((String, u32), Vec<Named>)> = Vec::new();
    for s in &h.series {
        let key = (s.group.clone(), s.clients);
        let at = match out.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                out.push((key, Vec::new()));
                out.len() - 1
            }
        };
        let lines = &mut out[at].1;
        let line = match lines.iter().position(|(t, _)| *t == s.target) {
            Some(i) => i,
            None => {
                lines.push((s.target.clone(), Vec::new()));
                lines.len() - 1
            }
        };
        // Sums of logs and counts per run, folded into the points below.
        for p in s.points.iter().filter(|p| p.value > 0.0) {
            let points = &mut lines[line].1;
            match points.iter_mut().find(|q| q.run_id == p.run_id) {
                Some(q) => {
                    q.value += p.value.ln();
                    q.repeats += 1;
                }
                None => points.push(Point {
                    value: p.value.ln(),
                    interval: None,
                    clipped: false,
                    repeats: 1,
                    ..p.clone()
                }),
            }
        }
    }
    for (_, lines) in &mut out {
        for (_, points) in lines.iter_mut() {
            for p in points.iter_mut() {
                p.value = (p.value / f64::from(p.repeats)).exp();
            }
        }
    }
    out
}

fn history_form(b: &mut String, ask: &HistoryAsk) {
    let field = |name: &str, value: &str| {
        let size = if name == "lab" { 36 } else { 14 };
        format!(
            "<label>{name} <input name=\"{name}\" value=\"{}\" size=\"{size}\"></label> ",
            escape(value)
        )
    };
    let _ = writeln!(
        b,
        "<form method=\"get\" action=\"/history\">{}{}{}{}{}<button>Show</button> \
         <span class=\"muted\">(metric: qps, tps, cpu, instructions or a metric id; empty target or step: all; \
         relative: first, or a run id or name)</span></form>",
        field("lab", &ask.lab),
        field("target", &ask.target),
        field("step", &ask.step),
        field("metric", &ask.metric),
        field("relative", &ask.relative),
    );
}

/// A run as a link to its report, named by its name when it has one.
fn run_link(id: &str, name: Option<&str>) -> String {
    format!(
        "<a href=\"/run/{}\">{}</a>",
        enc(id),
        escape(name.unwrap_or(id))
    )
}

/// One series: heading, chart (unless `overlaid`: its step's chart has it), change points.
fn series(b: &mut String, h: &History, s: &Series, overlaid: bool) {
    let heading = format!("{} · {} · {}", s.target, s.step, clients_text(s.clients));
    let level = if overlaid { "h3" } else { "h2" };
    let _ = writeln!(b, "<{level}>{}</{level}>", escape(&heading));
    let label = |p: &Point| (p.run_name.clone()).unwrap_or_else(|| when(&p.started));
    let chart = Chart {
        title: format!("{heading}: {}", h.metric),
        unit: unit(h),
        dots: (s.points.iter())
            .map(|p| Dot {
                run_id: p.run_id.clone(),
                label: label(p),
                value: p.value,
                interval: p.interval,
            })
            .collect(),
        changes: s.changes.iter().map(|c| c.index).collect(),
    };
    if !overlaid {
        let _ = writeln!(b, "<figure>{}</figure>", super::chart::svg(&chart));
    }
    if let Some(why) = &s.too_few {
        let _ = writeln!(
            b,
            "<p class=\"muted\">No change points looked for: {}.</p>",
            escape(why)
        );
    } else if s.changes.is_empty() {
        b.push_str("<p class=\"muted\">No change point.</p>\n");
    }
    if s.changes.is_empty() {
        return;
    }
    b.push_str("<ul class=\"changes\">\n");
    for c in &s.changes {
        let Some(before) = c.index.checked_sub(1).and_then(|i| s.points.get(i)) else {
            continue;
        };
        let after = &s.points[c.index];
        let ratio = c
            .ratio
            .map(|r| format!(" ({:+.1}%)", (r - 1.0) * 100.0))
            .unwrap_or_default();
        let _ = writeln!(
            b,
            "<li class=\"{}\"><b>Change at {}</b>: {} → {}{ratio}, p = {:.2e}, {}. \
             Report of {} · of the run before, {} · <a href=\"/run/{}/flames\">flame graphs of {}</a></li>",
            if c.worse { "worse" } else { "better" },
            escape(&label(after)),
            number(c.before_mean),
            number(c.after_mean),
            c.p_value,
            if c.worse { "worse" } else { "better" },
            run_link(&after.run_id, after.run_name.as_deref()),
            run_link(&before.run_id, before.run_name.as_deref()),
            enc(&after.run_id),
            escape(&label(after)),
        );
    }
    b.push_str("</ul>\n");
}
