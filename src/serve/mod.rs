//! `dbdelta serve`: a local web page over a results store (the runs, each run's report and
//! flame graphs, the history of a lab's series with their change points).
//!
//! Owns the listening address (loopback only: any other address is refused before binding),
//! the request loop (one request at a time on this thread, so the store needs no lock; it
//! ends within [`crate::signals::POLL`] of Ctrl-C or another terminating signal), what a
//! request may be (GET and HEAD only, others 405; a `Host` that is not this loopback address
//! 421, against DNS rebinding), the routes and each answer's security headers (no script on
//! an HTML page; only a flame graph SVG runs its own). [`listener`] accepts, bounds and writes.
//! Must not: write to the store (it is opened with [`Store::open_reader`]), fetch or link
//! anything outside this server (every page is self-contained; the `Content-Security-Policy`
//! forbids other origins), or render a report itself (`report` does; [`pages`] draws only the
//! server's own pages).

mod chart;
mod listener;
mod pages;
mod url;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;

use anyhow::{Context, Result};
use listener::{Limits, Request, Response, Server};
use percent_encoding::percent_decode_str;

use crate::console::{errln, outln};
use crate::error::InputError;
use crate::history;
use crate::report;
use crate::store::Store;

/// The port when `--port` is not given.
pub const DEFAULT_PORT: u16 = 7480;

/// The `Content-Security-Policy` of every answer but a flame graph: nothing from other
/// origins, inline CSS, no script at all (the pages have none).
const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// A flame graph SVG's: inferno's inline script (search, zoom) and event attributes run,
/// still nothing from other origins.
const FLAME_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// What `dbdelta serve` was asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--addr`: an IP address (or `localhost`), loopback only.
    pub addr: String,
    /// `--port`; 0 picks a free one.
    pub port: u16,
}

/// The address to listen on: `--addr` parsed, refused unless it is a loopback address.
pub fn listen_addr(addr: &str, port: u16) -> Result<SocketAddr, InputError> {
    let ip: IpAddr = match addr {
        "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        a => a.trim_start_matches('[').trim_end_matches(']').parse().map_err(|_| {
            InputError::new(format!(
                "--addr {addr}: not an IP address; give a loopback address such as 127.0.0.1 or ::1"
            ))
        })?,
    };
    if !ip.is_loopback() {
        return Err(InputError::new(format!(
            "--addr {addr}: dbdelta serve listens on loopback only (127.0.0.0/8 or ::1); to see it from another machine, forward a port over SSH (ssh -L 7480:127.0.0.1:7480 HOST)"
        )));
    }
    Ok(SocketAddr::new(ip, port))
}

/// Serve `store` until a terminating signal arrives. Prints the URL when listening.
pub fn serve(store_path: &Path, opts: &Options) -> Result<()> {
    let addr = listen_addr(&opts.addr, opts.port)?;
    let store = Store::open_reader(store_path)?;
    let server = Server::bind(addr, Limits::for_this_process()).with_context(|| {
        format!(
            "--addr {} --port {}: cannot listen there; pick another --port (0: any free one)",
            opts.addr, opts.port
        )
    })?;
    let bound = server.addr();
    let flag = crate::signals::install_saying("stopping the server", |_| std::process::exit(0))
        .context("installing the handlers of SIGINT, SIGTERM, SIGHUP and SIGQUIT")?;
    outln!(
        "dbdelta serve: {} on http://{bound}/ (Ctrl-C stops it)",
        store.path().display()
    );
    let _ = std::io::Write::flush(&mut std::io::stdout());
    while !flag.load(std::sync::atomic::Ordering::Relaxed) {
        let Some(exchange) = server.next(crate::signals::POLL)? else {
            continue;
        };
        // Written by the connection's thread: a client that does not read its response holds
        // that thread, not this loop.
        let response = answer(&store, bound, &exchange.request);
        exchange.respond(response);
    }
    errln!("dbdelta serve: stopped");
    Ok(())
}

/// A response: status, content type, body.
struct Reply {
    status: u16,
    kind: &'static str,
    body: Vec<u8>,
}

const HTML: &str = "text/html; charset=utf-8";
/// A flame graph's type: the only answer whose script runs ([`FLAME_POLICY`]).
const SVG: &str = "image/svg+xml";

impl Reply {
    fn html(status: u16, body: String) -> Reply {
        Reply {
            status,
            kind: HTML,
            body: body.into_bytes(),
        }
    }

