//! `dbdelta serve` from the tests: start it on a free port, raw HTTP requests to it, stop it
//! by its PID.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::dbdelta;

/// The whole response (status line, headers, body) to a raw HTTP request to the server.
pub fn http(port: u16, request: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// The status line of a raw HTTP request to the server.
pub fn status_of(port: u16, request: &str) -> String {
    http(port, request).lines().next().unwrap_or("").to_string()
}

/// A GET of `path` from the server on `port`, the whole response.
pub fn get(port: u16, path: &str) -> String {
    http(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"),
    )
}

/// `dbdelta serve --port 0` over `dir`'s store (`args`: more flags, e.g. `--store URL`): the
/// child and the URL it printed.
pub fn start_serve(dir: &Path, args: &[&str]) -> (std::process::Child, String) {
    let mut server = dbdelta(dir)
        .args(["serve", "--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    let base = first
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .trim_end_matches('/')
        .to_string();
    (server, base)
}

/// SIGINT to the server (by its PID); it must exit 0.
pub fn stop_serve(mut server: std::process::Child) {
    super::faults::signal(server.id(), libc::SIGINT);
    let started = Instant::now();
    let status = loop {
        if let Some(s) = server.try_wait().unwrap() {
            break s;
        }
        // Generous on a loaded host: the loop looks at the flag every 100 ms.
        if started.elapsed() > Duration::from_secs(30) {
            let _ = server.kill();
            panic!("dbdelta serve did not stop within 30 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
}
