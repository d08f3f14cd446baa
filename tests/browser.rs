//! The HTML report in a real browser: a short SQLite run is reported with `--format html`,
//! Debian's headless Chromium loads the file, and the test checks that the page logged nothing
//! to the console, that the tables Chromium parsed hold the JSON report's numbers as the
//! layout rounds them, and that every chart became an SVG element. It saves a screenshot as a
//! CI artifact: `<target dir>/browser/report.png`.
//!
//! `dbdelta serve` is checked here too: its runs page, a run's report and a history chart with
//! a known change point as Chromium renders them (no console message: the pages' policy
//! forbids every script, and they have none), a flame graph SVG whose own policy lets its
//! script run, and what it refuses (POST, a foreign `Host`, a non-loopback `--addr`).
//!
//! It also checks `--png DIR` (one PNG per chart, each named on stderr), which needs no
//! browser. Without `/usr/bin/chromium` the browser part is skipped with a message, except
//! under CI (`CI` set), where that is a failure (`.ci/run` installs the `chromium` package).

mod common;
use common::chromium::*;
use common::serve::*;
use common::*;

use serde_json::Value;

/// Text of an HTML fragment: tags dropped (`<br>` becomes a newline), entities decoded.
fn inner_text(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        let end = rest[i..].find('>').map(|e| i + e + 1).unwrap_or(rest.len());
        if rest[i..end].starts_with("<br") {
            out.push('\n');
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
}

/// The cells (header row first) of the first table after the `<h3>` whose text starts with
/// `heading`.
fn table_after(dom: &str, heading: &str) -> Vec<Vec<String>> {
    let mut at = 0;
    let start = loop {
        let i = dom[at..]
            .find("<h3")
            .map(|i| at + i)
            .unwrap_or_else(|| panic!("no <h3> starting with {heading:?} in the DOM"));
        let close = i + dom[i..].find("</h3>").unwrap();
        let text = inner_text(&dom[i..close]);
        if text.starts_with(heading) {
            break close;
        }
        at = close;
    };
    let t0 = start + dom[start..].find("<table").unwrap();
    let t1 = t0 + dom[t0..].find("</table>").unwrap();
    dom[t0..t1]
        .split("<tr")
        .skip(1)
        .map(|row| {
            let mut cells = Vec::new();
            let mut rest = row;
            while let Some(i) = rest.find("<t") {
                let tag = &rest[i..];
                if !(tag.starts_with("<td") || tag.starts_with("<th")) {
                    rest = &rest[i + 2..];
                    continue;
                }
                let open_end = i + tag.find('>').unwrap() + 1;
                let close = open_end + rest[open_end..].find("</t").unwrap();
                cells.push(inner_text(&rest[open_end..close]));
                rest = &rest[close + 4..];
            }
            cells
        })
        .collect()
}

/// The cell of `table` in the row whose first cell is `step` (a `[cb]` mark allowed) and the
/// column whose header's first line is `column`.
fn cell<'a>(table: &'a [Vec<String>], step: &str, column: &str) -> &'a str {
    let col = table[0]
        .iter()
        .position(|h| h.lines().next() == Some(column))
        .unwrap_or_else(|| panic!("no column {column:?} in {:?}", table[0]));
    let row = table
        .iter()
        .find(|r| r[0] == step || r[0] == format!("{step} [cb]"))
        .unwrap_or_else(|| panic!("no row {step:?} in {table:?}"));
    &row[col]
}

/// A relative value as the report prints it: two decimals, and a mark only where a verdict
/// called a change (one repeat: never).
fn relative_text(v: f64, verdict: Option<&str>) -> String {
    let sign = match verdict {
        Some("improvement" | "regression") if v >= 1.0 => "+",
        Some("improvement" | "regression") => "-",
        _ => "",
    };
    format!("{v:.2}{sign}")
}

