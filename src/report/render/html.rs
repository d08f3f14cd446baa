//! The HTML report: one self-contained page (inline CSS, inline SVG charts, no script, no
//! external font, image or link) drawn from the same layout as text and Markdown, plus the
//! charts of `charts`.
//!
//! Owns HTML syntax, escaping, the stylesheet and the colour key. It must not decide what is
//! shown or how numbers are rounded (that is `layout`), draw charts itself (`charts`), or do
//! any I/O.

use std::collections::BTreeMap;

use super::super::charts;
use super::super::doc::{Block, ChartRef, Grid, Tone};
use super::super::layout;
use super::super::model::ReportModel;

/// Inline stylesheet. Colours: Okabe–Ito bluish green and vermillion, lightened for cell
/// backgrounds, with dark text of the same hue (contrast above 7:1); grey for "within 5%".
const STYLE: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; color: #1a1a1a;
  margin: 0; background: #fff; }
main { max-width: 1180px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 1.6em; margin: 0.4em 0; }
h2 { font-size: 1.3em; margin: 1.6em 0 0.4em; padding-bottom: 4px; border-bottom: 2px solid #ddd; }
h3 { font-size: 1.05em; margin: 1.3em 0 0.4em; }
nav { font-size: 0.9em; margin: 0.6em 0 1em; }
nav a { margin-right: 1em; color: #0b5394; }
ul { margin: 0.3em 0; padding-left: 1.4em; }
li { margin: 0.15em 0; }
table { border-collapse: collapse; margin: 0.4em 0 0.8em; font-size: 0.88em;
  font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d0d0; padding: 3px 8px; vertical-align: top; }
th { background: #f2f2f2; text-align: left; font-weight: 600; }
th.num, td.num { text-align: right; white-space: nowrap; }
td.better { background: #d3efe5; color: #004d38; font-weight: 600; }
td.worse { background: #fbdfcc; color: #7f3000; font-weight: 600; }
tr:not(.stat) + tr.stat td { border-top: 2px solid #999; }
.key { font-size: 0.9em; background: #fafafa; border: 1px solid #e2e2e2; padding: 6px 10px; }
.key span { padding: 1px 6px; }
.key .better { background: #d3efe5; color: #004d38; font-weight: 600; }
.key .worse { background: #fbdfcc; color: #7f3000; font-weight: 600; }
.figures { display: flex; flex-wrap: wrap; gap: 8px; }
figure { margin: 0.3em 0 1em; }
figure svg { max-width: 100%; height: auto; border: 1px solid #e6e6e6; }
p.chart-error { color: #7f3000; }
.flag { white-space: nowrap; }
";

/// The whole page.
pub fn render(model: &ReportModel) -> String {
    let doc = layout::document(model);
    let mut ids = Ids::default();
    let mut body = String::new();
    let mut toc: Vec<(String, String)> = Vec::new();
    let mut title = String::from("dbdelta report");
    let mut key_done = false;
    for block in &doc {
        match block {
            Block::Title(t) => {
                title = t.clone();
                body.push_str(&format!("<h1>{}</h1>\n", escape(t)));
            }
            Block::Heading(h) => {
                if !key_done {
                    body.push_str(KEY);
                    key_done = true;
                }
                let id = ids.of(h);
                body.push_str(&format!("<h2 id=\"{id}\">{}</h2>\n", escape(h)));
                toc.push((id, h.clone()));
            }
            Block::SubHeading(h) => {
                body.push_str(&format!("<h3 id=\"{}\">{}</h3>\n", ids.of(h), escape(h)));
            }
            Block::Para(p) => body.push_str(&format!("<p>{}</p>\n", prose(p))),
            Block::Bullets(items) => {
                body.push_str("<ul>\n");
                for i in items {
                    body.push_str(&format!("<li>{}</li>\n", prose(i)));
                }
                body.push_str("</ul>\n");
            }
            Block::Table(grid) => body.push_str(&table(grid)),
            Block::Figures {
                title,
                charts,
                note,
            } => {
                if let Some(t) = title {
                    body.push_str(&format!("<h3 id=\"{}\">{}</h3>\n", ids.of(t), escape(t)));
                }
                if let Some(n) = note {
                    body.push_str(&format!("<p>{}</p>\n", escape(n)));
                }
                if !charts.is_empty() {
                    body.push_str(&figures(model, charts));
                }
            }
        }
    }
    let mut out = String::with_capacity(body.len() + 4096);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!("<title>{}</title>\n", escape(&title)));
    out.push_str(&format!(
        "<style>{STYLE}</style>\n</head>\n<body>\n<main>\n"
    ));
    if !toc.is_empty() {
        out.push_str("<nav>");
        for (id, h) in &toc {
            out.push_str(&format!("<a href=\"#{id}\">{}</a>", escape(h)));
        }
        out.push_str("</nav>\n");
    }
    out.push_str(&body);
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// How to read relative cells, without needing the colours.
const KEY: &str = "<p class=\"key\">Relative cells are coloured only where the statistics call \
a change: <span class=\"better\">1.07+</span> an improvement (faster, or for costs cheaper), \
<span class=\"worse\">0.91-</span> a regression; the mark after the number says which way the \
ratio moved. A plain number is no verdict: within noise, one repeat, or a metric without one. \
Bar colours (Okabe–Ito palette) follow the order of the legend above each chart.</p>\n";

fn table(grid: &Grid) -> String {
    let mut out = String::from("<table>\n<thead><tr>");
    for (i, h) in grid.header.iter().enumerate() {
        let class = if grid.right.get(i).copied().unwrap_or(false) {
            " class=\"num\""
        } else {
            ""
        };
        let text: Vec<String> = h.split('\n').map(escape).collect();
        out.push_str(&format!("<th{class}>{}</th>", text.join("<br>")));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &grid.rows {
        // Group statistics rows ("(min)", "(median)", ...) get a rule above the first one.
        let stat = row.first().is_some_and(|c| c.text.starts_with('('));
        out.push_str(if stat { "<tr class=\"stat\">" } else { "<tr>" });
        for (i, cell) in row.iter().enumerate() {
            let mut classes = Vec::new();
            if grid.right.get(i).copied().unwrap_or(false) {
                classes.push("num");
            }
            let title = match cell.tone {
                Tone::Plain => None,
                Tone::Better => {
                    classes.push("better");
                    Some("improvement: the statistics call a change")
                }
                Tone::Worse => {
                    classes.push("worse");
                    Some("regression: the statistics call a change")
                }
            };
            out.push_str("<td");
            if !classes.is_empty() {
                out.push_str(&format!(" class=\"{}\"", classes.join(" ")));
            }
            if let Some(t) = title {
                out.push_str(&format!(" title=\"{t}\""));
            }
            out.push_str(&format!(">{}</td>", escape(&cell.text)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

fn figures(model: &ReportModel, charts: &[ChartRef]) -> String {
    let mut out = String::from("<div class=\"figures\">\n");
    for chart in charts {
        let label = match chart {
            ChartRef::RelativeQps { group, clients } => format!(
                "Bar chart: relative QPS of the {group} steps at {clients} client(s), one bar per step and target"
            ),
            ChartRef::Throughput { step, clients } => format!(
                "Line chart: queries per second of {step} at {clients} client(s), second by second"
            ),
            ChartRef::ClientsQps { group } => format!(
                "Line chart: group QPS of the {group} steps against clients (log2 axis), one line per target"
            ),
            ChartRef::BackgroundInserts { step, clients } => format!(
                "Line chart: rows inserted per second by the background inserters of {step} at {clients} client(s), second by second"
            ),
            ChartRef::ByVersion {
                sweep,
                group,
                clients,
            } => format!(
                "Line chart: relative QPS and server CPU/op of the {group} steps along the releases of {sweep} at {clients} client(s), the first release that moved marked"
            ),
            ChartRef::ProfileDiff {
                step,
                clients,
                target,
            } => {
                let label = format!(
                    "Differential flame graph: CPU per operation of {target} on {step} at {clients} client(s) against its base"
                );
                let id = charts::file_stem(chart);
                out.push_str(&flame_figure(model, (step, *clients, target), &label, &id));
                continue;
            }
            ChartRef::CallTreeDiff {
                step,
                clients,
                target,
                base_widths,
            } => {
                let label = format!(
                    "Differential flame graph: instructions per operation of {target} on {step} at {clients} client(s) against its base, in {}'s widths",
                    if *base_widths { "the base" } else { target }
                );
                let svg = super::super::why::flame_svg(
                    model,
                    (step, *clients, target),
                    *base_widths,
                    false,
                );
                out.push_str(&flame_of(svg, &label, &charts::file_stem(chart)));
                continue;
            }
        };
        match charts::svg(model, chart) {
            Ok(Some(svg)) => {
                out.push_str(&format!(
                    "<figure>{}</figure>\n",
                    inline_svg(&svg, &escape(&label))
                ));
            }
            Ok(None) => {}
            Err(e) => out.push_str(&format!(
                "<p class=\"chart-error\">{}: not drawn: {}</p>\n",
                escape(&label),
                escape(&e)
            )),
        }
    }
    out.push_str("</div>\n");
    out
}

/// An SVG document as an element of the page: no XML namespace attribute (HTML parsing puts
/// `<svg>` in the SVG namespace by itself, and the page then names no URL at all), with a
/// role and an accessible name.
/// A differential flame graph as a figure (or a paragraph saying why it is missing).
fn flame_figure(
    model: &ReportModel,
    (step, clients, target): (&str, u32, &str),
    label: &str,
    id: &str,
) -> String {
    let svg = (model.profiles.as_ref())
        .and_then(|p| {
            p.steps
                .iter()
                .find(|s| s.step == step && s.clients == clients)
        })
        .and_then(|s| {
            let b = s.targets.iter().find(|t| t.target == target)?;
            let base = s.diffs.iter().find(|d| d.target == target)?;
            let a = s.targets.iter().find(|t| t.target == base.base)?;
            Some(super::super::profile::diff_svg(a, b, step, false))
        });
    flame_of(svg, label, id)
}

/// An inferno SVG as a figure (or a paragraph saying why it is missing; nothing without one).
fn flame_of(svg: Option<Result<String, String>>, label: &str, id: &str) -> String {
    match svg {
        Some(Ok(svg)) => format!(
            "<figure class=\"flame\">{}</figure>\n",
            inline_svg(&inline_flame(&svg, id), &escape(label))
        ),
        Some(Err(e)) => format!(
            "<p class=\"chart-error\">{}: not drawn: {}</p>\n",
            escape(label),
            escape(&e)
        ),
        None => String::new(),
    }
}

/// Inferno's standalone SVG made fit to sit inside the page: no XML prologue, comments,
/// script, `onload` handler or page-wide `<style>` (its rules would restyle every chart);
/// the fonts as attributes; the interactive-only texts (details, zoom, search) removed; the
/// background gradient's id made unique per figure (`id`).
fn inline_flame(svg: &str, id: &str) -> String {
    let mut s = match svg.find("<svg ") {
        Some(i) => svg[i..].to_string(),
        None => svg.to_string(),
    };
    for (open, close) in [
        ("<!--", "-->"),
        ("<style", "</style>"),
        ("<script", "</script>"),
    ] {
        s = remove_between(&s, open, close);
    }
    for id in ["details", "unzoom", "search", "matched"] {
        s = remove_between(&s, &format!("<text id=\"{id}\""), "</text>");
    }
    s.replacen(" onload=\"init(evt)\"", "", 1)
        .replacen(
            "<svg ",
            "<svg font-family=\"monospace\" font-size=\"12\" ",
            1,
        )
        .replace(
            "<text id=\"title\"",
            "<text text-anchor=\"middle\" font-size=\"17\"",
        )
        .replace("<text id=\"subtitle\"", "<text text-anchor=\"middle\"")
        .replace(" id=\"frames\"", "")
        .replacen(" xmlns:xlink=\"http://www.w3.org/1999/xlink\"", "", 1)
        .replacen(" xmlns:fg=\"http://github.com/jonhoo/inferno\"", "", 1)
        .replace("id=\"background\"", &format!("id=\"flame-bg-{id}\""))
        .replace("url(#background)", &format!("url(#flame-bg-{id})"))
}

/// `s` without every `open`…`close` span (inclusive).
fn remove_between(s: &str, open: &str, close: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(open) {
        out.push_str(&rest[..i]);
        match rest[i..].find(close) {
            Some(j) => rest = &rest[i + j + close.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

fn inline_svg(svg: &str, label: &str) -> String {
    let svg = svg
        .trim_start_matches(|c: char| c.is_whitespace())
        .replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    svg.replacen(
        "<svg ",
        &format!("<svg role=\"img\" aria-label=\"{label}\" "),
        1,
    )
}

/// A sentence escaped, each word that is a flag (`--instructions`, `(--time,`) kept on one
/// line: a browser breaks a line after any hyphen, which cuts a flag into two that do not work.
fn prose(s: &str) -> String {
    let words: Vec<String> = (s.split(' '))
        .map(|w| {
            let bare = w.trim_start_matches(['(', '"', '\'', '`']);
            match bare.starts_with("--") && bare.len() > 2 {
                true => format!("<span class=\"flag\">{}</span>", escape(w)),
                false => escape(w),
            }
        })
        .collect();
    words.join(" ")
}

/// Escapes text for HTML element content and double- or single-quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Unique element ids made from heading text.
#[derive(Default)]
struct Ids {
    used: BTreeMap<String, u32>,
}

impl Ids {
    fn of(&mut self, text: &str) -> String {
        let mut slug = String::new();
        for c in text.chars() {
            if c.is_ascii_alphanumeric() {
                slug.push(c.to_ascii_lowercase());
            } else if !slug.ends_with('-') && !slug.is_empty() {
                slug.push('-');
            }
        }
        let slug = slug.trim_end_matches('-').to_string();
        let slug = if slug.is_empty() {
            "s".to_string()
        } else {
            slug
        };
        let n = self.used.entry(slug.clone()).or_insert(0);
        *n += 1;
        if *n == 1 { slug } else { format!("{slug}-{n}") }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::fixture::{run_sweep, run_three_repeats, run_two_clients};
    use super::*;
    use crate::results::RunData;

    fn page(data: &RunData) -> String {
        render(&super::super::super::build(data, None).unwrap())
    }

    /// Every `<tag` opens as often as `</tag>` closes.
    fn balanced(html: &str, tag: &str) {
        let open =
            html.matches(&format!("<{tag}>")).count() + html.matches(&format!("<{tag} ")).count();
        let close = html.matches(&format!("</{tag}>")).count();
        assert_eq!(
            open, close,
            "<{tag}> opened {open} times, closed {close} times"
        );
    }

    #[test]
    fn page_is_well_formed_and_self_contained() {
        for data in [run_two_clients(), run_three_repeats(), run_sweep()] {
            let html = page(&data);
            assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
            assert!(html.ends_with("</html>\n"));
            for tag in [
                "html", "head", "body", "main", "table", "thead", "tbody", "tr", "td", "th", "ul",
                "li", "p", "h1", "h2", "h3", "figure", "svg", "nav", "a",
            ] {
                balanced(&html, tag);
            }
            assert_eq!(html.matches("<style>").count(), 1);
            // Nothing to fetch: no URL, script, link, image or external resource.
            for banned in [
                "http://",
                "https://",
                "<script",
                "<link",
                "<img",
                "<iframe",
                "src=",
                "url(",
                "@import",
                "@font-face",
            ] {
                assert!(!html.contains(banned), "the page contains {banned}");
            }
        }
    }

    #[test]
    fn page_holds_tables_charts_and_warnings() {
        let html = page(&run_two_clients());
        // One bar chart per group and client count (two client counts), the per-second chart
        // of the one step with a series, and a QPS-against-clients chart per group.
        assert_eq!(
            html.matches("aria-label=\"Bar chart").count(),
            2 * 3,
            "{html}"
        );
        assert_eq!(
            html.matches("aria-label=\"Line chart: queries per second")
                .count(),
            1
        );
        assert_eq!(
            html.matches("aria-label=\"Line chart: group QPS").count(),
            3
        );
        assert!(html.contains("<h2 id=\"concurrency-qps-against-clients\">"));
        // One repeat: no verdict, so no relative cell is coloured or marked; the statistics
        // rows are there.
        assert!(!html.contains("<td class=\"num better\""), "{html}");
        assert!(!html.contains("<td class=\"num worse\""), "{html}");
        assert!(html.contains("<td class=\"num\">1.07</td>"), "{html}");
        assert!(html.contains("<td>(median)</td>"));
        // The failed target is named with its log path.
        assert!(html.contains("/tmp/dbdelta/20261122-0301/pg17.jemalloc/server.log"));
    }

    #[test]
    fn per_second_charts_need_five_seconds_and_say_what_was_left_out() {
        let mut data = run_two_clients();
        // A 2-second series of another step: too few points for a line.
        let mut short: Vec<_> = data.series[..2].to_vec();
        for s in &mut short {
            s.step = "update-one".into();
        }
        data.series.extend(short);
        let html = page(&data);
        let lines = "aria-label=\"Line chart: queries per second";
        assert_eq!(
            html.matches(lines).count(),
            1,
            "point-query's 5 seconds only"
        );
        assert!(!html.contains("queries per second of update-one"));
        assert!(
            html.contains("Drawn only for steps of at least 5 whole seconds on some side (fewer points show no line): 1 step left out (update-one)."),
            "{html}"
        );
        // No series long enough: no chart, and the page says why, once.
        data.series.retain(|s| s.second < 4);
        let html = page(&data);
        assert_eq!(html.matches(lines).count(), 0);
        assert_eq!(
            html.matches("no step ran 5 whole seconds").count(),
            1,
            "{html}"
        );
    }

    #[test]
    fn only_verdicts_are_coloured() {
        // Three repeats: pg17's point-query is a QPS regression, update-one an improvement.
        let html = page(&run_three_repeats());
        let coloured: Vec<&str> = html
            .split("<td class=\"num ")
            .skip(1)
            .filter_map(|c| c.split("</td>").next())
            .collect();
        assert!(
            coloured
                .iter()
                .any(|c| c.starts_with("worse\" title=\"regression") && c.ends_with('-')),
            "{coloured:?}"
        );
        assert!(
            coloured
                .iter()
                .any(|c| c.starts_with("better\" title=\"improvement") && c.ends_with('+')),
            "{coloured:?}"
        );
        // Every coloured number carries its mark; no cell is coloured without a verdict.
        for c in &coloured {
            assert!(c.ends_with('+') || c.ends_with('-'), "{c}");
        }
    }

    #[test]
    fn text_from_the_store_is_escaped() {
        let evil = "<script>alert(1)</script>";
        let mut data = run_two_clients();
        let rename = |s: &mut String| {
            if s == "pg17" {
                *s = evil.to_string();
            }
        };
        data.targets.iter_mut().for_each(|t| rename(&mut t.name));
        data.measurements
            .iter_mut()
            .for_each(|m| rename(&mut m.target));
        data.loads.iter_mut().for_each(|l| rename(&mut l.target));
        data.targets[0].error = Some("bad \"quote\" & <b>tag</b>".into());
        data.targets[0].failed = true;
        let html = page(&data);
        assert!(!html.contains("<script"), "unescaped target name");
        assert!(!html.contains("<b>"), "unescaped error text");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("&lt;b&gt;tag&lt;/b&gt;"));
    }

    /// A browser broke `--instructions` after its first hyphen at a line end.
    #[test]
    fn flags_in_sentences_are_kept_on_one_line() {
        let p = prose("longer steps (--time, or read_secs); --instructions: a <verdict>");
        assert_eq!(
            p,
            "longer steps <span class=\"flag\">(--time,</span> or read_secs); \
             <span class=\"flag\">--instructions:</span> a &lt;verdict&gt;"
        );
        assert!(STYLE.contains(".flag { white-space: nowrap; }"));
        // The answer's "what would decide the rest" says `--repeats 3`.
        let html = page(&run_two_clients());
        assert!(
            html.contains("What would decide the rest: <span class=\"flag\">--repeats</span> 3"),
            "{html}"
        );
    }

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"y\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;y&quot;"
        );
        assert_eq!(escape("read-only_range=10"), "read-only_range=10");
    }

    #[test]
    fn ids_are_unique_slugs() {
        let mut ids = Ids::default();
        assert_eq!(ids.of("Results, clients = 1"), "results-clients-1");
        assert_eq!(ids.of("Results, clients = 1"), "results-clients-1-2");
        assert_eq!(ids.of("µ"), "s");
    }
}
