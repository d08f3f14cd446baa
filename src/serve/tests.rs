//! The address and `Host` checks, URL decoding and routes of `dbdelta serve`, over an empty
//! store opened read-only (the browser test in `tests/browser.rs` serves real runs).

use super::*;

#[test]
fn only_loopback_addresses_are_served() {
    for ok in ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"] {
        let a = listen_addr(ok, 0).unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert!(a.ip().is_loopback(), "{ok}");
    }
    for bad in ["0.0.0.0", "192.168.1.10", "::", "8.8.8.8"] {
        let e = listen_addr(bad, 7480).unwrap_err().to_string();
        assert!(e.starts_with(&format!("--addr {bad}: ")), "{e}");
        assert!(e.contains("loopback only"), "{e}");
    }
    let e = listen_addr("example.com", 7480).unwrap_err().to_string();
    assert!(e.contains("not an IP address"), "{e}");
}

#[test]
fn a_host_header_must_name_this_server() {
    let bound: SocketAddr = "127.0.0.1:7480".parse().unwrap();
    for ok in [
        "127.0.0.1:7480",
        "localhost:7480",
        "[::1]:7480",
        "127.0.0.5:7480",
    ] {
        assert!(host_is_ours(ok, bound), "{ok}");
    }
    for bad in [
        "127.0.0.1:80",
        "127.0.0.1",
        "evil.example:7480",
        "localhost.evil.example:7480",
        "10.0.0.1:7480",
    ] {
        assert!(!host_is_ours(bad, bound), "{bad}");
    }
}

#[test]
fn urls_are_split_and_percent_decoded() {
    let (path, query) = split_url("/run/a%20b/flame?lab=sqlite%3A+WAL%26x&step=&metric=qps");
    assert_eq!(path, ["run", "a b", "flame"]);
    assert_eq!(query["lab"], "sqlite: WAL&x");
    assert_eq!(query["step"], "");
    assert_eq!(query["metric"], "qps");
    let (path, query) = split_url("/");
    assert!(path.is_empty() && query.is_empty());
}

/// An empty store, created by a writable open, then opened the way `serve` opens it.
fn empty_store(dir: &Path) -> Store {
    let path = dir.join("s.db");
    drop(Store::open(&path).unwrap());
    Store::open_reader(&path).unwrap()
}

#[test]
fn routes_answer_with_pages_or_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = empty_store(dir.path());
    let home = route(&store, "/");
    assert_eq!(home.status, 200);
    let text = String::from_utf8(home.body).unwrap();
    assert!(text.contains("Runs stored: 0."), "{text}");
    let missing = route(&store, "/run/nope");
    assert_eq!(missing.status, 404);
    let text = String::from_utf8(missing.body).unwrap();
    assert!(text.contains("no run nope"), "{text}");
    assert_eq!(route(&store, "/no/such/page").status, 404);
    let bad = route(&store, "/history?metric=bogus");
    assert_eq!(bad.status, 400);
    assert!(
        String::from_utf8(bad.body)
            .unwrap()
            .contains("metric=bogus: not a metric")
    );
    let none = route(&store, "/history?lab=nope");
    assert_eq!(none.status, 200);
    assert!(
        String::from_utf8(none.body)
            .unwrap()
            .contains("No stored run matches")
    );
}

/// A history of two targets × two steps of one group over three runs, relative to the first.
fn two_targets() -> crate::history::History {
    use crate::history::{History, Point, Series};
    let point = |i: usize, value: f64, interval: Option<(f64, f64)>| Point {
        run_id: format!("run-{i}"),
        run_name: Some(format!("nightly-{i}")),
        started: format!("2026-11-2{i}T12:00:00Z"),
        value,
        interval,
        clipped: interval.is_some_and(|(lo, _)| lo == 0.0),
        repeats: 3,
    };
    let series = |target: &str, step: &str, values: [f64; 3]| Series {
        lab: "nightly".into(),
        target: target.into(),
        step: step.into(),
        group: "point".into(),
        clients: 1,
        points: (values.iter().enumerate())
            .map(|(i, v)| point(i + 1, *v, Some(((v - 0.5).max(0.0), v + 0.5))))
            .collect(),
        changes: Vec::new(),
        too_few: Some("3 value(s): change points need at least 4 (two on each side)".into()),
    };
    History {
        metric: "qps".into(),
        higher_is_better: true,
        max_p: 0.001,
        min_magnitude: 0.02,
        relative_to: Some(crate::history::FIRST.into()),
        series: vec![
            series("a", "point-query", [1.0, 1.1, 1.2]),
            series("a", "random-points", [1.0, 0.9, 1.0]),
            series("b", "point-query", [1.0, 2.0, 4.0]),
            series("b", "random-points", [1.0, 1.0, 1.0]),
        ],
        partial: Vec::new(),
    }
}

/// The lab's overview is one chart per group with a line per target (the geometric
/// mean of its steps relative to their first run), not a chart per step.
#[test]
fn the_overview_draws_a_chart_per_group_with_a_line_per_target() {
    let page = pages::overview(&two_targets(), "nightly");
    assert_eq!(page.matches("<svg").count(), 1, "one group, one chart");
    assert!(page.contains("point · 1 client"), "{page}");
    // b's point-query doubles then doubles again, its random-points stays: √2 and 2.
    assert!(page.contains("b · nightly-2: 1.41") && page.contains("b · nightly-3: 2.00"));
    insta::assert_snapshot!(page);
}

/// The targets of one step share one chart; their change points follow it.
#[test]
fn the_targets_of_a_step_are_overlaid_in_one_chart() {
    let ask = pages::HistoryAsk {
        lab: "nightly".into(),
        ..Default::default()
    };
    let mut h = two_targets();
    (
        h.series[1].points[1].interval,
        h.series[1].points[1].clipped,
    ) = (Some((0.0, 1.4)), true);
    let page = pages::history(&h, &ask);
    assert_eq!(
        page.matches("<svg").count(),
        2,
        "two steps, two charts: {page}"
    );
    assert!(page.contains("qps / first run"), "{page}");
    assert!(page.contains("value in run <b>first</b>"), "{page}");
    assert!(page.contains("interval cut at 0"), "{page}");
    assert!(
        page.contains("href=\"/history/overview?lab=nightly\""),
        "{page}"
    );
}
