//! `run --report-interval 1`: while a 3 s SQLite step runs, a line per second on stderr with
//! plausible numbers, TPS beside QPS as in sysbench's lines (no timing assert beyond a wide
//! margin: the host may be loaded).

mod common;
use common::*;

/// One `--report-interval` line.
struct Line {
    elapsed: f64,
    tps: f64,
    qps: f64,
    ops: u64,
    secs: f64,
    errors: u64,
}

/// Every interval line of `step` in `stderr`.
fn interval_lines(stderr: &str, step: &str) -> Vec<Line> {
    let head = format!("{step}: [");
    let num = |s: &str| {
        s.trim_end_matches(',')
            .replace(',', "")
            .parse::<f64>()
            .unwrap()
    };
    (stderr.lines())
        .filter_map(|l| l.split_once(&head).map(|(_, rest)| rest.to_string()))
        .map(|rest| {
            // "2 s] 8,990 tps, 143,871 qps (143,715 ops in 1.00 s), 0 errors"
            let (elapsed, rest) = rest.split_once(" s").unwrap();
            let (_, rest) = rest.split_once("] ").unwrap();
            let f: Vec<&str> = rest.split_whitespace().collect();
            assert_eq!((f[1], f[3]), ("tps,", "qps"), "{rest}");
            Line {
                elapsed: num(elapsed),
                tps: num(f[0]),
                qps: num(f[2]),
                ops: num(&f[4][1..]) as u64,
                secs: num(f[7]),
                errors: num(f[9]) as u64,
            }
        })
        .collect()
}

#[test]
fn a_line_per_second_while_a_step_runs() {
    let _lock = measuring();
    let dir = scratch();
    let d = dir.path();
    let lab = "[lab]\nname = \"interval\"\n\n[[target]]\nname = \"t\"\nengine = \"sqlite\"\n\n\
               [suite.sysbench]\nrows = 2000\nread_secs = 3\nwarmup_secs = 0.5\n";
    std::fs::write(d.join("lab.toml"), lab).unwrap();
    let args = [
        "--store",
        "s.db",
        "run",
        "lab.toml",
        "--only",
        "read-only_range=10",
        "--workdir",
        "w",
    ];
    let out = dbdelta(d)
        .args(args)
        .args(["--report-interval", "1"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let lines = interval_lines(&err, "t c=1 r=1 read-only_range=10");
    // 3.5 s of step at one line a second: 3 lines; at least 2 even on a host that stalls.
    assert!(lines.len() >= 2, "expected a line per second:\n{err}");
    for (i, l) in lines.iter().enumerate() {
        let (elapsed, qps, ops, secs, errors) = (l.elapsed, l.qps, l.ops, l.secs, l.errors);
        // A read-only event is one transaction of 16 statements (10 point selects, 4 ranges,
        // BEGIN and COMMIT): TPS is QPS / 16, give or take an event cut by the interval.
        let per_tx = qps / l.tps;
        assert!(
            (15.0..17.0).contains(&per_tx),
            "{qps} qps / {} tps:\n{err}",
            l.tps
        );
        assert!(ops > 0 && qps > 0.0, "no operations in line {i}:\n{err}");
        // Wide margins: the interval is 1 s as measured, whatever the host did meanwhile.
        assert!((0.5..5.0).contains(&secs), "interval of {secs} s:\n{err}");
        let rate = ops as f64 / secs;
        assert!(
            (rate - qps).abs() <= 0.01 * qps + 1.0,
            "qps {qps} is not ops/s {rate}"
        );
        assert!(
            elapsed >= (i + 1) as f64 - 0.5,
            "elapsed {elapsed} in line {i}:\n{err}"
        );
        assert_eq!(errors, 0, "{err}");
    }
    assert!(
        err.contains(", warm-up] "),
        "the first interval began in the warm-up:\n{err}"
    );

    // Without the flag: no interval lines.
    let quiet = run(d, &args);
    let err = text(&quiet.stderr);
    assert!(quiet.status.success(), "{err}");
    assert!(
        interval_lines(&err, "t c=1 r=1 read-only_range=10").is_empty(),
        "{err}"
    );
}