    fn problem(status: u16, what: &str) -> Reply {
        Reply::html(status, pages::problem(status, what))
    }
}

fn answer(store: &Store, bound: SocketAddr, request: &Request) -> Response {
    let reply = check(bound, request).unwrap_or_else(|| route(store, &request.target));
    let policy = match reply.kind {
        SVG => FLAME_POLICY,
        _ => POLICY,
    };
    let mut headers = vec![
        ("Content-Type", reply.kind.to_string()),
        ("Content-Security-Policy", policy.to_string()),
        ("X-Content-Type-Options", "nosniff".to_string()),
        ("Referrer-Policy", "no-referrer".to_string()),
        ("Cache-Control", "no-store".to_string()),
    ];
    if reply.status == 405 {
        headers.push(("Allow", "GET, HEAD".to_string()));
    }
    Response {
        status: reply.status,
        headers,
        body: reply.body,
    }
}

/// A reply when the request must be refused: a method other than GET/HEAD, or a `Host` that
/// names another server (a page of another site reaching this one by DNS rebinding).
fn check(bound: SocketAddr, request: &Request) -> Option<Reply> {
    if !matches!(request.method.as_str(), "GET" | "HEAD") {
        return Some(Reply::problem(
            405,
            &format!(
                "{}: this server is read-only; only GET and HEAD",
                request.method
            ),
        ));
    }
    let host = request.header("Host").map(str::to_ascii_lowercase);
    match host {
        Some(h) if host_is_ours(&h, bound) => None,
        _ => Some(Reply::problem(
            421,
            &format!("this server answers only http://{bound}/ (or localhost on its port)"),
        )),
    }
}