/// A rate as the report prints it: integers with thousands separators from 100 up.
fn rate_text(v: f64) -> String {
    if v.abs() >= 100.0 {
        let digits = (v.round() as i64).to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

const LAB: &str = r#"[lab]
name = "browser test: synchronous FULL vs NORMAL"

[[target]]
name = "full"
engine = "sqlite"
settings = ["synchronous = FULL"]

[[target]]
name = "normal"
engine = "sqlite"
settings = ["synchronous = NORMAL"]

[suite.sysbench]
rows = 2000
read_secs = 1.2
write_secs = 5.2
warmup_secs = 0.1
"#;

#[test]
fn html_report_renders_in_chromium_with_the_json_numbers() {
    let dir = scratch();
    let lab = dir.path().join("lab.toml");
    std::fs::write(&lab, LAB).unwrap();
    {
        let _lock = measuring();
        let mut args = vec!["-q", "run", lab.to_str().unwrap()];
        for step in [
            "point-query",
            "random-points_range=10",
            "scan",
            "read-only-count",
            "update-one",
        ] {
            args.extend(["--only", step]);
        }
        let out = run(dir.path(), &args);
        assert!(out.status.success(), "run failed: {}", text(&out.stderr));
    }
    let page = dir.path().join("report.html");
    let charts = dir.path().join("charts");
    let out = run(
        dir.path(),
        &[
            "report",
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
            "--png",
            charts.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "report failed: {}", text(&out.stderr));
    let out_json = run(dir.path(), &["report", "--format", "json"]);
    assert!(
        out_json.status.success(),
        "json: {}",
        text(&out_json.stderr)
    );
    let json: Value = serde_json::from_slice(&out_json.stdout).unwrap();

    // --png: one file per chart, each a PNG, each named on stderr. Per-second charts only
    // for steps of at least 5 whole seconds: update-one's 5.2 s, not the 1.2 s reads.
    let seconds = |step: &str| {
        (json["series"].as_array().unwrap().iter())
            .filter(|s| s["step"] == step)
            .filter_map(|s| s["seconds"].as_u64())
            .max()
    };
    assert_eq!(
        seconds("point-query"),
        Some(1),
        "1.2 s steps record a second"
    );
    assert_eq!(seconds("update-one"), Some(5));
    let series_steps = ["update-one"];
    let mut pngs: Vec<String> = std::fs::read_dir(&charts)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    pngs.sort();
    assert_eq!(pngs.len(), 4 + series_steps.len(), "{pngs:?}");
    assert!(pngs.contains(&"relative-qps-c1-point.png".to_string()));
    assert!(pngs.contains(&"throughput-c1-update-one.png".to_string()));
    for name in &pngs {
        let bytes = std::fs::read(charts.join(name)).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{name}");
        assert!(
            text(&out.stderr).contains(name.as_str()),
            "{name} not listed"
        );
    }

    if !chromium_available() {
        return;
    }
    let dom = chromium(&page, &["--dump-dom"]);
    let console = console_messages(&dom.stderr);
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    let dom = dom.stdout;
    assert!(dom.contains("<h1>dbdelta report: browser test"), "{dom}");

    // Relative QPS tables: one per group, each step's value under its target, and the
    // group's median row.
    let base = json["base"].as_str().unwrap();
    assert_eq!(base, "full");
    let titles: Vec<(String, String)> = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["group"].as_str().unwrap().to_string(),
                g["title"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        titles.len(),
        4,
        "point, range-noagg, range-agg, writes: {titles:?}"
    );
    let mut checked = 0;
    for r in json["relative"].as_array().unwrap() {
        let group = r["group"].as_str().unwrap();
        let title = &titles.iter().find(|t| t.0 == group).unwrap().1;
        let table = table_after(&dom, &format!("Relative QPS, {title} (vs {base}"));
        let step = r["step"].as_str().unwrap();
        let want = match r["qps"].as_f64() {
            Some(v) => relative_text(v, r["verdict"].as_str()),
            None => "n/a".into(),
        };
        assert_eq!(cell(&table, step, "normal"), want, "{step}");
        checked += 1;
    }
    assert_eq!(checked, 5, "every reported step");
    for g in json["groups"].as_array().unwrap() {
        let table = table_after(
            &dom,
            &format!("Relative QPS, {} (vs {base}", g["title"].as_str().unwrap()),
        );
        let median = g["median"].as_f64().unwrap();
        assert_eq!(
            cell(&table, "(median)", "normal"),
            relative_text(median, None)
        );
    }

    // Absolute QPS: the aggregates (one repeat: the measurement itself).
    let table = table_after(&dom, "Absolute QPS");
    for a in json["aggregates"].as_array().unwrap() {
        let qps = a["qps"].as_f64().unwrap();
        let (step, target) = (a["step"].as_str().unwrap(), a["target"].as_str().unwrap());
        assert_eq!(
            cell(&table, step, target),
            rate_text(qps),
            "{target} {step}"
        );
    }

    // Charts: a bar chart per group, a per-second chart per step with a series.
    assert_eq!(
        dom.matches("<svg").count(),
        titles.len() + series_steps.len(),
        "SVG charts in the DOM"
    );

    // The screenshot, kept as a CI artifact.
    let shots = target_dir().join("browser");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("report.png");
    let _ = std::fs::remove_file(&shot);
    let r = chromium(
        &page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,4000",
        ],
    );
    let console = console_messages(&r.stderr);
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    let png = std::fs::read(&shot).expect("chromium wrote the screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    eprintln!("screenshot: {}", shot.display());
}

/// The console check can fail: a page that logs an error and throws is caught.
#[test]
fn console_errors_are_detected() {
    if !chromium_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><script>console.error('boom'); missing();</script></body></html>",
    )
    .unwrap();
    let r = chromium(&page, &["--dump-dom"]);
    let console = console_messages(&r.stderr);
    assert_eq!(console.len(), 2, "{}", r.stderr);
    assert!(console[0].contains("boom"));
    assert!(console[1].contains("missing is not defined"));
}

/// A profiled run's HTML report: the differential flame graph (inferno's SVG, inlined without
/// its script) renders in Chromium without a console message. Skipped without a working perf
/// (except under CI).
#[test]
fn profiled_report_renders_its_flame_graph_in_chromium() {
    if !perf_records() {
        return;
    }
    let dir = scratch();
    let lab = dir.path().join("lab.toml");
    std::fs::write(&lab, LAB.replace("[lab]\n", "[lab]\nprofile = true\n")).unwrap();
    {
        let _lock = measuring();
        let out = run(
            dir.path(),
            &["-q", "run", lab.to_str().unwrap(), "--only", "point-query"],
        );
        assert!(out.status.success(), "run failed: {}", text(&out.stderr));
    }
    let page = dir.path().join("report.html");
    let out = run(
        dir.path(),
        &["report", "--format", "html", "-o", page.to_str().unwrap()],
    );
    assert!(out.status.success(), "report failed: {}", text(&out.stderr));
    if !chromium_available() {
        return;
    }
    let dom = chromium(&page, &["--dump-dom"]);
    let console = console_messages(&dom.stderr);
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    let at = dom
        .stdout
        .find("<figure class=\"flame\"><svg")
        .unwrap_or_else(|| {
            // Say why: the text report's CPU profile section (perf's error, no samples, …).
            let report = text(&run(dir.path(), &["report"]).stdout);
            let section = report
                .split_once("CPU profiles")
                .map_or("(no CPU profiles section)", |(_, rest)| rest);
            panic!(
                "the flame graph is an SVG element in the DOM; the report's profiles:{}",
                section.chars().take(3000).collect::<String>()
            )
        });
    let figure = &dom.stdout[at..at + dom.stdout[at..].find("</figure>").unwrap()];
    assert!(figure.contains("normal against full"), "its title");
    assert!(figure.matches("<rect").count() > 3, "frames drawn");

    // `dbdelta serve` links the run's flame graphs and serves each as an SVG of its own.
    let (server, base) = start_serve(dir.path(), &[]);
    let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
    let report = get(port, "/run/latest");
    assert!(report.contains("/flames\">Flame graphs</a>"), "{report}");
    let list = get(port, "/run/latest/flames");
    let links: Vec<&str> = (list.split("href=\"").skip(1))
        .map(|s| &s[..s.find('"').unwrap()])
        .filter(|h| h.ends_with(".svg"))
        .collect();
    assert_eq!(
        links.len(),
        3,
        "full, normal and the differential one: {list}"
    );
    let diff = links
        .iter()
        .find(|l| l.ends_with("-normal-vs-full.diff.svg"))
        .unwrap();
    let svg = get(port, diff);
    assert!(svg.starts_with("HTTP/1.1 200"), "{svg}");
    assert!(svg.contains("Content-Type: image/svg+xml"), "{svg}");
    assert!(svg.contains("normal against full") && svg.matches("<rect").count() > 3);
    // Its own policy lets inferno's inline script run (the HTML pages' forbids any script),
    // and Chromium runs it without a word on the console.
    assert!(
        svg.contains("Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline';"),
        "{svg:.600}"
    );
    let shown = chromium_url(&format!("{base}{diff}"), &["--dump-dom"]);
    let console = console_messages(&shown.stderr);
    assert!(console.is_empty(), "{diff}: {}", console.join("\n"));
    assert!(
        shown.stdout.contains("normal against full"),
        "{}",
        shown.stdout
    );
    stop_serve(server);
}

const SERVE_LAB: &str = r#"[lab]
name = "serve seed"
repeats = 2

[[target]]
name = "lite"
engine = "sqlite"

[suite.sysbench]
rows = 2000
read_secs = 0.3
write_secs = 0.3
warmup_secs = 0.1
"#;

/// The lab of the runs cloned from the seed, whose history the test reads.
const NIGHTLY: &str = "serve test: nightly";

/// Copy every row of run `from` (each table with a `run_id`, and its `runs` row) as run `to`
/// of the lab [`NIGHTLY`], named `name`, started at `started`, with its QPS times `factor`.
fn clone_run(
    db: &rusqlite::Connection,
    from: &str,
    to: &str,
    name: &str,
    started: &str,
    factor: f64,
) {
    let names = |sql: &str| -> Vec<String> {
        rows::<(String,)>(db, sql)
            .into_iter()
            .map(|r| r.0)
            .collect()
    };
    let tables = names("SELECT name FROM sqlite_master WHERE type = 'table'");
    for t in tables {
        let cols = names(&format!("SELECT name FROM pragma_table_info('{t}')"));
        let key = if t == "runs" { "id" } else { "run_id" };
        if !cols.iter().any(|c| c == key) {
            continue;
        }
        let picked: Vec<String> = (cols.iter())
            .map(|c| match c.as_str() {
                c if c == key => "?1".to_string(),
                "name" if t == "runs" => "?3".to_string(),
                "started" if t == "runs" => "?4".to_string(),
                "lab" if t == "runs" => "?5".to_string(),
                c => format!("\"{c}\""),
            })
            .collect();
        let quoted: Vec<String> = cols.iter().map(|c| format!("\"{c}\"")).collect();
        let sql = format!(
            "INSERT INTO {t} ({}) SELECT {} FROM {t} WHERE {key} = ?2",
            quoted.join(", "),
            picked.join(", ")
        );
        let params = rusqlite::params![to, from, name, started, NIGHTLY];
        let n = params.len().min(if t == "runs" { 5 } else { 2 });
        db.execute(&sql, &params[..n]).unwrap();
    }
    db.execute(
        "UPDATE measurements SET qps = qps * ?1 WHERE run_id = ?2",
        rusqlite::params![factor, to],
    )
    .unwrap();
}

/// The `href` of the first link whose text is `text`.
fn href_of(dom: &str, text: &str) -> String {
    let end = dom
        .find(&format!(">{text}</a>"))
        .unwrap_or_else(|| panic!("no link {text:?} in {dom}"));
    let start = dom[..end].rfind("href=\"").unwrap() + 6;
    dom[start..start + dom[start..].find('"').unwrap()].replace("&amp;", "&")
}

/// `dbdelta serve` over a store of 8 runs of one lab whose QPS halves at the 5th (cloned from
/// one real tiny SQLite run, so the change is known): the runs page lists them, a run's page
/// is its HTML report, the history page charts the series with one change point at the 5th
/// run linking to both runs' reports; POST is 405, a non-loopback `--addr` is refused, the
/// store file is not changed, and SIGINT stops the server. About 10 s (the seed run ~5 s).
#[test]
fn serve_shows_runs_reports_and_history_in_chromium() {
    let dir = scratch();
    let out = run(dir.path(), &["serve", "--addr", "0.0.0.0", "--port", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("--addr 0.0.0.0: dbdelta serve listens on loopback only"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");

    std::fs::write(dir.path().join("lab.toml"), SERVE_LAB).unwrap();
    {
        let _lock = measuring();
        let out = run(
            dir.path(),
            &[
                "-q",
                "run",
                "lab.toml",
                "--only",
                "point-query",
                "--name",
                "seed",
            ],
        );
        assert!(out.status.success(), "run failed: {}", text(&out.stderr));
    }
    let store = dir.path().join("dbdelta.db");
    let mut ids = Vec::new();
    {
        let db = rusqlite::Connection::open(&store).unwrap();
        let seed: String = db
            .query_row("SELECT id FROM runs WHERE name = 'seed'", [], |r| r.get(0))
            .unwrap();
        for i in 1..=8 {
            // Halved from the 5th run on; a little spread so the series is not flat.
            let factor = if i < 5 { 1.0 } else { 0.5 } * (1.0 + 0.003 * (i % 3) as f64);
            let id = format!("2026-01-0{i}-night");
            let started = format!("2026-01-0{i}T03:00:00.000000000+00:00");
            clone_run(&db, &seed, &id, &format!("night-{i}"), &started, factor);
            ids.push(id);
        }
    }
    let before = std::fs::read(&store).unwrap();

    let (server, base) = start_serve(dir.path(), &[]);
    let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();

    let host = format!("Host: 127.0.0.1:{port}\r\nConnection: close\r\n");
    let post = status_of(
        port,
        &format!("POST / HTTP/1.1\r\n{host}Content-Length: 0\r\n\r\n"),
    );
    assert!(post.starts_with("HTTP/1.1 405"), "{post}");
    let get = status_of(port, &format!("GET / HTTP/1.1\r\n{host}\r\n"));
    assert!(get.starts_with("HTTP/1.1 200"), "{get}");
    let rebound = status_of(
        port,
        "GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    );
    assert!(rebound.starts_with("HTTP/1.1 421"), "{rebound}");

    if chromium_available() {
        serve_pages_in_chromium(&base, &ids);
    }

    stop_serve(server);
    assert_eq!(
        std::fs::read(&store).unwrap(),
        before,
        "serve never writes the store"
    );
}

/// The pages of [`serve_shows_runs_reports_and_history_in_chromium`] as Chromium renders
/// them, with no console message on any.
fn serve_pages_in_chromium(base: &str, ids: &[String]) {
    let load = |path: &str| {
        let r = chromium_url(&format!("{base}{path}"), &["--dump-dom"]);
        let console = console_messages(&r.stderr);
        assert!(console.is_empty(), "{path}: {}", console.join("\n"));
        r.stdout
    };
    let home = load("/");
    for i in 1..=8 {
        assert!(
            home.contains(&format!("<td>night-{i}</td>")),
            "night-{i}: {home}"
        );
    }
    assert!(home.contains("<td>seed</td>"));
    assert_eq!(href_of(&home, &ids[4]), format!("/run/{}", ids[4]));
    let history = href_of(&home, NIGHTLY);
    assert_eq!(history, "/history?lab=serve%20test%3A%20nightly");

    let report = load(&href_of(&home, &ids[4]));
    assert!(
        report.contains("<h1>dbdelta report: serve test: nightly"),
        "{report}"
    );
    assert!(report.contains(">All runs</a>"));

    let page = load(&history);
    assert_eq!(
        page.matches("<svg").count(),
        1,
        "one series: lite × point-query"
    );
    assert_eq!(page.matches("<circle").count(), 8, "a point per run");
    assert_eq!(page.matches("class=\"change\"").count(), 1, "{page}");
    let mark = &page[page.find("class=\"change\"").unwrap()..];
    assert!(
        mark.contains(&format!("href=\"/run/{}\"", ids[4])),
        "{mark}"
    );
    assert!(mark.contains("between night-4 and night-5"), "{mark}");
    assert!(page.contains("<b>Change at night-5</b>"), "{page}");
    let listed = &page[page.find("<b>Change at night-5</b>").unwrap()..];
    assert_eq!(
        href_of(listed, "night-4"),
        format!("/run/{}", ids[3]),
        "the run before"
    );
    assert_eq!(href_of(listed, "night-5"), format!("/run/{}", ids[4]));

    let shots = target_dir().join("browser");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("serve-history.png");
    let _ = std::fs::remove_file(&shot);
    chromium_url(
        &format!("{base}{history}"),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,900",
        ],
    );
    assert!(std::fs::read(&shot).unwrap().starts_with(b"\x89PNG"));
    eprintln!("screenshot: {}", shot.display());
}
