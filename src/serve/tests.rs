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
