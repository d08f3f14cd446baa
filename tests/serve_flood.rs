//! `dbdelta serve` keeps serving what a careless or hostile local user sends it: a flood of
//! idle connections past its descriptor limit, a request line or head too large to hold, a
//! head that never ends; its HTML pages run no script; and a store from a newer dbdelta is
//! refused with the fix. Each serves a copy of the fuzz seed store (two real SQLite runs),
//! brought to this build's schema by `dbdelta list runs`, and stops the server by its PID.

mod common;
use common::serve::*;
use common::*;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// A scratch directory holding the seed store as `dbdelta.db`, at this build's schema.
fn seeded() -> tempfile::TempDir {
    let dir = scratch();
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/store.db");
    std::fs::copy(seed, dir.path().join("dbdelta.db")).unwrap();
    let out = run(dir.path(), &["list", "runs"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    dir
}

/// `dbdelta serve` over a [`seeded`] store, killed (by its PID) if the test fails before
/// [`Serving::stop`].
struct Serving {
    server: Option<std::process::Child>,
    port: u16,
    _dir: tempfile::TempDir,
}

fn serving() -> Serving {
    let dir = seeded();
    let (server, base) = start_serve(dir.path(), &[]);
    Serving {
        server: Some(server),
        port: base.rsplit(':').next().unwrap().parse().unwrap(),
        _dir: dir,
    }
}

impl Serving {
    fn pid(&self) -> u32 {
        self.server.as_ref().unwrap().id()
    }

    /// SIGINT; it must exit 0.
    fn stop(mut self) {
        stop_serve(self.server.take().unwrap());
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            // Child::kill sends SIGKILL to this PID only.
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

/// The process's resident memory in KiB (`VmRSS` of /proc/PID/status).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Lower the open-file limit of process `pid` (a child of this test) to `n`.
fn limit_files(pid: u32, n: u64) {
    let limit = libc::rlimit {
        rlim_cur: n,
        rlim_max: n,
    };
    // SAFETY: prlimit reads `limit` (a valid rlimit) and writes nothing (null old limit).
    let rc = unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_NOFILE,
            &limit,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
}

/// A GET of `/` with a generous timeout: its status line, or why there is none.
fn get_home(port: u16) -> String {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = match TcpStream::connect_timeout(&addr, Duration::from_secs(30)) {
        Ok(s) => s,
        Err(e) => return format!("no connection: {e}"),
    };
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let request = format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if let Err(e) = s.write_all(request.as_bytes()) {
        return format!("cannot send: {e}");
    }
    let mut out = Vec::new();
    match s.read_to_end(&mut out) {
        Ok(_) => text(&out).lines().next().unwrap_or("").to_string(),
        Err(e) => format!("no answer: {e} (after {:?})", text(&out)),
    }
}

/// 300 idle connections (a third of them halfway through a request head) to a server whose
/// open-file limit was lowered to 64 after it started: its accepts fail with EMFILE, which
/// must not end the listener. A GET of `/` is answered 200 while they are held and after
/// they close. On tiny_http the accept thread ended at the first EMFILE, and the port with it.
#[test]
fn serve_answers_through_a_flood_of_idle_connections_past_its_file_limit() {
    let mut serving = serving();
    let port = serving.port;
    assert_eq!(get_home(port), "HTTP/1.1 200 OK");
    limit_files(serving.pid(), 64);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let flood: Vec<TcpStream> = (0..300)
        .filter_map(|i| {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
            if i % 3 == 0 {
                let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
            }
            Some(s)
        })
        .collect();
    assert!(flood.len() > 100, "only {} connections", flood.len());
    assert_eq!(get_home(port), "HTTP/1.1 200 OK", "during the flood");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(get_home(port), "HTTP/1.1 200 OK", "still during the flood");
    drop(flood);
    assert_eq!(get_home(port), "HTTP/1.1 200 OK", "after the flood");
    let server = serving.server.as_mut().unwrap();
    assert!(server.try_wait().unwrap().is_none(), "serve still runs");
    serving.stop();
}

/// Send `head` and then `more` bytes of `fill` (no line end) on one thread while another reads
/// the answer: the answer, and how many bytes were sent before the server closed.
fn oversized(port: u16, head: &str, fill: u8, more: usize) -> (String, usize) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut writer = s.try_clone().unwrap();
    let head = head.to_string();
    let sender = std::thread::spawn(move || {
        let chunk = vec![fill; 1 << 16];
        let mut sent = 0;
        if writer.write_all(head.as_bytes()).is_err() {
            return sent;
        }
        while sent < more {
            match writer.write(&chunk[..chunk.len().min(more - sent)]) {
                Ok(n) => sent += n,
                Err(_) => return sent,
            }
        }
        let _ = writer.shutdown(std::net::Shutdown::Write);
        sent
    });
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    drop(s);
    (text(&answer), sender.join().unwrap())
}

/// A 200 MiB request line gets 414 and a 200 MiB header 431, each after the server read a
/// small part of it (the sender is cut off long before the end), and the server's resident
/// memory does not grow by anything like it. On tiny_http the line was read whole into memory
/// and never answered.
#[test]
fn an_oversized_request_line_or_head_is_refused_unread() {
    let serving = serving();
    let (port, pid) = (serving.port, serving.pid());
    let idle = rss_kib(pid);
    const HUGE: usize = 200 << 20;
    let (answer, sent) = oversized(port, "GET /", b'a', HUGE);
    assert!(
        answer.starts_with("HTTP/1.1 414 URI Too Long\r\n"),
        "{answer:.300}"
    );
    assert!(
        answer.contains("the request line is longer than"),
        "{answer:.300}"
    );
    assert!(sent < HUGE / 4, "the server read {sent} bytes of the line");
    let head = format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Pad: ");
    let (answer, sent) = oversized(port, &head, b'b', HUGE);
    assert!(
        answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
        "{answer:.300}"
    );
    assert!(sent < HUGE / 4, "the server read {sent} bytes of the head");
    let many: String = (0..200).map(|i| format!("X-{i}: 1\r\n")).collect();
    let (answer, _) = oversized(port, &format!("{head}1\r\n{many}\r\n"), b'c', 0);
    assert!(answer.starts_with("HTTP/1.1 431 "), "{answer:.300}");
    let grown = rss_kib(pid).saturating_sub(idle);
    assert!(grown < 50 << 10, "resident memory grew {grown} KiB");
    assert_eq!(get_home(port), "HTTP/1.1 200 OK");
    serving.stop();
}

/// A request head that stops halfway is answered 408 and closed after the header timeout
/// (10 s; checked against 45 s), not held open for as long as the client likes (as on
/// tiny_http).
#[test]
fn a_request_head_that_stops_halfway_times_out() {
    let serving = serving();
    let port = serving.port;
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(45))).unwrap();
    s.write_all(format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n").as_bytes())
        .unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    let read = s.read_to_end(&mut answer);
    let answer = text(&answer);
    assert!(
        read.is_ok() && answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{read:?} after {:?}: {answer}",
        started.elapsed()
    );
    assert_eq!(get_home(port), "HTTP/1.1 200 OK");
    serving.stop();
}

/// The HTML pages' `Content-Security-Policy` lets no script run (it names no `script-src`:
/// `default-src 'none'` governs); only a flame graph SVG gets one (tests/browser.rs).
#[test]
fn html_pages_allow_no_script() {
    let serving = serving();
    let port = serving.port;
    for path in ["/", "/run/latest", "/history", "/no/such/page"] {
        let answer = get(port, path);
        let policy = (answer.lines())
            .find_map(|l| l.strip_prefix("Content-Security-Policy: "))
            .unwrap_or_else(|| panic!("{path}: no policy in {answer:.500}"));
        assert!(
            policy.starts_with("default-src 'none';"),
            "{path}: {policy}"
        );
        assert!(!policy.contains("script-src"), "{path}: {policy}");
    }
    serving.stop();
}

/// `serve` on a store written by a newer dbdelta (a later schema version) says to use a newer
/// dbdelta, in one line, exit 2 (it said to migrate it with `list runs`), as `list runs` and
/// `report` do (they exited 1).
#[test]
fn serve_on_a_newer_store_says_to_use_a_newer_dbdelta() {
    let dir = seeded();
    let store = dir.path().join("dbdelta.db");
    {
        let db = rusqlite::Connection::open(&store).unwrap();
        let v: i64 = db
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        db.pragma_update(None, "user_version", v + 1).unwrap();
    }
    let out = run(dir.path(), &["serve", "--port", "0"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("newer than this dbdelta's"), "{err}");
    assert!(err.contains("use a newer dbdelta"), "{err}");
    assert!(!err.contains("list runs"), "{err}");
    // Every other reader says it with the same code.
    for argv in [&["list", "runs"][..], &["report"]] {
        let out = run(dir.path(), argv);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {err}");
        assert!(err.contains("use a newer dbdelta"), "{argv:?}: {err}");
    }
}