/// Whether a `Host` header names this server: its address, `localhost` or a loopback address
/// on its port.
fn host_is_ours(host: &str, bound: SocketAddr) -> bool {
    let Some((name, port)) = host.rsplit_once(':') else {
        return false;
    };
    if port.parse() != Ok(bound.port()) {
        return false;
    }
    let name = name.trim_start_matches('[').trim_end_matches(']');
    name == "localhost" || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The path's segments, percent-decoded, and the query's pairs (`+` is a space).
fn split_url(url: &str) -> (Vec<String>, BTreeMap<String, String>) {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let decode = |s: &str| {
        percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    let segments = (path.split('/'))
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let pairs = (query.split('&'))
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect();
    (segments, pairs)
}

fn route(store: &Store, url: &str) -> Reply {
    let (segments, query) = split_url(url);
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    let result = match parts.as_slice() {
        [] => store
            .list_runs()
            .map(|runs| Reply::html(200, pages::runs(&runs, store.path()))),
        ["run", id] => run_page(store, id),
        ["run", id, "flames"] => flames_page(store, id),
        ["run", id, "flame", step, file] => flame_svg(store, id, step, file),
        ["history"] => history_page(store, &query),
        ["history", "overview"] => overview_page(store, &query),
        _ => Ok(Reply::problem(404, &format!("{}: no such page", url))),
    };
    result.unwrap_or_else(|e| {
        if let Some(input) = e.downcast_ref::<InputError>() {
            Reply::problem(404, &input.to_string())
        } else {
            Reply::problem(500, &format!("{e:#}"))
        }
    })
}

/// A stored run's report model (its default base and options, as `dbdelta report` has them).
fn model(store: &Store, id: &str) -> Result<report::ReportModel> {
    let run = store.resolve_run(Some(id))?;
    let data = store.load_run(&run)?;
    report::build(&data, None).map_err(|e| InputError::new(e.to_string()).into())
}

/// The run's HTML report with a bar of links above it.
fn run_page(store: &Store, id: &str) -> Result<Reply> {
    let model = model(store, id)?;
    let html = report::render(&model, report::Format::Html, false);
    let bar = pages::report_bar(&model, !flame_files(&model)?.is_empty());
    let page = match html.find("<body>") {
        Some(i) => format!("{}{bar}{}", &html[..i + 6], &html[i + 6..]),
        None => format!("{bar}{html}"),
    };
    Ok(Reply::html(200, page))
}

/// The flame graph SVGs the run's stored profiles and counted call trees give, per step
/// (steps without one left out), each with its title and what it shows: of a counted step, the
/// graph that shows the larger change first.
fn flame_files(model: &report::ReportModel) -> Result<Vec<(String, Vec<report::FlameListing>)>> {
    let mut out: Vec<(String, Vec<report::FlameListing>)> = Vec::new();
    let mut add =
        |step: &str, svgs: Vec<report::FlameListing>| match out.iter_mut().find(|(s, _)| s == step)
        {
            Some((_, files)) => files.extend(svgs),
            None => out.push((step.to_string(), svgs)),
        };
    if let Some(p) = model.profiles.as_ref().filter(|p| p.unavailable.is_none()) {
        let mut steps: Vec<&str> = p.steps.iter().map(|s| s.step.as_str()).collect();
        steps.dedup();
        for step in steps {
            add(step, report::profile::svg_listing(model, step));
        }
    }
    let mut counted: Vec<&str> = Vec::new();
    for s in model.functions.iter().flat_map(|f| f.steps.iter()) {
        if !counted.contains(&s.step.as_str()) {
            counted.push(&s.step);
        }
    }
    for step in counted {
        add(step, report::instruction_flame_listing(model, step, None));
    }
    out.retain(|(_, files)| !files.is_empty());
    Ok(out)
}

/// The run's flame graphs, listed per step, or why there are none.
fn flames_page(store: &Store, id: &str) -> Result<Reply> {
    let model = model(store, id)?;
    let files = flame_files(&model)?;
    Ok(Reply::html(200, pages::flames(&model, &files)))
}

/// One flame graph SVG, drawn from the folded stacks or the call trees the store holds.
fn flame_svg(store: &Store, id: &str, step: &str, file: &str) -> Result<Reply> {
    let model = model(store, id)?;
    let mut files = report::instruction_flame_files(&model, step, None).map_err(InputError::new)?;
    if model.profiles.is_some() {
        files.extend(report::profile::files(&model, step, None).unwrap_or_default());
    }
    match files
        .into_iter()
        .find(|(n, _)| n == file && n.ends_with(".svg"))
    {
        Some((_, body)) => Ok(Reply {
            status: 200,
            kind: SVG,
            body,
        }),
        None => Ok(Reply::problem(
            404,
            &format!("{file}: no such flame graph of {step} in run {id}"),
        )),
    }
}

/// The history page: charts of the series the query names (`lab`, `target`, `step`, `metric`;
/// empty or missing: all, and QPS).
fn history_page(store: &Store, query: &BTreeMap<String, String>) -> Result<Reply> {
    let get = |k: &str| {
        query
            .get(k)
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let ask = pages::HistoryAsk {
        lab: get("lab"),
        target: get("target"),
        step: get("step"),
        metric: get("metric"),
        relative: get("relative"),
    };
    let some = |v: &str| (!v.is_empty()).then(|| v.to_string());
    let mut q = history::Query::all();
    q.lab = some(&ask.lab);
    q.target = some(&ask.target);
    q.step = some(&ask.step);
    q.relative = some(&ask.relative);
    match metric_of(&ask.metric) {
        Ok(m) => q.metric = m,
        Err(bad) => return Ok(bad),
    }
    let h = history::history(store, &q)?;
    Ok(Reply::html(200, pages::history(&h, &ask)))
}

/// The `metric` of a history query (empty: QPS), or the 400 page naming it.
fn metric_of(m: &str) -> std::result::Result<history::HistMetric, Reply> {
    let m = m.trim();
    if m.is_empty() {
        return Ok(history::HistMetric::Qps);
    }
    history::HistMetric::parse(m).ok_or_else(|| {
        Reply::problem(
            400,
            &format!(
                "metric={m}: not a metric of the history; give qps, tps, cpu, instructions or a metric id"
            ),
        )
    })
}

/// A lab's one-page overview (`lab`, required; `metric` as on the history page): its report
/// groups over the runs, relative to each step's first run.
fn overview_page(store: &Store, query: &BTreeMap<String, String>) -> Result<Reply> {
    let lab = query.get("lab").map(|l| l.trim()).unwrap_or_default();
    if lab.is_empty() {
        return Ok(Reply::problem(
            400,
            "the overview is of one lab: give ?lab=NAME (the lab names are on the runs page)",
        ));
    }
    let mut q = history::Query::all();
    q.lab = Some(lab.to_string());
    q.relative = Some(history::FIRST.into());
    match metric_of(query.get("metric").map_or("", String::as_str)) {
        Ok(m) => q.metric = m,
        Err(bad) => return Ok(bad),
    }
    let h = history::history(store, &q)?;
    Ok(Reply::html(200, pages::overview(&h, lab)))
}

#[cfg(test)]
mod tests;
