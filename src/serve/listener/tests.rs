//! Request heads against the limits (whole, in pieces, too long, too many fields, not HTTP),
//! and a listener on a loopback port: at its cap, idle connections give way to a real request;
//! a silent one is closed, one that stops halfway gets 408.

use super::*;

const SMALL: Limits = Limits {
    connections: 4,
    head_time: Duration::from_secs(1),
    line_bytes: 64,
    head_bytes: 256,
    headers: 4,
    write_time: Duration::from_secs(5),
};

fn status(r: Result<Option<Request>, Refusal>) -> u16 {
    match r {
        Err(Refusal::Status(s, _)) => s,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_head_is_read_whole_in_any_pieces() {
    let text = b"\r\nGET /run/x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:80\r\nX-A: b\r\n\r\n";
    for piece in [1, 2, 3, 7, text.len()] {
        let mut head = Head::default();
        let mut got = None;
        for (i, chunk) in text.chunks(piece).enumerate() {
            assert!(got.is_none(), "done before the end ({piece}, {i})");
            got = head.add(chunk, &SMALL).unwrap();
        }
        let r = got.unwrap_or_else(|| panic!("not done ({piece})"));
        assert_eq!(
            (r.method.as_str(), r.target.as_str()),
            ("GET", "/run/x?y=1")
        );
        assert_eq!(r.header("host"), Some("127.0.0.1:80"));
        assert_eq!(r.header("x-a"), Some("b"));
    }
}

#[test]
fn a_head_beyond_its_limits_is_refused_before_it_ends() {
    let long_line = format!("GET /{} HTTP/1.1", "a".repeat(64));
    assert_eq!(
        status(Head::default().add(long_line.as_bytes(), &SMALL)),
        414
    );
    // Not a byte more than the limit is needed to tell.
    let mut head = Head::default();
    let at_limit = format!("GET /{}", "a".repeat(59));
    assert_eq!(head.add(at_limit.as_bytes(), &SMALL), Ok(None));
    assert_eq!(status(head.add(b"a", &SMALL)), 414);

    let big = format!("GET / HTTP/1.1\r\nX: {}\r\n", "b".repeat(300));
    assert_eq!(
        status(Head::default().add(&big.as_bytes()[..256], &SMALL)),
        431
    );
    let many = "GET / HTTP/1.1\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\nE: 1\r\n\r\n";
    assert_eq!(status(Head::default().add(many.as_bytes(), &SMALL)), 431);
    assert_eq!(
        status(Head::default().add(b"\x16\x03\x01 hello\r\n\r\n", &SMALL)),
        400
    );
}

/// A listener of [`SMALL`] whose requests are answered 200 by a thread of the test.
fn serve_small() -> SocketAddr {
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), SMALL).unwrap();
    let addr = server.addr();
    std::thread::spawn(move || {
        loop {
            if let Ok(Some(x)) = server.next(Duration::from_millis(100)) {
                let body = format!("{} {}", x.request.method, x.request.target).into_bytes();
                x.respond(Response {
                    status: 200,
                    headers: vec![("Content-Type", "text/plain".into())],
                    body,
                });
            }
        }
    });
    addr
}

fn exchange(addr: SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[test]
fn idle_connections_at_the_cap_give_way_to_a_request() {
    let addr = serve_small();
    let idle: Vec<TcpStream> = (0..3 * SMALL.connections)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    let answer = exchange(addr, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(answer.contains("\r\nConnection: close\r\n"), "{answer}");
    assert!(answer.ends_with("\r\n\r\nGET /a"), "{answer}");
    let head = exchange(addr, "HEAD /b HTTP/1.0\r\n\r\n");
    assert!(
        head.contains("Content-Length: 7\r\n") && head.ends_with("\r\n\r\n"),
        "{head}"
    );
    drop(idle);
}

#[test]
fn a_slow_head_is_cut_off() {
    let addr = serve_small();
    let started = Instant::now();
    assert_eq!(
        exchange(addr, ""),
        "",
        "nothing sent: closed without a word"
    );
    let late = exchange(addr, "GET / HTTP/1.1\r\nHost: x\r\n");
    assert!(
        late.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{late}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
}
